"""test-command-docs.py PATH-TO-SHMD

Every verb's COMMAND DOCS entry against the shape Redis documents (the
COMMAND DOCS page, the "Redis command arguments" page, and the reply
schema of command-docs.json), in RESP2 and RESP3, as the wire carries it:
redis-cli 7 reads every entry when it starts and trusts that shape (a
oneof without its "arguments" crashed it, issue 27), so the next verb
whose syntax breaks it fails here first.

An entry: a map (RESP2: a flat array of pairs) of bulk-string keys among
Redis' own (summary, since, group, complexity, module, doc_flags,
deprecated_since, replaced_by, history, arguments, subcommands); summary,
since and group present (redis-cli prints them); group one of Redis'
groups, "module" exactly for a module's verb (BF.*, CF.*, SHMF.*), which
names its module (bf, cf, shmf).
An argument: a map of Redis' argument fields (name, type, display_text,
key_spec_index, token, summary, since, deprecated_since, flags,
arguments); name and type present, bulk strings, names unique among
siblings; type one of Redis' nine; a pure-token has its token; flags a set
(RESP2: an array) of simple strings among optional, multiple and
multiple_token, multiple_token only with multiple and a token; a oneof or
block carries a non-empty "arguments" array (a oneof at least two
alternatives), nothing else does; a key_spec_index points into COMMAND
INFO's key specifications. And the words the arguments allow agree with
COMMAND's arity. Also: COMMAND DOCS describes every verb COMMAND LIST
names, and COMMAND DOCS NAME gives the same entry as the whole reply.

Starts its own shmd in a temporary directory, stops it at the end (exit 0
required). Prints each failure and "N passed, N failed".
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SHMD = sys.argv[1]

GROUPS = {"bitmap", "cluster", "connection", "generic", "geo", "hash", "hyperloglog", "list", "module", "pubsub",
          "scripting", "sentinel", "server", "set", "sorted-set", "stream", "string", "transactions"}
DOC_KEYS = {"summary", "since", "group", "complexity", "module", "doc_flags", "deprecated_since", "replaced_by",
            "history", "arguments", "subcommands"}
ARG_KEYS = {"name", "type", "display_text", "key_spec_index", "token", "summary", "since", "deprecated_since",
            "flags", "arguments"}
VALUE_TYPES = {"string", "integer", "double", "key", "pattern", "unix-time"}
TYPES = VALUE_TYPES | {"pure-token", "oneof", "block"}
ARG_FLAGS = {"optional", "multiple", "multiple_token"}
DOC_FLAGS = {"deprecated", "syscmd"}


# --- A RESP2/RESP3 reader that keeps every wire type. ----------------------
class Bulk(str):
    pass


class Status(str):
    pass


class Err(str):
    pass


class Array(list):
    pass


class Set(list):
    pass


class Map(list):
    """A RESP3 map, as its (key, value) pairs in wire order."""


class Raw:
    def __init__(self, path, proto):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(30)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        if proto == 3:
            hello = self.cmd("HELLO", "3")
            assert isinstance(hello, Map), f"HELLO 3: {hello!r}"

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError(f"closed or cut: {line!r}")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return Status(rest.decode())
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return Bulk(data.decode())
        if t == b"_":
            return None
        if t in (b"*", b"~", b">"):
            n = int(rest)
            items = [self.read() for _ in range(max(n, 0))]
            return Set(items) if t == b"~" else Array(items)
        if t == b"%":
            return Map((self.read(), self.read()) for _ in range(int(rest)))
        if t == b"#":
            return rest == b"t"
        if t == b",":
            return float(rest)
        raise ValueError(f"unexpected reply type {line!r}")


# --- The checks. -----------------------------------------------------------
class Checks:
    def __init__(self, quiet=False):
        self.passed = self.failed = 0
        self.quiet = quiet

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            if not self.quiet:
                print(f"FAIL: {what}")
        return cond


C = Checks()


def pairs(reply, proto, where):
    """A map's (key, value) pairs: RESP3 a map, RESP2 a flat array of even length; keys bulk strings, unique."""
    if proto == 3:
        ok = C.check(isinstance(reply, Map), f"{where}: a map in RESP3, got {type(reply).__name__}")
        got = list(reply) if ok else []
    else:
        ok = C.check(isinstance(reply, Array) and len(reply) % 2 == 0,
                     f"{where}: a flat array of pairs in RESP2, got {reply!r}")
        got = list(zip(reply[0::2], reply[1::2])) if ok else []
    keys = [k for k, _ in got]
    C.check(all(isinstance(k, Bulk) for k in keys), f"{where}: keys are bulk strings: {keys!r}")
    C.check(len(set(keys)) == len(keys), f"{where}: a key twice: {keys!r}")
    return dict(got)


