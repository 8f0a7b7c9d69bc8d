#!/bin/bash
# test-lifecycle.sh - shmd as a daemon: its options, the pidfile complete
# when shmd returns, SIGTERM removing socket and pidfile, SIGHUP and
# 'shmctl reload' reloading the configuration (new filters made, shape
# changes refused and logged, a broken file changing nothing), the log
# file (reopened on reload), the log level, and journald's format.
# Usage: test-lifecycle.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$1
SHMCTL=$2
ROOT=$(mktemp -d /dev/shm/shmf-lifecycle-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT/run
failures=0
checks=0
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$ROOT"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check() { # check DESCRIPTION COMMAND...: the command must succeed
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}

# Wait (10 s at most) until COMMAND succeeds; no time is asserted.
wait_for() {
	for _ in $(seq 200); do "$@" && return 0; sleep 0.05; done
	return 1
}

gone() { ! kill -0 "$1" 2>/dev/null; }

# --- options -----------------------------------------------------------
check "shmd --version prints the version" bash -c "'$SHMD' --version | grep -Eq '^shmd [0-9]'"
check "shmd -V prints the version" bash -c "'$SHMD' -V | grep -Eq '^shmd [0-9]'"
check "shmd --help prints the usage on stdout, exit 0" bash -c "'$SHMD' --help | grep -q -- '--log-level LEVEL'"
check "shmd -h prints the usage" bash -c "'$SHMD' -h | grep -q -- '--foreground'"
check "shmd --print-config prints the default" bash -c "'$SHMD' --print-config | grep -q '^capacity = 1000000$'"
for bad in "--frobnicate" "-x" "--log-level loud" "--config" "stray"; do
	checks=$((checks + 1))
	# shellcheck disable=SC2086
	"$SHMD" $bad >"$ROOT/out" 2>"$ROOT/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "shmd $bad: exit $rc, want 2"
	[ "$(wc -l <"$ROOT/err")" -eq 1 ] || fail "shmd $bad: usage error is not one line: $(cat "$ROOT/err")"
	grep -q -- "see shmd --help" "$ROOT/err" || fail "shmd $bad: no pointer to --help: $(cat "$ROOT/err")"
	word=${bad%% *}
	grep -q -- "${word#--}" "$ROOT/err" || fail "shmd $bad: the message does not name '$word': $(cat "$ROOT/err")"
done
checks=$((checks + 1))
"$SHMD" --log-level loud 2>&1 | grep -q "debug, info, notice, warning or error" || fail "--log-level loud does not list the levels"

# --- the pidfile: complete the moment shmd returns, 20 times ----------
for i in $(seq 20); do
	checks=$((checks + 1))
	"$SHMD" --instance "p$i" || { fail "shmd -i p$i (daemonising) exited $?"; continue; }
	pid=$(cat "$SHMF_RUNTIME_DIR/p$i.pid")
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		fail "start $i: pidfile read right after shmd returned holds '$pid', not a running shmd"
		continue
	fi
	PIDS+=("$pid")
	kill "$pid"
	wait_for gone "$pid" || fail "start $i: shmd $pid still running after SIGTERM"
	[ -e "$SHMF_RUNTIME_DIR/p$i.sock" ] && fail "start $i: SIGTERM left the socket"
	[ -e "$SHMF_RUNTIME_DIR/p$i.pid" ] && fail "start $i: SIGTERM left the pidfile"
done

# --- reload ------------------------------------------------------------
CONF=$ROOT/shmd.conf
LOG=$ROOT/shmd.log
cat >"$CONF" <<CONF
[instance]
name = rl
log_file = $LOG
log_level = info

[filter a]
capacity = 1000
fpr = 0.01
CONF
"$SHMD" -c "$CONF" || fail "shmd -c $CONF exited $?"
PID=$(cat "$SHMF_RUNTIME_DIR/rl.pid")
PIDS+=("$PID")
check "log_file gets the log" grep -q "instance 'rl'" "$LOG"
"$SHMCTL" -i rl add a before-reload >/dev/null || fail "add before the reload"

# A new filter, a shape change, a live key and a restart-only key.
cat >"$CONF" <<CONF
[instance]
name = rl
log_file = $LOG
log_level = debug
remove_on_exit = yes

[filter a]
capacity = 5000
fpr = 0.001

[filter b]
type = cuckoo
capacity = 2000

# no bucket size: 2 at this rate (32-bit fingerprints), no change to refuse
[filter low]
type = cuckoo
capacity = 1000
fpr = 1e-9

