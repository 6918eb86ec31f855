/*
 * ptl/ct.c - counting events: counters, waiting, the triggered-op lists.
 */
#include "ptl/ct.h"

#include <stdlib.h>
#include <string.h>

#include "ptl/engine.h"
#include "ptl/eq.h"
#include "ptl/progress.h"
#include "ptl/triggered.h"
#include "util/clock.h"
#include "util/context.h"
#include "util/log.h"

size_t xp_ct_object_size(void)
{
    return sizeof(xp_ct_t);
}

static xp_handle_table_t *ct_table(void)
{
    xp_ptl_objects_t *o = xp_ptl_objects_peek();
    return o ? &o->ct : NULL;
}

xp_ct_t *xp_ct_from_handle(ptl_handle_ct_t handle)
{
    xp_handle_table_t *t = ct_table();
    return t ? xp_handle_lookup(t, handle) : NULL;
}

ptl_handle_ct_t xp_ct_handle(const xp_ct_t *ct)
{
    return __atomic_load_n(&ct->handle, __ATOMIC_ACQUIRE);
}

xp_ni_t *xp_ct_ni(const xp_ct_t *ct)
{
    return ct->ni;
}

/* The packet handler counts successes into `polled` with a plain store (it
 * is the only writer: it holds the poll lock), so a message costs no locked
 * instruction for its counter; every other update (PtlCTInc, PtlCTSet,
 * failures, counting by threads that do not poll) changes `success`
 * atomically, and PtlCTSet stores the new value minus `polled`. A reader
 * takes `polled` between two equal reads of `success`: the sum is then the
 * count at the moment it read `polled`. */
ptl_ct_event_t xp_ct_read(const xp_ct_t *ct)
{
    ptl_ct_event_t ev;
    uint64_t s = __atomic_load_n(&ct->success, __ATOMIC_ACQUIRE), p;

    for (;;) {
        p = __atomic_load_n(&ct->polled, __ATOMIC_ACQUIRE);
        uint64_t again = __atomic_load_n(&ct->success, __ATOMIC_ACQUIRE);
        if (again == s)
            break;
        s = again;
    }
    ev.success = s + p;
    ev.failure = __atomic_load_n(&ct->failure, __ATOMIC_ACQUIRE);
    return ev;
}

static uint64_t ct_count(const xp_ct_t *ct)
{
    ptl_ct_event_t ev = xp_ct_read(ct);
    return ev.success + ev.failure;
}

/* Detach the prefix of the list whose threshold is reached. Lock held. */
static xp_trig_t *take_ready(xp_ct_t *ct)
{
    uint64_t count = ct_count(ct);
    xp_trig_t *head = ct->trig_head, *last = NULL, *t;

    for (t = head; t && t->threshold <= count; t = t->next)
        last = t;
    if (!last)
        return NULL;
    __atomic_store_n(&ct->trig_head, last->next, __ATOMIC_SEQ_CST);
    if (!last->next)
        ct->trig_tail = NULL;
    last->next = NULL;
    return head;
}

/* A waiter's condition may hold after this update: a failure, or success
 * reached the lowest registered threshold (which we then clear: waiters
 * still short of theirs register again before they sleep). Waking every
 * waiter on every increment made a PtlCTWait thread of a window of large
 * puts wake per acknowledgement and take the CPU from the progress thread. */
