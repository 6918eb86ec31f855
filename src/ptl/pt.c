/* ptl/pt.c - portal table entries and LE/ME lists (append, unlink, search). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ptl/ct.h"
#include "ptl/direct.h"
#include "ptl/engine.h"
#include "ptl/eq.h"
#include "ptl/progress.h"
#include "ptl/pt.h"
#include "ptl/triggered.h"
#include "util/log.h"
#include "util/pool.h"

/* Wait for the other side of the PT handshake: it holds the PT for a
 * message or a list call, but may have been preempted by us (xprun binds a
 * rank's threads to one CPU), so give the CPU away after a short spin. */
static void pt_backoff(unsigned *spins)
{
    if (++*spins < 128)
        xp_cpu_relax();
    else
        sched_yield();
}

/* The handler's side of the handshake, whether or not the PT is allocated. */
static void enter_as_handler(xp_pt_t *pt)
{
    unsigned spins = 0;
    for (;;) {
        __atomic_store_n(&pt->handler_in, 1, __ATOMIC_RELAXED);
        xp_ptl_light_fence();
        if (!__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE)) {
            xp_pt_tsan_entered(pt);
            return;
        }
        xp_pt_leave(pt);
        while (__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE))
            pt_backoff(&spins);
    }
}

void xp_pt_lock(xp_pt_t *pt)
{
    xp_ptl_state_t *st = xp_ptl_state();
    unsigned spins = 0;
    /* With the poll lock no handler runs and no other thread holding it is
     * inside: only application threads of the other kind below can be, and
     * they are kept out as a handler keeps them out (two locked
     * instructions in all, as the PT mutex alone took before). */
    if (xp_poll_trylock(st)) {
        enter_as_handler(pt);
        pt->poll_holder = xp_thread_id();
        return;
    }
    /* The poll lock is busy (a handler runs, or this very thread holds it
     * further up, e.g. a triggered append issued from a handler). */
    pthread_mutex_lock(&pt->lock);
    __atomic_store_n(&pt->app_busy, 1, __ATOMIC_RELAXED);
    xp_ptl_heavy_fence();
    while (__atomic_load_n(&pt->handler_in, __ATOMIC_ACQUIRE))
        pt_backoff(&spins);
    xp_pt_tsan_entered(pt);
}

void xp_pt_unlock(xp_pt_t *pt)
{
    /* Only the holder inside sets poll_holder, and clears it before it
     * leaves: another thread inside now reads 0. */
    if (pt->poll_holder == xp_thread_id()) {
        pt->poll_holder = 0;
        xp_pt_leave(pt);
        xp_poll_unlock(xp_ptl_state());
        return;
    }
#if XP_TSAN
    __tsan_release(pt);
#endif
    __atomic_store_n(&pt->app_busy, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&pt->lock);
}

xp_pt_t *xp_pt_get(xp_ni_t *ni, ptl_pt_index_t pt_index)
{
    if (pt_index > (ptl_pt_index_t)ni->limits.max_pt_index)
        return NULL;
    xp_pt_t *pt = &ni->pt[pt_index];
    xp_pt_lock(pt);
    if (!pt->allocated) {
        xp_pt_unlock(pt);
        return NULL;
    }
    return pt;
}

/* xp_pt_enter found an application thread inside: wait for it, retry. */
xp_pt_t *xp_pt_enter_slow(xp_pt_t *pt)
{
    if (__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE)) {
        xp_pt_leave(pt);
        enter_as_handler(pt);
    } else {
        xp_pt_tsan_entered(pt);
    }
    if (!pt->allocated) {
        xp_pt_leave(pt);
        return NULL;
    }
    return pt;
}

uint64_t xp_pt_source_of(xp_ni_t *ni, int rank)
{
    ptl_process_t p = xp_ni_process_of(ni, rank);
    if (ni->physical)
        return xp_match_source_physical(p.phys.nid, p.phys.pid);
    return p.rank;
}

/* Events that the application's own calls generate (LINK, AUTO_UNLINK of a
 * use-once append consumed at once, *_OVERFLOW and SEARCH from appends and
 * searches) take no reserved room: PtlMEAppend/PtlLEAppend/Search have no
 * return code for a full EQ, and blocking could stall the very thread that
 * drains it, so such an event is dropped and the loss is reported by
 * PTL_EQ_DROPPED on the next event (eq.c). On a PTL_PT_FLOWCTRL PT
 * incoming messages still keep one slot for PT_DISABLED (target.c
 * reserve_resources), but these events may take that slot too. */
void xp_pt_post_event(xp_pt_t *pt, const ptl_event_t *ev)
{
    if (pt->eq) {
        xp_eq_push(pt->eq, ev);
        xp_ptl_notify();
    }
}