[tcp]
port = 7000
CONF
kill -HUP "$PID"
check "SIGHUP: filter b appears" wait_for bash -c "'$SHMCTL' -i rl list | grep -qx b"
check "SIGHUP: shmd still runs, same pid" kill -0 "$PID"
check "SIGHUP: the pidfile still names it" bash -c "[ \"\$(cat '$SHMF_RUNTIME_DIR/rl.pid')\" = $PID ]"
check "SIGHUP: the socket is still there and serves" bash -c "'$SHMCTL' -i rl ping | grep -qx PONG"
check "capacity change refused, logged" grep -q "reload: filter 'a': capacity 5000 in the configuration, 1000 live: refused" "$LOG"
check "fpr change refused, logged" grep -q "reload: filter 'a': fpr 0.001 in the configuration, 0.01 live: refused" "$LOG"
check "the refused filter is kept as it was" bash -c "'$SHMCTL' -i rl info a | grep -Eq '^capacity +1000$'"
check "the refused filter keeps its keys" bash -c "'$SHMCTL' -i rl check a before-reload | grep -q present"
check "new filter b is a cuckoo filter of 2000" bash -c "'$SHMCTL' -i rl info b | grep -Eq '^capacity +2000$'"
check "new filter low at 1e-9 has 32-bit fingerprints" bash -c "'$SHMCTL' -i rl info low | grep -Eq '^fingerprint_bits +32$'"
check "new filter low has buckets of 2" bash -c "'$SHMCTL' -i rl info low | grep -Eq '^bucket_size +2$'"
check "filter low, unchanged, is not refused" bash -c "! grep -q \"filter 'low'.*refused\" '$LOG'"
check "log_level applied (logged)" grep -q "reload: \[instance\] log_level info -> debug: applied" "$LOG"
check "remove_on_exit applied (logged)" grep -q "reload: \[instance\] remove_on_exit 0 -> 1: applied" "$LOG"
check "[tcp] port needs a restart (logged)" grep -q "reload: \[tcp\] port 6479 -> 7000: needs a restart; not applied" "$LOG"
check "summary logged" grep -q "2 filters created, 2 changes applied, 2 refused, 1 need a restart" "$LOG"

# shmctl reload: the same, answered; nothing new this time. Not all of the
# file is in force: exit 1, and stderr says so.
checks=$((checks + 1))
"$SHMCTL" -i rl reload >"$ROOT/out" 2>"$ROOT/err"
rc=$?
[ "$rc" -eq 1 ] || fail "shmctl reload with changes refused and one needing a restart exited $rc, want 1"
grep -q "^shmctl: reload: not all of the configuration is in force: 2 changes refused, 1 needs a restart" "$ROOT/err" ||
	fail "shmctl reload does not say on stderr that not all is in force: $(cat "$ROOT/err")"
grep -q "0 filters created, 0 changes applied, 2 refused, 1 need a restart" "$ROOT/out" ||
	fail "shmctl reload does not print the summary: $(cat "$ROOT/out")"
grep -q "filter 'a': capacity 5000 in the configuration, 1000 live: refused" "$ROOT/out" ||
	fail "shmctl reload does not print the refusal: $(cat "$ROOT/out")"

# A broken file changes nothing: logged, answered, the daemon serves on.
cp "$CONF" "$ROOT/good.conf"
printf '[filter c]\ncapacity = 10\n[filter d]\nthis is not ini\n' >>"$CONF"
kill -HUP "$PID"
check "a broken file is logged" wait_for grep -q "reload: $CONF:[0-9]*: syntax error .*; nothing changed" "$LOG"
check "a broken file makes no filter" bash -c "! '$SHMCTL' -i rl list | grep -qx c"
check "shmd serves after a broken file" bash -c "'$SHMCTL' -i rl ping | grep -qx PONG"
checks=$((checks + 1))
"$SHMCTL" -i rl reload >"$ROOT/out" 2>"$ROOT/err"
rc=$?
[ "$rc" -eq 2 ] || fail "shmctl reload of a broken file exited $rc, want 2"
grep -q "reload: $CONF:[0-9]*: syntax error.*nothing changed" "$ROOT/err" ||
	fail "shmctl reload of a broken file does not say why: $(cat "$ROOT/err")"
