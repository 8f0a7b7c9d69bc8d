"""test-redis-cli.py PATH-TO-SHMD [CASE...]

The real redis-cli (Debian's redis-tools, 7.0) against a shmd of its own,
as a person uses it. redis-cli loads COMMAND DOCS when it starts, to build
its help and the argument hints it shows while one types, and crashed on
shmd's entries (issue 27); so each case starts redis-cli afresh:

  interactive   in a pseudo-terminal (Python's pty), over the unix socket
                and over TCP with a password (-a), in RESP2 and with -3
                (RESP3): the prompt; "help BF.ADD" (and EXPIRE, BF.INFO,
                FLUSHALL, HELLO, whose arguments are a oneof or a block);
                the hints shown after "BF.ADD " and "EXPIRE "; BF.ADD and
                BF.EXISTS replies; exit status 0 on quit. Over TCP without
                -a: NOAUTH, then AUTH typed at the prompt, then commands.
  piped         printf 'PING\\nBF.ADD f a\\n' | redis-cli -s SOCK (and over
                TCP with -a): exit 0 and the replies.
  latency       --latency with stdout a pipe (ends by itself after -i) and
                --latency-history -i 1 in a terminal (stopped after its
                first range): numbers that make sense.
  scan          --scan lists every filter's name, --pattern a subset.

shmd runs in a temporary directory with its TCP listener on a free
loopback port and a password; it is stopped at the end (exit 0 required).
Prints each check and "N passed, N failed"; exits 1 on any failure, 77
(meson's SKIP, which run-tests.sh counts as a failure) without redis-cli,
which scripts/install-deps.sh installs (redis-tools).
"""
import fcntl
import os
import random
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

SHMD = sys.argv[1]
CASES = sys.argv[2:] or ["interactive", "piped", "latency", "scan"]
CLI = shutil.which("redis-cli")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
# linenoise draws a hint in the colour redis-cli asks for (90, grey) right after what was typed.
HINT = b"\x1b[0;90;49m"
TARGETS = {"unix": "unix socket", "tcp": "TCP with -a"}


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


def plain(raw):
    """What a terminal shows, roughly: escapes and carriage returns removed."""
    return ANSI.sub(b"", raw).replace(b"\r", b"").decode("utf-8", "replace")


def screen(raw):
    """The lines a terminal shows after @raw: enough of VT100 for linenoise (carriage return, newline,
    erase to the end of the line, cursor moves); colours dropped."""
    lines, row, col = [[]], 0, 0
    for m in re.finditer(rb"\x1b\[([0-9;?]*)([A-Za-z])|(\r)|(\n)|([^\x1b\r\n])", raw, re.S):
        arg, op, cr, nl, ch = m.groups()
        op = op.decode() if op else None
        n = int(arg) if arg and arg.isdigit() else 1
        if cr:
            col = 0
        elif nl or op == "B":
            row += 1 if nl else n
        elif op == "A":
            row = max(0, row - n)
        elif op == "C":
            col += n
        elif op == "D":
            col = max(0, col - n)
        elif op == "K":
            del lines[row][col:]
        elif ch:
            line = lines[row]
            line.extend([" "] * (col - len(line) + 1))
            line[col] = ch.decode("latin-1")
            col += 1
        while len(lines) <= row:
            lines.append([])
    return ["".join(line).rstrip() for line in lines]


class Terminal:
    """A program in a pseudo-terminal of 200 columns: its raw output, and keys typed to it."""

    def __init__(self, argv, env):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                                  start_new_session=True)
        os.close(slave)
        self.fd, self.raw, self.pos = master, b"", 0

    def _read(self, deadline):
        r, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the program closed the terminal (it exited)
            data = b""
        self.raw += data
        return bool(data)

    def expect(self, what, timeout=10.0):
        """Waits for bytes @what (or a compiled regex) after what earlier calls consumed; returns the raw
        output up to and including it, or None at the timeout or the program's end."""
        deadline = time.monotonic() + timeout
        while True:
            hay = self.raw[self.pos:]
            if isinstance(what, bytes):
                i = hay.find(what)
                end = i + len(what) if i >= 0 else -1
            else:
                m = what.search(hay)
                end = m.end() if m else -1
            if end >= 0:
                self.pos += end
                return hay[:end]
            if time.monotonic() >= deadline or not self._read(deadline):
                return None

    def type(self, text):
        os.write(self.fd, text.encode())

    def finish(self, timeout=10):
        """The exit status (killed after @timeout: None)."""
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        os.close(self.fd)
        return rc