/* ---------------------------------------------------------------- PT API */

int PtlPTAlloc(ptl_handle_ni_t ni_handle, unsigned int options, ptl_handle_eq_t eq_handle,
               ptl_pt_index_t pt_index_req, ptl_pt_index_t *pt_index)
{
    xp_ni_t *ni;
    struct xp_eq *eq = NULL;
    ptl_pt_index_t idx;
    int rc = PTL_OK;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !pt_index || (options & ~PTL_PT_ALLOC_OPTIONS_MASK))
        return PTL_ARG_INVALID;
    if (eq_handle != PTL_EQ_NONE) {
        eq = xp_eq_from_handle(eq_handle);
        if (!eq || xp_eq_ni(eq) != ni)
            return PTL_ARG_INVALID;
    }
    if ((options & PTL_PT_FLOWCTRL) && !eq)
        return PTL_PT_EQ_NEEDED;
    if (pt_index_req != PTL_PT_ANY && pt_index_req > (ptl_pt_index_t)ni->limits.max_pt_index)
        return PTL_ARG_INVALID;

    xp_ni_lock(ni);
    if (pt_index_req == PTL_PT_ANY) {
        for (idx = 0; idx <= (ptl_pt_index_t)ni->limits.max_pt_index; idx++)
            if (!ni->pt[idx].allocated)
                break;
        if (idx > (ptl_pt_index_t)ni->limits.max_pt_index) {
            rc = PTL_PT_FULL;
            goto out;
        }
    } else {
        idx = pt_index_req;
        if (ni->pt[idx].allocated) {
            rc = PTL_PT_IN_USE;
            goto out;
        }
    }
    xp_pt_t *pt = &ni->pt[idx];
    xp_pt_lock(pt);
    if (!pt->table_ready) {
        if (xp_match_table_init(&pt->table) != XP_OK) {
            xp_pt_unlock(pt);
            rc = PTL_NO_SPACE;
            goto out;
        }
        /* Taken and given back under the PT, by the handler and by appends:
         * no malloc/free per unexpected message (a burst of them freed at
         * once went past glibc's per-thread cache). */
        if (xp_pool_init(&pt->uh_pool, "unexpected headers", sizeof(xp_uh_t), 0, 0, 0) != XP_OK) {
            xp_match_table_fini(&pt->table);
            xp_pt_unlock(pt);
            rc = PTL_NO_SPACE;
            goto out;
        }
        pt->table_ready = 1;
    }
    pt->options = options;
    pt->eq = eq;
    pt->eq_handle = eq_handle;
    pt->enabled = 1;
    pt->allocated = 1;
    xp_pt_unlock(pt);
    *pt_index = idx;
out:
    xp_ni_unlock(ni);
    return rc;
}

static void uh_free_all(xp_pt_t *pt)
{
    xp_match_header_t *h;
    while ((h = xp_match_uh_first(&pt->table)) != NULL) {
        xp_match_uh_remove(&pt->table, h);
        xp_uh_release(pt, h->user, 0);
    }
}

int PtlPTFree(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index)
{
    xp_ni_t *ni;
    xp_pt_t *pt;
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni)
        return PTL_ARG_INVALID;
    xp_ni_lock(ni);
    pt = xp_pt_get(ni, pt_index);
    if (!pt) {
        xp_ni_unlock(ni);
        return PTL_ARG_INVALID;
    }
    if (xp_match_count(&pt->table, XP_MATCH_PRIORITY) || xp_match_count(&pt->table, XP_MATCH_OVERFLOW)) {
        xp_pt_unlock(pt);
        xp_ni_unlock(ni);
        return PTL_IN_USE;
    }
    uh_free_all(pt);
    pt->allocated = 0;
    pt->enabled = 0;
    pt->eq = NULL;
    xp_direct_sync(ni, pt);
    xp_pt_unlock(pt);
    xp_ni_unlock(ni);
    return PTL_OK;
}

static int pt_set_enabled(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, int enabled)
{
    xp_ni_t *ni;
    xp_pt_t *pt;
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni)
        return PTL_ARG_INVALID;
    /* Messages are processed entirely under the PT lock, so once we hold it
     * no message is half-done: PtlPTDisable's "wait for messages in
     * progress" is this lock. */
    pt = xp_pt_get(ni, pt_index);
    if (!pt)
        return PTL_ARG_INVALID;
    pt->enabled = enabled;
    xp_direct_sync(ni, pt); /* peers' direct atomics stop (or may start) here too */
    xp_pt_unlock(pt);
    return PTL_OK;
}

