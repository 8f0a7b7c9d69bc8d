"""shmf.Filter's API against a real shmd: answers, batches, cuckoo calls,
errors carrying libshmf's sentence and code, bad input refused, closed
handles, the GIL released by the batch calls, the stubs and docstrings."""
import ast
import inspect
import os
import sys
import threading
import time

import pytest
import shmf


@pytest.fixture(scope="module")
def filters(shmd):
    shmd.shmctl("create", "bloom", "--capacity", "100000", "--fpr", "0.000001", "--mode", "0660")
    shmd.shmctl("create", "cuckoo", "--type", "cuckoo", "--capacity", "1000", "--fpr", "0.01")
    shmd.shmctl("create", "tiny", "--type", "cuckoo", "--capacity", "8", "--fpr", "0.01", "--max-kicks", "10")
    shmd.shmctl("create", "dropme", "--capacity", "100", "--fpr", "0.01")
    shmd.shmctl("create", "big", "--capacity", "1000000", "--fpr", "0.01")
    return shmd


def test_add_check_in_and_str_keys_are_utf8(filters):
    f = shmf.Filter("bloom", writable=True)
    assert f.add(b"k1") is True
    assert f.add(b"k1") is False
    assert f.check(b"k1") is True and b"k1" in f
    assert f.check(b"k2") is False and b"k2" not in f
    assert f.add("café") is True
    assert "café".encode() in f and f.add("café".encode()) is False
    assert f.add(b"") is True and "" in f
    # shmctl reads the same bytes: the key added from Python is there.
    assert filters.shmctl("check", "bloom", "café").startswith("present")
    filters.shmctl("add", "bloom", "from-shmctl")
    assert "from-shmctl" in f


def test_batches_take_any_iterable_and_answer_in_order(filters):
    f = shmf.Filter("bloom", writable=True)
    keys = ["b%d" % i for i in range(1000)]
    assert f.add_many(keys) == [True] * 1000
    assert f.add_many(k.encode() for k in keys[:10]) == [False] * 10
    mixed = (b"b1", "b2", "absent-1", b"absent-2", "b999")
    assert f.check_many(mixed) == [True, True, False, False, True]
    assert f.check_many(iter([])) == [] and f.add_many([]) == []
    assert f.check_many(["x", "x", "b5"]) == [False, False, True]
    assert all(f.check_many(keys))
    # A key repeated within one add_many is new once.
    assert f.add_many(["rep", "rep"]) == [True, False]


def test_single_calls_agree_with_batches(filters):
    f = shmf.Filter("bloom")
    keys = ["b%d" % i for i in range(0, 2000, 7)] + ["nope%d" % i for i in range(300)]
    assert f.check_many(keys) == [f.check(k) for k in keys]


def test_cuckoo_calls(filters):
    f = shmf.Filter("cuckoo", writable=True)
    assert f.add("c") is True and f.add("c") is True
    assert f.count("c") == 2
    assert f.delete("c") is True and f.count("c") == 1
    assert f.delete("never-added-key") is False
    assert f.add_unique("u") is True and f.add_unique("u") is False and f.count("u") == 1
    assert [f.add_capped("cap", 3) for _ in range(5)] == [0, 1, 2, 3, 3]
    assert f.count("cap") == 3
    assert f.add_capped("cap0", 0) == 0 and "cap0" not in f
    info = f.info()
    assert info["type"] == "cuckoo" and info["bucket_size"] > 0 and info["deletes"] == 1


def test_info_is_a_dict_of_the_filter(filters):
    f = shmf.Filter("dropme")
    info = f.info()
    assert info["name"] == "dropme" and info["type"] == "bloom"
    assert info["capacity"] == 100 and info["error_rate"] == pytest.approx(0.01)
    assert info["writable"] is False and info["items"] == 0
    assert info["lines"] == 1 and "bucket_size" not in info  # one line a key at 1%
    shmf.Filter("dropme", writable=True).add_many(["a", "b", "c"])
    assert f.info()["items"] == 3
    assert "buckets" not in info


def test_errors_carry_the_library_sentence_and_code(filters):
    with pytest.raises(shmf.FilterNotFound) as e:
        shmf.Filter("nosuch")
    assert str(e.value) == "filter 'nosuch': open: " + shmf.strerror(-5001)
    assert e.value.code == -5001 and e.value.filter == "nosuch" and e.value.instance is None
    assert isinstance(e.value, shmf.Error)
    with pytest.raises(shmf.FilterNotFound, match="filter 'bloom' of instance 'other': open: no such"):
        shmf.Filter("bloom", instance="other")
    with pytest.raises(shmf.BadName) as e:
        shmf.Filter("../etc")
    assert isinstance(e.value, ValueError) and e.value.code == -5010
    ro = shmf.Filter("bloom")
    with pytest.raises(shmf.ReadOnly, match="filter 'bloom': add: write through a"):
        ro.add("x")
    with pytest.raises(shmf.ReadOnly):
        ro.add_many(["x"])
    assert "x" not in ro
    b = shmf.Filter("bloom", writable=True)
    for call in (lambda: b.delete("k"), lambda: b.count("k"), lambda: b.add_capped("k", 1)):
        with pytest.raises(shmf.WrongType, match="filter 'bloom': .*: "):
            call()


