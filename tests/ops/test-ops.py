#!/usr/bin/python3
"""test-ops.py - the operators' commands (INFO sections, CONFIG, CLIENT
LIST/KILL, SLOWLOG, MEMORY) as the programs that send them see them:
redis-py (Debian's python3-redis, RESP2) over the unix socket and TCP,
redis-cli -3 for RESP3, and redis-cli --stat.

    tests/ops/test-ops.py PATH-TO-SHMD CASE

CASE: info, config, clients, slowlog, memory, stat, resp3. Each starts a
private shmd (runtime directory under /dev/shm, TCP listener on a free
loopback port with an admin password and a reader user, the slow log
logging every command) and stops it with SIGTERM, which must exit 0.
Exit 77 (meson's skip) when redis-py or redis-cli is missing.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)
if shutil.which("redis-cli") is None:
    print("SKIP: redis-cli is not installed (scripts/install-deps.sh installs redis-tools)")
    sys.exit(77)

ADMIN_PW = "ops-admin-pw-%d" % os.getpid()
READER_PW = "ops-reader-pw"


class Shmd:
    """A private shmd: unix socket, TCP listener, two filters f (Bloom) and c (cuckoo)."""

    def __init__(self, shmd, instance_extra=""):
        self.root = tempfile.mkdtemp(prefix="shmf-ops-", dir="/dev/shm")
        self.sock = os.path.join(self.root, "ops.sock")
        self.proc = None
        for _ in range(20):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
            s.close()
            with open(os.path.join(self.root, "shmd.ini"), "w") as f:
                f.write("[instance]\nname = ops\ntimeout = 3600\nmaxmemory_clients = 64m\n%s\n"
                        "[tcp]\nenabled = yes\nport = %d\nrequirepass = %s\nmaxclients = 77\n"
                        "timeout = 120\n\n"
                        "[user rdr]\npassword = %s\nrole = reader\n\n"
                        "[filter f]\ntype = bloom\ncapacity = 100000\nfpr = 0.01\n\n"
                        "[filter c]\ntype = cuckoo\ncapacity = 1000\n"
                        % (instance_extra, self.port, ADMIN_PW, READER_PW))
            self.log = os.path.join(self.root, "shmd.log")
            env = dict(os.environ, SHMF_RUNTIME_DIR=self.root)
            self.proc = subprocess.Popen([shmd, "-f", "-c", os.path.join(self.root, "shmd.ini")], env=env,
                                         stderr=open(self.log, "w"))
            for _ in range(200):
                if "listening on tcp" in self.log_text() or self.proc.poll() is not None:
                    break
                time.sleep(0.05)
            if "listening on tcp" in self.log_text():
                return
            self.proc.wait()
            if "Address already in use" not in self.log_text():
                raise SystemExit("shmd did not start; its log:\n" + self.log_text())
        raise SystemExit("no free loopback port after 20 tries")

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def unix(self, **kw):
        return redis.Redis(unix_socket_path=self.sock, decode_responses=True, **kw)

    def tcp(self, user=None, password=ADMIN_PW, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, username=user, password=password,
                           decode_responses=True, **kw)

    def cli(self, *args):
        return subprocess.run(["redis-cli", "--no-raw", "-s", self.sock] + list(args), capture_output=True, text=True,
                              timeout=10).stdout

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
        if rc != 0:
            raise SystemExit("shmd exited %d on SIGTERM" % rc)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok -", what)


def refused(fn, prefix):
    """Whether fn() is answered an error starting with prefix (redis-py strips "ERR " and keeps the rest)."""
    try:
        fn()
    except redis.exceptions.NoPermissionError as e:
        msg = "NOPERM " + str(e)
    except redis.ResponseError as e:
        msg = str(e)
    else:
        print("not refused:", prefix)
        return False
    if not msg.startswith(prefix):
        print("refused with %r, not %r" % (msg, prefix))
    return msg.startswith(prefix)


def size_ok(n):
    return isinstance(n, int) and 1024 <= n < (1 << 30)


# ---- the cases ---------------------------------------------------------------


def case_info(d):
    for name, r in (("unix", d.unix()), ("tcp", d.tcp())):
        r.execute_command("BF.ADD", "f", "k1")
        mem = r.info("memory")
        check(size_ok(mem["used_memory"]), "%s: used_memory %s is a sane size" % (name, mem["used_memory"]))
        check(mem["used_memory_rss"] >= mem["used_memory"] // 2, "%s: used_memory_rss %s" % (name, mem["used_memory_rss"]))
        check(re.fullmatch(r"[0-9.]+[BKMG]", mem["used_memory_human"]) is not None, "%s: used_memory_human %s" % (name, mem["used_memory_human"]))
        filters = r.memory_usage("f") + r.memory_usage("c")
        check(mem["used_memory_filters"] == filters, "%s: used_memory_filters %d is MEMORY USAGE f + c" % (name, filters))
        check(mem["used_memory_dataset"] == filters and mem["used_memory"] == mem["used_memory_overhead"] + filters,
              "%s: used_memory %d is the heap and the filters' segments" % (name, mem["used_memory"]))
        check(mem["maxmemory"] == 0 and mem["maxmemory_policy"] == "noeviction", "%s: maxmemory 0, noeviction" % name)
        check(mem["mem_clients_normal"] > 0 and mem["maxmemory_clients"] == 64 << 20, "%s: mem_clients_normal, maxmemory_clients" % name)
        check(r.info("cluster") == {"cluster_enabled": 0}, "%s: INFO cluster is cluster_enabled:0" % name)

        r.config_resetstat()
        for i in range(5):
            r.execute_command("BF.ADD", "f", "item%d" % i)
        for i in range(3):
            r.execute_command("BF.EXISTS", "f", "item%d" % i)
        r.ping()
        r.ping()
        check(refused(lambda: r.execute_command("BF.ADD", "f"), "wrong number of arguments"), "%s: BF.ADD of arity 2 refused" % name)
        check(refused(lambda: r.execute_command("CF.DEL", "nosuch", "x"), "Not found"), "%s: CF.DEL of no filter fails (RedisBloom's text)" % name)
        cs = r.info("commandstats")
        add, ex, ping = cs["cmdstat_bf.add"], cs["cmdstat_bf.exists"], cs["cmdstat_ping"]
        check(add["calls"] == 5 and add["rejected_calls"] == 1 and add["failed_calls"] == 0, "%s: bf.add calls=5 rejected=1: %s" % (name, add))
        check(ex["calls"] == 3 and ping["calls"] == 2, "%s: bf.exists calls=3, ping calls=2" % name)
        check(cs["cmdstat_cf.del"]["calls"] == 1 and cs["cmdstat_cf.del"]["failed_calls"] == 1, "%s: cf.del failed_calls=1" % name)
        check(cs["cmdstat_config|resetstat"]["calls"] == 1, "%s: config|resetstat counted after it reset" % name)
        check(abs(add["usec_per_call"] - add["usec"] / 5) < 1 and add["usec"] < 5 * 10**6, "%s: bf.add usec %s" % (name, add["usec"]))
        check("cmdstat_bf.card" not in cs, "%s: a verb never called is not listed" % name)

    r = d.unix()
    default, everything = r.info(), r.info("everything")
    for field in ("redis_version", "connected_clients", "blocked_clients", "used_memory", "loading",
                  "total_commands_processed", "role", "used_cpu_user", "cluster_enabled", "db0"):
        check(field in default, "INFO has %s" % field)
    check("cmdstat_ping" not in default and "cmdstat_ping" in r.info("all"), "commandstats in all, not default")
    check(everything["filters"] == 2 and everything["filters_bytes"] == default["used_memory_filters"], "INFO filters: 2 filters, their bytes")
    lines = {v["name"]: v for k, v in everything.items() if k.startswith("filter_")}
    check(set(lines) == {"f", "c"} and lines["f"]["type"] == "bloom" and lines["c"]["type"] == "cuckoo", "a filter_N line per filter: %s" % lines)
    check(lines["f"]["bytes"] == r.memory_usage("f") and lines["f"]["items"] == 6, "filter f: its bytes and 6 items")
    check(r.info("nosuchsection") == {}, "an unknown section gives nothing")


def case_config(d):
    u, t = d.unix(), d.tcp()
    conf = u.config_get("*")
    want = {"maxclients": "77", "maxmemory": "0", "maxmemory-policy": "noeviction", "save": "",
            "appendonly": "no", "databases": "1", "timeout": "3600", "port": str(d.port),
            "bind": "127.0.0.1", "requirepass": "(hidden)", "slowlog-log-slower-than": "0",
            "slowlog-max-len": "64", "unixsocket": d.sock, "maxmemory-clients": str(64 << 20),
            "cluster-enabled": "no"}
    for k, v in want.items():
        check(conf.get(k) == v, "CONFIG GET * %s = %r (got %r)" % (k, v, conf.get(k)))
    check(ADMIN_PW not in repr(conf) and READER_PW not in repr(t.config_get("*")), "no password in CONFIG GET's reply")
    check(t.config_get("timeout") == {"timeout": "120"}, "timeout over TCP: [tcp] timeout")
    check(set(u.config_get("max*")) == {"maxclients", "maxmemory", "maxmemory-policy", "maxmemory-clients"}, "CONFIG GET max*")
    check(u.config_get("MAXCLIENTS") == {"maxclients": "77"}, "CONFIG GET in any case")
    check(u.execute_command("CONFIG", "GET", "port", "databases", "port") == ["databases", "1", "port", str(d.port)] or
          u.execute_command("CONFIG", "GET", "port", "databases", "port") == {"databases": "1", "port": str(d.port)},
          "CONFIG GET of two patterns: each parameter once")
    check(u.config_get("nosuch") == {}, "CONFIG GET of nothing: empty")
    check(refused(lambda: u.config_set("maxclients", "10"), "CONFIG SET is not supported by shmd"), "CONFIG SET refused, saying why")
    check(u.config_get("maxclients") == {"maxclients": "77"}, "CONFIG SET changed nothing")
    r = d.tcp(user="rdr", password=READER_PW)
    check(r.config_get("databases") == {"databases": "1"}, "a reader may CONFIG GET")
    check(refused(lambda: r.config_set("maxclients", "10"), "NOPERM config|set needs the admin role"), "a reader is refused CONFIG SET: NOPERM")
    check(refused(lambda: r.config_resetstat(), "NOPERM config|resetstat needs the admin role"), "a reader is refused CONFIG RESETSTAT: NOPERM")
    check(refused(lambda: u.execute_command("CONFIG", "FROB"), "unknown subcommand 'FROB'. Try CONFIG HELP."), "CONFIG FROB: Redis' error")
    check(refused(lambda: u.execute_command("CONFIG|GET", "*"), "unknown command"), "CONFIG|GET as a verb: unknown")
    before = u.info("stats")["total_commands_processed"]
    u.config_resetstat()
    check(u.info("stats")["total_commands_processed"] <= 2 < before, "CONFIG RESETSTAT zeroes total_commands_processed")


def raw(d):
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    s.settimeout(5)
    return s


def raw_cmd(s, *args):
    s.sendall(("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)).encode())
    return s.recv(65536)


def case_clients(d):
    u = d.unix()
    u.client_setname("boss")
    me = u.client_id()
    victim = raw(d)
    check(raw_cmd(victim, "CLIENT", "SETNAME", "victim") == b"+OK\r\n", "a second connection named victim")
    t = d.tcp(user="rdr", password=READER_PW)
    t.client_setname("remote")
    t_id = t.client_id()
    clients = u.client_list()
    fields = ("id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp "
              "obl oll omem tot-mem events cmd user redir resp lib-name lib-ver").split()
    mine = [c for c in clients if c["id"] == str(me)]
    check(len(mine) == 1 and list(mine[0]) == fields, "CLIENT LIST: Redis 7.2's fields in its order: %s" % list(mine[0]))
    check(mine[0]["name"] == "boss" and mine[0]["cmd"] == "client|list" and mine[0]["addr"] == d.sock + ":0" and
          mine[0]["laddr"] == d.sock + ":0" and mine[0]["flags"] == "N" and mine[0]["user"] == "default",
          "CLIENT LIST: this connection's name, cmd, addresses, flags: %s" % mine[0])
    remote = [c for c in clients if c["id"] == str(t_id)]
    check(len(remote) == 1 and remote[0]["addr"].startswith("127.0.0.1:") and
          remote[0]["laddr"] == "127.0.0.1:%d" % d.port and remote[0]["user"] == "rdr" and remote[0]["name"] == "remote",
          "CLIENT LIST: the TCP reader, its addresses and user: %s" % remote)
    names = sorted(c["name"] for c in clients)
    check(names == ["boss", "remote", "victim"], "CLIENT LIST: every connection: %s" % names)
    info = u.client_info()
    check(int(info["id"]) == me and info["name"] == "boss" and info["cmd"] == "client|info", "CLIENT INFO: this connection's line")
    check(len(u.client_list(client_id=[str(me)])) == 1 and u.execute_command("CLIENT", "LIST", "TYPE", "pubsub") == "", "CLIENT LIST ID, TYPE")
    check(t.client_list() and len(t.client_list()) == 3, "a reader may CLIENT LIST")
    check(refused(lambda: t.client_kill_filter(_id=me), "NOPERM client|kill needs the admin role"), "a TCP reader is refused CLIENT KILL: NOPERM")
    check(u.execute_command("CLIENT", "NO-EVICT", "on") == "OK" and u.execute_command("CLIENT", "NO-TOUCH", "on") == "OK", "CLIENT NO-EVICT, NO-TOUCH on: OK")

    vid = int([c for c in u.client_list() if c["name"] == "victim"][0]["id"])
    check(u.client_kill_filter(_id=vid) == 1, "CLIENT KILL ID: 1 killed")
    check(victim.recv(100) == b"", "the killed connection reads end-of-file")
    check("closed by CLIENT KILL from client id=%d" % me in d.log_text(), "the kill is logged")
    check(u.client_kill_filter(_id=vid) == 0, "CLIENT KILL ID of a closed connection: 0")
    addr = [c for c in u.client_list() if c["name"] == "remote"][0]["addr"]
    check(u.client_kill(addr) is True, "CLIENT KILL ip:port (the old form): OK")
    check(str(t_id) not in [c["id"] for c in u.client_list()], "the TCP reader killed by its address is gone")
    check(t.client_id() != t_id, "redis-py reconnects it: a new connection")
    check(refused(lambda: u.client_kill("10.9.9.9:1"), "No such client"), "the old form of no client: No such client")
    check(u.client_kill_filter(_type="pubsub") == 0, "CLIENT KILL TYPE pubsub: none here")
    check(u.client_kill_filter(_id=me) == 0, "SKIPME yes by default: not the caller")
    check(refused(lambda: u.execute_command("CLIENT", "KILL", "ID", "0"), "client-id should be greater than 0"), "CLIENT KILL ID 0: Redis' error")
    check(refused(lambda: u.execute_command("CLIENT", "KILL", "FROB", "x"), "syntax error"), "CLIENT KILL FROB: syntax error")
    self_kill = raw(d)
    me2 = int(raw_cmd(self_kill, "CLIENT", "ID")[1:-2])
    check(raw_cmd(self_kill, "CLIENT", "KILL", "ID", str(me2), "SKIPME", "no") == b":1\r\n", "a connection kills itself: :1")
    check(self_kill.recv(100) == b"", "then reads end-of-file")


def case_slowlog(d):
    u = d.unix()
    u.client_setname("slow-one")
    u.slowlog_reset()
    check(u.slowlog_len() == 1, "after SLOWLOG RESET the log holds the reset itself (every command is logged)")
    u.execute_command("BF.ADD", "f", "x" * 200)
    u.execute_command("BF.MADD", "f", *["i%d" % i for i in range(40)])
    a = d.tcp(user="default")  # AUTH default <password>, logged redacted
    a.ping()
    entries = u.execute_command("SLOWLOG", "GET", "4")
    check(len(entries) == 4, "SLOWLOG GET 4: 4 entries")
    ids = [e[0] for e in entries]
    check(ids == sorted(ids, reverse=True), "newest first: %s" % ids)
    by_verb = {e[3][0].upper(): e for e in entries}
    auth = by_verb["AUTH"]
    check(auth[3][1:] == ["(redacted)", "(redacted)"] and ADMIN_PW not in repr(entries), "AUTH's arguments redacted: %s" % auth[3])
    check(auth[4].startswith("127.0.0.1:") and auth[5] == "", "AUTH's entry: the TCP client's address, no name")
    madd = by_verb["BF.MADD"]
    check(len(madd[3]) == 32 and madd[3][31] == "... (11 more arguments)", "42 arguments kept as 31 and '... (11 more arguments)'")
    check(madd[4] == d.sock + ":0" and madd[5] == "slow-one", "the entry's client address and name")
    check(isinstance(madd[1], int) and abs(madd[1] - time.time()) < 60 and isinstance(madd[2], int) and madd[2] >= 0,
          "unix time and microseconds")
    add = u.execute_command("SLOWLOG", "GET", "-1")
    add = [e for e in add if e[3][0].upper() == "BF.ADD"][0]
    check(add[3][2] == "x" * 128 + "... (72 more bytes)", "an argument of 200 bytes kept as 128 and '... (72 more bytes)'")
    parsed = u.slowlog_get(2)
    check(len(parsed) == 2 and "command" in parsed[0] and "duration" in parsed[0], "redis-py's slowlog_get parses it: %s" % parsed[0])
    for i in range(100):
        u.ping()
    check(u.slowlog_len() == 64, "at most slowlog_max_len = 64 entries")
    check(refused(lambda: u.execute_command("SLOWLOG", "GET", "-2"), "count should be greater than or equal to -1"), "SLOWLOG GET -2: Redis' error")
    r = d.tcp(user="rdr", password=READER_PW)
    check(isinstance(r.slowlog_len(), int), "a reader may SLOWLOG LEN")
    check(refused(lambda: r.slowlog_reset(), "NOPERM slowlog|reset needs the admin role"), "a TCP reader is refused SLOWLOG RESET: NOPERM")
    check(refused(lambda: r.slowlog_get(), "NOPERM slowlog|get needs the admin role"), "a TCP reader is refused SLOWLOG GET: NOPERM")


def case_slowlog_default(shmd):
    d = Shmd(shmd, "")  # slowlog_log_slower_than: Redis' 10000 microseconds
    try:
        u = d.unix()
        u.slowlog_reset()
        for i in range(200):
            u.ping()
        check(u.slowlog_len() == 0, "with the default threshold no PING is logged")
        check(u.config_get("slowlog-*") == {"slowlog-log-slower-than": "10000", "slowlog-max-len": "128"}, "defaults: 10000 and 128")
    finally:
        d.stop()


def case_memory(d):
    u = d.unix()
    f = u.memory_usage("f")
    lines = {v["name"]: v for k, v in u.info("filters").items() if k.startswith("filter_")}
    check(f == lines["f"]["bytes"] and f > 100000 // 8, "MEMORY USAGE f: its segments' bytes, %d" % f)
    check(u.memory_usage("nosuch") is None, "MEMORY USAGE of no filter: nil")
    check(u.memory_usage("f", samples=5) == f, "MEMORY USAGE f SAMPLES 5")
    check(refused(lambda: u.execute_command("MEMORY", "USAGE", "f", "FROB", "1"), "syntax error"), "MEMORY USAGE f FROB: syntax error")
    stats = u.memory_stats()
    check(stats["keys.count"] == 2 and stats["dataset.bytes"] == u.info("memory")["used_memory_filters"], "MEMORY STATS: keys.count 2, dataset.bytes")
    check(stats["total.allocated"] >= stats["dataset.bytes"], "MEMORY STATS: total.allocated holds dataset.bytes")
    check(len(u.execute_command("MEMORY", "HELP")) > 3, "MEMORY HELP")
    r = d.tcp(user="rdr", password=READER_PW)
    check(r.memory_usage("f") == f, "a reader may MEMORY USAGE")


def case_stat(d):
    u = d.unix()
    # 40 MiB of segments, far above shmd's heap: --stat's mem must show them.
    u.execute_command("BF.RESERVE", "big", "0.01", "30000000")
    filters = u.info("memory")["used_memory_filters"]
    # Line-buffered: a redis-cli that timeout stops keeps no output in its buffer.
    out = subprocess.run(["timeout", "3", "stdbuf", "-oL", "redis-cli", "-s", d.sock, "--stat", "-i", "0.5"], capture_output=True,
                         text=True).stdout
    rows = [l.split() for l in out.splitlines() if re.match(r"^\d", l)]
    check(len(rows) >= 2, "redis-cli --stat printed rows:\n" + out)
    keys, mem = rows[-1][0], rows[-1][1]
    check(keys == "3" and int(keys) == u.dbsize(), "--stat keys: %s, the filters" % keys)
    m = re.fullmatch(r"([0-9.]+)([BKMG])", mem)
    scale = {"B": 1, "K": 1024, "M": 1 << 20, "G": 1 << 30}
    check(m is not None and size_ok(int(float(m.group(1)) * scale[m.group(2)])), "--stat mem: %s, a sane size" % mem)
    shown = float(m.group(1)) * scale[m.group(2)]
    check(filters > 30 << 20 and shown >= filters * 0.99, "--stat mem %s shows the filters' segments, %d bytes" % (mem, filters))
    check("-9223372036854775808" not in out, "--stat prints no unknown number")


def case_resp3(d):
    out = d.cli("-3", "CONFIG", "GET", "maxmemory")
    check('"maxmemory" => "0"' in out, "RESP3 CONFIG GET: a map: %r" % out)
    out = d.cli("-3", "MEMORY", "USAGE", "f")
    check(re.fullmatch(r"\(integer\) \d+\n", out) is not None, "RESP3 MEMORY USAGE: an integer: %r" % out)
    check(d.cli("-3", "MEMORY", "USAGE", "nosuch") == "(nil)\n", "RESP3 MEMORY USAGE of no filter: null")
    out = d.cli("-3", "INFO", "memory")
    check("used_memory:" in out and "used_memory_filters:" in out, "RESP3 INFO memory")
    out = d.cli("-3", "INFO", "commandstats")
    check("cmdstat_info:calls=" in out, "RESP3 INFO commandstats counts INFO itself")
    out = d.cli("-3", "MEMORY", "STATS")
    check('"keys.count" => (integer) 2' in out, "RESP3 MEMORY STATS: a map: %r" % out)
    out = d.cli("-3", "SLOWLOG", "GET", "1")
    check(re.search(r'1\) 1\) \(integer\) \d+', out) is not None, "RESP3 SLOWLOG GET: entries: %r" % out)
    out = d.cli("-3", "CLIENT", "LIST")
    check(out.startswith('"id=') or out.startswith("id="), "RESP3 CLIENT LIST: a string: %r" % out[:40])


CASES = {"info": case_info, "config": case_config, "clients": case_clients, "slowlog": case_slowlog,
         "memory": case_memory, "stat": case_stat, "resp3": case_resp3}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        raise SystemExit("usage: test-ops.py PATH-TO-SHMD %s" % "|".join(CASES))
    shmd, case = sys.argv[1], sys.argv[2]
    d = Shmd(shmd, "slowlog_log_slower_than = 0\nslowlog_max_len = 64")
    try:
        CASES[case](d)
    finally:
        d.stop()
    if case == "slowlog":
        case_slowlog_default(shmd)


if __name__ == "__main__":
    main()
