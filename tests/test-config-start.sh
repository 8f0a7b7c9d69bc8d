#!/bin/bash
# test-config-start.sh - where shmd's configuration comes from and what it
# checks before it starts:
#   - without -c, shmd reads the configuration directory's shmd.conf
#     ($SHMD_CONFIG_DIR here; /etc/shmd when installed), NAME.conf for
#     -i NAME, and the embedded default only when there is none;
#   - a relative -c is made absolute: a reload of the daemonised shmd
#     (which changed to /) reads the same file;
#   - shmd --check-config: 0 for a valid file; 2 with FILE:LINE for a
#     syntax error, a bad value, a missing snapshot_dir and a port in use;
#   - a missing snapshot_dir refuses the start (exit 2, nothing made), or
#     is made 0750 with create_dirs = yes; a reload to one is refused and
#     changes nothing;
#   - shmctl's hint, with shmd stopped, is the command it last ran with;
#   - the configuration the package installs (dist/shmd.conf) is valid;
#   - shmd --version and shmctl --version name the version and the commit.
# Usage: test-config-start.sh PATH-TO-SHMD PATH-TO-SHMCTL
set -u
SHMD=$(realpath "$1")
SHMCTL=$(realpath "$2")
ROOT=$(mktemp -d /dev/shm/shmf-cfgstart-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT/run
export SHMD_CONFIG_DIR=$ROOT/etc
mkdir -p "$SHMD_CONFIG_DIR" "$ROOT/snaps" "$ROOT/work"
PIDS=""
# shellcheck source=tests/check-lib.sh
. "$(dirname "$0")/check-lib.sh"

cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$ROOT"
}
trap cleanup EXIT

