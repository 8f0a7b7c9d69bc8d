#!/bin/bash
# run-long.sh - the long mode of the adversarial tests (docs/testing.md,
# "The long mode"). Takes an hour or more on a 2-core machine:
#
#   1. crash, fault, hostile and thread suites with SHMF_LONG=1 (200 runs
#      per crash case instead of 20, more fault errnos, more random
#      scribbles), in the plain build and under ASan + UBSan;
#   2. every single-threaded client-library test under valgrind memcheck
#      (suites unit, multiprocess, hostile, faults, fuzz-replay);
#   3. suite threads under ThreadSanitizer, 5 times over;
#   4. each fuzz harness for FUZZ-SECONDS (tests/fuzz/run-fuzz.sh);
#   5. the Debian packages built, installed, used, upgraded under load and
#      purged (tests/test-packages-install.sh).
#
#   tests/run-long.sh [FUZZ-SECONDS]    (default 300 per harness; 0: no fuzzing)
#
# Ends with "N passed, N failed" like run-tests.sh, counting each step once.
set -u
cd "$(dirname "$0")/.."
fuzz_secs=${1:-300}
passed=0 failed=0

step() {
	local name=$1
	shift
	echo "=== long: $name"
	if "$@"; then
		passed=$((passed + 1))
		echo "=== long: $name: ok"
	else
		failed=$((failed + 1))
		echo "=== long: $name: FAILED"
	fi
}

setup() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" -Dtests=true "$@" >/dev/null
	else
		meson setup "$dir" -Dtests=true "$@" >/dev/null
	fi && meson compile -C "$dir" >/dev/null
}

for tool in valgrind clang; do
	command -v $tool >/dev/null || apt-get install -y $tool >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
done
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export TSAN_OPTIONS="halt_on_error=1"
export SHMF_LONG=1
adversarial=(--suite crash --suite faults --suite hostile --suite threads --suite fuzz-replay)

step "build" setup build
step "crash, faults, hostile, threads (plain, long)" \
	meson test -C build "${adversarial[@]}" --num-processes 1 --timeout-multiplier 20 --print-errorlogs
step "build-san" setup build-san -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-sanitize-recover=all
step "crash, faults, hostile, threads (ASan + UBSan, long)" \
	meson test -C build-san "${adversarial[@]}" --num-processes 1 --timeout-multiplier 40 --print-errorlogs
step "client-library tests under valgrind memcheck" \
	meson test -C build --suite unit --suite multiprocess --suite threads --suite hostile --suite faults \
	--suite fuzz-replay --num-processes 2 --timeout-multiplier 40 --print-errorlogs \
	--wrapper "valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite"
step "build-tsan" setup build-tsan -Db_sanitize=thread -Db_lundef=false
step "suite threads under ThreadSanitizer, 5 times" \
	meson test -C build-tsan --suite threads --repeat 5 --num-processes 1 --timeout-multiplier 10 --print-errorlogs
if [ "$fuzz_secs" -gt 0 ]; then
	step "fuzzing, ${fuzz_secs}s per harness" tests/fuzz/run-fuzz.sh "$fuzz_secs"
fi
step "Debian packages: install, use, upgrade while a worker adds, purge" tests/test-packages-install.sh .
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
