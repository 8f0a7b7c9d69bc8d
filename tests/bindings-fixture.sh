# bindings-fixture.sh - sourced by the binding tests (test-php-*.sh,
# test-nginx-*.sh): a private shmd, php-fpm and nginx under a temp dir,
# stopped at exit, and helpers to drive them with concurrent requests.
#
# As root (the usual case: the tests install Debian packages), the servers'
# workers run as www-data, as they do in production, and shmd gives its
# segments to the group www-data: a worker checks and adds through the
# group permission, not as root.
#
# The caller sets SRC (source root), BUILD (build root) and NAME (a short
# test name), then sources this file.

set -u
ROOT=$(mktemp -d "/dev/shm/shmf-$NAME-XXXXXX")
export SHMF_RUNTIME_DIR=$ROOT/run
# shmd would make the runtime directory 0755 too; made here, so that the
# temporary directory's own mode (0700 from mktemp) is opened up below.
mkdir -m 0755 "$SHMF_RUNTIME_DIR"
chmod 0755 "$ROOT"
SHMD=$BUILD/shmd/shmd
SHMCTL=$BUILD/tools/shmctl
failures=0
checks=0
PIDS=""

if [ "$(id -u)" -eq 0 ] && id www-data >/dev/null 2>&1; then
	WORKER_USER=www-data
else
	WORKER_USER=""
fi

cleanup() {
	local p
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	if [ "$failures" -ne 0 ] || [ -n "${KEEP_LOGS:-}" ]; then
		for f in "$ROOT"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }; done >&2
	fi
	rm -rf "$ROOT"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# check DESCRIPTION COMMAND...: one assertion; the command's status decides.
check() {
	local what=$1
	shift
	checks=$((checks + 1))
	"$@" || fail "$what"
}

finish() {
	echo "$NAME: $checks checks, $failures failed"
	[ "$failures" -eq 0 ] && exit 0
	exit 1
}

need_packages() {
	"$SRC/bindings/need-packages.sh" "$@"
	local rc=$?
	[ $rc -eq 77 ] && exit 77
	[ $rc -eq 0 ] || { echo "FAIL: cannot install $*" >&2; exit 1; }
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for WHAT COMMAND...: poll for up to 10 s.
wait_for() {
	local what=$1
	shift
	for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "FAIL: $what did not come up" >&2
	failures=$((failures + 1))
	finish
}

# start_shmd: shmd in the foreground, segments for group www-data when the
# workers run as www-data.
start_shmd() {
	{
		echo "[instance]"
		echo "name = default"
		[ -n "$WORKER_USER" ] && echo "group = $WORKER_USER"
	} >"$ROOT/shmd.conf"
	"$SHMD" -f -c "$ROOT/shmd.conf" 2>"$ROOT/shmd.log" &
	PIDS="$PIDS $!"
	wait_for shmd "$SHMCTL" ping
}

# build_php: the extension, built (once; later calls find it made) into the
# build tree. Sets PHP_EXT.
build_php() {
	"$SRC/bindings/php/build.sh" "$BUILD/bindings/php" "$SRC/include" "$BUILD/libclient" ||
		{ echo "FAIL: the PHP extension does not build" >&2; exit 1; }
	PHP_EXT=$BUILD/bindings/php/modules/shmf.so
}

# build_nginx_module: sets NGX_MODULE.
build_nginx_module() {
	"$SRC/bindings/nginx/build.sh" "$BUILD/bindings/nginx" "$SRC/include" "$BUILD/libclient" ||
		{ echo "FAIL: the nginx module does not build" >&2; exit 1; }
	NGX_MODULE=$BUILD/bindings/nginx/ngx_http_shmf_module.so
}

# start_fpm DOCROOT: php-fpm with the extension, a static pool of 4
# workers on a unix socket ($ROOT/fpm.sock).
start_fpm() {
	local fpm
	fpm=$(ls /usr/sbin/php-fpm* 2>/dev/null | head -n 1)
	[ -n "$fpm" ] || { echo "FAIL: no php-fpm binary in /usr/sbin" >&2; exit 1; }
	cat >"$ROOT/fpm.conf" <<-EOF
	[global]
	pid = $ROOT/fpm.pid
	error_log = $ROOT/fpm.log
	daemonize = no
	[pool]
	listen = $ROOT/fpm.sock
	listen.mode = 0666
	pm = static
	pm.max_children = 4
	catch_workers_output = yes
	; FPM clears the workers' environment: pass libshmf its runtime directory.
	env[SHMF_RUNTIME_DIR] = $SHMF_RUNTIME_DIR
	php_admin_value[error_log] = $ROOT/fpm.log
	EOF
	[ -n "$WORKER_USER" ] && printf 'user = %s\ngroup = %s\n' "$WORKER_USER" "$WORKER_USER" >>"$ROOT/fpm.conf"
	"$fpm" -F -n -d "extension=$PHP_EXT" -d display_errors=stderr -y "$ROOT/fpm.conf" >>"$ROOT/fpm.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_for php-fpm test -S "$ROOT/fpm.sock"
}

# start_nginx HTTP-TEXT [MAIN-LINES]: nginx with 2 workers; $1 goes inside
# http { } (its servers listen on 127.0.0.1:$PORT, from free_port), $2 at
# the top. Waits until $PORT answers.
start_nginx() {
	mkdir -p "$ROOT/nginx"
	cat >"$ROOT/nginx.conf" <<-EOF
	${2:-}
	${WORKER_USER:+user $WORKER_USER;}
	worker_processes 2;
	pid $ROOT/nginx.pid;
	error_log $ROOT/nginx.log info;
	env SHMF_RUNTIME_DIR;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $ROOT/nginx/body;
		proxy_temp_path $ROOT/nginx/proxy;
		fastcgi_temp_path $ROOT/nginx/fastcgi;
		uwsgi_temp_path $ROOT/nginx/uwsgi;
		scgi_temp_path $ROOT/nginx/scgi;
		$1
	}
	EOF
	nginx -t -q -p "$ROOT/nginx" -e "$ROOT/nginx.log" -c "$ROOT/nginx.conf" ||
		{ fail "nginx refuses the test configuration"; finish; }
	nginx -p "$ROOT/nginx" -e "$ROOT/nginx.log" -c "$ROOT/nginx.conf" -g "daemon off;" &
	PIDS="$PIDS $!"
	wait_for nginx curl -s -o /dev/null "http://127.0.0.1:$PORT/"
}

