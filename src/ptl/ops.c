/* ptl/ops.c - the initiator side: PtlPut/Get/Atomic/FetchAtomic/Swap, sending
 * packets (with deferral from the handler) and the answers (ACK, REPLY). */
#include <stdlib.h>
#include <string.h>

#include "ptl/atomic_ops.h"
#include "ptl/ct.h"
#include "ptl/direct.h"
#include "ptl/engine.h"
#include "ptl/eq.h"
#include "ptl/md.h"
#include "ptl/progress.h"
#include "ptl/triggered.h"
#include "ptl/wire.h"
#include "transport/inplace.h"
#include "transport/transport.h"
#include "util/copy.h"
#include "util/log.h"

#define MAX_SEGS 64

size_t xp_eng_inline_max(int rank)
{
    size_t p = xp_tl_max_packet(rank);
    return p > sizeof(xp_pkt_t) ? p - sizeof(xp_pkt_t) : 0;
}

size_t xp_eng_eager_max(int rank)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    size_t inl = xp_eng_inline_max(rank);
    return r && r->eager_max < inl ? r->eager_max : inl;
}

/* ---------------------------------------------------------------- sending */

/* Hand one engine packet to the transport, its header in the compact wire
 * form when one fits (ptl/wire.h). excl: the caller holds the poll lock
 * (answers go on the pair answer lane). The route's checks are made here,
 * once; anything unusual goes through xp_tl_send's own checks. */
static inline xp_status_t wire_send(int rank, const xp_pkt_t *h, const void *payload, size_t len,
                                    int excl)
{
    xp_wire_t w;
    size_t hlen;
    const void *hdr = xp_wire_encode(h, len, &w, &hlen);
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (__builtin_expect(r && (payload || !len) && len <= r->max_packet &&
                             hlen <= r->max_packet - len,
                         1))
        return excl ? xp_tl_route_send_excl(r, rank, hdr, hlen, payload, len)
                    : xp_tl_route_send(r, rank, hdr, hlen, payload, len);
    return excl ? xp_tl_send_excl(rank, hdr, hlen, payload, len)
                : xp_tl_send(rank, hdr, hlen, payload, len);
}

/* wire_send of a request on a route the caller looked up and checked the
 * length against (r NULL, or a NULL payload: xp_tl_send makes the checks). */
static inline xp_status_t wire_send_route(const xp_tl_route_t *r, int rank, const xp_pkt_t *h,
                                          const void *payload, size_t len)
{
    xp_wire_t w;
    size_t hlen;
    const void *hdr = xp_wire_encode(h, len, &w, &hlen);
    if (__builtin_expect(r && (payload || !len), 1)) {
        /* In place in the peer's ring when the route lets this thread: the
         * encoded header and the payload copied once, no send call. */
        xp_tl_cell_t cell;
        unsigned char *c = xp_tl_route_reserve(r, hlen + len, &cell);
        if (__builtin_expect(c != NULL, 1)) {
            if (hlen == sizeof(xp_pkt_t))
                memcpy(c, hdr, sizeof(xp_pkt_t));
            else
                xp_tl_copy_small(c, hdr, hlen);
            xp_tl_copy_small(c + hlen, payload, len);
            xp_tl_route_commit(r, &cell);
            return XP_OK;
        }
        return xp_tl_route_send(r, rank, hdr, hlen, payload, len);
    }
    return xp_tl_send(rank, hdr, hlen, payload, len);
}

typedef struct xp_deferred {
    struct xp_deferred *next;
    int rank;
    size_t len;
    xp_pkt_t hdr;
    unsigned char payload[];
} xp_deferred_t;

/* The queue of deferred answers, the gathered ACK (`many`) and defer_count
 * belong to the poll-lock holder: every handler that answers, and every
 * flush (xp_ptl_progress, or PtlFini once nobody polls), holds it. So they
 * take no lock, and defer_count, which other threads read to decide
 * whether to poll, changes by a plain store: a mutex and a locked add here
 * each waited for the handler's stores to drain, between a put's delivery
 * and its ACK (round 25). A sleeper that must retry what stays queued is
 * woken by xp_ptl_poll_deferred (xp_ptl_notify fences first). */
static inline void defer_count_add(xp_ptl_state_t *st, int d)
{
    __atomic_store_n(&st->defer_count, __atomic_load_n(&st->defer_count, __ATOMIC_RELAXED) + d,
                     __ATOMIC_RELEASE);
}

static void defer(xp_ptl_state_t *st, int rank, const xp_pkt_t *hdr, const void *p, size_t len)
{
    xp_deferred_t *d = malloc(sizeof(*d) + len);
    if (!d) {
        xp_error("out of memory deferring an answer to rank %d: answer lost", rank);
        return;
    }
    d->next = NULL;
    d->rank = rank;
    d->len = len;
    d->hdr = *hdr;
    if (len)
        memcpy(d->payload, p, len);
    if (st->defer_tail)
        st->defer_tail->next = d;
    else
        st->defer_head = d;
    st->defer_tail = d;
    defer_count_add(st, 1);
}

/* The full header of `count` gathered counting ACKs (deferred, or sent off
 * the in-place path). */
static void ack_hdr(xp_pkt_t *h, uint8_t slot, uint8_t ack_req, uint8_t ptl_list,
                    uint32_t md_handle, uint64_t mlength, uint32_t count)
{
    memset(h, 0, sizeof(*h));
    h->type = XP_PKT_ACK;
    h->slot = slot;
    h->ack_req = ack_req;
    h->fail = PTL_NI_OK;
    h->ptl_list = ptl_list;
    h->md_handle = md_handle;
    h->mlength = mlength;
    if (count > 1) {
        h->flags = XP_PKT_F_MANY;
        h->nseg = count;
    }
}

/* Send the gathered ACKs: written in place in the answer lane as the
 * compact form xp_wire_encode makes of ack_hdr (no header on the stack to
 * encode and copy). 0 if the peer's ring is full. */
static int send_many(xp_ptl_state_t *st)
{
    if (!st->many.count)
        return 1;
    int rank = st->many.rank;
    const xp_tl_route_t *r = xp_tl_route(rank);
    xp_tl_cell_t cell;
    xp_wire_sack_t *c = r && sizeof(*c) <= r->max_packet
                            ? xp_tl_route_reserve_excl(r, sizeof(*c), &cell)
                            : NULL;
    xp_status_t rc = XP_OK;
    if (__builtin_expect(c != NULL, 1)) {
        int many = st->many.count > 1;
        xp_wire_sack_write(c, st->many.slot, st->many.ack_req, many ? XP_PKT_F_MANY : 0,
                           PTL_NI_OK, st->many.ptl_list, st->many.md_handle,
                           many ? st->many.count : 0, st->many.mlength);
        xp_tl_route_commit_excl(r, &cell);
    } else {
        xp_pkt_t h;
        ack_hdr(&h, st->many.slot, st->many.ack_req, st->many.ptl_list, st->many.md_handle,
                st->many.mlength, st->many.count);
        rc = wire_send(rank, &h, NULL, 0, 1);
    }
    if (rc == XP_ERR_AGAIN)
        return 0;
    if (rc != XP_OK)
        xp_warn("acknowledgements to rank %d lost: %s", rank, xp_status_string(rc));
    st->many.count = 0;
    defer_count_add(st, -1);
    return 1;
}

void xp_eng_ack_first(int rank, uint8_t slot, uint8_t ack_req, uint32_t md_handle,
                      uint8_t ptl_list, uint64_t mlength)
{
    xp_ptl_state_t *st = xp_ptl_state();
    /* (Poll-lock holder only, as the queue: see defer_count_add.) */
    if (xp_eng_ack_join(st, rank, md_handle, mlength))
        return;
    /* Anything already waiting goes first. */
    if ((st->many.count && !send_many(st)) || st->defer_head) {
        xp_pkt_t h;
        ack_hdr(&h, slot, ack_req, ptl_list, md_handle, mlength, 1);
        defer(st, rank, &h, NULL, 0);
        return;
    }
    st->many.rank = rank;
    st->many.slot = slot;
    st->many.ack_req = ack_req;
    st->many.ptl_list = ptl_list;
    st->many.md_handle = md_handle;
    st->many.mlength = mlength;
    st->many.count = 1;
    defer_count_add(st, 1);
}

void xp_eng_ack_many(int rank, const xp_pkt_t *a)
{
    xp_eng_ack_first(rank, a->slot, a->ack_req, a->md_handle, a->ptl_list, a->mlength);
}

void xp_eng_flush_deferred(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    if (!send_many(st))
        return;
    while (st->defer_head) {
        xp_deferred_t *d = st->defer_head;
        xp_status_t rc = wire_send(d->rank, &d->hdr, d->payload, d->len, 1);
        if (rc == XP_ERR_AGAIN)
            break;
        if (rc != XP_OK)
            xp_warn("answer to rank %d lost: %s", d->rank, xp_status_string(rc));
        st->defer_head = d->next;
        if (!st->defer_head)
            st->defer_tail = NULL;
        defer_count_add(st, -1);
        free(d);
    }
}

xp_status_t xp_eng_send(int rank, const xp_pkt_t *hdr, const void *payload, size_t len,
                        const void *payload2, size_t len2, int in_handler)
{
    xp_ptl_state_t *st = xp_ptl_state();
    unsigned char buf[len2 ? len + len2 : 1];
    xp_status_t rc;
    if (len2) {
        memcpy(buf, payload, len);
        memcpy(buf + len, payload2, len2);
        payload = buf;
        len += len2;
    }
    if (in_handler) {
        /* Keep answers in order behind deferred ones. */
        if (__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE)) {
            xp_eng_flush_deferred();
            if (__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE)) {
                defer(st, rank, hdr, payload, len);
                return XP_OK;
            }
        }
        rc = wire_send(rank, hdr, payload, len, 1);
        if (rc == XP_ERR_AGAIN) {
            defer(st, rank, hdr, payload, len);
            return XP_OK;
        }
        return rc;
    }
    for (unsigned spins = 0;;) {
        rc = wire_send(rank, hdr, payload, len, 0);
        if (rc != XP_ERR_AGAIN)
            return rc;
        if (xp_ptl_progress() == 0)
            xp_ptl_busy_pause(st, &spins);
    }
}

void xp_eng_send_sreply(int rank, const xp_wire_sreply_t *w, const void *data, size_t len)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (__builtin_expect(r && !__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE) &&
                             sizeof(*w) + len <= r->max_packet,
                         1) &&
        xp_tl_route_send_excl(r, rank, w, sizeof(*w), data, len) == XP_OK)
        return;
    /* Deferred answers first, a full ring, an unusual route: the general
     * answer send (which encodes the same compact form when it goes). */
    xp_pkt_t h;
    xp_wire_sreply_unpack(w, len, &h);
    xp_status_t rc = xp_eng_send(rank, &h, data, len, NULL, 0, 1);
    if (rc != XP_OK)
        xp_warn("answer to rank %d failed: %s", rank, xp_status_string(rc));
}

