"""conformance.py PATH-TO-SHMD

shmd against RedisBloom's command reference (its pages for BF.*, CF.*, and
Redis' for the commands around them), in RESP2 and RESP3: every Bloom and
cuckoo command, auto-create with RedisBloom's defaults, reads of a missing
filter, BF.INFO/CF.INFO, RedisBloom's error texts, MULTI/EXEC/DISCARD,
the keyspace commands and expiry, HELLO, COMMAND, and bad input for each
(answered with a clear error, shmd still up, no filter changed).

RESP2 runs through redis-py (Debian's python3-redis, which has no RESP3)
and through a small raw client; RESP3 through the raw client (HELLO 3),
which parses every RESP3 type, so that booleans, maps, sets, doubles and
nulls are checked as the wire carries them. Prints the number of checks
passed in each protocol; exits 1 if any failed.
"""
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import redis

SHMD = sys.argv[1]


class Status(str):
    pass


class Err(str):
    pass


class Field:
    """BF.INFO key FIELD as RedisBloom answers it: a map of that one field in
    RESP3, an array of its value in RESP2."""

    def __init__(self, name, value):
        self.name, self.value = name, value


class Bool:
    """An expected boolean: RESP3 true/false, RESP2 the integer 1/0."""

    def __init__(self, v):
        self.v = bool(v)


class Raw:
    """A RESP2/RESP3 client that keeps every reply type."""

    def __init__(self, port, proto):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")
        self.proto = proto
        if proto == 3:
            hello = self.cmd("HELLO", "3")
            assert isinstance(hello, dict) and hello["proto"] == 3, hello

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return Status(rest.decode())
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            try:
                return data.decode()
            except UnicodeDecodeError:
                return data
        if t in (b"*", b"~"):
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if t == b"%":
            n = int(rest)
            m = {}
            for _ in range(n):
                k = self.read()
                m[k] = self.read()
            return m
        if t == b"#":
            return rest == b"t"
        if t == b"_":
            return None
        if t == b",":
            return float(rest)
        raise ValueError(f"unexpected reply type {line!r}")


# ---------------------------------------------------------------------------
def start_shmd(root, extra=""):
    for _ in range(20):
        port = random.randint(20000, 60000)
        ini = os.path.join(root, "shmd.ini")
        with open(ini, "w") as f:
            # No password: the harness is an admin, as a client of RedisBloom without ACLs.
            f.write(f"[instance]\nname = conf\n\n[tcp]\nenabled = yes\nport = {port}\nunauthenticated_role = admin\n{extra}")
        log = open(os.path.join(root, "shmd.log"), "w")
        p = subprocess.Popen([SHMD, "-f", "-c", ini], env=dict(os.environ, SHMF_RUNTIME_DIR=root),
                             stderr=log)
        for _ in range(200):
            time.sleep(0.05)
            text = open(os.path.join(root, "shmd.log")).read()
            if "listening on tcp" in text or p.poll() is not None:
                break
        if "listening on tcp" in open(os.path.join(root, "shmd.log")).read():
            return p, port
        p.kill()
        p.wait()
    raise SystemExit("shmd did not start: " + open(os.path.join(root, "shmd.log")).read())


class Checks:
    def __init__(self):
        self.passed = {2: 0, 3: 0}
        self.failed = 0

    def check(self, proto, cond, what):
        if cond:
            self.passed[proto] += 1
        else:
            self.failed += 1
            print(f"FAIL (RESP{proto}): {what}")


C = Checks()


def want_for(proto, want):
    """The expected value as proto carries it (Bool: RESP3 bool, RESP2 int; maps flat in RESP2)."""
    if isinstance(want, Bool):
        return want.v if proto == 3 else int(want.v)
    if isinstance(want, Field):
        return {want.name: want.value} if proto == 3 else [want.value]
    if isinstance(want, list):
        return [want_for(proto, w) for w in want]
    if isinstance(want, dict) and "error" not in want:
        if proto == 3:
            return {k: want_for(proto, v) for k, v in want.items()}
        flat = []
        for k, v in want.items():
            flat += [k, want_for(proto, v)]
        return flat
    return want


ANY = object()


def same(want, got):
    if want is ANY:
        return got is not None and not isinstance(got, Err)
    if isinstance(want, dict) and "error" in want:
        return isinstance(got, Err) and got.startswith(want["error"])
    if isinstance(got, Err):
        return False
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(same(w, g) for w, g in zip(want, got))
    if isinstance(want, dict):
        return isinstance(got, dict) and want.keys() == got.keys() and all(same(want[k], got[k]) for k in want)
    if isinstance(want, Status):
        return isinstance(got, Status) and want == got
    return want == got


def run(conn, proto, args, want):
    got = conn.cmd(*args)
    w = want_for(proto, want)
    C.check(proto, same(w, got), f"{' '.join(map(str, args))}: got {got!r}, want {w!r}")
    return got


def E(text):
    return {"error": text}


OK = Status("OK")
B1, B0 = Bool(1), Bool(0)


