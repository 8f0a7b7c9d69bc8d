"""fleet.py - a fleet of shmfilter hosts on one machine, for the fleet tests
(tests/fleet/test-fleet.py), examples and bench/bench-fleet.py.

One redis-server (its own directory, a free loopback port and a unix
socket) and N shmd nodes, each with its own SHMF_RUNTIME_DIR, its own
configuration ([replication] node = nodeN, the same secret) and a TCP
listener with a password (what `shmctl pull --from` talks to); workers are
tests/fleet/fleet-worker processes adding through libshmf.

Everything lives under one directory in /dev/shm whose path names every
process started here (redis --dir, shmd -c, the worker's --dir), and dies
with the harness: each child gets PR_SET_PDEATHSIG, and Fleet.close() stops
what is left (also on a failed assertion or SIGTERM), then asks pgrep for
any process whose command line still names that directory: one found is a
failure of the test ("stray processes").

Python 3 standard library only: the harness speaks RESP itself (a few
dozen lines), so the tests need nothing that scripts/install-deps.sh does
not install. Python rather than C on tests/daemon-process.h because the
harness is orchestration (a dozen processes, signals, JSON, percentiles,
polling with deadlines); what must be C, the adds and checks through
libshmf at a fixed rate and the reads of a slot, is fleet-worker's.
"""

import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Failure(AssertionError):
    """A test assertion that failed; the message says what and where."""


def check(cond, msg):
    """Fail the test with @msg unless @cond."""
    if not cond:
        raise Failure(msg)


def figure(name, value, unit=""):
    """Print a measured figure in one greppable form: FIGURE name = value unit."""
    print("FIGURE %s = %s%s" % (name, value, (" " + unit) if unit else ""), flush=True)