int PtlPTDisable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index)
{
    return pt_set_enabled(ni_handle, pt_index, 0);
}

int PtlPTEnable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index)
{
    return pt_set_enabled(ni_handle, pt_index, 1);
}

/* ---------------------------------------------------------------- LE / ME */

static xp_handle_table_t *entry_table(int is_me)
{
    xp_ptl_state_t *st = xp_ptl_state();
    return is_me ? &st->me_table : &st->le_table;
}

/* The handle dies, the NI count and the region go; the memory stays. */
static void le_release_handle(xp_le_t *le)
{
    xp_handle_free(entry_table(le->is_me), le->handle);
    xp_ni_obj_release(le->ni, XP_NI_OBJ_ENTRY);
    xp_region_fini(&le->region);
}

static void le_free(xp_le_t *le)
{
    le_release_handle(le);
    free(le);
}

/* LINK, AUTO_UNLINK and AUTO_FREE: events about the entry itself. */
static void le_event(xp_pt_t *pt, const xp_le_t *le, ptl_event_kind_t type)
{
    ptl_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.user_ptr = le->user_ptr;
    ev.pt_index = le->pt_index;
    ev.ptl_list = le->list;
    ev.ni_fail_type = PTL_NI_OK;
    xp_pt_post_event(pt, &ev);
}

/* The handle dies before the events are posted: an application that took
 * AUTO_UNLINK must find the entry gone (PtlLEUnlink answers
 * PTL_ARG_INVALID), not look it up while this thread frees it. */
void xp_le_unlink_locked(xp_pt_t *pt, xp_le_t *le, int auto_event)
{
    int events = auto_event && !(le->options & PTL_ME_EVENT_UNLINK_DISABLE);
    xp_match_remove(&pt->table, &le->m);
    xp_direct_sync(le->ni, pt); /* no peer writes the buffer once this returns */
    le_release_handle(le);
    if (events)
        le_event(pt, le, PTL_EVENT_AUTO_UNLINK);
    if (le->uh_refs == 0) {
        /* No unexpected header points into the buffer: free at once. */
        if (events && le->list == PTL_OVERFLOW_LIST)
            le_event(pt, le, PTL_EVENT_AUTO_FREE);
        free(le);
        return;
    }
    /* The object waits for its last header. */
    le->unlinked = 1;
    le->auto_free = events && le->list == PTL_OVERFLOW_LIST;
}

void xp_uh_release(xp_pt_t *pt, xp_uh_t *uh, int events)
{
    xp_le_t *le = uh->owner;
    xp_pool_put(&pt->uh_pool, uh);
    if (!le || --le->uh_refs > 0 || !le->unlinked)
        return;
    if (events && le->auto_free)
        le_event(pt, le, PTL_EVENT_AUTO_FREE);
    free(le);
}

#define LE_OPTIONS (PTL_IOVEC | PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_USE_ONCE |            \
                    PTL_LE_ACK_DISABLE | PTL_LE_UNEXPECTED_HDR_DISABLE | PTL_LE_IS_ACCESSIBLE | \
                    PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_FLOWCTRL_DISABLE |            \
                    PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_OVER_DISABLE |             \
                    PTL_LE_EVENT_UNLINK_DISABLE | PTL_LE_EVENT_LINK_DISABLE |              \
                    PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_CT_OVERFLOW | PTL_LE_EVENT_CT_BYTES | \
                    PTL_LE_AUTH_USE_JID)
#define ME_OPTIONS (PTL_ME_APPEND_OPTIONS_MASK | PTL_IOVEC)
/* PTL_ME_MAY_ALIGN is accepted and ignored: the specification makes it a
 * permission (with MANAGE_LOCAL, the implementation MAY place each message at
 * an aligned offset), not a requirement, so packing messages back to back
 * (alignment 1) conforms, and wastes no buffer space. */

/* One found or consumed header on the entry's counter: its bytes under
 * EVENT_CT_BYTES, else 1; a header whose message failed counts a failure. */
static void count_header(xp_le_t *le, const ptl_event_t *ev)
{
    if (ev->ni_fail_type == PTL_NI_OK)
        xp_ct_add(le->ct, (le->options & PTL_ME_EVENT_CT_BYTES) ? ev->mlength : 1, 0);
    else
        xp_ct_add(le->ct, 0, 1);
}

