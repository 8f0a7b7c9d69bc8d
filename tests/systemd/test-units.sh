#!/bin/bash
# test-units.sh verify|security TESTED-UNITS-DIR INSTALLED-UNITS-DIR
#
# dist/systemd's units through systemd's own systemd-analyze (Debian's
# systemd package, scripts/install-deps.sh):
#   verify    every unit passes "systemd-analyze verify" with no message at
#             all (verify exits 0 on a warning such as an unknown key, so
#             silence is the test), the template as an instance
#             (shmd@test.service); a copy with one error each makes verify
#             speak; and the installed units are the tested ones but for
#             ExecStart's path.
#   security  "systemd-analyze security --offline=true": shmd.service and
#             an instance of shmd@.service expose no more than Debian's
#             /lib/systemd/system/redis-server.service, both scored now.
# TESTED-UNITS-DIR holds copies running the build's shmd (tests/systemd/
# in the build directory), INSTALLED-UNITS-DIR what meson installs.
# Prints each check and "N passed, N failed".
set -u
mode=$1 tested=$2 installed=$3
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze (Debian's systemd; scripts/install-deps.sh)" >&2; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { # check WHAT CONDITION [DETAIL]
	if [ "$2" = 0 ]; then
		echo "ok - $1"
		passed=$((passed + 1))
	else
		echo "FAIL - $1${3:+
    $3}"
		failed=$((failed + 1))
	fi
}

# A directory holding the three units, the template as instance "test".
lay_out() { # lay_out DIR FROM-DIR
	mkdir -p "$1"
	cp "$2/shmd.service" "$2/run-shmd.mount" "$1/"
	cp "$2/shmd@.service" "$1/shmd@test.service"
}

verify() { # verify UNIT-PATH: prints what verify said, returns its status
	systemd-analyze verify --man=no "$1" 2>&1
}

mode_verify() {
	lay_out "$work/ok" "$tested"
	for u in shmd.service shmd@test.service run-shmd.mount; do
		out=$(verify "$work/ok/$u")
		rc=$?
		check "systemd-analyze verify $u: exit 0, no message" "$([ $rc = 0 ] && [ -z "$out" ]; echo $?)" "status $rc: $out"
	done
	grep -q "^ExecStart=$(grep -o '^ExecStart=[^ ]*' "$tested/shmd.service" | cut -d= -f2) -f -i %i$" "$tested/shmd@.service"
	check "the instance unit runs shmd -f -i %i" $?
	# Each broken copy must make verify speak.
	local n=0
	while IFS='|' read -r what sedexpr; do
		n=$((n + 1))
		lay_out "$work/bad$n" "$tested"
		sed -i "$sedexpr" "$work/bad$n/shmd.service"
		if cmp -s "$work/bad$n/shmd.service" "$work/ok/shmd.service"; then
			check "broken copy ($what) differs from the unit" 1 "sed '$sedexpr' changed nothing"
			continue
		fi
		out=$(verify "$work/bad$n/shmd.service")
		rc=$?
		check "systemd-analyze verify speaks up on $what" "$([ $rc != 0 ] || [ -n "$out" ]; echo $?)" "status $rc, no message"
		[ -n "$out" ] && echo "    verify said: $(echo "$out" | head -n 1)"
	done <<'CASES'
an unknown key|s/^ProtectSystem=strict/ProtectSytem=strict/
a bad Type=|s/^Type=notify/Type=notfy/
a missing program|s|^ExecStart=[^ ]*|ExecStart=/nonexistent/shmd|
a missing required unit|s/^Requires=run-shmd.mount/Requires=run-shmdx.mount/
an unknown system call group|s/^SystemCallFilter=@chown/SystemCallFilter=@chwn/
a bad boolean|s/^NoNewPrivileges=yes/NoNewPrivileges=maybe/
CASES
	for u in shmd.service shmd@.service; do
		d=$(diff <(grep -v '^ExecStart=' "$tested/$u") <(grep -v '^ExecStart=' "$installed/$u"))
		check "installed $u is the tested one but for ExecStart" "$([ -z "$d" ]; echo $?)" "$d"
		grep -q '^ExecStart=/.*/shmd -f' "$installed/$u"
		check "installed $u runs an absolute path to shmd -f" $?
	done
}

score() { # score UNIT-PATH: the overall exposure times 10 (1.2 -> 12)
	systemd-analyze security --offline=true "$1" 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9]*\)\.\([0-9]\).*/\1\2/p'
}

mode_security() {
	redis=/lib/systemd/system/redis-server.service
	[ -f "$redis" ] || { echo "no $redis (Debian's redis-server; scripts/install-deps.sh)" >&2; exit 77; }
	lay_out "$work/inst" "$installed"
	r=$(score "$redis")
	check "redis-server.service is scored" "$([ -n "$r" ]; echo $?)"
	for u in shmd.service shmd@test.service; do
		s=$(score "$work/inst/$u")
		echo "    exposure: $u ${s:0:-1}.${s: -1}, redis-server.service ${r:0:-1}.${r: -1}"
		check "$u exposes no more than redis-server.service" "$([ -n "$s" ] && [ -n "$r" ] && [ "$s" -le "$r" ]; echo $?)" \
			"$u $s, redis-server.service $r (tenths)"
	done
}

"mode_$mode"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
