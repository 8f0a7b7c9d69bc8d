#!/bin/bash
# test-php-fpm.sh - the PHP extension inside real PHP-FPM: a static pool of
# 4 workers (as www-data when run as root) behind nginx over FastCGI, driven
# by bursts of concurrent HTTP requests, against a private shmd.
# Usage: test-php-fpm.sh SRC-DIR BUILD-DIR workers|swap|examples
#   workers   a key added through any worker is seen by every worker; each
#             worker opens the filter once and keeps it across requests
#   swap      a filter swapped in with shmctl build + shmctl swap is seen by
#             the same workers (no FPM restart), through the same handles
#   examples  examples/push-cap.php lets exactly 4 of 40 concurrent pushes
#             to one device through, and again after its daily reset (a
#             swap); examples/seen-urls.php never shows a user a URL twice
SRC=$1 BUILD=$2 MODE=$3
NAME=php-fpm-$MODE
. "$SRC/tests/bindings-fixture.sh"

need_packages php-fpm php-dev nginx curl
build_php
start_shmd
mkdir -p "$ROOT/www"
cp "$SRC/tests/php/fpm-app.php" "$SRC/examples/seen-urls.php" "$SRC/examples/push-cap.php" "$ROOT/www/"
chmod -R a+rX "$ROOT/www"
start_fpm
PORT=$(free_port)
start_nginx "server {
		listen 127.0.0.1:$PORT;
		root $ROOT/www;
		location ~ \.php\$ {
			include /etc/nginx/fastcgi_params;
			fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
			fastcgi_pass unix:$ROOT/fpm.sock;
		}
	}"
APP=http://127.0.0.1:$PORT/fpm-app.php

# pids FILE...: the distinct pids that start the lines of the answers.
pids() { cat "$@" 2>/dev/null | awk '{print $1}' | sort -u; }
count() { echo "$1" | grep -c .; }

# states: 40 state requests held 50 ms each, so that every worker answers
# some; sets STATE_PIDS and leaves the answers in $ROOT/state.
states() {
	rm -rf "$ROOT/state"
	local urls=()
	for i in $(seq 40); do urls+=("$APP?op=state&filter=clicks&sleep=50&i=$i"); done
	burst "$ROOT/state" "${urls[@]}"
	STATE_PIDS=$(pids "$ROOT/state"/[0-9]*)
}

# Add 400 keys through the pool, 16 requests at a time, each request held
# 5 ms so that all four workers take a share. Every key is new.
add_keys() {
	local urls=()
	for i in $(seq 400); do urls+=("$APP?op=add&filter=clicks&k=$1$i&sleep=5"); done
	burst "$ROOT/adds" "${urls[@]}"
	check "400 adds answered 200" [ "$(grep -c '^200 ' "$ROOT/adds/codes")" -eq 400 ]
	check "every add reported its key new" [ "$(cat "$ROOT"/adds/[0-9]* | grep -c ' 1$')" -eq 400 ]
	ADD_PIDS=$(pids "$ROOT"/adds/[0-9]*)
	check "the adds were spread over the 4 workers (got: $(echo $ADD_PIDS))" [ "$(count "$ADD_PIDS")" -eq 4 ]
}

# check_keys PREFIX N WANT: 40 requests held 20 ms each, each checking keys
# PREFIX1..PREFIXN with one checkMany; every answer must be WANT (a number,
# or "max:M" for at most M).
check_keys() {
	local prefix=$1 n=$2 want=$3 urls=() dir=$ROOT/check-$1
	for i in $(seq 40); do urls+=("$APP?op=check&filter=clicks&prefix=$prefix&n=$n&sleep=20&i=$i"); done
	burst "$dir" "${urls[@]}"
	check "40 checks of $prefix* answered 200" [ "$(grep -c '^200 ' "$dir/codes")" -eq 40 ]
	CHECK_PIDS=$(pids "$dir"/[0-9]*)
	check "the checks of $prefix* reached the 4 workers (got: $(echo $CHECK_PIDS))" [ "$(count "$CHECK_PIDS")" -eq 4 ]
	local got
	got=$(cat "$dir"/[0-9]* | awk '{print $3}' | sort -u)
	case $want in
	max:*) check "checks of $n absent keys $prefix* found at most ${want#max:} (got: $(echo $got))" \
		awk -v m="${want#max:}" '{ if ($1 > m) exit 1 }' <<<"$got" ;;
	*) check "every worker found $want of $n keys $prefix* (got: $(echo $got))" [ "$got" = "$want" ] ;;
	esac
}

"$SHMCTL" create clicks --capacity 10000 --fpr 0.000001 --mode 0660 >/dev/null ||
	{ fail "shmctl create clicks"; finish; }

case $MODE in
workers)
	add_keys key-
	# Each worker checks all 400 keys, a quarter of them or so added by
	# each of the other three: the adds of every worker are seen by all.
	check_keys key- 400 400
	check "the same 4 workers added and checked" [ "$ADD_PIDS" = "$CHECK_PIDS" ]
	check_keys absent- 400 max:1
	# Each worker kept the handles its earlier requests opened (one for
	# adds, one for checks), each opened exactly once.
	states
	check "every worker answered a state request (got: $(echo $STATE_PIDS))" [ "$STATE_PIDS" = "$ADD_PIDS" ]
	check "each worker kept 2 handles opened once each: $(cat "$ROOT"/state/[0-9]* | sort -u | tr '\n' ';')" \
		[ "$(cat "$ROOT"/state/[0-9]* | awk '{print $4, $6}' | sort -u)" = "2 2" ]
	# Errors reach PHP as Shmf\Exception with the library's sentence.
	curl -s -o "$ROOT/err" "$APP?op=add&filter=nosuch&k=x"
	check "a missing filter is an exception naming it: $(cat "$ROOT/err")" \
		grep -q "exception -5001 filter 'nosuch': no such filter or instance" "$ROOT/err"
	;;
