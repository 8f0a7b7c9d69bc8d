#!/bin/bash
# test-nginx-module.sh - ngx_http_shmf_module in Debian's nginx (2 workers,
# as www-data when run as root) against a private shmd, driven by bursts of
# concurrent HTTP requests.
# Usage: test-nginx-module.sh SRC-DIR BUILD-DIR block|dedupe|swap|config
#   block   requests whose key is in the filter get the configured 403,
#           others pass; keys from $arg_, $remote_addr, a header and a
#           complex value; $shmf_hit passed upstream; shmf_filter off and
#           inheritance; a filter missing at start is opened once it exists
#   dedupe  examples/click-dedupe.nginx.conf: the backend sees each click
#           once, repeats are answered 204 at the edge, by either worker;
#           on a cuckoo filter, 50 simultaneous repeats of a new click let
#           exactly one through
#   swap    a filter swapped in with shmctl build + shmctl swap is followed
#           by the same workers, without a reload
#   config  nginx -t refuses a filter without a key, an invalid name, a bad
#           parameter and a duplicate, each with a clear message
SRC=$1 BUILD=$2 MODE=$3
NAME=nginx-$MODE
. "$SRC/tests/bindings-fixture.sh"

need_packages nginx nginx-dev curl
build_nginx_module
start_shmd
LOAD="load_module $NGX_MODULE;"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT

# code URL [curl options]: the status of one request.
code() { local u=$1; shift; curl -s --globoff -o /dev/null -w '%{http_code}' "$@" "$u"; }
# body URL: the body of one request.
body() { curl -s --globoff "$1"; }
# burst_codes DIR URL...: like burst, checking that every URL got the status
# its query string announces in want=NNN.

