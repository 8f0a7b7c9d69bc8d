<?php
// api.php - every method of Shmf\Filter against a running shmd, run by
// tests/test-php-api.sh with the filters it creates: "bloom" (Bloom, 0660),
// "cuckoo" (cuckoo, capacity 1000) and "tiny" (cuckoo, capacity 8).
// Prints one line per failed assertion; exits 1 if any failed.

$failed = 0;
$checks = 0;

function ok(bool $cond, string $what): void
{
	global $failed, $checks;
	$checks++;
	if (!$cond) {
		$failed++;
		echo "FAIL: $what\n";
	}
}

// throws(fn, class, message-regex): the call throws that, with that message.
function throws(callable $fn, string $class, string $re, string $what, ?int $code = null): void
{
	try {
		$fn();
		ok(false, "$what: no exception");
	} catch (Throwable $e) {
		ok($e instanceof $class, "$what: " . get_class($e) . " is not a $class (" . $e->getMessage() . ")");
		ok(preg_match($re, $e->getMessage()) === 1, "$what: message '" . $e->getMessage() . "' does not match $re");
		if ($code !== null)
			ok($e->getCode() === $code, "$what: code " . $e->getCode() . ", want $code");
	}
}

// --- the class itself
ok(class_exists('Shmf\Filter') && (new ReflectionClass('Shmf\Filter'))->isFinal(), 'Shmf\Filter is a final class');
ok(is_subclass_of('Shmf\Exception', 'RuntimeException'), 'Shmf\Exception extends RuntimeException');
ok(Shmf\Filter::handles() === [], 'no handles before the first open');

// --- Bloom: add, check, batches, info
$b = new Shmf\Filter('bloom', writable: true);
ok($b->add('alpha') === true, 'add of a new key returns true');
ok($b->add('alpha') === false, 'add of a present key returns false');
ok($b->addUnique('beta') === true && $b->addUnique('beta') === false, 'addUnique: true then false');
ok($b->check('alpha') === true && $b->check('beta') === true, 'check finds added keys');
ok($b->check('omega') === false, 'check of an absent key returns false');
ok($b->add("bin\0ary") === true && $b->check("bin\0ary") && !$b->check('bin'), 'keys are binary strings (NUL inside)');
ok($b->add('') === true && $b->check(''), 'the empty key is a key');
ok($b->add(42) === true && $b->check('42'), 'an int key is its decimal string');

$got = $b->checkMany(['a' => 'alpha', 7 => 'omega', 'x' => 'beta', 9 => 42]);
ok($got === ['a' => true, 7 => false, 'x' => true, 9 => true], 'checkMany keeps the array keys: ' . json_encode($got));
ok($b->checkMany([]) === [], 'checkMany([]) is []');
ok($b->checkMany([3 => 'alpha', 5 => 'omega']) === [3 => true, 5 => false], 'checkMany of a list with gaps keeps its keys');
$list = ['alpha', 'omega'];
unset($list[0]);
ok($b->checkMany($list) === [1 => false], 'checkMany of a list with a hole keeps its keys');
$got = $b->addMany(['k1', 'k2', 'alpha', 'k1']);
ok($got === [true, true, false, false], 'addMany: new, new, present, repeated in the batch: ' . json_encode($got));
$keys = [];
for ($i = 0; $i < 5000; $i++)
	$keys[] = "many-$i";
ok(count(array_filter($b->addMany($keys))) === 5000, 'addMany of 5000 new keys: all new');
ok(count(array_filter($b->checkMany($keys))) === 5000, 'checkMany finds all 5000');
$absent = [];
for ($i = 0; $i < 5000; $i++)
	$absent[] = "absent-$i";
ok(count(array_filter($b->checkMany($absent))) <= 2, 'checkMany of 5000 absent keys finds at most 2 (FPR 1e-6)');

$info = $b->info();
ok($info['name'] === 'bloom' && $info['type'] === 'bloom' && $info['capacity'] === 100000, 'info: name, type, capacity');
ok(abs($info['error_rate'] - 1e-6) < 1e-12 && $info['k'] > 0 && $info['bits'] > 0 && $info['bytes'] > 0, 'info: error_rate, k, bits, bytes');
ok(!array_key_exists('fpr_target', $info), "info: the rate is called error_rate, as SHMF.INFO and shmctl info --json call it (no 'fpr_target')");
// new: alpha, beta, bin\0ary, '', 42, k1, k2 and the 5000
ok($info['items'] === 5007, "info: items counts the adds that were new ({$info['items']}, want 5007)");
ok($info['writable'] === true && $info['generation'] >= 1 && !isset($info['buckets']), 'info: writable, generation, no cuckoo fields');
ok($info['lines'] === 2, "info: a Bloom filter at 1e-6 has two lines a key ({$info['lines']})");

