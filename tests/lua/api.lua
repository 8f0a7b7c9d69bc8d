-- api.lua - resty.shmf's API, run by tests/test-lua-resty.sh api inside
-- nginx (content_by_lua_file). Filters made by the test: "bl" (Bloom,
-- capacity 200000, mode 0660), "cf" (cuckoo, mode 0660) and "st" (static,
-- st-1..st-1000 at 16-bit fingerprints, swapped over a Bloom filter of
-- mode 0660). One line per
-- check: "ok - what" or "not ok - what: what came back".
local shmf = require "resty.shmf"

local function say(ok, what, got)
	ngx.say(ok and "ok - " or "not ok - ", what, ok and "" or ": " .. tostring(got))
end
-- is(what, got, want): got == want.
local function is(what, got, want)
	say(got == want, what, tostring(got) .. " (wanted " .. tostring(want) .. ")")
end
-- err_like(what, pattern, v, err): v is nil and err holds the plain text.
local function err_like(what, text, v, err)
	say(v == nil and type(err) == "string" and err:find(text, 1, true) ~= nil, what,
		tostring(v) .. ", " .. tostring(err))
end
-- list(t): "true,false,..." of a table of booleans.
local function list(t)
	if type(t) ~= "table" then return tostring(t) end
	local s = {}
	for i = 1, #t do s[i] = tostring(t[i]) end
	return table.concat(s, ",")
end

-- open: bad arguments, missing filters, the worker's cache
err_like("open(42): the name must be a string", "the filter name must be a string, got number", shmf.open(42))
err_like("open(name, 5): options must be a table", "options must be a table, got number", shmf.open("bl", 5))
err_like("an unknown option is named", 'unknown option "writeable"', shmf.open("bl", { writeable = true }))
err_like("writable must be a boolean", "option writable must be a boolean, got string", shmf.open("bl", { writable = "yes" }))
err_like("instance must be a string", "option instance must be a string, got number", shmf.open("bl", { instance = 7 }))
err_like("an invalid name gets the library's reason", 'filter "../etc" of instance "default": cannot open: invalid name',
	shmf.open("../etc"))
err_like("a name with a NUL byte is refused", "a name holds a NUL byte", shmf.open("bl\0x"))
err_like("a missing filter", 'filter "nosuch" of instance "default": cannot open: no such filter or instance',
	shmf.open("nosuch"))
local _, _, code = shmf.open("nosuch")
is("the third value is the library's code", code, shmf.E_NOTFOUND)
err_like("a missing instance", 'filter "bl" of instance "nosuchinst": cannot open: no such filter',
	shmf.open("bl", { instance = "nosuchinst" }))
local ro = assert(shmf.open("bl"))
local rw = assert(shmf.open("bl", { writable = true }))
is("open() again gives the worker's same handle", shmf.open("bl"), ro)
is("the writable handle is another one", rw ~= ro, true)
is("instance = \"default\" opens the filter too", type(shmf.open("bl", { instance = "default" })), "table")

-- one key at a time
is("add of a new key: true", rw:add("k1"), true)
is("add of it again: false", rw:add("k1"), false)
is("check of an added key: true", ro:check("k1"), true)
is("check of another key: false", ro:check("k2"), false)
is("the empty key is a key", rw:add(""), true)
is("check of the empty key", ro:check(""), true)
is("a key with NUL bytes is all of its bytes", rw:add("a\0b"), true)
is("... and its prefix is another key", ro:check("a"), false)
err_like("add through a check-only handle", "add: write through a read-only handle", ro:add("k3"))
err_like("check(42)", 'filter "bl" of instance "default": check: the key must be a string, got number', ro:check(42))
err_like("check(nil)", "the key must be a string, got nil", ro:check(nil))
err_like("add({})", "add: the key must be a string, got table", rw:add({}))
err_like("add_unique(true)", "add_unique: the key must be a string, got boolean", rw:add_unique(true))
err_like("delete on a Bloom filter", "delete: the filter type does not support this operation", rw:delete("k1"))
err_like("count on a Bloom filter", "count: the filter type does not support", rw:count("k1"))
err_like("add_capped on a Bloom filter", "add_capped: the filter type does not support", rw:add_capped("k1", 2))

-- batches
is("check_many", list(ro:check_many({ "k1", "k2", "", "k1" })), "true,false,true,true")
is("check_many of no keys: an empty table", list(ro:check_many({})), "")
is("add_many: a repeat in the batch is new once", list(rw:add_many({ "b1", "b2", "b1", "k1" })), "true,true,false,false")
err_like("check_many of a string", "check_many: the keys must be a table (a list of strings), got string",
	ro:check_many("k1"))
