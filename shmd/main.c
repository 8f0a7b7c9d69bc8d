/*
 * main.c - shmd: start-up, the single-instance guarantee, signals, shutdown.
 */
#include <bsd/libutil.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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

#include "config.h"
#include "filejobs.h"
#include "hugepages.h"
#include "jobs.h"
#include "log.h"
#include "periodic.h"
#include "registry.h"
#include "replication.h"
#include "rundir.h"
#include "scandump.h"
#include "server.h"
#include "snapshot.h"
#include "tcp.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *to)
{
	fprintf(to, "usage: shmd [-f] [-c FILE] [-i INSTANCE]\n"
		    "  -f           stay in the foreground, log to stderr\n"
		    "  -c FILE      configuration file (INI); without it the embedded default:\n"
		    "               instance 'default', Bloom filter 'default' (1,000,000 keys, 1%% FPR)\n"
		    "  -i INSTANCE  instance name (overrides the file)\n"
		    "  -p           print the embedded default configuration and exit\n"
		    "  -V           print the version and exit\n"
		    "Segments live in $SHMF_RUNTIME_DIR, else /run/shmd (root), else $XDG_RUNTIME_DIR/shmd.\n");
}

/* What the server loop's tick works on. */
struct ticker {
	struct periodic periodic;
	struct replication *repl; /* NULL without [replication] */
};

static void on_tick(struct registry *reg, void *arg)
{
	struct ticker *t = arg;
	uint64_t now = (uint64_t)time(NULL);
	if (t->repl != NULL)
		replication_tick(t->repl, reg);
	registry_rotate_due(reg, now);
	periodic_tick(&t->periodic, reg, now);
	scandump_expire(); /* loads by chunks abandoned without a word */
}

/* Create the configured filters the instance does not hold yet. */
static int ensure_filters(struct registry *reg, const struct config *cfg)
{
	char err[REGISTRY_ERR_MAX];
	for (unsigned i = 0; i < cfg->nfilters; i++) {
		const struct filter_spec *f = &cfg->filters[i];
		int slot = registry_find(reg, f->name);
		if (slot >= 0) {
			const struct shmf_slot *s = &reg->ctl.slots[slot];
			double fpr;
			memcpy(&fpr, &s->fpr_bits, sizeof(fpr));
			if (s->capacity != f->capacity || fpr != f->fpr)
				log_msg(LOG_WARNING,
					"filter '%s': exists with capacity %" PRIu64
					" and fpr %g, configuration says %" PRIu64
					" and %g; keeping the existing filter (drop it to resize)",
					f->name, s->capacity, fpr, f->capacity, f->fpr);
			if (f->replicate && !(s->flags & SHMF_SLOT_REPLICATED))
				log_msg(LOG_WARNING,
					"filter '%s': the configuration says replicate = yes, but the existing filter was "
					"made without it (its hash seed is not the fleet's); it stays local: drop it to "
					"make it replicate",
					f->name);
			continue;
		}
		/* Missing (a first start, or a reboot emptied the runtime
		 * directory): from its newest valid snapshot when it has any
		 * (a replicated one then catches up from the snapshot's cursor). */
		if (f->snapshot_every != 0 && (slot = periodic_restore_newest(reg, f)) >= 0) {
			int rc = f->replicate ? registry_replicate(reg, slot, err, sizeof(err)) : 0;
			if (rc < 0) {
				log_msg(LOG_ERR, "%s", err);
				return rc;
			}
			continue;
		}
		int rc = registry_create(reg, f, err, sizeof(err));
		if (rc < 0) {
			log_msg(LOG_ERR, "%s", err);
			return rc;
		}
	}
	return 0;
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
	const char *config_path;
	int foreground;
	char sock_path[4096], pid_path[4096], root[4096];
	struct pidfh *pfh; /* NULL: not locked yet */
	struct registry reg;
	int reg_open;
	int unix_fd, tcp_fd; /* -1: none */
	char tcp_name[128];
};

/* The command line into @p d; -p, -V and -h answer and exit, and so does
 * a usage error (status 2). */
