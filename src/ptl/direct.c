/* Atomics, puts and gets straight to a peer's shared heap (see direct.h). */
#include <sched.h>
#include <string.h>

#include "ptl/atomic_ops.h"
#include "ptl/direct.h"
#include "ptl/engine.h"
#include "ptl/md.h"
#include "ptl/pt.h"
#include "transport/inplace.h" /* xp_tl_copy_small */
#include "transport/shmheap.h"
#include "util/atomic.h"
#include "util/clock.h"
#include "util/log.h"

_Static_assert(sizeof(xp_direct_desc_t) == 64, "one descriptor per cache line");
_Static_assert((size_t)XP_PTL_NI_SLOTS * XP_DIRECT_PTS * sizeof(xp_direct_desc_t) <=
                   XP_SHMHEAP_META,
               "the descriptors fit the heap's meta bytes");

/* ---------------------------------------------------------------- target */

/* The XP_DIRECT_* flags of the PT's priority head if it qualifies (direct.h),
 * its heap offset in *off; 0 if it does not. */
static unsigned head_flags(const xp_ni_t *ni, xp_pt_t *pt, const xp_tl_window_t *w, uint64_t *off,
                           xp_le_t **head)
{
    *head = NULL;
    if (ni->matching || !pt->enabled || !pt->table_ready || (pt->options & PTL_PT_FLOWCTRL))
        return 0;
    xp_match_entry_t *e = xp_match_first(&pt->table, XP_MATCH_PRIORITY);
    if (!e)
        return 0;
    xp_le_t *le = e->user;
    unsigned f = le->fast;
    uintptr_t start = (uintptr_t)le->region.start;
    /* (An entry in a list is live: a triggered append links it only when
     * it fires.) */
    if (!(f & (XP_LE_FAST_PUT | XP_LE_FAST_GET)) || (f & XP_LE_FAST_CT) ||
        (pt->eq && !(f & XP_LE_FAST_QUIET)) || le->region.length == 0 ||
        !xp_shmheap_in(w->remote, w->size, start, le->region.length))
        return 0;
    *off = start - w->remote;
    *head = le;
    return XP_DIRECT_OPEN | ((f & XP_LE_FAST_PUT) ? XP_DIRECT_PUT : 0) |
           ((f & XP_LE_FAST_GET) ? XP_DIRECT_GET : 0) |
           ((f & XP_LE_FAST_NOACK) ? XP_DIRECT_NOACK : 0);
}

/* How long a close waits for initiators in flight before it asks whether
 * one of them died inside its access (then its count never drops). */
#define CLOSE_PATIENCE_NS 1000000000ull

/* Close d (PT pt_index): from the return on, no initiator touches what it
 * described. The wait ends early only when, after CLOSE_PATIENCE_NS, a peer
 * is found dead: a dead process writes nothing, and one that died in its
 * access would hold the count forever. */
static void desc_close(xp_direct_desc_t *d, ptl_pt_index_t pt_index)
{
    unsigned spins = 0;
    uint64_t since = 0;
    __atomic_store_n(&d->open, 0, __ATOMIC_RELAXED);
    xp_fence(); /* the store before the look at inflight (the handshake) */
    while (__atomic_load_n(&d->inflight, __ATOMIC_ACQUIRE) != 0) {
        /* An initiator is between two instructions; one that lost its CPU
         * needs ours (oversubscribed nodes). */
        if (++spins % 64 != 0) {
            xp_cpu_relax();
            continue;
        }
        sched_yield();
        uint64_t now = xp_time_ns();
        if (!since) {
            since = now;
        } else if (now - since > CLOSE_PATIENCE_NS) {
            if (xp_tl_peers_lost()) {
                xp_warn("portal index %u: a peer died inside a direct access to it; "
                        "not waiting for it any longer", (unsigned)pt_index);
                return;
            }
            since = now;
        }
    }
}