static int wake_due(xp_ct_t *ct)
{
    uint64_t at = __atomic_load_n(&ct->wake_at, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ct->failure, __ATOMIC_ACQUIRE))
        return 1;
    if (at == UINT64_MAX) /* nobody sleeps on it: the usual case */
        return 0;
    uint64_t success = xp_ct_read(ct).success;
    while (at <= success)
        if (__atomic_compare_exchange_n(&ct->wake_at, &at, UINT64_MAX, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return 1;
    return 0;
}

/* A waiter for success >= test, about to sleep: lower wake_at to test.
 * Seq_cst against wake_due: either the updater sees the threshold or the
 * waiter's next read of the counter sees the update. */
static void wait_register(xp_ct_t *ct, uint64_t test)
{
    uint64_t at = __atomic_load_n(&ct->wake_at, __ATOMIC_SEQ_CST);
    while (at > test) {
        if (__atomic_compare_exchange_n(&ct->wake_at, &at, test, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            /* The handler stores `polled` and then loads wake_at with only
             * a compiler barrier between (count_polled): the heavy side of
             * that handshake is here, once per registration. */
            xp_ptl_heavy_fence();
            return;
        }
    }
}

/* After a counter change: issue what became ready, wake waiters whose
 * condition may hold (all of them when `all`). The seq_cst load pairs with
 * the seq_cst store in xp_ct_post_trig: either the poster sees the new
 * count or this thread sees the new operation.
 * No lost wake-up: a waiter announces itself as a sleeper (progress.c),
 * then registers its threshold (ct_wait_arm), then reads the counter a last
 * time; an update is followed by wake_due and xp_ptl_notify, whose fence
 * orders it before the look at the sleepers: all seq_cst, so either the
 * waiter sees the update or the updater sees the waiter and wakes it. */
static void after_update(xp_ct_t *ct, int all)
{
    if (__atomic_load_n(&ct->trig_head, __ATOMIC_SEQ_CST)) {
        xp_trig_t *ready;
        pthread_mutex_lock(&ct->lock);
        ready = take_ready(ct);
        pthread_mutex_unlock(&ct->lock);
        if (ready)
            xp_trig_run(ready);
    }
    if (all || wake_due(ct))
        xp_ptl_notify();
}

/* A success counted by the poll-lock holder, without a locked instruction.
 * The loads after the store (trig_head, wake_at) are one side of two
 * handshakes whose other sides run the heavy fence: wait_register, and
 * the first xp_ct_post_trig on this CT (trig_seen). Once trig_seen is set
 * the store-load order here needs a real fence: a poster that skipped its
 * heavy fence relies on it. */
static void count_polled(xp_ct_t *ct, uint64_t success, int asym_fence)
{
    uint64_t p = __atomic_load_n(&ct->polled, __ATOMIC_RELAXED);
    __atomic_store_n(&ct->polled, p + success, __ATOMIC_RELEASE);
    if (!asym_fence || __atomic_load_n(&ct->trig_seen, __ATOMIC_RELAXED))
        xp_fence();
    else
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* xp_ptl_light_fence */
}

void xp_ct_add(xp_ct_t *ct, uint64_t success, uint64_t failure)
{
    const xp_ptl_state_t *st = xp_ptl_state_peek();
    /* xp_ptl_polling() and xp_ptl_light_fence() on one load of the state */
    if (success && !failure && st &&
        __atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) == xp_thread_id())
        count_polled(ct, success, __atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED));
    else if (success)
        __atomic_add_fetch(&ct->success, success, __ATOMIC_SEQ_CST);
    if (failure)
        __atomic_add_fetch(&ct->failure, failure, __ATOMIC_SEQ_CST);
    after_update(ct, 0);
}

int xp_ct_add_polled(xp_ct_t *ct, uint64_t success, int asym_fence)
{
    return xp_ct_count_polled(ct, success, asym_fence) ? xp_ct_add_polled_rest(ct) : 0;
}

int xp_ct_add_polled_rest(xp_ct_t *ct)
{
    /* after_update without the triggered operations: those wait for the
     * caller's xp_ct_fire (it still holds its PT). */
    if (__builtin_expect(__atomic_load_n(&ct->trig_head, __ATOMIC_SEQ_CST) != NULL, 0))
        return 1;
    if (wake_due(ct))
        xp_ptl_notify();
    return 0;
}

void xp_ct_fire(xp_ct_t *ct)
{
    after_update(ct, 0);
}

void xp_ct_set(xp_ct_t *ct, ptl_ct_event_t value)
{
    /* A handler's increment after the load of `polled` counts on top of
     * the new value, as if it came after the set. */
    __atomic_store_n(&ct->success, value.success - __atomic_load_n(&ct->polled, __ATOMIC_ACQUIRE),
                     __ATOMIC_SEQ_CST);
    __atomic_store_n(&ct->failure, value.failure, __ATOMIC_SEQ_CST);
    after_update(ct, 1);
}

/* Insert keeping thresholds sorted and equal thresholds in call order. */
static void insert_sorted(xp_ct_t *ct, xp_trig_t *t)
{
    xp_trig_t **pos;

    t->next = NULL;
    if (!ct->trig_head) {
        ct->trig_tail = t;
        __atomic_store_n(&ct->trig_head, t, __ATOMIC_SEQ_CST);
        return;
    }
    if (ct->trig_tail->threshold <= t->threshold) { /* the usual case: increasing */
        ct->trig_tail->next = t;
        ct->trig_tail = t;
        return;
    }
    for (pos = &ct->trig_head; *pos && (*pos)->threshold <= t->threshold; pos = &(*pos)->next)
        ;
    t->next = *pos;
    __atomic_store_n(pos, t, __ATOMIC_SEQ_CST);
}

