#!/bin/bash
# compare-replies.sh OLD_SHMD NEW_SHMD - for refactorings: proves that two
# shmd binaries answer the same requests byte for byte. Starts each binary
# in a fresh temporary instance (under /dev/shm, never /run) with the same
# configuration (two configured filters, a windowed one, TCP users, a TCP
# listener on a free 127.0.0.1 port with a password), one after the other,
# and sends both the same corpus, in the same order, over the unix socket
# and over TCP, recording the raw reply bytes of every request:
#  - generated: every verb of shmd/verbs/verbs.c with valid arguments, wrong
#    arity, bad arguments, unknown and invalid filter names, each in
#    RESP2 and RESP3 (HELLO 3); Bloom and cuckoo filters reserved, added
#    to (past capacity: layers, NONSCALING, a full cuckoo filter),
#    checked, INFO'd, dumped and loaded back (BF/CF.SCANDUMP and LOADCHUNK
#    chains), snapshotted, swapped, merged, expired and dropped; the
#    keyspace verbs; MULTI/EXEC/DISCARD; pipelining; AUTH, roles and
#    NOAUTH over TCP; protocol errors;
#  - the request seeds of tests/fuzz/corpus/request, sent raw (without the
#    first byte, which fuzz-request.c takes as its piece size), each on a
#    fresh connection: over the unix socket, over TCP before AUTH, and
#    over TCP after AUTH.
# Then it compares the replies after the normalisation rules below (and
# only where the raw bytes differ), prints each difference with its
# request and both replies (escaped), and a summary line.
#
# Both daemons run with an LD_PRELOAD shim (built here with ${CC:-cc}) that
# makes arc4random_buf() a fixed sequence: a filter's hash seed, the one
# random thing shmd draws, is then the same on both sides instead of being
# normalised, and so are the false positives, the cuckoo placements, the
# dump iterators and the dump bytes, which are compared, not masked.
#
# Normalisation rules: what legitimately differs between two runs. Used
# only where the raw bytes differ; applied to each string in the reply,
# whose RESP lengths are then recomputed (bytes that do not parse as RESP
# get the text rules as they are). The summary line says how often each
# rule was applied.
#   temp dir     the side's temporary directory          -> <TMP>
#   pid          INFO process_id:N                       -> process_id:<pid>
#   uptime       INFO uptime_in_seconds:N, uptime_in_days:N -> ...:<uptime>
#   memory       INFO mem_clients_normal:N               -> ...:<bytes>
#   tcp port     INFO tcp_port:N                         -> tcp_port:<port>
#   client port  127.0.0.1:N anywhere (CLIENT INFO addr=, NOPERM's "from")
#                                                         -> 127.0.0.1:<port>
#   gen age      SHMF.INFO generations "G:Ns:I"          -> "G:<age>s:I"
#   time         the reply to TIME                       -> [<time>, <time>]
#   ttl          a positive reply to TTL or PTTL         -> :<ttl>
#   dump times   in a SCANDUMP header chunk (SHMFCHNK, kind 1): the
#                snapshot header's created and snapshot_taken, each section
#                header's created, and the chunk, header and section
#                checksums that cover them               -> ~~~~~~~~
# Requests are shown with the temp dir rule applied. A reply is known by
# its connection and its place there ("u3/bloom #12": unix socket, RESP3,
# the Bloom session, 13th request); when the two runs take different
# paths (a dump of another length), a request only one side sent differs.
#
# Exits 0 when every reply is the same, 1 when any differs (or the two
# daemons exited differently on SIGTERM), 2 on a usage or setup error.
# Takes about 5 seconds. Not run by meson test.
set -u

