/*
 * config-keys.h - every key of the configuration file, in one table: its
 * section, its name, the form of its value and what it does, in one line.
 *
 * The parser (config.c) refuses a key this table does not give for its
 * section before any section's own code sees it, so a key that code
 * handles but the table lacks cannot be set at all, and its tests fail;
 * test-config checks the other way round (every row reaches the code that
 * parses it). `shmd --config-keys` prints the table, and the man page
 * shmd.conf(5) is tested against that output. Adding a key is adding a
 * row here, its parsing in its section's code, and its entry in
 * man/shmd.conf.5.scd.
 */
#ifndef SHMD_CONFIG_KEYS_H
#define SHMD_CONFIG_KEYS_H

#include <stddef.h>
#include <stdio.h>

struct config_key {
	/* As the man page names it: "instance", or "filter NAME" for every
	 * section "filter X" (a section name ending in " NAME" matches any
	 * non-empty name after the word). */
	const char *section;
	const char *key;
	const char *value;   /* the value's form: "yes|no", "OCTAL", "DURATION", ... */
	const char *summary; /* one line */
};

extern const struct config_key config_keys[];
extern const size_t config_keys_count;

/** The row of key @p key in section @p section as written ("filter clicks"), or NULL. */
const struct config_key *config_key_find(const char *section, const char *key);

/** 1 if the table has a row for section @p section as written, else 0. */
int config_section_known(const char *section);

/**
 * The message for key @p key that section @p section (as written) lacks:
 * "unknown key 'K' in [tcp] (enabled, bind, ...)", or "in a filter
 * section (...)" for the sections of a NAME.
 */
void config_key_unknown(const char *section, const char *key, char *msg, size_t len);

/** The table, a row a line: section, key, value and summary separated by tabs. */
void config_keys_print(FILE *out);

#endif
