/* accel/accel_internal.h - what the accel files share (not installed). */
#ifndef XP_ACCEL_INTERNAL_H
#define XP_ACCEL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "xportals/accel.h"
#include "util/atomic.h"
#include "util/list.h"

#define XP_QUEUE_MAGIC 0x3145555145555058ull /* "XPQUEUE1" little endian */

/* The part of a queue that lives in (shared / mapped) memory. No pointers:
 * every process that maps it may see it at a different address. */
typedef struct xp_queue_shm {
    uint64_t magic;
    uint32_t size;
    uint32_t mask;
    uint64_t bytes;
    uint64_t write_index XP_CACHE_ALIGNED;
    uint64_t read_index XP_CACHE_ALIGNED;
    xp_signal_t doorbell;  /* producers store the write index, consumers sleep on it */
    xp_signal_t space;     /* mirrors read_index, producers of a full queue sleep on it */
    xp_aql_packet_t ring[] XP_CACHE_ALIGNED;
} xp_queue_shm_t;

/* The CUDA plugin mirrors this layout (cuda_plugin.cu asserts the same). */
_Static_assert(offsetof(xp_queue_shm_t, write_index) == 64 && offsetof(xp_queue_shm_t, read_index) == 128 &&
                   offsetof(xp_queue_shm_t, doorbell) == 192 && offsetof(xp_queue_shm_t, space) == 256 &&
                   offsetof(xp_queue_shm_t, ring) == 320,
               "queue layout changed: update cuda_plugin.cu");

typedef enum {
    XP_QUEUE_MEM_USER = 0,   /* caller's memory (init_at / attach) */
    XP_QUEUE_MEM_MMAP = 1,   /* anonymous shared mapping */
    XP_QUEUE_MEM_AGENT = 2,  /* the agent's allocator (CUDA: pinned) */
} xp_queue_mem_t;

struct xp_queue {
    xp_queue_shm_t *shm;
    uint32_t mask;
    xp_queue_mem_t mem;
    size_t bytes;
    xp_agent_t *agent;       /* consumer, NULL if none */
    xp_list_t agent_link;
    void *agent_data;        /* the agent's per-queue state */
};

/* Lay out a queue in mem and fill the handle (no allocation). */
void xp_queue_format(xp_queue_shm_t *shm, size_t bytes, uint32_t size);
xp_status_t xp_queue_handle_new(xp_queue_shm_t *shm, size_t bytes, xp_queue_mem_t mem,
                                xp_queue_t **queue_out);

/* Wait on a signal's futex until pred(arg) holds (spin first). */
xp_status_t xp_signal_wait_pred(xp_signal_t *sig, int (*pred)(void *), void *arg, uint64_t deadline_ns);
/* Bump the signal's sequence and wake its sleepers without changing the value
 * (tells waiters "re-check your predicate"). */
void xp_signal_kick(xp_signal_t *sig);

/* ---- agents: one ops table per kind ---- */
typedef struct xp_agent_ops {
    size_t size;
    const char *name;
    xp_status_t (*start)(xp_agent_t *agent, const xp_agent_params_t *params);
    void (*stop)(xp_agent_t *agent);
    xp_status_t (*queue_alloc)(xp_agent_t *agent, size_t bytes, void **mem_out);
    void (*queue_free)(xp_agent_t *agent, void *mem, size_t bytes);
    /* a queue was added (after it is formatted) / is about to be removed */
    xp_status_t (*queue_added)(xp_agent_t *agent, xp_queue_t *queue);
    void (*queue_removed)(xp_agent_t *agent, xp_queue_t *queue);
    xp_status_t (*signal_alloc)(xp_agent_t *agent, xp_signal_t **signal_out);
    void (*signal_free)(xp_agent_t *agent, xp_signal_t *signal);
} xp_agent_ops_t;

struct xp_agent {
    const xp_agent_ops_t *ops;
    xp_agent_kind_t kind;
    pthread_mutex_t lock;    /* queue list */
    xp_list_t queues;
    void *impl;              /* the kind's state */
};

extern const xp_agent_ops_t xp_agent_cpu_ops;
extern const xp_agent_ops_t xp_agent_cuda_ops;

/* CUDA plugin (accel/cuda_loader.c). NULL when not loadable. */
struct xp_cuda_plugin_ops;
const struct xp_cuda_plugin_ops *xp_accel_cuda_plugin(void);

#endif
