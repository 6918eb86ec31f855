/* ptl/target.c - the target side: every request packet is matched, checked,
 * delivered, counted and answered here, inside the packet handler. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ptl/atomic_ops.h"
#include "ptl/ct.h"
#include "ptl/engine.h"
#include "ptl/eq.h"
#include "ptl/progress.h"
#include "ptl/pt.h"
#include "ptl/triggered.h" /* xp_trig_defer_* */
#include "ptl/wire.h"
#include "portals4_xtq.h" /* PTL_NI_XTQ_* failure kinds */
#include "transport/inplace.h"
#include "transport/transport.h"
#include "util/copy.h"
#include "util/log.h"

#define MAX_IOV 64

/* Everything the handler learns about one request. */
typedef struct req {
    int src;
    const xp_pkt_t *h;
    const unsigned char *payload;
    size_t len;
    xp_ni_t *ni;
    xp_pt_t *pt;
    xp_le_t *le;
    ptl_list_t list;
    ptl_ni_fail_t fail;
    ptl_size_t offset;   /* offset used in the entry */
    ptl_size_t mlength;
    xp_uh_t *uh;         /* reserved unexpected header (overflow list) */
} req_t;

static ptl_event_kind_t event_kind(uint8_t type)
{
    switch (type) {
    case XP_PKT_GET: return PTL_EVENT_GET;
    case XP_PKT_ATOMIC: return PTL_EVENT_ATOMIC;
    case XP_PKT_FETCH:
    case XP_PKT_SWAP: return PTL_EVENT_FETCH_ATOMIC;
    default: return PTL_EVENT_PUT;
    }
}

static int is_fetching(uint8_t type)
{
    return type == XP_PKT_GET || type == XP_PKT_FETCH || type == XP_PKT_SWAP;
}

static void send_answer(req_t *r, const void *data, size_t len, unsigned reply_flags);


/* Answer the initiator (ACK for put/atomic, REPLY for the fetching kinds).
 * Inline: the common put that wants no answer at all leaves here, before
 * the header is copied (an 80-byte copy per put in a ping-pong). */
static inline void answer(req_t *r, const void *data, size_t len, unsigned reply_flags)
{
    const xp_pkt_t *h = r->h;
    /* A bounce put is answered (once: every put is), whatever became of
     * it: its block goes back to the initiator. */
    if (__builtin_expect(h->flags & XP_PKT_F_BOUNCE, 0))
        xp_eng_bounce_give_back(r->src, r->payload, r->len);
    if (h->ack_req == PTL_NO_ACK_REQ && !(h->flags & XP_PKT_F_RMA) && !is_fetching(h->type))
        return;
    send_answer(r, data, len, reply_flags);
}

/* reply_flags: a REPLY's XP_PKT_F_RMA (its data is in the initiator's
 * MD already) or XP_PKT_F_RMA | XP_PKT_F_BOUNCE (data is the xp_seg_t of a
 * bounce block of ours, for the initiator to copy out and give back). */
static void send_answer(req_t *r, const void *data, size_t len, unsigned reply_flags)
{
    const xp_pkt_t *h = r->h;
    /* (A bounce put's initiator posted its SEND event already.) */
    int rma_put = (h->flags & (XP_PKT_F_RMA | XP_PKT_F_BOUNCE)) == XP_PKT_F_RMA &&
                  !is_fetching(h->type);
    xp_pkt_t a = *h;
    a.flags = 0;
    a.nseg = 0;
    a.fail = r->fail;
    a.mlength = r->fail == PTL_NI_OK ? r->mlength : 0;
    a.remote_offset = r->fail == PTL_NI_OK ? r->offset : h->remote_offset;
    a.ptl_list = (uint8_t)r->list;
    if (is_fetching(h->type)) {
        a.type = XP_PKT_REPLY;
        a.flags |= (uint8_t)reply_flags;
    } else {
        int acked = h->ack_req != PTL_NO_ACK_REQ;
        /* ACK_DISABLE suppresses acknowledgements of accepted messages. */
        if (r->le && (r->le->options & PTL_ME_ACK_DISABLE) && r->fail == PTL_NI_OK)
            acked = 0;
        if (!acked && !rma_put && h->ack_req == PTL_NO_ACK_REQ)
            return;
        a.type = XP_PKT_ACK;
        if (!acked)
            a.flags |= XP_PKT_F_NOACK;
        if (rma_put)
            a.flags |= XP_PKT_F_SENDEV;
        data = NULL;
        len = 0;
        /* Plain successful counting ACKs: gathered per MD (fewer packets
         * and fewer cross-core stores in a stream of puts). */
        if (acked && !rma_put && h->ack_req == PTL_CT_ACK_REQ && r->fail == PTL_NI_OK) {
            xp_eng_ack_many(r->src, &a);
            return;
        }
    }
    xp_status_t rc = xp_eng_send(r->src, &a, data, len, NULL, 0, 1);
    if (rc != XP_OK)
        xp_warn("answer to rank %d failed: %s", r->src, xp_status_string(rc));
    if (rc != XP_OK && (reply_flags & XP_PKT_F_BOUNCE)) { /* nobody will read it */
        xp_seg_t s;
        memcpy(&s, data, sizeof(s));
        xp_tl_bounce_cancel(r->src, (void *)(uintptr_t)s.addr);
    }
}

static void fill_event(req_t *r, ptl_event_t *ev, ptl_event_kind_t type)
{
    const xp_pkt_t *h = r->h;
    memset(ev, 0, sizeof(*ev));
    ev->type = type;
    ev->start = r->le ? xp_region_addr(&r->le->region, r->offset) : NULL;
    ev->user_ptr = r->le ? r->le->user_ptr : NULL;
    ev->hdr_data = h->hdr_data;
    ev->match_bits = h->match_bits;
    ev->rlength = h->rlength;
    ev->mlength = r->mlength;
    ev->remote_offset = r->offset;
    ev->uid = h->uid;
    ev->initiator = xp_ni_process_of(r->ni, r->src);
    ev->pt_index = h->pt_index;
    ev->ni_fail_type = r->fail;
    ev->atomic_operation = (ptl_op_t)h->atomic_op;
    ev->atomic_type = (ptl_datatype_t)h->atomic_type;
    ev->ptl_list = r->list;
}

/* Full event and counting on the entry after delivery. */
static void target_events(req_t *r)
{
    xp_le_t *le = r->le;
    ptl_event_t ev;
    int ok = r->fail == PTL_NI_OK;
    int post = r->pt->eq && !(le->options & PTL_ME_EVENT_COMM_DISABLE) &&
               !(ok && (le->options & PTL_ME_EVENT_SUCCESS_DISABLE));
    /* Building the event is most of this function's cost: only when used. */
    if (post || r->uh)
        fill_event(r, &ev, event_kind(r->h->type));
    /* A message landing in an entry is a communication event whichever list
     * the entry is on; EVENT_CT_OVERFLOW counts the *_OVERFLOW events that a
     * later priority append generates (pt.c). The counter goes first, as at
     * the initiator: whoever takes the event may read or reset it. */
    if (le->ct && (le->options & PTL_ME_EVENT_CT_COMM)) {
        if (ok)
            xp_ct_add(le->ct, (le->options & PTL_ME_EVENT_CT_BYTES) ? r->mlength : 1, 0);
        else
            xp_ct_add(le->ct, 0, 1); /* xp_ct_add wakes the waiters */
    }
    if (post)
        xp_pt_post_event(r->pt, &ev);
    /* Remember messages that landed in the overflow list for a later append. */
    if (r->uh) {
        r->uh->ev = ev;
        r->uh->mh.user = r->uh;
        r->uh->owner = le;
        le->uh_refs++;
        xp_match_uh_insert(&r->pt->table, &r->uh->mh, xp_pt_source_of(r->ni, r->src),
                           r->h->match_bits);
        r->uh = NULL;
    }
}

/* Reserve what the message needs before anything is delivered: its
 * unexpected header (overflow list) and, on a flow-controlled PT, room in
 * the EQ for its events plus the PT_DISABLED event. 0 if the target lacks
 * the resources: the caller then disables the PT (PTL_PT_FLOWCTRL) or
 * drops the message; nothing is ever half delivered or silently lost. */
static int reserve_resources(req_t *r)
{
    const xp_le_t *le = r->le;
    if (r->list == PTL_OVERFLOW_LIST && !(le->options & PTL_ME_UNEXPECTED_HDR_DISABLE)) {
        if (xp_match_uh_count(&r->pt->table) >= (size_t)r->ni->limits.max_unexpected_headers)
            return 0;
        r->uh = xp_pool_get(&r->pt->uh_pool);
        if (!r->uh)
            return 0;
    }
    if ((r->pt->options & PTL_PT_FLOWCTRL) && r->pt->eq) {
        unsigned int n = 1; /* the PT_DISABLED event that a later refusal needs */
        if (!(le->options & PTL_ME_EVENT_COMM_DISABLE))
            n++;
        if (le->options & (PTL_ME_USE_ONCE | PTL_ME_MANAGE_LOCAL))
            n += 2; /* AUTO_UNLINK, AUTO_FREE */
        if (!xp_eq_has_space_n(r->pt->eq, n)) {
            xp_pool_put(&r->pt->uh_pool, r->uh);
            r->uh = NULL;
            return 0;
        }
    }
    return 1;
}

