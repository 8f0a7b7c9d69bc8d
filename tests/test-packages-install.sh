#!/bin/bash
# test-packages-install.sh - the Debian packages as an operator uses them
# (the long mode, tests/run-long.sh; a few minutes, and it installs into
# this machine's dpkg):
#   1. build them from a copy of the tree, and again at a higher version
#      (a changelog entry made with dch in a second copy);
#   2. apt-get install ./*.deb; the installed /usr/sbin/shmd started with
#      the installed /etc/shmd/shmd.conf (a private SHMF_RUNTIME_DIR, in the
#      foreground: no systemd here); the README's C worker built against the
#      installed shmf.h and libshmf, shmctl, a PHP script through the
#      extension the package enabled, Debian's python3 through the
#      packaged module, nginx with the module the package enabled
#      (include /etc/nginx/modules-enabled/*.conf);
#   3. the upgrade to the higher version while a worker keeps adding keys,
#      then shmd restarted on the new binary: the segments survive (same
#      data file) and every key whose add returned is in the filter;
#   4. apt-get purge: no file dpkg installed is left, nor the enabling
#      links, /etc/shmd or /var/lib/shmd.
# Usage: test-packages-install.sh SRC-DIR
SRC=$(cd "$1" && pwd) BUILD=""
NAME=packages-install
. "$SRC/tests/bindings-fixture.sh"
. "$SRC/tests/packaging-lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: installs packages: run as root" >&2; exit 77; }
need_packages debhelper dh-php devscripts lintian php-dev php-cli nginx nginx-dev curl pkg-config gcc

T=$(mktemp -d /tmp/shmf-packages-XXXXXX)
# On any exit: stop what the test started, and leave no package of ours
# installed (a failed check ends the test early through finish).
trap 'cleanup; for p in $DEB_PACKAGES; do installed "$p" && { purge_ours; break; }; done; rm -rf "$T"' EXIT
chmod 0755 "$T"
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^[ih]i'; }
purge_ours() { apt_locked apt-get purge -y -q $DEB_PACKAGES >"$ROOT/purge.log" 2>&1; }
for p in $DEB_PACKAGES; do
	installed "$p" && { echo "$p is installed already (an earlier run?): purging it first" >&2; purge_ours; break; }
done

# 1. Two builds.
for v in v1 v2; do
	copy_tree "$SRC" "$T/$v/shmfilter"
done
up_version="$(cd "$T/v1/shmfilter" && dpkg-parsechangelog -S Version)+upgrade1"
(cd "$T/v2/shmfilter" && DEBEMAIL="test@localhost" DEBFULLNAME="upgrade test" \
	dch --newversion "$up_version" --distribution UNRELEASED "Rebuild for the upgrade test." 2>/dev/null)
for v in v1 v2; do
	build_debs "$T/$v/shmfilter" || { fail "dpkg-buildpackage ($v)"; finish; }
done
debs() { for p in $DEB_PACKAGES; do ls "$T/$1/${p}_"*_amd64.deb "$T/$1/${p}_"*_all.deb 2>/dev/null; done; }
check "the second build is version $up_version" \
	test "$(dpkg-deb -f "$(debs v2 | head -n 1)" Version)" = "$up_version"

# 2. Install and use.
apt_locked apt-get install -y -q $(debs v1) >"$ROOT/install.log" 2>&1 || { fail "apt-get install v1"; finish; }
for p in $DEB_PACKAGES; do
	check "$p is installed" installed "$p"
	dpkg -L "$p" >>"$T/owned.list"
done
phpver=$(php-config --version | cut -d. -f1,2)
check "/etc/shmd/shmd.conf is installed" test -f /etc/shmd/shmd.conf
check "the system user and group shmd exist" sh -c 'id -u shmd && getent group shmd' >/dev/null
check "/var/lib/shmd is shmd's, 0750 (got $(stat -c '%U:%G %a' /var/lib/shmd 2>&1))" \
	test "$(stat -c '%U:%G %a' /var/lib/shmd 2>&1)" = "shmd:shmd 750"