/* Deliver unexpected header h to a new priority entry (PUT_OVERFLOW & co). */
static void uh_deliver(xp_pt_t *pt, xp_le_t *le, xp_uh_t *uh, int search, ptl_search_op_t op)
{
    ptl_event_t ev = uh->ev;
    ev.user_ptr = le->user_ptr;
    if (search && op == PTL_SEARCH_ONLY) {
        ev.type = PTL_EVENT_SEARCH;
    } else {
        switch (uh->ev.type) {
        case PTL_EVENT_GET: ev.type = PTL_EVENT_GET_OVERFLOW; break;
        case PTL_EVENT_ATOMIC: ev.type = PTL_EVENT_ATOMIC_OVERFLOW; break;
        case PTL_EVENT_FETCH_ATOMIC: ev.type = PTL_EVENT_FETCH_ATOMIC_OVERFLOW; break;
        default: ev.type = PTL_EVENT_PUT_OVERFLOW; break;
        }
    }
    if (!(le->options & PTL_ME_EVENT_OVER_DISABLE) &&
        !(le->options & PTL_ME_EVENT_COMM_DISABLE))
        xp_pt_post_event(pt, &ev);
    /* An append counts what it consumes under EVENT_CT_OVERFLOW; a search
     * counts every header it finds, whatever its options (and its end:
     * entry_search). */
    if (le->ct && (search || (le->options & PTL_ME_EVENT_CT_OVERFLOW)))
        count_header(le, &ev);
}

static xp_match_spec_t entry_spec(xp_ni_t *ni, const ptl_me_t *me)
{
    if (!me)
        return xp_match_spec_any();
    if (ni->physical)
        return xp_match_spec_physical(me->match_bits, me->ignore_bits, me->match_id.phys.nid,
                                      me->match_id.phys.nid == PTL_NID_ANY,
                                      me->match_id.phys.pid,
                                      me->match_id.phys.pid == PTL_PID_ANY);
    return xp_match_spec_logical(me->match_bits, me->ignore_bits, me->match_id.rank,
                                 me->match_id.rank == PTL_RANK_ANY);
}

/* The entry's XP_LE_FAST_* flags (pt.h); options, ct and region set. */
static unsigned entry_fast_flags(const xp_le_t *le)
{
    unsigned o = le->options, f = 0;
    int plain = !le->region.iov &&
                !(o & (PTL_ME_USE_ONCE | PTL_ME_MANAGE_LOCAL | PTL_ME_NO_TRUNCATE));
    if (plain && (o & PTL_ME_OP_PUT))
        f |= XP_LE_FAST_PUT | ((o & PTL_ME_OP_GET) ? XP_LE_FAST_FETCH : 0);
    if (plain && (o & PTL_ME_OP_GET))
        f |= XP_LE_FAST_GET;
    if (o & (PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_SUCCESS_DISABLE))
        f |= XP_LE_FAST_QUIET;
    if (le->ct && (o & PTL_ME_EVENT_CT_COMM))
        f |= XP_LE_FAST_CT;
    if (o & PTL_ME_EVENT_CT_BYTES)
        f |= XP_LE_FAST_CT_BYTES;
    if (o & PTL_ME_ACK_DISABLE)
        f |= XP_LE_FAST_NOACK;
    return f;
}

/* A new, unlinked entry from the caller's description (me == NULL for an
 * LE), with no handle yet: everything the caller passed is copied (the
 * region copies an iovec list). Returns a PTL_* code. */
static int entry_create(xp_ni_t *ni, ptl_pt_index_t pt_index, const ptl_le_t *le_in,
                        const ptl_me_t *me, ptl_list_t ptl_list, void *user_ptr,
                        xp_le_t **le_out)
{
    xp_le_t *le;
    xp_status_t rc;
    int is_me = me != NULL;
    void *start = is_me ? me->start : le_in->start;
    ptl_size_t length = is_me ? me->length : le_in->length;
    unsigned options = is_me ? me->options : le_in->options;
    ptl_handle_ct_t ct_handle = is_me ? me->ct_handle : le_in->ct_handle;

    if (options & ~(is_me ? ME_OPTIONS : LE_OPTIONS))
        return PTL_ARG_INVALID;
    if (ptl_list != PTL_PRIORITY_LIST && ptl_list != PTL_OVERFLOW_LIST)
        return PTL_ARG_INVALID;
    le = xp_zalloc(sizeof(*le));
    if (!le)
        return PTL_NO_SPACE;
    le->is_me = is_me;
    le->ni = ni;
    le->pt_index = pt_index;
    le->options = options;
    le->uid = is_me ? me->uid : le_in->uid;
    le->user_ptr = user_ptr;
    le->list = ptl_list;
    le->min_free = is_me ? me->min_free : 0;
    if (ct_handle != PTL_CT_NONE) {
        le->ct = xp_ct_from_handle(ct_handle);
        if (!le->ct || xp_ct_ni(le->ct) != ni) {
            free(le);
            return PTL_ARG_INVALID;
        }
    }
    rc = xp_region_init(&le->region, start, length, options, ni->limits.max_iovecs);
    if (rc != XP_OK) {
        free(le);
        return xp_ptl_rc(rc);
    }
    le->fast = entry_fast_flags(le);
    xp_match_spec_t spec = entry_spec(ni, me);
    /* (user = the entry's own LE: target.c's fast_match derives the LE
     * from the match entry's address) */
    xp_match_entry_init(&le->m, &spec, le);
    *le_out = le;
    return PTL_OK;
}

