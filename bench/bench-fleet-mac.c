/*
 * bench-fleet-mac.c - the fleet's authentication alone (common/fleet-auth.h):
 * the key derived from a secret once, and the tags of one stream entry
 * signed and verified, for a drain's batch (512 journal entries, 8 KiB)
 * and the largest batch (FLEET_BATCH_MAX, 64 KiB), as ns per batch and per
 * journal entry. One thread, no Redis.
 *
 *   bench-fleet-mac [--quick]
 *
 * Figures print as "FIGURE name = value unit"; nothing is asserted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fleet-auth.h"
#include "common/fleet.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sign (or verify) a batch of @p entries journal entries @p rounds times;
 * ns per batch. */
static double run(const struct fleet_key *key, size_t entries, long rounds, int verify, int *sink)
{
	static unsigned char batch[FLEET_BATCH_MAX * FLEET_ENTRY_BYTES];
	unsigned char mac[FLEET_MAC_BYTES];
	size_t len = entries * FLEET_ENTRY_BYTES;
	for (size_t i = 0; i < len; i++)
		batch[i] = (unsigned char)(i * 131 + 7);
	fleet_mac(key, "node1", 5, 0x1234, 1, batch, len, mac);
	double t0 = now_s();
	for (long r = 0; r < rounds; r++) {
		if (verify)
			*sink += fleet_mac_verify(key, "node1", 5, 0x1234, 1, batch, len, mac, sizeof(mac));
		else
			fleet_mac(key, "node1", 5, 0x1234, (uint64_t)r, batch, len, mac);
		*sink += mac[r % FLEET_MAC_BYTES];
	}
	return (now_s() - t0) * 1e9 / (double)rounds;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "--quick"), sink = 0;
	struct fleet_key key;
	double t0 = now_s();
	if (fleet_key_derive("a fleet's secret", &key) < 0) {
		fprintf(stderr, "bench-fleet-mac: cannot derive the key\n");
		return 1;
	}
	printf("FIGURE fleet_kdf_ms = %.1f ms (Argon2id, %u passes over %u MiB, then crypto_kdf; once at start)\n",
	       (now_s() - t0) * 1e3, FLEET_KDF_OPSLIMIT, FLEET_KDF_MEMLIMIT >> 20);
	static const size_t sizes[] = { 512, FLEET_BATCH_MAX };
	for (size_t i = 0; i < 2; i++) {
		long rounds = (quick ? 2000L : 50000L) * 512 / (long)sizes[i];
		double sign = run(&key, sizes[i], rounds, 0, &sink), check = run(&key, sizes[i], rounds, 1, &sink);
		printf("FIGURE fleet_mac_sign_%zu_ns = %.0f ns per batch of %zu entries (%.1f ns an entry, %.2f GB/s)\n",
		       sizes[i], sign, sizes[i], sign / (double)sizes[i],
		       (double)(sizes[i] * FLEET_ENTRY_BYTES) / sign);
		printf("FIGURE fleet_mac_verify_%zu_ns = %.0f ns per batch of %zu entries (%.1f ns an entry)\n",
		       sizes[i], check, sizes[i], check / (double)sizes[i]);
	}
	return sink == 42 ? 2 : 0; /* never: keeps the loops */
}
