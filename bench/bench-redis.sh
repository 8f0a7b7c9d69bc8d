#!/bin/bash
# bench-redis.sh - run bench-redis against a private Redis and a private
# shmd, then write the table (printed and saved), the CSV and the plots.
#
#   bench/bench-redis.sh --bench PATH --shmd PATH --out DIR [--quick] [--standin]
#
# Redis: redis-server on a free loopback port and a unix socket, persistence
# off (--save '' --appendonly no), in a directory of its own under /tmp; with
# SHMF_BENCH_REDISBLOOM=/path/to/redisbloom.so it loads that module.
# shmd: the given binary, instance "bench", in a private runtime directory
# (as root it mounts a huge-page tmpfs there, as it does on /run/shmd), with
# its TCP listener on a free loopback port.
# Both are stopped, and the tmpfs unmounted, on exit, error or interrupt.
# --standin runs the RedisBloom code against shmd's socket when the module
# is not loaded (the test suite uses it, so that code is exercised).
# ./run-bench.sh builds and installs what this needs, then runs it.
set -euo pipefail

usage() {
	echo "usage: $0 --bench PATH-TO-bench-redis --shmd PATH-TO-shmd --out DIR [--quick] [--standin]" >&2
	exit 2
}

BENCH="" SHMD="" OUT="" QUICK="" STANDIN=""
while [ $# -gt 0 ]; do
	case $1 in
	--bench) BENCH=${2:-}; shift 2 || usage ;;
	--shmd) SHMD=${2:-}; shift 2 || usage ;;
	--out) OUT=${2:-}; shift 2 || usage ;;
	--quick) QUICK=--quick; shift ;;
	--standin) STANDIN=1; shift ;;
	*) echo "$0: unknown argument '$1'" >&2; usage ;;
	esac
done
[ -n "$BENCH" ] && [ -n "$SHMD" ] && [ -n "$OUT" ] || usage
[ -x "$BENCH" ] || { echo "$0: --bench '$BENCH' is not an executable (meson compile -C build builds bench/bench-redis)" >&2; exit 2; }
[ -x "$SHMD" ] || { echo "$0: --shmd '$SHMD' is not an executable" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in redis-server redis-cli gnuplot python3; do
	command -v "$tool" >/dev/null || {
		echo "$0: $tool not found (./run-bench.sh installs it; or apt-get install redis-server gnuplot-nox python3)" >&2
		exit 2
	}
done
RB=${SHMF_BENCH_REDISBLOOM:-}
if [ -n "$RB" ] && [ ! -r "$RB" ]; then
	echo "$0: SHMF_BENCH_REDISBLOOM='$RB' is not a readable file (the RedisBloom module's .so)" >&2
	exit 2
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d /tmp/shmf-bench-redis-XXXXXX)
RUN=$TMP/run
mkdir "$RUN"
REDIS_PID="" SHMD_PID=""

stop() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
	stop "$REDIS_PID"
	stop "$SHMD_PID"
	mountpoint -q "$RUN" && umount "$RUN"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "$0: interrupted" >&2; exit 130' INT
trap 'echo "$0: terminated" >&2; exit 143' TERM

# --- Redis: a free loopback port (tried at random), a unix socket. --------
start_redis() {
	local port=$1
	rm -f "$TMP/redis.log"
	redis-server --port "$port" --bind 127.0.0.1 --unixsocket "$TMP/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --dir "$TMP" --logfile "$TMP/redis.log" --daemonize no \
		${RB:+--loadmodule "$RB"} &
	REDIS_PID=$!
	for _ in $(seq 100); do
		if [ -S "$TMP/redis.sock" ] && [ "$(redis-cli -s "$TMP/redis.sock" ping 2>/dev/null)" = PONG ]; then
			return 0
		fi
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.1
	done
	stop "$REDIS_PID"
	REDIS_PID=""
	return 1
}
PORT=""
for _ in $(seq 20); do
	try=$((20000 + RANDOM % 30000))
	if start_redis "$try"; then PORT=$try; break; fi
	grep -q "Address already in use" "$TMP/redis.log" 2>/dev/null && continue
	echo "$0: redis-server did not start; its log:" >&2
	cat "$TMP/redis.log" >&2 || true
	exit 1