// Cuckoo-only calls on a Bloom filter
throws(fn() => $b->count('alpha'), 'Shmf\Exception', "/^filter 'bloom': count: the filter type does not support this operation$/", 'count on Bloom', -5007);
throws(fn() => $b->delete('alpha'), 'Shmf\Exception', '/does not support/', 'delete on Bloom', -5007);
throws(fn() => $b->addCapped('alpha', 4), 'Shmf\Exception', '/does not support/', 'addCapped on Bloom', -5007);

// --- read-only handle: checks work, writes throw
$r = new Shmf\Filter('bloom');
ok($r->check('alpha') === true, 'a read-only handle checks');
ok($r->info()['writable'] === false, 'info: writable false');
throws(fn() => $r->add('x'), 'Shmf\Exception', "/^filter 'bloom': add: write through a read-only handle.*writable: true/", 'add through a read-only handle', -5006);
throws(fn() => $r->addMany(['x']), 'Shmf\Exception', '/addMany: write through a read-only handle/', 'addMany through a read-only handle', -5006);
ok($r->check('x') === false, 'the refused add changed nothing');

// --- persistent handles: one per (instance, filter, mode) in this process
$b2 = new Shmf\Filter('bloom', null, true);
$b3 = new Shmf\Filter('bloom', 'default', true);
$h = Shmf\Filter::handles();
$rows = array_map(fn($x) => ($x['instance'] ?? '-') . '/' . $x['filter'] . '/' . ($x['writable'] ? 'w' : 'r') . '/' . $x['opens'], $h);
ok($rows === ['-/bloom/w/1', '-/bloom/r/1', 'default/bloom/w/1'], 'handles: one per instance, filter and mode, each opened once: ' . implode(' ', $rows));
unset($b2);
ok(count(Shmf\Filter::handles()) === 3, 'a handle outlives its objects');

// --- cuckoo: delete, count, capped add, unique add, info
$c = new Shmf\Filter('cuckoo', writable: true);
ok($c->add('dev') === true && $c->add('dev') === true, 'cuckoo add stores a copy each time');
ok($c->count('dev') === 2, 'count: 2 copies');
ok($c->delete('dev') === true && $c->count('dev') === 1, 'delete removes one copy');
ok($c->delete('never') === false, 'delete of an absent key: false');
ok($c->addUnique('dev') === false && $c->addUnique('solo') === true && $c->count('solo') === 1, 'addUnique: only if absent');
$before = [];
for ($i = 0; $i < 6; $i++)
	$before[] = $c->addCapped('push-1', 4);
ok($before === [0, 1, 2, 3, 4, 4], 'addCapped(4) x 6: copies before each call ' . json_encode($before));
ok($c->count('push-1') === 4, 'addCapped stored exactly 4');
ok($c->addCapped('push-2', 0) === 0 && $c->count('push-2') === 0, 'addCapped with cap 0 adds nothing');
throws(fn() => $c->addCapped('x', -1), 'ValueError', '/Argument #2 \(\$cap\) must be between 0 and 4294967295/', 'negative cap');
throws(fn() => $c->addCapped('x', 1 << 40), 'ValueError', '/must be between 0/', 'cap above 2^32');
$ci = $c->info();
ok($ci['type'] === 'cuckoo' && $ci['buckets'] > 0 && in_array($ci['fingerprint_bits'], [8, 16], true) && $ci['max_kicks'] === 500, 'info: cuckoo fields');
ok($ci['deletes'] === 1 && $ci['items'] === 6, "info: items {$ci['items']} (want 6), deletes {$ci['deletes']} (want 1)");
ok($c->checkMany(['dev', 'solo', 'nope']) === [true, true, false], 'cuckoo checkMany');

// A full cuckoo filter: the library's error, and the batch stops there
$t = new Shmf\Filter('tiny', writable: true);
$stored = 0;
try {
	for ($i = 0; $i < 1000; $i++) {
		$t->add("fill-$i");
		$stored++;
	}
	ok(false, 'a cuckoo filter of capacity 8 took 1000 keys');
} catch (Shmf\Exception $e) {
	ok($e->getCode() === -5008 && str_contains($e->getMessage(), "filter 'tiny': add: filter is full"), 'full: ' . $e->getMessage());
}
ok($stored >= 8 && $t->check('fill-0') && $t->check('fill-' . ($stored - 1)), "the full filter kept every key it took ($stored)");
throws(fn() => $t->addMany(['x1', 'x2', 'x3']), 'Shmf\Exception', '/addMany: filter is full/', 'addMany into a full filter', -5008);

