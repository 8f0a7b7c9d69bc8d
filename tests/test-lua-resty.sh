#!/bin/bash
# test-lua-resty.sh - resty.shmf (bindings/lua) in Debian's nginx with
# libnginx-mod-http-lua and lua-resty-core (2 workers, as www-data when run
# as root) against a private shmd, driven by bursts of concurrent requests.
# Usage: test-lua-resty.sh SRC-DIR BUILD-DIR api|block|dedupe|swap
#   api     tests/lua/api.lua: every call, its answers and its errors (bad
#           keys, caps, options, names; a closed handle), in a request; the
#           module's soname and shmf_info_t are libshmf's; a dropped filter
#           answers an error, and its handle works again once the filter is
#           created anew
#   block   examples/blocklist.openresty.conf: listed addresses and paths
#           get 403, others pass; each worker opens the filter once; a
#           missing filter and a bad name let requests through with the
#           reason in the error log; a filter created later is used
#   dedupe  click de-duplication with f:add(): the backend sees each click
#           once, repeats answered 204 by either worker; with a cuckoo
#           filter's add_unique, 1 of 50 simultaneous repeats gets through
#   swap    shmctl build + shmctl swap is followed by the same workers,
#           without a reload
SRC=$1 BUILD=$2 MODE=$3
NAME=lua-$MODE
. "$SRC/tests/bindings-fixture.sh"