def start_shmd(root, password):
    for _ in range(20):
        port = random.randint(20000, 60000)
        ini = os.path.join(root, "shmd.ini")
        with open(ini, "w") as f:
            f.write(f"[instance]\nname = cli\n\n[tcp]\nenabled = yes\nport = {port}\nrequirepass = {password}\n")
        logpath = os.path.join(root, "shmd.log")
        with open(logpath, "w") as log:
            p = subprocess.Popen([SHMD, "-f", "-c", ini], env=dict(os.environ, SHMF_RUNTIME_DIR=root), stderr=log)
        for _ in range(200):
            time.sleep(0.05)
            if "listening on tcp" in open(logpath).read() or p.poll() is not None:
                break
        if "listening on tcp" in open(logpath).read():
            return p, port
        p.kill()
        p.wait()
        if "Address already in use" not in open(logpath).read():
            break
    raise SystemExit("shmd did not start: " + open(os.path.join(root, "shmd.log")).read())


class Session:
    """One interactive redis-cli in a terminal."""

    def __init__(self, env, args, prompt, what):
        self.t = Terminal([CLI] + args, env)
        self.prompt, self.what = prompt, what
        self.started = self.t.expect(prompt.encode()) is not None
        status = None if self.started else self.t.finish(timeout=2)  # -11: SIGSEGV, as in issue 27
        C.check(self.started, f"{what}: starts and shows its prompt '{prompt}'",
                f"output {self.t.raw[-300:]!r}, status {status}")

    def run(self, line):
        """Types @line, waits for it to show whole, then Enter; returns what shows between the newline
        Enter gives and the next prompt."""
        self.t.type(line)
        if self.t.expect(line.encode()) is None:
            return None
        self.t.type("\r")
        out = self.t.expect(re.compile(b"\n(.*?)" + re.escape(self.prompt.encode()), re.S))
        if out is None:
            return None
        return plain(out[out.index(b"\n"):])[:-len(self.prompt)].strip("\n")

    def reply(self, line, want):
        got = self.run(line)
        C.check(got == want, f"{self.what}: {line} -> {want}".replace("\n", " / "), f"got {got!r}")

    def help(self, verb, params, summary, group):
        got = self.run(f"help {verb}")
        want = [f"{verb} {params}".rstrip(), f"summary: {summary}", "since: 1.0.0", f"group: {group}"]
        lines = [s.strip() for s in (got or "").split("\n") if s.strip()]
        C.check(lines == want, f"{self.what}: help {verb} prints '{want[0]}', its summary and group",
                f"got {got!r}")

    def hint(self, typed, hint):
        """Types @typed (no Enter): linenoise draws @hint in grey after it; then the line is erased."""
        self.t.type(typed)
        got = self.t.expect(HINT + hint.encode() + b"\x1b[0m", timeout=5)
        if C.check(got is not None, f"{self.what}: typing '{typed}' shows the hint '{hint}'",
                   f"output {self.t.raw[self.t.pos:][-300:]!r}"):
            print(f"    the terminal's line: {screen(self.t.raw[:self.t.pos])[-1]!r}")
        self.t.type("\x15")  # Ctrl-U: the line erased, the prompt redrawn
        self.t.expect(self.prompt.encode(), timeout=5)

    def quit(self, show=False):
        self.t.type("quit\r")
        rc = self.t.finish()
        C.check(rc == 0, f"{self.what}: quit exits with status 0", f"status {rc}")
        if show or C.failed:
            print(f"    --- the terminal of '{self.what}' at the end ---")
            for line in screen(self.t.raw):
                print(f"    | {line}")