check "the dynamic linker finds libshmf.so.1" sh -c 'ldconfig -p | grep -qE "libshmf.so.1 .*=> (/usr)?/lib/x86_64-linux-gnu/libshmf.so.1"'
check "the PHP extension is enabled for the CLI" test -L "/etc/php/$phpver/cli/conf.d/20-shmf.ini"
check "the nginx module is enabled" test -L /etc/nginx/modules-enabled/50-mod-http-shmf.conf

SHMD=/usr/sbin/shmd SHMCTL=/usr/bin/shmctl
"$SHMD" -f -c /etc/shmd/shmd.conf 2>"$ROOT/shmd.log" &
SHMD_PID=$!
PIDS="$PIDS $SHMD_PID"
wait_for "the installed shmd" "$SHMCTL" ping
check "the installed configuration makes the filter default of 1,000,000 keys" \
	sh -c "'$SHMCTL' info default | grep -q '^capacity  *1000000$'"
cc -Wall -o "$T/worker" "$SRC/examples/dedupe-worker.c" $(pkg-config --cflags --libs shmf) &&
	cc -Wall -o "$T/adder" "$SRC/tests/upgrade-adder.c" $(pkg-config --cflags --libs shmf) ||
	{ fail "cc against the installed libshmf-dev"; finish; }
