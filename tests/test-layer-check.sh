#!/bin/bash
# test-layer-check.sh SOURCE_ROOT - scripts/check-layers.sh fails on each
# kind of fault it is there for, naming the file, and passes the tree as
# it is: a copy of the tracked C files and meson.build files is broken one
# way at a time (an include up between shmd's floors, a bare include, a
# circle, a project header in angle brackets, a binding reaching into the
# project, bench/ including tests/).
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
copy()
{
	rm -rf "$work/tree"
	mkdir -p "$work/tree"
	(cd "$src" && git ls-files -z -- '*.c' '*.h' '*meson.build' | tar -cf - --null -T -) | tar -C "$work/tree" -xf -
}
# expect NAME FILE LINE: the check fails and names FILE after LINE went in.
expect()
{
	local name=$1 file=$2 line=$3 out
	copy
	printf '%s\n' "$line" >>"$work/tree/$file"
	if out=$(bash "$src/scripts/check-layers.sh" "$work/tree" 2>&1); then
		echo "FAIL $name: the check passed"
		fail=1
	elif ! grep -qF "${4:-$file}" <<<"$out"; then
		echo "FAIL $name: the check failed without naming ${4:-$file}: $out"
		fail=1
	else
		echo "ok   $name"
	fi
}

copy
if ! out=$(bash "$src/scripts/check-layers.sh" "$work/tree" 2>&1); then
	echo "FAIL the tree as it is: $out"
	fail=1
else
	echo "ok   the tree as it is passes"
fi
expect "an include up a floor (store up to verbs)" shmd/store/registry.c '#include "shmd/verbs/verb.h"'
expect "an include up a floor (base up to resp)" shmd/base/log.c '#include "shmd/resp/reply.h"'
expect "common up into shmd" common/spec.c '#include "shmd/store/registry.h"'
expect "libclient up into common" libclient/hash.c '#include "common/spec.h"'
expect "tools into shmd" tools/shmctl.c '#include "shmd/store/registry.h"'
expect "bench into tests" bench/keys.c '#include "tests/fixture.h"'
expect "a bare include" shmd/store/quotas.c '#include "registry.h"'
expect "a project header in angle brackets" shmd/net/tcp.c '#include <libclient/hash.h>'
expect "a binding reaching into the project" bindings/nginx/ngx_http_shmf_module.c '#include "libclient/hash.h"'
expect "a circle inside a floor" shmd/store/hints.h '#include "shmd/store/registry.h"' "shmd/store/hints"
exit $fail
