/*
 * hugepages.h - putting the segments on huge pages where the host allows.
 *
 * With 4 KiB pages a worker that maps a 1 GiB filter pays hundreds of
 * milliseconds of page faults over its first lookups; with 2 MiB pages a
 * few milliseconds. As root, shmd mounts a tmpfs with huge=within_size on
 * an empty runtime root that is not tmpfs already; otherwise it uses what
 * it finds and says which in the log and in SHMF.INFO.
 */
#ifndef SHMD_HUGEPAGES_H
#define SHMD_HUGEPAGES_H

/** Prepare the runtime root @p root (create it; mount a tmpfs as above when
 *  @p want is set and we are root). Logs what it did; never fails hard. */
void hugepages_prepare(const char *root, int want);

/** Log whether segments in the directory open on @p dirfd get huge pages. */
void hugepages_report(int dirfd, const char *path);

/** 1 if files in the directory open on @p dirfd are backed by huge pages. */
int hugepages_dir_is_huge(int dirfd);

#endif