/* Which operations the entry must allow. */
static int op_allowed(const xp_le_t *le, uint8_t type)
{
    switch (type) {
    case XP_PKT_PUT:
    case XP_PKT_ATOMIC: return !!(le->options & PTL_ME_OP_PUT);
    case XP_PKT_GET: return !!(le->options & PTL_ME_OP_GET);
    default: return (le->options & (PTL_ME_OP_PUT | PTL_ME_OP_GET)) == (PTL_ME_OP_PUT | PTL_ME_OP_GET);
    }
}

typedef struct accept_ctx {
    const xp_pkt_t *h;
} accept_ctx_t;

/* NO_TRUNCATE entries only take messages that fit. */
static int accept_entry(xp_match_entry_t *e, void *arg)
{
    const xp_le_t *le = e->user;
    const xp_pkt_t *h = ((accept_ctx_t *)arg)->h;
    if (!(le->options & PTL_ME_NO_TRUNCATE))
        return 1;
    ptl_size_t off = (le->options & PTL_ME_MANAGE_LOCAL) ? le->local_offset : h->remote_offset;
    return xp_region_holds(&le->region, off, h->rlength);
}

/* Match: priority list first, then overflow. Sets r->le and r->list. */
static void match(req_t *r)
{
    /* A non-matching NI holds only LEs, which match every header and have
     * no NO_TRUNCATE option: the first priority entry wins (the check of
     * the option keeps this true should LEs ever get it). No source id, no
     * hashing. */
    if (!r->ni->matching) {
        xp_match_entry_t *first = xp_match_first(&r->pt->table, XP_MATCH_PRIORITY);
        if (first && !(((const xp_le_t *)first->user)->options & PTL_ME_NO_TRUNCATE)) {
            r->le = first->user;
            r->list = PTL_PRIORITY_LIST;
            return;
        }
    }
    accept_ctx_t ctx = { r->h };
    /* A logical NI whose map is still the identity (immutable, ni.h) names
     * the sender by its job rank: no map walk. */
    uint64_t src = !r->ni->physical && __atomic_load_n(&r->ni->map, __ATOMIC_ACQUIRE) ==
                                           r->ni->map_identity
                       ? (uint64_t)r->src
                       : xp_pt_source_of(r->ni, r->src);
    xp_match_entry_t *e = xp_match_find(&r->pt->table, XP_MATCH_PRIORITY, src, r->h->match_bits,
                                        accept_entry, &ctx);
    r->list = PTL_PRIORITY_LIST;
    if (!e) {
        e = xp_match_find(&r->pt->table, XP_MATCH_OVERFLOW, src, r->h->match_bits, accept_entry, &ctx);
        r->list = PTL_OVERFLOW_LIST;
    }
    r->le = e ? e->user : NULL;
}

/* Move the data of a put (inline copy or RMA read from the initiator). */
/* The initiator's segments (carried in the payload of an RMA request), cut
 * to the matched length, as an iovec of its address space. */
static int initiator_iov(const req_t *r, struct iovec *remote)
{
    const xp_seg_t *segs = (const xp_seg_t *)r->payload;
    int nr = 0;
    ptl_size_t left = r->mlength;
    for (uint32_t i = 0; i < r->h->nseg && left > 0 && nr < MAX_IOV; i++) {
        size_t l = segs[i].len < left ? segs[i].len : left;
        remote[nr].iov_base = (void *)(uintptr_t)segs[i].addr;
        remote[nr].iov_len = l;
        nr++;
        left -= l;
    }
    return nr;
}

/* Small inline payloads into a contiguous entry: two overlapping word
 * copies instead of a call to memcpy (most puts of a latency-bound
 * program are a few bytes). */
static inline __attribute__((always_inline)) void copy_small(char *dst, const unsigned char *src,
                                                             size_t len)
{
    if (len >= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + len - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + len - 8, &b, 8);
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + len - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + len - 4, &b, 4);
    } else {
        for (size_t i = 0; i < len; i++)
            dst[i] = (char)src[i];
    }
}

/* A put whose data comes by single-copy RMA (its own function: the iovec
 * arrays are 2 KiB of stack that the inline case does not need). */
static void __attribute__((noinline)) deliver_put_rma(req_t *r)
{
    struct iovec local[MAX_IOV], remote[MAX_IOV];
    int nl = xp_region_iov(&r->le->region, r->offset, r->mlength, local, MAX_IOV);
    int nr = initiator_iov(r, remote);
    /* A bounce block may still be staged by its writer: copy behind it. */
    xp_status_t st = nl < 0 ? XP_ERR_INVALID
                     : (r->h->flags & XP_PKT_F_BOUNCE) && nr == 1
                         ? xp_tl_bounce_read(r->src, local, nl, (uintptr_t)remote[0].iov_base,
                                             remote[0].iov_len)
                         : xp_tl_readv(r->src, local, nl, remote, nr);
    if (st != XP_OK) {
        xp_error("put from rank %d: single-copy read of %zu bytes failed", r->src,
                 (size_t)r->mlength);
        r->fail = PTL_NI_SEGV;
    }
}

static inline void deliver_put(req_t *r)
{
    if (r->mlength == 0)
        return;
    if (r->h->flags & XP_PKT_F_RMA)
        deliver_put_rma(r);
    else if (r->mlength <= 16 && !r->le->region.iov)
        copy_small(r->le->region.start + r->offset, r->payload, (size_t)r->mlength);
    else
        xp_region_write(&r->le->region, r->offset, r->payload, r->mlength);
}

/* A large get's data staged in a bounce block of ours (xp_tl_bounce_alloc)
 * that the initiator copies out when the REPLY comes, instead of a write
 * into its memory that pins its pages. 0: no block (write it then; also
 * when that write is a memcpy already: the initiator's buffer lies in its
 * shared heap). */
static int get_bounce(req_t *r, const struct iovec *remote, int nr)
{
    void *b = r->mlength && (xp_tl_caps(r->src) & XP_TL_CAP_RMA) &&
                      !xp_tl_direct_theirs(r->src, remote, nr)
                  ? xp_tl_bounce_alloc(r->src, (size_t)r->mlength)
                  : NULL;
    if (!b)
        return 0;
    /* Pipelined: the REPLY goes after the first bytes, and the initiator
     * copies behind us (nothing here waits for it: it may wait for us). */
    size_t len = (size_t)r->mlength, first = xp_eng_bounce_first(len);
    xp_eng_bounce_stage(r->src, &r->le->region, r->offset, b, 0, first, 1);
    xp_seg_t s = { .addr = (uint64_t)(uintptr_t)b, .len = r->mlength };
    answer(r, &s, sizeof(s), XP_PKT_F_RMA | XP_PKT_F_BOUNCE);
    xp_eng_bounce_stage(r->src, &r->le->region, r->offset, b, first, len, 1);
    return 1;
}

/* Serve a get: inline reply data, a bounce block, or a write into the
 * initiator's segments. */
static void serve_get(req_t *r)
{
    const xp_pkt_t *h = r->h;
    if (!(h->flags & XP_PKT_F_RMA)) {
        unsigned char buf[r->mlength ? r->mlength : 1];
        xp_region_read(&r->le->region, r->offset, buf, r->mlength);
        answer(r, buf, r->mlength, 0);
        return;
    }
    struct iovec local[MAX_IOV], remote[MAX_IOV];
    int nr = initiator_iov(r, remote);
    if (get_bounce(r, remote, nr))
        return;
    int nl = xp_region_iov(&r->le->region, r->offset, r->mlength, local, MAX_IOV);
    if (r->mlength && (nl < 0 || xp_tl_writev(r->src, local, nl, remote, nr) != XP_OK)) {
        xp_error("get from rank %d: single-copy write of %zu bytes failed", r->src,
                 (size_t)r->mlength);
        r->fail = PTL_NI_SEGV;
    }
    answer(r, NULL, 0, XP_PKT_F_RMA);
}

/* Whether an atomic may skip the process-wide atomic lock: its elements are
 * 1, 2, 4 or 8 bytes, naturally aligned, in an entry that is one contiguous
 * buffer. xp_atomic_apply then updates each element with one native atomic
 * instruction (or a CAS loop of the element's width), and every other
 * Portals atomic reaching those elements does the same - with or without
 * the lock, since the lock path also uses xp_atomic_apply on contiguous
 * pieces - so updates from several initiators are never lost. The lock
 * stays for what has no native atomic (long double, double complex:
 * elements over 8 bytes), misaligned elements and iovec entries, whose
 * messages may be copied out, combined and copied back. (Two entries
 * aliasing the same memory, one an iovec and one not, are not covered.) */
static int lock_free(const req_t *r, size_t esize)
{
    const xp_region_t *reg = &r->le->region;
    return esize != 0 && esize <= 8 && !reg->iov &&
           ((uintptr_t)(reg->start + r->offset) % esize) == 0;
}

