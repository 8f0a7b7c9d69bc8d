#!/bin/bash
# run-tests.sh - set everything up on a fresh Debian machine and run the
# whole test suite twice: a plain build (build/) and one under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-san/); then the
# threaded tests (suite threads) under ThreadSanitizer (build-tsan/); and
# scripts/check-format.sh, counted as one test, that the C sources are
# formatted as .clang-format says.
# tests/run-long.sh is the long mode (docs/testing.md).
# The last line is "N passed, N failed"; the exit status is non-zero on any
# failure (a build that fails counts as a failed test).
set -u
cd "$(dirname "$0")"
scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0

# suite DIR TIMEOUT-MULTIPLIER [meson options...]
suite() {
	local dir=$1 mult=$2
	shift 2
	echo "=== $dir: build"
	if ! { if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" -Dtests=true "$@"; else
		meson setup "$dir" -Dtests=true "$@"; fi; } >"$dir.setup.log" 2>&1; then
		cat "$dir.setup.log"
		echo "=== $dir: meson setup FAILED"
		failed=$((failed + 1))
		return
	fi
	rm -f "$dir.setup.log"
	if ! meson compile -C "$dir"; then
		echo "=== $dir: build FAILED"
		failed=$((failed + 1))
		return
	fi
	echo "=== $dir: tests"
	rm -f "$dir/meson-logs/testlog.json"
	meson test -C "$dir" --num-processes 2 --timeout-multiplier "$mult" --print-errorlogs
	count "$dir"
}

# count DIR: add the results of DIR's last meson test to the totals. A
# skipped test (exit 77: a package it needs could not be installed) counts as
# failed: this command installs everything the suite needs, so a skip means
# a check did not run.
count() {
	local dir=$1 counts
	counts=$(python3 -c '
import json, sys
ok = bad = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t["result"] == "OK":
        ok += 1
    else:
        bad += 1
        if t["result"] == "SKIP":
            print("skipped, counted as failed:", t["name"], file=sys.stderr)
print(ok, bad)' "$dir/meson-logs/testlog.json") || counts="0 1"
	set -- $counts
	passed=$((passed + $1))
	failed=$((failed + $2))
	echo "=== $dir: $1 passed, $2 failed"
}

# threads: the threaded code (libshmf handles shared by threads, the cuckoo
# relocation lock, the journal's rings) under ThreadSanitizer: only the tests
# of suite threads, and only their programs built (the list read from meson).
threads() {
	local dir=build-tsan
	echo "=== $dir: build (ThreadSanitizer, suite threads)"
	if ! { if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" -Dtests=true -Db_sanitize=thread -Db_lundef=false; else
		meson setup "$dir" -Dtests=true -Db_sanitize=thread -Db_lundef=false; fi; } >"$dir.setup.log" 2>&1 ||
		! meson compile -C "$dir" $(suite_programs "$dir" threads); then
		cat "$dir.setup.log" 2>/dev/null
		echo "=== $dir: build FAILED"
		failed=$((failed + 1))
		return
	fi
	rm -f "$dir.setup.log" "$dir/meson-logs/testlog.json"
	TSAN_OPTIONS="halt_on_error=1" meson test -C "$dir" --no-rebuild --suite threads --num-processes 2 \
		--timeout-multiplier 4 --print-errorlogs
	count "$dir"
}

# format: the C sources as .clang-format says (one test; on failure the
# script lists the files that are not).
format() {
	echo "=== format: scripts/check-format.sh"
	if scripts/check-format.sh; then
		passed=$((passed + 1))
		echo "=== format: 1 passed, 0 failed"
	else
		failed=$((failed + 1))
		echo "=== format: 0 passed, 1 failed"
	fi
}

# suite_programs DIR SUITE: the build targets (tests/test-x) of the programs
# that suite SUITE runs.
suite_programs() {
	meson introspect "$1" --tests | python3 -c '
import json, os, sys
d, suite = os.path.abspath(sys.argv[1]), sys.argv[2]
progs = {os.path.relpath(t["cmd"][0], d) for t in json.load(sys.stdin) if suite in t["suite"] or "shmfilter:" + suite in t["suite"]}
print(" ".join(sorted(p for p in progs if not p.startswith(".."))))' "$1" "$2"
}

export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
suite build 1
suite build-san 4 -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-sanitize-recover=all
threads
format

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
