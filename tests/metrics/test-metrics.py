#!/usr/bin/python3
"""test-metrics.py - shmd's /metrics ([metrics] listen) as the programs
that read it see it: Debian's promtool and a prometheus server this test
starts, plain HTTP for the errors, and a local attacker's idle connections.

    tests/metrics/test-metrics.py CASE --shmd PATH [--shmctl PATH --worker PATH]

CASE:
  promtool   a Bloom, a cuckoo, a windowed and a growing filter (and periodic
             snapshots, one of them failing): promtool check metrics accepts
             the page, and its figures are the filters'
  prometheus a prometheus server (its own config, tsdb and port, in a temp
             directory) scrapes shmd; its HTTP API returns a filter's items
             after keys are added
  idle       300 idle connections to the metrics port: PING on the unix
             socket still answered, the metrics of a new client wait for a
             free connection and are served once they go; an idle one is
             closed after the timeout
  http       404 for another path, 405 (with Allow) for another method, HEAD,
             oversized headers refused; [::1]:PORT; a changed listen on
             reload needs a restart and the old listener stays
  badconfig  bad listen values refused at start naming the file, the section
             and the value; a port in use stops shmd naming it
  fleet      two replicated nodes (tests/fleet/fleet.py): the replicated
             filter's state, sent and applied counters on the page

Python's standard library only (the fleet case uses the fleet harness).
Each case starts its own shmd with a temporary runtime directory and free
loopback ports, and stops everything it started.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fleet"))
import fleet  # noqa: E402  (the harness: Resp, free_port, wait_for)

from fleet import Failure, Resp, check, figure, free_port, wait_for  # noqa: E402

METRICS_MAX_CONNECTIONS = 16  # shmd/net/metrics.h
METRICS_TIMEOUT = 10


def ok(cond, what):
    check(cond, what)
    print("ok -", what, flush=True)


class Shmd:
    """A private shmd with [metrics] on a free loopback port."""

    def __init__(self, shmd, body, host="127.0.0.1"):
        self.shmd = shmd
        self.root = tempfile.mkdtemp(prefix="shmf-metrics-", dir="/dev/shm")
        self.body = body
        self.host = host
        self.sock = os.path.join(self.root, "m.sock")
        self.conf = os.path.join(self.root, "shmd.ini")
        self.log = os.path.join(self.root, "shmd.log")
        self.proc = None
        for _ in range(10):
            self.port = free_port()
            self.write()
            self.proc = subprocess.Popen([shmd, "-f", "-c", self.conf], stdin=subprocess.DEVNULL,
                                         stderr=open(self.log, "w"),
                                         env=dict(os.environ, SHMF_RUNTIME_DIR=self.root))
            try:
                wait_for("shmd serves metrics", lambda: "serving metrics" in self.log_text() or self.proc.poll() is not None, 20)
            except Failure:
                self.stop()
                raise
            if self.proc.poll() is None:
                wait_for("shmd answers PING", self.pings, 10)
                return
            if "Address already in use" not in self.log_text():
                raise Failure("shmd did not start; its log:\n" + self.log_text())
        raise Failure("no free loopback port after 10 tries")

    def listen(self):
        return ("[%s]:%d" if ":" in self.host else "%s:%d") % (self.host, self.port)

    def write(self, listen=None):
        with open(self.conf, "w") as f:
            f.write("[instance]\nname = m\n\n[metrics]\nlisten = %s\n\n%s" % (listen or self.listen(), self.body))

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def pings(self):
        try:
            with Resp(path=self.sock, timeout=2) as r:
                return r.call("PING") == "PONG"
        except OSError:
            return False

    def call(self, *args):
        with Resp(path=self.sock) as r:
            return r.call(*args)

    def get(self, path="/metrics", method="GET", timeout=10, headers=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode()
        finally:
            c.close()

    def page(self):
        status, headers, body = self.get()
        check(status == 200, "GET /metrics: %d %s" % (status, body))
        return body

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode if self.proc is not None else 0
        shutil.rmtree(self.root, ignore_errors=True)
        return rc


def samples(page):
    """{'name{labels}': value} of every sample line."""
    out = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def fig(page, name, **labels):
    """The value of sample @name whose labels include @labels, or None."""
    for key, value in samples(page).items():
        m = re.fullmatch(r"([a-zA-Z0-9_:]+)(?:\{(.*)\})?", key)
        if m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return value
    return None


FOUR_FILTERS = """[filter b]
type = bloom
capacity = 100000
snapshot_every = 1s
snapshot_dir = {snaps}