static void options(int argc, char **argv, struct daemon *d, const char **instance)
{
	int opt;
	while ((opt = getopt(argc, argv, "fc:i:hpV")) != -1) {
		switch (opt) {
		case 'f': d->foreground = 1; break;
		case 'c': d->config_path = optarg; break;
		case 'i': *instance = optarg; break;
		case 'p': fputs(config_default_text, stdout); exit(0);
		case 'V': puts("shmd " SHMF_VERSION_STRING); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "shmd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
}

/* The configuration (the file, or the embedded default), the instance name
 * of -i over it, and the instance's paths. 0, or the exit status after
 * saying why. */
static int configure(struct daemon *d, const char *instance)
{
	char err[512];
	int rc;
	if (d->config_path != NULL)
		rc = config_load(&d->cfg, d->config_path, err, sizeof(err));
	else
		rc = config_parse(&d->cfg, config_default_text, "embedded default", err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "shmd: configuration: %s\n", err);
		return 2;
	}
	if (instance != NULL) {
		if (shmf_name_check(instance) < 0) {
			fprintf(stderr, "shmd: -i '%s': %s\n", instance, shmf_strerror(SHMF_E_NAME));
			return 2;
		}
		snprintf(d->cfg.instance, sizeof(d->cfg.instance), "%s", instance);
	}
	if ((rc = shmf_runtime_dir(d->root, sizeof(d->root))) < 0 ||
	    (rc = shmf_instance_path(d->cfg.instance, ".sock", d->sock_path, sizeof(d->sock_path))) < 0 ||
	    (rc = shmf_instance_path(d->cfg.instance, ".pid", d->pid_path, sizeof(d->pid_path))) < 0) {
		fprintf(stderr, "shmd: runtime directory: %s\n", shmf_strerror(rc));
		return 1;
	}
	return 0;
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
	rlim_t want = SERVER_MAX_CLIENTS + SERVER_MAX_REFUSING + 64 + (cfg->tcp.enabled ? cfg->tcp.maxclients : 0);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
			log_msg(LOG_WARNING, "open-file limit %lu: fewer clients than configured can connect at once",
				(unsigned long)rl.rlim_cur);
	}
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
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
	if (ensure_filters(&d->reg, cfg) < 0)
		return 1;
	d->unix_fd = server_listen(d->sock_path, cfg->socket_mode, cfg->gid, err, sizeof(err));
	if (d->unix_fd < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	if (!cfg->tcp.enabled)
		return 0;
	d->tcp_fd = tcp_listen(cfg->tcp.bind, cfg->tcp.port, d->tcp_name, sizeof(d->tcp_name), err, sizeof(err));
	if (d->tcp_fd < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		return 1;
	}
	if (!tcp_is_loopback(d->tcp_fd) && cfg->tcp.requirepass[0] == '\0')
		log_msg(LOG_WARNING,
			"tcp listener %s is reachable beyond this host and has no requirepass: "
			"whoever reaches it may add to, create and drop filters",
			d->tcp_name);
	return 0;
}

/* Serve until SIGTERM or SIGINT, then take the last snapshots. 0 or the
 * exit status. */
static int serve(struct daemon *d)
{
	struct ticker t = { .repl = NULL };
	char err[512];
	periodic_init(&t.periodic, &d->cfg, (uint64_t)time(NULL));
	/* After daemon(): threads do not survive a fork. Redis is the
	 * engine's to reach; shmd serves whether it can or not. */
	if (d->cfg.repl.enabled && replication_start(&t.repl, &d->cfg.repl, &d->reg, err, sizeof(err)) < 0) {
		log_msg(LOG_ERR, "%s", err);
		return 1;
	}
	/* The file worker, after daemon() too; server_run() stops it. */
	if (jobs_start(err, sizeof(err)) < 0) {
		log_msg(LOG_ERR, "%s", err);
		replication_stop(t.repl);
		return 1;
	}
	struct server_opts so = {
		.unix_fd = d->unix_fd,
		.unix_path = d->sock_path,
		.tcp_fd = d->tcp_fd,
		.tcp_name = d->tcp_name,
		.tcp_port = d->cfg.tcp.port,
		.requirepass = d->cfg.tcp.requirepass,
		.tcp_maxclients = d->cfg.tcp.maxclients,
		.tcp_max_request = d->cfg.tcp.max_request,
		.wake_fd = t.repl != NULL ? replication_wake_fd(t.repl) : -1,
	};
	int rc = server_run(&d->reg, &so, &stop_requested, on_tick, &t);
	d->unix_fd = d->tcp_fd = -1; /* server_run() closed them and unlinked the socket */
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
	if (d->unix_fd >= 0) {
		close(d->unix_fd);
		unlink(d->sock_path);
	}
	if (d->reg_open)
		registry_close(&d->reg, served && d->cfg.remove_on_exit);
	if (d->pfh != NULL)
		pidfile_remove(d->pfh);
}

int main(int argc, char **argv)
{
	struct daemon d = { .unix_fd = -1, .tcp_fd = -1 };
	const char *instance = NULL;
	options(argc, argv, &d, &instance);
	int rc = configure(&d, instance);
	if (rc != 0)
		return rc;
	umask(077);
	/* Huge pages (and tmpfs at all) for the runtime root, before anything
	 * is created in it. */
	hugepages_prepare(d.root, d.cfg.huge_pages);
	if ((rc = lock_instance(&d)) != 0)
		return rc;
	raise_file_limit(&d.cfg);
	catch_signals();
	/* Everything that can fail on a bad configuration or environment happens
	 * before daemon(), so that the error reaches the terminal and the exit
	 * status, and the socket accepts clients once the parent has exited. */
	rc = open_all(&d);
	if (rc == 0 && !d.foreground) {
		if (daemon(0, 0) < 0) {
			fprintf(stderr, "shmd: cannot daemonize: %s\n", strerror(errno));
			rc = 1;
		} else {
			log_use_syslog(1);
		}
	}
	int served = 0;
	if (rc == 0) {
		pidfile_write(d.pfh);
		log_msg(LOG_INFO, "instance '%s' in %s (%s), pid %ld", d.cfg.instance, d.reg.dir_path,
			d.config_path ? d.config_path : "embedded default configuration", (long)getpid());
		hugepages_report(d.reg.dir.fd, d.reg.dir_path);
		rc = serve(&d);
		served = 1;
	}
	release(&d, served);
	return rc;
}
