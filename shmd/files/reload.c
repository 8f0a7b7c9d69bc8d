/*
 * reload.c - the configuration at start and on reload (reload.h): which
 * key changes live, which waits for the permissions pass, which needs a
 * restart, and which is a filter's shape that no reload changes. Each is
 * a row of a table below.
 */
#include <grp.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libclient/cuckoo.h"
#include "libclient/geometry.h"
#include "common/errmsg.h"
#include "shmd/base/log.h"
#include "shmd/base/notify.h"
#include "shmd/store/perms.h"
#include "shmd/files/reload.h"
#include "shmd/config/config-check.h"

static struct reload_ctx *registered;

void reload_register(struct reload_ctx *ctx)
{
	registered = ctx;
}

struct reload_ctx *reload_registered(void)
{
	return registered;
}

/* One line of what happened: logged at @p prio, and kept in @p rep (NULL at start). */
static void say(struct reload_report *rep, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(struct reload_report *rep, int prio, const char *fmt, ...)
{
	char line[RELOAD_LINE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_msg(prio, "%s%s", rep != NULL ? "reload: " : "", line);
	if (rep == NULL)
		return;
	if (rep->n < RELOAD_LINES)
		memcpy(rep->line[rep->n++], line, sizeof(line));
	else
		rep->more++;
}

/* ---- filters ---------------------------------------------------------- */

/* The fields of a filter's shape: what its files are built for. A reload
 * (and a restart) never changes them; the line says so and how to. */
enum shape_kind { S_TYPE, S_U64, S_U32, S_FPR };
static const struct shape_row {
	const char *key;
	enum shape_kind kind;
	size_t spec_off; /* in struct filter_spec */
	size_t info_off; /* in shmf_info_t */
} shape_rows[] = {
	{ "type", S_TYPE, offsetof(struct filter_spec, type), offsetof(shmf_info_t, type) },
	{ "capacity", S_U64, offsetof(struct filter_spec, capacity), offsetof(shmf_info_t, capacity) },
	{ "fpr", S_FPR, offsetof(struct filter_spec, fpr), offsetof(shmf_info_t, fpr_target) },
	{ "max_kicks", S_U32, offsetof(struct filter_spec, max_kicks), offsetof(shmf_info_t, max_kicks) },
	{ "bucket_size", S_U32, offsetof(struct filter_spec, bucket_size), offsetof(shmf_info_t, bucket_size) },
	{ "window", S_U64, offsetof(struct filter_spec, window_secs), offsetof(shmf_info_t, window_secs) },
	{ "generations", S_U32, offsetof(struct filter_spec, window_gens), offsetof(shmf_info_t, window_generations) },
};

/* The value of row @p r at @p p as text; @p p in a spec (is_spec) or an info. */
static void shape_text(const struct shape_row *r, const void *base, size_t off, char *buf, size_t len)
{
	const char *p = (const char *)base + off;
	int t;
	uint64_t u64;
	uint32_t u32;
	double d;
	switch (r->kind) {
	case S_TYPE:
		memcpy(&t, p, sizeof(t));
		snprintf(buf, len, "%s", spec_type_name(t));
		break;
	case S_U64:
		memcpy(&u64, p, sizeof(u64));
		snprintf(buf, len, "%" PRIu64, u64);
		break;
	case S_U32:
		memcpy(&u32, p, sizeof(u32));
		snprintf(buf, len, "%" PRIu32, u32);
		break;
	case S_FPR:
		memcpy(&d, p, sizeof(d));
		snprintf(buf, len, "%g", d);
		break;
	}
}

/* Every shape field where configured filter @p cf differs from the live one
 * in @p slot: one line each. max_kicks 0 means the default, which any
 * value satisfies; bucket_size 0 means the default (4, or 2 below the
 * rates buckets of 4 reach); a Bloom filter has neither. */
static void compare_shape(struct registry *reg, int slot, const struct filter_spec *cf, struct reload_report *rep)
{
	struct filter_info fi;
	char err[REGISTRY_ERR_MAX];
	struct filter_spec want_spec = *cf;
	const struct filter_spec *f = &want_spec;
	if (want_spec.type == SHMF_TYPE_CUCKOO && want_spec.bucket_size == 0)
		want_spec.bucket_size = shmf_geometry_bucket_size(want_spec.capacity, want_spec.fpr);
	if (registry_info(reg, slot, &fi, err, sizeof(err)) < 0) {
		say(rep, LOG_WARNING, "filter '%s': cannot compare with its configuration: %s", f->name, err);
		return;
	}
	for (size_t i = 0; i < sizeof(shape_rows) / sizeof(shape_rows[0]); i++) {
		const struct shape_row *r = &shape_rows[i];
		char want[64], have[64];
		if (r->spec_off == offsetof(struct filter_spec, max_kicks) &&
		    (f->max_kicks == 0 || f->type != SHMF_TYPE_CUCKOO))
			continue;
		if (r->spec_off == offsetof(struct filter_spec, bucket_size) && f->type != SHMF_TYPE_CUCKOO)
			continue;
		shape_text(r, f, r->spec_off, want, sizeof(want));
		shape_text(r, &fi.info, r->info_off, have, sizeof(have));
		if (strcmp(want, have) == 0 && (r->kind != S_FPR || memcmp((const char *)f + r->spec_off,
									   &fi.info.fpr_target, sizeof(double)) == 0))
			continue;
		if (rep != NULL)
			rep->refused++;
		say(rep, LOG_WARNING,
		    "filter '%s': %s %s in the configuration, %s live: refused, a filter's shape is never changed in "
		    "place (the filter is kept as it is; drop it and reload to make it anew, empty)",
		    f->name, r->key, want, have);
	}
	if (f->replicate && !(reg->ctl.slots[slot].flags & SHMF_SLOT_REPLICATED)) {
		if (rep != NULL)
			rep->refused++;
		say(rep, LOG_WARNING,
		    "filter '%s': the configuration says replicate = yes, but the existing filter was made without it "
		    "(its hash seed is not the fleet's); it stays local: drop it to make it replicate",
		    f->name);
	}
}

/* Filter @p f, missing: restored from its newest snapshot, else created. 0 or an error (said). */
static int make_filter(struct registry *reg, const struct filter_spec *f, struct reload_report *rep)
{
	char err[REGISTRY_ERR_MAX];
	int slot = f->snapshot_every != 0 ? periodic_restore_newest(reg, f) : SHMF_E_NOTFOUND;
	int rc = 0;
	if (slot >= 0) {
		rc = f->replicate ? registry_replicate(reg, slot, err, sizeof(err)) : 0;
	} else {
		rc = registry_create(reg, f, err, sizeof(err));
		if (rc >= 0 && rep != NULL)
			say(rep, LOG_NOTICE, "filter '%s': created (%s, capacity %" PRIu64 ", fpr %g, mode %04o%s)",
			    f->name, spec_type_name(f->type), f->capacity, f->fpr, (unsigned)f->mode,
			    f->window_secs ? ", windowed" : "");
	}
	if (rc < 0) {
		if (rep != NULL)
			rep->refused++; /* not in force: the exit status of shmctl reload says so */
		say(rep, LOG_ERR, "%s", err);
		return rc;
	}
	if (rep != NULL)
		rep->created++;
	if (slot >= 0 && rep != NULL)
		say(rep, LOG_NOTICE, "filter '%s': restored from its newest snapshot", f->name);
	return 0;
}

int reload_filters(struct registry *reg, const struct config *cfg, struct reload_report *rep, int stop_on_error)
{
	for (unsigned i = 0; i < cfg->nfilters; i++) {
		const struct filter_spec *f = &cfg->filters[i];
		int slot = registry_find(reg, f->name);
		if (slot >= 0) {
			compare_shape(reg, slot, f, rep);
			continue;
		}
		int rc = make_filter(reg, f, rep);
		if (rc < 0 && stop_on_error)
			return rc;
	}
	return 0;
}

/* The settings of filters that change live (snapshots) or with the
 * permissions pass (mode), compared with what was configured; filters
 * no longer configured stay. */
static void compare_filter_settings(const struct config *old, const struct config *next, struct reload_report *rep)
{
	for (unsigned i = 0; i < next->nfilters; i++) {
		const struct filter_spec *f = &next->filters[i];
		for (unsigned j = 0; j < old->nfilters; j++) {
			const struct filter_spec *o = &old->filters[j];
			if (strcmp(o->name, f->name) != 0)
				continue;
			if (o->mode != f->mode) {
				rep->applied++;
				say(rep, LOG_NOTICE, "filter '%s': mode %04o -> %04o (permissions pass)", f->name,
				    (unsigned)o->mode, (unsigned)f->mode);
			}
			if (o->snapshot_every != f->snapshot_every || o->snapshot_keep != f->snapshot_keep ||
			    strcmp(o->snapshot_dir, f->snapshot_dir) != 0) {
				rep->applied++;
				say(rep, LOG_NOTICE,
				    "filter '%s': snapshots every %" PRIu64 " s, newest %u kept, in '%s' (applied)",
				    f->name, f->snapshot_every, f->snapshot_keep, f->snapshot_dir);
			}
		}
	}
	for (unsigned j = 0; j < old->nfilters; j++) {
		int kept = 0;
		for (unsigned i = 0; i < next->nfilters && !kept; i++)
			kept = !strcmp(old->filters[j].name, next->filters[i].name);
		if (!kept)
			say(rep, LOG_NOTICE,
			    "filter '%s': no longer in the configuration; it stays live (shmctl drop %s removes it), "
			    "without periodic snapshots",
			    old->filters[j].name, old->filters[j].name);
	}
}

/* ---- instance keys ------------------------------------------------------ */

enum how {
	LIVE,    /* copied into the configuration in force: used from the next moment on */
	PERMS,   /* copied too, for the permissions pass (reload_apply_settings) */
	RESTART, /* kept as it is: only a restart applies it */
};
enum kind { K_TEXT, K_SECRET, K_INT, K_UINT, K_SIZE, K_MODE, K_GID, K_BLOB };

#define CFIELD(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)
static const struct key_row {
	const char *key; /* "[section] key" as the log says it */
	enum how how;
	enum kind kind;
	size_t off, size;
} key_rows[] = {
	{ "[instance] name", RESTART, K_TEXT, CFIELD(instance) },
	{ "[instance] dir_mode", PERMS, K_MODE, CFIELD(dir_mode) },
	{ "[instance] socket_mode", PERMS, K_MODE, CFIELD(socket_mode) },
	{ "[instance] group", PERMS, K_GID, CFIELD(gid) },
	{ "[instance] remove_on_exit", LIVE, K_INT, CFIELD(remove_on_exit) },
	{ "[instance] huge_pages", RESTART, K_INT, CFIELD(huge_pages) },
	{ "[instance] mount_tmpfs", RESTART, K_INT, CFIELD(mount_tmpfs) },
	{ "[instance] snapshot_dir", LIVE, K_TEXT, CFIELD(snapshot_dir) },
	{ "[instance] maxmemory_clients", RESTART, K_SIZE, CFIELD(maxmemory_clients) },
	/* Copied into the server's options at start (server.h), read there only. */
	{ "[instance] maxclients", RESTART, K_UINT, CFIELD(maxclients) },
	{ "[instance] maxclients_per_user", RESTART, K_UINT, CFIELD(maxclients_per_user) },
	{ "[instance] timeout", RESTART, K_UINT, CFIELD(timeout) },
	/* filejobs_configure() opens them once, at start. */
	{ "[instance] snapshot_paths", RESTART, K_BLOB, CFIELD(snapshot_paths) },
	{ "[instance] snapshot_paths", RESTART, K_BLOB, CFIELD(nsnapshot_paths) },
	/* The dispatcher reads them for every request: the next one sees them. */
	{ "[instance] slowlog_log_slower_than", LIVE, K_INT, CFIELD(slowlog.log_slower_than) },
	{ "[instance] slowlog_max_len", LIVE, K_UINT, CFIELD(slowlog.max_len) },
	{ "[tcp] enabled", RESTART, K_INT, CFIELD(tcp.enabled) },
	{ "[tcp] bind", RESTART, K_TEXT, CFIELD(tcp.bind) },
	{ "[tcp] port", RESTART, K_INT, CFIELD(tcp.port) },
	{ "[tcp] requirepass", LIVE, K_SECRET, CFIELD(tcp.requirepass) },
	{ "[tcp] maxclients", RESTART, K_UINT, CFIELD(tcp.maxclients) },
	{ "[tcp] max_request", RESTART, K_SIZE, CFIELD(tcp.max_request) },
	{ "[tcp] maxclients_per_addr", RESTART, K_UINT, CFIELD(tcp.maxclients_per_addr) },
	{ "[tcp] timeout", RESTART, K_UINT, CFIELD(tcp.timeout) },
	/* The server keeps a pointer to the configuration's; not copied on reload. */
	{ "[defaults]", RESTART, K_BLOB, CFIELD(defaults) },
	{ "[replication]", RESTART, K_BLOB, CFIELD(repl) },
	/* The metrics listener is opened at start, before shmd daemonises. */
	{ "[metrics] listen", RESTART, K_TEXT, CFIELD(metrics.listen) },
	/* Roles are looked up per request: the next request sees them. */
	{ "[roles], [user NAME] and writers =", LIVE, K_BLOB, CFIELD(roles) },
};
#undef CFIELD

/* A value of kind @p k at @p p as the log shows it. */
static void key_text(enum kind k, const void *p, char *buf, size_t len)
{
	int i;
	unsigned u;
	size_t z;
	mode_t m;
	gid_t g;
	switch (k) {
	case K_TEXT: snprintf(buf, len, "'%s'", (const char *)p); break;
	case K_SECRET: snprintf(buf, len, "%s", *(const char *)p ? "(a password)" : "(none)"); break;
	case K_INT:
		memcpy(&i, p, sizeof(i));
		snprintf(buf, len, "%d", i);
		break;
	case K_UINT:
		memcpy(&u, p, sizeof(u));
		snprintf(buf, len, "%u", u);
		break;
	case K_SIZE:
		memcpy(&z, p, sizeof(z));
		snprintf(buf, len, "%zu", z);
		break;
	case K_MODE:
		memcpy(&m, p, sizeof(m));
		snprintf(buf, len, "%04o", (unsigned)m);
		break;
	case K_GID: {
		memcpy(&g, p, sizeof(g));
		struct group *gr = g == (gid_t)-1 ? NULL : getgrgid(g);
		if (g == (gid_t)-1)
			snprintf(buf, len, "(none)");
		else if (gr != NULL)
			snprintf(buf, len, "%s", gr->gr_name);
		else
			snprintf(buf, len, "%u", (unsigned)g);
		break;
	}
	case K_BLOB: snprintf(buf, len, "(changed)"); break;
	}
}

/* Each instance key that differs: applied (copied into @p cfg) or left
 * for a restart, one line each; a key the file leaves as it is in force
 * gets no line. The roles hold [instance] group too (its members are
 * writers): that is the group's line, and goes with it. */
static void apply_keys(struct config *cfg, const struct config *next, struct reload_report *rep)
{
	static const char *const verdict[] = { "applied", "for the permissions pass", "needs a restart; not applied" };
	cfg->roles.client_gid = next->roles.client_gid;
	for (size_t i = 0; i < sizeof(key_rows) / sizeof(key_rows[0]); i++) {
		const struct key_row *k = &key_rows[i];
		char *have = (char *)cfg + k->off;
		const char *want = (const char *)next + k->off;
		if (memcmp(have, want, k->size) == 0)
			continue;
		/* Two rows, one key (the paths and their count): one line. */
		if (i > 0 && !strcmp(key_rows[i - 1].key, k->key) &&
		    memcmp((char *)cfg + key_rows[i - 1].off, (const char *)next + key_rows[i - 1].off,
			   key_rows[i - 1].size) != 0)
			continue;
		char a[80] = "", b[80] = "";
		if (k->kind != K_BLOB) {
			key_text(k->kind, have, a, sizeof(a));
			key_text(k->kind, want, b, sizeof(b));
		}
		say(rep, k->how == RESTART ? LOG_WARNING : LOG_NOTICE, "%s %s%s%s: %s", k->key, a,
		    k->kind == K_BLOB ? "" : " -> ", k->kind == K_BLOB ? "changed" : b, verdict[k->how]);
		if (k->how == RESTART) {
			rep->restart++;
			continue;
		}
		memcpy(have, want, k->size);
		rep->applied++;
	}
}

/* ---- the log, and the rest ---------------------------------------------- */

int reload_log(const struct reload_ctx *ctx, const struct config *cfg, char *err, size_t errlen)
{
	log_set_level(ctx->log_level >= 0 ? ctx->log_level : cfg->log_level);
	if (cfg->log_file[0] != '\0')
		return log_use_file(cfg->log_file, err, errlen);
	log_use_default(ctx->daemonised);
	return 0;
}

/* log_level and log_file: applied, the file reopened even when unchanged
 * (logrotate moves it away, then sends SIGHUP). */
static void apply_log(struct reload_ctx *ctx, const struct config *next, struct reload_report *rep)
{
	struct config *cfg = ctx->cfg;
	char err[512];
	if (reload_log(ctx, next, err, sizeof(err)) < 0) {
		rep->refused++;
		say(rep, LOG_ERR, "%s; the log stays where it was", err);
		log_set_level(ctx->log_level >= 0 ? ctx->log_level : next->log_level);
	} else {
		if (strcmp(cfg->log_file, next->log_file) != 0) {
			rep->applied++;
			say(rep, LOG_NOTICE, "[instance] log_file '%s' -> '%s': applied", cfg->log_file,
			    next->log_file);
		}
		memcpy(cfg->log_file, next->log_file, sizeof(cfg->log_file));
	}
	if (cfg->log_level != next->log_level) {
		rep->applied++;
		say(rep, LOG_NOTICE, "[instance] log_level %s -> %s: %s", log_level_name(cfg->log_level),
		    log_level_name(next->log_level), ctx->log_level >= 0 ? "--log-level wins over it" : "applied");
		cfg->log_level = next->log_level;
	}
}

/* What can change live beyond the filters: the instance keys, the roles
 * and the log. The modes and groups among them reach the files in
 * reload_permissions(), once the filters' sections are in force too. */
static void reload_apply_settings(struct reload_ctx *ctx, const struct config *next, struct reload_report *rep)
{
	apply_keys(ctx->cfg, next, rep);
	apply_log(ctx, next, rep);
}

/* The permissions pass, as at start (perms_apply(): the runtime directory,
 * the control file, the socket and every filter's files brought to the
 * configured group and modes, each change logged). */
static void reload_permissions(struct reload_ctx *ctx, struct reload_report *rep)
{
	if (ctx->sock_path == NULL)
		return;
	int rc = perms_apply(ctx->reg, ctx->cfg, ctx->sock_path);
	if (rc > 0) {
		rep->applied++;
		say(rep, LOG_NOTICE, "permissions: %d files brought to the configured group and modes", rc);
	} else if (rc < 0) {
		rep->refused++;
		say(rep, LOG_WARNING, "permissions: not every file could be changed: %s (see the log)", strerror(-rc));
	}
}

/* The parsed file, and a copy of the configuration it replaces: large,
 * and the main loop's alone. */
static struct config next_cfg, old_cfg;

/* The reload itself (reload_run() tells the service manager around it). */
static int reload_file(struct reload_ctx *ctx, struct reload_report *rep)
{
	memset(rep, 0, sizeof(*rep));
	if (ctx->path == NULL) {
		errmsg(rep->error, sizeof(rep->error), 0,
		       "shmd was started with its embedded default configuration (no -c, and no " SHMD_CONFIG_DIR_DEFAULT
		       "/shmd.conf or NAME.conf for -i NAME): there is no file to reload (start it with -c FILE)");
		log_msg(LOG_WARNING, "reload: %s", rep->error);
		return SHMF_E_INVAL;
	}
	char err[sizeof(rep->error) - 32];
	int rc = config_load(&next_cfg, ctx->path, err, sizeof(err));
	if (rc < 0) {
		snprintf(rep->error, sizeof(rep->error), "%s; nothing changed", err);
		log_msg(LOG_ERR, "reload: %s", rep->error);
		return rc;
	}
	/* A snapshot directory that is not there (and not to be made) would
	 * fail every periodic snapshot later: refused now, as at a start. */
	static char dirs[2048];
	dirs[0] = '\0';
	if (config_check_dirs(&next_cfg, next_cfg.create_dirs, dirs, sizeof(dirs)) > 0) {
		char *nl = strchr(dirs, '\n');
		if (nl != NULL)
			*nl = '\0';
		snprintf(rep->error, sizeof(rep->error), "%.440s; nothing changed", dirs);
		log_msg(LOG_ERR, "reload: %s", rep->error);
		return SHMF_E_INVAL;
	}
	/* The listener open since the start, with the passwords and roles of
	 * the new file: a reload never leaves it open without a password by
	 * accident (enabled itself changes only at a restart). */
	int enabled = next_cfg.tcp.enabled;
	next_cfg.tcp.enabled = ctx->cfg->tcp.enabled;
	rc = config_tcp_check(&next_cfg, ctx->path, err, sizeof(err));
	char warning[512];
	if (rc == 0 && config_tcp_warning(&next_cfg, ctx->cfg->tcp.bind, warning, sizeof(warning)))
		say(rep, LOG_WARNING, "%s", warning);
	next_cfg.tcp.enabled = enabled;
	if (rc < 0) {
		snprintf(rep->error, sizeof(rep->error), "%.420s (the listener stays open); nothing changed", err);
		log_msg(LOG_ERR, "reload: %s", rep->error);
		return rc;
	}
	if (ctx->instance != NULL)
		snprintf(next_cfg.instance, sizeof(next_cfg.instance), "%s", ctx->instance);
	log_msg(LOG_NOTICE, "reload: reading %s", ctx->path);
	old_cfg = *ctx->cfg;
	reload_apply_settings(ctx, &next_cfg, rep);
	compare_filter_settings(&old_cfg, &next_cfg, rep);
	/* The filters in force before new ones are made: a filter made now
	 * restores from, and snapshots into, the new snapshot_dir. */
	ctx->cfg->nfilters = next_cfg.nfilters;
	memcpy(ctx->cfg->filters, next_cfg.filters, sizeof(next_cfg.filters));
	reload_filters(ctx->reg, ctx->cfg, rep, 0);
	reload_permissions(ctx, rep);
	if (ctx->periodic != NULL)
		periodic_reschedule(ctx->periodic, &old_cfg, (uint64_t)time(NULL));
	say(rep, LOG_NOTICE, "%s: %u filters created, %u changes applied, %u refused, %u need a restart%s", ctx->path,
	    rep->created, rep->applied, rep->refused, rep->restart, rep->more ? " (more lines in the log)" : "");
	return 0;
}

void reload_notify_ready(struct registry *reg, const char *note)
{
	int slots[SHMF_SLOTS];
	int n = registry_list(reg, slots);
	notify_ready("instance '%s': %d filter%s%s%s", reg->instance, n, n == 1 ? "" : "s", note ? "; " : "",
		     note ? note : "");
}

int reload_run(struct reload_ctx *ctx, struct reload_report *rep)
{
	notify_reloading();
	int rc = reload_file(ctx, rep);
	/* READY=1 whatever happened: systemd waits for it after RELOADING=1. */
	if (rc < 0)
		reload_notify_ready(ctx->reg, "the last reload changed nothing (see the log)");
	else if (rep->refused + rep->restart > 0)
		reload_notify_ready(ctx->reg, "the last reload left changes undone (see the log)");
	else
		reload_notify_ready(ctx->reg, NULL);
	return rc;
}
