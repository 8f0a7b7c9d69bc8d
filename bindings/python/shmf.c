/*
 * shmf.c - the shmf Python extension: class shmf.Filter over libshmf, and
 * shmf.Error with one subclass per library code (shmf.pyi shows the API).
 *
 * Every method is a thin wrapper: take the key as bytes or str (UTF-8),
 * call libshmf, turn a negative code into an exception that carries
 * shmf_strerror()'s sentence and the code. Single calls keep the GIL (a
 * check costs less than releasing it); the batch calls release it, after
 * taking their keys' pointers from immutable objects they hold a
 * reference to, so no other thread can change or free a key meanwhile.
 *
 * libshmf's rules, kept here: shmf_close() must not race with another call
 * on the handle (close() refuses while another thread is in a batch call
 * on it), and a process must not fork while another thread is inside a
 * call (a pthread_atfork handler waits for the batch calls in flight; the
 * single calls hold the GIL, which os.fork() holds too).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <shmf.h>

typedef struct {
	PyObject ob_base;   /* PyObject_HEAD */
	shmf_t *f;          /* NULL once closed */
	PyObject *name;     /* str */
	PyObject *instance; /* str or None */
	int writable;
	int busy; /* batch calls in flight on this handle (changed under the GIL) */
} FilterObject;

static PyTypeObject FilterType;

/* Batch calls in flight in this process, GIL released: the fork handler
 * waits for them (libshmf: do not fork while a thread is inside a call). */
static atomic_int batches_in_flight;

static PyObject *Error;            /* shmf.Error, the base of the others */
static PyObject *PermissionDenied; /* -EACCES, -EPERM: also a PermissionError */

/* One row per library code: its exception class's name, extra bases and
 * docstring. The classes are made at import, in this order. */
static const struct {
	int code;
	const char *name;
	const char *bases; /* "V": also a ValueError; "F": a Full; "R": a ReadOnly */
	const char *doc;
} codes[] = {
	{ SHMF_E_NOTFOUND, "FilterNotFound", "", "No such filter, or no such instance." },
	{ SHMF_E_FORMAT, "FormatError", "", "A segment or file is malformed." },
	{ SHMF_E_VERSION, "VersionError", "", "A segment has another format version." },
	{ SHMF_E_LAYOUT, "LayoutError", "", "A segment was built with another struct layout." },
	{ SHMF_E_OWNER, "UntrustedOwner", "", "A file or directory has an untrusted owner or mode." },
	{ SHMF_E_READONLY, "ReadOnly", "", "A write through a handle opened for checks only." },
	{ SHMF_E_TYPE, "WrongType", "", "The filter's type does not support this call." },
	{ SHMF_E_FULL, "Full", "", "The filter is full." },
	{ SHMF_E_INVAL, "InvalidArgument", "V", "An argument is invalid." },
	{ SHMF_E_NAME, "BadName", "V", "An instance or filter name is invalid." },
	{ SHMF_E_EXISTS, "Exists", "", "A filter of that name exists already." },
	{ SHMF_E_RUNDIR, "NoRuntimeDir", "", "The runtime directory cannot be determined." },
	{ SHMF_E_DROPPED, "Dropped", "", "The filter was dropped while this handle was open." },
	{ SHMF_E_TOOBIG, "TooBig", "", "The filter is larger than this library allows." },
	{ SHMF_E_PROTO, "ProtocolError", "", "The control socket answered something unexpected." },
	{ SHMF_E_BUSY, "Busy", "", "A cuckoo filter's relocation lock stayed held past its timeout." },
	{ SHMF_E_NONSCALING, "NonScalingFull", "F", "A NONSCALING Bloom filter holds its capacity." },
	{
		SHMF_E_IMPORTED,
		"Imported",
		"R",
		"A filter imported from RedisBloom answers checks and counts only.",
	},
	{
		SHMF_E_STATIC,
		"Static",
		"R",
		"A static filter (built offline by shmctl build --type static) answers checks only: rebuild and swap it.",
	},
};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))
static PyObject *code_classes[N_CODES]; /* codes[i]'s class */