def test_static_filter_checks_and_refuses_adds_with_static(filters, tmp_path):
    keys = ["blocked-%d" % i for i in range(5000)]
    (tmp_path / "keys").write_text("\n".join(keys + keys[:100]) + "\n")  # duplicates too
    snap = str(tmp_path / "s.snap")
    filters.shmctl("build", "--type", "static", "--capacity", "5000", "--fpr", "0.001",
                   "--from", str(tmp_path / "keys"), "-o", snap)
    filters.shmctl("create", "blocklist", "--capacity", "5000", "--fpr", "0.001", "--mode", "0660")
    f = shmf.Filter("blocklist", writable=True)
    f.add("before-the-swap")
    filters.shmctl("swap", "blocklist", snap, "--reshape")
    assert f.check_many(keys) == [True] * len(keys)
    assert all(f.check(k) for k in keys[::97]) and keys[5] in f
    assert sum(f.check_many("absent-%d" % i for i in range(20000))) < 20  # 16 bits: about 0.3
    info = f.info()
    assert info["type"] == "static" and info["fingerprint_bits"] == 16 and info["capacity"] == 5000, info
    assert info["fingerprints"] % info["segment_length"] == 0 and "lines" not in info, info
    for call in (lambda: f.add("new"), lambda: f.add_many(["new", "newer"]), lambda: f.add_unique("new")):
        with pytest.raises(shmf.Static, match="filter 'blocklist': .*: .*static") as e:
            call()
        assert e.value.code == -5019 and e.value.filter == "blocklist"
        assert isinstance(e.value, shmf.ReadOnly)  # a kind of read-only: built offline
    assert "new" not in f and "newer" not in f


def test_full_carries_what_add_many_stored(filters):
    f = shmf.Filter("tiny", writable=True)
    with pytest.raises(shmf.Full) as e:
        f.add_many("full-%d" % i for i in range(1000))
    added = e.value.added
    assert len(added) == 1000 and True in added
    n = added.index(False)
    assert added == [True] * n + [False] * (1000 - n)
    assert f.check_many("full-%d" % i for i in range(n)) == [True] * n
    with pytest.raises(shmf.Full):
        for i in range(1000):
            f.add("more-%d" % i)


def test_dropped_filter(filters):
    filters.shmctl("create", "gone", "--capacity", "100", "--fpr", "0.01")
    f = shmf.Filter("gone")
    filters.shmctl("drop", "gone")
    with pytest.raises(shmf.Dropped, match="filter 'gone': check: "):
        f.check("k")


@pytest.mark.parametrize("bad", [1, None, 2.5, bytearray(b"k"), memoryview(b"k"), ["k"], object()])
def test_bad_keys_are_type_errors_naming_the_type(filters, bad):
    f = shmf.Filter("bloom", writable=True)
    name = type(bad).__name__
    for call in (f.check, f.add, f.add_unique, lambda k: k in f, lambda k: f.add_capped(k, 1)):
        with pytest.raises(TypeError, match="a key must be bytes or str, not " + name):
            call(bad)
    for call in (f.check_many, f.add_many):
        with pytest.raises(TypeError, match="a key must be bytes or str, not " + name):
            call([b"fine", bad])
    assert f.info()["items"] == shmf.Filter("bloom").info()["items"]


def test_bad_batches_caps_and_names(filters):
    f = shmf.Filter("bloom", writable=True)
    before = f.info()["items"]
    with pytest.raises(TypeError, match="add_many takes an iterable of keys, not one str key"):
        f.add_many("abc")
    with pytest.raises(TypeError, match="check_many takes an iterable of keys, not one bytes key"):
        f.check_many(b"abc")
    with pytest.raises(TypeError, match="check_many takes an iterable of bytes or str keys, not int"):
        f.check_many(5)
    # A key that fails half-way stores nothing of the batch.
    with pytest.raises(TypeError):
        f.add_many(["new-a", "new-b", 3])
    assert f.info()["items"] == before and "new-a" not in f
    with pytest.raises(UnicodeEncodeError):
        f.add("\ud800")
    c = shmf.Filter("cuckoo", writable=True)
    with pytest.raises(ValueError, match=r"add_capped: cap must be between 0 and 4294967295, got -1"):
        c.add_capped("k", -1)
    with pytest.raises(ValueError, match="got 4294967296"):
        c.add_capped("k", 2**32)
    with pytest.raises(TypeError, match="cap must be an int, not str"):
        c.add_capped("k", "4")
    with pytest.raises(TypeError, match="cap must be an int, not bool"):
        c.add_capped("k", True)
    with pytest.raises(TypeError):
        c.add_capped("k")
    assert c.count("k") == 0
    with pytest.raises(ValueError, match="the filter's name contains a NUL character: 'bloom\\\\x00x'"):
        shmf.Filter("bloom\0x")
    with pytest.raises(ValueError, match="the filter's instance contains a NUL character"):
        shmf.Filter("bloom", instance="default\0x")
    with pytest.raises(TypeError):
        shmf.Filter(b"bloom")
    with pytest.raises(TypeError, match="instance must be str or None, not int"):
        shmf.Filter("bloom", instance=3)


