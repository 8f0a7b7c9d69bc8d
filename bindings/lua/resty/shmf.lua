-- resty.shmf - shmfilter's Bloom and cuckoo filters for OpenResty: LuaJIT's
-- FFI over libshmf (shmf.h), so a check is a call into C with no socket,
-- no system call and no lock, from access_by_lua*, content_by_lua*,
-- init_worker_by_lua* or any other phase.
--
--   local shmf = require "resty.shmf"
--   local f, err = shmf.open("blocklist")                  -- check-only
--   local f, err = shmf.open("clicks", {writable = true, instance = "edge"})
--   f:check(key)  f:add(key)  f:add_unique(key)            -- true / false
--   f:check_many(keys)  f:add_many(keys)                   -- tables of booleans
--   f:delete(key)  f:count(key)  f:add_capped(key, cap)    -- cuckoo
--   f:info()  f:close()
--
-- Every call returns nil and a message (shmf_strerror's text, naming the
-- filter) on failure, and never raises: a key that is not a string, a cap
-- that is not a whole number from 0 to 2^32-1, a closed handle, a filter
-- that is missing or dropped.
--
-- Handles: shmf.open() gives the worker's one handle for an instance,
-- filter and mode: the first call opens it, later calls (from any request)
-- return the same handle. It follows swaps, rotations and new layers by
-- itself (libshmf remaps on the next call). A filter that cannot be opened
-- is tried again once a second at most; until then open() answers the last
-- error at the cost of a table lookup. A handle whose filter was dropped
-- answers that error, then opens the filter again (once a second at most)
-- when it is created anew. f:close() closes the handle for the whole
-- worker; the next open() opens a new one.
--
-- libshmf is loaded by its soname, libshmf.so.1 (the soversion of
-- libclient/meson.build: the structs declared below are that version's).
-- Require the module in init_by_lua* so that nginx's master loads it once,
-- before forking its workers.

local ffi = require "ffi"
local ffi_string, ffi_new, ffi_gc = ffi.string, ffi.new, ffi.gc
local type, tostring, pairs, setmetatable = type, tostring, pairs, setmetatable
local floor = math.floor
local format = string.format

local ok_new_tab, new_tab = pcall(require, "table.new")
if not ok_new_tab then
	new_tab = function() return {} end
end

local _M = { _VERSION = "0.1.0" }

local SONAME = "libshmf.so.1"

ffi.cdef [[
typedef struct shmf shmf_t;
typedef struct { const char *ptr; size_t len; } shmf_key_t;
typedef struct {
	char name[64];
	int type;
	uint32_t k;
	uint64_t capacity;
	double fpr_target;
	uint64_t bits;
	uint64_t bytes;
	uint64_t items;
	double fill_ratio;
	double fpr_estimate;
	uint64_t generation;
	uint64_t buckets;
	uint32_t fingerprint_bits;
	uint32_t max_kicks;
	uint64_t relocations;
	uint64_t deletes;
	uint64_t window_secs;
	uint32_t window_generations;
	uint32_t live_generations;
	uint64_t items_live;
	uint32_t bucket_size;
	uint32_t lines;
} shmf_info_t;
int shmf_open(const char *instance, const char *filter, int flags, shmf_t **out);
void shmf_close(shmf_t *f);
int shmf_check(shmf_t *f, const char *key, size_t len);
int shmf_add(shmf_t *f, const char *key, size_t len);
int shmf_add_unique(shmf_t *f, const char *key, size_t len);
int shmf_add_capped(shmf_t *f, const char *key, size_t len, unsigned cap);
int shmf_del(shmf_t *f, const char *key, size_t len);
int shmf_count(shmf_t *f, const char *key, size_t len);
int shmf_check_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out);
int shmf_add_many(shmf_t *f, const shmf_key_t *keys, size_t n, uint8_t *out);
int shmf_info(shmf_t *f, shmf_info_t *out);
const char *shmf_strerror(int err);
const char *shmf_error_detail(void);
]]

