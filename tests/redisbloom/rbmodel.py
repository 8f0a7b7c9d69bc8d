"""rbmodel.py - an independent model of RedisBloom's filters and dumps.

Written from RedisBloom's documented behaviour (its sb.c, bloom.c,
cuckoo.c, cf.c and rebloom.c), not from shmd's code: Austin Appleby's
MurmurHash64A and MurmurHash2 from their published definitions, a
scalable Bloom chain (bloom_init's sizing, the (a + i*b) mod m positions,
growth and tightening), a cuckoo filter (its buckets, kick-out walk,
growth), and the chunks BF.SCANDUMP / CF.SCANDUMP hand out. The tests
build filters here, feed their dumps to shmd, and compare every answer.
Standard library only.
"""
import math
import struct

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1

# RedisBloom's option bits (bloom.h)
NOROUND = 1
ENTS_IS_BITS = 2
FORCE64 = 4
NO_SCALING = 8

LN2 = 0.693147180559945
LN2_SQUARED = 0.480453013918201
BF_MAX_CHUNK = 10485760  # MAX_SCANDUMP_SIZE, 10 MB
CF_MAX_CHUNK = 10485760


def murmur64a(key: bytes, seed: int) -> int:
    m = 0xC6A4A7935BD1E995
    r = 47
    n = len(key)
    h = (seed ^ (n * m)) & M64
    nblocks = n // 8
    for i in range(nblocks):
        k = int.from_bytes(key[8 * i:8 * i + 8], "little")
        k = (k * m) & M64
        k ^= k >> r
        k = (k * m) & M64
        h ^= k
        h = (h * m) & M64
    tail = key[8 * nblocks:]
    if tail:
        for j, byte in enumerate(tail):
            h ^= byte << (8 * j)
        h = (h * m) & M64
    h ^= h >> r
    h = (h * m) & M64
    h ^= h >> r
    return h


def murmur2(key: bytes, seed: int) -> int:
    m = 0x5BD1E995
    n = len(key)
    h = (seed ^ n) & M32
    nblocks = n // 4
    for i in range(nblocks):
        k = int.from_bytes(key[4 * i:4 * i + 4], "little")
        k = (k * m) & M32
        k ^= k >> 24
        k = (k * m) & M32
        h = (h * m) & M32
        h ^= k
    tail = key[4 * nblocks:]
    if tail:
        for j, byte in enumerate(tail):
            h ^= byte << (8 * j)
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    h ^= h >> 15
    return h


def hash_pair(key: bytes, force64: bool):
    if force64:
        a = murmur64a(key, 0xC6A4A7935BD1E995)
        return a, murmur64a(key, a)
    a = murmur2(key, 0x9747B28C)
    return a, murmur2(key, a)


