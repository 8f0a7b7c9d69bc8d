/*
 * hash.c - the salts of the bit positions (hash.h, shmf_pos).
 *
 * Odd 32-bit constants with 12 to 20 bits set, the low words of SplitMix64
 * outputs from seed 0x73686d66 ("shmf"), fixed here once: they are part of
 * the segment format (SHMF_FORMAT_VERSION 2), so they never change.
 */
#include "libclient/hash.h"

_Alignas(64) const uint32_t shmf_pos_salt[SHMF_K_MAX] = {
	0x1bdd56a3u, 0xf1b8d051u, 0xbd313c17u, 0x5d80bbddu, 0x944c858bu, 0x84e2a97du, 0x3c01a36du, 0xa4785763u,
	0xeed1b621u, 0xcc2c3605u, 0x27390acdu, 0x6c564447u, 0x94ca8a17u, 0x77d1c419u, 0x76a864a1u, 0x1ebcd8a5u,
	0x5ae5cb67u, 0x5a22b947u, 0xa3b64aedu, 0x9a7a2325u, 0x91a91d37u, 0x9d40d789u, 0x53e489c7u, 0x14ca0437u,
	0xd0a680dfu, 0xaae3982fu, 0x50c97b67u, 0xf22e6b9bu, 0x9c11f65fu, 0x7e6372edu, 0x82bb79fbu, 0xc5f31779u,
};
