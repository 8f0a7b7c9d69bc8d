#!/bin/bash
# test-stale-hidepid.sh - a temporary snapshot file whose writer lives is
# kept even where /proc hides that writer (hidepid=invisible, as a systemd
# unit's ProtectProc= gives shmd): kill() says it lives. A writer that is
# gone still has its file removed. Runs as root: in a private mount
# namespace with a /proc of its own, shmctl build runs as nobody next to a
# live root process named by a temporary file.
# Usage: test-stale-hidepid.sh PATH-TO-SHMCTL
set -u
SHMCTL=$1
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
	echo "needs root, unshare and setpriv (CI runs it as root)" >&2
	exit 77
fi
if [ "${IN_NAMESPACE:-}" != 1 ]; then
	exec env IN_NAMESPACE=1 unshare -m --propagation private bash "$0" "$@"
fi
mount -t proc -o hidepid=invisible proc /proc || { echo "cannot mount a /proc with hidepid" >&2; exit 1; }
D=$(mktemp -d)
sleep 120 &
live=$!
sleep 0 &
gone=$!
wait $gone
trap 'kill $live 2>/dev/null; rm -rf "$D"' EXIT
start=$(awk '{print $22}' /proc/$live/stat)
echo key >"$D/keys"
touch "$D/.f.snap.tmp-$live-$start-0" "$D/.f.snap.tmp-$gone-$start-0"
chmod 777 "$D"
chmod 644 "$D"/* "$D"/.f.*
seen=$(setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "test -e /proc/$live && echo visible || echo hidden")
setpriv --reuid=65534 --regid=65534 --clear-groups "$SHMCTL" build --from "$D/keys" --capacity 100 --fpr 0.01 -o "$D/f.snap" ||
	{ echo "FAIL - shmctl build as nobody"; exit 1; }
failures=0
check() {
	if eval "$1"; then echo "ok - $2"; else echo "FAIL - $2"; failures=$((failures + 1)); fi
}
check '[ "$seen" = hidden ]' "nobody cannot see the live root writer in /proc (hidepid=invisible)"
check '[ -e "$D/.f.snap.tmp-$live-$start-0" ]' "the live (hidden) writer's temporary file is kept"
check '[ ! -e "$D/.f.snap.tmp-$gone-$start-0" ]' "a gone writer's temporary file is removed"
check '[ -s "$D/f.snap" ]' "the snapshot is written"
echo "$((4 - failures)) passed, $failures failed"
[ $failures -eq 0 ]
