<?php
/*
 * bench-check.php - one membership check per call from PHP, in a loop:
 * Shmf\Filter::check() against the same Bloom check done the usual way on
 * networked Redis with phpredis (k GETBITs in one pipeline on one Redis
 * string of m bits), with the same k and m as the shmf filter.
 * Run by bindings/bench-bindings.sh, which starts shmd and redis-server:
 *   php -d extension=shmf.so bench-check.php FILTER REDIS-HOST REDIS-PORT N-SHMF N-REDIS
 * Half of the keys checked are present. Prints one line per measurement.
 */
[, $filter, $rhost, $rport, $n_shmf, $n_redis] = $argv;
$n_shmf = (int)$n_shmf;
$n_redis = (int)$n_redis;

$f = new Shmf\Filter($filter, writable: true);
$info = $f->info();
$k = $info['k'];
$m = $info['bits'];
$present = intdiv(max($n_shmf, $n_redis), 2);

function key_of(int $i): string
{
	return sprintf('user:%08d:item', $i); // 18 bytes, as in a real workload
}

// The Redis Bloom's bit positions: double hashing on XXH3-64 (the hash
// shmf uses), k positions in [0, m).
function positions(string $key, int $k, int $m): array
{
	$h = hash('xxh3', $key, true);
	$h1 = unpack('N', $h, 0)[1];
	$h2 = unpack('N', $h, 4)[1] | 1;
	$pos = [];
	for ($i = 0; $i < $k; $i++)
		$pos[] = ($h1 + $i * $h2) % $m;
	return $pos;
}

// Fill both filters with the same present keys.
$batch = [];
for ($i = 0; $i < $present; $i++) {
	$batch[] = key_of($i);
	if (count($batch) === 10000 || $i === $present - 1) {
		$f->addMany($batch);
		$batch = [];
	}
}

$r = new Redis();
$r->connect($rhost, (int)$rport);
$r->del('bf');
$r->setBit('bf', $m - 1, 0); // one string of m bits
for ($i = 0; $i < $present; $i += 1000) {
	$p = $r->multi(Redis::PIPELINE);
	for ($j = $i; $j < min($i + 1000, $present); $j++)
		foreach (positions(key_of($j), $k, $m) as $pos)
			$p->setBit('bf', $pos, 1);
	$p->exec();
}

// Keys: even indices present (below $present), odd ones absent.
function keys(int $n, int $present): array
{
	$keys = [];
	for ($i = 0; $i < $n; $i++)
		$keys[] = key_of(($i & 1) ? $present + $i : ($i % $present));
	return $keys;
}

printf("k %d, m %d bits (%.1f MB), %d keys present\n", $k, $m, $m / 8e6, $present);

// Five passes each (the machine is shared: the median and the best pass
// say more than one), the loop alone to compare.
function passes(callable $pass, int $n): array
{
	$t = [];
	for ($i = 0; $i < 5; $i++) {
		$t0 = hrtime(true);
		$pass();
		$t[] = (hrtime(true) - $t0) / $n;
	}
	sort($t);
	return [$t[2], $t[0]];
}
$keys = keys($n_shmf, $present);
[$empty_ns] = passes(function () use ($keys) {
	$h = 0;
	foreach ($keys as $key)
		$h += strlen($key) > 100;
}, $n_shmf);
$hits = 0;
[$shmf_ns, $shmf_best] = passes(function () use ($keys, $f, &$hits) {
	$h = 0;
	foreach ($keys as $key)
		$h += $f->check($key);
	$hits = $h;
}, $n_shmf);
printf("shmf  Shmf\\Filter::check       %9d calls  %10.1f ns/call median of 5 passes, best %.1f (loop alone %.1f ns)  hits %d\n",
	$n_shmf, $shmf_ns, $shmf_best, $empty_ns, $hits);
$chunks = array_chunk($keys, 1000);
[$many_ns, $many_best] = passes(function () use ($chunks, $f) {
	foreach ($chunks as $chunk)
		$f->checkMany($chunk);
}, $n_shmf);
printf("shmf  Shmf\\Filter::checkMany   batches of 1000 %10.1f ns/key median, best %.1f\n", $many_ns, $many_best);

$keys = keys($n_redis, $present);
$t = hrtime(true);
$hits = 0;
foreach ($keys as $key) {
	$p = $r->multi(Redis::PIPELINE);
	foreach (positions($key, $k, $m) as $pos)
		$p->getBit('bf', $pos);
	$hits += !in_array(0, $p->exec(), true);
}
$redis_ns = (hrtime(true) - $t) / $n_redis;
printf("redis phpredis %d x GETBIT pipeline %9d calls  %10.1f ns/call  hits %d\n", $k, $n_redis, $redis_ns, $hits);
printf("ratio redis / shmf check: %.0fx (median pass), %.0fx (best pass)\n", $redis_ns / $shmf_ns, $redis_ns / $shmf_best);