check "the worker links the installed libshmf" sh -c "ldd '$T/worker' | grep -qE 'libshmf.so.1 => (/usr)?/lib/x86_64-linux-gnu/libshmf.so.1'"
out=$("$T/worker" click:1 click:2 click:1 2>&1 | head -3 | awk '{print $2, $3}' | tr '\n' ,)
check "the C worker: new, new, seen (got $out)" [ "$out" = "first time,first time,seen before," ]
check "shmctl sees the worker's keys" "$SHMCTL" check -q default click:1 click:2
php_out=$(php -r 'echo extension_loaded("shmf") ? "loaded " : "missing ";
	$f = new Shmf\Filter("default", writable: true);
	echo $f->check("click:1") ? "seen" : "absent", " ", $f->add("php:1") ? "new" : "seen";' 2>&1)
check "PHP through the packaged extension sees the worker's key and adds one (got: $php_out)" \
	[ "$php_out" = "loaded seen new" ]
# Debian's python3 (not one earlier in PATH) imports the packaged module
# from dist-packages, linked to the installed libshmf, and works with the rest.
pymod=/usr/lib/python3/dist-packages/shmf$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
check "the Python module links the installed libshmf" sh -c "ldd '$pymod' | grep -qE 'libshmf.so.1 => (/usr)?/lib/x86_64-linux-gnu/libshmf.so.1'"
py_out=$(cd / && /usr/bin/python3 -c 'import shmf
f = shmf.Filter("default", writable=True)
print(shmf.__file__, "seen" if f.check(b"php:1") else "absent", "new" if f.add("py:1") else "seen",
      f.check_many([b"click:1", "click:2", "nobody"]))' 2>&1)
check "Python through the packaged module sees PHP's and the worker's keys and adds one (got: $py_out)" \
	[ "$py_out" = "$pymod seen new [True, True, False]" ]
check "shmctl sees Python's key" "$SHMCTL" check -q default py:1
# The filter is 0640 root's, as the installed configuration makes it: nginx's
# workers run as root here (the packaged file names no group).
WORKER_USER=""
# The packaged snippet says "load_module modules/...": relative to nginx's
# prefix, which Debian's is /usr/share/nginx (its modules a link to
# /usr/lib/nginx/modules); the test's prefix gets the same link.
mkdir -p "$ROOT/nginx"
ln -s /usr/lib/nginx/modules "$ROOT/nginx/modules"
PORT=$(free_port)
start_nginx "server {
	listen 127.0.0.1:$PORT;
	location / { shmf_filter default; shmf_key \$arg_k; return 200 \"[\$shmf_hit]\"; }
}" "include /etc/nginx/modules-enabled/*.conf;
user root;"
check "nginx with the packaged module: PHP's key is a hit" [ "$(curl -s "http://127.0.0.1:$PORT/?k=php:1")" = "[1]" ]
check "nginx with the packaged module: an absent key is no hit" [ "$(curl -s "http://127.0.0.1:$PORT/?k=nobody")" = "[0]" ]

# 3. Upgrade under load, then restart shmd on the new binary.
data_before=$("$SHMCTL" info default | awk '$1 == "data_file" { print $2 }')
ino_before=$(stat -c %i "$SHMF_RUNTIME_DIR/default/$data_before")
"$T/adder" add default up: "$T/count" "$T/stop" 2>"$ROOT/adder.log" &
ADDER=$!
PIDS="$PIDS $ADDER"
for _ in $(seq 100); do [ -s "$T/count" ] && break; sleep 0.05; done
at_start=$(cat "$T/count")
apt_locked apt-get install -y -q $(debs v2) >"$ROOT/upgrade.log" 2>&1 || fail "apt-get install (upgrade to $up_version)"
at_upgraded=$(cat "$T/count")
for p in $DEB_PACKAGES; do
	check "$p is upgraded to $up_version" test "$(dpkg-query -W -f='${Version}' "$p")" = "$up_version"
done
kill -TERM "$SHMD_PID"
wait "$SHMD_PID"
"$SHMD" -f -c /etc/shmd/shmd.conf 2>>"$ROOT/shmd.log" &
SHMD_PID=$!
PIDS="$PIDS $SHMD_PID"
wait_for "the upgraded shmd" "$SHMCTL" ping
sleep 0.5
touch "$T/stop"
wait "$ADDER"
adder_rc=$?
total=$(cat "$T/count")
check "the worker kept adding through the upgrade and the restart (exit $adder_rc: $(cat "$ROOT/adder.log"))" test "$adder_rc" -eq 0
present=$("$T/adder" check default up: "$total")
data_after=$("$SHMCTL" info default | awk '$1 == "data_file" { print $2 }')
check "the upgraded shmd re-attached the same segment ($data_before, inode $ino_before; now $data_after, inode $(stat -c %i "$SHMF_RUNTIME_DIR/default/$data_after"))" \
	test "$data_after" = "$data_before" -a "$(stat -c %i "$SHMF_RUNTIME_DIR/default/$data_after")" = "$ino_before"
check "no key lost: $present of $total keys present" test "$present" = "$total"
check "keys from before the upgrade are still there" "$SHMCTL" check -q default click:1 click:2 php:1 py:1
echo "upgrade: $((at_upgraded - at_start)) keys added during apt-get install, $total in all, $((total - present)) lost"
grep -q "restored\|re-attach\|attached" "$ROOT/shmd.log" || true

# 4. Purge.
for p in $PIDS; do kill "$p" 2>/dev/null; done
sleep 0.5
purge_ours || fail "apt-get purge"
for p in $DEB_PACKAGES; do
	check "$p is purged (state: $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null))" sh -c "! dpkg-query -W -f='\${db:Status-Abbrev}' $p 2>/dev/null | grep -q '^.[^n]'"
done
left=""
while IFS= read -r f; do
	# Directories may be shared (/usr/lib/php/...), and so are links to
	# them: /lib is a link to usr/lib on a merged-/usr system, and it is
	# listed since shmd's units live under /lib/systemd/system.
	[ -d "$f" ] && continue
	{ [ -e "$f" ] || [ -L "$f" ]; } && left="$left $f"
done <"$T/owned.list"
check "no file the packages installed is left (left:$left)" test -z "$left"
for f in /etc/shmd /var/lib/shmd "/etc/php/$phpver/cli/conf.d/20-shmf.ini" "/etc/php/$phpver/mods-available/shmf.ini" \
	/etc/nginx/modules-enabled/50-mod-http-shmf.conf /etc/nginx/modules-enabled/50-mod-http-shmf.conf.removed; do
	check "$f is gone" sh -c "[ ! -e '$f' ] && [ ! -L '$f' ]"
done
finish
