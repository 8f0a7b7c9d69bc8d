#!/usr/bin/env python3
"""test-sentinel.py - the fleet behind Redis Sentinel, with real programs:
Debian's redis-server (a master and a replica) and redis-sentinel (three
sentinels), on loopback ports of this test's own, three shmd nodes that
find the master through the sentinels ([replication] sentinel, master),
and fleet-worker processes adding throughout. One case per run:

  failover        replicas_wait = 1: the replica and one node stopped for
                  1.5 s (replication lag, a node behind), then the master
                  SIGKILLed while every node adds; the sentinels fail over
                  to the replica, which lacks what the master took in that
                  time; every node
                  follows the new master (SHMF.REPLICATION's redis names
                  it); the old master comes back as a replica; every key
                  added on any node is then on every node, and no cuckoo
                  key is stored twice
  failover-nowait the same with replicas_wait = 0 (the default): the nodes
                  follow the new master; the keys that are lost are counted
                  and printed, not asserted (Redis replicates
                  asynchronously: what the master took but had not passed
                  to the replica when it died is gone)
  wait            replicas_wait = 1 with the replica stopped (SIGSTOP):
                  state waiting-replicas, every entry stays in the journal
                  (the batch in flight reaches the other node); the sender's
                  connection killed meanwhile: the batch goes out again
                  with its own sequence, refused as a replay where it was
                  applied (cuckoo counts stay 1); the replica continued:
                  the journals empty, state following
  badconfig       sentinel without master, master without sentinel, both
                  redis and sentinel (shmd --check-config names FILE:LINE);
                  unreachable sentinels at start (shmd serves, state
                  disconnected naming each sentinel, then following once
                  they run); a wrong sentinel_password and an unknown
                  master name, each named

Figures are printed as "FIGURE name = value". SHMF_FLEET_SCALE scales the
add rates. Usage: test-sentinel.py CASE --shmd PATH --shmctl PATH --worker PATH
"""

import argparse
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Failure, Fleet, Redis, Resp, RespError, check, figure, free_port, scaled, tail, wait_for  # noqa: E402

BLOOM = {"type": "bloom", "capacity": "1000000", "fpr": "0.0001", "replicate": "yes"}
CUCKOO = {"type": "cuckoo", "capacity": "200000", "fpr": "0.001", "replicate": "yes"}
MASTER = "fleetmaster"
MPW = "master-pw"  # the master's and the replica's requirepass
SPW = "sentinel-pw"  # the sentinels' requirepass
SENTINEL_BIN = "/usr/bin/redis-sentinel"


class Sentinel:
    """One redis-sentinel: its own directory and configuration file (which
    Sentinel rewrites), a loopback port, down-after 1 s, failover-timeout 3 s."""

    def __init__(self, fleet, index, master_port):
        self.fleet = fleet
        self.name = "sentinel%d" % index
        self.dir = os.path.join(fleet.root, self.name)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "sentinel.conf")
        self.log = os.path.join(self.dir, "sentinel.log")
        self.master_port = master_port
        self.port = None
        self.proc = None

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        for _ in range(10):
            self.port = self.port or free_port()
            with open(self.conf, "w") as f:
                f.write(
                    "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\ndaemonize no\nrequirepass %s\n"
                    "sentinel monitor %s 127.0.0.1 %d 2\n"
                    "sentinel auth-pass %s %s\n"
                    "sentinel down-after-milliseconds %s 1000\n"
                    "sentinel failover-timeout %s 3000\n"
                    "sentinel parallel-syncs %s 1\n"
                    % (self.port, self.dir, self.log, SPW, MASTER, self.master_port, MASTER, MPW, MASTER,
                       MASTER, MASTER)
                )  # fmt: skip
            self.proc = self.fleet.spawn([SENTINEL_BIN, self.conf], self.name)
            try:
                wait_for("%s answers PING" % self.name, self._ready, 20)
                return self
            except Failure:
                busy = "Address already in use" in tail(self.log, 10)
                self.fleet.reap(self.proc, signal.SIGKILL)
                if not busy:
                    raise
                self.port = None
        raise Failure("%s: no free port after 10 tries" % self.name)

    def _ready(self):
        if self.proc.poll() is not None:
            raise Failure("%s exited (%d); its log:\n%s" % (self.name, self.proc.returncode, tail(self.log)))
        try:
            return self.call("PING") == "PONG"
        except (OSError, RespError, ConnectionError):
            return False

    def call(self, *args):
        with Resp(port=self.port, timeout=5) as c:
            c.call("AUTH", SPW)
            return c.call(*args)

    def master(self):
        try:
            r = self.call("SENTINEL", "get-master-addr-by-name", MASTER)
            return "%s:%s" % (r[0], r[1]) if r else None
        except (OSError, RespError, ConnectionError):
            return None


