#!/bin/bash
# test-conformance.sh - the RedisBloom conformance suite (tests/redisbloom/)
# against a private shmd, in RESP2 (redis-py and a raw client) and RESP3
# (the raw client; Debian's redis-py 4.3 has no RESP3); or, given SCRIPT
# (a path under tests/), that Python script against a private shmd.
#
#   tests/test-conformance.sh PATH-TO-SHMD [SCRIPT]
#
# Installs python3-redis when it is missing, as test-tcp-clients.sh does
# (exit 77, meson's SKIP, with the reason when that is impossible).
set -u
SHMD=${1:-}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$SHMD" ] || { echo "usage: $0 PATH-TO-SHMD" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! $PY -c 'import redis' >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
	echo "installing Debian packages: python3 python3-redis"
	(
		flock -w 600 9 || exit 1
		export DEBIAN_FRONTEND=noninteractive
		$sudo apt-get install -y -q --no-install-recommends python3 python3-redis ||
			{ $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends python3 python3-redis; }
	) 9>/tmp/shmf-tests-apt.lock >"${TMPDIR:-/tmp}/shmf-apt-conformance.log" 2>&1
	if ! $PY -c 'import redis' >/dev/null 2>&1; then
		tail -5 "${TMPDIR:-/tmp}/shmf-apt-conformance.log"
		echo "SKIP: python3-redis is not installed and apt-get could not install it (needs root and a Debian archive)"
		exit 77
	fi
fi
exec "$PY" "$HERE/${2:-redisbloom/conformance.py}" "$SHMD"
