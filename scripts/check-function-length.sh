#!/bin/bash
# check-function-length.sh [SOURCE_ROOT] - short functions everywhere: no
# function of the production code (libclient/, common/, shmd/, tools/)
# runs past 80 lines, none of tests/ and bench/ past 100. A function is
# counted from its opening brace to its closing one, both alone on a line
# at the left margin as clang-format writes them (.clang-format). Prints
# each function over its limit (file, line, name, length) and exits 1;
# 0 when none is. Run by meson test (suite unit).
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files -- libclient common shmd tools tests bench | grep -E '\.[ch]$')
else
	files=$(find libclient common shmd tools tests bench -name '*.[ch]' | sort)
fi
# shellcheck disable=SC2086
awk '
	FNR == 1 { prev = ""; start = 0 }
	/^\{$/ { start = FNR; name = prev; next }
	/^\}/ && start {
		n = FNR - start - 1
		limit = FILENAME ~ /^(tests|bench)\// ? 100 : 80
		if (n > limit) {
			sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
			printf "%s:%d: %s runs %d lines (at most %d)\n", FILENAME, start, name, n, limit
			bad = 1
		}
		start = 0
	}
	!/^[ \t]/ && !/^\{/ && !/^$/ && !/^#/ { if (!start) prev = $0 }
	END { exit bad }
' $files
