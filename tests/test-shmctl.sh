#!/bin/bash
# test-shmctl.sh - shmctl against a real shmd: every verb, its output, its
# exit status (check: 0 all present, 1 some absent, 2 error), errors on
# stderr naming what was wrong, and bad input changing nothing.
# Usage: test-shmctl.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$1
SHMCTL=$2
ROOT=$(mktemp -d /dev/shm/shmf-shmctl-XXXXXX)
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
# Patterns are grep -E expressions; '' means the stream must be empty.
expect() {
	local want_rc=$1 want_out=$2 want_err=$3
	shift 4
	checks=$((checks + 1))
	"$SHMCTL" "$@" >"$ROOT/out" 2>"$ROOT/err" <"${STDIN:-/dev/null}"
	local rc=$?
	[ "$rc" -eq "$want_rc" ] || fail "shmctl $*: exit $rc, want $want_rc (stderr: $(cat "$ROOT/err"))"
	if [ -z "$want_out" ]; then
		[ -s "$ROOT/out" ] && fail "shmctl $*: unexpected stdout: $(head -c 300 "$ROOT/out")"
	else
		grep -Eq -- "$want_out" "$ROOT/out" || fail "shmctl $*: stdout lacks /$want_out/: $(head -c 300 "$ROOT/out")"
	fi
	if [ -z "$want_err" ]; then
		[ -s "$ROOT/err" ] && fail "shmctl $*: unexpected stderr: $(cat "$ROOT/err")"
	else
		grep -Eq -- "$want_err" "$ROOT/err" || fail "shmctl $*: stderr lacks /$want_err/: $(cat "$ROOT/err")"
	fi
}

# No daemon yet: a clear error, exit 2.
expect 2 '' "cannot connect to $ROOT/default.sock.*is shmd running for instance 'default'" -- ping
expect 2 '' "unknown verb 'frobnicate'" -- frobnicate
expect 2 '' "not a valid instance name" -- --instance ../x ping
# Argument errors are found before connecting, daemon or not.
expect 2 '' "info: missing FILTER" -- info
expect 2 '' "create: missing --fpr P" -- create x --capacity 10
STDIN=/dev/null expect 2 '' "cannot connect to" -- add default -

"$SHMD" -f 2>"$ROOT/shmd.log" &
PID=$!
for _ in $(seq 100); do [ -S "$ROOT/default.sock" ] && break; sleep 0.1; done

expect 0 '^PONG$' '' -- ping
expect 0 '^PONG$' '' -- --socket "$ROOT/default.sock" ping
expect 0 '^default$' '' -- list
expect 0 '^capacity +1000000$' '' -- info default
expect 0 '^k +[0-9]+$' '' -- info default

