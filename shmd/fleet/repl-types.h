/*
 * repl-types.h - what the fleet engine's public face (replication.h) and
 * its insides (engine.h) both name: the sizes of what it reports and the
 * kinds of refused stream entries. Includes nothing of the fleet, so that
 * neither of the two includes the other.
 */
#ifndef SHMD_FLEET_REPL_TYPES_H
#define SHMD_FLEET_REPL_TYPES_H

#define REPL_NODES_MAX 32 /* other nodes remembered per filter */
#define REPL_ERROR_MAX 512

/* The kinds of stream entries refused for what their tags and sequence
 * say (SHMF.REPLICATION's refused_<name>, counted in stream entries). */
enum repl_refused {
	REPL_FORGED,        /* the header tag fails, the name no member's this node knows */
	REPL_ALTERED,       /* the header tag verifies, the batch's does not: a member's entry changed */
	REPL_REPLAYED,      /* both verify, the sequence is not above the sender's last applied */
	REPL_IMPERSONATING, /* the header tag fails, the name this node's or a member's it knows */
	REPL_UNSIGNED,      /* version 1, without tags: a shmd older than authenticated entries */
	REPL_REFUSED_KINDS
};

/** "forged", "altered", "replayed", "impersonating", "unsigned". */
extern const char *const repl_refused_name[REPL_REFUSED_KINDS];

#endif