-- shmf.h's codes, for callers that tell errors apart (the third value).
_M.E_NOTFOUND, _M.E_READONLY, _M.E_TYPE, _M.E_FULL = -5001, -5006, -5007, -5008
_M.E_INVAL, _M.E_NAME, _M.E_DROPPED, _M.E_BUSY = -5009, -5010, -5013, -5016
_M.E_NONSCALING, _M.E_IMPORTED, _M.E_STATIC = -5017, -5018, -5019
local E_DROPPED, E_INVAL = _M.E_DROPPED, _M.E_INVAL
local EACCES, EPERM = -13, -1
local RDONLY, RDWR = 0, 1
local RETRY_SECONDS = 1

local lib, load_err
do
	local ok, l = pcall(ffi.load, SONAME)
	if ok then
		lib = l
	else
		load_err = "cannot load " .. SONAME .. ": " .. tostring(l)
	end
end

local now = ngx and ngx.now or os.time

local handles = {} -- "instance\0filter\0flags" -> the worker's handle
local failures = {} -- the same key -> { retry_at, err } of a failed open

local Filter = {}
Filter.__index = Filter

local function where(self)
	return format('filter "%s" of instance "%s"', self.name, self.instance or "default")
end

-- The message for code rc of call `what`; -EACCES and -EPERM carry
-- libshmf's detail (the file refused, its owner and mode, what to change).
local function message(self, what, rc)
	local msg = where(self) .. ": " .. what .. ": " .. ffi_string(lib.shmf_strerror(rc))
	if rc == EACCES or rc == EPERM then
		local detail = ffi_string(lib.shmf_error_detail())
		if detail ~= "" then
			msg = msg .. ": " .. detail
		end
	end
	return msg
end

local function close_c(self)
	local h = self.h
	if h ~= nil then
		self.h = nil
		ffi_gc(h, nil)
		lib.shmf_close(h)
	end
end

-- A failed call: nil, the message, the code. A dropped filter's handle is
-- closed; the next call opens the filter again if it exists by then.
local function fail(self, what, rc)
	local msg = message(self, what, rc)
	if rc == E_DROPPED then
		close_c(self)
		self.retry_at, self.err = now() + RETRY_SECONDS, msg
	end
	return nil, msg, rc
end

local function bad(self, what, text)
	return nil, where(self) .. ": " .. what .. ": " .. text, E_INVAL
end

-- shmf_open into a new handle; h is nil with the message on failure.
local function open_c(self)
	local out = ffi_new("shmf_t *[1]")
	local rc = lib.shmf_open(self.instance, self.name, self.flags, out)
	if rc < 0 then
		return nil, message(self, "cannot open", rc), rc
	end
	self.h = ffi_gc(out[0], lib.shmf_close)
	return self.h
end

-- The C handle of a handle whose filter was dropped or that was closed.
local function revive(self, what)
	if self.closed then
		return nil, where(self) .. ": " .. what .. ": the handle is closed", E_INVAL
	end
	if now() < self.retry_at then
		return nil, self.err, E_DROPPED
	end
	local h, err, rc = open_c(self)
	if not h then
		self.retry_at, self.err = now() + RETRY_SECONDS, err
	end
	return h, err, rc
end

-- The handle, opened again if it was dropped: h, or nil, message, code.
local function handle(self, what)
	local h = self.h
	if h ~= nil then
		return h
	end
	return revive(self, what)
end

local function check_options(opts)
	if opts == nil then
		return false, nil
	end
	if type(opts) ~= "table" then
		return nil, nil, "options must be a table, got " .. type(opts)
	end
	for k in pairs(opts) do
		if k ~= "writable" and k ~= "instance" then
			return nil, nil, 'unknown option "' .. tostring(k) .. '" (expected writable, instance)'
		end
	end
	local w, inst = opts.writable, opts.instance
	if w ~= nil and type(w) ~= "boolean" then
		return nil, nil, "option writable must be a boolean, got " .. type(w)
	end
	if inst ~= nil and type(inst) ~= "string" then
		return nil, nil, "option instance must be a string, got " .. type(inst)
	end
	return w == true, inst