# create, with its checks
expect 0 "^created filter 'clicks': bloom, capacity 50000, error rate 0.001, [0-9]+ bytes, mode 0660$" '' -- create clicks --capacity 50000 --fpr 0.001 --mode 0660
expect 2 '' "create: filter 'clicks' exists already \\(bloom, capacity 50000.*'shmctl info clicks'.*'shmctl drop clicks'" -- create clicks --capacity 50000 --fpr 0.001
expect 2 '' 'capacity must be in the range' -- create other --capacity 0 --fpr 0.01
expect 2 '' "filter 'other': capacity 1000000000000000000 at error rate 0.01 needs more memory than this host has" -- create other --capacity 1000000000000000000 --fpr 0.01
expect 2 '' 'error rate must be in the range' -- create other --capacity 10 --fpr 1
expect 2 '' 'error rate must be in the range' -- create other --capacity 10 --fpr 0
expect 2 '' "invalid filter name '../x'" -- create ../x --capacity 10 --fpr 0.1
expect 2 '' "invalid filter name 'a/b'" -- create a/b --capacity 10 --fpr 0.1
expect 2 '' "invalid filter name ''" -- create '' --capacity 10 --fpr 0.1
expect 2 '' "invalid filter name 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'" -- create xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx --capacity 10 --fpr 0.1
expect 2 '' "bad MODE '0666'" -- create other --capacity 10 --fpr 0.1 --mode 0666
expect 2 '' "create: missing --fpr P" -- create other --capacity 10
expect 2 '' "unknown --type 'quotient' \(bloom or cuckoo\)" -- create other --type quotient --capacity 10 --fpr 0.1
expect 2 '' "max-kicks applies to --type cuckoo only" -- create other --capacity 10 --fpr 0.1 --max-kicks 9
expect 2 '' "below what buckets of 4 with 16-bit fingerprints reach .*ask for a bucket size of 2, or none" -- create other --type cuckoo --capacity 10 --fpr 0.00001 --bucket-size 4
expect 2 '' "below what cuckoo filters reach .*use a Bloom filter" -- create other --type cuckoo --capacity 10 --fpr 1e-11
expect 2 '' "MAXITERATIONS: value must be in the range \[1, 65535\]" -- create other --type cuckoo --capacity 10 --fpr 0.01 --max-kicks 0
expect 2 '' "bucket-size applies to --type cuckoo only" -- create other --capacity 10 --fpr 0.1 --bucket-size 2
expect 2 '' "BUCKETSIZE 3 is not supported: a bucket holds 1, 2, 4 or 8 fingerprints here" -- create other --type cuckoo --capacity 10 --fpr 0.1 --bucket-size 3
expect 2 '' "a bucket of 8 fingerprints holds only 8-bit ones" -- create other --type cuckoo --capacity 100 --fpr 0.01 --bucket-size 8
expect 0 '^default$' '' -- list
expect 0 '^clicks$' '' -- list
[ "$("$SHMCTL" list | wc -l)" -eq 2 ] || fail "list shows $("$SHMCTL" list | wc -l) filters after refused creates, want 2"
expect 0 '^mode +0660$' '' -- info clicks
# The Bloom layout: one line a key at 1e-3, two at 1e-6, three at 1e-9.
expect 0 '^lines +1$' '' -- info clicks
expect 0 "^created filter 'low6': bloom, capacity 10000, error rate 1e-06, [0-9]+ bytes, mode 0640$" '' -- create low6 --capacity 10000 --fpr 1e-6
expect 0 '^lines +2$' '' -- info low6
expect 0 '^bits_per_key +31\.[0-9]+$' '' -- info low6
expect 0 '^\{"name": "low6", .*"k": 18, "lines": 2, "bits_per_key": 31\.[0-9]+, ' '' -- info low6 --json
expect 0 '^OK$' '' -- drop low6
expect 0 "^created filter 'low9': bloom, capacity 10000, error rate 1e-09, [0-9]+ bytes, mode 0640$" '' -- create low9 --capacity 10000 --fpr 1e-9
expect 0 '^lines +3$' '' -- info low9
expect 0 '^OK$' '' -- drop low9
seq 1 400 | sed 's/^/grow-/' >"$ROOT/seq400"
# growing and NONSCALING filters; shmctl's are fixed unless asked
expect 0 "^created filter 'grows': bloom, capacity 100, error rate 0.01, [0-9]+ bytes, mode 0640, grows by 2$" '' -- create grows --capacity 100 --fpr 0.01 --expansion 2
STDIN=$ROOT/seq400 expect 0 '^400 keys added, [0-9]+ new$' '' -- add grows -
expect 0 '^layer_count +3$' '' -- info grows
expect 0 "^created filter 'refuses': bloom, capacity 10, error rate 0.01, [0-9]+ bytes, mode 0640, nonscaling$" '' -- create refuses --capacity 10 --fpr 0.01 --nonscaling
expect 2 '' "create: --nonscaling applies to --type bloom only" -- create other --type cuckoo --capacity 10 --fpr 0.01 --nonscaling
expect 2 '' "create: --nonscaling and --expansion" -- create other --capacity 10 --fpr 0.01 --nonscaling --expansion 2
expect 2 '' "expansion must be in the range|bad expansion" -- create other --capacity 10 --fpr 0.01 --expansion -1
expect 0 '^OK$' '' -- drop grows
expect 0 '^OK$' '' -- drop refuses

