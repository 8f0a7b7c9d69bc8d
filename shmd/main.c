/*
 * main.c - shmd: start-up, the single-instance guarantee, daemonising,
 * signals (SIGTERM and SIGINT stop, SIGHUP reloads), shutdown.
 */
#include <bsd/libutil.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "shmd/config/config.h"
#include "shmd/config/config-check.h"
#include "shmd/config/config-keys.h"
#include "shmd/files/filejobs.h"
#include "shmd/base/hugepages.h"
#include "shmd/store/expires.h"
#include "shmd/files/jobs.h"
#include "shmd/files/grow.h"
#include "shmd/base/log.h"
#include "shmd/files/periodic.h"
#include "shmd/store/perms.h"
#include "shmd/store/quotas.h"
#include "shmd/store/registry.h"
#include "shmd/files/reload.h"
#include "shmd/fleet/replication.h"
#include "libclient/rundir.h"
#include "shmd/store/scandump.h"
#include "shmd/net/server.h"
#include "common/snapshot.h"
#include "shmd/net/metrics.h"
#include "shmd/net/tcp.h"
#include "shmd/store/tmpfs.h"

/* Set by the signal handlers, acted on by the server loop. */
static volatile sig_atomic_t stop_requested, reload_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: shmd [-f] [-t] [-c FILE] [-i INSTANCE] [-l LEVEL]\n"
		"  -f, --foreground      stay in the foreground, log to stderr\n"
		"  -c, --config FILE     configuration file (INI); without it " SHMD_CONFIG_DIR_DEFAULT "/shmd.conf\n"
		"                        (NAME.conf for -i NAME; $SHMD_CONFIG_DIR for another directory)\n"
		"                        when it exists, else the embedded default: instance 'default',\n"
		"                        Bloom filter 'default' (1,000,000 keys, 1%% FPR)\n"
		"  -t, --check-config    check the configuration (syntax, values, directories, ports) and exit:\n"
		"                        0 when it is valid, 2 with FILE:LINE messages when not\n"
		"  -i, --instance NAME   instance name (overrides the file)\n"
		"  -l, --log-level LEVEL debug, info, notice, warning or error (overrides log_level)\n"
		"  -p, --print-config    print the embedded default configuration and exit\n"
		"  -K, --config-keys     print every configuration key (section, key, value, summary) and exit\n"
		"  -V, --version         print the version and the commit it was built from, and exit\n"
		"  -h, --help            print this help and exit\n"
		"Signals: SIGTERM or SIGINT stop shmd; SIGHUP reloads the configuration file.\n"
		"Segments live in $SHMF_RUNTIME_DIR, else /run/shmd (root), else $XDG_RUNTIME_DIR/shmd.\n");
}

/* What the server loop's tick works on. */
struct ticker {
	struct periodic periodic;
	struct replication *repl; /* NULL without [replication] */
	struct reload_ctx *reload;
	int ready_told; /* READY=1 sent to the service manager */
};

static void on_tick(struct registry *reg, void *arg)
{
	struct ticker *t = arg;
	uint64_t now = (uint64_t)time(NULL);
	/* The first tick runs once server_run() watches the listeners: a
	 * client that connects now is served. */
	if (!t->ready_told) {
		t->ready_told = 1;
		reload_notify_ready(reg, NULL);
	}
	if (reload_requested) {
		static struct reload_report rep; /* large */
		reload_requested = 0;
		reload_run(t->reload, &rep); /* logs what it did */
	}
	if (t->repl != NULL)
		replication_tick(t->repl, reg);
	registry_rotate_due(reg, now);
	grow_tick(reg); /* growing filters' next layers */
	periodic_tick(&t->periodic, reg, now);
	scandump_expire(); /* loads by chunks abandoned without a word */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	expires_tick(reg, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000); /* EXPIRE's drops */
}

static void removed_stale(void *arg, const char *name)
{
	log_msg(LOG_WARNING, "removed %s/%s, left by a snapshot that did not finish (its writer is gone)",
		(const char *)arg, name);
}

