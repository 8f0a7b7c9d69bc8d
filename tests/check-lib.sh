# check-lib.sh - what the shell tests share, sourced (not run):
#   fail WHAT          count a failure and say it on stderr
#   check WHAT CMD...  run CMD; a failure unless it succeeds
#   wait_for CMD...    until CMD succeeds, 10 s at most
#   checks_done NAME   "NAME: N checks, N failed"; the status 1 on a failure
# shellcheck shell=bash
failures=0
checks=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check() {
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}

wait_for() {
	for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done
	return 1
}

checks_done() {
	echo "$1: $checks checks, $failures failed"
	[ "$failures" -eq 0 ]
}