def wait_for(what, fn, timeout, interval=0.05):
    """Poll fn() until it returns something true, within @timeout seconds
    (never a sleep as an assertion). Returns that value, or fails naming
    @what and the last value fn() returned."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise Failure("%s: not within %.1f s (last seen: %r)" % (what, timeout, last))
        time.sleep(interval)


def scale():
    """SHMF_FLEET_SCALE (default 1): the sanitizer build sets it below 1,
    so that its run does fewer keys at lower rates; never 0, never a skip."""
    try:
        s = float(os.environ.get("SHMF_FLEET_SCALE", "1"))
    except ValueError:
        s = 1.0
    return min(max(s, 0.05), 10.0)


def scaled(n, least=1):
    return max(least, int(n * scale()))


# ---- RESP ------------------------------------------------------------------


class RespError(Exception):
    """An error reply (-ERR ...)."""


class Resp:
    """A RESP2 connection to shmd (unix socket) or Redis (unix or TCP)."""

    def __init__(self, path=None, port=None, host="127.0.0.1", timeout=10.0):
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = path
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            addr = (host, port)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(addr)
        except OSError:
            self.sock.close()
            raise
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            more = self.sock.recv(65536)
            if not more:
                raise ConnectionError("connection closed by the server")
            self.buf += more
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            more = self.sock.recv(65536)
            if not more:
                raise ConnectionError("connection closed by the server")
            self.buf += more
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self._bytes(n)
            try:
                return data.decode()
            except UnicodeDecodeError:
                return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        if kind == b",":  # RESP3 double, should HELLO 3 ever be sent
            return float(rest)
        raise ConnectionError("unexpected reply line %r" % line)

    def call(self, *args, raise_errors=True):
        """Send one request; return its reply (str, bytes, int, list, None),
        raising RespError for an error reply unless @raise_errors is False."""
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        r = self._reply()
        if isinstance(r, RespError) and raise_errors:
            raise r
        return r


def pairs(flat):
    """A flat name/value array (BF.INFO's shape) as a dict."""
    if not isinstance(flat, list):
        return {}
    return {flat[i]: flat[i + 1] for i in range(0, len(flat) - 1, 2) if isinstance(flat[i], str)}


def parse_replication(reply):
    """SHMF.REPLICATION's reply as {filter name: {field: value}}: one flat
    array (one filter) or an array of them; 'nodes' as a list of dicts
    (node, last_heard_ms_ago, foreign_shape)."""
    if not isinstance(reply, list):
        return {}
    if reply and isinstance(reply[0], str):
        reply = [reply]
    out = {}
    for flat in reply:
        d = pairs(flat)
        nodes = []
        for n in d.get("nodes") or []:
            if isinstance(n, list) and n and isinstance(n[0], str) and n[0] == "node":
                nodes.append(pairs(n))
            elif isinstance(n, list) and len(n) >= 2:
                nodes.append(
                    {"node": n[0], "last_heard_ms_ago": n[1], "foreign_shape": n[2] if len(n) > 2 else 0}
                )
        d["nodes"] = nodes
        if "name" in d:
            out[d["name"]] = d
    return out


def stream_id(s):
    """'<ms>-<seq>' as a tuple of ints, for comparisons; (0, 0) for none."""
    try:
        ms, seq = str(s).split("-")
        return (int(ms), int(seq))
    except (ValueError, AttributeError):
        return (0, 0)


# ---- Processes -------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _stopped(pid):
    """Is process @pid stopped (state T in /proc/PID/stat)?"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def _die_with_parent():
    # In the child, before exec: the kernel kills it when the harness dies.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    """A loopback TCP port that was free a moment ago."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tail(path, lines=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no %s)\n" % path


class Redis:
    """One redis-server of the fleet: its own directory, a loopback port and
    a unix socket. appendonly for the tests that kill and restart it."""

    def __init__(self, fleet, appendonly=False, password=None, port=None, name="redis"):
        self.fleet = fleet
        self.name = name
        self.dir = os.path.join(fleet.root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "redis.sock")
        self.log = os.path.join(self.dir, "redis.log")
        self.appendonly = appendonly
        self.password = password
        self.port = port
        self.proc = None
        self.extra = []  # more redis-server arguments (a replica's --replicaof, ...)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=20):
        for _ in range(10):
            if self.port is None:
                self.port = free_port()
            args = [
                self.fleet.redis_server,
                "--port", str(self.port), "--bind", "127.0.0.1",
                "--unixsocket", self.sock, "--unixsocketperm", "700",
                "--dir", self.dir, "--logfile", self.log,
                "--save", "", "--daemonize", "no", "--protected-mode", "yes",
                "--appendonly", "yes" if self.appendonly else "no",
            ]  # fmt: skip
            if self.password:
                args += ["--requirepass", self.password]
            args += self.extra
            self.proc = self.fleet.spawn(args, self.name)
            try:
                wait_for("redis-server on %s answers PING" % self.address, self._ready, timeout)
                return self
            except Failure:
                busy = "Address already in use" in tail(self.log, 10)
                self.fleet.reap(self.proc, signal.SIGKILL)
                if not busy:
                    raise
                self.port = None  # taken meanwhile: another one
        raise Failure("redis-server: no free port after 10 tries")

    def _ready(self):
        if self.proc.poll() is not None:
            raise Failure("redis-server exited (%d); its log:\n%s" % (self.proc.returncode, tail(self.log)))
        try:
            with Resp(path=self.sock, timeout=2) as c:
                if self.password:
                    c.call("AUTH", self.password)
                return c.call("PING") == "PONG"
        except (OSError, RespError, ConnectionError):
            return False

    def conn(self):
        c = Resp(path=self.sock)
        if self.password:
            c.call("AUTH", self.password)
        return c

    def call(self, *args):
        with self.conn() as c:
            return c.call(*args)

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self):
        """SIGKILL (also while stopped), reaped."""
        self.fleet.reap(self.proc, signal.SIGKILL)

    def restart(self):
        """Start again on the same port and directory (an appendonly Redis
        reloads its AOF)."""
        return self.start()