xp_status_t xp_ct_post_trig(ptl_handle_ct_t trig_ct_handle, xp_trig_t *t)
{
    xp_ct_t *ct = xp_ct_from_handle(trig_ct_handle);
    xp_trig_t *ready;

    if (!ct || ct->ni != t->ni)
        return XP_ERR_INVALID;
    /* Handlers count without a fence until they see trig_seen; the heavy
     * fence makes every such count visible before take_ready reads it, and
     * every later count fences (count_polled). */
    if (!__atomic_load_n(&ct->trig_seen, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&ct->trig_seen, 1, __ATOMIC_SEQ_CST);
        xp_ptl_heavy_fence();
    }
    pthread_mutex_lock(&ct->lock);
    if (ct->handle != trig_ct_handle) { /* freed since the lookup */
        pthread_mutex_unlock(&ct->lock);
        return XP_ERR_INVALID;
    }
    insert_sorted(ct, t);
    ready = take_ready(ct);
    pthread_mutex_unlock(&ct->lock);
    if (ready)
        xp_trig_run(ready);
    return XP_OK;
}

/* Invalidate a live CT: drop its triggered operations, give back its NI
 * count, wake its waiters. The caller already freed the handle. */
static void ct_kill(xp_ct_t *ct, int release_ni)
{
    xp_trig_t *pending;

    pthread_mutex_lock(&ct->lock);
    __atomic_store_n(&ct->handle, 0, __ATOMIC_RELEASE);
    pending = ct->trig_head;
    __atomic_store_n(&ct->trig_head, NULL, __ATOMIC_SEQ_CST);
    ct->trig_tail = NULL;
    pthread_mutex_unlock(&ct->lock);
    xp_trig_discard(pending, release_ni);
    if (release_ni)
        xp_ni_obj_release(ct->ni, XP_NI_OBJ_CT);
    xp_ptl_notify();
}

/* release_ni = 0 at library teardown, when the NIs are already gone. */
static void ct_free_handles(xp_handle_table_t *t, int ni, int release_ni)
{
    ptl_handle_any_t buf[256];
    uint32_t n;

    /* Collect in batches: ct_kill may not run under the table lock. */
    do {
        n = xp_handle_collect(t, ni, buf, 256);
        for (uint32_t i = 0; i < n && i < 256; i++) {
            xp_ct_t *ct = xp_handle_lookup(t, buf[i]);
            if (ct && xp_handle_free(t, buf[i]) == XP_OK)
                ct_kill(ct, release_ni);
        }
    } while (n > 256);
}

void xp_ct_ni_fini(xp_ni_t *ni)
{
    xp_handle_table_t *t = ct_table();

    if (t)
        ct_free_handles(t, ni->slot, 1);
}

void xp_ct_destroy_all(xp_handle_table_t *table)
{
    ct_free_handles(table, -1, 0);
}

/* ------------------------------------------------------------------ module state (CT and EQ tables) */


/* CT and EQ objects stay in their slot after PtlCTFree / PtlEQFree (stable
 * objects), see handle.h. */
static xp_ptl_objects_t *objects_create(void)
{
    xp_ptl_objects_t *o = calloc(1, sizeof(*o));

    if (!o)
        return NULL;
    if (xp_handle_table_init(&o->ct, XP_HANDLE_CT, 0, xp_ct_object_size()) != XP_OK)
        goto err_free;
    if (xp_handle_table_init(&o->eq, XP_HANDLE_EQ, 0, xp_eq_object_size()) != XP_OK)
        goto err_fini_ct;
    return o;

err_fini_ct:
    xp_handle_table_fini(&o->ct);
err_free:
    free(o);
    return NULL;
}

xp_ptl_objects_t *xp_ptl_objects_peek(void)
{
    return __atomic_load_n(&xp_ctx.ptl_objects, __ATOMIC_ACQUIRE);
}

