/*
 * test-config.c - the daemon's configuration: the embedded default, a
 * full file, and every kind of bad value refused with a message naming
 * the section and the value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmd/config/config.h"
#include "shmd/config/config-keys.h"
#include "shmd/base/log.h"
#include "tests/run-named.h"

static void test_embedded_default(void **state)
{
	(void)state;
	struct config c;
	char err[256];
	assert_int_equal(config_parse(&c, config_default_text, "embedded default", err, sizeof(err)), 0);
	assert_string_equal(c.instance, "default");
	assert_int_equal(c.dir_mode, 0750);
	assert_int_equal(c.socket_mode, 0660);
	assert_int_equal(c.gid, (gid_t)-1);
	assert_int_equal(c.remove_on_exit, 0);
	assert_int_equal(c.mount_tmpfs, MOUNT_TMPFS_AUTO);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_string_equal(c.log_file, "");
	assert_int_equal(c.nfilters, 1);
	assert_string_equal(c.filters[0].name, "default");
	assert_int_equal(c.filters[0].type, SHMF_TYPE_BLOOM);
	assert_int_equal(c.filters[0].capacity, 1000000);
	assert_true(c.filters[0].fpr == 0.01);
	assert_int_equal(c.filters[0].mode, 0640);
	/* Connections: 1024 at once, 512 a user, never closed for idleness. */
	assert_int_equal(c.maxclients, 1024);
	assert_int_equal(c.maxclients_per_user, 512);
	assert_int_equal(c.timeout, 0);
	/* What all clients may hold: 256 MiB. */
	assert_int_equal(c.maxmemory_clients, (size_t)256 << 20);
	/* The slow log: Redis' defaults, 10 ms and 128 entries. */
	assert_int_equal(c.slowlog.log_slower_than, 10000);
	assert_int_equal(c.slowlog.max_len, 128);
}

