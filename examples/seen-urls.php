<?php
/*
 * seen-urls.php - a recommendation "seen" filter: show a user only the URLs
 * they were not shown before, from one cuckoo filter that every PHP-FPM
 * worker of the host shares through shmd (use case 1).
 *
 *   shmctl create seen --type cuckoo --capacity 100000000 --fpr 0.001 --mode 0660
 *   php -d extension=shmf.so seen-urls.php USER URL...     # CLI: prints what to show
 *   GET /seen-urls.php?user=USER&url[]=URL&url[]=URL&n=3   # under PHP-FPM
 *
 * Prints the URLs to show, in the candidates' order, at most n (default 10),
 * one per line. addUnique() on a cuckoo filter is add-if-absent, atomic
 * across processes: it returns true only the first time a (user, URL) pair
 * is added, so two requests of one user racing in two workers never both
 * show the same URL. (A Bloom filter's add() reports "new" exactly once
 * only when adds of the same key do not race: two racing adds of one key
 * may both report new.) A URL never shown can be skipped at the filter's
 * false-positive rate (here 0.1%).
 */

/** Up to $n of $candidates not shown to $user before, now marked as shown. */
function fresh_urls(Shmf\Filter $seen, string $user, array $candidates, int $n): array
{
	$show = [];
	foreach ($candidates as $url) {
		if (count($show) >= $n)
			break;
		if ($seen->addUnique($user . "\0" . $url))
			$show[] = $url;
	}
	return $show;
}

if (PHP_SAPI === 'cli') {
	$user = $argv[1] ?? '';
	$candidates = array_slice($argv, 2);
	$n = 10;
} else {
	header('Content-Type: text/plain');
	$user = (string)($_GET['user'] ?? '');
	$candidates = array_map('strval', (array)($_GET['url'] ?? []));
	$n = (int)($_GET['n'] ?? 10);
}
if ($user === '' || $n < 1) {
	PHP_SAPI === 'cli' ? fwrite(STDERR, "usage: seen-urls.php USER URL...\n") : http_response_code(400);
	echo "need a user and n >= 1\n";
	exit(2);
}
try {
	// Opened once per worker process; later requests reuse the handle.
	$seen = new Shmf\Filter('seen', writable: true);
	foreach (fresh_urls($seen, $user, $candidates, $n) as $url)
		echo $url, "\n";
} catch (Shmf\Exception $e) {
	// Filter missing or unusable: say so, and let the caller fall back.
	PHP_SAPI === 'cli' ? fwrite(STDERR, $e->getMessage() . "\n") : http_response_code(503);
	error_log('seen-urls: ' . $e->getMessage());
	exit(1);
}
