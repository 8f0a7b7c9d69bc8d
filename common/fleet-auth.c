/*
 * fleet-auth.c - the fleet's MAC key and the tags of a stream entry
 * (fleet-auth.h), on libsodium.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>
#include <xxhash.h>

#include "common/fleet-auth.h"
#include "common/fleet.h"

/* Argon2id's salt: fixed, so that every node derives the same key from
 * the same secret; the secret is what each fleet keeps to itself. */
static const unsigned char kdf_salt[crypto_pwhash_SALTBYTES] = "shmfilter fleet";

_Static_assert(sizeof(kdf_salt) == 16, "Argon2id's salt is 16 bytes");
_Static_assert(sizeof(FLEET_KDF_CONTEXT) - 1 == crypto_kdf_CONTEXTBYTES, "crypto_kdf's context is 8 bytes");
_Static_assert(FLEET_KEY_BYTES == crypto_kdf_KEYBYTES, "a crypto_kdf master key");
_Static_assert(FLEET_TAG_BYTES >= crypto_generichash_BYTES_MIN, "BLAKE2b's shortest output");

int fleet_key_derive(const char *secret, struct fleet_key *out)
{
	unsigned char master[crypto_kdf_KEYBYTES];
	if (sodium_init() < 0)
		return -ENOMEM;
	if (crypto_pwhash(master, sizeof(master), secret, strlen(secret), kdf_salt, FLEET_KDF_OPSLIMIT,
			  FLEET_KDF_MEMLIMIT, crypto_pwhash_ALG_ARGON2ID13) != 0)
		return -ENOMEM;
	crypto_kdf_derive_from_key(out->k, sizeof(out->k), 1, FLEET_KDF_CONTEXT, master);
	crypto_kdf_derive_from_key(out->announce, sizeof(out->announce), 2, FLEET_KDF_CONTEXT, master);
	sodium_memzero(master, sizeof(master));
	return 0;
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The header's bytes, the same in both tags: the version, then the node
 * name after its length, so that no two headers hash alike. */
static void header_update(crypto_generichash_state *st, const char *node, size_t nodelen, uint64_t shape, uint64_t seq)
{
	unsigned char fixed[1 + 1 + 8 + 8];
	fixed[0] = (unsigned char)FLEET_STREAM_VERSION[0];
	fixed[1] = (unsigned char)nodelen;
	put_le64(fixed + 2, shape);
	put_le64(fixed + 10, seq);
	crypto_generichash_update(st, fixed, 2);
	crypto_generichash_update(st, (const unsigned char *)node, nodelen);
	crypto_generichash_update(st, fixed + 2, 16);
}

void fleet_mac(const struct fleet_key *key, const char *node, size_t nodelen, uint64_t shape, uint64_t seq,
	       const void *batch, size_t len, unsigned char mac[FLEET_MAC_BYTES])
{
	crypto_generichash_state st;
	static const unsigned char hdr = 'H', ent = 'E';
	unsigned char blen[8];
	crypto_generichash_init(&st, key->k, sizeof(key->k), FLEET_TAG_BYTES);
	crypto_generichash_update(&st, &hdr, 1);
	header_update(&st, node, nodelen, shape, seq);
	crypto_generichash_final(&st, mac, FLEET_TAG_BYTES);
	crypto_generichash_init(&st, key->k, sizeof(key->k), FLEET_TAG_BYTES);
	crypto_generichash_update(&st, &ent, 1);
	header_update(&st, node, nodelen, shape, seq);
	put_le64(blen, len);
	crypto_generichash_update(&st, blen, sizeof(blen));
	crypto_generichash_update(&st, batch, len);
	crypto_generichash_final(&st, mac + FLEET_TAG_BYTES, FLEET_TAG_BYTES);
}

int fleet_mac_verify(const struct fleet_key *key, const char *node, size_t nodelen, uint64_t shape, uint64_t seq,
		     const void *batch, size_t len, const unsigned char *mac, size_t maclen)
{
	unsigned char want[FLEET_MAC_BYTES];
	if (maclen != FLEET_MAC_BYTES || nodelen > FLEET_NODE_MAX)
		return FLEET_MAC_HEADER;
	fleet_mac(key, node, nodelen, shape, seq, batch, len, want);
	if (crypto_verify_16(want, mac) != 0)
		return FLEET_MAC_HEADER;
	return crypto_verify_16(want + FLEET_TAG_BYTES, mac + FLEET_TAG_BYTES) != 0 ? FLEET_MAC_BATCH : FLEET_MAC_OK;
}

_Static_assert(FLEET_ANNOUNCE_NONCE == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "XChaCha20's nonce");
_Static_assert(FLEET_ANNOUNCE_OVER - FLEET_ANNOUNCE_NONCE == crypto_aead_xchacha20poly1305_ietf_ABYTES,
	       "Poly1305's tag");

/* The associated data: a label, so that no other use of the key opens an
 * announcement, then the node name. */
static size_t announce_ad(const char *node, unsigned char *ad)
{
	static const char label[] = "shmf-announce-1";
	size_t n = strnlen(node, FLEET_NODE_MAX);
	memcpy(ad, label, sizeof(label));
	memcpy(ad + sizeof(label), node, n);
	return sizeof(label) + n;
}

size_t fleet_announce_seal(const struct fleet_key *key, const char *node, const void *text, size_t len,
			   unsigned char *out)
{
	unsigned char ad[32 + FLEET_NODE_MAX];
	unsigned long long clen = 0;
	size_t adlen = announce_ad(node, ad);
	randombytes_buf(out, FLEET_ANNOUNCE_NONCE);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + FLEET_ANNOUNCE_NONCE, &clen, text, len, ad, adlen, NULL, out,
						   key->announce);
	return FLEET_ANNOUNCE_NONCE + (size_t)clen;
}

int fleet_announce_open(const struct fleet_key *key, const char *node, const unsigned char *in, size_t inlen,
			char *text)
{
	unsigned char ad[32 + FLEET_NODE_MAX];
	unsigned long long len = 0;
	if (inlen < FLEET_ANNOUNCE_OVER || inlen > FLEET_ANNOUNCE_OVER + FLEET_ANNOUNCE_MAX)
		return -1;
	size_t adlen = announce_ad(node, ad);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)text, &len, NULL, in + FLEET_ANNOUNCE_NONCE,
						       inlen - FLEET_ANNOUNCE_NONCE, ad, adlen, in, key->announce) != 0)
		return -1;
	text[len] = '\0';
	return (int)len;
}

uint64_t fleet_node_id(const char *node, size_t len)
{
	uint64_t id = XXH3_64bits(node, len);
	return id != 0 ? id : 1;
}
