/*
 * connection.h - the verbs that act on the connection rather than on
 * filters: AUTH, HELLO, CLIENT, SELECT, QUIT, RESET, ECHO and PING, which
 * Redis client libraries send when they connect (session.h holds the
 * connection's state).
 */
#ifndef SHMD_CONNECTION_H
#define SHMD_CONNECTION_H

#include "verbs.h"

verb_handler cmd_auth, cmd_hello, cmd_quit, cmd_reset, cmd_client, cmd_select, cmd_echo, cmd_ping;

#endif
