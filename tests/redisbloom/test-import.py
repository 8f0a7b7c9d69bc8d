"""test-import.py CASE --shmd PATH --shmctl PATH --libshmf PATH

Filters imported from RedisBloom answer every key as RedisBloom does.
Debian has no RedisBloom, so the filters and their dumps come from an
independent model of it (rbmodel.py): chains and cuckoo filters built
there, their BF.SCANDUMP / CF.SCANDUMP chunks fed to shmd, and every
added key and tens of thousands of absent ones asked of shmd (BF.EXISTS,
BF.MEXISTS, CF.COUNT, ...) and of libshmf itself (ctypes: the worker's
path) and compared with the model's answers, false positives included.

Cases:
  loadchunk  chains (scaling, NONSCALING, EXPANSION 1, the older 64-bit
             power-of-2, 32-bit and 32-bit power-of-2 kinds, one of 14 MB
             in two chunks) and cuckoo filters (bucket sizes 2 and 4,
             grown to several sub-filters, with copies and deletes) loaded
             by LOADCHUNK in RedisBloom's chunks, whole and cut small;
             adds refused; a snapshot, a restore and shmd's own dump of
             an import answer the same
  hostile    truncated headers, absurd sizes, chunks out of order,
             repeated, across links, past the end, of the other family,
             a connection closed mid-load: each refused with an error
             that says why, nothing created, nothing changed; an import's
             table scribbled in its data file: refused by a new handle
  import     shmctl import from a fake Redis serving the model's dumps
             (host:port, redis:// URL, AUTH, a filter that changes during
             the dump is taken again; an empty cuckoo filter, which
             RedisBloom dumps nothing of, made as a writable filter of its
             shape); a wrong password, a missing key, a key of another type
             and an unreachable Redis refused, nothing created
Standard library only.
"""
import argparse
import ctypes
import os
import random
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rbmodel  # noqa: E402

SHMF_E_IMPORTED = -5018
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL", what, flush=True)
    return cond


class RespError(Exception):
    pass


