/*
 * verbs-info.c - INFO: the server described in Redis' sections, field
 * names and formats, for client libraries and monitoring tools (redis-cli
 * --stat reads clients, memory, stats and keyspace; redis-py's tests read
 * cluster_enabled), and shmd's own section, filters.
 *
 * Sections, in Redis 7's order: server, clients, memory, persistence,
 * stats, replication, cpu, commandstats, cluster, keyspace, then filters.
 * INFO alone and INFO default give Redis' default ones (all but
 * commandstats, and filters, which is shmd's as a module's section would
 * be); all and everything give every one; an unknown name adds nothing
 * (as in Redis, whose reply is then empty).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "shmd/base/clock.h"
#include "shmd/base/memstat.h"
#include "shmd/session/session.h"
#include "shmd/store/quotas.h"
#include "shmd/verbs/dispatch.h"
#include "shmd/verbs/handlers.h"
#include "shmd/verbs/verbs.h"

/* The text INFO builds, growing as needed, and what its sections read. */
struct info {
	char *p;
	size_t len, cap;
	int oom;
	const struct server_view *v;
	struct registry *reg;
};

static void add(struct info *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct info *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || t->oom)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (t->len + len + 3 > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		while (cap < t->len + len + 3)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (p == NULL) {
			t->oom = 1;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, line, len);
	t->len += len;
	memcpy(t->p + t->len, "\r\n", 2);
	t->len += 2;
}

/* A counter of the server's stats, 0 when nothing is counted. */
#define STAT(t, field) ((unsigned long long)((t)->v->stats != NULL ? (t)->v->stats->field : 0))

static void sec_server(struct info *t)
{
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	uint64_t now = (uint64_t)time(NULL), up = now > t->v->started ? now - t->v->started : 0;
	add(t, "redis_version:%s", COMPAT_REDIS_VERSION);
	add(t, "shmd_version:%s", SHMF_VERSION_STRING);
	add(t, "redis_mode:standalone");
	add(t, "os:%s %s %s", u.sysname, u.release, u.machine);
	add(t, "arch_bits:%zu", 8 * sizeof(void *));
	add(t, "multiplexing_api:epoll");
	add(t, "process_id:%ld", (long)getpid());
	add(t, "tcp_port:%d", t->v->tcp_port);
	add(t, "uptime_in_seconds:%llu", (unsigned long long)up);
	add(t, "uptime_in_days:%llu", (unsigned long long)(up / 86400));
	add(t, "shmd_instance:%s", t->reg != NULL ? t->reg->instance : "");
}

static void sec_clients(struct info *t)
{
	const struct server_view *v = t->v;
	add(t, "connected_clients:%u", v->clients[SESSION_UNIX] + v->clients[SESSION_TCP]);
	add(t, "unix_clients:%u", v->clients[SESSION_UNIX]);
	add(t, "tcp_clients:%u", v->clients[SESSION_TCP]);
	add(t, "maxclients:%u", v->tcp_port ? v->maxclients[SESSION_TCP] : v->maxclients[SESSION_UNIX]);
	add(t, "blocked_clients:0");
}

/* The filters' bytes (their data segments, every generation and layer)
 * and how many there are. */
static uint64_t filters_bytes(struct info *t, unsigned *count)
{
	*count = 0;
	return t->reg != NULL ? quotas_instance_bytes(t->reg, count) : 0;
}

/* used_memory is what Redis' is, the memory of the data and of the
 * server: the filters' segments (in shared memory: Redis' dataset) and
 * what the allocator handed out (Redis' overhead), so that redis-cli
 * --stat and dashboards show the filters; each also has a field. */
static void sec_memory(struct info *t)
{
	char h[32];
	unsigned count;
	uint64_t heap = memstat_heap(), rss = memstat_rss(), sys = memstat_system();
	uint64_t filters = filters_bytes(t, &count);
	add(t, "used_memory:%llu", (unsigned long long)(heap + filters));
	add(t, "used_memory_human:%s", memstat_human(heap + filters, h));
	add(t, "used_memory_rss:%llu", (unsigned long long)rss);
	add(t, "used_memory_rss_human:%s", memstat_human(rss, h));
	add(t, "used_memory_overhead:%llu", (unsigned long long)heap);
	add(t, "used_memory_dataset:%llu", (unsigned long long)filters);
	add(t, "used_memory_filters:%llu", (unsigned long long)filters);
	add(t, "used_memory_filters_human:%s", memstat_human(filters, h));
	add(t, "total_system_memory:%llu", (unsigned long long)sys);
	add(t, "total_system_memory_human:%s", memstat_human(sys, h));
	add(t, "maxmemory:0");
	add(t, "maxmemory_human:0B");
	add(t, "maxmemory_policy:noeviction");
	add(t, "mem_allocator:libc");
	add(t, "mem_clients_normal:%zu", t->v->clients_memory);
	add(t, "maxmemory_clients:%zu", t->v->maxmemory_clients);
}

static void sec_persistence(struct info *t)
{
	add(t, "loading:0");
	add(t, "async_loading:0");
}

static void sec_stats(struct info *t)
{
	add(t, "total_connections_received:%llu", STAT(t, connections_received));
	add(t, "total_commands_processed:%llu", STAT(t, commands_processed));
	add(t, "rejected_connections:%llu", STAT(t, rejected_connections));
	add(t, "evicted_clients:%llu", STAT(t, evicted_clients));
}

static void sec_replication(struct info *t)
{
	add(t, "role:master");
	add(t, "connected_slaves:0");
}