/* Undo entry_create (no handle yet). */
static void entry_destroy(xp_le_t *le)
{
    xp_region_fini(&le->region);
    free(le);
}

/* Count the entry against the NI and give it a handle. */
static xp_status_t entry_register(xp_le_t *le)
{
    xp_status_t rc = xp_ni_obj_acquire(le->ni, XP_NI_OBJ_ENTRY);

    if (rc != XP_OK)
        return rc;
    rc = xp_handle_alloc(entry_table(le->is_me), (unsigned)le->ni->slot, le, &le->handle);
    if (rc != XP_OK)
        xp_ni_obj_release(le->ni, XP_NI_OBJ_ENTRY);
    return rc;
}

static int list_full(xp_pt_t *pt, const xp_ni_t *ni)
{
    return xp_match_count(&pt->table, XP_MATCH_PRIORITY) +
               xp_match_count(&pt->table, XP_MATCH_OVERFLOW) >=
           (size_t)ni->limits.max_list_size;
}

/* PTL_ME_LOCAL_INC_UH_RLENGTH: a consumed unexpected header takes its
 * rlength of a locally managed entry's space (clamped to the length).
 * Returns 1 when less than min_free is left: the entry unlinks at once. */
static int uh_advance_offset(xp_le_t *le, const xp_uh_t *uh)
{
    unsigned need = PTL_ME_MANAGE_LOCAL | PTL_ME_LOCAL_INC_UH_RLENGTH;
    if ((le->options & need) != need)
        return 0;
    ptl_size_t room = le->region.length - le->local_offset;
    le->local_offset += uh->ev.rlength < room ? uh->ev.rlength : room;
    return le->min_free && le->region.length - le->local_offset < le->min_free;
}

/* Link a registered entry (PT lock held): a priority append first consumes
 * matching unexpected headers; a use-once entry consumed by one is freed
 * here. *handle_out gets the handle in every case. */
static void entry_link_locked(xp_pt_t *pt, xp_le_t *le, ptl_handle_any_t *handle_out)
{
    unsigned options = le->options;
    const xp_match_spec_t *spec = &le->m.spec;

    *handle_out = le->handle;
    if (le->list == PTL_PRIORITY_LIST) {
        xp_match_header_t *h = xp_match_uh_find(&pt->table, spec, NULL, NULL, NULL);
        while (h) {
            xp_match_header_t *next = (options & PTL_ME_USE_ONCE) ? NULL :
                xp_match_uh_find(&pt->table, spec, h, NULL, NULL);
            xp_match_uh_remove(&pt->table, h);
            uh_deliver(pt, le, h->user, 0, PTL_SEARCH_DELETE);
            int full = uh_advance_offset(le, h->user);
            xp_uh_release(pt, h->user, 1);
            h = next;
            if ((options & PTL_ME_USE_ONCE) || full) {
                /* Consumed by the header: never linked, but it was used
                 * once, so it reports its unlink like any use-once entry. */
                if (!(options & PTL_ME_EVENT_UNLINK_DISABLE))
                    le_event(pt, le, PTL_EVENT_AUTO_UNLINK);
                le_free(le);
                return;
            }
        }
    }
    xp_match_append(&pt->table, le->list == PTL_PRIORITY_LIST ? XP_MATCH_PRIORITY : XP_MATCH_OVERFLOW,
                    &le->m);
    xp_direct_sync(le->ni, pt);
    /* Portals 4: PTL_EVENT_LINK once the entry is in its list, unless
     * PTL_LE/ME_EVENT_LINK_DISABLE. */
    if (!(options & PTL_ME_EVENT_LINK_DISABLE))
        le_event(pt, le, PTL_EVENT_LINK);
}