/* Apply an atomic (and answer a fetching one with the old values). */
static void apply_atomic(req_t *r)
{
    xp_ptl_state_t *st = xp_ptl_state();
    const xp_pkt_t *h = r->h;
    size_t oplen = h->type == XP_PKT_SWAP ? h->nseg : 0;
    const unsigned char *operand = oplen ? r->payload : NULL;
    const unsigned char *data = r->payload + oplen;
    size_t esize = xp_atomic_type_size((ptl_datatype_t)h->atomic_type);
    /* Only whole elements are operated on. */
    if (esize)
        r->mlength -= r->mlength % esize;
    unsigned char old[r->mlength ? r->mlength : 1];
    unsigned char tmp[r->mlength ? r->mlength : 1];
    int fetch = h->type != XP_PKT_ATOMIC;
    xp_status_t rc = XP_OK;

    if (r->mlength > 0 && lock_free(r, esize)) {
        ptl_op_t op = (ptl_op_t)h->atomic_op;
        ptl_datatype_t dt = (ptl_datatype_t)h->atomic_type;
        void *at = r->le->region.start + r->offset;
        if (!xp_atomic_apply_word(op, dt, at, data, r->mlength, fetch ? old : NULL))
            rc = xp_atomic_apply(op, dt, at, data, operand, r->mlength, fetch ? old : NULL);
        if (rc != XP_OK)
            r->fail = PTL_NI_OP_VIOLATION;
    } else if (r->mlength > 0) {
        pthread_mutex_lock(&st->atomic_lock);
        if (xp_region_contiguous(&r->le->region, r->offset, r->mlength)) {
            rc = xp_atomic_apply((ptl_op_t)h->atomic_op, (ptl_datatype_t)h->atomic_type,
                                 xp_region_addr(&r->le->region, r->offset), data, operand,
                                 r->mlength, fetch ? old : NULL);
        } else {
            xp_region_read(&r->le->region, r->offset, tmp, r->mlength);
            rc = xp_atomic_apply((ptl_op_t)h->atomic_op, (ptl_datatype_t)h->atomic_type, tmp,
                                 data, operand, r->mlength, fetch ? old : NULL);
            xp_region_write(&r->le->region, r->offset, tmp, r->mlength);
        }
        pthread_mutex_unlock(&st->atomic_lock);
        if (rc != XP_OK)
            r->fail = PTL_NI_OP_VIOLATION;
    }
    if (fetch)
        answer(r, old, r->fail == PTL_NI_OK ? r->mlength : 0, 0);
}

/* XTQ: the whole message landed in one contiguous piece of the entry; the
 * XTQ layer rewrites its command packet and enqueues it. A refusal (queue
 * full, bad index, bad command) becomes the put's failure, so it reaches the
 * initiator's ACK and this entry's failure count like any other. */
static void xtq_hand_over(req_t *r)
{
    xp_ptl_state_t *st = xp_ptl_state();
    ptl_ni_fail_t (*deliver)(ptl_handle_ni_t, void *, size_t) =
        __atomic_load_n(&st->xtq_deliver, __ATOMIC_ACQUIRE);
    if (r->mlength != r->h->rlength || !xp_region_contiguous(&r->le->region, r->offset, r->mlength))
        r->fail = PTL_NI_XTQ_BAD_COMMAND;
    else if (!deliver)
        r->fail = PTL_NI_XTQ_BAD_INDEX; /* no table was ever registered here */
    else
        r->fail = deliver(r->ni->handle, xp_region_addr(&r->le->region, r->offset), r->mlength);
}

/* A message that found no usable entry (or a disabled PT): count, maybe
 * disable the PT (flow control), and tell the initiator. */
static void reject(req_t *r, ptl_ni_fail_t fail, ptl_sr_index_t reg)
{
    r->fail = fail;
    r->mlength = 0;
    xp_ni_sr_inc(r->ni, reg);
    answer(r, NULL, 0, 0);
}

/* No entry (or no resources) for the message: with PTL_PT_FLOWCTRL the PT
 * is disabled and the target told (PT_DISABLED event); the initiator's
 * answer reports PTL_NI_PT_DISABLED. Without it the message is dropped. */
static void no_room(req_t *r)
{
    if (r->pt->options & PTL_PT_FLOWCTRL) {
        ptl_event_t ev;
        int quiet = r->le && (r->le->options & PTL_ME_EVENT_FLOWCTRL_DISABLE);
        r->pt->enabled = 0;
        r->le = NULL;
        fill_event(r, &ev, PTL_EVENT_PT_DISABLED);
        ev.ni_fail_type = PTL_NI_PT_DISABLED;
        if (!quiet)
            xp_pt_post_event(r->pt, &ev);
        reject(r, PTL_NI_PT_DISABLED, PTL_SR_DROP_COUNT);
    } else {
        r->le = NULL;
        reject(r, PTL_NI_DROPPED, PTL_SR_DROP_COUNT);
    }
}

/* RMA: exactly nseg segments (at most what the handler reads) whose lengths
 * add up to the message length without wrapping. */
static int segments_ok(const xp_pkt_t *h, const unsigned char *payload, size_t len)
{
    uint64_t sum = 0;
    if (h->nseg > MAX_IOV || len != (size_t)h->nseg * sizeof(xp_seg_t))
        return 0;
    for (uint32_t i = 0; i < h->nseg; i++) {
        xp_seg_t s;
        memcpy(&s, payload + (size_t)i * sizeof(s), sizeof(s));
        if (s.len > UINT64_MAX - sum)
            return 0;
        sum += s.len;
    }
    return sum == h->rlength;
}

/* Atomics: a valid (op, type) pair for the call it came from, whole
 * elements within the NI's atomic size, the operand (swap family) and the
 * data exactly filling the payload. */
static int atomic_ok(const xp_ni_t *ni, const xp_pkt_t *h, size_t len)
{
    int kind = h->type == XP_PKT_ATOMIC  ? XP_ATOMIC_PLAIN
               : h->type == XP_PKT_FETCH ? XP_ATOMIC_FETCH
                                         : XP_ATOMIC_SWAP;
    ptl_size_t max = kind == XP_ATOMIC_PLAIN ? ni->limits.max_atomic_size
                                             : ni->limits.max_fetch_atomic_size;
    size_t oplen = 0;
    if (h->rlength > max || xp_atomic_check((ptl_op_t)h->atomic_op, (ptl_datatype_t)h->atomic_type,
                                            (size_t)h->rlength, kind) != XP_OK)
        return 0;
    if (kind == XP_ATOMIC_SWAP && h->atomic_op != PTL_SWAP)
        oplen = xp_atomic_type_size((ptl_datatype_t)h->atomic_type);
    return h->nseg == oplen && len == oplen + h->rlength;
}

/* A request must carry exactly what its header announces. Anything else
 * comes from a corrupt or hostile peer and is dropped before a length,
 * segment or operand of it is trusted. */
static int request_ok(const xp_ni_t *ni, int src, const xp_pkt_t *h, const unsigned char *payload,
                      size_t len)
{
    if (h->flags & XP_PKT_F_BOUNCE) /* a put's one block */
        return h->type == XP_PKT_PUT && (h->flags & XP_PKT_F_RMA) && h->nseg == 1 &&
               segments_ok(h, payload, len);
    if (h->type == XP_PKT_PUT || h->type == XP_PKT_GET) {
        if (h->flags & XP_PKT_F_RMA)
            return segments_ok(h, payload, len);
        if (h->type == XP_PKT_PUT)
            return len == h->rlength;
        /* An inline reply must fit one packet back. */
        return len == 0 && h->rlength <= xp_eng_inline_max(src);
    }
    return !(h->flags & XP_PKT_F_RMA) && atomic_ok(ni, h, len);
}

