#!/bin/bash
# bench-resty.sh - resty.shmf in OpenResty (Debian's nginx with
# libnginx-mod-http-lua), measured on this machine (not a test: nothing is
# asserted). From the source root, after a plain build:
#   bindings/lua/bench-resty.sh [BUILD-DIR] [--quick]
# For filters of 1M and 10M keys (--quick: 100k and 1M), in one nginx
# worker: a check through resty.shmf against ngx.shared.DICT:get on a
# lua_shared_dict holding the same keys, each timed inside Lua over the
# same 1M keys at most, half present and half absent (bench-resty.lua),
# then C's shmf_check of the same keys (bench/bench-named-check) in the
# same run; and the memory each holds the keys in. Installs nginx,
# libnginx-mod-http-lua, lua-resty-core and curl if missing. A 2-core VM
# shared with other work is noisy: run it twice, compare.
set -u
cd "$(dirname "$0")/../.."
SRC=$PWD
BUILD=$SRC/build
SIZES="1000000 10000000"
for a in "$@"; do
	case $a in
	--quick) SIZES="100000 1000000" ;;
	*) BUILD=$(cd "$a" && pwd) ;;
	esac
done
"$SRC/bindings/need-packages.sh" nginx libnginx-mod-http-lua lua-resty-core curl || exit 1
for p in shmd/shmd tools/shmctl bench/bench-named-check; do
	[ -x "$BUILD/$p" ] || { echo "no $BUILD/$p: build first (meson setup build && meson compile -C build)" >&2; exit 1; }
done

ROOT=$(mktemp -d /dev/shm/shmf-bench-resty-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT/run LD_LIBRARY_PATH=$BUILD/libclient
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; sleep 0.5; rm -rf "$ROOT"' EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$BUILD/shmd/shmd" -f 2>"$ROOT/shmd.log" &
PIDS="$PIDS $!"
for _ in $(seq 100); do "$BUILD/tools/shmctl" ping >/dev/null 2>&1 && break; sleep 0.1; done
dicts=""
for n in $SIZES; do
	"$BUILD/tools/shmctl" create "k$n" --capacity "$n" --fpr 0.01 >/dev/null || exit 1
	# About 130 bytes a key in the dict (measured), and room to spare.
	dicts="$dicts lua_shared_dict k$n $((n * 200 / 1048576 + 16))m;"
done

PORT=$(port)
mkdir -p "$ROOT/nginx"
cat >"$ROOT/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
user root;
worker_processes 1;
pid $ROOT/nginx.pid;
error_log $ROOT/nginx.log warn;
env SHMF_RUNTIME_DIR;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $ROOT/nginx/body;
	proxy_temp_path $ROOT/nginx/proxy;
	fastcgi_temp_path $ROOT/nginx/fastcgi;
	uwsgi_temp_path $ROOT/nginx/uwsgi;
	scgi_temp_path $ROOT/nginx/scgi;
	lua_package_path '$SRC/bindings/lua/?.lua;;';
	init_by_lua_block { require "resty.shmf" }
	$dicts
	server {
		listen 127.0.0.1:$PORT;
		location = /bench { content_by_lua_file $SRC/bindings/lua/bench-resty.lua; }
	}
}
EOF
nginx -p "$ROOT/nginx" -e "$ROOT/nginx.log" -c "$ROOT/nginx.conf" -g "daemon off;" &
PIDS="$PIDS $!"
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

for n in $SIZES; do
	timed=$((n < 1000000 ? n : 1000000))
	half=$((timed / 2))
	echo "== $n keys (filter at 1%, lua_shared_dict of the same keys, value true)"
	curl -s "http://127.0.0.1:$PORT/bench?op=fill&f=k$n&n=$n"
	curl -s "http://127.0.0.1:$PORT/bench?op=mem&f=k$n"
	curl -s "http://127.0.0.1:$PORT/bench?op=time&f=k$n&present=$half&absent=$half&rounds=9"
	"$BUILD/bench/bench-named-check" "k$n" "$half" "$half" 9
done
grep -E '\[(error|alert|crit)\]' "$ROOT/nginx.log" | grep -v 'index.html" is not found' >&2
