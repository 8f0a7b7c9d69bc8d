#!/usr/bin/env python3
"""test-fleet.py - a fleet of shmd nodes and one Redis on this machine, with
real workers adding through libshmf (tests/fleet/fleet-worker), and the
faults it must survive. One case per run (suite fleet in tests/meson.build):

  everywhere  every key added on any of 3 nodes is found on every node
              (Bloom; cuckoo adds and deletes); replication lag p50/p99 at a
              fixed add rate; the operator's view (SHMF.REPLICATION, shmctl
              replication --json); shmctl create --replicate; a node whose
              filter has another shape refuses the entries and says so
  redis-fault Redis stopped (SIGSTOP), then killed and restarted (appendonly):
              workers' adds and checks never stall or fail (the slowest add
              is printed and bounded); the nodes say disconnected, then
              converge; every key on every node, nothing dropped
  node-kill   a node's shmd SIGKILLed and restarted while the others (and a
              worker on it) add: it catches up from its cursor, nothing lost;
              a node whose runtime directory is deleted recovers through
              `shmctl pull` from a peer, another through its own snapshot
              (restore, then replay from the snapshot's cursor)
  duplicates  a node's cursor moved back (shmd stopped, the cursor in its
              slot rewritten) replays entries it has applied: Bloom filters
              stay bit for bit equal to the other nodes', a cuckoo filter
              holds one more copy of each replayed add, as docs/fleet.md
              says; a restore of an older snapshot replays from its cursor
  overflow    a journal of 16 entries a ring, Redis stopped, many adds: the
              overflow is counted in SHMF.REPLICATION and shmctl replication
              --json, the peers miss at most that many keys, and shmctl merge
              (one peer) and shmctl pull (another) repair them
  windows     a 2 s window of 3 generations: every node's generations begin
              at the same wall-clock window numbers; entries of a retired
              window are dropped and counted, entries of a live older window
              go into that window's generation (and leave with it)
  capped      a cuckoo capped add (cap 4) of the same keys from workers on 3
              nodes at once, and paced: how far the fleet-wide count
              overshoots 4 is printed; a node's own adds never pass the cap,
              and 3 workers on one node store exactly 4
  authenticated  a rogue client with write access to Redis: random
              well-formed entries, unsigned ones, real batches altered,
              replays, entries naming each node: each kind refused and
              counted on every node, none applied, never-added keys answer
              present at the declared rate; replays refused after a
              restart; a node of another secret refused, the log naming it
  hostile-streams  the largest stream id in one stream, a string at
              another's name, a stream deleted, Redis restarted without its
              data: each affects its own filter, reported with its cause;
              the others are sent and followed throughout
  badconfig   Redis unreachable at start (shmd serves, state disconnected,
              then following once Redis is up), a wrong Redis password, no
              secret, `replicate` without [replication], REPLICATE without
              it, an unknown key: each error names what is wrong

Figures are printed as "FIGURE name = value"; SHMF_FLEET_SCALE (the
sanitizer build sets it below 1) scales key counts and rates, never to a
skip.

Usage: test-fleet.py CASE --shmd PATH --shmctl PATH --worker PATH [--redis-server PATH]
"""

import argparse
import json
import os
import random
import shutil
import signal
import sys
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Failure, Fleet, Resp, RespError, check, figure, scaled, stream_id, wait_for  # noqa: E402

BLOOM = {"type": "bloom", "capacity": "1000000", "fpr": "0.0001", "replicate": "yes"}
CUCKOO = {"type": "cuckoo", "capacity": "100000", "fpr": "0.001", "replicate": "yes"}
# A worker's add or check over 50 ms (the issue's bound) is counted by the
# worker (which says the bound as slow_ms): at most SLOW_PCT % of them may
# be, and none over OUTLIER_MS. The
# machine that runs the suite deschedules a process for that long now and
# then (2 cores, three nodes, Redis, workers and another test: a CI run saw
# a 297 ms check); an add that waited on Redis would wait its 5 s timeout.
SLOW_PCT = 1
OUTLIER_MS = 1000


def find_filter(doc, name):
    """The object describing filter @name anywhere in a JSON document
    (shmctl replication --json), or None."""
    if isinstance(doc, dict):
        if doc.get("name") == name or doc.get("filter") == name:
            return doc
        if isinstance(doc.get(name), dict):
            return dict(doc[name], name=name)
        for v in doc.values():
            r = find_filter(v, name)
            if r is not None:
                return r
    elif isinstance(doc, list):
        for v in doc:
            r = find_filter(v, name)
            if r is not None:
                return r
    return None


def num(status, field):
    """An integer field of a replication status; fails naming it if absent."""
    check(field in status, "SHMF.REPLICATION has no field %s: %r" % (field, status))
    return int(status[field])


def dropped(status):
    return num(status, "dropped_journal_full")


def workers_ok(results, what):
    """Every worker's adds and checks succeeded and none stalled; returns
    the slowest add and check (µs)."""
    slowest = max(r["max_add_us"] for r in results)
    slowest_check = max(r["max_check_us"] for r in results)
    for r in results:
        check(r["errors"] == 0, "%s: a worker's add failed: %r" % (what, r))
        check(r["failed_checks"] == 0, "%s: a worker did not find a key it had added: %r" % (what, r))
    calls = sum(r["count"] * (1 if r["op"] == "del" else 2) for r in results)
    slow = sum(r["slow_adds"] + r["slow_checks"] for r in results)
    check(
        slowest < OUTLIER_MS * 1000,
        "%s: the slowest add took %.1f ms (bound %.0f ms): a worker stalled" % (what, slowest / 1000, OUTLIER_MS),
    )
    check(
        slowest_check < OUTLIER_MS * 1000,
        "%s: the slowest check took %.1f ms (bound %.0f ms)" % (what, slowest_check / 1000, OUTLIER_MS),
    )
    check(
        slow * 100 <= calls * SLOW_PCT,
        "%s: %d of %d adds and checks took over %.0f ms (at most %d %% may)"
        % (what, slow, calls, results[0]["slow_ms"], SLOW_PCT),
    )
    return slowest, slowest_check


# ---- harness ---------------------------------------------------------------


def case_harness(build):
    """The harness itself, on filters that do not replicate: a Redis and 3
    nodes start; workers add and check on each node; Redis is stopped,
    killed and restarted with its data; everything stops cleanly (shmd
    exits 0 on SIGTERM) and no process is left."""
    plain = {"type": "bloom", "capacity": "100000", "fpr": "0.001"}
    with Fleet(build, "harness") as f:
        nodes = f.start(3, {"clicks": plain, "caps": {k: v for k, v in CUCKOO.items() if k != "replicate"}}, appendonly=True, replicated=False)
        n = scaled(2000, 200)
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", 4000) for x in nodes]
        workers_ok([f.collect(w) for w in ws], "workers on 3 nodes")
        for x in nodes:
            check(x.missing("clicks", x.name + ":", n) == 0, "%s lost its own keys" % x.name)
            other = "node1:" if x.name != "node1" else "node2:"
            check(x.missing("clicks", other, n) > n * 0.99, "%s has another node's keys without replication" % x.name)
        lag = nodes[0].worker("lag", "clicks", "--to", nodes[0].run, "--prefix", "self:", "--count", 100, "--rate", 1000)
        check(lag["lost"] == 0 and lag["p99_ms"] < 1000, "lag of a node to itself: %r" % lag)
        r = nodes[0].worker("capped", "caps", "--prefix", "cap:", "--keys", 2, "--cap", 4, "--attempts", 6)
        check(r["stored"] == [4, 4], "capped adds on one node: %r" % r)
        f.redis.call("XADD", "shmf:probe", "*", "v", "1")
        f.redis.pause()
        f.redis.kill()
        f.redis.restart()
        check(f.stream_last_id("probe") > (0, 0), "Redis lost its appendonly data across a restart")
        s = nodes[1].worker("slot", "clicks")
        check(s["flags"] == 0 and s["cursor"] == "0-0", "a filter that does not replicate: %r" % s)
        d = [x.worker("digest", "clicks")["digest"] for x in nodes]
        check(len(set(d)) == 3, "3 nodes with different keys have equal bits: %r" % d)
        pids = [x.proc.pid for x in nodes] + [f.redis.proc.pid]
    gone = [p for p in pids if os.path.exists("/proc/%d" % p)]
    check(not gone, "processes left after the fleet stopped: %r" % gone)
    print("harness: Redis and 3 nodes started, workers added and checked, Redis restarted with its data, all stopped")