class Node:
    """One shmd of the fleet: nodeN, its runtime directory, configuration,
    log, snapshot directory and TCP listener."""

    def __init__(self, fleet, index, filters, replication=None, tcp=True):
        self.fleet = fleet
        self.name = "node%d" % index
        self.home = os.path.join(fleet.root, self.name)
        self.run = os.path.join(self.home, "run")
        self.snap = os.path.join(self.home, "snap")
        self.conf = os.path.join(self.home, "shmd.ini")
        self.log = os.path.join(self.home, "shmd.log")
        self.sock = os.path.join(self.run, "default.sock")
        self.filters = filters
        self.replication = replication
        self.tcp = tcp
        self.tcp_port = None
        self.password = "pw-%s-%d" % (self.name, random.randrange(1 << 30))
        self.proc = None
        os.makedirs(self.snap, exist_ok=True)

    def config_text(self):
        text = "[instance]\nname = default\nsnapshot_dir = %s\n\n" % self.snap
        if self.tcp:
            text += "[tcp]\nenabled = yes\nport = %d\nrequirepass = %s\n\n" % (self.tcp_port, self.password)
        if self.replication is not None:
            text += "[replication]\n" + "".join("%s = %s\n" % kv for kv in self.replication.items()) + "\n"
        for name, keys in self.filters.items():
            text += "[filter %s]\n" % name + "".join("%s = %s\n" % kv for kv in keys.items()) + "\n"
        return text

    def write_config(self):
        with open(self.conf, "w") as f:
            f.write(self.config_text())

    def spawn(self):
        """Start shmd and return at once (the bad-configuration tests read
        what it says)."""
        os.makedirs(self.run, mode=0o700, exist_ok=True)
        if os.path.exists(self.sock):
            os.unlink(self.sock)  # a killed shmd's socket must not pass for the new one's
        if self.tcp and self.tcp_port is None:
            self.tcp_port = free_port()
        self.write_config()
        env = dict(os.environ, SHMF_RUNTIME_DIR=self.run)
        self.proc = self.fleet.spawn([self.fleet.shmd, "-f", "-c", self.conf], self.name, env=env, log=self.log)
        return self.proc

    def start(self, timeout=30):
        """Start shmd and wait until its socket answers PING."""
        for _ in range(10):
            self.spawn()
            try:
                wait_for("%s: shmd answers PING" % self.name, self._ready, timeout)
                return self
            except Failure:
                busy = self.tcp and "Address already in use" in tail(self.log, 5)
                self.fleet.reap(self.proc, signal.SIGKILL)
                if not busy:
                    raise
                self.tcp_port = None
        raise Failure("%s: no free TCP port after 10 tries" % self.name)

    def _ready(self):
        if self.proc.poll() is not None:
            raise Failure("%s: shmd exited (%d); its log:\n%s" % (self.name, self.proc.returncode, tail(self.log)))
        try:
            with Resp(path=self.sock, timeout=2) as c:
                return c.call("PING") == "PONG"
        except (OSError, RespError, ConnectionError):
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM):
        """Stop shmd with @sig and reap it; returns its exit status."""
        return self.fleet.reap(self.proc, sig)

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def call(self, *args, raise_errors=True):
        with Resp(path=self.sock) as c:
            return c.call(*args, raise_errors=raise_errors)

    def shmctl(self, *args, check_ok=True, timeout=120):
        """Run shmctl against this node; returns the CompletedProcess."""
        r = subprocess.run(
            [self.fleet.shmctl, "--socket", self.sock] + [str(a) for a in args],
            capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, SHMF_RUNTIME_DIR=self.run), preexec_fn=_die_with_parent,
        )  # fmt: skip
        if check_ok and r.returncode != 0:
            raise Failure(
                "%s: shmctl %s: exit %d\n%s%s" % (self.name, " ".join(map(str, args)), r.returncode, r.stdout, r.stderr)
            )
        return r

    def replication_status(self, filt=None):
        """SHMF.REPLICATION [filter] as {filter: {field: value}}."""
        args = ["SHMF.REPLICATION"] + ([filt] if filt else [])
        return parse_replication(self.call(*args))

    def status(self, filt):
        """The replication status of one filter (a dict), or {}."""
        try:
            return self.replication_status(filt).get(filt, {})
        except (OSError, RespError, ConnectionError):
            return {}

    def worker(self, mode, filt, *args):
        """Run fleet-worker @mode on this node and return its JSON."""
        return self.fleet.worker(mode, "--dir", self.run, "--filter", filt, *args)

    def worker_bg(self, mode, filt, *args):
        """Start fleet-worker @mode on this node; Fleet.collect() reads it."""
        return self.fleet.worker_bg(mode, "--dir", self.run, "--filter", filt, *args)

    def missing(self, filt, prefix, count, start=0):
        r = self.worker("check", filt, "--prefix", prefix, "--from", start, "--count", count)
        check(r["errors"] == 0, "%s: checks of %s failed: %r" % (self.name, filt, r))
        return r["missing"]


