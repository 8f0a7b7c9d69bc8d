/*
 * config.h - the daemon's configuration: INI (parsed with inih), with an
 * embedded default so that shmd runs with no file at all.
 *
 *   [instance]
 *   name = default          ; instance name
 *   dir_mode = 0750         ; instance directory
 *   socket_mode = 0660      ; control socket
 *   group =                 ; group name or gid for directory, socket, files
 *   remove_on_exit = false  ; unlink the segments on clean shutdown
 *   huge_pages = auto       ; auto | off: the tmpfs shmd mounts gets huge=within_size
 *   mount_tmpfs = auto      ; auto: only on a /run/shmd shmd creates (root); yes: on the
 *                           ; runtime directory if it is empty; no: never
 *   snapshot_dir =          ; where periodic snapshots go (filters may override)
 *   log_level = info        ; debug | info | notice | warning | error
 *   log_file =              ; absolute path, appended to (reopened on reload); "": stderr
 *                           ; in the foreground, syslog when daemonised
 *   maxclients = 1024       ; unix-socket connections at once (one kept for an admin)
 *   maxclients_per_user = 512 ; of them from one uid
 *   timeout = 0             ; close a unix-socket connection idle this long (0: never)
 *   maxmemory_clients = 256m ; what every client's buffers may hold in all, unix and TCP
 *                           ; (16m to 1024g); past it the largest client is closed
 *   slowlog_log_slower_than = 10000 ; microseconds: a command that takes at least this long
 *                           ; goes to the slow log (SLOWLOG GET); 0 every command, -1 none
 *   slowlog_max_len = 128   ; entries the slow log keeps (1 to 1024), the oldest dropped
 *
 *   [filter NAME]           ; one section per filter
 *   type = bloom
 *   capacity = 1000000
 *   fpr = 0.01
 *   mode = 0640             ; data file: 0640 group may check, 0660 group may add
 *   window =                ; e.g. 10m: adds go to a generation this long, then a
 *                           ; new one starts; checks see every live generation
 *   generations = 2         ; live generations of a window (1 to 16)
 *   snapshot_every =        ; e.g. 5m: a snapshot that often (none when empty)
 *   snapshot_keep = 3       ; newest snapshot files kept
 *   snapshot_dir =          ; overrides the instance's
 *
 * A filter with snapshots that is missing at start (a reboot emptied the
 * runtime directory) is restored from its newest valid snapshot.
 *
 *   [tcp]                   ; the optional TCP listener (docs/protocol.md)
 *   enabled = no            ; off unless set
 *   bind = 127.0.0.1        ; one address (IPv4 or IPv6 literal, or a host name)
 *   port = 6379
 *   requirepass =           ; clients must AUTH with it first (empty: no password)
 *   unauthenticated_role =  ; reader | writer | admin: the role of every client when there
 *                           ; is no requirepass and no [user NAME]; such a listener is
 *                           ; refused at start unless this says it (and warned of then)
 *   maxclients = 1024       ; TCP connections at once (the unix socket has its own)
 *   maxclients_per_addr = 512 ; of them from one address (IPv6: one /64; loopback: one)
 *   timeout = 300           ; close a connection idle this long (seconds, or 10m; 0: never)
 *   max_request = 64m       ; bytes in one request: a number, or with k/kb/m/mb (KiB, MiB)
 *
 *   [replication]           ; a fleet: replicated filters stay in step through Redis Streams
 *   redis = 127.0.0.1:6379  ; host:port, or a unix socket path (starting with /)
 *   password =              ; AUTH password (optional)
 *   user =                  ; AUTH user (ACL; optional, needs password)
 *   node =                  ; this host's name in the fleet (default: the host name)
 *   secret =                ; shared by every node; required when a filter replicates
 *   stream_prefix = shmf:   ; stream key = prefix + filter name
 *   retention = 1000000     ; XADD MAXLEN ~ this many stream entries
 *   journal_rings = 64      ; rings per journal (handles journalling at once)
 *   journal_entries = 16384 ; entries per ring (a power of 2)
 *
 * A filter section's `replicate = yes` makes it replicated (needs
 * [replication] with a secret).
 *
 *   [metrics]               ; Prometheus' /metrics over HTTP (net/metrics.h)
 *   listen =                ; 127.0.0.1:PORT or [::1]:PORT, an IP literal and a port
 *                           ; (empty or no section: off); a restart applies a change
 *
 *   [defaults]              ; filters created on the fly, FLUSHALL: see defaults.h
 *   auto_create = yes       ; bloom_capacity = 100, bloom_error_rate = 0.01, ...
 *
 * Roles on the control socket ([roles], [user NAME] and a filter's
 * `writers =`) are read by roles-config.c; their keys are listed there
 * and in roles-config.h.
 */
#ifndef SHMD_CONFIG_H
#define SHMD_CONFIG_H

#include <sys/types.h>

#include "shmd/config/defaults.h"
#include "common/fleet.h"
#include "common/spec.h"
#include "shmd/config/roles-config.h"