static void handle_request(int src, const xp_pkt_t *h, const void *payload, size_t len)
{
    req_t r;
    /* Field by field: every field is set before it is read, and a memset of
     * the whole request showed up in the per-put instruction count. */
    r.src = src;
    r.h = h;
    r.payload = payload;
    r.len = len;
    r.pt = NULL;
    r.le = NULL;
    r.list = PTL_PRIORITY_LIST;
    r.fail = PTL_NI_OK;
    r.offset = 0;
    r.mlength = 0;
    r.uh = NULL;
    r.ni = xp_ni_from_slot(h->slot);
    if (!r.ni) {
        /* No such NI here: as good as unreachable. */
        r.fail = PTL_NI_UNDELIVERABLE;
        answer(&r, NULL, 0, 0);
        return;
    }
    if (!request_ok(r.ni, src, h, r.payload, len)) {
        xp_error("malformed request (type %u, length %llu, %zu payload bytes) from rank %d "
                 "dropped", h->type, (unsigned long long)h->rlength, len, src);
        reject(&r, PTL_NI_DROPPED, PTL_SR_DROP_COUNT);
        return;
    }
    r.pt = xp_pt_enter(r.ni, h->pt_index);
    if (!r.pt) {
        reject(&r, PTL_NI_DROPPED, PTL_SR_DROP_COUNT);
        return;
    }
    /* Triggered operations released by this message's counting are issued
     * once the PT lock is gone (triggered.h). */
    xp_trig_defer_begin();
    if (!r.pt->enabled) {
        reject(&r, PTL_NI_PT_DISABLED, PTL_SR_DROP_COUNT);
        goto out;
    }
    match(&r);
    if (!r.le) {
        no_room(&r);
        goto out;
    }
    if (r.le->uid != PTL_UID_ANY && r.le->uid != h->uid) {
        r.le = NULL;
        reject(&r, PTL_NI_PERM_VIOLATION, PTL_SR_PERMISSIONS_VIOLATIONS);
        goto out;
    }
    if (!op_allowed(r.le, h->type)) {
        r.le = NULL;
        reject(&r, PTL_NI_OP_VIOLATION, PTL_SR_OPERATIONS_VIOLATIONS);
        goto out;
    }
    if (!reserve_resources(&r)) {
        no_room(&r);
        goto out;
    }
    r.offset = (r.le->options & PTL_ME_MANAGE_LOCAL) ? r.le->local_offset : h->remote_offset;
    r.mlength = r.offset >= r.le->region.length ? 0 : r.le->region.length - r.offset;
    if (r.mlength > h->rlength)
        r.mlength = h->rlength;
    switch (h->type) {
    case XP_PKT_PUT:
        deliver_put(&r);
        if ((h->flags & XP_PKT_F_XTQ) && r.fail == PTL_NI_OK)
            xtq_hand_over(&r);
        answer(&r, NULL, 0, 0);
        break;
    case XP_PKT_GET:
        serve_get(&r);
        break;
    default:
        apply_atomic(&r);
        if (h->type == XP_PKT_ATOMIC)
            answer(&r, NULL, 0, 0);
        break;
    }
    if (r.le->options & PTL_ME_MANAGE_LOCAL)
        r.le->local_offset += r.mlength;
    target_events(&r);
    if ((r.le->options & PTL_ME_USE_ONCE) ||
        ((r.le->options & PTL_ME_MANAGE_LOCAL) && r.le->min_free &&
         r.le->region.length - r.le->local_offset < r.le->min_free))
        xp_le_unlink_locked(r.pt, r.le, 1);
out:
    xp_pt_leave(r.pt);
    xp_trig_defer_end();
}

/* ------------------------------------------------------------ fast path */

static void recv_rest(int src_rank, const void *pkt, size_t len);


/* The end of a one-pass delivery of `bytes`: count it on the entry's CT ct
 * (f: the entry's XP_LE_FAST_* flags; after the answer, as handle_request
 * does) and leave the PT. Triggered
 * operations run once the PT is left (xp_trig_defer_*'s rule); the CT
 * object outlives its handle (stable-object table). */
static void __attribute__((noinline)) fast_count_rest(xp_pt_t *pt, xp_ct_t *ct)
{
    int fire = xp_ct_add_polled_rest(ct);
    xp_pt_leave(pt);
    if (fire)
        xp_ct_fire(ct);
}

/* The count is inline (xp_ct_count_polled); what else a count may need
 * (wake-ups, triggered operations) is out of line, last, so that the
 * common case makes no call and its caller needs no frame. */
static inline __attribute__((always_inline)) void
fast_count_leave(int asym_fence, xp_pt_t *pt, xp_ct_t *ct, unsigned f, ptl_size_t bytes)
{
    if ((f & XP_LE_FAST_CT) &&
        __builtin_expect(
            xp_ct_count_polled(ct, (f & XP_LE_FAST_CT_BYTES) ? bytes : 1, asym_fence), 0)) {
        fast_count_rest(pt, ct);
        return;
    }
    xp_pt_leave(pt);
}

/* Where the fast path finds the fields of a small inline put in either
 * wire form: read in place when needed (the ring slot may be unaligned),
 * never copied as a header. */
typedef struct put_form {
    size_t hdr; /* header bytes: the payload follows */
    size_t slot, ack_req, pt_index, uid, md_handle, match_bits, remote_offset;
} put_form_t;

/* The offset of a field that a wire form does not carry: it reads as 0. */
#define FORM_ABSENT ((size_t)-1)

static inline uint64_t form_load64(const unsigned char *pkt, size_t off)
{
    return off == FORM_ABSENT ? 0 : xp_wire_load64(pkt, off);
}

static const put_form_t form_tiny = {
    sizeof(xp_wire_tput_t), offsetof(xp_wire_tput_t, slot), offsetof(xp_wire_tput_t, ack_req),
    offsetof(xp_wire_tput_t, pt_index), offsetof(xp_wire_tput_t, uid),
    offsetof(xp_wire_tput_t, md_handle), FORM_ABSENT, offsetof(xp_wire_tput_t, remote_offset),
};

static const put_form_t form_compact = {
    sizeof(xp_wire_sput_t), offsetof(xp_wire_sput_t, slot), offsetof(xp_wire_sput_t, ack_req),
    offsetof(xp_wire_sput_t, pt_index), offsetof(xp_wire_sput_t, uid),
    offsetof(xp_wire_sput_t, md_handle), offsetof(xp_wire_sput_t, match_bits),
    offsetof(xp_wire_sput_t, remote_offset),
};

static const put_form_t form_full = {
    sizeof(xp_pkt_t), offsetof(xp_pkt_t, slot), offsetof(xp_pkt_t, ack_req),
    offsetof(xp_pkt_t, pt_index), offsetof(xp_pkt_t, uid), offsetof(xp_pkt_t, md_handle),
    offsetof(xp_pkt_t, match_bits), offsetof(xp_pkt_t, remote_offset),
};

/* The first counting ACK of a run (the next ones join it: xp_eng_ack_join)
 * is the answer send_answer builds from the request's header: its slot,
 * ack_req and MD handle, read from the packet `pkt` in wire form fm (the
 * fast path checked it). A decode into a full header for it cost ~130
 * instructions per first ACK. */
static void __attribute__((noinline)) fast_ack_first(int src, const put_form_t *fm,
                                                     const unsigned char *pkt, ptl_size_t mlength)
{
    xp_eng_ack_first(src, pkt[fm->slot], pkt[fm->ack_req], xp_wire_load32(pkt, fm->md_handle),
                     PTL_PRIORITY_LIST, mlength);
}

/* The end of a one-pass delivery whose counting ACK starts a run: the
 * answer, then the count, out of line (the common end makes no call). */
static void __attribute__((noinline)) fast_ack_first_leave(int src, const put_form_t *fm,
                                                           const unsigned char *pkt,
                                                           ptl_size_t mlength, xp_pt_t *pt,
                                                           xp_le_t *le)
{
    fast_ack_first(src, fm, pkt, mlength);
    fast_count_leave(__atomic_load_n(&xp_ptl_state_peek()->asym_fence, __ATOMIC_RELAXED), pt,
                     le->ct, le->fast, mlength);
}

/* The entry a put lands in if the fast path may take it: the first priority
 * entry (LE), or the earliest priority ME matching exactly; NULL sends the
 * message to the full path (which also searches the overflow list and
 * honours NO_TRUNCATE: an entry with it has no XP_LE_FAST_PUT, and as the
 * earliest match it would be the full path's first candidate too). */
/* `leaf`: a search that would call a function (wildcard or source-only
 * entries in the list, a source id other than the rank) is not made:
 * *call is set instead. */
static inline __attribute__((always_inline)) xp_le_t *
fast_match(int src, xp_ni_t *ni, xp_pt_t *pt, uint64_t match_bits, int leaf, int *call)
{
    xp_match_entry_t *e;
    if (!ni->matching) {
        e = xp_match_first(&pt->table, XP_MATCH_PRIORITY);
    } else {
        int rank_source = !ni->physical && __atomic_load_n(&ni->map, __ATOMIC_ACQUIRE) ==
                                               ni->map_identity;
        if (leaf) {
            if (__builtin_expect(!rank_source ||
                                     !xp_match_exact_only(&pt->table, XP_MATCH_PRIORITY),
                                 0)) {
                *call = 1;
                return NULL;
            }
            e = xp_match_find_exact(&pt->table, XP_MATCH_PRIORITY, (uint64_t)src, match_bits);
        } else {
            uint64_t source = rank_source ? (uint64_t)src : xp_pt_source_of(ni, src);
            e = xp_match_find_any(&pt->table, XP_MATCH_PRIORITY, source, match_bits);
        }
    }
    /* Every entry of a PT's table is the `m` of its LE/ME, whose user
     * pointer is that LE/ME (pt.c's append): the entry's address gives it,
     * one dependent load fewer on the message's path than e->user. */
    return e ? (xp_le_t *)(void *)((char *)e - offsetof(xp_le_t, m)) : NULL;
}

