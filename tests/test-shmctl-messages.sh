#!/bin/bash
# test-shmctl-messages.sh - every message a user can get from shmctl that
# we know how to cause, each checked: on stderr (stdout empty), one line,
# non-empty, naming the argument, filter or path concerned (a pattern per
# case), and for a usage error pointing at 'shmctl help VERB'. Also: help
# lists every verb and describes each; --version.
# Usage: test-shmctl-messages.sh PATH-TO-SHMD PATH-TO-SHMCTL
# Prints every message it checked (the list for the docs and the report).
set -u
SHMD=$1
SHMCTL=$(realpath "$2")
ROOT=$(mktemp -d /dev/shm/shmf-messages-XXXXXX)
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

# msg KIND STATUS PATTERN -- ARGS...: run shmctl ARGS (in $ROOT, stdin
# from $STDIN or /dev/null, as $AS if set); KIND usage: also points at
# the verb's help. PATTERN (grep -E) must match the one line.
msg() {
	local kind=$1 want_rc=$2 pattern=$3
	shift 4
	checks=$((checks + 1))
	(cd "$ROOT" && ${AS:-} "$SHMCTL" "$@" >"$ROOT/out" 2>"$ROOT/err" <"${STDIN:-/dev/null}")
	local rc=$? text
	text=$(cat "$ROOT/err")
	echo "[$kind] shmctl $* -> $text"
	[ "$rc" -eq "$want_rc" ] || fail "shmctl $*: exit $rc, want $want_rc"
	[ -s "$ROOT/out" ] && fail "shmctl $*: a message on stdout: $(head -c 200 "$ROOT/out")"
	[ -n "$text" ] || { fail "shmctl $*: no message"; return; }
	[ "$(wc -l <"$ROOT/err")" -eq 1 ] || fail "shmctl $*: the message is not one line: $text"
	grep -Eq -- "$pattern" "$ROOT/err" || fail "shmctl $*: the message lacks /$pattern/: $text"
	grep -q "^shmctl: " "$ROOT/err" || fail "shmctl $*: the message does not start with 'shmctl: ': $text"
	if [ "$kind" = usage ]; then
		local verb=${1:-} see="see 'shmctl help'"
		case "$verb" in -* | "") ;; *) "$SHMCTL" help "$verb" >/dev/null 2>&1 && see="see 'shmctl help $verb'" ;; esac
		grep -qF -- "($see)" "$ROOT/err" || fail "shmctl $*: a usage error without ($see): $text"
	fi
}

# --- usage errors: one line, what was missing or wrong, where the help is ---
msg usage 2 "no verb given" --
msg usage 2 "unknown verb 'frobnicate'" -- frobnicate
msg usage 2 "unknown option '--bogus'" -- --bogus ping
msg usage 2 "option '--instance' needs a value" -- --instance
msg usage 2 "--instance '\.\./x': not a valid instance name" -- --instance ../x ping
msg usage 2 "create: missing FILTER" -- create
msg usage 2 "create: missing --capacity N.*'x'" -- create x
msg usage 2 "create: missing --fpr P.*'x'" -- create x --capacity 10
msg usage 2 "create: --capacity needs a value" -- create x --capacity
msg usage 2 "create: unknown option '--bogus'" -- create x --capacity 10 --fpr 0.1 --bogus
msg usage 2 "create: unexpected argument 'y'" -- create x y --capacity 10 --fpr 0.1
msg usage 2 "create: unknown --type 'quotient' \(bloom or cuckoo\)" -- create x --type quotient --capacity 10 --fpr 0.1
msg usage 2 "create: --max-kicks applies to --type cuckoo only" -- create x --capacity 10 --fpr 0.1 --max-kicks 3
msg usage 2 "info: missing FILTER" -- info
msg usage 2 "info: unexpected argument 'b'" -- info a b
msg usage 2 "list: unexpected argument 'x'" -- list x
msg usage 2 "add: missing FILTER and the keys" -- add
msg usage 2 "add: missing the keys after 'f'" -- add f
msg usage 2 "add: unknown option '-z'" -- add -z f k
msg usage 2 "add: unknown option '-z' \\(a key that starts with '-' goes after --\\)" -- add f k -z
msg usage 2 "check: missing the keys after 'f'" -- check -q f
msg usage 2 "del: missing the keys after 'f'" -- del f --
msg usage 2 "count: missing FILTER" -- count
msg usage 2 "add-capped: missing --cap N" -- add-capped f k
msg usage 2 "add-capped: --cap 'x' is not an integer" -- add-capped --cap x f k
msg usage 2 "add-capped: --cap needs a value" -- add-capped --cap
msg usage 2 "drop: missing FILTER" -- drop
msg usage 2 "drop: unexpected argument 'b'" -- drop a b
msg usage 2 "rotate: missing FILTER" -- rotate
msg usage 2 "ping: unexpected argument 'x'" -- ping x
msg usage 2 "snapshot: missing FILTER and FILE" -- snapshot
msg usage 2 "snapshot: missing FILE.*'f'" -- snapshot f
msg usage 2 "swap: unexpected argument 'b'" -- swap f a b
msg usage 2 "restore: missing FILE.*'f'" -- restore f
msg usage 2 "merge: missing FILE.*'f'" -- merge f
msg usage 2 "inspect: missing FILE" -- inspect
msg usage 2 "inspect: unexpected argument 'b'" -- inspect a b
msg usage 2 "build: missing --fpr P" -- build --capacity 10
msg usage 2 "build: --type 'x': must be bloom, cuckoo or static" -- build --type x
msg usage 2 "build: unknown option '--bogus'" -- build --bogus
msg usage 2 "build: --capacity needs a value" -- build --capacity
msg usage 2 "build: unexpected argument 'stray'" -- build --capacity 10 --fpr 0.1 --from - -o x stray
msg usage 2 "replication: unexpected argument 'b'" -- replication a b
msg usage 2 "pull: missing FILTER" -- pull
msg usage 2 "pull: missing --from HOST:PORT" -- pull f
msg usage 2 "pull: unknown option '--bogus'" -- pull f --bogus
msg usage 2 "pull: --user needs --password" -- pull f --from h:1 --user u
msg usage 2 "reload: unexpected argument 'x'" -- reload x
msg usage 2 "help: unexpected argument 'b'" -- help a b

