#!/bin/bash
# test-shmctl-json.sh - every shmctl verb that has --json (info, list,
# inspect, replication) parsed by python3's json module, for a Bloom, a
# cuckoo, a windowed Bloom and a windowed cuckoo filter (after a rotation:
# two live generations), with a runtime directory whose path holds a
# quote, a backslash and a space (escaped, or the JSON breaks). Grown
# filters do not exist yet; replicated ones are checked by the fleet suite.
# Usage: test-shmctl-json.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$1
SHMCTL=$2
BASE=$(mktemp -d /dev/shm/shmf-json-XXXXXX)
ROOT="$BASE/ru\"n\\ x"
mkdir -p "$ROOT"
export SHMF_RUNTIME_DIR=$ROOT
failures=0
checks=0
cleanup() {
	[ -n "${PID:-}" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$BASE"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# json_ok DESCRIPTION PYTHON-ASSERTIONS -- shmctl ARGS: the output parses
# as JSON (into d) and the assertions hold.
json_ok() {
	local what=$1 asserts=$2
	shift 3
	checks=$((checks + 1))
	if ! "$SHMCTL" "$@" >"$BASE/out" 2>"$BASE/err"; then
		fail "$what: shmctl $* exited $?: $(cat "$BASE/err")"
		return
	fi
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$asserts
" "$BASE/out" 2>"$BASE/py" || fail "$what: shmctl $*: $(tail -1 "$BASE/py"); output: $(head -c 400 "$BASE/out")"
}

cat >"$BASE/shmd.conf" <<CONF
[filter bf]
capacity = 1000
fpr = 0.01
[filter cf]
type = cuckoo
capacity = 1000
[filter wbf]
capacity = 1000
window = 1h
generations = 3
[filter wcf]
type = cuckoo
capacity = 1000
window = 10m
[filter gbf]
capacity = 100
expansion = 2
CONF
"$SHMD" -f -c "$BASE/shmd.conf" 2>"$BASE/shmd.log" &
PID=$!
for _ in $(seq 200); do [ -S "$ROOT/default.sock" ] && break; sleep 0.05; done
for f in bf cf wbf wcf; do "$SHMCTL" add -q "$f" a b c || fail "add to $f"; done
for f in wbf wcf; do "$SHMCTL" rotate "$f" >/dev/null || fail "rotate $f"; done
"$SHMCTL" add -q wbf d || fail "add to wbf after the rotation"
# gbf grows: 700 keys fill its layers of 100, 200 and 400; a fourth takes the rest.
seq 1 1000 | sed 's/^/g-/' | "$SHMCTL" add -q gbf - || fail "add to gbf"

for f in bf cf wbf wcf; do
	json_ok "info --json ($f)" "
assert d['name'] == '$f', d
assert isinstance(d['capacity'], int) and d['capacity'] == 1000, d
assert isinstance(d['error_rate'], float) and isinstance(d['fill_ratio'], (int, float)), d
assert d['mode'] == '0640', d
assert d['data_file'].startswith('$f.') and d['data_file'].endswith('.data'), d
" -- info "$f" --json
done
json_ok "info --json of a windowed filter: generations an array of objects" "
g = d['generations']
assert isinstance(g, list) and len(g) == 2, g
assert all(set(x) == {'generation', 'age_s', 'items'} and all(isinstance(v, int) for v in x.values()) for x in g), g
assert g[0]['items'] == 1 and g[1]['items'] == 3, g
assert d['window_generations'] == 3 and d['live_generations'] == 2, d
" -- info wbf --json
json_ok "info --json of a windowed cuckoo filter" "
assert d['type'] == 'cuckoo' and len(d['generations']) == 2 and d['max_kicks'] > 0, d
" -- --json info wcf
json_ok "info --json of a growing filter: layers an array of objects, the current one first" "
l = d['layers']
assert isinstance(l, list) and d['layer_count'] == 4 and d['expansion'] == 2, d
assert all(set(x) == {'layer', 'generation', 'capacity', 'items', 'bytes', 'state'} for x in l), l
assert [x['capacity'] for x in l if x['state'] != 'standby'] == [800, 400, 200, 100], l
assert [x['state'] for x in l][:4] == ['current', 'full', 'full', 'full'], l
assert d['capacity_total'] == 1500 and d['capacity'] == 100, d
" -- info gbf --json
json_ok "list --json: every filter, each an object" "
assert sorted(f['name'] for f in d) == ['bf', 'cf', 'gbf', 'wbf', 'wcf'], d
assert all(isinstance(f['items'], int) for f in d), d
" -- list --json
json_ok "replication --json without a fleet: an empty array" "assert d == [], d" -- replication --json

# inspect --json of each shape's snapshot, its path (a quote, a backslash
# and a space in it) escaped and read back whole.
for f in bf cf wbf wcf gbf; do
	"$SHMCTL" snapshot "$f" "$ROOT/$f.snap" >/dev/null || fail "snapshot $f"
	json_ok "inspect --json ($f)" "
assert d['name'] == '$f' and d['checksum'] == 'ok', d
assert d['file'] == '''$ROOT/$f.snap''', d['file']
assert isinstance(d['generations'], list) and len(d['generations']) >= 1, d
assert isinstance(d['replicated'], bool) and isinstance(d['seed'], int), d
" -- inspect "$ROOT/$f.snap" --json
done
# A damaged file: still JSON, the error in it.
head -c 100 "$ROOT/bf.snap" >"$ROOT/short.snap"
checks=$((checks + 1))
"$SHMCTL" inspect --json "$ROOT/short.snap" >"$BASE/out" 2>/dev/null
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['checksum'] == 'damaged' and 'too short' in d['error'], d
" "$BASE/out" || fail "inspect --json of a damaged file is not the JSON expected: $(cat "$BASE/out")"

kill "$PID"
wait "$PID"
PID=
echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
