#!/bin/bash
# test-bindings-installed.sh - the nginx module and the PHP extension built
# by the documented commands against an installed libshmf, not the build
# tree: meson install into a temporary root (--destdir), pkg-config pointed
# at its shmf.pc (PKG_CONFIG_SYSROOT_DIR), then
#   bindings/nginx/build.sh OUTDIR      and      bindings/php/build.sh OUTDIR
# Each result needs libshmf.so.1 with no run path (the dynamic linker finds
# the installed library), loads into nginx -t and php against the
# installed library, and nothing is left in the source tree (phpize and
# configure write where they run: git status of bindings/ is unchanged).
# Usage: test-bindings-installed.sh SRC-DIR BUILD-DIR
SRC=$1 BUILD=$2
NAME=bindings-installed
. "$SRC/tests/bindings-fixture.sh"

need_packages nginx nginx-dev php-cli php-dev

tree_state() { git -C "$SRC" status --porcelain --ignored -- bindings 2>/dev/null; }
before=$(tree_state)

DEST=$ROOT/dest
meson install -C "$BUILD" --no-rebuild --quiet --destdir "$DEST" >"$ROOT/install.log" 2>&1 ||
	{ fail "meson install --destdir: $(tail -n 5 "$ROOT/install.log")"; finish; }
pc=$(find "$DEST" -name shmf.pc | head -n 1)
[ -n "$pc" ] || { fail "meson install put no shmf.pc under $DEST"; finish; }
lib=$(find "$DEST" -name 'libshmf.so.1' | head -n 1)
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$DEST
check "pkg-config finds the installed libshmf" pkg-config --exists shmf

# no_run_path SO: needs libshmf.so.1, with no RPATH or RUNPATH at all.
no_run_path() {
	readelf -d "$1" | grep -q 'NEEDED.*\[libshmf\.so\.1\]' || { echo "$1 does not need libshmf.so.1" >&2; return 1; }
	! readelf -d "$1" | grep -Eq 'RPATH|RUNPATH' || { readelf -d "$1" | grep -E 'RPATH|RUNPATH' >&2; return 1; }
}

# nginx: the module, and nginx -t loading it with the installed library.
if "$SRC/bindings/nginx/build.sh" "$ROOT/ngx" >"$ROOT/ngx-build.log" 2>&1; then
	mod=$ROOT/ngx/ngx_http_shmf_module.so
	check "nginx module: needs libshmf.so.1, no run path" no_run_path "$mod"
	mkdir -p "$ROOT/nginx"
	printf 'load_module %s;\npid %s/nginx.pid;\nerror_log %s/nginx.log;\nevents {}\nhttp { server { listen 127.0.0.1:%s; location / { shmf_filter f; shmf_key $arg_k; return 200; } } }\n' \
		"$mod" "$ROOT" "$ROOT" "$(free_port)" >"$ROOT/nginx.conf"
	check "nginx -t loads the module against the installed libshmf" \
		env LD_LIBRARY_PATH="$(dirname "$lib")" nginx -t -q -p "$ROOT/nginx" -e "$ROOT/nginx.log" -c "$ROOT/nginx.conf"
else
	fail "bindings/nginx/build.sh OUTDIR against the installed libshmf: $(tail -n 20 "$ROOT/ngx-build.log")"
fi

# PHP: the extension, and php loading it with the installed library.
if "$SRC/bindings/php/build.sh" "$ROOT/php" >"$ROOT/php-build.log" 2>&1; then
	ext=$ROOT/php/modules/shmf.so
	check "PHP extension: needs libshmf.so.1, no run path" no_run_path "$ext"
	check "php loads the extension against the installed libshmf" bash -c \
		"[ \"\$(LD_LIBRARY_PATH='$(dirname "$lib")' php -n -d extension='$ext' -r 'echo class_exists(\"Shmf\\\\Filter\") ? \"yes\" : \"no\";')\" = yes ]"
else
	fail "bindings/php/build.sh OUTDIR against the installed libshmf: $(tail -n 20 "$ROOT/php-build.log")"
fi

# Out of tree: nothing new in the source's bindings/, and an OUTDIR in it refused.
check "the builds left nothing in the source tree (git status of bindings/ unchanged)" \
	bash -c "[ \"\$(git -C '$SRC' status --porcelain --ignored -- bindings 2>/dev/null)\" = '$before' ]"
check "bindings/php/build.sh refuses an OUTDIR inside bindings/php" \
	bash -c "! '$SRC/bindings/php/build.sh' '$SRC/bindings/php/out' 2>/dev/null && [ ! -e '$SRC/bindings/php/out' ]"
finish