end

--- shmf.open(name [, {writable = bool, instance = name}]): the worker's
-- handle for the filter, or nil, message, code.
function _M.open(name, opts)
	if type(name) ~= "string" then
		return nil, "shmf.open: the filter name must be a string, got " .. type(name), E_INVAL
	end
	local writable, instance, err = check_options(opts)
	if writable == nil then
		return nil, format("shmf.open(%q): %s", name, err), E_INVAL
	end
	if name:find("\0", 1, true) or (instance and instance:find("\0", 1, true)) then
		return nil, format("shmf.open(%q): a name holds a NUL byte", name), _M.E_NAME
	end
	if not lib then
		return nil, load_err, E_INVAL
	end
	local flags = writable and RDWR or RDONLY
	local id = (instance or "") .. "\0" .. name .. "\0" .. flags
	local f = handles[id]
	if f then
		return f
	end
	local failed = failures[id]
	if failed and now() < failed[1] then
		return nil, failed[2], failed[3]
	end
	f = setmetatable({ name = name, instance = instance, flags = flags, writable = writable,
		id = id, closed = false, retry_at = 0 }, Filter)
	local h, msg, rc = open_c(f)
	if not h then
		failures[id] = { now() + RETRY_SECONDS, msg, rc }
		return nil, msg, rc
	end
	failures[id] = nil
	handles[id] = f
	return f
end

--- f:close(): closes the worker's handle; later calls on it answer nil,
-- "the handle is closed". Closing twice is harmless.
function Filter:close()
	close_c(self)
	self.closed = true
	if handles[self.id] == self then
		handles[self.id] = nil
	end
	return true
end