def script(p):
    """The RedisBloom reference, command by command. p: a prefix for names."""
    bf, cf, miss = p + "bf", p + "cf", p + "missing"
    return [
        # --- BF: auto-create with RedisBloom's defaults, then every reply.
        (("BF.ADD", bf, "a"), B1),
        (("BF.ADD", bf, "a"), B0),
        (("BF.MADD", bf, "a", "b", "c"), [B0, B1, B1]),
        (("BF.EXISTS", bf, "b"), B1),
        (("BF.EXISTS", bf, "zz"), B0),
        (("BF.MEXISTS", bf, "a", "zz"), [B1, B0]),
        (("BF.CARD", bf), 3),
        (("BF.INFO", bf, "CAPACITY"), Field("Capacity", 100)),
        (("BF.INFO", bf, "SIZE"), Field("Size", ANY)),
        (("BF.INFO", bf, "FILTERS"), Field("Number of filters", 1)),
        (("BF.INFO", bf, "ITEMS"), Field("Number of items inserted", 3)),
        (("BF.INFO", bf, "expansion"), Field("Expansion rate", 2)),
        (("BF.INFO", bf, "COLOR"), E("Invalid information value")),
        # --- Reads of a missing filter: 0, as RedisBloom answers.
        (("BF.EXISTS", miss, "x"), B0),
        (("BF.MEXISTS", miss, "x", "y"), [B0, B0]),
        (("BF.CARD", miss), 0),
        (("BF.INFO", miss), E("ERR not found")),
        (("CF.EXISTS", miss, "x"), B0),
        (("CF.MEXISTS", miss, "x", "y"), [B0, B0]),
        (("CF.COUNT", miss, "x"), 0),
        (("CF.DEL", miss, "x"), E("Not found")),
        (("CF.INFO", miss), E("ERR not found")),
        (("BF.INSERT", miss, "NOCREATE", "ITEMS", "x"), E("ERR not found")),
        (("CF.INSERT", miss, "NOCREATE", "ITEMS", "x"), E("ERR not found")),
        (("BF.SCANDUMP", miss, "0"), E("ERR not found")),
        (("EXISTS", miss), 0),
        # --- BF.RESERVE and its refusals (RedisBloom's texts).
        (("BF.RESERVE", p + "r", "0.01", "1000"), OK),
        (("BF.RESERVE", p + "r", "0.01", "1000"), E("ERR item exists")),
        (("BF.RESERVE", p + "x", "abc", "1000"), E("ERR bad error rate")),
        (("BF.RESERVE", p + "x", "1.5", "1000"), E("ERR error rate must be in the range (0.000000, 1.000000)")),
        (("BF.RESERVE", p + "x", "0", "1000"), E("ERR error rate must be in the range (0.000000, 1.000000)")),
        (("BF.RESERVE", p + "r", "0", "1000"), E("ERR error rate must be in the range (0.000000, 1.000000)")),
        (("BF.RESERVE", p + "x", "0.01", "abc"), E("ERR bad capacity")),
        (("BF.RESERVE", p + "x", "0.01", "1k"), E("ERR bad capacity")),
        (("BF.RESERVE", p + "x", "0.01", "-1"), E("ERR capacity must be in the range [1, 1073741824]")),
        (("BF.RESERVE", p + "x", "0.01", "0"), E("ERR capacity must be in the range [1, 1073741824]")),
        (("BF.RESERVE", p + "x", "0.01", "99999999999999999999999"), E("ERR bad capacity")),
        # --- BF.INSERT
        (("BF.INSERT", p + "ins", "CAPACITY", "500", "ERROR", "0.001", "ITEMS", "x", "y", "x"), [B1, B1, B0]),
        (("BF.INFO", p + "ins", "CAPACITY"), Field("Capacity", 500)),
        (("BF.INSERT", p + "ins", "COLOR", "red", "ITEMS", "x"), E("Unknown argument received")),
        (("BF.INSERT", p + "ins", "CAPACITY", "-3", "ITEMS", "x"), E("Bad capacity")),
        (("BF.INSERT", p + "ins", "ERROR", "x", "ITEMS", "x"), E("Bad error rate")),
        (("BF.INSERT", p + "ins", "ERROR", "1", "ITEMS", "x"), E("Bad error rate")),
        (("BF.INSERT", p + "ins", "CAPACITY"), E("ERR wrong number of arguments for 'bf.insert' command")),
        # --- CF: auto-create, every reply.
        (("CF.ADD", cf, "a"), B1),
        (("CF.ADD", cf, "a"), B1),
        (("CF.ADDNX", cf, "a"), B0),
        (("CF.ADDNX", p + "cf2", "a"), B1),
        (("CF.COUNT", cf, "a"), 2),
        (("CF.EXISTS", cf, "a"), B1),
        (("CF.MEXISTS", cf, "a", "zz"), [B1, B0]),
        (("CF.DEL", cf, "a"), B1),
        (("CF.DEL", cf, "zz"), B0),
        (("CF.INSERT", cf, "ITEMS", "b", "c"), [B1, B1]),
        (("CF.INSERTNX", cf, "ITEMS", "b", "d"), [0, 1]),
        (("CF.INSERT", p + "cf3", "CAPACITY", "3", "ITEMS", "x"),
         E("Capacity must be in the range [cf-bucket-size * 2, 1073741824]")),
        (("CF.INSERT", p + "cf3", "CAPACITY", "x", "ITEMS", "x"), E("Bad capacity")),
        (("CF.INSERT", p + "cf3", "COLOR", "ITEMS", "x"), E("Unknown argument received")),
        (("EXISTS", p + "cf3"), 0),
        (("CF.RESERVE", cf, "1000"), E("ERR item exists")),
        (("CF.COMPACT", cf), OK),
        # --- CF.RESERVE: BUCKETSIZE 1 to 255 and MAXITERATIONS 1 to 65535 as RedisBloom reads them, its
        # texts; of those sizes a bucket of 1, 2, 4 or 8 fingerprints (one atomic word), refused otherwise.
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "0"),
         E("BUCKETSIZE: value must be in the range [1, 255]")),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "-1"),
         E("BUCKETSIZE: value must be in the range [1, 255]")),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "256"),
         E("BUCKETSIZE: value must be in the range [1, 255]")),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "x"), E("Couldn't parse BUCKETSIZE")),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "3"), E("ERR BUCKETSIZE 3 is not supported: ")),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "16"), E("ERR BUCKETSIZE 16 is not supported: ")),
        (("CF.RESERVE", p + "cfr", "1000", "MAXITERATIONS", "0"),
         E("MAXITERATIONS: value must be in the range [1, 65535]")),
        (("CF.RESERVE", p + "cfr", "1000", "MAXITERATIONS", "-5"),
         E("MAXITERATIONS: value must be in the range [1, 65535]")),
        (("CF.RESERVE", p + "cfr", "1000", "MAXITERATIONS", "65536"),
         E("MAXITERATIONS: value must be in the range [1, 65535]")),
        (("CF.RESERVE", p + "cfr", "1000", "MAXITERATIONS", "99999999999999999999"),
         E("Couldn't parse MAXITERATIONS")),
        (("CF.RESERVE", p + "cfr", "abc"), E("Bad capacity")),
        (("CF.RESERVE", p + "cfr", "7", "BUCKETSIZE", "4"),
         E("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")),
        (("CF.RESERVE", p + "cfr", "0"), E("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")),
        (("CF.RESERVE", p + "cfr", "3"), E("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")),
        (("CF.RESERVE", p + "cfr", "100", "BUCKETSIZE"), E("ERR wrong number of arguments for 'cf.reserve' command")),
        # RedisBloom's order: MAXITERATIONS, then BUCKETSIZE, then EXPANSION, then the capacity.
        (("CF.RESERVE", p + "cfr", "1", "BUCKETSIZE", "0", "MAXITERATIONS", "0"),
         E("MAXITERATIONS: value must be in the range [1, 65535]")),
        (("CF.RESERVE", p + "cfr", "1", "EXPANSION", "-1", "BUCKETSIZE", "0"),
         E("BUCKETSIZE: value must be in the range [1, 255]")),
        (("CF.RESERVE", p + "cfr", "1", "EXPANSION", "-1"), E("EXPANSION: value must be in the range [0, 32768]")),
        (("EXISTS", p + "cfr"), 0),
        (("CF.RESERVE", p + "cfr", "1000", "BUCKETSIZE", "2", "MAXITERATIONS", "65535"), OK),
        (("CF.ADD", p + "cfr", "a"), B1),
        (("CF.EXISTS", p + "cfr", "a"), B1),
        (("DEL", p + "cfr"), 1),
        # --- WRONGTYPE, Redis' text.
        (("BF.ADD", cf, "x"), E("WRONGTYPE Operation against a key holding the wrong kind of value")),
        (("CF.ADD", bf, "x"), E("WRONGTYPE Operation against a key holding the wrong kind of value")),
        (("BF.EXISTS", cf, "x"), E("WRONGTYPE")),
        # --- The keyspace.
        (("TYPE", bf), Status("MBbloom--")),
        (("TYPE", cf), Status("MBbloomCF")),
        (("TYPE", miss), Status("none")),
        (("EXISTS", bf, cf, miss, bf), 3),
        (("KEYS", p + "b*"), [bf]),
        (("KEYS", p + "cf?"), [p + "cf2"]),
        (("TTL", bf), -1),
        (("TTL", miss), -2),
        (("EXPIRE", bf, "100"), 1),
        (("EXPIRE", bf, "200", "NX"), 0),
        (("EXPIRE", bf, "200", "GT"), 1),
        (("EXPIRE", miss, "100"), 0),
        (("TTL", bf), 200),
        (("PERSIST", bf), 1),
        (("PERSIST", bf), 0),
        (("TTL", bf), -1),
        (("PEXPIRE", p + "ins", "100000"), 1),
        (("EXPIRE", bf, "abc"), E("ERR value is not an integer or out of range")),
        (("EXPIRE", bf, "9223372036854775807"), E("ERR invalid expire time in 'expire' command")),
        (("EXPIRE", bf, "10", "SOON"), E("ERR Unsupported option SOON")),
        (("EXPIRE", p + "r", "-1"), 1),  # a time past: dropped now
        (("EXISTS", p + "r"), 0),
        (("DEL", p + "cf2", miss), 1),
        (("UNLINK", p + "cf2"), 0),
        (("SELECT", "0"), OK),
        (("SELECT", "1"), E("ERR DB index is out of range")),
        (("ECHO", "hi"), "hi"),
        (("CLIENT", "SETNAME", "conf"), OK),
        (("CLIENT", "GETNAME"), "conf"),
        (("TIME",), [ANY, ANY]),
        (("FLUSHALL",), E("ERR FLUSHALL and FLUSHDB are off")),
        (("SET", "a", "b"), E("ERR shmd serves only Bloom and cuckoo filters: 'SET'")),
        (("HGET", "a", "b"), E("ERR shmd serves only Bloom and cuckoo filters: 'HGET'")),
        (("SCAN", "x"), E("ERR invalid cursor")),
        (("SCAN", "0", "COUNT", "0"), E("ERR syntax error")),
        (("SCAN", "0", "MATCH"), E("ERR syntax error")),
        # --- Transactions.
        (("EXEC",), E("ERR EXEC without MULTI")),
        (("DISCARD",), E("ERR DISCARD without MULTI")),
        (("MULTI",), OK),
        (("MULTI",), E("ERR MULTI calls can not be nested")),
        (("BF.ADD", p + "tx", "a"), Status("QUEUED")),
        (("BF.INFO", miss), Status("QUEUED")),
        (("BF.EXISTS", p + "tx", "a"), Status("QUEUED")),
        (("EXEC",), [B1, E("ERR not found"), B1]),
        (("MULTI",), OK),
        (("BF.ADD", p + "tx2"), E("ERR wrong number of arguments for 'bf.add' command")),
        (("BF.ADD", p + "tx2", "a"), Status("QUEUED")),
        (("EXEC",), E("EXECABORT Transaction discarded because of previous errors.")),
        (("EXISTS", p + "tx2"), 0),
        (("MULTI",), OK),
        (("NOSUCHVERB",), E("ERR unknown command 'NOSUCHVERB'")),
        (("DISCARD",), OK),
        (("MULTI",), OK),
        (("WATCH", bf), E("ERR WATCH inside MULTI is not allowed")),
        (("DISCARD",), OK),
        (("WATCH", bf), OK),
        (("UNWATCH",), OK),
        # --- HELLO's refusals.
        (("HELLO", "4"), E("NOPROTO unsupported protocol version")),
        (("HELLO", "x"), E("ERR Protocol version is not an integer or out of range")),
        # --- Wrong arity for every new command.
        *[((v,) + ("k",) * n, E(f"ERR wrong number of arguments for '{v.lower()}' command")) for v, n in [
            ("DEL", 0), ("EXISTS", 0), ("TYPE", 0), ("TYPE", 2), ("KEYS", 0), ("SCAN", 0), ("DBSIZE", 1),
            ("EXPIRE", 1), ("EXPIRE", 4), ("TTL", 0), ("PTTL", 2), ("PERSIST", 0), ("TIME", 1), ("MULTI", 1),
            ("EXEC", 1), ("DISCARD", 1), ("WATCH", 0), ("BF.CARD", 0), ("BF.INFO", 3), ("CF.INFO", 2),
            ("BF.SCANDUMP", 0), ("BF.LOADCHUNK", 2), ("FLUSHALL", 2)]],
        # --- Growing filters: EXPANSION, NONSCALING and their refusals.
        (("BF.RESERVE", p + "gx", "0.01", "100", "EXPANSION", "-2"), E("ERR expansion must be in the range [0, 32768]")),
        (("BF.RESERVE", p + "gx", "0.01", "100", "EXPANSION", "32769"),
         E("ERR expansion must be in the range [0, 32768]")),
        (("BF.RESERVE", p + "gx", "0.01", "100", "EXPANSION", "x"), E("ERR bad expansion")),
        (("BF.RESERVE", p + "gx", "0.01", "100", "EXPANSION"), E("ERR no expansion")),
        (("BF.RESERVE", p + "gx", "0.01", "100", "NONSCALING", "EXPANSION", "2"),
         E("Nonscaling filters cannot expand")),
        (("BF.INSERT", p + "gx", "EXPANSION", "-1", "ITEMS", "a"), E("Bad expansion")),
        (("BF.INSERT", p + "gx", "EXPANSION", "y", "ITEMS", "a"), E("Bad expansion")),
        (("CF.RESERVE", p + "gx", "100", "EXPANSION", "-1"), E("EXPANSION: value must be in the range [0, 32768]")),
        (("CF.RESERVE", p + "gx", "100", "EXPANSION", "32769"), E("EXPANSION: value must be in the range [0, 32768]")),
        (("CF.RESERVE", p + "gx", "100", "EXPANSION", "y"), E("Couldn't parse EXPANSION")),
        (("EXISTS", p + "gx"), 0),
        # EXPANSION 0 is NONSCALING (RedisBloom): no expansion rate.
        (("BF.RESERVE", p + "g0", "0.01", "100", "EXPANSION", "0"), OK),
        (("BF.INFO", p + "g0", "EXPANSION"), Field("Expansion rate", None)),
        (("BF.INSERT", p + "gi0", "EXPANSION", "0", "ITEMS", "a"), [B1]),
        (("BF.INFO", p + "gi0", "EXPANSION"), Field("Expansion rate", None)),
        (("BF.RESERVE", p + "g4", "0.01", "100", "EXPANSION", "4"), OK),
        (("BF.INFO", p + "g4", "EXPANSION"), Field("Expansion rate", 4)),
        (("BF.RESERVE", p + "ns", "0.01", "50", "NONSCALING"), OK),
        (("BF.INFO", p + "ns", "EXPANSION"), Field("Expansion rate", None)),
        (("CF.RESERVE", p + "c3", "100", "EXPANSION", "3"), OK),
        (("CF.RESERVE", p + "c0", "100", "EXPANSION", "0"), OK),
    ]