def docs_of(verb):
    """(params, summary) as redis-cli should render them for @verb's known syntax."""
    return {
        "BF.ADD": ("key item", "Adds an item to a Bloom filter: 1 if it was new."),
        "EXPIRE": ("key seconds [NX|XX|GT|LT]", "Drops a filter after a number of seconds."),
        "BF.INFO": ("key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]",
                    "Returns a Bloom filter's capacity, size and items."),
        "FLUSHALL": ("[ASYNC|SYNC]", "Drops every filter (only with flushall = yes in [defaults])."),
        "HELLO": ("[protover] [AUTH username password] [SETNAME clientname]",
                  "Handshakes with the server in RESP2 or RESP3, optionally authenticating and naming the "
                  "connection."),
    }[verb]


def interactive(env, targets):
    groups = {"BF.ADD": "module", "EXPIRE": "generic", "BF.INFO": "module", "FLUSHALL": "server",
              "HELLO": "connection"}
    for name, args, prompt in targets:
        for proto in (2, 3):
            what = f"interactive, {TARGETS[name]}, RESP{proto}"
            s = Session(env, args + (["-3"] if proto == 3 else []), prompt, what)
            if not s.started:
                continue
            for verb in ("BF.ADD", "EXPIRE", "BF.INFO", "FLUSHALL", "HELLO"):
                params, summary = docs_of(verb)
                s.help(verb, params, summary, groups[verb])
            s.hint("BF.ADD ", "key item")
            s.hint("BF.ADD f ", "item")
            s.hint("EXPIRE ", "key seconds [NX|XX|GT|LT]")
            f = f"cli-{name}-{proto}"
            yes, no = ("(true)", "(false)") if proto == 3 else ("(integer) 1", "(integer) 0")
            s.reply(f"BF.ADD {f} a", yes)
            s.reply(f"BF.ADD {f} a", no)
            s.reply(f"BF.EXISTS {f} a", yes)
            s.reply(f"BF.EXISTS {f} never-added", no)
            s.reply(f"BF.MEXISTS {f} a never-added", f"1) {yes}\n2) {no}")
            s.quit(show=proto == 2)


def interactive_auth(env, port, password):
    """TCP without -a: refused until AUTH is typed at the prompt."""
    what = "interactive, TCP, AUTH typed"
    prompt = f"127.0.0.1:{port}> "
    s = Session(env, ["-h", "127.0.0.1", "-p", str(port)], prompt, what)
    if not s.started:
        return
    s.reply("BF.EXISTS cli-auth a", "(error) NOAUTH Authentication required.")
    s.reply(f"AUTH {password}", "OK")
    s.reply("BF.ADD cli-auth a", "(integer) 1")
    s.reply("BF.EXISTS cli-auth a", "(integer) 1")
    s.quit()


def piped(env, targets):
    for name, args, _ in targets:
        for proto in (2, 3):
            f = f"pipe-{name}-{proto}"
            p = subprocess.run([CLI] + args + (["-3"] if proto == 3 else []),
                               input=f"PING\nBF.ADD {f} a\nBF.ADD {f} a\nBF.EXISTS {f} a\n".encode(),
                               capture_output=True, env=env, timeout=30)
            out = p.stdout.decode("utf-8", "replace")
            want = "PONG\n1\n0\n1\n" if proto == 2 else "PONG\n(true)\n(false)\n(true)\n"
            C.check(p.returncode == 0 and out == want,
                    f"piped, {TARGETS[name]}, RESP{proto}: PING, BF.ADD twice and BF.EXISTS answered, exit 0",
                    f"status {p.returncode}, stdout {out!r}, stderr {p.stderr!r}")


