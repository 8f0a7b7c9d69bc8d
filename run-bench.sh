#!/bin/bash
# run-bench.sh - shmfilter against networked Redis, side by side: the one command.
#
#   ./run-bench.sh [--quick] [--out DIR]
#
# Installs what is missing from Debian (the build's packages through
# scripts/install-deps.sh, then redis-server and gnuplot-nox), builds with
# meson in build/, starts a private Redis (a loopback port and a unix socket,
# persistence off, its own directory under /tmp) and a private shmd, runs
# every measurement, stops both (also on an error or Ctrl-C), and writes to
# DIR (default build/bench-results, or build/bench-results-quick):
#   results.md    the table (also printed); summary.md, the part the README shows
#   results.csv   every measurement, one row each
#   latency.png   time per check against filter size
#   throughput.png  checks per second against worker processes
#   baselines.png   shmfilter's speed-up over each baseline
# The full run takes about 6 minutes on 2 cores; --quick, under a minute.
# SHMF_BENCH_REDISBLOOM=/path/to/redisbloom.so adds the RedisBloom module.
set -euo pipefail
cd "$(dirname "$0")"

QUICK="" OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=--quick; shift ;;
	--out) [ $# -ge 2 ] || { echo "$0: --out needs a directory" >&2; exit 2; }; OUT=$2; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$0: unknown argument '$1' (usage: $0 [--quick] [--out DIR])" >&2; exit 2 ;;
	esac
done
[ -n "$OUT" ] || OUT=build/bench-results${QUICK:+-quick}

scripts/install-deps.sh
missing=""
for p in redis-server gnuplot-nox; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing Debian packages:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi

[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null

exec bench/bench-redis.sh --bench build/bench/bench-redis --shmd build/shmd/shmd --out "$OUT" $QUICK
