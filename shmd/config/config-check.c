/* config-check.c - where the configuration comes from, and what of it the host can hold (config-check.h). */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shmd/base/mkdirs.h"
#include "shmd/config/config-check.h"

int config_default_path(const char *instance, char *path, size_t len)
{
	const char *dir = getenv("SHMD_CONFIG_DIR");
	if (dir == NULL || dir[0] == '\0')
		dir = SHMD_CONFIG_DIR_DEFAULT;
	if ((size_t)snprintf(path, len, "%s/%s.conf", dir, instance != NULL ? instance : "shmd") >= len)
		return SHMF_E_TOOBIG;
	struct stat st;
	return lstat(path, &st) == 0 ? 1 : 0;
}

int config_absolute_path(const char *path, char *out, size_t len)
{
	if (path[0] == '/')
		return (size_t)snprintf(out, len, "%s", path) >= len ? SHMF_E_TOOBIG : 0;
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return -errno;
	const char *rel = strncmp(path, "./", 2) == 0 ? path + 2 : path;
	return (size_t)snprintf(out, len, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, rel) >= len ? SHMF_E_TOOBIG : 0;
}

/* Whether @p line (trimmed of leading blanks) is the header of @p section. */
static int is_header(const char *line, const char *section)
{
	size_t n = strlen(section);
	return line[0] == '[' && strncmp(line + 1, section, n) == 0 && line[1 + n] == ']';
}

/* Whether @p line sets @p key ("key = ..." or "key: ..."). */
static int sets_key(const char *line, const char *key)
{
	size_t n = strlen(key);
	if (strncmp(line, key, n) != 0)
		return 0;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	return *line == '=' || *line == ':';
}

int config_line_of(const char *path, const char *section, const char *key)
{
	FILE *f = path[0] == '/' ? fopen(path, "re") : NULL;
	if (f == NULL)
		return 0;
	char buf[1024];
	int no = 0, in = section[0] == '\0' || !strcmp(section, "instance"), found = 0;
	while (!found && fgets(buf, sizeof(buf), f) != NULL) {
		const char *line = buf;
		no++;
		while (*line == ' ' || *line == '\t')
			line++;
		if (line[0] == '[') {
			in = is_header(line, section);
			found = in && key == NULL;
		} else if (in && key != NULL && sets_key(line, key)) {
			found = 1;
		}
	}
	fclose(f);
	return found ? no : 0;
}

/* One problem: "ORIGIN:LINE: [section] what" (LINE of @p key), appended to @p out. */
static void problem(const struct config *c, char *out, size_t outlen, const char *section, const char *key,
		    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void problem(const struct config *c, char *out, size_t outlen, const char *section, const char *key,
		    const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	size_t used = strnlen(out, outlen);
	int line = config_line_of(c->origin, section, key);
	if (line > 0)
		snprintf(out + used, outlen - used, "%s:%d: [%s] %s\n", c->origin, line, section, what);
	else
		snprintf(out + used, outlen - used, "%s: [%s] %s\n", c->origin, section, what);
}

/* One directory a key names: 0 if shmd can write in it (made first when
 * @p create is 1 and it is missing; -1: a missing one would be made, as
 * --check-config says), 1 after saying what is wrong. */
static unsigned check_dir(const struct config *c, const char *section, const char *key, const char *dir, int create,
			  char *out, size_t outlen)
{
	struct stat st;
	if (create < 0 && stat(dir, &st) < 0 && errno == ENOENT)
		return 0; /* --check-config: create_dirs = yes will make it */
	if (stat(dir, &st) < 0 && errno == ENOENT && create > 0) {
		int rc = mkdirs(dir, 0750);
		if (rc < 0) {
			problem(c, out, outlen, section, key, "%s '%s': cannot be created (create_dirs = yes): %s", key,
				dir, strerror(-rc));
			return 1;
		}
	}
	if (stat(dir, &st) < 0) {
		int e = errno;
		problem(c, out, outlen, section, key, "%s '%s': %s%s", key, dir, strerror(e),
			e == ENOENT ? " (create it, or set create_dirs = yes in [instance])" : "");
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		problem(c, out, outlen, section, key, "%s '%s': not a directory", key, dir);
		return 1;
	}
	if (access(dir, W_OK | X_OK) < 0) {
		problem(c, out, outlen, section, key, "%s '%s': shmd (uid %u) cannot write in it: %s", key, dir,
			(unsigned)geteuid(), strerror(errno));
		return 1;
	}
	return 0;
}

unsigned config_check_dirs(const struct config *c, int create, char *out, size_t outlen)
{
	unsigned n = 0;
	if (c->snapshot_dir[0] != '\0')
		n += check_dir(c, "instance", "snapshot_dir", c->snapshot_dir, create, out, outlen);
	for (unsigned i = 0; i < c->nfilters; i++) {
		const struct filter_spec *f = &c->filters[i];
		char section[SHMF_NAME_MAX + 8];
		snprintf(section, sizeof(section), "filter %s", f->name);
		/* A filter without its own has the instance's, checked above. */
		if (f->snapshot_dir[0] != '\0' && strcmp(f->snapshot_dir, c->snapshot_dir) != 0)
			n += check_dir(c, section, "snapshot_dir", f->snapshot_dir, create, out, outlen);
	}
	if (c->log_file[0] != '\0') {
		char dir[sizeof(c->log_file)];
		snprintf(dir, sizeof(dir), "%s", c->log_file);
		char *slash = strrchr(dir, '/');
		if (slash != NULL) {
			slash[slash == dir ? 1 : 0] = '\0';
			n += check_dir(c, "instance", "log_file", dir, 0, out, outlen);
		}
	}
	return n;
}

/* 0 if @p host port @p port can be bound now; else 1 after saying why. */
static unsigned check_port(const struct config *c, const char *section, const char *key, const char *host, int port,
			   char *out, size_t outlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%d", port);
	int rc = getaddrinfo(host, service, &hints, &ai);
	if (rc != 0) {
		problem(c, out, outlen, section, key, "%s: address '%s' is not this host's: %s", key, host,
			gai_strerror(rc));
		return 1;
	}
	int e = 0, one = 1;
	for (struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		e = bind(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
		close(fd);
		if (e != 0)
			break;
	}
	freeaddrinfo(ai);
	if (e == 0)
		return 0;
	problem(c, out, outlen, section, key, "%s: %s port %d cannot be bound: %s%s", key, host, port, strerror(e),
		e == EADDRINUSE ? " (another program, or this instance's running shmd, has it)" : "");
	return 1;
}

unsigned config_check_ports(const struct config *c, char *out, size_t outlen)
{
	unsigned n = 0;
	if (c->tcp.enabled)
		n += check_port(c, "tcp", "port", c->tcp.bind, c->tcp.port, out, outlen);
	if (c->metrics.port != 0)
		n += check_port(c, "metrics", "listen", c->metrics.host, c->metrics.port, out, outlen);
	return n;
}