# add and check with arguments
expect 0 '^3 keys added, 3 new$' '' -- add clicks alpha beta gamma
expect 0 '^2 keys added, 1 new$' '' -- add clicks alpha delta
expect 0 '^present	alpha$' '' -- check clicks alpha beta gamma delta
expect 1 '^absent	omega$' '' -- check clicks alpha omega
expect 1 '' '' -- check -q clicks alpha omega
expect 0 '' '' -- check -q clicks alpha beta
# options anywhere before --: -q after the filter or a key is -q, not a
# key; after --, every argument is a key; any other '-x' before -- refused
expect 0 '' '' -- add clicks -q opt-1
expect 0 '' '' -- add clicks opt-2 -q
expect 0 '' '' -- check clicks opt-1 -q opt-2
expect 1 '^absent	-q$' '' -- check clicks -- -q
expect 2 '' "add: unknown option '-dash' \(a key that starts with '-' goes after --\)" -- add clicks -dash
expect 1 '^absent	-dash$' '' -- check clicks -- -dash
expect 0 '^1 keys added, 1 new$' '' -- add clicks -- -dash
expect 0 '^present	-dash$' '' -- check clicks -- -dash
expect 1 '^absent	-$' '' -- check clicks -- -
STDIN=/dev/null expect 0 '' '' -- add clicks - -q

# keys from stdin, more than one 10,000-key chunk, with CRLF and blank lines
seq 1 25000 | sed 's/^/user-/' >"$ROOT/keys"
printf 'crlf-key\r\n\n\n' >>"$ROOT/keys"
# Each distinct key is new unless all its bits were set already: with a
# random seed that happens to a key or two in some runs (the filter's FPR as
# it fills), so the count is read back and every later figure follows it.
STDIN=$ROOT/keys expect 0 '^25001 keys added, (2499[0-9]|2500[01]) new$' '' -- add clicks -
fresh=$(sed -n 's/^25001 keys added, \([0-9]*\) new$/\1/p' "$ROOT/out")
ITEMS=$((7 + ${fresh:-0})) # alpha beta gamma delta opt-1 opt-2 -dash
STDIN=$ROOT/keys expect 0 '' '' -- check -q clicks -
expect 0 '^present	crlf-key$' '' -- check clicks crlf-key
seq 30001 30100 | sed 's/^/user-/' >"$ROOT/absent"
STDIN=$ROOT/absent expect 1 '' '' -- check -q clicks -
expect 0 "^items +$ITEMS\$" '' -- info clicks

# JSON
expect 0 '^\{"name": "clicks", "type": "bloom", "capacity": 50000, "error_rate": 0.001, .*"items": '"$ITEMS"', .*"mode": "0660", "huge_pages": [01]\}$' '' -- info clicks --json
expect 0 '^\[\{"name": "default".*\}, \{"name": "clicks".*\}\]$' '' -- list --json
if command -v python3 >/dev/null; then
	checks=$((checks + 1))
	"$SHMCTL" list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [f["name"] for f in d]==["default","clicks"], d; assert d[1]["items"]=='"$ITEMS" ||
		fail "list --json is not the JSON expected"
fi

# errors on unknown filters, exit 2 for check too
expect 2 '' "check: filter 'nosuch' not found" -- check nosuch a
expect 2 '' "add: filter 'nosuch' not found" -- add nosuch a
expect 2 '' "info: filter 'nosuch' not found" -- info nosuch
expect 2 '' "drop: filter 'nosuch' not found" -- drop nosuch
expect 2 '' "check: missing the keys after 'clicks'" -- check clicks
expect 2 '' "info: missing FILTER" -- info
expect 0 "^items +$ITEMS\$" '' -- info clicks

