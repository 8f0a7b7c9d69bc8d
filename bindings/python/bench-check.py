"""bench-check.py - a membership check from Python, side by side in one run:
shmf.Filter.check() and check_many() against the same calls made from C
alone (shmf._c_loop: the libshmf calls timed, no interpreter), the
interpreter's own cost of a call (a loop of callable(key), a builtin taking
one argument as check does), and redis-py over 127.0.0.1: a Bloom check
as k GETBITs in one pipeline on a redis-server string of the filter's m
bits, and BF.EXISTS / BF.MEXISTS to shmd's own TCP listener (RedisBloom's
commands; Debian's redis-server has no RedisBloom module).
Run by bindings/bench-bindings.sh, which starts shmd and redis-server:
  python3 bench-check.py FILTER REDIS-PORT SHMD-TCP-PORT N-SHMF N-REDIS
Half of the keys checked are present. Nothing is asserted.
"""
import hashlib
import sys
import time

import redis
import shmf

filt, rport, tport, n_shmf, n_redis = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
f = shmf.Filter(filt, writable=True)
info = f.info()
k, m = info["k"], info["bits"]
present = max(n_shmf, n_redis) // 2
BATCH = 1000


def key_of(i):
    return b"user:%08d:item" % i  # 18 bytes, as in a real workload


def keys(n):
    return [key_of(present + i if i & 1 else i % present) for i in range(n)]


def positions(key):
    """The Redis Bloom's k bit positions: double hashing of a 64-bit hash."""
    h = hashlib.blake2b(key, digest_size=8).digest()
    h1, h2 = int.from_bytes(h[:4], "big"), int.from_bytes(h[4:], "big") | 1
    return [(h1 + i * h2) % m for i in range(k)]


for i in range(0, present, 10000):
    f.add_many(key_of(j) for j in range(i, min(i + 10000, present)))
r = redis.Redis(host="127.0.0.1", port=rport)
r.delete("bf")
r.setbit("bf", m - 1, 0)
for i in range(0, present, 1000):
    p = r.pipeline(transaction=False)
    for j in range(i, min(i + 1000, present)):
        for pos in positions(key_of(j)):
            p.setbit("bf", pos, 1)
    p.execute()
print("k %d, m %d bits (%.1f MB), %d keys present, Python %s" % (k, m, m / 8e6, present, sys.version.split()[0]))


def passes(run, n, times=5):
    """Median and best ns per key of several passes (a shared machine)."""
    t = []
    for _ in range(times):
        t0 = time.perf_counter_ns()
        run()
        t.append((time.perf_counter_ns() - t0) / n)
    t.sort()
    return t[len(t) // 2], t[0]


ks = keys(n_shmf)
chunks = [ks[i:i + BATCH] for i in range(0, len(ks), BATCH)]


def empty():
    for key in ks:
        pass


def call_cost():
    c = callable
    for key in ks:
        c(key)


def py_check():
    chk = f.check
    for key in ks:
        chk(key)


def py_in():
    for key in ks:
        key in f


def py_many():
    cm = f.check_many
    for c in chunks:
        cm(c)


c_check = sorted(shmf._c_loop(f, ks, 0)[0] for _ in range(5))
c_many = sorted(shmf._c_loop(f, ks, BATCH)[0] for _ in range(5))
loop, loop_b = passes(empty, n_shmf)
call, call_b = passes(call_cost, n_shmf)
chk, chk_b = passes(py_check, n_shmf)
inn, inn_b = passes(py_in, n_shmf)
many, many_b = passes(py_many, n_shmf)
hits = sum(f.check_many(ks))
row = "%-44s %9.1f ns median of 5, best %.1f"
print(row % ("C      shmf_check (loop in C)", c_check[2], c_check[0]))
print(row % ("Python empty loop (for key in keys)", loop, loop_b))
print(row % ("Python callable(key) in the loop", call, call_b))
print(row % ("Python f.check(key) in the loop", chk, chk_b))
print(row % ("Python key in f, in the loop", inn, inn_b))
print(row % ("C      shmf_check_many, batches of %d" % BATCH, c_many[2], c_many[0]) + " (per key)")
print(row % ("Python f.check_many, batches of %d" % BATCH, many, many_b) + " (per key)")
print("hits %d of %d" % (hits, n_shmf))

rk = keys(n_redis)
t = time.perf_counter_ns()
rhits = 0
for key in rk:
    p = r.pipeline(transaction=False)
    for pos in positions(key):
        p.getbit("bf", pos)
    rhits += all(p.execute())
getbit = (time.perf_counter_ns() - t) / n_redis
s = redis.Redis(host="127.0.0.1", port=tport)
t = time.perf_counter_ns()
shits = 0
for key in rk:
    shits += s.execute_command("BF.EXISTS", filt, key)
bfexists = (time.perf_counter_ns() - t) / n_redis
t = time.perf_counter_ns()
for i in range(0, n_redis, BATCH):
    s.execute_command("BF.MEXISTS", filt, *rk[i:i + BATCH])
bfmexists = (time.perf_counter_ns() - t) / n_redis
print("%-44s %9.1f ns per key, hits %d of %d" % ("redis-py %d GETBITs in a pipeline, redis-server" % k, getbit, rhits, n_redis))
print("%-44s %9.1f ns per key, hits %d" % ("redis-py BF.EXISTS, shmd over TCP", bfexists, shits))
print("%-44s %9.1f ns per key" % ("redis-py BF.MEXISTS of %d, shmd over TCP" % BATCH, bfmexists))

# The targets, from the medians: the calls net of the empty loop.
net_check, net_call = chk - loop, call - loop
print("\ncheck from Python %.1f ns (net of the loop); C check %.1f ns; the interpreter's call %.1f ns" % (net_check, c_check[2], net_call))
print("  target Python <= 3 x C + call = %.1f ns: %s (%.2f x C + call)" % (
    3 * c_check[2] + net_call, "met" if net_check <= 3 * c_check[2] + net_call else "missed",
    (net_check - net_call) / c_check[2]))
print("  batch per key: Python %.1f ns, C %.1f ns, ratio %.2f: target 1.5 %s" % (
    many, c_many[2], many / c_many[2], "met" if many <= 1.5 * c_many[2] else "missed"))
print("  redis-py GETBIT pipeline / Python check: %.0fx; BF.EXISTS over TCP / Python check: %.0fx" % (
    getbit / chk, bfexists / chk))
