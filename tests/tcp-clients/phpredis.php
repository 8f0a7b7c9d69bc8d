<?php
/*
 * phpredis.php PORT PASSWORD SCRIPT MAXCLIENTS MAX_REQUEST
 *
 * phpredis (Debian's php-redis) against shmd over TCP, as a PHP
 * application that used RedisBloom would: auth(), the shared script
 * through rawCommand() (phpredis has no BF/CF methods), a pipeline, the
 * connection verbs it wraps, and the limits as phpredis reports them.
 * Run by tests/test-tcp-clients.sh.
 */
[$_, $port, $password, $script, $maxclients, $maxRequest] = $argv;
$port = (int)$port;
$maxclients = (int)$maxclients;
$maxRequest = (int)$maxRequest;
$client = 'phpredis ' . phpversion('redis');
$ok = 0;
$bad = 0;

function check(bool $cond, string $what): void
{
	global $ok, $bad, $client;
	if ($cond) {
		$ok++;
	} else {
		$bad++;
		echo "FAIL ($client): $what\n";
	}
}

function connect(): Redis
{
	global $port;
	$r = new Redis();
	$r->connect('127.0.0.1', $port, 10);
	return $r;
}

/* phpredis hands back a status reply as true and nil as false; an error
 * is false with getLastError() set. Returns [kind, value]. */
function run(Redis $r, array $args): array
{
	$r->clearLastError();
	try {
		$v = $r->rawCommand(...$args);
	} catch (RedisException $e) {
		return ['error', $e->getMessage()];
	}
	if ($v === false && $r->getLastError() !== null)
		return ['error', $r->getLastError()];
	return ['value', $v];
}

function matches($want, $got): bool
{
	if (is_array($want) && array_key_exists('error', $want))
		return false; /* errors are checked by the caller */
	/* A status inside an array (BF.INFO's field names) comes as its text. */
	if (is_array($want) && array_key_exists('status', $want))
		return $got === true || $got === $want['status'];
	if ($want === '?')
		return is_int($got) || is_string($got);
	if ($want === null)
		return $got === false; /* nil */
	if (is_int($want))
		return $got === $want;
	if (is_string($want))
		return $got === $want;
	if (is_array($want)) {
		if (!is_array($got) || count($got) !== count($want))
			return false;
		foreach ($want as $i => $w)
			if (!matches($w, $got[$i]))
				return false;
		return true;
	}
	return false;
}

/* --- AUTH: required, refused, accepted. ---------------------------------- */
$r = connect();
[$kind, $v] = run($r, ['BF.EXISTS', 'sb', 'x']);
check($kind === 'error' && str_contains($v, 'NOAUTH Authentication required'), "no password: $kind " . var_export($v, true));
$r->clearLastError();
$authed = false;
try {
	$authed = $r->auth('wrong');
} catch (RedisException $e) {
}
check($authed === false && str_contains((string)$r->getLastError(), 'WRONGPASS'), 'wrong password: ' . var_export($r->getLastError(), true));
check($r->auth(['default', $password]) === true, 'auth([default, password])');
check($r->ping() === true, 'ping after auth');
$r = connect();
check($r->auth($password) === true, 'auth(password)');

/* --- The shared script. -------------------------------------------------- */
foreach (file($script) as $no => $line) {
	$line = trim($line);
	if ($line === '' || $line[0] === '#')
		continue;
	[$words, $want] = explode(' => ', $line, 2);
	$want = json_decode($want, true, 16, JSON_THROW_ON_ERROR);
	$args = preg_split('/\s+/', $words);
	[$kind, $got] = run($r, $args);
	$n = $no + 1;
	if (is_array($want) && array_key_exists('error', $want))
		check($kind === 'error' && str_contains($got, $want['error']), "script.txt:$n: $words: got $kind " . var_export($got, true));
	else
		check($kind === 'value' && matches($want, $got), "script.txt:$n: $words: got $kind " . var_export($got, true));
}

/* --- A pipeline of 2,000 commands. ---------------------------------------- */
check($r->rawCommand('BF.RESERVE', 'php-bf', '0.001', '10000') === true, 'BF.RESERVE php-bf');
$r->pipeline();
for ($i = 0; $i < 1000; $i++) {
	$r->rawCommand('BF.ADD', 'php-bf', "pipe-$i");
	$r->rawCommand('BF.EXISTS', 'php-bf', "pipe-$i");
}
$res = $r->exec();
$found = 0;
$new = 0;
for ($i = 0; $i < 2000; $i += 2) {
	$new += $res[$i];
	$found += $res[$i + 1];
}
check(count($res) === 2000 && $found === 1000, "pipeline: $found of 1000 keys found right after their add");
check($new >= 990, "pipeline: $new of 1000 fresh keys reported new");
check($r->rawCommand('BF.CARD', 'php-bf') === $new, 'BF.CARD after the pipeline');

/* --- The connection verbs phpredis wraps. --------------------------------- */
check($r->client('setname', 'php-worker') === true, 'client(setname)');
check($r->client('getname') === 'php-worker', 'client(getname)');
check($r->echo('hi') === 'hi', 'echo');
check($r->select(0) === true, 'select(0)');
check($r->select(1) === false && str_contains((string)$r->getLastError(), 'DB index is out of range'), 'select(1)');
$info = $r->info();
check(($info['redis_version'] ?? null) === '7.0.0', 'info()[redis_version]');
check(($info['connected_clients'] ?? 0) >= 1, 'info()[connected_clients]');
check($r->ping() === true, 'ping');

/* --- Limits as phpredis reports them. ------------------------------------- */
$big = connect();
$big->auth($password);
$keys = [];
for ($i = 0; $i < intdiv($maxRequest, 1000) + 2; $i++)
	$keys[] = str_repeat('k', 1000) . $i;
[$kind, $v] = run($big, array_merge(['BF.MADD', 'php-bf'], $keys));
check($kind === 'error' && str_contains($v, 'request larger than ' . intdiv($maxRequest, 1024) . ' KiB'), "a request over max_request: $kind " . var_export($v, true));
/* A Bloom filter answers an absent key "present" now and then (1%): of 50
 * of the refused request's keys, applied would be all 50, refused a few. */
$hits = array_sum($r->rawCommand('BF.MEXISTS', 'php-bf', ...array_slice($keys, 0, 50)));
check($hits < 10, "the refused request added nothing ($hits of 50 of its keys answer present)");
$held = [];
for ($i = 0; $i < $maxclients - 1; $i++) { /* $r is connected too */
	$h = connect();
	$h->auth($password);
	$held[] = $h;
}
$extra = connect();
$err = '';
try {
	$extra->auth($password);
	$err = (string)$extra->getLastError();
} catch (RedisException $e) {
	$err = $e->getMessage();
}
check(str_contains($err, 'max number of clients reached'), "a client past maxclients: '$err'");
check($r->rawCommand('BF.EXISTS', 'php-bf', 'pipe-1') === 1, 'a connected client is served throughout');

echo "$client: $ok checks passed, $bad failed\n";
exit($bad ? 1 : 0);
