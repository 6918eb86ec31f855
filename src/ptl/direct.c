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
#include "util/copy.h"
#include "util/log.h"

_Static_assert(sizeof(xp_direct_desc_t) == 64, "one descriptor per cache line");
/* The meta bytes: the descriptors, then one busy word per (local process,
 * thread index), each on its own line. */
#define DESC_BYTES ((size_t)XP_PTL_NI_SLOTS * XP_DIRECT_PTS * sizeof(xp_direct_desc_t))
#define BUSY_WORDS ((XP_SHMHEAP_META - DESC_BYTES) / 64)
_Static_assert(DESC_BYTES < XP_SHMHEAP_META, "the descriptors fit the heap's meta bytes");
_Static_assert(sizeof(((xp_ptl_state_t *)0)->direct_thread) / sizeof(uintptr_t) ==
                   XP_DIRECT_THREADS,
               "one owner per busy word index");

/* One thread's line in a target's meta bytes: its busy word, and the
 * opening it registered for (written and read by that thread only). */
typedef struct busy_line {
    uint64_t busy;    /* a descriptor's id while accessing it, else 0 */
    uint64_t reg_id;  /* registered for descriptor reg_id ... */
    uint64_t reg_gen; /* ... in its opening reg_gen */
} busy_line_t;

/* Busy line i of the heap whose meta bytes start at meta. */
static inline busy_line_t *busy_line(unsigned char *meta, size_t i)
{
    return (busy_line_t *)(void *)(meta + DESC_BYTES + i * 64);
}

/* What a busy word holds while its thread accesses descriptor (slot, pt). */
static inline uint64_t desc_id(int slot, ptl_pt_index_t pt_index)
{
    return ((uint64_t)slot << 8 | pt_index) + 1;
}

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

/* Wait until *word no longer says an initiator is inside an access to the
 * descriptor: for a busy word (id != 0) until it holds something else, for
 * `inflight` (id 0) until it is 0. The wait ends early only when, after
 * CLOSE_PATIENCE_NS, a peer is found dead: a dead process writes nothing,
 * and one that died in its access would hold the word forever. */
