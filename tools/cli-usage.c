/*
 * cli-usage.c - the help of every shmctl verb, one row each (cli.h):
 * `shmctl help` lists the rows, `shmctl help VERB` prints one, and a
 * usage error points at it in one line.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const struct help {
	const char *verb;
	const char *synopsis; /* the arguments, after the verb */
	const char *summary;  /* one line, for the list */
	const char *text;     /* the rest: options, output, exit status */
} helps[] = {
	{ "create",
	  "FILTER --capacity N --fpr P [--type bloom|cuckoo] [--max-kicks N] [--bucket-size B]\n"
	  "              [--mode OCTAL] [--window DURATION [--generations N]] [--expansion N | --nonscaling]\n"
	  "              [--replicate] [-q]",
	  "create a filter (Bloom unless --type cuckoo)",
	  "  --capacity N        keys the filter is sized for\n"
	  "  --fpr P             false-positive rate at capacity, strictly between 0 and 1\n"
	  "  --type T            bloom (default) or cuckoo (delete, count, capped adds)\n"
	  "  --max-kicks N       cuckoo only: bound on one insert's relocations (1 to 65535, default 500)\n"
	  "  --bucket-size B     cuckoo only: fingerprints per bucket, 1, 2, 4 (default; 2 below --fpr 1.2e-4)\n"
	  "                      or 8; a bucket is one word a lookup reads at once, so 8 only with 8-bit\n"
	  "                      fingerprints (--fpr 0.06 or more), 32-bit ones (below 1.2e-4) only in 1 or 2\n"
	  "  --mode OCTAL        data file mode: 0640 (the group may check, default) or 0660 (may add)\n"
	  "  --window D          a time window: adds go to a generation D long (60s, 10m, 1h, 1d)\n"
	  "  --generations N     live generations of the window (1 to 16, default 2)\n"
	  "  --expansion N       grow: past its capacity a new layer N times larger is added (Bloom 1 to\n"
	  "                      32768; cuckoo rounded up to a power of 2; 0 or absent: the filter is fixed)\n"
	  "  --nonscaling        Bloom: refuse new keys past the capacity (default: accept them, the\n"
	  "                      false-positive rate rising)\n"
	  "  --replicate         keep it in step with the fleet (needs [replication] in shmd's configuration)\n"
	  "  -q                  print nothing\n"
	  "Prints what it created: type, capacity, error rate and bytes." },
	{ "list", "[--json]", "list the filters", "  --json   every filter's info, as a JSON array\n" },
	{ "info", "FILTER [--json]", "describe a filter",
	  "Shape, items, fill, data file, mode and (windowed) its generations or (growing) its layers.\n"
	  "  --json   as one JSON object\n" },
	{ "add", "[-q] FILTER KEY... | [-q] FILTER - < FILE", "add keys",
	  "Adds each KEY, or with -, each line of stdin (blank lines skipped, a trailing CR removed).\n"
	  "A KEY that names an existing file is refused: to add the file's lines use 'add FILTER - < FILE';\n"
	  "to add such names as keys, put -- before them.\n"
	  "Options may come anywhere before --; after --, every argument is a key, so a key that starts\n"
	  "with '-' goes after -- (the same for check, del, count and add-capped).\n"
	  "  -q   print nothing; the exit status says (0 added, 2 error: a full cuckoo filter)\n" },
	{ "check", "[-q] FILTER KEY... | [-q] FILTER -", "check keys",
	  "Prints present or absent for each key. Exit status: 0 all present, 1 some absent, 2 error.\n"
	  "  -q   print nothing; only the exit status answers\n" },
	{ "del", "[-q] FILTER KEY... | [-q] FILTER -", "cuckoo: remove one copy of each key",
	  "Exit status: 0 all found, 1 some not found, 2 error.\n"
	  "  -q   print nothing\n" },
	{ "count", "FILTER KEY... | FILTER -", "cuckoo: copies of each key", "Prints the count and the key.\n" },
	{ "add-capped", "[-q] --cap N FILTER KEY... | [-q] --cap N FILTER -",
	  "cuckoo: add a copy of each key that has fewer than N",
	  "Exit status: 0 all added, 1 some at the cap, 2 error.\n"
	  "  -q   print nothing\n" },
	{ "drop", "FILTER", "delete a filter and its files", "Workers that have it open keep their mapping.\n" },
	{ "rotate", "FILTER", "time window: start a new generation now", "The oldest live generation retires.\n" },
	{ "snapshot", "[--force] FILTER FILE", "write a crash-safe snapshot file",
	  "FILE is opened by shmd with your uid and gid; a relative path is taken from here.\n"
	  "It replaces only a missing file or an older snapshot, never a device, FIFO, directory or link.\n"
	  "  --force   also replace a regular file that is not a snapshot\n" },
	{ "swap", "FILTER FILE [--reshape]", "replace a live filter with a snapshot file",
	  "Every checksum is verified first; a damaged file changes nothing.\n"
	  "  --reshape   also a file of another type or shape (refused without it, saying what would change)\n" },
	{ "restore", "FILTER FILE", "like swap, creating the filter if it is missing", "" },
	{ "merge", "FILTER FILE", "OR a Bloom snapshot of the same shape into a filter", "" },
	{ "chmod", "FILTER MODE", "change the mode of a filter's files in place",
	  "Every live generation's data file (and the journal) at once; open handles keep working.\n"
	  "  MODE   octal: 0640 (the group may check) or 0660 (the group may add too)\n" },
	{ "resize", "FILTER --capacity N [--fpr P]", "a new size for a filter that holds no key yet",
	  "A filter holding keys is refused, saying why: its bits or fingerprints cannot be moved to\n"
	  "a table of another size without the keys; build one from the keys ('shmctl build'), then\n"
	  "'shmctl swap FILTER FILE --reshape'.\n" },
	{ "inspect", "FILE [--json]", "a snapshot's header and checksum verdict (offline)",
	  "Exit status 2 and where, if the file is damaged.\n" },
	{ "plan", "--capacity N --fpr P [--window DURATION [--generations G]] [--replicate] [--json]",
	  "what a filter costs in each layout, and which one is picked (offline)",
	  "For every type and layout that reaches the rate: memory per host, bits per key, cache lines a\n"
	  "check reads, what it supports, and which layout BF.RESERVE, CF.RESERVE and 'shmctl create' pick\n"
	  "(BF.RESERVE grows by 2: its layer 0 is sized at 0.45 P); the bits per key of a classic Bloom\n"
	  "filter (-ln P / ln^2 2) as the yardstick; and, per type, the layouts that do not reach P and why.\n"
	  "Computed with shmd's sizing; needs no daemon.\n"
	  "  --capacity N        keys the filter is sized for\n"
	  "  --fpr P             false-positive rate at capacity, strictly between 0 and 1\n"
	  "  --window D          a time window: memory times its live generations\n"
	  "  --generations G     live generations of the window (1 to 16, default 2)\n"
	  "  --replicate         add the fleet journal's memory (shmd's default 64 rings x 16384 entries\n"
	  "                      x 16 bytes + a 4 KiB header and 192 bytes a ring: 16 MiB a filter)\n"
	  "  --json              as one JSON object\n" },
	{ "build",
	  "--capacity N --fpr P --from FILE|- -o OUT [--type bloom|cuckoo] [--max-kicks N] [--bucket-size B]\n"
	  "              [--name NAME]",
	  "train a filter from a key list into a snapshot file (offline)",
	  "A progress bar on a terminal. Then 'shmctl swap FILTER OUT' on every host. More keys than\n"
	  "--capacity: the file is written, and a warning gives the false-positive rate it will have.\n"
	  "  --max-kicks N, --bucket-size B   cuckoo only, as for create\n" },
	{ "replication", "[--json] [FILTER]", "fleet: state, cursor, lag, counters and nodes", "" },
	{ "pull", "FILTER --from HOST:PORT [--password P] [--user U] [--as NAME]",
	  "copy a live filter from a peer shmd's TCP listener", "With the peer's stream cursor.\n" },
	{ "import", "[--password P] [--user U] [--db N] REDIS KEY [AS NAME]",
	  "copy a RedisBloom filter from a running Redis (read-only here)",
	  "REDIS is HOST:PORT, [IPV6]:PORT, redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or the path of\n"
	  "Redis' unix socket; KEY a Bloom (BF.RESERVE, BF.ADD) or cuckoo (CF.*) filter there. Its\n"
	  "chunks (BF.SCANDUMP / CF.SCANDUMP) are loaded here as filter NAME (default: KEY), replacing a\n"
	  "filter of that name. It keeps RedisBloom's hashing, so it answers every key as RedisBloom did,\n"
	  "false positives included; it takes no add or delete (rebuild it with 'shmctl build' for that).\n"
	  "A filter that changes during the dump is taken again (5 tries). An empty cuckoo filter cannot be\n"
	  "dumped by RedisBloom; a chain with a bf-hash-seed is refused.\n"
	  "  --password P, --user U   AUTH on Redis (a redis:// URL may carry them)\n"
	  "  --db N                   SELECT N first\n"
	  "  --as NAME                the same as AS NAME\n" },
	{ "reload", "", "make shmd reload its configuration file (as SIGHUP does)",
	  "Prints what the reload did: filters created, settings applied, changes refused (a filter's\n"
	  "shape never changes in place) and those that need a restart; a setting the file leaves as it\n"
	  "is gets no line. Exit status: 0 the whole file is in force, 1 some of it is not (a change\n"
	  "refused or needing a restart, said on stderr too), 2 a file that does not parse (nothing\n"
	  "changed; the error is printed).\n" },
	{ "ping", "", "is shmd answering?", "" },
	{ "help", "[VERB]", "list the verbs, or describe one", "" },
};