/* The PT a one-pass delivery enters: xp_pt_enter_st's handshake, but an
 * application thread inside (app_busy) or a disabled PT sends the message
 * to the full path (which waits, or reports the disabled PT) instead of
 * waiting here. `enabled` implies allocated with its table ready
 * (PtlPTAlloc sets it last; PtlPTFree and the NI's teardown clear it), so
 * one test does both. NULL: declined, the PT left. */
static inline __attribute__((always_inline)) xp_pt_t *
fast_pt_enter(const xp_ptl_state_t *st, xp_ni_t *ni, ptl_pt_index_t pt_index)
{
    xp_pt_t *pt = xp_pt_announce_st(st, ni, pt_index);
    if (!pt)
        return NULL;
    if (__builtin_expect(__atomic_load_n(&pt->app_busy, __ATOMIC_ACQUIRE) || !pt->enabled, 0)) {
        xp_pt_leave(pt);
        return NULL;
    }
    xp_pt_tsan_entered(pt);
    return pt;
}

/* The entry a one-pass delivery goes to: the PT at the packet's pt_index
 * (fields at these offsets) is entered and the match found; the entry must
 * have the `need` flag, accept the initiator's uid, post no event the PT's
 * EQ would take and (for a counting ACK) not disable acknowledgements.
 * Returns it with the PT entered (*pt_out), or NULL with the PT left
 * (*call set if a `leaf` search declined: fast_match). */
static inline __attribute__((always_inline)) xp_le_t *
fast_entry(const xp_ptl_state_t *st, xp_ni_t *ni, int src, const unsigned char *pkt, size_t pt_off,
           size_t mb_off, size_t uid_off, unsigned need, int ack, xp_pt_t **pt_out, int leaf,
           int *call)
{
    xp_pt_t *pt = fast_pt_enter(st, ni, xp_wire_load32(pkt, pt_off));
    if (!pt)
        return NULL;
    xp_le_t *le = fast_match(src, ni, pt, form_load64(pkt, mb_off), leaf, call);
    if (!le)
        goto decline;
    unsigned f = le->fast;
    if (!(f & need) || (le->uid != PTL_UID_ANY && le->uid != xp_wire_load32(pkt, uid_off)) ||
        (pt->eq && (!(f & XP_LE_FAST_QUIET) || (pt->options & PTL_PT_FLOWCTRL))) ||
        (ack && (f & XP_LE_FAST_NOACK)))
        goto decline;
    *pt_out = pt;
    return le;
decline:
    xp_pt_leave(pt);
    return NULL;
}

/* The delivery of a one-pass put (fast_put) to entry le of the entered PT
 * pt: the copy, the answer and the count, as handle_request orders them. */
static inline __attribute__((always_inline)) void
fast_put_deliver(const xp_ptl_state_t *st, int src, const put_form_t *fm,
                 const unsigned char *pkt, size_t len, xp_pt_t *pt, xp_le_t *le, unsigned f,
                 int ack, int small)
{
    ptl_size_t offset = xp_wire_load64(pkt, fm->remote_offset);
    ptl_size_t mlength = offset >= le->region.length ? 0 : le->region.length - offset;
    if (mlength > len - fm->hdr)
        mlength = len - fm->hdr;
    if (!small && mlength > 16)
        xp_copy(le->region.start + offset, pkt + fm->hdr, (size_t)mlength);
    else if (mlength)
        copy_small(le->region.start + offset, pkt + fm->hdr, (size_t)mlength);
    if (ack && !xp_eng_ack_join((xp_ptl_state_t *)st, src, xp_wire_load32(pkt, fm->md_handle),
                                mlength)) {
        fast_ack_first_leave(src, fm, pkt, mlength, pt, le);
        return;
    }
    fast_count_leave(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), pt, le->ct, f,
                     mlength);
}

/* fast_put_deliver for a payload of more than 16 bytes (its memcpy call
 * needs a frame, which xp_eng_recv does not have). */
static void __attribute__((noinline)) fast_put_copy(const xp_ptl_state_t *st, int src,
                                                    const unsigned char *pkt, size_t len,
                                                    xp_pt_t *pt, xp_le_t *le)
{
    if (pkt[0] == XP_WIRE_TPUT)
        fast_put_deliver(st, src, &form_tiny, pkt, len, pt, le, le->fast,
                         pkt[offsetof(xp_wire_tput_t, ack_req)] == PTL_CT_ACK_REQ, 0);
    else if (pkt[0] == XP_WIRE_SPUT)
        fast_put_deliver(st, src, &form_compact, pkt, len, pt, le, le->fast,
                         pkt[offsetof(xp_wire_sput_t, ack_req)] == PTL_CT_ACK_REQ, 0);
    else
        fast_put_deliver(st, src, &form_full, pkt, len, pt, le, le->fast,
                         pkt[offsetof(xp_pkt_t, ack_req)] == PTL_CT_ACK_REQ, 0);
}

/* A small inline put handled in one pass, when nothing but delivery,
 * counting and a gathered counting ACK is needed: the entry's precomputed
 * XP_LE_FAST_* flags say it takes the put whole without unlinking, offsets
 * or events, the PT is enabled with no flow-controlled EQ to reserve room
 * in, and the caller is the thread that handles packets (the handler-owned
 * CT word and the gathered ACK are its own). Anything else goes, with
 * nothing changed, to recv_rest (handle_request does it all). `pkt` is the
 * packet of `len` bytes in wire form `fm` (its lengths checked by the
 * caller), from rank src of st's job. With `leaf` (no ACK), every call here is
 * last (a tail call), so that xp_eng_recv, which inlines this, needs no
 * frame: a match that needs a call is left to fast_put_general. */
static void fast_put_general(const xp_ptl_state_t *st, int src, const unsigned char *pkt,
                             size_t len);
static inline __attribute__((always_inline)) void fast_put(const xp_ptl_state_t *st, int src,
                                                          const put_form_t *fm,
                                                          const unsigned char *pkt, size_t len,
                                                          int leaf)
{
    int call = 0;
    uint8_t slot = pkt[fm->slot], ack_req = pkt[fm->ack_req];
    if (leaf && ack_req != PTL_NO_ACK_REQ) {
        /* a counting ACK: the call to send the first of a run needs a frame */
        fast_put_general(st, src, pkt, len);
        return;
    }
    int ack = ack_req == PTL_CT_ACK_REQ;
    if (slot >= XP_PTL_NI_SLOTS || (!ack && ack_req != PTL_NO_ACK_REQ) ||
        __atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) != xp_thread_id())
        goto decline;
    xp_ni_t *ni = __atomic_load_n(&st->ni[slot], __ATOMIC_ACQUIRE);
    if (!ni)
        goto decline;
    xp_pt_t *pt;
    xp_le_t *le = fast_entry(st, ni, src, pkt, fm->pt_index, fm->match_bits, fm->uid,
                             XP_LE_FAST_PUT, ack, &pt, leaf, &call);
    if (!le) {
        if (leaf && call) {
            fast_put_general(st, src, pkt, len);
            return;
        }
        goto decline;
    }
    if (leaf && len - fm->hdr > 16) {
        fast_put_copy(st, src, pkt, len, pt, le);
        return;
    }
    fast_put_deliver(st, src, fm, pkt, len, pt, le, le->fast, !leaf && ack, leaf);
    return;
decline:
    recv_rest(src, pkt, len);
}

/* A put with the full header: no flags, requested length = payload. */
static inline __attribute__((always_inline)) void
fast_put_full(const xp_ptl_state_t *st, int src, const unsigned char *pkt, size_t len)
{
    if (pkt[offsetof(xp_pkt_t, flags)] != 0 ||
        xp_wire_load64(pkt, offsetof(xp_pkt_t, rlength)) != len - sizeof(xp_pkt_t)) {
        recv_rest(src, pkt, len);
        return;
    }
    fast_put(st, src, &form_full, pkt, len, 1);
}

/* A compact put in form fm (wire.h: no flags, rlength = payload length,
 * the low byte of which is at the same place in both compact forms). */
_Static_assert(offsetof(xp_wire_tput_t, len) == offsetof(xp_wire_sput_t, len),
               "one length test for both compact puts");
static inline __attribute__((always_inline)) void
fast_put_compact(const xp_ptl_state_t *st, int src, const put_form_t *fm,
                 const unsigned char *pkt, size_t len)
{
    if (len < fm->hdr || pkt[offsetof(xp_wire_sput_t, len)] != (uint8_t)(len - fm->hdr)) {
        recv_rest(src, pkt, len);
        return;
    }
    fast_put(st, src, fm, pkt, len, 1);
}

/* fast_put with every search (wildcards, source ids other than the rank):
 * its calls need a frame, which this function has and xp_eng_recv not. */
static void __attribute__((noinline)) fast_put_general(const xp_ptl_state_t *st, int src,
                                                       const unsigned char *pkt, size_t len)
{
    if (pkt[0] == XP_WIRE_TPUT)
        fast_put(st, src, &form_tiny, pkt, len, 0);
    else if (pkt[0] == XP_WIRE_SPUT)
        fast_put(st, src, &form_compact, pkt, len, 0);
    else
        fast_put(st, src, &form_full, pkt, len, 0);
}

