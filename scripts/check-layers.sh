#!/bin/bash
# check-layers.sh [SOURCE_ROOT] - the layering rule: include <- libclient <-
# common <- {shmd, tools}. A folder's #include "..." lines may name only
# headers of the folders below it, and its meson.build may use no target
# of a folder above it. Prints each offending file and line and exits 1;
# exits 0 when the tree keeps the rule. Run by meson test (suite unit).
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

# folder: the folders its quoted includes may name (its own first).
declare -A may_include=(
	[libclient]="libclient include"
	[common]="common libclient include"
	[tools]="tools common libclient include"
)
# folder: the targets of folders above it that its meson.build must not use.
declare -A must_not_use=(
	[libclient]="shmf_common shmd shmctl"
	[common]="shmd shmctl"
	[tools]="shmd"
)
# Every folder a quoted include could come from, to name the one it did.
layers="include libclient common shmd tools"

bad=0
complain()
{
	echo "$1" >&2
	bad=1
}

# The folder (of $layers) that holds header $1 as included from file $2,
# or "" if none does.
where()
{
	local name=$1 from=$2 dir
	if [[ $name == */* ]]; then
		# A path: relative to the including file, as the compiler reads it.
		local path
		path=$(realpath -m --relative-to=. "$(dirname "$from")/$name")
		dir=${path%%/*}
		[[ -e $path && " $layers " == *" $dir "* ]] && echo "$dir"
		return
	fi
	for dir in $layers; do
		if [[ -e $dir/$name ]]; then
			echo "$dir"
			return
		fi
	done
}

for folder in "${!may_include[@]}"; do
	allowed=${may_include[$folder]}
	for file in "$folder"/*.c "$folder"/*.h; do
		[[ -e $file ]] || continue
		while IFS=: read -r line text; do
			name=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$text")
			[[ -n $name ]] || continue
			# The including file's own folder first, as for "..." includes.
			if [[ $name != */* && -e $folder/$name ]]; then
				continue
			fi
			found=$(where "$name" "$file")
			if [[ -z $found ]]; then
				complain "$file:$line: #include \"$name\" is in none of ${allowed// //, }/"
			elif [[ " $allowed " != *" $found "* ]]; then
				complain "$file:$line: #include \"$name\" is in $found/ ($folder/ may include only from ${allowed// //, }/)"
			fi
		done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
	done
done

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