# cuckoo filters: create, add (copies), check, count, del, capped add, info
expect 0 "^created filter 'push': cuckoo, capacity 1000" '' -- create push --type cuckoo --capacity 1000 --fpr 0.01 --max-kicks 300
expect 0 '^fingerprint_bits +16$' '' -- info push
expect 0 '^bucket_size +4$' '' -- info push
expect 0 '^max_kicks +300$' '' -- info push
expect 0 '^type +cuckoo$' '' -- info push
# shmctl's door keeps shmd's defaults (buckets of 4, 500 moves); CF.RESERVE's are RedisBloom's 2 and 20
expect 0 "^created filter 'pushd': cuckoo" '' -- create pushd --type cuckoo --capacity 1000 --fpr 0.01
expect 0 '^bucket_size +4$' '' -- info pushd
expect 0 '^max_kicks +500$' '' -- info pushd
expect 0 '^OK' '' -- drop pushd
# below what buckets of 4 reach: buckets of 2 with 32-bit fingerprints
expect 0 "^created filter 'push32': cuckoo, capacity 1000, error rate 1e-09" '' -- create push32 --type cuckoo --capacity 1000 --fpr 1e-9
expect 0 '^fingerprint_bits +32$' '' -- info push32
expect 0 '^bucket_size +2$' '' -- info push32
expect 0 '^3 keys added$' '' -- add push32 dev-1 dev-1 dev-2
expect 0 '^2	dev-1$' '' -- count push32 dev-1
expect 1 '^absent	dev-3$' '' -- check push32 dev-3
expect 0 '^deleted	dev-1$' '' -- del push32 dev-1
expect 0 '^added	dev-9	0 before$' '' -- add-capped --cap 1 push32 dev-9
expect 0 '^OK' '' -- drop push32
expect 0 '^3 keys added$' '' -- add push dev-1 dev-1 dev-2
expect 0 '^2	dev-1$' '' -- count push dev-1
expect 0 '^0	dev-3$' '' -- count push dev-3
expect 0 '^present	dev-2$' '' -- check push dev-2
expect 1 '^absent	dev-3$' '' -- check push dev-3
expect 0 '^deleted	dev-1$' '' -- del push dev-1
expect 1 '^not found	dev-3$' '' -- del push dev-3
expect 0 '^1	dev-1$' '' -- count push dev-1
expect 0 '^added	dev-9	0 before$' '' -- add-capped --cap 2 push dev-9
expect 0 '^added	dev-9	1 before$' '' -- add-capped --cap 2 push dev-9
expect 1 '^at cap	dev-9	2 before$' '' -- add-capped --cap 2 push dev-9
expect 1 '' '' -- add-capped -q --cap 1 push new-a new-b dev-2
expect 1 '^at cap	dev-2	1 before$' '' -- add-capped push dev-2 --cap 1
expect 0 '^items +6$' '' -- info push
expect 0 '^deletes +1$' '' -- info push
seq 1 200 | sed 's/^/cuckoo-/' >"$ROOT/ckeys"
STDIN=$ROOT/ckeys expect 0 '^200 keys added$' '' -- add push -
STDIN=$ROOT/ckeys expect 0 '' '' -- check -q push -
STDIN=$ROOT/ckeys expect 0 '' '' -- del -q push -
STDIN=$ROOT/ckeys expect 1 '' '' -- check -q push -
expect 2 '' "del: filter 'clicks' is a Bloom filter; del works on cuckoo filters only" -- del clicks alpha
expect 2 '' "add-capped: --cap 'x' is not an integer" -- add-capped --cap x push k
expect 2 '' "add-capped: missing --cap N" -- add-capped push k
# a full cuckoo filter: the add fails with exit 2 and says how far it got
expect 0 '' '' -- create -q tiny --type cuckoo --capacity 8 --fpr 0.01
seq 1 200 | sed 's/^/tiny-/' >"$ROOT/tkeys"
STDIN=$ROOT/tkeys expect 2 '' "add: filter 'tiny' is full: [0-9]+ of 200 keys added" -- add tiny -
expect 0 '^OK$' '' -- drop tiny
expect 0 '^OK$' '' -- drop push
# the bucket sizes: each one word (buckets of 8 only with 8-bit fingerprints)
for b in 1 2 8; do
	expect 0 "^created filter 'b$b': cuckoo" '' -- create "b$b" --type cuckoo --capacity 1000 --fpr 0.07 --bucket-size "$b"
	expect 0 "^bucket_size +$b\$" '' -- info "b$b"
	expect 0 '^2 keys added$' '' -- add "b$b" k1 k1
	expect 0 '^2	k1$' '' -- count "b$b" k1
	expect 0 '"bucket_size": '"$b"', ' '' -- info "b$b" --json
	expect 0 '^OK$' '' -- drop "b$b"
done

# drop
expect 0 '^OK$' '' -- drop clicks
[ -e "$ROOT/default/clicks.2.data" ] && fail "drop left the data file behind"
expect 2 '' "filter 'clicks' not found" -- check clicks alpha
expect 0 '^default$' '' -- list

