# shellcheck shell=bash
# private-run.sh - sourced by the tests that run as root in a private mount
# namespace (unshare -m --propagation private) and need a /run of their own.
#
# private_run DIR: make DIR the namespace's /run, with no mount below it.
# The namespace starts with a copy of the host's mounts: a shmd tmpfs on
# /run/shmd when ./run-demo.sh or a service left one there, and, in a
# namespace made inside another test's, that test's private /run with its
# own /run/shmd over the host's. A mount covered by another stays in
# /proc/self/mountinfo under its path, and shmd and the tests find a mount
# by its path, so covering /run is not enough: every mount at or below /run
# is unmounted (in this namespace only; the host keeps its own), the
# topmost first, until none is left, and then DIR is bound on /run.
# Returns 1, naming what is left, if that cannot be done.
private_run() {
	local dir=$1 mounts m
	for _ in 1 2 3 4 5 6 7 8; do
		mounts=$(findmnt -rn -o TARGET | grep -E '^/run(/|$)' | sort -r)
		[ -n "$mounts" ] || break
		for m in $mounts; do umount -l "$m" 2>/dev/null; done
	done
	mounts=$(findmnt -rn -o TARGET | grep -E '^/run(/|$)')
	if [ -n "$mounts" ]; then
		echo "cannot unmount in the private namespace:" $mounts >&2
		return 1
	fi
	mount --bind "$dir" /run || { echo "cannot bind $dir on /run" >&2; return 1; }
}