void xp_direct_sync(xp_ni_t *ni, xp_pt_t *pt)
{
    const xp_ptl_state_t *st = xp_ptl_state();
    const xp_tl_window_t *w;
    uint64_t off = 0;
    xp_le_t *le = NULL;
    unsigned f;
    /* (Matching NIs never publish: their appends and unlinks stop here.) */
    if (!st->direct || ni->matching || !(w = st->own_window))
        return;
    f = head_flags(ni, pt, w, &off, &le);
    if (f == pt->direct_flags && (!f || le->handle == pt->direct_handle))
        return;
    xp_direct_desc_t *d = xp_direct_desc(w->meta, ni->slot, (ptl_pt_index_t)(pt - ni->pt));
    if (pt->direct_flags)
        desc_close(d, (ptl_pt_index_t)(pt - ni->pt));
    pt->direct_flags = f;
    if (!f)
        return;
    pt->direct_handle = le->handle;
    d->uid = le->uid;
    d->off = off;
    d->len = le->region.length;
    __atomic_store_n(&d->open, f, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- initiator */

/* Enter the descriptor of (slot, pt_index) behind route r for len bytes at
 * remote_offset of its entry, which must have the `need` flags: our address
 * of them, with the descriptor held (*dp: direct_leave), its flags in
 * *flags; NULL with nothing held when the ring must carry the message. */
static unsigned char *direct_enter(const xp_tl_route_t *r, int rank, int slot,
                                   ptl_pt_index_t pt_index, uint32_t uid,
                                   ptl_size_t remote_offset, size_t len, unsigned need,
                                   xp_direct_desc_t **dp, unsigned *flags)
{
    const xp_tl_window_t *w = r->window;
    if (!w || pt_index >= XP_DIRECT_PTS)
        return NULL;
    xp_direct_desc_t *d = xp_direct_desc(w->meta, slot, pt_index);
    /* (The caller looked at `open` already: xp_direct_maybe.) */
    if (!r->quiet(r->tl, rank))
        return NULL;
    __atomic_fetch_add(&d->inflight, 1, __ATOMIC_SEQ_CST);
    unsigned f = __atomic_load_n(&d->open, __ATOMIC_ACQUIRE);
    need |= XP_DIRECT_OPEN;
    if ((f & need) == need && (d->uid == PTL_UID_ANY || d->uid == uid)) {
        uint64_t off = d->off, elen = d->len;
        /* The target's word is trusted no more than its packets are. */
        if (off <= w->size && elen <= w->size - off && remote_offset <= elen &&
            len <= elen - remote_offset) {
            *dp = d;
            *flags = f;
            return w->base + off + remote_offset;
        }
    }
    __atomic_fetch_sub(&d->inflight, 1, __ATOMIC_RELEASE);
    return NULL;
}

static inline void direct_leave(xp_direct_desc_t *d)
{
    __atomic_fetch_sub(&d->inflight, 1, __ATOMIC_RELEASE);
}

int xp_direct_atomic(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                     uint32_t uid, ptl_size_t remote_offset, ptl_op_t op, ptl_datatype_t dt,
                     const void *data, const void *operand, size_t len, int fetch,
                     void *fetch_out, unsigned *flags)
{
    size_t esize = xp_atomic_type_size(dt);
    xp_direct_desc_t *d;
    int done = 0;
    if (len == 0 || esize == 0 || esize > 8)
        return 0;
    unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                     XP_DIRECT_PUT | (fetch ? XP_DIRECT_GET : 0), &d, flags);
    if (!at)
        return 0;
    /* Misaligned elements need the target's lock: the ring. */
    if ((uintptr_t)at % esize == 0)
        done = xp_atomic_apply_word(op, dt, at, data, len, fetch_out) ||
               xp_atomic_apply(op, dt, at, data, operand, len, fetch_out) == XP_OK;
    direct_leave(d);
    return done;
}

int xp_direct_put(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const void *data, size_t len,
                  unsigned *flags)
{
    xp_direct_desc_t *d;
    unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                     XP_DIRECT_PUT, &d, flags);
    if (!at)
        return 0;
    /* (A small put is a flag or a word more often than not: no library
     * call, and an aligned 8-byte one is one store, as the handler's.) */
    if (len <= 64)
        xp_tl_copy_small(at, data, len);
    else
        memcpy(at, data, len);
    direct_leave(d);
    return 1;
}

int xp_direct_get(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const struct xp_region *dst,
                  ptl_size_t dst_off, size_t len)
{
    xp_direct_desc_t *d;
    unsigned flags;
    const unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                           XP_DIRECT_GET, &d, &flags);
    if (!at)
        return 0;
    if (len <= 64 && !dst->iov)
        xp_tl_copy_small((char *)dst->start + dst_off, at, len);
    else
        xp_region_write(dst, dst_off, at, len);
    direct_leave(d);
    return 1;
}
