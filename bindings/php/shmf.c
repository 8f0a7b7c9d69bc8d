/*
 * shmf.c - the shmf PHP extension: class Shmf\Filter over libshmf, and
 * Shmf\Exception for the library's errors (shmf.stub.php shows the API).
 *
 * A Filter object names a handle in the process's persistent table
 * (handles.c): in PHP-FPM the filter is opened by a worker's first request
 * and reused by all its later ones. Every method is a thin wrapper: parse
 * the arguments, call libshmf, turn a negative code into an exception that
 * carries shmf_strerror()'s sentence and the code.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include "php.h"
#include "ext/standard/info.h"
#include "ext/spl/spl_exceptions.h"
#include "zend_exceptions.h"

#include <shmf.h>

#include "handles.h"
#include "php_shmf.h"

#ifdef ZTS
#error "the shmf extension supports NTS PHP only (handles.c keeps one handle table per process, unlocked)"
#endif

static zend_class_entry *shmf_filter_ce;
static zend_class_entry *shmf_exception_ce;
static zend_object_handlers shmf_filter_handlers;

typedef struct {
	struct shmf_php_handle *h; /* NULL until the constructor succeeds */
	zend_object std;
} shmf_filter_obj;

static inline shmf_filter_obj *obj_of(zend_object *o)
{
	return (shmf_filter_obj *)((char *)o - XtOffsetOf(shmf_filter_obj, std));
}

static zend_object *filter_create(zend_class_entry *ce)
{
	shmf_filter_obj *o = zend_object_alloc(sizeof(shmf_filter_obj), ce);
	zend_object_std_init(&o->std, ce);
	object_properties_init(&o->std, ce);
	o->std.handlers = &shmf_filter_handlers;
	return &o->std;
}

/* Throw Shmf\Exception: "filter 'NAME'WHAT: sentence" (code: rc), WHAT
 * being "" or ": method"; a permission error carries libshmf's detail
 * (the file, its owner, group and mode, and what to change). */
static void throw_shmf(const struct shmf_php_handle *h, const char *what, int rc)
{
	const char *detail = rc == -EACCES || rc == -EPERM ? shmf_error_detail() : "";
	zend_throw_exception_ex(shmf_exception_ce, rc, "filter '%s'%s%s%s%s: %s%s%s%s", h->filter,
	                        h->instance ? " of instance '" : "", h->instance ? h->instance : "",
	                        h->instance ? "'" : "", what, shmf_strerror(rc),
	                        rc == SHMF_E_READONLY ? "; construct the Filter with writable: true to add" : "",
	                        detail[0] ? ": " : "", detail);
}

/* The handle of this object, reopened if its filter was dropped; NULL (and
 * an exception thrown) if there is none. */
static struct shmf_php_handle *this_handle(zval *this_ptr)
{
	struct shmf_php_handle *h = obj_of(Z_OBJ_P(this_ptr))->h;
	int rc;

	if (UNEXPECTED(h == NULL)) {
		zend_throw_error(NULL, "Shmf\\Filter object is not open (its constructor failed or was not called)");
		return NULL;
	}
	if (UNEXPECTED(h->f == NULL) && (rc = shmf_php_handle_reopen(h)) < 0) {
		throw_shmf(h, ": reopen", rc);
		return NULL;
	}
	return h;
}

/* After a failed call: a dropped filter's handle is closed so that the next
 * call opens the filter again by name. */
static void call_failed(struct shmf_php_handle *h, const char *what, int rc)
{
	throw_shmf(h, what, rc);
	if (rc == SHMF_E_DROPPED)
		shmf_php_handle_lost(h);
}

