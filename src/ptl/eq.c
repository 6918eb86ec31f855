/*
 * ptl/eq.c - event queues: a ring of whole events behind a spin lock.
 */
#include "ptl/eq.h"

#include <stdlib.h>
#include <string.h>

#include "ptl/progress.h"
#include "util/clock.h"
#include "util/log.h"

/* Beyond this many entries PtlEQAlloc answers PTL_NO_SPACE (64 Mi events,
 * about 6 GiB: a count this large is a bug, not a need). */
#define XP_EQ_MAX_COUNT (1ull << 26)

typedef struct eq_slot {
    ptl_event_t ev;
} eq_slot_t;

struct xp_eq {
    ptl_handle_eq_t handle; /* live handle; 0 once freed (atomic) */
    xp_ni_t *ni;
    xp_spinlock_t lock;     /* push, take, kill (survives reuse of the slot) */
    eq_slot_t *ring;
    uint64_t mask;          /* entries - 1 */
    uint64_t head;          /* next to consume (atomic reads outside the lock) */
    uint64_t tail;          /* next to fill */
    int dropped;            /* an event was lost since the last one taken */
};

size_t xp_eq_object_size(void)
{
    return sizeof(xp_eq_t);
}

static xp_handle_table_t *eq_table(void)
{
    xp_ptl_objects_t *o = xp_ptl_objects_peek();
    return o ? &o->eq : NULL;
}

xp_eq_t *xp_eq_from_handle(ptl_handle_eq_t handle)
{
    xp_handle_table_t *t = eq_table();
    return t ? xp_handle_lookup(t, handle) : NULL;
}

ptl_handle_eq_t xp_eq_handle(const xp_eq_t *eq)
{
    return __atomic_load_n(&eq->handle, __ATOMIC_ACQUIRE);
}

xp_ni_t *xp_eq_ni(const xp_eq_t *eq)
{
    return eq->ni;
}

static int eq_empty(const xp_eq_t *eq)
{
    return __atomic_load_n(&eq->head, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&eq->tail, __ATOMIC_ACQUIRE);
}

/* mark_drop: a full queue records the loss (xp_eq_push) or not (try). */
static int eq_push(xp_eq_t *eq, const ptl_event_t *ev, int mark_drop)
{
    int rc = 0;

    xp_spin_lock(&eq->lock);
    if (!eq->handle || !eq->ring) {
        rc = -1;
    } else if (eq->tail - eq->head > eq->mask) {
        if (mark_drop)
            eq->dropped = 1;
        rc = 1;
    } else {
        eq_slot_t *s = &eq->ring[eq->tail & eq->mask];
        s->ev = *ev;
        __atomic_store_n(&eq->tail, eq->tail + 1, __ATOMIC_RELEASE);
    }
    xp_spin_unlock(&eq->lock);
    /* After the tail store (see ct.c after_update for why a PtlEQWait
     * sleeper cannot miss it). */
    if (rc == 0)
        xp_ptl_notify();
    return rc;
}

int xp_eq_push(xp_eq_t *eq, const ptl_event_t *ev)
{
    return eq_push(eq, ev, 1);
}

int xp_eq_try_push(xp_eq_t *eq, const ptl_event_t *ev)
{
    return eq_push(eq, ev, 0);
}

int xp_eq_has_space_n(xp_eq_t *eq, unsigned int n)
{
    uint64_t used = __atomic_load_n(&eq->tail, __ATOMIC_ACQUIRE) -
                    __atomic_load_n(&eq->head, __ATOMIC_ACQUIRE);
    return used + n <= eq->mask + 1;
}

/* Take the oldest event of a live EQ with handle h. PTL_OK, PTL_EQ_DROPPED,
 * PTL_EQ_EMPTY, or PTL_INTERRUPTED if h is no longer the EQ's handle.
 * A loss is reported by the first event taken after it, not by the first
 * event stored after it: a queue that stays full stores nothing more, and
 * the application must learn at once that it lost events (the reference
 * implementation and its tests do the same). */
