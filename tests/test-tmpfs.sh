#!/bin/bash
# test-tmpfs.sh - where shmd mounts a tmpfs: only on a /run/shmd it creates
# (mount_tmpfs = auto) or where the configuration says mount_tmpfs = yes;
# never on an existing empty directory elsewhere; unmounted again by a stop
# that removes the instance. Runs as root in a private mount namespace
# (unshare -m), with a private /run, so the host never sees a mount, and
# no mount the host has below /run (run-demo.sh's tmpfs on /run/shmd) is
# seen by the test.
# Usage: test-tmpfs.sh PATH-TO-SHMD
set -u
SHMD=$1
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "needs root and unshare (CI runs it as root)" >&2
	exit 77
fi
if [ "${IN_NAMESPACE:-}" != 1 ]; then
	exec env IN_NAMESPACE=1 unshare -m --propagation private bash "$0" "$@"
fi
failures=0
checks=0
# Scratch space on a file system that is not a tmpfs (shmd never mounts
# over a tmpfs, so on one there would be nothing to test).
base=
for d in /var/tmp /tmp "$PWD"; do
	[ "$(findmnt -n -o FSTYPE -T "$d" 2>/dev/null)" != tmpfs ] && [ -w "$d" ] && base=$d && break
done
[ -n "$base" ] || { echo "no directory off tmpfs for the scratch space" >&2; exit 77; }
SCRATCH=$(mktemp -d "$base/shmf-tmpfs-XXXXXX")
# A private /run, off tmpfs: /run/shmd does not exist here, whatever the
# host has (nor is any mount of the host's below /run listed here).
. "$(dirname "$0")/private-run.sh"
trap 'umount -R /run 2>/dev/null; umount -R "$SCRATCH"/* 2>/dev/null; rm -rf "$SCRATCH"' EXIT
mkdir "$SCRATCH/run"
private_run "$SCRATCH/run" || exit 1

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# The source of the topmost mount on $1 ("" if none).
mount_source() { findmnt -n -o SOURCE --mountpoint "$1" 2>/dev/null | tail -n 1; }

# run ROOT CONF: start shmd (daemonising) on runtime root ROOT, then stop it.
start() {
	SHMF_RUNTIME_DIR=$1 "$SHMD" -c "$2" 2>>"$SCRATCH/log" || fail "shmd on $1 exited $?"
	PID=$(cat "$1/t.pid" 2>/dev/null)
}
stop() {
	kill "$PID" 2>/dev/null
	for _ in $(seq 200); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
	# kill -0 also answers for a zombie that nobody reaped yet: wait for
	# the pidfile, which shmd removes last.
	for _ in $(seq 200); do [ -e "$1/t.pid" ] || break; sleep 0.05; done
}

printf '[instance]\nname = t\n' >"$SCRATCH/keep.conf"
printf '[instance]\nname = t\nremove_on_exit = yes\n' >"$SCRATCH/remove.conf"
printf '[instance]\nname = t\nremove_on_exit = yes\nmount_tmpfs = yes\n' >"$SCRATCH/yes.conf"
printf '[instance]\nname = t\nremove_on_exit = yes\nmount_tmpfs = no\n' >"$SCRATCH/no.conf"

# 1. An existing empty directory under /tmp (on a disk here, or whatever
#    /tmp is): never mounted on by default.
mkdir "$SCRATCH/empty"
before=$(mount_source "$SCRATCH/empty")
start "$SCRATCH/empty" "$SCRATCH/remove.conf"
checks=$((checks + 1))
[ "$(mount_source "$SCRATCH/empty")" = "$before" ] || fail "shmd mounted on an existing empty directory under /tmp"
grep -q "mount_tmpfs = auto mounts only on /run/shmd" "$SCRATCH/log" || fail "the log does not say why it did not mount"
stop "$SCRATCH/empty"

# 2. /run/shmd, created by shmd: mounted (source shmd); a stop that keeps
#    the segments keeps the mount; one that removes the instance unmounts
#    it and removes the directory it made.
start /run/shmd "$SCRATCH/keep.conf"
checks=$((checks + 1))
[ "$(mount_source /run/shmd)" = shmd ] || fail "no shmd tmpfs on the /run/shmd shmd created"
stop /run/shmd
checks=$((checks + 1))
[ "$(mount_source /run/shmd)" = shmd ] || fail "a stop that keeps the segments unmounted them"
[ -e /run/shmd/t/control ] || fail "a stop without remove_on_exit lost the segments"
start /run/shmd "$SCRATCH/remove.conf"
stop /run/shmd
checks=$((checks + 1))
[ -z "$(mount_source /run/shmd)" ] || fail "a stop that removed the instance left the tmpfs on /run/shmd"
# The directory was there at this start (made by the first run): kept.
[ -d /run/shmd ] || fail "/run/shmd removed though this run did not create it"

# 3. /run/shmd existing (empty) before shmd: not mounted with auto.
start /run/shmd "$SCRATCH/remove.conf"
checks=$((checks + 1))
[ -z "$(mount_source /run/shmd)" ] || fail "shmd mounted on a /run/shmd it did not create"
stop /run/shmd
rmdir /run/shmd

# 4. Created by shmd and removed at once: the directory goes with the mount.
start /run/shmd "$SCRATCH/remove.conf"
checks=$((checks + 1))
[ "$(mount_source /run/shmd)" = shmd ] || fail "no tmpfs on a fresh /run/shmd"
stop /run/shmd
[ -z "$(mount_source /run/shmd)" ] || fail "the tmpfs stayed after removing the instance"
[ -e /run/shmd ] && fail "/run/shmd, created by shmd, stayed after it unmounted"

# 5. mount_tmpfs = yes: an existing empty directory anywhere; not one with files.
mkdir "$SCRATCH/yes"
start "$SCRATCH/yes" "$SCRATCH/yes.conf"
checks=$((checks + 1))
[ "$(mount_source "$SCRATCH/yes")" = shmd ] || fail "mount_tmpfs = yes did not mount on an empty directory"
stop "$SCRATCH/yes"
[ "$(mount_source "$SCRATCH/yes")" = shmd ] && fail "mount_tmpfs = yes: not unmounted at a stop that removed the instance"
mkdir "$SCRATCH/full" && touch "$SCRATCH/full/someone-else"
start "$SCRATCH/full" "$SCRATCH/yes.conf"
checks=$((checks + 1))
[ "$(mount_source "$SCRATCH/full")" = shmd ] && fail "mounted over a directory with files in it"
stop "$SCRATCH/full"

# 6. Another instance still in the tmpfs: the mount stays for it.
start /run/shmd "$SCRATCH/remove.conf"
SHMF_RUNTIME_DIR=/run/shmd "$SHMD" -i other 2>>"$SCRATCH/log"
OTHER=$(cat /run/shmd/other.pid)
stop /run/shmd
checks=$((checks + 1))
[ "$(mount_source /run/shmd)" = shmd ] || fail "unmounted with another instance's files in it"
kill "$OTHER"
# Gone before the unmount below (a shmd still shutting down keeps the
# tmpfs busy: the sanitizer build's slower exit once made step 7 find it).
for _ in $(seq 400); do [ -e /run/shmd/other.pid ] || break; sleep 0.05; done

# 7. mount_tmpfs = no: never, even on a fresh /run/shmd.
umount /run/shmd 2>/dev/null
rm -rf /run/shmd
start /run/shmd "$SCRATCH/no.conf"
checks=$((checks + 1))
[ -z "$(mount_source /run/shmd)" ] || fail "mount_tmpfs = no mounted anyway"
stop /run/shmd

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
