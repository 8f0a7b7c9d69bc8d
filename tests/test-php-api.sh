#!/bin/bash
# test-php-api.sh - every method of the PHP extension's Shmf\Filter (php-cli)
# against a private shmd: answers, batches keeping the array's keys,
# persistent handles, cuckoo calls, exceptions carrying the library's
# sentence and code, bad input refused, a dropped filter reopened; and the
# PHP examples run from the command line.
# Usage: test-php-api.sh SRC-DIR BUILD-DIR
SRC=$1 BUILD=$2
NAME=php-api
. "$SRC/tests/bindings-fixture.sh"

need_packages php-cli php-dev
build_php
start_shmd
"$SHMCTL" create bloom --capacity 100000 --fpr 0.000001 --mode 0660 >/dev/null &&
	"$SHMCTL" create cuckoo --type cuckoo --capacity 1000 --fpr 0.01 >/dev/null &&
	"$SHMCTL" create tiny --type cuckoo --capacity 8 --fpr 0.01 --max-kicks 10 >/dev/null &&
	"$SHMCTL" create dropme --capacity 100 --fpr 0.01 >/dev/null &&
	"$SHMCTL" create push --type cuckoo --capacity 1000 --fpr 0.01 >/dev/null &&
	"$SHMCTL" create seen --type cuckoo --capacity 1000 --fpr 0.001 >/dev/null || { fail "shmctl create"; finish; }
checks=$((checks + 1))
SHMCTL=$SHMCTL php -n -d "extension=$PHP_EXT" "$SRC/tests/php/api.php" || fail "tests/php/api.php"

php_cli() { php -n -d "extension=$PHP_EXT" "$@"; }
statuses=$(for _ in 1 2 3 4 5 6; do php_cli "$SRC/examples/push-cap.php" dev-1 >/dev/null; echo -n "$?"; done)
check "examples/push-cap.php from the CLI: 4 sent (exit 0), then capped (exit 1): $statuses" [ "$statuses" = 000011 ]
check "examples/push-cap.php says why it capped" \
	[ "$(php_cli "$SRC/examples/push-cap.php" dev-1)" = "capped: 4 pushes to dev-1 today" ]
php_cli "$SRC/examples/push-cap.php" >/dev/null 2>"$ROOT/err"
rc=$?
check "examples/push-cap.php without a device: exit 2 (got $rc) and a usage line" \
	test $rc -eq 2 -a -n "$(grep '^usage: push-cap.php DEVICE' "$ROOT/err")"
out1=$(php_cli "$SRC/examples/seen-urls.php" alice /a /b /c | tr '\n' ' ')
out2=$(php_cli "$SRC/examples/seen-urls.php" alice /b /c /d | tr '\n' ' ')
check "examples/seen-urls.php from the CLI: '$out1' then '$out2'" [ "$out1|$out2" = "/a /b /c |/d " ]
SHMF_RUNTIME_DIR=$ROOT/nowhere php_cli "$SRC/examples/seen-urls.php" alice /a >/dev/null 2>"$ROOT/err"
check "examples/seen-urls.php with no shmd: exit 1 and the library's message: $(cat "$ROOT/err")" \
	grep -q "filter 'seen': no such filter or instance" "$ROOT/err"
finish