static PyObject *class_of(int code)
{
	size_t i;

	if (code == -EACCES || code == -EPERM)
		return PermissionDenied;
	for (i = 0; i < N_CODES; i++)
		if (codes[i].code == code)
			return code_classes[i];
	return Error;
}

/* Raise the class of @rc: "filter 'NAME'[ of instance 'I']: WHAT: sentence",
 * with attributes code, filter and instance; a permission error adds
 * shmf_error_detail()'s sentence (the file, its owner and mode, what to
 * change). @extra, if not NULL, becomes attribute @extra_name. Returns NULL. */
static PyObject *raise_code(PyObject *name, PyObject *instance, const char *what, int rc, const char *extra_name,
			    PyObject *extra)
{
	const char *detail = rc == -EACCES || rc == -EPERM ? shmf_error_detail() : "";
	PyObject *msg, *exc;

	if (instance == Py_None)
		msg = PyUnicode_FromFormat("filter '%U': %s: %s%s%s", name, what, shmf_strerror(rc),
					   *detail ? " (" : "", detail);
	else
		msg = PyUnicode_FromFormat("filter '%U' of instance '%U': %s: %s%s%s", name, instance, what,
					   shmf_strerror(rc), *detail ? " (" : "", detail);
	if (!msg)
		return NULL;
	if (*detail) {
		PyObject *m = PyUnicode_FromFormat("%U)", msg);
		Py_SETREF(msg, m);
		if (!msg)
			return NULL;
	}
	exc = PyObject_CallOneArg(class_of(rc), msg);
	Py_DECREF(msg);
	if (!exc)
		return NULL;
	PyObject *code = PyLong_FromLong(rc);
	if (!code || PyObject_SetAttrString(exc, "code", code) < 0 || PyObject_SetAttrString(exc, "filter", name) < 0 ||
	    PyObject_SetAttrString(exc, "instance", instance) < 0 ||
	    (extra_name && PyObject_SetAttrString(exc, extra_name, extra) < 0)) {
		Py_XDECREF(code);
		Py_DECREF(exc);
		return NULL;
	}
	Py_DECREF(code);
	PyErr_SetObject(class_of(rc), exc);
	Py_DECREF(exc);
	return NULL;
}

static PyObject *raise_rc(FilterObject *self, const char *what, int rc)
{
	return raise_code(self->name, self->instance, what, rc, NULL, NULL);
}

static PyObject *raise_closed(FilterObject *self, const char *what)
{
	PyErr_Format(PyExc_ValueError, "filter '%U': %s: the filter is closed", self->name, what);
	return NULL;
}

/* The bytes of a key: bytes as they are, str as UTF-8 (cached in the str
 * object, so valid while it lives). Anything else is a TypeError. */
static inline int key_of(PyObject *key, const char **p, Py_ssize_t *n)
{
	if (PyBytes_CheckExact(key) || PyBytes_Check(key)) {
		*p = PyBytes_AS_STRING(key);
		*n = PyBytes_GET_SIZE(key);
		return 0;
	}
	if (PyUnicode_Check(key)) {
		*p = PyUnicode_AsUTF8AndSize(key, n);
		return *p ? 0 : -1;
	}
	PyErr_Format(PyExc_TypeError, "a key must be bytes or str, not %.200s", Py_TYPE(key)->tp_name);
	return -1;
}

/* ---- Opening and closing --------------------------------------------- */

/* A name as a C string; one with a NUL inside would be cut short there
 * (and open another filter), so it is refused. */
static const char *c_name(PyObject *s, const char *what)
{
	Py_ssize_t n;
	const char *p = PyUnicode_AsUTF8AndSize(s, &n);

	if (p && strlen(p) != (size_t)n) {
		PyErr_Format(PyExc_ValueError, "the filter's %s contains a NUL character: %R", what, s);
		return NULL;
	}
	return p;
}

