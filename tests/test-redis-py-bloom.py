"""test-redis-py-bloom.py PATH-TO-SHMD

redis-py's probabilistic API (r.bf(), r.cf()) against a private shmd over
TCP, every BF and CF method the installed redis-py has, each call's result
checked against RedisBloom's command reference: create/reserve, add, madd,
insert, exists, mexists, scandump, loadchunk, info, card; create/reserve,
add, addnx, insert, insertnx, exists, mexists, delete, count, scandump,
loadchunk, info. In RESP2, and in RESP3 with redis.Redis(protocol=3) where
redis-py has it (5.0 and later); Debian bookworm's redis-py 4.3 has not, and
then the same requests go through redis-cli -3, a real RESP3 client, whose
output shows each reply's type. Prints "N passed, N failed"; exits 1 on a
failure.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import redis

SHMD = sys.argv[1]
passed, failed = 0, 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")


def start_shmd(root):
    for _ in range(20):
        port = random.randint(20000, 60000)
        ini = os.path.join(root, "shmd.ini")
        with open(ini, "w") as f:
            f.write(f"[instance]\nname = rpy\n\n[tcp]\nenabled = yes\nport = {port}\nunauthenticated_role = admin\n")
        logpath = os.path.join(root, "shmd.log")
        p = subprocess.Popen([SHMD, "-f", "-c", ini], env=dict(os.environ, SHMF_RUNTIME_DIR=root),
                             stderr=open(logpath, "w"))
        for _ in range(200):
            time.sleep(0.05)
            if "listening on tcp" in open(logpath).read() or p.poll() is not None:
                break
        if "listening on tcp" in open(logpath).read():
            return p, port
        p.kill()
        p.wait()
    raise SystemExit("shmd did not start: " + open(os.path.join(root, "shmd.log")).read())


def raises(fn, text):
    """fn() raises redis' ResponseError whose message is text (redis-py drops an ERR code)."""
    try:
        fn()
    except redis.exceptions.ResponseError as e:
        return str(e) == text
    return False


def dump(client, key):
    """Every chunk of key's dump, SCANDUMP after SCANDUMP, as RedisBloom's clients loop."""
    it, chunks = 0, []
    for _ in range(1000):
        it, data = client.scandump(key, it)
        if it == 0:
            return chunks, data
        chunks.append((it, data))
    return chunks, None


def bloom(r, proto, p):
    bf, T, F = r.bf(), (True if proto == 3 else 1), (False if proto == 3 else 0)
    reserve = getattr(bf, "reserve", bf.create)  # redis-py 4.4 and later name it both ways
    ok(reserve(p + "b", 0.01, 1000) in (True, b"OK", "OK"), "bf().create/reserve")
    ok(raises(lambda: bf.create(p + "b", 0.01, 1000), "item exists"), "bf().create of a name in use: item exists")
    ok(bf.create(p + "bn", 0.01, 50, noScale=True) in (True, b"OK"), "bf().create(noScale=True)")
    ok(bf.create(p + "be", 0.01, 50, expansion=4) in (True, b"OK"), "bf().create(expansion=4)")
    ok(bf.add(p + "b", "a") == T and bf.add(p + "b", "a") == F, "bf().add: new, then not")
    ok(bf.madd(p + "b", "a", "b", "c") == [F, T, T], "bf().madd")
    ok(bf.insert(p + "bi", ["x", "y", "x"], capacity=500, error=0.001) == [T, T, F], "bf().insert creating")
    ok(bf.insert(p + "bi", ["z"], noCreate=True) == [T], "bf().insert(noCreate=True) of an existing filter")
    ok(raises(lambda: bf.insert(p + "none", ["z"], noCreate=True), "not found"), "bf().insert(noCreate) of none")
    ok(bf.insert(p + "bx", ["q"], expansion=3) == [T], "bf().insert(expansion=3)")
    ok(bf.exists(p + "b", "b") == T and bf.exists(p + "b", "zz") == F, "bf().exists")
    ok(bf.exists(p + "none", "a") == F, "bf().exists of a missing filter: false")
    ok(bf.mexists(p + "b", "a", "zz") == [T, F], "bf().mexists")
    i = bf.info(p + "b")
    ok((i.capacity, i.filterNum, i.insertedNum, i.expansionRate) == (1000, 1, 3, 2) and i.size > 0,
       f"bf().info: {vars(i)}")
    ok(bf.info(p + "bn").expansionRate is None, "bf().info of a NONSCALING filter: no expansion rate")
    ok(bf.info(p + "be").expansionRate == 4, "bf().info expansion 4")
    card = bf.card(p + "b") if hasattr(bf, "card") else r.execute_command("BF.CARD", p + "b")
    ok(card == 3, f"bf().card (BF.CARD where redis-py lacks it): {card}")
    chunks, end = dump(bf, p + "b")
    ok(len(chunks) >= 2 and end == b"", f"bf().scandump: {len(chunks)} chunks, then [0, b'']")
    for it, data in chunks:
        ok(bf.loadchunk(p + "bcopy", it, data) in (True, b"OK"), "bf().loadchunk")
    ok(bf.mexists(p + "bcopy", "a", "b", "c") == [T, T, T], "the loaded copy holds every key")
    ok(bf.scandump(p + "b", 123456789) == [0, b""], "bf().scandump of an iterator no dump goes with: the end")


