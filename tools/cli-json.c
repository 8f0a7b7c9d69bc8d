/*
 * cli-json.c - the JSON writer of shmctl (cli.h). Strings are escaped
 * here and only here: quotes, backslashes and every control byte; bytes
 * of 0x80 and above pass as they are (names are ASCII; paths may be
 * UTF-8).
 */
#include <string.h>

#include "tools/cli.h"

void json_escape(FILE *to, const char *s)
{
	fputc('"', to);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(to, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", to);
		else if (ch == '\t')
			fputs("\\t", to);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(to, "\\u%04x", ch);
		else
			fputc(ch, to);
	}
	fputc('"', to);
}

/* A comma before every member or element but the first at its depth;
 * none before the value of a member (it follows its key). */
static void value_start(struct json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0 && j->count[j->depth - 1]++ > 0)
		fputs(", ", stdout);
}

void json_open(struct json *j, char bracket)
{
	value_start(j);
	putchar(bracket);
	if (j->depth < (int)(sizeof(j->count) / sizeof(j->count[0])))
		j->count[j->depth++] = 0;
}

void json_close(struct json *j, char bracket)
{
	putchar(bracket);
	if (j->depth > 0)
		j->depth--;
}

void json_key(struct json *j, const char *key)
{
	value_start(j);
	json_escape(stdout, key);
	fputs(": ", stdout);
	j->after_key = 1;
}

void json_str(struct json *j, const char *s)
{
	value_start(j);
	json_escape(stdout, s);
}

void json_int(struct json *j, long long v)
{
	value_start(j);
	printf("%lld", v);
}

void json_uint(struct json *j, unsigned long long v)
{
	value_start(j);
	printf("%llu", v);
}

void json_bool(struct json *j, int v)
{
	value_start(j);
	fputs(v ? "true" : "false", stdout);
}

void json_null(struct json *j)
{
	value_start(j);
	fputs("null", stdout);
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int is_json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

void json_number_text(struct json *j, const char *text)
{
	value_start(j);
	if (is_json_number(text))
		fputs(text, stdout);
	else
		json_escape(stdout, text);
}