static PyObject *Filter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name", "writable", "instance", NULL };
	PyObject *name, *instance = Py_None;
	int writable = 0;
	const char *cname, *cinst = NULL;
	shmf_t *f = NULL;
	FilterObject *self;
	PyThreadState *ts;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|pO:Filter", kwlist, &name, &writable, &instance))
		return NULL;
	if (instance != Py_None && !PyUnicode_Check(instance))
		return PyErr_Format(PyExc_TypeError, "instance must be str or None, not %.200s",
				    Py_TYPE(instance)->tp_name);
	if (!(cname = c_name(name, "name")) || (instance != Py_None && !(cinst = c_name(instance, "instance"))))
		return NULL;
	ts = PyEval_SaveThread();
	rc = shmf_open(cinst, cname, writable ? SHMF_RDWR : SHMF_RDONLY, &f);
	PyEval_RestoreThread(ts);
	if (rc < 0)
		return raise_code(name, instance, "open", rc, NULL, NULL);
	self = (FilterObject *)type->tp_alloc(type, 0);
	if (!self) {
		shmf_close(f);
		return NULL;
	}
	self->f = f;
	self->name = Py_NewRef(name);
	self->instance = Py_NewRef(instance);
	self->writable = writable;
	return (PyObject *)self;
}

static void Filter_dealloc(FilterObject *self)
{
	/* A batch call holds a reference to self: none is in flight here. */
	shmf_close(self->f);
	Py_XDECREF(self->name);
	Py_XDECREF(self->instance);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Filter_close(FilterObject *self, PyObject *unused)
{
	(void)unused;
	if (self->busy)
		return PyErr_Format(PyExc_RuntimeError,
				    "filter '%U': close: another thread is in a batch call on this filter", self->name);
	shmf_close(self->f);
	self->f = NULL;
	Py_RETURN_NONE;
}

static PyObject *Filter_enter(FilterObject *self, PyObject *unused)
{
	(void)unused;
	if (!self->f)
		return raise_closed(self, "with");
	return Py_NewRef(self);
}

static PyObject *Filter_exit(FilterObject *self, PyObject *args)
{
	(void)args;
	if (!Filter_close(self, NULL))
		return NULL;
	Py_RETURN_FALSE;
}

/* ---- Single keys ------------------------------------------------------- */

typedef int (*key_call)(shmf_t *, const void *, size_t);

static inline PyObject *one_key(FilterObject *self, PyObject *key, key_call call, const char *what, int as_bool)
{
	const char *p;
	Py_ssize_t n;
	int rc;

	if (key_of(key, &p, &n) < 0)
		return NULL;
	if (!self->f)
		return raise_closed(self, what);
	rc = call(self->f, p, (size_t)n);
	if (rc < 0)
		return raise_rc(self, what, rc);
	return as_bool ? PyBool_FromLong(rc) : PyLong_FromLong(rc);
}

static PyObject *Filter_check(FilterObject *self, PyObject *key)
{
	return one_key(self, key, shmf_check, "check", 1);
}

static PyObject *Filter_add(FilterObject *self, PyObject *key)
{
	return one_key(self, key, shmf_add, "add", 1);
}

static PyObject *Filter_add_unique(FilterObject *self, PyObject *key)
{
	return one_key(self, key, shmf_add_unique, "add_unique", 1);
}

static PyObject *Filter_delete(FilterObject *self, PyObject *key)
{
	return one_key(self, key, shmf_del, "delete", 1);
}

static PyObject *Filter_count(FilterObject *self, PyObject *key)
{
	return one_key(self, key, shmf_count, "count", 0);
}

static int Filter_contains(FilterObject *self, PyObject *key)
{
	const char *p;
	Py_ssize_t n;
	int rc;

	if (key_of(key, &p, &n) < 0)
		return -1;
	if (!self->f) {
		raise_closed(self, "in");
		return -1;
	}
	rc = shmf_check(self->f, p, (size_t)n);
	if (rc < 0) {
		raise_rc(self, "in", rc);
		return -1;
	}
	return rc;
}

static PyObject *Filter_add_capped(FilterObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	const char *p;
	Py_ssize_t n;
	unsigned long cap;
	int rc;

	if (nargs != 2)
		return PyErr_Format(PyExc_TypeError, "add_capped(key, cap) takes 2 arguments (%zd given)", nargs);
	if (key_of(args[0], &p, &n) < 0)
		return NULL;
	if (!PyLong_Check(args[1]) || PyBool_Check(args[1]))
		return PyErr_Format(PyExc_TypeError, "add_capped: cap must be an int, not %.200s",
				    Py_TYPE(args[1])->tp_name);
	cap = PyLong_AsUnsignedLong(args[1]);
	if (PyErr_Occurred() || cap > UINT_MAX) {
		PyErr_Clear();
		return PyErr_Format(PyExc_ValueError, "add_capped: cap must be between 0 and %u, got %R", UINT_MAX,
				    args[1]);
	}
	if (!self->f)
		return raise_closed(self, "add_capped");
	rc = shmf_add_capped(self->f, p, (size_t)n, (unsigned)cap);
	if (rc < 0)
		return raise_rc(self, "add_capped", rc);
	return PyLong_FromLong(rc);
}

/* ---- Batches ----------------------------------------------------------- */

typedef int (*batch_call)(shmf_t *, const shmf_key_t *, size_t, uint8_t *);

static PyObject *bools_of(const uint8_t *out, Py_ssize_t n)
{
	PyObject *list = PyList_New(n);
	Py_ssize_t i;

	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		PyList_SET_ITEM(list, i, Py_NewRef(out[i] ? Py_True : Py_False));
	return list;
}

/* Run @call on the keys of @seq (a list or tuple of bytes or str, which
 * hold the bytes alive) with the GIL released. Returns the list of bools,
 * or NULL with an exception; add_many's Full and NonScalingFull carry the
 * list as attribute "added" (the keys before the one that did not fit). */
static PyObject *batch_run(FilterObject *self, PyObject *seq, batch_call call, const char *what)
{
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), i, len;
	PyObject **items = PySequence_Fast_ITEMS(seq), *res = NULL;
	shmf_key_t *keys = PyMem_Malloc(n * sizeof(*keys) + n + 1);
	uint8_t *out = (uint8_t *)(keys + n);
	const char *p;
	PyThreadState *ts;
	int rc;

	if (!keys)
		return PyErr_NoMemory();
	for (i = 0; i < n; i++) {
		if (key_of(items[i], &p, &len) < 0)
			goto out;
		keys[i].ptr = p;
		keys[i].len = (size_t)len;
	}
	if (!self->f) {
		raise_closed(self, what);
		goto out;
	}
	self->busy++;
	atomic_fetch_add_explicit(&batches_in_flight, 1, memory_order_acquire);
	ts = PyEval_SaveThread();
	rc = call(self->f, keys, (size_t)n, out);
	/* release: pairs with the acquire load in before_fork(). */
	atomic_fetch_sub_explicit(&batches_in_flight, 1, memory_order_release);
	PyEval_RestoreThread(ts);
	self->busy--;
	if (rc >= 0 || (call == shmf_add_many && (rc == SHMF_E_FULL || rc == SHMF_E_NONSCALING))) {
		res = bools_of(out, n);
		if (res && rc < 0) {
			raise_code(self->name, self->instance, what, rc, "added", res);
			Py_CLEAR(res);
		}
	} else {
		raise_rc(self, what, rc);
	}
out:
	PyMem_Free(keys);
	return res;
}