/* Temporary snapshot files of writers that are gone (a shmd or shmctl
 * killed mid-write), in the directories this daemon knows of: every
 * snapshot_dir and snapshot_paths. */
static void remove_stale_temporaries(const struct config *cfg)
{
	const char *dirs[CONFIG_FILTERS_MAX + CONFIG_SNAPSHOT_PATHS_MAX + 1];
	unsigned n = 0;
	if (cfg->snapshot_dir[0] != '\0')
		dirs[n++] = cfg->snapshot_dir;
	for (unsigned i = 0; i < cfg->nsnapshot_paths; i++)
		dirs[n++] = cfg->snapshot_paths[i];
	for (unsigned i = 0; i < cfg->nfilters; i++)
		if (cfg->filters[i].snapshot_dir[0] != '\0')
			dirs[n++] = cfg->filters[i].snapshot_dir;
	for (unsigned i = 0; i < n; i++) {
		int seen = 0;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = strcmp(dirs[i], dirs[j]) == 0;
		int dfd = seen ? -1 : open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		snapshot_remove_stale(dfd, removed_stale, (void *)dirs[i]);
		close(dfd);
	}
}

/* What main() sets up, released in one place (release()) on every way out. */
struct daemon {
	struct config cfg;
	const char *config_path; /* NULL: the embedded default */
	char config_buf[4096];   /* config_path made absolute, or found in the configuration directory */
	int check_config;        /* --check-config: check, say, exit */
	int foreground;
	int log_level; /* --log-level, or -1 */
	char sock_path[4096], pid_path[4096], root[4096];
	struct pidfh *pfh; /* NULL: not locked yet */
	struct registry reg;
	int reg_open;
	int unix_fd, tcp_fd; /* -1: none */
	char tcp_name[128];
	int metrics_fd; /* [metrics] listen's socket until serve() hands it over; -1: none */
	char metrics_name[128];
	struct tmpfs_state tmpfs;
	struct reload_ctx reload;
};

/* A usage error: one line saying what was wrong, and where the help is. */
static void die_usage(const char *fmt, const char *what) __attribute__((noreturn));
static void die_usage(const char *fmt, const char *what)
{
	fputs("shmd: ", stderr);
	fprintf(stderr, fmt, what);
	fputs(" (see shmd --help)\n", stderr);
	exit(2);
}

/* The command line into @p d; -p, -K, -V and -h answer and exit, and so does
 * a usage error (status 2). */