/* {{{ Shmf\Filter::__construct(string $name, ?string $instance = null, bool $writable = false) */
PHP_METHOD(Shmf_Filter, __construct)
{
	char *name, *instance = NULL;
	size_t name_len, instance_len = 0;
	bool writable = false;
	shmf_filter_obj *o = obj_of(Z_OBJ_P(ZEND_THIS));
	struct shmf_php_handle *h;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 3)
		Z_PARAM_PATH(name, name_len)
		Z_PARAM_OPTIONAL
		Z_PARAM_PATH_OR_NULL(instance, instance_len)
		Z_PARAM_BOOL(writable)
	ZEND_PARSE_PARAMETERS_END();

	if (o->h != NULL) {
		zend_throw_error(NULL, "Shmf\\Filter object is already open");
		RETURN_THROWS();
	}
	rc = shmf_php_handle_get(instance, name, writable, &h);
	if (rc < 0) {
		struct shmf_php_handle named = { .instance = instance };
		snprintf(named.filter, sizeof(named.filter), "%.*s%s", SHMF_NAME_MAX - 3, name,
		         name_len > SHMF_NAME_MAX ? "..." : "");
		throw_shmf(&named, "", rc);
		RETURN_THROWS();
	}
	o->h = h;
}
/* }}} */

/* One key in, a count or a flag out: the shape of most methods. */
#define KEY_CALL(what, call, ret)                                          \
	do {                                                                   \
		zend_string *key;                                              \
		struct shmf_php_handle *h;                                     \
		int rc;                                                        \
		ZEND_PARSE_PARAMETERS_START(1, 1)                              \
			Z_PARAM_STR(key)                                       \
		ZEND_PARSE_PARAMETERS_END();                                   \
		if ((h = this_handle(ZEND_THIS)) == NULL)                      \
			RETURN_THROWS();                                       \
		rc = call(h->f, ZSTR_VAL(key), ZSTR_LEN(key));                 \
		if (UNEXPECTED(rc < 0)) {                                      \
			call_failed(h, ": " what, rc);                         \
			RETURN_THROWS();                                       \
		}                                                              \
		ret(rc);                                                       \
	} while (0)

/* {{{ Shmf\Filter::check(string $key): bool  (true: may be present) */
PHP_METHOD(Shmf_Filter, check) { KEY_CALL("check", shmf_check, RETURN_BOOL); }
/* }}} */

/* {{{ Shmf\Filter::add(string $key): bool  (true: the key was new) */
PHP_METHOD(Shmf_Filter, add) { KEY_CALL("add", shmf_add, RETURN_BOOL); }
/* }}} */

/* {{{ Shmf\Filter::addUnique(string $key): bool  (true: added; false: present) */
PHP_METHOD(Shmf_Filter, addUnique) { KEY_CALL("addUnique", shmf_add_unique, RETURN_BOOL); }
/* }}} */

/* {{{ Shmf\Filter::delete(string $key): bool  (cuckoo: true if a copy was removed) */
PHP_METHOD(Shmf_Filter, delete) { KEY_CALL("delete", shmf_del, RETURN_BOOL); }
/* }}} */

/* {{{ Shmf\Filter::count(string $key): int  (cuckoo: copies present) */
PHP_METHOD(Shmf_Filter, count) { KEY_CALL("count", shmf_count, RETURN_LONG); }
/* }}} */

/* {{{ Shmf\Filter::addCapped(string $key, int $cap): int
 * (cuckoo: copies before the call; the add happened iff that is below cap) */
PHP_METHOD(Shmf_Filter, addCapped)
{
	zend_string *key;
	zend_long cap;
	struct shmf_php_handle *h;
	int rc;

	ZEND_PARSE_PARAMETERS_START(2, 2)
		Z_PARAM_STR(key)
		Z_PARAM_LONG(cap)
	ZEND_PARSE_PARAMETERS_END();

	if (cap < 0 || (zend_ulong)cap > UINT_MAX) {
		zend_argument_value_error(2, "must be between 0 and %u", UINT_MAX);
		RETURN_THROWS();
	}
	if ((h = this_handle(ZEND_THIS)) == NULL)
		RETURN_THROWS();
	rc = shmf_add_capped(h->f, ZSTR_VAL(key), ZSTR_LEN(key), (unsigned)cap);
	if (rc < 0) {
		call_failed(h, ": addCapped", rc);
		RETURN_THROWS();
	}
	RETURN_LONG(rc);
}
/* }}} */

