"""script.py - the shared BF/CF script (script.txt) for the Python runners.

A reply is compared after the runner turns it into: int, str (a bulk
string), Status (a status reply, a str), None (nil), list, or Error (an
error reply, holding its text). A runner whose client cannot tell a status
from a bulk string (redis-py) passes strict_status=False.
"""
import json
import sys


class Status(str):
    """A status reply (+OK), as opposed to a bulk string."""


class Error(str):
    """An error reply's text."""


def load(path):
    """[(line number, [args], expected)] from script.txt."""
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words, sep, want = line.partition(" => ")
            if not sep:
                raise SystemExit(f"{path}:{no}: no ' => ' in '{line}'")
            out.append((no, words.split(), json.loads(want)))
    return out


def matches(want, got, strict_status=True):
    if isinstance(want, dict) and "error" in want:
        return isinstance(got, Error) and want["error"] in got
    if isinstance(got, Error):
        return False
    if isinstance(want, dict) and "status" in want:
        return isinstance(got, str) and got == want["status"] and (isinstance(got, Status) or not strict_status)
    if want == "?":
        return isinstance(got, (int, str)) and not isinstance(got, bool)
    if want is None:
        return got is None
    if isinstance(want, bool) or isinstance(got, bool):
        return False
    if isinstance(want, int):
        return isinstance(got, int) and got == want
    if isinstance(want, str):
        return isinstance(got, str) and not isinstance(got, Status) and got == want
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(matches(w, g, strict_status) for w, g in zip(want, got)))
    raise SystemExit(f"script: cannot compare with {want!r}")


class Checks:
    """Counts checks; each failure is printed and makes the run fail."""

    def __init__(self, client):
        self.client = client
        self.ok = self.bad = 0

    def check(self, cond, what):
        if cond:
            self.ok += 1
        else:
            self.bad += 1
            print(f"FAIL ({self.client}): {what}")

    def run_script(self, path, execute, strict_status=True):
        """execute(args) -> normalized reply."""
        for no, args, want in load(path):
            got = execute(args)
            self.check(matches(want, got, strict_status),
                       f"script.txt:{no}: {' '.join(args)}: got {got!r} ({type(got).__name__}), want {want!r}")

    def done(self):
        print(f"{self.client}: {self.ok} checks passed, {self.bad} failed")
        sys.exit(1 if self.bad else 0)