case $MODE in
block)
	"$SHMCTL" create blocklist --capacity 10000 --fpr 0.000001 >/dev/null || { fail "shmctl create"; finish; }
	for i in $(seq 100); do echo "http://bad.example/$i"; done | "$SHMCTL" add blocklist - >/dev/null
	"$SHMCTL" add blocklist 127.0.0.2 device-666 "u7:/secret" >/dev/null
	# A static filter of the same URLs, built offline and swapped in.
	for i in $(seq 100); do echo "http://bad.example/$i"; done >"$ROOT/static.keys"
	"$SHMCTL" build --type static --capacity 100 --fpr 0.001 --from "$ROOT/static.keys" -o "$ROOT/static.snap" >/dev/null &&
		"$SHMCTL" restore staticbl "$ROOT/static.snap" >/dev/null || fail "static filter staticbl"
	start_nginx "server {
		listen 127.0.0.1:$PORT;
		shmf_filter blocklist;
		shmf_key \$arg_url;
		location /fetch { if (\$shmf_hit) { return 403; } return 200 \"fetched\n\"; }
		location /ip { shmf_key \$remote_addr; if (\$shmf_hit) { return 403; } return 200; }
		location /device { shmf_key \$http_x_device; if (\$shmf_hit) { return 403; } return 200; }
		location /pair { shmf_key \"\$arg_user:\$arg_url\"; if (\$shmf_hit) { return 403; } return 200; }
		location /value { return 200 \"[\$shmf_hit]\n\"; }
		location /off { shmf_filter off; return 200 \"[\$shmf_hit]\n\"; }
		location /proxied { proxy_set_header X-Shmf-Hit \$shmf_hit; proxy_pass $URL/backend; }
		location /backend { shmf_filter off; return 200 \"upstream saw [\$http_x_shmf_hit]\n\"; }
		location /static { shmf_filter staticbl; if (\$shmf_hit) { return 403; } return 200; }
		location /late { shmf_filter notyet; if (\$shmf_hit) { return 403; } return 200 \"[\$shmf_hit]\n\"; }
	}" "$LOAD"

	# maps_per_worker: how many mappings of the filter's data file each
	# worker has, one line per worker.
	maps_per_worker() {
		local w
		for w in $(pgrep -P "$(cat "$ROOT/nginx.pid")"); do grep -c '/blocklist\.[0-9]*\.data$' "/proc/$w/maps"; done
	}
	check "each worker mapped the filter once at start, before any request: $(maps_per_worker | tr '\n' ' ')" \
		[ "$(maps_per_worker | tr '\n' ' ')" = "1 1 " ]
	urls=()
	for i in $(seq 100); do
		urls+=("$URL/fetch?url=http://bad.example/$i&want=403" "$URL/fetch?url=http://good.example/$i&want=200")
	done
	burst_codes "$ROOT/fetch" "${urls[@]}"
	check "after 200 requests each worker still maps it once: $(maps_per_worker | tr '\n' ' ')" \
		[ "$(maps_per_worker | tr '\n' ' ')" = "1 1 " ]
	check "no url: the empty key is absent, 200" [ "$(code "$URL/fetch")" = 200 ]
	urls=()
	for i in $(seq 100); do
		urls+=("$URL/static?url=http://bad.example/$i&want=403" "$URL/static?url=http://good.example/$i&want=200")
	done
	burst_codes "$ROOT/static" "${urls[@]}"
	check "\$remote_addr 127.0.0.2 in the filter: 403" [ "$(code "$URL/ip" --interface 127.0.0.2)" = 403 ]
	check "\$remote_addr 127.0.0.1 not in it: 200" [ "$(code "$URL/ip")" = 200 ]
	check "header X-Device: device-666 in the filter: 403" [ "$(code "$URL/device" -H 'X-Device: device-666')" = 403 ]
	check "header X-Device: device-1 not in it: 200" [ "$(code "$URL/device" -H 'X-Device: device-1')" = 200 ]
	check "complex value \$arg_user:\$arg_url in the filter: 403" [ "$(code "$URL/pair?user=u7&url=/secret")" = 403 ]
	check "complex value of another user: 200" [ "$(code "$URL/pair?user=u8&url=/secret")" = 200 ]
	check "\$shmf_hit is 1 for a key in the filter" [ "$(body "$URL/value?url=http://bad.example/1")" = "[1]" ]
	check "\$shmf_hit is 0 for a key not in it" [ "$(body "$URL/value?url=http://bad.example/101")" = "[0]" ]
	check "shmf_filter off: \$shmf_hit is empty" [ "$(body "$URL/off?url=http://bad.example/1")" = "[]" ]
	check "\$shmf_hit passed upstream in a header" [ "$(body "$URL/proxied?url=http://bad.example/2")" = "upstream saw [1]" ]
	check "a key added with shmctl is blocked on the next request" \
		sh -c "'$SHMCTL' add blocklist http://good.example/1 >/dev/null && [ \"\$(curl -s -o /dev/null -w '%{http_code}' '$URL/fetch?url=http://good.example/1')\" = 403 ]"
	# A filter that does not exist yet: requests pass, the error log says
	# why; once it is created, the workers open it (retried once a second).
	check "a missing filter lets requests pass with an empty \$shmf_hit" [ "$(body "$URL/late?url=x")" = "[]" ]
	check "the error log names the missing filter and the library's reason" \
		grep -q 'shmf: filter "notyet" of instance "default": cannot open: no such filter or instance' "$ROOT/nginx.log"
	"$SHMCTL" create notyet --capacity 100 --fpr 0.01 >/dev/null && "$SHMCTL" add notyet x >/dev/null
	sleep 1.2
	for _ in 1 2 3 4; do code "$URL/late?url=x" >/dev/null; done # reach both workers
	check "the filter created later is used (403)" [ "$(code "$URL/late?url=x")" = 403 ]
	;;
dedupe)
	"$SHMCTL" create clicks --capacity 10000 --fpr 0.000001 --mode 0660 >/dev/null &&
		"$SHMCTL" create clicks_cf --type cuckoo --capacity 10000 --fpr 0.01 --mode 0660 >/dev/null ||
		{ fail "shmctl create"; finish; }
	BACKEND=$(free_port)
	start_nginx "upstream click_backend { server 127.0.0.1:$BACKEND; }
	log_format clicks '\$arg_campaign:\$arg_click';
	server {
		listen 127.0.0.1:$BACKEND;
		location / { access_log $ROOT/backend.clicks clicks; return 200 \"counted\n\"; }
	}
	server {
		listen 127.0.0.1:$PORT reuseport;
		add_header X-Edge-Pid \$pid always;
		include $SRC/examples/click-dedupe.nginx.conf;
		location = /click-exact {
			shmf_filter clicks_cf;
			shmf_key \"\$arg_campaign:\$arg_click\";
			shmf_add on;
			if (\$shmf_hit) { return 204; }
			proxy_pass http://click_backend;
		}
	}" "$LOAD"
	click_waves

	# Exactly once on a cuckoo filter: 50 simultaneous requests of one new click.
	urls=()
	for i in $(seq 50); do urls+=("$URL/click-exact?campaign=c2&click=same&i=$i"); done
	burst "$ROOT/exact" "${urls[@]}"
	check "cuckoo: 1 of 50 simultaneous repeats of a new click reached the backend (got $(grep -c '^200 ' "$ROOT/exact/codes"))" \
		[ "$(grep -c '^200 ' "$ROOT/exact/codes")" -eq 1 ]
	check "cuckoo: the other 49 answered 204" [ "$(grep -c '^204 ' "$ROOT/exact/codes")" -eq 49 ]
	check "cuckoo: the filter holds one copy" [ "$("$SHMCTL" count clicks_cf c2:same | cut -f1)" = 1 ]
	;;
swap)
	"$SHMCTL" create blocklist --capacity 10000 --fpr 0.000001 >/dev/null || { fail "shmctl create"; finish; }
	for i in $(seq 100); do echo "old-$i"; done | "$SHMCTL" add blocklist - >/dev/null
	start_nginx "server {
		listen 127.0.0.1:$PORT reuseport;
		location /fetch {
			shmf_filter blocklist;
			shmf_key \$arg_url;
			add_header X-Edge-Pid \$pid always;
			if (\$shmf_hit) { return 403 \"\$pid\n\"; }
			return 200 \"\$pid\n\";
		}
	}" "$LOAD"
	workers_before=$(pgrep -P "$(cat "$ROOT/nginx.pid")" | sort)
	urls=()
	for i in $(seq 100); do urls+=("$URL/fetch?url=old-$i&want=403" "$URL/fetch?url=new-$i&want=200"); done
	burst_codes "$ROOT/before" "${urls[@]}"
	for i in $(seq 200); do echo "new-$i"; done >"$ROOT/new.keys"
	check "shmctl build" "$SHMCTL" build --capacity 10000 --fpr 0.000001 --from "$ROOT/new.keys" -o "$ROOT/new.snap"
	check "shmctl swap" sh -c "'$SHMCTL' swap blocklist '$ROOT/new.snap' >/dev/null"
	urls=()
	for i in $(seq 100); do urls+=("$URL/fetch?url=old-$i&want=200" "$URL/fetch?url=new-$i&want=403"); done
	burst_codes "$ROOT/after" "${urls[@]}"
	answered=$(cat "$ROOT"/after/[0-9]* | sort -u)
	check "the same workers answered after the swap (no reload, no restart)" \
		[ "$(pgrep -P "$(cat "$ROOT/nginx.pid")" | sort)" = "$workers_before" ]
	check "both workers answered after the swap (got: $(echo $answered))" [ "$answered" = "$workers_before" ]
	;;
config)
	# nginx -t on a configuration with one server; prints nginx's complaint.
	nginx_t() {
		cat >"$ROOT/t.conf" <<-EOF
		$LOAD
		pid $ROOT/t.pid;
		events {}
		http { access_log off; server { listen 127.0.0.1:$PORT; $1 } }
		EOF
		nginx -t -p "$ROOT" -e "$ROOT/t.log" -c "$ROOT/t.conf" 2>&1
	}
	"$SHMCTL" create blocklist --capacity 100 --fpr 0.01 >/dev/null
	out=$(nginx_t 'location / { shmf_filter blocklist instance=default; shmf_key $arg_k; shmf_add on; }')
	check "a good configuration passes nginx -t: $out" grep -q 'test is successful' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter blocklist; return 200; }')
	check "a filter without a key is refused: $out" grep -q '"shmf_filter blocklist" needs "shmf_key"' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter ../etc; shmf_key $arg_k; }')
	check "an invalid filter name is refused: $out" grep -q 'shmf_filter "../etc": invalid name (1-63 characters' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter blocklist instance=a/b; shmf_key $arg_k; }')
	check "an invalid instance name is refused: $out" grep -q 'shmf_filter "blocklist" instance=a/b: invalid name' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter blocklist inst=x; shmf_key $arg_k; }')
	check "an unknown parameter is refused: $out" grep -q 'invalid parameter "inst=x" (expected instance=NAME)' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter blocklist; shmf_filter other; shmf_key $arg_k; }')
	check "a second shmf_filter in one block is refused: $out" grep -q '"shmf_filter" directive is duplicate' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter blocklist; shmf_key $arg_k; shmf_key $arg_j; }')
	check "a second shmf_key in one block is refused: $out" grep -q '"shmf_key" directive is duplicate' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter a b c; }')
	check "too many arguments are refused: $out" grep -q 'invalid number of arguments in "shmf_filter"' <<<"$out"
	out=$(nginx_t 'location / { shmf_filter nosuch; shmf_key $arg_k; }')
	check "a filter that does not exist yet passes nginx -t (it may be created later): $out" grep -q 'test is successful' <<<"$out"
	;;
*)
	echo "usage: $0 SRC-DIR BUILD-DIR block|dedupe|swap|config" >&2
	exit 2
	;;
esac
finish