# another instance by name
"$SHMD" -f -i second 2>>"$ROOT/shmd.log" &
PID2=$!
for _ in $(seq 100); do [ -S "$ROOT/second.sock" ] && break; sleep 0.1; done
expect 0 '^PONG$' '' -- --instance second ping
expect 0 '^1 keys added, 1 new$' '' -- -i second add default only-in-second
expect 1 '^absent	only-in-second$' '' -- check default only-in-second
kill "$PID2"
wait "$PID2"

# Without -f, shmd returns only once its socket accepts clients: no wait.
checks=$((checks + 1))
"$SHMD" -i bg || fail "shmd -i bg (daemonizing) exited $?"
expect 0 '^PONG$' '' -- -i bg ping
BGPID=$(cat "$ROOT/bg.pid" 2>/dev/null)
if [ -n "$BGPID" ] && kill -0 "$BGPID" 2>/dev/null; then
	kill "$BGPID"
	for _ in $(seq 100); do kill -0 "$BGPID" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$BGPID" 2>/dev/null && fail "daemonized shmd still running after SIGTERM"
	[ -e "$ROOT/bg.sock" ] && fail "daemonized shmd left its socket behind"
else
	fail "pidfile $ROOT/bg.pid does not name a running shmd"
fi

# Snapshot files: build offline, inspect, snapshot, swap, restore.
seq 1 30000 | sed 's/^/built:/' >"$ROOT/keys.txt"
expect 0 'built.snap: bloom filter, 30000 keys read, (29[0-9]{3}|30000) items' '' -- build --capacity 50000 --fpr 0.001 --from "$ROOT/keys.txt" -o "$ROOT/built.snap"
STDIN=$ROOT/keys.txt expect 0 'cuckoo filter, 30000 keys read, 30000 items' '' -- build --type cuckoo --capacity 40000 --fpr 0.01 --from - -o "$ROOT/built-cf.snap" --name blocks
# More keys than the capacity: built, with a warning giving the rate the
# filter will have; duplicates that do not fill it past capacity: no warning.
seq 1 100000 | sed 's/^/over-/' >"$ROOT/keys100k"
expect 0 '100000 keys read' "^shmctl: build: warning: 100000 keys read into a filter sized for --capacity 5000: its false-positive rate will be nearly 1 \(almost every check will answer 'present'\), not the 0.01 asked for \(--capacity 100000 covers every line read\)$" -- build --capacity 5000 --fpr 0.01 --from "$ROOT/keys100k" -o "$ROOT/over.snap"
head -n 5500 "$ROOT/keys100k" >"$ROOT/keys5500"
expect 0 '5500 keys read' "warning: 5500 keys read into a filter sized for --capacity 5000: its false-positive rate will be about 0\.0[1-9][0-9]*, not the 0.01" -- build --capacity 5000 --fpr 0.01 --from "$ROOT/keys5500" -o "$ROOT/over.snap"
rate=$(sed -n 's/.* will be about \([0-9.]*\), .*/\1/p' "$ROOT/err")
awk -v r="${rate:-0}" 'BEGIN { exit !(r > 0.011 && r < 0.03) }' || fail "build of 5500 keys at capacity 5000: rate '$rate', want above 0.011 (10% past capacity) and below 0.03"
cat "$ROOT/keys.txt" "$ROOT/keys.txt" >"$ROOT/keys-twice"
expect 0 '60000 keys read' '' -- build --capacity 40000 --fpr 0.01 --from "$ROOT/keys-twice" -o "$ROOT/over.snap"
expect 0 '^type +bloom$' '' -- inspect "$ROOT/built.snap"
expect 0 '^checksum +ok' '' -- inspect "$ROOT/built.snap"
expect 0 '^filter +blocks$' '' -- inspect "$ROOT/built-cf.snap"
expect 0 'cuckoo filter, 30000 keys read, 30000 items' '' -- build --type cuckoo --capacity 40000 --fpr 1e-9 --from "$ROOT/keys.txt" -o "$ROOT/built-cf32.snap"
expect 0 '^fingerprint +32$' '' -- inspect "$ROOT/built-cf32.snap"
# At 1e-6 the build makes two lines a key, as shmd would; swapped in, every key is there.
expect 0 'bloom filter, 30000 keys read, 30000 items' '' -- build --capacity 30000 --fpr 1e-6 --from "$ROOT/keys.txt" -o "$ROOT/built-2l.snap" --name lines2
expect 0 '^lines +2 \(a key.s bits in 2 64-byte lines, k 9 in each\)$' '' -- inspect "$ROOT/built-2l.snap"
expect 0 '^lines +1 ' '' -- inspect "$ROOT/built.snap"
expect 0 '^OK$' '' -- restore lines2 "$ROOT/built-2l.snap"
expect 0 '^lines +2$' '' -- info lines2
expect 0 '^present	built:1$' '' -- check lines2 built:1
expect 0 '^present	built:30000$' '' -- check lines2 built:30000
expect 1 '^absent	built:30001$' '' -- check lines2 built:30001
expect 0 '^OK$' '' -- drop lines2
expect 0 '^bucket_size +2$' '' -- inspect "$ROOT/built-cf32.snap"
expect 0 '"checksum": "ok"' '' -- inspect "$ROOT/built-cf.snap" --json
expect 2 '' 'build: missing -o OUT' -- build --capacity 10 --fpr 0.01 --from "$ROOT/keys.txt"
expect 2 '' "build: --type 'x': must be bloom, cuckoo or static" -- build --type x --capacity 10 --fpr 0.01 --from - -o "$ROOT/x"
expect 2 '' "build: cannot open $ROOT/nope" -- build --capacity 10 --fpr 0.01 --from "$ROOT/nope" -o "$ROOT/x"
STDIN=$ROOT/keys.txt expect 2 '' 'cuckoo filter is full after [0-9]+ keys' -- build --type cuckoo --capacity 1000 --fpr 0.01 --from - -o "$ROOT/x"
[ -e "$ROOT/x" ] && fail "a failed build left its output file"
# A damaged file: inspect says where, exits 2; swap refuses it and the
# live filter keeps serving.
cp "$ROOT/built.snap" "$ROOT/damaged.snap"
printf '\x55' | dd of="$ROOT/damaged.snap" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect 2 '^checksum +DAMAGED' 'checksum mismatch in section 0, bytes 4096-' -- inspect "$ROOT/damaged.snap"
head -c 3000 "$ROOT/built.snap" >"$ROOT/short.snap"
expect 2 '' 'short.snap: file is 3000 bytes, too short for a snapshot' -- inspect "$ROOT/short.snap"
expect 0 '' '' -- create -q live --capacity 1000 --fpr 0.01
expect 0 '1 keys added, 1 new' '' -- add live before-swap
# The files are of another shape (50000 keys, not 1000): refused, saying
# what would change, unless --reshape.
expect 2 '' 'swap would change live from bloom 1000 keys \(k 5, 20 blocks\) to bloom 50000 keys \(k 9, 1513 blocks\); add --reshape' -- swap live "$ROOT/built.snap"
expect 0 '^present	before-swap$' '' -- check live before-swap
expect 2 '' 'checksum mismatch in section 0' -- swap live "$ROOT/damaged.snap" --reshape
expect 0 '^present	before-swap$' '' -- check live before-swap
# Swap in the built filter: its keys are there, the old key is gone.
expect 0 '^OK$' '' -- swap live "$ROOT/built.snap" --reshape
expect 0 '^present	built:1\npresent	built:30000$|present' '' -- check live built:1 built:30000
expect 1 '^absent	before-swap$' '' -- check live before-swap
expect 2 '' "filter 'nosuch' not found \(swap replaces a live filter" -- swap nosuch "$ROOT/built.snap"
expect 2 '' 'path must be absolute|cannot open' -- swap live /nonexistent/file
# Snapshot (a relative path is taken from the current directory), restore
# it under another name, as a new filter.
( abs=$(realpath "$SHMCTL") && cd "$ROOT" && "$abs" snapshot live rel.snap >/dev/null ) || fail "snapshot to a relative path"
checks=$((checks + 1))
expect 0 '^checksum +ok' '' -- inspect "$ROOT/rel.snap"
expect 0 '^OK$' '' -- restore copy "$ROOT/rel.snap"
expect 0 '^present	built:777$' '' -- check copy built:777
expect 0 '^OK$' '' -- restore cf "$ROOT/built-cf.snap"
expect 0 '^1	built:5$' '' -- count cf built:5
# chmod: every generation's file in place; bad modes refused.
expect 0 '^OK 1 file changed to 0660' '' -- chmod copy 0660
expect 2 '' "bad mode '0666'" -- chmod copy 0666
expect 2 '' 'chmod: missing MODE' -- chmod copy
# resize: an empty filter takes its new size; one holding keys says why not.
expect 0 "^created filter 'empty': bloom, capacity 1000" '' -- create empty --capacity 1000 --fpr 0.01
expect 0 '^OK$' '' -- resize empty --capacity 100000
expect 0 '"capacity": 100000' '' -- info empty --json
expect 2 '' 'a Bloom filter cannot be rebuilt from its bits.*shmctl build --type bloom --capacity 200000' -- resize copy --capacity 200000
expect 2 '' "fingerprints cannot move to a table of another size" -- resize cf --capacity 80000
expect 2 '' 'resize: missing --capacity N' -- resize copy
expect 2 '' 'cannot open directory' -- snapshot live /nonexistent-dir/x.snap
# The progress bar: on a terminal only.
checks=$((checks + 1))
script -qec "$SHMCTL build --capacity 50000 --fpr 0.01 --from $ROOT/keys.txt -o $ROOT/tty.snap" /dev/null >"$ROOT/tty.out" 2>&1
grep -aq 'M keys/s  ETA' "$ROOT/tty.out" || fail "build on a terminal shows no progress bar: $(cat -v "$ROOT/tty.out" | head -c 300)"
checks=$((checks + 1))
"$SHMCTL" build --capacity 50000 --fpr 0.01 --from "$ROOT/keys.txt" -o "$ROOT/pipe.snap" 2>"$ROOT/pipe.err" | cat >/dev/null
[ -s "$ROOT/pipe.err" ] && fail "build on a pipe wrote to stderr: $(cat "$ROOT/pipe.err")"

