/*
 * users.h - real unix users and groups for the tests that need them
 * (test-permissions, test-roles, test-connlimits), and running a function
 * as one of them.
 *
 * A name is a prefix and the test program's pid ("shmfm1234"), so that
 * tests running at once never share one. Everything made here is removed
 * when the test program exits, when it dies of SIGINT, SIGTERM or SIGABRT
 * (a failed test included), or at users_remove(). Making users needs root
 * (groupadd, useradd, userdel, groupdel).
 */
#ifndef SHMF_TEST_USERS_H
#define SHMF_TEST_USERS_H

#include <stddef.h>
#include <sys/types.h>

/**
 * Make a group named @p prefix and this process's pid; its name in @p name
 * (@p cap bytes), its gid in *@p gid unless @p gid is NULL.
 * @return 0, or -1 (the name does not fit, groupadd failed, or the group
 * cannot be looked up).
 */
int users_make_group(const char *prefix, char *name, size_t cap, gid_t *gid);

/**
 * Make a user named @p prefix and this process's pid, with no home
 * directory, no group of its own and no login shell (useradd -M -N -s
 * /usr/sbin/nologin), member of the groups the NULL-terminated list after
 * @p uid names (none when it is only NULL). Its name in @p name (@p cap
 * bytes), its uid in *@p uid unless @p uid is NULL.
 * @return 0, or -1 (as users_make_group()).
 */
int users_make_user(const char *prefix, char *name, size_t cap, uid_t *uid, ...) __attribute__((sentinel));

/**
 * Remove every user made here (also one a process still runs as), then
 * every group. Also runs at exit and on SIGINT, SIGTERM and SIGABRT (then
 * the signal does what it did before), in the process that made them
 * only: a forked child that exits or dies removes nothing.
 */
void users_remove(void);

/**
 * Fork a child with the identity of user @p name: its uid, its primary
 * group and the groups it is a member of (initgroups), with no way back to
 * root; it dies with the test program (PR_SET_PDEATHSIG). A child that
 * cannot take the identity or set that up exits 100; one that could be
 * root again, 101. Fails the test when @p name is not a user or fork fails.
 * @return the child's pid in the parent, 0 in the child.
 */
pid_t users_fork_as(const char *name);

/**
 * Run @p fn in a child forked by users_fork_as(@p name) and wait for it.
 * @return its exit status: what @p fn returned (99 when it is more: a
 * count of failed checks, say), 100 or 101 as users_fork_as() says, or
 * 128 + the signal it died of.
 */
int users_run_as(const char *name, int (*fn)(void));

#endif
