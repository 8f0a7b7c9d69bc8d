/*
 * scandump.h - a live filter copied chunk by chunk over the protocol
 * (BF.SCANDUMP, CF.SCANDUMP) and loaded chunk by chunk into this or
 * another shmd (BF.LOADCHUNK, CF.LOADCHUNK), in the chunk format of
 * snapshot-format.h: a header chunk (the snapshot header with the stream
 * cursor, and the section headers), then the payload in pieces of at most
 * SHMF_CHUNK_BYTES (4 MiB), each with its offset and an XXH3 of the chunk.
 *
 * Dumping a Bloom filter keeps no state in the daemon: the iterator says
 * where the dump stands and, in its tag, what the filter was when it
 * began. Each chunk is copied as its request comes: a Bloom filter's bits
 * only ever get set, so a dump taken while adds go on holds every key
 * added before it began. A rotation or a replacement of the filter during
 * the dump refuses it (the caller starts again from 0).
 *
 * A cuckoo dump cannot work so: a move between two chunks could carry a
 * key from a chunk not yet copied into one already copied, and a busy
 * table near full moves fingerprints all the time. Its first request
 * copies the whole filter consistently on the file worker, as a snapshot
 * does (shmf_cuckoo_copy: writers go on and log their moves), and its
 * chunks come from that copy: a dump that completes holds every key stored
 * before it began and not deleted since, however busy the filter. The
 * copy is held until the last chunk, the connection's next dump or its
 * end, or scandump_idle_ms without a chunk; SCANDUMP_DUMPS_MAX at most at
 * once (a filter's size each).
 *
 * Loading builds a new filter out of sight (registry_load_begin(): data
 * files no slot names) as the chunks come, in order, checking each, and
 * publishes it with the last chunk, as a restore would (a new filter, or
 * one of the same name replaced at once), the stream cursor of the dump
 * set. A chunk that is malformed, out of order, of another dump or
 * truncated discards the load whole. A load belongs to the connection
 * that began it; it is discarded when that connection goes, or when no
 * chunk came for scandump_idle_ms.
 *
 * Single-threaded, like the registry: called from the server loop only.
 */
#ifndef SHMD_SCANDUMP_H
#define SHMD_SCANDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "common/snapshot-format.h"
#include "shmd/store/registry.h"

/* Loads in progress at once (each holds its new data files). */
#define SCANDUMP_LOADS_MAX 16

/* Cuckoo dumps in progress at once (each holds a copy of its filter). */
#define SCANDUMP_DUMPS_MAX 4

/* A load with no chunk for this many milliseconds is discarded (60 s;
 * tests shorten it). */
extern uint64_t scandump_idle_ms;

/* One chunk of a dump: the iterator that goes with it (0: the dump is
 * complete, and data is NULL) and its bytes, malloc'd. */
struct scandump_chunk {
	uint64_t iter;
	void *data;
	size_t len;
};

/**
 * The chunk that follows iterator @p iter (0: the first; for a cuckoo
 * filter only the chunks after the one scandump_copy_end() gave) of the
 * dump of filter @p name, of type @p type (SHMF_TYPE_*), for connection
 * @p owner (whose own held cuckoo dump is looked at first).
 * @return 0 with @p out filled (free out->data), or SHMF_E_NOTFOUND,
 *         SHMF_E_TYPE (the filter has the other type), SHMF_E_INVAL (an
 *         iterator past the end, or not of this filter), -EAGAIN (the
 *         filter changed since the dump began: start again from 0),
 *         -ENOMEM, -errno; @p err says which.
 */
int scandump_next(struct registry *r, const char *name, int type, uint64_t iter, uint64_t owner,
		  struct scandump_chunk *out, char *err, size_t errlen);

/* A cuckoo dump being begun, then held (scandump.c). */
struct held;

/**
 * Begin a cuckoo dump of filter @p name for connection @p owner (its
 * earlier dump, if any, is dropped): map its generations (on the loop).
 * @return 0 with *@p out, or SHMF_E_NOTFOUND, SHMF_E_TYPE, -EBUSY (too
 *         many dumps held), -errno; @p err says which.
 */
int scandump_copy_begin(struct registry *r, const char *name, uint64_t owner, struct held **out, char *err,
			size_t errlen);

/** Copy the dump's generations consistently (on a worker thread). 0, or an error (@p err). */
int scandump_copy_work(struct held *h, char *err, size_t errlen);

/**
 * After the copy (on the loop), with its outcome @p rc: hold the dump and
 * make its header chunk (@p out, as scandump_next() gives it), or drop it.
 * @return 0, or an error (@p err).
 */
int scandump_copy_end(struct registry *r, struct held *h, int rc, struct scandump_chunk *out, char *err, size_t errlen);

/** Cuckoo dumps begun or held (tests, INFO). */
unsigned scandump_dumps(void);

/**
 * Load chunk @p data (@p len bytes), which came with iterator @p iter,
 * into filter @p name for connection @p owner; @p type (SHMF_TYPE_*) is
 * the family of the verb.
 * @return 0 (the chunk is taken; more must come), 1 (it was the last: the
 *         filter is published), or an error, after which no load of
 *         @p name by @p owner remains: SHMF_E_FORMAT (malformed, truncated,
 *         out of order, or of another dump), SHMF_E_TYPE (the dump's type
 *         is not the verb's, or the filter that would be replaced has the
 *         other type), SHMF_E_NOTFOUND (no load in progress for a payload
 *         chunk), -EBUSY (another connection is loading @p name, or too
 *         many loads), and the errors of registry_load_begin() and
 *         registry_load_commit(). A payload chunk refused for want of a
 *         load of this connection leaves other connections' loads alone.
 */
int scandump_load(struct registry *r, uint64_t owner, const char *name, int type, uint64_t iter, const void *data,
		  size_t len, char *err, size_t errlen);

/**
 * A chunk of a dump that came from a peer, checked as LOADCHUNK checks
 * one (the fleet's self-repair reads chunks itself): its chunk header and
 * checksum into @p ch; for the header chunk (@p iter its iterator) also
 * the snapshot header and the sections it carries, into @p h and @p sec,
 * and that the dump is of @p type. @p what names the chunk in messages.
 * @return 0, or SHMF_E_FORMAT / SHMF_E_INVAL with @p err saying why.
 */
int scandump_chunk_check(const char *what, const void *data, size_t len, struct shmf_chunk_header *ch, char *err,
			 size_t errlen);
int scandump_head_check(const char *what, const struct shmf_chunk_header *ch, const void *body, uint64_t iter, int type,
			struct shmf_snap_header *h, struct shmf_snap_section *sec, char *err, size_t errlen);

/** Discard the loads of connection @p owner (it is gone). */
void scandump_owner_gone(uint64_t owner);

/** Discard the loads that had no chunk for scandump_idle_ms. */
void scandump_expire(void);

/** Loads in progress (for tests and INFO). */
unsigned scandump_loads(void);

#endif
