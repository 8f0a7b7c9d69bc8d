/*
 * daemon-process.h - a real shmd for the tests that need one (test-daemon,
 * test-tcp, test-crash, test-permissions, test-restart, ...), the runtime
 * directory it runs in, the socket calls to talk to it, and fork_child()
 * for the other processes they fork.
 *
 * Every process started here dies with the test program (PR_SET_PDEATHSIG),
 * so a failed assertion leaves no daemon behind.
 */
#ifndef SHMF_TEST_DAEMON_PROCESS_H
#define SHMF_TEST_DAEMON_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

/**
 * Make a fresh runtime directory "/dev/shm/shmf-@p what-XXXXXX" in @p root
 * (@p size bytes) and point SHMF_RUNTIME_DIR at it, for the daemons the
 * test starts and for its own libshmf calls. @return 0, or -1 (errno set).
 */
int daemon_rundir_make(char *root, size_t size, const char *what);

/** Remove runtime directory @p root with all it holds. @return 0, or -1. */
int daemon_rundir_remove(const char *root);

/**
 * The runtime directory of a test that runs one shmd instance in it, and
 * the paths of that instance's files (each fits a unix socket's path).
 */
struct daemon_dir {
	char root[64];  /* /dev/shm/shmf-WHAT-XXXXXX: SHMF_RUNTIME_DIR */
	char conf[100]; /* root/shmd.conf: the configuration the test writes */
	char log[100];  /* root/shmd.log: shmd's stderr */
	char sock[100]; /* root/INSTANCE.sock: shmd's socket */
	char idir[100]; /* root/INSTANCE: the instance directory, shmd's files */
};

/**
 * daemon_rundir_make() into @p d->root, with mode @p mode unless it is 0
 * (0755, as /run/shmd, lets other users pass to the socket; 0 keeps
 * mkdtemp's 0700), and the paths of the files of instance @p instance in
 * the rest of @p d. @return 0, or -1 (errno set).
 */
int daemon_dir_make(struct daemon_dir *d, const char *what, const char *instance, mode_t mode);

/**
 * The set-up of a test program that runs shmd as root for real local
 * users: fails, saying "@p test needs root", unless it runs as root;
 * calls @p make_users (the test's users and groups, made with users.h),
 * failing with a message when it returns < 0; then
 * daemon_dir_make(@p d, @p what, @p instance, 0755), so that the users
 * may pass to the socket. @return 0, or -1.
 */
int daemon_dir_make_as_root(struct daemon_dir *d, const char *test, int (*make_users)(void), const char *what,
			    const char *instance);

/**
 * The tear-down that goes with daemon_dir_make(): send @p sig to daemon
 * *@p pid and reap it when it runs (*@p pid > 0; 0 after), then remove
 * @p d->root with all it holds. @return 0, or -1 if it could not be
 * removed.
 */
int daemon_dir_remove(struct daemon_dir *d, pid_t *pid, int sig);

/**
 * Write the file @p path (a configuration, most often), made or emptied,
 * from printf-style @p fmt. @return 0, or -1 (errno set).
 */
int daemon_write_conf(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** @return how many lines of the daemon's log @p log contain @p text (0 when there is no log). */
int daemon_log_count(const char *log, const char *text);

/** @return how many snapshot files of filter @p name (NAME.*.snap) directory @p dir holds (0 when it cannot be read).
 */
int daemon_count_snapshots(const char *dir, const char *name);

/**
 * Copy the last @p lines lines of the daemon's log @p log to stderr, so that
 * a failed test shows what shmd said. @return 0, or -1 if that failed.
 */
int daemon_log_tail(const char *log, int lines);

/**
 * The text of file @p path (a daemon's log, the output of a command the
 * test ran), its first 64 KiB at most, in a static buffer that the next
 * call overwrites. @return the buffer: "" when the file cannot be read.
 */
char *daemon_read_file(const char *path);

/**
 * fork(), the child dying with the test program (PR_SET_PDEATHSIG), so
 * that a failed assertion leaves no process behind. A child that cannot
 * set that up, or whose parent is gone already, exits 126. Fails the test
 * when fork fails. @return the child's pid in the parent, 0 in the child.
 */
pid_t fork_child(void);

/**
 * Fork (fork_child()) and exec "@p shmd -f", with "-c @p conf" when @p conf is not NULL.
 * @p log: a file its stderr is appended to (created 0600), or NULL to keep
 * the test's. Does not wait. @return the pid; fails the test when fork
 * fails.
 */
pid_t daemon_spawn(const char *shmd, const char *conf, const char *log);

/**
 * Wait up to @p timeout_ms for the unix socket @p sock to accept a
 * connection from daemon @p pid. @return 0 when it does; -ECHILD when the
 * daemon exited first (reaped: its wait status in *status when @p status is
 * not NULL); -ETIMEDOUT.
 */
int daemon_wait_listening(pid_t pid, const char *sock, int timeout_ms, int *status);

/**
 * Start a daemon and wait (30 s at most) until @p sock accepts. Removes
 * @p sock first: a killed daemon leaves its socket file behind, which must
 * not pass for the new one's. @return the pid; fails the test, naming
 * @p log, when the daemon exits or does not listen.
 */
pid_t daemon_start(const char *shmd, const char *conf, const char *sock, const char *log);

/** Send @p sig to daemon @p pid and reap it. @return its wait status. */
int daemon_stop(pid_t pid, int sig);

/** Connect to the unix socket @p path. @return the fd, or -errno. */
int sock_unix_connect(const char *path);

/** Connect to 127.0.0.1:@p port. @return the fd, or -errno. */
int sock_tcp_connect(int port);

/** A loopback TCP port that was free a moment ago (aborts if none). */
int sock_free_port(void);

/** Send all @p len bytes (no SIGPIPE); fails the test if the peer is gone. */
void sock_send_all(int fd, const void *buf, size_t len);

/** Send all of @p buf to @p fd, retrying on EINTR, without failing the
 * test. @return 0, or -1 once the peer is gone (closed for memory, say). */
int sock_send_quiet(int fd, const void *buf, size_t len);

/**
 * Read until @p want bytes arrived, the peer closed, or nothing came for
 * @p timeout_ms. NUL-terminates @p buf (so at most @p cap - 1 bytes).
 * @return the bytes read.
 */
size_t sock_read_some(int fd, char *buf, size_t cap, size_t want, int timeout_ms);

/**
 * Send one request of @p argc arguments as RESP. @p lens: their lengths, or
 * NULL when they are strings. Fails the test if the peer is gone.
 */
void resp_send(int fd, int argc, const char *const *argv, const size_t *lens);

/**
 * Read into @p buf until it holds a CRLF (the first line of a reply, and
 * whatever came with it), within @p timeout_ms in all. @p buf is "" when no
 * whole line came (a timeout, or the peer died). @return strlen(buf).
 */
size_t resp_read_line(int fd, char *buf, size_t cap, int timeout_ms);

#endif