/* Where the one-pass atomic path finds a request's fields in either wire
 * form (the full header; the compact fetch, which implies no flags, no
 * ack_req, rlength = its length byte, user_ptr 0 and a 32-bit local
 * offset). */
typedef struct atomic_form {
    size_t hdr; /* header bytes: the operand follows */
    size_t slot, op, dt, pt_index, uid, md_handle, match_bits, remote_offset, local_offset;
    int compact;
} atomic_form_t;

static const atomic_form_t aform_full = {
    sizeof(xp_pkt_t), offsetof(xp_pkt_t, slot), offsetof(xp_pkt_t, atomic_op),
    offsetof(xp_pkt_t, atomic_type), offsetof(xp_pkt_t, pt_index), offsetof(xp_pkt_t, uid),
    offsetof(xp_pkt_t, md_handle), offsetof(xp_pkt_t, match_bits),
    offsetof(xp_pkt_t, remote_offset), offsetof(xp_pkt_t, local_offset), 0,
};

static const atomic_form_t aform_compact = {
    sizeof(xp_wire_sfetch_t), offsetof(xp_wire_sfetch_t, slot),
    offsetof(xp_wire_sfetch_t, atomic_op), offsetof(xp_wire_sfetch_t, atomic_type),
    offsetof(xp_wire_sfetch_t, pt_index), offsetof(xp_wire_sfetch_t, uid),
    offsetof(xp_wire_sfetch_t, md_handle), offsetof(xp_wire_sfetch_t, match_bits),
    offsetof(xp_wire_sfetch_t, remote_offset), offsetof(xp_wire_sfetch_t, local_offset), 1,
};

/* fast_fetch_finish's REPLY when it cannot be written in place: built on
 * the stack from the request (form fm) and sent. */
static inline __attribute__((always_inline)) void
fetch_reply_send(int src, const atomic_form_t *fm, const unsigned char *pkt, size_t size,
                 uint64_t old, int ok)
{
    const xp_tl_route_t *r = xp_tl_route(src);
    size_t n = sizeof(xp_wire_sreply_t) + size;
    /* The old value right after the header: one contiguous packet,
     * one copy into the ring cell. */
    struct {
        xp_wire_sreply_t w;
        uint64_t old;
    } b;
    _Static_assert(offsetof(__typeof__(b), old) == sizeof(xp_wire_sreply_t),
                   "the data follows the header with no gap");
    b.old = old;
    b.w = (xp_wire_sreply_t){
        .type = XP_WIRE_SREPLY,
        .slot = pkt[fm->slot],
        .fail = PTL_NI_OK,
        .len = (uint8_t)size,
        .ptl_list = PTL_PRIORITY_LIST,
        .atomic_op = pkt[fm->op],
        .atomic_type = pkt[fm->dt],
        .md_handle = xp_wire_load32(pkt, fm->md_handle),
        .pt_index = xp_wire_load32(pkt, fm->pt_index),
        .remote_offset = xp_wire_load64(pkt, fm->remote_offset),
        .local_offset = fm->compact ? xp_wire_load32(pkt, fm->local_offset)
                                    : xp_wire_load64(pkt, fm->local_offset),
        .user_ptr = fm->compact ? 0 : xp_wire_load64(pkt, offsetof(xp_pkt_t, user_ptr)),
    };
    /* Not announced yet, a full or wrapping lane, deferred answers
     * waiting (they go first), an unusual route: the route's send,
     * else xp_eng_send_sreply (which tries again, then takes the
     * general answer send). */
    if (!ok || xp_tl_route_send_excl(r, src, &b, n, NULL, 0) != XP_OK)
        xp_eng_send_sreply(src, &b.w, &b.old, size);
}

/* Out of line, in its own frame: fast_fetch_finish keeps no registers for
 * it (its common case makes no call). */
static void __attribute__((noinline)) fetch_reply_sent(int src, const unsigned char *pkt,
                                                       size_t size, uint64_t old, int ok)
{
    if (pkt[0] == XP_WIRE_SFETCH)
        fetch_reply_send(src, &aform_compact, pkt, size, old, ok);
    else
        fetch_reply_send(src, &aform_full, pkt, size, old, ok);
}

/* Room for a compact REPLY of n bytes to src in place in the answer lane's
 * ring cell (no header on the stack, no copy of it, no send call), with
 * its route in *rp; NULL when the route does not let us (lane not
 * announced yet, full or wrapping, deferred answers waiting: they go
 * first; *ok then says whether the route's send may still take it). The
 * lane of the previous REPLY comes from the memo when it went to the same
 * rank (the route's chain of loads skipped). The caller holds the poll
 * lock (the one-pass paths' rule). `waited`: the initiator waits for this
 * REPLY before it sends again, as a fetching atomic's usually does (no
 * cell ahead asked for: xp_tl_inplace_reserve_excl's `waited`, on the memo's
 * path; a first REPLY to a rank takes the route's reserve); a get's may be
 * one of a stream and keeps the lane's prefetch. */
static inline __attribute__((always_inline)) xp_wire_sreply_t *
reply_reserve(xp_ptl_state_t *st, int src, size_t n, const xp_tl_route_t **rp,
              xp_tl_cell_t *cell, int *ok, int waited)
{
    if (__builtin_expect(st->reply_memo.rank == src &&
                             st->reply_memo.epoch ==
                                 __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE) &&
                             n <= st->reply_memo.max_packet,
                         1)) {
        *rp = st->reply_memo.route;
        *ok = !__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE);
        return *ok ? xp_tl_inplace_reserve_excl(st->reply_memo.ip, st->reply_memo.ring, n, cell,
                                                waited)
                   : NULL;
    }
    uint64_t epoch = __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
    const xp_tl_route_t *r = xp_tl_route(src);
    *rp = r;
    *ok = r && !__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE) && n <= r->max_packet;
    xp_wire_sreply_t *cw = *ok ? xp_tl_route_reserve_excl(r, n, cell) : NULL;
    /* Remembered once the answer lane is announced (its ring is set then,
     * by a thread that held the poll lock before us). */
    if (r && r->inplace_excl && xp_load_relaxed(&r->inplace_excl->owner)) {
        st->reply_memo.rank = src;
        st->reply_memo.epoch = epoch;
        st->reply_memo.max_packet = r->max_packet;
        st->reply_memo.route = r;
        st->reply_memo.ip = r->inplace_excl;
        st->reply_memo.ring = r->inplace_excl->ring;
    }
    return cw;
}

/* The REPLY of a one-pass fetching atomic (request `pkt` of `len` bytes in
 * wire form fm, old value `old`) and then the count, as handle_request
 * orders them: what send_answer builds from the request's header, in its
 * compact wire form (mlength = rlength = the element size, no flags),
 * written in place (reply_reserve); when the route does not let us,
 * fetch_reply_sent sends it. Out of line (fast_fetch_compact/_full), as
 * the doorbell's rare call and the count's rest need a frame, which the
 * one pass before it does not have. */
static inline __attribute__((always_inline)) void
fast_fetch_finish(int src, const atomic_form_t *fm, const unsigned char *pkt, size_t len,
                  xp_pt_t *pt, xp_le_t *le, uint64_t old)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    /* (the full form's payload may start with a swap operand) */
    size_t size = fm->compact ? len - fm->hdr
                              : (size_t)xp_wire_load64(pkt, offsetof(xp_pkt_t, rlength));
    const xp_tl_route_t *r;
    xp_tl_cell_t cell;
    int ok;
    xp_wire_sreply_t *cw =
        reply_reserve(st, src, sizeof(xp_wire_sreply_t) + size, &r, &cell, &ok, 1);
    if (__builtin_expect(cw != NULL, 1)) {
        cw->type = XP_WIRE_SREPLY;
        cw->slot = pkt[fm->slot];
        cw->fail = PTL_NI_OK;
        cw->len = (uint8_t)size;
        cw->ptl_list = PTL_PRIORITY_LIST;
        cw->atomic_op = pkt[fm->op];
        cw->atomic_type = pkt[fm->dt];
        cw->pad = 0;
        cw->md_handle = xp_wire_load32(pkt, fm->md_handle);
        cw->pt_index = xp_wire_load32(pkt, fm->pt_index);
        cw->remote_offset = xp_wire_load64(pkt, fm->remote_offset);
        cw->local_offset = fm->compact ? xp_wire_load32(pkt, fm->local_offset)
                                       : xp_wire_load64(pkt, fm->local_offset);
        cw->user_ptr = fm->compact ? 0 : xp_wire_load64(pkt, offsetof(xp_pkt_t, user_ptr));
        unsigned char *d = (unsigned char *)(cw + 1);
        /* (size: 1, 2, 4 or 8; fixed-size copies, no library call) */
        if (size == 8)
            memcpy(d, &old, 8);
        else if (size == 4)
            memcpy(d, &old, 4);
        else if (size == 2)
            memcpy(d, &old, 2);
        else
            memcpy(d, &old, 1);
        xp_tl_route_commit_excl(r, &cell);
    } else {
        fetch_reply_sent(src, pkt, size, old, ok);
    }
    fast_count_leave(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), pt, le->ct, le->fast,
                     size);
}