done
[ -n "$PORT" ] || { echo "$0: no free loopback port for redis-server after 20 tries" >&2; exit 1; }
echo "Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'): 127.0.0.1:$PORT and $TMP/redis.sock, persistence off"
RBFLAG=""
if [ -n "$RB" ]; then
	redis-cli -s "$TMP/redis.sock" MODULE LIST | grep -qi bf || {
		echo "$0: Redis loaded $RB but lists no bf module" >&2
		exit 1
	}
	RBFLAG=--redisbloom
	echo "RedisBloom: loaded from $RB"
else
	echo "RedisBloom: skipped (SHMF_BENCH_REDISBLOOM does not name the module's .so; Debian does not package it)"
	[ -n "$STANDIN" ] && RBFLAG=--redisbloom-standin &&
		echo "RedisBloom code path: run against shmd's socket as a stand-in (test mode)"
fi

# --- shmd: instance "bench", no filters of its own, segments removed on exit;
# its TCP listener on a free loopback port (tried at random).
start_shmd() {
	# No password on the loopback listener: the benchmark is its admin, said in so many words.
	printf '[instance]\nname = bench\nremove_on_exit = yes\nhuge_pages = auto\n\n[tcp]\nenabled = yes\nport = %d\nunauthenticated_role = admin\n' \
		"$1" >"$TMP/shmd.ini"
	SHMF_RUNTIME_DIR=$RUN "$SHMD" -f -c "$TMP/shmd.ini" 2>"$TMP/shmd.log" &
	SHMD_PID=$!
	for _ in $(seq 100); do
		[ -S "$RUN/bench.sock" ] && grep -q "listening on tcp" "$TMP/shmd.log" && return 0
		kill -0 "$SHMD_PID" 2>/dev/null || break
		sleep 0.1
	done
	stop "$SHMD_PID"
	SHMD_PID=""
	return 1
}
SHMD_PORT=""
for _ in $(seq 20); do
	try=$((20000 + RANDOM % 30000))
	if start_shmd "$try"; then SHMD_PORT=$try; break; fi
	grep -q "Address already in use" "$TMP/shmd.log" 2>/dev/null && continue
	echo "$0: shmd did not start; its log:" >&2
	cat "$TMP/shmd.log" >&2
	exit 1
done
[ -n "$SHMD_PORT" ] || { echo "$0: no free loopback port for shmd's TCP listener after 20 tries" >&2; exit 1; }
echo "shmd: $RUN/bench.sock and 127.0.0.1:$SHMD_PORT ($(grep -o 'segments on [^(]*' "$TMP/shmd.log" | head -1 | sed 's/ *$//'))"

# --- The machine and the versions, for the report. -------------------------
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cores=$(nproc)"
	echo "memory_gib=$(awk '/^MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel=$(uname -r)"
	echo "gcc=$(gcc -dumpfullversion 2>/dev/null || echo unknown)"
	echo "redis=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
	echo "hiredis=$(dpkg-query -W -f '${Version}' libhiredis-dev 2>/dev/null || echo unknown)"
	rev=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -n "$(git -C "$HERE/.." status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="$rev (with uncommitted changes)"
	echo "shmfilter=$rev"
	echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

SECONDS=0
SHMF_RUNTIME_DIR=$RUN "$BENCH" --shmd "$RUN/bench.sock" --instance bench --redis-tcp "127.0.0.1:$PORT" \
	--redis-unix "$TMP/redis.sock" --shmd-tcp "127.0.0.1:$SHMD_PORT" --csv "$OUT/results.csv" --meta "$OUT/meta.txt" \
	$QUICK $RBFLAG
echo "seconds=$SECONDS" >>"$OUT/meta.txt"
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"

python3 "$HERE/report.py" "$OUT"
for plot in latency throughput baselines; do
	gnuplot -e "dir='$OUT'" "$HERE/plot-$plot.gp"
	[ -s "$OUT/$plot.png" ] || { echo "$0: gnuplot made no $OUT/$plot.png" >&2; exit 1; }
done
echo
cat "$OUT/results.md"
echo
echo "Written: $OUT/results.md, $OUT/results.csv, $OUT/latency.png, $OUT/throughput.png, $OUT/baselines.png"
