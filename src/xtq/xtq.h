/*
 * xtq/xtq.h - XTQ internals: lookup tables, the packet rewrite (a pure
 * function, unit-tested against hand-built packets) and the enqueue with its
 * flow-control result. See include/portals4_xtq.h for the semantics.
 */
#ifndef XP_XTQ_XTQ_H
#define XP_XTQ_XTQ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "portals4_xtq.h"
#include "xportals/accel.h"
#include "xportals/status.h"

typedef enum {
    XP_XTQ_OK = 0,
    XP_XTQ_QUEUE_FULL,   /* -> PTL_NI_XTQ_QUEUE_FULL */
    XP_XTQ_BAD_INDEX,    /* -> PTL_NI_XTQ_BAD_INDEX */
    XP_XTQ_BAD_COMMAND,  /* -> PTL_NI_XTQ_BAD_COMMAND */
} xp_xtq_result_t;

typedef struct xp_xtq_kernel_entry {
    uint64_t kernel_object;   /* 0 = free */
    void *target_buffer;
    xp_signal_t *signal;
} xp_xtq_kernel_entry_t;

typedef struct xp_xtq_function_entry {
    xp_agent_fn_t function;   /* NULL = free */
    void *target_buffer;
    xp_signal_t *signal;
} xp_xtq_function_entry_t;

/* The three tables of one NI. Lookups (engine) and registrations (any
 * application thread) are serialised by `lock`. */
typedef struct xp_xtq_tables {
    pthread_mutex_t lock;
    xp_xtq_kernel_entry_t kernel[PTL_XTQ_TABLE_SIZE];
    xp_xtq_function_entry_t function[PTL_XTQ_TABLE_SIZE];
    xp_queue_t *queue[PTL_XTQ_TABLE_SIZE];
} xp_xtq_tables_t;

xp_status_t xp_xtq_tables_create(xp_xtq_tables_t **tables_out);
void xp_xtq_tables_destroy(xp_xtq_tables_t *tables);
/* XP_ERR_INVALID (index, zero object), XP_ERR_EXISTS (taken). */
xp_status_t xp_xtq_tables_set_kernel(xp_xtq_tables_t *t, uint64_t index, uint64_t kernel_object,
                                     void *target_buffer, xp_signal_t *signal);
xp_status_t xp_xtq_tables_set_function(xp_xtq_tables_t *t, uint64_t index, xp_agent_fn_t fn,
                                       void *target_buffer, xp_signal_t *signal);
xp_status_t xp_xtq_tables_set_queue(xp_xtq_tables_t *t, uint64_t index, xp_queue_t *queue);
/* XP_ERR_INVALID (index out of range), XP_ERR_NOT_FOUND (not registered). */
xp_status_t xp_xtq_tables_clear_kernel(xp_xtq_tables_t *t, uint64_t index);
xp_status_t xp_xtq_tables_clear_function(xp_xtq_tables_t *t, uint64_t index);
xp_status_t xp_xtq_tables_clear_queue(xp_xtq_tables_t *t, uint64_t index);

/* What the rewrite decided: the packet to enqueue, the queue, and the kernel
 * argument words to overwrite in the landed message. */
typedef struct xp_xtq_rewrite {
    xp_aql_packet_t packet;
    xp_queue_t *queue;
    uint64_t *kernarg;        /* where the kernel arguments landed (NULL for CPU tasks) */
    int npatch;               /* 0..2 leading kernarg words to overwrite */
    uint64_t patch[2];
} xp_xtq_rewrite_t;

/* Pure: compute the rewrite of the message of `landed_len` bytes that landed
 * at `landed` (command packet first) using the tables. Reads only the
 * command packet at `landed` and the tables. */
xp_xtq_result_t xp_xtq_rewrite(xp_xtq_tables_t *t, const void *landed, size_t landed_len,
                               xp_xtq_rewrite_t *rw_out);
/* Apply: patch the kernel arguments, then enqueue without blocking.
 * XP_XTQ_QUEUE_FULL leaves the queue untouched (the patch is harmless: a
 * retry writes the same words). */
xp_xtq_result_t xp_xtq_enqueue(const xp_xtq_rewrite_t *rw);
/* Both, as the engine calls it for a landed XTQ put. */
xp_xtq_result_t xp_xtq_process(xp_xtq_tables_t *t, void *landed, size_t landed_len);

/* The ni_fail_type that reports a result to the initiator. */
ptl_ni_fail_t xp_xtq_fail_type(xp_xtq_result_t r);

#endif
