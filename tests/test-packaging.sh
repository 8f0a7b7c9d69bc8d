#!/bin/bash
# test-packaging.sh - debian/ builds the seven packages with
# dpkg-buildpackage -us -uc -b from a copy of the source tree, laid out as
# Debian lays such packages out, and lintian finds no error in them; every
# warning it still gives is one docs/operations.md lists, with its reason.
# Usage: test-packaging.sh SRC-DIR
set -u
SRC=$(cd "$1" && pwd)
. "$SRC/tests/packaging-lib.sh"
T=$(mktemp -d /tmp/shmf-packaging-XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0 checks=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { local what=$1; shift; checks=$((checks + 1)); "$@" || fail "$what"; }

"$SRC/bindings/need-packages.sh" debhelper dh-php devscripts lintian php-dev nginx-dev dh-python python3-dev
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "FAIL: cannot install the packaging tools" >&2; exit 1; }

copy_tree "$SRC" "$T/shmfilter"
start=$(date +%s)
build_debs "$T/shmfilter" || { echo "FAIL: dpkg-buildpackage" >&2; exit 1; }
echo "dpkg-buildpackage: $(($(date +%s) - start)) s"
version=$(cd "$T/shmfilter" && dpkg-parsechangelog -S Version)
# deb PACKAGE: its .deb, of this architecture or of all (lua-resty-shmf).
deb() { local f="$T/${1}_${version}_amd64.deb"; [ -f "$f" ] || f="$T/${1}_${version}_all.deb"; echo "$f"; }
for p in $DEB_PACKAGES; do
	check "package $p built" test -f "$(deb "$p")"
	[ -f "$(deb "$p")" ] && echo "$p: $(stat -c %s "$(deb "$p")") bytes"
done

# contents FILE.deb: one path per line, without the leading "./".
contents() { dpkg-deb --fsys-tarfile "$1" | tar -tf - | sed 's|^\./|/|'; }
has() { contents "$(deb "$1")" | grep -qx -- "$2"; }
check "shmd holds /usr/sbin/shmd" has shmd /usr/sbin/shmd
check "shmd holds /usr/bin/shmctl" has shmd /usr/bin/shmctl
check "shmd holds /etc/shmd/shmd.conf, a conffile" \
	sh -c "dpkg-deb --ctrl-tarfile '$(deb shmd)' | tar -xOf - ./conffiles | grep -qx /etc/shmd/shmd.conf"
check "shmd makes its user with sysusers" has shmd /usr/lib/sysusers.d/shmd.conf
# has_all PACKAGE PATH...: the package holds every path.
has_all() { local p=$1 x; shift; for x in "$@"; do has "$p" "$x" || return 1; done; }
check "shmd holds its units" has_all shmd /lib/systemd/system/shmd.service /lib/systemd/system/shmd@.service \
	/lib/systemd/system/run-shmd.mount
check "shmd holds shmd(8), shmctl(1), shmd.conf(5)" has_all shmd /usr/share/man/man8/shmd.8.gz \
	/usr/share/man/man1/shmctl.1.gz /usr/share/man/man5/shmd.conf.5.gz
check "libshmf-dev holds libshmf(3) and a page for shmf_add" has_all libshmf-dev /usr/share/man/man3/libshmf.3.gz \
	/usr/share/man/man3/shmf_add.3.gz
check "shmd's postinst runs systemd-sysusers" \
	sh -c "dpkg-deb --ctrl-tarfile '$(deb shmd)' | tar -xOf - ./postinst | grep -q 'systemd-sysusers.*shmd.conf'"