static void close_wait(const uint64_t *word, uint64_t id, ptl_pt_index_t pt_index)
{
    unsigned spins = 0;
    uint64_t since = 0;
    for (;;) {
        uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (id ? v != id : v == 0)
            return;
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

/* Close d (descriptor id on the heap of window w; asym: it was opened with
 * XP_DIRECT_ASYM): from the return on, no initiator touches what it
 * described. */
static void desc_close(const xp_tl_window_t *w, xp_direct_desc_t *d, uint64_t id,
                       ptl_pt_index_t pt_index, unsigned asym)
{
    __atomic_store_n(&d->open, 0, __ATOMIC_RELAXED);
    xp_fence(); /* the store before the look at inflight (the handshake) */
    close_wait(&d->inflight, 0, pt_index);
    /* Registrations happen inside a locked hold: all are visible now, and
     * no initiator registers for this opening any more. */
    if (asym && __atomic_load_n(&d->asym_used, __ATOMIC_ACQUIRE)) {
        xp_tl_global_fence(); /* the heavy side of the busy words' handshake */
        size_t n = (size_t)w->nlocal * XP_DIRECT_THREADS;
        for (size_t i = 0; i < n && i < BUSY_WORDS; i++)
            close_wait(&busy_line(w->meta, i)->busy, id, pt_index);
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
    if (f && w->asym)
        f |= XP_DIRECT_ASYM;
    if (f == pt->direct_flags && (!f || le->handle == pt->direct_handle))
        return;
    ptl_pt_index_t pt_index = (ptl_pt_index_t)(pt - ni->pt);
    xp_direct_desc_t *d = xp_direct_desc(w->meta, ni->slot, pt_index);
    if (pt->direct_flags)
        desc_close(w, d, desc_id(ni->slot, pt_index), pt_index,
                   pt->direct_flags & XP_DIRECT_ASYM);
    pt->direct_flags = f;
    if (!f)
        return;
    pt->direct_handle = le->handle;
    __atomic_store_n(&d->gen, __atomic_load_n(&d->gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&d->asym_used, 0, __ATOMIC_RELAXED);
    d->uid = le->uid;
    d->off = off;
    d->len = le->region.length;
    __atomic_store_n(&d->open, f, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- initiator */

/* An initiator's hold on a descriptor, from direct_enter to direct_leave:
 * its busy word (the asymmetric form) or its `inflight` count. */
typedef struct hold {
    xp_direct_desc_t *d;
    uint64_t *busy; /* NULL: inflight */
} hold_t;

/* The busy line of the calling thread in the heap behind window w, NULL
 * when it has none: the window's process takes no membarriers, or its
 * node or this process's threads outnumber the lines. A thread claims an
 * index once (a thread id comes back only after its thread has exited, so
 * an index is never in use by two). */
static busy_line_t *thread_line(const xp_tl_window_t *w)
{
    xp_ptl_state_t *st = xp_ptl_state();
    uintptr_t me = xp_thread_id();
    size_t base = (size_t)w->local_index * XP_DIRECT_THREADS;
    if (!w->asym || base + XP_DIRECT_THREADS > BUSY_WORDS)
        return NULL;
    for (size_t i = 0; i < XP_DIRECT_THREADS; i++) {
        uintptr_t owner = __atomic_load_n(&st->direct_thread[i], __ATOMIC_RELAXED);
        if (owner == me ||
            (owner == 0 && __atomic_compare_exchange_n(&st->direct_thread[i], &owner, me, 0,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
            return busy_line(w->meta, base + i);
    }
    return NULL;
}

/* The asymmetric form, for a thread registered for d's current opening:
 * d's flags with the hold taken (h->busy), or 0 with nothing held. */
static inline unsigned hold_busy(hold_t *h, busy_line_t *b, xp_direct_desc_t *d, uint64_t id)
{
    uint64_t gen = __atomic_load_n(&d->gen, __ATOMIC_RELAXED);
    if (b->reg_id != id || b->reg_gen != gen)
        return 0;
    __atomic_store_n(&b->busy, id, __ATOMIC_RELAXED);
    /* No fence: the closer's membarrier is the other half. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    unsigned f = __atomic_load_n(&d->open, __ATOMIC_ACQUIRE);
    /* (gen after open: an opening seen open is the registered one.) */
    if (f && __atomic_load_n(&d->gen, __ATOMIC_RELAXED) == gen) {
        h->busy = &b->busy;
        return f;
    }
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
    return 0;
}

/* Announce an access to d (id): the light side of the close's handshake.
 * Returns d's flags as read after it (with the hold taken, even when they
 * say closed: direct_leave undoes it). */
static inline unsigned hold_take(hold_t *h, const xp_tl_window_t *w, xp_direct_desc_t *d,
                                 uint64_t id)
{
    busy_line_t *b = (__atomic_load_n(&d->open, __ATOMIC_RELAXED) & XP_DIRECT_ASYM)
                         ? thread_line(w)
                         : NULL;
    unsigned f;
    h->d = d;
    h->busy = NULL;
    if (b && (f = hold_busy(h, b, d, id)) != 0)
        return f;
    __atomic_fetch_add(&d->inflight, 1, __ATOMIC_SEQ_CST);
    f = __atomic_load_n(&d->open, __ATOMIC_ACQUIRE);
    if (b && (f & XP_DIRECT_ASYM)) {
        /* Register for this opening (stable while we hold it), so that
         * its close knows to wait for busy words. */
        if (!__atomic_load_n(&d->asym_used, __ATOMIC_RELAXED))
            __atomic_store_n(&d->asym_used, 1, __ATOMIC_RELAXED);
        b->reg_id = id;
        b->reg_gen = __atomic_load_n(&d->gen, __ATOMIC_RELAXED);
    }
    return f;
}

/* The access is over (its stores before this one). */
static inline void direct_leave(const hold_t *h)
{
    if (h->busy)
        __atomic_store_n(h->busy, 0, __ATOMIC_RELEASE);
    else
        __atomic_fetch_sub(&h->d->inflight, 1, __ATOMIC_RELEASE);
}

/* Enter the descriptor of (slot, pt_index) behind route r for len bytes at
 * remote_offset of its entry, which must have the `need` flags: our address
 * of them, with the descriptor held (*h: direct_leave), its flags in
 * *flags; NULL with nothing held when the ring must carry the message. */
static unsigned char *direct_enter(const xp_tl_route_t *r, int rank, int slot,
                                   ptl_pt_index_t pt_index, uint32_t uid,
                                   ptl_size_t remote_offset, size_t len, unsigned need,
                                   hold_t *h, unsigned *flags)
{
    const xp_tl_window_t *w = r->window;
    if (!w || pt_index >= XP_DIRECT_PTS)
        return NULL;
    xp_direct_desc_t *d = xp_direct_desc(w->meta, slot, pt_index);
    /* (The caller looked at `open` already: xp_direct_maybe.) */
    if (!r->quiet(r->tl, rank))
        return NULL;
    unsigned f = hold_take(h, w, d, desc_id(slot, pt_index));
    need |= XP_DIRECT_OPEN;
    if ((f & need) == need && (d->uid == PTL_UID_ANY || d->uid == uid)) {
        uint64_t off = d->off, elen = d->len;
        /* The target's word is trusted no more than its packets are. */
        if (off <= w->size && elen <= w->size - off && remote_offset <= elen &&
            len <= elen - remote_offset) {
            *flags = f;
            return w->base + off + remote_offset;
        }
    }
    direct_leave(h);
    return NULL;
}

int xp_direct_atomic(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                     uint32_t uid, ptl_size_t remote_offset, ptl_op_t op, ptl_datatype_t dt,
                     const void *data, const void *operand, size_t len, int fetch,
                     void *fetch_out, unsigned *flags)
{
    size_t esize = xp_atomic_type_size(dt);
    hold_t h;
    int done = 0;
    if (len == 0 || esize == 0 || esize > 8)
        return 0;
    unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                     XP_DIRECT_PUT | (fetch ? XP_DIRECT_GET : 0), &h, flags);
    if (!at)
        return 0;
    /* Misaligned elements need the target's lock: the ring. */
    if ((uintptr_t)at % esize == 0)
        done = xp_atomic_apply_word(op, dt, at, data, len, fetch_out) ||
               xp_atomic_apply(op, dt, at, data, operand, len, fetch_out) == XP_OK;
    direct_leave(&h);
    return done;
}

int xp_direct_put(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const void *data, size_t len,
                  unsigned *flags)
{
    hold_t h;
    unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                     XP_DIRECT_PUT, &h, flags);
    if (!at)
        return 0;
    /* (A small put is a flag or a word more often than not: no library
     * call, and an aligned 8-byte one is one store, as the handler's.) */
    if (len <= 64)
        xp_tl_copy_small(at, data, len);
    else
        xp_copy(at, data, len);
    direct_leave(&h);
    return 1;
}

int xp_direct_get(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const struct xp_region *dst,
                  ptl_size_t dst_off, size_t len)
{
    hold_t h;
    unsigned flags;
    const unsigned char *at = direct_enter(r, rank, slot, pt_index, uid, remote_offset, len,
                                           XP_DIRECT_GET, &h, &flags);
    if (!at)
        return 0;
    if (len <= 64 && !dst->iov)
        xp_tl_copy_small((char *)dst->start + dst_off, at, len);
    else
        xp_region_write(dst, dst_off, at, len);
    direct_leave(&h);
    return 1;
}
