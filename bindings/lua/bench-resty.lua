-- bench-resty.lua - run by bench-resty.sh in nginx (content_by_lua_file):
-- resty.shmf's check against ngx.shared.DICT:get on the same keys, timed
-- inside Lua with clock_gettime through the FFI. Nothing is asserted.
--   ?op=fill&f=FILTER&n=N   "key:1".."key:N" into the filter FILTER and the
--                           lua_shared_dict of the same name
--   ?op=time&f=FILTER&present=P&absent=A&rounds=R
--                           "key:1".."key:P" then "miss:1".."miss:A", R
--                           rounds of each way, alternating; the medians
--   ?op=mem&f=FILTER        bytes each holds
local ffi = require "ffi"
local shmf = require "resty.shmf"

pcall(ffi.cdef, [[
struct bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct bench_timespec *ts);
]])
local ts = ffi.new("struct bench_timespec")
local function now_ns()
	ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
	return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local args = ngx.req.get_uri_args()
local name = args.f
local dict = ngx.shared[name]
local f = assert(shmf.open(name, { writable = true }))

-- "median M ns, best B ns" of a list of per-key times: on a shared VM the
-- best round is the one least disturbed by other work.
local function median(t)
	table.sort(t)
	return string.format("median %.1f ns, best %.1f ns", t[math.floor(#t / 2) + 1], t[1])
end

local function fill(n)
	local batch, t0 = {}, now_ns()
	for i = 1, n do
		local k = "key:" .. i
		batch[#batch + 1] = k
		local ok, err = dict:safe_set(k, true)
		if not ok then
			return ngx.say("dict full after ", i - 1, " keys: ", err)
		end
		if #batch == 10000 or i == n then
			assert(f:add_many(batch))
			batch = {}
		end
	end
	ngx.say("filled ", n, " keys in ", string.format("%.1f", (now_ns() - t0) / 1e9), " s")
end

local function shmf_round(keys, n)
	local hits, t0 = 0, now_ns()
	for i = 1, n do
		if f:check(keys[i]) then hits = hits + 1 end
	end
	return (now_ns() - t0) / n, hits
end

local function dict_round(keys, n)
	local hits, t0 = 0, now_ns()
	for i = 1, n do
		if dict:get(keys[i]) then hits = hits + 1 end
	end
	return (now_ns() - t0) / n, hits
end

-- The loop alone: each key fetched and its length read, no check: what
-- walking a table of 1M strings costs before any call.
local function loop_round(keys, n)
	local long, t0 = 0, now_ns()
	for i = 1, n do
		if #keys[i] > 20 then long = long + 1 end
	end
	return (now_ns() - t0) / n, long
end

local function time(present, absent, rounds)
	local keys, n = {}, present + absent
	for i = 1, present do keys[i] = "key:" .. i end
	for i = 1, absent do keys[present + i] = "miss:" .. i end
	local ts_shmf, ts_dict, ts_loop, h1, h2 = {}, {}, {}, 0, 0
	for r = 1, rounds do
		ts_shmf[r], h1 = shmf_round(keys, n)
		ts_dict[r], h2 = dict_round(keys, n)
		ts_loop[r] = loop_round(keys, n)
	end
	ngx.say(string.format("resty.shmf check: %s (%d rounds of %d keys; %d hits)",
		median(ts_shmf), rounds, n, h1))
	ngx.say(string.format("ngx.shared.DICT:get: %s (%d rounds of %d keys; %d hits)",
		median(ts_dict), rounds, n, h2))
	ngx.say(string.format("the loop alone (key fetched, no call): %s", median(ts_loop)))
end

local op = args.op
if op == "fill" then
	fill(tonumber(args.n))
elseif op == "time" then
	time(tonumber(args.present), tonumber(args.absent), tonumber(args.rounds or 5))
elseif op == "mem" then
	local i = assert(f:info())
	ngx.say(string.format("resty.shmf: %d bytes (%d items, capacity %d, error rate %g)",
		i.bytes, i.items, i.capacity, i.error_rate))
	ngx.say(string.format("lua_shared_dict: %d bytes used of %d (capacity - free_space)",
		dict:capacity() - dict:free_space(), dict:capacity()))
end