# ---- everywhere ------------------------------------------------------------


def case_everywhere(build):
    with Fleet(build, "everywhere") as f:
        nodes = f.start(3, {"clicks": BLOOM, "seen": CUCKOO})
        n, rate = scaled(3000), scaled(2000)
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", rate) for x in nodes]
        workers_ok([f.collect(w) for w in ws], "3 workers adding")
        took = f.wait_keys("clicks", "node1:", n)
        took += f.wait_keys("clicks", "node2:", n)
        took += f.wait_keys("clicks", "node3:", n)
        print("every key of %d (3 x %d at %d/s per node) on every node, %.2f s after the adds ended" % (3 * n, n, rate, took))

        # Lag: one key at a time at a fixed rate on A, polled on B.
        lag_n, lag_rate = scaled(2000, 200), scaled(1000, 100)
        for a, b in ((nodes[0], nodes[1]), (nodes[2], nodes[0])):
            lag = a.worker("lag", "clicks", "--to", b.run, "--prefix", "lag-%s:" % a.name, "--count", lag_n,
                           "--rate", lag_rate, "--timeout-ms", 10000)  # fmt: skip
            check(lag["lost"] == 0, "%s -> %s: %d of %d keys not visible within 10 s" % (a.name, b.name, lag["lost"], lag_n))
            tag = "lag_%s_to_%s" % (a.name, b.name)
            figure(tag + "_p50_ms", lag["p50_ms"], "ms (%d keys at %d/s)" % (lag_n, lag_rate))
            figure(tag + "_p99_ms", lag["p99_ms"], "ms")
            figure(tag + "_max_ms", lag["max_ms"], "ms")

        # Cuckoo: adds on node1, then deletes of half of them on node2.
        c = scaled(1000, 100)
        nodes[0].worker("add", "seen", "--prefix", "c:", "--count", c)
        f.wait_keys("seen", "c:", c)
        r = nodes[1].worker("add", "seen", "--op", "del", "--prefix", "c:", "--count", c // 2)
        check(r["positive"] == c // 2, "node2: deleting %d keys removed %d" % (c // 2, r["positive"]))
        for x in nodes:
            def settled(x=x):
                gone = x.worker("count", "seen", "--prefix", "c:", "--count", c // 2)["counts"]
                kept = x.worker("count", "seen", "--prefix", "c:", "--from", c // 2, "--count", c - c // 2)["counts"]
                return gone[0] == c // 2 and kept[1] == c - c // 2

            wait_for("%s: the deleted half of c: at 0 copies, the rest at 1" % x.name, settled, 20)
        print("cuckoo: %d adds on node1 and %d deletes on node2 counted alike on every node" % (c, c // 2))

        # The operator's view.
        for x in nodes:
            s = x.status("clicks")
            check(s.get("state") == "following", "%s: clicks state %r, expected following" % (x.name, s.get("state")))
            for field in ("cursor", "lag_p50_ms", "lag_p99_ms", "journal_depth", "sent", "applied",
                          "dropped_retired_window", "dropped_future_window", "dropped_foreign_shape", "missed",
                          "lost"):  # fmt: skip
                check(field in s, "%s: SHMF.REPLICATION clicks has no %s: %r" % (x.name, field, s))
            check(num(s, "sent") > 0 and num(s, "applied") > 0, "%s: sent/applied not counted: %r" % (x.name, s))
            check(dropped(s) == 0 and num(s, "dropped_foreign_shape") == 0 and num(s, "dropped_future_window") == 0,
                  "%s: dropped entries: %r" % (x.name, s))
            seen = {p.get("node") for p in s["nodes"]}
            others = {y.name for y in nodes if y is not x}
            check(others <= seen, "%s: nodes heard from %r, expected %r" % (x.name, seen, others))
            figure("%s_clicks_sent" % x.name, num(s, "sent"))
            figure("%s_clicks_applied" % x.name, num(s, "applied"))
            figure("%s_reported_lag_p50_ms" % x.name, s["lag_p50_ms"])
            figure("%s_reported_lag_p99_ms" % x.name, s["lag_p99_ms"])
        out = nodes[0].shmctl("replication", "--json").stdout
        doc = json.loads(out)
        js = find_filter(doc, "clicks")
        check(js is not None and js.get("state") == "following", "shmctl replication --json: clicks not following: %s" % out)
        human = nodes[0].shmctl("replication").stdout
        check("clicks" in human and "following" in human, "shmctl replication: %s" % human)

        # A filter made at run time with shmctl create --replicate.
        for x in nodes:
            x.shmctl("create", "dyn", "--capacity", 10000, "--fpr", 0.001, "--replicate")
        for x in nodes:
            f.wait_state(x, "dyn", "following")
        nodes[2].worker("add", "dyn", "--prefix", "d:", "--count", 100)
        f.wait_keys("dyn", "d:", 100)

        # Another shape of the same name: refused, counted and reported.
        nodes[0].shmctl("create", "shape", "--capacity", 10000, "--fpr", 0.001, "--replicate")
        nodes[1].shmctl("create", "shape", "--capacity", 10000, "--fpr", 0.001, "--replicate")
        nodes[2].shmctl("create", "shape", "--capacity", 20000, "--fpr", 0.001, "--replicate")
        nodes[0].worker("add", "shape", "--prefix", "s:", "--count", 100)
        f.wait_keys("shape", "s:", 100, nodes=[nodes[1]])
        s = wait_for("node3: entries of node1's shape counted as foreign",
                     lambda: num(nodes[2].status("shape"), "dropped_foreign_shape") > 0 and nodes[2].status("shape"), 20)  # fmt: skip
        check(nodes[2].missing("shape", "s:", 100) >= 99, "node3 applied entries of another shape")
        foreign = [p for p in s["nodes"] if p.get("node") == "node1"]
        check(foreign and int(foreign[0].get("foreign_shape", 0)) == 1, "node3 does not name node1 as foreign: %r" % s)
        figure("node3_dropped_foreign_shape", num(s, "dropped_foreign_shape"))


# ---- redis-fault -----------------------------------------------------------


def case_redis_fault(build):
    with Fleet(build, "redis-fault") as f:
        nodes = f.start(3, {"clicks": BLOOM, "seen": CUCKOO}, appendonly=True)
        rate, secs = scaled(1000, 100), 12
        n = rate * secs
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", rate) for x in nodes]
        # Cuckoo adds too: a batch sent twice (XADD retried after a timeout
        # that Redis did carry out) stores a key twice elsewhere; counted.
        cw = nodes[0].worker_bg("add", "seen", "--prefix", "c:", "--count", n, "--rate", rate)
        # A schedule, not an assertion: the faults come while the workers
        # add. First Redis stopped longer than shmd's 5 s timeout, then
        # continued (what it had read meanwhile it carries out); then
        # stopped again and killed.
        time.sleep(1)
        f.redis.pause()
        time.sleep(6)
        f.redis.resume()
        time.sleep(1)
        f.redis.pause()
        t_stop = time.monotonic()
        time.sleep(2)
        f.redis.kill()
        stopped = time.monotonic() - t_stop
        for x in nodes:
            f.wait_state(x, "clicks", "disconnected", timeout=15)
        down = time.monotonic() - t_stop
        f.redis.restart()
        t_back = time.monotonic()
        for x in nodes:
            f.wait_state(x, "clicks", "following", timeout=30)
        reconnect = time.monotonic() - t_back
        results = [f.collect(w) for w in ws + [cw]]
        t_end = time.monotonic()
        slowest, slowest_check = workers_ok(results, "adds through Redis stopped, killed and restarted")
        for x in nodes:
            f.wait_keys("clicks", x.name + ":", n, timeout=60)
        f.wait_keys("seen", "c:", n, timeout=60)
        converged = time.monotonic() - t_end
        for x in nodes:
            s = x.status("clicks")
            check(dropped(s) == 0 and num(s, "missed") == 0, "%s: journal entries dropped: %r" % (x.name, s))
        copies = [x.worker("count", "seen", "--prefix", "c:", "--count", n)["counts"] for x in nodes[1:]]
        check(copies[0][0] == 0 and copies[1][0] == 0, "cuckoo keys lost: %r" % copies)
        figure("redis_fault_keys", 3 * n, "Bloom (3 workers x %d at %d/s), and %d cuckoo on node1" % (n, rate, n))
        figure("redis_fault_stopped_s", "6.0 then %.1f" % stopped, "(SIGSTOP and SIGCONT; SIGSTOP, then SIGKILL)")
        figure("redis_fault_down_s", "%.1f" % down, "(until restarted with its AOF)")
        figure("redis_fault_reconnected_s", "%.2f" % reconnect, "(every node following after the restart)")
        figure("redis_fault_slowest_add_us", "%.1f" % slowest)
        figure("redis_fault_slowest_check_us", "%.1f" % slowest_check)
        figure("redis_fault_converged_s", "%.2f" % converged, "(every key on every node, after the last add)")
        figure("redis_fault_lost_keys", 0)
        figure("redis_fault_cuckoo_keys_stored_twice", "%d, %d" % (sum(copies[0][2:]), sum(copies[1][2:])),
               "of %d on node2, node3 (batches sent again after a timeout)" % n)  # fmt: skip


# ---- node-kill -------------------------------------------------------------


def case_node_kill(build):
    with Fleet(build, "node-kill") as f:
        nodes = f.start(3, {"clicks": BLOOM})
        a, b, c = nodes
        rate, secs = scaled(1000, 100), 6
        n = rate * secs
        # A worker on b too: its adds journal while its shmd is dead.
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", rate) for x in nodes]
        time.sleep(1.5)
        cursor_before = b.worker("slot", "clicks")["cursor"]
        b.stop(signal.SIGKILL)
        time.sleep(2)
        b.start()
        f.wait_state(b, "clicks", "following")
        workers_ok([f.collect(w) for w in ws], "adds while node2's shmd was killed")
        t_end = time.monotonic()
        for x in nodes:
            f.wait_keys("clicks", x.name + ":", n, timeout=60)
        s = b.status("clicks")
        check(dropped(s) == 0, "node2: entries dropped across its kill: %r" % s)
        check(stream_id(s.get("cursor")) > stream_id(cursor_before), "node2's cursor did not move on from %s" % cursor_before)
        figure("node_kill_caught_up_s", "%.2f" % (time.monotonic() - t_end), "(every key on every node, after the last add)")
        figure("node_kill_keys", 3 * n)
        figure("node_kill_lost_keys", 0)

        # Runtime directory lost: a fresh node2, then shmctl pull from node1
        # while node1 keeps adding.
        b.stop(signal.SIGKILL)
        shutil.rmtree(b.run)
        m = scaled(2000, 200)
        w = a.worker_bg("add", "clicks", "--prefix", "after-loss:", "--count", m, "--rate", rate)
        b.start()
        r = b.shmctl("pull", "clicks", "--from", "127.0.0.1:%d" % a.tcp_port, "--password", a.password)
        print("node2 (runtime directory deleted): shmctl pull: %s" % (r.stdout.strip() or r.stderr.strip()))
        workers_ok([f.collect(w)], "node1 adding during the pull")
        t_pull = time.monotonic()
        for p in ("node1:", "node2:", "node3:"):
            f.wait_keys("clicks", p, n, nodes=[b])
        f.wait_keys("clicks", "after-loss:", m, nodes=[b])
        figure("dir_lost_pull_complete_s", "%.2f" % (time.monotonic() - t_pull), "(every key on node2 after the pull)")

        # Another way back: node3 restores its own snapshot and replays
        # the stream from the snapshot's cursor.
        snap = os.path.join(c.snap, "clicks-own.snap")
        c.shmctl("snapshot", "clicks", snap)
        w = a.worker_bg("add", "clicks", "--prefix", "after-snap:", "--count", m, "--rate", rate)
        time.sleep(0.5)
        c.stop(signal.SIGKILL)
        shutil.rmtree(c.run)
        c.start()
        c.shmctl("restore", "clicks", snap)
        workers_ok([f.collect(w)], "node1 adding while node3 was restored")
        for p in ("node1:", "node2:", "node3:"):
            f.wait_keys("clicks", p, n, nodes=[c])
        f.wait_keys("clicks", "after-snap:", m, nodes=[c])
        print("node3 (runtime directory deleted): its own snapshot restored, every key after replay")


# ---- duplicates ------------------------------------------------------------


def case_duplicates(build):
    with Fleet(build, "duplicates") as f:
        nodes = f.start(3, {"dupb": BLOOM, "dupc": CUCKOO})
        a, b, c = nodes
        n = scaled(2000, 200)
        for filt in ("dupb", "dupc"):
            a.worker("add", filt, "--prefix", "one:", "--count", n)
            f.wait_keys(filt, "one:", n)
        f.wait_caught_up("dupb")
        f.wait_caught_up("dupc")
        back = {filt: b.worker("slot", filt)["cursor"] for filt in ("dupb", "dupc")}
        snap = os.path.join(c.snap, "dupb-older.snap")
        c.shmctl("snapshot", "dupb", snap)

        for filt in ("dupb", "dupc"):
            a.worker("add", filt, "--prefix", "two:", "--count", n)
            f.wait_keys(filt, "two:", n)
        f.wait_caught_up("dupb")
        f.wait_caught_up("dupc")
        digests = [x.worker("digest", "dupb")["digest"] for x in nodes]
        check(len(set(digests)) == 1, "Bloom bits differ across nodes before any replay: %r" % digests)
        applied = {filt: num(b.status(filt), "applied") for filt in ("dupb", "dupc")}
        ahead = {filt: b.worker("slot", filt)["cursor"] for filt in ("dupb", "dupc")}

        # Move node2's cursor back (shmd stopped), so that it applies the
        # entries of "two:" a second time.
        check(b.stop(signal.SIGTERM) == 0, "node2: shmd did not exit 0 on SIGTERM")
        for filt in ("dupb", "dupc"):
            b.worker("set-cursor", filt, "--cursor", back[filt])
        b.start()
        for filt in ("dupb", "dupc"):
            f.wait_state(b, filt, "following")
            wait_for(
                "node2: %s's cursor back at %s" % (filt, ahead[filt]),
                lambda: stream_id(b.worker("slot", filt)["cursor"]) >= stream_id(ahead[filt]),
                20,
            )
        replayed = {filt: num(b.status(filt), "applied") for filt in ("dupb", "dupc")}
        print("node2 applied after the replay: %r (before: %r; counters may restart with shmd)" % (replayed, applied))
        digests = [x.worker("digest", "dupb")["digest"] for x in nodes]
        check(len(set(digests)) == 1, "Bloom bits differ after a duplicated delivery: %r" % digests)
        print("Bloom: the replayed entries left node2 bit for bit equal to node1 and node3 (%s)" % digests[0])

        # Cuckoo: every replayed add stored one more copy on node2 only.
        counts = {x.name: x.worker("count", "dupc", "--prefix", "two:", "--count", n)["counts"] for x in nodes}
        ones = {x.name: x.worker("count", "dupc", "--prefix", "one:", "--count", n)["counts"] for x in nodes}
        print("cuckoo copies of the replayed keys (histogram 0..8): %r" % counts)
        # A count is of a key's fingerprint in its two buckets, so a key
        # that shares both with another key (about 2 in 4,000 here, by the
        # run's seed) counts the other's copies too. A key counted once on
        # node1 shares them with no key: on node2 it counts exactly 2 (its
        # add replayed once); a key counted c >= 2 on node1 counts at least
        # c + 1 on node2. So node2's 2s are node1's 1s, and node2 has no key
        # under 2. node1 and node3 hold the same adds: the same histogram.
        check(counts["node1"] == counts["node3"], "node1/node3 counts differ: %r" % counts)
        check(counts["node1"][0] == 0 and counts["node1"][1] >= n * 0.95, "node1 counts changed: %r" % counts)
        check(counts["node2"][0] == 0 and counts["node2"][1] == 0, "node2 lost replayed keys: %r" % counts["node2"])
        check(
            counts["node2"][2] == counts["node1"][1],
            "node2: expected 2 copies of each replayed add counted once elsewhere (%d): %r"
            % (counts["node1"][1], counts["node2"]),
        )
        # Keys added before the moved cursor were not replayed: one counted
        # once on node1 is counted once on node2 too.
        check(ones["node1"] == ones["node3"], "keys before the moved cursor differ on node1/node3: %r" % ones)
        check(
            ones["node2"][0] == 0 and ones["node2"][1] == ones["node1"][1] and ones["node1"][1] >= n * 0.95,
            "keys before the moved cursor changed: %r" % ones,
        )
        figure("duplicates_replayed_entries", n, "per filter")
        figure("duplicates_bloom_bits_changed", 0)
        figure("duplicates_cuckoo_extra_copies", counts["node2"][2], "of %d replayed adds" % n)

        # A restore of an older snapshot on a live node: it replays the
        # stream from the snapshot's cursor.
        c.shmctl("restore", "dupb", snap)
        f.wait_keys("dupb", "two:", n, nodes=[c])
        digests = [x.worker("digest", "dupb")["digest"] for x in nodes]
        check(len(set(digests)) == 1, "Bloom bits differ after an older snapshot's replay: %r" % digests)
        print("node3: an older snapshot restored, replayed from its cursor, bit for bit equal again")


# ---- overflow --------------------------------------------------------------


def case_overflow(build):
    with Fleet(build, "overflow") as f:
        # node1 with tiny rings (the one that overflows); the others with
        # the default, so that their own adds below never overflow.
        f.start_redis()
        # auto_repair = off: the operator's repair, as before self-repair
        # (case self-repair shows the nodes doing it themselves).
        a = f.add_node({"clicks": BLOOM}, journal_entries=16, journal_rings=4, auto_repair="off")
        b, c = f.add_node({"clicks": BLOOM}, auto_repair="off"), f.add_node({"clicks": BLOOM}, auto_repair="off")
        nodes = [a, b, c]
        for x in nodes:
            f.wait_state(x, "clicks", "following")
        k = scaled(500, 50)
        b.worker("add", "clicks", "--prefix", "b:", "--count", k, "--rate", 2000)
        f.wait_keys("clicks", "b:", k)

        f.redis.pause()
        n = scaled(20000, 2000)
        r = a.worker("add", "clicks", "--prefix", "o:", "--count", n)
        check(r["errors"] == 0 and r["failed_checks"] == 0, "adds with a full journal failed: %r" % r)
        s = wait_for("node1: the journal overflow counted", lambda: dropped(a.status("clicks")) > 0 and a.status("clicks"), 10)
        f.redis.resume()
        f.wait_caught_up("clicks")
        s = a.status("clicks")
        lost_entries = dropped(s) + num(s, "missed")
        miss = {x.name: x.missing("clicks", "o:", n) for x in (b, c)}
        check(a.missing("clicks", "o:", n) == 0, "node1 lost its own adds")
        for name, m in miss.items():
            check(0 < m <= lost_entries, "%s misses %d keys; node1 reported %d entries not journalled" % (name, m, lost_entries))
        doc = json.loads(a.shmctl("replication", "--json").stdout)
        js = find_filter(doc, "clicks")
        check(js is not None and int(js.get("dropped_journal_full", -1)) == dropped(s),
              "shmctl replication --json does not report the overflow: %r" % js)  # fmt: skip
        figure("overflow_adds", n, "(on node1, 16-entry rings, Redis stopped)")
        figure("overflow_dropped_journal_full", dropped(s))
        figure("overflow_missed", num(s, "missed"))
        figure("overflow_missing_on_node2", miss["node2"])
        figure("overflow_missing_on_node3", miss["node3"])

        # Repair: node2 merges a snapshot of node1, node3 pulls from node1.
        snap = os.path.join(a.snap, "clicks-repair.snap")
        a.shmctl("snapshot", "clicks", snap)
        b.shmctl("merge", "clicks", snap)
        c.shmctl("pull", "clicks", "--from", "127.0.0.1:%d" % a.tcp_port, "--password", a.password)
        for x in (b, c):
            check(x.missing("clicks", "o:", n) == 0, "%s: keys still missing after the repair" % x.name)
            check(x.missing("clicks", "b:", k) == 0, "%s: the repair lost keys it had" % x.name)
        print("repaired: node2 by shmctl merge, node3 by shmctl pull; every key on every node")


# ---- windows ---------------------------------------------------------------

WINDOW = 2


def views(nodes, filt):
    return [x.worker("slot", filt) for x in nodes]


def window_of(v, i=0):
    return v["live"][i][1] // WINDOW


def case_windows(build):
    with Fleet(build, "windows") as f:
        win = {"type": "bloom", "capacity": "100000", "fpr": "0.001", "window": "%ds" % WINDOW, "generations": "3",
               "replicate": "yes"}  # fmt: skip
        nodes = f.start(3, {"win": win})
        a, b, c = nodes
        # In step: sampled in the second half of a window (shmd rotates on
        # its loop's tick, once a second at most when idle, so a node may
        # start a window up to a second after its boundary), every node's
        # generations began at the same window numbers, and the newest is
        # the current wall-clock window.
        samples, t_end = 0, time.monotonic() + 7
        while time.monotonic() < t_end:
            vs = views(nodes, "win")
            late = [v["now"] % WINDOW for v in vs]
            if all(1.15 < x < WINDOW - 0.05 for x in late) and int(vs[0]["now"]) // WINDOW == int(vs[-1]["now"]) // WINDOW:
                for v in vs:
                    check(v["window_secs"] == WINDOW, "window_secs %r" % v)
                    check(all(g[1] % WINDOW == 0 for g in v["live"]), "a generation began off a window boundary: %r" % v)
                    check(window_of(v) == int(v["now"]) // WINDOW, "newest generation is not the current window: %r" % v)
                common = min(len(v["live"]) for v in vs)
                nums = [[g[1] // WINDOW for g in v["live"][:common]] for v in vs]
                check(all(x == nums[0] for x in nums), "window numbers differ across nodes: %r" % nums)
                samples += 1
            time.sleep(0.1)
        check(samples >= 3, "only %d samples in the second half of a window" % samples)
        figure("windows_in_step_samples", samples)
        print("window numbers of the live generations, last sample: %r" % nums[0])

        # Entries of a window that is retired everywhere before they
        # arrive are dropped and counted; entries of an older window that
        # is still live go into its generation, and leave with it. Redis
        # is stopped meanwhile, so that node1's entries wait in its journal.
        # An add goes to node1's newest generation (which begins up to a
        # tick after the boundary): its window is read from node1's slot.
        n = scaled(500, 50)

        def add_in_window(prefix, after):
            """Wait until node1's newest window is past @after, add @n keys
            there; return that window (the same before and after the adds)."""
            wait_for("node1 in a window after %d" % after, lambda: window_of(a.worker("slot", "win")) > after, 6)
            w = window_of(a.worker("slot", "win"))
            a.worker("add", "win", "--prefix", prefix, "--count", n)
            check(window_of(a.worker("slot", "win")) == w, "node1 rotated during the adds; the window is unknown")
            return w

        def oldest(x):
            return min(g[1] // WINDOW for g in x.worker("slot", "win")["live"])

        w_now = window_of(a.worker("slot", "win"))
        f.redis.pause()
        w0 = add_in_window("w0:", w_now)
        w1 = add_in_window("w1:", w0 + 1)  # two windows on: retired two windows after w0
        wait_for("window %d retired on every node" % w0, lambda: all(oldest(x) > w0 for x in nodes), 12)
        check(all(oldest(x) <= w1 for x in nodes), "window %d retired too soon" % w1)
        f.redis.resume()
        for x in (b, c):
            s = wait_for("%s: the retired window's entries dropped and counted" % x.name,
                         lambda x=x: num(x.status("win"), "dropped_retired_window") >= n and x.status("win"), 10)  # fmt: skip
            figure("%s_dropped_retired_window" % x.name, num(s, "dropped_retired_window"),
                   "entries (%d keys of window %d; a batch sent again after a Redis timeout counts again)" % (n, w0))  # fmt: skip
            check(x.missing("win", "w0:", n) >= n - 1, "%s: keys of a retired window applied" % x.name)
        f.wait_keys("win", "w1:", n, nodes=[b, c], timeout=10)
        print("entries of window %d arrived while it was an older live window, applied on node2 and node3" % w1)
        for x in (b, c):
            check(oldest(x) <= w1, "%s: window %d retired before its keys were checked" % (x.name, w1))
        # ... into its generation: once w1 is retired on a node, its keys are gone there.
        for x in (b, c):
            wait_for("%s: window %d retired" % (x.name, w1), lambda x=x: oldest(x) > w1, 12)
            check(x.missing("win", "w1:", n) >= n - 1, "%s: window %d's keys outlived their generation" % (x.name, w1))
        print("... in window %d's generation: gone with it on node2 and node3" % w1)


# ---- capped ----------------------------------------------------------------


def capped_run(f, nodes, prefix, keys, attempts, interval_us):
    start = time.time_ns() + int(1.0e9)
    ws = [x.worker_bg("capped", "caps", "--prefix", prefix, "--keys", keys, "--cap", 4, "--attempts", attempts,
                      "--interval-us", interval_us, "--start-ns", start) for x in nodes]  # fmt: skip
    res = [f.collect(w) for w in ws]
    for x, r in zip(nodes, res):
        check(r["errors"] == 0, "%s: capped adds failed: %r" % (x.name, r))
        check(r["over_local_cap"] == 0 and max(r["stored"]) <= 4, "%s stored past its cap: %r" % (x.name, r))
    return [sum(r["stored"][i] for r in res) for i in range(keys)]


# The capped case expects each key's copies to reach min(copies stored
# fleet-wide, 8): its two buckets of 4 hold 8 when no other key shares them.
# In a filter of 100,000 keys (about 26,000 buckets) two of the case's 30
# keys share a bucket in about 1 run of 20, and then a key holds fewer (CI
# saw one); in 4,000,000 (about 1,000,000 buckets), about 1 in 500.
CAPS = dict(CUCKOO, capacity="4000000")


def case_capped(build):
    with Fleet(build, "capped") as f:
        nodes = f.start(3, {"caps": CAPS})
        keys = 10
        # One node, three workers: the local cap is exact.
        one = nodes[0]
        totals = capped_run(f, [one, one, one], "local:", keys, 6, 0)
        check(all(t == 4 for t in totals), "3 workers on one node stored %r copies, expected exactly 4 each" % totals)
        print("one node, 3 workers racing, cap 4: exactly 4 copies of each of %d keys" % keys)
        for name, interval in (("burst", 0), ("paced_5ms", 5000)):
            totals = capped_run(f, nodes, name + ":", keys, 6, interval)
            for x in nodes:
                want = [min(t, 8) for t in totals]
                wait_for(
                    "%s: the fleet's copies of every %s key" % (x.name, name),
                    lambda x=x: x.worker("count", "caps", "--prefix", name + ":", "--count", keys)["each"] == want,
                    20,
                )
            over = [t - 4 for t in totals]
            figure("capped_%s_overshoot_mean" % name, "%.1f" % (sum(over) / len(over)), "copies over cap 4, 3 nodes")
            figure("capped_%s_overshoot_max" % name, max(over))
            print("%s: copies stored fleet-wide per key %r" % (name, totals))


# ---- authenticated ---------------------------------------------------------

AUTH_BLOOM = {"type": "bloom", "capacity": "20000", "fpr": "0.01", "replicate": "yes"}
JOP_ADD = 1


def random_batch(n):
    """@n journal entries (hash u64, op u32, window u32, little-endian) of
    random hashes: adds that would set bits all over a filter."""
    return b"".join(
        random.getrandbits(64).to_bytes(8, "little") + JOP_ADD.to_bytes(4, "little") + bytes(4) for _ in range(n)
    )


def as_bytes(v):
    return v if isinstance(v, bytes) else str(v).encode()


class Rogue:
    """A client with nothing but write access to Redis (raw RESP): XADDs
    to a filter's stream, counting what it wrote of each kind."""

    def __init__(self, fleet, filt):
        self.conn = fleet.redis.conn()
        self.stream = "shmf:" + filt
        self.real = [(eid, dict(zip(fl[::2], fl[1::2]))) for eid, fl in self.conn.call("XRANGE", self.stream, "-", "+")]
        check(self.real, "no real entry in %s to copy" % self.stream)
        self.shape = self.real[0][1]["s"]
        self.wrote = {"forged": 0, "altered": 0, "replayed": 0, "impersonating": 0, "unsigned": 0}

    def xadd(self, kind, fields):
        args = ["XADD", self.stream, "*"]
        for k, v in fields:
            args += [k, as_bytes(v)]
        self.conn.call(*args)
        self.wrote[kind] += 1

    def made_up(self, kind, node, entries):
        self.xadd(kind, [("v", "2"), ("n", node), ("s", self.shape), ("q", random.randrange(1, 1 << 62)),
                         ("e", random_batch(entries)), ("m", os.urandom(32))])  # fmt: skip

    def unsigned(self, node, entries):
        self.xadd("unsigned", [("v", "1"), ("n", node), ("s", self.shape), ("e", random_batch(entries))])

    def copies(self, kind, flip):
        """Every real entry again, as it was (a replay) or with one byte of
        its batch flipped (altered)."""
        for _, fl in self.real:
            fields = [(k, as_bytes(v)) for k, v in fl.items()]
            if flip:
                fields = [(k, v if k != "e" else bytes([v[0] ^ 0x5A]) + v[1:]) for k, v in fields]
            self.xadd(kind, fields)


def refused(node, filt):
    s = node.status(filt)
    return {k: int(s.get("refused_" + k, -1)) for k in ("forged", "altered", "replayed", "impersonating", "unsigned")}


def absent_rate(node, filt, count):
    """The fraction of never-added keys node answers present."""
    return (count - node.missing(filt, "never-added:", count)) / count


def case_authenticated(build):
    """A rogue client with write access to Redis: random well-formed
    entries, unsigned (version 1) ones, real batches with a byte flipped,
    replays of real batches and entries naming each node. Every node
    refuses and counts each kind, applies none of them, and answers never-
    added keys present at the filter's declared rate; a node restarted
    still refuses replays of what it applied before; a node of another
    secret is refused, the log naming the setting."""
    with Fleet(build, "auth") as f:
        nodes = f.start(3, {"clicks": AUTH_BLOOM})
        n = scaled(6000, 1000)  # 18,000 keys: near the capacity, so the rate is near the declared one
        for x in nodes:
            x.worker("add", "clicks", "--prefix", x.name + ":", "--count", n)
        for x in nodes:
            f.wait_keys("clicks", x.name + ":", n)
        f.wait_caught_up("clicks")
        applied = {x.name: int(x.status("clicks")["applied"]) for x in nodes}
        rogue = Rogue(f, "clicks")
        # 40 x 2,048 random adds: 4 times the filter's capacity, enough to
        # make nearly every check answer present if they were applied.
        for i in range(40):
            rogue.made_up("forged", "rogue-%d" % i, 2048)
        for x in nodes:
            for _ in range(5):
                rogue.made_up("impersonating", x.name, 2048)
        for i in range(10):
            rogue.unsigned("old-%d" % i, 2048)
        rogue.copies("altered", flip=True)
        rogue.copies("replayed", flip=False)
        want = dict(rogue.wrote)
        print("rogue client wrote %r stream entries" % want)
        for x in nodes:
            wait_for("%s counts every refused entry by kind %r" % (x.name, want), lambda x=x: refused(x, "clicks") == want, 20)
        f.wait_caught_up("clicks")
        for x in nodes:
            figure("rogue_%s_refused" % x.name, " ".join("%s=%d" % kv for kv in sorted(refused(x, "clicks").items())))
            check(int(x.status("clicks")["applied"]) == applied[x.name],
                  "%s applied rogue entries: %s -> %s" % (x.name, applied[x.name], x.status("clicks")["applied"]))  # fmt: skip
        m = scaled(40000, 10000)
        fpr = float(AUTH_BLOOM["fpr"])
        bound = fpr + 4 * (fpr / m) ** 0.5
        for x in nodes:
            rate = absent_rate(x, "clicks", m)
            figure("rogue_%s_absent_answered_present" % x.name, "%.4f" % rate, "(declared %g, %d keys)" % (fpr, m))
            check(rate <= bound, "%s: %.4f of never-added keys answer present (declared %g)" % (x.name, rate, fpr))
        for x in nodes:
            says(x, ["refusing a stream entry from node rogue-", "[replication] secret"])

        # A restart keeps the senders' sequences: replays of entries this
        # node applied before it died are refused, nothing applied.
        b = nodes[1]
        b.stop(signal.SIGKILL)
        b.start()
        f.wait_state(b, "clicks", "following")
        rogue.copies("replayed", flip=False)
        wait_for("%s (restarted) refuses the replays" % b.name,
                 lambda: refused(b, "clicks")["replayed"] == len(rogue.real), 20)  # fmt: skip
        f.wait_caught_up("clicks")
        check(int(b.status("clicks")["applied"]) == 0, "%s applied replays after a restart: %r" % (b.name, b.status("clicks")))
        check(absent_rate(b, "clicks", m) <= bound, "%s: never-added keys present after the replays" % b.name)

        # A node of another secret: its entries are refused everywhere,
        # and the log says which setting differs.
        other = f.add_node({"clicks": AUTH_BLOOM}, secret="another-secret")
        f.wait_state(other, "clicks", "following")
        before = refused(nodes[0], "clicks")["forged"]
        other.worker("add", "clicks", "--prefix", "other:", "--count", 100)
        wait_for("node1 refuses node4's entries", lambda: refused(nodes[0], "clicks")["forged"] > before, 20)
        wait_for("node1's last_refused names node4 and the setting",
                 lambda: all(w in nodes[0].status("clicks").get("last_refused", "") for w in ("node4", "[replication] secret")),
                 20)  # fmt: skip
        check(nodes[0].missing("clicks", "other:", 100) >= 90, "node1 took keys of a node with another secret")
        print("rogue entries refused and counted by kind on every node, none applied; replays refused after a "
              "restart; a node of another secret refused, the log naming the setting")  # fmt: skip


# ---- hostile-streams -------------------------------------------------------

MAX_ID = "18446744073709551615-18446744073709551615"


def stream_state(node, filt, state, words, timeout=20):
    """Wait until @filt on @node is in @state with each of @words in its last_error."""
    return wait_for(
        "%s: %s in state %s saying %r" % (node.name, filt, state, words),
        lambda: (lambda st: st.get("state") == state and all(w in st.get("last_error", "") for w in words) and st)(
            node.status(filt)
        ),
        timeout,
    )


def add_both(nodes, filt, prefix, count):
    for x in nodes:
        x.worker("add", filt, "--prefix", "%s-%s:" % (prefix, x.name), "--count", count)


def case_hostile_streams(build):
    """One Redis key, one filter: an entry of the largest stream id in one
    stream, a string at another stream's name, a third stream deleted, then
    Redis restarted without its data. Each affects its own filter only, is
    reported with its real cause, and the other filters are sent and
    followed throughout."""
    names = ("maxid", "typed", "gone", "kept")
    with Fleet(build, "hostile") as f:
        # auto_repair = off: the states and causes stay to be read (with
        # self-repair a diverged filter is following again within ms).
        a, b = f.start(2, {name: dict(AUTH_BLOOM) for name in names}, auto_repair="off")
        n = scaled(300, 50)
        add_both((a, b), "kept", "before", n)
        for x in (a, b):
            f.wait_keys("kept", "before-%s:" % x.name, n)
        f.redis.call("XADD", "shmf:maxid", MAX_ID, "v", "2", "n", "rogue")
        f.redis.call("DEL", "shmf:typed")
        f.redis.call("SET", "shmf:typed", "not a stream")
        for name in names:
            add_both((a, b), name, "during", n)
        # The other filters are sent and followed.
        for name in ("kept", "gone"):
            for x in (a, b):
                f.wait_keys(name, "during-%s:" % x.name, n)
        for x in (a, b):
            stream_state(x, "maxid", "stream-error", ["sender", MAX_ID, "DEL shmf:maxid"])
            stream_state(x, "typed", "stream-error", ["shmf:typed", "not a stream"])
        print("a stream holding the largest id and a string at another's name: each filter alone says why; the others "
              "replicate")  # fmt: skip

        # A stream deleted: diverged with the cause, then following anew.
        f.redis.call("DEL", "shmf:gone")
        for x in (a, b):
            st = stream_state(x, "gone", "diverged", ["shmf:gone", "deleted"])
            check("retention" not in st["last_error"], "%s: a deleted stream blamed on retention: %r" % (x.name, st))
        add_both((a, b), "gone", "after", n)
        for x in (a, b):
            f.wait_keys("gone", "after-%s:" % x.name, n)
        # The largest id removed: both nodes send and follow it again.
        f.redis.call("DEL", "shmf:maxid")
        for x in (a, b):
            f.wait_keys("maxid", "during-%s:" % x.name, n)
        print("a deleted stream: diverged naming the deletion, then followed anew; the largest id deleted: its "
              "adds delivered")  # fmt: skip

        # Redis restarted without its data: not blamed on retention.
        f.redis.kill()
        f.redis.restart()
        add_both((a, b), "kept", "restarted", n)
        for x in (a, b):
            f.wait_keys("kept", "restarted-%s:" % x.name, n, timeout=60)
        for x in (a, b):
            st = stream_state(x, "kept", "diverged", ["Redis restarted"])
            check("retention" not in st["last_error"], "%s: a Redis restart blamed on retention: %r" % (x.name, st))
        print("Redis restarted without its data: diverged naming the restart, adds made since delivered")


# ---- badconfig -------------------------------------------------------------


def start_fails(node, what, words, timeout=20):
    """shmd must exit non-zero, saying each of @words (case-insensitive)."""
    p = node.spawn()
    try:
        p.wait(timeout)
    except Exception:
        raise Failure("%s: shmd still running (expected it to refuse: %s)" % (node.name, what))
    node.fleet.reap(p)
    with open(node.log, errors="replace") as fh:
        text = fh.read()
    check(p.returncode != 0, "%s: shmd exited 0 (%s)" % (node.name, what))
    for w in words:
        check(w.lower() in text.lower(), "%s: shmd's error does not name %r: %s" % (what, w, text.strip()))
    print("%s: %s" % (what, text.strip().splitlines()[-1] if text.strip() else ""))


def says(node, words, timeout=15):
    """shmd's log says each of @words (case-insensitive), within @timeout."""
    def has():
        with open(node.log, errors="replace") as fh:
            t = fh.read().lower()
        return all(w.lower() in t for w in words)

    wait_for("%s: its log names %r" % (node.name, words), has, timeout)


def case_badconfig(build):
    with Fleet(build, "badconfig") as f:
        # Redis unreachable at start: shmd serves, the filter disconnected;
        # the log names the address. Workers add. Then Redis comes up.
        from fleet import Redis, free_port

        port = free_port()
        f.redis = Redis(f, port=port)
        n1 = f.add_node({"clicks": BLOOM}, start=True)
        f.wait_state(n1, "clicks", "disconnected")
        says(n1, ["127.0.0.1:%d" % port])
        r = n1.worker("add", "clicks", "--prefix", "k:", "--count", 1000)
        check(r["errors"] == 0, "adds with Redis unreachable failed: %r" % r)
        print("Redis unreachable at start: shmd serves, state disconnected, adds succeed")
        f.redis.start()
        f.wait_state(n1, "clicks", "following", timeout=30)
        print("... and following once Redis is up")

        # A wrong password.
        f.redis.password = "right-%d" % os.getpid()
        f.redis.kill()
        f.redis.start()
        n2 = f.add_node({"clicks": BLOOM}, start=False, password="wrong")
        p = n2.spawn()

        def log2():
            with open(n2.log, errors="replace") as fh:
                return fh.read()

        # Whether shmd refuses to start or serves disconnected, it must say
        # which Redis refused which credentials.
        wait_for(
            "node2: its log names the Redis address and the refused password",
            lambda: f.redis.address in log2() and ("password" in log2().lower() or "auth" in log2().lower()),
            15,
        )
        if p.poll() is None:
            f.wait_state(n2, "clicks", "disconnected")
        lines = [ln for ln in log2().splitlines() if "pass" in ln.lower() or "auth" in ln.lower()]
        print("wrong password: %s" % (lines[0] if lines else ""))

        # No secret, with a filter that replicates.
        n3 = f.add_node({"clicks": BLOOM}, start=False, secret=None)
        start_fails(n3, "no secret", ["secret"])
        # replicate = yes without [replication].
        n4 = f.add_node({"clicks": BLOOM}, start=False)
        n4.replication = None
        start_fails(n4, "replicate without [replication]", ["replication", "clicks"])
        # An unknown key in [replication].
        n5 = f.add_node({"clicks": BLOOM}, start=False, bogus_key="1")
        start_fails(n5, "unknown key in [replication]", ["bogus_key"])
        # REPLICATE at run time on a node without [replication].
        n6 = f.add_node({"plain": {"type": "bloom", "capacity": "1000", "fpr": "0.01"}}, start=False)
        n6.replication = None
        n6.start()
        try:
            n6.call("BF.RESERVE", "r", "0.01", "1000", "REPLICATE")
            raise Failure("BF.RESERVE ... REPLICATE accepted without [replication]")
        except RespError as e:
            check("replication" in str(e).lower(), "BF.RESERVE ... REPLICATE: the error does not name [replication]: %s" % e)
            print("BF.RESERVE ... REPLICATE without [replication]: %s" % e)
        r = n6.shmctl("create", "r2", "--capacity", 1000, "--fpr", 0.01, "--replicate", check_ok=False)
        check(r.returncode == 2 and "replication" in r.stderr.lower(), "shmctl create --replicate: %r" % r.stderr)


# ---- self-repair -------------------------------------------------------------


def repaired(node, filt, at_least=1):
    """node's filter repaired itself at least @at_least times and follows."""
    s = node.status(filt)
    return s.get("state") == "following" and num(s, "repairs") >= at_least and s


def case_self_repair(build):
    """Divergence repairs itself, with no shmctl call: journals overflow on
    both nodes while Redis is SIGSTOPped (each tells the other, which ORs
    its copy in); then a stream trimmed past a stopped node's cursor."""
    with Fleet(build, "self-repair") as f:
        f.start_redis()
        a = f.add_node({"clicks": BLOOM}, journal_entries=16, journal_rings=4)
        b = f.add_node({"clicks": BLOOM}, journal_entries=16, journal_rings=4)
        for x in (a, b):
            f.wait_state(x, "clicks", "following")
        f.redis.pause()
        n = scaled(20000, 2000)
        for x in (a, b):
            r = x.worker("add", "clicks", "--prefix", x.name + ":", "--count", n)
            check(r["errors"] == 0, "adds with a full journal failed: %r" % r)
        for x in (a, b):
            wait_for("%s: the overflow counted" % x.name, lambda x=x: dropped(x.status("clicks")) > 0, 10)
        lost = {x.name: dropped(x.status("clicks")) + num(x.status("clicks"), "missed") for x in (a, b)}
        t0 = time.monotonic()
        f.redis.resume()
        for x in (a, b):
            wait_for("%s repaired itself" % x.name, lambda x=x: repaired(x, "clicks"), 60)
        whole = time.monotonic() - t0
        for x in (a, b):
            for y in (a, b):
                m = x.missing("clicks", y.name + ":", n)
                check(m == 0, "%s misses %d of %s's %d keys after self-repair" % (x.name, m, y.name, n))
        s = b.status("clicks")
        check(s.get("repair_peer") == "node1" and num(s, "repair_last_bytes") > 0 and num(s, "repair_notices") >= 1,
              "node2's repair is not reported: %r" % s)  # fmt: skip
        figure("self_repair_dropped", "%d on node1, %d on node2" % (lost["node1"], lost["node2"]))
        figure("self_repair_ms", s["repair_last_ms"], "ms (node2: node1's copy ORed in)")
        figure("self_repair_bytes", s["repair_last_bytes"])
        figure("self_repair_whole_after_resume_s", "%.2f" % whole)
        print("overflow on both nodes: every key on every node, %s ms to repair, no shmctl call" % s["repair_last_ms"])

        # A stream trimmed past node2's cursor while its shmd is stopped.
        b.pause()
        a.worker("add", "clicks", "--prefix", "t:", "--count", n, "--rate", 20000)
        f.wait_caught_up("clicks", nodes=[a])
        f.redis.call("XTRIM", "shmf:clicks", "MAXLEN", "0")
        a.worker("add", "clicks", "--prefix", "u:", "--count", 10)
        b.resume()
        wait_for("node2 repaired the trimmed stream", lambda: repaired(b, "clicks", 2), 60)
        for p in ("t:", "u:"):
            check(b.missing("clicks", p, 10 if p == "u:" else n) == 0, "node2 misses %s keys after self-repair" % p)
        print("stream trimmed past node2's cursor: repaired itself, every key there")


def case_repair_refused(build):
    """A node never repairs from a peer whose filter has another shape, nor
    from an announcement that does not verify."""
    other = dict(BLOOM, capacity="2000000")
    with Fleet(build, "repair-refused") as f:
        f.start_redis()
        a = f.add_node({"clicks": BLOOM})
        b = f.add_node({"clicks": other})
        for x in (a, b):
            f.wait_state(x, "clicks", "following")
        b.worker("add", "clicks", "--prefix", "b:", "--count", 100)
        a.worker("add", "clicks", "--prefix", "a:", "--count", 100)
        # A forged announcement that parses: node2's real sealed value under
        # another node's name (the name is bound into the seal), so only
        # verification refuses it, not the parser.
        real = wait_for("node2 announced", lambda: f.redis.call("HGET", "shmf:@nodes", "node2"), 30)
        f.redis.call("HSET", "shmf:@nodes", "rogue", real)
        before = a.worker("digest", "clicks")["digest"]
        wait_for("node1's cursor past its own entries", lambda: stream_id(a.status("clicks")["cursor"]) > (0, 0), 10)
        f.redis.call("DEL", "shmf:clicks")
        s = wait_for("node1 refuses node2's copy", lambda: num(a.status("clicks"), "repair_refused") > 0 and a.status("clicks"), 30)
        check(s["state"] == "diverged" and "another shape" in s["last_error"], "node1 after a refused repair: %r" % s)
        check(num(s, "repairs") == 0 and a.worker("digest", "clicks")["digest"] == before,
              "node1's filter changed by a peer of another shape")  # fmt: skip
        check(num(s, "peers_unverified") > 0, "a forged announcement not counted: %r" % s)
        print("a peer of another shape refused (%s); a forged announcement counted" % s["last_error"][:120])


# ---- snapshot-sequences ------------------------------------------------------


def replay_old(f, entries):
    """XADD each of @entries (id, fields) again, as it was, with redis-py:
    any client with write access to Redis can."""
    import redis  # Debian's python3-redis (scripts/install-deps.sh)

    r = redis.Redis(host="127.0.0.1", port=f.redis.port)
    for _, fl in entries:
        r.xadd("shmf:clicks", {as_bytes(k): as_bytes(v) for k, v in fl.items()})
    r.close()


def case_snapshot_sequences(build):
    """The senders' sequences travel with the cursor in a snapshot and a
    dump: restored (shmctl restore) or loaded (BF.SCANDUMP into
    BF.LOADCHUNK) after the stream moved on, node2 refuses replays of
    node1's entries older than the copy (node1 sent none after it)."""
    with Fleet(build, "snapshot-sequences") as f:
        f.start_redis()
        a = f.add_node({"clicks": AUTH_BLOOM})
        b = f.add_node({"clicks": AUTH_BLOOM})
        for x in (a, b):
            f.wait_state(x, "clicks", "following")
        a.worker("add", "clicks", "--prefix", "old:", "--count", 500)
        f.wait_keys("clicks", "old:", 500, nodes=[b])
        f.wait_caught_up("clicks")
        old = Rogue(f, "clicks").real
        snap = os.path.join(b.snap, "clicks-seq.snap")
        b.shmctl("snapshot", "clicks", snap)
        chunks, it = [], 0
        while True:
            it, data = b.call("BF.SCANDUMP", "clicks", it)
            if it == 0:
                break
            chunks.append((it, data))

        def loadchunks():
            with Resp(path=b.sock) as c:  # a load by chunks is one connection's
                for i, d in chunks:
                    c.call("BF.LOADCHUNK", "clicks", i, d)

        for how, load in (("shmctl restore", lambda: b.shmctl("restore", "clicks", snap)), ("BF.LOADCHUNK", loadchunks)):
            # node2's own adds move its cursor past the copy's, and no
            # later entry of node1's: only the copy's sequences refuse them.
            b.worker("add", "clicks", "--prefix", how + ":", "--count", 200)
            f.wait_keys("clicks", how + ":", 200, nodes=[a])
            f.wait_caught_up("clicks")
            load()
            f.wait_caught_up("clicks")
            s = b.status("clicks")
            before, applied = refused(b, "clicks")["replayed"], num(s, "applied")
            replay_old(f, old)
            wait_for("node2 refuses the %d replays after %s" % (len(old), how),
                     lambda: refused(b, "clicks")["replayed"] - before == len(old), 20)  # fmt: skip
            f.wait_caught_up("clicks")
            check(num(b.status("clicks"), "applied") == applied,
                  "node2 applied replays of entries older than its copy after %s: %r" % (how, b.status("clicks")))  # fmt: skip
            print("%s: %d replays of entries older than the copy refused, none applied" % (how, len(old)))


def cuckoo_overflow(f, pull):
    """Two nodes of a cuckoo filter (auto_repair = pull on node2 with
    @pull, else the default); node1's journal overflows while Redis is
    SIGSTOPped (node2 adds nothing meanwhile), then Redis resumes.
    Returns the nodes, the keys node1 added and when Redis resumed."""
    f.start_redis()
    a = f.add_node({"carts": CUCKOO}, journal_entries=16, journal_rings=4)
    b = f.add_node({"carts": CUCKOO}, **({"auto_repair": "pull"} if pull else {}))
    for x in (a, b):
        f.wait_state(x, "carts", "following")
    b.worker("add", "carts", "--prefix", "before:", "--count", 100)
    f.wait_keys("carts", "before:", 100)
    f.redis.pause()
    n = scaled(20000, 2000)
    r = a.worker("add", "carts", "--prefix", "paused:", "--count", n)
    check(r["errors"] == 0, "adds with a full journal failed: %r" % r)
    wait_for("node1: the overflow counted", lambda: dropped(a.status("carts")) > 0, 10)
    t0 = time.monotonic()
    f.redis.resume()
    return a, b, n, t0


def case_cuckoo_pull(build):
    """A cuckoo filter's self-repair by pull: node1's journal overflows
    while Redis is stopped; with auto_repair = pull node2 takes node1's
    copy and has every key (node1's, and its own added before); with the
    default (merge) node2 stays diverged, the reason naming the node and
    auto_repair = pull, node1's lost adds missing there."""
    with Fleet(build, "cuckoo-pull") as f:
        a, b, n, t0 = cuckoo_overflow(f, pull=True)
        wait_for("node2 (auto_repair = pull) has node1's keys", lambda: b.missing("carts", "paused:", n) == 0, 30)
        took = time.monotonic() - t0
        s = wait_for("node2 repaired itself", lambda: repaired(b, "carts"), 30)
        check(s.get("repair_peer") == "node1" and num(s, "repair_last_bytes") > 0,
              "node2's pull is not reported: %r" % s)  # fmt: skip
        for x in (a, b):
            for p, m in (("paused:", n), ("before:", 100)):
                check(x.missing("carts", p, m) == 0, "%s misses %s keys after the pull" % (x.name, p))
        figure("cuckoo_pull_dropped", dropped(a.status("carts")), "on node1")
        figure("cuckoo_pull_whole_after_resume_s", "%.2f" % took)
        figure("cuckoo_pull_ms", s["repair_last_ms"], "ms (node2: node1's copy pulled)")
        print("auto_repair = pull: node2 took node1's copy, every key there, %s ms" % s["repair_last_ms"])
    with Fleet(build, "cuckoo-merge") as f:
        a, b, n, _ = cuckoo_overflow(f, pull=False)
        s = stream_state(b, "carts", "diverged", ["node1", "overflowed", "auto_repair = pull", "shmctl pull carts"])
        f.wait_caught_up("carts")
        check(num(s, "repairs") == 0, "node2 repaired a cuckoo filter without auto_repair = pull: %r" % s)
        check(b.missing("carts", "paused:", n) > 0, "node2 has every key of node1's")
        print("default (merge): node2 diverged: %s" % s["last_error"][:200])


CASES = {
    "harness": case_harness,
    "everywhere": case_everywhere,
    "redis-fault": case_redis_fault,
    "node-kill": case_node_kill,
    "duplicates": case_duplicates,
    "overflow": case_overflow,
    "windows": case_windows,
    "capped": case_capped,
    "badconfig": case_badconfig,
    "authenticated": case_authenticated,
    "hostile-streams": case_hostile_streams,
    "self-repair": case_self_repair,
    "repair-refused": case_repair_refused,
    "snapshot-sequences": case_snapshot_sequences,
    "cuckoo-pull": case_cuckoo_pull,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--shmd", required=True)
    ap.add_argument("--shmctl", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--redis-server", default=None)
    args = ap.parse_args()
    # meson's timeout sends SIGTERM: end through the teardown.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: stopping the fleet"))
    build = {"shmd": args.shmd, "shmctl": args.shmctl, "worker": args.worker, "redis_server": args.redis_server}
    t0 = time.monotonic()
    try:
        CASES[args.case](build)
    except Failure as e:
        print("FAILED: %s" % e, file=sys.stderr)
        return 1
    print("%s: ok (%.1f s, scale %s)" % (args.case, time.monotonic() - t0, os.environ.get("SHMF_FLEET_SCALE", "1")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