swap)
	add_keys key-
	check_keys key- 400 400
	states
	gen1=$(cat "$ROOT"/state/[0-9]* | awk '{print $8}' | sort -u)
	check "one generation before the swap (got: $(echo $gen1))" [ "$(count "$gen1")" -eq 1 ]
	seq 1 300 | sed 's/^/trained-/' >"$ROOT/trained.keys"
	check "shmctl build" "$SHMCTL" build --type bloom --capacity 10000 --fpr 0.000001 --from "$ROOT/trained.keys" -o "$ROOT/trained.snap"
	check "shmctl swap" "$SHMCTL" swap clicks "$ROOT/trained.snap"
	check_keys trained- 300 300
	check "the same 4 workers see the swapped filter (no restart)" [ "$CHECK_PIDS" = "$ADD_PIDS" ]
	check_keys key- 400 max:1
	states
	gen2=$(cat "$ROOT"/state/[0-9]* | awk '{print $8}' | sort -u)
	check "every worker maps the new generation (before: $gen1, after: $(echo $gen2))" \
		test "$(count "$gen2")" -eq 1 -a "$gen2" -gt "$gen1"
	check "the workers followed the swap through the handles they had, no reopen: $(cat "$ROOT"/state/[0-9]* | sort -u | tr '\n' ';')" \
		[ "$(cat "$ROOT"/state/[0-9]* | awk '{print $4, $6}' | sort -u)" = "2 2" ]
	;;
examples)
	# As examples/push-cap.php says: the day is the filter's window.
	"$SHMCTL" create push --type cuckoo --capacity 10000 --fpr 0.01 --mode 0660 --window 1d --generations 1 >/dev/null &&
		"$SHMCTL" create seen --type cuckoo --capacity 10000 --fpr 0.001 --mode 0660 >/dev/null ||
		{ fail "shmctl create push, seen"; finish; }
	urls=()
	for i in $(seq 40); do urls+=("http://127.0.0.1:$PORT/push-cap.php?device=dev-42&i=$i"); done
	burst "$ROOT/push" "${urls[@]}"
	check "push-cap: exactly 4 of 40 concurrent pushes to one device sent (got $(grep -c '^200 ' "$ROOT/push/codes"))" \
		[ "$(grep -c '^200 ' "$ROOT/push/codes")" -eq 4 ]
	check "push-cap: the other 36 capped with 429" [ "$(grep -c '^429 ' "$ROOT/push/codes")" -eq 36 ]
	check "push-cap: another device is not capped" \
		[ "$(curl -s "http://127.0.0.1:$PORT/push-cap.php?device=dev-43")" = "sent" ]
	check "push-cap: the filter holds 4 copies for dev-42" \
		[ "$("$SHMCTL" count push dev-42 | cut -f1)" = "4" ]
	check "push-cap: the filter is the 1-day, 1-generation window the example asks for" \
		sh -c "'$SHMCTL' info push | grep -Eq '^window_secs +86400\$' && '$SHMCTL' info push | grep -Eq '^window_generations +1\$'"

	# The next day: the window turns (shmctl rotate stands in for 24 h) and
	# dev-42 may push again, 4 times.
	"$SHMCTL" rotate push >/dev/null || fail "shmctl rotate push"
	check "push-cap: after the window turns dev-42 may push again" \
		[ "$(curl -s "http://127.0.0.1:$PORT/push-cap.php?device=dev-42")" = "sent" ]
	check "push-cap: the new day counts from 1 (the old day's 4 copies are gone)" \
		[ "$("$SHMCTL" count push dev-42 | cut -f1)" = "1" ]

	seen() { curl -s --globoff "http://127.0.0.1:$PORT/seen-urls.php?user=$1&n=3&url[]=/a&url[]=/b&url[]=/c&url[]=/d&url[]=/e" | tr '\n' ' '; }
	check "seen-urls: a new user gets the first 3" [ "$(seen u1)" = "/a /b /c " ]
	check "seen-urls: then the 2 not shown yet" [ "$(seen u1)" = "/d /e " ]
	check "seen-urls: then nothing" [ "$(seen u1)" = "" ]
	check "seen-urls: another user starts afresh" [ "$(seen u2)" = "/a /b /c " ]
	# 20 concurrent requests of one user over the 4 workers: each URL
	# shown once in all.
	urls=()
	for i in $(seq 20); do urls+=("http://127.0.0.1:$PORT/seen-urls.php?user=u3&n=2&url[]=/a&url[]=/b&url[]=/c&url[]=/d&url[]=/e&i=$i"); done
	burst "$ROOT/seen" "${urls[@]}"
	check "seen-urls: 20 concurrent requests of one user showed each of 5 URLs once: $(cat "$ROOT"/seen/[0-9]* | sort | tr '\n' ' ')" \
		[ "$(cat "$ROOT"/seen/[0-9]* | sort | tr '\n' ' ')" = "/a /b /c /d /e " ]
	;;
*)
	echo "usage: $0 SRC-DIR BUILD-DIR workers|swap|examples" >&2
	exit 2
	;;
esac
finish
