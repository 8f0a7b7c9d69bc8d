#!/bin/bash
# need-packages.sh - install the Debian packages given as arguments when any
# is missing (the binding tests call it: php-fpm, php-dev, nginx, nginx-dev,
# curl). Tests run two at a time, so installs are serialised with a lock.
# Exit 0: all installed; 77 (the test harness's SKIP): missing and this user
# cannot install them; 1: apt-get failed.
set -u
missing() {
	local p out=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || out="$out $p"
	done
	echo "$out"
}
[ -z "$(missing "$@")" ] && exit 0
if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
	echo "SKIP: missing Debian packages:$(missing "$@") (run as root, or install them)" >&2
	exit 77
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo -n"
exec 9>"${TMPDIR:-/tmp}/shmf-need-packages.lock"
flock 9
need=$(missing "$@")
[ -z "$need" ] && exit 0
echo "installing Debian packages:$need" >&2
# Keep the package's own services from starting: the tests start private ones.
export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy" && made_policy=1
fi
rc=0
$sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $need >&2 ||
	{ $sudo apt-get update -q >&2 && $sudo apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $need >&2; } || rc=1
[ -n "$made_policy" ] && $sudo rm -f "$policy"
[ $rc -eq 0 ] || echo "FAILED: apt-get install$need" >&2
exit $rc