class Conn:
    """A RESP2 client of a unix socket or a TCP port."""

    def __init__(self, path=None, port=None):
        if path:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.connect(path)
        else:
            self.s = socket.create_connection(("127.0.0.1", port))
        self.s.settimeout(60)
        self.f = self.s.makefile("rb")

    def close(self):
        self.f.close()
        self.s.close()

    def reply(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed")
        kind, rest = line[:1], line[1:-2]
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
            data = self.f.read(n + 2)[:n]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ConnectionError("bad reply %r" % line)

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.reply()


def die_with_parent():
    """In a child: SIGKILL when the harness dies, however it dies."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def sanitizer_preload(libshmf):
    """A sanitizer build's libshmf needs its runtime loaded first: run this
    harness again with it preloaded (python itself is not instrumented)."""
    with open(libshmf, "rb") as f:
        instrumented = b"__asan_init" in f.read()
    if not instrumented or "libasan" in os.environ.get("LD_PRELOAD", ""):
        return
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    env = dict(os.environ, LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


class Daemon:
    def __init__(self, shmd, root):
        self.root = root
        self.run = os.path.join(root, "run")
        os.makedirs(self.run, mode=0o700)
        ini = os.path.join(root, "shmd.ini")
        with open(ini, "w") as f:
            f.write("[instance]\nname = default\n")
        self.log = open(os.path.join(root, "shmd.log"), "w")
        self.env = dict(os.environ, SHMF_RUNTIME_DIR=self.run)
        self.p = subprocess.Popen([shmd, "-f", "-c", ini], env=self.env, stderr=self.log, preexec_fn=die_with_parent)
        self.sock = os.path.join(self.run, "default.sock")
        for _ in range(400):
            try:
                c = Conn(path=self.sock)
                if c.call("PING") == "PONG":
                    c.close()
                    return
            except OSError:
                pass
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("shmd did not start: " + open(os.path.join(root, "shmd.log")).read())

    def conn(self):
        return Conn(path=self.sock)

    def log_size(self):
        return os.path.getsize(os.path.join(self.root, "shmd.log"))

    def log_since(self, size):
        """What shmd logged past byte @size (its log lines are written whole)."""
        for _ in range(50):
            with open(os.path.join(self.root, "shmd.log")) as f:
                f.seek(size)
                text = f.read()
            if text.endswith("\n"):
                return text
            time.sleep(0.01)
        return text

    def data_files(self):
        d = os.path.join(self.run, "default")
        return sorted(f for f in os.listdir(d) if f.endswith(".data"))

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=30)


# ---------------------------------------------------------------------------
def keys(prefix, n):
    return [b"%s-%d" % (prefix.encode(), i) for i in range(n)]


def load(c, verb, name, chunks):
    """LOADCHUNK every chunk; each must answer OK."""
    for it, data in chunks:
        r = c.call(verb, name, it, data)
        if not check(r == "OK", "%s %s %d (%d bytes): %r" % (verb, name, it, len(data), r)):
            return False
    return True


def mexists(c, verb, name, ks):
    out = []
    for i in range(0, len(ks), 2000):
        out += c.call(verb, name, *ks[i:i + 2000])
    return out


class Lib:
    """libshmf through ctypes: the path a worker's checks take."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.shmf_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        for fn in ("shmf_check", "shmf_count", "shmf_add", "shmf_add_unique", "shmf_del"):
            getattr(self.lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.shmf_add_capped.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
        self.lib.shmf_close.argtypes = [ctypes.c_void_p]

    def open_rc(self, name):
        """shmf_open's result for filter @name (the handle closed again)."""
        h = ctypes.c_void_p()
        rc = self.lib.shmf_open(b"default", name.encode(), 0, ctypes.byref(h))
        if rc == 0:
            self.lib.shmf_close(h)
        return rc

    def answers(self, name, ks, fn):
        h = ctypes.c_void_p()
        rc = self.lib.shmf_open(b"default", name.encode(), 1, ctypes.byref(h))
        if not check(rc == 0, "shmf_open %s: %d" % (name, rc)):
            return None
        f = getattr(self.lib, fn)
        out = [f(h, k, len(k)) for k in ks]
        writes = {"shmf_add": self.lib.shmf_add(h, b"new key", 7),
                  "shmf_add_unique": self.lib.shmf_add_unique(h, b"new key", 7),
                  "shmf_add_capped": self.lib.shmf_add_capped(h, b"new key", 7, 4),
                  "shmf_del": self.lib.shmf_del(h, ks[0], len(ks[0]))}
        self.lib.shmf_close(h)
        for w, rc in writes.items():
            check(rc == SHMF_E_IMPORTED, "%s on import %s answers SHMF_E_IMPORTED, not %d" % (w, name, rc))
        return out


def compare(c, lib, name, model, added, absent, cuckoo=False):
    """Every added key present, every absent key as the model answers, in
    shmd (the one-key and many-key verbs) and in libshmf."""
    fam = "CF" if cuckoo else "BF"
    want = [1] * len(added) + [model.check(k) for k in absent]
    ks = added + absent
    got = mexists(c, fam + ".MEXISTS", name, ks)
    bad = [i for i in range(len(ks)) if got[i] != want[i]]
    check(not bad, "%s: %d of %d keys answer otherwise than RedisBloom (first %r: %r, want %r)" % (
        name, len(bad), len(ks), ks[bad[0]] if bad else None, got[bad[0]] if bad else None,
        want[bad[0]] if bad else None))
    sample = random.Random(7).sample(range(len(ks)), min(300, len(ks)))
    one = [c.call(fam + ".EXISTS", name, ks[i]) for i in sample]
    check(one == [want[i] for i in sample], "%s: %s.EXISTS answers as RedisBloom" % (name, fam))
    fps = sum(want[len(added):])
    if lib is not None:
        got = lib.answers(name, ks, "shmf_check")
        check(got == want, "%s: libshmf's shmf_check answers as RedisBloom" % name)
    if cuckoo:
        counts = [model.count(k) for k in ks]
        got = [c.call("CF.COUNT", name, ks[i]) for i in sample]
        check(got == [counts[i] for i in sample], "%s: CF.COUNT as RedisBloom counts" % name)
        if lib is not None:
            got = lib.answers(name, ks, "shmf_count")
            check(got == counts, "%s: libshmf's shmf_count as RedisBloom counts" % name)
    print("%s: %d added keys present, %d absent keys answered as RedisBloom (%d false positives)" % (
        name, len(added), len(absent), fps), flush=True)
    return fps


def writes_refused(c, name, cuckoo):
    verbs = [("CF.ADD", name, "x"), ("CF.ADDNX", name, "x"), ("CF.DEL", name, "k-0"), ("CF.INSERT", name, "ITEMS", "x")] \
        if cuckoo else [("BF.ADD", name, "x"), ("BF.MADD", name, "x", "y"), ("BF.INSERT", name, "ITEMS", "x")]
    for v in verbs:
        r = c.call(*v)
        if isinstance(r, list):
            r = r[0] if r else None
        check(isinstance(r, RespError) and "imported from RedisBloom" in str(r), "%s on an import refused: %r" % (v[0], r))


# ---------------------------------------------------------------------------
def bloom_models():
    out = []

    def chain(name, n, *a, **kw):
        m = rbmodel.Chain(*a, **kw)
        added = [k for k in keys(name, n) if m.add(k) == 1]
        out.append((name, m, added))

    chain("bf-scaling", 6000, 1000, 0.01)
    chain("bf-nonscaling", 2500, 2000, 0.001, nonscaling=True)
    chain("bf-exp1", 3000, 500, 0.05, expansion=1)
    chain("bf-old64pow2", 3000, 1000, 0.01, options=rbmodel.FORCE64)
    chain("bf-old32", 3000, 1000, 0.01, options=rbmodel.NOROUND)
    chain("bf-old32pow2", 3000, 1000, 0.01, options=0)
    return out


def cuckoo_models():
    out = []
    m = rbmodel.Cuckoo(1000, bucket_size=2, max_iterations=20)
    added = keys("cf-2", 2600)
    for k in added + added[:50]:  # 50 keys with a second copy
        check(m.add(k) == 1, "model: cuckoo add")
    out.append(("cf-2", m, added))
    m = rbmodel.Cuckoo(4000, bucket_size=4, max_iterations=500, expansion=2)
    added = keys("cf-4", 12000)
    for k in added:
        m.add(k)
    out.append(("cf-4", m, added))
    m = rbmodel.Cuckoo(2000, bucket_size=2)
    added = keys("cf-del", 1000)
    for k in added:
        m.add(k)
    check(len(m.filters) == 1, "model: one sub-filter for the deletes")
    for k in added[:300]:
        m.delete(k)
    out.append(("cf-del", m, added[300:]))
    return out


def case_loadchunk(d, lib):
    c = d.conn()
    for name, m, added in bloom_models():
        check(len(m.links) > 1 or name in ("bf-nonscaling",), "%s: the model grew %d links" % (name, len(m.links)))
        if load(c, "BF.LOADCHUNK", name, m.scandump()):
            fps = compare(c, lib, name, m, added, keys("absent-" + name, 50000))
            check(fps > 0, "%s: RedisBloom's own false positives are there to match" % name)
        writes_refused(c, name, False)
    # One chain cut into chunks of 333 bytes, loaded over a filter of
    # shmd's own of that name.
    name, m, added = bloom_models()[0]
    c.call("BF.RESERVE", "bf-small", 0.01, 1000)
    c.call("BF.ADD", "bf-small", "native")
    if load(c, "BF.LOADCHUNK", "bf-small", m.scandump(max_chunk=333)):
        compare(c, None, "bf-small", m, added, keys("absent-small", 20000))
    # 14 MB: two chunks of RedisBloom's 10 MB at most.
    big = rbmodel.Chain(8000000, 0.001)
    added = [k for k in keys("big", 2000) if big.add(k) == 1]
    chunks = big.scandump()
    check(len(chunks) == 3, "bf-big: a header and two chunks, %d" % len(chunks))
    if load(c, "BF.LOADCHUNK", "bf-big", chunks):
        compare(c, lib, "bf-big", big, added, keys("absent-big", 20000))
    info = c.call("BF.INFO", "bf-scaling")
    fields = dict(zip(info[0::2], info[1::2]))
    m = bloom_models()[0][1]
    check(fields.get("Capacity") == sum(l.entries for l in m.links), "BF.INFO capacity: the links' %r" % fields)
    check(fields.get("Number of items inserted") == m.size, "BF.INFO items: RedisBloom's count %r" % fields)
    check(fields.get("Number of filters") == len(m.links), "BF.INFO filters: the links, %r" % fields)
    check(fields.get("Expansion rate") == m.growth, "BF.INFO expansion rate: RedisBloom's %d, %r" % (m.growth, fields))
    for name, m, added in cuckoo_models():
        if load(c, "CF.LOADCHUNK", name, m.scandump()):
            compare(c, lib, name, m, added, keys("absent-" + name, 20000), cuckoo=True)
        writes_refused(c, name, True)
        info = c.call("CF.INFO", name)
        fields = dict(zip(info[0::2], info[1::2]))
        check(fields.get("Number of filters") == len(m.filters) and fields.get("Max iterations") == m.max_iterations
              and fields.get("Number of items inserted") == m.num_items
              and fields.get("Number of buckets") == m.num_buckets and fields.get("Expansion rate") == m.expansion
              and fields.get("Bucket size") == m.bucket_size,
              "CF.INFO of %s: RedisBloom's sub-filters, MAXITERATIONS, count, buckets (%d), expansion (%d) and "
              "bucket size: %r" % (name, m.num_buckets, m.expansion, fields))
    name, m, added = cuckoo_models()[0]
    if load(c, "CF.LOADCHUNK", "cf-small", m.scandump(max_chunk=100)):
        compare(c, None, "cf-small", m, added, keys("absent-cf-small", 5000), cuckoo=True)
    copies(d, c, lib)
    c.close()


def copies(d, c, lib):
    """A snapshot, a restore and shmd's own dump of an import answer the same."""
    name, m, added = bloom_models()[0]
    path = os.path.join(d.root, "bf-scaling.snap")
    check(c.call("SHMF.SNAPSHOT", "bf-scaling", path) == "OK", "snapshot of an import")
    r = c.call("SHMF.RESTORE", "bf-restored", path)
    check(r == "OK", "restore of an import: %r" % r)
    compare(c, lib, "bf-restored", m, added, keys("absent-restored", 20000))
    chunks, it = [], 0
    while True:
        r = c.call("BF.SCANDUMP", "bf-scaling", it)
        if not check(isinstance(r, list), "shmd's BF.SCANDUMP of an import: %r" % r) or r[0] == 0:
            break
        it = r[0]
        chunks.append((it, r[1]))
    if load(c, "BF.LOADCHUNK", "bf-pulled", chunks):
        compare(c, lib, "bf-pulled", m, added, keys("absent-pulled", 20000))
    r = c.call("SHMF.MERGE", "bf-scaling", path)
    check(isinstance(r, RespError) and "imported from RedisBloom" in str(r), "merge into an import refused: %r" % r)


# ---------------------------------------------------------------------------
def bloom_header(size=7, nfilters=None, options=5, growth=2, links=None):
    links = links if links is not None else [dict()]
    out = struct.pack("<QIII", size, len(links) if nfilters is None else nfilters, options, growth)
    for l in links:
        f = dict(bytes=128, bits=1024, size=7, error=0.005, bpe=11.03, hashes=8, entries=100, n2=0)
        f.update(l)
        out += struct.pack("<QQQddIQB", f["bytes"], f["bits"], f["size"], f["error"], f["bpe"], f["hashes"],
                           f["entries"], f["n2"])
    return out


def cuckoo_header(items=5, nb=64, deletes=0, nf=1, bs=2, maxit=20, exp=1):
    return struct.pack("<QQQQHHH", items, nb, deletes, nf, bs, maxit, exp)


# What RedisBloom answers a chunk it cannot load; shmd answers the same,
# and says why in its log ("BF.LOADCHUNK refused: ...").
RB_REFUSALS = ("ERR received bad data", "Couldn't create filter!", "Couldn't load chunk!")


def refused(c, verb, name, chunks, why, d=None):
    """Load @chunks; the last must be refused, with @why in the error or
    (behind RedisBloom's text) in the line shmd logged for it."""
    r, logged = None, ""
    for it, data in chunks:
        before = d.log_size() if d else 0
        r = c.call(verb, name, it, data)
        if isinstance(r, RespError):
            logged = d.log_since(before) if d else ""
            break
    ok = isinstance(r, RespError) and (why in str(r) or (str(r) in RB_REFUSALS and why in logged))
    return check(ok, "%s %s refused with '%s': %r (log: %r)" % (verb, name, why, r, logged[-300:]))


def case_hostile(d, lib):
    c = d.conn()
    c.call("BF.RESERVE", "target", 0.01, 1000)
    present = keys("present", 100)
    c.call("BF.MADD", "target", *present)
    c.call("CF.RESERVE", "ctarget", 1000)
    c.call("CF.ADD", "ctarget", "here")
    files = d.data_files()
    m = rbmodel.Chain(100, 0.01)
    for k in keys("m", 300):
        m.add(k)
    good = m.scandump(max_chunk=50)
    hdr = good[0][1]
    ok_link = dict(bytes=128, bits=1024, size=7, error=0.005, bpe=11.03, hashes=8, entries=100, n2=0)
    bad_headers = [
        (hdr[:-1], "is %d bytes, not" % (len(hdr) - 1)),
        (hdr[:19], "shorter than a chain's header"),
        (hdr + b"\0", "is %d bytes, not" % (len(hdr) + 1)),
        (hdr + b"\0" * 16, "hash configuration"),
        (bloom_header(nfilters=0, links=[]), "links (bytes 8-11)"),
        (bloom_header(nfilters=5000), "links (bytes 8-11)"),
        (bloom_header(links=[dict(bytes=1 << 62, bits=1 << 65 & ((1 << 64) - 1))]), "more than a filter may have"),
        (bloom_header(links=[dict(bits=1000)]), "would load"),
        (bloom_header(links=[dict(hashes=9)]), "would load"),
        (bloom_header(links=[dict(error=0.0)]), "would load"),
        (bloom_header(links=[dict(error=2.0)]), "would load"),
        (bloom_header(links=[dict(bpe=float("nan"))]), "would load"),
        (bloom_header(links=[dict(n2=11)]), "would load"),
        (bloom_header(size=8), "would load"),
        (bloom_header(options=16 | 5), "would load"),
        (bloom_header(links=[ok_link, dict(ok_link, size=1)], size=7), "would load"),
        (cuckoo_header(), "links is 38 bytes"),
    ]
    for data, why in bad_headers:
        refused(c, "BF.LOADCHUNK", "nothing", [(1, data)], why, d=d)
        refused(c, "BF.LOADCHUNK", "target", [(1, data)], why, d=d)
    # Out of order, repeated, across links, past the end, another family.
    body = good[1:]
    seqs = [
        ([good[1]], "no load of filter"),                                  # no header first
        ([good[0], good[2]], "was expected next"),                         # a chunk skipped
        ([good[0], good[1], good[1]], "was expected next"),                # a chunk repeated
        ([good[0], (good[1][0], good[1][1] + b"\0")], "was expected next"),  # longer than its iterator says
        ([good[0], (len(hdr) + 10 ** 6, b"x" * 10)], "was expected next"),  # past the end
        ([good[0], (1 + m.links[0].nbytes + 10, bytes(m.links[0].nbytes + 10))], "past the end of their link"),
        ([good[0], (good[1][0], b"")], "was expected next"),                # empty
    ]
    for seq, why in seqs:
        for name in ("nothing", "target"):
            refused(c, "BF.LOADCHUNK", name, seq, why, d=d)
            # The load is gone: the next chunk finds none.
            refused(c, "BF.LOADCHUNK", name, [body[-1]], "no load of filter", d=d)
    refused(c, "CF.LOADCHUNK", "nothing", [good[0]], "not 38", d=d)
    refused(c, "BF.LOADCHUNK", "ctarget", [good[0]], "WRONGTYPE", d=d)
    cm = rbmodel.Cuckoo(500)
    for k in keys("c", 300):
        cm.add(k)
    cgood = cm.scandump(max_chunk=64)
    check(len(cgood) > 3, "the cuckoo model's dump comes in several chunks")
    refused(c, "BF.LOADCHUNK", "nothing", [cgood[0]], "is 38 bytes", d=d)
    for data, why in [
        (cuckoo_header()[:-1], "not 38"),
        (cuckoo_header() + b"\0", "not 38"),
        (cuckoo_header(nb=0), "sub-filters of"),
        (cuckoo_header(bs=0), "sub-filters of"),
        (cuckoo_header(bs=256), "sub-filters of"),
        (cuckoo_header(nf=0), "sub-filters of"),
        (cuckoo_header(nf=2000), "sub-filters of"),
        (cuckoo_header(nf=2, exp=0), "sub-filters of"),
        (cuckoo_header(nb=1 << 31, bs=2), "4 GiB or more"),
        (cuckoo_header(nb=1 << 20, nf=20, exp=2), "4 GiB or more"),
    ]:
        refused(c, "CF.LOADCHUNK", "nothing", [(1, data)], why, d=d)
        refused(c, "CF.LOADCHUNK", "ctarget", [(1, data)], why, d=d)
    refused(c, "CF.LOADCHUNK", "nothing", [cgood[0], cgood[2]], "was expected next", d=d)
    refused(c, "CF.LOADCHUNK", "nothing", [cgood[0], cgood[1], cgood[1]], "was expected next", d=d)
    refused(c, "CF.LOADCHUNK", "ctarget", [cgood[0], cgood[1], (cgood[2][0], cgood[2][1] + b"!")], "expected next", d=d)
    # A chunk of a cuckoo load sent to BF.LOADCHUNK.
    check(c.call("CF.LOADCHUNK", "nothing", *cgood[0]) == "OK", "a cuckoo load begins")
    refused(c, "BF.LOADCHUNK", "nothing", [cgood[1]], "its chunks go to CF.LOADCHUNK", d=d)
    # A connection that closes mid-load leaves nothing.
    c.call("BF.LOADCHUNK", "nothing", good[0][0], good[0][1])
    c.call("BF.LOADCHUNK", "nothing", good[1][0], good[1][1])
    c.close()
    time.sleep(0.3)
    c = d.conn()
    check(c.call("EXISTS", "nothing") == 0, "nothing was created by refused or abandoned loads")
    check(d.data_files() == files, "no data file left behind: %r against %r" % (d.data_files(), files))
    check(mexists(c, "BF.MEXISTS", "target", present) == [1] * 100, "the filter loads were refused over is unchanged")
    check(c.call("CF.EXISTS", "ctarget", "here") == 1, "the cuckoo filter loads were refused over is unchanged")
    info = c.call("BF.INFO", "target")
    check(isinstance(info, list), "target still a filter of shmd's own: %r" % info)
    # And a good load still works after all that.
    if load(c, "BF.LOADCHUNK", "after", good):
        compare(c, lib, "after", m, keys("m", 300), keys("absent-after", 5000))
    if load(c, "CF.LOADCHUNK", "cafter", cgood):
        compare(c, lib, "cafter", cm, keys("c", 300), keys("absent-cafter", 5000), cuckoo=True)
    scribbled(d, c, lib)
    c.close()


def scribbled(d, c, lib):
    """An import's table scribbled in its data file (a writer of the file
    could): a new handle refuses the filter (SHMF_E_FORMAT), the daemon's
    handle, which checked its private copy at open, answers as before."""
    SHMF_E_FORMAT = -5002
    path = [os.path.join(d.run, "default", f) for f in d.data_files() if f.startswith("after.")][0]
    table = 8192  # the payload's first byte (segment-format.h)
    want = mexists(c, "BF.MEXISTS", "after", keys("m", 300) + keys("x", 300))
    for off, value, what in [(0, b"\0" * 8, "magic"), (8, struct.pack("<I", 0), "no link"),
                             (8, struct.pack("<I", 3), "a link too many"), (16, struct.pack("<Q", 1 << 40), "items"),
                             (64 + 16, struct.pack("<Q", 1 << 40), "link 0's bits"),
                             (64 + 0, struct.pack("<Q", 1 << 40), "link 0's offset"),
                             (64 + 56, struct.pack("<I", 1075), "link 0's k")]:
        with open(path, "r+b") as f:
            f.seek(table + off)
            orig = f.read(len(value))
            f.seek(table + off)
            f.write(value)
        rc = lib.open_rc("after")
        check(rc == SHMF_E_FORMAT, "a table with %s scribbled: shmf_open refuses it (%d)" % (what, rc))
        check(mexists(c, "BF.MEXISTS", "after", keys("m", 300) + keys("x", 300)) == want,
              "a table with %s scribbled: the daemon's handle answers as before" % what)
        with open(path, "r+b") as f:
            f.seek(table + off)
            f.write(orig)
    check(lib.open_rc("after") == 0, "the table restored: shmf_open takes it again")


# ---------------------------------------------------------------------------
class FakeRedis(socketserver.ThreadingTCPServer):
    """A Redis that answers TYPE, AUTH, SELECT, PING and the SCANDUMPs of
    the models in self.keys; key 'busy' gets one more key after its first
    dump's last chunk, as a live filter would."""
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, models, password=None):
        self.models = models
        self.password = password
        self.busy_changed = False
        super().__init__(("127.0.0.1", 0), FakeHandler)


class FakeHandler(socketserver.StreamRequestHandler):
    def send(self, v):
        self.wfile.write(encode(v))

    def handle(self):
        authed = self.server.password is None
        while True:
            args = read_request(self.rfile)
            if args is None:
                return
            cmd = args[0].upper()
            if cmd == b"AUTH":
                authed = args[-1].decode() == self.server.password
                self.send("+OK" if authed else "-WRONGPASS invalid username-password pair or user is disabled.")
            elif not authed:
                self.send("-NOAUTH Authentication required.")
            elif cmd in (b"PING", b"SELECT"):
                self.send("+OK" if cmd == b"SELECT" else "+PONG")
            elif cmd == b"TYPE":
                m = self.server.models.get(args[1].decode())
                t = "none" if m is None else m if isinstance(m, str) else (
                    "MBbloomCF" if isinstance(m, rbmodel.Cuckoo) else "MBbloom--")
                self.send("+" + t)
            elif cmd in (b"BF.SCANDUMP", b"CF.SCANDUMP"):
                self.scandump(args[1].decode(), int(args[2]))
            elif cmd == b"CF.INFO":
                m = self.server.models.get(args[1].decode())
                self.send(["+Size", sum(len(f[1]) for f in m.filters), "+Number of buckets", m.num_buckets,
                           "+Number of filters", len(m.filters), "+Number of items inserted", m.num_items,
                           "+Number of items deleted", m.num_deletes, "+Bucket size", m.bucket_size,
                           "+Expansion rate", m.expansion, "+Max iterations", m.max_iterations])
            else:
                self.send("-ERR unknown command")

    def scandump(self, key, it):
        m = self.server.models.get(key)
        if m is None:
            self.send("-ERR not found")
            return
        chunks = m.scandump()
        if it == 0:
            self.send([1, chunks[0][1]] if chunks else [0, None])
            return
        for i, (end, data) in enumerate(chunks[1:]):
            if end - len(data) == it:
                self.send([end, data])
                return
        if key == "busy" and not self.server.busy_changed:
            self.server.busy_changed = True
            m.add(b"added during the dump")
        self.send([0, b"" if isinstance(m, rbmodel.Chain) else None])


def encode(v):
    if isinstance(v, str):
        return v.encode() + b"\r\n"
    if isinstance(v, int):
        return b":%d\r\n" % v
    if v is None:
        return b"$-1\r\n"
    if isinstance(v, bytes):
        return b"$%d\r\n%s\r\n" % (len(v), v)
    return b"*%d\r\n" % len(v) + b"".join(encode(x) for x in v)


def read_request(f):
    line = f.readline()
    if not line:
        return None
    n = int(line[1:])
    args = []
    for _ in range(n):
        size = int(f.readline()[1:])
        args.append(f.read(size + 2)[:size])
    return args


def shmctl(args, d, *argv):
    p = subprocess.run([args.shmctl, "--socket", d.sock] + list(argv), capture_output=True, text=True, env=d.env,
                       timeout=120)
    return p.returncode, p.stdout + p.stderr


def case_import(d, lib, args):
    bf = rbmodel.Chain(1000, 0.01)
    bf_added = [k for k in keys("imp", 4000) if bf.add(k) == 1]
    cf = rbmodel.Cuckoo(1000, bucket_size=4)
    cf_added = keys("cimp", 3000)
    for k in cf_added:
        cf.add(k)
    busy = rbmodel.Chain(500, 0.01)
    busy_added = [k for k in keys("busy", 1200) if busy.add(k) == 1]
    empty = rbmodel.Cuckoo(300, bucket_size=4, max_iterations=77, expansion=2)
    models = {"bf": bf, "cf": cf, "busy": busy, "empty": empty, "str": "string"}
    srv = FakeRedis(models, password="s3cret")
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    c = d.conn()
    rc, out = shmctl(args, d, "import", "--password", "s3cret", "127.0.0.1:%d" % port, "bf", "AS", "imported")
    check(rc == 0 and "imported" in out, "shmctl import host:port: %d %s" % (rc, out))
    compare(c, lib, "imported", bf, bf_added, keys("absent-imp", 30000))
    rc, out = shmctl(args, d, "import", "redis://:s3cret@127.0.0.1:%d/0" % port, "cf")
    check(rc == 0, "shmctl import redis:// URL, cuckoo, under the key's name: %d %s" % (rc, out))
    compare(c, lib, "cf", cf, cf_added, keys("absent-cimp", 20000), cuckoo=True)
    rc, out = shmctl(args, d, "import", "--password", "s3cret", "127.0.0.1:%d" % port, "busy", "--as", "busy")
    check(rc == 0 and "again" in out, "a filter that changed during the dump is taken again: %d %s" % (rc, out))
    compare(c, lib, "busy", busy, busy_added + [b"added during the dump"], keys("absent-busy", 20000))
    # An empty cuckoo filter, which RedisBloom dumps nothing of: a filter of
    # shmd's own of its shape, empty and writable.
    rc, out = shmctl(args, d, "import", "--password", "s3cret", "127.0.0.1:%d" % port, "empty", "AS", "x5")
    check(rc == 0 and "empty cuckoo filter" in out, "shmctl import of an empty cuckoo filter: %d %s" % (rc, out))
    info = c.call("CF.INFO", "x5")
    fields = dict(zip(info[0::2], info[1::2])) if isinstance(info, list) else {}
    check(fields.get("Bucket size") == 4 and fields.get("Max iterations") == 77 and fields.get("Expansion rate") == 2
          and fields.get("Number of items inserted") == 0 and fields.get("Number of buckets", 0) * 4 >= 256,
          "the empty import has RedisBloom's shape (buckets of 4, 77 iterations, expansion 2, 256 slots): %r" % info)
    check(c.call("CF.EXISTS", "x5", "k") == 0 and c.call("CF.ADD", "x5", "k") == 1 and c.call("CF.EXISTS", "x5", "k") == 1,
          "the empty import answers absent, then takes an add")
    rc, out = shmctl(args, d, "import", "--password", "s3cret", "127.0.0.1:%d" % port, "empty", "AS", "x5")
    check(rc == 2 and "item exists" in out, "an empty import onto a name in use is refused: %d %s" % (rc, out))
    files = d.data_files()
    for argv, why in [
        (["--password", "wrong", "127.0.0.1:%d" % port, "bf", "AS", "x1"], "WRONGPASS"),
        (["127.0.0.1:%d" % port, "bf", "AS", "x2"], "password"),
        (["--password", "s3cret", "127.0.0.1:%d" % port, "missing", "AS", "x3"], "not found"),
        (["--password", "s3cret", "127.0.0.1:%d" % port, "str", "AS", "x4"], "not a RedisBloom"),
        (["--password", "s3cret", "127.0.0.1:1", "bf", "AS", "x6"], "cannot connect"),
        (["--password", "s3cret", "127.0.0.1:%d" % port, "bf", "AS", "bad/name"], "not a valid filter name"),
        (["--password", "s3cret", "nohost", "bf"], "HOST:PORT"),
        (["--password", "s3cret", "127.0.0.1:%d" % port], "missing"),
    ]:
        rc, out = shmctl(args, d, "import", *argv)
        check(rc == 2 and why in out, "shmctl import %s refused with '%s': %d %s" % (" ".join(argv), why, rc, out))
    check(d.data_files() == files, "refused imports made no file")
    for n in ("x1", "x2", "x3", "x4", "x6"):
        check(c.call("EXISTS", n) == 0, "refused import created no filter %s" % n)
    rc, out = shmctl(args, d, "help", "import")
    check(rc == 0 and "REDIS" in out and "AS NAME" in out, "shmctl help import: %s" % out)
    srv.shutdown()
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["loadchunk", "hostile", "import"])
    ap.add_argument("--shmd", required=True)
    ap.add_argument("--shmctl", required=True)
    ap.add_argument("--libshmf", required=True)
    args = ap.parse_args()
    sanitizer_preload(args.libshmf)
    root = tempfile.mkdtemp(prefix="shmf-rbimport-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    d = None
    try:
        d = Daemon(args.shmd, root)
        os.environ["SHMF_RUNTIME_DIR"] = d.run
        lib = Lib(args.libshmf)
        if args.case == "loadchunk":
            case_loadchunk(d, lib)
        elif args.case == "hostile":
            case_hostile(d, lib)
        else:
            case_import(d, lib, args)
    finally:
        if d is not None:
            d.stop()
            if failures:
                print(open(os.path.join(root, "shmd.log")).read()[-3000:])
        shutil.rmtree(root, ignore_errors=True)
    print("%s: %s" % (args.case, "FAILED (%d)" % failures if failures else "passed"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