[filter c]
type = cuckoo
capacity = 1000
snapshot_every = 1s
snapshot_dir = {gone}

[filter w]
capacity = 10000
window = 1h
generations = 3

[filter g]
capacity = 100
expansion = 2
"""


def four_filters(args):
    snaps = tempfile.mkdtemp(prefix="shmf-metrics-snaps-", dir="/dev/shm")
    gone = tempfile.mkdtemp(prefix="shmf-metrics-gone-", dir="/dev/shm")
    d = Shmd(args.shmd, FOUR_FILTERS.format(snaps=snaps, gone=gone))
    d.cleanup = [snaps]
    os.rmdir(gone)  # c's periodic snapshots fail from now on
    return d


def case_promtool(args):
    d = four_filters(args)
    try:
        with Resp(path=d.sock) as r:
            for i in range(0, 1000, 100):
                r.call("BF.MADD", "b", *["key%d" % k for k in range(i, i + 100)])
            for i in range(40):
                r.call("CF.ADD", "c", "c%d" % i)
            r.call("BF.ADD", "w", "old")
            r.call("SHMF.ROTATE", "w")
            r.call("BF.ADD", "w", "new")
            for i in range(300):
                r.call("BF.ADD", "g", "g%d" % i)
            r.call("BF.ADD", "b", raise_errors=False)  # refused: arity
            wait_for("filter g grows a layer", lambda: "; 2 layers" in d.log_text(), 10)
            wait_for("a snapshot of b, a failure of c",
                     lambda: fig(d.page(), "shmd_filter_snapshot_failures_total", filter="c") not in (None, 0.0)
                     and fig(d.page(), "shmd_filter_snapshot_age_seconds", filter="b") is not None, 15)
            page = d.page()
        path = os.path.join(d.root, "page.txt")
        with open(path, "w") as f:
            f.write(page)
        p = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True, timeout=60)
        ok(p.returncode == 0 and p.stdout.strip() == "" and p.stderr.strip() == "",
           "promtool check metrics accepts the page (exit %d, said %r %r)" % (p.returncode, p.stdout, p.stderr))
        ok(fig(page, "shmd_filter_items", filter="b", type="bloom") == 1000, "b holds 1000 items")
        ok(fig(page, "shmd_filter_items", filter="c", type="cuckoo") == 40, "c (cuckoo) holds 40 items")
        ok(fig(page, "shmd_filter_capacity", filter="b") == 100000, "b's capacity 100000")
        ok(0 < fig(page, "shmd_filter_bytes", filter="b") == int(d.call("MEMORY", "USAGE", "b")), "b's bytes are MEMORY USAGE b")
        ok(0 < fig(page, "shmd_filter_fill_ratio", filter="b") < 0.1, "b's fill ratio")
        ok(0 < fig(page, "shmd_filter_false_positive_rate", filter="b") < 0.01, "b's estimated FPR below its target")
        ok(fig(page, "shmd_filter_generations", filter="w") == 2 and fig(page, "shmd_filter_rotations_total", filter="w") == 1,
           "w: 2 live generations after 1 rotation")
        ok(fig(page, "shmd_filter_items", filter="w") == 2, "w holds a key in each generation")
        ok(fig(page, "shmd_filter_layers", filter="g") >= 2 and fig(page, "shmd_filter_growths_total", filter="g") >= 1,
           "g grew: %s layers" % fig(page, "shmd_filter_layers", filter="g"))
        ok(fig(page, "shmd_filter_snapshot_age_seconds", filter="b") < 30, "b's last snapshot is recent")
        ok(fig(page, "shmd_filter_snapshot_failures_total", filter="c") >= 1, "c's failed snapshots counted")
        ok(fig(page, "shmd_filter_snapshot_age_seconds", filter="c") is None, "c has no snapshot age")
        ok(fig(page, "shmd_commands_total", verb="bf.madd") == 10, "bf.madd called 10 times")
        ok(fig(page, "shmd_command_errors_total", verb="bf.add", kind="rejected") == 1, "bf.add rejected once")
        wait_for("the unix clients gone", lambda: fig(d.page(), "shmd_clients", transport="unix") == 0, 10)
        version = subprocess.run([args.shmd, "--version"], capture_output=True, text=True).stdout.split()[1]
        ok(fig(page, "shmd_build_info", version=version) == 1, "shmd_build_info names shmd's version, %s" % version)
        ok(fig(page, "shmd_filters") == 4, "4 filters")
        ok(fig(page, "shmd_filter_replication_state") is None, "no replication figures without [replication]")
        with Resp(path=d.sock) as r:
            r.call("PING")
            ok(fig(d.page(), "shmd_clients", transport="unix") == 1, "a unix client counted while it is connected")
        print(page[:1500])
    finally:
        shutil.rmtree(d.cleanup[0], ignore_errors=True)
        ok(d.stop() == 0, "shmd exits 0 on SIGTERM")


PROMETHEUS_CONFIG = """global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: shmd
    static_configs:
      - targets: ['127.0.0.1:{port}']