def one_field(got):
    """The value of BF.INFO key FIELD, a one-entry map (RESP3) or array (RESP2)."""
    return next(iter(got.values())) if isinstance(got, dict) else got[0]


def growth_checks(conn, proto, p):
    """Filters that grow as RedisBloom's do: a layer expansion times the last
    once the current one holds its capacity, BF.INFO and CF.INFO summing the
    layers; NONSCALING refusing past its capacity; CF EXPANSION 0 full."""
    keys = [f"g{i}" for i in range(1000)]
    conn.cmd("BF.RESERVE", p + "g2", "0.01", "100")  # RedisBloom's default expansion, 2
    conn.cmd("BF.MADD", p + "g2", *keys)
    # 100 + 200 + 400 hold 700 keys; the fourth layer (800) the rest.
    info = {k: one_field(conn.cmd("BF.INFO", p + "g2", k)) for k in ("CAPACITY", "FILTERS", "ITEMS", "EXPANSION")}
    want = {"CAPACITY": 1500, "FILTERS": 4, "ITEMS": conn.cmd("BF.CARD", p + "g2"), "EXPANSION": 2}
    C.check(proto, info == want, f"BF.INFO of a filter of 100 keys grown by 2 to 1,000: {info}")
    got = conn.cmd("BF.MEXISTS", p + "g2", *keys)
    C.check(proto, got == [want_for(proto, B1)] * 1000, "every key of the grown filter found")
    conn.cmd("BF.MADD", p + "g4", *keys[:600])  # 100 + 400 + 1600
    C.check(proto, one_field(conn.cmd("BF.INFO", p + "g4", "FILTERS")) == 3 and
            one_field(conn.cmd("BF.INFO", p + "g4", "CAPACITY")) == 2100, "BF.INFO of a filter grown by 4")
    # NONSCALING: BF.MADD stops at the first refusal, RedisBloom's error in its place.
    got = conn.cmd("BF.MADD", p + "ns", *keys[:60])
    C.check(proto, isinstance(got, list) and 50 <= len(got) <= 60 and isinstance(got[-1], Err) and
            got[-1] == "ERR non scaling filter is full", f"BF.MADD past a NONSCALING filter's capacity: {got[-3:]}")
    C.check(proto, conn.cmd("BF.CARD", p + "ns") == 50, "a NONSCALING filter holds its capacity")
    # A key the full filter answers absent (at its 1% one in a hundred is a
    # false positive, which BF.ADD answers 0 as RedisBloom does).
    absent = want_for(proto, B0)
    fresh = next(k for k in (f"brand-new-{i}" for i in range(100)) if conn.cmd("BF.EXISTS", p + "ns", k) == absent)
    got = conn.cmd("BF.ADD", p + "ns", fresh)
    C.check(proto, isinstance(got, Err) and got == "ERR non scaling filter is full", f"BF.ADD past it: {got!r}")
    # Cuckoo: 100 keys a layer (expansion 1), RedisBloom's CF.INFO fields summed.
    conn.cmd("CF.RESERVE", p + "cg", "100")
    got = conn.cmd("CF.INSERT", p + "cg", "ITEMS", *keys[:500])
    C.check(proto, got == [want_for(proto, B1)] * 500, "CF.INSERT of 500 keys into a cuckoo filter of 100 that grows")
    ci = conn.cmd("CF.INFO", p + "cg")
    ci = ci if isinstance(ci, dict) else dict(zip(ci[0::2], ci[1::2]))
    C.check(proto, ci["Number of filters"] >= 5 and ci["Number of items inserted"] == 500 and
            ci["Expansion rate"] == 1, f"CF.INFO of the grown cuckoo filter: {ci}")
    C.check(proto, conn.cmd("CF.MEXISTS", p + "cg", *keys[:500]) == [want_for(proto, B1)] * 500,
            "every key of the grown cuckoo filter found")
    # BUCKETSIZE and EXPANSION together: every layer keeps buckets of 2 (100 + 200 + 400 keys).
    C.check(proto, conn.cmd("CF.RESERVE", p + "cb2", "100", "BUCKETSIZE", "2", "EXPANSION", "2") == OK,
            "CF.RESERVE with BUCKETSIZE 2 and EXPANSION 2")
    got = conn.cmd("CF.INSERT", p + "cb2", "ITEMS", *keys[:500])
    C.check(proto, got == [want_for(proto, B1)] * 500,
            "CF.INSERT of 500 keys into a growing cuckoo filter of buckets of 2")
    ci = conn.cmd("CF.INFO", p + "cb2")
    ci = ci if isinstance(ci, dict) else dict(zip(ci[0::2], ci[1::2]))
    C.check(proto, ci["Number of filters"] >= 3 and ci["Number of items inserted"] == 500 and
            ci["Bucket size"] == 2 and ci["Expansion rate"] == 2, f"CF.INFO of a grown filter of buckets of 2: {ci}")
    C.check(proto, conn.cmd("CF.MEXISTS", p + "cb2", *keys[:500]) == [want_for(proto, B1)] * 500,
            "every key of the grown filter of buckets of 2 found")
    ci = conn.cmd("CF.INFO", p + "c3")
    ci = ci if isinstance(ci, dict) else dict(zip(ci[0::2], ci[1::2]))
    C.check(proto, ci["Expansion rate"] == 4, f"CF EXPANSION 3 kept as 4, RedisBloom's power of 2: {ci}")
    got = conn.cmd("CF.INSERT", p + "c0", "ITEMS", *keys)
    C.check(proto, -1 in got and conn.cmd("CF.ADD", p + "c0", "one-more") == "Filter is full",
            "CF EXPANSION 0: full for good")