/* Send a request whose answer may arrive before we post the SEND event: hold
 * the poll lock (no answer can be handled meanwhile) across the send and the
 * event. On a full ring, let go of the lock so progress can drain it. */
static xp_status_t send_then_event(int rank, const xp_pkt_t *h, const void *payload, size_t len,
                                   void (*event)(void *), void *arg)
{
    xp_ptl_state_t *st = xp_ptl_state();
    for (unsigned spins = 0;;) {
        xp_poll_lock(st);
        xp_status_t rc = wire_send(rank, h, payload, len, 0);
        if (rc == XP_OK)
            event(arg);
        xp_poll_unlock(st);
        if (rc != XP_ERR_AGAIN)
            return rc;
        if (xp_ptl_progress() == 0)
            xp_ptl_busy_pause(st, &spins);
    }
}

/* ---------------------------------------------------------------- initiator events */

static void md_count(xp_md_t *md, unsigned opt, int ok, ptl_size_t bytes)
{
    if (!md->ct || !(md->options & opt))
        return;
    if (!ok)
        xp_ct_add(md->ct, 0, 1);
    else
        xp_ct_add(md->ct, (md->options & PTL_MD_EVENT_CT_BYTES) ? bytes : 1, 0);
}

/* n successful counting ACKs, `bytes` delivered in all, on md's CT (one
 * gathered ACK, or one counted in place: xp_eng_handle_sack). */
static inline void ack_count(xp_md_t *md, uint64_t n, ptl_size_t bytes)
{
    if (md->ct && (md->options & PTL_MD_EVENT_CT_ACK))
        xp_ct_add(md->ct, (md->options & PTL_MD_EVENT_CT_BYTES) ? bytes : n, 0);
}

static void md_event(xp_md_t *md, ptl_event_kind_t type, ptl_ni_fail_t fail, void *user_ptr,
                     const xp_pkt_t *h, ptl_size_t local_offset)
{
    ptl_event_t ev;
    if (!md->eq)
        return;
    if (fail == PTL_NI_OK) {
        if (md->options & PTL_MD_EVENT_SUCCESS_DISABLE)
            return;
        if (type == PTL_EVENT_SEND && (md->options & PTL_MD_EVENT_SEND_DISABLE))
            return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.user_ptr = user_ptr;
    ev.ni_fail_type = fail;
    ev.start = xp_region_addr(&md->region, local_offset);
    if (h) {
        ev.hdr_data = h->hdr_data;
        ev.match_bits = h->match_bits;
        ev.rlength = h->rlength;
        ev.mlength = h->mlength;
        ev.remote_offset = h->remote_offset;
        ev.pt_index = h->pt_index;
        ev.ptl_list = (ptl_list_t)h->ptl_list;
        ev.atomic_operation = (ptl_op_t)h->atomic_op;
        ev.atomic_type = (ptl_datatype_t)h->atomic_type;
        ev.uid = xp_ptl_state()->uid;
    }
    xp_eq_push(md->eq, &ev);
    xp_ptl_notify();
}

/* The SEND event of an operation (local completion). */
static void send_done(xp_md_t *md, ptl_ni_fail_t fail, void *user_ptr, const xp_pkt_t *h,
                      ptl_size_t local_offset)
{
    /* Count first: whoever sees the event may read (or reset) the counter. */
    md_count(md, PTL_MD_EVENT_CT_SEND, fail == PTL_NI_OK, h ? h->rlength : 0); /* wakes */
    md_event(md, PTL_EVENT_SEND, fail, user_ptr, h, local_offset);
}

typedef struct send_ev {
    xp_md_t *md;
    void *user_ptr;
    const xp_pkt_t *h;
    ptl_size_t local_offset;
} send_ev_t;

/* Whether a successful send owes anything at all (an event or a count). */
static inline int send_noticed(const xp_md_t *md)
{
    return md->eq || (md->ct && (md->options & PTL_MD_EVENT_CT_SEND));
}

static void send_ev_post(void *arg)
{
    send_ev_t *e = arg;
    send_done(e->md, PTL_NI_OK, e->user_ptr, e->h, e->local_offset);
}

/* Send an inline request and post its SEND event, in that order with
 * respect to the answer when the MD has an event queue. r: the route to
 * rank when the caller looked it up and checked the length against it
 * (NULL: xp_tl_send makes the checks). */
static inline __attribute__((always_inline)) xp_status_t
send_inline(const xp_tl_route_t *r, int rank, xp_md_t *md, const xp_pkt_t *h, const void *payload,
            size_t len, void *user_ptr, ptl_size_t local_offset, int answer)
{
    send_ev_t e = { md, user_ptr, h, local_offset };
    xp_status_t rc;
    if (answer && md->eq)
        return send_then_event(rank, h, payload, len, send_ev_post, &e);
    /* The common small put: straight to the transport (xp_eng_send's
     * gather and handler cases do not apply), no SEND event to post when
     * the MD has no EQ and does not count sends. */
    rc = wire_send_route(r, rank, h, payload, len);
    if (__builtin_expect(rc == XP_ERR_AGAIN, 0))
        rc = xp_eng_send(rank, h, payload, len, NULL, 0, 0);
    if (rc == XP_OK && send_noticed(md))
        send_ev_post(&e);
    return rc;
}

/* Copy a reply's inline data into a plain MD: fixed-size copies for the
 * common small atomic results, the library for the rest. */
static inline void reply_copy(char *dst, const unsigned char *src, size_t n)
{
    if (n >= 8 && n <= 16) {
        __builtin_memcpy(dst, src, 8);
        __builtin_memcpy(dst + n - 8, src + n - 8, 8);
    } else {
        memcpy(dst, src, n);
    }
}

/* A REPLY whose data waits in a bounce block of the target (its xp_seg_t
 * is the payload): copy it into the MD, then give the block back. Returns
 * the REPLY's failure. */
static __attribute__((noinline, cold)) ptl_ni_fail_t
reply_bounce(int src_rank, xp_md_t *md, const xp_pkt_t *h, const void *payload, size_t len,
             ptl_ni_fail_t fail)
{
    xp_seg_t s;
    if (len != sizeof(s)) {
        xp_error("malformed bounce reply from rank %d for MD %#x", src_rank, h->md_handle);
        return PTL_NI_SEGV;
    }
    memcpy(&s, payload, sizeof(s));
    if (fail == PTL_NI_OK) {
        struct iovec local[MAX_SEGS];
        /* The echoed offset and the length are the peer's word: only into the MD. */
        int n = s.len == h->mlength && xp_region_holds(&md->region, h->local_offset, s.len)
                    ? xp_region_iov(&md->region, h->local_offset, s.len, local, MAX_SEGS)
                    : -1;
        /* (The target may still be staging it: we copy behind it.) */
        if (n < 0 || (s.len && xp_tl_bounce_read(src_rank, local, n, s.addr, s.len) != XP_OK)) {
            xp_error("reply from rank %d: %llu bounce bytes not copied into MD %#x", src_rank,
                     (unsigned long long)s.len, h->md_handle);
            fail = PTL_NI_SEGV;
        }
    }
    xp_tl_bounce_done(src_rank, s.addr);
    return fail;
}

/* Pipelined bounce blocks: a block above BOUNCE_WHOLE bytes goes out after
 * its first BOUNCE_FIRST bytes and is published per BOUNCE_CHUNK, so that
 * the reader's copy overlaps ours (sizes from a sweep of five choices,
 * docs/performance-notes.md round 11; they were close to one another). */
#define BOUNCE_WHOLE (64u << 10)
#define BOUNCE_FIRST (8u << 10)
#define BOUNCE_CHUNK (32u << 10)

size_t xp_eng_bounce_first(size_t len)
{
    return len <= BOUNCE_WHOLE ? len : BOUNCE_FIRST;
}

void xp_eng_bounce_stage(int rank, const xp_region_t *rg, uint64_t off, unsigned char *b,
                         size_t from, size_t to, int last)
{
    while (from < to) {
        size_t n = to - from < BOUNCE_CHUNK ? to - from : BOUNCE_CHUNK;
        xp_region_read(rg, off + from, b + from, n);
        from += n;
        if (from < to || last)
            xp_tl_bounce_fill(rank, b, from);
    }
}

void xp_eng_bounce_give_back(int rank, const void *payload, size_t len)
{
    xp_seg_t s;
    if (len < sizeof(s))
        return;
    memcpy(&s, payload, sizeof(s));
    xp_tl_bounce_done(rank, s.addr);
}

/* An answer that is dropped: a bounce block it names goes back anyway. */
static __attribute__((noinline, cold)) void answer_dropped(int src_rank, const xp_pkt_t *h,
                                                           const void *payload, size_t len)
{
    if (h->flags & XP_PKT_F_BOUNCE)
        xp_eng_bounce_give_back(src_rank, payload, len);
}

/* An acknowledgement h (not XP_PKT_F_NOACK) reached md: its count and
 * event as the request's ack_req asks. */
static void ack_done(xp_md_t *md, const xp_pkt_t *h, void *user_ptr)
{
    int ok = h->fail == PTL_NI_OK;
    switch (h->ack_req) {
    case PTL_ACK_REQ:
        md_count(md, PTL_MD_EVENT_CT_ACK, ok, h->mlength);
        md_event(md, PTL_EVENT_ACK, h->fail, user_ptr, h, h->local_offset);
        break;
    case PTL_CT_ACK_REQ:
        if (h->flags & XP_PKT_F_MANY) {
            ack_count(md, h->nseg, h->mlength);
        } else {
            md_count(md, PTL_MD_EVENT_CT_ACK, ok, h->mlength);
        }
        break;
    case PTL_OC_ACK_REQ:
        if (md->ct && (md->options & PTL_MD_EVENT_CT_ACK))
            xp_ct_add(md->ct, ok ? 1 : 0, ok ? 0 : 1);
        break;
    default:
        break;
    }
}

void xp_eng_handle_answer(int src_rank, const xp_pkt_t *h, const void *payload, size_t len)
{
    /* xp_md_from_handle, inline (generation-checked). */
    xp_md_t *md = xp_handle_lookup(&xp_ptl_state()->md_table, h->md_handle);
    void *user_ptr = (void *)(uintptr_t)h->user_ptr;
    int ok = h->fail == PTL_NI_OK;
    if (!md) {
        xp_debug("answer from rank %d for a released MD %#x dropped", src_rank, h->md_handle);
        answer_dropped(src_rank, h, payload, len);
        return;
    }
    /* Only the poll-lock holder takes answers, so pending cannot drop to 0
     * under us: an MD that expects no answer gets none from a sane peer. */
    uint64_t pending = xp_md_pending(md);
    if (!pending) {
        xp_error("answer from rank %d for MD %#x, which expects none, dropped", src_rank,
                 h->md_handle);
        answer_dropped(src_rank, h, payload, len);
        return;
    }
    /* Gathered ACKs (xp_eng_ack_many): only successful counting ones, never
     * more than the MD still expects. */
    if ((h->flags & XP_PKT_F_MANY) &&
        (h->type != XP_PKT_ACK || h->ack_req != PTL_CT_ACK_REQ || !ok || h->nseg < 2 ||
         (h->flags & (XP_PKT_F_NOACK | XP_PKT_F_SENDEV)) ||
         h->nseg > pending)) {
        xp_error("malformed gathered acknowledgement from rank %d for MD %#x dropped", src_rank,
                 h->md_handle);
        return;
    }
    if (h->type == XP_PKT_ACK) {
        if (h->flags & XP_PKT_F_SENDEV)
            send_done(md, PTL_NI_OK, user_ptr, h, h->local_offset);
        if (!(h->flags & XP_PKT_F_NOACK))
            ack_done(md, h, user_ptr);
    } else {
        /* REPLY: inline data lands in the MD now (RMA data is already there). */
        ptl_ni_fail_t fail = h->fail;
        if (ok && len > 0 && !(h->flags & XP_PKT_F_RMA)) {
            size_t n = len < h->mlength ? len : h->mlength;
            /* The echoed offset is the peer's word: never write outside the MD. */
            if (xp_region_holds(&md->region, h->local_offset, n)) {
                if (!md->region.iov)
                    reply_copy((char *)((uintptr_t)md->region.start + h->local_offset), payload,
                               n);
                else
                    xp_region_write(&md->region, h->local_offset, payload, n);
            } else {
                xp_error("reply from rank %d outside MD %#x (offset %llu, %zu bytes) not written",
                         src_rank, h->md_handle, (unsigned long long)h->local_offset, n);
                fail = PTL_NI_SEGV;
            }
        } else if (h->flags & XP_PKT_F_BOUNCE) {
            fail = reply_bounce(src_rank, md, h, payload, len, fail);
        }
        md_count(md, PTL_MD_EVENT_CT_REPLY, fail == PTL_NI_OK, h->mlength);
        md_event(md, PTL_EVENT_REPLY, fail, user_ptr, h, h->local_offset);
    }
    xp_ptl_notify();
    xp_md_answered(md, (h->flags & XP_PKT_F_MANY) ? h->nseg : 1);
}


/* reply_finish's CT count after xp_ct_count_polled said there is more to
 * do (waiters to wake, triggered operations). */
static void __attribute__((noinline)) reply_count_rest(xp_ct_t *ct)
{
    if (xp_ct_add_polled_rest(ct))
        xp_ct_fire(ct);
}

/* The end of a successful compact REPLY of n bytes (written already): mark
 * it answered, then count it on the MD's CT, inline when the caller is the
 * thread handling packets in xp_ptl_progress (as the target's one-pass
 * paths count), else with xp_ct_add. Every call is a tail call, so that
 * xp_eng_handle_sreply needs no frame. Answered before counted: a thread
 * that sees the count and releases the MD takes the poll lock, which the
 * handler holds until both are done. No xp_ptl_notify (a locked fence):
 * with no EQ, what this answer changes that anybody may wait for is the
 * CT, and a CT count wakes its waiters itself (wake_at). */
static inline __attribute__((always_inline)) void reply_finish(xp_md_t *md, size_t n)
{
    xp_md_answered(md, 1);
    xp_ct_t *ct = md->ct;
    if (!ct || !(md->options & PTL_MD_EVENT_CT_REPLY))
        return;
    uint64_t success = (md->options & PTL_MD_EVENT_CT_BYTES) ? n : 1;
    const xp_ptl_state_t *st = xp_ptl_state_peek();
    if (__builtin_expect(__atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) != xp_thread_id(), 0)) {
        xp_ct_add(ct, success, 0);
        return;
    }
    if (__builtin_expect(
            xp_ct_count_polled(ct, success, __atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED)), 0))
        reply_count_rest(ct);
}

