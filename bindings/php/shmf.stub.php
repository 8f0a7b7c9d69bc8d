<?php
/**
 * The API of the shmf extension (shmf.c), as PHP declarations: what
 * `php --rc 'Shmf\Filter'` shows. Not compiled; shmf.c's arginfo follows it.
 *
 * @generate-class-entries none
 */
namespace Shmf;

/**
 * A Bloom or cuckoo filter kept by shmd in shared memory.
 *
 * Opened once per process and reused: constructing a Filter for a filter the
 * process has opened already (same name, instance and mode) costs a hash
 * lookup, so a PHP-FPM worker opens each filter on its first request only.
 * The handle follows swaps and rotations by itself; after a drop, the next
 * call opens the filter again by name.
 */
final class Filter
{
    /**
     * @param string      $name     filter name (1-63 of A-Z a-z 0-9 _ . : -)
     * @param string|null $instance shmd instance; null: "default"
     * @param bool        $writable false: checks only (the data is mapped
     *                              read-only); true: may add and delete
     * @throws Exception  no such filter, no permission, invalid name, ...
     */
    public function __construct(string $name, ?string $instance = null, bool $writable = false) {}

    /** True if the key may be present (at the filter's FPR), false if it is certainly absent. */
    public function check(string $key): bool {}

    /** Add a key. Bloom: true if it was new. Cuckoo: true (one more copy is stored). */
    public function add(string $key): bool {}

    /** Add a key only if absent (cuckoo: atomically across processes). True if added. */
    public function addUnique(string $key): bool {}

    /**
     * Check many keys in one batch call (prefetching).
     * @param array<string|int> $keys
     * @return array<bool> the same keys, each mapped to check()'s answer
     */
    public function checkMany(array $keys): array {}

    /**
     * Add many keys in one batch call.
     * @param array<string|int> $keys
     * @return array<bool> the same keys, each mapped to add()'s answer
     */
    public function addMany(array $keys): array {}

    /** Cuckoo: remove one copy of a key that was added. True if a copy was removed. */
    public function delete(string $key): bool {}

    /** Cuckoo: copies of the key's fingerprint present (0 to 8). */
    public function count(string $key): int {}

    /**
     * Cuckoo: add a copy only if fewer than $cap are present, atomically
     * across every process ("at most 4 pushes per device per day").
     * @return int copies present before the call; the add happened iff it is below $cap
     */
    public function addCapped(string $key, int $cap): int {}

    /**
     * name, type ("bloom" or "cuckoo"), k, capacity, error_rate, bits, bytes,
     * items, fill_ratio, fpr_estimate, generation, writable; Bloom filters add
     * lines (cache lines a key's bits lie in: 1, 2 or 3); cuckoo filters
     * add buckets, bucket_size, fingerprint_bits, max_kicks, relocations and deletes.
     */
    public function info(): array {}

    /**
     * This process's persistent handles: a list of [instance, filter,
     * writable, open, opens], opens counting shmf_open calls (1 unless the
     * filter was dropped and opened again).
     */
    public static function handles(): array {}
}

/** A libshmf error: getMessage() names the filter and says what failed; getCode() is the SHMF_E_* code or -errno. */
class Exception extends \RuntimeException {}