def info_checks(conn, proto, p):
    """BF.INFO and CF.INFO: RedisBloom's fields, in its order and types, and no other."""
    got = conn.cmd("BF.INFO", p + "bf")
    keys = list(got.keys()) if isinstance(got, dict) else got[0::2]
    vals = list(got.values()) if isinstance(got, dict) else got[1::2]
    C.check(proto, isinstance(got, dict) == (proto == 3), f"BF.INFO is a map in RESP3 only: {got!r}")
    C.check(proto, keys == ["Capacity", "Size", "Number of filters", "Number of items inserted",
                            "Expansion rate"], f"BF.INFO fields, RedisBloom's five and no more: {keys}")
    C.check(proto, all(isinstance(k, Status) for k in keys), "BF.INFO names are simple strings")
    C.check(proto, vals[0] == 100 and vals[2] == 1 and vals[3] == 3 and vals[4] == 2, f"BF.INFO values {vals}")
    size = one_field(conn.cmd("BF.INFO", p + "bf", "SIZE"))
    C.check(proto, isinstance(size, int) and size == vals[1] and size >= 120,
            f"BF.INFO Size: the filter's memory, at least its 960 bits: {size}")
    got = conn.cmd("CF.INFO", p + "cf")
    keys = list(got.keys()) if isinstance(got, dict) else got[0::2]
    vals = list(got.values()) if isinstance(got, dict) else got[1::2]
    C.check(proto, keys == ["Size", "Number of buckets", "Number of filters", "Number of items inserted",
                            "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"],
            f"CF.INFO fields, RedisBloom's eight and no more: {keys}")
    C.check(proto, vals[2] == 1 and vals[3] == 4 and vals[4] == 1 and vals[5] == 2 and vals[6] == 1
            and vals[7] == 20, f"CF.INFO values (auto-created: buckets of 2, 20 iterations, expansion 1): {vals}")
    # CF.RESERVE without options makes what RedisBloom's makes: buckets of 2, 20 iterations, expansion 1.
    run(conn, proto, ("CF.RESERVE", p + "cfd", "1000"), OK)
    got = conn.cmd("CF.INFO", p + "cfd")
    got = got if isinstance(got, dict) else dict(zip(got[0::2], got[1::2]))
    C.check(proto, got["Bucket size"] == 2 and got["Max iterations"] == 20 and got["Expansion rate"] == 1
            and got["Number of filters"] == 1, f"CF.RESERVE's defaults are RedisBloom's: {got}")
    # Its buckets hold at least the capacity (RedisBloom's 512 buckets of 2 hold 1,024).
    C.check(proto, got["Number of buckets"] * 2 >= 1000, f"CF.RESERVE 1000: buckets for 1,000 keys: {got}")
    # SHMF.INFO, shmd's own door, has what BF.INFO and CF.INFO no longer carry.
    sh = conn.cmd("SHMF.INFO", p + "cfd")
    sh = sh if isinstance(sh, dict) else dict(zip(sh[0::2], sh[1::2]))
    C.check(proto, all(k in sh for k in ("fingerprint_bits", "fill_ratio", "fpr_estimate", "relocations")),
            f"SHMF.INFO keeps shmd's fields: {sorted(sh)}")
    # CF.RESERVE a 4 EXPANSION 0 holds what RedisBloom's holds (2 buckets of 2: 4 keys), and refuses past it.
    run(conn, proto, ("CF.RESERVE", p + "cf4", "4", "EXPANSION", "0"), OK)
    got = [conn.cmd("CF.ADD", p + "cf4", f"k{i}") for i in range(4)]
    C.check(proto, got == [want_for(proto, B1)] * 4, f"CF.RESERVE 4 EXPANSION 0 takes 4 keys: {got}")
    got = [conn.cmd("CF.ADD", p + "cf4", f"more{i}") for i in range(100)]
    C.check(proto, "Filter is full" in got, f"then refuses with RedisBloom's text: {got[-1]!r}")
    got = conn.cmd("CF.INSERT", p + "cf4", "ITEMS", "x1", "x2")
    C.check(proto, got == [-1, -1], f"CF.INSERT into the full filter: -1 each, in both protocols: {got}")
    for size, rate in [("1", "0.01"), ("2", "0.01"), ("4", "0.01"), ("8", "0.07")]:
        run(conn, proto, ("CF.RESERVE", p + "cfb" + size, "1000", "BUCKETSIZE", size, "ERROR", rate), OK)
        got = conn.cmd("CF.INFO", p + "cfb" + size)
        got = got if isinstance(got, dict) else dict(zip(got[0::2], got[1::2]))
        C.check(proto, got.get("Bucket size") == int(size), f"CF.INFO Bucket size {size}: {got}")
        run(conn, proto, ("DEL", p + "cfb" + size), 1)