def test_close_and_context_manager(filters):
    with shmf.Filter("bloom", writable=True) as f:
        assert f.add("cm") is False or "cm" in f
        assert not f.closed
    assert f.closed and repr(f) == "<shmf.Filter 'bloom' closed>"
    calls = {
        "check": lambda: f.check("k"), "add": lambda: f.add("k"), "in": lambda: "k" in f,
        "check_many": lambda: f.check_many(["k"]), "add_many": lambda: f.add_many([]),
        "delete": lambda: f.delete("k"), "count": lambda: f.count("k"),
        "add_capped": lambda: f.add_capped("k", 1), "add_unique": lambda: f.add_unique("k"), "info": f.info,
    }
    for what, call in calls.items():
        with pytest.raises(ValueError, match="filter 'bloom': %s: the filter is closed" % what):
            call()
    f.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        with f:
            pass
    g = shmf.Filter("bloom")
    assert repr(g) == "<shmf.Filter 'bloom' check-only>" and g.name == "bloom" and g.writable is False
    with pytest.raises(ZeroDivisionError):
        with g:
            1 / 0
    assert g.closed


def test_batches_release_the_gil(filters):
    """Another thread runs while a batch call is in libshmf: it takes the
    time every 1,000 turns; some of its times fall well inside the call
    (the margins, 4 switch intervals, leave out the turns it may get just
    before or after the call when the interpreter passes the GIL on)."""
    f = shmf.Filter("big", writable=True)
    keys = [b"gil-%d" % i for i in range(200000)] * 20
    stamps = []
    stop = threading.Event()

    def spin():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 1000 == 0:
                stamps.append(time.monotonic())

    t = threading.Thread(target=spin)
    t.start()
    margin = 4 * sys.getswitchinterval()
    try:
        time.sleep(0.05)
        for call in (f.add_many, f.check_many):
            t0 = time.monotonic()
            call(keys)
            t1 = time.monotonic()
            inside = sum(t0 + margin < s < t1 - margin for s in stamps)
            print("%s of %d keys: %.0f ms, the other thread took %d times inside it"
                  % (call.__name__, len(keys), (t1 - t0) * 1e3, inside))
            assert t1 - t0 > 3 * margin, "the call was too short to tell"
            assert inside > 0, call.__name__ + " held the GIL"
    finally:
        stop.set()
        t.join()


def test_close_refused_while_another_thread_is_in_a_batch(filters):
    f = shmf.Filter("big")
    keys = [b"c-%d" % i for i in range(200000)] * 20
    started = threading.Event()
    res = []

    def batch():
        started.set()
        res.append(f.check_many(keys))

    t = threading.Thread(target=batch)
    t.start()
    started.wait()
    refused = 0
    while t.is_alive():
        try:
            if t.is_alive():
                f.close()
                break
        except RuntimeError as e:
            assert "another thread is in a batch call" in str(e)
            refused += 1
            time.sleep(0.001)
    t.join()
    print("close refused %d times while the batch ran" % refused)
    assert refused > 0 and len(res) == 1 and len(res[0]) == len(keys)


def stub_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    return names


def test_stubs_and_docstrings_cover_the_module():
    path = os.path.join(os.environ["SRC"], "bindings", "python", "shmf.pyi")
    with open(path) as fh:
        tree = ast.parse(fh.read())
    public = {n for n in dir(shmf) if not n.startswith("_")} | {"__version__"}
    assert stub_names(tree) - {"Key"} == public
    stub_filter = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Filter")
    methods = {n.name for n in stub_filter.body if isinstance(n, ast.FunctionDef)}
    runtime = {n for n in dir(shmf.Filter) if not n.startswith("_")}
    assert runtime | {"__new__", "__contains__", "__enter__", "__exit__"} == methods
    for n in runtime:
        assert getattr(shmf.Filter, n).__doc__, n + " has no docstring"
    assert str(inspect.signature(shmf.Filter)) == "(name, writable=False, instance=None)"
    assert shmf.Filter.__doc__.startswith("An open shmfilter filter")
    for n in public:
        obj = getattr(shmf, n)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert obj.__doc__ and issubclass(obj, shmf.Error), n
