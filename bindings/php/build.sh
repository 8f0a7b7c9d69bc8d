#!/bin/bash
# build.sh - build the shmf PHP extension with phpize in OUTDIR, a copy of
# this folder (phpize and configure write dozens of files where they run:
# never in the source tree):
#   bindings/php/build.sh OUTDIR
#       against the installed libshmf (pkg-config shmf, from meson install);
#       then  make -C OUTDIR install  puts shmf.so in PHP's extension dir;
#   bindings/php/build.sh OUTDIR INCLUDE-DIR LIBSHMF-DIR [RUNPATH [COPY-TO]]
#       against a libshmf build tree (run path RUNPATH, default LIBSHMF-DIR,
#       as the tests do; "" for none), copied to COPY-TO when given.
# Either gives OUTDIR/modules/shmf.so, to load with
#   php -d extension=OUTDIR/modules/shmf.so
# Several tests call this at once: a lock makes the later ones wait and
# find the module built; make rebuilds only what changed.
set -eu
[ $# -eq 1 ] || { [ $# -ge 3 ] && [ $# -le 5 ]; } ||
	{ echo "usage: $0 OUTDIR [INCLUDE-DIR LIBSHMF-DIR [RUNPATH [COPY-TO]]]" >&2; exit 2; }
src=$(cd "$(dirname "$0")" && pwd)
case "$(realpath -m "$1")/" in
"$src"/*) echo "build.sh: OUTDIR $1 is inside the source folder $src: give one outside" >&2; exit 2 ;;
esac
mkdir -p "$1"
out=$(cd "$1" && pwd)
runpath="" copy_to=${5:+$(realpath -m "$5")}
if [ $# -ge 3 ]; then
	inc=$(cd "$2" && pwd) lib=$(cd "$3" && pwd)
	runpath=${4-$lib}
	[ -f "$inc/shmf.h" ] || { echo "build.sh: no shmf.h in $inc" >&2; exit 2; }
	[ -e "$lib/libshmf.so" ] || { echo "build.sh: no libshmf.so in $lib" >&2; exit 2; }
	export SHMF_CFLAGS="-I$inc" SHMF_LIBS="-L$lib -lshmf"
else
	pkg-config --exists shmf ||
		{ echo "build.sh: pkg-config finds no installed libshmf (shmf.pc): meson install it, or give INCLUDE-DIR LIBSHMF-DIR" >&2; exit 2; }
	unset SHMF_CFLAGS SHMF_LIBS
	inc=$(pkg-config --cflags shmf) lib=$(pkg-config --libs shmf)
fi
command -v phpize >/dev/null || { echo "build.sh: phpize not found (Debian: apt-get install php-dev)" >&2; exit 2; }

exec 9>"$out/.build.lock"
flock 9
cd "$out"
changed=""
for f in config.m4 shmf.c handles.c handles.h php_shmf.h; do
	cmp -s "$src/$f" "$f" || { cp "$src/$f" "$f"; changed="$changed $f"; }
done
flags="$inc|$lib|$runpath|${CFLAGS:-}|${LDFLAGS:-}|$(php-config --version)|$(md5sum <"$src/build.sh")"
if [ ! -f Makefile ] || [ "$(cat .configured 2>/dev/null)" != "$flags" ] || [[ "$changed" == *config.m4* ]]; then
	{ phpize --clean && phpize; } >phpize.log 2>&1 || { cat phpize.log >&2; exit 1; }
	# PHP_RPATH=no: phpize's configure would add a run path for every -L
	# (the build tree); the one wanted, if any, is given explicitly.
	PHP_RPATH=no CFLAGS="${CFLAGS:--O2 -g}" LDFLAGS="${LDFLAGS:-}${runpath:+ -Wl,-rpath,$runpath}" \
		./configure --with-shmf >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
	echo "$flags" >.configured
fi
make -s >make.log 2>&1 || { cat make.log >&2; exit 1; }
grep -E "warning:" make.log >&2 || true
test -f modules/shmf.so
if [ -n "$copy_to" ]; then
	cp modules/shmf.so "$copy_to.tmp"
	mv "$copy_to.tmp" "$copy_to"
fi