def cuckoo(r, proto, p):
    cf, T, F = r.cf(), (True if proto == 3 else 1), (False if proto == 3 else 0)
    reserve = getattr(cf, "reserve", cf.create)
    ok(reserve(p + "c", 1000) in (True, b"OK"), "cf().create/reserve")
    i = cf.info(p + "c")
    ok((i.bucketSize, i.maxIteration, i.expansionRate, i.filterNum) == (2, 20, 1, 1),
       f"cf().create without options makes RedisBloom's: buckets of 2, 20 iterations, expansion 1: {vars(i)}")
    ok(cf.create(p + "c4", 1000, bucket_size=4, max_iterations=500, expansion=2) in (True, b"OK"),
       "cf().create(bucket_size=4, max_iterations=500, expansion=2)")
    i = cf.info(p + "c4")
    ok((i.bucketSize, i.maxIteration, i.expansionRate) == (4, 500, 2), f"cf().info of it: {vars(i)}")
    ok(raises(lambda: cf.create(p + "c", 1000), "item exists"), "cf().create of a name in use")
    ok(cf.add(p + "c", "a") == T and cf.add(p + "c", "a") == T, "cf().add: a copy each time")
    ok(cf.addnx(p + "c", "a") == F and cf.addnx(p + "c", "b") == T, "cf().addnx")
    ok(cf.insert(p + "c", ["d", "e"]) == [T, T], "cf().insert: added items true in RESP3, 1 in RESP2")
    ok(cf.insertnx(p + "c", ["d", "f"]) == [0, 1], "cf().insertnx: integers in both protocols")
    ok(cf.insert(p + "ci", ["x"], capacity=100) == [T], "cf().insert(capacity=100) creating")
    ok(raises(lambda: cf.insert(p + "none", ["x"], nocreate=True), "not found"), "cf().insert(nocreate) of none")
    ok(cf.exists(p + "c", "a") == T and cf.exists(p + "c", "zz") == F, "cf().exists")
    ok(cf.mexists(p + "c", "a", "zz", "b") == [T, F, T], "cf().mexists")
    ok(cf.count(p + "c", "a") == 2 and cf.count(p + "none", "a") == 0, "cf().count")
    ok(cf.delete(p + "c", "a") == T and cf.count(p + "c", "a") == 1, "cf().delete removes one copy")
    ok(cf.delete(p + "c", "zz") == F, "cf().delete of an absent item")
    ok(raises(lambda: cf.delete(p + "none", "a"), "Not found"), "cf().delete of a missing filter: Not found")
    i = cf.info(p + "c")
    # RedisBloom's "inserted" counts what is stored: a, a, b, d, e, f added, one a deleted.
    ok((i.insertedNum, i.deletedNum) == (5, 1), f"cf().info counts: {vars(i)}")
    chunks, end = dump(cf, p + "c")
    ok(len(chunks) >= 2 and end is None, f"cf().scandump: {len(chunks)} chunks, then [0, None]")
    for it, data in chunks:
        ok(cf.loadchunk(p + "ccopy", it, data) in (True, b"OK"), "cf().loadchunk")
    ok(cf.mexists(p + "ccopy", "a", "b", "d", "e", "f") == [T] * 5, "the loaded copy holds every key")
    ok(cf.create(p + "cempty", 100) in (True, b"OK") and cf.scandump(p + "cempty", 0) == [0, None],
       "cf().scandump of an empty filter: [0, None], as RedisBloom's")
    ok(cf.create(p + "cfull", 4, expansion=0) in (True, b"OK"), "cf().create(expansion=0)")
    got = [cf.add(p + "cfull", f"k{n}") for n in range(4)]
    ok(got == [T] * 4, f"CF.RESERVE 4 EXPANSION 0 holds 4 keys, as RedisBloom's: {got}")
    ok(raises(lambda: [cf.add(p + "cfull", f"m{n}") for n in range(100)], "Filter is full"),
       "then cf().add: Filter is full")
    # A cuckoo add fails after 20 relocations, before every slot is taken: of
    # many new items some are refused (-1), and any other is added (true or 1).
    more = cf.insert(p + "cfull", [f"y{n}" for n in range(50)])
    ok(-1 in more and all(x == -1 or x == T for x in more), f"cf().insert into it: -1 for those refused: {more}")


