#!/bin/bash
# test-shmctl-plan.sh - shmctl plan: its figures are what a real shmd
# makes (bytes and bits of the layout shmctl create, BF.RESERVE and
# CF.RESERVE pick, as SHMF.INFO reports them, for Bloom, cuckoo and a
# window); the classic Bloom figure is -ln p / ln^2 2; a rate no cuckoo
# layout reaches is said, not a crash; the journal is counted; --json
# parses with python3; bad arguments exit 2 naming what was wrong. Static
# (binary fuse) rows: one per fingerprint width that reaches the rate,
# the narrowest picked by shmctl build --type static, at about 9, 18 and
# 36 bits a key beside Bloom's, refused for a window and below 2^-32,
# and a built static filter restored into shmd has the bytes and bits
# plan said.
# Usage: test-shmctl-plan.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$1
SHMCTL=$2
ROOT=$(mktemp -d /dev/shm/shmf-plan-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT
failures=0
checks=0
cleanup() {
	[ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect STATUS STDOUT-PATTERN STDERR-PATTERN -- shmctl args...
# ('' : the stream must be empty)
expect() {
	local want_rc=$1 want_out=$2 want_err=$3
	shift 4
	checks=$((checks + 1))
	"$SHMCTL" "$@" >"$ROOT/out" 2>"$ROOT/err"
	local rc=$?
	[ "$rc" -eq "$want_rc" ] || fail "shmctl $*: exit $rc, want $want_rc (stderr: $(cat "$ROOT/err"))"
	if [ -z "$want_out" ]; then
		[ -s "$ROOT/out" ] && fail "shmctl $*: unexpected stdout: $(head -c 300 "$ROOT/out")"
	else
		grep -Eq -- "$want_out" "$ROOT/out" || fail "shmctl $*: stdout lacks /$want_out/: $(head -c 600 "$ROOT/out")"
	fi
	if [ -z "$want_err" ]; then
		[ -s "$ROOT/err" ] && fail "shmctl $*: unexpected stderr: $(cat "$ROOT/err")"
	else
		grep -Eq -- "$want_err" "$ROOT/err" || fail "shmctl $*: stderr lacks /$want_err/: $(cat "$ROOT/err")"
	fi
}

# py DESCRIPTION PYTHON -- FILE...: python3 asserts on JSON files (p, i, j).
py() {
	local what=$1 code=$2
	shift 3
	checks=$((checks + 1))
	python3 -c "
import json, math, sys
docs = [json.load(open(f)) for f in sys.argv[1:]]
p = docs[0]
i = docs[1] if len(docs) > 1 else None
j = docs[2] if len(docs) > 2 else None
def row(plan, who):
    rows = [r for r in plan['layouts'] if who in r['picked_by']]
    assert len(rows) == 1, (who, rows)
    return rows[0]
$code
" "$@" 2>"$ROOT/py" || fail "$what: $(tail -3 "$ROOT/py")"
}

# No daemon: plan computes offline.
expect 0 '^bloom +one 64-byte line, k=[0-9]+ .* shmctl create' '' -- plan --capacity 1000000 --fpr 0.001
expect 0 '^cuckoo +16-bit fingerprints, buckets of 4 .*delete, count, caps +shmctl create --type cuckoo$' '' \
	-- plan --capacity 1000000 --fpr 0.001
expect 0 '^classic Bloom filter .*: 14\.38 bits per key' '' -- plan --capacity 1000000 --fpr 0.001

# The classic figure, and a rate no cuckoo layout reaches: said per type.
for p in 0.01 1e-6 1e-9 1e-12; do
	"$SHMCTL" plan --capacity 1000000000 --fpr $p --json >"$ROOT/p.json" || fail "plan --fpr $p --json exit $?"
	py "classic Bloom at $p" "
want = -math.log($p) / math.log(2) ** 2
assert abs(p['classic_bloom_bits_per_key'] - want) < 1e-9, (p['classic_bloom_bits_per_key'], want)
assert p['classic_bloom_memory_bytes'] == math.ceil(want * 1e9 / 8), p['classic_bloom_memory_bytes']
for r in p['layouts']:
    if r['reached'] and r['type'] == 'bloom':
        assert r['bits_per_key'] > want * 0.999, r  # no Bloom layout beats the classic filter
" -- "$ROOT/p.json"
done
# Below the rates buckets of 4 reach, shmctl create makes buckets of 2
# (shmf_geometry_bucket_size), and plan says so.
"$SHMCTL" plan --capacity 1000000 --fpr 1e-9 --json >"$ROOT/p.json" || fail "plan --fpr 1e-9 --json exit $?"
py "shmctl create's cuckoo pick at 1e-9 is buckets of 2 with 32-bit fingerprints" "
picks = [r for r in p['layouts'] if 'shmctl create --type cuckoo' in r['picked_by']]
assert len(picks) == 1 and picks[0]['bucket_size'] == 2 and picks[0]['fingerprint_bits'] == 32, picks
" -- "$ROOT/p.json"
expect 0 '^cuckoo: no fingerprint size in any bucket size reaches 1e-12$' '' -- plan --capacity 1000000 --fpr 1e-12
expect 0 'so CF.RESERVE refuses these arguments' '' -- plan --capacity 1000000 --fpr 1e-12
# One line reaches down to about 1e-17, three lines to about 1e-51.
expect 0 'bloom, one line a key: does not reach 1e-20 \(at most 32 bits of a key in each 512-bit line\)' '' -- plan --capacity 1000 --fpr 1e-20
expect 0 '^bloom +three 64-byte lines, k=[0-9]+ each .* shmctl create$' '' -- plan --capacity 1000 --fpr 1e-20
expect 0 '^bloom: no layout reaches 1e-60$' '' -- plan --capacity 1000 --fpr 1e-60
expect 0 'bloom, three lines a key: does not reach 1e-60' '' -- plan --capacity 1000 --fpr 1e-60
expect 0 'so shmctl create refuses these arguments' '' -- plan --capacity 1000 --fpr 1e-60
"$SHMCTL" plan --capacity 1000000 --fpr 1e-12 --json >"$ROOT/p.json"
py "unreached cuckoo in JSON" "
cf = [r for r in p['layouts'] if r['type'] == 'cuckoo']
assert cf and not any(r['reached'] for r in cf), cf
assert all('1e-12' in r['why'] for r in cf), cf
assert row(p, 'shmctl create')['reached'] and row(p, 'shmctl create')['k'] > 0
" -- "$ROOT/p.json"

# Static rows: every width whose 2^-bits reaches the rate, the narrowest
# the build's; the paper's bits a key (9.0, 18.1, 36.2 at 10^6 keys,
# within 1.15x); less memory than the one-line Bloom filter at 0.01.
expect 0 '^static +8-bit fingerprints \(rate 0\.00391\), segments of [0-9]+ .* 3  check \(built offline, swap to change\) +shmctl build --type static$' '' \
	-- plan --capacity 1000000 --fpr 0.01
expect 0 '^static +16-bit fingerprints \(rate 1\.53e-05\), .* shmctl build --type static$' '' -- plan --capacity 1000000 --fpr 0.001
expect 0 '^static: no fingerprint width reaches 1e-11$' '' -- plan --capacity 1000000 --fpr 1e-11
expect 0 'static: does not reach 1e-11 \(32-bit fingerprints: 2\.33e-10 at best\)' '' -- plan --capacity 1000000 --fpr 1e-11
expect 0 'so shmctl build --type static refuses these arguments' '' -- plan --capacity 1000000 --fpr 1e-11
for p in 0.01 0.001 1e-6 2.3283064365386963e-10; do
	"$SHMCTL" plan --capacity 1000000 --fpr $p --replicate --json >"$ROOT/p.json" || fail "plan --fpr $p --json exit $?"
	py "static rows at $p" "
fpr = $p
st = [r for r in p['layouts'] if r['type'] == 'static']
widths = [w for w in (8, 16, 32) if 2.0 ** -w <= fpr]
assert [r['fingerprint_bits'] for r in st] == widths, (widths, st)
assert row(p, 'shmctl build --type static') is st[0]
assert all(r['picked_by'] == [] for r in st[1:]), st
paper = {8: 9.0, 16: 18.1, 32: 36.2}
for r in st:
    w = r['fingerprint_bits']
    assert r['reached'] and r['sized_fpr'] == 2.0 ** -w, r
    assert paper[w] / 1.01 < r['bits_per_key'] < paper[w] * 1.15, r
    assert r['bits'] == r['fingerprints'] * w and r['fingerprints'] % r['segment_length'] == 0, r
    assert r['memory_bytes'] == r['bytes'], r  # no journal: a static filter takes no add
    assert r['lines_per_check'] == 3 and not r['add'] and not r['delete'] and not r['count'], r
if fpr == 0.01:
    b = row(p, 'shmctl create')
    assert b['layout'].startswith('one 64-byte line') and st[0]['memory_bytes'] < b['memory_bytes'], (b, st[0])
" -- "$ROOT/p.json"
done
"$SHMCTL" plan --capacity 1000000 --fpr 1e-11 --json >"$ROOT/p.json"
py "static below 2^-32 in JSON" "
st = [r for r in p['layouts'] if r['type'] == 'static']
assert len(st) == 1 and not st[0]['reached'] and '2.33e-10 at best' in st[0]['why'], st
assert st[0]['picked_by'] == ['shmctl build --type static'], st
" -- "$ROOT/p.json"
"$SHMCTL" plan --capacity 1000000 --fpr 0.01 --window 1h --json >"$ROOT/p.json"
py "static refused for a window" "
st = [r for r in p['layouts'] if r['type'] == 'static']
assert len(st) == 1 and not st[0]['reached'] and 'no time window' in st[0]['why'], st
assert st[0]['picked_by'] == [], st  # shmctl build takes no window: nothing of it refuses
" -- "$ROOT/p.json"
expect 0 'static: no time window \(a window rotates into an empty generation' '' -- plan --capacity 10 --fpr 0.01 --window 1h
"$SHMCTL" plan --capacity 10 --fpr 0.01 --window 1h >"$ROOT/out"
grep -q '^static ' "$ROOT/out" && fail "plan --window lists a static row: $(cat "$ROOT/out")"
grep -q 'static: no fingerprint width' "$ROOT/out" && fail "plan --window blames the rate: $(cat "$ROOT/out")"

# Windows multiply by the live generations; --replicate adds the journal.
"$SHMCTL" plan --capacity 100000 --fpr 0.01 --json >"$ROOT/one.json"
"$SHMCTL" plan --capacity 100000 --fpr 0.01 --window 1h --generations 3 --replicate --json >"$ROOT/w.json"
py "window x3 and journal" "
a, b = row(p, 'shmctl create'), row(i, 'shmctl create')
assert i['generations'] == 3 and i['replicate'] and not p['replicate']
assert i['journal_bytes'] == 4096 + 64 * (192 + 16384 * 16), i['journal_bytes']
assert b['memory_bytes'] == 3 * a['bytes'] + i['journal_bytes'], (a, b)
assert a['memory_bytes'] == a['bytes']
assert 'BF.RESERVE' in b['picked_by']  # a windowed filter does not grow
" -- "$ROOT/one.json" "$ROOT/w.json"

# Bad arguments: exit 2, one line naming what was wrong, nothing on stdout.
expect 2 '' 'plan: missing --capacity N' -- plan --fpr 0.01
expect 2 '' 'plan: missing --fpr P' -- plan --capacity 10
expect 2 '' "plan: bad --capacity '0'" -- plan --capacity 0 --fpr 0.01
expect 2 '' "plan: bad --capacity '-5'" -- plan --capacity -5 --fpr 0.01
expect 2 '' "plan: bad --capacity '1e3'" -- plan --capacity 1e3 --fpr 0.01
expect 2 '' "plan: bad --fpr '1'" -- plan --capacity 10 --fpr 1
expect 2 '' "plan: bad --fpr '0'" -- plan --capacity 10 --fpr 0
expect 2 '' "plan: bad --fpr 'nan'" -- plan --capacity 10 --fpr nan
expect 2 '' "plan: bad --window '1y'" -- plan --capacity 10 --fpr 0.1 --window 1y
expect 2 '' "plan: bad --generations '17'" -- plan --capacity 10 --fpr 0.1 --window 1h --generations 17
expect 2 '' "plan: bad --generations '0'" -- plan --capacity 10 --fpr 0.1 --window 1h --generations 0
expect 2 '' 'plan: --generations needs --window' -- plan --capacity 10 --fpr 0.1 --generations 3
expect 2 '' "plan: unknown option '--type'" -- plan --capacity 10 --fpr 0.1 --type cuckoo
expect 2 '' "plan: unexpected argument 'x'" -- plan x --capacity 10 --fpr 0.1
expect 2 '' 'plan: --fpr needs a value' -- plan --capacity 10 --fpr
expect 2 '' "see 'shmctl help plan'" -- plan
expect 0 'too big for the data segment format' '' -- plan --capacity 18000000000000000000 --fpr 0.01

# Against a real shmd: what it makes is what plan said.
"$SHMD" -f 2>"$ROOT/shmd.log" &
PID=$!
for _ in $(seq 100); do [ -S "$ROOT/default.sock" ] && break; sleep 0.1; done
[ -S "$ROOT/default.sock" ] || { echo "FAIL: shmd did not start: $(cat "$ROOT/shmd.log")" >&2; exit 1; }

# same FILTER PICK PLAN-ARGS...: SHMF.INFO of FILTER has the bytes and bits
# of the row PICK of plan's output, and bits per key = bits / capacity.
same() {
	local filter=$1 pick=$2
	shift 2
	"$SHMCTL" plan "$@" --json >"$ROOT/p.json" || fail "plan $*: exit $?"
	"$SHMCTL" info "$filter" --json >"$ROOT/i.json" || fail "info $filter: exit $?"
	py "$filter agrees with plan $* ($pick)" "
r = row(p, '$pick')
assert r['reached'], r
assert r['bytes'] == i['bytes'], ('bytes', r['bytes'], i['bytes'])
assert r['bits'] == i['bits'], ('bits', r['bits'], i['bits'])
assert abs(r['bits_per_key'] - i['bits'] / i['capacity']) < 1e-9
if i['type'] == 'cuckoo':
    assert r['fingerprint_bits'] == i['fingerprint_bits'] and r['bucket_size'] == i['bucket_size'], (r, i)
elif i['type'] == 'static':
    assert r['fingerprint_bits'] == i['fingerprint_bits'] and r['fingerprints'] == i['fingerprints'], (r, i)
    assert r['segment_length'] == i['segment_length'], (r, i)
else:
    assert r['k'] == i['k'], (r, i)
" -- "$ROOT/p.json" "$ROOT/i.json"
}

expect 0 "created filter 'b6'" '' -- create b6 --capacity 200000 --fpr 1e-6
same b6 'shmctl create' --capacity 200000 --fpr 1e-6
expect 0 "created filter 'c3'" '' -- create c3 --type cuckoo --capacity 200000 --fpr 0.001
same c3 'shmctl create --type cuckoo' --capacity 200000 --fpr 0.001
redis-cli -s "$ROOT/default.sock" BF.RESERVE rb 0.0001 300000 >"$ROOT/rc" 2>&1 || fail "BF.RESERVE: $(cat "$ROOT/rc")"
same rb 'BF.RESERVE' --capacity 300000 --fpr 0.0001
redis-cli -s "$ROOT/default.sock" CF.RESERVE rc 300000 >"$ROOT/rc" 2>&1 || fail "CF.RESERVE: $(cat "$ROOT/rc")"
same rc 'CF.RESERVE' --capacity 300000 --fpr 0.01
# A static filter built offline (30000 distinct keys, some given twice)
# and restored: what plan said of 30000 keys at each rate.
seq -f 'key-%g' 1 30000 >"$ROOT/keys"
seq -f 'key-%g' 1 100 >>"$ROOT/keys"
for p in 0.01 1e-4 1e-8; do
	"$SHMCTL" build --type static --capacity 30000 --fpr $p --from "$ROOT/keys" -o "$ROOT/s.snap" >"$ROOT/b.out" 2>&1 ||
		fail "build --type static --fpr $p: $(cat "$ROOT/b.out")"
	"$SHMCTL" restore "s$p" "$ROOT/s.snap" >"$ROOT/b.out" 2>&1 || fail "restore s$p: $(cat "$ROOT/b.out")"
	same "s$p" 'shmctl build --type static' --capacity 30000 --fpr $p
done
# A window: the memory of its live generations is plan's memory.
expect 0 "created filter 'w'" '' -- create w --capacity 50000 --fpr 0.01 --window 1h --generations 3
"$SHMCTL" rotate w >/dev/null && "$SHMCTL" rotate w >/dev/null || fail "rotate w"
"$SHMCTL" plan --capacity 50000 --fpr 0.01 --window 1h --generations 3 --json >"$ROOT/p.json"
"$SHMCTL" info w --json >"$ROOT/i.json"
py "window agrees with plan" "
r = row(p, 'shmctl create')
assert i['live_generations'] == 3, i
assert r['memory_bytes'] == 3 * r['bytes'], r
assert i['bytes'] * i['live_generations'] == r['memory_bytes'], (r, i['bytes'])  # info: one generation's
" -- "$ROOT/p.json" "$ROOT/i.json"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