static void options(int argc, char **argv, struct daemon *d, const char **instance)
{
	static const struct option longs[] = {
		{ "foreground", no_argument, NULL, 'f' },     { "config", required_argument, NULL, 'c' },
		{ "instance", required_argument, NULL, 'i' }, { "log-level", required_argument, NULL, 'l' },
		{ "print-config", no_argument, NULL, 'p' },   { "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },           { "config-keys", no_argument, NULL, 'K' },
		{ "check-config", no_argument, NULL, 't' },   { NULL, 0, NULL, 0 },
	};
	int opt;
	opterr = 0; /* our own one-line messages */
	while ((opt = getopt_long(argc, argv, ":fc:i:l:hpKtV", longs, NULL)) != -1) {
		switch (opt) {
		case 'f': d->foreground = 1; break;
		case 'c': d->config_path = optarg; break;
		case 'i': *instance = optarg; break;
		case 'l':
			if (log_parse_level(optarg, &d->log_level) < 0)
				die_usage("--log-level '%s': expected " LOG_LEVEL_NAMES, optarg);
			break;
		case 'p': fputs(config_default_text, stdout); exit(0);
		case 'K': config_keys_print(stdout); exit(0);
		case 't': d->check_config = 1; break;
		case 'V': puts("shmd " SHMF_VERSION_STRING " (commit " SHMF_COMMIT ")"); exit(0);
		case 'h': usage(stdout); exit(0);
		case ':': die_usage("option '%s' needs a value", argv[optind - 1]);
		default: die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		die_usage("unexpected argument '%s'", argv[optind]);
}

/* Which configuration: -c FILE made absolute (shmd changes to / and reads
 * it again at each reload), else the configuration directory's
 * shmd.conf (NAME.conf for -i NAME) when there is one, else the embedded
 * default (config_path NULL). 0, or the exit status after saying why. */
static int config_source(struct daemon *d, const char *instance)
{
	int rc;
	if (instance != NULL && shmf_name_check(instance) < 0) {
		fprintf(stderr, "shmd: -i '%s': %s\n", instance, shmf_strerror(SHMF_E_NAME));
		return 2;
	}
	if (d->config_path != NULL) {
		if ((rc = config_absolute_path(d->config_path, d->config_buf, sizeof(d->config_buf))) < 0) {
			fprintf(stderr, "shmd: -c '%s': %s\n", d->config_path, shmf_strerror(rc));
			return 2;
		}
		d->config_path = d->config_buf;
		return 0;
	}
	if ((rc = config_default_path(instance, d->config_buf, sizeof(d->config_buf))) < 0) {
		fprintf(stderr, "shmd: the configuration directory's path is too long: %s\n", shmf_strerror(rc));
		return 2;
	}
	d->config_path = rc == 1 ? d->config_buf : NULL;
	return 0;
}

/* The configuration (the file, or the embedded default), the instance name
 * of -i over it, and the instance's paths. 0, or the exit status after
 * saying why. */
static int configure(struct daemon *d, const char *instance)
{
	char err[512];
	int rc = config_source(d, instance);
	if (rc != 0)
		return rc;
	if (d->config_path != NULL)
		rc = config_load(&d->cfg, d->config_path, err, sizeof(err));
	else
		rc = config_parse(&d->cfg, config_default_text, "embedded default", err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "shmd: configuration: %s\n", err);
		return 2;
	}
	if (instance != NULL)
		snprintf(d->cfg.instance, sizeof(d->cfg.instance), "%s", instance);
	if ((rc = shmf_runtime_dir(d->root, sizeof(d->root))) < 0 ||
	    (rc = shmf_instance_path(d->cfg.instance, ".sock", d->sock_path, sizeof(d->sock_path))) < 0 ||
	    (rc = shmf_instance_path(d->cfg.instance, ".pid", d->pid_path, sizeof(d->pid_path))) < 0) {
		fprintf(stderr, "shmd: runtime directory: %s\n", shmf_strerror(rc));
		return 1;
	}
	return 0;
}

/* --check-config: the file parsed (configure() did) and what the host must
 * hold for it checked: directories, ports. Exit 0 saying so, or 2 with a
 * line per problem. */
static int check_config(struct daemon *d)
{
	static char out[16384];
	unsigned n = config_check_dirs(&d->cfg, d->cfg.create_dirs ? -1 : 0, out, sizeof(out));
	n += config_check_ports(&d->cfg, out, sizeof(out));
	if (n > 0) {
		fputs(out, stderr);
		fprintf(stderr, "shmd: %s: %u problem%s\n", d->cfg.origin, n, n == 1 ? "" : "s");
		return 2;
	}
	printf("shmd: %s: the configuration is valid (instance '%s', %u filter%s)\n", d->cfg.origin, d->cfg.instance,
	       d->cfg.nfilters, d->cfg.nfilters == 1 ? "" : "s");
	return 0;
}

/* The directories the configuration names exist (or are made with
 * create_dirs = yes) before anything starts: a snapshot directory that is
 * not there would otherwise fail every periodic snapshot later. 0 or 2. */
static int check_dirs(struct daemon *d)
{
	static char out[16384];
	if (config_check_dirs(&d->cfg, d->cfg.create_dirs, out, sizeof(out)) == 0)
		return 0;
	fputs(out, stderr);
	fprintf(stderr, "shmd: not starting (shmd --check-config checks a configuration)\n");
	return 2;
}

/* How shmd was started, in the control file: shmctl's hint when it is not
 * running names the same configuration. */
static void record_start(struct daemon *d, const char *instance)
{
	char cmd[SHMF_CTL_STARTED_BYTES];
	snprintf(cmd, sizeof(cmd), "shmd%s%s%s%s", d->config_path != NULL ? " -c " : "",
		 d->config_path != NULL ? d->config_path : "", instance != NULL ? " -i " : "",
		 instance != NULL ? instance : "");
	registry_record_start(&d->reg, cmd);
}

/* One daemon per instance: its pidfile, locked. 0 or the exit status. */
static int lock_instance(struct daemon *d)
{
	pid_t other;
	d->pfh = pidfile_open(d->pid_path, 0644, &other);
	if (d->pfh != NULL)
		return 0;
	if (errno == EEXIST)
		fprintf(stderr, "shmd: instance '%s' is already running (pid %ld); not starting a second daemon\n",
			d->cfg.instance, (long)other);
	else
		fprintf(stderr, "shmd: pidfile %s: %s\n", d->pid_path, strerror(errno));
	return 1;
}

/* Room for every client the listeners admit, those being turned away, and
 * our own files. */
static void raise_file_limit(const struct config *cfg)
{
	struct rlimit rl;
	rlim_t want = cfg->maxclients + SERVER_MAX_REFUSING + 64 + (cfg->tcp.enabled ? cfg->tcp.maxclients : 0);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
			log_msg(LOG_WARNING, "open-file limit %lu: fewer clients than configured can connect at once",
				(unsigned long)rl.rlim_cur);
	}
}

/* The handlers only set flags: the server loop (woken by EINTR) acts. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The registry with its configured filters, the control socket and the TCP
 * listener. 0, or the exit status after saying why. */
static int open_all(struct daemon *d)
{
	char err[512];
	const struct config *cfg = &d->cfg;
	if (registry_open(&d->reg, cfg->instance, cfg->dir_mode, 0640, cfg->gid, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	d->reg_open = 1;
	record_start(d, d->reload.instance);
	if (filejobs_configure(d->root, cfg->snapshot_paths, cfg->nsnapshot_paths, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	remove_stale_temporaries(cfg);
	d->reg.fleet = (struct registry_fleet){ .enabled = cfg->repl.enabled,
						.secret = cfg->repl.secret,
						.journal_rings = (unsigned)cfg->repl.journal_rings,
						.journal_entries = (unsigned)cfg->repl.journal_entries };
	if (registry_fleet_attach(&d->reg, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	/* Who made the writers' filters, before the configured ones are made
	 * (a record of a filter that is gone is dropped now, not inherited by
	 * a configured filter of its name); their quotas are [roles]'. */
	d->reg.quotas = &d->cfg.roles;
	quotas_load(&d->reg);
	if (reload_filters(&d->reg, cfg, NULL, 1) < 0)
		return 1;
	/* Files made by an earlier start keep what that configuration said:
	 * bring them to this one's group and modes before the socket listens,
	 * so that a client that can connect finds them so (the socket itself
	 * gets its group and mode as server_listen() makes it). */
	perms_apply(&d->reg, cfg, NULL);
	d->unix_fd = server_listen(d->sock_path, cfg->socket_mode, cfg->gid, err, sizeof(err));
	if (d->unix_fd < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	if (cfg->metrics.port != 0) {
		d->metrics_fd = tcp_listen(cfg->metrics.host, cfg->metrics.port, d->metrics_name,
					   sizeof(d->metrics_name), err, sizeof(err));
		if (d->metrics_fd < 0) {
			fprintf(stderr, "shmd: [metrics] listen = %s: %s\n", cfg->metrics.listen, err);
			return 1;
		}
	}
	if (!cfg->tcp.enabled)
		return 0;
	d->tcp_fd = tcp_listen(cfg->tcp.bind, cfg->tcp.port, d->tcp_name, sizeof(d->tcp_name), err, sizeof(err));
	if (d->tcp_fd < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	char warning[512];
	if (config_tcp_warning(cfg, d->tcp_name, warning, sizeof(warning)))
		log_msg(LOG_WARNING, "%s%s", warning,
			tcp_is_loopback(d->tcp_fd) ? "" : "; it is reachable beyond this host too");
	return 0;
}

/* Serve until SIGTERM or SIGINT, then take the last snapshots. 0 or the
 * exit status. */
static int serve(struct daemon *d)
{
	struct ticker t = { .repl = NULL, .reload = &d->reload };
	char err[512];
	/* Its socket is open since open_all(); MHD starts after daemonize(). */
	struct metrics *metrics = NULL;
	if (d->metrics_fd >= 0) {
		metrics = metrics_start(d->metrics_fd, d->metrics_name, err, sizeof(err));
		d->metrics_fd = -1; /* metrics_start() took it, or closed it */
		if (metrics == NULL) {
			log_msg(LOG_ERR, "%s", err);
			return 1;
		}
	}
	periodic_init(&t.periodic, &d->cfg, (uint64_t)time(NULL));
	d->reload.periodic = &t.periodic;
	/* After daemonize(): threads do not survive a fork. Redis is the
	 * engine's to reach; shmd serves whether it can or not. */
	if (d->cfg.repl.enabled && replication_start(&t.repl, &d->cfg.repl, &d->reg, err, sizeof(err)) < 0) {
		log_msg(LOG_ERR, "%s", err);
		metrics_stop(metrics);
		return 1;
	}
	/* The file worker, after daemonize() too; server_run() stops it. */
	if (jobs_start(err, sizeof(err)) < 0) {
		log_msg(LOG_ERR, "%s", err);
		replication_stop(t.repl);
		metrics_stop(metrics);
		return 1;
	}
	struct server_opts so = {
		.unix_fd = d->unix_fd,
		.unix_path = d->sock_path,
		.tcp_fd = d->tcp_fd,
		.tcp_name = d->tcp_name,
		.tcp_bind = d->cfg.tcp.bind,
		.tcp_port = d->cfg.tcp.port,
		.requirepass = d->cfg.tcp.requirepass,
		.unix_maxclients = d->cfg.maxclients,
		.unix_maxclients_per_user = d->cfg.maxclients_per_user,
		.unix_timeout = d->cfg.timeout,
		.tcp_maxclients = d->cfg.tcp.maxclients,
		.tcp_maxclients_per_addr = d->cfg.tcp.maxclients_per_addr,
		.tcp_timeout = d->cfg.tcp.timeout,
		.tcp_max_request = d->cfg.tcp.max_request,
		.maxmemory_clients = d->cfg.maxmemory_clients,
		.defaults = &d->cfg.defaults,
		.slowlog = &d->cfg.slowlog,
		.wake_fd = t.repl != NULL ? replication_wake_fd(t.repl) : -1,
		.roles = &d->cfg.roles,
		.metrics = metrics,
	};
	int rc = server_run(&d->reg, &so, &stop_requested, on_tick, &t);
	metrics_stop(metrics);
	d->unix_fd = d->tcp_fd = -1; /* server_run() closed them and unlinked the socket */
	d->reload.periodic = NULL;
	replication_stop(t.repl);
	periodic_final(&t.periodic, &d->reg);
	log_msg(LOG_INFO, "shutting down%s",
		d->cfg.remove_on_exit ? " and removing the segments" : "; segments stay for a restart");
	return rc < 0 ? 1 : 0;
}

/* Whatever is open, closed: listeners, registry (removing the segments
 * only after a clean run that was configured to), pidfile. */
static void release(struct daemon *d, int served)
{
	if (d->tcp_fd >= 0)
		close(d->tcp_fd);
	if (d->metrics_fd >= 0)
		close(d->metrics_fd);
	if (d->unix_fd >= 0) {
		close(d->unix_fd);
		unlink(d->sock_path);
	}
	if (d->reg_open)
		registry_close(&d->reg, served && d->cfg.remove_on_exit);
	if (d->pfh != NULL)
		pidfile_remove(d->pfh);
	if (served && d->cfg.remove_on_exit)
		tmpfs_release(d->root, &d->tmpfs);
}

/*
 * Become a daemon: fork, and let the parent exit only once the child has
 * written the pidfile (a byte on a pipe says so), so that whoever started
 * shmd reads a complete pidfile the moment shmd returns. The child leaves
 * the terminal's session and points stdin, stdout and stderr at
 * /dev/null. 0 in the child; the parent exits (0, or 1 when the child
 * could not finish). -errno when the fork fails.
 */
static int daemonize(struct daemon *d)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid > 0) {
		char ok = 1;
		close(p[1]);
		ssize_t n;
		while ((n = read(p[0], &ok, 1)) < 0 && errno == EINTR)
			;
		_exit(n == 1 && ok == 0 ? 0 : 1); /* the child owns everything now */
	}
	close(p[0]);
	char status = 0;
	if (setsid() < 0 || chdir("/") < 0 || pidfile_write(d->pfh) < 0) {
		fprintf(stderr, "shmd: cannot daemonize (pidfile %s): %s\n", d->pid_path, strerror(errno));
		status = 1;
	}
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	ssize_t w = write(p[1], &status, 1);
	close(p[1]);
	return status != 0 || w != 1 ? -EIO : 0;
}

int main(int argc, char **argv)
{
	struct daemon d = { .unix_fd = -1, .tcp_fd = -1, .metrics_fd = -1, .log_level = -1 };
	const char *instance = NULL;
	char err[512];
	/* Clients' buffers of 256 KiB and more (a big request, a burst of
	 * replies) get their own mappings, given back to the kernel when
	 * freed. glibc's default threshold rises to the largest block freed
	 * (up to 32 MiB), after which such buffers come from the heap, which
	 * keeps what a client made it grow: maxmemory_clients bounds what
	 * clients hold, and this makes it bound the daemon's memory too. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	options(argc, argv, &d, &instance);
	int rc = configure(&d, instance);
	if (rc != 0)
		return rc;
	if (d.check_config)
		return check_config(&d);
	if ((rc = check_dirs(&d)) != 0)
		return rc;
	d.reload = (struct reload_ctx){ .cfg = &d.cfg,
					.path = d.config_path,
					.instance = instance,
					.log_level = d.log_level,
					.daemonised = !d.foreground,
					.reg = &d.reg,
					.sock_path = d.sock_path };
	/* The log file now, so that a bad one stops shmd on the terminal;
	 * syslog (when daemonised without one) once daemonised. */
	if (reload_log(&(struct reload_ctx){ .log_level = d.log_level }, &d.cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	umask(077);
	/* The runtime root and its tmpfs, before anything is created in it. */
	tmpfs_prepare(d.root, d.cfg.mount_tmpfs, d.cfg.huge_pages, &d.tmpfs);
	if ((rc = lock_instance(&d)) != 0)
		return rc;
	raise_file_limit(&d.cfg);
	catch_signals();
	/* Everything that can fail on a bad configuration or environment happens
	 * before daemonising, so that the error reaches the terminal and the exit
	 * status, and the socket accepts clients once the parent has exited. */
	rc = open_all(&d);
	if (rc == 0 && !d.foreground) {
		if ((rc = daemonize(&d)) < 0) {
			log_msg(LOG_ERR, "cannot daemonize: %s", strerror(-rc));
			rc = 1;
		} else if (d.cfg.log_file[0] == '\0') {
			log_use_syslog();
		}
	} else if (rc == 0) {
		pidfile_write(d.pfh);
	}
	int served = 0;
	if (rc == 0) {
		reload_register(&d.reload);
		log_msg(LOG_INFO, "instance '%s' in %s (%s), pid %ld", d.cfg.instance, d.reg.dir_path,
			d.config_path ? d.config_path : "embedded default configuration", (long)getpid());
		hugepages_report(d.reg.dir.fd, d.reg.dir_path);
		rc = serve(&d);
		served = 1;
		reload_register(NULL);
	}
	release(&d, served);
	return rc;
}
