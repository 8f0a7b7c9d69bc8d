/*
 * cli-keys.h - the shmctl verbs that take keys (cli-keys.c).
 */
#ifndef SHMCTL_CLI_KEYS_H
#define SHMCTL_CLI_KEYS_H

/* What a key verb does with each key. */
enum key_op { OP_ADD, OP_CHECK, OP_DEL, OP_COUNT, OP_CAPPED };

/**
 * shmctl add|check|del|count|add-capped [-q] [--cap N] FILTER [--] KEY...|-
 * (options anywhere before --; after it every argument is a key)
 * (argv[0] the verb). @return the exit status: 0; EXIT_ABSENT (check: a
 * key absent; del: not found; add-capped: at the cap); EXIT_ERROR.
 */
int cli_keys(int argc, char **argv, enum key_op op);

#endif
