#!/bin/bash
# test-meson-install.sh - "meson install" gives a working system with no
# further step: built with -Dphp=enabled -Dnginx=enabled into a fresh
# prefix, the build tree then deleted, the installed shmd, shmctl, the
# README's C worker (examples/dedupe-worker.c, compiled with the installed
# shmf.pc), a PHP script through the installed extension and nginx with the
# installed module all work against each other. The extension and the
# module have the installed libdir as run path, never the build tree; the
# install script runs ldconfig when installing to the real root and not
# under DESTDIR (a stand-in ldconfig first in PATH records the calls).
# Usage: test-meson-install.sh SRC-DIR BUILD-DIR
SRC=$1 BUILD=$2
NAME=meson-install
. "$SRC/tests/bindings-fixture.sh"
need_packages php-cli php-dev nginx nginx-dev curl pkg-config gcc

B=$(mktemp -d /tmp/shmf-meson-install-XXXXXX)
trap 'cleanup; rm -rf "$B"' EXIT
chmod 0755 "$B"
P=$B/prefix
libdir=$P/lib/x86_64-linux-gnu
meson setup "$B/build" "$SRC" -Dtests=false -Dphp=enabled -Dnginx=enabled --prefix="$P" \
	-Dphp_extension_dir="$P/lib/php" -Dnginx_module_dir="$P/lib/nginx/modules" >"$ROOT/setup.log" 2>&1 &&
	ninja -C "$B/build" -j2 >"$ROOT/build.log" 2>&1 || { cat "$ROOT"/setup.log "$ROOT"/build.log >&2; fail "meson build"; finish; }
mkdir "$B/fakebin"
printf '#!/bin/sh\necho "ldconfig $*" >>%s/ldconfig.calls\n' "$B" >"$B/fakebin/ldconfig"
chmod +x "$B/fakebin/ldconfig"
PATH=$B/fakebin:$PATH meson install -C "$B/build" --destdir "$B/staged" >"$ROOT/install.log" 2>&1 ||
	{ cat "$ROOT/install.log" >&2; fail "meson install --destdir"; finish; }
check "meson install --destdir installed the library under DESTDIR" test -e "$B/staged$libdir/libshmf.so.1"
check "meson install --destdir did not run ldconfig" test ! -e "$B/ldconfig.calls"
PATH=$B/fakebin:$PATH meson install -C "$B/build" >"$ROOT/install.log" 2>&1 ||
	{ cat "$ROOT/install.log" >&2; fail "meson install"; finish; }
if [ "$(id -u)" -eq 0 ]; then
	check "meson install into the real root ran ldconfig (calls: $(cat "$B/ldconfig.calls" 2>/dev/null))" \
		test "$(cat "$B/ldconfig.calls" 2>/dev/null)" = "ldconfig "
else
	check "meson install as a user says to run ldconfig as root" grep -q 'run ldconfig as root' "$ROOT/install.log"
fi
# Nothing installed may need the build tree.
rm -rf "$B/build"

soname=$(readelf -d "$libdir/libshmf.so.1" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
check "the installed libshmf.so.1's soname is its file name (got $soname)" [ "$soname" = libshmf.so.1 ]
check "libshmf.so links to libshmf.so.1" [ "$(readlink "$libdir/libshmf.so")" = libshmf.so.1 ]
for so in "$P/lib/php/shmf.so" "$P/lib/nginx/modules/ngx_http_shmf_module.so"; do
	runpath=$(readelf -d "$so" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
	check "$(basename "$so") has the installed libdir as run path (got: $runpath)" [ "$runpath" = "$libdir" ]
	check "$(basename "$so") finds libshmf.so.1 in the prefix" \
		sh -c "ldd '$so' | grep -q 'libshmf.so.1 => $libdir/libshmf.so.1'"
done

SHMD=$P/sbin/shmd SHMCTL=$P/bin/shmctl
start_shmd
"$SHMCTL" create default --capacity 100000 --fpr 0.001 --mode 0660 >/dev/null || fail "installed shmctl create"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
cc -Wall -o "$B/worker" "$SRC/examples/dedupe-worker.c" $(pkg-config --cflags --libs shmf) \
	-Wl,-rpath,"$(pkg-config --variable=libdir shmf)" 2>"$ROOT/cc.log" || { cat "$ROOT/cc.log" >&2; fail "cc worker.c"; finish; }
out=$("$B/worker" click:1 click:2 click:1 2>"$ROOT/worker.log" | head -3 | awk '{print $2, $3}' | tr '\n' ,)
check "the C worker against the installed header and library: new, new, seen (got $out)" \
	[ "$out" = "first time,first time,seen before," ]
check "installed shmctl sees the worker's keys" "$SHMCTL" check -q default click:1 click:2
php_out=$(php -n -d "extension=$P/lib/php/shmf.so" -r '
	$f = new Shmf\Filter("default", writable: true);
	echo $f->check("click:1") ? "seen" : "absent", " ", $f->add("php:1") ? "new" : "seen";' 2>&1)
check "a PHP script through the installed extension sees the worker's key and adds one (got: $php_out)" \
	[ "$php_out" = "seen new" ]
check "installed shmctl sees the PHP script's key" "$SHMCTL" check -q default php:1

PORT=$(free_port)
start_nginx "server {
	listen 127.0.0.1:$PORT;
	location / { shmf_filter default; shmf_key \$arg_k; return 200 \"[\$shmf_hit]\"; }
}" "load_module $P/lib/nginx/modules/ngx_http_shmf_module.so;"
check "nginx with the installed module: a key the PHP script added is a hit" \
	[ "$(curl -s "http://127.0.0.1:$PORT/?k=php:1")" = "[1]" ]
check "nginx with the installed module: an absent key is no hit" \
	[ "$(curl -s "http://127.0.0.1:$PORT/?k=nobody")" = "[0]" ]
finish
