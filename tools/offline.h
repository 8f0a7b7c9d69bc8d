/*
 * offline.h - the shmctl verbs that work on snapshot files without a
 * daemon: build (train a filter from a key list), inspect and plan
 * (what a filter of each layout costs).
 * Each returns shmctl's exit status (0, or 2 on any error).
 */
#ifndef SHMCTL_OFFLINE_H
#define SHMCTL_OFFLINE_H

/** shmctl build --type bloom|cuckoo --capacity N --fpr P --from FILE|- -o OUT */
int shmctl_build(int argc, char **argv);

/** shmctl inspect FILE [--json]: header fields and the checksum verdict. */
int shmctl_inspect(int argc, char **argv, int json);

/** shmctl plan --capacity N --fpr P [--window W [--generations G]] [--replicate] [--json]:
 * the memory, bits per key and lines per check of every layout (plan.c). */
int shmctl_plan(int argc, char **argv, int json);

#endif
