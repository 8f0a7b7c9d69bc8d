"""redis-py.py PORT PASSWORD SCRIPT MAXCLIENTS MAX_REQUEST

redis-py (Debian's python3-redis) against shmd over TCP, as an application
that used RedisBloom would use it: AUTH through the connection's password,
the shared script on a raw connection, the library's own BF/CF API
(r.bf(), r.cf()), a pipeline, the connection verbs it wraps, and the
limits as redis-py reports them. Run by tests/test-tcp-clients.sh.
"""
import os
import socket
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script import Checks, Error  # noqa: E402

port, password, script = int(sys.argv[1]), sys.argv[2], sys.argv[3]
maxclients, max_request = int(sys.argv[4]), int(sys.argv[5])
c = Checks(f"redis-py {redis.__version__}")


def connect(**kw):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kw)


def raises(exc, words, fn, what):
    try:
        got = fn()
    except exc as e:
        c.check(words in str(e), f"{what}: {type(e).__name__} '{e}' lacks '{words}'")
        return
    except Exception as e:  # the wrong kind
        c.check(False, f"{what}: {type(e).__name__} '{e}', want {exc.__name__} with '{words}'")
        return
    c.check(False, f"{what}: no error (got {got!r}), want {exc.__name__} with '{words}'")


# --- AUTH: required, refused, accepted. ------------------------------------
raises(redis.exceptions.AuthenticationError, "Authentication required",
       lambda: connect().execute_command("BF.EXISTS", "sb", "x"), "no password")
raises(redis.exceptions.ResponseError, "WRONGPASS", lambda: connect(password="wrong").ping(), "wrong password")
raises(redis.exceptions.ResponseError, "WRONGPASS",
       lambda: connect(username="admin", password=password).ping(), "another user")
c.check(connect(password=password).ping() is True, "PING with the password")
c.check(connect(username="default", password=password).ping() is True, "PING as user default")
r = connect(password=password, client_name="redis-py-test")

# --- The shared script, replies as they come off the wire. -----------------
conn = r.connection_pool.get_connection("script")


def norm(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, redis.exceptions.ResponseError):
        return Error(str(v))
    return v


def execute(args):
    conn.send_command(*args)
    try:
        return norm(conn.read_response())
    except redis.exceptions.ResponseError as e:
        return Error(str(e))


# redis-py hands status replies and bulk strings over alike.
c.run_script(script, execute, strict_status=False)
r.connection_pool.release(conn)

# --- The library's own Bloom and cuckoo API (redis.commands.bf). -----------
bf, cf = r.bf(), r.cf()
c.check(bf.create("py-bf", 0.01, 1000, noScale=True) is True, "bf().create")
c.check(bf.add("py-bf", "a") == 1, "bf().add new")
c.check(bf.add("py-bf", "a") == 0, "bf().add again")
c.check(bf.madd("py-bf", "a", "b", "c") == [0, 1, 1], "bf().madd")
c.check(bf.exists("py-bf", "b") == 1 and bf.exists("py-bf", "zz") == 0, "bf().exists")
c.check(bf.mexists("py-bf", "a", "zz", "c") == [1, 0, 1], "bf().mexists")
c.check(bf.insert("py-bf2", ["x", "y"], capacity=200, error=0.001, noScale=True) == [1, 1], "bf().insert creates")
c.check(bf.insert("py-bf2", ["y", "z"], noCreate=True) == [0, 1], "bf().insert NOCREATE")
raises(redis.exceptions.ResponseError, "not found", lambda: bf.insert("py-none", ["x"], noCreate=True),
       "bf().insert NOCREATE of a missing filter")
c.check(bf.insert("py-grow", ["x"], expansion=4) == [1], "bf().insert EXPANSION creates a growing filter")
c.check(bf.info("py-grow").expansionRate == 4, "bf().info of a filter growing by 4")
# NONSCALING (noScale): no expansion rate, nil as RedisBloom answers it.
info = bf.info("py-bf")
c.check((info.capacity, info.filterNum, info.insertedNum, info.expansionRate) == (1000, 1, 3, None),
        f"bf().info: {vars(info)}")
c.check(bf.info("py-bf2").capacity == 200, "bf().info of the inserted filter")
c.check(cf.create("py-cf", 1000, bucket_size=4, max_iterations=50) is True, "cf().create")
c.check(cf.add("py-cf", "a") == 1 and cf.add("py-cf", "a") == 1, "cf().add twice")
c.check(cf.count("py-cf", "a") == 2, "cf().count")
c.check(cf.addnx("py-cf", "a") == 0 and cf.addnx("py-cf", "b") == 1, "cf().addnx")
c.check(cf.exists("py-cf", "b") == 1 and cf.exists("py-cf", "zz") == 0, "cf().exists")
c.check(cf.mexists("py-cf", "a", "zz") == [1, 0], "cf().mexists")
c.check(cf.delete("py-cf", "a") == 1 and cf.count("py-cf", "a") == 1, "cf().delete")
c.check(cf.insert("py-cf", ["c", "d"]) == [1, 1], "cf().insert")
c.check(cf.insertnx("py-cf", ["c", "e"]) == [0, 1], "cf().insertnx")
ci = cf.info("py-cf")
# RedisBloom's "Number of items inserted" counts what the filter holds: 6 adds, 1 delete.
c.check((ci.insertedNum, ci.deletedNum, ci.bucketSize, ci.maxIteration) == (5, 1, 4, 50), f"cf().info: {vars(ci)}")
raises(redis.exceptions.ResponseError, "WRONGTYPE", lambda: bf.add("py-cf", "x"), "bf().add on a cuckoo filter")