static const struct help *find(const char *verb)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (!strcmp(helps[i].verb, verb))
			return &helps[i];
	return NULL;
}

int cli_help_has(const char *verb)
{
	return find(verb) != NULL;
}

void cli_help_all(FILE *to)
{
	fprintf(to, "usage: shmctl [--instance NAME | --socket PATH] VERB [ARGS]\n\nVerbs:\n");
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		fprintf(to, "  %-12s %s\n", helps[i].verb, helps[i].summary);
	fprintf(to, "\nOptions:\n"
		    "  -i, --instance NAME  instance (default 'default'): socket <runtime dir>/NAME.sock\n"
		    "  -s, --socket PATH    control socket path (overrides --instance)\n"
		    "  -V, --version        print the version\n"
		    "  -h, --help           print this list\n"
		    "'shmctl help VERB' describes a verb. Errors: exit status 2.\n");
}

int cli_help_verb(const char *verb)
{
	const struct help *h = find(verb);
	if (h == NULL) {
		fprintf(stderr, "shmctl: help: no verb '%s' (see 'shmctl help' for the list)\n", verb);
		return EXIT_ERROR;
	}
	printf("usage: shmctl [--instance NAME | --socket PATH] %s%s%s\n%s.\n%s", h->verb, h->synopsis[0] ? " " : "",
	       h->synopsis, h->summary, h->text);
	return 0;
}

void cli_usage_error(const char *verb, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "shmctl: %s%s", verb ? verb : "", verb ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (verb != NULL && find(verb) != NULL)
		fprintf(stderr, " (see 'shmctl help %s')\n", verb);
	else
		fprintf(stderr, " (see 'shmctl help')\n");
	exit(EXIT_ERROR);
}
