/*
 * fleet-auth.h - what proves a stream entry came from a member of the
 * fleet: the MAC key derived from the fleet's secret, the two tags every
 * entry carries, and the id a sender is remembered by.
 *
 * Key: Argon2id (libsodium's crypto_pwhash, FLEET_KDF_OPSLIMIT passes over
 * FLEET_KDF_MEMLIMIT bytes, a fixed salt) stretches the secret into a
 * master key, so that a weak secret costs a guesser that much per guess
 * against the tags Redis holds; crypto_kdf_derive_from_key() then derives
 * the MAC key from it (context FLEET_KDF_CONTEXT). The raw secret keys
 * nothing.
 *
 * Tags: keyed BLAKE2b (crypto_generichash) of FLEET_TAG_BYTES each, the
 * header tag over the version, node name, shape and sequence, the entry
 * tag over those and the batch. Two tags, so that a real entry whose batch
 * was changed (header tag right, entry tag wrong) is told from one made up
 * (header tag wrong). The field "m" of a stream entry is the header tag
 * then the entry tag.
 */
#ifndef SHMF_COMMON_FLEET_AUTH_H
#define SHMF_COMMON_FLEET_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define FLEET_KEY_BYTES    32u
#define FLEET_TAG_BYTES    16u
#define FLEET_MAC_BYTES    (2 * FLEET_TAG_BYTES) /* the field "m": header tag, entry tag */
#define FLEET_KDF_OPSLIMIT 2u                    /* Argon2id passes */
#define FLEET_KDF_MEMLIMIT (32u << 20)           /* Argon2id memory, bytes */
#define FLEET_KDF_CONTEXT  "shmfMAC2"            /* crypto_kdf's 8-byte context */

struct fleet_key {
	unsigned char k[FLEET_KEY_BYTES];
	unsigned char announce[FLEET_KEY_BYTES]; /* the announcements' AEAD key (subkey 2) */
};

/**
 * Derive the fleet's MAC key from @p secret (any length). Every node with
 * the same secret gets the same key. Takes about 50 ms and
 * FLEET_KDF_MEMLIMIT bytes, once at start.
 * @return 0, or -ENOMEM (libsodium could not start or allocate).
 */
int fleet_key_derive(const char *secret, struct fleet_key *out);

/** The tags of a stream entry: header tag then entry tag, into @p mac. */
void fleet_mac(const struct fleet_key *key, const char *node, size_t nodelen, uint64_t shape, uint64_t seq,
	       const void *batch, size_t len, unsigned char mac[FLEET_MAC_BYTES]);

/* What fleet_mac_verify() found. */
enum fleet_mac_result {
	FLEET_MAC_OK,     /* both tags verify */
	FLEET_MAC_HEADER, /* the header tag does not: not a member's entry (or another key) */
	FLEET_MAC_BATCH,  /* the header tag verifies, the entry tag does not: a member's entry, its batch changed */
};

/**
 * Check the tags @p mac (@p maclen bytes) of an entry, in constant time
 * for each tag. @return an enum fleet_mac_result; a @p maclen other than
 * FLEET_MAC_BYTES is FLEET_MAC_HEADER.
 */
int fleet_mac_verify(const struct fleet_key *key, const char *node, size_t nodelen, uint64_t shape, uint64_t seq,
		     const void *batch, size_t len, const unsigned char *mac, size_t maclen);

/*
 * Announcements: what a node publishes in Redis so that the others can
 * repair a filter from its copy (its listener's address and the
 * credentials for it). Sealed with XChaCha20-Poly1305 (libsodium's
 * crypto_aead_xchacha20poly1305_ietf) under a second key derived from the
 * same master key (subkey 2): the Poly1305 tag is the MAC that proves a
 * member wrote it, and the credentials are not readable by whoever else
 * may read Redis. The node name is the associated data, so one node's
 * announcement cannot pass for another's. Sealed: a random nonce
 * (FLEET_ANNOUNCE_NONCE bytes), then the ciphertext and its tag.
 */
#define FLEET_ANNOUNCE_NONCE 24u
#define FLEET_ANNOUNCE_OVER  (FLEET_ANNOUNCE_NONCE + 16u) /* sealed bytes beyond the text */
#define FLEET_ANNOUNCE_MAX   1024u                        /* the text, at most */

/** Seal @p len bytes of @p text (at most FLEET_ANNOUNCE_MAX) for node @p node into @p out (len + FLEET_ANNOUNCE_OVER
 * bytes). @return the bytes written. */
size_t fleet_announce_seal(const struct fleet_key *key, const char *node, const void *text, size_t len,
			   unsigned char *out);

/**
 * Open announcement @p in (@p inlen bytes) of node @p node into @p text
 * (room for FLEET_ANNOUNCE_MAX bytes and a NUL). @return the text's
 * length, or -1: too short or long, or its tag does not verify (forged,
 * altered, another node's, or sealed with another secret).
 */
int fleet_announce_open(const struct fleet_key *key, const char *node, const unsigned char *in, size_t inlen,
			char *text);

/** The id a sender of name @p node is remembered by in a slot: XXH3 of the name, never 0. */
uint64_t fleet_node_id(const char *node, size_t len);

#endif
