#!/bin/bash
# test-reload-path.sh - the configuration path is opened only as what a
# configuration file can be: a regular file (a link to one is followed),
# at most 16 MiB. Started with -c, and reloaded (SIGHUP, shmctl reload),
# a directory, a FIFO, a 17 MiB file and a link to a FIFO at the path are
# refused with a message naming the path and what it is, and change
# nothing: the configured group stays on every data file, no filter is
# made, and PING is answered while the FIFO sits there (nobody writes it).
# Usage: test-reload-path.sh PATH-TO-SHMD PATH-TO-SHMCTL (as root: the group)
set -u
SHMD=$1
SHMCTL=$2
ROOT=$(mktemp -d /dev/shm/shmf-reloadpath-XXXXXX)
chmod 0755 "$ROOT"
export SHMF_RUNTIME_DIR=$ROOT/run
failures=0
checks=0
PID=

cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check() { # check DESCRIPTION COMMAND...: the command must succeed
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}

wait_for() { # 10 s at most
	for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done
	return 1
}

if [ "$(id -u)" -ne 0 ]; then
	echo "test-reload-path needs root (it gives the instance a group)" >&2
	exit 77
fi
GROUP=$(getent group users >/dev/null && echo users || echo daemon)

CONF=$ROOT/shmd.conf
LOG=$ROOT/shmd.log
REAL=$ROOT/real.conf
cat >"$REAL" <<CONF
[instance]
name = rp
group = $GROUP
log_file = $LOG

[filter a]
capacity = 1000
fpr = 0.01
mode = 0660
CONF

# --- at start, with -c --------------------------------------------------
start_refused() { # start_refused WHAT PATTERN: shmd -c $CONF exits 2 naming the path
	checks=$((checks + 1))
	"$SHMD" -f -c "$CONF" -i rp0 >"$ROOT/out" 2>"$ROOT/err" &
	local pid=$! rc
	for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	if kill -0 $pid 2>/dev/null; then
		kill -9 $pid
		fail "shmd -c $1: still running after 5 s (blocked on the path?)"
		return
	fi
	wait $pid
	rc=$?
	[ "$rc" -eq 2 ] || fail "shmd -c $1: exit $rc, want 2 ($(cat "$ROOT/err"))"
	grep -q "$2" "$ROOT/err" || fail "shmd -c $1: the message does not say '$2': $(cat "$ROOT/err")"
}
mkdir "$CONF"
start_refused "a directory" "$CONF is a directory, not a configuration file"
rmdir "$CONF"
mkfifo "$CONF"
start_refused "a FIFO" "$CONF is a FIFO, not a configuration file"
rm "$CONF"
ln -s /dev/null "$CONF"
start_refused "a link to /dev/null" "$CONF is a character device, not a configuration file"
rm "$CONF"
{ cat "$REAL"; head -c $((17 << 20)) /dev/zero | tr '\0' '\n'; } >"$CONF"
start_refused "a 17 MiB file" "$CONF: .*larger than the 16 MiB a configuration file may have"
rm "$CONF"

# --- reload -------------------------------------------------------------
cp "$REAL" "$CONF"
"$SHMD" -c "$CONF" || { echo "FAIL: shmd -c $CONF exited $?" >&2; exit 1; }
PID=$(cat "$SHMF_RUNTIME_DIR/rp.pid")
datafile="$SHMF_RUNTIME_DIR/rp/$("$SHMCTL" -i rp info a | awk '$1 == "data_file" {print $2}')"
check "the data file has the configured group" bash -c "[ \"\$(stat -c %G '$datafile')\" = $GROUP ]"

# Each refused reload: logged with the path and what it is, answered by
# shmctl reload, nothing changed (the group of the data file, no filter
# b), and the daemon serves throughout.
refused() { # refused WHAT PATTERN
	local before
	before=$(grep -c "reload: " "$LOG")
	kill -HUP "$PID"
	check "SIGHUP with $1: refused, logged" wait_for bash -c "grep 'reload: ' '$LOG' | tail -n +$((before + 1)) | grep -q \"$2.*nothing changed\""
	check "PING answered after SIGHUP with $1" bash -c "timeout 2 '$SHMCTL' -i rp ping >/dev/null"
	checks=$((checks + 1))
	timeout 5 "$SHMCTL" -i rp reload >"$ROOT/out" 2>"$ROOT/err"
	local rc=$?
	[ "$rc" -eq 2 ] || fail "shmctl reload with $1: exit $rc, want 2 ($(cat "$ROOT/err"))"
	grep -q "$2" "$ROOT/err" || fail "shmctl reload with $1: does not say '$2': $(cat "$ROOT/err")"
	check "after $1: the data file keeps its group" bash -c "[ \"\$(stat -c %G '$datafile')\" = $GROUP ]"
	check "after $1: no filter made" bash -c "! '$SHMCTL' -i rp list | grep -qx b"
	check "after $1: shmd still runs" kill -0 "$PID"
}

rm "$CONF"
mkdir "$CONF"
refused "a directory" "$CONF is a directory, not a configuration file"
rmdir "$CONF"

# A FIFO nobody writes to: PINGs every 50 ms while it is there, each
# answered within a second.
mkfifo "$CONF"
kill -HUP "$PID"
slow=0
for _ in $(seq 20); do
	timeout 1 "$SHMCTL" -i rp ping >/dev/null || slow=$((slow + 1))
	sleep 0.05
done
checks=$((checks + 1))
[ "$slow" -eq 0 ] || fail "with a FIFO at the configuration path, $slow of 20 PINGs not answered within 1 s"
refused "a FIFO" "$CONF is a FIFO, not a configuration file"
rm "$CONF"

mkfifo "$ROOT/fifo"
ln -s "$ROOT/fifo" "$CONF"
refused "a link to a FIFO" "$CONF is a FIFO, not a configuration file"
rm "$CONF"

# 17 MiB: the same configuration without the group and with filter b,
# padded with empty lines; applied, it would take the group away.
{ grep -v '^group' "$REAL"; printf '[filter b]\ncapacity = 10\n'; head -c $((17 << 20)) /dev/zero | tr '\0' '\n'; } >"$CONF"
refused "a 17 MiB file" "$CONF: .*larger than the 16 MiB a configuration file may have"

# A link to a regular file is followed: that reload is applied.
{ cat "$REAL"; printf '[filter b]\ncapacity = 10\n'; } >"$ROOT/linked.conf"
rm "$CONF"
ln -s "$ROOT/linked.conf" "$CONF"
check "a link to a regular file reloads" bash -c "timeout 5 '$SHMCTL' -i rp reload >/dev/null"
check "... and its filter b is made" bash -c "'$SHMCTL' -i rp list | grep -qx b"

kill "$PID"
wait_for bash -c "! kill -0 $PID 2>/dev/null"
PID=
echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
