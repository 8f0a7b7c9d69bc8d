#!/bin/bash
# build.sh - build ngx_http_shmf_module.so for the installed nginx, with the
# nginx source and configure flags of Debian's nginx-dev, in OUTDIR (never
# in the source tree):
#   bindings/nginx/build.sh OUTDIR
#       against the installed libshmf (pkg-config shmf, from meson install);
#   bindings/nginx/build.sh OUTDIR INCLUDE-DIR LIBSHMF-DIR [RUNPATH [COPY-TO]]
#       against a libshmf build tree (run path RUNPATH, default LIBSHMF-DIR,
#       for the tests; "" for none: meson's -Dnginx=enabled passes the
#       installed libdir or nothing, never the build tree).
# Either gives OUTDIR/ngx_http_shmf_module.so, to load with
#   load_module /path/to/ngx_http_shmf_module.so;
# and copies it to COPY-TO when given.
# Debian's own way for an installed libshmf is dh_nginx / the nginx_mod
# debhelper build system; this script runs the same configure.
# Several tests call this at once: a lock makes the later ones wait.
set -eu
[ $# -eq 1 ] || { [ $# -ge 3 ] && [ $# -le 5 ]; } ||
	{ echo "usage: $0 OUTDIR [INCLUDE-DIR LIBSHMF-DIR [RUNPATH [COPY-TO]]]" >&2; exit 2; }
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
copy_to=${5:+$(realpath -m "$5")}
ngx_src=/usr/share/nginx/src
if [ $# -ge 3 ]; then
	inc=$(cd "$2" && pwd) lib=$(cd "$3" && pwd)
	[ -f "$inc/shmf.h" ] || { echo "build.sh: no shmf.h in $inc" >&2; exit 2; }
	[ -e "$lib/libshmf.so" ] || { echo "build.sh: no libshmf.so in $lib" >&2; exit 2; }
	runpath=${4-$lib}
	libs="-L$lib ${runpath:+-Wl,-rpath,$runpath} -lshmf"
else
	pkg-config --exists shmf ||
		{ echo "build.sh: pkg-config finds no installed libshmf (shmf.pc): meson install it, or give INCLUDE-DIR LIBSHMF-DIR" >&2; exit 2; }
	inc=$(pkg-config --cflags-only-I shmf | sed 's/-I//g') libs=$(pkg-config --libs shmf)
fi
[ -x "$ngx_src/configure" ] && [ -f "$ngx_src/conf_flags" ] ||
	{ echo "build.sh: no nginx source in $ngx_src (Debian: apt-get install nginx-dev)" >&2; exit 2; }

exec 9>"$out/.build.lock"
flock 9
cd "$out"
# nginx's configure writes a Makefile into the directory it runs in: run it
# in a copy of the source, not in /usr/share/nginx/src.
version=$(dpkg-query -W -f='${Version}' nginx-dev 2>/dev/null || echo unknown)
stamp="$version|$inc|$libs|$(cat "$src/config" "$src/build.sh" | md5sum)"
if [ ! -f objs/Makefile ] || [ "$(cat .configured 2>/dev/null)" != "$stamp" ]; then
	rm -rf nginx-src objs
	cp -a "$ngx_src" nginx-src
	(
		cd nginx-src
		. ./conf_flags
		SHMF_INC="$inc" SHMF_LIBS="$libs" ./configure \
			--with-cc-opt="$(dpkg-buildflags --get CFLAGS) -fPIC $(dpkg-buildflags --get CPPFLAGS)" \
			--with-ld-opt="$(dpkg-buildflags --get LDFLAGS) -fPIC" \
			"${NGX_CONF_FLAGS[@]}" \
			--add-dynamic-module="$src" \
			--builddir="$out/objs"
	) >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
	echo "$stamp" >.configured
fi
make -C nginx-src -f "$out/objs/Makefile" modules >make.log 2>&1 || { cat make.log >&2; exit 1; }
grep -E "warning:" make.log >&2 || true
cp objs/ngx_http_shmf_module.so ngx_http_shmf_module.so.tmp
mv ngx_http_shmf_module.so.tmp ngx_http_shmf_module.so
if [ -n "$copy_to" ]; then
	cp ngx_http_shmf_module.so "$copy_to.tmp"
	mv "$copy_to.tmp" "$copy_to"
fi