def max_expansions(conn, proto, p):
    """A growing cuckoo filter grows until it has all the layers it may have
    (RedisBloom's 32 expansions: 33 layers), then answers RedisBloom's
    "Maximum expansions reached"; CF.INSERT answers -1 for such a key."""
    run(conn, proto, ("CF.RESERVE", p + "cmax", "4"), OK)
    got = None
    for i in range(5000):
        got = conn.cmd("CF.ADD", p + "cmax", f"m{i}")
        if isinstance(got, Err):
            break
    C.check(proto, got == "Maximum expansions reached", f"CF.ADD past the last layer: {got!r}")
    ci = conn.cmd("CF.INFO", p + "cmax")
    ci = ci if isinstance(ci, dict) else dict(zip(ci[0::2], ci[1::2]))
    C.check(proto, ci["Number of filters"] == 33, f"CF.INFO at the last layer: {ci}")
    # A full cuckoo table may still have room in a new item's two buckets:
    # of many new items, some are refused (-1), and no answer is an error.
    more = conn.cmd("CF.INSERT", p + "cmax", "ITEMS", *[f"more{i}" for i in range(200)])
    answers = [int(x) for x in more] if isinstance(more, list) else more
    C.check(proto, isinstance(answers, list) and -1 in answers and set(answers) <= {1, -1},
            f"CF.INSERT of 200 new items at the last layer: some -1 (refused), the rest 1: {more!r}")
    run(conn, proto, ("CF.EXISTS", p + "cmax", "m0"), B1)