xp_ptl_objects_t *xp_ptl_objects(void)
{
    xp_ptl_objects_t *o = xp_ptl_objects_peek(), *expected = NULL;

    if (o)
        return o;
    o = objects_create();
    if (!o) {
        xp_error("ptl objects: out of memory");
        return NULL;
    }
    /* Two first users may race: the loser discards its copy. */
    if (!__atomic_compare_exchange_n(&xp_ctx.ptl_objects, &expected, o, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        xp_handle_table_fini(&o->eq);
        xp_handle_table_fini(&o->ct);
        free(o);
        o = expected;
    }
    return o;
}

void xp_ptl_objects_fini(void)
{
    xp_ptl_objects_t *o = __atomic_exchange_n(&xp_ctx.ptl_objects, NULL, __ATOMIC_ACQ_REL);

    if (!o)
        return;
    xp_ct_destroy_all(&o->ct);
    xp_eq_destroy_all(&o->eq);
    xp_handle_table_fini(&o->eq);
    xp_handle_table_fini(&o->ct);
    free(o);
}

/* ------------------------------------------------------------------ API */

int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle)
{
    xp_ptl_objects_t *o;
    xp_ni_t *ni;
    xp_ct_t *ct;
    ptl_handle_ct_t h;
    xp_status_t st;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !ct_handle)
        return PTL_ARG_INVALID;
    o = xp_ptl_objects();
    if (!o)
        return PTL_NO_SPACE;
    st = xp_ni_obj_acquire(ni, XP_NI_OBJ_CT);
    if (st != XP_OK)
        return xp_ptl_rc(st);
    st = xp_handle_alloc_stable(&o->ct, (unsigned)ni->slot, (void **)&ct, &h);
    if (st != XP_OK) {
        xp_ni_obj_release(ni, XP_NI_OBJ_CT);
        return xp_ptl_rc(st);
    }
    if (!ct->lock_ready) {
        pthread_mutex_init(&ct->lock, NULL);
        ct->lock_ready = 1;
    }
    pthread_mutex_lock(&ct->lock);
    ct->ni = ni;
    __atomic_store_n(&ct->success, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ct->polled, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ct->failure, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ct->wake_at, UINT64_MAX, __ATOMIC_RELAXED);
    /* Atomic: a thread counting through a stale handle of this slot reads
     * trig_head without the lock (after_update). */
    __atomic_store_n(&ct->trig_head, NULL, __ATOMIC_RELAXED);
    ct->trig_tail = NULL;
    __atomic_store_n(&ct->handle, h, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ct->lock);
    *ct_handle = h;
    return PTL_OK;
}

int PtlCTFree(ptl_handle_ct_t ct_handle)
{
    xp_handle_table_t *t;
    xp_ct_t *ct;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    t = ct_table();
    ct = xp_ct_from_handle(ct_handle);
    /* Only one of two racing frees wins the handle. */
    if (!ct || xp_handle_free(t, ct_handle) != XP_OK)
        return PTL_ARG_INVALID;
    ct_kill(ct, 1);
    return PTL_OK;
}

int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle)
{
    xp_ct_t *ct;
    xp_trig_t *pending;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(ct_handle);
    if (!ct)
        return PTL_ARG_INVALID;
    pthread_mutex_lock(&ct->lock);
    if (ct->handle != ct_handle) {
        pthread_mutex_unlock(&ct->lock);
        return PTL_ARG_INVALID;
    }
    pending = ct->trig_head;
    __atomic_store_n(&ct->trig_head, NULL, __ATOMIC_SEQ_CST);
    ct->trig_tail = NULL;
    pthread_mutex_unlock(&ct->lock);
    xp_trig_discard(pending, 1);
    return PTL_OK;
}

int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event)
{
    xp_ct_t *ct;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(ct_handle);
    if (!ct || !event)
        return PTL_ARG_INVALID;
    /* As PtlEQGet: a polling loop of PtlCTGet must move the engine with
     * XP_PROGRESS=inline (an idle look is a few loads). */
    xp_ptl_app_poll();
    *event = xp_ct_read(ct);
    return PTL_OK;
}

/* What CTWait/CTPoll wait for, per CT. */
typedef struct ct_wait {
    xp_ct_t **cts;
    const ptl_handle_ct_t *handles;
    const ptl_size_t *tests;
    unsigned int size;
    unsigned int which;  /* result: index that satisfied the wait */
    int dead;            /* result: a CT was freed during the wait */
    ptl_ct_event_t ev;   /* result: the value of cts[which] that satisfied it */
} ct_wait_t;

/* Whether ev satisfies a wait for test: reached, or a failure counted. */
static inline int ct_reached(ptl_ct_event_t ev, ptl_size_t test)
{
    return ev.success >= test || ev.failure != 0;
}

/* ct_reached, keeping ev in w when it does (the wait returns the value it
 * saw, without reading the CT again). */
static inline int ct_wait_hit(ct_wait_t *w, ptl_ct_event_t ev, ptl_size_t test)
{
    if (!ct_reached(ev, test))
        return 0;
    w->ev = ev;
    return 1;
}

static int ct_wait_pred(void *arg)
{
    ct_wait_t *w = arg;

    for (unsigned int i = 0; i < w->size; i++) {
        if (xp_ct_handle(w->cts[i]) != w->handles[i]) {
            w->dead = 1;
            return 1;
        }
        if (ct_wait_hit(w, xp_ct_read(w->cts[i]), w->tests[i])) {
            w->which = i;
            return 1;
        }
    }
    return 0;
}