err_like("check_many with a number at 2", "check_many: key 2 must be a string, got number", ro:check_many({ "k1", 5 }))
err_like("add_many with a table at 3", "add_many: key 3 must be a string, got table", rw:add_many({ "x1", "x2", {} }))
is("... and nothing of that batch was added", ro:check("x1"), false)
local big, want = {}, {}
for i = 1, 100000 do big[i] = "big:" .. i end
local added = rw:add_many(big)
is("add_many of 100,000 keys (past the reused buffer): an answer each", added and #added, 100000)
local new = 0
for i = 1, #added do if added[i] then new = new + 1 end end
say(new > 99000, "... nearly all new (the rest false positives of a 1% filter)", new)
local seen = ro:check_many(big)
local hits = 0
for i = 1, #seen do if seen[i] then hits = hits + 1 end end
is("check_many finds all 100,000", hits, 100000)

-- info
local i = rw:info()
is("info: name", i and i.name, "bl")
is("info: type", i and i.type, "bloom")
is("info: capacity", i and i.capacity, 200000)
is("info: error_rate", i and i.error_rate, 0.01)
is("info: items counts the keys added as new", i and i.items, new + 5)
is("info: writable", i and i.writable, true)
is("info: lines a key (one at 1%)", i and i.lines, 1)
is("info: bytes is a number", i and type(i.bytes), "number")
is("info: no cuckoo fields", i and i.buckets, nil)

-- cuckoo
local cf = assert(shmf.open("cf", { writable = true }))
is("cuckoo add", cf:add("c"), true)
is("cuckoo add again stores a copy", cf:add("c"), true)
is("count: 2", cf:count("c"), 2)
is("delete: true", cf:delete("c"), true)
is("count: 1", cf:count("c"), 1)
is("delete of an absent key: false", cf:delete("never"), false)
is("add_unique of a present key: false", cf:add_unique("c"), false)
is("add_unique of a new key: true", cf:add_unique("d"), true)
local a, before = cf:add_capped("cap", 2)
is("add_capped below the cap: added, 0 before", tostring(a) .. "," .. tostring(before), "true,0")
a, before = cf:add_capped("cap", 2)
is("add_capped again: added, 1 before", tostring(a) .. "," .. tostring(before), "true,1")
a, before = cf:add_capped("cap", 2)
is("add_capped at the cap: not added, 2 before", tostring(a) .. "," .. tostring(before), "false,2")
is("count after the capped adds", cf:count("cap"), 2)
err_like("a negative cap", "add_capped: the cap must be a whole number from 0 to 4294967295, got -1",
	cf:add_capped("cap", -1))
err_like("a fractional cap", "the cap must be a whole number from 0 to 4294967295, got 1.5", cf:add_capped("cap", 1.5))
err_like("a string cap", "the cap must be a whole number", cf:add_capped("cap", "2"))
err_like("a cap of 2^32", "the cap must be a whole number", cf:add_capped("cap", 2 ^ 32))
err_like("a NaN cap", "the cap must be a whole number", cf:add_capped("cap", 0 / 0))
err_like("add_capped of a number key", "add_capped: the key must be a string, got number", cf:add_capped(5, 2))
is("count after the refused calls: unchanged", cf:count("cap"), 2)
is("cuckoo add_many", list(cf:add_many({ "m1", "m2" })), "true,true")
is("cuckoo check_many", list(cf:check_many({ "m1", "m2", "never" })), "true,true,false")
local ci = cf:info()
is("cuckoo info: type", ci and ci.type, "cuckoo")
is("cuckoo info: deletes", ci and ci.deletes, 1)
is("cuckoo info: bucket_size is a number", ci and type(ci.bucket_size), "number")

-- a static filter: checks answer the set; adds answer E_STATIC, never a Lua error
local st = assert(shmf.open("st", { writable = true }))
is("static: a key of the set", st:check("st-1"), true)
is("static: check_many of the set", list(st:check_many({ "st-2", "st-999", "st-1000", "not-in-it" })),
	"true,true,true,false")
local v, err, code = st:add("st-new")
err_like("static: add answers the library's reason", 'filter "st" of instance "default": add: ', v, err)
say(type(err) == "string" and err:find("static") ~= nil, "static: the reason names the static type", err)
is("static: add's code is shmf.E_STATIC", code, shmf.E_STATIC)
is("static: shmf.E_STATIC is shmf.h's -5019", shmf.E_STATIC, -5019)
v, err, code = st:add_many({ "st-new", "st-newer" })
is("static: add_many's code is shmf.E_STATIC", code, shmf.E_STATIC)
v, err, code = st:add_unique("st-new")
is("static: add_unique's code is shmf.E_STATIC", code, shmf.E_STATIC)
is("static: a refused key is absent", st:check("st-new"), false)
local si = st:info()
is("static info: type", si and si.type, "static")
is("static info: fingerprint_bits", si and si.fingerprint_bits, 16)
is("static info: capacity, the set's keys", si and si.capacity, 1000)
is("static info: whole segments", si and si.fingerprints % si.segment_length, 0)

-- close
is("close: true", rw:close(), true)
err_like("check on a closed handle", 'filter "bl" of instance "default": check: the handle is closed', rw:check("k1"))
err_like("add_many on a closed handle", "add_many: the handle is closed", rw:add_many({ "k1" }))
err_like("info on a closed handle", "info: the handle is closed", rw:info())
err_like("add_capped on a closed handle", "add_capped: the handle is closed", rw:add_capped("k1", 1))
is("close again: harmless", rw:close(), true)
local rw2 = shmf.open("bl", { writable = true })
is("open after close: a new handle", rw2 ~= nil and rw2 ~= rw, true)
is("... that works", rw2 and rw2:check("k1"), true)
is("the check-only handle was not closed", ro:check("k1"), true)
collectgarbage()
collectgarbage()
is("handles survive a full garbage collection", ro:check("k1"), true)
ngx.say("done")