# Time windows: rotate by hand, keys of retired generations go.
expect 0 "^created filter 'win': bloom, capacity 1000, error rate 1e-06, [0-9]+ bytes, mode 0640, window 3600 s x 2 generations$" '' -- create win --capacity 1000 --fpr 0.000001 --window 1h --generations 2
expect 0 '2 keys added, 2 new' '' -- add win w1 w2
expect 0 '^OK$' '' -- rotate win
expect 0 '2 keys added, 1 new' '' -- add win w2 w3
expect 0 '^live_generations +2$' '' -- info win
expect 0 '^generations +[0-9]+:[0-9]+s:2 [0-9]+:[0-9]+s:2$' '' -- info win
expect 0 '^OK$' '' -- rotate win
expect 1 '^absent	w1$' '' -- check win w1
expect 0 '^present	w3$' '' -- check win w3
expect 2 '' "filter 'live' has no time window to rotate" -- rotate live
expect 2 '' 'GENERATIONS needs WINDOW duration' -- create win2 --capacity 10 --fpr 0.01 --generations 3
expect 2 '' "bad WINDOW '5w'" -- create win2 --capacity 10 --fpr 0.01 --window 5w
expect 2 '' "bad GENERATIONS '17'" -- create win2 --capacity 10 --fpr 0.01 --window 1m --generations 17

# A runtime root shmd creates is 0755 whatever its umask (077): workers of
# other users must reach their instance directory.
checks=$((checks + 1))
SHMF_RUNTIME_DIR=$ROOT/fresh/run "$SHMD" -i modes || fail "shmd -i modes in a fresh runtime root exited $?"
mode=$(stat -c %a "$ROOT/fresh/run" 2>/dev/null)
[ "$mode" = 755 ] || fail "runtime root $ROOT/fresh/run created with mode '$mode', want 755"
[ "$(stat -c %a "$ROOT/fresh")" = 755 ] || fail "its parent $ROOT/fresh is not 755"
MPID=$(cat "$ROOT/fresh/run/modes.pid" 2>/dev/null)
[ -n "$MPID" ] && kill "$MPID" && for _ in $(seq 100); do kill -0 "$MPID" 2>/dev/null || break; sleep 0.05; done

# shmd -p prints the embedded default configuration.
checks=$((checks + 1))
"$SHMD" -p | grep -q '^capacity = 1000000$' || fail "shmd -p lacks 'capacity = 1000000'"

kill "$PID"
wait "$PID"
rc=$?
PID=
[ "$rc" -eq 0 ] || fail "shmd exited $rc on SIGTERM"
echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
