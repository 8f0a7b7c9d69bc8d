# packaging-lib.sh - sourced by the package tests (test-packaging.sh,
# test-packages-install.sh): copy the source tree, install the build
# dependencies, build the .debs.

# copy_tree SRC DEST: the files of SRC that git knows or would add (tracked,
# and untracked but not ignored: a change not yet committed is tested too),
# without build directories. A package build writes into its tree
# (debian/tmp, obj-*, debian/*.log), so it never runs in the live one.
copy_tree() {
	local src=$1 dest=$2
	mkdir -p "$dest"
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$src" && git ls-files -co --exclude-standard | while IFS= read -r f; do [ -e "$f" ] && echo "$f"; done |
			tar --verbatim-files-from -cf - -T -) | tar -xf - -C "$dest"
	else
		tar -C "$src" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$dest"
	fi
}

# apt_locked CMD...: apt-get and dpkg, serialised with every other user of
# this machine's dpkg (/tmp/apt.lock) and with bindings/need-packages.sh
# (its own lock), and with no service started or restarted by the packages'
# scripts or triggers (php-fpm, nginx): a policy-rc.d that denies, made for
# the call when there is none, as need-packages.sh does.
apt_locked() {
	(
		exec 8>/tmp/apt.lock 9>"${TMPDIR:-/tmp}/shmf-need-packages.lock"
		flock 8 && flock 9 || exit 1
		policy=/usr/sbin/policy-rc.d made=""
		if [ ! -e "$policy" ]; then
			printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made=1
		fi
		DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 "$@"
		rc=$?
		[ -n "$made" ] && rm -f "$policy"
		exit $rc
	)
}

# build_debs TREE: the build dependencies (apt-get build-dep, when
# dpkg-checkbuilddeps finds some missing), then dpkg-buildpackage -us -uc -b.
# The .debs land in TREE/.. ; the log in TREE/../build.log.
build_debs() {
	local tree=$1
	if ! (cd "$tree" && dpkg-checkbuilddeps) 2>/dev/null; then
		(cd "$tree" && apt_locked apt-get build-dep -y -q ./) >"$tree/../build-dep.log" 2>&1 ||
			{ cat "$tree/../build-dep.log" >&2; return 1; }
	fi
	(cd "$tree" && DEB_BUILD_OPTIONS="parallel=2" dpkg-buildpackage -us -uc -b) >"$tree/../build.log" 2>&1 ||
		{ tail -n 40 "$tree/../build.log" >&2; return 1; }
}

# The packages debian/control builds.
DEB_PACKAGES="shmd libshmf1 libshmf-dev php-shmf libnginx-mod-http-shmf lua-resty-shmf python3-shmf"
