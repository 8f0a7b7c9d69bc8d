#!/bin/bash
# test-example.sh - the README's C example (examples/dedupe-worker.c),
# built against libshmf.so, against a real shmd: keys are new once, seen by
# every later process, and visible to shmctl.
# Usage: test-example.sh PATH-TO-SHMD PATH-TO-SHMCTL PATH-TO-DEDUPE-WORKER
set -u
SHMD=$1 SHMCTL=$2 WORKER=$3
ROOT=$(mktemp -d /dev/shm/shmf-example-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$ROOT"' EXIT
"$SHMD" -f 2>"$ROOT/log" &
PID=$!
for _ in $(seq 100); do [ -S "$ROOT/default.sock" ] && break; sleep 0.1; done

status=0
out1=$("$WORKER" click:1 click:2 click:1) || status=1
out2=$("$WORKER" click:2 click:3) || status=1
want1=$(printf '%-24s %s\n' click:1 'first time' click:2 'first time' click:1 'seen before')
want2=$(printf '%-24s %s\n' click:2 'seen before' click:3 'first time')
[ "$(echo "$out1" | head -3)" = "$want1" ] || { echo "first worker printed: $out1" >&2; status=1; }
[ "$(echo "$out2" | head -2)" = "$want2" ] || { echo "second worker printed: $out2" >&2; status=1; }
echo "$out2" | grep -q "^filter 'default': 3 keys in " || { echo "info line wrong: $out2" >&2; status=1; }
"$SHMCTL" check -q default click:1 click:2 click:3 >/dev/null || { echo "shmctl does not see the worker's keys" >&2; status=1; }
"$WORKER" -f nosuch k 2>"$ROOT/err"
[ $? -eq 2 ] && grep -q "filter 'nosuch': .*not found\|filter 'nosuch': no such filter" "$ROOT/err" || { echo "unknown filter: $(cat "$ROOT/err")" >&2; status=1; }
echo "example: $([ $status -eq 0 ] && echo ok || echo FAILED)"
exit $status