def dump_checks(conn, proto, p):
    """SCANDUMP answers any iterator (a chunk, or the end), an empty cuckoo
    filter's dump is its end, LOADCHUNK refuses with RedisBloom's texts and
    changes nothing (RedisBloom's command pages and its own tests)."""
    bf, cf = p + "bf", p + "cf"
    run(conn, proto, ("CF.RESERVE", p + "cfe", "100"), OK)
    run(conn, proto, ("CF.SCANDUMP", p + "cfe", "0"), [0, None])
    run(conn, proto, ("BF.SCANDUMP", bf, "987654321"), [0, ""])
    run(conn, proto, ("BF.SCANDUMP", bf, "-1"), [0, ""])
    run(conn, proto, ("BF.SCANDUMP", bf, "x"), E("Second argument must be numeric"))
    run(conn, proto, ("BF.SCANDUMP", bf, "99999999999999999999"), E("Second argument must be numeric"))
    run(conn, proto, ("CF.SCANDUMP", cf, "987654321"), [0, None])
    run(conn, proto, ("CF.SCANDUMP", cf, "-1"), E("Invalid position"))
    run(conn, proto, ("CF.SCANDUMP", cf, "x"), E("Invalid position"))
    run(conn, proto, ("BF.LOADCHUNK", p + "ld", "x", "d"), E("ERR Second argument must be numeric"))
    run(conn, proto, ("BF.LOADCHUNK", p + "ld", "1", "not a chunk"), E("ERR received bad data"))
    run(conn, proto, ("CF.LOADCHUNK", p + "ld", "0", "d"), E("Invalid position"))
    run(conn, proto, ("CF.LOADCHUNK", p + "ld", "x", "d"), E("Invalid position"))
    run(conn, proto, ("CF.LOADCHUNK", p + "ld", "1", "not a chunk"), E("Couldn't create filter!"))
    run(conn, proto, ("EXISTS", p + "ld"), 0)
    before = conn.cmd("CF.COUNT", cf, "b")
    run(conn, proto, ("CF.LOADCHUNK", cf, "4294967298", "not a chunk"), E("Couldn't load chunk!"))
    C.check(proto, conn.cmd("CF.COUNT", cf, "b") == before, "a refused chunk changed nothing")
    # A whole dump, iterator after iterator, loads into a copy that holds every key.
    for src, verb in ((bf, "BF"), (cf, "CF")):
        it, chunks = 0, []
        for _ in range(100):
            it, data = conn.cmd(verb + ".SCANDUMP", src, it)
            if it == 0:
                break
            chunks.append((it, data))
        C.check(proto, it == 0 and chunks, f"{verb}.SCANDUMP ends with iterator 0 after {len(chunks)} chunks")
        for it, data in chunks:
            run(conn, proto, (verb + ".LOADCHUNK", src + "-copy", it, data), OK)
        check = "BF.MEXISTS" if verb == "BF" else "CF.MEXISTS"
        keys = ["a", "b", "c"] if verb == "BF" else ["b", "c", "d"]
        run(conn, proto, (check, src + "-copy", *keys), [B1] * 3)