usage()
{
	echo "usage: $0 OLD_SHMD NEW_SHMD" >&2
	exit 2
}
[[ $# -eq 2 ]] || usage
for arg in "$1" "$2"; do
	if [[ ! -f $arg || ! -x $arg ]]; then
		echo "$0: $arg: not an executable" >&2
		exit 2
	fi
done
old=$(realpath "$1")
new=$(realpath "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
verbs_c=$src/shmd/verbs/verbs.c
seeds=$src/tests/fuzz/corpus/request
[[ -r $verbs_c && -d $seeds ]] || { echo "$0: $verbs_c or $seeds missing" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: python3 is needed" >&2; exit 2; }

base=/dev/shm
[[ -d $base && -w $base ]] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/compare-replies.XXXXXX") || exit 2
pid=
# shellcheck disable=SC2317 # run by the trap
cleanup()
{
	if [[ -n $pid ]]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

# The shim: arc4random and friends as splitmix64 from a fixed state.
cat >"$tmp/seeds.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>

static uint64_t state = 0x5eed5eed5eed5eedULL;

static uint64_t next(void)
{
	uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void arc4random_buf(void *buf, size_t n)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = next();
		for (size_t j = 0; j < 8 && i + j < n; j++)
			p[i + j] = (unsigned char)(v >> (8 * j));
	}
}

uint32_t arc4random(void)
{
	return (uint32_t)next();
}

uint32_t arc4random_uniform(uint32_t bound)
{
	return bound ? (uint32_t)(next() % bound) : 0;
}
EOF
if ! "${CC:-cc}" -shared -fPIC -O2 -o "$tmp/seeds.so" "$tmp/seeds.c"; then
	echo "$0: cannot build the seed shim with ${CC:-cc}" >&2
	exit 2
fi

# The driver (runs the corpus) and the comparison, in Python with raw sockets.
cat >"$tmp/compare.py" <<'EOF'
import os, pickle, re, socket, struct, sys, time

# ---- RESP ------------------------------------------------------------------

class Incomplete(Exception):
	pass

LINE_TYPES = b'+-:_#,('
BULK_TYPES = b'$!='
AGG_TYPES = b'*~>%|'

def parse(buf, pos):
	"""One RESP2/RESP3 value at pos: (value, end). Raises Incomplete or
	ValueError. A value is (type byte, payload): bytes for lines and bulk
	strings (None for a null), a list for aggregates."""
	if pos >= len(buf):
		raise Incomplete()
	t = buf[pos]
	eol = buf.find(b'\r\n', pos)
	if eol < 0:
		raise Incomplete()
	line = buf[pos + 1:eol]
	if t in LINE_TYPES:
		return (t, line), eol + 2
	n = int(line)
	if t in BULK_TYPES:
		if n < 0:
			return (t, None), eol + 2
		end = eol + 2 + n
		if len(buf) < end + 2:
			raise Incomplete()
		if buf[end:end + 2] != b'\r\n':
			raise ValueError('bulk string not ended by CRLF')
		return (t, buf[eol + 2:end]), end + 2
	if t in AGG_TYPES:
		if n < 0:
			return (t, None), eol + 2
		items, at = [], eol + 2
		for _ in range(n * 2 if t in b'%|' else n):
			v, at = parse(buf, at)
			items.append(v)
		return (t, items), at
	raise ValueError('type byte %r' % bytes([t]))

def serialise(v):
	t, p = v
	if t in LINE_TYPES:
		return bytes([t]) + p + b'\r\n'
	if p is None:
		return bytes([t]) + b'-1\r\n'
	if t in BULK_TYPES:
		return b'%c%d\r\n%s\r\n' % (t, len(p), p)
	n = len(p) // 2 if t in b'%|' else len(p)
	return b'%c%d\r\n' % (t, n) + b''.join(serialise(x) for x in p)

def encode(args):
	out = [b'*%d\r\n' % len(args)]
	for a in args:
		a = a.encode() if isinstance(a, str) else a
		out.append(b'$%d\r\n%s\r\n' % (len(a), a))
	return b''.join(out)

def escape(b):
	out = []
	for c in b:
		if c == 0x5c:
			out.append('\\\\')
		elif c == 0x0d:
			out.append('\\r')
		elif c == 0x0a:
			out.append('\\n')
		elif c == 0x09:
			out.append('\\t')
		elif 0x20 <= c < 0x7f:
			out.append(chr(c))
		else:
			out.append('\\x%02x' % c)
	return ''.join(out)

# ---- connections -----------------------------------------------------------

REPLY_TIMEOUT = 10.0

class Conn:
	def __init__(self, target):
		self.buf = b''
		self.dead = None
		try:
			if target[0] == 'unix':
				self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
				self.s.settimeout(REPLY_TIMEOUT)
				self.s.connect(target[1])
			else:
				self.s = socket.create_connection(('127.0.0.1', target[1]), timeout=REPLY_TIMEOUT)
		except OSError as e:
			self.s = None
			self.dead = 'connect failed: %s' % (e.strerror or e)

	def send(self, data):
		if self.dead:
			return False
		try:
			self.s.sendall(data)
			return True
		except OSError as e:
			self.dead = 'send failed: %s' % (e.strerror or e)
			return False

	def fill(self):
		"""Read more; False at end of file or error."""
		try:
			d = self.s.recv(1 << 20)
		except socket.timeout:
			self.dead = 'timeout'
			return False
		except OSError as e:
			self.dead = 'recv failed: %s' % (e.strerror or e)
			return False
		if not d:
			self.dead = 'eof'
			return False
		self.buf += d
		return True

	def reply(self):
		"""The raw bytes of the next reply, and '' or why it is cut."""
		if self.dead:
			return self.take(len(self.buf)), self.dead
		while True:
			try:
				_, end = parse(self.buf, 0)
				return self.take(end), ''
			except Incomplete:
				if not self.fill():
					return self.take(len(self.buf)), self.dead
			except ValueError:
				# Not RESP: take what there is.
				return self.take(len(self.buf)), 'unparsable'

	def take(self, n):
		b, self.buf = self.buf[:n], self.buf[n:]
		return b

	def until_eof(self):
		"""Half-close, then everything the server still sends until it
		closes: the trailing bytes, and '' or why it did not close."""
		if self.s is None:
			return b'', self.dead
		try:
			self.s.shutdown(socket.SHUT_WR)
		except OSError:
			pass
		while not self.dead and self.fill():
			pass
		why = '' if self.dead in ('eof', 'send failed: Broken pipe') else self.dead
		self.s.close()
		return self.take(len(self.buf)), why or ''

# ---- the corpus ------------------------------------------------------------

def parse_verbs(path):
	rows = re.findall(r'\{\s*"([a-z.]+)",\s*(-?\d+),\s*(-?\d+),\s*[^,]+,\s*(\d+),', open(path).read())
	if len(rows) < 10:
		sys.exit('compare-replies: no verb rows in %s' % path)
	return [(n, int(lo), int(hi), int(k)) for n, lo, hi, k in rows]

class Session:
	def __init__(self, name, transport, proto=2, auth=True):
		self.name, self.transport, self.proto = name, transport, proto
		self.steps = []
		if transport == 'tcp' and auth:
			self.steps.append(('cmd', ['HELLO', '3', 'AUTH', 'default', 'pw'] if proto == 3 else ['AUTH', 'pw']))
		elif proto == 3:
			self.steps.append(('cmd', ['HELLO', '3']))

	def cmd(self, *args):
		self.steps.append(('cmd', list(args)))

	def cmds(self, lst):
		for a in lst:
			self.cmd(*a)

def items(prefix, n, start=0):
	return ['%s%d' % (prefix, i) for i in range(start, start + n)]

BAD_NAMES = ['', 'bad name', '.hidden', 'a/b', 'x' * 80, 'nul\x00name']

def sections(tr, proto, files):
	"""The generated sessions of one transport and protocol."""
	p = '%s%d' % (tr[0], proto)
	F = lambda n: '%s/%s.%s.snap' % (files, p, n)
	out = []
	def sess(name, auth=True):
		s = Session('%s/%s' % (p, name), tr, proto, auth)
		out.append(s)
		return s

	# Connection verbs.
	s = sess('conn')
	s.cmds([['PING'], ['PING', 'hello'], ['PING', 'a', 'b'], ['ping'], ['PiNg', ''],
		['ECHO', 'x'], ['ECHO', b'\x00\xff\r\n'], ['ECHO'], ['ECHO', 'a', 'b'],
		['SELECT', '0'], ['SELECT', '1'], ['SELECT', 'x'], ['SELECT', '-1'], ['SELECT'],
		['TIME'], ['TIME', 'x'],
		['CLIENT', 'ID'], ['CLIENT', 'GETNAME'], ['CLIENT', 'SETNAME', 'cmp-' + p], ['CLIENT', 'GETNAME'],
		['CLIENT', 'SETNAME', 'bad name'], ['CLIENT', 'SETNAME', ''], ['CLIENT', 'GETNAME'],
		['CLIENT', 'SETNAME', 'n' * 5000], ['CLIENT', 'SETINFO', 'LIB-NAME', 'cmp'],
		['CLIENT', 'SETINFO', 'LIB-VER', '1.2.3'], ['CLIENT', 'SETINFO', 'LIB-NAME', 'a b'],
		['CLIENT', 'SETINFO', 'BOGUS', 'x'], ['CLIENT', 'SETINFO', 'LIB-NAME'], ['CLIENT', 'INFO'],
		['CLIENT', 'NO-EVICT', 'ON'], ['CLIENT', 'NO-EVICT', 'maybe'], ['CLIENT', 'NO-TOUCH', 'OFF'],
		['CLIENT', 'REPLY', 'ON'], ['CLIENT', 'REPLY', 'OFF'], ['CLIENT', 'LIST'], ['CLIENT', 'KILL', 'x'],
		['CLIENT', 'HELP'], ['CLIENT', 'help', 'x'], ['CLIENT'], ['CLIENT', 'ID', 'x'],
		['HELLO'], ['HELLO', str(proto)], ['HELLO', '1'], ['HELLO', '4'], ['HELLO', 'x'],
		['HELLO', str(proto), 'SETNAME', 'h-' + p], ['HELLO', str(proto), 'AUTH', 'default'],
		['HELLO', str(proto), 'AUTH', 'default', 'wrong'], ['HELLO', str(proto), 'BOGUS'],
		['CLIENT', 'INFO'],
		['INFO'], ['INFO', 'server'], ['INFO', 'CLIENTS'], ['INFO', 'stats'], ['INFO', 'keyspace'],
		['INFO', 'all'], ['INFO', 'everything'], ['INFO', 'default'], ['INFO', 'bogus'],
		['INFO', 'server', 'clients'], ['INFO', 'memory'], ['INFO', 'replication'],
		['COMMAND', 'COUNT'], ['COMMAND', 'LIST'], ['COMMAND', 'LIST', 'x'], ['COMMAND', 'INFO'],
		['COMMAND', 'INFO', 'bf.add', 'nosuch', 'GET'], ['COMMAND', 'DOCS'], ['COMMAND', 'DOCS', 'cf.insert', 'nosuch'],
		['COMMAND', 'GETKEYS', 'bf.add', 'f', 'x'], ['COMMAND', 'GETKEYS', 'ping'], ['COMMAND', 'GETKEYS'],
		['COMMAND', 'GETKEYS', 'bf.add'], ['COMMAND', 'GETKEYS', 'nosuch', 'a'], ['COMMAND', 'GETKEYS', 'del', 'a', 'b'],
		['COMMAND', 'HELP'], ['COMMAND', 'BOGUS'], ['COMMAND'],
		['WATCH', 'x'], ['WATCH', 'x', 'y'], ['UNWATCH'], ['UNWATCH', 'x'],
		['AUTH', 'pw'], ['AUTH', 'default', 'pw'], ['AUTH', 'nobody', 'x'], ['AUTH', 'a', 'b', 'c'],
		['GET', 'x'], ['SET', 'x', 'y'], ['HGETALL', 'x'], ['BF.DEBUG', 'x'], ['CMS.INFO', 'x'], ['NOSUCH'],
		[''], ['x' * 200], ['bf.add'], ['Bf.AdD', 'bf', 'x'],
		['RESET'], ['CLIENT', 'GETNAME'], ['CLIENT', 'INFO'], ['PING'], ['QUIT', 'x'], ['QUIT']])
	s.steps.append(('cmd', ['PING']))  # after QUIT: the connection is closed

	# Bloom filters.
	s = sess('bloom')
	b = lambda n: '%s.%s' % (p, n)
	s.cmds([['BF.RESERVE', b('b1'), '0.01', '1000'], ['BF.RESERVE', b('b1'), '0.01', '1000'],
		['BF.RESERVE', b('b2'), '0.001', '100', 'EXPANSION', '4'],
		['BF.RESERVE', b('b3'), '0.01', '10', 'NONSCALING'],
		['BF.RESERVE', b('b4'), '0.01', '100', 'FIXED'],
		['BF.RESERVE', b('b5'), '0.01', '100', 'WINDOW', '1h', 'GENERATIONS', '3'],
		['BF.RESERVE', b('b6'), '0.01', '100', 'MODE', '0660'],
		['BF.RESERVE', b('b7'), '1e-6', '5000', 'expansion', '1']])
	for bad in [['0', '100'], ['1', '100'], ['-0.5', '100'], ['abc', '100'], ['0.01', '0'], ['0.01', '-1'],
		    ['0.01', 'abc'], ['0.01', '1.5'], ['0.01', '99999999999999999999999'], ['1e-300', '100'],
		    ['0.01', '100', 'EXPANSION', '0'], ['0.01', '100', 'EXPANSION', '40000'],
		    ['0.01', '100', 'EXPANSION', 'x'], ['0.01', '100', 'EXPANSION'], ['0.01', '100', 'BOGUS'],
		    ['0.01', '100', 'NONSCALING', 'EXPANSION', '2'], ['0.01', '100', 'EXPANSION', '2', 'NONSCALING'],
		    ['0.01', '100', 'WINDOW', '1h', 'EXPANSION', '2'], ['0.01', '100', 'WINDOW', 'soon'],
		    ['0.01', '100', 'WINDOW', '1h', 'GENERATIONS', '0'], ['0.01', '100', 'WINDOW', '1h', 'GENERATIONS', '17'],
		    ['0.01', '100', 'GENERATIONS', '2'], ['0.01', '100', 'MODE', '0666'], ['0.01', '100', 'MODE', 'abc'],
		    ['0.01', '100', 'FIXED', 'NONSCALING'], ['0.01', '100', 'WINDOW', '1h', 'NONSCALING'],
		    ['0.01', '100', 'REPLICATE'], ['0.01']]:
		s.cmd('BF.RESERVE', b('bad'), *bad)
	for n in BAD_NAMES:
		s.cmd('BF.RESERVE', n, '0.01', '100')
	for i in items('item', 30):
		s.cmd('BF.ADD', b('b1'), i)
	s.cmds([['BF.ADD', b('b1'), 'item0'], ['BF.ADD', b('b1'), ''], ['BF.ADD', b('b1'), b'\x00\xff\r\n*1\r\n'],
		['BF.ADD', b('b1'), 'L' * 10000], ['BF.MADD', b('b1')] + items('m', 50),
		['BF.MADD', b('b1'), 'm0', 'new1', 'm1'], ['BF.ADD', b('b1'), 'a', 'b']])
	for i in items('item', 30) + items('absent', 40) + ['', 'L' * 10000]:
		s.cmd('BF.EXISTS', b('b1'), i)
	s.cmds([['BF.MEXISTS', b('b1')] + items('m', 60), ['BF.MEXISTS', b('b1'), 'item0', 'absent0', 'm3'],
		['BF.MEXISTS', b('nosuch'), 'a', 'b'], ['BF.EXISTS', b('nosuch'), 'a'],
		['BF.CARD', b('b1')], ['BF.CARD', b('nosuch')], ['BF.CARD', 'cf'],
		['BF.INFO', b('b1')], ['BF.INFO', b('b7')], ['BF.INFO', b('nosuch')], ['BF.INFO', 'cf']])
	for f in ['CAPACITY', 'SIZE', 'FILTERS', 'ITEMS', 'EXPANSION', 'capacity', 'BOGUS', '']:
		s.cmd('BF.INFO', b('b1'), f)
	# Past the capacity: layers; NONSCALING; FIXED.
	for chunk in range(0, 600, 100):
		s.cmd('BF.MADD', b('b2'), *items('g', 100, chunk))
	s.cmds([['BF.INFO', b('b2')], ['SHMF.INFO', b('b2')], ['BF.CARD', b('b2')], ['BF.EXISTS', b('b2'), 'g550'],
		['BF.MEXISTS', b('b2')] + items('g', 20, 590) + items('nog', 20),
		['BF.MADD', b('b3')] + items('n', 15), ['BF.ADD', b('b3'), 'n20'], ['BF.ADD', b('b3'), 'n0'],
		['BF.INFO', b('b3')], ['SHMF.INFO', b('b3')],
		['BF.MADD', b('b4')] + items('x', 300), ['BF.INFO', b('b4')], ['SHMF.INFO', b('b4')],
		['BF.MADD', b('b7')] + items('big', 5000), ['BF.MEXISTS', b('b7')] + items('big', 100, 4950) + items('nob', 100),
		['BF.INFO', b('b7')]])
	# BF.INSERT.
	s.cmds([['BF.INSERT', b('i1'), 'ITEMS', 'a', 'b', 'c'], ['BF.INSERT', b('i1'), 'ITEMS', 'a', 'd'],
		['BF.INSERT', b('i2'), 'CAPACITY', '50', 'ERROR', '0.001', 'EXPANSION', '2', 'ITEMS', 'a', 'b'],
		['BF.INSERT', b('i3'), 'NOCREATE', 'ITEMS', 'x'], ['BF.INSERT', b('i1'), 'NOCREATE', 'ITEMS', 'x'],
		['BF.INSERT', b('i3'), 'NOCREATE', 'CAPACITY', '10', 'ITEMS', 'x'],
		['BF.INSERT', b('i4'), 'NONSCALING', 'CAPACITY', '5', 'ITEMS'] + items('y', 8),
		['BF.INSERT', b('i5'), 'NONSCALING', 'EXPANSION', '3', 'ITEMS', 'z'],
		['BF.INSERT', b('i6'), 'MODE', '0660', 'ITEMS', 'z'], ['BF.INSERT', b('i7'), 'ITEMS'],
		['BF.INSERT', b('i7'), 'CAPACITY', '10', 'a'], ['BF.INSERT', b('i7'), 'CAPACITY', 'x', 'ITEMS', 'a'],
		['BF.INSERT', b('i7'), 'ERROR', '2', 'ITEMS', 'a'], ['BF.INSERT', b('i7'), 'EXPANSION', '0', 'ITEMS', 'a'],
		['BF.INSERT', b('i7'), 'BOGUS', 'ITEMS', 'a'], ['BF.INSERT', b('i7'), 'CAPACITY'],
		['BF.INSERT', 'cf', 'ITEMS', 'a'], ['BF.INFO', b('i2')], ['BF.INFO', b('i4')], ['SHMF.INFO', b('i6')]])
	# Wrong types, configured filters, filters created by an add.
	s.cmds([['BF.ADD', 'cf', 'a'], ['BF.EXISTS', 'cf', 'a'], ['BF.MADD', 'cf', 'a'], ['BF.MEXISTS', 'cf', 'a'],
		['BF.ADD', 'bf', 'k-' + p], ['BF.EXISTS', 'bf', 'k-' + p], ['BF.INFO', 'bf'], ['SHMF.INFO', 'bf'],
		['BF.ADD', b('auto'), 'x'], ['BF.INFO', b('auto')], ['SHMF.INFO', b('auto')],
		['BF.MADD', b('auto2'), 'x', 'y'], ['BF.CARD', b('auto2')]])
	# Windows.
	s.cmds([['BF.ADD', b('b5'), 'w1'], ['SHMF.INFO', b('b5')], ['SHMF.ROTATE', b('b5')], ['BF.ADD', b('b5'), 'w2'],
		['BF.EXISTS', b('b5'), 'w1'], ['BF.MEXISTS', b('b5'), 'w1', 'w2', 'w3'], ['SHMF.ROTATE', b('b5')],
		['SHMF.ROTATE', b('b5')], ['BF.EXISTS', b('b5'), 'w1'], ['BF.EXISTS', b('b5'), 'w2'], ['BF.CARD', b('b5')],
		['BF.INFO', b('b5')], ['SHMF.INFO', b('b5')], ['SHMF.ROTATE', b('b1')], ['SHMF.ROTATE', b('nosuch')],
		['BF.ADD', 'win', 'w-' + p], ['SHMF.ROTATE', 'win'], ['BF.EXISTS', 'win', 'w-' + p], ['SHMF.INFO', 'win']])
	# Dumps, and loads back under another name.
	for src in ['b1', 'b2', 'b5', 'i2']:
		s.steps.append(('dump', 'BF', b(src), b(src + 'c')))
		s.cmds([['BF.INFO', b(src + 'c')], ['SHMF.INFO', b(src + 'c')], ['BF.EXISTS', b(src + 'c'), 'item1'],
			['BF.MEXISTS', b(src + 'c'), 'g1', 'g599', 'w2', 'a', 'nope']])
	s.steps.append(('dump', 'BF', 'bf', b('bfc')))
	s.steps.append(('dump', 'BF', b('b1'), b('b4')))  # over an existing filter
	s.cmds([['BF.INFO', b('b4')], ['BF.SCANDUMP', b('nosuch'), '0'], ['BF.SCANDUMP', b('b1'), 'abc'],
		['BF.SCANDUMP', b('b1'), '12345'], ['BF.SCANDUMP', b('b1'), '-1'], ['BF.SCANDUMP', b('b1'), '99999999999999999999'],
		['BF.SCANDUMP', 'cf', '0'], ['BF.LOADCHUNK', b('lx'), '1', 'garbage'], ['BF.LOADCHUNK', b('lx'), 'abc', 'x'],
		['BF.LOADCHUNK', b('lx'), '0', 'x'], ['BF.LOADCHUNK', b('lx'), '2', b'SHMFCHNK' + b'\x00' * 120],
		['BF.LOADCHUNK', 'cf', '1', 'x'], ['BF.INFO', b('lx')]])
	# Files, modes, sizes (the file verbs are refused over TCP).
	s.cmds([['SHMF.SNAPSHOT', b('b1'), F('b1')], ['SHMF.SNAPSHOT', b('b1'), F('b1')],
		['SHMF.SNAPSHOT', b('b2'), F('b2')], ['SHMF.SNAPSHOT', b('b1'), '/proc/nope.snap'],
		['SHMF.SNAPSHOT', b('b1'), 'relative.snap'], ['SHMF.SNAPSHOT', b('nosuch'), F('n')],
		['SHMF.SNAPSHOT', b('b1'), F('b1'), 'FORCE'], ['SHMF.SNAPSHOT', b('b1'), F('b1'), 'BOGUS'],
		['SHMF.RESTORE', b('r1'), F('b1')], ['SHMF.RESTORE', b('r1'), F('b1')], ['BF.EXISTS', b('r1'), 'item2'],
		['BF.INFO', b('r1')], ['SHMF.RESTORE', b('r2'), F('none')], ['SHMF.RESTORE', b('r2'), files],
		['SHMF.SWAP', b('b1'), F('b1')], ['SHMF.SWAP', b('b3'), F('b1')], ['SHMF.SWAP', b('b3'), F('b1'), 'RESHAPE'],
		['SHMF.SWAP', b('b3'), F('b1'), 'BOGUS'], ['BF.INFO', b('b3')], ['SHMF.SWAP', b('nosuch'), F('b1')],
		['SHMF.MERGE', b('b1'), F('b1')], ['SHMF.MERGE', b('r1'), F('b1')], ['SHMF.MERGE', b('b2'), F('b1')],
		['SHMF.MERGE', 'cf', F('b1')], ['SHMF.MERGE', b('b1'), F('none')],
		['SHMF.CHMOD', b('b1'), '0660'], ['SHMF.CHMOD', b('b1'), '0666'], ['SHMF.CHMOD', b('b1'), 'abc'],
		['SHMF.CHMOD', b('nosuch'), '0640'], ['SHMF.INFO', b('b1')],
		['BF.RESERVE', b('rs'), '0.01', '100'], ['SHMF.RESIZE', b('rs'), '1000'], ['SHMF.RESIZE', b('rs'), '1000', '0.001'],
		['SHMF.RESIZE', b('rs'), 'abc'], ['SHMF.RESIZE', b('rs'), '100', '2'], ['SHMF.INFO', b('rs')],
		['SHMF.RESIZE', b('b1'), '5000'], ['SHMF.RESIZE', b('nosuch'), '10']])
	# The keyspace verbs on Bloom filters.
	s.cmds([['TYPE', b('b1')], ['TYPE', 'cf'], ['TYPE', b('nosuch')], ['EXISTS', b('b1'), b('b2'), b('nosuch'), b('b1')],
		['EXPIREAT', b('b6'), '4102444800'], ['EXPIRETIME', b('b6')], ['PEXPIRETIME', b('b6')], ['TTL', b('b6')],
		['PTTL', b('b6')], ['INFO', 'keyspace'], ['PERSIST', b('b6')], ['PERSIST', b('b6')], ['TTL', b('b6')],
		['TTL', b('nosuch')], ['PTTL', b('nosuch')], ['EXPIRETIME', b('b6')], ['EXPIRETIME', b('nosuch')],
		['EXPIRE', b('b6'), '1000', 'XX'], ['EXPIRE', b('b6'), '1000', 'NX'], ['EXPIRE', b('b6'), '1000', 'NX'],
		['EXPIRE', b('b6'), '500', 'GT'], ['EXPIRE', b('b6'), '500', 'LT'], ['EXPIRE', b('b6'), '5000', 'LT'],
		['EXPIRE', b('b6'), '1000', 'BOGUS'], ['EXPIRE', b('b6'), 'abc'], ['EXPIRE', b('b6'), '1.5'],
		['EXPIRE', b('b6'), '99999999999999999999'], ['PEXPIREAT', b('b6'), '4102444800123'],
		['PEXPIRETIME', b('b6'), ], ['EXPIRETIME', b('b6')], ['EXPIREAT', b('b6'), '4102444800', 'GT'],
		['EXPIRE', b('nosuch'), '10'], ['BF.ADD', b('gone'), 'x'], ['EXPIRE', b('gone'), '0'],
		['EXISTS', b('gone')], ['BF.ADD', b('gone'), 'x'], ['PEXPIRE', b('gone'), '-5'], ['EXISTS', b('gone')],
		['BF.ADD', b('gone2'), 'x'], ['PEXPIRE', b('gone2'), '1']])
	s.steps.append(('sleep', 0.3))
	s.cmds([['EXISTS', b('gone2')], ['BF.EXISTS', b('gone2'), 'x'],
		['DEL', b('b4')], ['DEL', b('b4')], ['UNLINK', b('b6'), b('nosuch'), b('i1')], ['DEL', 'bad name'],
		['SHMF.DROP', b('b3')], ['SHMF.DROP', b('b3')], ['SHMF.DROP', 'bad name'], ['SHMF.LIST']])

	# Cuckoo filters.
	s = sess('cuckoo')
	c = b
	s.cmds([['CF.RESERVE', c('c1'), '1000'], ['CF.RESERVE', c('c1'), '1000'],
		['CF.RESERVE', c('c2'), '1000', 'BUCKETSIZE', '2', 'MAXITERATIONS', '50', 'EXPANSION', '2'],
		['CF.RESERVE', c('c3'), '64', 'BUCKETSIZE', '1'], ['CF.RESERVE', c('c4'), '1000', 'BUCKETSIZE', '8'],
		['CF.RESERVE', c('c4'), '1000', 'BUCKETSIZE', '8', 'ERROR', '0.06'],
		['CF.RESERVE', c('c5'), '100', 'EXPANSION', '0'], ['CF.RESERVE', c('c6'), '1000', 'WINDOW', '1h'],
		['CF.RESERVE', c('c7'), '1000', 'ERROR', '0.001', 'MODE', '0660']])
	for bad in [['0'], ['abc'], ['3'], ['-5'], ['1000', 'BUCKETSIZE', '0'], ['1000', 'BUCKETSIZE', '256'],
		    ['1000', 'BUCKETSIZE', '3'], ['1000', 'BUCKETSIZE', 'x'], ['1000', 'MAXITERATIONS', '0'],
		    ['1000', 'MAXITERATIONS', '65536'], ['1000', 'MAXITERATIONS', 'x'], ['1000', 'EXPANSION', '-1'],
		    ['1000', 'EXPANSION', 'x'], ['1000', 'EXPANSION', '40000'], ['1000', 'ERROR', '0.00001'],
		    ['1000', 'ERROR', '2'], ['1000', 'MODE', '0666'], ['1000', 'BOGUS'], ['1000', 'BUCKETSIZE'],
		    ['7', 'BUCKETSIZE', '4'], ['1000', 'WINDOW', '1h', 'EXPANSION', '2'], ['99999999999999999999']]:
		s.cmd('CF.RESERVE', c('bad'), *bad)
	for n in BAD_NAMES:
		s.cmd('CF.RESERVE', n, '1000')
	for i in items('k', 30):
		s.cmd('CF.ADD', c('c1'), i)
	s.cmds([['CF.ADD', c('c1'), 'k0'], ['CF.ADDNX', c('c1'), 'k0'], ['CF.ADDNX', c('c1'), 'knew'],
		['CF.ADD', c('c1'), ''], ['CF.ADD', c('c1'), b'\x00\xff'], ['CF.ADD', c('c1'), 'L' * 10000],
		['CF.INSERT', c('c1'), 'ITEMS', 'a', 'b', 'c'], ['CF.INSERT', c('ci'), 'CAPACITY', '500', 'ITEMS', 'a'],
		['CF.INSERT', c('cj'), 'NOCREATE', 'ITEMS', 'a'], ['CF.INSERT', c('c1'), 'ITEMS'],
		['CF.INSERT', c('cj'), 'CAPACITY', '1', 'ITEMS', 'a'], ['CF.INSERT', c('cj'), 'CAPACITY', 'abc', 'ITEMS', 'a'],
		['CF.INSERT', c('cj'), 'BOGUS', 'ITEMS', 'a'], ['CF.INSERT', c('cj'), 'a', 'b'],
		['CF.INSERTNX', c('c1'), 'ITEMS', 'k0', 'z', 'z'], ['CF.INSERTNX', c('ck'), 'ITEMS', 'q'],
		['CF.INSERTNX', c('cj'), 'NOCREATE', 'ITEMS', 'q'], ['CF.INSERT', 'bf', 'ITEMS', 'a']])
	for i in items('k', 30) + items('absent', 40) + ['', 'L' * 10000]:
		s.cmd('CF.EXISTS', c('c1'), i)
	s.cmds([['CF.MEXISTS', c('c1')] + items('k', 20, 20) + items('nok', 20), ['CF.MEXISTS', c('nosuch'), 'a'],
		['CF.EXISTS', c('nosuch'), 'a'], ['CF.COUNT', c('c1'), 'k0'], ['CF.COUNT', c('c1'), 'k1'],
		['CF.COUNT', c('c1'), 'absent0'], ['CF.COUNT', c('nosuch'), 'x'],
		['CF.DEL', c('c1'), 'k0'], ['CF.COUNT', c('c1'), 'k0'], ['CF.DEL', c('c1'), 'k0'], ['CF.DEL', c('c1'), 'k0'],
		['CF.DEL', c('c1'), 'absent0'], ['CF.DEL', c('nosuch'), 'x'], ['CF.DEL', 'bf', 'x'],
		['CF.INFO', c('c1')], ['CF.INFO', c('c2')], ['CF.INFO', c('c3')], ['CF.INFO', c('c4')], ['CF.INFO', c('c7')],
		['CF.INFO', c('nosuch')], ['CF.INFO', 'bf'], ['CF.COMPACT', c('c1')], ['CF.COMPACT', c('nosuch')],
		['CF.COMPACT', 'bf']])
	for _ in range(5):
		s.cmd('SHMF.ADDCAPPED', c('c1'), 'cap', '3')
	s.cmds([['CF.COUNT', c('c1'), 'cap'], ['SHMF.ADDCAPPED', c('c1'), 'cap', 'abc'], ['SHMF.ADDCAPPED', c('c1'), 'cap', '0'],
		['SHMF.ADDCAPPED', c('c1'), 'cap', '-1'], ['SHMF.ADDCAPPED', 'bf', 'x', '3'],
		['SHMF.ADDCAPPED', c('nosuch'), 'x', '3'], ['CF.INFO', c('nosuch')]])
	# Full: a fixed filter; growth: layers.
	s.cmds([['CF.INSERT', c('c5'), 'ITEMS'] + items('f', 400), ['CF.ADD', c('c5'), 'more'], ['CF.ADDNX', c('c5'), 'more2'],
		['CF.INFO', c('c5')], ['SHMF.INFO', c('c5')],
		['CF.INSERT', c('c3'), 'ITEMS'] + items('f', 100), ['CF.INFO', c('c3')]])
	for chunk in range(0, 3000, 1000):
		s.cmd('CF.INSERT', c('c2'), 'ITEMS', *items('g', 1000, chunk))
	s.cmds([['CF.INFO', c('c2')], ['SHMF.INFO', c('c2')], ['CF.MEXISTS', c('c2')] + items('g', 20, 2980) + items('nog', 20),
		['CF.ADD', 'bf', 'x'], ['CF.EXISTS', 'bf', 'x'], ['CF.COUNT', 'bf', 'x'], ['CF.ADDNX', 'bf', 'x'],
		['CF.ADD', 'cf', 'k-' + p], ['CF.COUNT', 'cf', 'k-' + p], ['CF.INFO', 'cf'], ['SHMF.INFO', 'cf'],
		['CF.ADD', c('cauto'), 'x'], ['CF.ADDNX', c('cauto2'), 'x'], ['CF.INFO', c('cauto')], ['SHMF.INFO', c('cauto2')],
		['CF.ADD', c('c6'), 'w'], ['SHMF.ROTATE', c('c6')], ['CF.EXISTS', c('c6'), 'w'], ['CF.DEL', c('c6'), 'w'],
		['SHMF.INFO', c('c6')], ['CF.INFO', c('c6')]])
	for src in ['c1', 'c2', 'c4', 'c6']:
		s.steps.append(('dump', 'CF', c(src), c(src + 'd')))
		s.cmds([['CF.INFO', c(src + 'd')], ['CF.EXISTS', c(src + 'd'), 'k1'], ['CF.COUNT', c(src + 'd'), 'cap'],
			['CF.MEXISTS', c(src + 'd'), 'g1', 'g2999', 'w', 'nope']])
	s.steps.append(('dump', 'CF', 'cf', c('cfd')))
	s.cmds([['CF.SCANDUMP', c('nosuch'), '0'], ['CF.SCANDUMP', c('c1'), 'abc'], ['CF.SCANDUMP', c('c1'), '7'],
		['CF.SCANDUMP', 'bf', '0'], ['CF.LOADCHUNK', c('lx'), '1', 'garbage'], ['CF.LOADCHUNK', c('lx'), 'x', 'y'],
		['CF.LOADCHUNK', 'bf', '1', 'x']])
	s.cmds([['SHMF.SNAPSHOT', c('c1'), F('c1')], ['SHMF.SWAP', c('c1'), F('c1')], ['SHMF.MERGE', c('c1'), F('c1')],
		['SHMF.RESTORE', c('cr'), F('c1')], ['CF.COUNT', c('cr'), 'k1'], ['SHMF.SWAP', c('c3'), F('c1')],
		['SHMF.SWAP', c('c3'), F('c1'), 'RESHAPE'], ['CF.INFO', c('c3')],
		['SHMF.RESIZE', c('c7'), '4000'], ['SHMF.RESIZE', c('c1'), '4000'], ['SHMF.RESIZE', c('c1'), '10'],
		['SHMF.CHMOD', c('c1'), '0660'], ['SHMF.INFO', c('c7')],
		['TYPE', c('c1')], ['DEL', c('c4'), c('c4d')], ['SHMF.DROP', c('c5')], ['SHMF.LIST']])

	# Keyspace.
	s = sess('keyspace')
	s.cmds([['DBSIZE'], ['DBSIZE', 'x'], ['KEYS', '*'], ['KEYS', p + '.b*'], ['KEYS', p + '.c?'], ['KEYS', '['],
		['KEYS', '*\\*'], ['KEYS', '[a-c]*'], ['KEYS'], ['KEYS', 'a', 'b'],
		['SCAN', '0'], ['SCAN', '0', 'COUNT', '5'], ['SCAN', '0', 'MATCH', p + '.*', 'COUNT', '1000'],
		['SCAN', '0', 'TYPE', 'MBbloom--'], ['SCAN', '0', 'TYPE', 'MBbloomCF'], ['SCAN', '0', 'TYPE', 'string'],
		['SCAN', 'abc'], ['SCAN', '-1'], ['SCAN', '0', 'COUNT', '0'], ['SCAN', '0', 'COUNT', 'x'], ['SCAN', '0', 'BOGUS'],
		['SCAN', '0', 'MATCH'], ['SCAN', '99999']])
	s.steps.append(('scan', ['COUNT', '3']))
	s.steps.append(('scan', ['MATCH', '*c*', 'COUNT', '7']))
	s.cmds([['SHMF.LIST'], ['SHMF.LIST', 'x'], ['INFO', 'keyspace'], ['EXISTS', 'bf', 'cf', 'win', 'nosuch'],
		['SHMF.REPLICATION'], ['SHMF.REPLICATION', 'bf'], ['SHMF.REPLICATION', 'nosuch'],
		['FLUSHALL', 'BOGUS'], ['FLUSHDB', 'x', 'y'], ['SHMF.RELOAD'], ['SHMF.RELOAD', 'x']])

	# MULTI / EXEC.
	s = sess('multi')
	m = b
	s.cmds([['MULTI'], ['BF.ADD', m('m'), 'x'], ['BF.EXISTS', m('m'), 'x'], ['CF.ADD', m('mc'), 'y'], ['PING'],
		['ECHO', 'e'], ['BF.INFO', m('m')], ['EXEC'],
		['MULTI'], ['MULTI'], ['DISCARD'], ['EXEC'], ['DISCARD'],
		['MULTI'], ['BF.ADD', m('m')], ['BF.ADD', m('m'), 'z'], ['EXEC'], ['BF.EXISTS', m('m'), 'z'],
		['MULTI'], ['NOSUCH'], ['EXEC'],
		['MULTI'], ['BF.ADD', m('m'), 'a'], ['BF.ADD', 'cf', 'a'], ['BF.RESERVE', m('m'), '0.01', '10'], ['EXEC'],
		['MULTI'], ['WATCH', 'x'], ['UNWATCH'], ['EXEC'],
		['MULTI'], ['SHMF.SNAPSHOT', m('m'), F('m')], ['SHMF.INFO', m('m')], ['EXEC'],
		['MULTI'], ['EXEC'],
		['MULTI'], ['BF.ADD', m('m2'), 'x'], ['DISCARD'], ['EXISTS', m('m2')],
		['MULTI'], ['HELLO', str(proto)], ['CLIENT', 'GETNAME'], ['SELECT', '0'], ['EXEC'],
		['MULTI'], ['MULTI', 'x'], ['EXEC', 'x'], ['DISCARD', 'x'], ['DISCARD'],
		['MULTI'], ['BF.SCANDUMP', m('m'), '0'], ['CF.INSERT', m('mc'), 'ITEMS', 'a', 'b'], ['DEL', m('mc')],
		['EXISTS', m('mc')], ['EXEC'],
		['MULTI'], ['FLUSHALL', 'BOGUS'], ['EXEC'],
		['MULTI'], ['BF.ADD', m('m'), 'r'], ['RESET'], ['EXEC'], ['BF.EXISTS', m('m'), 'r']])
	# RESET went back to RESP2, and over TCP to no AUTH.
	if tr == 'tcp':
		s.cmd('HELLO', str(proto), 'AUTH', 'default', 'pw')
	elif proto == 3:
		s.cmd('HELLO', '3')
	s.steps.append(('pipe', [['MULTI'], ['BF.MADD', m('p')] + items('p', 20), ['BF.MEXISTS', m('p')] + items('p', 25),
				 ['CF.INSERT', m('pc'), 'ITEMS', 'a'], ['EXEC']]))

	# Pipelining.
	s = sess('pipeline')
	s.steps.append(('pipe', [['BF.ADD', b('pl'), x] for x in items('q', 100)] +
			[['BF.EXISTS', b('pl'), x] for x in items('q', 50, 75)] + [['PING', 'p%d' % i] for i in range(20)] +
			[['BF.INFO', b('pl')], ['BF.CARD', b('pl')], ['BF.ADD', b('pl')], ['NOSUCH'], ['PING']]))

	# Protocol errors, each on a connection of its own.
	for i, raw in enumerate([b'PING\r\n', b'*0\r\n*1\r\n$4\r\nPING\r\n', b'*-1\r\n*1\r\n$4\r\nPING\r\n',
				 b'$4\r\nPING\r\n', b'*1\r\n$-1\r\n', b'*1\r\n$99999999999\r\n', b'*2\r\n$3\r\nfoo',
				 b'*x\r\n', b'*1\r\n$4\r\nPINGxx\r\n', b'*1\r\n:1\r\n', b'*2\r\n$4\r\nECHO\r\n$3\r\nabc\n\n',
				 b'*3000000\r\n', b'*1\r\n$4\r\nPING\r\n' * 50 + b'garbage',
				 encode(['BF.MADD', b('raw')] + items('r', 1000)) + encode(['BF.CARD', b('raw')])]):
		s = sess('raw%d' % i)
		s.steps.append(('raw', raw))
	return out

def tcp_sessions():
	"""AUTH, roles and NOAUTH over TCP."""
	out = []
	s = Session('tcp-auth', 'tcp', 2, auth=False)
	s.cmds([['PING'], ['ECHO', 'x'], ['HELLO'], ['HELLO', '3'], ['HELLO', '2'], ['CLIENT', 'ID'], ['BF.ADD', 'bf', 'x'],
		['INFO'], ['COMMAND', 'COUNT'], ['AUTH', 'wrong'], ['AUTH', 'default', 'wrong'], ['AUTH', 'ro', 'wrong'],
		['AUTH', 'nobody', 'x'], ['AUTH'], ['AUTH', 'a', 'b', 'c'], ['AUTH', 'x' * 600],
		['AUTH', 'ro', 'ropw'], ['BF.ADD', 'bf', 'x'], ['BF.EXISTS', 'bf', 'x'], ['CF.ADD', 'cf', 'x'],
		['CF.EXISTS', 'cf', 'x'], ['BF.RESERVE', 'ro.f', '0.01', '10'], ['SHMF.DROP', 'bf'], ['DEL', 'bf'],
		['FLUSHALL'], ['BF.INFO', 'bf'], ['SHMF.LIST'], ['BF.SCANDUMP', 'bf', '0'], ['BF.LOADCHUNK', 'x', '1', 'y'],
		['EXPIRE', 'bf', '10'], ['CLIENT', 'INFO'],
		['AUTH', 'w', 'wpw'], ['BF.ADD', 'bf', 'w'], ['CF.ADD', 'cf', 'w'], ['BF.ADD', 'other', 'w'],
		['BF.EXISTS', 'win', 'w'], ['BF.RESERVE', 'bf', '0.01', '10'], ['BF.INSERT', 'w.new', 'ITEMS', 'a'],
		['SHMF.INFO', 'bf'], ['SHMF.INFO', 'win'], ['KEYS', '*'], ['DBSIZE'], ['SHMF.LIST'],
		['HELLO', '3', 'AUTH', 'ro', 'ropw'], ['BF.ADD', 'bf', 'x'], ['HELLO', '2', 'AUTH', 'default', 'pw'],
		['BF.ADD', 'bf', 'auth'], ['RESET'], ['BF.EXISTS', 'bf', 'auth'], ['HELLO', '3', 'AUTH', 'default', 'wrong'],
		['HELLO', '3', 'AUTH', 'default', 'pw', 'SETNAME', 'tcp-auth'], ['CLIENT', 'GETNAME'], ['CLIENT', 'INFO'],
		['QUIT']])
	out.append(s)
	# Before AUTH, the narrow request limits, pipelined.
	s = Session('tcp-preauth-pipeline', 'tcp', 2, auth=False)
	s.steps.append(('pipe', [['PING'], ['AUTH', 'pw'], ['BF.MADD', 'bf'] + items('pa', 20), ['AUTH', 'x' * 5000],
				 ['PING']]))
	out.append(s)
	return out

def flush_sessions(files):
	s = Session('flush', 'unix')
	s.cmds([['DBSIZE'], ['FLUSHDB', 'BOGUS'], ['FLUSHALL', 'ASYNC'], ['DBSIZE'], ['KEYS', '*'], ['SHMF.LIST'],
		['INFO', 'keyspace'], ['BF.ADD', 'bf', 'x'], ['BF.ADD', 'after', 'x'], ['FLUSHDB', 'SYNC'], ['DBSIZE'],
		['FLUSHALL'], ['DBSIZE']])
	t = Session('flush-tcp', 'tcp')
	t.cmds([['BF.ADD', 'a', 'x'], ['AUTH', 'ro', 'ropw'], ['FLUSHALL'], ['AUTH', 'default', 'pw'], ['FLUSHALL', 'SYNC'],
		['DBSIZE']])
	return [s, t]

def generic_sessions(verbs, tr, proto):
	"""Every verb: alone, one argument short, one too many, unknown and
	invalid filter names, and COMMAND INFO/DOCS/GETKEYS of it."""
	p = '%s%d' % (tr[0], proto)
	out = []
	for name, lo, hi, key in verbs:
		s = Session('%s/verb-%s' % (p, name), tr, proto)
		V = name.upper()
		mixed = ''.join(ch.upper() if i % 2 else ch for i, ch in enumerate(name))
		cases = []
		if name not in ('flushall', 'flushdb', 'quit'):
			cases.append([V])
		if lo > 2:
			cases.append([mixed] + ['x'] * (lo - 2))
		if hi >= 0:
			cases.append([V] + ['1'] * hi)
		if key > 0:
			# Names no other request uses, so unknown at first (an EXPIRE
			# of 1 s never reaches a filter); the last request finds the
			# filter when the first one created it.
			fill = ['1'] * max(lo - 2, 0)
			cases.append([V, 'no.%s.%s' % (p, name)] + fill)
			cases.append([V, 'no2.%s.%s' % (p, name)] + ['0'] * max(lo - 2, 0))
			cases.append([V, 'no.%s.%s' % (p, name)] + ['x'] * max(lo - 2, 0))
			for n in BAD_NAMES:
				cases.append([mixed, n] + fill)
		elif lo >= 2:
			cases.append([V] + ['1'] * (lo - 1))
			cases.append([V] + ['x'] * (lo - 1))
		cases += [['COMMAND', 'INFO', name], ['COMMAND', 'DOCS', name], ['COMMAND', 'GETKEYS', name] + ['k'] * max(lo - 1, 0)]
		if name == 'quit':
			cases.append([V])
		for cse in cases:
			s.cmd(*cse)
		out.append(s)
	return out

def fuzz_sessions(seed_dir):
	out = []
	for f in sorted(os.listdir(seed_dir)):
		data = open(os.path.join(seed_dir, f), 'rb').read()[1:]
		if not data:
			continue
		for tr, pre in (('unix', b''), ('tcp', b''), ('tcp', encode(['AUTH', 'pw']))):
			s = Session('fuzz/%s/%s%s' % (f, tr, '+auth' if pre else ''), tr, 2, auth=False)
			s.steps.append(('raw', pre + data))
			out.append(s)
	return out

def corpus(verbs, files, seed_dir):
	sessions = []
	for tr in ('unix', 'tcp'):
		for proto in (2, 3):
			sessions += sections(tr, proto, files)
	sessions += tcp_sessions()
	for tr in ('unix', 'tcp'):
		for proto in (2, 3):
			sessions += generic_sessions(verbs, tr, proto)
	sessions += flush_sessions(files)
	sessions += fuzz_sessions(seed_dir)
	return sessions

# ---- running it ------------------------------------------------------------

def show_args(args):
	out = []
	for a in args:
		a = a.encode() if isinstance(a, str) else a
		out.append(a if len(a) <= 120 else a[:64] + b'...<%d bytes>' % len(a))
	return b' '.join(out)

def run(sock, port, files, verbs_c, seed_dir, out_path):
	records = []   # (key, verb, request shown, reply bytes, how it ended)
	sessions = corpus(parse_verbs(verbs_c), files, seed_dir)
	for s in sessions:
		conn = Conn(('unix', sock) if s.transport == 'unix' else ('tcp', port))
		n = 0
		def rec(verb, shown, reply, why):
			nonlocal n
			records.append(('%s #%d' % (s.name, n), verb, shown, reply, why))
			n += 1
		def do(args):
			conn.send(encode(args))
			reply, why = conn.reply()
			rec(args[0].upper() if isinstance(args[0], str) else '', show_args(args), reply, why)
			return reply
		for step in s.steps:
			kind = step[0]
			if kind == 'cmd':
				do(step[1])
			elif kind == 'sleep':
				time.sleep(step[1])
			elif kind == 'pipe':
				conn.send(b''.join(encode(a) for a in step[1]))
				for a in step[1]:
					reply, why = conn.reply()
					rec(a[0].upper(), b'(pipelined) ' + show_args(a), reply, why)
			elif kind == 'raw':
				conn.send(step[1])
				reply, why = conn.until_eof()
				rec('', b'(raw) ' + step[1][:200] + (b'...<%d bytes>' % len(step[1]) if len(step[1]) > 200 else b''),
				    reply, why)
			elif kind == 'dump':
				# SCANDUMP SRC from iterator 0, each chunk loaded into DST.
				fam, src, dst = step[1], step[2], step[3]
				it = b'0'
				for _ in range(64):
					reply = do([fam + '.SCANDUMP', src, it])
					try:
						(t, v), _ = parse(reply, 0)
						it, chunk = v[0][1], v[1][1]
					except Exception:
						break
					if it == b'0' or chunk is None:
						break
					do([fam + '.LOADCHUNK', dst, it, chunk])
			elif kind == 'scan':
				cur = b'0'
				for _ in range(100):
					reply = do(['SCAN', cur] + step[1])
					try:
						(t, v), _ = parse(reply, 0)
						cur = v[0][1]
					except Exception:
						break
					if cur == b'0':
						break
		if conn.s is not None and not any(st[0] == 'raw' for st in s.steps):
			reply, why = conn.until_eof()
			records.append(('%s end' % s.name, '', b'(end of connection)', reply, why))
	with open(out_path, 'wb') as f:
		pickle.dump(records, f)
	return len(sessions)

# ---- normalising and comparing ---------------------------------------------

def text_rules(root):
	return [
		('temp dir', re.compile(re.escape(root.encode())), b'<TMP>'),
		('pid', re.compile(rb'(process_id:)\d+'), rb'\1<pid>'),
		('uptime', re.compile(rb'(uptime_in_(?:seconds|days):)\d+'), rb'\1<uptime>'),
		('memory', re.compile(rb'(mem_clients_normal:)\d+'), rb'\1<bytes>'),
		('tcp port', re.compile(rb'(tcp_port:)\d+'), rb'\1<port>'),
		('client port', re.compile(rb'\b(127\.0\.0\.1:)\d{1,5}\b'), rb'\1<port>'),
		('gen age', re.compile(rb'(?<![^ ])(\d+):\d+s:(\d+)(?![^ ])'), rb'\1:<age>s:\2'),
	]

def mask_chunk(b):
	"""A dump's header chunk with its times and the checksums over them masked."""
	if len(b) < 96 + 256 or b[:8] != b'SHMFCHNK' or struct.unpack_from('<I', b, 12)[0] != 1:
		return b
	b = bytearray(b)
	M = b'~' * 8
	b[88:96] = M                       # the chunk's checksum (over its data)
	h = 96
	b[h + 72:h + 88] = M + M           # created, snapshot_taken
	b[h + 248:h + 256] = M             # header_checksum
	nsec = struct.unpack_from('<I', b, h + 60)[0]
	for i in range(min(nsec, 16)):
		sh = h + 256 + 64 * i
		if sh + 64 <= len(b):
			b[sh + 8:sh + 16] = M      # the section's created
			b[sh + 56:sh + 64] = M     # its checksum
	return bytes(b)

def apply_rules(p, rules, fired):
	for name, rx, rep in rules:
		p, n = rx.subn(rep, p)
		if n:
			fired.add(name)
	return p

def norm_value(verb, v, rules, fired):
	t, p = v
	if verb == 'TIME' and t == ord('*') and p is not None and len(p) == 2:
		fired.add('time')
		return (t, [(ord('$'), b'<time>'), (ord('$'), b'<time>')])
	if verb in ('TTL', 'PTTL') and t == ord(':') and re.fullmatch(rb'[1-9]\d*', p):
		fired.add('ttl')
		return (t, b'<ttl>')
	if p is None:
		return v
	if isinstance(p, list):
		return (t, [norm_value(verb, x, rules, fired) for x in p])
	if t in BULK_TYPES and p.startswith(b'SHMFCHNK'):
		m = mask_chunk(p)
		if m != p:
			fired.add('dump times')
		return (t, m)
	return (t, apply_rules(p, rules, fired))

def normalise(verb, data, rules, fired):
	"""The reply with the rules applied to each string in it (the RESP
	lengths recomputed); what does not parse as RESP, as bytes."""
	out, pos = [], 0
	while pos < len(data):
		try:
			v, end = parse(data, pos)
		except (Incomplete, ValueError):
			out.append(apply_rules(data[pos:], rules, fired))
			break
		out.append(serialise(norm_value(verb, v, rules, fired)))
		pos = end
	return b''.join(out)

def shorten(text, at, room=700):
	if len(text) <= room:
		return text
	lo = max(0, at - room // 3)
	return ('...' if lo else '') + text[lo:lo + room] + '... (%d characters escaped)' % len(text)

def compare(a_path, a_root, b_path, b_root, statuses):
	A = pickle.load(open(a_path, 'rb'))
	B = pickle.load(open(b_path, 'rb'))
	ra, rb = text_rules(a_root), text_rules(b_root)
	bmap = {r[0]: r for r in B}
	akeys = {r[0] for r in A}
	requests = sum(1 for r in A if not r[0].endswith(' end'))
	rbreq = sum(1 for r in B if not r[0].endswith(' end'))
	differ = same_raw = 0
	shown = 0
	used = {}
	def show(key, req, x, y):
		nonlocal shown
		shown += 1
		if shown > 50:
			return
		ex, ey = escape(x), escape(y)
		at = next((i for i in range(min(len(ex), len(ey))) if ex[i] != ey[i]), min(len(ex), len(ey)))
		print('--- %s: %s%s' % (key, escape(req), ' (first difference at character %d)' % at if at < max(len(ex), len(ey)) else ''))
		print('  old: %s' % shorten(ex, at))
		print('  new: %s' % shorten(ey, at))
	for key, verb, req, reply, why in A:
		other = bmap.get(key)
		if other is None:
			differ += 1
			show(key, apply_rules(req, ra[:1], set()), reply + (b' <' + why.encode() + b'>' if why else b''),
			     b'<not sent: the run took another path>')
			continue
		if reply == other[3] and why == other[4]:
			same_raw += 1
			continue
		fired = set()
		x = normalise(verb, reply, ra, fired) + (b' <' + why.encode() + b'>' if why else b'')
		y = normalise(verb, other[3], rb, fired) + (b' <' + other[4].encode() + b'>' if other[4] else b'')
		if x == y:
			for name in fired:
				used[name] = used.get(name, 0) + 1
		else:
			differ += 1
			show(key, apply_rules(req, ra[:1], set()), x, y)
	for key, verb, req, reply, why in B:
		if key not in akeys:
			differ += 1
			show(key, apply_rules(req, rb[:1], set()), b'<not sent: the run took another path>', reply)
	if shown > 50:
		print('(%d more differences not shown)' % (shown - 50))
	if used:
		print('compare-replies: equal after normalisation, replies per rule: ' + ', '.join('%s %d' % (k, used[k]) for k in sorted(used)))
	compared = len(A) + sum(1 for r in B if r[0] not in akeys)
	print('compare-replies: %d requests, %d differ (%d replies and connection ends compared: %d byte for byte, '
	      '%d after normalisation)' % (max(requests, rbreq), differ, compared, same_raw,
					   compared - same_raw - differ))
	if statuses[0] != statuses[1]:
		print('compare-replies: shmd exited differently on SIGTERM: old %s, new %s' % (statuses[0], statuses[1]))
		return 1
	if statuses[0] != '0':
		print('compare-replies: note: both daemons exited with status %s on SIGTERM' % statuses[0])
	return 1 if differ else 0

if __name__ == '__main__':
	if sys.argv[1] == 'run':
		n = run(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7])
		print(n)
	elif sys.argv[1] == 'port':
		s = socket.socket()
		s.bind(('127.0.0.1', 0))
		print(s.getsockname()[1])
	elif sys.argv[1] == 'compare':
		sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:8]))
EOF

# start SIDE BINARY: a fresh instance in $tmp/SIDE, its pid in $pid and its
# TCP port in $port. Retries with another port when that one was taken.
start()
{
	local side=$1 bin=$2 dir=$tmp/$1 i
	for _ in 1 2 3 4 5; do
		rm -rf "$dir"
		mkdir -p "$dir/run" "$dir/snaps" "$dir/files" || exit 2
		port=$(python3 "$tmp/compare.py" port) || exit 2
		cat >"$dir/shmd.ini" <<-EOF
			[instance]
			name = cmp
			remove_on_exit = true
			huge_pages = off
			mount_tmpfs = no
			snapshot_dir = $dir/snaps
			snapshot_paths = $dir/files

			[defaults]
			flushall = yes

			[filter bf]
			type = bloom
			capacity = 1000
			fpr = 0.001

			[filter cf]
			type = cuckoo
			capacity = 1000

			[filter win]
			capacity = 100
			window = 1h
			generations = 2

			[user ro]
			password = ropw
			role = reader

			[user w]
			password = wpw
			role = writer
			filters = bf, cf, win

			[tcp]
			enabled = yes
			port = $port
			requirepass = pw
		EOF
		(cd "$dir" && SHMF_RUNTIME_DIR=$dir/run LD_PRELOAD=$tmp/seeds.so ASAN_OPTIONS=verify_asan_link_order=0 \
			exec "$bin" -f -c "$dir/shmd.ini" 2>"$dir/shmd.log") &
		pid=$!
		for ((i = 0; i < 500; i++)); do
			if ! kill -0 "$pid" 2>/dev/null; then
				wait "$pid"
				pid=
				break
			fi
			# The log, not a connection: a probe would count in INFO and
			# take a client id.
			grep -q "listening on tcp 127.0.0.1:$port " "$dir/shmd.log" && return 0
			sleep 0.02
		done
		if [[ -n $pid ]]; then
			kill -KILL "$pid"
			wait "$pid" 2>/dev/null
			pid=
		fi
		grep -q 'Address already in use' "$dir/shmd.log" || break
	done
	echo "$0: $bin ($side) did not start; its log:" >&2
	tail -20 "$dir/shmd.log" >&2
	exit 2
}

# stop BINARY SIDE: SIGTERM, and the exit status in $status.
stop()
{
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	status=$?
	pid=
	if [[ $status -ne 0 ]]; then
		echo "compare-replies: $1 exited with status $status; the end of its log:"
		tail -5 "$tmp/$2/shmd.log"
	fi
}

SECONDS=0
statuses=()
for side in old new; do
	bin=$old
	[[ $side == new ]] && bin=$new
	start "$side" "$bin"
	if ! python3 "$tmp/compare.py" run "$tmp/$side/run/cmp.sock" "$port" "$tmp/$side/files" \
		"$verbs_c" "$seeds" "$tmp/$side.replies" >/dev/null; then
		echo "$0: the driver failed against $bin" >&2
		exit 2
	fi
	stop "$bin" "$side"
	statuses+=("$status")
done
python3 "$tmp/compare.py" compare "$tmp/old.replies" "$tmp/old" "$tmp/new.replies" "$tmp/new" "${statuses[@]}"
rc=$?
echo "compare-replies: ${SECONDS}s"
exit $rc