/* A compact REPLY's copy of a size other than 8..16 bytes (library call),
 * then its end: out of line, so that the common case makes no call. */
static void __attribute__((noinline)) reply_copy_finish(xp_md_t *md, char *dst,
                                                        const unsigned char *src, size_t n)
{
    xp_copy(dst, src, n);
    reply_finish(md, n);
}

/* The general answer path for a compact REPLY or ACK (malformed ones
 * dropped). */
static void __attribute__((noinline)) answer_general(int src_rank, const void *pkt, size_t len)
{
    xp_pkt_t h;
    size_t hlen;
    if (xp_wire_decode(pkt, len, &h, &hlen) != 0) {
        xp_error("malformed reply header (%zu bytes) from rank %d dropped", len, src_rank);
        return;
    }
    xp_eng_handle_answer(src_rank, &h, (const unsigned char *)pkt + hlen, len - hlen);
}

void xp_eng_handle_sreply(int src_rank, const void *pkt, size_t len)
{
    const unsigned char *p = pkt;
    size_t n = len - sizeof(xp_wire_sreply_t);
    /* What xp_eng_handle_answer does for a successful inline REPLY to a
     * plain MD that posts no event: write, mark answered, count.
     * Released MDs, unexpected answers, failures, events, iovec MDs and
     * offsets outside the MD take its path (with its messages). */
    if (p[offsetof(xp_wire_sreply_t, len)] != (uint8_t)n ||
        p[offsetof(xp_wire_sreply_t, fail)] != PTL_NI_OK)
        goto general;
    /* (The state exists while packets are handled: peek makes no call.) */
    xp_ptl_state_t *st = xp_ptl_state_peek();
    if (__builtin_expect(!st, 0))
        goto general;
    /* The MD from the memo when the previous REPLY was for it too. */
    ptl_handle_md_t h = xp_wire_load32(p, offsetof(xp_wire_sreply_t, md_handle));
    uint64_t epoch = __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
    xp_md_t *md;
    if (__builtin_expect(st->sreply_memo.md_handle == h && st->sreply_memo.epoch == epoch, 1)) {
        md = st->sreply_memo.md;
    } else {
        md = xp_handle_lookup(&st->md_table, h);
        if (md) {
            st->sreply_memo.md_handle = h;
            st->sreply_memo.epoch = epoch;
            st->sreply_memo.md = md;
        }
    }
    if (!md || md->eq || md->region.iov || !xp_md_pending(md))
        goto general;
    uint64_t off = xp_wire_load64(p, offsetof(xp_wire_sreply_t, local_offset));
    if (!xp_region_holds(&md->region, off, n))
        goto general;
    char *dst = (char *)((uintptr_t)md->region.start + off);
    const unsigned char *src = p + sizeof(xp_wire_sreply_t);
    if (__builtin_expect(n < 8 || n > 16, 0)) {
        reply_copy_finish(md, dst, src, n);
        return;
    }
    __builtin_memcpy(dst, src, 8);
    __builtin_memcpy(dst + n - 8, src + n - 8, 8);
    reply_finish(md, n);
    return;
general:
    answer_general(src_rank, pkt, len);
}

void xp_eng_handle_sack(int src_rank, const void *pkt, size_t len)
{
    const unsigned char *p = pkt;
    /* What xp_eng_handle_answer does for a successful counting ACK, one or
     * gathered (XP_PKT_F_MANY): count it on the MD's CT, mark it answered.
     * Every other ACK, a released MD, an answer the MD does not expect and
     * a malformed gathered one take its path (with its messages). Through
     * the decoder and the full header it took ~250 instructions. */
    uint8_t flags = p[offsetof(xp_wire_sack_t, flags)];
    if (p[offsetof(xp_wire_sack_t, ack_req)] != PTL_CT_ACK_REQ ||
        p[offsetof(xp_wire_sack_t, fail)] != PTL_NI_OK || (flags & ~(unsigned)XP_PKT_F_MANY))
        goto general;
    xp_ptl_state_t *st = xp_ptl_state_peek();
    if (__builtin_expect(!st, 0))
        goto general;
    xp_md_t *md = xp_handle_lookup(&st->md_table, xp_wire_load32(p, offsetof(xp_wire_sack_t,
                                                                              md_handle)));
    uint64_t n = flags ? xp_wire_load32(p, offsetof(xp_wire_sack_t, nseg)) : 1;
    if (!md || (flags && n < 2) || n > xp_md_pending(md))
        goto general;
    ack_count(md, n, xp_wire_load64(p, offsetof(xp_wire_sack_t, mlength)));
    xp_ptl_notify();
    xp_md_answered(md, n);
    return;
general:
    answer_general(src_rank, pkt, len);
}

/* ---------------------------------------------------------------- requests */

/* The process state once PtlInit succeeded, else NULL (PTL_NO_INIT):
 * xp_ptl_initialized without a call. */
static inline xp_ptl_state_t *ready_state(void)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    return __builtin_expect(st && __atomic_load_n(&st->init_count, __ATOMIC_ACQUIRE) > 0, 1)
               ? st
               : NULL;
}

/* The MD behind a handle (generation-checked: NULL when stale or invalid). */
static inline xp_md_t *md_lookup(xp_ptl_state_t *st, ptl_handle_md_t h)
{
    return xp_handle_lookup(&st->md_table, h);
}

/* The route for a request of `length` inline bytes to rank, NULL when the
 * request must take the general path (unreachable rank, too large). */
static inline const xp_tl_route_t *inline_route(int rank, size_t length)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r && r->max_packet >= sizeof(xp_pkt_t) && length <= r->max_packet - sizeof(xp_pkt_t)
               ? r
               : NULL;
}

/* The same for put or get data, which may go otherwise above the route's
 * eager_max (xp_eng_eager_max). */
static inline const xp_tl_route_t *eager_route(int rank, size_t length)
{
    const xp_tl_route_t *r = inline_route(rank, length);
    return r && length <= r->eager_max ? r : NULL;
}

/* The largest put from MDs with these options that goes inline to rank: a
 * PTL_MD_VOLATILE MD's buffer may be reused as soon as PtlPut returns, up to
 * max_volatile_size (xp_eng_inline_max), so its data must be in the packet
 * by then; other MDs' puts go inline up to the eager limit. */
static inline size_t put_inline_max(int rank, unsigned md_options)
{
    return (md_options & PTL_MD_VOLATILE) ? xp_eng_inline_max(rank) : xp_eng_eager_max(rank);
}

