#!/usr/bin/env python3
"""bench-fleet.py - the fleet row of the benchmarks: three shmd nodes and one
Redis on this machine (the harness of tests/fleet/), workers on every node
adding at a fixed rate through libshmf, and what that costs and gives:

  - replication lag, add on node1 until visible on node2, p50/p99, measured
    by a worker of its own (1000 keys/s) while the load runs;
  - CPU of Redis and of each shmd over the load (from /proc/PID/stat), as a
    share of one core;
  - a replicated against a plain add on node1, in the live fleet (shmd
    draining the journal meanwhile): ns per add of new keys, alternating;
  - the sender's rate with a backlog: a worker adds a burst as fast as it
    can on node1 (into one ring), and node1's signed XADDs drain it; journal
    entries sent per second between 10% and 90% of the burst;
  - with --fleet-mac PATH: bench-fleet-mac, the authentication alone (the
    key derived once; a batch's tags signed and verified, per batch and
    per entry);
  - with --replicas-wait N: the Redis gets a replica (a second
    redis-server) and the nodes replicas_wait = N, so that every figure
    above includes WAIT's cost (run it with and without, side by side);
  - with --bench-filter PATH: bench-filter's replicated rows (the same
    adds and checks on a twin filter that journals, 1M and 100M keys; 1M
    only with --quick), printed as it prints them.

  bench/bench-fleet.py --shmd PATH --shmctl PATH --worker PATH
                       [--bench-filter PATH] [--fleet-mac PATH] [--rate N] [--seconds S]
                       [--replicas-wait N] [--quick]

Timing is never asserted: --quick (small, a few seconds) only proves that
the bench still runs (suite bench). Figures print as "FIGURE name = value".
"""

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fleet"))
from fleet import Failure, Fleet, Redis, check, figure, wait_for  # noqa: E402


CLK_TCK = os.sysconf("SC_CLK_TCK")


def dropped(status):
    return int(status.get("dropped_journal_full", 0)) + int(status.get("missed", 0))