/* ct_wait_pred for one CT (PtlCTWait): inlined into the spin loop
 * (xp_ptl_wait_inline), once per iteration. */
static inline int ct_wait_one_pred(void *arg)
{
    ct_wait_t *w = arg;
    const xp_ct_t *ct = w->cts[0];

    if (__builtin_expect(xp_ct_handle(ct) != w->handles[0], 0)) {
        w->dead = 1;
        return 1;
    }
    return ct_wait_hit(w, xp_ct_read(ct), w->tests[0]); /* which stays 0 */
}

/* Before a sleep: register every threshold (spinning waiters need none,
 * so the ping-pong path has no locked instruction for it). */
static void ct_wait_arm(void *arg)
{
    ct_wait_t *w = arg;

    for (unsigned int i = 0; i < w->size; i++)
        wait_register(w->cts[i], w->tests[i]);
}

/* Wait for any CT of w; deadline_ns absolute (UINT64_MAX: forever). */
static int ct_wait_any(ct_wait_t *w, uint64_t deadline_ns, ptl_ct_event_t *event,
                       unsigned int *which)
{
    xp_status_t st = XP_OK;

    if (!ct_wait_pred(w)) {
        if (deadline_ns == 0) { /* poll once, with one round of progress */
            xp_ptl_app_poll();
            if (!ct_wait_pred(w))
                return PTL_CT_NONE_REACHED;
        } else if (w->size == 1) {
            st = xp_ptl_wait_inline(ct_wait_one_pred, ct_wait_arm, w, deadline_ns);
        } else {
            st = xp_ptl_wait_until_armed(ct_wait_pred, ct_wait_arm, w, deadline_ns);
        }
    }
    if (w->dead || st == XP_ERR_CANCELED)
        return PTL_INTERRUPTED;
    if (st == XP_ERR_ABORTED)
        return PTL_ABORTED;
    if (st == XP_ERR_TIMEOUT)
        return PTL_CT_NONE_REACHED;
    if (st != XP_OK)
        return xp_ptl_rc(st);
    *event = w->ev;
    if (which)
        *which = w->which;
    return PTL_OK;
}

int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event)
{
    xp_ct_t *ct;
    ct_wait_t w;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(ct_handle);
    if (!ct || !event)
        return PTL_ARG_INVALID;
    /* Fast path: reached already, no progress call. The value goes to
     * *event from registers: through w.ev (two 8-byte stores, then a
     * 16-byte load, which no store forwards) it waited for every older
     * store to reach the cache. */
    ptl_ct_event_t ev = xp_ct_read(ct);
    if (ct_reached(ev, test)) {
        event->success = ev.success;
        event->failure = ev.failure;
        return PTL_OK;
    }
    w = (ct_wait_t){.cts = &ct, .handles = &ct_handle, .tests = &test, .size = 1};
    return ct_wait_any(&w, UINT64_MAX, event, NULL);
}

int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
              ptl_time_t timeout, ptl_ct_event_t *event, unsigned int *which)
{
    xp_ct_t *stack_cts[16], **cts = stack_cts;
    ct_wait_t w;
    uint64_t deadline;
    int rc = PTL_ARG_INVALID;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    if (!ct_handles || !tests || !event || !which || size == 0)
        return PTL_ARG_INVALID;
    if (size > 16) {
        cts = malloc(size * sizeof(*cts));
        if (!cts)
            return PTL_NO_SPACE;
    }
    for (unsigned int i = 0; i < size; i++) {
        cts[i] = xp_ct_from_handle(ct_handles[i]);
        if (!cts[i] || cts[i]->ni != cts[0]->ni)
            goto out_free;
    }
    deadline = timeout == PTL_TIME_FOREVER ? UINT64_MAX
               : timeout == 0              ? 0
                                           : xp_time_ns() + (uint64_t)timeout * 1000000ull;
    w = (ct_wait_t){.cts = cts, .handles = ct_handles, .tests = tests, .size = size};
    rc = ct_wait_any(&w, deadline, event, which);
out_free:
    if (cts != stack_cts)
        free(cts);
    return rc;
}

int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct)
{
    xp_ct_t *ct;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(ct_handle);
    if (!ct)
        return PTL_ARG_INVALID;
    xp_ct_set(ct, new_ct);
    return PTL_OK;
}

int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment)
{
    xp_ct_t *ct;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(ct_handle);
    /* One of the two fields must be zero (specification and reference). */
    if (!ct || (increment.success && increment.failure))
        return PTL_ARG_INVALID;
    xp_ct_add(ct, increment.success, increment.failure);
    return PTL_OK;
}
