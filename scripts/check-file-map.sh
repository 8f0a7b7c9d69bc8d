#!/bin/bash
# check-file-map.sh [SOURCE_ROOT] - every production source file (the C
# files of include/, libclient/, common/, shmd/ and tools/ that git tracks)
# is named in docs/design.md, section 1, "The files, one idea each", so that
# the map a newcomer reads first is complete. A header counts as named with
# its .c file. Prints each file the map lacks and exits
# 1; 0 when none is missing. Run by meson test (suite unit).
# A header goes with its .c file: naming x.c names x.h; a header without a
# .c file of its own (segment-format.h, generations.h) is named itself.
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
doc=docs/design.md
[ -r "$doc" ] || { echo "check-file-map: $doc not found" >&2; exit 2; }
# Section 1, from its heading to the next one.
map=$(sed -n '/^## 1\. /,/^## 2\. /p' "$doc")
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard -- include libclient common shmd tools | grep -E '\.[ch]$')
else
	files=$(find include libclient common shmd tools -name '*.[ch]')
fi
missing=0
for f in $files; do
	base=${f##*/}
	stem=${base%.*}
	if grep -qF "\`$base\`" <<<"$map"; then
		continue
	fi
	# A header goes with its .c file.
	if [[ $base == *.h ]] && grep -qF "\`$stem.c\`" <<<"$map"; then
		continue
	fi
	echo "check-file-map: $f is not named in $doc, section 1 (\"The files, one idea each\")" >&2
	missing=$((missing + 1))
done
[ "$missing" -eq 0 ] || { echo "check-file-map: $missing files missing from the map" >&2; exit 1; }
exit 0