def cpu_ticks(pid):
    """utime + stime of @pid, in clock ticks (fields 14 and 15 of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def sender_rate(node, burst):
    """Journal entries per second node's sender sends while a backlog
    waits: a burst added as fast as a worker can, sent counted from 10% to
    90% of it."""
    base = int(node.status("clicks")["sent"])
    w = node.worker_bg("add", "clicks", "--prefix", "burst:", "--count", burst)
    marks, deadline = {}, time.monotonic() + 120
    while len(marks) < 2 and time.monotonic() < deadline:
        sent, now = int(node.status("clicks")["sent"]) - base, time.monotonic()
        for frac in (0.1, 0.9):
            if frac not in marks and sent >= frac * burst:
                marks[frac] = now
        time.sleep(0.002)
    r = node.fleet.collect(w)
    check(len(marks) == 2, "node1 sent %d of a burst of %d within 120 s" % (sent, burst))
    return 0.8 * burst / max(marks[0.9] - marks[0.1], 1e-6), r


def start(f, filters, replicas_wait):
    """The fleet: with @replicas_wait, a Redis with a replica and nodes
    that WAIT for that many replicas."""
    if not replicas_wait:
        # Rings that hold one run of the add loop below (shmd drains between runs).
        return f.start(3, filters, journal_entries=262144)
    f.start_redis()
    f.redis.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
    f.replica = Redis(f, name="redis-replica")
    f.replica.extra = ["--replicaof", "127.0.0.1", str(f.redis.port)]
    f.replica.start()
    # In sync before any WAIT: a WAIT during the first sync times out.
    wait_for("the replica in sync", lambda: "master_link_status:up" in f.replica.call("INFO", "replication"), 30)
    for _ in range(3):
        f.add_node(filters, journal_entries=262144, replicas_wait=replicas_wait)
    for x in f.nodes:
        f.wait_state(x, "clicks", "following")
    print("with a replica and replicas_wait = %d" % replicas_wait)
    return f.nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shmd", required=True)
    ap.add_argument("--shmctl", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--bench-filter")
    ap.add_argument("--fleet-mac", help="bench-fleet-mac: the authentication's cost alone")
    ap.add_argument("--rate", type=int, help="adds per second per node (default 20000; --quick 2000)")
    ap.add_argument("--seconds", type=float, help="length of the load (default 20; --quick 3)")
    ap.add_argument("--replicas-wait", type=int, default=0, help="a replica, and replicas_wait = N on the nodes")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    rate = a.rate or (2000 if a.quick else 20000)
    secs = a.seconds or (3 if a.quick else 20)
    capacity = 1000000 if a.quick else 20000000
    build = {"shmd": a.shmd, "shmctl": a.shmctl, "worker": a.worker}
    bloom = {"type": "bloom", "capacity": str(capacity), "fpr": "0.000001", "replicate": "yes"}
    plain = dict(bloom)
    del plain["replicate"]
    n = int(rate * secs)
    print("fleet: 3 nodes, 1 Redis, a Bloom filter of %d keys at 1e-6 on each; %d adds/s per node for %.0f s"
          % (capacity, rate, secs))  # fmt: skip
    with Fleet(build, "bench-fleet") as f:
        nodes = start(f, {"clicks": bloom, "plain": plain}, a.replicas_wait)
        pids = {"redis": f.redis.proc.pid}
        if a.replicas_wait:
            pids["redis-replica"] = f.replica.proc.pid
        pids.update({x.name: x.proc.pid for x in nodes})
        before = {k: cpu_ticks(p) for k, p in pids.items()}
        t0 = time.monotonic()
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", rate) for x in nodes]
        lag_n = int(min(1000 * secs * 0.8, 20000))
        lag = nodes[0].worker("lag", "clicks", "--to", nodes[1].run, "--prefix", "lag:", "--count", lag_n,
                              "--rate", 1000, "--timeout-ms", 10000)  # fmt: skip
        res = [f.collect(w) for w in ws]
        wall = time.monotonic() - t0
        after = {k: cpu_ticks(p) for k, p in pids.items()}
        for r in res:
            check(r["errors"] == 0, "a worker's adds failed: %r" % r)
        behind = [r["elapsed_s"] for r in res]
        print("workers: %d adds each in %s s (the schedule: %.1f s); slowest add %.1f us"
              % (n, ", ".join("%.1f" % b for b in behind), secs, max(r["max_add_us"] for r in res)))  # fmt: skip
        for x in nodes:
            f.wait_keys("clicks", x.name + ":", n, timeout=120)
        figure("fleet_add_rate", 3 * rate, "adds/s in all (3 nodes x %d)" % rate)
        figure("fleet_lag_p50_ms", lag["p50_ms"], "ms (node1 -> node2, %d keys at 1000/s, under the load)" % lag_n)
        figure("fleet_lag_p99_ms", lag["p99_ms"], "ms")
        figure("fleet_lag_max_ms", lag["max_ms"], "ms")
        figure("fleet_lag_lost", lag["lost"], "keys not seen within 10 s")
        for k in pids:
            figure("fleet_cpu_%s" % k, "%.1f" % (100.0 * (after[k] - before[k]) / CLK_TCK / wall), "% of one core")
        s = nodes[0].status("clicks")
        figure("fleet_reported_lag_p50_ms", s.get("lag_p50_ms"), "(SHMF.REPLICATION on node1)")
        figure("fleet_reported_lag_p99_ms", s.get("lag_p99_ms"))
        mem = f.redis.call("MEMORY", "USAGE", "shmf:clicks")
        xlen = f.redis.call("XLEN", "shmf:clicks")
        figure("fleet_stream_entries", xlen, "(%s bytes in Redis)" % mem)

        sp = nodes[0].worker("speed", "clicks", "--plain", "plain", "--prefix", "speed:",
                             "--count", 200000 if a.quick else 2000000)  # fmt: skip
        figure("fleet_add_replicated_ns", sp["replicated_ns"], "ns per add of a new key (live fleet, node1)")
        figure("fleet_add_plain_ns", sp["plain_ns"], "ns (a filter of the same shape that does not replicate)")
        figure("fleet_add_ratio", sp["ratio"], "x")
        s = nodes[0].status("clicks")
        check(dropped(s) == 0, "the add loop overflowed node1's journal: %r" % s)

        burst = 50000 if a.quick else 250000  # within one ring of 262,144: nothing dropped
        rate_sent, r = sender_rate(nodes[0], burst)
        figure("fleet_sender_entries_per_s", int(rate_sent),
               "journal entries/s node1 sends with a backlog (signed XADDs of up to 512 entries, pipelined)")  # fmt: skip
        figure("fleet_burst_add_per_s", int(burst / max(r["elapsed_s"], 1e-6)),
               "adds/s of the one worker that made the backlog")  # fmt: skip
        s = nodes[0].status("clicks")
        check(dropped(s) == 0, "the burst overflowed node1's journal: %r" % s)
        for x in nodes[1:]:
            f.wait_keys("clicks", "burst:", burst, nodes=[x], timeout=120)
            check(sum(int(v) for k, v in x.status("clicks").items() if k.startswith("refused_")) == 0,
                  "%s refused entries of its own fleet: %r" % (x.name, x.status("clicks")))  # fmt: skip

    if a.fleet_mac:
        out = subprocess.run([a.fleet_mac] + (["--quick"] if a.quick else []), capture_output=True, text=True,
                             timeout=600)  # fmt: skip
        check(out.returncode == 0, "bench-fleet-mac failed: %s" % out.stderr)
        print(out.stdout, end="")

    if a.bench_filter:
        args = [a.bench_filter, "--demo" if a.quick else "--no-attach"]
        print("\n%s (replicated rows)" % " ".join(os.path.basename(x) for x in args))
        out = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        check(out.returncode == 0, "bench-filter failed: %s" % out.stderr)
        rows = [ln for ln in out.stdout.splitlines() if re.search(r"replicated|^\S*\s*shmf_add of new keys|pages", ln)]
        check(any("replicated" in r for r in rows), "bench-filter printed no replicated row")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("bench-fleet: %s" % e, file=sys.stderr)
        sys.exit(1)