# --- A pipeline: 2,000 commands in one round trip, in order, into a filter
# of 100 keys that grows (100, 200, 400, 800: four layers hold them). -------
c.check(bf.create("py-pipe", 0.001, 100, expansion=2) is True, "bf().create with expansion")
p = r.pipeline(transaction=False)
for i in range(1000):
    p.execute_command("BF.ADD", "py-pipe", f"pipe-{i}")
    p.execute_command("BF.EXISTS", "py-pipe", f"pipe-{i}")
res = p.execute()
c.check(len(res) == 2000 and all(x == 1 for x in res[1::2]), "pipeline: every key found right after its add")
c.check(sum(res[0::2]) >= 990, f"pipeline: {sum(res[0::2])} of 1000 fresh keys reported new")
c.check(r.execute_command("BF.CARD", "py-pipe") == sum(res[0::2]), "BF.CARD after the pipeline")
# A NONSCALING filter of 1000 keys holding 3 takes 997 new ones more (keys
# it answers 0 for, false positives, do not count), then refuses.
p = r.pipeline(transaction=False)
for i in range(1100):
    p.execute_command("BF.ADD", "py-bf", f"pipe-{i}")
res = p.execute(raise_on_error=False)
refused = [x for x in res if isinstance(x, redis.exceptions.ResponseError)]
c.check(len(refused) >= 1 and all("non scaling filter is full" in str(x) for x in refused),
        f"pipeline into a NONSCALING filter: {len(refused)} refused")
c.check(r.execute_command("BF.CARD", "py-bf") == 1000, "a NONSCALING filter holds exactly its capacity")

# --- The connection verbs redis-py wraps. ----------------------------------
c.check(r.client_getname() == "redis-py-test", "client_name= sent CLIENT SETNAME")
c.check(r.client_setname("renamed") is True and r.client_getname() == "renamed", "client_setname")
c.check(isinstance(r.client_id(), int) and r.client_id() > 0, "client_id")
c.check(r.echo("hi") == b"hi", "echo")
c.check(r.info()["redis_version"] == "7.0.0", "info()['redis_version']")
c.check(r.info("keyspace")["db0"]["keys"] == 10, f"info('keyspace'): {r.info('keyspace')}")
cmds = r.command()
c.check(r.command_count() == len(cmds) >= 36, "COMMAND COUNT and COMMAND agree")
c.check(cmds["bf.add"]["arity"] == 3 and cmds["bf.mexists"]["arity"] == -3 and cmds["bf.add"]["first_key_pos"] == 1,
        f"COMMAND parsed by redis-py: {cmds.get('bf.add')}")
c.check(connect(password=password, db=0).ping() is True, "db=0 (SELECT 0)")
raises(redis.exceptions.ResponseError, "DB index is out of range", lambda: connect(password=password, db=1).ping(),
       "db=1 (SELECT 1)")

# --- Limits as redis-py reports them. --------------------------------------
raises(redis.exceptions.ResponseError, f"request larger than {max_request // 1024} KiB",
       lambda: r.execute_command("BF.MADD", "py-bf", *["k" * 1000 + str(i) for i in range(max_request // 1000 + 2)]),
       "a request over max_request")
# shmd answers a request over the limit and then closes the connection (as
# Redis does after a protocol error); the pooled connection may not know it
# yet when the next command goes out, so drop it here: whether redis-py
# notices the close in time is a race, not part of what is tested.
r.connection_pool.disconnect()
# A Bloom filter answers an absent key "present" now and then (1%): of 50
# of the refused request's keys, applied would be all 50, refused a few.
hits = sum(r.execute_command("BF.MEXISTS", "py-bf", *["k" * 1000 + str(i) for i in range(50)]))
c.check(hits < 10, f"the refused request added nothing ({hits} of 50 of its keys answer present)")
c.check(r.ping() is True, "the pool reconnects after the refused request")
# Fill every connection slot (r's pooled one is one of them) with raw sockets.
held = []
while True:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    reply = s.recv(200)
    held.append(s)
    if b"max number of clients reached" in reply:
        break
    if len(held) > maxclients + 2:
        break
c.check(len(held) <= maxclients, f"the limit took {len(held)} connections, maxclients is {maxclients}")
raises(redis.exceptions.ConnectionError, "max number of clients reached", lambda: connect(password=password).ping(),
       "a client past maxclients")
for s in held:
    s.close()
c.check(r.execute_command("BF.EXISTS", "py-bf", "a") == 1, "a connected client is served throughout")
c.done()
