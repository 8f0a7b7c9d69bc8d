#!/bin/bash
# test-log-fallback.sh - a daemonised shmd without log_file on a host with
# no syslog socket (/dev/log absent) says so on the stderr it was started
# with, and logs there from then on, instead of losing every message to a
# socket nobody reads. As root, /dev/log is made absent for real: a private
# mount namespace (unshare -m) with an empty tmpfs on /dev holding only
# /dev/null (the host's, bind-mounted). Without root, only on a host whose
# /dev/log is absent already.
# Usage: test-log-fallback.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$(realpath "$1") SHMCTL=$(realpath "$2")
if [ -z "${IN_NAMESPACE:-}" ]; then
	if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
		exec env IN_NAMESPACE=1 unshare -m --propagation private bash "$0" "$@"
	fi
	[ -e /dev/log ] && { echo "SKIP: /dev/log exists and hiding it needs root and unshare" >&2; exit 77; }
fi
ROOT=$(mktemp -d /tmp/shmf-logfb-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT/run
failures=0
checks=0
PID=""
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	[ -n "${IN_NAMESPACE:-}" ] && umount "$ROOT/null" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
check() {
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}
wait_for() { for _ in $(seq 100); do "$@" && return 0; sleep 0.1; done; return 1; }

if [ -n "${IN_NAMESPACE:-}" ]; then
	touch "$ROOT/null"
	mount --bind /dev/null "$ROOT/null" && mount -t tmpfs -o mode=0755 tmpfs /dev && touch /dev/null &&
		mount --bind "$ROOT/null" /dev/null || { echo "FAIL: cannot set up a /dev without log" >&2; exit 1; }
fi
check "/dev/log is absent here" test ! -e /dev/log
check "/dev/null still works" bash -c 'echo x >/dev/null'

# Daemonised, no log_file: the notice and the log on the starter's stderr.
printf '[instance]\nname = fb\n\n[filter f]\ncapacity = 100\nfpr = 0.01\n' >"$ROOT/shmd.conf"
"$SHMD" -c "$ROOT/shmd.conf" 2>"$ROOT/err"
rc=$?
check "shmd daemonised (exit $rc)" test "$rc" -eq 0
PID=$(cat "$SHMF_RUNTIME_DIR/fb.pid" 2>/dev/null)
check "shmd serves" wait_for bash -c "'$SHMCTL' -i fb ping | grep -qx PONG"
check "stderr says there is no syslog and where the log goes" \
	wait_for grep -q "shmd\[warning\]: no syslog to log to (/dev/log: No such file or directory) and no log_file: the log goes to the stderr shmd was started with; set log_file" "$ROOT/err"
check "the daemon's lines follow there (listening on)" wait_for grep -q "shmd\[info\]: listening on $SHMF_RUNTIME_DIR/fb.sock" "$ROOT/err"
"$SHMCTL" -i fb reload >/dev/null
check "a reload is logged there too" wait_for grep -q "reload: $ROOT/shmd.conf: 0 filters created" "$ROOT/err"
check "the notice is said once, not again at the reload" test "$(grep -c 'no syslog to log to' "$ROOT/err")" -eq 1
kill "$PID"
check "SIGTERM stops it" wait_for bash -c "! kill -0 $PID 2>/dev/null"
PID=""

# With log_file: the file gets the log, and no notice about syslog.
printf '[instance]\nname = fb\nlog_file = %s\n' "$ROOT/shmd.log" >"$ROOT/shmd.conf"
"$SHMD" -c "$ROOT/shmd.conf" 2>"$ROOT/err2"
PID=$(cat "$SHMF_RUNTIME_DIR/fb.pid" 2>/dev/null)
check "with log_file: the file gets the log" wait_for grep -q "listening on" "$ROOT/shmd.log"
check "with log_file: nothing about syslog anywhere" bash -c "! grep -q 'no syslog' '$ROOT/err2' '$ROOT/shmd.log'"
kill "$PID" 2>/dev/null
PID=""

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