def command_checks(conn, proto):
    n = conn.cmd("COMMAND", "COUNT")
    cmds = conn.cmd("COMMAND")
    C.check(proto, isinstance(n, int) and len(cmds) == n, f"COMMAND COUNT {n} and COMMAND agree")
    by = {c[0]: c for c in cmds}
    for verb in ["bf.add", "bf.madd", "cf.insert", "del", "exists", "multi", "exec", "scan", "expire"]:
        C.check(proto, verb in by, f"COMMAND lists {verb}")
    C.check(proto, by["bf.add"][1] == 3 and by["bf.add"][3:6] == [1, 1, 1], f"bf.add: {by['bf.add']}")
    C.check(proto, by["del"][1] == -2 and by["del"][3:6] == [1, -1, 1], f"del: {by['del']}")
    docs = conn.cmd("COMMAND", "DOCS", "bf.insert", "nosuch")
    if proto == 2:
        docs = {docs[0]: dict(zip(docs[1][0::2], docs[1][1::2]))}
    d = docs.get("bf.insert")
    C.check(proto, d is not None and "summary" in d and len(d["arguments"]) >= 5, f"COMMAND DOCS bf.insert: {d}")
    alld = conn.cmd("COMMAND", "DOCS")
    C.check(proto, (len(alld) if proto == 3 else len(alld) // 2) == n, "COMMAND DOCS describes every verb")


def bad_input_leaves_all(conn, proto, p):
    """Random bytes in LOADCHUNK, huge and negative numbers: errors, nothing changed, shmd up."""
    before = (conn.cmd("SHMF.LIST"), conn.cmd("BF.CARD", p + "bf"), conn.cmd("CF.COUNT", p + "cf", "b"))
    rnd = random.Random(proto)
    for i in range(50):
        blob = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 300)))
        r = conn.cmd(rnd.choice(["BF.LOADCHUNK", "CF.LOADCHUNK"]), p + "load", str(rnd.choice([0, 1, 2, 99])), blob)
        C.check(proto, isinstance(r, Err), f"LOADCHUNK of random bytes #{i}: {r!r}")
    for args in [("BF.RESERVE", p + "h", "0.01", "18446744073709551616"), ("BF.RESERVE", p + "h", "1e-400", "10"),
                 ("CF.INSERT", p + "h", "CAPACITY", "-1", "ITEMS", "x"), ("EXPIRE", p + "bf", "-9223372036854775808"),
                 ("PEXPIREAT", p + "bf", "99999999999999999999"), ("SCAN", "-1"), ("SCAN", "0", "COUNT", "-5"),
                 ("BF.SCANDUMP", p + "bf", "99999999999999999999"),
                 ("BF.INFO", p + "bf", "CAPACITY", "x"), ("CF.RESERVE", p + "h", "-100")]:
        r = conn.cmd(*args)
        C.check(proto, isinstance(r, Err), f"{args}: {r!r}")
    after = (conn.cmd("SHMF.LIST"), conn.cmd("BF.CARD", p + "bf"), conn.cmd("CF.COUNT", p + "cf", "b"))
    C.check(proto, before == after, f"bad input changed nothing: {before} -> {after}")
    C.check(proto, conn.cmd("PING") == "PONG", "shmd still up")


def expiry_drops(conn, proto, p):
    run(conn, proto, ("BF.ADD", p + "exp", "x"), B1)
    run(conn, proto, ("PEXPIRE", p + "exp", "300"), 1)
    pttl = conn.cmd("PTTL", p + "exp")
    C.check(proto, isinstance(pttl, int) and 0 < pttl <= 300, f"PTTL {pttl}")
    for _ in range(60):  # the daemon's tick runs about once a second
        if conn.cmd("EXISTS", p + "exp") == 0:
            break
        time.sleep(0.1)
    C.check(proto, conn.cmd("EXISTS", p + "exp") == 0, "a filter is dropped when its expiry comes")
    run(conn, proto, ("BF.EXISTS", p + "exp", "x"), B0)


def scan_all(conn, proto, p):
    names, cursor = [], "0"
    for _ in range(100):
        cursor, batch = conn.cmd("SCAN", cursor, "MATCH", p + "*", "COUNT", "2")
        names += batch
        if cursor == "0":
            break
    want = sorted(n for n in conn.cmd("KEYS", p + "*"))
    C.check(proto, sorted(names) == want and len(names) == len(set(names)), f"SCAN {names} vs KEYS {want}")
    bl = conn.cmd("SCAN", "0", "MATCH", p + "*", "COUNT", "1000", "TYPE", "MBbloomCF")[1]
    C.check(proto, sorted(bl) == sorted(n for n in want if conn.cmd("TYPE", n) == "MBbloomCF"), f"SCAN TYPE {bl}")
    C.check(proto, conn.cmd("DBSIZE") == len(conn.cmd("KEYS", "*")), "DBSIZE counts the filters")


def raw_suite(port, proto):
    conn = Raw(port, proto)
    p = f"r{proto}-"
    for args, want in script(p):
        run(conn, proto, args, want)
    info_checks(conn, proto, p)
    growth_checks(conn, proto, p)
    dump_checks(conn, proto, p)
    max_expansions(conn, proto, p)
    command_checks(conn, proto)
    bad_input_leaves_all(conn, proto, p)
    scan_all(conn, proto, p)
    expiry_drops(conn, proto, p)
    # RESP3's null: CLIENT GETNAME of an unnamed connection.
    c2 = Raw(port, proto)
    C.check(proto, c2.cmd("CLIENT", "GETNAME") is None, "CLIENT GETNAME of an unnamed connection: null")
    if proto == 3:
        c2.send("CLIENT", "GETNAME")
        C.check(proto, c2.f.readline() == b"_\r\n", "RESP3 null on the wire")
        h = c2.cmd("HELLO", "2")
        C.check(proto, isinstance(h, list) and h[5] == 2, f"HELLO 2 back to RESP2: {h}")
        C.check(proto, c2.cmd("BF.EXISTS", p + "bf", "a") == 1, "RESP2 integers after HELLO 2")


