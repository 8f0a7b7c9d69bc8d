"""test-notify.py PATH-TO-SHMD

shmd as a Type=notify service sees it: the test plays systemd's part with a
datagram socket of its own (NOTIFY_SOCKET), starts the build's shmd -f on a
temporary runtime directory and configuration, and reads what shmd says
(sd_notify(3)'s KEY=VALUE lines):

  ready     The test fills its socket's queue before shmd starts, so that
            shmd's first sd_notify() blocks in the kernel until the test
            reads; once shmd waits there (/proc/PID/wchan), the test stops
            it (SIGSTOP) and connects to the control socket: a READY=1 sent
            before listen() would be held before the socket exists, and the
            connect would fail every time. Then the queue is read: the
            first message of shmd's is READY=1, with STATUS= naming the
            instance and its 3 filters. Continued, shmd answers PING on that
            connection.
  reload    SIGHUP after a fourth filter was added to the file:
            RELOADING=1 (with MONOTONIC_USEC= of CLOCK_MONOTONIC, which
            systemd 253 asks for) then READY=1 with "4 filters"; the same
            around SHMF.RELOAD (shmctl reload's verb) and around a reload of
            a broken file (READY=1 still, its status saying nothing
            changed, the filters still served).
  stop      SIGTERM: STOPPING=1, then shmd exits 0, the socket gone.
  unreachable  NOTIFY_SOCKET naming a path where nobody listens: shmd starts,
            serves and stops as without it, and logs the failure once.

Prints each check, every message in the order seen, and "N passed, N failed";
exits 1 on any failure.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

SHMD = sys.argv[1]


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            print(f"ok - {what}")
        else:
            self.failed += 1
            print(f"FAIL - {what}" + (f"\n    {detail}" if detail else ""))
        return cond


C = Checks()
FILTER = "[filter {}]\ntype = bloom\ncapacity = 200000\nfpr = 0.01\n\n"


def write_config(path, names):
    with open(path, "w") as f:
        f.write("[instance]\nname = nt\n\n" + "".join(FILTER.format(n) for n in names))


def fields(msg):
    """sd_notify's newline-separated KEY=VALUE lines, as a dict (and the raw text)."""
    text = msg.decode("utf-8", "replace")
    return dict(line.split("=", 1) for line in text.split("\n") if "=" in line), text


class Manager:
    """The service manager's end: a datagram socket, and what came on it."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.seen = []

    def next(self, timeout=20.0, on_arrival=None):
        """The next message as a dict, or None after @timeout seconds; @on_arrival runs first, at once."""
        self.sock.settimeout(timeout)
        try:
            msg = self.sock.recv(4096)
        except socket.timeout:
            return None
        if on_arrival is not None:
            on_arrival()
        f, text = fields(msg)
        self.seen.append(text.replace("\n", " "))
        return f

    def fill(self):
        """The queue filled with messages of the test's own, so that the next sender waits."""
        self.filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.nfiller = 0
        while True:
            try:
                self.filler.sendto(b"FILLER=1", socket.MSG_DONTWAIT, self.path)
                self.nfiller += 1
            except BlockingIOError:
                return

    def drain_filler(self):
        self.sock.settimeout(5)
        for _ in range(self.nfiller):
            msg = self.sock.recv(4096)
            assert msg == b"FILLER=1", msg
        self.filler.close()

    def quiet(self, seconds):
        """True if nothing came for @seconds."""
        return self.next(timeout=seconds) is None


def resp(sock, *args):
    """One RESP request on @sock, and the first line of its reply."""
    req = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
    sock.sendall(req.encode())
    sock.settimeout(20)
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\r\n")[0].decode("utf-8", "replace")


def start(tmp, notify_path, logname="shmd.log"):
    env = dict(os.environ, SHMF_RUNTIME_DIR=os.path.join(tmp, "run"), NOTIFY_SOCKET=notify_path)
    log = open(os.path.join(tmp, logname), "w")
    return subprocess.Popen([SHMD, "-f", "-c", os.path.join(tmp, "shmd.ini")], env=env, stderr=log)


def blocked_sending(pid):
    """True while process @pid waits in a send to a full datagram queue."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            if f.read().strip() == "unix_wait_for_peer":
                return True
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split(" ")[0] in ("44", "46")  # x86-64 sendto, sendmsg
    except OSError:
        return False


def case_ready(mgr, p, sock_path):
    """mgr's queue was filled before shmd started: shmd's first sd_notify() blocks until the test reads,
    so the test looks at the socket while shmd is held at that very call, whatever the machine's speed."""
    deadline = time.monotonic() + 30
    while not blocked_sending(p.pid) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    C.check(blocked_sending(p.pid), "shmd's first message to the manager waits on the full queue")
    os.kill(p.pid, signal.SIGSTOP)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sock_path)
        error = None
    except OSError as e:
        error = e
    C.check(error is None, "held in that call, shmd's control socket accepts a connection", f"connect: {error}")
    mgr.drain_filler()
    os.kill(p.pid, signal.SIGCONT)  # the held message goes out now
    f = mgr.next()
    C.check(f is not None and f.get("READY") == "1", "that first message is READY=1", f"got {f}")
    status = (f or {}).get("STATUS", "")
    C.check(status == "instance 'nt': 3 filters", "READY=1 comes with STATUS= naming the instance and its 3 filters",
            f"STATUS={status!r}")
    if error is None:
        C.check(resp(conn, "PING") == "+PONG", "continued, shmd answers PING on that connection")
    conn.close()