/* Common body of PtlLEAppend and PtlMEAppend (me == NULL for an LE). */
static int entry_append(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le_in,
                        const ptl_me_t *me, ptl_list_t ptl_list, void *user_ptr,
                        ptl_handle_any_t *handle_out)
{
    xp_ni_t *ni;
    xp_pt_t *pt;
    xp_le_t *le;
    xp_status_t st;
    int rc;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !handle_out || ni->matching != (me != NULL))
        return PTL_ARG_INVALID;
    rc = entry_create(ni, pt_index, le_in, me, ptl_list, user_ptr, &le);
    if (rc != PTL_OK)
        return rc;
    pt = xp_pt_get(ni, pt_index);
    if (!pt) {
        entry_destroy(le);
        return PTL_ARG_INVALID;
    }
    if (list_full(pt, ni)) {
        rc = PTL_LIST_TOO_LONG;
        goto err_unlock;
    }
    st = entry_register(le);
    if (st != XP_OK) {
        rc = xp_ptl_rc(st);
        goto err_unlock;
    }
    xp_trig_defer_begin(); /* counting overflow events: see triggered.h */
    entry_link_locked(pt, le, handle_out);
    xp_pt_unlock(pt);
    xp_trig_defer_end();
    return PTL_OK;
err_unlock:
    xp_pt_unlock(pt);
    entry_destroy(le);
    return rc;
}

int PtlLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
                ptl_list_t ptl_list, void *user_ptr, ptl_handle_le_t *le_handle)
{
    if (!le)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return entry_append(ni_handle, pt_index, le, NULL, ptl_list, user_ptr, le_handle);
}

int PtlMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                ptl_list_t ptl_list, void *user_ptr, ptl_handle_me_t *me_handle)
{
    if (!me)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return entry_append(ni_handle, pt_index, NULL, me, ptl_list, user_ptr, me_handle);
}

/* The PT of an entry, locked whether or not it is still allocated: a linked
 * entry keeps its PT allocated (PtlPTFree refuses), a pending one may
 * outlive it. */
static xp_pt_t *entry_pt_lock(const xp_le_t *le)
{
    xp_pt_t *pt = &le->ni->pt[le->pt_index];

    xp_pt_lock(pt);
    return pt;
}

/* Where an entry lives, read while its handle is pinned (entry_unlink). */
static void read_pt(void *obj, void *arg)
{
    const xp_le_t *le = obj;
    *(xp_pt_t **)arg = &le->ni->pt[le->pt_index];
}

static int entry_unlink(ptl_handle_any_t handle, int is_me)
{
    xp_le_t *le;
    xp_pt_t *pt;
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    /* The entry's PT is read with the handle pinned: the handler may
     * auto-unlink and free the entry at any moment before we hold that
     * PT's lock (a use-once ME that a put consumes while the application
     * cancels it), so the entry itself is looked at only under the lock. */
    if (!xp_handle_peek(entry_table(is_me), handle, read_pt, &pt))
        return PTL_ARG_INVALID;
    xp_pt_lock(pt);
    le = xp_handle_lookup(entry_table(is_me), handle);
    if (!le) {
        xp_pt_unlock(pt);
        return PTL_ARG_INVALID;
    }
    if (le->trig_state == XP_LE_PENDING) {
        /* Its triggered append has not fired: cancel it. The memory stays
         * with the pending append, which frees it. */
        le_release_handle(le);
        le->trig_state = XP_LE_CANCELLED;
    } else {
        xp_le_unlink_locked(pt, le, 0);
    }
    xp_pt_unlock(pt);
    return PTL_OK;
}

int PtlLEUnlink(ptl_handle_le_t le_handle)
{
    return entry_unlink(le_handle, 0);
}

int PtlMEUnlink(ptl_handle_me_t me_handle)
{
    return entry_unlink(me_handle, 1);
}

/* ------------------------------------------------ triggered list operations
 *
 * A triggered append builds, checks and registers its entry when it is
 * posted (the caller gets a live handle at once), and links it when the
 * trigger fires; until then the entry is XP_LE_PENDING and in no list. All
 * state changes of a pending entry happen under its PT's lock: the fire
 * (pending_link), an unlink that cancels it (entry_unlink), and the discard
 * of the triggered operation (pending_drop). */

/* Fired: link the entry, or free it if it was cancelled meanwhile. */
static int pending_link(void *arg)
{
    xp_le_t *le = arg;
    xp_pt_t *pt = entry_pt_lock(le);
    ptl_handle_any_t handle;

    if (le->trig_state == XP_LE_CANCELLED) {
        free(le);
    } else if (!pt->allocated || list_full(pt, le->ni)) {
        /* The PT was freed, or its lists filled up, since the post: the
         * append fails and its handle dies. */
        xp_warn("triggered %s append on PT %u dropped when released (%s): handle %#x is no "
                "longer valid", le->is_me ? "ME" : "LE", (unsigned)le->pt_index,
                pt->allocated ? "list full" : "PT not allocated", le->handle);
        le_free(le);
    } else {
        le->trig_state = XP_LE_LIVE;
        entry_link_locked(pt, le, &handle);
    }
    xp_pt_unlock(pt);
    return PTL_OK; /* a failure is reported above */
}

