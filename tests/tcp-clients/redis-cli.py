"""redis-cli.py PORT PASSWORD SCRIPT MAXCLIENTS MAX_REQUEST

redis-cli (Debian's redis-tools) against shmd over TCP: AUTH through -a
and --user/--pass, the shared script one redis-cli per request with its
--no-raw output parsed, pipelining through --pipe, -3 (HELLO 3) falling
back to RESP2, and the limits as redis-cli shows them. Run by
tests/test-tcp-clients.sh.
"""
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script import Checks, Error, Status  # noqa: E402

port, password, script = int(sys.argv[1]), sys.argv[2], sys.argv[3]
maxclients, max_request = int(sys.argv[4]), int(sys.argv[5])
version = subprocess.run(["redis-cli", "--version"], capture_output=True, text=True).stdout.strip()
c = Checks(version)
BASE = ["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--no-raw"]
AUTH = ["--user", "default", "--pass", password, "--no-auth-warning"]


def cli(args, opts=AUTH, stdin=None):
    """redis-cli's stdout and stderr for one request."""
    p = subprocess.run(BASE + opts + args, input=stdin, capture_output=True, timeout=30)
    return p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def unquote(s):
    """A bulk string as redis-cli prints it: "..." with C-like escapes."""
    body, out, i = s[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def scalar(text):
    if text.startswith("(integer) "):
        return int(text[10:])
    if text == "(nil)":
        return None
    if text.startswith("(error) "):
        return Error(text[8:])
    if text == "(empty array)":
        return []
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return unquote(text)
    return Status(text)


def parse(out):
    """redis-cli --no-raw output of one reply (flat arrays are enough here)."""
    lines = out.rstrip("\n").split("\n")
    items = [re.match(r"^\s*(\d+)\) (.*)$", line) for line in lines]
    if all(items) and [int(m.group(1)) for m in items] == list(range(1, len(items) + 1)):
        return [scalar(m.group(2)) for m in items]
    if len(lines) != 1:
        return Error(f"unparsed output: {out!r}")
    return scalar(lines[0])


# --- AUTH: required, refused, accepted. ------------------------------------
out, err = cli(["BF.EXISTS", "sb", "x"], opts=[])
c.check(out == "(error) NOAUTH Authentication required.\n", f"no password: {out!r}")
out, err = cli(["PING"], opts=["-a", "wrong", "--no-auth-warning"])
c.check("AUTH failed: WRONGPASS invalid username-password pair" in err and "NOAUTH" in out,
        f"wrong password: {out!r} {err!r}")
out, err = cli(["PING"], opts=["-a", password, "--no-auth-warning"])
c.check(out == "PONG\n", f"-a password: {out!r} {err!r}")
out, err = cli(["PING"])
c.check(out == "PONG\n", f"--user default --pass: {out!r} {err!r}")
# -3 asks for RESP3 with HELLO 3: booleans where RedisBloom answers them.
out, err = cli(["BF.EXISTS", "nosuch", "x"], opts=AUTH + ["-3"])
c.check(out == "(false)\n" and err == "", f"-3: {out!r} {err!r}")

# --- The shared script. ----------------------------------------------------
c.run_script(script, lambda args: parse(cli(args)[0]))

# --- Pipelining: --pipe sends 10,000 requests and reads the replies. -------
N = 10000
out, _ = cli(["BF.RESERVE", "clipipe", "0.001", "100000"])
c.check(parse(out) == "OK", f"BF.RESERVE clipipe: {out!r}")
proto = b"".join(b"*3\r\n$6\r\nBF.ADD\r\n$7\r\nclipipe\r\n$%d\r\n%s\r\n" % (len(k), k)
                 for k in (f"cli-pipe-{i}".encode() for i in range(N)))
p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"] + AUTH, input=proto,
                   capture_output=True, timeout=60)
summary = p.stdout.decode()
c.check(p.returncode == 0 and f"errors: 0, replies: {N}" in summary, f"--pipe: {summary!r} {p.stderr!r}")
out, _ = cli(["BF.MEXISTS", "clipipe", "cli-pipe-0", "cli-pipe-5000", "cli-pipe-9999", "never-added"])
c.check(parse(out) == [1, 1, 1, 0], f"keys sent through --pipe: {out!r}")
card = parse(cli(["BF.CARD", "clipipe"])[0])
c.check(isinstance(card, int) and N - 10 <= card <= N, f"BF.CARD after --pipe: {card}")

# --- Limits as redis-cli shows them. ---------------------------------------
big = b"x" * (max_request + 1)
out, err = cli(["-x", "BF.ADD", "clipipe"], stdin=big)
c.check(f"ERR Protocol error: request larger than {max_request // 1024} KiB" in out,
        f"-x with {len(big)} bytes: {out!r} {err!r}")
out, _ = cli(["BF.CARD", "clipipe"])
c.check(parse(out) == card, "the refused request added nothing")
held = []
for _ in range(maxclients):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    s.recv(200)
    held.append(s)
out, err = cli(["PING"])
c.check("max number of clients reached" in out + err, f"past maxclients: {out!r} {err!r}")
for s in held:
    s.close()
c.done()