printf '[filter e]\ncapacity = 0\n' >"$CONF"
checks=$((checks + 1))
"$SHMCTL" -i rl reload >/dev/null 2>"$ROOT/err" && fail "a bad value reloaded"
grep -q "\[filter e\] capacity '0'" "$ROOT/err" || fail "a bad value is not named: $(cat "$ROOT/err")"
cp "$ROOT/good.conf" "$CONF"

# A changed mode reaches the live filter's files on reload (the
# permissions pass), and is logged; the filter keeps its keys.
sed -i 's/^capacity = 5000$/capacity = 5000\nmode = 0660/' "$CONF"
datafile="$SHMF_RUNTIME_DIR/rl/$("$SHMCTL" -i rl info a | awk '$1 == "data_file" {print $2}')"
check "filter a's data file is 0640 before" bash -c "[ \"\$(stat -c %a '$datafile')\" = 640 ]"
kill -HUP "$PID"
check "SIGHUP: a changed mode reaches the data file" wait_for bash -c "[ \"\$(stat -c %a '$datafile')\" = 660 ]"
check "SIGHUP: the mode change is logged" wait_for grep -q "permissions: .*$(basename "$datafile")" "$LOG"
check "SIGHUP: the filter keeps its keys" bash -c "'$SHMCTL' -i rl check a before-reload | grep -q present"
cp "$ROOT/good.conf" "$CONF"

# The log file is reopened on reload: logrotate moves it, then HUPs.
mv "$LOG" "$LOG.1"
kill -HUP "$PID"
check "after a move and SIGHUP the log is written anew" wait_for grep -q "reload: " "$LOG"
check "the moved file is left alone" bash -c "! grep -q 'reload: reading' <(tail -n 1 '$LOG.1') || true"

# The level: at warning, info and notice lines are gone, warnings stay.
sed -i 's/^log_level = debug/log_level = warning/' "$CONF"
kill -HUP "$PID"
check "log_level warning: the refusals still logged" wait_for bash -c "[ \$(grep -c 'capacity 5000 in the configuration' '$LOG') -ge 2 ]"
lines=$(wc -l <"$LOG")
kill -HUP "$PID"
wait_for bash -c "[ \$(grep -c 'capacity 5000 in the configuration' '$LOG') -ge 3 ]"
checks=$((checks + 1))
tail -n +"$((lines + 1))" "$LOG" | grep -q "shmd\[notice\]\|shmd\[info\]" &&
	fail "log_level warning still logs notice or info lines: $(tail -n +"$((lines + 1))" "$LOG" | head -3)"

# A changed bucket size is a change of shape: refused, said, the filter kept as it is.
sed -i 's/^capacity = 2000$/capacity = 2000\nbucket_size = 2/' "$CONF"
checks=$((checks + 1))
"$SHMCTL" -i rl reload >"$ROOT/out" 2>"$ROOT/err"
rc=$?
[ "$rc" -eq 1 ] || fail "shmctl reload of a refused bucket size exited $rc, want 1: $(cat "$ROOT/err")"
grep -q "filter 'b': bucket_size 2 in the configuration, 4 live: refused" "$ROOT/out" ||
	fail "shmctl reload does not refuse the bucket size change: $(cat "$ROOT/out")"
check "the refused filter keeps its buckets of 4" bash -c "'$SHMCTL' -i rl info b | grep -Eq '^bucket_size +4$'"
cp "$ROOT/good.conf" "$CONF"

# SIGTERM: socket and pidfile removed; remove_on_exit (applied live) removes the instance.
kill "$PID"
check "SIGTERM stops shmd" wait_for gone "$PID"
check "SIGTERM removed the socket" bash -c "[ ! -e '$SHMF_RUNTIME_DIR/rl.sock' ]"
check "SIGTERM removed the pidfile" bash -c "[ ! -e '$SHMF_RUNTIME_DIR/rl.pid' ]"
check "remove_on_exit, set by a reload, removed the instance" bash -c "[ ! -e '$SHMF_RUNTIME_DIR/rl' ]"