need_packages nginx libnginx-mod-http-lua lua-resty-core curl
start_shmd
# The module loads libshmf by its soname: the build tree's, here.
export LD_LIBRARY_PATH=$BUILD/libclient
LOAD="load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;"
LUA="lua_package_path '$SRC/bindings/lua/?.lua;$SRC/tests/lua/?.lua;;';
	init_by_lua_block { require \"resty.shmf\" }"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT

code() { local u=$1; shift; curl -s --globoff -o /dev/null -w '%{http_code}' "$@" "$u"; }
body() { curl -s --globoff "$1"; }
# reach_all URL: enough requests that both workers took some.
reach_all() { for _ in 1 2 3 4 5 6; do code "$1" >/dev/null; done; }

case $MODE in
api)
	"$SHMCTL" create bl --capacity 200000 --fpr 0.01 --mode 0660 >/dev/null &&
		"$SHMCTL" create cf --type cuckoo --capacity 10000 --fpr 0.01 --mode 0660 >/dev/null &&
		"$SHMCTL" create gone --capacity 1000 --fpr 0.01 >/dev/null && "$SHMCTL" add gone g >/dev/null ||
		{ fail "shmctl create"; finish; }
	# "st": a static filter of st-1..st-1000 at 16 bits, swapped over a Bloom filter.
	seq -f 'st-%g' 1 1000 >"$ROOT/st.keys"
	"$SHMCTL" build --type static --capacity 1000 --fpr 0.001 --from "$ROOT/st.keys" -o "$ROOT/st.snap" >/dev/null &&
		"$SHMCTL" create st --capacity 1000 --fpr 0.001 --mode 0660 >/dev/null &&
		"$SHMCTL" swap st "$ROOT/st.snap" --reshape >/dev/null || { fail "static filter st"; finish; }
	start_nginx "$LUA
	server {
		listen 127.0.0.1:$PORT;
		location = /api { content_by_lua_file $SRC/tests/lua/api.lua; }
		location = /sizes {
			content_by_lua_block {
				local ffi = require \"ffi\"
				require \"resty.shmf\"
				ngx.say(ffi.sizeof(\"shmf_info_t\"), \" \", ffi.offsetof(\"shmf_info_t\", \"bucket_size\"))
			}
		}
		location = /one {
			content_by_lua_block {
				local f, err = require(\"resty.shmf\").open(ngx.var.arg_f)
				if f then f, err = f:check(ngx.var.arg_k) end
				ngx.say(tostring(f), \" \", err or \"\")
			}
		}
	}" "$LOAD"
	out=$(body "$URL/api")
	echo "$out" | grep -v '^ok - '
	check "api.lua ran to its end ($(echo "$out" | grep -c '^ok - ') checks passed)" grep -qx done <<<"$out"
	check "api.lua: no check failed" sh -c "! grep -q '^not ok' <<'EOF'
$out
EOF"
	check "api.lua: more than 80 checks ran ($(echo "$out" | grep -c '^ok - '))" [ "$(echo "$out" | grep -c '^ok - ')" -gt 80 ]
	soname=$(readelf -d "$BUILD/libclient/libshmf.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	check "resty.shmf loads libshmf's soname ($soname)" grep -q "^local SONAME = \"$soname\"\$" "$SRC/bindings/lua/resty/shmf.lua"
	printf '#include <shmf.h>\n#include <stdio.h>\n#include <stddef.h>\nint main(void) { printf("%%zu %%zu\\n", sizeof(shmf_info_t), offsetof(shmf_info_t, bucket_size)); return 0; }\n' >"$ROOT/sizes.c"
	cc -I"$SRC/include" -o "$ROOT/sizes" "$ROOT/sizes.c" || fail "cc sizes.c"
	check "shmf_info_t in Lua has C's size and layout (C: $("$ROOT/sizes"), Lua: $(body "$URL/sizes"))" \
		[ "$("$ROOT/sizes")" = "$(body "$URL/sizes")" ]
	# A dropped filter: an error with the reason, then the same worker's
	# handle opens the filter again once it is created anew.
	reach_all "$URL/one?f=gone&k=g"
	check "a filter's key is found before the drop" [ "$(body "$URL/one?f=gone&k=g")" = "true " ]
	"$SHMCTL" drop gone >/dev/null || fail "shmctl drop"
	out=$(body "$URL/one?f=gone&k=g")
	check "after the drop: nil and the reason ($out)" grep -q '^nil filter "gone" of instance "default": check: .*dropped' <<<"$out"
	"$SHMCTL" create gone --capacity 1000 --fpr 0.01 >/dev/null && "$SHMCTL" add gone h >/dev/null
	sleep 1.2
	reach_all "$URL/one?f=gone&k=h"
	check "the filter created anew is used by both workers' handles" \
		sh -c "for i in 1 2 3 4 5 6; do [ \"\$(curl -s '$URL/one?f=gone&k=h')\" = 'true ' ] || exit 1; done"
	;;
block)
	"$SHMCTL" create blocklist --capacity 10000 --fpr 0.000001 >/dev/null || { fail "shmctl create"; finish; }
	for i in $(seq 100); do echo "path:/bad/$i"; done | "$SHMCTL" add blocklist - >/dev/null
	"$SHMCTL" add blocklist ip:127.0.0.2 >/dev/null
	start_nginx "$LUA
	server {
		listen 127.0.0.1:$PORT;
		location / {
			include $SRC/examples/blocklist.openresty.conf;
			content_by_lua_block { ngx.say(\"fetched\") }
		}
		location /late/ {
			access_by_lua_block {
				local f, err = require(\"resty.shmf\").open(\"notyet\")
				if not f then ngx.log(ngx.ERR, err, \"; request let through\") return end
				if f:check(ngx.var.uri) then return ngx.exit(403) end
			}
			content_by_lua_block { ngx.say(\"passed\") }
		}
		location /badname/ {
			access_by_lua_block {
				local f, err = require(\"resty.shmf\").open(\"no/such\")
				if not f then ngx.log(ngx.ERR, err, \"; request let through\") return end
				return ngx.exit(403)
			}
			content_by_lua_block { ngx.say(\"passed\") }
		}
	}" "$LOAD"
	urls=()
	for i in $(seq 100); do urls+=("$URL/bad/$i?want=403" "$URL/good/$i?want=200"); done
	burst_codes "$ROOT/paths" "${urls[@]}"
	check "a listed path gets 403 from 127.0.0.1" [ "$(code "$URL/bad/7")" = 403 ]
	check "a listed address gets 403 on any path" [ "$(code "$URL/good/1" --interface 127.0.0.2)" = 403 ]
	check "an unlisted address and path: the content handler answers" [ "$(body "$URL/good/1")" = fetched ]
	# maps_per_worker: mappings of the filter's data file, one line per worker.
	maps_per_worker() {
		local w
		for w in $(pgrep -P "$(cat "$ROOT/nginx.pid")"); do grep -c '/blocklist\.[0-9]*\.data$' "/proc/$w/maps"; done
	}
	check "after 200 requests each worker maps the filter once: $(maps_per_worker | tr '\n' ' ')" \
		[ "$(maps_per_worker | tr '\n' ' ')" = "1 1 " ]
	check "a path added with shmctl is blocked on the next request" \
		sh -c "'$SHMCTL' add blocklist path:/good/2 >/dev/null && [ \"\$(curl -s -o /dev/null -w '%{http_code}' '$URL/good/2')\" = 403 ]"
	check "a missing filter lets the request through" [ "$(body "$URL/late/x")" = passed ]
	check "the error log names the missing filter and the library's reason" \
		grep -q 'filter "notyet" of instance "default": cannot open: no such filter or instance; request let through' "$ROOT/nginx.log"
	check "a bad filter name lets the request through" [ "$(body "$URL/badname/x")" = passed ]
	check "the error log names the bad name and what a name may hold" \
		grep -q 'filter "no/such" of instance "default": cannot open: invalid name (1-63 characters' "$ROOT/nginx.log"
	"$SHMCTL" create notyet --capacity 100 --fpr 0.01 >/dev/null && "$SHMCTL" add notyet /late/x >/dev/null
	sleep 1.2
	reach_all "$URL/late/x"
	check "the filter created later is used (403)" [ "$(code "$URL/late/x")" = 403 ]
	;;
dedupe)
	"$SHMCTL" create clicks --capacity 10000 --fpr 0.000001 --mode 0660 >/dev/null &&
		"$SHMCTL" create clicks_cf --type cuckoo --capacity 10000 --fpr 0.01 --mode 0660 >/dev/null ||
		{ fail "shmctl create"; finish; }
	BACKEND=$(free_port)
	start_nginx "$LUA
	upstream click_backend { server 127.0.0.1:$BACKEND; }
	log_format clicks '\$arg_campaign:\$arg_click';
	server {
		listen 127.0.0.1:$BACKEND;
		location / { access_log $ROOT/backend.clicks clicks; return 200 \"counted\n\"; }
	}
	server {
		listen 127.0.0.1:$PORT reuseport;
		add_header X-Edge-Pid \$pid always;
		location = /click {
			access_by_lua_block {
				local f, err = require(\"resty.shmf\").open(ngx.var.arg_f or \"clicks\", {writable = true})
				if not f then ngx.log(ngx.ERR, err) return end
				local key = (ngx.var.arg_campaign or \"\") .. \":\" .. (ngx.var.arg_click or \"\")
				local new
				if ngx.var.arg_f then new, err = f:add_unique(key) else new, err = f:add(key) end
				if new == false then return ngx.exit(204) end
				if new == nil then ngx.log(ngx.ERR, err) end
			}
			proxy_pass http://click_backend;
		}
	}" "$LOAD"
	click_waves
	urls=()
	for i in $(seq 50); do urls+=("$URL/click?f=clicks_cf&campaign=c2&click=same&i=$i"); done
	burst "$ROOT/exact" "${urls[@]}"
	check "cuckoo add_unique: 1 of 50 simultaneous repeats of a new click reached the backend (got $(grep -c '^200 ' "$ROOT/exact/codes"))" \
		[ "$(grep -c '^200 ' "$ROOT/exact/codes")" -eq 1 ]
	check "cuckoo: the other 49 answered 204" [ "$(grep -c '^204 ' "$ROOT/exact/codes")" -eq 49 ]
	check "cuckoo: the filter holds one copy" [ "$("$SHMCTL" count clicks_cf c2:same | cut -f1)" = 1 ]
	# (the one error expected: the fixture's first request, for a missing /index.html)
	check "no error from Lua in the log" sh -c "! grep -E '\\[(error|alert|crit)\\]' '$ROOT/nginx.log' | grep -v 'index.html\" is not found'"
	;;
swap)
	"$SHMCTL" create blocklist --capacity 10000 --fpr 0.000001 >/dev/null || { fail "shmctl create"; finish; }
	for i in $(seq 100); do echo "path:/old/$i"; done | "$SHMCTL" add blocklist - >/dev/null
	start_nginx "$LUA
	init_worker_by_lua_block {
		-- opened once per worker, before any request
		assert(require(\"resty.shmf\").open(\"blocklist\"))
	}
	server {
		listen 127.0.0.1:$PORT reuseport;
		add_header X-Edge-Pid \$pid always;
		location / {
			include $SRC/examples/blocklist.openresty.conf;
			content_by_lua_block { ngx.say(ngx.worker.pid()) }
		}
	}" "$LOAD"
	workers_before=$(pgrep -P "$(cat "$ROOT/nginx.pid")" | sort)
	urls=()
	for i in $(seq 100); do urls+=("$URL/old/$i?want=403" "$URL/new/$i?want=200"); done
	burst_codes "$ROOT/before" "${urls[@]}"
	for i in $(seq 200); do echo "path:/new/$i"; done >"$ROOT/new.keys"
	check "shmctl build" "$SHMCTL" build --capacity 10000 --fpr 0.000001 --from "$ROOT/new.keys" -o "$ROOT/new.snap"
	check "shmctl swap" sh -c "'$SHMCTL' swap blocklist '$ROOT/new.snap' >/dev/null"
	urls=()
	for i in $(seq 100); do urls+=("$URL/old/$i?want=200" "$URL/new/$i?want=403"); done
	burst_codes "$ROOT/after" "${urls[@]}"
	answered=$(awk '{print $3}' "$ROOT/after/codes" | sort -u)
	check "the same workers answered after the swap (no reload, no restart)" \
		[ "$(pgrep -P "$(cat "$ROOT/nginx.pid")" | sort)" = "$workers_before" ]
	check "both workers answered after the swap (got: $(echo $answered))" [ "$(echo $answered)" = "$(echo $workers_before)" ]
	;;
*)
	echo "usage: $0 SRC-DIR BUILD-DIR api|block|dedupe|swap" >&2
	exit 2
	;;
esac
finish
