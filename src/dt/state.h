/*
 * dt/state.h - the datatype layer's process state (behind xp_ctx.dt): the
 * thread pool of large CPU copies and the run-time loaded CUDA plugin.
 */
#ifndef XP_DT_STATE_H
#define XP_DT_STATE_H

#include <pthread.h>
#include "dt/cuda_plugin.h"

typedef struct xp_dt_state {
    /* pool.c */
    pthread_mutex_t run_lock;   /* one parallel job at a time */
    pthread_mutex_t lock;
    pthread_cond_t work_cv, done_cv;
    unsigned nworkers;
    unsigned long gen;          /* bumped for every job */
    dt_task_fn fn;
    void *arg;
    unsigned ntasks, next, done;
    /* stream.c */
    size_t llc;                 /* last-level cache bytes */
    /* cuda.c */
    pthread_mutex_t cuda_lock;
    int cuda_state;             /* 0 not tried, 1 usable, -1 unusable */
    unsigned long long probed_adds; /* loader's dlpi_adds at the last driver probe */
    void *cuda_dl;
    const xp_dt_cuda_ops_t *cuda;
} xp_dt_state_t;

/* The state, created on first use. NULL only if out of memory. */
xp_dt_state_t *xp_dt_state(void);

#endif