typedef int (*batch_fn)(shmf_t *, const shmf_key_t *, size_t, uint8_t *);

/* checkMany and addMany: the keys of an array (strings or ints) in one
 * batch call; the answer keeps the array's keys, each mapped to a bool.
 * Strings are passed as they are; ints are converted into strs[], freed
 * after the call. */
static void batch_call(INTERNAL_FUNCTION_PARAMETERS, const char *what, batch_fn fn)
{
	HashTable *keys;
	struct shmf_php_handle *h;
	shmf_key_t *batch;
	zend_string **strs = NULL;
	uint8_t *out;
	zend_string *skey;
	zend_ulong ikey;
	zval *v;
	size_t n, i = 0, nints = 0;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 1)
		Z_PARAM_ARRAY_HT(keys)
	ZEND_PARSE_PARAMETERS_END();

	n = zend_hash_num_elements(keys);
	ZEND_HASH_FOREACH_VAL(keys, v) {
		ZVAL_DEREF(v);
		if (Z_TYPE_P(v) == IS_LONG) {
			nints++;
		} else if (Z_TYPE_P(v) != IS_STRING) {
			zend_argument_type_error(1, "must contain only strings and ints, %s given", zend_zval_type_name(v));
			RETURN_THROWS();
		}
	} ZEND_HASH_FOREACH_END();
	if ((h = this_handle(ZEND_THIS)) == NULL)
		RETURN_THROWS();
	if (n == 0)
		RETURN_EMPTY_ARRAY();

	batch = safe_emalloc(n, sizeof(*batch), 0);
	if (nints)
		strs = safe_emalloc(nints, sizeof(*strs), 0);
	out = emalloc(n);
	nints = 0;
	ZEND_HASH_FOREACH_VAL(keys, v) {
		ZVAL_DEREF(v);
		if (Z_TYPE_P(v) == IS_STRING) {
			batch[i].ptr = Z_STRVAL_P(v);
			batch[i].len = Z_STRLEN_P(v);
		} else {
			zend_string *s = strs[nints++] = zend_long_to_str(Z_LVAL_P(v));
			batch[i].ptr = ZSTR_VAL(s);
			batch[i].len = ZSTR_LEN(s);
		}
		i++;
	} ZEND_HASH_FOREACH_END();

	rc = fn(h->f, batch, n, out);
	for (i = 0; i < nints; i++)
		zend_string_release(strs[i]);
	if (strs)
		efree(strs);
	efree(batch);
	if (rc < 0) {
		efree(out);
		call_failed(h, what, rc);
		RETURN_THROWS();
	}
	i = 0;
	if (HT_IS_PACKED(keys) && HT_IS_WITHOUT_HOLES(keys)) {
		/* A list: the answer is a list too, filled in place. The two
		 * zvals are zeroed whole: the fill copies the value field too. */
		zval answer[2];
		memset(answer, 0, sizeof(answer));
		ZVAL_FALSE(&answer[0]);
		ZVAL_TRUE(&answer[1]);
		array_init_size(return_value, (uint32_t)n);
		zend_hash_real_init_packed(Z_ARRVAL_P(return_value));
		ZEND_HASH_FILL_PACKED(Z_ARRVAL_P(return_value)) {
			for (i = 0; i < n; i++)
				ZEND_HASH_FILL_ADD(&answer[out[i] != 0]);
		} ZEND_HASH_FILL_END();
	} else {
		array_init_size(return_value, (uint32_t)n);
		ZEND_HASH_FOREACH_KEY(keys, ikey, skey) {
			zval b;
			ZVAL_BOOL(&b, out[i++]);
			if (skey)
				zend_hash_add_new(Z_ARRVAL_P(return_value), skey, &b);
			else
				zend_hash_index_add_new(Z_ARRVAL_P(return_value), ikey, &b);
		} ZEND_HASH_FOREACH_END();
	}
	efree(out);
}

