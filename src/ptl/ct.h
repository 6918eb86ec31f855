/*
 * ptl/ct.h - counting events (PtlCT*), as the engine sees them.
 *
 * A CT holds two 64-bit counters, success and failure, updated with atomic
 * adds from any thread (application calls, the progress thread, several
 * initiators' acknowledgements). Every update fires, with no application
 * call, each triggered operation of the CT whose threshold is reached:
 * threshold <= success + failure (the specification's "count").
 *
 * PtlCTWait returns when success >= test or failure > 0 (the reference
 * implementation's rule: a failure must wake the waiter, it can never be
 * reached otherwise); PtlCTPoll the same per handle.
 *
 * Freeing: PtlCTFree invalidates the handle at once; threads waiting on it
 * return PTL_INTERRUPTED; triggered operations still waiting on the CT are
 * discarded without running (their NI count is released); triggered
 * CTInc/CTSet elsewhere that name the freed CT are dropped when they fire.
 * The object's memory stays in its handle slot (handle.h), so an engine
 * thread that resolved the CT just before the free touches valid memory;
 * xp_ct_add on a freed CT is harmless (the values are reset on reuse).
 */
#ifndef XP_PTL_CT_H
#define XP_PTL_CT_H

#include <pthread.h>
#include <stdint.h>
#include "portals4.h"
#include "ptl/handle.h"
#include "ptl/ni.h"
#include "xportals/status.h"

struct xp_trig;

/* Private to ct.c but for the packet handler's inline count
 * (xp_ct_count_polled). */
struct xp_ct {
    ptl_handle_ct_t handle;  /* live handle; 0 once freed (atomic) */
    xp_ni_t *ni;
    uint64_t success;        /* atomic; the count is success + polled */
    uint64_t polled;         /* successes counted by the poll-lock holder (plain stores) */
    int trig_seen;           /* a triggered operation was ever posted here */
    uint64_t failure;        /* atomic */
    uint64_t wake_at;        /* lowest success count a waiter waits for (UINT64_MAX: none) */
    int lock_ready;          /* the mutex survives reuse of the slot */
    pthread_mutex_t lock;    /* the triggered list */
    struct xp_trig *trig_head; /* sorted by threshold; read without the lock as a hint */
    struct xp_trig *trig_tail;
};
typedef struct xp_ct xp_ct_t;

/* The CT of a live handle, NULL otherwise (PTL_CT_NONE included). */
xp_ct_t *xp_ct_from_handle(ptl_handle_ct_t handle);

/* Add to the counters (arrivals, acknowledgements, replies, sends) and fire
 * every triggered operation that became ready. Safe from any thread, the
 * packet handler included: triggered operations are issued after every CT
 * lock is released, and chains (a triggered CTInc that releases more
 * operations) are run iteratively. */
void xp_ct_add(xp_ct_t *ct, uint64_t success, uint64_t failure);

/* The packet handler's xp_ct_add for `success` (> 0) successes, when the
 * caller is the thread that handles packets in xp_ptl_progress
 * (xp_ptl_polling(); asym_fence: the state's asym_fence) and holds a PT:
 * counts and wakes waiters as xp_ct_add does, but issues no triggered
 * operation. Returns nonzero when the CT has triggered operations: the
 * caller then calls xp_ct_fire(ct) once it has left its PT. */
int xp_ct_add_polled(xp_ct_t *ct, uint64_t success, int asym_fence);
/* xp_ct_add_polled's common case, inline for the packet handler's one-pass
 * paths: counts; 0 when that is all (no triggered operation, no failure,
 * nobody registered to be woken), else the caller finishes with
 * xp_ct_add_polled_rest (the count is not repeated). The loads after the
 * store are count_polled's handshake sides (ct.c). */
static inline __attribute__((always_inline)) int xp_ct_count_polled(xp_ct_t *ct, uint64_t success,
                                                                 int asym_fence)
{
    uint64_t p = __atomic_load_n(&ct->polled, __ATOMIC_RELAXED);
    __atomic_store_n(&ct->polled, p + success, __ATOMIC_RELEASE);
    if (__builtin_expect(!asym_fence || __atomic_load_n(&ct->trig_seen, __ATOMIC_RELAXED), 0))
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* xp_ptl_light_fence */
    return __atomic_load_n(&ct->trig_head, __ATOMIC_SEQ_CST) != NULL ||
           __atomic_load_n(&ct->wake_at, __ATOMIC_SEQ_CST) != UINT64_MAX ||
           __atomic_load_n(&ct->failure, __ATOMIC_ACQUIRE) != 0;
}
/* The rest of xp_ct_add_polled after xp_ct_count_polled returned nonzero:
 * wakes waiters; returns 1 when the CT has triggered operations (the
 * caller then calls xp_ct_fire once it has left its PT). */
int xp_ct_add_polled_rest(xp_ct_t *ct);
/* Issue the triggered operations that the count made ready, then wake
 * waiters (the rest of xp_ct_add after xp_ct_add_polled returned 1). */
void xp_ct_fire(xp_ct_t *ct);

/* Set both counters (PtlCTSet, triggered CTSet) and fire what became ready. */
void xp_ct_set(xp_ct_t *ct, ptl_ct_event_t value);

struct xp_trig;
/* Attach a triggered operation to the CT of trig_ct_handle (for
 * triggered.c). If the threshold is already reached the operation is issued
 * now, by this call. XP_ERR_INVALID if the handle is not a live CT or
 * belongs to another NI than t->ni. On error t is untouched (caller frees). */
xp_status_t xp_ct_post_trig(ptl_handle_ct_t trig_ct_handle, struct xp_trig *t);

/* Snapshot of the counters. */
ptl_ct_event_t xp_ct_read(const xp_ct_t *ct);
/* The handle and NI of a live CT. */
ptl_handle_ct_t xp_ct_handle(const xp_ct_t *ct);
xp_ni_t *xp_ct_ni(const xp_ct_t *ct);

/* PtlNIFini (last reference): free every CT of this NI, with its triggered
 * operations. */
void xp_ct_ni_fini(xp_ni_t *ni);

/* For handle.c: object size of the stable-object table, and teardown of the
 * whole table (xp_ptl_objects_fini). */
size_t xp_ct_object_size(void);
void xp_ct_destroy_all(xp_handle_table_t *table);

#endif
