/* handles.c - the process's persistent libshmf handles (handles.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "php.h"
#include "handles.h"

/* Key "instance\0filter\0mode" -> struct shmf_php_handle * in persistent
 * memory: the table outlives requests. It is touched when a Filter object
 * is constructed, never on a check or an add. */
static HashTable table;
static bool table_ready;

static void handle_dtor(zval *zv)
{
	struct shmf_php_handle *h = Z_PTR_P(zv);
	shmf_close(h->f);
	free(h->instance);
	free(h);
}

int shmf_php_handle_get(const char *instance, const char *filter, bool writable,
                        struct shmf_php_handle **out)
{
	char key[2 * (SHMF_NAME_MAX + 1) + 1];
	size_t ilen = instance ? strlen(instance) : 0, flen = strlen(filter);
	struct shmf_php_handle *h;
	shmf_t *f;
	int rc;

	/* Too long to be valid: the library's answer, without asking it. */
	if (ilen > SHMF_NAME_MAX || flen > SHMF_NAME_MAX)
		return SHMF_E_NAME;
	memcpy(key, instance ? instance : "", ilen);
	key[ilen] = '\0';
	memcpy(key + ilen + 1, filter, flen);
	key[ilen + 1 + flen] = '\0';
	key[ilen + 2 + flen] = writable ? 'w' : 'r';

	if (!table_ready) {
		zend_hash_init(&table, 8, NULL, handle_dtor, 1);
		table_ready = true;
	}
	if ((h = zend_hash_str_find_ptr(&table, key, ilen + flen + 3)) != NULL) {
		*out = h;
		return 0;
	}
	rc = shmf_open(instance, filter, writable ? SHMF_RDWR : SHMF_RDONLY, &f);
	if (rc < 0)
		return rc;
	h = calloc(1, sizeof(*h));
	if (h == NULL || (instance && (h->instance = strdup(instance)) == NULL)) {
		free(h);
		shmf_close(f);
		return -ENOMEM;
	}
	h->f = f;
	memcpy(h->filter, filter, flen + 1);
	h->writable = writable;
	h->opens = 1;
	zend_hash_str_add_new_ptr(&table, key, ilen + flen + 3, h);
	*out = h;
	return 0;
}

int shmf_php_handle_reopen(struct shmf_php_handle *h)
{
	shmf_t *f;
	int rc;

	if (h->f != NULL)
		return 0;
	rc = shmf_open(h->instance, h->filter, h->writable ? SHMF_RDWR : SHMF_RDONLY, &f);
	if (rc < 0)
		return rc;
	h->f = f;
	h->opens++;
	return 0;
}

void shmf_php_handle_lost(struct shmf_php_handle *h)
{
	shmf_close(h->f);
	h->f = NULL;
}

void shmf_php_handles_each(void (*fn)(const struct shmf_php_handle *h, void *arg), void *arg)
{
	struct shmf_php_handle *h;

	if (!table_ready)
		return;
	ZEND_HASH_FOREACH_PTR(&table, h) {
		fn(h, arg);
	} ZEND_HASH_FOREACH_END();
}

void shmf_php_handles_close_all(void)
{
	if (table_ready) {
		zend_hash_destroy(&table);
		table_ready = false;
	}
}
