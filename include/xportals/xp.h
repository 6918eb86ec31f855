/*
 * xportals/xp.h - process-level API: start-up, identity, barrier and the
 * key-value exchange that every other layer uses to publish its addresses.
 *
 * The library learns rank, size and node identity from whatever launched the
 * process: the PMI-1 wire protocol (xprun, MPICH's Hydra, Slurm), PMIx (Open
 * MPI's mpirun, when built with libpmix), or nothing (a singleton: rank 0 of 1).
 */
#ifndef XPORTALS_XP_H
#define XPORTALS_XP_H

#include <stddef.h>
#include "xportals/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initialise the runtime. Reference counted: every successful xp_init must be
 * matched by one xp_finalize. argc/argv may be NULL. */
XP_EXPORT xp_status_t xp_init(int *argc, char ***argv);
XP_EXPORT xp_status_t xp_finalize(void);
XP_EXPORT int xp_initialized(void);

XP_EXPORT int xp_rank(void);          /* -1 before xp_init */
XP_EXPORT int xp_size(void);          /* 0 before xp_init */
XP_EXPORT int xp_local_rank(void);    /* rank among the processes on this node */
XP_EXPORT int xp_local_size(void);
XP_EXPORT int xp_node_id(void);       /* dense index of this process's node, 0..nnodes-1 */
XP_EXPORT int xp_num_nodes(void);
XP_EXPORT int xp_node_of(int rank);   /* node index of any rank; -1 if out of range */
/* Which bootstrap is in use: "pmi1", "pmix" or "singleton". */
XP_EXPORT const char *xp_bootstrap_name(void);

/* Every rank of the job. With Portals initialised it also handles the
 * Portals packets that are there before and after the barrier: a put made
 * before it has landed at its target (on this node) when it returns there. */
XP_EXPORT xp_status_t xp_barrier(void);
/* Abort the whole job (every rank) with a message; does not return. */
XP_EXPORT void xp_abort(int code, const char *msg) __attribute__((noreturn));

/* Key-value exchange. A value put by any rank becomes visible to every rank
 * after the next xp_kv_fence (a collective: all ranks call it). Keys are
 * printable strings without spaces or '=' (<= 64 bytes); values are binary
 * (<= XP_KV_MAX_VALUE bytes; encoded for the wire internally). */
#define XP_KV_MAX_KEY 64
#define XP_KV_MAX_VALUE 512
XP_EXPORT xp_status_t xp_kv_put(const char *key, const void *value, size_t len);
XP_EXPORT xp_status_t xp_kv_fence(void);
/* Get the value `key` as published by `rank`. *len: in = capacity, out = length. */
XP_EXPORT xp_status_t xp_kv_get(int rank, const char *key, void *value, size_t *len);

XP_EXPORT const char *xp_version(void);

#ifdef __cplusplus
}
#endif
#endif
