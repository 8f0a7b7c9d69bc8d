#!/bin/bash
# fleet-demo.sh - a fleet of three shmfilter hosts and one Redis, on this
# machine: keys added on node 1 are found on nodes 2 and 3.
#
#   examples/fleet-demo.sh [BUILD-DIR]        (default: build)
#
# Starts a private redis-server (unix socket only, no TCP port) and three
# shmd, each with its own runtime directory and a configuration whose
# [replication] section names the Redis, the node and the shared secret,
# and a filter 'clicks' that replicates. Adds keys on node 1 with shmctl,
# checks them on nodes 2 and 3, shows `shmctl replication` on node 2, and
# stops everything. Exit status 0 when every key showed up everywhere.
# Needs redis-server (Debian's redis-server package).
set -u
BUILD=${1:-build}
SHMD=${SHMD:-$BUILD/shmd/shmd}
SHMCTL=${SHMCTL:-$BUILD/tools/shmctl}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
for p in "$SHMD" "$SHMCTL"; do
	[ -x "$p" ] || { echo "fleet-demo: $p not found: build first (meson setup build && meson compile -C build)" >&2; exit 2; }
done
command -v "$REDIS_SERVER" >/dev/null || { echo "fleet-demo: redis-server not found (apt-get install redis-server)" >&2; exit 2; }

base=/tmp
[ -d /dev/shm ] && base=/dev/shm
ROOT=$(mktemp -d "$base/shmf-fleet-demo-XXXXXX")
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	rm -rf "$ROOT"
}
trap cleanup EXIT

# Wait up to 10 s for a command to succeed, while every process started
# here is still running.
wait_for() {
	for _ in $(seq 200); do
		"$@" >/dev/null 2>&1 && return 0
		for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || return 1; done
		sleep 0.05
	done
	return 1
}

# One Redis, on a unix socket.
"$REDIS_SERVER" --port 0 --unixsocket "$ROOT/redis.sock" --unixsocketperm 700 --dir "$ROOT" \
	--save "" --appendonly no --logfile "$ROOT/redis.log" &
PIDS+=($!)
wait_for test -S "$ROOT/redis.sock" || { echo "fleet-demo: redis-server did not start:"; cat "$ROOT/redis.log"; exit 1; }
echo "redis-server on $ROOT/redis.sock"

# Three nodes: the same secret, each its own name and runtime directory.
for i in 1 2 3; do
	mkdir -m 700 "$ROOT/node$i"
	cat >"$ROOT/node$i.ini" <<EOF
[instance]
name = default

[replication]
redis = $ROOT/redis.sock
node = node$i
secret = fleet-demo-secret

[filter clicks]
type = bloom
capacity = 1000000
fpr = 0.001
replicate = yes
EOF
	SHMF_RUNTIME_DIR=$ROOT/node$i "$SHMD" -f -c "$ROOT/node$i.ini" 2>"$ROOT/node$i.log" &
	PIDS+=($!)
done
node() { local i=$1; shift; "$SHMCTL" --socket "$ROOT/node$i/default.sock" "$@"; }
for i in 1 2 3; do
	wait_for node "$i" ping || { echo "fleet-demo: node $i did not start:"; cat "$ROOT/node$i.log"; exit 1; }
	echo "node $i: shmd with runtime directory $ROOT/node$i"
done

keys=(click:1001 click:1002 click:1003)
echo
echo "node 1: shmctl add clicks ${keys[*]}"
node 1 add clicks "${keys[@]}" >/dev/null || exit 1
status=0
for i in 2 3; do
	start=$(date +%s%N)
	if wait_for node "$i" check -q clicks "${keys[@]}"; then
		echo "node $i: shmctl check clicks ${keys[*]}: all found ($((($(date +%s%N) - start) / 1000000)) ms after the add returned, polling)"
	else
		echo "node $i: the keys did not arrive within 10 s"
		status=1
	fi
done
node 3 check -q clicks click:never-added >/dev/null
echo "node 3: shmctl check clicks click:never-added: exit $? (1: absent)"
echo
echo "node 2: shmctl replication"
node 2 replication || status=1
if [ $status -ne 0 ]; then
	for i in 1 2 3; do echo "---- node $i's log"; tail -5 "$ROOT/node$i.log"; done
	echo "fleet-demo: FAILED"
	exit 1
fi
echo "fleet-demo: ok"