"""


def prom_query(port, query):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": query}))
    with urllib.request.urlopen(url, timeout=5) as r:
        reply = json.load(r)
    check(reply["status"] == "success", "prometheus: %s" % reply)
    return reply["data"]["result"]


def query_value(port, query):
    try:
        result = prom_query(port, query)
    except OSError:
        return None
    return float(result[0]["value"][1]) if result else None


def case_prometheus(args):
    d = Shmd(args.shmd, "[filter clicks]\ncapacity = 100000\n")
    tmp = tempfile.mkdtemp(prefix="shmf-prometheus-")
    prom = None
    try:
        conf = os.path.join(tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write(PROMETHEUS_CONFIG.format(port=d.port))
        for _ in range(10):
            pport = free_port()
            prom = subprocess.Popen(
                ["/usr/bin/prometheus", "--config.file=" + conf, "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prom.log"), "w"),
                preexec_fn=fleet._die_with_parent)  # fmt: skip
            try:
                wait_for("prometheus answers", lambda: prom.poll() is not None or query_value(pport, "vector(1)") == 1, 60, 0.2)
            except Failure:
                break
            if prom.poll() is None:
                break
        check(prom.poll() is None, "prometheus did not start: " + open(os.path.join(tmp, "prom.log")).read()[-2000:])
        wait_for("prometheus scraped shmd (up == 1)", lambda: query_value(pport, 'up{job="shmd"}') == 1, 60, 0.2)
        ok(query_value(pport, 'shmd_filter_items{filter="clicks"}') == 0, "prometheus: clicks holds 0 items")
        with Resp(path=d.sock) as r:
            r.call("BF.MADD", "clicks", *["k%d" % i for i in range(500)])
        t0 = time.monotonic()
        wait_for("prometheus sees 500 items", lambda: query_value(pport, 'shmd_filter_items{filter="clicks",type="bloom"}') == 500, 60, 0.2)
        figure("prometheus_sees_keys_after", "%.1f" % (time.monotonic() - t0), "s")
        ok(True, "prometheus' API returns clicks' 500 items after they were added")
        ok(query_value(pport, 'shmd_commands_total{verb="bf.madd"}') == 1, "prometheus: bf.madd called once")
        ok(query_value(pport, "shmd_uptime_seconds") >= 0, "prometheus: shmd_uptime_seconds")
    finally:
        if prom is not None and prom.poll() is None:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        ok(d.stop() == 0, "shmd exits 0 on SIGTERM")


def ping_ms(d):
    t0 = time.monotonic()
    check(d.pings(), "PING answered")
    return (time.monotonic() - t0) * 1000


def case_idle(args):
    d = Shmd(args.shmd, "[filter f]\ncapacity = 1000\n")
    held = []
    try:
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
            held.append(s)
        time.sleep(0.5)
        worst = max(ping_ms(d) for _ in range(20))
        figure("ping_with_300_idle_metrics_connections_worst", "%.1f" % worst, "ms")
        ok(worst < 1000, "PING answered on the unix socket with 300 idle metrics connections (worst %.1f ms)" % worst)
        try:
            status, _, _ = d.get(timeout=2)
        except (OSError, http.client.HTTPException):
            status = None
        ok(status is None, "a new metrics client waits while %d idle connections hold every slot" % METRICS_MAX_CONNECTIONS)
        for s in held:
            s.close()
        held = []
        got = wait_for("metrics served once the idle connections went",
                       lambda: _try_get(d), METRICS_TIMEOUT + 10, 0.2)
        ok("shmd_filter_items" in got, "metrics served to a new client once the idle connections went")
        s = socket.create_connection(("127.0.0.1", d.port), timeout=METRICS_TIMEOUT + 10)
        t0 = time.monotonic()
        ok(s.recv(1) == b"", "an idle metrics connection is closed by shmd")
        took = time.monotonic() - t0
        figure("idle_metrics_connection_closed_after", "%.1f" % took, "s")
        ok(METRICS_TIMEOUT - 1 <= took <= METRICS_TIMEOUT + 5, "after about %d s (%.1f s)" % (METRICS_TIMEOUT, took))
        s.close()
        ok(d.pings(), "shmd still answers PING")
    finally:
        for s in held:
            s.close()
        ok(d.stop() == 0, "shmd exits 0 on SIGTERM")


def _try_get(d):
    try:
        status, _, body = d.get(timeout=2)
        return body if status == 200 else None
    except (OSError, http.client.HTTPException):
        return None


def case_http(args):
    d = Shmd(args.shmd, "[filter f]\ncapacity = 1000\n")
    try:
        for path in ("/", "/metricsx", "/metrics/", "/favicon.ico"):
            status, _, body = d.get(path)
            ok(status == 404 and "/metrics" in body, "GET %s: 404 naming /metrics" % path)
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            status, headers, _ = d.get(method=method)
            ok(status == 405 and headers.get("Allow") == "GET, HEAD", "%s /metrics: 405, Allow: GET, HEAD" % method)
        status, headers, body = d.get(method="HEAD")
        ok(status == 200 and body == "" and headers["Content-Type"].startswith("text/plain; version=0.0.4"), "HEAD /metrics: 200, no body")
        status, headers, body = d.get()
        ok(status == 200 and headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", "GET /metrics: the text format's Content-Type")
        try:
            status, _, _ = d.get(headers={"X-Big": "x" * (64 << 10)})
        except (OSError, http.client.HTTPException):
            status = None
        ok(status != 200, "64 KiB of headers refused (%s)" % status)
        ok(d.pings() and _try_get(d) is not None, "shmd serves PING and metrics after it")
        # A changed address is for a restart: the log says so, the listener stays.
        d.write(listen="127.0.0.1:%d" % free_port())
        lines = d.call("SHMF.RELOAD")
        ok(any("[metrics] listen" in l and "needs a restart" in l for l in lines), "reload: [metrics] listen needs a restart: %s" % lines)
        ok(_try_get(d) is not None, "metrics still served on the old address")
    finally:
        ok(d.stop() == 0, "shmd exits 0 on SIGTERM")
    if socket.has_ipv6:
        try:
            socket.create_server(("::1", 0), family=socket.AF_INET6).close()
        except OSError:
            print("ok - [::1] not available here; IPv6 listen not tried")
            return
        d = Shmd(args.shmd, "[filter f]\ncapacity = 1000\n", host="::1")
        try:
            ok("shmd_filters 1" in d.page(), "listen = [::1]:PORT serves the page")
        finally:
            ok(d.stop() == 0, "shmd exits 0 on SIGTERM")


BAD_LISTEN = ["127.0.0.1", "localhost:9353", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:abc", "::1:9353",
              "[::1]", "[127.0.0.1]:9353", "1.2.3.4.5:80", "127.0.0.1:9353 extra", ":9353"]


def run_bad(args, text):
    root = tempfile.mkdtemp(prefix="shmf-metrics-bad-", dir="/dev/shm")
    try:
        conf = os.path.join(root, "bad.ini")
        with open(conf, "w") as f:
            f.write("[instance]\nname = bad\n\n" + text)
        p = subprocess.run([args.shmd, "-f", "-c", conf], capture_output=True, text=True, timeout=20,
                           env=dict(os.environ, SHMF_RUNTIME_DIR=root))
        return p.returncode, p.stderr.strip(), conf, os.path.exists(os.path.join(root, "bad.sock"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def case_badconfig(args):
    for value in BAD_LISTEN:
        rc, err, conf, sock = run_bad(args, "[metrics]\nlisten = %s\n" % value)
        ok(rc == 2 and conf in err and "[metrics]" in err and "'%s'" % value in err and "127.0.0.1:9353" in err and not sock,
           "listen = %s refused at start: %s" % (value, err))
    rc, err, conf, _ = run_bad(args, "[metrics]\nport = 9353\n")
    ok(rc == 2 and "unknown key 'port' in [metrics]" in err and conf in err, "an unknown key in [metrics]: %s" % err)
    root = tempfile.mkdtemp(prefix="shmf-metrics-off-", dir="/dev/shm")
    try:
        conf, log = os.path.join(root, "off.ini"), os.path.join(root, "log")
        with open(conf, "w") as f:
            f.write("[instance]\nname = off\n\n[metrics]\nlisten =\n")
        p = subprocess.Popen([args.shmd, "-f", "-c", conf], stderr=open(log, "w"), env=dict(os.environ, SHMF_RUNTIME_DIR=root))
        wait_for("shmd listens", lambda: "listening on" in open(log).read() or p.poll() is not None, 20)
        p.terminate()
        ok(p.wait(timeout=20) == 0 and "serving metrics" not in open(log).read(), "listen = (empty): shmd runs, no metrics listener")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        rc, err, _, sock = run_bad(args, "[metrics]\nlisten = 127.0.0.1:%d\n" % port)
        ok(rc == 1 and "[metrics] listen = 127.0.0.1:%d" % port in err and "Address already in use" in err and not sock,
           "a port in use stops shmd, named: %s" % err)
    finally:
        busy.close()


def case_fleet(args):
    build = {"shmd": args.shmd, "shmctl": args.shmctl, "worker": args.worker, "redis_server": None}
    filters = {"clicks": {"type": "bloom", "capacity": "100000", "replicate": "yes"}}
    with fleet.Fleet(build, "metrics") as f:
        f.start_redis()
        ports = []
        for _ in range(2):
            n = f.add_node(filters, start=False)
            port = free_port()
            ports.append(port)
            base = n.config_text
            n.config_text = lambda base=base, port=port: base() + "[metrics]\nlisten = 127.0.0.1:%d\n" % port
            n.start()
        for n in f.nodes:
            f.wait_state(n, "clicks", "following")
        a, b = f.nodes
        a.call("BF.MADD", "clicks", *["k%d" % i for i in range(200)])
        f.wait_keys("clicks", "k", 200, nodes=[b])

        def page(port):
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                return r.read().decode()

        wait_for("node2 applied 200 entries", lambda: fig(page(ports[1]), "shmd_filter_replication_applied_total", filter="clicks") == 200, 30)
        pa, pb = page(ports[0]), page(ports[1])
        ok(fig(pa, "shmd_filter_replication_sent_total", filter="clicks") == 200, "node1 sent 200 entries")
        ok(fig(pb, "shmd_filter_replication_applied_total", filter="clicks") == 200, "node2 applied 200 entries")
        for p in (pa, pb):
            ok(fig(p, "shmd_filter_replication_state", filter="clicks", state="following") == 1 and
               fig(p, "shmd_filter_replication_state", filter="clicks", state="diverged") == 0, "state following")
        ok(fig(pb, "shmd_filter_items", filter="clicks") == 200, "node2's page: 200 items")
        p = subprocess.run(["promtool", "check", "metrics"], input=pb, capture_output=True, text=True, timeout=60)
        ok(p.returncode == 0, "promtool accepts a fleet node's page: %s" % p.stdout)
        print("node2's replication lines:")
        print("\n".join(l for l in pb.splitlines() if "replication" in l or "shmd_filter_items" in l))


CASES = {"promtool": case_promtool, "prometheus": case_prometheus, "idle": case_idle, "http": case_http,
         "badconfig": case_badconfig, "fleet": case_fleet}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--shmd", required=True)
    ap.add_argument("--shmctl")
    ap.add_argument("--worker")
    args = ap.parse_args()
    for tool in ("promtool", "/usr/bin/prometheus"):
        if shutil.which(tool) is None:
            print("SKIP: %s is not installed (scripts/install-deps.sh installs prometheus)" % tool)
            sys.exit(77)
    try:
        CASES[args.case](args)
    except Failure as e:
        print("FAIL:", e, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