#define CONFIG_FILTERS_MAX SHMF_SLOTS
/* The largest configuration file read: a regular file of at most this many bytes. */
#define CONFIG_FILE_MAX           (16u << 20)
#define CONFIG_SNAPSHOT_PATHS_MAX 8

#define TCP_DEFAULT_PORT        6479 /* no common service uses it; Redis, on the same host, has 6379 */
#define TCP_DEFAULT_MAXCLIENTS  1024
#define UNIX_DEFAULT_MAXCLIENTS 1024
#define TCP_MAXCLIENTS_LIMIT    65536
/* Per user (unix) and per address (TCP): a PHP-FPM pool of a few hundred
 * workers, one connection each, fits; one user or host can take at most
 * half of a default table. */
#define CONFIG_MAXCLIENTS_PER_PEER 512
#define TCP_DEFAULT_TIMEOUT        300       /* seconds; the unix socket's default is 0, never */
#define CONFIG_TIMEOUT_MAX         31536000u /* a year */
#define TCP_MAX_REQUEST_MIN        1024u     /* a request smaller than this could not carry AUTH */
#define TCP_PASSWORD_MAX           512
/* [instance] maxmemory_clients, as Redis' maxmemory-clients: the memory of
 * every connection in all (its request being read, its parsed request, its
 * unsent replies, its MULTI queue). 256 MiB holds one request of the
 * largest size (64 MiB, about twice that while parsed) and one connection's
 * unsent replies at their limit (64 MiB) at once, with room for a full
 * table of ordinary connections (a few KiB each); it is small next to the
 * filters a host serves, and fixed, so that a figure in the docs is the
 * figure on every host. Below 16 MiB a dump chunk (4 MiB) and its request
 * would not fit a few connections. */
#define CONFIG_MAXMEMORY_CLIENTS     ((size_t)256 << 20)
#define CONFIG_MAXMEMORY_CLIENTS_MIN ((uint64_t)16 << 20)
#define CONFIG_MAXMEMORY_CLIENTS_MAX ((uint64_t)1024 << 30)

/* The slow log (SLOWLOG GET), as Redis' slowlog-log-slower-than and
 * slowlog-max-len; applied live by a reload. */
#define SLOWLOG_SLOWER_THAN_DEFAULT 10000 /* microseconds */
#define SLOWLOG_MAX_LEN_DEFAULT     128u
#define SLOWLOG_MAX_LEN_LIMIT       1024u /* so that SLOWLOG GET's whole reply stays a few MiB */
struct slowlog_config {
	int log_slower_than; /* microseconds, 0..INT_MAX; -1: nothing is logged */
	unsigned max_len;    /* 1..SLOWLOG_MAX_LEN_LIMIT */
};

struct tcp_config {
	int enabled;
	char bind[256];
	int port;
	char requirepass[TCP_PASSWORD_MAX + 1]; /* "": no password */
	unsigned maxclients;
	unsigned maxclients_per_addr;
	unsigned timeout;   /* seconds idle before closing, 0 never */
	size_t max_request; /* bytes, TCP_MAX_REQUEST_MIN..REQUEST_MAX_BYTES */
};

#define REPL_SECRET_MAX        256
#define REPL_PREFIX_MAX        64
#define REPL_ADDRESS_MAX       256
#define REPL_RETENTION_DEFAULT 1000000u
#define REPL_RINGS_DEFAULT     SPEC_JOURNAL_RINGS_DEFAULT
#define REPL_ENTRIES_DEFAULT   SPEC_JOURNAL_ENTRIES_DEFAULT
/* Sentinel: the master found through sentinels (docs/fleet.md, "Sentinel"). */
#define REPL_SENTINELS_MAX     16
#define REPL_SENTINEL_HOST_MAX 128
#define REPL_MASTER_MAX        128
#define REPL_REPLICAS_WAIT_MAX 64

struct repl_host {
	char host[REPL_SENTINEL_HOST_MAX];
	int port;
};

/* [replication]: where the fleet's streams are and who this node is. */
struct repl_config {
	int enabled;                  /* the section is present */
	char redis[REPL_ADDRESS_MAX]; /* as written: "host:port" or "/path" */
	char host[REPL_ADDRESS_MAX];  /* host, or the unix socket path */
	int port;                     /* 0: a unix socket */
	char password[TCP_PASSWORD_MAX + 1];
	char user[128];
	char node[FLEET_NODE_MAX + 1]; /* "": the host name, filled in by config_parse() */
	char secret[REPL_SECRET_MAX + 1];
	char stream_prefix[REPL_PREFIX_MAX + 1];
	uint64_t retention;       /* stream entries kept (MAXLEN ~) */
	uint64_t journal_rings;   /* 1..SHMF_JOURNAL_RINGS_MAX */
	uint64_t journal_entries; /* power of 2, SHMF_JOURNAL_ENTRIES_MIN..MAX */
	/* Self-repair (docs/fleet.md, "Self-repair"): what this node announces
	 * to the others, so that they can repair a filter from its copy, and
	 * what it repairs by itself. */
	char announce[REPL_ADDRESS_MAX]; /* HOST:PORT of this node's TCP listener for peers; "": none */
	char announce_user[128];
	char announce_password[TCP_PASSWORD_MAX + 1];
	char auto_repair_text[16]; /* as written */
	int auto_repair;           /* REPL_REPAIR_* */
	/* Sentinel and WAIT (sentinel.c, confirm.c) */
	int redis_given;                                /* redis = was written (not the default) */
	char sentinel[1024];                            /* as written; "": redis = is the Redis */
	struct repl_host sentinels[REPL_SENTINELS_MAX]; /* parsed from sentinel */
	unsigned nsentinels;                            /* 0: no Sentinel */
	char master[REPL_MASTER_MAX];                   /* the name the sentinels monitor the master by */
	char sentinel_password[TCP_PASSWORD_MAX + 1];   /* the sentinels' AUTH; "": none */
	uint64_t replicas_wait;                         /* WAIT this many replicas before entries leave the journal */
};