-- One key in, one int out: check, add, add_unique, delete, count.
local function key_call(fn, what, to_result)
	local cfn = lib and lib[fn]
	return function(self, key)
		local h, err, rc = handle(self, what)
		if not h then
			return nil, err, rc
		end
		if type(key) ~= "string" then
			return bad(self, what, "the key must be a string, got " .. type(key))
		end
		local rc = cfn(h, key, #key)
		if rc < 0 then
			return fail(self, what, rc)
		end
		return to_result(rc)
	end
end

local function is_one(rc) return rc == 1 end
local function as_number(rc) return rc end

--- f:check(key): true if the key may be in the filter, false if not.
Filter.check = key_call("shmf_check", "check", is_one)
--- f:add(key): true if the key was new (Bloom); cuckoo: true, a copy stored.
Filter.add = key_call("shmf_add", "add", is_one)
--- f:add_unique(key): true if added, false if it was (may have been) there.
Filter.add_unique = key_call("shmf_add_unique", "add_unique", is_one)
--- f:delete(key): cuckoo: true if a copy was removed.
Filter.delete = key_call("shmf_del", "delete", is_one)
--- f:count(key): cuckoo: copies of the key's fingerprint present.
Filter.count = key_call("shmf_count", "count", as_number)

--- f:add_capped(key, cap): cuckoo: adds a copy only if fewer than cap are
-- present, atomically across processes. Returns added (boolean) and the
-- copies present before the call.
function Filter:add_capped(key, cap)
	local h, err, rc = handle(self, "add_capped")
	if not h then
		return nil, err, rc
	end
	if type(key) ~= "string" then
		return bad(self, "add_capped", "the key must be a string, got " .. type(key))
	end
	if type(cap) ~= "number" or cap < 0 or cap > 4294967295 or cap ~= floor(cap) then
		return bad(self, "add_capped", "the cap must be a whole number from 0 to 4294967295, got " .. tostring(cap))
	end
	local rc = lib.shmf_add_capped(h, key, #key, cap)
	if rc < 0 then
		return fail(self, "add_capped", rc)
	end
	return rc < cap, rc
end

-- The batch buffers, reused by every batch of up to BUF_KEEP keys (one Lua
-- state per worker, and a batch call never yields); larger batches get
-- their own, left to the garbage collector.
local BUF_KEEP = 65536
local kbuf, obuf, bufn = nil, nil, 0

local function buffers(n)
	if n > BUF_KEEP then
		return ffi_new("shmf_key_t[?]", n), ffi_new("uint8_t[?]", n)
	end
	if n > bufn then
		bufn = 64
		while bufn < n do
			bufn = bufn * 2
		end
		kbuf, obuf = ffi_new("shmf_key_t[?]", bufn), ffi_new("uint8_t[?]", bufn)
	end
	return kbuf, obuf
end

-- A table of keys in, a table of booleans out: check_many, add_many. The
-- keys stay referenced by the caller's table while C reads them.
local function batch_call(fn, what)
	local cfn = lib and lib[fn]
	return function(self, keys)
		local h, err, rc = handle(self, what)
		if not h then
			return nil, err, rc
		end
		if type(keys) ~= "table" then
			return bad(self, what, "the keys must be a table (a list of strings), got " .. type(keys))
		end
		local n = #keys
		local kb, ob = buffers(n)
		for i = 1, n do
			local k = keys[i]
			if type(k) ~= "string" then
				return bad(self, what, format("key %d must be a string, got %s", i, type(k)))
			end
			kb[i - 1].ptr, kb[i - 1].len = k, #k
		end
		local rc = n > 0 and cfn(h, kb, n, ob) or 0
		if rc < 0 then
			return fail(self, what, rc)
		end
		local out = new_tab(n, 0)
		for i = 1, n do
			out[i] = ob[i - 1] ~= 0
		end
		return out
	end
end

--- f:check_many(keys): {true|false, ...}, one answer per key of the list.
Filter.check_many = batch_call("shmf_check_many", "check_many")
--- f:add_many(keys): {true|false, ...}: which keys were new (stored).
Filter.add_many = batch_call("shmf_add_many", "add_many")

local function info_table(self, i)
	local cuckoo, static = i.type == 2, i.type == 3
	local t = {
		name = ffi_string(i.name), type = cuckoo and "cuckoo" or static and "static" or "bloom", k = i.k,
		capacity = tonumber(i.capacity), error_rate = i.fpr_target, bits = tonumber(i.bits),
		bytes = tonumber(i.bytes), items = tonumber(i.items), fill_ratio = i.fill_ratio,
		fpr_estimate = i.fpr_estimate, generation = tonumber(i.generation),
		live_generations = i.live_generations, items_live = tonumber(i.items_live),
		writable = self.writable,
	}
	if i.window_secs > 0 then
		t.window_secs, t.window_generations = tonumber(i.window_secs), i.window_generations
	end
	if not cuckoo and not static and i.lines > 0 then
		t.lines = i.lines
	end
	if static then
		t.fingerprints, t.segment_length = tonumber(i.buckets), i.bucket_size
		t.fingerprint_bits = i.fingerprint_bits
	end
	if cuckoo then
		t.buckets, t.bucket_size = tonumber(i.buckets), i.bucket_size
		t.fingerprint_bits, t.max_kicks = i.fingerprint_bits, i.max_kicks
		t.relocations, t.deletes = tonumber(i.relocations), tonumber(i.deletes)
	end
	return t
end

--- f:info(): a table: name, type ("bloom", "cuckoo" or "static"), k,
-- capacity, error_rate, bits, bytes, items, fill_ratio, fpr_estimate,
-- generation, live_generations, items_live, writable; windowed filters add
-- window_secs and window_generations; cuckoo filters buckets, bucket_size,
-- fingerprint_bits, max_kicks, relocations and deletes; static filters
-- fingerprints, segment_length and fingerprint_bits.
function Filter:info()
	local h, err, rc = handle(self, "info")
	if not h then
		return nil, err, rc
	end
	local i = ffi_new("shmf_info_t")
	local rc = lib.shmf_info(h, i)
	if rc < 0 then
		return fail(self, "info", rc)
	end
	return info_table(self, i)
end

return _M
