"""examples/click_dedupe_wsgi.py in a real gunicorn (Debian's package):
4 sync workers forked by a master that opened the filter (preload_app),
as www-data when run as root; concurrent requests over loopback."""
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import worker_user


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gunicorn:
    def __init__(self, shmd):
        self.port = free_port()
        src = os.environ["SRC"]
        cmd = ["/usr/bin/gunicorn", "--preload", "--workers", "4", "--bind", "127.0.0.1:%d" % self.port,
               "--pythonpath", "%s/examples,%s/tests/python" % (src, src), "--worker-tmp-dir", "/dev/shm",
               "--graceful-timeout", "2", "gunicorn_app:application"]
        if worker_user():
            cmd += ["--user", worker_user(), "--group", worker_user()]
        self.log = open(os.path.join(shmd.root, "gunicorn.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        for _ in range(100):
            try:
                self.get("/seen?id=up")
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not come up")

    def get(self, path):
        """(status, worker pid, body) of one request."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=10) as r:
                return r.status, int(r.headers["X-Worker-Pid"]), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, int(e.headers["X-Worker-Pid"]), e.read().decode()

    def burst(self, paths):
        with ThreadPoolExecutor(16) as pool:
            return list(pool.map(self.get, paths))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture()
def server(shmd):
    shmd.shmctl("create", "clicks", "--capacity", "10000", "--fpr", "0.000001", "--mode", "0660")
    g = Gunicorn(shmd)
    yield g
    g.stop()
    shmd.shmctl("drop", "clicks")


def ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def add_clicks(server, prefix, n):
    """Click prefix0..n-1 once each; returns {click: worker pid that added it}."""
    answers = server.burst(["/click?id=%s%d" % (prefix, i) for i in range(n)])
    assert [(s, b) for s, _, b in answers] == [(200, "new\n")] * n
    added = {"%s%d" % (prefix, i): pid for i, (_, pid, _) in enumerate(answers)}
    assert len(set(added.values())) == 4, "the clicks reached %s" % sorted(set(added.values()))
    return added


def test_a_click_added_through_any_worker_is_seen_by_all(server):
    # The master opened the filter before forking (preload_app): it maps it.
    with open("/proc/%d/maps" % server.proc.pid) as f:
        assert "/clicks." in f.read(), "the gunicorn master does not map the filter"
    added = add_clicks(server, "c-", 400)
    workers = set(added.values())
    assert all(ppid(p) == server.proc.pid for p in workers), "the workers are the master's children"
    assert [s for s, _, _ in server.burst(["/click?id=" + k for k in added])] == [204] * 400
    # Each worker checks clicks every other worker added.
    pairs = set()
    for _ in range(6):
        answers = server.burst(["/seen?id=" + k for k in added])
        assert [b for _, _, b in answers] == ["%s yes\n" % k for k in added]
        pairs |= {(checker, added[k]) for k, (_, checker, _) in zip(added, answers)}
        if all((a, b) in pairs for a in workers for b in workers if a != b):
            break
    missing = [(a, b) for a in workers for b in workers if a != b and (a, b) not in pairs]
    assert missing == [], "worker pairs (checker, adder) never observed"
    status, _, body = server.get("/seen?id=absent-1&id=c-7&id=absent-2")
    assert (status, body) == (200, "absent-1 no\nc-7 yes\nabsent-2 no\n")
    status, _, body = server.get("/seen")
    assert status == 400 and body.startswith("usage:")
    assert server.proc.poll() is None and workers == {p for _, p, _ in server.burst(["/seen?id=x"] * 40)} | workers


def test_a_swap_is_followed_by_the_workers_without_a_restart(server, shmd):
    added = add_clicks(server, "old-", 200)
    before = set(added.values())
    keys = os.path.join(shmd.root, "trained.keys")
    with open(keys, "w") as f:
        f.writelines("trained-%d\n" % i for i in range(300))
    snap = os.path.join(shmd.root, "trained.snap")
    shmd.shmctl("build", "--type", "bloom", "--capacity", "10000", "--fpr", "0.000001", "--from", keys, "-o", snap)
    shmd.shmctl("swap", "clicks", snap)
    answers = server.burst(["/seen?id=trained-%d" % i for i in range(300)] * 2)
    assert {b.split()[1] for _, _, b in answers} == {"yes"}
    after = {p for _, p, _ in answers}
    assert after == before, "the same 4 workers answer after the swap (no restart)"
    answers = server.burst(["/seen?id=" + k for k in added])
    assert sum(b.endswith(" yes\n") for _, _, b in answers) <= 1, "the old generation's clicks are gone"
    assert [s for s, _, _ in server.burst(["/click?id=trained-%d" % i for i in range(100)])] == [204] * 100
    assert add_clicks(server, "new-", 100)