def resp3_by_redis_cli(port, p):
    """The same replies' RESP3 types through redis-cli -3 --json (redis-py before 5.0 has no RESP3):
    true/false for RESP3 booleans, numbers for integers, objects for maps, null for null."""
    def cli(*args):
        out = subprocess.run(["redis-cli", "-3", "--json", "-p", str(port), *args], capture_output=True,
                             text=True, timeout=30)
        return json.loads(out.stdout)
    cli("BF.RESERVE", p + "b", "0.01", "1000")
    ok(cli("BF.ADD", p + "b", "a") is True, "RESP3 BF.ADD: a boolean")
    ok(cli("BF.MADD", p + "b", "a", "b") == [False, True], "RESP3 BF.MADD: booleans")
    ok(cli("BF.INSERT", p + "b", "ITEMS", "c") == [True], "RESP3 BF.INSERT: booleans")
    ok(cli("BF.EXISTS", p + "b", "a") is True, "RESP3 BF.EXISTS: a boolean")
    ok(cli("BF.MEXISTS", p + "b", "a", "z") == [True, False], "RESP3 BF.MEXISTS: booleans")
    card = cli("BF.CARD", p + "b")
    ok(card == 3 and type(card) is int, "RESP3 BF.CARD: an integer")
    ok(cli("BF.INFO", p + "b", "CAPACITY") == {"Capacity": 1000}, "RESP3 BF.INFO key FIELD: a map of one field")
    info = cli("BF.INFO", p + "b")
    ok(list(info) == ["Capacity", "Size", "Number of filters", "Number of items inserted", "Expansion rate"],
       f"RESP3 BF.INFO: a map of RedisBloom's five fields: {info}")
    cli("CF.RESERVE", p + "c", "1000")
    ok(cli("CF.ADD", p + "c", "a") is True, "RESP3 CF.ADD: a boolean")
    ok(cli("CF.ADDNX", p + "c", "a") is False, "RESP3 CF.ADDNX: a boolean")
    ok(cli("CF.INSERT", p + "c", "ITEMS", "b") == [True], "RESP3 CF.INSERT: booleans")
    got = cli("CF.INSERTNX", p + "c", "ITEMS", "b", "d")
    ok(got == [0, 1] and all(type(v) is int for v in got), "RESP3 CF.INSERTNX: integers")
    ok(cli("CF.EXISTS", p + "c", "a") is True, "RESP3 CF.EXISTS: a boolean")
    ok(cli("CF.MEXISTS", p + "c", "a", "z") == [True, False], "RESP3 CF.MEXISTS: booleans")
    ok(cli("CF.COUNT", p + "c", "a") == 1, "RESP3 CF.COUNT: an integer")
    ok(cli("CF.DEL", p + "c", "a") is True, "RESP3 CF.DEL: a boolean")
    info = cli("CF.INFO", p + "c")
    ok(isinstance(info, dict) and info.get("Bucket size") == 2 and len(info) == 8, f"RESP3 CF.INFO: a map {info}")
    cli("CF.RESERVE", p + "ce", "100")
    ok(cli("CF.SCANDUMP", p + "ce", "0") == [0, None], "RESP3 CF.SCANDUMP of an empty filter: [0, null]")
    cli("CF.RESERVE", p + "cf", "4", "EXPANSION", "0")
    cli("CF.INSERT", p + "cf", "ITEMS", "1", "2", "3", "4")
    got = cli("CF.INSERT", p + "cf", "ITEMS", *[f"x{n}" for n in range(60)])
    ok(got[-1] == -1 and type(got[-1]) is int, f"RESP3 CF.INSERT of a refused item: -1, an integer: {got[-3:]}")


def main():
    root = tempfile.mkdtemp(prefix="shmf-redis-py-", dir="/dev/shm")
    p, port = start_shmd(root)
    try:
        r2 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
        bloom(r2, 2, "r2-")
        cuckoo(r2, 2, "r2-")
        try:
            r3 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, protocol=3)
            r3.ping()
        except TypeError:
            r3 = None
        if r3 is not None:
            bloom(r3, 3, "r3-")
            cuckoo(r3, 3, "r3-")
        else:
            print(f"redis-py {redis.__version__} has no protocol=3: RESP3 through redis-cli -3")
            resp3_by_redis_cli(port, "cli3-")
        ok(r2.ping() is True, "shmd still up")
    finally:
        p.kill()
        p.wait()
        subprocess.run(["rm", "-rf", root])
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


main()