static PyObject *batch(FilterObject *self, PyObject *keys, batch_call call, const char *what)
{
	PyObject *seq, *res;

	if (PyBytes_Check(keys) || PyUnicode_Check(keys))
		return PyErr_Format(PyExc_TypeError,
				    "%s takes an iterable of keys, not one %.200s key (wrap it in a list)", what,
				    Py_TYPE(keys)->tp_name);
	seq = PySequence_Fast(keys, "");
	if (!seq) {
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "%s takes an iterable of bytes or str keys, not %.200s", what,
				     Py_TYPE(keys)->tp_name);
		}
		return NULL;
	}
	if (PySequence_Fast_GET_SIZE(seq) == 0) {
		Py_DECREF(seq);
		if (!self->f)
			return raise_closed(self, what);
		return PyList_New(0);
	}
	res = batch_run(self, seq, call, what);
	Py_DECREF(seq);
	return res;
}

static PyObject *Filter_check_many(FilterObject *self, PyObject *keys)
{
	return batch(self, keys, shmf_check_many, "check_many");
}

static PyObject *Filter_add_many(FilterObject *self, PyObject *keys)
{
	return batch(self, keys, shmf_add_many, "add_many");
}

/* ---- info() and attributes -------------------------------------------- */

static int set_u64(PyObject *d, const char *k, uint64_t v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc = o ? PyDict_SetItemString(d, k, o) : -1;
	Py_XDECREF(o);
	return rc;
}

