#!/bin/bash
# test-setup-without-cmocka.sh - a production configure (meson setup with
# no options: tests off by default) needs no cmocka: with cmocka's
# pkg-config file hidden (PKG_CONFIG_LIBDIR: every .pc of the system's
# search path but cmocka.pc; and no cmake), it succeeds and never looks cmocka up; the
# same with -Dtests=true fails, naming cmocka (so the hiding works).
# Configures only, in a temporary directory: nothing is compiled.
# Usage: test-setup-without-cmocka.sh SRC-DIR MESON
set -u
SRC=$1 MESON=$2
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/shmf-setup-XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

mkdir "$ROOT/pc"
IFS=: read -r -a dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
	for f in "$d"/*.pc; do
		[ -e "$f" ] && [ "$(basename "$f")" != cmocka.pc ] && ln -sf "$f" "$ROOT/pc/"
	done
done
export PKG_CONFIG_LIBDIR=$ROOT/pc PKG_CONFIG_PATH=
# meson's other way to find a package is CMake (cmocka installs a CMake
# config): no cmake for these setups.
printf "[binaries]\ncmake = 'false'\n" >"$ROOT/native.ini"
pkg-config --exists cmocka && fail "cmocka still visible to pkg-config"
pkg-config --exists libxxhash || fail "the other packages are no longer visible (libxxhash)"

"$MESON" setup --native-file "$ROOT/native.ini" "$ROOT/prod" "$SRC" >"$ROOT/prod.log" 2>&1 ||
	fail "meson setup with tests off (the default) fails without cmocka: $(tail -n 5 "$ROOT/prod.log")"
grep -qi cmocka "$ROOT/prod.log" && fail "meson setup with tests off looks cmocka up: $(grep -i cmocka "$ROOT/prod.log")"
grep -Eq "^ +tests +: false" "$ROOT/prod.log" || grep -q "tests.*false" "$ROOT/prod/meson-info/intro-buildoptions.json" ||
	fail "tests are not off by default"

"$MESON" setup --native-file "$ROOT/native.ini" "$ROOT/dev" "$SRC" -Dtests=true >"$ROOT/dev.log" 2>&1 &&
	fail "meson setup -Dtests=true succeeded with cmocka hidden: the check hides nothing"
grep -qi "cmocka" "$ROOT/dev.log" || fail "meson setup -Dtests=true without cmocka does not name it: $(tail -n 3 "$ROOT/dev.log")"

echo "$failures failed"
[ "$failures" -eq 0 ]