# --- no daemon: the hint only where the socket is missing ------------------
msg refusal 2 "cannot connect to $ROOT/run/default\.sock: No such file or directory \(is shmd running for instance 'default'\? start it with 'shmd -i default'" -- ping
msg refusal 2 "cannot connect to $ROOT/run/other\.sock.*instance 'other'" -- -i other info x
msg refusal 2 "cannot connect to $ROOT/nowhere\.sock: No such file or directory \(is shmd listening on $ROOT/nowhere\.sock\?\)$" -- --socket "$ROOT/nowhere.sock" ping
# A socket nobody listens on (left by a killed daemon): refused, same hint.
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$ROOT/stale.sock"
msg refusal 2 "cannot connect to $ROOT/stale\.sock: Connection refused \(is shmd listening on $ROOT/stale\.sock\?\)" -- --socket "$ROOT/stale.sock" ping
# A server that refuses with a message, and one that closes without one.
python3 - "$ROOT" <<'PY' &
import os, socket, sys, threading
root = sys.argv[1]
def serve(path, reply):
    s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(8)
    while True:
        c, _ = s.accept()
        if reply: c.sendall(reply)
        c.close()
for path, reply in (("full.sock", b"-ERR max number of clients reached\r\n"), ("mute.sock", b"")):
    threading.Thread(target=serve, args=(os.path.join(root, path), reply), daemon=True).start()
threading.Event().wait(60)
PY
PIDS+=($!)
disown
for _ in $(seq 100); do [ -S "$ROOT/mute.sock" ] && break; sleep 0.05; done
msg refusal 2 "ping: (connection refused by shmd: )?max number of clients reached" -- --socket "$ROOT/full.sock" ping
msg refusal 2 "ping: shmd closed the connection without a reply" -- --socket "$ROOT/mute.sock" ping

