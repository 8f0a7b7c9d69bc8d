#!/bin/bash
# run-fuzz.sh - build the libFuzzer harnesses of tests/fuzz with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer (in build-fuzz/), and run
# each for a given time, one after another, at nice 19.
#
#   tests/fuzz/run-fuzz.sh [--merge] [--minimize] [--seeds] [SECONDS] [HARNESS...]
#
# SECONDS per harness (default 60); HARNESS among snapshot, segment,
# request, config, redisbloom (default all). Each runs over a working copy of its
# corpus (build-fuzz/work/NAME); --merge then adds the inputs that reach
# new coverage, minimized, to tests/fuzz/corpus/NAME (commit them: they
# replay in every test run). --minimize (with SECONDS 0: no fuzzing) shrinks
# each corpus to the fewest inputs that reach the same coverage, keeping
# the seed-* and regress-* files. --seeds first rewrites the seed-* files of the
# corpora with make-seeds. A crash is saved in build-fuzz/artifacts/NAME/;
# once fixed, copy it to tests/fuzz/corpus/NAME/regress-WHAT so that it
# replays as a test from then on. Exits non-zero if any harness crashed.
set -u
cd "$(dirname "$0")/../.."
merge=0 seeds=0 minimize=0 secs=60
while [ $# -gt 0 ]; do
	case $1 in
	--merge) merge=1; shift ;;
	--seeds) seeds=1; shift ;;
	--minimize) minimize=1; shift ;;
	[0-9]*) secs=$1; shift ;;
	*) break ;;
	esac
done
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(snapshot segment request config redisbloom)
declare -A maxlen=([snapshot]=65536 [segment]=20000 [request]=4096 [config]=4096 [redisbloom]=20000)

command -v clang >/dev/null || apt-get install -y clang >/dev/null || { echo "run-fuzz: clang is needed"; exit 2; }
b=build-fuzz
if [ ! -f $b/build.ninja ]; then
	CC=clang meson setup $b -Dfuzz=true -Dtests=true -Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' >$b.setup.log 2>&1 ||
		{ cat $b.setup.log; exit 2; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("tests/fuzz/fuzz-$h"); done
[ $seeds -eq 1 ] && targets+=(tests/fuzz/make-seeds)
nice -n 19 meson compile -C $b "${targets[@]}" || exit 2
if [ $seeds -eq 1 ]; then
	rm -f tests/fuzz/corpus/*/seed-*
	ASAN_OPTIONS=detect_leaks=0 $b/tests/fuzz/make-seeds tests/fuzz/corpus >/dev/null 2>&1 || exit 2
fi

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
status=0
for h in "${harnesses[@]}"; do
	[ "$secs" -eq 0 ] && continue
	work=$b/work/$h art=$b/artifacts/$h/
	mkdir -p "$work" "$art"
	log=$b/fuzz-$h.log
	echo "=== fuzz $h: ${secs}s (log $log)"
	nice -n 19 $b/tests/fuzz/fuzz-$h -max_total_time="$secs" -max_len="${maxlen[$h]}" -rss_limit_mb=4096 \
		-timeout=10 -print_final_stats=1 -artifact_prefix="$art" "$work" tests/fuzz/corpus/$h >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	crashes=$(ls "$art" | wc -l)
	echo "=== fuzz $h: ${runs:-?} executions, $cov, exit $rc, $crashes crash files in $art"
	if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
		status=1
		grep -m 20 -E 'ERROR|fuzz: |runtime error|SUMMARY' "$log"
	fi
	if [ $merge -eq 1 ]; then
		nice -n 19 $b/tests/fuzz/fuzz-$h -merge=1 -max_len="${maxlen[$h]}" tests/fuzz/corpus/$h "$work" \
			>>"$log" 2>&1 && echo "=== fuzz $h: corpus now $(ls tests/fuzz/corpus/$h | wc -l) files"
	fi
done
if [ $minimize -eq 1 ]; then
	for h in "${harnesses[@]}"; do
		c=tests/fuzz/corpus/$h min=$b/min/$h
		rm -rf "$min" && mkdir -p "$min"
		nice -n 19 $b/tests/fuzz/fuzz-$h -merge=1 -max_len="${maxlen[$h]}" "$min" "$c" >>$b/fuzz-$h.log 2>&1 || { status=1; continue; }
		find "$c" -maxdepth 1 -type f ! -name 'seed-*' ! -name 'regress-*' -delete
		cp -n "$min"/* "$c"/ 2>/dev/null
		echo "=== fuzz $h: corpus minimized to $(ls "$c" | wc -l) files"
	done
fi
exit $status