/* {{{ Shmf\Filter::checkMany(array $keys): array */
PHP_METHOD(Shmf_Filter, checkMany)
{
	batch_call(INTERNAL_FUNCTION_PARAM_PASSTHRU, ": checkMany", shmf_check_many);
}
/* }}} */

/* {{{ Shmf\Filter::addMany(array $keys): array */
PHP_METHOD(Shmf_Filter, addMany)
{
	batch_call(INTERNAL_FUNCTION_PARAM_PASSTHRU, ": addMany", shmf_add_many);
}
/* }}} */

/* Unsigned 64-bit counters as PHP ints: exact below 2^63, which no filter
 * reaches; clamped rather than wrapped negative if one ever did. */
static void add_u64(zval *arr, const char *k, uint64_t v)
{
	add_assoc_long(arr, k, v > (uint64_t)ZEND_LONG_MAX ? ZEND_LONG_MAX : (zend_long)v);
}

/* {{{ Shmf\Filter::info(): array */
PHP_METHOD(Shmf_Filter, info)
{
	struct shmf_php_handle *h;
	shmf_info_t in;
	int rc;

	ZEND_PARSE_PARAMETERS_NONE();
	if ((h = this_handle(ZEND_THIS)) == NULL)
		RETURN_THROWS();
	if ((rc = shmf_info(h->f, &in)) < 0) {
		call_failed(h, ": info", rc);
		RETURN_THROWS();
	}
	array_init(return_value);
	add_assoc_string(return_value, "name", in.name);
	add_assoc_string(return_value, "type",
	                 in.type == SHMF_TYPE_CUCKOO   ? "cuckoo"
	                 : in.type == SHMF_TYPE_STATIC ? "static"
	                                               : "bloom");
	add_assoc_long(return_value, "k", in.k);
	add_u64(return_value, "capacity", in.capacity);
	/* "error_rate", as SHMF.INFO, shmctl info --json and RedisBloom call it. */
	add_assoc_double(return_value, "error_rate", in.fpr_target);
	add_u64(return_value, "bits", in.bits);
	add_u64(return_value, "bytes", in.bytes);
	add_u64(return_value, "items", in.items);
	add_assoc_double(return_value, "fill_ratio", in.fill_ratio);
	add_assoc_double(return_value, "fpr_estimate", in.fpr_estimate);
	add_u64(return_value, "generation", in.generation);
	/* A Bloom filter's lines a key (0: an import from RedisBloom). */
	if (in.type == SHMF_TYPE_BLOOM && in.lines != 0)
		add_assoc_long(return_value, "lines", in.lines);
	if (in.type == SHMF_TYPE_CUCKOO) {
		add_u64(return_value, "buckets", in.buckets);
		add_assoc_long(return_value, "bucket_size", in.bucket_size);
		add_assoc_long(return_value, "fingerprint_bits", in.fingerprint_bits);
		add_assoc_long(return_value, "max_kicks", in.max_kicks);
		add_u64(return_value, "relocations", in.relocations);
		add_u64(return_value, "deletes", in.deletes);
	}
	if (in.type == SHMF_TYPE_STATIC) {
		/* fingerprints in segments, as SHMF.INFO names them */
		add_u64(return_value, "fingerprints", in.buckets);
		add_assoc_long(return_value, "segment_length", in.bucket_size);
		add_assoc_long(return_value, "fingerprint_bits", in.fingerprint_bits);
	}
	add_assoc_bool(return_value, "writable", h->writable);
}
/* }}} */

static void handle_row(const struct shmf_php_handle *h, void *arg)
{
	zval row;

	array_init(&row);
	if (h->instance)
		add_assoc_string(&row, "instance", h->instance);
	else
		add_assoc_null(&row, "instance");
	add_assoc_string(&row, "filter", (char *)h->filter);
	add_assoc_bool(&row, "writable", h->writable);
	add_assoc_bool(&row, "open", h->f != NULL);
	add_assoc_long(&row, "opens", (zend_long)h->opens);
	add_next_index_zval(arg, &row);
}

