/*
 * runtime/pmi_wire.h - the text format of the PMI-1 wire protocol.
 *
 * Used by both sides: the library's PMI-1 client (runtime/pmi1.c) and the
 * xprun launcher's server (tools/xprun). A message is one line of
 * space-separated `key=value` tokens ending in '\n', e.g.
 *   cmd=get kvsname=kvs_42_0 key=3/addr
 *   cmd=get_result rc=0 msg=success value=AbC
 * Neither keys nor values may contain spaces, '=' (in keys) or newlines.
 */
#ifndef XP_RUNTIME_PMI_WIRE_H
#define XP_RUNTIME_PMI_WIRE_H

#include <stddef.h>
#include "xportals/status.h"

/* MPICH's simple PMI client reads at most 1024 bytes per line. */
#define XP_PMI_MAXLINE 1024
#define XP_PMI_MAX_TOKENS 16

typedef struct xp_pmi_msg {
    int ntokens;
    char *key[XP_PMI_MAX_TOKENS];
    char *value[XP_PMI_MAX_TOKENS]; /* "" for a token without '=' */
} xp_pmi_msg_t;

/* Split `line` (modified in place; a trailing '\n' is dropped) into tokens.
 * XP_ERR_PROTOCOL for an empty line or too many tokens. */
xp_status_t xp_pmi_parse(char *line, xp_pmi_msg_t *msg);
/* The value of `key` in msg, or NULL. */
const char *xp_pmi_get(const xp_pmi_msg_t *msg, const char *key);
/* The value of `key` as an int; XP_ERR_PROTOCOL if absent or not a number. */
xp_status_t xp_pmi_get_int(const xp_pmi_msg_t *msg, const char *key, int *out);
/* 1 if `s` may travel as a PMI key or value (non-empty, printable ASCII,
 * no space; no '=' when is_key). */
int xp_pmi_token_ok(const char *s, int is_key);

/* Fill node_of[0..size-1] from a PMI_process_mapping value such as
 * "(vector,(0,2,4),(2,1,3))": blocks of (first node, node count, ranks per
 * node), repeated until every rank has a node, as MPICH reads it. Node ids
 * must come out dense (0..n-1); *num_nodes = n. XP_ERR_PROTOCOL otherwise. */
xp_status_t xp_pmi_parse_mapping(const char *text, int size, int *node_of, int *num_nodes);

#endif