/* The route for a put of length bytes from md inline, by the same rule;
 * NULL: it does not go inline. */
static inline const xp_tl_route_t *put_route(int rank, const xp_md_t *md, size_t length)
{
    return (md->options & PTL_MD_VOLATILE) ? inline_route(rank, length) : eager_route(rank, length);
}

/* One store per field, the rest zero (no clear-then-fill of 80 bytes). */
static inline void pkt_init(xp_pkt_t *h, xp_ptl_state_t *st, xp_pkt_type_t type,
                            const xp_md_t *md, ptl_pt_index_t pt_index,
                            ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                            void *user_ptr, ptl_hdr_data_t hdr_data, ptl_size_t length)
{
    *h = (xp_pkt_t){
        .type = (uint8_t)type,
        .slot = (uint8_t)md->ni->slot,
        .pt_index = pt_index,
        .md_handle = md->handle,
        .uid = st->uid,
        .match_bits = match_bits,
        .hdr_data = hdr_data,
        .rlength = length,
        .remote_offset = remote_offset,
        .user_ptr = (uint64_t)(uintptr_t)user_ptr,
    };
}

/* Segments of md covering [off, off+len) for the target's RMA. */
static int make_segs(const xp_md_t *md, ptl_size_t off, ptl_size_t len, xp_seg_t *segs)
{
    struct iovec iov[MAX_SEGS];
    int n = xp_region_iov(&md->region, off, len, iov, MAX_SEGS);
    for (int i = 0; i < n; i++) {
        segs[i].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
        segs[i].len = iov[i].iov_len;
    }
    return n;
}

/* Describe [local_offset, +length) of md as RMA segments in h and segs, for a
 * transfer too large for one packet. Returns the segment count, or
 * -PTL_FAIL when the transport to rank cannot do single-copy RMA
 * (fragmentation is not implemented), or -PTL_ARG_INVALID. */
static int rma_segs(const char *call, int rank, xp_md_t *md, ptl_size_t local_offset,
                    ptl_size_t length, xp_pkt_t *h, xp_seg_t *segs)
{
    if (!(xp_tl_caps(rank) & XP_TL_CAP_RMA)) {
        xp_error("%s: %zu bytes with rank %d need single-copy RMA, which this transport "
                 "lacks (fragmentation is not implemented)", call, (size_t)length, rank);
        return -PTL_FAIL;
    }
    int n = make_segs(md, local_offset, length, segs);
    if (n < 0)
        return -PTL_ARG_INVALID;
    h->flags |= XP_PKT_F_RMA;
    h->nseg = (uint32_t)n;
    return n;
}

static int check_range(const xp_md_t *md, ptl_size_t off, ptl_size_t len)
{
    return xp_region_holds(&md->region, off, len) && len <= md->ni->limits.max_msg_size;
}

/* The operation could not be handed to the transport: report it as the
 * specification does, through events (the call itself succeeded). */
static void undeliverable(xp_md_t *md, const xp_pkt_t *h, int expects_answer, xp_md_t *get_md,
                          ptl_size_t get_off)
{
    send_done(md, PTL_NI_UNDELIVERABLE, (void *)(uintptr_t)h->user_ptr, h, h->local_offset);
    if (get_md) {
        md_event(get_md, PTL_EVENT_REPLY, PTL_NI_UNDELIVERABLE, (void *)(uintptr_t)h->user_ptr, h,
                 get_off);
        md_count(get_md, PTL_MD_EVENT_CT_REPLY, 0, 0);
    }
    if (expects_answer)
        xp_md_unexpect((get_md ? get_md : md));
}

/* The rest of a pipelined bounce put whose request went out after `first`
 * bytes: stage it behind the target's copy, then the SEND event, then the
 * last fill. The target answers only after that fill (its bounce_done
 * waits for it), so the ACK cannot overtake the SEND event. Nothing from
 * the request's send to the last fill may wait for another process (the
 * target's handler waits for us): operations that the SEND count triggers
 * go out after it. */
static void put_bounce_rest(int rank, xp_md_t *md, const xp_pkt_t *h, unsigned char *b,
                            size_t first, void *user_ptr, ptl_size_t local_offset)
{
    xp_eng_bounce_stage(rank, &md->region, local_offset, b, first, (size_t)h->rlength, 0);
    xp_trig_defer_begin();
    if (send_noticed(md))
        send_done(md, PTL_NI_OK, user_ptr, h, local_offset);
    xp_tl_bounce_fill(rank, b, (size_t)h->rlength);
    xp_trig_defer_end();
}

/* A put too large for one packet, staged in a bounce block for rank
 * (xp_tl_bounce_alloc): the target copies it out with one memcpy instead of
 * an RMA read that pins our pages. Our buffer is free again once copied, so
 * it goes out like an inline put (SEND event now, ACK if asked) with the
 * block as its one RMA segment. 0: no block for it (plain RMA then). */
static int put_bounce(int rank, xp_md_t *md, xp_pkt_t *h, ptl_size_t local_offset,
                      ptl_size_t length, void *user_ptr, int answer, xp_status_t *rc)
{
    /* (The target reads the block with xp_tl_readv, as any RMA segment.)
     * Data in our shared heap already: the target copies it from there. */
    if (!(xp_tl_caps(rank) & XP_TL_CAP_RMA) ||
        (!md->region.iov && xp_tl_direct_ours(rank, xp_region_addr(&md->region, local_offset),
                                              (size_t)length)))
        return 0;
    unsigned char *b = xp_tl_bounce_alloc(rank, (size_t)length);
    if (!b)
        return 0;
    size_t first = xp_eng_bounce_first((size_t)length);
    xp_eng_bounce_stage(rank, &md->region, local_offset, b, 0, first, 1);
    xp_seg_t seg = { .addr = (uint64_t)(uintptr_t)b, .len = length };
    h->flags |= XP_PKT_F_RMA | XP_PKT_F_BOUNCE;
    h->nseg = 1;
    if (answer)
        xp_md_expect(md);
    if (first == length) {
        *rc = send_inline(NULL, rank, md, h, &seg, sizeof(seg), user_ptr, local_offset, answer);
    } else {
        *rc = xp_eng_send(rank, h, &seg, sizeof(seg), NULL, 0, 0);
        if (*rc == XP_OK)
            put_bounce_rest(rank, md, h, b, first, user_ptr, local_offset);
        else
            xp_tl_bounce_fill(rank, b, length); /* the last fill, for the owner */
    }
    if (*rc != XP_OK) /* nobody will read it */
        xp_tl_bounce_cancel(rank, b);
    return 1;
}

/* PtlPut's cases other than a contiguous inline payload on a known route:
 * unreachable rank, scattered (iovec) data, RMA. */
static __attribute__((noinline, cold)) int put_general(int rank, xp_md_t *md, xp_pkt_t *h,
                                                        ptl_size_t local_offset,
                                                        ptl_size_t length, void *user_ptr)
{
    int rma, answer = h->ack_req != PTL_NO_ACK_REQ;
    size_t inl = put_inline_max(rank, md->options);
    xp_status_t rc;

    rma = length > inl ||
          (md->region.iov && !xp_region_contiguous(&md->region, local_offset, length));
    if (rma && length <= inl) {
        /* Small but scattered: gather it into the packet. */
        unsigned char buf[length ? length : 1];
        xp_region_read(&md->region, local_offset, buf, length);
        if (answer)
            xp_md_expect(md);
        rc = send_inline(NULL, rank, md, h, buf, length, user_ptr, local_offset, answer);
    } else if (rma && put_bounce(rank, md, h, local_offset, length, user_ptr, answer, &rc)) {
        /* sent (or not: rc) like an inline put */
    } else if (rma) {
        xp_seg_t segs[MAX_SEGS];
        int n = rma_segs("PtlPut", rank, md, local_offset, length, h, segs);
        if (n < 0)
            return -n; /* the Portals error code */
        /* The SEND event waits for the target's completion (it reads our buffer). */
        xp_md_expect(md);
        rc = xp_eng_send(rank, h, segs, sizeof(xp_seg_t) * (size_t)n, NULL, 0, 0);
        answer = 1;
    } else {
        if (answer)
            xp_md_expect(md);
        rc = send_inline(NULL, rank, md, h, xp_region_addr(&md->region, local_offset), length,
                         user_ptr, local_offset, answer);
    }
    if (rc != XP_OK)
        undeliverable(md, h, answer, NULL, 0);
    return PTL_OK;
}

/* The route to rank when its target publishes a direct entry on (slot,
 * pt_index) (ptl/direct.h), else NULL: the general paths' look before a
 * direct access (the compact ones have the route from their memo). */
static inline const xp_tl_route_t *direct_route(const xp_ptl_state_t *st, int rank, int slot,
                                                ptl_pt_index_t pt_index)
{
    const xp_tl_route_t *r = st->direct ? xp_tl_route(rank) : NULL;
    return r && xp_direct_maybe(r, slot, pt_index) ? r : NULL;
}

/* The len bytes at off of md for a direct access (ptl/direct.h): where
 * they are in a plain MD, else gathered into buf (len bytes). */
static const void *direct_source(const xp_md_t *md, ptl_size_t off, ptl_size_t len,
                                 unsigned char *buf)
{
    if (!md->region.iov)
        return (const char *)md->region.start + off;
    xp_region_read(&md->region, off, buf, len);
    return buf;
}

/* A direct put or atomic has been applied: what its answer would have
 * brought md, in that order - the SEND event (when anybody notices it),
 * then the ACK when `acked` (asked for, and the entry does not disable
 * it). h is the request's header with the target's mlength and list. */
static void direct_send_ack(xp_md_t *md, xp_pkt_t *h, ptl_size_t local_offset, void *user_ptr,
                            int acked)
{
    if (send_noticed(md))
        send_done(md, PTL_NI_OK, user_ptr, h, local_offset);
    if (acked) {
        h->local_offset = local_offset;
        ack_done(md, h, user_ptr);
    }
}

/* A put of at most st->direct_max bytes (XP_DIRECT_GATHER_MAX from an
 * iovec MD, gathered on the stack) straight into the target's shared heap
 * (ptl/direct.h), when its descriptor allows: the copy, then the SEND event
 * and the ACK the target would have sent, in that order. 1: done; 0:
 * nothing happened, send it. The caller has checked the MD range and
 * ack_req. */
