/*
 * hugepages.h - putting the segments on huge pages where the host allows.
 *
 * With 4 KiB pages a worker that maps a 1 GiB filter pays hundreds of
 * milliseconds of page faults over its first lookups; with 2 MiB pages a
 * few milliseconds. The tmpfs shmd mounts (tmpfs.h) asks for
 * huge=within_size; otherwise shmd uses what it finds and says which in
 * the log and in SHMF.INFO.
 */
#ifndef SHMD_HUGEPAGES_H
#define SHMD_HUGEPAGES_H

/** Log whether segments in the directory open on @p dirfd get huge pages. */
void hugepages_report(int dirfd, const char *path);

/** 1 if files in the directory open on @p dirfd are backed by huge pages. */
int hugepages_dir_is_huge(int dirfd);

#endif
