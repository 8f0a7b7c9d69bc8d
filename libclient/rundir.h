/*
 * rundir.h - where an instance lives, agreed on by daemon, tools and library.
 *
 *   runtime dir   $SHMF_RUNTIME_DIR, else /run/shmd (root), else
 *                 $XDG_RUNTIME_DIR/shmd
 *   segments      <runtime dir>/<instance>/
 *   socket        <runtime dir>/<instance>.sock
 *   pidfile       <runtime dir>/<instance>.pid
 */
#ifndef SHMF_RUNDIR_H
#define SHMF_RUNDIR_H

#include <stddef.h>
#include <stdint.h>

#define SHMF_DEFAULT_INSTANCE "default"

/**
 * Check an instance or filter name: 1 to SHMF_NAME_MAX characters of
 * [A-Za-z0-9_.:-], not starting with '.' (so never "." or ".." and never a
 * path). @return 0 or SHMF_E_NAME.
 */
int shmf_name_check(const char *name);

/** Write the runtime directory into buf. @return 0, SHMF_E_RUNDIR, -ENAMETOOLONG. */
int shmf_runtime_dir(char *buf, size_t size);

/**
 * Write <runtime dir>/<instance><suffix> into buf (suffix "" for the
 * segment directory, ".sock", ".pid"). instance NULL means "default".
 * @return 0, SHMF_E_NAME, SHMF_E_RUNDIR, -ENAMETOOLONG.
 */
int shmf_instance_path(const char *instance, const char *suffix, char *buf, size_t size);

/** Write the data segment file name "<name>.<generation>.data" into buf. */
int shmf_data_filename(const char *name, uint64_t generation, char *buf, size_t size);

#endif
