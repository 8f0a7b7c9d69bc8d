#!/bin/bash
# test-python-installed.sh - the Python binding built by its documented
# command against an installed libshmf, not the build tree: meson install
# into a temporary root (--destdir), a copy of its shmf.pc pointed there,
# then  pip install --no-build-isolation --target DIR ./bindings/python
# (meson-python, Debian's python3-mesonpy; no internet). The module needs
# libshmf.so.1, has no run path into the source or build tree, imports and
# checks a key against a shmd with the installed library; the stubs are
# installed beside it; nothing is left in the source tree.
# Usage: test-python-installed.sh SRC-DIR BUILD-DIR
SRC=$1 BUILD=$2
NAME=python-installed
. "$SRC/tests/bindings-fixture.sh"

need_packages python3-mesonpy python3-pip

tree_state() { git -C "$SRC" status --porcelain --ignored -- bindings 2>/dev/null; }
before=$(tree_state)
DEST=$ROOT/dest
meson install -C "$BUILD" --no-rebuild --quiet --destdir "$DEST" >"$ROOT/install.log" 2>&1 ||
	{ fail "meson install --destdir: $(tail -n 5 "$ROOT/install.log")"; finish; }
pc=$(find "$DEST" -name shmf.pc | head -n 1)
lib=$(find "$DEST" -name 'libshmf.so.1' | head -n 1)
[ -n "$pc" ] && [ -n "$lib" ] || { fail "meson install put no shmf.pc or libshmf.so.1 under $DEST"; finish; }
# Not PKG_CONFIG_SYSROOT_DIR: it would move Python's own headers too.
mkdir "$ROOT/pc"
sed "s|^prefix=.*|prefix=$(sed -n 's/^prefix=//p' "$pc" | sed "s|^|$DEST|")|" "$pc" >"$ROOT/pc/shmf.pc"

if (cd "$SRC" && PKG_CONFIG_PATH=$ROOT/pc /usr/bin/python3 -m pip install --no-build-isolation --no-index \
	--disable-pip-version-check --target "$ROOT/site" ./bindings/python) >"$ROOT/pip.log" 2>&1; then
	so=$(ls "$ROOT"/site/shmf.*.so)
	check "the module needs libshmf.so.1" bash -c "readelf -d '$so' | grep -q 'NEEDED.*\[libshmf\.so\.1\]'"
	check "no run path into the source or build tree: $(readelf -d "$so" | grep -E 'RPATH|RUNPATH')" \
		bash -c "! readelf -d '$so' | grep -E 'RPATH|RUNPATH' | grep -qE '$SRC|$BUILD'"
	check "the stubs are installed beside the module" test -f "$ROOT/site/shmf.pyi"
	start_shmd
	"$SHMCTL" create clicks --capacity 1000 --fpr 0.001 >/dev/null && "$SHMCTL" add clicks k1 >/dev/null
	out=$(LD_LIBRARY_PATH=$(dirname "$lib") PYTHONPATH=$ROOT/site /usr/bin/python3 -c \
		'import shmf; f = shmf.Filter("clicks"); print(shmf.__file__, "k1" in f, "k2" in f)' 2>&1)
	check "the installed module checks keys with the installed libshmf: $out" \
		[ "$out" = "$ROOT/site/$(basename "$so") True False" ]
else
	fail "pip install --no-build-isolation ./bindings/python: $(tail -n 30 "$ROOT/pip.log")"
fi
check "the build left nothing in the source tree (git status of bindings/ unchanged)" \
	bash -c "[ \"\$(git -C '$SRC' status --porcelain --ignored -- bindings 2>/dev/null)\" = '$before' ]"
finish