/* Discarded unfired (PtlCTFree, PtlCTCancelTriggered, NI teardown). */
static void pending_drop(void *arg, int release_ni)
{
    xp_le_t *le = arg;
    xp_pt_t *pt;

    if (!release_ni) {
        /* Library teardown: the NI and the handle tables are gone. */
        if (le->trig_state != XP_LE_CANCELLED)
            xp_region_fini(&le->region);
        free(le);
        return;
    }
    pt = entry_pt_lock(le);
    if (le->trig_state == XP_LE_CANCELLED)
        free(le);
    else
        le_free(le);
    xp_pt_unlock(pt);
}

static int trig_entry_append(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                             const ptl_le_t *le_in, const ptl_me_t *me, ptl_list_t ptl_list,
                             void *user_ptr, ptl_handle_any_t *handle_out,
                             ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_pt_t *pt;
    xp_le_t *le;
    xp_status_t st;
    ptl_handle_any_t handle;
    int rc;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !handle_out || (!me && !le_in) || ni->matching != (me != NULL))
        return PTL_ARG_INVALID;
    rc = entry_create(ni, pt_index, le_in, me, ptl_list, user_ptr, &le);
    if (rc != PTL_OK)
        return rc;
    pt = xp_pt_get(ni, pt_index); /* the PT must exist now; checked again at the fire */
    if (!pt) {
        entry_destroy(le);
        return PTL_ARG_INVALID;
    }
    xp_pt_unlock(pt);
    /* Pending before the handle exists, so that an unlink never sees it
     * as linked. */
    le->trig_state = XP_LE_PENDING;
    st = entry_register(le);
    if (st != XP_OK) {
        entry_destroy(le);
        return xp_ptl_rc(st);
    }
    handle = le->handle; /* le may be linked, even consumed, by the post */
    rc = xp_trig_post_call(ni, trig_ct_handle, threshold,
                           &(xp_trig_call_t){.fire = pending_link, .drop = pending_drop, .arg = le});
    if (rc != PTL_OK) {
        le_free(le);
        return rc;
    }
    *handle_out = handle;
    return PTL_OK;
}

/* Fired: the ordinary unlink. The entry may be gone already (a use-once
 * entry consumed, an explicit unlink): nothing to do then. */
static int trig_unlink_fire(void *arg)
{
    ptl_handle_any_t handle = (ptl_handle_any_t)(uintptr_t)arg;
    int rc = entry_unlink(handle, xp_handle_type_of(handle) == XP_HANDLE_ME);

    if (rc == PTL_ARG_INVALID) {
        xp_debug("triggered unlink of entry %#x: already unlinked", handle);
        rc = PTL_OK;
    }
    return rc;
}

static int trig_entry_unlink(ptl_handle_any_t handle, int is_me, ptl_handle_ct_t trig_ct_handle,
                             ptl_size_t threshold)
{
    xp_ni_t *ni;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    if (!xp_handle_lookup(entry_table(is_me), handle))
        return PTL_ARG_INVALID;
    /* The NI from the handle, not from the entry: it may be unlinked (and
     * freed) by now. */
    ni = xp_ni_from_handle(xp_handle_make(XP_HANDLE_NI, xp_handle_ni_of(handle), 0, 0));
    if (!ni)
        return PTL_ARG_INVALID;
    return xp_trig_post_call(ni, trig_ct_handle, threshold,
                             &(xp_trig_call_t){.fire = trig_unlink_fire,
                                               .arg = (void *)(uintptr_t)handle});
}

int PtlTriggeredMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                         ptl_list_t ptl_list, void *user_ptr, ptl_handle_me_t *me_handle,
                         ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    if (!me)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return trig_entry_append(ni_handle, pt_index, NULL, me, ptl_list, user_ptr, me_handle,
                             trig_ct_handle, threshold);
}

int PtlTriggeredLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
                         ptl_list_t ptl_list, void *user_ptr, ptl_handle_le_t *le_handle,
                         ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    if (!le)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return trig_entry_append(ni_handle, pt_index, le, NULL, ptl_list, user_ptr, le_handle,
                             trig_ct_handle, threshold);
}

int PtlTriggeredMEUnlink(ptl_handle_me_t me_handle, ptl_handle_ct_t trig_ct_handle,
                         ptl_size_t threshold)
{
    return trig_entry_unlink(me_handle, 1, trig_ct_handle, threshold);
}

int PtlTriggeredLEUnlink(ptl_handle_le_t le_handle, ptl_handle_ct_t trig_ct_handle,
                         ptl_size_t threshold)
{
    return trig_entry_unlink(le_handle, 0, trig_ct_handle, threshold);
}