static __attribute__((noinline)) int
put_direct(xp_ptl_state_t *st, const xp_tl_route_t *r, int rank, xp_md_t *md,
           ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
           ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
           void *user_ptr, ptl_hdr_data_t hdr_data)
{
    if (length > st->direct_max || (md->region.iov && length > XP_DIRECT_GATHER_MAX))
        return 0;
    unsigned char buf[md->region.iov ? length : 1];
    unsigned flags;
    if (!xp_direct_put(r, rank, md->ni->slot, pt_index, st->uid, remote_offset,
                       direct_source(md, local_offset, length, buf), length, &flags))
        return 0;
    int acked = ack_req != PTL_NO_ACK_REQ && !(flags & XP_DIRECT_NOACK);
    if (!acked && !send_noticed(md))
        return 1;
    xp_pkt_t h;
    pkt_init(&h, st, XP_PKT_PUT, md, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
             length);
    h.ack_req = (uint8_t)ack_req;
    h.mlength = length;
    h.ptl_list = PTL_PRIORITY_LIST;
    direct_send_ack(md, &h, local_offset, user_ptr, acked);
    return 1;
}

/* PtlPut after its argument checks, with the full header: every case but
 * the compact one. */
static __attribute__((noinline, cold)) int
put_full(xp_ptl_state_t *st, int rank, xp_md_t *md, ptl_size_t local_offset, ptl_size_t length,
         ptl_ack_req_t ack_req, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
         ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data)
{
    const xp_tl_route_t *r;
    xp_pkt_t h;
    int answer = ack_req != PTL_NO_ACK_REQ;
    const void *payload = (const char *)((uintptr_t)md->region.start + local_offset);
    xp_status_t rc;

    r = direct_route(st, rank, md->ni->slot, pt_index);
    if (r && put_direct(st, r, rank, md, local_offset, length, ack_req, pt_index, match_bits,
                        remote_offset, user_ptr, hdr_data))
        return PTL_OK;
    pkt_init(&h, st, XP_PKT_PUT, md, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
             length);
    h.ack_req = (uint8_t)ack_req;
    h.local_offset = local_offset;
    /* A plain (iovec-less, so contiguous) MD and a payload that fits one
     * packet of the route: inline; the rest in put_general. */
    r = put_route(rank, md, length);
    if (!r || md->region.iov)
        return put_general(rank, md, &h, local_offset, length, user_ptr);
    if (answer)
        xp_md_expect(md);
    rc = send_inline(r, rank, md, &h, payload, length, user_ptr, local_offset, answer);
    /* On success the payload was copied into the transport and the SEND
     * event posted: the buffer is free again. */
    if (rc != XP_OK)
        undeliverable(md, &h, answer, NULL, 0);
    return PTL_OK;
}

/* PtlPut's every case but the compact one, with its checks in order (the
 * state and the MD looked up again: PtlPut's compact path keeps nothing for
 * it). */
static __attribute__((noinline, cold)) int
put_checked(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
            ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
            ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
            ptl_hdr_data_t hdr_data)
{
    xp_ptl_state_t *st = ready_state();
    xp_md_t *md;
    int rank;
    if (!st)
        return PTL_NO_INIT;
    md = md_lookup(st, md_handle);
    if (!md || (unsigned)ack_req > PTL_OC_ACK_REQ || !check_range(md, local_offset, length))
        return PTL_ARG_INVALID;
    rank = xp_ni_target_rank(md->ni, target_id);
    if (rank < 0)
        return PTL_ARG_INVALID;
    return put_full(st, rank, md, local_offset, length, ack_req, pt_index, match_bits,
                    remote_offset, user_ptr, hdr_data);
}

/* A compact put on PtlPut's stack: what its rare continuations read back
 * after the send (from memory: only md stays in a register across it). */
typedef struct sput_try {
    xp_wire_sput_t w;
    const void *payload;
    size_t len; /* payload bytes (w.len holds their low byte) */
    int rank;
} sput_try_t;

/* The compact put's first send did not go (rc: a full ring or a failure;
 * its answer is expected already): the full header through xp_eng_send
 * (which encodes the compact form again) or the undeliverable events. The
 * compact form carries neither user_ptr nor the local offset, and no event
 * of an MD without EQ reads them: they stay 0 here too. */
static __attribute__((noinline, cold)) int put_retry(xp_md_t *md, const sput_try_t *t,
                                                      xp_status_t rc)
{
    const xp_wire_sput_t *w = &t->w;
    xp_pkt_t h = {
        .type = XP_PKT_PUT,
        .slot = w->slot,
        .ack_req = w->ack_req,
        .pt_index = w->pt_index,
        .md_handle = w->md_handle,
        .uid = w->uid,
        .match_bits = w->match_bits,
        .hdr_data = w->hdr_data,
        .rlength = t->len,
        .remote_offset = w->remote_offset,
    };
    if (rc == XP_ERR_AGAIN)
        rc = xp_eng_send(t->rank, &h, t->payload, t->len, NULL, 0, 0);
    if (rc == XP_OK)
        md_count(md, PTL_MD_EVENT_CT_SEND, 1, t->len); /* no EQ: no SEND event */
    else
        undeliverable(md, &h, w->ack_req != PTL_NO_ACK_REQ, NULL, 0);
    return PTL_OK;
}

/* A sent compact put from an MD that counts sends. */
static __attribute__((noinline)) int put_count_send(xp_md_t *md, ptl_size_t length)
{
    md_count(md, PTL_MD_EVENT_CT_SEND, 1, length);
    return PTL_OK;
}

/* Route r's in-place state (its lane for this process's requests), or NULL,
 * and that lane's ring in *ring: what a memo keeps so that a hit reserves
 * without loads through the route. */
static inline xp_tl_inplace_t *route_lane(const xp_tl_route_t *r, xp_shm_ring_t **ring)
{
    xp_tl_inplace_t *ip = r->inplace;
    *ring = ip ? ip->ring : NULL;
    return ip;
}

/* 1 + the longest put from md that goes compact on route r: md's own bound
 * (md.c, sput_lim: at most 1 + XP_WIRE_SPUT_MAX), lowered to what r sends
 * inline (XP_SHM_EAGER_MAX). A memo keeps it, so that PtlPut compares a
 * length once. */
static inline uint32_t put_lim(const xp_md_t *md, const xp_tl_route_t *r)
{
    return (uint32_t)(md->sput_lim <= r->eager_max ? md->sput_lim : r->eager_max + 1);
}

/* The route of md's (handle h's) compact sends to `target` (NULL: none, a
 * physical NI, a rank outside the map), with the target's job rank; also
 * remembered in memo m if m is (or becomes) this thread's. `epoch`:
 * put_epoch as read before md was looked up, so that a forget in between
 * leaves the memo stale rather than naming a freed MD. */
static const xp_tl_route_t *memo_route(xp_ptl_state_t *st, struct xp_route_memo *m,
                                       uint64_t epoch, ptl_handle_md_t h, xp_md_t *md,
                                       ptl_rank_t target, int *job_rank)
{
    /* A logical NI's rank and its route for compact sends (xp_ni_map_t). */
    const xp_ni_t *ni = md->ni;
    if (ni->physical)
        return NULL;
    const xp_ni_map_t *map = __atomic_load_n(&ni->map, __ATOMIC_ACQUIRE);
    if (target >= map->size)
        return NULL;
    const xp_tl_route_t *r = map->sput_route[target];
    if (!r)
        return NULL;
    *job_rank = map->rank[target];
    /* (A lane's ring is set when the peer is attached, before any send;
     * one without it is not remembered.) */
    if (r->inplace && !r->inplace->ring)
        return r;
    uintptr_t me = xp_thread_id(), owner = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
    if (owner == me || (owner == 0 && __atomic_compare_exchange_n(&m->owner, &owner, me, 0,
                                                                  __ATOMIC_RELAXED,
                                                                  __ATOMIC_RELAXED))) {
        m->epoch = epoch;
        m->md_handle = h;
        m->rank = target;
        m->job_rank = *job_rank;
        m->put_lim = put_lim(md, r);
        m->md = md;
        m->route = r;
        m->ip = route_lane(r, &m->ring);
    }
    return r;
}

/* Whether memo m holds this thread's last send with MD handle h to
 * `target`, and nothing it names went since. */
static inline int memo_hit(const xp_ptl_state_t *st, const struct xp_route_memo *m,
                           ptl_handle_md_t h, ptl_rank_t target)
{
    return __atomic_load_n(&m->owner, __ATOMIC_RELAXED) == xp_thread_id() &&
           m->md_handle == h && m->rank == target &&
           m->epoch == __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
}

/* What a hit of memo m gives: its MD, job rank, in-place state and ring;
 * returns its route. */
static inline const xp_tl_route_t *memo_take(const struct xp_route_memo *m, xp_md_t **md,
                                             int *job_rank, xp_tl_inplace_t **ip,
                                             xp_shm_ring_t **ring)
{
    *md = m->md;
    *job_rank = m->job_rank;
    *ip = m->ip;
    *ring = m->ring;
    return m->route;
}

/* PtlPut's MD and route when its memo does not have them (out of line:
 * the memo answers the puts that follow). */
static __attribute__((noinline)) const xp_tl_route_t *
put_resolve(xp_ptl_state_t *st, ptl_handle_md_t md_handle, ptl_rank_t target, xp_md_t **mdp,
            int *job_rank)
{
    uint64_t epoch = __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
    xp_md_t *md = md_lookup(st, md_handle);
    if (!md)
        return NULL;
    *mdp = md;
    return memo_route(st, &st->put_memo, epoch, md_handle, md, target, job_rank);
}

int PtlPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
           ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
           ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
           ptl_hdr_data_t hdr_data)
{
    xp_ptl_state_t *st = ready_state();
    const xp_tl_route_t *r;
    xp_md_t *md;
    xp_tl_inplace_t *ip;
    xp_shm_ring_t *ring;
    int rank;

    if (__builtin_expect(!st, 0))
        goto checked;
    /* The common small put goes out in the compact wire form, built
     * directly (what xp_wire_encode makes of the full header): an MD whose
     * sput_lim admits it (plain, no EQ: no SEND event, which reads the full
     * header), an answer that only counts, a logical NI whose route to the
     * target takes the compact form of any length, and a length that route
     * sends inline (its eager_max: XP_SHM_EAGER_MAX). Anything else, invalid
     * arguments included, is put_checked's, which makes every check in
     * order. */
    uint32_t lim;
    if (__builtin_expect(memo_hit(st, &st->put_memo, md_handle, target_id.rank), 1)) {
        r = memo_take(&st->put_memo, &md, &rank, &ip, &ring);
        lim = st->put_memo.put_lim;
    } else if ((r = put_resolve(st, md_handle, target_id.rank, &md, &rank)) != NULL) {
        ip = route_lane(r, &ring);
        lim = put_lim(md, r);
    } else {
        goto checked;
    }
    if (__builtin_expect(length >= lim || !xp_region_holds(&md->region, local_offset, length) ||
                             (unsigned)ack_req > PTL_OC_ACK_REQ || ack_req == PTL_ACK_REQ,
                         0))
        goto checked;
    const void *payload = (const char *)((uintptr_t)md->region.start + local_offset);
    uint8_t slot = md->slot;
    uint32_t uid = st->uid;
    /* Straight into the target's shared heap when it publishes the entry
     * (one load of a line nobody writes when it does not). */
    if (__builtin_expect(st->direct && xp_direct_maybe(r, slot, pt_index), 0)) {
        unsigned flags;
        /* Nothing to deliver but the data and at most a count (OpenSHMEM's
         * puts to the heap, a flag): without put_direct's frame and the
         * header it builds for events (callgrind: 299 -> 253 instructions
         * per 8-byte put without an ACK, 394 -> 301 with a counting one). */
        if (!md->region.iov && length <= st->direct_max &&
            (ack_req == PTL_NO_ACK_REQ || ack_req == PTL_CT_ACK_REQ) && !send_noticed(md)) {
            if (xp_direct_put(r, rank, slot, pt_index, uid, remote_offset, payload, length,
                              &flags)) {
                /* The ACK the target would have sent (ack_done's count). */
                if (ack_req == PTL_CT_ACK_REQ && !(flags & XP_DIRECT_NOACK))
                    md_count(md, PTL_MD_EVENT_CT_ACK, 1, length);
                return PTL_OK;
            }
        } else if (put_direct(st, r, rank, md, local_offset, length, ack_req, pt_index,
                              match_bits, remote_offset, user_ptr, hdr_data)) {
            return PTL_OK;
        }
    }
    if (ack_req != PTL_NO_ACK_REQ)
        xp_md_expect(md);
    /* Written in place in the peer's ring when the route lets this thread
     * (no header on the stack, no copy of it, no send call); without match
     * bits and header data in the shorter form. */
    xp_tl_cell_t cell;
    int tiny = !(match_bits | hdr_data);
    size_t hlen = tiny ? sizeof(xp_wire_tput_t) : sizeof(xp_wire_sput_t);
    unsigned char *cw = ip ? xp_tl_inplace_reserve(ip, ring, hlen + length, &cell) : NULL;
    if (__builtin_expect(cw != NULL, 1)) {
        if (tiny)
            xp_wire_tput_write((xp_wire_tput_t *)(void *)cw, slot, (uint8_t)ack_req,
                               (uint8_t)length, pt_index, md_handle, uid, remote_offset);
        else
            xp_wire_sput_write((xp_wire_sput_t *)(void *)cw, slot, (uint8_t)ack_req,
                               (uint8_t)length, pt_index, md_handle, uid, match_bits,
                               remote_offset, hdr_data);
        xp_tl_copy_small(cw + hlen, payload, length);
        xp_tl_route_commit(r, &cell);
        goto sent;
    }
    /* On PtlPut's stack: the header's address escapes into the transport,
     * so the rare continuations after the send read it back from memory and
     * only md stays in a saved register across the call. */
    sput_try_t t = {
        .w = {
            .type = XP_WIRE_SPUT,
            .slot = slot,
            .ack_req = (uint8_t)ack_req,
            .len = (uint8_t)length,
            .pt_index = pt_index,
            .md_handle = md_handle,
            .uid = uid,
            .match_bits = match_bits,
            .remote_offset = remote_offset,
            .hdr_data = hdr_data,
        },
        .payload = payload,
        .len = length,
        .rank = rank,
    };
    xp_status_t rc = xp_tl_route_send(r, rank, &t.w, sizeof(t.w), t.payload, length);
    if (__builtin_expect(rc != XP_OK, 0))
        return put_retry(md, &t, rc);
sent:
    /* Sent: the payload was copied, the buffer is free again. */
    if (__builtin_expect(md->ct_send != NULL, 0))
        return put_count_send(md, length);
    return PTL_OK;
checked:
    return put_checked(md_handle, local_offset, length, ack_req, target_id, pt_index, match_bits,
                       remote_offset, user_ptr, hdr_data);
}

/* XTQ: a put gathered from two MD ranges (see engine.h). Small messages are
 * copied into one packet; larger ones go by RMA over the segments of both
 * ranges, so the target reads command, arguments and payload in one pass. */
int xp_eng_put_gather(ptl_handle_md_t md1_handle, ptl_size_t off1, ptl_size_t len1,
                      ptl_handle_md_t md2_handle, ptl_size_t off2, ptl_size_t len2,
                      ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                      ptl_hdr_data_t hdr_data, unsigned flags)
{
    xp_md_t *md, *md2;
    xp_pkt_t h;
    int rank;
    xp_status_t rc;

    xp_ptl_state_t *st = ready_state();
    if (!st)
        return PTL_NO_INIT;
    md = md_lookup(st, md1_handle);
    md2 = len2 ? md_lookup(st, md2_handle) : md;
    if (!md || !md2 || md2->ni != md->ni || (ack_req != PTL_ACK_REQ && ack_req != PTL_CT_ACK_REQ))
        return PTL_ARG_INVALID;
    if (!check_range(md, off1, len1) || !check_range(md2, off2, len2) ||
        len2 > md->ni->limits.max_msg_size - len1)
        return PTL_ARG_INVALID;
    rank = xp_ni_target_rank(md->ni, target_id);
    if (rank < 0)
        return PTL_ARG_INVALID;
    pkt_init(&h, st, XP_PKT_PUT, md, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
             len1 + len2);
    h.ack_req = (uint8_t)ack_req;
    h.flags = (uint8_t)flags;
    h.local_offset = off1;
    xp_md_expect(md);
    if (len1 + len2 <= put_inline_max(rank, md->options | md2->options)) {
        unsigned char buf[len1 + len2 ? len1 + len2 : 1];
        xp_region_read(&md->region, off1, buf, len1);
        xp_region_read(&md2->region, off2, buf + len1, len2);
        rc = send_inline(NULL, rank, md, &h, buf, len1 + len2, user_ptr, off1, 1);
        if (rc != XP_OK)
            undeliverable(md, &h, 1, NULL, 0);
        return PTL_OK;
    }
    if (!(xp_tl_caps(rank) & XP_TL_CAP_RMA)) {
        xp_md_unexpect(md);
        xp_error("XTQ put: %zu bytes to rank %d need single-copy RMA, which this transport lacks",
                 (size_t)(len1 + len2), rank);
        return PTL_FAIL;
    }
    /* Room for two full lists; the target reads at most MAX_SEGS segments. */
    xp_seg_t segs[2 * MAX_SEGS];
    int n1 = make_segs(md, off1, len1, segs);
    int n2 = n1 < 0 ? -1 : make_segs(md2, off2, len2, segs + n1);
    if (n2 < 0 || n1 + n2 > MAX_SEGS) {
        xp_md_unexpect(md);
        return PTL_ARG_INVALID;
    }
    h.flags |= XP_PKT_F_RMA;
    h.nseg = (uint32_t)(n1 + n2);
    /* The SEND event waits for the target's answer (it reads our buffers). */
    rc = xp_eng_send(rank, &h, segs, sizeof(xp_seg_t) * (size_t)(n1 + n2), NULL, 0, 0);
    if (rc != XP_OK)
        undeliverable(md, &h, 1, NULL, 0);
    return PTL_OK;
}

/* A get straight out of the target's shared heap (ptl/direct.h), when its
 * descriptor allows: the copy into md, then the REPLY count and event the
 * answer would have brought. 1: done; 0: nothing happened, send it. The
 * caller has checked the MD range. */
static __attribute__((noinline)) int
get_direct(xp_ptl_state_t *st, const xp_tl_route_t *r, int rank, xp_md_t *md,
           ptl_size_t local_offset, ptl_size_t length, ptl_pt_index_t pt_index,
           ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr)
{
    if (length > st->direct_max ||
        !xp_direct_get(r, rank, md->ni->slot, pt_index, st->uid, remote_offset, &md->region,
                       local_offset, length))
        return 0;
    md_count(md, PTL_MD_EVENT_CT_REPLY, 1, length);
    if (md->eq) {
        xp_pkt_t h;
        pkt_init(&h, st, XP_PKT_GET, md, pt_index, match_bits, remote_offset, user_ptr, 0,
                 length);
        h.mlength = length;
        h.ptl_list = PTL_PRIORITY_LIST;
        md_event(md, PTL_EVENT_REPLY, PTL_NI_OK, user_ptr, &h, local_offset);
    }
    return 1;
}

/* PtlGet's general path: every check in order, the full header, segments
 * for the target's RMA when the reply does not fit one packet. */
static __attribute__((noinline)) int
get_full(xp_ptl_state_t *st, ptl_handle_md_t md_handle, ptl_size_t local_offset,
         ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
         ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr)
{
    xp_md_t *md;
    xp_pkt_t h;
    xp_seg_t segs[MAX_SEGS];
    int rank, n = 0;
    xp_status_t rc;
    const xp_tl_route_t *r;

    md = md_lookup(st, md_handle);
    if (!md || !check_range(md, local_offset, length))
        return PTL_ARG_INVALID;
    rank = xp_ni_target_rank(md->ni, target_id);
    if (rank < 0)
        return PTL_ARG_INVALID;
    r = direct_route(st, rank, md->ni->slot, pt_index);
    if (r && get_direct(st, r, rank, md, local_offset, length, pt_index, match_bits,
                        remote_offset, user_ptr))
        return PTL_OK;
    pkt_init(&h, st, XP_PKT_GET, md, pt_index, match_bits, remote_offset, user_ptr, 0, length);
    h.local_offset = local_offset;
    /* A reply that fits one packet comes inline: the request is a bare
     * header, sent straight on the route when there is one. */
    r = eager_route(rank, length);
    if (!r && length > xp_eng_eager_max(rank)) {
        n = rma_segs("PtlGet", rank, md, local_offset, length, &h, segs);
        if (n < 0)
            return -n; /* the Portals error code */
    }
    xp_md_expect(md);
    /* (in place in the peer's ring when the route lets this thread) */
    rc = r ? wire_send_route(r, rank, &h, NULL, 0) : XP_ERR_AGAIN;
    if (rc == XP_ERR_AGAIN)
        rc = xp_eng_send(rank, &h, segs, sizeof(xp_seg_t) * (size_t)n, NULL, 0, 0);
    if (rc != XP_OK) {
        md_count(md, PTL_MD_EVENT_CT_REPLY, 0, 0);
        md_event(md, PTL_EVENT_REPLY, PTL_NI_UNDELIVERABLE, user_ptr, &h, local_offset);
        xp_md_unexpect(md);
    }
    return PTL_OK;
}

/* The compact get request could not go (a full ring, a failure): the full
 * header through xp_eng_send (which encodes the compact form again), or
 * the undeliverable REPLY. The MD has no EQ: user_ptr stays 0. */