check "libshmf1 holds libshmf.so.1" has libshmf1 /usr/lib/x86_64-linux-gnu/libshmf.so.1
soname=$(dpkg-deb --fsys-tarfile "$(deb libshmf1)" | tar -xOf - ./usr/lib/x86_64-linux-gnu/libshmf.so.1.0.0 >"$T/lib.so" &&
	readelf -d "$T/lib.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
check "the soname ($soname) is the package's name: libshmf1" [ "$soname" = libshmf.so.1 ]
check "libshmf1 ships a symbols file naming shmf_open" \
	sh -c "dpkg-deb --ctrl-tarfile '$(deb libshmf1)' | tar -xOf - ./symbols | grep -q '^ shmf_open@SHMF_0.1 '"
check "libshmf-dev holds shmf.h" has libshmf-dev /usr/include/shmf.h
check "libshmf-dev holds shmf.pc" has libshmf-dev /usr/lib/x86_64-linux-gnu/pkgconfig/shmf.pc
check "libshmf-dev holds the libshmf.so link" has libshmf-dev /usr/lib/x86_64-linux-gnu/libshmf.so
extdir=$(php-config --extension-dir) phpver=$(php-config --version | cut -d. -f1,2)
check "php-shmf holds $extdir/shmf.so" has php-shmf "$extdir/shmf.so"
check "php-shmf holds its ini in mods-available" has php-shmf "/etc/php/$phpver/mods-available/shmf.ini"
check "php-shmf's postinst enables it with phpenmod" \
	sh -c "dpkg-deb --ctrl-tarfile '$(deb php-shmf)' | tar -xOf - ./postinst | grep -q phpenmod"
check "libnginx-mod-http-shmf holds the module" has libnginx-mod-http-shmf /usr/lib/nginx/modules/ngx_http_shmf_module.so
check "libnginx-mod-http-shmf holds its modules-available snippet" \
	has libnginx-mod-http-shmf /usr/share/nginx/modules-available/mod-http-shmf.conf
check "its postinst links it into /etc/nginx/modules-enabled" \
	sh -c "dpkg-deb --ctrl-tarfile '$(deb libnginx-mod-http-shmf)' | tar -xOf - ./postinst | grep -q 'mod-http-shmf.conf:50-mod-http-shmf.conf'"
check "libnginx-mod-http-shmf depends on the nginx ABI" \
	sh -c "dpkg-deb -f '$(deb libnginx-mod-http-shmf)' Depends | grep -q nginx-abi-"
check "lua-resty-shmf holds resty/shmf.lua where nginx's Lua module looks" has lua-resty-shmf /usr/share/lua/5.1/resty/shmf.lua
check "lua-resty-shmf depends on libshmf1 and libnginx-mod-http-lua" \
	sh -c "dpkg-deb -f '$(deb lua-resty-shmf)' Depends | grep 'libshmf1' | grep -q 'libnginx-mod-http-lua'"
# python3-shmf: the module where Debian's /usr/bin/python3 imports it from
# (Debian's directory for packaged modules, on its sys.path; the file name
# ends in its extension suffix), and it imports from the .deb's files alone
# (libshmf1's library beside them).
pydir=/usr/lib/python3/dist-packages
pymod="$pydir/shmf$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
check "python3-shmf holds $pymod and shmf.pyi beside it" has_all python3-shmf "$pymod" "$pydir/shmf.pyi"
check "/usr/bin/python3 searches $pydir" /usr/bin/python3 -c "import sys; assert '$pydir' in sys.path, sys.path"
check "python3-shmf depends on libshmf1 and python3 (got: $(dpkg-deb -f "$(deb python3-shmf)" Depends))" \
	sh -c "dpkg-deb -f '$(deb python3-shmf)' Depends | tr ',' '\n' | grep -q '^ *libshmf1 (>= ' &&
		dpkg-deb -f '$(deb python3-shmf)' Depends | tr ',' '\n' | grep -q '^ *python3 (>= '"
mkdir -p "$T/root"
for p in libshmf1 python3-shmf; do dpkg-deb -x "$(deb "$p")" "$T/root"; done
pyout=$(LD_LIBRARY_PATH="$T/root/usr/lib/x86_64-linux-gnu" PYTHONPATH="$T/root$pydir" /usr/bin/python3 -c \
	'import shmf; print(shmf.__file__, shmf.Filter.__name__, issubclass(shmf.Error, Exception))' 2>&1)
check "/usr/bin/python3 imports shmf from the .deb (got: $pyout)" [ "$pyout" = "$T/root$pymod Filter True" ]
for pair in php-shmf:"$extdir/shmf.so" libnginx-mod-http-shmf:/usr/lib/nginx/modules/ngx_http_shmf_module.so \
	python3-shmf:"$pymod"; do
	dpkg-deb --fsys-tarfile "$(deb "${pair%%:*}")" | tar -xOf - ".${pair#*:}" >"$T/mod.so"
	check "${pair#*:} has no run path (got: $(readelf -d "$T/mod.so" | grep -i path))" \
		sh -c "! readelf -d '$T/mod.so' | grep -qiE 'rpath|runpath'"
	check "${pair#*:} needs libshmf.so.1" sh -c "readelf -d '$T/mod.so' | grep -q 'NEEDED.*libshmf.so.1'"
done

# lintian: no error; every warning listed in docs/operations.md's section
# "Lintian warnings" (a line naming the tag in backquotes).
lintian "$T"/shmfilter_"${version}"_amd64.changes >"$T/lintian.out" 2>"$T/lintian.err"
echo "lintian:"
sed 's/^/  /' "$T/lintian.out"
check "lintian ran (got: $(head -c 300 "$T/lintian.err"))" sh -c "! grep -qv 'running with root privileges' '$T/lintian.err'"
check "lintian reports no error (E: lines: $(grep -c '^E:' "$T/lintian.out"))" sh -c "! grep -q '^E:' '$T/lintian.out'"
listed=$(sed -n '/^### Lintian warnings/,/^##/p' "$SRC/docs/operations.md")
for tag in $(sed -n 's/^W: [^ ]*: \([^ ]*\).*/\1/p' "$T/lintian.out" | sort -u); do
	check "lintian's warning $tag is listed in docs/operations.md, Lintian warnings" \
		grep -q "\`$tag\`" <<<"$listed"
done
echo "packaging: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
