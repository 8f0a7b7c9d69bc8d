#!/bin/bash
# test-tcp-clients.sh - a real Redis client against shmd over TCP.
#
#   tests/test-tcp-clients.sh CLIENT PATH-TO-SHMD
#
# CLIENT is redis-cli, redis-py (Debian's python3-redis) or phpredis
# (Debian's php-redis with php-cli). Installs the client's Debian packages
# when they are missing (exit 77, meson's SKIP, with the reason, when that
# is impossible; run-tests.sh counts a skip as a failure), starts a private shmd with its TCP listener on a free
# loopback port (requirepass set, maxclients 16, max_request 64k), and runs
# tests/tcp-clients/<client>: AUTH required, refused and accepted; the
# shared script of BF/CF commands (tcp-clients/script.txt) with every reply
# compared; pipelining; the client and request-size limits as the client
# library reports them. Ends by stopping shmd with SIGTERM, which must exit
# 0 (under ASan, a leak would not).
set -u
CLIENT=${1:-}
SHMD=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -n "$CLIENT" ] && [ -x "$SHMD" ] || { echo "usage: $0 redis-cli|redis-py|phpredis PATH-TO-SHMD" >&2; exit 2; }

# Debian's python3, where python3-redis goes (a python3 earlier in PATH,
# such as pyenv's, would not see it).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
case $CLIENT in
redis-cli) PKGS="redis-tools python3"; HAVE="command -v redis-cli && $PY -c ''"
	RUN=("$PY" "$HERE/tcp-clients/redis-cli.py") ;;
redis-py) PKGS="python3 python3-redis"; HAVE="$PY -c 'import redis'"
	RUN=("$PY" "$HERE/tcp-clients/redis-py.py") ;;
phpredis) PKGS="php-cli php-redis"; HAVE="php -r 'exit(class_exists(\"Redis\") ? 0 : 1);'"
	RUN=(php "$HERE/tcp-clients/phpredis.php") ;;
*) echo "$0: unknown client '$CLIENT' (redis-cli, redis-py or phpredis)" >&2; exit 2 ;;
esac

# --- The client's packages, installed once (a lock: tests run in parallel). -
if ! eval "$HAVE" >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
	echo "installing Debian packages: $PKGS"
	(
		flock -w 600 9 || exit 1
		export DEBIAN_FRONTEND=noninteractive
		$sudo apt-get install -y -q --no-install-recommends $PKGS ||
			{ $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends $PKGS; }
	) 9>/tmp/shmf-tests-apt.lock >"${TMPDIR:-/tmp}/shmf-apt-$CLIENT.log" 2>&1
	if ! eval "$HAVE" >/dev/null 2>&1; then
		tail -5 "${TMPDIR:-/tmp}/shmf-apt-$CLIENT.log"
		echo "SKIP: $CLIENT is not installed and apt-get could not install $PKGS (needs root and a Debian archive)"
		exit 77
	fi
fi

# --- A private shmd with its TCP listener. ----------------------------------
ROOT=$(mktemp -d /dev/shm/shmf-tcp-clients-XXXXXX)
SHMD_PID=""
cleanup() {
	[ -n "$SHMD_PID" ] && kill -KILL "$SHMD_PID" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT
PASSWORD="client-test-$RANDOM$RANDOM"
PORT=""
for _ in $(seq 20); do
	try=$((20000 + RANDOM % 40000))
	printf '[instance]\nname = clients\n\n[tcp]\nenabled = yes\nport = %d\nrequirepass = %s\nmaxclients = 16\nmax_request = 64k\n' \
		"$try" "$PASSWORD" >"$ROOT/shmd.ini"
	SHMF_RUNTIME_DIR=$ROOT "$SHMD" -f -c "$ROOT/shmd.ini" 2>"$ROOT/shmd.log" &
	SHMD_PID=$!
	for _ in $(seq 200); do
		grep -q "listening on tcp" "$ROOT/shmd.log" && break
		kill -0 "$SHMD_PID" 2>/dev/null || break
		sleep 0.05
	done
	if grep -q "listening on tcp" "$ROOT/shmd.log"; then PORT=$try; break; fi
	wait "$SHMD_PID" 2>/dev/null
	SHMD_PID=""
	grep -q "Address already in use" "$ROOT/shmd.log" && continue
	echo "shmd did not start; its log:"; cat "$ROOT/shmd.log"; exit 1
done
[ -n "$PORT" ] || { echo "no free loopback port after 20 tries"; exit 1; }
echo "shmd on 127.0.0.1:$PORT; client: $CLIENT"

"${RUN[@]}" "$PORT" "$PASSWORD" "$HERE/tcp-clients/script.txt" 16 65536
rc=$?

kill -TERM "$SHMD_PID"
wait "$SHMD_PID"
st=$?
SHMD_PID=""
if [ "$st" -ne 0 ]; then
	echo "shmd exited with status $st on SIGTERM; its log:"
	cat "$ROOT/shmd.log"
	exit 1
fi
exit $rc