static int set_f64(PyObject *d, const char *k, double v)
{
	PyObject *o = PyFloat_FromDouble(v);
	int rc = o ? PyDict_SetItemString(d, k, o) : -1;
	Py_XDECREF(o);
	return rc;
}

static int set_str(PyObject *d, const char *k, const char *v)
{
	PyObject *o = PyUnicode_FromString(v);
	int rc = o ? PyDict_SetItemString(d, k, o) : -1;
	Py_XDECREF(o);
	return rc;
}

static int info_fill(PyObject *d, const shmf_info_t *in)
{
	int cuckoo = in->type == SHMF_TYPE_CUCKOO, fuse = in->type == SHMF_TYPE_STATIC;
	const char *type = cuckoo ? "cuckoo" : fuse ? "static" : "bloom";

	/* "error_rate" as SHMF.INFO, shmctl info --json and PHP's info() say. */
	if (set_str(d, "name", in->name) < 0 || set_str(d, "type", type) < 0 || set_u64(d, "k", in->k) < 0 ||
	    set_u64(d, "capacity", in->capacity) < 0 || set_f64(d, "error_rate", in->fpr_target) < 0 ||
	    set_u64(d, "bits", in->bits) < 0 || set_u64(d, "bytes", in->bytes) < 0 ||
	    set_u64(d, "items", in->items) < 0 || set_f64(d, "fill_ratio", in->fill_ratio) < 0 ||
	    set_f64(d, "fpr_estimate", in->fpr_estimate) < 0 || set_u64(d, "generation", in->generation) < 0 ||
	    set_u64(d, "window_secs", in->window_secs) < 0 ||
	    set_u64(d, "window_generations", in->window_generations) < 0 ||
	    set_u64(d, "live_generations", in->live_generations) < 0 || set_u64(d, "items_live", in->items_live) < 0)
		return -1;
	/* A Bloom filter's lines a key (0: an import from RedisBloom). */
	if (!cuckoo && !fuse && in->lines != 0 && set_u64(d, "lines", in->lines) < 0)
		return -1;
	/* A static filter's fingerprints, in segments (SHMF.INFO's names). */
	if (fuse && (set_u64(d, "fingerprints", in->buckets) < 0 || set_u64(d, "segment_length", in->bucket_size) < 0 ||
		     set_u64(d, "fingerprint_bits", in->fingerprint_bits) < 0))
		return -1;
	if (cuckoo &&
	    (set_u64(d, "buckets", in->buckets) < 0 || set_u64(d, "bucket_size", in->bucket_size) < 0 ||
	     set_u64(d, "fingerprint_bits", in->fingerprint_bits) < 0 || set_u64(d, "max_kicks", in->max_kicks) < 0 ||
	     set_u64(d, "relocations", in->relocations) < 0 || set_u64(d, "deletes", in->deletes) < 0))
		return -1;
	return 0;
}

