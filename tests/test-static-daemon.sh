#!/bin/bash
# test-static-daemon.sh - a static filter in a real shmd: shmctl build
# --type static from a key list with duplicates (the cost beside a Bloom
# filter said), swapped over a Bloom filter only with --reshape, then
# BF.EXISTS and BF.MEXISTS answer every key of the set, BF.ADD and
# BF.MADD answer an error naming the static type, CF.EXISTS WRONGTYPE;
# SHMF.INFO and shmctl info say its type and fingerprints; a snapshot of
# it inspects and restores under another name; BF.SCANDUMP and
# BF.LOADCHUNK copy it; a file it cannot build (empty, a rate no width
# reaches, more memory than the machine has) is refused naming why.
# Usage: test-static-daemon.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$1
SHMCTL=$2
ROOT=$(mktemp -d /dev/shm/shmf-static-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT
failures=0
cleanup() {
	[ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
rc() { redis-cli -s "$ROOT/default.sock" "$@" 2>&1; }

seq -f 'key-%g' 1 20000 >"$ROOT/keys"
seq -f 'key-%g' 1 500 >>"$ROOT/keys"  # duplicates
out=$("$SHMCTL" build --type static --capacity 20000 --fpr 0.001 --from "$ROOT/keys" -o "$ROOT/s.snap" 2>&1) ||
	fail "build: $out"
echo "$out" | grep -q '20500 keys read, 20000 items' || fail "build counts: $out"
echo "$out" | grep -q '16-bit fingerprints' || fail "build width: $out"
echo "$out" | grep -Eq 'cost: .*static .* bits a key; one-line Bloom .* bits a key' || fail "build cost: $out"

# Files it cannot build.
: >"$ROOT/empty"
out=$("$SHMCTL" build --type static --capacity 10 --fpr 0.01 --from "$ROOT/empty" -o "$ROOT/x.snap" 2>&1) &&
	fail "empty input built"
echo "$out" | grep -q 'holds no key' || fail "empty: $out"
out=$("$SHMCTL" build --type static --capacity 10 --fpr 1e-11 --from "$ROOT/keys" -o "$ROOT/x.snap" 2>&1) &&
	fail "1e-11 built"
echo "$out" | grep -q '2\^-32' || fail "rate: $out"
out=$("$SHMCTL" build --type static --capacity 1000000000000 --fpr 0.01 --from "$ROOT/keys" -o "$ROOT/x.snap" 2>&1) &&
	fail "10^12 keys built"
echo "$out" | grep -Eq 'needs about [0-9.]+ GiB .* this machine has [0-9.]+ GiB available' || fail "memory: $out"
[ -e "$ROOT/x.snap" ] && fail "a refused build left a file"

"$SHMD" -f 2>"$ROOT/shmd.log" &
PID=$!
for _ in $(seq 100); do [ -S "$ROOT/default.sock" ] && break; sleep 0.1; done
[ -S "$ROOT/default.sock" ] || { echo "FAIL: shmd did not start: $(cat "$ROOT/shmd.log")" >&2; exit 1; }

"$SHMCTL" create f --capacity 20000 --fpr 0.001 >/dev/null || fail "create"
rc BF.ADD f only-in-bloom >/dev/null
out=$("$SHMCTL" swap f "$ROOT/s.snap" 2>&1) && fail "swap to static without --reshape: $out"
echo "$out" | grep -q 'reshape' || fail "swap without --reshape: $out"
"$SHMCTL" swap f "$ROOT/s.snap" --reshape >/dev/null 2>&1 || fail "swap --reshape: $("$SHMCTL" swap f "$ROOT/s.snap" --reshape 2>&1)"

# Every key of the set through BF.EXISTS (a sample) and BF.MEXISTS (all).
for k in key-1 key-777 key-20000; do
	[ "$(rc BF.EXISTS f $k)" = 1 ] || fail "BF.EXISTS f $k"
done
present=$(seq -f 'key-%g' 1 20000 | xargs redis-cli -s "$ROOT/default.sock" BF.MEXISTS f | grep -c '^1$')
[ "$present" = 20000 ] || fail "BF.MEXISTS: $present of 20000"
absent=$(seq -f 'other-%g' 1 20000 | xargs redis-cli -s "$ROOT/default.sock" BF.MEXISTS f | grep -c '^1$')
[ "$absent" -lt 10 ] || fail "BF.MEXISTS of absent keys: $absent of 20000 present (16-bit: about 0.3)"
out=$(rc BF.ADD f new-key)
echo "$out" | grep -q "is a static filter" || fail "BF.ADD: $out"
out=$(rc BF.MADD f a b)
echo "$out" | grep -q "is a static filter" || fail "BF.MADD: $out"
[ "$(rc BF.EXISTS f new-key)" = 0 ] || fail "a refused add changed the filter"
out=$(rc CF.EXISTS f key-1)
echo "$out" | grep -q WRONGTYPE || fail "CF.EXISTS: $out"
out=$("$SHMCTL" add f new-key 2>&1) && fail "shmctl add succeeded"
echo "$out" | grep -q static || fail "shmctl add: $out"

# What it says of itself.
info=$(rc SHMF.INFO f)
echo "$info" | grep -qx static || fail "SHMF.INFO type: $info"
echo "$info" | grep -A1 -x fingerprint_bits | grep -qx 16 || fail "SHMF.INFO fingerprint_bits: $info"
"$SHMCTL" info f --json >"$ROOT/i.json" || fail "info --json"
python3 -c "
import json; i = json.load(open('$ROOT/i.json'))
assert i['type'] == 'static' and i['items'] == 20000 and i['capacity'] == 20000, i
assert 18.0 < i['bits'] / i['capacity'] < 20.0, i
" || fail "shmctl info: $(cat "$ROOT/i.json")"

# Snapshot, inspect, restore under another name.
"$SHMCTL" snapshot f "$ROOT/copy.snap" >/dev/null || fail "snapshot"
"$SHMCTL" inspect "$ROOT/copy.snap" | grep -q '^type  *static' || fail "inspect: $("$SHMCTL" inspect "$ROOT/copy.snap")"
"$SHMCTL" restore g "$ROOT/copy.snap" >/dev/null || fail "restore"
[ "$(rc BF.EXISTS g key-5)" = 1 ] || fail "restored copy"

# BF.SCANDUMP into BF.LOADCHUNK of a new name.
python3 - "$ROOT/default.sock" <<'PY' || fail "scandump/loadchunk"
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rb')
def cmd(*a):
    s.sendall(b''.join([b'*%d\r\n' % len(a)] + [b'$%d\r\n%s\r\n' % (len(x), x) for x in (y if isinstance(y, bytes) else str(y).encode() for y in a)]))
    return read()
def read():
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b'*': return [read() for _ in range(int(rest))]
    if t == b'$': n = int(rest); return None if n < 0 else f.read(n + 2)[:-2]
    if t == b':': return int(rest)
    if t == b'-': raise SystemExit('error: ' + rest.decode())
    return rest
it, chunks = 0, []
while True:
    it, data = cmd('BF.SCANDUMP', 'f', it)
    if it == 0: break
    chunks.append((it, data))
for it, data in chunks:
    assert cmd('BF.LOADCHUNK', 'h', it, data) == b'OK'
assert cmd('BF.EXISTS', 'h', 'key-19999') == 1
assert cmd('BF.EXISTS', 'h', 'key-3') == 1
PY

[ $failures -eq 0 ] || { echo "$failures failures" >&2; exit 1; }
echo ok
