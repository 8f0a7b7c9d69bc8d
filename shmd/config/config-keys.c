/* config-keys.c - the table of every configuration key (config-keys.h). */
#include <stdio.h>
#include <string.h>

#include "shmd/config/config-keys.h"

/* One row per key, grouped by section. A new key: a row here (in its
 * section's group), its parsing in its section's code (config.c,
 * defaults.c, roles-config.c) and its entry in man/shmd.conf.5.scd. */
const struct config_key config_keys[] = {
	/* [instance]: config.c, instance_key() */
	{ "instance", "name", "NAME", "the instance: socket NAME.sock and directory NAME/ in the runtime directory" },
	{ "instance", "dir_mode", "OCTAL", "mode of the instance directory, without group or other write bits" },
	{ "instance", "socket_mode", "OCTAL", "mode of the control socket, without the other-write bit" },
	{ "instance", "group", "GROUP", "group of the directory, socket and data files; its members are writers" },
	{ "instance", "remove_on_exit", "yes|no", "remove the segments on a clean shutdown" },
	{ "instance", "create_dirs", "yes|no", "make a missing snapshot_dir (0750) rather than refuse to start" },
	{ "instance", "huge_pages", "auto|off", "the tmpfs shmd mounts gets huge=within_size" },
	{ "instance", "mount_tmpfs", "auto|yes|no", "mount a tmpfs on the runtime directory" },
	{ "instance", "snapshot_dir", "PATH", "where periodic snapshots go (a filter may name its own)" },
	{ "instance", "snapshot_paths", "PATH...", "the directories files named by clients must be in" },
	{ "instance", "log_level", "LEVEL", "debug, info, notice, warning or error" },
	{ "instance", "log_file", "PATH", "log to this file, reopened on reload (empty: stderr, or syslog)" },
	{ "instance", "maxclients", "N", "unix-socket connections at once (one kept for an admin)" },
	{ "instance", "maxclients_per_user", "N", "unix-socket connections at once from one uid" },
	{ "instance", "timeout", "DURATION", "close a unix-socket connection idle this long (0: never)" },
	{ "instance", "maxmemory_clients", "BYTES", "what every client's buffers may hold in all" },
	{ "instance", "slowlog_log_slower_than", "MICROSECONDS", "commands at least this slow go to the slow log" },
	{ "instance", "slowlog_max_len", "N", "entries the slow log keeps" },
	/* [tcp]: config.c, tcp_key() */
	{ "tcp", "enabled", "yes|no", "open the TCP listener" },
	{ "tcp", "bind", "ADDRESS", "the address it listens on" },
	{ "tcp", "port", "PORT", "the port it listens on" },
	{ "tcp", "requirepass", "PASSWORD", "the password of user default (an admin): AUTH first" },
	{ "tcp", "unauthenticated_role", "ROLE", "reader, writer or admin: every client's role without passwords" },
	{ "tcp", "maxclients", "N", "TCP connections at once" },
	{ "tcp", "maxclients_per_addr", "N", "TCP connections at once from one address" },
	{ "tcp", "timeout", "DURATION", "close a TCP connection idle this long (0: never)" },
	{ "tcp", "max_request", "BYTES", "the largest request a TCP client may send" },
	/* [metrics]: config.c, metrics_key() */
	{ "metrics", "listen", "ADDRESS:PORT", "serve GET /metrics in Prometheus' text format here (empty: off)" },
	/* [filter NAME]: config.c, filter_key(); writers: roles-config.c */
	{ "filter NAME", "type", "bloom|cuckoo", "the kind of filter" },
	{ "filter NAME", "capacity", "N", "keys the filter is sized for" },
	{ "filter NAME", "fpr", "RATE", "false-positive rate at capacity, strictly between 0 and 1" },
	{ "filter NAME", "mode", "OCTAL", "data file mode: 0640 the group may check, 0660 it may add" },
	{ "filter NAME", "window", "DURATION", "a time window: adds go to a generation this long" },
	{ "filter NAME", "generations", "N", "live generations of a window, 1 to 16" },
	{ "filter NAME", "expansion", "N", "grow by layers this many times larger (0: fixed)" },
	{ "filter NAME", "nonscaling", "yes|no", "Bloom: refuse new keys past the capacity" },
	{ "filter NAME", "max_kicks", "N", "cuckoo: bound on one insert's relocations" },
	{ "filter NAME", "bucket_size", "1|2|4|8", "cuckoo: fingerprints per bucket" },
	{ "filter NAME", "lock_timeout_ms", "MILLISECONDS", "cuckoo: how long a call waits for the relocation lock" },
	{ "filter NAME", "snapshot_every", "DURATION", "take a periodic snapshot this often" },
	{ "filter NAME", "snapshot_keep", "N", "newest periodic snapshots kept" },
	{ "filter NAME", "snapshot_dir", "PATH", "where this filter's periodic snapshots go" },
	{ "filter NAME", "replicate", "yes|no", "keep the filter in step with the fleet" },
	{ "filter NAME", "writers", "USER|@GROUP...", "who writes the filter instead of the client group" },
	/* [replication]: config.c, repl_keys[] */
	{ "replication", "redis", "HOST:PORT|PATH", "the Redis whose streams carry the fleet's adds" },
	{ "replication", "password", "PASSWORD", "Redis AUTH password" },
	{ "replication", "user", "USER", "Redis AUTH user (ACL; needs password)" },
	{ "replication", "node", "NAME", "this host's name in the fleet (default: the host name)" },
	{ "replication", "secret", "TEXT", "shared by every node; keys the replicated filters' hash seed" },
	{ "replication", "stream_prefix", "TEXT", "the start of every stream key" },
	{ "replication", "retention", "N", "stream entries kept (XADD MAXLEN ~)" },
	{ "replication", "journal_rings", "N", "rings per journal (handles journalling at once)" },
	{ "replication", "journal_entries", "N", "entries per ring, a power of 2" },
	{ "replication", "announce", "HOST:PORT",
	  "this node's TCP listener as the others reach it, to repair from (default: [tcp]'s, unless a wildcard)" },
	{ "replication", "announce_user", "USER", "the user the others AUTH as there (ACL; needs announce_password)" },
	{ "replication", "announce_password", "PASSWORD", "the password they AUTH with (default: [tcp] requirepass)" },
	{ "replication", "auto_repair", "merge|pull|off",
	  "a filter that lacks entries repairs itself: merge (Bloom), pull (cuckoo too), off" },
	/* Sentinel and WAIT: sentinel.c, confirm.c */
	{ "replication", "sentinel", "HOST:PORT,...", "find the master through these sentinels (instead of redis)" },
	{ "replication", "master", "NAME", "the name the sentinels monitor the master by" },
	{ "replication", "sentinel_password", "PASSWORD", "the sentinels' AUTH password" },
	{ "replication", "replicas_wait", "N", "replicas that must have an entry (WAIT) before it leaves the journal" },
	/* [defaults]: defaults.c, keys[] */
	{ "defaults", "auto_create", "yes|no", "the RedisBloom adds create a missing filter" },
	{ "defaults", "flushall", "yes|no", "FLUSHALL and FLUSHDB drop every filter (no: refused)" },
	{ "defaults", "bloom_capacity", "N", "capacity of a Bloom filter created on the fly" },
	{ "defaults", "bloom_error_rate", "RATE", "error rate of a Bloom filter created on the fly" },
	{ "defaults", "bloom_expansion", "N", "expansion of a Bloom filter created on the fly" },
	{ "defaults", "cuckoo_capacity", "N", "capacity of a cuckoo filter created on the fly" },
	{ "defaults", "cuckoo_bucket_size", "1|2|4|8", "bucket size of a cuckoo filter created on the fly" },
	{ "defaults", "cuckoo_max_iterations", "N", "relocation bound of a cuckoo filter created on the fly" },
	{ "defaults", "cuckoo_expansion", "N", "expansion of a cuckoo filter created on the fly (0: never grows)" },
	{ "defaults", "mode", "OCTAL", "data file mode of a filter created on the fly" },
	/* [roles]: roles-config.c, roles_section_key() */
	{ "roles", "admin_group", "GROUP", "its members are admins on the unix socket" },
	{ "roles", "writer_create", "yes|no", "writers may create filters, within the quotas" },
	{ "roles", "writer_max_filter_bytes", "BYTES", "a writer's filter, for its whole life: at most this" },
	{ "roles", "writer_max_total_bytes", "BYTES", "the instance's filters with a writer's new one: at most this" },
	{ "roles", "writer_max_filters", "N", "filters in the instance with a writer's new one: at most this many" },
	/* [user NAME]: roles-config.c, user_key() */
	{ "user NAME", "password", "PASSWORD", "the user's password: AUTH NAME PASSWORD" },
	{ "user NAME", "role", "ROLE", "reader, writer or admin" },
	{ "user NAME", "filters", "FILTER...", "only these filters (empty: every filter)" },
};