def expect_reload(mgr, what, want_status):
    t0 = time.monotonic()
    f = mgr.next()
    C.check(f is not None and f.get("RELOADING") == "1", f"{what}: RELOADING=1 first", f"got {f}")
    usec = int((f or {}).get("MONOTONIC_USEC", "-1") or -1)
    C.check(abs(usec / 1e6 - t0) < 30, f"{what}: MONOTONIC_USEC= is CLOCK_MONOTONIC now",
            f"MONOTONIC_USEC={usec}, the test's clock {t0:.3f} s")
    f = mgr.next()
    C.check(f is not None and f.get("READY") == "1", f"{what}: then READY=1", f"got {f}")
    status = (f or {}).get("STATUS", "")
    C.check(status.startswith(want_status), f"{what}: STATUS= says '{want_status}'", f"STATUS={status!r}")


def case_reload(mgr, p, tmp, sock_path):
    ini = os.path.join(tmp, "shmd.ini")
    write_config(ini, ["a", "b", "c", "d"])
    os.kill(p.pid, signal.SIGHUP)
    expect_reload(mgr, "SIGHUP with a fourth filter", "instance 'nt': 4 filters")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    reply = resp(s, "SHMF.RELOAD")
    C.check(reply.startswith("*"), "SHMF.RELOAD answers its report", f"reply {reply!r}")
    expect_reload(mgr, "SHMF.RELOAD", "instance 'nt': 4 filters")
    with open(ini, "a") as f:
        f.write("[filter e]\ncapacity = many\n")
    os.kill(p.pid, signal.SIGHUP)
    expect_reload(mgr, "SIGHUP with a broken file", "instance 'nt': 4 filters; the last reload changed nothing")
    C.check(resp(s, "BF.ADD", "d", "k") == ":1", "after the broken reload the filters are served (BF.ADD d k)")
    s.close()
    C.check(mgr.quiet(1.5), "nothing more is said between reloads (STATUS is not sent per request or tick)",
            f"got {mgr.seen[-1]}")


def case_stop(mgr, p, sock_path):
    p.send_signal(signal.SIGTERM)
    f = mgr.next()
    C.check(f is not None and f.get("STOPPING") == "1", "SIGTERM: STOPPING=1", f"got {f}")
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    C.check(rc == 0, "shmd exits 0 after STOPPING=1", f"status {rc}")
    C.check(not os.path.exists(sock_path), "its socket is gone")
    C.check(mgr.quiet(0.2), "nothing after STOPPING=1")


def case_unreachable(tmp):
    write_config(os.path.join(tmp, "shmd.ini"), ["a"])
    p = start(tmp, os.path.join(tmp, "nobody-listens"), "unreachable.log")
    sock_path = os.path.join(tmp, "run", "nt.sock")
    reply = None
    for _ in range(400):
        time.sleep(0.05)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(sock_path)
                reply = resp(s, "PING")
                break
        except OSError:
            if p.poll() is not None:
                break
    C.check(reply == "+PONG", "NOTIFY_SOCKET where nobody listens: shmd starts and answers PING", f"reply {reply}")
    if p.poll() is None:
        os.kill(p.pid, signal.SIGHUP)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    C.check(rc == 0, "... and stops with status 0", f"status {rc}")
    log = open(os.path.join(tmp, "unreachable.log")).read()
    n = log.count("cannot tell the service manager")
    C.check(n == 1, "... logging the unreachable service manager once (not for each message)", f"{n} lines:\n{log}")


def main():
    with tempfile.TemporaryDirectory(prefix="shmf-notify-") as tmp:
        write_config(os.path.join(tmp, "shmd.ini"), ["a", "b", "c"])
        mgr = Manager(os.path.join(tmp, "notify"))
        mgr.fill()
        p = start(tmp, mgr.path)
        sock_path = os.path.join(tmp, "run", "nt.sock")
        try:
            case_ready(mgr, p, sock_path)
            if p.poll() is None:
                case_reload(mgr, p, tmp, sock_path)
                case_stop(mgr, p, sock_path)
        finally:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait()
        print("the sequence as seen: " + " | ".join(mgr.seen))
        case_unreachable(tmp)
        if C.failed:
            print("shmd's log:\n" + open(os.path.join(tmp, "shmd.log")).read())
    print(f"{C.passed} passed, {C.failed} failed")
    sys.exit(1 if C.failed else 0)


main()
