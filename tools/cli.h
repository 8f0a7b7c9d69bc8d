/*
 * cli.h - what the files of shmctl share: exit statuses, one-line usage
 * errors (cli-usage.c, with every verb's help), the connection to shmd
 * and its requests (cli-conn.c), and the JSON writer (cli-json.c).
 */
#ifndef SHMCTL_CLI_H
#define SHMCTL_CLI_H

#include <hiredis/hiredis.h>
#include <stdio.h>

#define EXIT_ABSENT 1
#define EXIT_ERROR  2

/* ---- cli-usage.c: the help of every verb ---- */

/** The usage line of shmctl and a line per verb (shmctl help, --help). */
void cli_help_all(FILE *to);

/** The help of @p verb (shmctl help VERB). @return 0, or EXIT_ERROR (unknown verb, said). */
int cli_help_verb(const char *verb);

/** Whether shmctl has a verb called @p verb (in the help table). */
int cli_help_has(const char *verb);

/**
 * A usage error: "shmctl: VERB: <what was wrong> (see 'shmctl help VERB')"
 * on one line, then exit EXIT_ERROR. @p verb NULL: the error is not a
 * verb's ("see 'shmctl help'").
 */
void cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* ---- cli-conn.c: the connection to shmd ---- */

/** Which daemon: --instance NAME (default "default"), or --socket PATH (NULL: none). */
void cli_conn_target(const char *instance, const char *socket_path);

/** The connection, made on first use; exits with a message saying why it cannot be made. */
redisContext *cli_conn(void);

/** Close the connection if one was made (atexit). */
void cli_conn_close(void);

/** Queue one request (@p lens NULL: strings); exits on a transport error. */
void cli_send(const char *what, int argc, const char **argv, const size_t *lens);

/** The next reply; exits on a transport error and on an error reply, naming @p what. */
redisReply *cli_take(const char *what);

/** The next reply, an error reply included (the caller frees it); exits on a transport error. */
redisReply *cli_take_any(const char *what);

/** One request, one reply (cli_send() then cli_take()). */
redisReply *cli_call(const char *what, int argc, const char **argv, const size_t *lens);

/** An error reply's text without Redis' "ERR " prefix. */
const char *cli_error_text(const redisReply *r);

/* ---- cli-json.c: JSON out, strings escaped ---- */

/* A JSON writer on stdout: commas between members come from the nesting
 * it keeps; every string goes through one escaping function. */
struct json {
	int depth;
	int count[16]; /* members written so far at each depth */
	int after_key; /* a key was written: its value comes next, without a comma */
};

void json_open(struct json *j, char bracket);  /* '{' or '[' */
void json_close(struct json *j, char bracket); /* '}' or ']' */
/** A member's key (inside an object); the value follows. */
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);
void json_int(struct json *j, long long v);
void json_uint(struct json *j, unsigned long long v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);
/** A number given as text: written as is if it is one in JSON's grammar, else as a string. */
void json_number_text(struct json *j, const char *text);
/** Escape @p s as a JSON string (quotes included) onto @p to. */
void json_escape(FILE *to, const char *s);

#endif