static __attribute__((noinline, cold)) int get_retry(xp_md_t *md, int rank,
                                                      const xp_wire_sget_t *w)
{
    xp_pkt_t h = {
        .type = XP_PKT_GET,
        .slot = w->slot,
        .pt_index = w->pt_index,
        .md_handle = w->md_handle,
        .uid = w->uid,
        .match_bits = w->match_bits,
        .rlength = w->len,
        .remote_offset = w->remote_offset,
        .local_offset = w->local_offset,
    };
    if (xp_eng_send(rank, &h, NULL, 0, NULL, 0, 0) != XP_OK) {
        md_count(md, PTL_MD_EVENT_CT_REPLY, 0, 0);
        md_event(md, PTL_EVENT_REPLY, PTL_NI_UNDELIVERABLE, NULL, &h, w->local_offset);
        xp_md_unexpect(md);
    }
    return PTL_OK;
}

/* The common small get goes out in the compact wire form (xp_wire_sget_t,
 * one ring cell instead of two), written in place in the peer's ring when
 * the route lets this thread, with the MD and route from a memo (as
 * PtlPut's): an MD without an EQ (no REPLY event reads user_ptr, which
 * the compact form does not carry) whose range holds the reply, a reply
 * the compact REPLY carries and the route sends inline (its eager_max:
 * XP_SHM_EAGER_MAX), a logical NI whose route to the target takes compact
 * packets. Anything else, invalid arguments included, is get_full's. */
int PtlGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
           ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
           ptl_size_t remote_offset, void *user_ptr)
{
    xp_ptl_state_t *st = ready_state();
    const xp_tl_route_t *r;
    xp_md_t *md;
    xp_tl_inplace_t *ip;
    xp_shm_ring_t *ring;
    int rank;

    if (__builtin_expect(!st, 0))
        return PTL_NO_INIT;
    struct xp_route_memo *m = &st->get_memo;
    if (__builtin_expect(memo_hit(st, m, md_handle, target_id.rank), 1)) {
        r = memo_take(m, &md, &rank, &ip, &ring);
    } else {
        uint64_t epoch = __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
        md = md_lookup(st, md_handle);
        r = md ? memo_route(st, m, epoch, md_handle, md, target_id.rank, &rank) : NULL;
        if (!r)
            goto full;
        ip = route_lane(r, &ring);
    }
    if (__builtin_expect(length > XP_WIRE_SGET_MAX || length > r->eager_max || md->eq ||
                             local_offset > UINT32_MAX || !check_range(md, local_offset, length),
                         0))
        goto full;
    /* Straight out of the target's shared heap when it publishes the entry
     * (one load of a line nobody writes when it does not). */
    if (__builtin_expect(st->direct && xp_direct_maybe(r, md->slot, pt_index), 0) &&
        get_direct(st, r, rank, md, local_offset, length, pt_index, match_bits, remote_offset,
                   user_ptr))
        return PTL_OK;
    xp_md_expect(md);
    xp_tl_cell_t cell;
    xp_wire_sget_t *cw = ip ? xp_tl_inplace_reserve(ip, ring, sizeof(*cw), &cell) : NULL;
    if (__builtin_expect(cw != NULL, 1)) {
        cw->type = XP_WIRE_SGET;
        cw->slot = md->slot;
        cw->len = (uint16_t)length; /* (pad2: never read) */
        cw->pt_index = pt_index;
        cw->md_handle = md_handle; /* == md->handle: the look-up compared them */
        cw->uid = st->uid;
        cw->match_bits = match_bits;
        cw->remote_offset = remote_offset;
        cw->local_offset = (uint32_t)local_offset;
        xp_tl_route_commit(r, &cell);
        return PTL_OK;
    }
    xp_wire_sget_t w = {
        .type = XP_WIRE_SGET,
        .slot = md->slot,
        .len = (uint16_t)length,
        .pt_index = pt_index,
        .md_handle = md_handle,
        .uid = st->uid,
        .match_bits = match_bits,
        .remote_offset = remote_offset,
        .local_offset = (uint32_t)local_offset,
    };
    if (__builtin_expect(xp_tl_route_send(r, rank, &w, sizeof(w), NULL, 0) != XP_OK, 0))
        return get_retry(md, rank, &w);
    return PTL_OK;
full:
    return get_full(st, md_handle, local_offset, length, target_id, pt_index, match_bits,
                    remote_offset, user_ptr);
}

/* The request header of an atomic call (get_md NULL for PtlAtomic). */
static void atomic_hdr(xp_pkt_t *h, xp_ptl_state_t *st, const xp_md_t *get_md,
                       const xp_md_t *put_md, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                       ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                       ptl_size_t length, ptl_ack_req_t ack_req, ptl_op_t op, ptl_datatype_t dt,
                       int kind)
{
    pkt_init(h, st, kind == XP_ATOMIC_PLAIN ? XP_PKT_ATOMIC : kind == XP_ATOMIC_FETCH ? XP_PKT_FETCH : XP_PKT_SWAP,
             get_md ? get_md : put_md, pt_index, match_bits, remote_offset, user_ptr, hdr_data, length);
    h->ack_req = (uint8_t)(get_md ? PTL_NO_ACK_REQ : ack_req);
    h->atomic_op = (uint8_t)op;
    h->atomic_type = (uint8_t)dt;
}

/* The three atomic calls straight into the target's shared heap
 * (ptl/direct.h), when its descriptor allows: the CPU atomic, then what the
 * answer would have brought - the SEND event, then the REPLY (the old
 * values written to get_md) or the ACK - in that order. 1: done; 0: nothing
 * happened, send it. The caller has checked the arguments as atomic_common
 * does (ranges, (op, dt, length), the operand). get_md is NULL for
 * PtlAtomic. */
static __attribute__((noinline)) int atomic_direct(xp_ptl_state_t *st, const xp_tl_route_t *r, int rank, xp_md_t *get_md,
                         ptl_size_t local_get_offset, xp_md_t *put_md,
                         ptl_size_t local_put_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                         ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                         ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                         const void *operand, ptl_op_t op, ptl_datatype_t dt, int kind)
{
    unsigned flags;
    /* The common case has nothing to deliver but the old value or a
     * counting ACK (OpenSHMEM's fetch-add, compare-swap, swap, add): no
     * event, no SEND, no full ACK, contiguous MDs, one element. The old
     * value goes straight into the get MD (the element's source and operand
     * are read before it is written), and no request header is made for
     * events nobody posts (callgrind, PtlFetchAtomic of 8 bytes: 560 -> 485
     * instructions). */
    if (!put_md->region.iov && !send_noticed(put_md) &&
        (get_md || ack_req == PTL_NO_ACK_REQ || ack_req == PTL_CT_ACK_REQ) &&
        (!get_md || (!get_md->eq && !get_md->region.iov)) && length == xp_atomic_type_size(dt)) {
        if (!xp_direct_atomic(r, rank, put_md->ni->slot, pt_index, st->uid, remote_offset, op, dt,
                              (const char *)put_md->region.start + local_put_offset, operand,
                              length, get_md != NULL,
                              get_md ? (char *)get_md->region.start + local_get_offset : NULL,
                              &flags))
            return 0;
        if (get_md)
            md_count(get_md, PTL_MD_EVENT_CT_REPLY, 1, length);
        else if (ack_req == PTL_CT_ACK_REQ && !(flags & XP_DIRECT_NOACK))
            md_count(put_md, PTL_MD_EVENT_CT_ACK, 1, length); /* ack_done's count */
        return 1;
    }
    unsigned char data_buf[put_md->region.iov ? length : 1], old[length ? length : 1];
    if (!xp_direct_atomic(r, rank, put_md->ni->slot, pt_index, st->uid, remote_offset, op, dt,
                          direct_source(put_md, local_put_offset, length, data_buf), operand,
                          length, get_md != NULL, get_md ? old : NULL, &flags))
        return 0;
    xp_pkt_t h;
    atomic_hdr(&h, st, get_md, put_md, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
               length, ack_req, op, dt, kind);
    h.mlength = length;
    h.ptl_list = PTL_PRIORITY_LIST;
    direct_send_ack(put_md, &h, local_put_offset, user_ptr,
                    !get_md && ack_req != PTL_NO_ACK_REQ && !(flags & XP_DIRECT_NOACK));
    if (get_md) {
        xp_region_write(&get_md->region, local_get_offset, old, length);
        h.local_offset = local_get_offset;
        md_count(get_md, PTL_MD_EVENT_CT_REPLY, 1, length);
        md_event(get_md, PTL_EVENT_REPLY, PTL_NI_OK, user_ptr, &h, local_get_offset);
    }
    return 1;
}

/* PtlFetchAtomic's one-word fetch (the caller checked it as its compact
 * path does) straight into the target's shared heap: when nothing but the
 * old value and the REPLY count is to be delivered (OpenSHMEM's fetch-add,
 * fetch, swap), the CPU atomic with the old value written to get_md at
 * once, without atomic_direct's general frame (its 17 arguments, 11 on the
 * stack); else atomic_direct. 1: done; 0: nothing happened, send it. */
static __attribute__((noinline)) int
fetch_direct(xp_ptl_state_t *st, const xp_tl_route_t *r, int rank, xp_md_t *get_md,
             ptl_size_t local_get_offset, xp_md_t *put_md, ptl_size_t local_put_offset,
             ptl_size_t length, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
             ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t op,
             ptl_datatype_t dt)
{
    if (__builtin_expect(!send_noticed(put_md) && !get_md->eq, 1)) {
        unsigned flags;
        if (!xp_direct_atomic(r, rank, put_md->ni->slot, pt_index, st->uid, remote_offset, op,
                              dt, (const char *)put_md->region.start + local_put_offset, NULL,
                              length, 1, (char *)get_md->region.start + local_get_offset,
                              &flags))
            return 0;
        md_count(get_md, PTL_MD_EVENT_CT_REPLY, 1, length);
        return 1;
    }
    return atomic_direct(st, r, rank, get_md, local_get_offset, put_md, local_put_offset, length,
                         PTL_NO_ACK_REQ, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
                         NULL, op, dt, XP_ATOMIC_FETCH);
}

