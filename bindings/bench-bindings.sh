#!/bin/bash
# bench-bindings.sh - what the bindings cost, measured on this machine (not
# a test: nothing is asserted). From the source root, after a plain build:
#   bindings/bench-bindings.sh [BUILD-DIR] [--quick]
# 1. PHP: Shmf\Filter::check in a loop of 1M against the same Bloom check
#    through phpredis on networked Redis (k GETBITs in a pipeline, same k
#    and m, redis-server on 127.0.0.1), and the ratio.
# 2. nginx: requests/s with the module's check against the same location
#    without it (wrk, 1 nginx worker), and the difference per request.
# 3. Python: shmf.Filter.check and check_many against the same calls from C
#    and the interpreter's own call cost, and redis-py (GETBITs on
#    redis-server, BF.EXISTS to shmd over TCP), all on 127.0.0.1
#    (bindings/python/bench-check.py, on this build's shmf module).
#    --python: this part alone.
# Installs php-cli, php-dev, php-redis, redis-server, nginx, nginx-dev and
# wrk if missing. --quick: 100k PHP checks, 3 s wrk runs.
# Numbers from a shared 2-core VM are noisy: run it twice, compare.
set -u
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=$SRC/build
QUICK="" PYTHON_ONLY=""
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	--python) PYTHON_ONLY=1 ;;
	*) BUILD=$(cd "$a" && pwd) ;;
	esac
done
N_SHMF=1000000 N_REDIS=1000000 WRK_SECONDS=5 ROUNDS=6
[ -n "$QUICK" ] && { N_SHMF=100000; N_REDIS=100000; WRK_SECONDS=3; }

if [ -z "$PYTHON_ONLY" ]; then
	"$SRC/bindings/need-packages.sh" php-cli php-dev php-redis redis-server nginx nginx-dev wrk curl || exit 1
fi
"$SRC/bindings/need-packages.sh" python3-redis redis-server || exit 1
[ -x "$BUILD/shmd/shmd" ] || { echo "no $BUILD/shmd/shmd: build first (meson setup build && meson compile -C build)" >&2; exit 1; }
if [ -z "$PYTHON_ONLY" ]; then
	"$SRC/bindings/php/build.sh" "$BUILD/bindings/php" "$SRC/include" "$BUILD/libclient" || exit 1
	"$SRC/bindings/nginx/build.sh" "$BUILD/bindings/nginx" "$SRC/include" "$BUILD/libclient" || exit 1
fi

ROOT=$(mktemp -d /dev/shm/shmf-bench-bindings-XXXXXX)
export SHMF_RUNTIME_DIR=$ROOT/run
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; sleep 0.5; rm -rf "$ROOT"' EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# shmd's TCP listener (for Python's redis-py BF.EXISTS), loopback, readers.
TPORT=$(port)
printf '[tcp]\nenabled = yes\nbind = 127.0.0.1\nport = %s\nunauthenticated_role = reader\n' "$TPORT" >"$ROOT/shmd.conf"
"$BUILD/shmd/shmd" -f -c "$ROOT/shmd.conf" 2>"$ROOT/shmd.log" &
PIDS="$PIDS $!"
for _ in $(seq 100); do "$BUILD/tools/shmctl" ping >/dev/null 2>&1 && break; sleep 0.1; done
"$BUILD/tools/shmctl" create bench --capacity 1000000 --fpr 0.01 >/dev/null || exit 1

python_part() {
	echo "== Python: one check per call, loop of $N_SHMF (shmf); $N_REDIS_PY keys through redis-py"
	local rport
	rport=$(port)
	redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$ROOT/redis-py.log" 2>&1 &
	PIDS="$PIDS $!"
	for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
	"$BUILD/tools/shmctl" create pybench --capacity 1000000 --fpr 0.01 >/dev/null || exit 1
	PYTHONPATH=$BUILD/bindings PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$SRC/bindings/python/bench-check.py" \
		pybench "$rport" "$TPORT" "$N_SHMF" "$N_REDIS_PY"
}
N_REDIS_PY=$((N_REDIS / 10))
if [ -n "$PYTHON_ONLY" ]; then
	python_part
	exit 0
fi

echo "== PHP: one check per call, loop of $N_SHMF (shmf) and $N_REDIS (Redis)"
RPORT=$(port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$ROOT/redis.log" 2>&1 &
PIDS="$PIDS $!"
for _ in $(seq 100); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
# The system's php.ini and conf.d (phpredis and igbinary load there), plus shmf.
php -d memory_limit=1G -d "extension=$BUILD/bindings/php/modules/shmf.so" "$SRC/bindings/php/bench-check.php" \
	bench 127.0.0.1 "$RPORT" "$N_SHMF" "$N_REDIS"

echo
echo "== nginx: requests/s, wrk -t1 -c16 -d${WRK_SECONDS}s, 1 worker, $ROUNDS rounds each, alternating"
NPORT=$(port)
mkdir -p "$ROOT/nginx"
seq 1 500000 | sed 's/^/http:\/\/bad.example\//' | "$BUILD/tools/shmctl" add bench - >/dev/null
cat >"$ROOT/nginx.conf" <<EOF
load_module $BUILD/bindings/nginx/ngx_http_shmf_module.so;
user root;
worker_processes 1;
pid $ROOT/nginx.pid;
error_log $ROOT/nginx.log warn;
env SHMF_RUNTIME_DIR;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $ROOT/nginx/body;
	proxy_temp_path $ROOT/nginx/proxy;
	fastcgi_temp_path $ROOT/nginx/fastcgi;
	uwsgi_temp_path $ROOT/nginx/uwsgi;
	scgi_temp_path $ROOT/nginx/scgi;
	server {
		listen 127.0.0.1:$NPORT;
		location /plain { if (\$arg_url = "-") { return 403; } return 200 "ok\n"; }
		location /checked {
			shmf_filter bench;
			shmf_key \$arg_url;
			if (\$shmf_hit) { return 403; }
			return 200 "ok\n";
		}
	}
}
EOF
nginx -p "$ROOT/nginx" -e "$ROOT/nginx.log" -c "$ROOT/nginx.conf" -g "daemon off;" &
PIDS="$PIDS $!"
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$NPORT/plain" && break; sleep 0.1; done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NPORT/checked?url=http://bad.example/7")" = 403 ] ||
	echo "warning: the module did not block a key of the filter" >&2

rps() {
	wrk -t1 -c16 -d"${WRK_SECONDS}s" "http://127.0.0.1:$NPORT/$1?url=http://good.example/some/page" 2>&1 |
		awk '/^Requests\/sec/ {print $2}'
}
plain=() checked=()
for _ in $(seq $ROUNDS); do
	plain+=("$(rps plain)")
	checked+=("$(rps checked)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
best() { printf '%s\n' "$@" | sort -n | tail -n 1; }
p=$(median "${plain[@]}") c=$(median "${checked[@]}") pb=$(best "${plain[@]}") cb=$(best "${checked[@]}")
echo "without the module's check: ${plain[*]} req/s (median $p, best $pb)"
echo "with the module's check:    ${checked[*]} req/s (median $c, best $cb)"
# The best run of each is the one least disturbed by other work on the host.
cost() { awk -v p="$1" -v c="$2" -v w="$3" 'BEGIN { printf "cost per request (%s): %.0f ns = 1/%s - 1/%s, %.1f%% fewer requests/s\n", w, (1e9 / c - 1e9 / p), c, p, 100 * (1 - c / p) }'; }
cost "$p" "$c" medians
cost "$pb" "$cb" "best runs"
echo "(a 2-core VM shared with wrk and other work: differences of a few percent are noise)"

echo
python_part
