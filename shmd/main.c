/*
 * main.c - shmd: start-up, the single-instance guarantee, signals, shutdown.
 */
#include <bsd/libutil.h>
#include <errno.h>
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
#include "hugepages.h"
#include "log.h"
#include "periodic.h"
#include "registry.h"
#include "rundir.h"
#include "server.h"
#include "tcp.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: shmd [-f] [-c FILE] [-i INSTANCE]\n"
		"  -f           stay in the foreground, log to stderr\n"
		"  -c FILE      configuration file (INI); without it the embedded default:\n"
		"               instance 'default', Bloom filter 'default' (1,000,000 keys, 1%% FPR)\n"
		"  -i INSTANCE  instance name (overrides the file)\n"
		"  -p           print the embedded default configuration and exit\n"
		"  -V           print the version and exit\n"
		"Segments live in $SHMF_RUNTIME_DIR, else /run/shmd (root), else $XDG_RUNTIME_DIR/shmd.\n");
}

static void on_tick(struct registry *reg, void *arg)
{
	uint64_t now = (uint64_t)time(NULL);
	registry_rotate_due(reg, now);
	periodic_tick(arg, reg, now);
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
					"filter '%s': exists with capacity %" PRIu64 " and fpr %g, configuration says %" PRIu64
					" and %g; keeping the existing filter (drop it to resize)",
					f->name, s->capacity, fpr, f->capacity, f->fpr);
			continue;
		}
		/* Missing (a first start, or a reboot emptied the runtime
		 * directory): from its newest valid snapshot when it has any. */
		if (f->snapshot_every != 0 && periodic_restore_newest(reg, f) >= 0)
			continue;
		if (registry_create(reg, f, err, sizeof(err)) < 0) {
			log_msg(LOG_ERR, "%s", err);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg;
	char err[512], sock_path[4096], pid_path[4096], root[4096];
	const char *config_path = NULL, *instance = NULL;
	int foreground = 0, opt, rc;

	while ((opt = getopt(argc, argv, "fc:i:hpV")) != -1) {
		switch (opt) {
		case 'f': foreground = 1; break;
		case 'c': config_path = optarg; break;
		case 'i': instance = optarg; break;
		case 'p': fputs(config_default_text, stdout); return 0;
		case 'V': puts("shmd " SHMF_VERSION_STRING); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "shmd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (config_path != NULL)
		rc = config_load(&cfg, config_path, err, sizeof(err));
	else
		rc = config_parse(&cfg, config_default_text, "embedded default", err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "shmd: configuration: %s\n", err);
		return 2;
	}
	if (instance != NULL) {
		if (shmf_name_check(instance) < 0) {
			fprintf(stderr, "shmd: -i '%s': %s\n", instance, shmf_strerror(SHMF_E_NAME));
			return 2;
		}
		snprintf(cfg.instance, sizeof(cfg.instance), "%s", instance);
	}
	if ((rc = shmf_runtime_dir(root, sizeof(root))) < 0 ||
	    (rc = shmf_instance_path(cfg.instance, ".sock", sock_path, sizeof(sock_path))) < 0 ||
	    (rc = shmf_instance_path(cfg.instance, ".pid", pid_path, sizeof(pid_path))) < 0) {
		fprintf(stderr, "shmd: runtime directory: %s\n", shmf_strerror(rc));
		return 1;
	}

	umask(077);
	/* Huge pages (and tmpfs at all) for the runtime root, before anything
	 * is created in it. */
	hugepages_prepare(root, cfg.huge_pages);

	pid_t other;
	struct pidfh *pfh = pidfile_open(pid_path, 0644, &other);
	if (pfh == NULL) {
		if (errno == EEXIST)
			fprintf(stderr, "shmd: instance '%s' is already running (pid %ld); not starting a second daemon\n",
				cfg.instance, (long)other);
		else
			fprintf(stderr, "shmd: pidfile %s: %s\n", pid_path, strerror(errno));
		return 1;
	}
	/* Room for every client the listeners admit, those being turned
	 * away, and our own files. */
	struct rlimit rl;
	rlim_t want = SERVER_MAX_CLIENTS + SERVER_MAX_REFUSING + 64 + (cfg.tcp.enabled ? cfg.tcp.maxclients : 0);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
			log_msg(LOG_WARNING, "open-file limit %lu: fewer clients than configured can connect at once",
				(unsigned long)rl.rlim_cur);
	}

	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* Everything that can fail on a bad configuration or environment happens
	 * before daemon(), so that the error reaches the terminal and the exit
	 * status, and the socket accepts clients once the parent has exited. */
	struct registry reg;
	if (registry_open(&reg, cfg.instance, cfg.dir_mode, 0640, cfg.gid, err, sizeof(err)) < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		pidfile_remove(pfh);
		return 1;
	}
	if (ensure_filters(&reg, &cfg) < 0) {
		registry_close(&reg, 0);
		pidfile_remove(pfh);
		return 1;
	}
	int listen_fd = server_listen(sock_path, cfg.socket_mode, cfg.gid, err, sizeof(err));
	if (listen_fd < 0) {
		fprintf(stderr, "shmd: %s\n", err);
		registry_close(&reg, 0);
		pidfile_remove(pfh);
		return 1;
	}
	char tcp_name[128] = "";
	int tcp_fd = -1;
	if (cfg.tcp.enabled) {
		tcp_fd = tcp_listen(cfg.tcp.bind, cfg.tcp.port, tcp_name, sizeof(tcp_name), err, sizeof(err));
		if (tcp_fd < 0) {
			fprintf(stderr, "shmd: %s\n", err);
			close(listen_fd);
			unlink(sock_path);
			registry_close(&reg, 0);
			pidfile_remove(pfh);
			return 1;
		}
		if (!tcp_is_loopback(tcp_fd) && cfg.tcp.requirepass[0] == '\0')
			log_msg(LOG_WARNING, "tcp listener %s is reachable beyond this host and has no requirepass: "
					     "whoever reaches it may add to, create and drop filters", tcp_name);
	}
	if (!foreground) {
		if (daemon(0, 0) < 0) {
			fprintf(stderr, "shmd: cannot daemonize: %s\n", strerror(errno));
			close(listen_fd);
			if (tcp_fd >= 0)
				close(tcp_fd);
			unlink(sock_path);
			registry_close(&reg, 0);
			pidfile_remove(pfh);
			return 1;
		}
		log_use_syslog(1);
	}
	pidfile_write(pfh);
	log_msg(LOG_INFO, "instance '%s' in %s (%s), pid %ld", cfg.instance, reg.dir_path,
		config_path ? config_path : "embedded default configuration", (long)getpid());
	hugepages_report(reg.dir.fd, reg.dir_path);

	struct periodic periodic;
	periodic_init(&periodic, &cfg, (uint64_t)time(NULL));
	struct server_opts so = {
		.unix_fd = listen_fd, .unix_path = sock_path, .tcp_fd = tcp_fd, .tcp_name = tcp_name,
		.tcp_port = cfg.tcp.port, .requirepass = cfg.tcp.requirepass, .tcp_maxclients = cfg.tcp.maxclients,
		.tcp_max_request = cfg.tcp.max_request,
	};
	rc = server_run(&reg, &so, &stop_requested, on_tick, &periodic);
	periodic_final(&periodic, &reg);
	log_msg(LOG_INFO, "shutting down%s", cfg.remove_on_exit ? " and removing the segments" : "; segments stay for a restart");
	registry_close(&reg, cfg.remove_on_exit);
	pidfile_remove(pfh);
	return rc < 0 ? 1 : 0;
}
