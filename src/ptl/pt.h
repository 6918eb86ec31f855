/* ptl/pt.h - portal table entries, list entries (LE/ME) and unexpected headers. */
#ifndef XP_PTL_PT_H
#define XP_PTL_PT_H

#include <pthread.h>

#include "portals4.h"
#include "ptl/match.h"
#include "ptl/engine.h" /* xp_ptl_light_fence */
#include "ptl/md.h"
#include "ptl/ni.h"
#include "util/pool.h"
#include "util/tsan.h"

struct xp_ct;
struct xp_eq;

/* The PT lock. The packet handler always runs with the poll lock held
 * (progress.c), so it only has to keep out application threads: it marks
 * itself inside the PT with a plain store (xp_pt_enter), and an application
 * thread either takes the poll lock too (no handler can run) or, when that
 * is busy, announces itself in app_busy and waits until no handler is
 * inside; the two sides are a Dekker handshake whose expensive fence is on
 * the application's side (xp_ptl_heavy_fence). So an arriving message takes
 * no locked instruction for its PT, where a mutex took two (and each waited
 * for the ring stores before it). An application thread that got the poll
 * lock enters as the handler does; the others exclude each other with
 * `lock`. */
typedef struct xp_pt {
    pthread_mutex_t lock;   /* application threads without the poll lock */
    int handler_in;         /* the packet handler, or an application thread holding
                             * the poll lock, is inside (xp_pt_enter .. xp_pt_leave) */
    int app_busy;           /* an application thread is inside without the poll lock */
    uintptr_t poll_holder;  /* xp_thread_id() of the application thread inside with
                             * the poll lock, else 0 */
    int allocated;
    int enabled;
    unsigned int options;
    /* What this PT's descriptor for direct access says (ptl/direct.h): its
     * XP_DIRECT_* flags (0: closed) and the handle of the entry it
     * describes. (In the holes before eq and table: the handler's lines
     * keep their places.) */
    unsigned int direct_flags;
    struct xp_eq *eq;
    ptl_handle_eq_t eq_handle;
    ptl_handle_any_t direct_handle;
    xp_match_table_t table;
    xp_pool_t uh_pool;      /* unexpected headers (xp_uh_t); with the table */
    int table_ready;
} xp_pt_t;

/* Where an entry stands with a triggered append (PtlTriggeredMEAppend,
 * PtlTriggeredLEAppend). Changed and read under the PT lock. */
typedef enum {
    XP_LE_LIVE = 0,  /* appended (or being appended): the ordinary state */
    XP_LE_PENDING,   /* handle live, waiting for its trigger, in no list */
    XP_LE_CANCELLED, /* unlinked while pending: handle freed, the memory
                      * waits for the triggered append to fire or be dropped */
} xp_le_trig_state_t;

/* What the packet handler's fast path (target.c) needs to know about an
 * entry, computed once at append (the options, CT and region never change
 * afterwards): one load and one test instead of a walk over the options. */
enum {
    /* Takes a put whole on the first match: PTL_ME_OP_PUT, one contiguous
     * buffer, no USE_ONCE (unlink), MANAGE_LOCAL (offsets, min_free) or
     * NO_TRUNCATE (changes matching). */
    XP_LE_FAST_PUT = 1u << 0,
    /* A successful message posts no full event (EVENT_COMM_DISABLE or
     * EVENT_SUCCESS_DISABLE): the PT's EQ, if any, is not touched. */
    XP_LE_FAST_QUIET = 1u << 1,
    /* Counts arrivals on its CT (ct set and EVENT_CT_COMM) ... */
    XP_LE_FAST_CT = 1u << 2,
    /* ... in bytes (EVENT_CT_BYTES). */
    XP_LE_FAST_CT_BYTES = 1u << 3,
    /* PTL_ME_ACK_DISABLE: accepted messages get no acknowledgement. */
    XP_LE_FAST_NOACK = 1u << 4,
    /* XP_LE_FAST_PUT and PTL_ME_OP_GET too: takes fetching atomics. */
    XP_LE_FAST_FETCH = 1u << 5,
    /* Serves a get lying whole in it on the first match: PTL_ME_OP_GET,
     * and the buffer and options XP_LE_FAST_PUT asks for. */
    XP_LE_FAST_GET = 1u << 6,
};

/* An LE or ME. */
typedef struct xp_le {
    ptl_handle_any_t handle;
    int is_me;
    xp_ni_t *ni;
    ptl_pt_index_t pt_index;
    xp_region_t region;
    unsigned int options;
    unsigned int fast;       /* XP_LE_FAST_*, from options, ct and region */
    ptl_uid_t uid;
    struct xp_ct *ct;
    void *user_ptr;
    ptl_list_t list;
    ptl_size_t local_offset; /* MANAGE_LOCAL */
    ptl_size_t min_free;
    xp_match_entry_t m;
    /* Overflow entries: unexpected headers still pointing into this entry's
     * buffer. An unlinked entry lives on (handle already freed) until the
     * last one is consumed; then an automatically unlinked one reports
     * PTL_EVENT_AUTO_FREE (the buffer may be reused). */
    unsigned int uh_refs;
    int unlinked;
    int auto_free;
    xp_le_trig_state_t trig_state;
} xp_le_t;

