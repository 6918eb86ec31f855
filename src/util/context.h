/*
 * util/context.h - the library context: the one mutable global of Xportals.
 *
 * Each layer keeps its process-wide state behind one pointer here (declared
 * as an incomplete type, so util does not depend on the layers above it).
 */
#ifndef XP_UTIL_CONTEXT_H
#define XP_UTIL_CONTEXT_H

#include <pthread.h>
#include <stdint.h>
#include "util/config.h"

struct xp_runtime;     /* runtime/ */
struct xp_tl_state;    /* transport/ */
struct xp_accel_state; /* accel/ */
struct xp_ptl_state;   /* ptl/ */
struct xp_xtq_state;   /* xtq/ */
struct xp_dt_state;    /* dt/ */
struct xp_ptl_objects; /* ptl/ (CT, EQ) */
struct pmi1;           /* runtime/pmi1.c */

/* The runtime wait hook's type (runtime_wait_hook below). */
typedef int (*xp_wait_hook_fn)(uint64_t max_ns, int (*ready)(void *), void *arg);

typedef struct xp_context {
    /* util: configuration, parsed once */
    pthread_once_t config_once;
    xp_config_t config;
    xp_status_t config_status;
    unsigned char config_set[XP_CFG_NUM_VARS]; /* 1 = came from the environment */
    /* util: logging */
    int log_level;   /* -1 until the configuration is read */
    int log_rank;    /* -1 until the runtime knows it */
    /* layers above */
    struct xp_runtime *runtime;
    struct xp_tl_state *tl;
    struct xp_accel_state *accel;
    struct xp_ptl_state *ptl;
    struct xp_xtq_state *xtq;           /* xtq/: lookup tables of each NI */
    struct xp_ptl_objects *ptl_objects; /* ptl/handle.c: CT and EQ handle tables */
    struct xp_dt_state *dt;             /* dt/: thread pool, CUDA plugin */
    struct pmi1 *pmi1_exit;             /* runtime/pmi1.c: inherited PMI_FD to finalize at exit */
    unsigned char pmix_held, pmix_atexit; /* runtime/pmix.c: our PMIx_Init reference; handler set */
    /* Set by ptl/ with XP_PROGRESS=inline (NULL otherwise): the runtime calls
     * it while it blocks on its launcher (xp_barrier, xp_kv_fence, xp_kv_get;
     * PMI-1 backend; PMIx blocks inside its library), so that a rank in a
     * runtime barrier still answers Portals requests; accel/ signal waits
     * call it too. It makes progress and may wait up to max_ns for packets
     * or for ready(arg) (ready may be NULL); it returns the packets handled.
     * Its sleep ends on packets only: a ready() that nothing announces on
     * the doorbell (a GPU's store) is seen by its spin or when the slice
     * ends. A hook, so the runtime does not depend on ptl. */
    xp_wait_hook_fn runtime_wait_hook;
    /* Set by ptl/ in both progress modes (NULL otherwise): one look at
     * Portals packets, which sleeps only while another thread is in a
     * handler; returns the packets handled (or 1 when it waited for that
     * thread: look again). The PMI-1 wait calls it for the
     * first 200 us of each wait (pmi1.c), and xp_barrier until it returns 0
     * before and after the barrier, so that requests that peers sent before
     * a runtime barrier are handled before it returns and answered at once
     * (the ACK of a put made just before it comes back during it), not after
     * the progress thread wakes up (tens of us on a busy or virtual machine):
     * "put; xp_barrier(); read the target buffer" works on one node. */
    int (*runtime_poll_hook)(void);
    /* Set by accel/ once its CUDA plugin is loaded (NULL otherwise): pause
     * (1) / resume (0) every CUDA agent kernel of the process. dt/ calls it
     * around loading its CUDA plugin, whose module load may wait for every
     * running kernel - a persistent agent kernel never ends. A hook, so dt
     * does not depend on accel. */
    void (*gpu_quiesce_hook)(int pause);
} xp_context_t;

extern xp_context_t xp_ctx;

/* The runtime stops calling into ptl/ (PtlFini, or an exit handler that may
 * run after the engine is gone). */
static inline void xp_ctx_drop_runtime_hooks(void)
{
    __atomic_store_n(&xp_ctx.runtime_wait_hook, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&xp_ctx.runtime_poll_hook, NULL, __ATOMIC_RELEASE);
}

#endif