/* {{{ Shmf\Filter::handles(): array  (this process's persistent handles) */
PHP_METHOD(Shmf_Filter, handles)
{
	ZEND_PARSE_PARAMETERS_NONE();
	array_init(return_value);
	shmf_php_handles_each(handle_row, return_value);
}
/* }}} */

/* Argument information, as shmf.stub.php declares it. */
ZEND_BEGIN_ARG_INFO_EX(arginfo_construct, 0, 0, 1)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, instance, IS_STRING, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, writable, _IS_BOOL, 0, "false")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_key_bool, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_key_int, 0, 1, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_add_capped, 0, 2, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, cap, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_many, 0, 1, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, keys, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_array, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

static const zend_function_entry shmf_filter_methods[] = {
	PHP_ME(Shmf_Filter, __construct, arginfo_construct, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, check, arginfo_key_bool, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, add, arginfo_key_bool, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, addUnique, arginfo_key_bool, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, checkMany, arginfo_many, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, addMany, arginfo_many, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, delete, arginfo_key_bool, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, count, arginfo_key_int, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, addCapped, arginfo_add_capped, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, info, arginfo_array, ZEND_ACC_PUBLIC)
	PHP_ME(Shmf_Filter, handles, arginfo_array, ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
	PHP_FE_END
};

PHP_MINIT_FUNCTION(shmf)
{
	zend_class_entry ce;

	(void)type;
	(void)module_number;
	INIT_NS_CLASS_ENTRY(ce, "Shmf", "Exception", NULL);
	shmf_exception_ce = zend_register_internal_class_ex(&ce, spl_ce_RuntimeException);

	INIT_NS_CLASS_ENTRY(ce, "Shmf", "Filter", shmf_filter_methods);
	shmf_filter_ce = zend_register_internal_class_ex(&ce, NULL);
	shmf_filter_ce->ce_flags |= ZEND_ACC_FINAL | ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
	shmf_filter_ce->create_object = filter_create;
	memcpy(&shmf_filter_handlers, zend_get_std_object_handlers(), sizeof(shmf_filter_handlers));
	shmf_filter_handlers.offset = XtOffsetOf(shmf_filter_obj, std);
	shmf_filter_handlers.clone_obj = NULL; /* a handle, not a value */
	return SUCCESS;
}

PHP_MSHUTDOWN_FUNCTION(shmf)
{
	(void)type;
	(void)module_number;
	shmf_php_handles_close_all();
	return SUCCESS;
}

static void count_row(const struct shmf_php_handle *h, void *arg)
{
	(void)h;
	++*(int *)arg;
}

PHP_MINFO_FUNCTION(shmf)
{
	char n[16];
	int handles = 0;

	(void)zend_module;
	shmf_php_handles_each(count_row, &handles);
	snprintf(n, sizeof(n), "%d", handles);
	php_info_print_table_start();
	php_info_print_table_header(2, "shmf support", "enabled");
	php_info_print_table_row(2, "extension version", PHP_SHMF_VERSION);
	php_info_print_table_row(2, "libshmf version (compiled against)", SHMF_VERSION_STRING);
	php_info_print_table_row(2, "persistent handles in this process", n);
	php_info_print_table_end();
}

static const zend_module_dep shmf_deps[] = {
	ZEND_MOD_REQUIRED("spl")
	ZEND_MOD_END
};

zend_module_entry shmf_module_entry = {
	STANDARD_MODULE_HEADER_EX, NULL,
	shmf_deps,
	"shmf",
	NULL,
	PHP_MINIT(shmf),
	PHP_MSHUTDOWN(shmf),
	NULL,
	NULL,
	PHP_MINFO(shmf),
	PHP_SHMF_VERSION,
	STANDARD_MODULE_PROPERTIES
};

#ifdef COMPILE_DL_SHMF
ZEND_GET_MODULE(shmf)
#endif
