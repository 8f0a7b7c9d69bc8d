#!/bin/bash
# with-demo-leftovers.sh - run a test beside what ./run-demo.sh leaves
# behind: shmd started as the demo starts it (as root, no -c, no
# SHMF_RUNTIME_DIR: the embedded default's instance 'default' in /run/shmd,
# on a tmpfs it mounts there), with keys in its filters, still running. The
# README says to run ./run-tests.sh after ./run-demo.sh; a test that looks
# at /run/shmd, or reaches the running daemon, fails here.
# All of it happens as root in a private mount namespace (unshare -m) with
# a private /run, so the host's /run/shmd is neither seen nor touched.
# Usage: with-demo-leftovers.sh PATH-TO-SHMD PATH-TO-SHMCTL COMMAND [ARGS...]
set -u
SHMD=$1 SHMCTL=$2
shift 2
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "needs root and unshare (CI runs it as root)" >&2
	exit 77
fi
if [ "${IN_DEMO_NAMESPACE:-}" != 1 ]; then
	exec env IN_DEMO_NAMESPACE=1 unshare -m --propagation private bash "$0" "$SHMD" "$SHMCTL" "$@"
fi
# A private /run off tmpfs (mount_tmpfs = auto mounts only on a /run/shmd
# it creates, and never over a tmpfs), with no /run/shmd in it yet.
base=
for d in /var/tmp /tmp "$PWD"; do
	[ "$(findmnt -n -o FSTYPE -T "$d" 2>/dev/null)" != tmpfs ] && [ -w "$d" ] && base=$d && break
done
[ -n "$base" ] || { echo "no directory off tmpfs for the private /run" >&2; exit 77; }
SCRATCH=$(mktemp -d "$base/shmf-demo-left-XXXXXX")
PID=
cleanup() {
	if [ -n "$PID" ]; then
		kill "$PID" 2>/dev/null
		for _ in $(seq 200); do [ -e /run/shmd/default.pid ] || break; sleep 0.05; done
	fi
	umount -R /run 2>/dev/null
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
. "$(dirname "$0")/private-run.sh"
mkdir "$SCRATCH/run"
private_run "$SCRATCH/run" || exit 1

# The demo's start: `build/shmd/shmd`, as run-demo.sh runs it.
env -u SHMF_RUNTIME_DIR "$SHMD" 2>"$SCRATCH/shmd.log" || {
	echo "shmd as run-demo.sh starts it exited $?: $(cat "$SCRATCH/shmd.log")" >&2
	exit 1
}
PID=$(cat /run/shmd/default.pid)
env -u SHMF_RUNTIME_DIR "$SHMCTL" create run-demo --capacity 1000000 --fpr 0.01 >/dev/null &&
	seq 1 1000 | sed 's/^/user:/' | env -u SHMF_RUNTIME_DIR "$SHMCTL" add -q run-demo - &&
	seq 1 1000 | sed 's/^/click:/' | env -u SHMF_RUNTIME_DIR "$SHMCTL" add -q default - || {
	echo "cannot add the demo's keys" >&2
	exit 1
}
# What the demo leaves, checked, so that this never passes vacuously.
[ "$(findmnt -n -o SOURCE --mountpoint /run/shmd | tail -n 1)" = shmd ] ||
	{ echo "no shmd tmpfs on /run/shmd: not what run-demo.sh leaves" >&2; exit 1; }
[ -S /run/shmd/default.sock ] || { echo "no /run/shmd/default.sock" >&2; exit 1; }
echo "left as run-demo.sh leaves it: shmd pid $PID, its tmpfs on /run/shmd, filters default and run-demo with keys"

"$@"
rc=$?
# The test did not take the demo's daemon or its keys with it.
if ! kill -0 "$PID" 2>/dev/null || ! env -u SHMF_RUNTIME_DIR "$SHMCTL" check -q run-demo user:1000 >/dev/null; then
	echo "FAIL: the demo's shmd or its keys did not survive the test" >&2
	[ "$rc" -eq 0 ] && rc=1
fi
exit "$rc"
