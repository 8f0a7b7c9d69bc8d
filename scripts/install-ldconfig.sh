#!/bin/sh
# install-ldconfig.sh - run by "meson install" after it copied the files
# (meson.add_install_script, skipped under DESTDIR: a staged install, a
# package build): refresh the dynamic linker's cache, so that a program
# linked with -lshmf finds the libshmf.so.1 just installed without a
# further step. ldconfig only reads the directories /etc/ld.so.conf names
# (/usr/local/lib/<multiarch> and /usr/lib/<multiarch> on Debian); a library
# installed elsewhere is found through the run path meson gives what it
# links (see bindings/meson.build) or LD_LIBRARY_PATH.
if [ -n "${DESTDIR:-}" ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-ldconfig.sh: not root, the dynamic linker's cache is left as it is: run ldconfig as root" >&2
	exit 0
fi
echo "Running ldconfig"
ldconfig