def check_flags(flags, proto, where, allowed):
    kind = Set if proto == 3 else Array
    if not C.check(isinstance(flags, kind), f"{where}: flags a {kind.__name__}, got {flags!r}"):
        return []
    C.check(all(isinstance(f, Status) for f in flags), f"{where}: flags are simple strings: {flags!r}")
    C.check(set(flags) <= allowed and len(set(flags)) == len(flags), f"{where}: flags {list(flags)} not among {allowed}")
    return list(flags)


def check_arg(arg, proto, where, key_specs):
    """One argument and its nested ones; returns (fewest, most) words it takes (most None: no limit)."""
    m = pairs(arg, proto, where)
    C.check(set(m) <= ARG_KEYS, f"{where}: fields not Redis': {sorted(set(m) - ARG_KEYS)}")
    name, typ = m.get("name"), m.get("type")
    C.check(isinstance(name, Bulk) and name != "", f"{where}: a name, a bulk string: {name!r}")
    if not C.check(isinstance(typ, Bulk) and typ in TYPES, f"{where}: type {typ!r} is not one of Redis' {TYPES}"):
        return 0, None
    where = f"{where} ({name})"
    for field in ("token", "display_text", "summary", "since", "deprecated_since"):
        if field in m:
            C.check(isinstance(m[field], Bulk), f"{where}: {field} a bulk string: {m[field]!r}")
    token = m.get("token")
    if typ == "pure-token":
        C.check(isinstance(token, Bulk) and token != "", f"{where}: a pure-token has its token")
    if "key_spec_index" in m:
        i = m["key_spec_index"]
        C.check(typ == "key" and isinstance(i, int) and 0 <= i < key_specs,
                f"{where}: key_spec_index {i!r} of a {typ}, {key_specs} key specs in COMMAND INFO")
    flags = check_flags(m["flags"], proto, where, ARG_FLAGS) if "flags" in m else []
    if "multiple_token" in flags:
        C.check("multiple" in flags and token is not None, f"{where}: multiple_token without multiple and a token")
    nested = typ in ("oneof", "block")
    # The field whose absence crashed redis-cli: cliConcatArguments() reads it for every oneof and block.
    C.check(("arguments" in m) == nested, f"{where}: a {typ} {'needs' if nested else 'has no'} nested arguments")
    lo, hi = 1, 1
    if nested and "arguments" in m:
        subs = m["arguments"]
        if C.check(isinstance(subs, Array) and len(subs) >= (2 if typ == "oneof" else 1),
                   f"{where}: arguments an array of {'two or more' if typ == 'oneof' else 'one or more'}: {subs!r}"):
            bounds, names = [], []
            for j, sub in enumerate(subs):
                bounds.append(check_arg(sub, proto, f"{where}.arguments[{j}]", key_specs))
                names.append(pairs(sub, proto, where).get("name"))
            C.check(len(set(names)) == len(names), f"{where}: sibling names repeat: {names}")
            if typ == "oneof":
                lo = min(b[0] for b in bounds)
                hi = None if any(b[1] is None for b in bounds) else max(b[1] for b in bounds)
            else:
                lo = sum(b[0] for b in bounds)
                hi = None if any(b[1] is None for b in bounds) else sum(b[1] for b in bounds)
    if token is not None and typ != "pure-token":
        lo, hi = lo + 1, None if hi is None else hi + 1
    if "optional" in flags:
        lo = 0
    if "multiple" in flags:
        hi = None
    return lo, hi


def check_entry(verb, entry, proto, arity, key_specs):
    where = f"RESP{proto} COMMAND DOCS {verb}"
    m = pairs(entry, proto, where)
    C.check(set(m) <= DOC_KEYS, f"{where}: keys not Redis': {sorted(set(m) - DOC_KEYS)}")
    for field in ("summary", "since", "group"):
        C.check(isinstance(m.get(field), Bulk) and m[field] != "", f"{where}: {field} a bulk string: {m.get(field)!r}")
    for field in ("complexity", "module", "deprecated_since", "replaced_by"):
        if field in m:
            C.check(isinstance(m[field], Bulk), f"{where}: {field} a bulk string: {m[field]!r}")
    group = m.get("group")
    C.check(group in GROUPS, f"{where}: group {group!r} is not one of Redis' groups")
    C.check(("module" in m) == (group == "module"), f"{where}: module named exactly for a module's verb")
    C.check((group == "module") == ("." in verb), f"{where}: BF, CF and SHMF verbs are a module's, the rest Redis'")
    if "." in verb:
        C.check(m.get("module") == verb.split(".")[0], f"{where}: module {m.get('module')!r}, the family of its name")
    if "doc_flags" in m:
        check_flags(m["doc_flags"], proto, where, DOC_FLAGS)
    if "history" in m:
        h = m["history"]
        C.check(isinstance(h, Array) and all(isinstance(e, Array) and len(e) == 2 and all(isinstance(s, Bulk) for s in e)
                                             for e in h), f"{where}: history pairs of bulk strings: {h!r}")
    if "subcommands" in m:
        for sub, doc in pairs(m["subcommands"], proto, where).items():
            check_entry(sub, doc, proto, None, key_specs)
    args = m.get("arguments", Array())
    if not C.check(isinstance(args, Array), f"{where}: arguments an array: {args!r}"):
        return
    bounds, names = [], []
    for j, arg in enumerate(args):
        bounds.append(check_arg(arg, proto, f"{where} arguments[{j}]", key_specs))
        names.append(pairs(arg, proto, where).get("name"))
    C.check(len(set(names)) == len(names), f"{where}: argument names repeat: {names}")
    if arity is not None:
        words = 2 if "|" in verb else 1  # a subcommand's row counts the verb and itself
        lo = words + sum(b[0] for b in bounds)
        hi = None if any(b[1] is None for b in bounds) else words + sum(b[1] for b in bounds)
        want = f"arity {arity}: at least {-arity}" if arity < 0 else f"arity {arity}: exactly {arity}"
        C.check(lo == abs(arity) and (arity < 0 or hi == arity),
                f"{where}: its arguments take {lo} to {hi if hi is not None else 'any'} words, COMMAND says {want}")