# ---------------------------------------------------------------------------
class Link:
    """One Bloom filter of a chain, as bloom_init() sizes it."""

    def __init__(self, entries, error, options):
        self.error = error
        self.entries = entries
        self.bpe = -(math.log(error) / LN2_SQUARED)
        if self.bpe < 0:
            self.bpe = -self.bpe
        if options & NOROUND:
            bits = int(float(entries) * self.bpe)  # (uint64_t)(entries * bpe)
            if bits == 0:
                bits = 1
            self.n2 = 0
        else:
            product = float(entries) * self.bpe
            self.n2 = math.frexp(product)[1] - 1 + 1  # logb(x) + 1
            bits = 1 << self.n2
            bit_diff = int(bits - product)
            self.entries += int(bit_diff / self.bpe)
        self.nbytes = ((bits // 64) + 1) * 8 if bits % 64 else bits // 8
        self.bits = self.nbytes * 8
        self.hashes = int(math.ceil(LN2 * self.bpe))
        self.data = bytearray(self.nbytes)
        self.size = 0

    def mod(self):
        return (1 << self.n2) if self.n2 > 0 else self.bits

    def positions(self, a, b):
        m = self.mod()
        return [((a + i * b) & M64) % m for i in range(self.hashes)]

    def check(self, a, b):
        return all(self.data[x >> 3] >> (x & 7) & 1 for x in self.positions(a, b))

    def add(self, a, b):
        for x in self.positions(a, b):
            self.data[x >> 3] |= 1 << (x & 7)


class Chain:
    """A scalable Bloom filter (SBChain): BF.RESERVE key error capacity
    [EXPANSION n] [NONSCALING]; options default to what RedisBloom 2.x
    creates (NOROUND | FORCE64), older chains are other options."""

    def __init__(self, capacity, error, expansion=2, nonscaling=False, options=NOROUND | FORCE64):
        self.options = options | (NO_SCALING if nonscaling else 0)
        self.growth = expansion
        tightening = 1.0 if nonscaling else 0.5
        self.links = [Link(capacity, error * tightening, self.options)]
        self.size = 0

    def pair(self, key):
        return hash_pair(key, bool(self.options & FORCE64))

    def check(self, key: bytes) -> int:
        a, b = self.pair(key)
        return int(any(link.check(a, b) for link in reversed(self.links)))

    def add(self, key: bytes) -> int:
        a, b = self.pair(key)
        if any(link.check(a, b) for link in reversed(self.links)):
            return 0
        cur = self.links[-1]
        if cur.size >= cur.entries:
            if self.options & NO_SCALING:
                return -2
            self.links.append(Link(cur.entries * self.growth, cur.error * 0.5, self.options))
            cur = self.links[-1]
        cur.add(a, b)
        cur.size += 1
        self.size += 1
        return 1

    def header(self) -> bytes:
        out = struct.pack("<QIII", self.size, len(self.links), self.options, self.growth)
        for l in self.links:
            out += struct.pack("<QQQddIQB", l.nbytes, l.bits, l.size, l.error, l.bpe, l.hashes, l.entries, l.n2)
        return out

    def scandump(self, max_chunk=BF_MAX_CHUNK):
        """[(iterator, data)] as BF.SCANDUMP hands them out: the header
        with iterator 1, then each link's bytes, no chunk spanning two."""
        chunks = [(1, self.header())]
        it = 1
        while True:
            pos, link = it - 1, None
            for l in self.links:
                if pos < l.nbytes:
                    link = l
                    break
                pos -= l.nbytes
            if link is None:
                return chunks
            n = min(max_chunk, link.nbytes - pos)
            it += n
            chunks.append((it, bytes(link.data[pos:pos + n])))


# ---------------------------------------------------------------------------
def next_pow2(n):
    n = (n - 1) & M64
    for s in (1, 2, 4, 8, 16, 32):
        n |= n >> s
    return (n + 1) & M64


class Cuckoo:
    """RedisBloom's cuckoo filter: CF.RESERVE key capacity [BUCKETSIZE b]
    [MAXITERATIONS n] [EXPANSION e]."""

    def __init__(self, capacity, bucket_size=2, max_iterations=20, expansion=1):
        self.expansion = next_pow2(expansion) & 0xFFFF
        self.bucket_size = bucket_size
        self.max_iterations = max_iterations
        self.num_buckets = next_pow2(capacity // bucket_size) or 1
        self.filters = []  # [num_buckets, bytearray]
        self.num_items = 0
        self.num_deletes = 0
        self.grow()

    def grow(self):
        growth = int(math.pow(self.expansion, len(self.filters)))
        nb = (self.num_buckets * growth) & M32
        self.filters.append([nb, bytearray(nb * self.bucket_size)])

    @staticmethod
    def params(key: bytes):
        h = murmur64a(key, 0)
        fp = h % 255 + 1
        return h, (h ^ (fp * 0x5BD1E995)) & M64, fp

    def _slots(self, f, h):
        nb, data = f
        at = (h % nb) * self.bucket_size
        return data, at

    def check(self, key: bytes) -> int:
        h1, h2, fp = self.params(key)
        for f in self.filters:
            for h in (h1, h2):
                data, at = self._slots(f, h)
                if fp in data[at:at + self.bucket_size]:
                    return 1
        return 0

    def count(self, key: bytes) -> int:
        h1, h2, fp = self.params(key)
        n = 0
        for f in self.filters:
            for h in (h1, h2):
                data, at = self._slots(f, h)
                n += data[at:at + self.bucket_size].count(fp)
        return n

    def _free_slot(self, f, h1, h2):
        for h in (h1, h2):
            data, at = self._slots(f, h)
            for j in range(self.bucket_size):
                if data[at + j] == 0:
                    return data, at + j
        return None

    def _kick(self, f, h1, fp):
        nb, data = f
        bs = self.bucket_size
        victim, ii = 0, h1 % nb
        for _ in range(self.max_iterations):
            at = ii * bs + victim
            data[at], fp = fp, data[at]
            ii = (ii ^ (fp * 0x5BD1E995)) % nb
            for j in range(bs):
                if data[ii * bs + j] == 0:
                    data[ii * bs + j] = fp
                    return True
            victim = (victim + 1) % bs
        for _ in range(self.max_iterations):  # put every fingerprint back
            victim = (victim + bs - 1) % bs
            ii = (ii ^ (fp * 0x5BD1E995)) % nb
            at = ii * bs + victim
            data[at], fp = fp, data[at]
        return False

    def add(self, key: bytes) -> int:
        """CF.ADD: 1, or -1 when it is full and may not grow."""
        h1, h2, fp = self.params(key)
        while True:
            for f in reversed(self.filters):
                slot = self._free_slot(f, h1, h2)
                if slot is not None:
                    slot[0][slot[1]] = fp
                    self.num_items += 1
                    return 1
            if self._kick(self.filters[-1], h1, fp):
                self.num_items += 1
                return 1
            if self.expansion == 0:
                return -1
            self.grow()

    def delete(self, key: bytes) -> int:
        """CF.DEL of a filter of one sub-filter (more would compact)."""
        assert len(self.filters) == 1
        h1, h2, fp = self.params(key)
        for h in (h1, h2):
            data, at = self._slots(self.filters[0], h)
            for j in range(self.bucket_size):
                if data[at + j] == fp:
                    data[at + j] = 0
                    self.num_items -= 1
                    self.num_deletes += 1
                    return 1
        return 0

    def header(self) -> bytes:
        return struct.pack("<QQQQHHH", self.num_items, self.num_buckets, self.num_deletes, len(self.filters),
                           self.bucket_size, self.max_iterations, self.expansion)

    def scandump(self, max_chunk=CF_MAX_CHUNK):
        """[(iterator, data)] as CF.SCANDUMP hands them out; [] for an
        empty filter, which RedisBloom does not dump."""
        if self.num_items == 0:
            return []
        chunks = [(1, self.header())]
        pos = 1
        while True:
            offset, f = pos - 1, None
            for cand in self.filters:
                size = cand[0] * self.bucket_size
                if offset < size:
                    f = cand
                    break
                offset -= size
            if f is None:
                return chunks
            size = f[0] * self.bucket_size
            if size <= max_chunk:
                n, start = size, 0
            else:
                n, start = min(max_chunk, size - offset), offset
            pos += n
            chunks.append((pos, bytes(f[1][start:start + n])))