static void test_full_file(void **state)
{
	(void)state;
	char path[] = "/tmp/shmf-config-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "; a comment\n"
			    "[instance]\n"
			    "name = edge\n"
			    "dir_mode = 0710\n"
			    "socket_mode = 0600\n"
			    "group = root        ; inline comment\n"
			    "remove_on_exit = yes\n"
			    "huge_pages = off\n"
			    "mount_tmpfs = yes\n"
			    "log_level = warning\n"
			    "log_file = /var/log/shmd.log\n"
			    "snapshot_dir = /var/lib/shmd\n"
			    "maxclients = 4000\n"
			    "maxclients_per_user = 300\n"
			    "timeout = 10m\n"
			    "maxmemory_clients = 2g\n"
			    "slowlog_log_slower_than = 0\n"
			    "slowlog_max_len = 1024\n"
			    "\n"
			    "[filter clicks]\n"
			    "type = bloom\n"
			    "capacity = 50000000\n"
			    "fpr = 0.001\n"
			    "mode = 0660\n"
			    "snapshot_every = 5m\n"
			    "snapshot_keep = 7\n"
			    "window = 1d\n"
			    "generations = 7\n"
			    "[filter blocklist]\n"
			    "capacity = 200000\n"
			    "[filter push]\n"
			    "type = cuckoo\n"
			    "capacity = 1000\n"
			    "max_kicks = 800\n"
			    "bucket_size = 2\n"
			    "lock_timeout_ms = 250\n"
			    "snapshot_every = 1d\n"
			    "snapshot_dir = /srv/snaps\n"
			    "[filter empty]\n";
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	struct config c;
	char err[256];
	int rc = config_load(&c, path, err, sizeof(err));
	unlink(path);
	if (rc != 0)
		fail_msg("config_load: %s", err);
	assert_string_equal(c.instance, "edge");
	assert_int_equal(c.dir_mode, 0710);
	assert_int_equal(c.socket_mode, 0600);
	assert_int_equal(c.gid, 0);
	assert_int_equal(c.remove_on_exit, 1);
	assert_int_equal(c.huge_pages, 0);
	assert_int_equal(c.mount_tmpfs, MOUNT_TMPFS_YES);
	assert_int_equal(c.log_level, LOG_WARNING);
	assert_string_equal(c.log_file, "/var/log/shmd.log");
	assert_int_equal(c.maxclients, 4000);
	assert_int_equal(c.maxclients_per_user, 300);
	assert_int_equal(c.timeout, 600);
	assert_int_equal(c.maxmemory_clients, (size_t)2 << 30);
	assert_int_equal(c.slowlog.log_slower_than, 0);
	assert_int_equal(c.slowlog.max_len, 1024);
	assert_int_equal(c.nfilters, 4);
	assert_string_equal(c.filters[0].name, "clicks");
	assert_int_equal(c.filters[0].capacity, 50000000);
	assert_true(c.filters[0].fpr == 0.001);
	assert_int_equal(c.filters[0].mode, 0660);
	assert_int_equal(c.filters[0].snapshot_every, 300);
	assert_int_equal(c.filters[0].snapshot_keep, 7);
	assert_int_equal(c.filters[0].window_secs, 86400);
	assert_int_equal(c.filters[0].window_gens, 7);
	assert_int_equal(c.filters[1].window_secs, 0);
	assert_string_equal(c.filters[0].snapshot_dir, "/var/lib/shmd"); /* the instance's */
	assert_int_equal(c.filters[1].snapshot_every, 0);
	assert_int_equal(c.filters[1].snapshot_keep, 3);
	assert_int_equal(c.filters[2].snapshot_every, 86400);
	assert_string_equal(c.filters[2].snapshot_dir, "/srv/snaps");
	assert_string_equal(c.filters[1].name, "blocklist");
	assert_int_equal(c.filters[1].capacity, 200000);
	assert_true(c.filters[1].fpr == 0.01); /* defaults for what is not said */
	assert_int_equal(c.filters[1].mode, 0640);
	assert_int_equal(c.filters[1].type, SHMF_TYPE_BLOOM);
	assert_string_equal(c.filters[2].name, "push");
	assert_int_equal(c.filters[2].type, SHMF_TYPE_CUCKOO);
	assert_int_equal(c.filters[2].capacity, 1000);
	assert_int_equal(c.filters[2].max_kicks, 800);
	assert_int_equal(c.filters[2].bucket_size, 2);
	assert_int_equal(c.filters[1].bucket_size, 0); /* the default: 4 */
	assert_int_equal(c.filters[2].lock_timeout_ms, 250);
	assert_int_equal(c.filters[1].lock_timeout_ms, 0); /* the default: 1 s */
	assert_string_equal(c.filters[3].name, "empty");   /* an empty section declares a default filter */
	assert_int_equal(c.filters[3].capacity, 1000000);
	assert_int_equal(c.filters[3].type, SHMF_TYPE_BLOOM);

	assert_int_equal(config_load(&c, "/nonexistent/shmd.conf", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/shmd.conf: No such file or directory");
}

/* Configurations with one bad value each, and the start of the message
 * that must name it. */
static const struct {
	const char *text;
	const char *want;
} bad_values[] = {
	{ "[instance]\nname = ../x\n", "cfg:2: [instance] invalid instance name '../x'" },
	{ "[instance]\ncolour = blue\n", "cfg:2: [instance] unknown key 'colour' in [instance]" },
	{ "[instance]\ndir_mode = 0770\n", "cfg:2: [instance] dir_mode '0770'" },
	{ "[instance]\ndir_mode = rwx\n", "cfg:2: [instance] dir_mode 'rwx'" },
	{ "[instance]\nsocket_mode = 0666\n", "cfg:2: [instance] socket_mode '0666'" },
	{ "[instance]\ngroup = no-such-group-here\n", "cfg:2: [instance] group 'no-such-group-here': no such group" },
	{ "[instance]\nremove_on_exit = maybe\n", "cfg:2: [instance] remove_on_exit 'maybe'" },
	{ "[instance]\nhuge_pages = always\n", "cfg:2: [instance] huge_pages 'always'" },
	{ "[daemon]\nx = 1\n", "cfg:1: [daemon] unknown section [daemon]" },
	{ "[filter ../up]\ncapacity = 10\n", "cfg:1: [filter ../up] invalid filter name '../up'" },
	{ "[filter a/b]\ncapacity = 10\n", "cfg:1: [filter a/b] invalid filter name 'a/b'" },
	{ "[filter x]\ncapacity = 10\n[filter x]\nfpr = 0.1\n", "cfg:3: [filter x] filter 'x' declared twice" },
	{ "[filter x]\ntype = quotient\n", "cfg:2: [filter x] type 'quotient': expected bloom or cuckoo" },
	{ "[filter x]\ntype = cuckoo\nmax_kicks = 0\n",
	  "cfg:3: [filter x] max_kicks '0': must be an integer from 1 to 65535" },
	{ "[filter x]\ntype = cuckoo\nmax_kicks = 65536\n", "cfg:3: [filter x] max_kicks '65536'" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = 3\n",
	  "cfg:3: [filter x] bucket_size '3': fingerprints per bucket, 1, 2, 4 or 8 (a bucket is one word that a "
	  "lookup reads in one atomic load" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = 0\n", "cfg:3: [filter x] bucket_size '0': fingerprints" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = 16\n", "cfg:3: [filter x] bucket_size '16': fingerprints" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = 256\n", "cfg:3: [filter x] bucket_size '256': fingerprints" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = -4\n", "cfg:3: [filter x] bucket_size '-4': fingerprints" },
	{ "[filter x]\ntype = bloom\nbucket_size = 4\n",
	  "cfg:1: [filter x] bucket_size applies to type = cuckoo only" },
	{ "[filter x]\ntype = cuckoo\nbucket_size = 8\nfpr = 0.01\n",
	  "cfg:1: [filter x] bucket_size 8: a bucket of 8 fingerprints holds only 8-bit ones (8 x 8 bits fill the "
	  "64-bit word a lookup reads at once), which reach an error rate of 0.0587 at capacity, not 0.01: ask "
	  "for 0.0588 or more, or a bucket size of 1, 2 or 4" },
	{ "[defaults]\ncuckoo_bucket_size = 3\n",
	  "cfg:2: [defaults] cuckoo_bucket_size '3': 1, 2, 4 or 8 (a bucket is one word" },
	{ "[defaults]\ncuckoo_bucket_size = 255\n", "cfg:2: [defaults] cuckoo_bucket_size '255'" },
	{ "[defaults]\ncuckoo_bucket_size = 8\n",
	  "cfg:1: [defaults] cuckoo_bucket_size 8: cuckoo filters created on the fly have error rate 0.01, and a "
	  "bucket of 8 fingerprints holds only 8-bit ones" },
	{ "[defaults]\ncuckoo_max_iterations = 65536\n", "cfg:2: [defaults] cuckoo_max_iterations '65536'" },
	{ "[filter x]\ntype = cuckoo\nlock_timeout_ms = 0\n",
	  "cfg:3: [filter x] lock_timeout_ms '0': must be an integer from 1 to 3600000" },
	{ "[filter x]\ntype = cuckoo\nlock_timeout_ms = 3600001\n", "cfg:3: [filter x] lock_timeout_ms '3600001'" },
	{ "[filter x]\ncapacity = 0\n", "cfg:2: [filter x] capacity '0': must be a positive integer" },
	{ "[filter x]\ncapacity = -5\n", "cfg:2: [filter x] capacity '-5'" },
	{ "[filter x]\ncapacity = 10k\n", "cfg:2: [filter x] capacity '10k'" },
	{ "[filter x]\ncapacity = +5\n", "cfg:2: [filter x] capacity '+5'" },
	{ "[filter x]\nmode = +640\n", "cfg:2: [filter x] mode '+640'" },
	{ "[filter x]\ncapacity = 99999999999999999999999\n", "cfg:2: [filter x] capacity '99999999999999999999999'" },
	{ "[filter x]\nfpr = 0\n", "cfg:2: [filter x] fpr '0': must be a number strictly between 0 and 1" },
	{ "[filter x]\nfpr = 1\n", "cfg:2: [filter x] fpr '1'" },
	{ "[filter x]\nfpr = 1%\n", "cfg:2: [filter x] fpr '1%'" },
	{ "[filter x]\nfpr = nan\n", "cfg:2: [filter x] fpr 'nan'" },
	{ "[filter x]\nmode = 0646\n", "cfg:2: [filter x] mode '0646'" },
	{ "[filter x]\nsize = 3\n", "cfg:2: [filter x] unknown key 'size' in a filter section" },
	{ "[instance]\nthis line has no equals sign\n", "cfg:2: syntax error" },
	{ "[instance]\nsnapshot_dir = relative/dir\n",
	  "cfg:2: [instance] snapshot_dir 'relative/dir': must be an absolute path" },
	{ "[filter x]\nsnapshot_every = 5\n", "cfg:1: [filter x] snapshot_every needs a snapshot_dir" },
	{ "[filter x]\nsnapshot_every = 5w\nsnapshot_dir = /s\n", "cfg:2: [filter x] snapshot_every '5w': a duration" },
	{ "[filter x]\nsnapshot_every = 0\nsnapshot_dir = /s\n", "cfg:2: [filter x] snapshot_every '0'" },
	{ "[filter x]\nsnapshot_every = -1m\nsnapshot_dir = /s\n", "cfg:2: [filter x] snapshot_every '-1m'" },
	{ "[filter x]\nsnapshot_keep = 0\n", "cfg:2: [filter x] snapshot_keep '0': an integer from 1 to 1000" },
	{ "[filter x]\ngenerations = 3\n", "cfg:1: [filter x] generations needs a window length" },
	{ "[filter x]\nwindow = 10m\ngenerations = 17\n",
	  "cfg:3: [filter x] generations '17': an integer from 1 to 16" },
	{ "[filter x]\nwindow = soon\n", "cfg:2: [filter x] window 'soon': a duration" },
	{ "[instance]\nlog_level = loud\n",
	  "cfg:2: [instance] log_level 'loud': expected debug, info, notice, warning or error" },
	{ "[instance]\nlog_file = shmd.log\n", "cfg:2: [instance] log_file 'shmd.log': must be an absolute path" },
	{ "[instance]\nmount_tmpfs = maybe\n", "cfg:2: [instance] mount_tmpfs 'maybe': expected auto, yes or no" },
	{ "[instance]\nmaxclients = 1\n", "cfg:2: [instance] maxclients '1': an integer from 2 to 65536" },
	{ "[instance]\nmaxclients = 70000\n", "cfg:2: [instance] maxclients '70000'" },
	{ "[instance]\nmaxclients_per_user = 0\n",
	  "cfg:2: [instance] maxclients_per_user '0': an integer from 1 to 65536" },
	{ "[instance]\nmaxclients_per_user = many\n", "cfg:2: [instance] maxclients_per_user 'many'" },
	{ "[instance]\ntimeout = -1\n", "cfg:2: [instance] timeout '-1': 0 (never), seconds, or a duration" },
	{ "[instance]\ntimeout = 2y\n", "cfg:2: [instance] timeout '2y'" },
	{ "[instance]\ntimeout = 400d\n", "cfg:2: [instance] timeout '400d'" },
	{ "[instance]\nmaxmemory_clients = 15m\n",
	  "cfg:2: [instance] maxmemory_clients '15m': bytes from 16m to 1024g" },
	{ "[instance]\nmaxmemory_clients = 2t\n", "cfg:2: [instance] maxmemory_clients '2t'" },
	{ "[instance]\nmaxmemory_clients = 1025g\n", "cfg:2: [instance] maxmemory_clients '1025g'" },
	{ "[instance]\nmaxmemory_clients = 0\n", "cfg:2: [instance] maxmemory_clients '0'" },
	{ "[instance]\nslowlog_log_slower_than = -2\n",
	  "cfg:2: [instance] slowlog_log_slower_than '-2': microseconds from 0 to 2147483647, or -1 (log nothing)" },
	{ "[instance]\nslowlog_log_slower_than = 10ms\n", "cfg:2: [instance] slowlog_log_slower_than '10ms'" },
	{ "[instance]\nslowlog_max_len = 0\n", "cfg:2: [instance] slowlog_max_len '0': an integer from 1 to 1024" },
	{ "[instance]\nslowlog_max_len = 1025\n", "cfg:2: [instance] slowlog_max_len '1025'" },
	{ "[instance]\nslowlog_maxlen = 5\n", "cfg:2: [instance] unknown key 'slowlog_maxlen' in [instance]" },
};

/* Parse @p text as file "cfg": refused (SHMF_E_INVAL) with a message that
 * starts with @p want; case @p i of bad_values in a failure's message. */
static void check_bad_value_named(size_t i, const char *text, const char *want)
{
	struct config c;
	char err[512] = "";
	int rc = config_parse(&c, text, "cfg", err, sizeof(err));
	if (rc != SHMF_E_INVAL)
		fail_msg("case %zu (%s): returned %d, want SHMF_E_INVAL", i, text, rc);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("case %zu: got '%s', want '%s...'", i, err, want);
}

static void test_bad_values_are_named(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++)
		check_bad_value_named(i, bad_values[i].text, bad_values[i].want);
}

/* [roles], [user NAME] and a filter's writers =: values, defaults, and
 * each bad value named. */
static void test_roles(void **state)
{
	(void)state;
	struct config c;
	char err[256] = "";
	assert_int_equal(config_parse(&c, config_default_text, "embedded default", err, sizeof(err)), 0);
	assert_int_equal(c.roles.admin_gid, (gid_t)-1);
	assert_int_equal(c.roles.writer_create, 0); /* admins alone create, unless said */
	assert_int_equal(c.roles.nusers, 0);
	const char *text = "[instance]\ngroup = 0\n"
			   "[roles]\nadmin_group = root\nwriter_create = yes\nwriter_max_filter_bytes = 64m\n"
			   "writer_max_total_bytes = 1g\nwriter_max_filters = 20\n"
			   "[user app]\npassword = s3cret\nrole = writer\nfilters = clicks, seen\n"
			   "[user ops]\npassword = other\nrole = admin\n"
			   "[filter clicks]\nwriters = root, @0, 65534\n";
	if (config_parse(&c, text, "cfg", err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(c.roles.client_gid, 0);
	assert_int_equal(c.roles.admin_gid, 0);
	assert_int_equal(c.roles.writer_create, 1);
	assert_int_equal(c.roles.writer_max_filter_bytes, 64u << 20);
	assert_int_equal(c.roles.writer_max_total_bytes, 1u << 30);
	assert_int_equal(c.roles.writer_max_filters, 20);
	assert_int_equal(c.roles.nusers, 2);
	assert_string_equal(c.roles.users[0].name, "app");
	assert_string_equal(c.roles.users[0].password, "s3cret");
	assert_int_equal(c.roles.users[0].role, ROLE_WRITER);
	assert_int_equal(c.roles.users[0].nfilters, 2);
	assert_string_equal(c.roles.users[0].filters[1], "seen");
	assert_int_equal(c.roles.users[1].role, ROLE_ADMIN);
	assert_int_equal(c.roles.nwriters, 1);
	assert_string_equal(c.roles.writers[0].filter, "clicks");
	assert_int_equal(c.roles.writers[0].n, 3);
	assert_true(!c.roles.writers[0].who[0].is_group && c.roles.writers[0].who[0].id == 0);
	assert_true(c.roles.writers[0].who[1].is_group && c.roles.writers[0].who[1].id == 0);
	assert_int_equal(c.roles.writers[0].who[2].id, 65534);
	struct {
		const char *text;
		const char *want;
	} bad[] = {
		{ "[roles]\nadmin_group = no-such-group-here\n",
		  "cfg:2: [roles] admin_group 'no-such-group-here': no such group" },
		{ "[roles]\nwriter_create = perhaps\n", "cfg:2: [roles] writer_create 'perhaps': expected yes or no" },
		{ "[roles]\nwriter_max_filter_bytes = 5t\n", "cfg:2: [roles] writer_max_filter_bytes '5t'" },
		{ "[roles]\nwriter_max_filters = -1\n", "cfg:2: [roles] writer_max_filters '-1'" },
		{ "[roles]\nadmins = x\n", "cfg:2: [roles] unknown key 'admins' in [roles]" },
		{ "[user a]\nrole = writer\n", "cfg:1: [user a] needs a password" },
		{ "[user a]\npassword = p\n", "cfg:1: [user a] needs a role" },
		{ "[user a]\npassword = p\nrole = god\n",
		  "cfg:3: [user a] role 'god': expected reader, writer or admin" },
		{ "[user a]\npassword = p\nrole = reader\nfilters = ../x\n",
		  "cfg:4: [user a] filters: '../x' is not a filter name" },
		{ "[user a]\npassword = p\nrole = reader\ncolour = red\n", "cfg:4: [user a] unknown key 'colour'" },
		{ "[user a]\npassword = p\nrole = reader\n[user a]\n", "cfg:4: [user a] user 'a' declared twice" },
		{ "[user default]\npassword = p\nrole = reader\n",
		  "cfg:1: [user default] user 'default' is the requirepass" },
		{ "[filter x]\nwriters = no-such-user-here\n",
		  "cfg:2: [filter x] writers: no such user 'no-such-user-here'" },
		{ "[filter x]\nwriters = @no-such-group-here\n",
		  "cfg:2: [filter x] writers: no such group 'no-such-group-here'" },
		{ "[filter x]\nwriters = ,\n", "cfg:2: [filter x] writers: empty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int rc = config_parse(&c, bad[i].text, "cfg", err, sizeof(err));
		if (rc != SHMF_E_INVAL)
			fail_msg("case %zu (%s): returned %d, want SHMF_E_INVAL", i, bad[i].text, rc);
		if (strncmp(err, bad[i].want, strlen(bad[i].want)) != 0)
			fail_msg("case %zu: got '%s', want '%s...'", i, err, bad[i].want);
	}
}

/* Parse "[section]\nkey = value"; fail on "no parser" and "unknown key". */
static void try_value(const char *section, const char *key, const char *value)
{
	struct config c;
	char text[256], err[512] = "";
	snprintf(text, sizeof(text), "[%s]\n%s = %s\n", section, key, value);
	config_parse(&c, text, "cfg", err, sizeof(err));
	if (strstr(err, "no parser") != NULL || strstr(err, "unknown") != NULL)
		fail_msg("[%s] %s = %s: %s", section, key, value, err);
}

/* Every row of the table of keys reaches the code of its section: set to
 * values (common ones, and the alternatives of the row's form such as
 * "bloom|cuckoo"), the key is accepted or its value refused by that code,
 * never "no parser" nor "unknown key". (The other way, a key parsed but
 * not in the table, is refused before its section's code sees it.) */
static void test_every_key_parsed(void **state)
{
	(void)state;
	static const char *const values[] = { "1", "yes", "no", "0640", "x", "/tmp", "reader", "1m", "h:1", "64m" };
	assert_true(config_keys_count > 60);
	for (size_t i = 0; i < config_keys_count; i++) {
		const struct config_key *k = &config_keys[i];
		char section[64], form[64], *save = NULL;
		size_t n = strlen(k->section);
		if (n > 5 && !strcmp(k->section + n - 5, " NAME"))
			snprintf(section, sizeof(section), "%.*s t", (int)(n - 5), k->section);
		else
			snprintf(section, sizeof(section), "%s", k->section);
		assert_ptr_equal(config_key_find(section, k->key), k);
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++)
			try_value(section, k->key, values[v]);
		snprintf(form, sizeof(form), "%s", k->value);
		for (char *alt = strtok_r(form, "|", &save); alt != NULL; alt = strtok_r(NULL, "|", &save))
			try_value(section, k->key, alt);
	}
}

/* A key the table lacks, in each kind of section: refused, naming the
 * file, the section, the key and the keys the section has. */
static void test_unknown_keys_named(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "[instance]\ncolour = blue\n",
		  "cfg:2: [instance] unknown key 'colour' in [instance] (name, dir_mode, " },
		{ "colour = blue\n", "cfg:1: [] unknown key 'colour' in [instance] (name, " },
		{ "[tcp]\nport = 1\ncolor = red\n",
		  "cfg:3: [tcp] unknown key 'color' in [tcp] (enabled, bind, port, " },
		{ "[filter x]\nsize = 3\n",
		  "cfg:2: [filter x] unknown key 'size' in a filter section (type, capacity, " },
		{ "[replication]\nsecrets = x\n",
		  "cfg:2: [replication] unknown key 'secrets' in [replication] (redis, " },
		{ "[defaults]\nbloom_fpr = 0.1\n",
		  "cfg:2: [defaults] unknown key 'bloom_fpr' in [defaults] (auto_create, " },
		{ "[roles]\nadmins = x\n", "cfg:2: [roles] unknown key 'admins' in [roles] (admin_group, " },
		{ "[user a]\ncolour = red\n",
		  "cfg:2: [user a] unknown key 'colour' in a user section (password, role, filters)" },
		/* a key of one section in another */
		{ "[instance]\nwriters = root\n", "cfg:2: [instance] unknown key 'writers' in [instance]" },
		{ "[defaults]\ncapacity = 10\n", "cfg:2: [defaults] unknown key 'capacity' in [defaults]" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_bad_value_named(i, cases[i].text, cases[i].want);
	assert_null(config_key_find("filter", "type")); /* a filter section needs a name */
	assert_false(config_section_known("filter"));
	assert_true(config_section_known("filter x"));
	assert_false(config_section_known("daemon"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_default),     cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_bad_values_are_named), cmocka_unit_test(test_roles),
		cmocka_unit_test(test_every_key_parsed),     cmocka_unit_test(test_unknown_keys_named),
	};
	static const char *const names[] = { "default", "full", "bad_values", "roles", "every_key", "unknown_keys" };
	return RUN_NAMED("config", argc > 1 ? argv[1] : NULL, tests, names, NULL, NULL);
}