static int eq_take(xp_eq_t *eq, ptl_handle_eq_t h, ptl_event_t *event)
{
    int rc;

    if (xp_eq_handle(eq) != h)
        return PTL_INTERRUPTED;
    if (eq_empty(eq))
        return PTL_EQ_EMPTY;
    xp_spin_lock(&eq->lock);
    if (eq->handle != h) {
        rc = PTL_INTERRUPTED;
    } else if (eq->head == eq->tail) {
        rc = PTL_EQ_EMPTY; /* another consumer was faster */
    } else {
        eq_slot_t *s = &eq->ring[eq->head & eq->mask];
        *event = s->ev;
        rc = eq->dropped ? PTL_EQ_DROPPED : PTL_OK;
        eq->dropped = 0;
        __atomic_store_n(&eq->head, eq->head + 1, __ATOMIC_RELEASE);
    }
    xp_spin_unlock(&eq->lock);
    return rc;
}

/* Invalidate a live EQ (handle already freed) and release its ring. */
static void eq_kill(xp_eq_t *eq, int release_ni)
{
    eq_slot_t *ring;

    xp_spin_lock(&eq->lock);
    __atomic_store_n(&eq->handle, 0, __ATOMIC_RELEASE);
    ring = eq->ring;
    eq->ring = NULL;
    __atomic_store_n(&eq->head, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&eq->tail, 0, __ATOMIC_RELEASE);
    xp_spin_unlock(&eq->lock);
    free(ring);
    if (release_ni)
        xp_ni_obj_release(eq->ni, XP_NI_OBJ_EQ);
    xp_ptl_notify();
}

static void eq_free_handles(xp_handle_table_t *t, int ni, int release_ni)
{
    ptl_handle_any_t buf[256];
    uint32_t n;

    do {
        n = xp_handle_collect(t, ni, buf, 256);
        for (uint32_t i = 0; i < n && i < 256; i++) {
            xp_eq_t *eq = xp_handle_lookup(t, buf[i]);
            if (eq && xp_handle_free(t, buf[i]) == XP_OK)
                eq_kill(eq, release_ni);
        }
    } while (n > 256);
}

void xp_eq_ni_fini(xp_ni_t *ni)
{
    xp_handle_table_t *t = eq_table();

    if (t)
        eq_free_handles(t, ni->slot, 1);
}

void xp_eq_destroy_all(xp_handle_table_t *table)
{
    eq_free_handles(table, -1, 0);
}

/* ------------------------------------------------------------------ API */

static uint64_t round_up_pow2(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_handle_eq_t *eq_handle)
{
    xp_ptl_objects_t *o;
    xp_ni_t *ni;
    xp_eq_t *eq;
    eq_slot_t *ring;
    ptl_handle_eq_t h;
    uint64_t entries;
    xp_status_t st;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !eq_handle || count == 0)
        return PTL_ARG_INVALID;
    if (count > XP_EQ_MAX_COUNT)
        return PTL_NO_SPACE;
    o = xp_ptl_objects();
    if (!o)
        return PTL_NO_SPACE;
    entries = round_up_pow2(count);
    ring = calloc(entries, sizeof(*ring));
    if (!ring) {
        xp_error("PtlEQAlloc: no memory for %llu events", (unsigned long long)entries);
        return PTL_NO_SPACE;
    }
    st = xp_ni_obj_acquire(ni, XP_NI_OBJ_EQ);
    if (st != XP_OK)
        goto err_free_ring;
    st = xp_handle_alloc_stable(&o->eq, (unsigned)ni->slot, (void **)&eq, &h);
    if (st != XP_OK)
        goto err_release_ni;
    xp_spin_lock(&eq->lock);
    eq->ni = ni;
    eq->ring = ring;
    eq->mask = entries - 1;
    __atomic_store_n(&eq->head, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&eq->tail, 0, __ATOMIC_RELEASE);
    eq->dropped = 0;
    __atomic_store_n(&eq->handle, h, __ATOMIC_RELEASE);
    xp_spin_unlock(&eq->lock);
    *eq_handle = h;
    return PTL_OK;

err_release_ni:
    xp_ni_obj_release(ni, XP_NI_OBJ_EQ);
err_free_ring:
    free(ring);
    return xp_ptl_rc(st);
}

int PtlEQFree(ptl_handle_eq_t eq_handle)
{
    xp_eq_t *eq;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    eq = xp_eq_from_handle(eq_handle);
    if (!eq || xp_handle_free(eq_table(), eq_handle) != XP_OK)
        return PTL_ARG_INVALID;
    eq_kill(eq, 1);
    return PTL_OK;
}