# Only real changes are listed, and the exit status says whether the
# whole file is in force: an unchanged file gives the summary alone and
# exit 0; a key read only at start (maxclients, [defaults]) is said to need
# a restart (exit 1); a new group is one line, not also a roles change.
# reload_expect STATUS: shmctl reload must exit STATUS.
reload_expect() {
	checks=$((checks + 1))
	"$SHMCTL" -i rq reload >"$ROOT/out" 2>"$ROOT/err"
	local rc=$?
	[ "$rc" -eq "$1" ] || fail "shmctl reload ($2): exit $rc, want $1: $(cat "$ROOT/out" "$ROOT/err")"
}
printf '[instance]\nname = rq\nlog_file = %s\n\n[filter q]\ncapacity = 1000\nfpr = 0.01\n' "$ROOT/rq.log" >"$ROOT/rq.conf"
"$SHMD" -c "$ROOT/rq.conf" || fail "shmd -c rq.conf exited $?"
PIDS+=("$(cat "$SHMF_RUNTIME_DIR/rq.pid")")
reload_expect 0 "an unchanged file"
check "an unchanged file: the summary alone" bash -c "[ \"\$(cat '$ROOT/out')\" = '$ROOT/rq.conf: 0 filters created, 0 changes applied, 0 refused, 0 need a restart' ]"
check "an unchanged file: nothing on stderr" bash -c "[ ! -s '$ROOT/err' ]"
reload_expect 0 "an unchanged file, again"
check "an unchanged file, again: the summary alone" bash -c "[ \$(wc -l <'$ROOT/out') -eq 1 ]"
sed -i 's/^name = rq$/name = rq\nmaxclients = 50/' "$ROOT/rq.conf"
printf '[defaults]\nbloom_capacity = 500\n' >>"$ROOT/rq.conf"
reload_expect 1 "maxclients and [defaults] changed"
check "maxclients: needs a restart" grep -qx "\[instance\] maxclients 1024 -> 50: needs a restart; not applied" "$ROOT/out"
check "[defaults]: needs a restart" grep -qx "\[defaults\] changed: needs a restart; not applied" "$ROOT/out"
check "the summary counts both" grep -q "0 refused, 2 need a restart$" "$ROOT/out"
check "stderr says 2 need a restart" grep -q "0 changes refused, 2 need a restart" "$ROOT/err"
if [ "$(id -u)" -eq 0 ] && getent group daemon >/dev/null; then
	printf '[instance]\nname = rq\nlog_file = %s\ngroup = daemon\n\n[filter q]\ncapacity = 1000\nfpr = 0.01\n' \
		"$ROOT/rq.log" >"$ROOT/rq.conf"
	reload_expect 0 "a new group"
	check "a new group: one line for it" grep -qx "\[instance\] group (none) -> daemon: for the permissions pass" "$ROOT/out"
	check "a new group: no roles line" bash -c "! grep -q '^\[roles\]' '$ROOT/out'"
	check "a new group: the files follow" bash -c "[ \"\$(stat -c %G '$SHMF_RUNTIME_DIR/rq/control')\" = daemon ]"
	reload_expect 0 "the same group again"
	check "the same group again: the summary alone" bash -c "[ \$(wc -l <'$ROOT/out') -eq 1 ]"
fi
kill "$(cat "$SHMF_RUNTIME_DIR/rq.pid")"

# --log-level wins over the file; foreground logs go to stderr.
printf '[instance]\nname = lv\nlog_level = debug\n' >"$CONF"
"$SHMD" -f -c "$CONF" --log-level error 2>"$ROOT/fg.err" &
FPID=$!
PIDS+=("$FPID")
wait_for test -S "$SHMF_RUNTIME_DIR/lv.sock" || fail "shmd -f -c ... --log-level error did not start"
kill "$FPID"
wait "$FPID"
checks=$((checks + 1))
[ -s "$ROOT/fg.err" ] && fail "--log-level error still logs: $(head -3 "$ROOT/fg.err")"
"$SHMD" -f -i lv2 2>"$ROOT/fg.err" &
FPID=$!
PIDS+=("$FPID")
wait_for test -S "$SHMF_RUNTIME_DIR/lv2.sock"
kill "$FPID"
wait "$FPID"
check "the foreground logs plain lines to stderr" grep -Eq '^[0-9T:-]+ shmd\[info\]: listening on ' "$ROOT/fg.err"

# journald: when JOURNAL_STREAM names stderr, "<N>message" lines.
: >"$ROOT/journal"
JOURNAL_STREAM=$(stat -c '%d:%i' "$ROOT/journal") "$SHMD" -f -i jr 2>>"$ROOT/journal" &
FPID=$!
PIDS+=("$FPID")
wait_for test -S "$SHMF_RUNTIME_DIR/jr.sock"
kill "$FPID"
wait "$FPID"
check "journald format: priority prefix, no time stamp" grep -q '^<6>listening on ' "$ROOT/journal"
check "journald format: every line has a priority prefix" bash -c "! grep -vq '^<[0-7]>' '$ROOT/journal'"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