def latency(env, targets):
    for name, args, _ in targets:
        # stdout a pipe: redis-cli --latency prints "min max avg samples" once after -i and exits.
        t0 = time.monotonic()
        p = subprocess.run([CLI] + args + ["--latency", "-i", "0.5"], capture_output=True, env=env, timeout=30)
        took = time.monotonic() - t0
        out = p.stdout.decode("utf-8", "replace")
        m = re.fullmatch(r"(\d+) (\d+) ([\d.]+) (\d+)\n", out)
        C.check(p.returncode == 0 and m is not None and int(m.group(4)) > 0 and
                int(m.group(1)) <= float(m.group(3)) <= int(m.group(2)) + 0.01 and took < 20,
                f"latency, {TARGETS[name]}: --latency -i 0.5 to a pipe ends by itself with min <= avg <= max over its samples",
                f"status {p.returncode}, stdout {out!r}, stderr {p.stderr!r}, {took:.1f} s")
        # A terminal: --latency-history prints a range a second until stopped.
        t = Terminal([CLI] + args + ["--latency-history", "-i", "1"], env)
        got = t.expect(re.compile(rb"min: (\d+), max: (\d+), avg: ([\d.]+) \((\d+) samples\) -- ([\d.]+) seconds range"),
                       timeout=15)
        m = re.search(rb"min: (\d+), max: (\d+), avg: ([\d.]+) \((\d+) samples\) -- ([\d.]+) seconds range",
                      got or b"")
        C.check(m is not None and int(m.group(4)) > 0 and int(m.group(1)) <= float(m.group(3)) <= int(m.group(2)) + 0.01,
                f"latency, {TARGETS[name]}: --latency-history -i 1 in a terminal shows a 1-second range of PING samples",
                f"output {t.raw[-300:]!r}")
        C.check(t.p.poll() is None, f"latency, {TARGETS[name]}: --latency-history still running until stopped")
        t.p.terminate()
        t.finish()


def scan(env, targets):
    names = ["scan-a1", "scan-a2", "scan-b1"]
    for f in names:
        subprocess.run([CLI] + targets[0][1] + ["BF.ADD", f, "x"], capture_output=True, env=env, timeout=30,
                       check=True)
    for name, args, _ in targets:
        keys = subprocess.run([CLI] + args + ["KEYS", "*"], capture_output=True, env=env, timeout=30)
        every = sorted(keys.stdout.decode().split())
        p = subprocess.run([CLI] + args + ["--scan"], capture_output=True, env=env, timeout=30)
        got = sorted(p.stdout.decode().split("\n")[:-1])
        C.check(p.returncode == 0 and got == every and set(names) <= set(got),
                f"scan, {TARGETS[name]}: --scan lists every filter's name once ({len(got)})",
                f"status {p.returncode}, got {got}, KEYS * {every}, stderr {p.stderr!r}")
        p = subprocess.run([CLI] + args + ["--scan", "--pattern", "scan-a*"], capture_output=True, env=env,
                           timeout=30)
        got = sorted(p.stdout.decode().split("\n")[:-1])
        C.check(p.returncode == 0 and got == ["scan-a1", "scan-a2"],
                f"scan, {TARGETS[name]}: --scan --pattern 'scan-a*' lists scan-a1 and scan-a2 only",
                f"status {p.returncode}, got {got}, stderr {p.stderr!r}")


def main():
    if CLI is None:
        print("SKIP: redis-cli is not installed (scripts/install-deps.sh installs Debian's redis-tools)")
        sys.exit(77)
    print(subprocess.run([CLI, "--version"], capture_output=True, text=True).stdout.strip())
    root = tempfile.mkdtemp(prefix="shmf-redis-cli-", dir="/dev/shm")
    password = f"cli-test-{random.randrange(10**9)}"
    p, port = start_shmd(root, password)
    sock = os.path.join(root, "cli.sock")
    # redis-cli's history and preferences stay in the test's directory; no REDISCLI_AUTH from outside.
    env = {k: v for k, v in os.environ.items() if not k.startswith("REDISCLI_")}
    env.update(HOME=root, TERM="xterm", REDISCLI_HISTFILE="/dev/null", REDISCLI_RCFILE="/dev/null")
    targets = [("unix", ["-s", sock], f"redis {sock}> "),
               ("tcp", ["-h", "127.0.0.1", "-p", str(port), "-a", password, "--no-auth-warning"],
                f"127.0.0.1:{port}> ")]
    try:
        for case in CASES:
            if case == "interactive":
                interactive(env, targets)
                interactive_auth(env, port, password)
            else:
                {"piped": piped, "latency": latency, "scan": scan}[case](env, targets)
        p.terminate()
        C.check(p.wait(timeout=30) == 0, "shmd stops with status 0 on SIGTERM")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{C.passed} passed, {C.failed} failed")
    sys.exit(1 if C.failed else 0)


main()