int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    xp_eq_t *eq;
    int rc;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    eq = xp_eq_from_handle(eq_handle);
    if (!eq || !event)
        return PTL_ARG_INVALID;
    rc = eq_take(eq, eq_handle, event);
    if (rc == PTL_EQ_EMPTY) { /* a non-blocking get still moves the engine */
        xp_ptl_app_poll();
        rc = eq_take(eq, eq_handle, event);
    }
    return rc;
}

/* What EQWait/EQPoll wait for. */
typedef struct eq_wait {
    xp_eq_t **eqs;
    const ptl_handle_eq_t *handles;
    unsigned int size;
} eq_wait_t;

static int eq_wait_pred(void *arg)
{
    eq_wait_t *w = arg;

    for (unsigned int i = 0; i < w->size; i++) {
        if (xp_eq_handle(w->eqs[i]) != w->handles[i] || !eq_empty(w->eqs[i]))
            return 1;
    }
    return 0;
}

/* Take one event from the first non-empty EQ; PTL_EQ_EMPTY if none. */
static int eq_take_any(eq_wait_t *w, ptl_event_t *event, unsigned int *which)
{
    for (unsigned int i = 0; i < w->size; i++) {
        int rc = eq_take(w->eqs[i], w->handles[i], event);
        if (rc != PTL_EQ_EMPTY) {
            if (which && (rc == PTL_OK || rc == PTL_EQ_DROPPED))
                *which = i;
            return rc;
        }
    }
    return PTL_EQ_EMPTY;
}

static int eq_wait_any(eq_wait_t *w, uint64_t deadline_ns, ptl_event_t *event,
                       unsigned int *which)
{
    /* Move the engine even when an event is ready: with XP_PROGRESS=inline a
     * loop that makes local events (PtlMESearch probes) and takes them would
     * otherwise never handle an arrival. An idle look is a few loads. */
    xp_ptl_progress();
    for (;;) {
        xp_status_t st;
        int rc = eq_take_any(w, event, which);

        if (rc != PTL_EQ_EMPTY)
            return rc;
        if (deadline_ns == 0) { /* poll: one round of progress, one more look */
            xp_ptl_app_poll();
            return eq_take_any(w, event, which);
        }
        st = xp_ptl_wait_until(eq_wait_pred, w, deadline_ns);
        if (st == XP_ERR_CANCELED)
            return PTL_INTERRUPTED;
        if (st == XP_ERR_ABORTED)
            return PTL_ABORTED;
        if (st == XP_ERR_TIMEOUT)
            return eq_take_any(w, event, which);
        if (st != XP_OK)
            return xp_ptl_rc(st);
    }
}

int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    xp_eq_t *eq;
    eq_wait_t w;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    eq = xp_eq_from_handle(eq_handle);
    if (!eq || !event)
        return PTL_ARG_INVALID;
    w = (eq_wait_t){.eqs = &eq, .handles = &eq_handle, .size = 1};
    return eq_wait_any(&w, UINT64_MAX, event, NULL);
}

int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout,
              ptl_event_t *event, unsigned int *which)
{
    xp_eq_t *stack_eqs[16], **eqs = stack_eqs;
    eq_wait_t w;
    uint64_t deadline;
    int rc = PTL_ARG_INVALID;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    if (!eq_handles || !event || !which || size == 0)
        return PTL_ARG_INVALID;
    if (size > 16) {
        eqs = malloc(size * sizeof(*eqs));
        if (!eqs)
            return PTL_NO_SPACE;
    }
    for (unsigned int i = 0; i < size; i++) {
        eqs[i] = xp_eq_from_handle(eq_handles[i]);
        if (!eqs[i] || eqs[i]->ni != eqs[0]->ni)
            goto out_free;
    }
    deadline = timeout == PTL_TIME_FOREVER ? UINT64_MAX
               : timeout == 0              ? 0
                                           : xp_time_ns() + (uint64_t)timeout * 1000000ull;
    w = (eq_wait_t){.eqs = eqs, .handles = eq_handles, .size = size};
    rc = eq_wait_any(&w, deadline, event, which);
out_free:
    if (eqs != stack_eqs)
        free(eqs);
    return rc;
}
