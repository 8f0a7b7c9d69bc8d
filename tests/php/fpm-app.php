<?php
// fpm-app.php - what tests/test-php-fpm.sh asks the PHP-FPM workers to do.
// Every answer starts with the worker's pid, so the test can tell which of
// the pool's workers answered.
//   ?op=add&filter=F&k=KEY             "PID add KEY 1|0"        (1: new)
//   ?op=check&filter=F&prefix=P&n=N    "PID check PRESENT of N" (keys P1..PN, one checkMany)
//   ?op=state&filter=F                 "PID state handles H opens O generation G"
//                                      (H handles kept from earlier requests, O opens)
//   &sleep=MS                          hold the worker, so that a burst reaches all four
header('Content-Type: text/plain');
$pid = getmypid();
$filter = $_GET['filter'] ?? 'clicks';
try {
	switch ($_GET['op'] ?? '') {
	case 'add':
		$f = new Shmf\Filter($filter, writable: true);
		echo "$pid add {$_GET['k']} ", (int)$f->add($_GET['k']), "\n";
		break;
	case 'check':
		$f = new Shmf\Filter($filter);
		$n = (int)$_GET['n'];
		$keys = [];
		for ($i = 1; $i <= $n; $i++)
			$keys[] = $_GET['prefix'] . $i;
		echo "$pid check ", count(array_filter($f->checkMany($keys))), " of $n\n";
		break;
	case 'state':
		// The handles this worker kept from its earlier requests: read
		// before this request constructs any Filter.
		$handles = $opens = 0;
		foreach (Shmf\Filter::handles() as $h) {
			if ($h['filter'] === $filter) {
				$handles++;
				$opens += $h['opens'];
			}
		}
		$f = new Shmf\Filter($filter);
		echo "$pid state handles $handles opens $opens generation ", $f->info()['generation'], "\n";
		break;
	default:
		http_response_code(400);
		echo "$pid unknown op\n";
	}
} catch (Shmf\Exception $e) {
	http_response_code(500);
	echo "$pid exception ", $e->getCode(), ' ', $e->getMessage(), "\n";
}
if (isset($_GET['sleep']))
	usleep(1000 * (int)$_GET['sleep']);