const size_t config_keys_count = sizeof(config_keys) / sizeof(config_keys[0]);

/* Does section @p written ("filter clicks") match the row's @p section
 * ("filter NAME")? */
static int section_matches(const char *section, const char *written)
{
	size_t n = strlen(section);
	if (n > 5 && !strcmp(section + n - 5, " NAME"))
		return !strncmp(section, written, n - 4) && written[n - 4] != '\0';
	return !strcmp(section, written);
}

const struct config_key *config_key_find(const char *section, const char *key)
{
	for (size_t i = 0; i < config_keys_count; i++)
		if (!strcmp(config_keys[i].key, key) && section_matches(config_keys[i].section, section))
			return &config_keys[i];
	return NULL;
}

int config_section_known(const char *section)
{
	for (size_t i = 0; i < config_keys_count; i++)
		if (section_matches(config_keys[i].section, section))
			return 1;
	return 0;
}

void config_key_unknown(const char *section, const char *key, char *msg, size_t len)
{
	const char *row = NULL;
	for (size_t i = 0; i < config_keys_count && row == NULL; i++)
		if (section_matches(config_keys[i].section, section))
			row = config_keys[i].section;
	size_t n = strlen(row != NULL ? row : "");
	int used;
	if (row != NULL && n > 5 && !strcmp(row + n - 5, " NAME"))
		used = snprintf(msg, len, "unknown key '%s' in a %.*s section (", key, (int)(n - 5), row);
	else
		used = snprintf(msg, len, "unknown key '%s' in [%s] (", key, section);
	for (size_t i = 0, first = 1; i < config_keys_count && used >= 0 && (size_t)used < len; i++) {
		if (row == NULL || strcmp(config_keys[i].section, row) != 0)
			continue;
		used += snprintf(msg + used, len - (size_t)used, "%s%s", first ? "" : ", ", config_keys[i].key);
		first = 0;
	}
	if (used >= 0 && (size_t)used < len)
		snprintf(msg + used, len - (size_t)used, ")");
}

void config_keys_print(FILE *out)
{
	for (size_t i = 0; i < config_keys_count; i++)
		fprintf(out, "%s\t%s\t%s\t%s\n", config_keys[i].section, config_keys[i].key, config_keys[i].value,
			config_keys[i].summary);
}