class Fleet:
    """A Redis and N nodes, stopped by close() (a context manager)."""

    def __init__(self, build, what="fleet", keep=None):
        self.shmd, self.shmctl, self.worker_path = build["shmd"], build["shmctl"], build["worker"]
        self.redis_server = build.get("redis_server") or shutil.which("redis-server") or "/usr/bin/redis-server"
        self.root = tempfile.mkdtemp(prefix="shmf-%s-" % what, dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.chmod(self.root, 0o700)
        self.secret = "fleet-secret-%d" % random.randrange(1 << 40)
        self.procs = []
        self.redis = None
        self.nodes = []
        self.keep = keep if keep is not None else bool(os.environ.get("SHMF_FLEET_KEEP"))

    # -- processes --

    def spawn(self, args, what, env=None, log=None):
        out = open(log or os.path.join(self.root, what + ".out"), "ab")
        p = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=env, preexec_fn=_die_with_parent,
        )  # fmt: skip
        out.close()
        p.what = what
        self.procs.append(p)
        return p

    def reap(self, p, sig=signal.SIGTERM, timeout=20):
        """Send @sig to @p (SIGCONT too, should it be stopped) and reap it;
        SIGKILL if it is still there after @timeout. Returns its status."""
        if p is None:
            return None
        if p.poll() is None:
            try:
                p.send_signal(sig)
                # SIGCONT only to a stopped process: sent to a running
                # shmd of the sanitizer build, it can land while
                # LeakSanitizer's exit-time check has the threads under
                # ptrace, and that check then never ends.
                if sig not in (signal.SIGKILL, signal.SIGSTOP) and _stopped(p.pid):
                    p.send_signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)
        return p.returncode

    # -- the fleet --

    def start_redis(self, **kw):
        self.redis = Redis(self, **kw).start()
        return self.redis

    def replication_section(self, node_index, **over):
        """The [replication] section of node @node_index: this fleet's Redis
        (by its port), the node's name, the shared secret; @over replaces
        or adds keys (None removes one)."""
        r = {"redis": self.redis.address if self.redis else "127.0.0.1:1", "node": "node%d" % node_index,
             "secret": self.secret}  # fmt: skip
        for k, v in over.items():
            if v is None:
                r.pop(k, None)
            else:
                r[k] = v
        return r

    def add_node(self, filters, start=True, tcp=True, replicated=True, **replication):
        """Node N+1 with @filters ({name: {key: value}}) and the fleet's
        [replication] section (keys in @replication override it; none
        unless @replicated)."""
        i = len(self.nodes) + 1
        section = self.replication_section(i, **replication) if replicated else None
        n = Node(self, i, filters, section, tcp=tcp)
        self.nodes.append(n)
        if start:
            n.start()
        return n

    def start(self, n, filters, appendonly=False, replicated=True, **replication):
        """A Redis and @n nodes with @filters, each replicated filter following."""
        self.start_redis(appendonly=appendonly)
        for _ in range(n):
            self.add_node(filters, replicated=replicated, **replication)
        for node in self.nodes:
            for name, keys in filters.items():
                if keys.get("replicate") == "yes":
                    self.wait_state(node, name, "following")
        return self.nodes

    def wait_state(self, node, filt, state, timeout=20):
        return wait_for(
            "%s: filter %s in state %s" % (node.name, filt, state),
            lambda: node.status(filt).get("state") == state and node.status(filt),
            timeout,
        )

    # -- workers --

    def worker(self, mode, *args, timeout=300):
        r = subprocess.run(
            [self.worker_path, mode] + [str(a) for a in args], capture_output=True, text=True,
            timeout=timeout, preexec_fn=_die_with_parent,
        )  # fmt: skip
        if r.returncode != 0:
            raise Failure("fleet-worker %s %s: exit %d: %s" % (mode, " ".join(map(str, args)), r.returncode, r.stderr))
        return json.loads(r.stdout.strip().splitlines()[-1])

    def worker_bg(self, mode, *args):
        p = subprocess.Popen(
            [self.worker_path, mode] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=_die_with_parent,
        )  # fmt: skip
        p.what = "worker " + mode
        p.argv = args
        self.procs.append(p)
        return p

    def collect(self, p, timeout=300):
        """Wait for a background worker; return its JSON."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise Failure("fleet-worker %s: still running after %d s" % (" ".join(map(str, p.argv)), timeout))
        finally:
            if p in self.procs:
                self.procs.remove(p)
        if p.returncode != 0:
            raise Failure("fleet-worker %s: exit %d: %s" % (" ".join(map(str, p.argv)), p.returncode, err))
        return json.loads(out.strip().splitlines()[-1])

    # -- convergence --

    def wait_keys(self, filt, prefix, count, nodes=None, timeout=30, start=0):
        """Wait until every node in @nodes (default: all) has every key of
        @prefix; returns the seconds it took."""
        t0 = time.monotonic()
        for n in nodes or self.nodes:
            wait_for(
                "%s: every key %s0..%d of %s" % (n.name, prefix, count - 1, filt),
                lambda: n.missing(filt, prefix, count, start) == 0,
                max(1.0, timeout - (time.monotonic() - t0)),
                interval=0.1,
            )
        return time.monotonic() - t0

    def stream_last_id(self, filt, prefix="shmf:"):
        """The id of the newest entry of @filt's stream in Redis, (0, 0) if none."""
        r = self.redis.call("XREVRANGE", prefix + filt, "+", "-", "COUNT", "1")
        return stream_id(r[0][0]) if r else (0, 0)

    def wait_caught_up(self, filt, nodes=None, timeout=30):
        """Wait until every node's cursor has reached the newest entry of the
        stream and its journal is empty, the newest entry read after that:
        what was sent has been applied everywhere."""
        def settled():
            last = self.stream_last_id(filt)
            for n in nodes or self.nodes:
                s = n.status(filt)
                if stream_id(s.get("cursor")) < last or int(s.get("journal_depth", 1)) != 0:
                    return False
            return self.stream_last_id(filt) == last

        return wait_for("every node's cursor of %s at the stream's newest entry" % filt, settled, timeout)

    # -- teardown --

    def logs(self):
        out = ""
        for n in self.nodes:
            out += "---- %s (%s) ----\n%s" % (n.name, n.log, tail(n.log))
        if self.redis:
            out += "---- redis (%s) ----\n%s" % (self.redis.log, tail(self.redis.log, 10))
        return out

    def close(self):
        """Stop everything this fleet started: shmd nodes with SIGTERM (a
        clean exit must be 0: under ASan a leak or an error would not be),
        the rest with SIGKILL; then no process may still name our directory."""
        problems = []
        for n in self.nodes:
            if n.alive():
                rc = n.stop(signal.SIGTERM)
                if rc != 0:
                    problems.append("%s: shmd exited %s on SIGTERM; its log:\n%s" % (n.name, rc, tail(n.log)))
        for p in list(self.procs):
            self.reap(p, signal.SIGKILL)
        stray = subprocess.run(["pgrep", "-f", self.root], capture_output=True, text=True).stdout.split()
        stray = [int(pid) for pid in stray if int(pid) != os.getpid()]
        for pid in stray:
            try:
                os.kill(pid, signal.SIGKILL)  # ours: its command line names our directory
            except ProcessLookupError:
                pass
        if stray:
            problems.append("stray processes after teardown (pids %s)" % stray)
        if self.keep:
            print("fleet directory kept: %s" % self.root)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        if problems:
            raise Failure("; ".join(problems))

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None:
            print("---- the fleet's logs ----\n" + self.logs(), file=sys.stderr)
        try:
            self.close()
        except Failure:
            if exc is None:
                raise
            print("teardown: also %s" % sys.exc_info()[1], file=sys.stderr)
        return False
