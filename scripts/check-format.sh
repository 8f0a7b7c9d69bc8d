#!/bin/bash
# check-format.sh - check that the C sources are formatted as .clang-format
# says: lists each file clang-format would change and exits 1 if there is
# any (2 if the check could not run). With --fix, formats them in place.
#
# Scope: every *.c and *.h file git tracks (and new ones it does not
# ignore), so that a new folder is covered without a word here; but not
# the fuzz corpus or tests/data (data), and a folder whose own
# .clang-format says DisableFormat (bindings/php) passes as written.
# Outside a git checkout: every such file below the top folder. The style is clang-format 14's (Debian's clang-format
# package); another major version formats some constructs differently, so
# the check refuses to run with one. CLANG_FORMAT names another binary.
set -u
cd "$(dirname "$0")/.." || exit 2

fix=0
case "${1:-}" in
--fix) fix=1 ;;
"") ;;
*)
	echo "usage: scripts/check-format.sh [--fix]" >&2
	exit 2
	;;
esac

cf=${CLANG_FORMAT:-clang-format}
version=$("$cf" --version 2>/dev/null) || {
	echo "check-format: $cf not found (install Debian's clang-format package, version 14)" >&2
	exit 2
}
major=$(printf '%s\n' "$version" | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p')
if [ "$major" != 14 ]; then
	echo "check-format: $cf is '$version'; the style is checked with clang-format 14 (set CLANG_FORMAT to one)" >&2
	exit 2
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# Tracked files, and new ones not ignored.
	list() { git ls-files --cached --others --exclude-standard; }
else
	list() { find . -path './build*' -prune -o -type f -print | sed 's|^\./||'; }
fi
mapfile -t files < <(list | grep -E '\.[ch]$' | grep -v -E '^tests/(fuzz/corpus|data)/' | sort -u)
if [ "${#files[@]}" -eq 0 ]; then
	echo "check-format: no C files found" >&2
	exit 2
fi

bad=()
for f in "${files[@]}"; do
	[ -f "$f" ] || continue # deleted but still in the index
	if [ "$fix" = 1 ]; then
		"$cf" --style=file -i "$f" || bad+=("$f")
	elif ! out=$("$cf" --style=file --dry-run -Werror --ferror-limit=1 "$f" 2>&1); then
		case "$out" in
		*"code should be clang-formatted"*) bad+=("$f") ;;
		*)
			# Not a formatting difference: a broken .clang-format, say.
			printf 'check-format: %s: clang-format failed:\n%s\n' "$f" "$out" >&2
			exit 2
			;;
		esac
	fi
done

if [ "${#bad[@]}" -gt 0 ]; then
	if [ "$fix" = 1 ]; then
		echo "check-format: clang-format failed on:"
	else
		echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted (scripts/check-format.sh --fix formats them):"
	fi
	printf '  %s\n' "${bad[@]}"
	exit 1
fi
if [ "$fix" = 1 ]; then
	echo "check-format: formatted ${#files[@]} files"
else
	echo "check-format: all ${#files[@]} files are formatted"
fi
exit 0