// --- bad input
throws(fn() => new Shmf\Filter('nosuch'), 'Shmf\Exception', "/^filter 'nosuch': no such filter or instance$/", 'unknown filter', -5001);
throws(fn() => new Shmf\Filter('bloom', 'nosuchinstance'), 'Shmf\Exception', "/^filter 'bloom' of instance 'nosuchinstance': no such filter or instance$/", 'unknown instance', -5001);
throws(fn() => new Shmf\Filter('../etc'), 'Shmf\Exception', "/^filter '..\/etc': invalid name/", 'bad filter name', -5010);
throws(fn() => new Shmf\Filter('bloom', '../x'), 'Shmf\Exception', '/invalid name/', 'bad instance name', -5010);
throws(fn() => new Shmf\Filter(str_repeat('x', 64)), 'Shmf\Exception', '/^filter \'x{60}\.\.\.\': invalid name/', 'name of 64 characters', -5010);
throws(fn() => new Shmf\Filter(''), 'Shmf\Exception', '/invalid name/', 'empty name', -5010);
throws(fn() => new Shmf\Filter("blo\0om"), 'ValueError', '/must not contain any null bytes/', 'NUL in a name');
throws(fn() => $b->checkMany(['ok', [1]]), 'TypeError', '/checkMany\(\): Argument #1 \(\$keys\) must contain only strings and ints, array given/', 'checkMany of an array in an array');
throws(fn() => $b->addMany([1.5]), 'TypeError', '/must contain only strings and ints, float given/', 'addMany of a float');
ok($b->check('ok') === false, 'the refused batch added nothing');
throws(fn() => $b->check(), 'ArgumentCountError', '/expects exactly 1 argument/', 'check without a key');
throws(fn() => clone $b, 'Error', '/uncloneable/', 'clone');
throws(fn() => serialize($b), 'Exception', '/Serialization of \'Shmf\\\\Filter\' is not allowed/', 'serialize');
throws(fn() => $b->__construct('bloom'), 'Error', '/already open/', 'constructing twice');

// --- a static filter (built offline, swapped in): checks answer the set, adds SHMF_E_STATIC
$keys = [];
for ($i = 1; $i <= 3000; $i++)
	$keys[] = "st-$i";
$dir = sys_get_temp_dir() . '/shmf-php-static-' . getmypid();
@mkdir($dir);
file_put_contents("$dir/keys", implode("\n", $keys) . "\n");
$sh = getenv('SHMCTL');
system("$sh build --type static --capacity 3000 --fpr 0.001 --from $dir/keys -o $dir/s.snap >/dev/null"
	. " && $sh create st --capacity 3000 --fpr 0.001 --mode 0660 >/dev/null"
	. " && $sh swap st $dir/s.snap --reshape >/dev/null", $rc);
@unlink("$dir/keys");
@unlink("$dir/s.snap");
@rmdir($dir);
ok($rc === 0, 'shmctl build --type static, then swap --reshape over a Bloom filter');
$st = new Shmf\Filter('st', writable: true);
ok($st->check('st-1') && $st->check('st-3000'), 'static: keys of the set are present');
$many = $st->checkMany($keys);
ok(count(array_filter($many)) === 3000, 'static: checkMany answers every key of the set');
throws(fn() => $st->add('st-new'), 'Shmf\Exception', "/^filter 'st': add: .*static/", 'static: add', -5019);
throws(fn() => $st->addMany(['a', 'b']), 'Shmf\Exception', "/^filter 'st': addMany: .*static/", 'static: addMany', -5019);
throws(fn() => $st->addUnique('st-new'), 'Shmf\Exception', '/static/', 'static: addUnique', -5019);
ok($st->check('st-new') === false, 'static: a refused add changed nothing');
$si = $st->info();
ok($si['type'] === 'static' && $si['fingerprint_bits'] === 16 && $si['capacity'] === 3000
	&& $si['fingerprints'] % $si['segment_length'] === 0 && !isset($si['lines']), 'static: info() ' . json_encode($si));

// --- a dropped filter: the library's error, then a reopen once it exists again
$d = new Shmf\Filter('dropme', writable: true);
$d->add('x');
system(getenv('SHMCTL') . ' drop dropme >/dev/null', $rc);
ok($rc === 0, 'shmctl drop dropme');
throws(fn() => $d->check('x'), 'Shmf\Exception', "/^filter 'dropme': check: filter was dropped/", 'check after a drop', -5013);
throws(fn() => $d->check('x'), 'Shmf\Exception', "/^filter 'dropme': reopen: no such filter/", 'check while the filter does not exist');
system(getenv('SHMCTL') . ' create dropme --capacity 100 --fpr 0.01 >/dev/null', $rc);
ok($d->check('x') === false && $d->add('x') === true, 'the same object works again once the filter is created anew');
$row = array_values(array_filter(Shmf\Filter::handles(), fn($x) => $x['filter'] === 'dropme'))[0];
ok($row['opens'] === 2 && $row['open'] === true, 'handles: the dropped filter was opened twice');

echo "php api: $checks checks, $failed failed\n";
exit($failed ? 1 : 0);
