<?php
/*
 * push-cap.php - a push frequency cap: at most 4 pushes per device per day,
 * counted in one cuckoo filter that every PHP-FPM worker of the host shares
 * through shmd (use case 4).
 *
 *   shmctl create push --type cuckoo --capacity 10000000 --fpr 0.01 --mode 0660 --window 1d --generations 1
 *   php -d extension=shmf.so push-cap.php DEVICE     # CLI: "sent" (exit 0) or "capped" (exit 1)
 *   GET /push-cap.php?device=DEVICE                  # PHP-FPM: 200 "sent" or 429 "capped"
 *
 * addCapped() stores one more copy of the key only while fewer than the cap
 * are present, atomically across every process (a lock the kernel releases
 * if its holder dies): however many workers push to one device at once,
 * exactly 4 get through per day. It costs about a microsecond.
 *
 * The day is the filter's time window (the README's recipe: window = 1d,
 * generations = 1): every 24 hours shmd starts a new, empty generation and
 * drops the old one, so the key is the device alone and the filter holds
 * one day of pushes. The days run from the filter's creation; to have them
 * start at midnight UTC, rotate it then (cron: 0 0 * * * shmctl rotate
 * push). A device pushed just before a rotation can get 4 more after it.
 */

const PUSHES_PER_DAY = 4;

/** True if a push to $device may go out now (and counts it). */
function may_push(Shmf\Filter $caps, string $device): bool
{
	return $caps->addCapped($device, PUSHES_PER_DAY) < PUSHES_PER_DAY;
}

$device = PHP_SAPI === 'cli' ? ($argv[1] ?? '') : (string)($_GET['device'] ?? '');
if (PHP_SAPI !== 'cli')
	header('Content-Type: text/plain');
if ($device === '') {
	PHP_SAPI === 'cli' ? fwrite(STDERR, "usage: push-cap.php DEVICE\n") : http_response_code(400);
	echo "need a device\n";
	exit(2);
}
try {
	$caps = new Shmf\Filter('push', writable: true);
	if (may_push($caps, $device)) {
		echo "sent\n";        // here: hand the push to the push service
		exit(0);
	}
	if (PHP_SAPI !== 'cli')
		http_response_code(429);
	echo "capped: ", PUSHES_PER_DAY, " pushes to $device today\n";
	exit(1);
} catch (Shmf\Exception $e) {
	PHP_SAPI === 'cli' ? fwrite(STDERR, $e->getMessage() . "\n") : http_response_code(503);
	error_log('push-cap: ' . $e->getMessage());
	exit(3);
}