# --- with a daemon: refusals name the filter, key, file or path -------------
mkdir -p "$SHMF_RUNTIME_DIR"
"$SHMD" -f 2>"$ROOT/shmd.log" &
PIDS+=($!)
disown
for _ in $(seq 200); do [ -S "$SHMF_RUNTIME_DIR/default.sock" ] && break; sleep 0.05; done
"$SHMCTL" create -q bf --capacity 1000 --fpr 0.01 || fail "create bf"
"$SHMCTL" create -q tiny --type cuckoo --capacity 8 --fpr 0.01 || fail "create tiny"
echo k >"$ROOT/keys.txt"
"$SHMCTL" snapshot bf "$ROOT/bf.snap" >/dev/null || fail "snapshot bf"
msg refusal 2 "create: filter 'bf' exists already \(bloom, capacity 1000, error rate 0.01, [0-9]+ bytes, mode 0640\): see it with 'shmctl info bf'; to make it anew, 'shmctl drop bf' first" -- create bf --capacity 10 --fpr 0.1
msg refusal 2 "create: .*capacity must be in the range" -- create z --capacity 0 --fpr 0.1
msg refusal 2 "create: .*error rate must be in the range" -- create z --capacity 10 --fpr 2
msg refusal 2 "create: invalid filter name 'a/b'" -- create a/b --capacity 10 --fpr 0.1
msg refusal 2 "create: bad MODE '0666'" -- create z --capacity 10 --fpr 0.1 --mode 0666
msg refusal 2 "create: bad WINDOW '5w'" -- create z --capacity 10 --fpr 0.1 --window 5w
msg refusal 2 "info: filter 'nosuch' not found \('shmctl list' shows the filters there are\)" -- info nosuch
msg refusal 2 "add: filter 'nosuch' not found \('shmctl list'" -- add nosuch k
msg refusal 2 "check: filter 'nosuch' not found \('shmctl list'" -- check nosuch k
msg refusal 2 "drop: filter 'nosuch' not found" -- drop nosuch
msg refusal 2 "add: 'keys.txt' is a file here; to add its lines, use 'shmctl add bf - < keys.txt'; to take the name itself as a key, put -- before the keys" -- add bf keys.txt
msg refusal 2 "check: 'keys.txt' is a file here; to check its lines, use 'shmctl check bf - < keys.txt'" -- check bf keys.txt
msg refusal 2 "del: filter 'bf' is a Bloom filter; del works on cuckoo filters only" -- del bf k
seq 1 100 >"$ROOT/many"
STDIN=$ROOT/many msg refusal 2 "add: filter 'tiny' is full: [0-9]+ of 100 keys added" -- add tiny -
msg refusal 2 "rotate: filter 'bf' has no time window to rotate" -- rotate bf
msg refusal 2 "swap: filter 'nosuch' not found \(swap replaces a live filter; restore creates one\)" -- swap nosuch "$ROOT/bf.snap"
msg refusal 2 "swap: .*$ROOT/nonexistent\.snap" -- swap bf "$ROOT/nonexistent.snap"
msg refusal 2 "swap: .*$ROOT/keys\.txt" -- swap bf "$ROOT/keys.txt"
msg refusal 2 "snapshot: snapshot /nonexistent-dir/x\.snap: cannot open directory /nonexistent-dir" -- snapshot bf /nonexistent-dir/x.snap
msg refusal 2 "inspect: .*$ROOT/keys\.txt" -- inspect "$ROOT/keys.txt"
msg refusal 2 "inspect: .*$ROOT/none\.snap" -- inspect "$ROOT/none.snap"
msg refusal 2 "build: cannot open $ROOT/none" -- build --capacity 10 --fpr 0.01 --from "$ROOT/none" -o "$ROOT/x.snap"
msg refusal 2 "replication: filter 'bf' does not replicate \(shmd's configuration has no \[replication\] section\)" -- replication bf
msg refusal 2 "reload: .*no file to reload \(start it with -c FILE\)" -- reload
msg refusal 2 "pull: --from 'nope': HOST:PORT expected" -- pull bf --from nope
msg refusal 2 "pull: cannot connect to peer 127\.0\.0\.1:1: .*\[tcp\] listener" -- pull bf --from 127.0.0.1:1
msg refusal 2 "help: no verb 'nosuch' \(see 'shmctl help' for the list\)" -- help nosuch
# -- takes file names as keys: no refusal, and -q says nothing.
checks=$((checks + 1))
(cd "$ROOT" && "$SHMCTL" add -q bf -- keys.txt >"$ROOT/out" 2>"$ROOT/err") || fail "add -q bf -- keys.txt: exit $?"
[ -s "$ROOT/out" ] || [ -s "$ROOT/err" ] && fail "add -q printed: $(cat "$ROOT/out" "$ROOT/err")"
"$SHMCTL" check -q bf keys.txt -- 2>/dev/null # (a key named '--' after the keys is a key)
checks=$((checks + 1))
"$SHMCTL" check -q bf -- keys.txt || fail "the key 'keys.txt' added with -- is not found"

# --- permission denied: the path, the user, what to change (root only) ----
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	chmod 0755 "$ROOT" "$SHMF_RUNTIME_DIR"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups" \
		msg refusal 2 "cannot connect to $SHMF_RUNTIME_DIR/default\.sock: permission denied for user [a-z]+ \(uid 65534, gid 65534\) \($SHMF_RUNTIME_DIR/default\.sock is root:root, mode 0660\).*socket_mode and group in \[instance\]" -- ping
else
	echo "(not root: the permission message is not checked)"
fi

# --- help and version -----------------------------------------------------------
checks=$((checks + 1))
"$SHMCTL" --version | grep -Eq '^shmctl [0-9]' || fail "shmctl --version"
checks=$((checks + 1))
verbs=$("$SHMCTL" help | sed -n '/^Verbs:/,/^$/p' | awk 'NF > 1 {print $1}')
[ "$(echo "$verbs" | wc -w)" -ge 20 ] || fail "shmctl help lists too few verbs: $verbs"
for v in $verbs; do
	checks=$((checks + 1))
	"$SHMCTL" help "$v" >"$ROOT/out" 2>&1 || fail "shmctl help $v exited $?"
	head -1 "$ROOT/out" | grep -q "^usage: shmctl .* $v" || fail "shmctl help $v: $(head -1 "$ROOT/out")"
done
checks=$((checks + 1))
"$SHMCTL" --help | grep -q "^  reload " || fail "shmctl --help does not list reload"

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