static int entry_search(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le_in,
                        const ptl_me_t *me, ptl_search_op_t op, void *user_ptr)
{
    xp_ni_t *ni;
    xp_pt_t *pt;
    xp_le_t tmp;
    int found = 0;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || ni->matching != (me != NULL) || (op != PTL_SEARCH_ONLY && op != PTL_SEARCH_DELETE))
        return PTL_ARG_INVALID;
    memset(&tmp, 0, sizeof(tmp));
    tmp.options = me ? me->options : le_in->options;
    tmp.user_ptr = user_ptr;
    tmp.pt_index = pt_index;
    tmp.list = PTL_PRIORITY_LIST;
    ptl_handle_ct_t ct_handle = me ? me->ct_handle : le_in->ct_handle;
    if (ct_handle != PTL_CT_NONE) {
        tmp.ct = xp_ct_from_handle(ct_handle);
        if (!tmp.ct)
            return PTL_ARG_INVALID;
    }
    xp_match_spec_t spec = entry_spec(ni, me);
    pt = xp_pt_get(ni, pt_index);
    if (!pt)
        return PTL_ARG_INVALID;
    xp_trig_defer_begin(); /* counting overflow events: see triggered.h */
    xp_match_header_t *h = xp_match_uh_find(&pt->table, &spec, NULL, NULL, NULL);
    /* A persistent search entry reports (or deletes) every matching header;
     * a use-once one only the first. */
    while (h) {
        found = 1;
        xp_match_header_t *next = (tmp.options & PTL_ME_USE_ONCE) ? NULL :
            xp_match_uh_find(&pt->table, &spec, h, NULL, NULL);
        if (op == PTL_SEARCH_ONLY) {
            uh_deliver(pt, &tmp, h->user, 1, op);
            h = next;
            continue;
        }
        xp_match_uh_remove(&pt->table, h);
        uh_deliver(pt, &tmp, h->user, 1, op);
        xp_uh_release(pt, h->user, 1);
        h = next;
    }
    /* A search with a counter counts each header found (above, success)
     * and then its end as one failure, so that PtlCTWait(ct, n + 1) waits
     * for a search that found n; a use-once search that found its header
     * has no end to count. This is what the reference implementation's
     * test suite expects of searches with a counter (its programs
     * test_search_only_counter_*, test_search_delete_counter_*: success 5,
     * failure 1 after 5 headers; success 1, failure 0 use-once; success 0,
     * failure 1 when nothing matches), whatever the entry's CT options. */
    if (tmp.ct && !(found && (tmp.options & PTL_ME_USE_ONCE)))
        xp_ct_add(tmp.ct, 0, 1);
    if (!found) {
        ptl_event_t ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = PTL_EVENT_SEARCH;
        ev.user_ptr = user_ptr;
        ev.pt_index = pt_index;
        ev.ni_fail_type = PTL_NI_NO_MATCH;
        xp_pt_post_event(pt, &ev);
    }
    xp_pt_unlock(pt);
    xp_trig_defer_end();
    return PTL_OK;
}

int PtlLESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
                ptl_search_op_t ptl_search_op, void *user_ptr)
{
    if (!le)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return entry_search(ni_handle, pt_index, le, NULL, ptl_search_op, user_ptr);
}

int PtlMESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                ptl_search_op_t ptl_search_op, void *user_ptr)
{
    if (!me)
        return xp_ptl_initialized() ? PTL_ARG_INVALID : PTL_NO_INIT;
    return entry_search(ni_handle, pt_index, NULL, me, ptl_search_op, user_ptr);
}

/* PtlNIFini: unlink every entry and forget every unexpected header. */
void xp_pt_fini_all(xp_ni_t *ni)
{
    for (int i = 0; i <= ni->limits.max_pt_index; i++) {
        xp_pt_t *pt = &ni->pt[i];
        xp_pt_lock(pt);
        if (pt->table_ready) {
            for (int l = 0; l < XP_MATCH_NLISTS; l++) {
                xp_match_entry_t *e;
                while ((e = xp_match_first(&pt->table, (xp_match_list_id_t)l)) != NULL)
                    xp_le_unlink_locked(pt, e->user, 0);
            }
            uh_free_all(pt);
            xp_direct_sync(ni, pt); /* (closed by the last unlink already) */
            xp_pool_destroy(&pt->uh_pool);
            xp_match_table_fini(&pt->table);
            pt->table_ready = 0;
        }
        pt->allocated = 0;
        pt->enabled = 0; /* the handler's one-pass test (target.c) */
        xp_pt_unlock(pt);
    }
}