static PyObject *Filter_info(FilterObject *self, PyObject *unused)
{
	shmf_info_t in;
	PyObject *d;
	int rc;

	(void)unused;
	if (!self->f)
		return raise_closed(self, "info");
	rc = shmf_info(self->f, &in);
	if (rc < 0)
		return raise_rc(self, "info", rc);
	d = PyDict_New();
	if (!d)
		return NULL;
	if (info_fill(d, &in) < 0 || PyDict_SetItemString(d, "writable", self->writable ? Py_True : Py_False) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static PyObject *Filter_repr(FilterObject *self)
{
	const char *state = self->f ? (self->writable ? "writable" : "check-only") : "closed";

	if (self->instance == Py_None)
		return PyUnicode_FromFormat("<shmf.Filter '%U' %s>", self->name, state);
	return PyUnicode_FromFormat("<shmf.Filter '%U' of instance '%U' %s>", self->name, self->instance, state);
}

static PyObject *Filter_get_closed(FilterObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->f == NULL);
}

static PyObject *Filter_get_writable(FilterObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->writable);
}

static PyObject *Filter_get_name(FilterObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef(self->name);
}

static PyObject *Filter_get_instance(FilterObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef(self->instance);
}

// clang-format off
static PyMethodDef Filter_methods[] = {
	{"check", (PyCFunction)Filter_check, METH_O,
	 "check(key) -> bool\n\nTrue if the key may be in the filter (false positives at the filter's rate),\n"
	 "False if it certainly is not. `key in f` is the same. A key is bytes, or str (UTF-8)."},
	{"add", (PyCFunction)Filter_add, METH_O,
	 "add(key) -> bool\n\nAdd a key. Bloom: True if the key was new (two racing adds of a new key may\n"
	 "both be told so). Cuckoo: stores one more copy, True. Raises ReadOnly on a\n"
	 "check-only handle, Full when a cuckoo filter has no room."},
	{"add_unique", (PyCFunction)Filter_add_unique, METH_O,
	 "add_unique(key) -> bool\n\nAdd the key only if absent (CF.ADDNX), atomically against every other\n"
	 "add_unique and add_capped on the filter in any process. True if it was added."},
	{"add_capped", (PyCFunction)(void (*)(void))Filter_add_capped, METH_FASTCALL,
	 "add_capped(key, cap) -> int\n\nCuckoo: add a copy only if fewer than cap copies are present, atomically\n"
	 "across processes. Returns the copies present before the call: the add\n"
	 "happened if and only if that is below cap."},
	{"delete", (PyCFunction)Filter_delete, METH_O,
	 "delete(key) -> bool\n\nCuckoo: remove one copy of the key; True if one was removed. Deleting a key\n"
	 "never added may remove another key's copy."},
	{"count", (PyCFunction)Filter_count, METH_O,
	 "count(key) -> int\n\nCuckoo: copies of the key's fingerprint in its two buckets."},
	{"check_many", (PyCFunction)Filter_check_many, METH_O,
	 "check_many(keys) -> list[bool]\n\nCheck every key of an iterable of bytes or str in one batch call, the\n"
	 "GIL released; much faster per key than a loop of check()."},
	{"add_many", (PyCFunction)Filter_add_many, METH_O,
	 "add_many(keys) -> list[bool]\n\nAdd every key of an iterable in one batch call, the GIL released; True\n"
	 "where the key was new. On Full or NonScalingFull the exception's `added`\n"
	 "is the list: the keys before the one that did not fit were stored."},
	{"info", (PyCFunction)Filter_info, METH_NOARGS,
	 "info() -> dict\n\nThe filter's type, sizing, items and estimates (shmf_info)."},
	{"close", (PyCFunction)Filter_close, METH_NOARGS,
	 "close() -> None\n\nClose the handle; later calls raise ValueError. Closing twice is allowed."},
	{"__enter__", (PyCFunction)Filter_enter, METH_NOARGS, "Return the filter."},
	{"__exit__", (PyCFunction)Filter_exit, METH_VARARGS, "Close the filter."},
	{NULL, NULL, 0, NULL},
};