/* Common body of the three atomic calls. get_md is NULL for PtlAtomic. */
static int atomic_common(xp_ptl_state_t *st, xp_md_t *get_md, ptl_size_t local_get_offset, xp_md_t *put_md,
                         ptl_size_t local_put_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                         ptl_process_t target_id, ptl_pt_index_t pt_index,
                         ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                         ptl_hdr_data_t hdr_data, const void *operand, ptl_op_t op,
                         ptl_datatype_t dt, int kind)
{
    xp_pkt_t h;
    int rank, answer;
    size_t esize = xp_atomic_type_size(dt);
    size_t max = get_md ? put_md->ni->limits.max_fetch_atomic_size : put_md->ni->limits.max_atomic_size;
    xp_status_t rc;

    if (!check_range(put_md, local_put_offset, length) || length > max)
        return PTL_ARG_INVALID;
    if (get_md && (get_md->ni != put_md->ni || !check_range(get_md, local_get_offset, length)))
        return PTL_ARG_INVALID;
    if (xp_atomic_check(op, dt, length, kind) != XP_OK)
        return PTL_ARG_INVALID;
    if (kind == XP_ATOMIC_SWAP && op != PTL_SWAP && !operand)
        return PTL_ARG_INVALID;
    rank = xp_ni_target_rank(put_md->ni, target_id);
    if (rank < 0)
        return PTL_ARG_INVALID;
    const xp_tl_route_t *r = direct_route(st, rank, put_md->ni->slot, pt_index);
    if (r && atomic_direct(st, r, rank, get_md, local_get_offset, put_md, local_put_offset,
                           length, ack_req, pt_index, match_bits, remote_offset, user_ptr,
                           hdr_data, operand, op, dt, kind))
        return PTL_OK;
    atomic_hdr(&h, st, get_md, put_md, pt_index, match_bits, remote_offset, user_ptr, hdr_data,
               length, ack_req, op, dt, kind);
    h.local_offset = get_md ? local_get_offset : local_put_offset;

    unsigned char buf[length + 32];
    const void *payload = buf;
    size_t oplen = 0;
    if (kind == XP_ATOMIC_SWAP && op != PTL_SWAP) {
        memcpy(buf, operand, esize);
        oplen = esize;
        h.flags |= 0; /* operand first, data after: nseg carries the operand length */
        h.nseg = (uint32_t)oplen;
    }
    /* The operand data of a plain MD goes to the transport from where it
     * is (the transport copies it before the send returns). */
    if (!oplen && !put_md->region.iov)
        payload = (const char *)((uintptr_t)put_md->region.start + local_put_offset);
    else
        xp_region_read(&put_md->region, local_put_offset, buf + oplen, length);

    answer = get_md ? 1 : ack_req != PTL_NO_ACK_REQ;
    if (answer)
        xp_md_expect((get_md ? get_md : put_md));
    rc = send_inline(inline_route(rank, oplen + length), rank, put_md, &h, payload,
                     oplen + length, user_ptr, local_put_offset, answer);
    if (rc != XP_OK) {
        h.local_offset = local_put_offset;
        undeliverable(put_md, &h, answer, get_md, local_get_offset);
    }
    return PTL_OK;
}

int PtlAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
              ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
              ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
              ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype)
{
    xp_ptl_state_t *st = ready_state();
    xp_md_t *md;
    if (!st)
        return PTL_NO_INIT;
    md = md_lookup(st, md_handle);
    if (!md || (unsigned)ack_req > PTL_OC_ACK_REQ)
        return PTL_ARG_INVALID;
    return atomic_common(st, NULL, 0, md, local_offset, length, ack_req, target_id, pt_index,
                         match_bits, remote_offset, user_ptr, hdr_data, NULL, operation, datatype,
                         XP_ATOMIC_PLAIN);
}

/* A one-element fetching atomic that xp_atomic_check accepts and the
 * target's one-pass path applies natively (an aligned 4- or 8-byte integer,
 * SUM or a bitwise operation). */
static inline int fetch_word_ok(ptl_op_t op, ptl_datatype_t dt, ptl_size_t length)
{
    return (op == PTL_SUM || op == PTL_BAND || op == PTL_BOR || op == PTL_BXOR) &&
           (length == 8 ? dt == PTL_INT64_T || dt == PTL_UINT64_T
                        : length == 4 && (dt == PTL_INT32_T || dt == PTL_UINT32_T));
}

int PtlFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                   ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
                   ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                   ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                   ptl_op_t operation, ptl_datatype_t datatype)
{
    xp_ptl_state_t *st = ready_state();
    xp_md_t *get_md, *put_md;
    const xp_tl_route_t *r = NULL;
    xp_tl_inplace_t *ip = NULL;
    xp_shm_ring_t *ring = NULL;
    int rank = -1;
    uint64_t epoch = 0;
    if (!st)
        return PTL_NO_INIT;
    /* The put MD and route of the previous fetch, if it was like this one
     * (a memo, as PtlPut's). */
    struct xp_route_memo *m = &st->fetch_memo;
    if (__builtin_expect(memo_hit(st, m, put_md_handle, target_id.rank), 1)) {
        r = memo_take(m, &put_md, &rank, &ip, &ring);
    } else {
        epoch = __atomic_load_n(&st->put_epoch, __ATOMIC_ACQUIRE);
        put_md = md_lookup(st, put_md_handle);
    }
    get_md = get_md_handle == put_md_handle ? put_md : md_lookup(st, get_md_handle);
    if (!get_md || !put_md)
        return PTL_ARG_INVALID;
    /* The common one-word fetch (a valid native operation, plain MDs, no
     * SEND event to order before the REPLY, a route that takes it inline):
     * what atomic_common does, without its general checks, copies and
     * encoding. put_md's sput_lim stands for: plain, no EQ, length <=
     * max_msg_size (get_md is on the same NI); a logical NI's map gives the
     * route (memo_route: none for a physical NI). */
    const xp_ni_t *ni = put_md->ni;
    if (__builtin_expect(fetch_word_ok(operation, datatype, length) &&
                             length < put_md->sput_lim && !get_md->region.iov &&
                             get_md->ni == ni && length <= ni->limits.max_fetch_atomic_size &&
                             xp_region_holds(&get_md->region, local_get_offset, length) &&
                             xp_region_holds(&put_md->region, local_put_offset, length),
                         1)) {
        if (!r && (r = memo_route(st, m, epoch, put_md_handle, put_md, target_id.rank,
                                  &rank)) != NULL) {
            ip = route_lane(r, &ring);
        }
    } else {
        r = NULL;
    }
    if (__builtin_expect(!r, 0))
        return atomic_common(st, get_md, local_get_offset, put_md, local_put_offset, length,
                             PTL_NO_ACK_REQ, target_id, pt_index, match_bits, remote_offset,
                             user_ptr, hdr_data, NULL, operation, datatype, XP_ATOMIC_FETCH);
    if (__builtin_expect(st->direct && xp_direct_maybe(r, ni->slot, pt_index), 0) &&
        fetch_direct(st, r, rank, get_md, local_get_offset, put_md, local_put_offset, length,
                     pt_index, match_bits, remote_offset, user_ptr, hdr_data, operation,
                     datatype))
        return PTL_OK;
    const void *payload = (const char *)put_md->region.start + local_put_offset;
    xp_status_t rc = XP_ERR_AGAIN;
    int compact = 0;
    xp_md_expect(get_md);
    /* A get MD without an EQ posts no REPLY event: nothing reads user_ptr,
     * so it travels as 0 and, with no header data and a 32-bit offset, the
     * request takes the compact form (one cell with its operand; the route
     * takes the full header and the operand, so the shorter one too). */
    if (__builtin_expect(!get_md->eq && !hdr_data && local_get_offset <= UINT32_MAX, 1)) {
        user_ptr = NULL;
        compact = 1;
        /* In place in the peer's ring when the route lets this thread. */
        xp_tl_cell_t cell;
        xp_wire_sfetch_t *cw =
            ip ? xp_tl_inplace_reserve(ip, ring, sizeof(*cw) + length, &cell) : NULL;
        if (__builtin_expect(cw != NULL, 1)) {
            cw->type = XP_WIRE_SFETCH;
            cw->slot = get_md->slot;
            cw->atomic_op = (uint8_t)operation;
            cw->atomic_type = (uint8_t)datatype;
            cw->pt_index = pt_index;
            cw->md_handle = get_md_handle; /* == get_md->handle: the look-up compared them */
            cw->uid = st->uid;
            cw->match_bits = match_bits;
            cw->remote_offset = remote_offset;
            cw->local_offset = (uint32_t)local_get_offset;
            cw->len = (uint8_t)length; /* (pad: never read) */
            xp_tl_copy_small(cw + 1, payload, length);
            xp_tl_route_commit(r, &cell);
            goto sent;
        }
        xp_wire_sfetch_t w = {
            .type = XP_WIRE_SFETCH,
            .slot = get_md->slot,
            .atomic_op = (uint8_t)operation,
            .atomic_type = (uint8_t)datatype,
            .pt_index = pt_index,
            .md_handle = get_md->handle,
            .uid = st->uid,
            .match_bits = match_bits,
            .remote_offset = remote_offset,
            .local_offset = (uint32_t)local_get_offset,
            .len = (uint8_t)length,
        };
        rc = xp_tl_route_send(r, rank, &w, sizeof(w), payload, length);
        if (__builtin_expect(rc == XP_OK, 1))
            goto sent;
    }
    xp_pkt_t h;
    pkt_init(&h, st, XP_PKT_FETCH, get_md, pt_index, match_bits, remote_offset, user_ptr,
             hdr_data, length);
    h.ack_req = PTL_NO_ACK_REQ;
    h.atomic_op = (uint8_t)operation;
    h.atomic_type = (uint8_t)datatype;
    h.local_offset = local_get_offset;
    if (!compact)
        rc = xp_tl_route_send(r, rank, &h, sizeof(h), payload, length);
    /* A full ring (xp_eng_send encodes the compact form again). */
    if (__builtin_expect(rc == XP_ERR_AGAIN, 0))
        rc = xp_eng_send(rank, &h, payload, length, NULL, 0, 0);
    if (__builtin_expect(rc != XP_OK, 0)) {
        h.local_offset = local_put_offset;
        undeliverable(put_md, &h, 1, get_md, local_get_offset);
        return PTL_OK;
    }
sent:
    if (__builtin_expect(put_md->ct_send != NULL, 0))
        md_count(put_md, PTL_MD_EVENT_CT_SEND, 1, length); /* no EQ: no SEND event */
    return PTL_OK;
}

int PtlSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
            ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
            ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
            ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
            const void *operand, ptl_op_t operation, ptl_datatype_t datatype)
{
    xp_ptl_state_t *st = ready_state();
    xp_md_t *get_md, *put_md;
    if (!st)
        return PTL_NO_INIT;
    get_md = md_lookup(st, get_md_handle);
    put_md = md_lookup(st, put_md_handle);
    if (!get_md || !put_md)
        return PTL_ARG_INVALID;
    return atomic_common(st, get_md, local_get_offset, put_md, local_put_offset, length,
                         PTL_NO_ACK_REQ, target_id, pt_index, match_bits, remote_offset, user_ptr,
                         hdr_data, operand, operation, datatype, XP_ATOMIC_SWAP);
}