/* [replication] auto_repair: what a node that lacks entries does. */
enum {
	REPL_REPAIR_MERGE, /* "merge", the default: Bloom filters OR a peer's copy in; cuckoo filters wait */
	REPL_REPAIR_PULL,  /* "pull": as merge, and a cuckoo filter is replaced by a peer's copy */
	REPL_REPAIR_OFF,   /* "off": diverged until an operator repairs */
};

/* [metrics]: where /metrics is served (docs/operations.md, "Metrics"). */
struct metrics_config {
	char listen[REPL_ADDRESS_MAX]; /* as written; "": off */
	char host[REPL_ADDRESS_MAX];   /* the IP literal, without brackets */
	int port;                      /* 1..65535; 0: off */
};

enum { MOUNT_TMPFS_NO, MOUNT_TMPFS_YES, MOUNT_TMPFS_AUTO };

struct config {
	char instance[SHMF_NAME_MAX + 1];
	mode_t dir_mode;
	mode_t socket_mode;
	gid_t gid; /* (gid_t)-1: none */
	int remove_on_exit;
	int create_dirs;        /* 1: make a missing snapshot_dir (0750) at start and reload; 0: refuse */
	int huge_pages;         /* 1 auto, 0 off */
	int mount_tmpfs;        /* MOUNT_TMPFS_* */
	char snapshot_dir[256]; /* default directory of periodic snapshots, "" none */
	char origin[4096];      /* the file it was read from, or "embedded default" (config_load, config_parse) */
	int log_level;          /* LOG_ERR..LOG_DEBUG (log.h) */
	char log_file[256];     /* "" : stderr, or syslog when daemonised */
	unsigned maxclients;    /* unix-socket connections at once, 2..TCP_MAXCLIENTS_LIMIT */
	unsigned maxclients_per_user;
	unsigned timeout;         /* unix socket: seconds idle before closing, 0 never */
	size_t maxmemory_clients; /* bytes all connections may hold in all (server.h) */
	struct slowlog_config slowlog;
	/* Directories that files named by clients (snapshot, restore, swap,
	 * merge) must be in; none: any the client may use (filejobs.h). */
	char snapshot_paths[CONFIG_SNAPSHOT_PATHS_MAX][256];
	unsigned nsnapshot_paths;
	unsigned nfilters;
	struct filter_spec filters[CONFIG_FILTERS_MAX];
	struct tcp_config tcp;
	struct repl_config repl;
	struct metrics_config metrics;
	struct roles_config roles;       /* [roles], [user NAME], writers = (roles-config.h) */
	struct filter_defaults defaults; /* [defaults]: defaults.h */
};

/** The embedded default: instance "default", one Bloom filter "default" (1,000,000 keys, 1%). */
extern const char config_default_text[];

/**
 * Parse INI text into @p c (starting from built-in defaults, no filters).
 * @p origin names the text in messages ("/etc/shmd.conf", "embedded default").
 * @return 0, or SHMF_E_INVAL with "ORIGIN: [section] what was wrong" (or
 *         "ORIGIN:LINE: syntax error ...") in err.
 */
int config_parse(struct config *c, const char *text, const char *origin, char *err, size_t errlen);

/**
 * The listener's rule: enabled with neither requirepass nor [user NAME]
 * sections needs [tcp] unauthenticated_role, which is refused beside a
 * password. 0, or SHMF_E_INVAL with "ORIGIN: [tcp] ..." in err naming the
 * settings. config_parse() applies it; reload applies it again with the
 * listener that is open (enabled is read at start only).
 */
int config_tcp_check(const struct config *c, const char *origin, char *err, size_t errlen);

/** The warning shmd logs at every start (and reload) while @p c gives TCP
 * clients without a password a role: 1 with it in @p buf, or 0. */
int config_tcp_warning(const struct config *c, const char *listener, char *buf, size_t len);

/**
 * Read and parse a file: a regular file (a link to one is followed), at
 * most CONFIG_FILE_MAX bytes; a directory, FIFO, device or socket at
 * @p path is refused without being opened for reading. 0, SHMF_E_INVAL,
 * SHMF_E_TOOBIG or -errno, with a message naming the path in err.
 */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

#endif