def docs_map(reply, proto):
    """COMMAND DOCS' reply: verb name -> entry (the whole reply's shape checked too)."""
    return pairs(reply, proto, f"RESP{proto} COMMAND DOCS")


def run(sock):
    for proto in (2, 3):
        conn = Raw(sock, proto)
        info = {e[0]: e for e in conn.cmd("COMMAND")}
        names = conn.cmd("COMMAND", "LIST")
        alld = docs_map(conn.cmd("COMMAND", "DOCS"), proto)
        # A verb's subcommands ("client|kill") are in its entry, as in Redis 7.
        for verb, entry in list(alld.items()):
            m = pairs(entry, proto, verb)
            if "subcommands" in m:
                alld.update(pairs(m["subcommands"], proto, verb))
        C.check(sorted(alld) == sorted(names) and len(names) > 40,
                f"RESP{proto}: COMMAND DOCS describes exactly the {len(names)} verbs of COMMAND LIST: "
                f"missing {sorted(set(names) - set(alld))}, extra {sorted(set(alld) - set(names))}")
        for verb in names:
            if "|" in verb:
                info[verb] = conn.cmd("COMMAND", "INFO", verb)[0]
            if not C.check(verb in alld and verb in info, f"RESP{proto}: {verb} in COMMAND and COMMAND DOCS"):
                continue
            key_specs = len(info[verb][8]) if len(info[verb]) > 8 else 0
            check_entry(verb, alld[verb], proto, info[verb][1], key_specs)
            one = docs_map(conn.cmd("COMMAND", "DOCS", verb.upper()), proto)
            C.check(list(one) == [verb] and one[verb] == alld[verb],
                    f"RESP{proto}: COMMAND DOCS {verb.upper()} gives the entry the whole reply gives")
        # Things the checker must refuse, so that a pass means something.
        before = C.failed
        quiet = Checks(quiet=True)
        saved, globals()["C"] = C, quiet
        bad = Map([(Bulk("name"), Bulk("choice")), (Bulk("type"), Bulk("oneof"))]) if proto == 3 else \
            Array([Bulk("name"), Bulk("choice"), Bulk("type"), Bulk("oneof")])
        check_arg(bad, proto, "a oneof without arguments", 0)
        refused_oneof = quiet.failed
        bad = Map([(Bulk("name"), Bulk("x")), (Bulk("type"), Bulk("enum"))]) if proto == 3 else \
            Array([Bulk("name"), Bulk("x"), Bulk("type"), Bulk("enum")])
        check_arg(bad, proto, "an unknown type", 0)
        refused_type = quiet.failed - refused_oneof
        globals()["C"] = saved
        C.check(refused_oneof > 0 and refused_type > 0 and C.failed == before,
                f"RESP{proto}: the checker refuses a oneof without arguments and an unknown type")
        C.check(conn.cmd("PING") in ("PONG", Status("PONG")), f"RESP{proto}: shmd still up")


def main():
    root = tempfile.mkdtemp(prefix="shmf-command-docs-", dir="/dev/shm")
    ini = os.path.join(root, "shmd.ini")
    with open(ini, "w") as f:
        f.write("[instance]\nname = docs\n")
    sock = os.path.join(root, "docs.sock")
    log = open(os.path.join(root, "shmd.log"), "w")
    p = subprocess.Popen([SHMD, "-f", "-c", ini], env=dict(os.environ, SHMF_RUNTIME_DIR=root), stderr=log)
    try:
        for _ in range(200):
            if os.path.exists(sock) or p.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            raise SystemExit("shmd did not start: " + open(os.path.join(root, "shmd.log")).read())
        run(sock)
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