class Setup:
    """A master, a replica, three sentinels that know both and each other."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.master = Redis(fleet, password=MPW, name="redis-a")
        # No 5 s wait before a replica's first sync (Redis' default).
        self.master.extra = ["--masterauth", MPW, "--repl-diskless-sync-delay", "0"]
        self.master.start()
        self.replica = Redis(fleet, password=MPW, name="redis-b")
        self.replica.extra = ["--masterauth", MPW, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1",
                              str(self.master.port)]  # fmt: skip
        self.replica.start()
        self.sentinels = [Sentinel(fleet, i + 1, self.master.port).start() for i in range(3)]
        wait_for("the replica in sync", lambda: self.linked(self.replica), 20)
        wait_for("every sentinel knows the replica and the two other sentinels", self.sentinels_ready, 30)

    def linked(self, r):
        try:
            return "master_link_status:up" in r.call("INFO", "replication")
        except (OSError, RespError, ConnectionError):
            return False

    def sentinels_ready(self):
        for s in self.sentinels:
            try:
                if len(s.call("SENTINEL", "replicas", MASTER)) < 1 or len(s.call("SENTINEL", "sentinels", MASTER)) < 2:
                    return False
            except (OSError, RespError, ConnectionError):
                return False
        return True

    def list(self):
        return ",".join(s.address for s in self.sentinels)

    def replication(self, replicas_wait, **over):
        r = {"redis": None, "sentinel": self.list(), "master": MASTER, "password": MPW, "sentinel_password": SPW}
        if replicas_wait:
            r["replicas_wait"] = replicas_wait
        r.update(over)
        return r


def start_nodes(f, setup, replicas_wait, n=3):
    for _ in range(n):
        f.add_node({"clicks": BLOOM, "seen": CUCKOO}, **setup.replication(replicas_wait))
    for x in f.nodes:
        for filt in ("clicks", "seen"):
            f.wait_state(x, filt, "following", timeout=30)
        s = x.status("clicks")
        check(s.get("redis") == setup.master.address, "%s: redis is %r, not the master %s" % (x.name, s.get("redis"), setup.master.address))
        check(MASTER in s.get("redis_found", "") and "sentinel 127.0.0.1:" in s.get("redis_found", ""),
              "%s: redis_found does not name the sentinel and master: %r" % (x.name, s.get("redis_found")))
    return f.nodes


def missing_everywhere(f, nodes, n):
    """{node: keys of every node's prefix it lacks} once each node's
    journals are empty and its cursor at the stream's end."""
    out = {}
    for x in nodes:
        out[x.name] = sum(x.missing("clicks", y.name + ":", n) for y in nodes)
    return out


def failover(build, replicas_wait):
    what = "failover" if replicas_wait else "failover-nowait"
    with Fleet(build, what) as f:
        setup = Setup(f)
        f.redis = setup.master  # for the logs
        nodes = start_nodes(f, setup, replicas_wait)
        rate, secs = scaled(1000, 100), 14
        n = rate * secs
        ws = [x.worker_bg("add", "clicks", "--prefix", x.name + ":", "--count", n, "--rate", rate) for x in nodes]
        cw = nodes[0].worker_bg("add", "seen", "--prefix", "c:", "--count", n, "--rate", rate)
        time.sleep(3)
        # Replication lag made long enough to matter: the replica stopped
        # and cut off for 1.5 s, and node3 with it (a node that is
        # behind), then the master killed. The master took entries the replica never got;
        # node3 had not read them either.
        setup.replica.pause()
        nodes[2].pause()
        # Its link cut too: what the master sent before is in the stopped
        # replica's socket and reaches it, nothing after.
        setup.master.call("CLIENT", "KILL", "TYPE", "replica")
        time.sleep(1.5)
        old = setup.master.address
        setup.master.kill()
        t_kill = time.monotonic()
        setup.replica.resume()
        time.sleep(0.5)
        nodes[2].resume()
        new = wait_for("the sentinels name a new master",
                       lambda: all(s.master() not in (None, old) for s in setup.sentinels) and setup.sentinels[0].master(), 30)
        check(new == setup.replica.address, "the sentinels chose %s, not the replica %s" % (new, setup.replica.address))
        t_failover = time.monotonic() - t_kill
        for x in nodes:
            wait_for("%s: its sender on the new master %s" % (x.name, new), lambda: x.status("clicks").get("redis") == new, 30)
        t_follow = time.monotonic() - t_kill
        # The old master comes back; the sentinels make it a replica of
        # the new one, so that WAIT 1 is met again.
        setup.master.extra = ["--masterauth", MPW, "--repl-diskless-sync-delay", "0"]
        setup.master.restart()
        wait_for("the old master a replica of the new one", lambda: setup.linked(setup.master), 40)
        results = [f.collect(p) for p in ws + [cw]]
        for r in results:
            check(r["errors"] == 0, "a worker's add failed: %r" % r)
        for x in nodes:
            for filt in ("clicks", "seen"):
                wait_for("%s: %s's journal empty" % (x.name, filt),
                         lambda: int(x.status(filt).get("journal_depth", 1)) == 0, 30)
        if replicas_wait:
            for x in nodes:
                f.wait_keys("clicks", x.name + ":", n, timeout=60)
            f.wait_keys("seen", "c:", n, nodes=nodes[1:], timeout=60)
            lost = {x.name: 0 for x in nodes}
        else:
            # Settled: every cursor at the stream's end, then counted.
            f.redis = setup.replica
            f.wait_caught_up("clicks", timeout=60)
            lost = missing_everywhere(f, nodes, n)
        copies = [x.worker("count", "seen", "--prefix", "c:", "--count", n)["counts"] for x in nodes[1:]]
        twice = [sum(c[2:]) for c in copies]
        cuckoo_lost = [c[0] for c in copies]
        replayed = sum(int(x.status("clicks").get("refused_replayed", 0)) + int(x.status("seen").get("refused_replayed", 0)) for x in nodes)
        figure("%s_keys_added" % what, 3 * n, "Bloom, 3 nodes x %d at %d/s, and %d cuckoo on node1" % (n, rate, n))
        figure("%s_sentinels_failed_over_s" % what, "%.1f" % t_failover, "(SIGKILL to a new master named)")
        figure("%s_nodes_followed_s" % what, "%.1f" % t_follow, "(SIGKILL to every sender on the new master)")
        figure("%s_bloom_keys_lost" % what, sum(lost.values()), "(per node: %s)" % lost)
        figure("%s_cuckoo_keys_lost" % what, sum(cuckoo_lost), "(node2, node3: %s)" % cuckoo_lost)
        figure("%s_cuckoo_keys_stored_twice" % what, sum(twice), "(node2, node3: %s)" % twice)
        figure("%s_refused_replayed" % what, replayed, "(batches sent again, and the stream read again from 0-0 where a cursor was past the new master's end)")
        check(sum(twice) == 0, "cuckoo keys stored twice after the failover: %r (a batch sent again was applied again)" % twice)
        if replicas_wait:
            check(sum(lost.values()) == 0 and sum(cuckoo_lost) == 0, "keys lost with replicas_wait = 1: %r %r" % (lost, cuckoo_lost))


def case_failover(build):
    failover(build, 1)


def case_failover_nowait(build):
    failover(build, 0)


def sender_client_ids(redis):
    """CLIENT IDs of the connections that XADD (the nodes' senders)."""
    out = []
    for line in redis.call("CLIENT", "LIST").splitlines():
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if kv.get("cmd") in ("xadd", "wait"):
            out.append(kv["id"])
    return out


def case_wait(build):
    with Fleet(build, "wait") as f:
        setup = Setup(f)
        f.redis = setup.master
        a, b = start_nodes(f, setup, 1, n=2)
        n = scaled(2000, 500)
        setup.replica.pause()
        try:
            r = a.worker("add", "seen", "--prefix", "w:", "--count", n)
            check(r["errors"] == 0, "adds failed: %r" % r)
            st = f.wait_state(a, "seen", "waiting-replicas", timeout=15)
            check("WAIT 1" in st["last_error"] and "replicas_wait" in st["last_error"],
                  "last_error does not say WAIT 1 fell short: %r" % st["last_error"])
            check(int(st["journal_depth"]) > 0, "the journal is empty though no replica acknowledged: %r" % st)
            # The other node applied the batch the master took; the rest
            # waits behind it (one batch a filter in flight).
            wait_for("node2 applied the batch not confirmed", lambda: int(b.status("seen").get("applied", 0)) > 0, 20)
            time.sleep(1.5)
            depth, applied = int(a.status("seen")["journal_depth"]), int(b.status("seen")["applied"])
            check(depth == n, "entries left the journal with the replica stopped: %d of %d kept" % (depth, n))
            check(applied < n, "every entry sent with the replica stopped: %d" % applied)
            print("replica stopped: waiting-replicas, all %d entries kept in the journal; node2 applied the %d "
                  "of the batch in flight" % (n, applied))
            # The sender's connection killed: on the next one the batch goes
            # out again, the same sequence: a replay where it was applied.
            before = int(b.status("seen").get("refused_replayed", 0))
            for cid in sender_client_ids(setup.master):
                setup.master.call("CLIENT", "KILL", "ID", cid)
            wait_for("node2 refuses the batch sent again as a replay",
                     lambda: int(b.status("seen").get("refused_replayed", 0)) > before, 20)
        finally:
            setup.replica.resume()
        f.wait_state(a, "seen", "following", timeout=30)
        wait_for("node1's journal empty", lambda: int(a.status("seen").get("journal_depth", 1)) == 0, 30)
        counts = b.worker("count", "seen", "--prefix", "w:", "--count", n)["counts"]
        check(counts[0] == 0, "node2 lacks keys: %r" % counts)
        check(sum(counts[2:]) == 0, "node2 stores keys twice: the batch sent again was applied again: %r" % counts)
        figure("wait_batches_refused_as_replays", int(b.status("seen")["refused_replayed"]) - before)
        print("replica continued: the journal empties, following; node2 holds each key once")


# ---- badconfig -------------------------------------------------------------


def check_config(f, node, words):
    node.write_config()
    r = subprocess.run([f.shmd, "--check-config", "-c", node.conf], capture_output=True, text=True, timeout=30)
    text = r.stdout + r.stderr
    check(r.returncode != 0, "shmd --check-config accepted: %s" % node.config_text())
    for w in words:
        check(w in text, "shmd --check-config does not say %r: %s" % (w, text.strip()))
    print("--check-config: %s" % text.strip().splitlines()[-1])


def case_badconfig(build):
    with Fleet(build, "sentinel-badconfig") as f:
        n1 = f.add_node({"clicks": BLOOM}, start=False, tcp=False, redis=None, sentinel="127.0.0.1:26379")
        check_config(f, n1, [n1.conf + ":", "[replication] sentinel needs master = NAME"])
        n1.replication = f.replication_section(1, redis=None, master=MASTER)
        check_config(f, n1, ["[replication] master '%s' needs sentinel" % MASTER])
        n1.replication = f.replication_section(1, sentinel="127.0.0.1:26379", master=MASTER)
        check_config(f, n1, ["redis and sentinel are both set"])
        n1.replication = f.replication_section(1, redis=None, sentinel="127.0.0.1:26379,nohost", master=MASTER)
        check_config(f, n1, ["sentinel '127.0.0.1:26379,nohost'"])

        # Unreachable sentinels at start: shmd serves, disconnected, the
        # state naming each sentinel; following once they run.
        ports = [free_port() for _ in range(3)]
        master = Redis(f, password=MPW, name="redis-a")
        master.start()
        f.redis = master
        sent = [Sentinel(f, i + 1, master.port) for i in range(3)]
        for s, p in zip(sent, ports):
            s.port = p
        listed = ",".join("127.0.0.1:%d" % p for p in ports)
        n2 = f.add_node({"clicks": BLOOM}, redis=None, sentinel=listed, master=MASTER, password=MPW,
                        sentinel_password=SPW)  # fmt: skip
        st = f.wait_state(n2, "clicks", "disconnected")
        for p in ports:
            check("sentinel 127.0.0.1:%d" % p in st["last_error"], "last_error does not name sentinel %d: %r" % (p, st["last_error"]))
        r = n2.worker("add", "clicks", "--prefix", "k:", "--count", 1000)
        check(r["errors"] == 0, "adds with no sentinel reachable failed: %r" % r)
        print("no sentinel reachable: %s" % st["last_error"])
        for s in sent:
            s.start()
        f.wait_state(n2, "clicks", "following", timeout=30)
        check(n2.status("clicks").get("redis") == master.address, "not on the master: %r" % n2.status("clicks"))
        wait_for("node2's journal empty", lambda: int(n2.status("clicks").get("journal_depth", 1)) == 0, 20)
        print("... following once the sentinels run")

        # A wrong sentinel_password; an unknown master name.
        n3 = f.add_node({"clicks": BLOOM}, redis=None, sentinel=sent[0].address, master=MASTER, password=MPW,
                        sentinel_password="wrong")  # fmt: skip
        st = f.wait_state(n3, "clicks", "disconnected")
        check("sentinel_password" in st["last_error"], "a wrong sentinel_password not named: %r" % st["last_error"])
        print("wrong sentinel_password: %s" % st["last_error"])
        n4 = f.add_node({"clicks": BLOOM}, redis=None, sentinel=sent[1].address, master="nosuch", password=MPW,
                        sentinel_password=SPW)  # fmt: skip
        st = f.wait_state(n4, "clicks", "disconnected")
        check("knows no master 'nosuch'" in st["last_error"], "an unknown master not named: %r" % st["last_error"])
        print("unknown master: %s" % st["last_error"])


CASES = {
    "failover": case_failover,
    "failover-nowait": case_failover_nowait,
    "wait": case_wait,
    "badconfig": case_badconfig,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--shmd", required=True)
    ap.add_argument("--shmctl", required=True)
    ap.add_argument("--worker", required=True)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("SIGTERM: stopping the fleet"))
    if not os.access(SENTINEL_BIN, os.X_OK):
        print("FAILED: %s not found: scripts/install-deps.sh installs redis-sentinel" % SENTINEL_BIN, file=sys.stderr)
        return 1
    build = {"shmd": args.shmd, "shmctl": args.shmctl, "worker": args.worker}
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