static PyGetSetDef Filter_getset[] = {
	{"name", (getter)Filter_get_name, NULL, "The filter's name.", NULL},
	{"instance", (getter)Filter_get_instance, NULL, "The instance's name, or None for the default one.", NULL},
	{"writable", (getter)Filter_get_writable, NULL, "True if the handle may add (opened with writable=True).", NULL},
	{"closed", (getter)Filter_get_closed, NULL, "True once close() was called.", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Filter_as_sequence = {
	.sq_contains = (objobjproc)Filter_contains,
};

static PyTypeObject FilterType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shmf.Filter",
	.tp_basicsize = sizeof(FilterObject),
	.tp_dealloc = (destructor)Filter_dealloc,
	.tp_repr = (reprfunc)Filter_repr,
	.tp_as_sequence = &Filter_as_sequence,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Filter(name, writable=False, instance=None)\n--\n\n"
		  "An open shmfilter filter, mapped into this process: checks and adds\n"
		  "without a system call. writable=True opens it to add too (needs write\n"
		  "permission on the filter's data file). instance names shmd's instance\n"
		  "(None: 'default'). Open it once per process and reuse it: it follows\n"
		  "swaps and rotations by itself, works in children after fork(), and may\n"
		  "be shared by threads. Raises FilterNotFound, PermissionDenied, ...",
	.tp_methods = Filter_methods,
	.tp_getset = Filter_getset,
	.tp_new = Filter_new,
};
// clang-format on

/* ---- The module ---------------------------------------------------------- */

/* libshmf: do not fork while another thread is inside a call on a handle.
 * os.fork() holds the GIL, so no single call is running; wait for the
 * batch calls that released it (each returns on its own, without the GIL). */
static void before_fork(void)
{
	/* acquire: pairs with the release in batch_run(). */
	while (atomic_load_explicit(&batches_in_flight, memory_order_acquire) > 0)
		sched_yield();
}

static PyObject *shmf_strerror_py(PyObject *mod, PyObject *arg)
{
	long code = PyLong_AsLong(arg);

	(void)mod;
	if (code == -1 && PyErr_Occurred())
		return NULL;
	if (code < INT_MIN || code > INT_MAX)
		return PyErr_Format(PyExc_ValueError, "strerror: %ld is not an error code", code);
	return PyUnicode_FromString(shmf_strerror((int)code));
}

/* _c_loop(filter, keys, batch) -> ns per key: the same keys checked from C
 * alone (no interpreter), timed around the libshmf calls only: batch 0, a
 * loop of shmf_check(); else shmf_check_many() over batches of that many.
 * For bindings/python/bench-check.py, which compares the Python calls. */
static PyObject *c_loop(PyObject *mod, PyObject *args)
{
	PyObject *fo, *keys, *seq;
	Py_ssize_t batch, n, i, len;
	shmf_key_t *k;
	uint8_t *out;
	struct timespec t0, t1;
	long hits = 0;

	(void)mod;
	if (!PyArg_ParseTuple(args, "O!On:_c_loop", &FilterType, &fo, &keys, &batch))
		return NULL;
	if (!((FilterObject *)fo)->f)
		return raise_closed((FilterObject *)fo, "_c_loop");
	if (!(seq = PySequence_Fast(keys, "_c_loop: keys must be a list")))
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	k = PyMem_Malloc(n * sizeof(*k) + n + 1);
	out = (uint8_t *)(k + (n ? n : 1));
	for (i = 0; k && i < n; i++) {
		if (key_of(PySequence_Fast_GET_ITEM(seq, i), (const char **)&k[i].ptr, &len) < 0)
			break;
		k[i].len = (size_t)len;
	}
	if (!k || i < n) {
		PyMem_Free(k);
		Py_DECREF(seq);
		return k ? NULL : PyErr_NoMemory();
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i += batch ? batch : 1)
		hits += batch ? shmf_check_many(((FilterObject *)fo)->f, k + i, n - i < batch ? n - i : batch, out)
			      : shmf_check(((FilterObject *)fo)->f, k[i].ptr, k[i].len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	PyMem_Free(k);
	Py_DECREF(seq);
	return Py_BuildValue("dl", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (n ? n : 1), hits);
}

static PyMethodDef module_methods[] = {
	{ "strerror", shmf_strerror_py, METH_O,
	  "strerror(code) -> str\n\nlibshmf's sentence for a negative error code (an exception's .code)." },
	{ "_c_loop", c_loop, METH_VARARGS, "_c_loop(filter, keys, batch) -> (ns per key, hits): for the bench." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef shmf_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "shmf",
	.m_doc = "Bloom and cuckoo filters in shared memory, kept by shmd (libshmf's Python binding).\n\n"
		 "    f = shmf.Filter('clicks', writable=True)\n"
		 "    if f.add(url): ...   # new\n"
		 "    url in f; f.check_many(urls)\n",
	.m_size = -1,
	.m_methods = module_methods,
};

static PyObject *new_class(PyObject *mod, const char *name, PyObject *bases, const char *doc)
{
	char qual[64];
	PyObject *cls;

	snprintf(qual, sizeof(qual), "shmf.%s", name);
	cls = PyErr_NewExceptionWithDoc(qual, doc, bases, NULL);
	if (cls && PyModule_AddObjectRef(mod, name, cls) < 0)
		Py_CLEAR(cls);
	return cls;
}

static int add_exceptions(PyObject *mod)
{
	size_t i;

	Error = new_class(mod, "Error", NULL,
			  "A libshmf error: .code is the negative code, str() names the filter and the cause.");
	if (!Error)
		return -1;
	PyObject *b = PyTuple_Pack(2, Error, PyExc_PermissionError);
	PermissionDenied = b ? new_class(mod, "PermissionDenied", b, "No permission (EACCES, EPERM).") : NULL;
	Py_XDECREF(b);
	if (!PermissionDenied)
		return -1;
	for (i = 0; i < N_CODES; i++) {
		PyObject *also = Error;
		if (codes[i].bases[0] == 'V')
			also = PyExc_ValueError;
		else if (codes[i].bases[0] == 'F')
			also = class_of(SHMF_E_FULL);
		else if (codes[i].bases[0] == 'R')
			also = class_of(SHMF_E_READONLY);
		b = also == PyExc_ValueError ? PyTuple_Pack(2, Error, also) : PyTuple_Pack(1, also);
		code_classes[i] = b ? new_class(mod, codes[i].name, b, codes[i].doc) : NULL;
		Py_XDECREF(b);
		if (!code_classes[i])
			return -1;
	}
	return 0;
}

PyMODINIT_FUNC PyInit_shmf(void)
{
	PyObject *mod;
	static int atfork_done;

	if (PyType_Ready(&FilterType) < 0)
		return NULL;
	mod = PyModule_Create(&shmf_module);
	if (!mod)
		return NULL;
	if (PyModule_AddObjectRef(mod, "Filter", (PyObject *)&FilterType) < 0 || add_exceptions(mod) < 0 ||
	    PyModule_AddStringConstant(mod, "__version__", SHMF_VERSION_STRING) < 0 ||
	    PyModule_AddStringConstant(mod, "LIBSHMF_VERSION", SHMF_VERSION_STRING) < 0) {
		Py_DECREF(mod);
		return NULL;
	}
	if (!atfork_done && pthread_atfork(before_fork, NULL, NULL) == 0)
		atfork_done = 1;
	return mod;
}