def redis_py_suite(port):
    """redis-py, RESP2, as an application written for RedisBloom uses it."""
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    bf, cf = r.bf(), r.cf()
    ok = lambda cond, what: C.check(2, cond, "redis-py: " + what)  # noqa: E731
    ok(bf.add("py-auto", "a") == 1, "bf().add creates the filter")
    ok(bf.info("py-auto").capacity == 100, "created with 100 keys")
    ok(bf.exists("py-none", "a") == 0, "bf().exists of a missing filter: 0")
    ok(bf.mexists("py-none", "a", "b") == [0, 0], "bf().mexists of a missing filter")
    ok(cf.add("py-cf", "a") == 1 and cf.count("py-cf", "a") == 1, "cf().add creates the filter")
    ok(cf.info("py-cf").bucketSize == 2 and cf.info("py-cf").maxIteration == 20, "cf().info")
    try:
        cf.create("py-cf8", 1000, bucket_size=8)
        ok(False, "cf().create of buckets of 8 at 1% refused")
    except redis.exceptions.ResponseError as e:
        ok("holds only 8-bit ones" in str(e), f"cf().create of buckets of 8 at 1% refused: {e}")
    ok(cf.create("py-cf1", 1000, bucket_size=1, max_iterations=100) is True
       and cf.info("py-cf1").bucketSize == 1 and r.delete("py-cf1") == 1, "cf().create with bucket_size=1")
    ok(cf.exists("py-none", "a") == 0 and cf.count("py-none", "a") == 0, "cf() reads of a missing filter")
    # redis-py's default pipeline is a MULTI/EXEC transaction.
    p = r.pipeline()
    for i in range(100):
        p.execute_command("BF.ADD", "py-tx", f"k{i}")
    p.execute_command("BF.CARD", "py-tx")
    res = p.execute()
    ok(len(res) == 101 and res[-1] == sum(res[:-1]) and res[-1] >= 95, f"pipeline() transaction: {res[-3:]}")
    p = r.pipeline()
    p.execute_command("BF.ADD", "py-tx", "x")
    p.execute_command("BF.INFO", "py-nosuch")
    try:
        p.execute()
        ok(False, "a runtime error inside EXEC raises")
    except redis.exceptions.ResponseError as e:
        ok("not found" in str(e), f"runtime error inside EXEC: {e}")
    ok(bf.exists("py-tx", "x") == 1, "the other queued command still ran")
    ok(r.exists("py-tx", "py-cf", "py-none") == 2, "exists()")
    ok(r.type("py-tx") == b"MBbloom--" and r.type("py-cf") == b"MBbloomCF", "type()")
    ok(sorted(r.keys("py-*")) == [b"py-auto", b"py-cf", b"py-tx"], f"keys(): {r.keys('py-*')}")
    ok(sorted(r.scan_iter(match="py-*", count=1)) == [b"py-auto", b"py-cf", b"py-tx"], "scan_iter()")
    ok(r.expire("py-auto", 60) is True and 0 < r.ttl("py-auto") <= 60, "expire() and ttl()")
    ok(r.persist("py-auto") is True and r.ttl("py-auto") == -1, "persist()")
    ok(r.delete("py-auto", "py-none") == 1 and r.exists("py-auto") == 0, "delete()")
    ok(isinstance(r.time(), tuple), "time()")
    try:
        r.set("a", "b")
        ok(False, "set() refused")
    except redis.exceptions.ResponseError as e:
        ok("only Bloom and cuckoo" in str(e), f"set(): {e}")
    ok(r.ping() is True, "still up")


def main():
    root = tempfile.mkdtemp(prefix="shmf-conformance-", dir="/dev/shm")
    p, port = start_shmd(root)
    try:
        redis_py_suite(port)
        raw_suite(port, 2)
        raw_suite(port, 3)
        # The expiries survive a restart of shmd.
        conn = Raw(port, 2)
        conn.cmd("BF.ADD", "persisting", "x")
        conn.cmd("EXPIRE", "persisting", "1000")
        p.terminate()
        C.check(2, p.wait(timeout=30) == 0, "shmd stops cleanly")
        p, port = start_shmd(root)
        conn = Raw(port, 3)
        ttl = conn.cmd("TTL", "persisting")
        C.check(3, isinstance(ttl, int) and 990 <= ttl <= 1000, f"an expiry survives a restart: TTL {ttl}")
        C.check(3, conn.cmd("BF.EXISTS", "persisting", "x") is True, "the filter too")
        # auto_create = no, flushall = yes
        p.terminate()
        p.wait(timeout=30)
        p, port = start_shmd(root, "\n[defaults]\nauto_create = no\nflushall = yes\nbloom_capacity = 5000\n")
        conn = Raw(port, 3)
        run(conn, 3, ("BF.ADD", "nope", "x"), E("ERR not found"))
        run(conn, 3, ("CF.ADD", "nope", "x"), E("ERR not found"))
        run(conn, 3, ("BF.INSERT", "nope", "ITEMS", "x"), E("ERR not found"))
        run(conn, 3, ("EXISTS", "nope"), 0)
        run(conn, 3, ("FLUSHALL", "SYNC"), OK)
        run(conn, 3, ("DBSIZE",), 0)
        C.check(3, conn.cmd("PING") == "PONG", "up after FLUSHALL")
    finally:
        p.kill()
        p.wait()
        subprocess.run(["rm", "-rf", root])
    print(f"RESP2: {C.passed[2]} checks passed; RESP3: {C.passed[3]} checks passed; {C.failed} failed")
    sys.exit(1 if C.failed else 0)


main()
