/*
 * users.c - real unix users and groups for the tests that need them, and
 * running a function as one of them (see users.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/users.h"

/* What was made, as the command that removes it: the users' userdel
 * first, then the groups' groupdel (a group goes only once no user has
 * it). Written as each is made, so that a signal handler has only to run
 * it. */
static char del_users[2048], del_groups[2048], del_all[4096];
static pid_t maker; /* the process that made them (0: nothing made yet) */

static const int caught[] = { SIGINT, SIGTERM, SIGABRT };
static struct sigaction before[sizeof(caught) / sizeof(caught[0])];

void users_remove(void)
{
	if (maker == 0 || getpid() != maker || del_all[0] == '\0')
		return;
	(void)!system(del_all);
	del_users[0] = del_groups[0] = del_all[0] = '\0';
}

static void on_signal(int sig)
{
	users_remove();
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		if (caught[i] == sig)
			sigaction(sig, &before[i], NULL);
	raise(sig); /* delivered, as before, once this handler returns */
}

/* Once, before the first is made: remove them at exit and on the signals
 * a test dies of. A signal that was ignored stays ignored. */
static void remove_later(void)
{
	if (maker != 0)
		return;
	maker = getpid();
	atexit(users_remove);
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		if (sigaction(caught[i], NULL, &before[i]) == 0 && before[i].sa_handler != SIG_IGN)
			sigaction(caught[i], &sa, NULL);
}

/* Remake del_all from the two lists, with the signals that run it held
 * off meanwhile. */
static void del_all_update(void)
{
	sigset_t set, old;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaddset(&set, caught[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	snprintf(del_all, sizeof(del_all), "%s%s", del_users, del_groups);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Make a group or a user named @p prefix and the pid (in @p name, @p cap
 * bytes) with the shell command "@p add NAME", after adding "@p del NAME"
 * to @p list (@p listcap bytes), so that a signal meanwhile removes what
 * is half made; taken off again when @p add fails. @return 0, or -1 (the
 * name or the list is full, or @p add did not exit 0). */
static int make(const char *add, const char *del, char *list, size_t listcap, const char *prefix, char *name,
		size_t cap)
{
	char cmd[1024];
	int n = snprintf(name, cap, "%s%u", prefix, (unsigned)getpid());
	if (n <= 0 || (size_t)n >= cap)
		return -1;
	size_t len = strlen(list);
	n = snprintf(list + len, listcap - len, "%s %s 2>/dev/null; ", del, name);
	if (n < 0 || (size_t)n >= listcap - len) {
		list[len] = '\0';
		return -1;
	}
	remove_later();
	del_all_update();
	snprintf(cmd, sizeof(cmd), "%s %s", add, name);
	int st = system(cmd);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	list[len] = '\0';
	del_all_update();
	return -1;
}

int users_make_group(const char *prefix, char *name, size_t cap, gid_t *gid)
{
	if (make("groupadd", "groupdel", del_groups, sizeof(del_groups), prefix, name, cap) < 0)
		return -1;
	if (gid == NULL)
		return 0;
	struct group *g = getgrnam(name);
	if (g == NULL)
		return -1;
	*gid = g->gr_gid;
	return 0;
}

int users_make_user(const char *prefix, char *name, size_t cap, uid_t *uid, ...)
{
	char add[640] = "useradd -M -N -s /usr/sbin/nologin";
	size_t len = strlen(add);
	const char *sep = " -G ";
	va_list ap;
	va_start(ap, uid);
	for (const char *g; (g = va_arg(ap, const char *)) != NULL; sep = ",") {
		int n = snprintf(add + len, sizeof(add) - len, "%s%s", sep, g);
		if (n < 0 || (size_t)n >= sizeof(add) - len) {
			va_end(ap);
			return -1;
		}
		len += (size_t)n;
	}
	va_end(ap);
	/* -f: also while a process of the user runs (a child acting as it when
	 * the test is killed), or the user would be left behind. */
	if (make(add, "userdel -f", del_users, sizeof(del_users), prefix, name, cap) < 0)
		return -1;
	if (uid == NULL)
		return 0;
	struct passwd *pw = getpwnam(name);
	if (pw == NULL)
		return -1;
	*uid = pw->pw_uid;
	return 0;
}

pid_t users_fork_as(const char *name)
{
	struct passwd *pw = getpwnam(name);
	assert_non_null(pw);
	pid_t parent = getpid(), pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	if (initgroups(name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
		_exit(100);
	if (setuid(0) == 0) /* really no way back */
		_exit(101);
	/* After the identity: changing it clears the parent-death signal. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(100);
	return 0;
}

int users_run_as(const char *name, int (*fn)(void))
{
	pid_t pid = users_fork_as(name);
	if (pid == 0) {
		int rc = fn();
		_exit(rc > 99 ? 99 : rc);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
