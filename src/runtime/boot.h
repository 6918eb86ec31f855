/*
 * runtime/boot.h - the bootstrap backends behind one table.
 *
 * runtime.c picks a backend (PMI-1, PMIx or singleton), and from then on only
 * calls through its ops; backends know nothing of nodes or local ranks, which
 * runtime.c derives from the key-value store.
 */
#ifndef XP_RUNTIME_BOOT_H
#define XP_RUNTIME_BOOT_H

#include <stddef.h>
#include <sys/types.h>
#include "xportals/build_config.h"
#include "xportals/xp.h"

#define XP_JOB_ID_MAX 48

/* What a backend's init learns. */
typedef struct xp_boot_info {
    int rank;
    int size;
    char job_id[256]; /* raw (e.g. the PMI kvsname); runtime.c shortens and sanitizes it */
} xp_boot_info_t;

typedef struct xp_boot_ops {
    const char *name;
    /* Connect to the launcher; *state and *info on success. timeout_s bounds
     * every wait for an answer except barriers. */
    xp_status_t (*init)(int timeout_s, void **state, xp_boot_info_t *info);
    /* Publish a binary value (len <= XP_KV_MAX_VALUE) under this rank. */
    xp_status_t (*put)(void *state, const char *key, const void *value, size_t len);
    /* Collective: every put before it is visible to every get after it. */
    xp_status_t (*fence)(void *state);
    /* *len: in = capacity, out = length (only on success). */
    xp_status_t (*get)(void *state, int rank, const char *key, void *value, size_t *len);
    xp_status_t (*barrier)(void *state);
    /* Optional (may be NULL): the node of every rank, as the launcher knows
     * it, so that init need not read every rank's record. */
    xp_status_t (*node_map)(void *state, int size, int *node_of, int *num_nodes);
    /* Tell the launcher to kill the job; may return (the caller then exits). */
    void (*abort)(void *state, int code, const char *msg);
    /* Disconnect and free state. */
    void (*finalize)(void *state);
} xp_boot_ops_t;

extern const xp_boot_ops_t xp_boot_pmi1;
extern const xp_boot_ops_t xp_boot_singleton;
#if XP_RUNTIME_WITH_PMIX /* set by CMake when pmix.c is built */
extern const xp_boot_ops_t xp_boot_pmix;
#endif

#endif