static void sec_cpu(struct info *t)
{
	struct rusage self, children;
	if (getrusage(RUSAGE_SELF, &self) < 0)
		memset(&self, 0, sizeof(self));
	if (getrusage(RUSAGE_CHILDREN, &children) < 0)
		memset(&children, 0, sizeof(children));
	add(t, "used_cpu_sys:%ld.%06ld", (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec);
	add(t, "used_cpu_user:%ld.%06ld", (long)self.ru_utime.tv_sec, (long)self.ru_utime.tv_usec);
	add(t, "used_cpu_sys_children:%ld.%06ld", (long)children.ru_stime.tv_sec, (long)children.ru_stime.tv_usec);
	add(t, "used_cpu_user_children:%ld.%06ld", (long)children.ru_utime.tv_sec, (long)children.ru_utime.tv_usec);
}

/* Every row that was called, refused or failed, as Redis' cmdstat_ lines
 * (a subcommand as "client|list"). */
static void sec_commandstats(struct info *t)
{
	const struct server_stats *st = t->v->stats;
	const struct verb *v;
	for (size_t i = 0; st != NULL && st->verbs != NULL && i < st->nverbs && (v = verbs_at(i)) != NULL; i++) {
		const struct verb_stats *c = &st->verbs[i];
		if (c->calls == 0 && c->rejected == 0 && c->failed == 0)
			continue;
		double usec = (double)c->ticks / clock_rate.per_us;
		add(t, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu",
		    v->name, (unsigned long long)c->calls, (unsigned long long)usec,
		    c->calls ? usec / (double)c->calls : 0.0, (unsigned long long)c->rejected,
		    (unsigned long long)c->failed);
	}
}

static void sec_cluster(struct info *t)
{
	add(t, "cluster_enabled:0");
}

static void sec_keyspace(struct info *t)
{
	int slots[SHMF_SLOTS];
	int n = t->reg != NULL ? registry_list(t->reg, slots) : 0;
	if (n > 0)
		add(t, "db0:keys=%d,expires=0,avg_ttl=0", n);
}

/* shmd's own: the filters' count and bytes, and a line per filter, keyed
 * by its slot (a name may hold ':', which INFO's readers split at). */
static void sec_filters(struct info *t)
{
	unsigned count;
	uint64_t bytes = filters_bytes(t, &count);
	add(t, "filters:%u", count);
	add(t, "filters_bytes:%llu", (unsigned long long)bytes);
	int slots[SHMF_SLOTS];
	int n = t->reg != NULL ? registry_list(t->reg, slots) : 0;
	for (int i = 0; i < n; i++) {
		const struct shmf_slot *sl = &t->reg->ctl.slots[slots[i]];
		shmf_t *h;
		shmf_info_t fi;
		char err[256];
		unsigned long long items = 0;
		if (registry_handle(t->reg, slots[i], &h, err, sizeof(err)) == 0 && shmf_info(h, &fi) == 0)
			items = fi.window_generations ? fi.items_live : fi.items;
		add(t, "filter_%d:name=%s,type=%s,bytes=%llu,capacity=%llu,items=%llu", slots[i], sl->name,
		    spec_type_name((int)sl->type), (unsigned long long)quotas_filter_bytes(t->reg, slots[i]),
		    (unsigned long long)sl->capacity, items);
	}
}

static const struct section {
	const char *name;  /* lower case; matched in any case */
	const char *title; /* its header line */
	int in_default;    /* INFO and INFO default give it */
	void (*add)(struct info *t);
} sections[] = {
	{ "server", "Server", 1, sec_server },
	{ "clients", "Clients", 1, sec_clients },
	{ "memory", "Memory", 1, sec_memory },
	{ "persistence", "Persistence", 1, sec_persistence },
	{ "stats", "Stats", 1, sec_stats },
	{ "replication", "Replication", 1, sec_replication },
	{ "cpu", "CPU", 1, sec_cpu },
	{ "commandstats", "Commandstats", 0, sec_commandstats },
	{ "cluster", "Cluster", 1, sec_cluster },
	{ "keyspace", "Keyspace", 1, sec_keyspace },
	{ "filters", "Filters", 0, sec_filters },
};

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* The sections @p req asks for, a bit each by place in sections[]. */
static unsigned wanted(const struct request *req)
{
	unsigned bits = 0, all = (1u << NSECTIONS) - 1, def = 0;
	for (size_t j = 0; j < NSECTIONS; j++)
		def |= sections[j].in_default ? 1u << j : 0;
	if (req->argc == 1)
		return def;
	for (int i = 1; i < req->argc; i++) {
		const char *a = req->argv[i];
		if (!strcasecmp(a, "default"))
			bits |= def;
		else if (!strcasecmp(a, "all") || !strcasecmp(a, "everything"))
			bits |= all;
		for (size_t j = 0; j < NSECTIONS; j++)
			if (!strcasecmp(a, sections[j].name))
				bits |= 1u << j;
	}
	return bits;
}

void cmd_info(struct verb_call *c)
{
	static const struct server_view none = { 0 };
	struct info t = { .v = c->sess->srv != NULL ? c->sess->srv : &none, .reg = c->reg };
	unsigned bits = wanted(c->req);
	for (size_t j = 0; j < NSECTIONS; j++) {
		if (!(bits & (1u << j)))
			continue;
		add(&t, "# %s", sections[j].title);
		sections[j].add(&t);
		add(&t, "%s", "");
	}
	if (t.oom) {
		reply_error(c->out, "ERR out of memory for INFO");
	} else {
		/* Redis ends the text without the last section's blank line. */
		size_t len = t.len;
		while (len >= 2 && t.p[len - 2] == '\r' && t.p[len - 1] == '\n' && (len < 4 || t.p[len - 4] == '\r'))
			len -= 2;
		reply_bulk(c->out, t.p ? t.p : "", len);
	}
	free(t.p);
}