# burst OUT URL...: the URLs over 16 concurrent connections; OUT/N holds
# response N's body and OUT/codes "status url pid" lines, pid being the
# X-Edge-Pid response header if the server sets one.
burst() {
	local out=$1 i=0
	shift
	mkdir -p "$out"
	for u in "$@"; do
		i=$((i + 1))
		printf 'url = "%s"\noutput = "%s/%d"\n' "$u" "$out" "$i"
	done >"$out/curl.cfg"
	curl -s --no-progress-meter --globoff --parallel --parallel-immediate --parallel-max 16 -w '%{http_code} %{url} %header{x-edge-pid}\n' \
		-K "$out/curl.cfg" | tr -d '\r' >"$out/codes"
}

# burst_codes DIR URL...: every URL got the status its want=NNN announces.
burst_codes() {
	local dir=$1
	shift
	burst "$dir" "$@"
	local bad
	bad=$(awk '{ w = $2; sub(/.*want=/, "", w); sub(/&.*/, "", w); if (w != $1) print }' "$dir/codes")
	check "$# concurrent requests each got the status wanted (wrong: $(echo "$bad" | head -3))" \
		test -z "$bad" -a "$(grep -c . "$dir/codes")" -eq $#
}

# click_waves: the click de-duplication both nginx bindings serve at
# $URL/click (the backend appends each click it gets to backend.clicks).
# Wave 1: 200 new clicks; wave 2: their 200 repeats and 100 new ones. Each
# click reaches the backend once, both workers answer, and repeats are
# answered 204 by the worker that had not seen the click: the adds of one
# are seen by the other.
click_waves() {
	local urls=() i pid1 pid2 crossed
	for i in $(seq 200); do urls+=("$URL/click?campaign=c1&click=$i&want=200"); done
	burst_codes "$ROOT/wave1" "${urls[@]}"
	urls=()
	for i in $(seq 200); do urls+=("$URL/click?campaign=c1&click=$i&want=204"); done
	for i in $(seq 201 300); do urls+=("$URL/click?campaign=c1&click=$i&want=200"); done
	burst_codes "$ROOT/wave2" "${urls[@]}"
	check "the backend counted 300 clicks, each once (got $(wc -l <"$ROOT/backend.clicks") lines, $(sort -u "$ROOT/backend.clicks" | wc -l) distinct)" \
		test "$(wc -l <"$ROOT/backend.clicks")" -eq 300 -a "$(sort -u "$ROOT/backend.clicks" | wc -l)" -eq 300
	pid1=$(awk '{ sub(/.*click=/, "", $2); sub(/&.*/, "", $2); print $2, $3 }' "$ROOT/wave1/codes" | sort)
	pid2=$(awk '$1 == 204 { sub(/.*click=/, "", $2); sub(/&.*/, "", $2); print $2, $3 }' "$ROOT/wave2/codes" | sort)
	check "both nginx workers answered clicks (got: $(echo "$pid1" | awk '{print $2}' | sort -u | tr '\n' ' '))" \
		[ "$(echo "$pid1" | awk '{print $2}' | sort -u | grep -c .)" -eq 2 ]
	crossed=$(join <(echo "$pid1") <(echo "$pid2") | awk '$2 != $3' | wc -l)
	check "repeats deduplicated by the other worker than the one that added the click ($crossed of 200)" [ "$crossed" -gt 0 ]
}
