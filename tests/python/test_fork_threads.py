"""libshmf's fork and thread rules through shmf.Filter: a handle opened
before fork() keeps working in every child (adds seen by the others,
closing in one process leaves the others' handles open), os.fork() while
another thread is in a batch call, and threads sharing one handle while
the filter is swapped under them."""
import os
import threading
import time

import pytest
import shmf


@pytest.fixture(scope="module")
def filters(shmd):
    shmd.shmctl("create", "forked", "--capacity", "100000", "--fpr", "0.000001")
    shmd.shmctl("create", "threaded", "--capacity", "200000", "--fpr", "0.000001")
    shmd.shmctl("create", "churn", "--capacity", "100000", "--fpr", "0.000001")
    return shmd


def wait_child(pid, seconds=30):
    """The child's exit status; fails (and kills it) if it hangs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("child %d hung" % pid)


def test_handle_opened_before_fork_works_in_every_child(filters):
    f = shmf.Filter("forked", writable=True)
    assert f.add("parent-key")
    n = 4
    go = [os.pipe() for _ in range(n)]
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                # Each child adds its own keys, waits until all have, then
                # checks every child's keys through the inherited handle.
                assert f.add_many("child-%d-%d" % (i, j) for j in range(500)) == [True] * 500
                os.write(1, b"")
                os.close(go[i][1])
                os.read(go[i][0], 1)
                for c in range(n):
                    assert f.check_many("child-%d-%d" % (c, j) for j in range(500)) == [True] * 500
                assert "parent-key" in f and f.check("never-added") is False
                if i == 0:
                    f.close()  # closes this child's handle only
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    # Every child has added (its keys are visible here), then let them check.
    deadline = time.monotonic() + 30
    while not all(f.check("child-%d-499" % i) for i in range(n)) and time.monotonic() < deadline:
        time.sleep(0.01)
    for r, w in go:
        os.write(w, b"x")
    assert [wait_child(p) for p in pids] == [0] * n
    assert not f.closed and all(f.check_many("child-%d-%d" % (c, j) for c in range(n) for j in range(500)))
    assert f.info()["items"] == 1 + n * 500


def test_fork_while_another_thread_is_in_batches(filters, tmp_path):
    """os.fork() waits for the batch calls in flight (an atfork handler):
    each child, forked while two threads run add_many and check_many on the
    handle and the filter is swapped under them (each call then remaps,
    under the handle's lock), checks and adds through the handle and exits."""
    f = shmf.Filter("churn", writable=True)
    stop = threading.Event()
    keys = [b"t-%d" % i for i in range(5000)]
    snap = tmp_path / "churn.snap"
    (tmp_path / "k").write_text("a\n")
    filters.shmctl("build", "--type", "bloom", "--capacity", "100000", "--fpr", "0.000001",
                   "--from", str(tmp_path / "k"), "-o", str(snap))

    def churn():
        while not stop.is_set():
            f.add_many(keys)
            f.check_many(keys)

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for round_ in range(60):
            if round_ % 3 == 0:
                filters.shmctl("swap", "churn", str(snap))
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    f.check_many(keys)
                    f.add("child")
                    code = 0
                finally:
                    os._exit(code)
            assert wait_child(pid, 20) == 0, "round %d" % round_
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert "child" in f or f.info()["generation"] > 0


def test_threads_share_a_handle_through_a_swap(filters, tmp_path):
    f = shmf.Filter("threaded", writable=True)
    n_threads, per = 8, 2000
    errors = []
    barrier = threading.Barrier(n_threads + 1)

    def worker(t):
        try:
            mine = ["th-%d-%d" % (t, j) for j in range(per)]
            barrier.wait()
            for k in mine[: per // 2]:
                assert f.add(k) is True
            assert f.add_many(mine[per // 2:]) == [True] * (per // 2)
            barrier.wait()
            everyone = ["th-%d-%d" % (u, j) for u in range(n_threads) for j in range(per)]
            assert all(f.check_many(everyone)) and all(k in f for k in everyone[::7])
            barrier.wait()  # the main thread swaps the filter now
            barrier.wait()
            # The same handle follows the swap in every thread.
            assert all(f.check_many(["trained-%d" % j for j in range(300)]))
            assert not any(f.check_many(mine))
        except BaseException as e:  # noqa: B902 - reported to the main thread
            errors.append(repr(e))
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    try:
        barrier.wait()
        barrier.wait()
        barrier.wait()
        gen = f.info()["generation"]
        keys = tmp_path / "trained.keys"
        keys.write_text("".join("trained-%d\n" % j for j in range(300)))
        filters.shmctl("build", "--type", "bloom", "--capacity", "200000", "--fpr", "0.000001",
                       "--from", str(keys), "-o", str(tmp_path / "trained.snap"))
        filters.shmctl("swap", "threaded", str(tmp_path / "trained.snap"))
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    assert errors == []
    assert f.info()["generation"] > gen