static void __attribute__((noinline)) fast_fetch_compact(int src, const unsigned char *pkt,
                                                         size_t len, xp_pt_t *pt, xp_le_t *le,
                                                         uint64_t old)
{
    fast_fetch_finish(src, &aform_compact, pkt, len, pt, le, old);
}

static void __attribute__((noinline)) fast_fetch_full(int src, const unsigned char *pkt,
                                                      size_t len, xp_pt_t *pt, xp_le_t *le,
                                                      uint64_t old)
{
    fast_fetch_finish(src, &aform_full, pkt, len, pt, le, old);
}

/* The end of a one-pass PtlAtomic (full header) with a counting ACK: the
 * ACK (joining a run, else the first of one), then the count. */
static void __attribute__((noinline)) fast_atomic_ack(int src, const unsigned char *pkt,
                                                      size_t len, xp_pt_t *pt, xp_le_t *le)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    size_t size = len - sizeof(xp_pkt_t);
    if (!xp_eng_ack_join(st, src, xp_wire_load32(pkt, offsetof(xp_pkt_t, md_handle)), size))
        fast_ack_first(src, &form_full, pkt, size);
    fast_count_leave(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), pt, le->ct, le->fast,
                     size);
}

static void recv_full(int src_rank, const void *pkt, size_t len);
static void fast_atomic_general(int src, const unsigned char *pkt, size_t len);

/* A one-element atomic (PtlAtomic, PtlFetchAtomic or PtlSwap, `pkt` of
 * `len` bytes in wire form `fm`, len >= fm->hdr) lying whole in a fast
 * entry (the XP_LE_FAST_* rules of fast_put; XP_LE_FAST_FETCH for the
 * fetching and swapping forms). One pass as in fast_put: no request
 * record. The native read-modify-writes (SUM, BAND, BOR or BXOR on an
 * aligned 4- or 8-byte integer) take no generic check or dispatch; with
 * `leaf`, every call on their path is last (a tail call), so that the
 * caller needs no frame before the REPLY's send (the round trip's path):
 * a match that needs a call and every other operation are left to
 * fast_atomic_general, the answer and the count to fast_fetch_* /
 * fast_atomic_ack. The general form also takes any other valid
 * (xp_atomic_check) single element of at most 8 bytes, naturally aligned
 * (the full path's lock-free rule), with xp_atomic_apply: MIN, MAX, PROD,
 * the logical operations, the swap family (its operand first in the
 * payload), floating-point types. Anything else goes, with nothing
 * changed, to recv_full. */
static inline __attribute__((always_inline)) void
fast_atomic(int src, const atomic_form_t *fm, const unsigned char *pkt, size_t len, int leaf)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    uint8_t type = fm->compact ? XP_PKT_FETCH : pkt[offsetof(xp_pkt_t, type)];
    int fetch = type != XP_PKT_ATOMIC; /* FETCH or SWAP: answered with a REPLY */
    uint8_t ack_req = fm->compact ? PTL_NO_ACK_REQ : pkt[offsetof(xp_pkt_t, ack_req)];
    uint8_t slot = pkt[fm->slot];
    uint8_t op = pkt[fm->op], dt = pkt[fm->dt];
    int ack = !fetch && ack_req == PTL_CT_ACK_REQ;
    size_t esize = (dt == PTL_INT64_T || dt == PTL_UINT64_T)   ? 8
                   : (dt == PTL_INT32_T || dt == PTL_UINT32_T) ? 4
                                                               : 0;
    int native = type != XP_PKT_SWAP &&
                 (op == PTL_SUM || op == PTL_BAND || op == PTL_BOR || op == PTL_BXOR) && esize;
    size_t size = len - fm->hdr, oplen = 0;
    if (!leaf && !native) {
        /* Any other valid single element of at most 8 bytes, with
         * xp_atomic_apply (its calls need a frame: not in the leaf form,
         * which refuses to the general form). */
        esize = xp_atomic_type_size((ptl_datatype_t)dt);
        if (esize == 0 || esize > 8 ||
            xp_atomic_check((ptl_op_t)op, (ptl_datatype_t)dt, esize,
                            type == XP_PKT_ATOMIC  ? XP_ATOMIC_PLAIN
                            : type == XP_PKT_FETCH ? XP_ATOMIC_FETCH
                                                   : XP_ATOMIC_SWAP) != XP_OK)
            goto refuse;
        /* The swap family's operand (compare value, mask) precedes the data. */
        oplen = type == XP_PKT_SWAP && op != PTL_SWAP ? esize : 0;
        if (size < oplen)
            goto refuse;
        size -= oplen;
    }
    if ((leaf && !native) || size != esize ||
        (fm->compact ? pkt[offsetof(xp_wire_sfetch_t, len)] != size
                     : pkt[offsetof(xp_pkt_t, flags)] != 0 ||
                           xp_wire_load32(pkt, offsetof(xp_pkt_t, nseg)) != oplen ||
                           xp_wire_load64(pkt, offsetof(xp_pkt_t, rlength)) != size) ||
        (!fetch && !ack && ack_req != PTL_NO_ACK_REQ) || slot >= XP_PTL_NI_SLOTS ||
        __atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) != xp_thread_id())
        goto refuse;
    xp_ni_t *ni = __atomic_load_n(&st->ni[slot], __ATOMIC_ACQUIRE);
    if (!ni || size > (fetch ? ni->limits.max_fetch_atomic_size : ni->limits.max_atomic_size))
        goto refuse;
    xp_pt_t *pt;
    int call = 0;
    xp_le_t *le = fast_entry(st, ni, src, pkt, fm->pt_index, fm->match_bits, fm->uid,
                             fetch ? XP_LE_FAST_FETCH : XP_LE_FAST_PUT, ack, &pt, leaf, &call);
    if (!le) {
        if (leaf && call)
            goto refuse; /* the general form makes the search */
        recv_full(src, pkt, len);
        return;
    }
    ptl_size_t offset = xp_wire_load64(pkt, fm->remote_offset);
    if (!xp_region_holds(&le->region, offset, size))
        goto decline;
    uint64_t old = 0;
    char *at = le->region.start + offset;
    const unsigned char *data = pkt + fm->hdr + oplen;
    if (native) {
        /* Declines (memory untouched) when the element is misaligned. */
        if (!xp_atomic_apply_word((ptl_op_t)op, (ptl_datatype_t)dt, at, data, size,
                                  fetch ? &old : NULL))
            goto decline;
    } else if ((uintptr_t)at % size != 0 ||
               (!xp_atomic_apply_word((ptl_op_t)op, (ptl_datatype_t)dt, at, data, size,
                                      fetch ? &old : NULL) &&
                xp_atomic_apply((ptl_op_t)op, (ptl_datatype_t)dt, at, data,
                                oplen ? pkt + fm->hdr : NULL, size,
                                fetch ? &old : NULL) != XP_OK)) {
        /* Misaligned (the full path's lock), or refused with the memory
         * untouched: the full path reports it. */
        goto decline;
    }
    if (fetch) {
        if (fm->compact)
            fast_fetch_compact(src, pkt, len, pt, le, old);
        else
            fast_fetch_full(src, pkt, len, pt, le, old);
        return;
    }
    if (ack) {
        fast_atomic_ack(src, pkt, len, pt, le);
        return;
    }
    fast_count_leave(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), pt, le->ct, le->fast,
                     size);
    return;
refuse:
    /* (the leaf form refuses to the general one, which may take it or
     * refuses in turn, having changed nothing) */
    if (leaf)
        fast_atomic_general(src, pkt, len);
    else
        recv_full(src, pkt, len);
    return;
decline:
    xp_pt_leave(pt);
    recv_full(src, pkt, len);
}

/* fast_atomic with every search (wildcards, source ids other than the
 * rank) and every operation: its calls need a frame, which this function
 * has. */
static void __attribute__((noinline)) fast_atomic_general(int src, const unsigned char *pkt,
                                                          size_t len)
{
    if (pkt[0] == XP_WIRE_SFETCH)
        fast_atomic(src, &aform_compact, pkt, len, 0);
    else
        fast_atomic(src, &aform_full, pkt, len, 0);
}

/* Where the one-pass get finds a request's fields in either wire form. */
typedef struct get_form {
    size_t hdr; /* the request's size: a get carries no payload */
    size_t slot, pt_index, uid, md_handle, match_bits, remote_offset, local_offset;
    int compact; /* xp_wire_sget_t: 32-bit local offset, length byte, no user_ptr */
} get_form_t;

static const get_form_t gform_full = {
    sizeof(xp_pkt_t), offsetof(xp_pkt_t, slot), offsetof(xp_pkt_t, pt_index),
    offsetof(xp_pkt_t, uid), offsetof(xp_pkt_t, md_handle), offsetof(xp_pkt_t, match_bits),
    offsetof(xp_pkt_t, remote_offset), offsetof(xp_pkt_t, local_offset), 0,
};

