"""Fixtures of the Python binding's tests (tests/test-python.sh runs them).

A private shmd per test module, in a temporary SHMF_RUNTIME_DIR under
/dev/shm, stopped at the end. As root, its files are given the group
www-data (as in production, where gunicorn's workers run as www-data).
The environment gives SHMD and SHMCTL (the build's binaries) and
PYTHONPATH (the build's bindings/, where shmf.*.so is).
"""
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import pytest


def worker_user():
    """www-data when run as root and the user exists, else None."""
    if os.getuid() != 0:
        return None
    try:
        pwd.getpwnam("www-data")
        return "www-data"
    except KeyError:
        return None


class Shmd:
    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="shmf-python-", dir="/dev/shm")
        os.chmod(self.root, 0o755)
        self.rundir = os.path.join(self.root, "run")
        os.mkdir(self.rundir, 0o755)
        os.environ["SHMF_RUNTIME_DIR"] = self.rundir
        self.shmctl_bin = os.environ["SHMCTL"]
        conf = os.path.join(self.root, "shmd.conf")
        with open(conf, "w") as f:
            f.write("[instance]\nname = default\n")
            if worker_user():
                f.write("group = %s\n" % worker_user())
        self.log = open(os.path.join(self.root, "shmd.log"), "w")
        self.proc = subprocess.Popen([os.environ["SHMD"], "-f", "-c", conf], stderr=self.log)
        for _ in range(100):
            if subprocess.run([self.shmctl_bin, "ping"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("shmd did not come up: " + self.tail())

    def shmctl(self, *args, stdin=None):
        r = subprocess.run([self.shmctl_bin, *args], input=stdin, capture_output=True, text=True)
        assert r.returncode == 0, "shmctl %s: %s" % (" ".join(args), r.stderr)
        return r.stdout

    def tail(self):
        with open(os.path.join(self.root, "shmd.log")) as f:
            return f.read()[-2000:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def shmd():
    d = Shmd()
    yield d
    d.stop()
