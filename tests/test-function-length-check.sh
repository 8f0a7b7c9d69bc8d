#!/bin/bash
# test-function-length-check.sh SOURCE_ROOT - scripts/check-function-length.sh
# holds the tree to its limits and fails past them: a production function
# of 81 lines and a test function of 101 are named; 80 and 100 pass.
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
# body N: a function named f of N lines between its braces.
body()
{
	echo "static int f(void)"
	echo "{"
	for ((i = 0; i < $1; i++)); do echo "	(void)0;"; done
	echo "}"
}
tree()
{
	rm -rf "$work/t"
	mkdir -p "$work/t/libclient" "$work/t/common" "$work/t/shmd" "$work/t/tools" "$work/t/tests" "$work/t/bench"
	body "$1" >"$work/t/shmd/a.c"
	body "$2" >"$work/t/tests/b.c"
}
expect()
{
	local name=$1 want=$2 out rc
	out=$(bash "$src/scripts/check-function-length.sh" "$work/t" 2>&1)
	rc=$?
	if [[ $want == pass && $rc -ne 0 ]] || [[ $want != pass && ( $rc -eq 0 || $out != *"$want"* ) ]]; then
		echo "FAIL $name: exit $rc: $out"
		fail=1
	else
		echo "ok   $name"
	fi
}
if ! out=$(bash "$src/scripts/check-function-length.sh" "$src" 2>&1); then
	echo "FAIL the tree: $out"
	fail=1
else
	echo "ok   the tree keeps the limits"
fi
tree 80 100
expect "80 lines in shmd/, 100 in tests/" pass
tree 81 100
expect "81 lines in shmd/" "shmd/a.c:2: f runs 81 lines (at most 80)"
tree 80 101
expect "101 lines in tests/" "tests/b.c:2: f runs 101 lines (at most 100)"
exit $fail