/* An unexpected header: a message that landed in an overflow-list entry,
 * remembered for a later priority append or search. */
typedef struct xp_uh {
    xp_match_header_t mh;
    ptl_event_t ev;       /* the event as it was generated for the overflow entry */
    xp_le_t *owner;       /* the overflow entry holding the data (uh_refs) */
} xp_uh_t;

/* Application threads: lock the PT (pt_index valid and allocated) or
 * return NULL; xp_pt_unlock releases it. */
xp_pt_t *xp_pt_get(xp_ni_t *ni, ptl_pt_index_t pt_index);
/* Lock the PT whether or not it is allocated (pt_index valid). */
void xp_pt_lock(xp_pt_t *pt);
void xp_pt_unlock(xp_pt_t *pt);
/* The packet handler (the caller holds the poll lock): xp_pt_get's
 * counterpart, released with xp_pt_leave. */
/* ThreadSanitizer does not see the handshake's order (a fence and a flag
 * the other side did not see): every entry acquires the PT, every exit
 * releases it, as a lock would. Nothing without -fsanitize=thread. */
static inline void xp_pt_tsan_entered(xp_pt_t *pt)
{
#if XP_TSAN
    __tsan_acquire(pt);
#else
    (void)pt;
#endif
}

static inline void xp_pt_leave(xp_pt_t *pt)
{
#if XP_TSAN
    __tsan_release(pt);
#endif
    __atomic_store_n(&pt->handler_in, 0, __ATOMIC_RELEASE);
}
xp_pt_t *xp_pt_enter_slow(xp_pt_t *pt);
/* The handler's side of the PT handshake for a caller that holds the
 * process state `st` (no second look-up for the light fence): announce
 * itself in PT pt_index (handler_in), then the store-load fence before its
 * look at app_busy. NULL (nothing announced): no such PT index. The caller
 * then checks app_busy and the PT's state and enters or leaves. */
static inline __attribute__((always_inline)) xp_pt_t *
xp_pt_announce_st(const xp_ptl_state_t *st, xp_ni_t *ni, ptl_pt_index_t pt_index)
{
    if (pt_index > (ptl_pt_index_t)ni->limits.max_pt_index)
        return NULL;
    xp_pt_t *pt = &ni->pt[pt_index];
    __atomic_store_n(&pt->handler_in, 1, __ATOMIC_RELAXED);
    if (__builtin_expect(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), 1))
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* xp_ptl_light_fence */
    else
        xp_fence();
    return pt;
}

/* xp_pt_enter for a caller that holds the process state `st`. */
static inline xp_pt_t *xp_pt_enter_st(const xp_ptl_state_t *st, xp_ni_t *ni,
                                      ptl_pt_index_t pt_index)
{
    xp_pt_t *pt = xp_pt_announce_st(st, ni, pt_index);
    if (!pt)
        return NULL;
    if (__builtin_expect(__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE) || !pt->allocated, 0))
        return xp_pt_enter_slow(pt);
    xp_pt_tsan_entered(pt);
    return pt;
}

static inline xp_pt_t *xp_pt_enter(xp_ni_t *ni, ptl_pt_index_t pt_index)
{
    if (pt_index > (ptl_pt_index_t)ni->limits.max_pt_index)
        return NULL;
    xp_pt_t *pt = &ni->pt[pt_index];
    __atomic_store_n(&pt->handler_in, 1, __ATOMIC_RELAXED);
    xp_ptl_light_fence();
    if (__builtin_expect(__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE) || !pt->allocated, 0))
        return xp_pt_enter_slow(pt);
    xp_pt_tsan_entered(pt);
    return pt;
}
/* The source id the match module uses for job rank `rank` on ni. */
uint64_t xp_pt_source_of(xp_ni_t *ni, int rank);
/* Unlink le (PT lock held) and free it; emits AUTO_UNLINK if `auto_event`. */
void xp_le_unlink_locked(xp_pt_t *pt, xp_le_t *le, int auto_event);
/* An unexpected header is consumed or forgotten (PT lock held): drop its
 * reference on the overflow entry, report AUTO_FREE if `events`, free it. */
void xp_uh_release(xp_pt_t *pt, xp_uh_t *uh, int events);
/* Post a full event on the PT's EQ. */
void xp_pt_post_event(xp_pt_t *pt, const ptl_event_t *ev);

#endif