static const get_form_t gform_compact = {
    sizeof(xp_wire_sget_t), offsetof(xp_wire_sget_t, slot), offsetof(xp_wire_sget_t, pt_index),
    offsetof(xp_wire_sget_t, uid), offsetof(xp_wire_sget_t, md_handle),
    offsetof(xp_wire_sget_t, match_bits), offsetof(xp_wire_sget_t, remote_offset),
    offsetof(xp_wire_sget_t, local_offset), 1,
};

/* A small get lying whole in a fast entry (XP_LE_FAST_GET; the other
 * XP_LE_FAST_* rules of fast_put) handled in one pass, as handle_request
 * would: the data read from the entry straight into a compact REPLY in the
 * answer lane's ring cell (reply_reserve), then the count. When the REPLY
 * cannot be written in place, the header built here goes to
 * xp_eng_send_sreply (deferred answers first, else the general answer
 * send). Anything else (a reply too long for the compact form, a get
 * reaching past the entry's end, which the full path truncates, RMA gets)
 * goes, with nothing changed, to recv_full. */
static inline __attribute__((always_inline)) void
fast_get(int src, const get_form_t *fm, const unsigned char *pkt, size_t len)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    if (len != fm->hdr)
        goto refuse;
    uint8_t slot = pkt[fm->slot];
    uint64_t size = fm->compact ? xp_wire_load16(pkt, offsetof(xp_wire_sget_t, len))
                                : xp_wire_load64(pkt, offsetof(xp_pkt_t, rlength));
    if (size > XP_WIRE_SREPLY_MAX ||
        (!fm->compact && (pkt[offsetof(xp_pkt_t, flags)] != 0 ||
                          xp_wire_load32(pkt, offsetof(xp_pkt_t, nseg)) != 0)) ||
        slot >= XP_PTL_NI_SLOTS ||
        __atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) != xp_thread_id())
        goto refuse;
    xp_ni_t *ni = __atomic_load_n(&st->ni[slot], __ATOMIC_ACQUIRE);
    if (!ni)
        goto refuse;
    xp_pt_t *pt;
    int call = 0;
    xp_le_t *le = fast_entry(st, ni, src, pkt, fm->pt_index, fm->match_bits, fm->uid,
                             XP_LE_FAST_GET, 0, &pt, 0, &call);
    if (!le)
        goto refuse;
    ptl_size_t offset = xp_wire_load64(pkt, fm->remote_offset);
    if (!xp_region_holds(&le->region, offset, size)) {
        xp_pt_leave(pt);
        goto refuse;
    }
    const char *data = le->region.start + offset;
    const xp_tl_route_t *r;
    xp_tl_cell_t cell;
    int ok;
    xp_wire_sreply_t w = {
        .type = XP_WIRE_SREPLY,
        .slot = slot,
        .fail = PTL_NI_OK,
        .len = (uint8_t)size,
        .ptl_list = PTL_PRIORITY_LIST,
        .atomic_op = fm->compact ? 0 : pkt[offsetof(xp_pkt_t, atomic_op)],
        .atomic_type = fm->compact ? 0 : pkt[offsetof(xp_pkt_t, atomic_type)],
        .md_handle = xp_wire_load32(pkt, fm->md_handle),
        .pt_index = xp_wire_load32(pkt, fm->pt_index),
        .remote_offset = offset,
        .local_offset = fm->compact ? xp_wire_load32(pkt, fm->local_offset)
                                    : xp_wire_load64(pkt, fm->local_offset),
        .user_ptr = fm->compact ? 0 : xp_wire_load64(pkt, offsetof(xp_pkt_t, user_ptr)),
    };
    xp_wire_sreply_t *cw =
        reply_reserve(st, src, sizeof(xp_wire_sreply_t) + (size_t)size, &r, &cell, &ok, 0);
    if (__builtin_expect(cw != NULL, 1)) {
        *cw = w;
        xp_tl_copy_small(cw + 1, data, (size_t)size);
        xp_tl_route_commit_excl(r, &cell);
    } else {
        xp_eng_send_sreply(src, &w, data, (size_t)size);
    }
    fast_count_leave(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), pt, le->ct, le->fast,
                     (ptl_size_t)size);
    return;
refuse:
    recv_full(src, pkt, len);
}

/* A get in either wire form: the one-pass path (which checks the length),
 * else decoded. Out of line, so that xp_eng_recv's frame (and every put
 * through it) stays as it was. */
static void __attribute__((noinline)) recv_sget(int src_rank, const void *pkt, size_t len)
{
    fast_get(src_rank, &gform_compact, pkt, len);
}

static void __attribute__((noinline)) recv_get(int src_rank, const void *pkt, size_t len)
{
    fast_get(src_rank, &gform_full, pkt, len);
}

/* Every packet the fast path does not take: the header is decoded into an
 * xp_pkt_t and dispatched. Out of line, so that the fast path's caller saves
 * no registers for it. */
static void __attribute__((noinline)) recv_full(int src_rank, const void *pkt, size_t len)
{
    xp_pkt_t h;
    size_t hlen;
    if (xp_wire_decode(pkt, len, &h, &hlen) != 0) {
        xp_error("malformed packet header (%zu bytes) from rank %d dropped", len, src_rank);
        return;
    }
    const unsigned char *payload = (const unsigned char *)pkt + hlen;
    len -= hlen;
    if (h.type == XP_PKT_ACK || h.type == XP_PKT_REPLY)
        xp_eng_handle_answer(src_rank, &h, payload, len);
    else if (h.type >= XP_PKT_PUT && h.type <= XP_PKT_SWAP)
        handle_request(src_rank, &h, payload, len);
    else
        xp_error("unknown packet type %u from rank %d dropped", h.type, src_rank);
}

/* What the fast paths leave: a compact REPLY or ACK is read in place by its
 * own path, the rest decoded. Out of line and without a frame (both calls are
 * tail calls): a test here rather than in xp_eng_recv leaves the puts' code
 * there as it was, and one in recv_full would follow its register saves. */
static void __attribute__((noinline)) recv_rest(int src_rank, const void *pkt, size_t len)
{
    /* (The type byte is read only from a packet as long as the shorter form.) */
    uint8_t type = len >= sizeof(xp_wire_sack_t) ? *(const uint8_t *)pkt : 0;
    if (len >= sizeof(xp_wire_sreply_t) && type == XP_WIRE_SREPLY)
        xp_eng_handle_sreply(src_rank, pkt, len);
    else if (type == XP_WIRE_SACK)
        xp_eng_handle_sack(src_rank, pkt, len);
    else
        recv_full(src_rank, pkt, len);
}

/* A compact fetch: the one-pass path, else decoded. Out of line, so that
 * xp_eng_recv's frame (and every put through it) stays as it was. */
static void __attribute__((noinline)) recv_sfetch(int src_rank, const void *pkt, size_t len)
{
    if (len >= sizeof(xp_wire_sfetch_t))
        fast_atomic(src_rank, &aform_compact, pkt, len, 1);
    else
        recv_full(src_rank, pkt, len);
}

/* An atomic, fetching atomic or swap with the full header: likewise. */
static void __attribute__((noinline)) recv_atomic(int src_rank, const void *pkt, size_t len)
{
    if (len >= sizeof(xp_pkt_t))
        fast_atomic(src_rank, &aform_full, pkt, len, 1);
    else
        recv_full(src_rank, pkt, len);
}

static void __attribute__((noinline, cold)) drop_foreign(int src_rank)
{
    xp_error("packet from rank %d, which is not in the job, dropped", src_rank);
}

/* Every call here and in the inlined put path is a tail call: no frame. */
void xp_eng_recv(void *arg, int src_rank, const void *pkt, size_t len)
{
    (void)arg;
    const xp_ptl_state_t *st = xp_ptl_state_peek();
    if (__builtin_expect(!st || (unsigned)src_rank >= (unsigned)st->size, 0)) {
        drop_foreign(src_rank);
        return;
    }
    /* Small puts go to the fast path straight from the wire, in any form
     * (the shortest packet that the type tests below take is a tiny put;
     * each handler checks the length its form needs). */
    uint8_t type = len >= sizeof(xp_wire_tput_t) ? *(const uint8_t *)pkt : 0;
    if (type == XP_WIRE_TPUT)
        fast_put_compact(st, src_rank, &form_tiny, pkt, len);
    else if (type == XP_WIRE_SPUT)
        fast_put_compact(st, src_rank, &form_compact, pkt, len);
    else if (type == XP_PKT_PUT && len >= sizeof(xp_pkt_t))
        fast_put_full(st, src_rank, pkt, len);
    else if (type == XP_PKT_FETCH || type == XP_PKT_ATOMIC || type == XP_PKT_SWAP)
        recv_atomic(src_rank, pkt, len);
    else if (type == XP_WIRE_SFETCH)
        recv_sfetch(src_rank, pkt, len);
    else if (type == XP_WIRE_SGET)
        recv_sget(src_rank, pkt, len);
    else if (type == XP_PKT_GET)
        recv_get(src_rank, pkt, len);
    else
        recv_rest(src_rank, pkt, len);
}