conf() { # conf FILE INSTANCE [MORE...]: an instance with filter f
	local file=$1 name=$2
	shift 2
	{
		printf '[instance]\nname = %s\n' "$name"
		[ $# -gt 0 ] && printf '%s\n' "$@"
		printf '[filter f]\ncapacity = 1000\n'
	} >"$file"
}

start_fg() { # start_fg ARGS...: shmd -f in the background, its pid in PID
	"$SHMD" -f "$@" >>"$ROOT/shmd.out" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
}

stop() { # stop PID: SIGTERM, and wait for it
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

ctl() { "$SHMCTL" "$@" 2>&1; }

# 1. The configuration directory's shmd.conf, without -c.
conf "$SHMD_CONFIG_DIR/shmd.conf" fromdir
start_fg
check "shmd without -c reads \$SHMD_CONFIG_DIR/shmd.conf (instance fromdir)" wait_for test -S "$SHMF_RUNTIME_DIR/fromdir.sock"
check "its filter f is made" bash -c "'$SHMCTL' --instance fromdir list | grep -qw f"
stop "$PID"

# 2. -i NAME reads NAME.conf.
conf "$SHMD_CONFIG_DIR/named.conf" named "remove_on_exit = true"
start_fg -i named
check "shmd -i named reads named.conf" wait_for bash -c "'$SHMCTL' --instance named list 2>/dev/null | grep -qw f"
stop "$PID"

# 3. None there: the embedded default.
rm -f "$SHMD_CONFIG_DIR"/*.conf
start_fg -i plain
check "no file: the embedded default (filter default)" wait_for bash -c "'$SHMCTL' --instance plain list 2>/dev/null | grep -qw default"
stop "$PID"

# 4. A relative -c, daemonised (shmd changes to /): a reload reads it.
conf "$ROOT/work/rel.conf" rel
(cd "$ROOT/work" && "$SHMD" -c rel.conf) || fail "shmd -c rel.conf (daemonising) exited $?"
RELPID=$(head -n 1 "$SHMF_RUNTIME_DIR/rel.pid" 2>/dev/null)
PIDS="$PIDS $RELPID"
printf '[filter g]\ncapacity = 500\n' >>"$ROOT/work/rel.conf"
out=$(ctl --instance rel reload)
check "reload of a relative -c reads the same file (filter g made): $out" bash -c "'$SHMCTL' --instance rel list | grep -qw g"

# 5. The restart hint names how it last ran.
stop "$RELPID"
kill "$RELPID" 2>/dev/null
wait_for bash -c "! kill -0 $RELPID 2>/dev/null"
out=$(ctl --instance rel ping)
check "shmctl's hint with shmd stopped names its configuration: $out" \
	grep -qF "start it with 'shmd -c $ROOT/work/rel.conf' as it last ran" <<<"$out"

# 6. --check-config.
conf "$ROOT/ok.conf" chk "snapshot_dir = $ROOT/snaps"
out=$("$SHMD" --check-config -c "$ROOT/ok.conf" 2>&1)
rc=$?
check "--check-config of a valid file: 0 and says so ($rc: $out)" bash -c "[ $rc -eq 0 ] && grep -q 'configuration is valid' <<<'$out'"
check "--check-config made nothing (no socket)" test ! -e "$SHMF_RUNTIME_DIR/chk.sock"
printf '[instance]\nname = chk\n\n[filter f]\ncapcity = 5\n' >"$ROOT/bad.conf"
out=$("$SHMD" -t -c "$ROOT/bad.conf" 2>&1)
rc=$?
check "--check-config of an unknown key: 2, FILE:LINE ($rc: $out)" bash -c "[ $rc -eq 2 ] && grep -qF '$ROOT/bad.conf:5: [filter f] unknown key' <<<'$out'"
printf '[instance]\nname = chk\nthis is no line\n' >"$ROOT/syntax.conf"
out=$("$SHMD" -t -c "$ROOT/syntax.conf" 2>&1)
rc=$?
check "--check-config of a syntax error: 2, FILE:LINE ($rc: $out)" bash -c "[ $rc -eq 2 ] && grep -qF '$ROOT/syntax.conf:3:' <<<'$out'"
conf "$ROOT/nodir.conf" chk "snapshot_dir = $ROOT/missing/snaps"
out=$("$SHMD" -t -c "$ROOT/nodir.conf" 2>&1)
rc=$?
check "--check-config of a missing snapshot_dir: 2, FILE:LINE ($rc: $out)" \
	bash -c "[ $rc -eq 2 ] && grep -qF \"$ROOT/nodir.conf:3: [instance] snapshot_dir '$ROOT/missing/snaps'\" <<<\"\$0\"" "$out"
check "--check-config made no directory" test ! -e "$ROOT/missing"
python3 -c 'import socket,sys,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >"$ROOT/port" &
HOLDER=$!
PIDS="$PIDS $HOLDER"
wait_for test -s "$ROOT/port"
PORT=$(cat "$ROOT/port")
printf '[instance]\nname = chk\n[tcp]\nenabled = yes\nrequirepass = pw\nport = %s\n' "$PORT" >"$ROOT/port.conf"
out=$("$SHMD" -t -c "$ROOT/port.conf" 2>&1)
rc=$?
check "--check-config of a port in use: 2, FILE:LINE ($rc: $out)" \
	bash -c "[ $rc -eq 2 ] && grep -qF '$ROOT/port.conf:6: [tcp] port: 127.0.0.1 port $PORT cannot be bound: Address already in use' <<<\"\$0\"" "$out"
kill "$HOLDER" 2>/dev/null

# 7. A missing snapshot_dir refuses the start; create_dirs = yes makes it.
out=$("$SHMD" -f -c "$ROOT/nodir.conf" 2>&1)
rc=$?
check "a missing snapshot_dir refuses the start: 2 ($rc: $out)" bash -c "[ $rc -eq 2 ] && grep -q 'not starting' <<<'$out'"
check "nothing made (no socket, no directory)" bash -c "[ ! -e '$SHMF_RUNTIME_DIR/chk.sock' ] && [ ! -e '$ROOT/missing' ]"
conf "$ROOT/mk.conf" mk "snapshot_dir = $ROOT/missing/snaps" "create_dirs = yes"
start_fg -c "$ROOT/mk.conf"
check "create_dirs = yes: started" wait_for test -S "$SHMF_RUNTIME_DIR/mk.sock"
check "create_dirs = yes: the directory made 0750" bash -c "[ \"\$(stat -c %a '$ROOT/missing/snaps')\" = 750 ]"
# A reload to a missing one is refused, nothing changed.
conf "$ROOT/mk.conf" mk "snapshot_dir = $ROOT/gone/snaps"
printf '[filter h]\ncapacity = 500\n' >>"$ROOT/mk.conf"
out=$(ctl --instance mk reload)
rc=$?
check "a reload to a missing snapshot_dir is refused ($rc: $out)" bash -c "[ $rc -ne 0 ] && grep -qF \"snapshot_dir '$ROOT/gone/snaps'\" <<<\"\$0\"" "$out"
check "and changes nothing (no filter h)" bash -c "! '$SHMCTL' --instance mk list | grep -qw h"
stop "$PID"

# 8. The configuration the package installs is valid as it stands.
DIST=$(cd "$(dirname "$0")/.." && pwd)/dist/shmd.conf
out=$("$SHMD" --check-config -c "$DIST" 2>&1)
check "dist/shmd.conf (/etc/shmd/shmd.conf of the package) passes --check-config: $out" \
	grep -q "configuration is valid (instance 'default', 1 filter)" <<<"$out"

# 9. Versions name the commit.
check "shmd --version names the version and commit" bash -c "'$SHMD' --version | grep -Eq '^shmd [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\)$'"
check "shmctl --version names the version and commit" bash -c "'$SHMCTL' --version | grep -Eq '^shmctl [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\)$'"

checks_done config-start
