#!/bin/bash
# check-layers.sh [SOURCE_ROOT] - the layering rule of docs/design.md,
# section 1. Include lines name their floor from one include root
# (#include "common/spec.h"; the public header as users include it,
# <shmf.h>), so the rule is a grep per folder: a folder's quoted includes
# may name only itself and the folders below it. The floors, lowest first:
#
#   libclient <- common <- shmd <- tools (tools: common and libclient only)
#   shmd/: base <- resp <- config <- store <- fleet <- files <- session
#          <- verbs <- net <- shmd/main.c
#
# bench/ and tests/ stand on everything but each other; examples/ and
# bindings/ on <shmf.h> alone. No file includes itself round a circle (the
# graph of include lines between files, a .c and its .h one node, has no
# loop). A folder's meson.build uses no target of a folder above it.
# Prints each offending file and line and exits 1; exits 0 when the tree
# keeps the rule. Run by meson test (suite unit).
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

shmd_floors="base resp config store fleet files session verbs net"

bad=0
complain()
{
	echo "$1" >&2
	bad=1
}

# The C files of folder $1 that git tracks (all of them outside a checkout),
# its sub-folders' included unless $2 is "top".
sources()
{
	local depth=()
	[[ ${2:-} == top ]] && depth=(-maxdepth 1)
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -- "$1" | grep -E '\.[ch]$' | { if [[ ${2:-} == top ]]; then grep -E "^$1/[^/]+$"; else cat; fi; }
	else
		find "$1" "${depth[@]}" -name '*.[ch]' | sort
	fi
}

# rule FOLDER [top] ALLOWED...: every quoted include of FOLDER's files names
# a file of one of the ALLOWED folders (paths from the root), and exists.
rule()
{
	local folder=$1 scope=""
	shift
	if [[ ${1:-} == top ]]; then
		scope=top
		shift
	fi
	local allowed=("$@") files
	files=$(sources "$folder" $scope)
	[[ -n $files ]] || return
	local pattern='^$'
	for a in "${allowed[@]}"; do
		pattern+="|^$a/"
	done
	# shellcheck disable=SC2086
	while IFS=: read -r file line name; do
		if [[ ! -e $name ]]; then
			complain "$file:$line: #include \"$name\" is no file under the include root (name it from the top: \"folder/file.h\")"
		elif ! grep -qE "$pattern" <<<"$name"; then
			complain "$file:$line: #include \"$name\" reaches up or across: $folder/ may include only from ${allowed[*]}"
		fi
	done < <(grep -nH '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files |
		sed -E 's/^([^:]*):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1:\2:\3/')
	# The project's folders never come through angle brackets; the public
	# header does, as users include it.
	# shellcheck disable=SC2086
	while IFS= read -r hit; do
		complain "$hit: a project header in angle brackets (only <shmf.h> is)"
	done < <(grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(libclient|common|shmd|tools|bench|tests|include)/' $files)
	return 0
}

for folder in libclient common shmd tools; do
	[[ -n $(sources "$folder") ]] || complain "$folder/: no C files found under $PWD"
done
rule libclient libclient
rule common common libclient
below="common libclient"
for floor in $shmd_floors; do
	below="shmd/$floor $below"
	# shellcheck disable=SC2086
	rule "shmd/$floor" $below
done
# shellcheck disable=SC2086
rule shmd top shmd $below
rule tools tools common libclient
rule bench bench shmd common libclient
rule tests tests shmd tools common libclient
rule examples
# bindings/ build with PHP's and nginx's own include paths, on which none
# of the project's folders is: a quoted name there is theirs (php.h,
# config.h) or the binding's own; a path into the project, or shmf.h in
# quotes, is refused.
while IFS= read -r hit; do
	complain "$hit: bindings/ include the project only as <shmf.h>"
done < <(find bindings -name '*.[ch]' -exec grep -nHE \
	'^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]((libclient|common|shmd|tools|bench|tests|include)/|shmf\.h")' {} +)

# No circle: each include line an edge between files, a .c file and its
# header one node; tsort names a loop when there is one.
loops=$(for folder in libclient common shmd tools; do
	for file in $(sources "$folder"); do
		grep -hE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
			sed -E 's/.*"([^"]*)".*/\1/' |
			while read -r name; do echo "${file%.[ch]} ${name%.[ch]}"; done
	done
done | awk '$1 != $2' | tsort 2>&1 >/dev/null)
if [[ -n $loops ]]; then
	complain "include lines run round a circle:"
	complain "$loops"
fi

# meson.build: no target of a folder above.
declare -A must_not_use=(
	[libclient]="shmf_common shmd shmctl"
	[common]="shmd shmctl"
	[tools]="shmd"
)
for folder in "${!must_not_use[@]}"; do
	file=$folder/meson.build
	for target in ${must_not_use[$folder]}; do
		# Comments and strings removed: only identifiers count.
		while IFS=: read -r line text; do
			used=$(grep -owE "${target}(_[A-Za-z0-9_]+)?" <<<"$text" | head -1)
			complain "$file:$line: uses $used, a target of a folder above $folder/"
		done < <(sed -e "s/'[^']*'//g" -e 's/#.*//' "$file" | grep -nwE "${target}(_[A-Za-z0-9_]+)?")
	done
done

exit $bad
