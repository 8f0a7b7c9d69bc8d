#!/bin/bash
# install-deps.sh - install the Debian packages shmfilter builds and tests
# with, when any is missing. Runs apt-get update once, only if needed.
set -eu
# redis-server and gnuplot-nox: the bench suite's test runs bench-redis against a Redis of its own and plots.
# redis-tools: redis-cli, which the integration suite drives over TCP and, interactively, in a
# pseudo-terminal (tests/test-redis-cli.py, Python's standard library only).
# valgrind: suite valgrind runs the client library's tests under memcheck.
# clang-format: scripts/check-format.sh (Debian 12's is version 14, the one .clang-format is written for).
# libsystemd-dev: sd_notify(3), which shmd speaks to its Type=notify unit (shmd/base/notify.c).
# systemd: systemd-analyze, which the systemd suite's tests run on dist/systemd's units (verify, security).
# python3-redis: redis-py, the client the conformance and redis-py tests drive shmd with.
# libmicrohttpd-dev: shmd serves /metrics through libmicrohttpd ([metrics] listen).
# prometheus: promtool checks shmd's metrics page, and a prometheus server the test starts
# scrapes it (tests/metrics/test-metrics.py).
# scdoc: the man pages (man/*.scd) are written in it; meson builds them when it is found.
# mandoc, groff-base: tests/test-man-pages.py lints every page with both (groff is what man renders with).
# man-db, manpages-dev: the same test asks the real man -w for our pages, and that shmctl(1)
# comes before the system call's shmctl(2) (manpages-dev holds that page).
# libsodium-dev: the fleet's MAC key (Argon2id, crypto_kdf) and stream entry tags (keyed BLAKE2b), common/fleet-auth.c.
# debhelper dh-php devscripts lintian php-dev nginx-dev: the packaging test builds the Debian
# packages (debian/control's Build-Depends, the rest by apt-get build-dep) and runs lintian.
# python3-dev: the Python binding (bindings/python) is built with -Dtests=true, for Debian's
# /usr/bin/python3 (its tests install python3-pytest, gunicorn and python3-mesonpy themselves).
PKGS_PYTHON="python3-dev"
PKGS="meson ninja-build pkg-config gcc libc6-dev libxxhash-dev libbsd-dev liburcu-dev libhiredis-dev
      libinih-dev libcmocka-dev libmicrohttpd-dev libsystemd-dev systemd redis-tools python3 python3-redis
      redis-server gnuplot-nox valgrind clang-format prometheus scdoc mandoc groff-base man-db manpages-dev
      debhelper dh-php devscripts lintian php-dev nginx-dev
      libsodium-dev"
# libnginx-mod-http-lua lua-resty-core: suite lua runs resty.shmf (bindings/lua) in Debian's nginx
# with its Lua module (tests/test-lua-resty.sh; it also installs them itself, as the nginx tests do).
PKGS="$PKGS libnginx-mod-http-lua lua-resty-core"
# dh-python: debian/ builds python3-shmf with dh_python3 (Build-Depends dh-sequence-python3), in
# the packaging test; apt-get build-dep there would fetch it too.
PKGS="$PKGS dh-python"
# redis-sentinel: the fleet's Sentinel tests run three real sentinels beside a master and a
# replica (tests/fleet/test-sentinel.py).
PKGS="$PKGS redis-sentinel"
missing=""
for p in $PKGS $PKGS_PYTHON; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing Debian packages:$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
