#!/bin/bash
# run-demo.sh - set everything up on a fresh Debian machine, start shmd
# with its embedded default configuration (instance 'default', Bloom filter
# 'default', 1,000,000 keys at 1% FPR), and show it working in a filter of
# its own, 'run-demo' (the same shape; 'default' is left to the user):
# workers de-duplicating clicks through shared memory, shmctl, redis-cli,
# and the speed of a check. shmd and the filter stay; a second run says how
# many keys it found from an earlier one.
set -eu
cd "$(dirname "$0")"
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null

SHMD=build/shmd/shmd
SHMCTL=build/tools/shmctl
WORKER=build/examples/dedupe-worker
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

if $SHMCTL ping >/dev/null 2>&1; then
	echo "shmd is already running for instance 'default'"
else
	say shmd
	$SHMD # daemonizes once its socket accepts clients; logs go to syslog
fi
sock=$($SHMCTL ping >/dev/null && echo ok)
[ "$sock" = ok ]

FILTER=run-demo
if $SHMCTL info $FILTER >/dev/null 2>&1; then
	keys=$($SHMCTL info $FILTER | awk '$1 == "items" { print $2 }')
	echo
	echo "filter '$FILTER' is there from an earlier run, holding $keys keys: they stay, so the"
	echo "workers below say 'seen before' for clicks added then (to start afresh: $SHMCTL drop $FILTER)"
else
	say "shmctl create $FILTER --capacity 1000000 --fpr 0.01"
	$SHMCTL create $FILTER --capacity 1000000 --fpr 0.01
fi
say shmctl list
$SHMCTL list
say shmctl info $FILTER
$SHMCTL info $FILTER

say "dedupe-worker -f $FILTER click:1001 click:1002 click:1001    # one worker process"
$WORKER -f $FILTER click:1001 click:1002 click:1001
say "dedupe-worker -f $FILTER click:1002 click:1003               # another process sees the same filter"
$WORKER -f $FILTER click:1002 click:1003

say "seq 1 200000 | sed s/^/user:/ | shmctl add $FILTER -"
seq 1 200000 | sed 's/^/user:/' | $SHMCTL add $FILTER -
say "shmctl check $FILTER user:42 user:999999999"
$SHMCTL check $FILTER user:42 user:999999999 || echo "(exit status $?: a key is absent)"

runtime=${SHMF_RUNTIME_DIR:-$([ "$(id -u)" -eq 0 ] && echo /run/shmd || echo "${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/shmd")}
if command -v redis-cli >/dev/null; then
	say "redis-cli -s $runtime/default.sock BF.EXISTS $FILTER user:42"
	redis-cli -s "$runtime/default.sock" BF.EXISTS $FILTER user:42
fi

say "ls -l $runtime/default/"
ls -l "$runtime/default/"

say "build/bench/bench-filter --demo      # nanoseconds per check, no syscall, no lock"
build/bench/bench-filter --demo 2>/dev/null

echo
echo "shmd keeps running (pid $(cat "$runtime/default.pid")), and filter '$FILTER' with it."
echo "Drop the filter with: $SHMCTL drop $FILTER; stop shmd with: kill \$(cat $runtime/default.pid)"
