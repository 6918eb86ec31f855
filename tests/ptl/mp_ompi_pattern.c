/*
 * mp_ompi_pattern - what Open MPI v5's mtl/portals4 does with a Portals
 * library, reproduced call for call on Xportals (Open MPI itself cannot be
 * built here against us). Facts of the pattern (from the mtl's sources):
 *
 *  - a matching PHYSICAL NI; ids exchanged out of band (the modex: here the
 *    runtime's key-value store); one MD over the whole address space;
 *  - PT 12 (receives) with ONLY_USE_ONCE | ONLY_TRUNCATE | FLOWCTRL on the
 *    receive EQ, PT 13 (reads) and PT 14 (flow-control messages) with
 *    ONLY_TRUNCATE on the send EQ;
 *  - overflow list: a zero-length "long overflow" ME (LINK/COMM/UNLINK
 *    events disabled) for long messages, then short blocks with
 *    MANAGE_LOCAL | MAY_ALIGN, min_free = eager limit, re-linked on
 *    PTL_EVENT_AUTO_FREE (after AUTO_UNLINK);
 *  - match bits: protocol | context | source | tag; receives ignore the
 *    protocol bits (and source / tag for ANY_SOURCE / ANY_TAG);
 *  - short send: PtlPut with ACK; long send (eager protocol): a use-once
 *    OP_GET ME on the read PT matching hdr_data, then a put of the whole
 *    message; the ACK's ptl_list says whether it matched a posted receive
 *    (PRIORITY: done) or went to the overflow list (the receiver will
 *    PtlGet it: wait for the GET event);
 *  - receive: a use-once priority ME; PTL_EVENT_PUT (expected) or
 *    PTL_EVENT_PUT_OVERFLOW (unexpected: copy from the block, or PtlGet the
 *    long message from the sender's read PT); probe with PtlMESearch
 *    SEARCH_ONLY; every event read with PtlEQPoll over both EQs;
 *  - flow control: the receive PT is disabled when the overflow blocks run
 *    out; PTL_EVENT_PT_DISABLED at the target, PTL_NI_PT_DISABLED in the
 *    senders' ACKs; recovery: alert everyone, senders stop and drain, a
 *    fan-in on PT 14 counted by a CT (the root's fan-out is a
 *    PtlTriggeredPut on that CT, reset by PtlTriggeredCTSet), re-link
 *    blocks, PtlPTEnable, resend the refused messages in order.
 *
 * Checked: data of every message, per-sender order after recovery, probe
 * results, ACK ptl_list / mlength, nothing lost. Runs with 2..8 ranks.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define RECV_IDX 12
#define READ_IDX 13
#define FLOWCTL_IDX 14

#define PROTO_SHORT   UINT64_C(0x1000000000000000)
#define PROTO_LONG    UINT64_C(0x2000000000000000)
#define PROTO_MASK    UINT64_C(0xF000000000000000)
#define CONTEXT_MASK  UINT64_C(0x0FFF000000000000)
#define SOURCE_MASK   UINT64_C(0x0000FFFF00000000)
#define TAG_MASK      UINT64_C(0x00000000FFFFFFFF)
#define FC_ALERT      UINT64_C(1)
#define FC_FANIN      UINT64_C(2)
#define FC_FANOUT     UINT64_C(3)

#define EAGER 1024
#define BLOCK_SIZE (8 * EAGER)
#define NBLOCKS 4
#define MAXMSG (1u << 20)

static ptl_handle_ni_t ni;
static ptl_handle_eq_t eqs[2]; /* 0: send EQ, 1: receive EQ */
static ptl_handle_md_t md, zero_md;
static ptl_process_t *procs;
static int me, np;
static uint32_t opcount;

static ptl_match_bits_t bits_of(ptl_match_bits_t proto, int ctx, int src, uint32_t tag)
{
    return proto | (ptl_match_bits_t)ctx << 48 | (ptl_match_bits_t)src << 32 | tag;
}

static unsigned char pat(int src, int dst, uint32_t tag, size_t i)
{
    return (unsigned char)(src * 13 + dst * 5 + tag * 11 + i * 3 + (i >> 8));
}

static ptl_me_t base_me(void *start, ptl_size_t len, unsigned opts)
{
    ptl_me_t m;
    memset(&m, 0, sizeof(m));
    m.start = start;
    m.length = len;
    m.ct_handle = PTL_CT_NONE;
    m.uid = PTL_UID_ANY;
    m.options = opts;
    m.match_id.phys.nid = PTL_NID_ANY;
    m.match_id.phys.pid = PTL_PID_ANY;
    return m;
}

static int rank_of(ptl_process_t p)
{
    for (int r = 0; r < np; r++)
        if (procs[r].phys.nid == p.phys.nid && procs[r].phys.pid == p.phys.pid)
            return r;
    return -1;
}

/* ------------------------------------------------------------ short blocks */

typedef struct block {
    int tag; /* user_ptr kind */
    unsigned char *mem;
    ptl_handle_me_t h;
    int active;
} block_t;

static block_t blocks[NBLOCKS];
static int kind_block; /* address used as a tag for events of blocks */
static int nblocks_used;

static void block_activate(block_t *b)
{
    ptl_me_t m = base_me(b->mem, BLOCK_SIZE,
                         PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_MANAGE_LOCAL |
                         PTL_ME_MAY_ALIGN);
    m.min_free = EAGER;
    m.match_bits = PROTO_SHORT;
    m.ignore_bits = CONTEXT_MASK | SOURCE_MASK | TAG_MASK;
    XP_REQUIRE(PtlMEAppend(ni, RECV_IDX, &m, PTL_OVERFLOW_LIST, b, &b->h) == PTL_OK);
    b->active = 1;
}

/* ------------------------------------------------------------ events */

/* What an event's user_ptr points to. */
enum { REQ_SEND = 1, REQ_RECV, REQ_BLOCK };

typedef struct req {
    int kind;          /* must be first: blocks start with an int too */
    int done, failed_fc, got_ack_overflow, need_get;
    int peer;
    uint32_t tag;
    size_t len;
    unsigned char *buf;
    ptl_handle_me_t read_me;
    int events;
    /* receive side */
    size_t rlen;
    ptl_match_bits_t rbits;
} req_t;

static int fc_disabled_seen, fc_refused, fc_alerts;
static int pending_block_events;
/* Arrival order of unexpected short messages per source (flow-control phase). */
static uint32_t last_seq_from[8];
static int order_errors;

static void handle_event(const ptl_event_t *ev)
{
    if (ev->type == PTL_EVENT_PT_DISABLED) {
        XP_CHECK_EQ(ev->pt_index, RECV_IDX);
        fc_disabled_seen++;
        return;
    }
    int *kind = ev->user_ptr;
    if (!kind) {
        /* flow-control MEs carry no request */
        return;
    }
    if (*kind == REQ_BLOCK) {
        block_t *b = ev->user_ptr;
        switch (ev->type) {
        case PTL_EVENT_PUT: {
            int src = (int)((ev->match_bits & SOURCE_MASK) >> 32);
            uint32_t seq = (uint32_t)(ev->match_bits & TAG_MASK);
            if (seq >= 1000000 && src < 8) { /* flow-control phase tags */
                if (last_seq_from[src] && seq <= last_seq_from[src])
                    order_errors++;
                last_seq_from[src] = seq;
            }
            break;
        }
        case PTL_EVENT_AUTO_UNLINK:
            b->active = 0;
            break;
        case PTL_EVENT_AUTO_FREE:
            block_activate(b);
            break;
        default:
            break;
        }
        return;
    }
    req_t *r = ev->user_ptr;
    if (r->kind == REQ_SEND) {
        if (ev->ni_fail_type == PTL_NI_PT_DISABLED) {
            /* refused by flow control: the read ME goes, resend later */
            if (r->read_me != PTL_INVALID_HANDLE) {
                PtlMEUnlink(r->read_me);
                r->read_me = PTL_INVALID_HANDLE;
            }
            r->failed_fc = 1;
            fc_refused++;
            return;
        }
        XP_CHECK_EQ(ev->ni_fail_type, PTL_NI_OK);
        switch (ev->type) {
        case PTL_EVENT_SEND:
            r->events++;
            break;
        case PTL_EVENT_ACK:
            r->events++;
            XP_CHECK_EQ(ev->rlength, r->len);
            if (ev->ptl_list == PTL_PRIORITY_LIST) {
                XP_CHECK_EQ(ev->mlength, r->len);
                if (r->read_me != PTL_INVALID_HANDLE) {
                    XP_CHECK_EQ(PtlMEUnlink(r->read_me), PTL_OK);
                    r->read_me = PTL_INVALID_HANDLE;
                }
            } else {
                XP_CHECK_EQ(ev->ptl_list, PTL_OVERFLOW_LIST);
                if (r->len > EAGER) {
                    XP_CHECK_EQ(ev->mlength, 0); /* the long overflow ME keeps no data */
                    r->need_get = 1;
                }
            }
            break;
        case PTL_EVENT_GET:
            XP_CHECK(r->need_get);
            XP_CHECK_EQ(ev->mlength, r->len);
            r->read_me = PTL_INVALID_HANDLE; /* use-once: gone */
            r->need_get = 0;
            r->events++;
            break;
        default:
            fprintf(stderr, "send: unexpected event %d\n", ev->type);
            xp_test_failures_++;
        }
        if (r->events >= 2 && !r->need_get && !r->failed_fc)
            r->done = 1;
        return;
    }
    /* receive */
    switch (ev->type) {
    case PTL_EVENT_PUT:
        XP_CHECK_EQ(ev->ptl_list, PTL_PRIORITY_LIST);
        r->rlen = ev->mlength;
        r->rbits = ev->match_bits;
        r->peer = rank_of(ev->initiator);
        r->done = 1;
        break;
    case PTL_EVENT_PUT_OVERFLOW:
        r->rbits = ev->match_bits;
        r->peer = rank_of(ev->initiator);
        r->rlen = ev->rlength;
        if ((ev->match_bits & PROTO_MASK) == PROTO_SHORT) {
            XP_CHECK_EQ(ev->mlength, ev->rlength);
            memcpy(r->buf, ev->start, ev->mlength);
            r->done = 1;
        } else {
            /* long, unexpected: fetch it from the sender's read PT */
            XP_CHECK_EQ(ev->mlength, 0);
            XP_REQUIRE(PtlGet(md, (ptl_size_t)(uintptr_t)r->buf, ev->rlength, ev->initiator,
                              READ_IDX, ev->hdr_data, 0, r) == PTL_OK);
        }
        break;
    case PTL_EVENT_REPLY:
        XP_CHECK_EQ(ev->ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev->mlength, r->rlen);
        r->done = 1;
        break;
    default:
        fprintf(stderr, "recv: unexpected event %d\n", ev->type);
        xp_test_failures_++;
    }
}

static int progress(int timeout_ms)
{
    ptl_event_t ev;
    unsigned int which;
    int rc = PtlEQPoll(eqs, 2, (ptl_time_t)timeout_ms, &ev, &which);
    if (rc == PTL_EQ_EMPTY)
        return 0;
    XP_REQUIRE(rc == PTL_OK);
    handle_event(&ev);
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void wait_done(req_t *r)
{
    for (int idle = 0; !r->done && !r->failed_fc;) {
        if (!progress(100) && ++idle > 100) {
            fprintf(stderr, "rank %d: request (peer %d tag %u) never completed\n", me, r->peer,
                    r->tag);
            exit(1);
        }
    }
}

/* ------------------------------------------------------------ send / recv */

static void isend(req_t *r, int dst, uint32_t tag, unsigned char *buf, size_t len)
{
    memset(r, 0, sizeof(*r));
    r->kind = REQ_SEND;
    r->peer = dst;
    r->tag = tag;
    r->buf = buf;
    r->len = len;
    r->read_me = PTL_INVALID_HANDLE;
    uint32_t op = ++opcount;
    ptl_hdr_data_t hdr = (ptl_hdr_data_t)op << 32 | (ptl_hdr_data_t)me << 20 | 0;
    ptl_match_bits_t proto = len <= EAGER ? PROTO_SHORT : PROTO_LONG;
    if (len > EAGER) {
        ptl_me_t m = base_me(buf, len, PTL_ME_OP_GET | PTL_ME_USE_ONCE |
                                       PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE);
        m.match_id = procs[dst];
        m.match_bits = hdr;
        XP_REQUIRE(PtlMEAppend(ni, READ_IDX, &m, PTL_PRIORITY_LIST, r, &r->read_me) == PTL_OK);
    }
    XP_REQUIRE(PtlPut(md, (ptl_size_t)(uintptr_t)buf, len, PTL_ACK_REQ, procs[dst], RECV_IDX,
                      bits_of(proto, 1, me, tag), 0, r, hdr) == PTL_OK);
}

static void irecv(req_t *r, int src, uint32_t tag, unsigned char *buf, size_t cap)
{
    memset(r, 0, sizeof(*r));
    r->kind = REQ_RECV;
    r->buf = buf;
    r->tag = tag;
    ptl_me_t m = base_me(buf, cap, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE |
                                   PTL_ME_EVENT_LINK_DISABLE);
    m.match_bits = bits_of(0, 1, src < 0 ? 0 : src, tag);
    m.ignore_bits = PROTO_MASK | (src < 0 ? SOURCE_MASK : 0);
    if (src >= 0)
        m.match_id = procs[src];
    ptl_handle_me_t h;
    XP_REQUIRE(PtlMEAppend(ni, RECV_IDX, &m, PTL_PRIORITY_LIST, r, &h) == PTL_OK);
}

static int check_data(const req_t *r, int src, uint32_t tag, size_t len)
{
    if (r->rlen != len || r->peer != src)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (r->buf[i] != pat(src, me, tag, i))
            return 0;
    return 1;
}

/* ------------------------------------------------------------ phases */

static const size_t sizes[] = { 0, 1, 8, EAGER - 1, EAGER, EAGER + 1, 5000, 65536, MAXMSG };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every rank sends every size to every other rank; half of the receives
 * are posted before the senders start (expected), half after (unexpected,
 * found first with a probe); some with ANY_SOURCE. */
static void phase_exchange(void)
{
    int npeers = np - 1;
    size_t nmsg = (size_t)npeers * NSIZES;
    req_t *sreq = calloc(nmsg, sizeof(req_t)), *rreq = calloc(nmsg, sizeof(req_t));
    unsigned char **sbuf = calloc(nmsg, sizeof(*sbuf)), **rbuf = calloc(nmsg, sizeof(*rbuf));
    XP_REQUIRE(sreq && rreq && sbuf && rbuf);
    for (size_t k = 0; k < nmsg; k++) {
        int peer = (me + 1 + (int)(k / NSIZES)) % np;
        size_t s = k % NSIZES;
        sbuf[k] = malloc(sizes[s] + 1);
        rbuf[k] = malloc(MAXMSG);
        XP_REQUIRE(sbuf[k] && rbuf[k]);
        for (size_t i = 0; i < sizes[s]; i++)
            sbuf[k][i] = pat(me, peer, (uint32_t)s, i);
    }
    /* expected: even sizes posted now */
    for (size_t k = 0; k < nmsg; k++) {
        int src = (me + np - 1 - (int)(k / NSIZES)) % np;
        size_t s = k % NSIZES;
        if (s % 2 == 0)
            irecv(&rreq[k], src, (uint32_t)s, rbuf[k], MAXMSG);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (size_t k = 0; k < nmsg; k++) {
        int peer = (me + 1 + (int)(k / NSIZES)) % np;
        isend(&sreq[k], peer, (uint32_t)(k % NSIZES), sbuf[k], sizes[k % NSIZES]);
    }
    /* Wait until every odd-size message has arrived unexpected (probe). */
    for (size_t k = 0; k < nmsg; k++) {
        int src = (me + np - 1 - (int)(k / NSIZES)) % np;
        size_t s = k % NSIZES;
        if (s % 2 == 0)
            continue;
        /* Bounded by time, not by a number of searches: a loaded machine
         * can run many searches before the sender runs at all. */
        double deadline = now_s() + 20.0;
        for (int tries = 1;; tries++) {
            ptl_me_t m = base_me(NULL, 0, PTL_ME_OP_PUT);
            m.match_bits = bits_of(0, 1, src, (uint32_t)s);
            m.ignore_bits = PROTO_MASK;
            m.match_id = procs[src];
            static int probe_tag;
            XP_REQUIRE(PtlMESearch(ni, RECV_IDX, &m, PTL_SEARCH_ONLY, &probe_tag) == PTL_OK);
            ptl_event_t ev;
            unsigned int which;
            int found = -1;
            /* the SEARCH event comes on the receive EQ; other events go on */
            while (found < 0) {
                XP_REQUIRE(PtlEQPoll(eqs, 2, 5000, &ev, &which) == PTL_OK);
                if (ev.type == PTL_EVENT_SEARCH && ev.user_ptr == &probe_tag) {
                    found = ev.ni_fail_type == PTL_NI_OK;
                    if (found)
                        XP_CHECK_EQ(ev.rlength, sizes[s]);
                } else {
                    handle_event(&ev);
                }
            }
            if (found)
                break;
            if (now_s() > deadline) {
                fprintf(stderr, "rank %d: size %zu from rank %d not unexpected after %d searches in 20 s\n",
                        me, sizes[s], src, tries);
                exit(1);
            }
            progress(1); /* let the sender run rather than spin on searches */
        }
        /* odd sizes from the first peer with ANY_SOURCE (the only match) */
        irecv(&rreq[k], (np == 2 && s == 3) ? -1 : src, (uint32_t)s, rbuf[k], MAXMSG);
    }
    for (size_t k = 0; k < nmsg; k++) {
        int src = (me + np - 1 - (int)(k / NSIZES)) % np;
        size_t s = k % NSIZES;
        wait_done(&rreq[k]);
        if (!check_data(&rreq[k], src, (uint32_t)s, sizes[s])) {
            fprintf(stderr, "rank %d: bad data from %d size %zu (got len %zu from %d)\n", me, src,
                    sizes[s], rreq[k].rlen, rreq[k].peer);
            xp_test_failures_++;
        }
    }
    for (size_t k = 0; k < nmsg; k++) {
        wait_done(&sreq[k]);
        XP_CHECK(sreq[k].done);
        free(sbuf[k]);
        free(rbuf[k]);
    }
    free(sreq);
    free(rreq);
    free(sbuf);
    free(rbuf);
    XP_REQUIRE(xp_barrier() == XP_OK);
}

/* ------------------------------------------------------------ triggered fan-in / fan-out */

static ptl_handle_ct_t fanin_ct, fanout_ct, alert_ct, epoch_ct;
static ptl_handle_me_t fanin_me, fanout_me, alert_me;
static ptl_size_t fan_epoch;

static void fc_init(void)
{
    XP_REQUIRE(PtlCTAlloc(ni, &fanin_ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &fanout_ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &alert_ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &epoch_ct) == PTL_OK);
    unsigned o = PTL_ME_OP_PUT | PTL_ME_ACK_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                 PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_CT_COMM;
    ptl_me_t m = base_me(NULL, 0, o);
    m.ct_handle = fanin_ct;
    m.match_bits = FC_FANIN;
    XP_REQUIRE(PtlMEAppend(ni, FLOWCTL_IDX, &m, PTL_PRIORITY_LIST, NULL, &fanin_me) == PTL_OK);
    m.ct_handle = fanout_ct;
    m.match_bits = FC_FANOUT;
    XP_REQUIRE(PtlMEAppend(ni, FLOWCTL_IDX, &m, PTL_PRIORITY_LIST, NULL, &fanout_me) == PTL_OK);
    m.ct_handle = alert_ct;
    m.match_bits = FC_ALERT;
    XP_REQUIRE(PtlMEAppend(ni, FLOWCTL_IDX, &m, PTL_PRIORITY_LIST, NULL, &alert_me) == PTL_OK);
}

/* A barrier made of triggered operations, as the mtl's setup_barrier: the
 * root's fan-out puts fire when its fan-in CT has heard from every other
 * rank; a triggered CTSet resets the CT for the next round. Others put to
 * the root and wait for the fan-out. */
static void triggered_barrier(void)
{
    ptl_ct_event_t cte;
    fan_epoch++;
    if (me == 0) {
        /* Thresholds grow with the epoch (a reset of the fan-in CT could
         * race with the next round's first fan-in). The fan-out includes the
         * root itself, so it knows when it went; a triggered CTSet records
         * the epoch on a third CT at the same moment. */
        ptl_size_t thr = fan_epoch * (ptl_size_t)(np - 1);
        for (int r = 0; r < np; r++)
            XP_REQUIRE(PtlTriggeredPut(zero_md, 0, 0, PTL_NO_ACK_REQ, procs[r], FLOWCTL_IDX,
                                       FC_FANOUT, 0, NULL, 0, fanin_ct, thr) == PTL_OK);
        ptl_ct_event_t val = { fan_epoch, 0 };
        XP_REQUIRE(PtlTriggeredCTSet(epoch_ct, val, fanin_ct, thr) == PTL_OK);
        XP_REQUIRE(PtlCTWait(fanout_ct, fan_epoch, &cte) == PTL_OK);
        XP_CHECK_EQ(cte.failure, 0);
        XP_REQUIRE(PtlCTWait(epoch_ct, fan_epoch, &cte) == PTL_OK);
        XP_CHECK_EQ(cte.success, fan_epoch);
    } else {
        XP_REQUIRE(PtlPut(zero_md, 0, 0, PTL_NO_ACK_REQ, procs[0], FLOWCTL_IDX, FC_FANIN, 0, NULL,
                          0) == PTL_OK);
        XP_REQUIRE(PtlCTWait(fanout_ct, fan_epoch, &cte) == PTL_OK);
        XP_CHECK_EQ(cte.failure, 0);
    }
}

/* ------------------------------------------------------------ flow control */

#define FC_MSGS 120
#define FC_LEN 900

/* Every rank > 0 floods rank 0 with short unexpected messages; rank 0's
 * blocks run out (AUTO_FREE only comes when their headers are consumed,
 * i.e. when receives are posted), its PT is disabled, and the recovery
 * protocol runs; then rank 0 receives everything and checks the order. */
static void phase_flowctl(void)
{
    ptl_ct_event_t cte;
    if (me != 0) {
        static unsigned char buf[FC_MSGS][FC_LEN];
        static req_t s[FC_MSGS];
        int refused_any = 0;
        for (int q = 0; q < FC_MSGS; q++) {
            for (size_t i = 0; i < FC_LEN; i++)
                buf[q][i] = pat(me, 0, 1000000 + (uint32_t)q, i);
            isend(&s[q], 0, 1000000 + (uint32_t)q, buf[q], FC_LEN);
        }
        /* drain: every send completes or is refused */
        for (int q = 0; q < FC_MSGS; q++) {
            wait_done(&s[q]);
            refused_any |= s[q].failed_fc;
        }
        /* Recovery (everyone joins once the root alerts): fan-in, wait
         * for the fan-out, resend refused messages in order. */
        (void)refused_any;
        XP_REQUIRE(PtlCTWait(alert_ct, 1, &cte) == PTL_OK);
        XP_REQUIRE(PtlPut(zero_md, 0, 0, PTL_NO_ACK_REQ, procs[0], FLOWCTL_IDX, FC_FANIN, 0,
                          NULL, 0) == PTL_OK);
        fan_epoch++;
        XP_REQUIRE(PtlCTWait(fanout_ct, fan_epoch, &cte) == PTL_OK);
        for (int q = 0; q < FC_MSGS; q++) {
            if (!s[q].failed_fc)
                continue;
            isend(&s[q], 0, 1000000 + (uint32_t)q, buf[q], FC_LEN);
            wait_done(&s[q]);
            XP_CHECK(s[q].done && !s[q].failed_fc);
        }
        XP_REQUIRE(xp_barrier() == XP_OK);
        return;
    }
    /* root */
    int total = (np - 1) * FC_MSGS;
    for (int idle = 0; !fc_disabled_seen;) {
        if (!progress(100) && ++idle > 100) {
            fprintf(stderr, "rank 0: the PT was never disabled\n");
            xp_test_failures_++;
            break;
        }
    }
    /* alert everyone, then wait for their fan-in (they have drained) */
    for (int r = 1; r < np; r++)
        XP_REQUIRE(PtlPut(zero_md, 0, 0, PTL_NO_ACK_REQ, procs[r], FLOWCTL_IDX, FC_ALERT, 0, NULL,
                          0) == PTL_OK);
    /* The fan-out is armed now but needs one more count than the fan-in
     * gives: the root adds it once its PT is enabled again. */
    ptl_size_t base = fan_epoch * (ptl_size_t)(np - 1); /* fan-ins of the barriers so far */
    for (int r = 1; r < np; r++)
        XP_REQUIRE(PtlTriggeredPut(zero_md, 0, 0, PTL_NO_ACK_REQ, procs[r], FLOWCTL_IDX, FC_FANOUT,
                                   0, NULL, 0, fanin_ct, base + (ptl_size_t)np) == PTL_OK);
    XP_REQUIRE(PtlCTWait(fanin_ct, base + (ptl_size_t)(np - 1), &cte) == PTL_OK);
    XP_CHECK_EQ(cte.failure, 0);
    /* drain the EQ (the mtl drains before re-enabling) */
    while (progress(10))
        ;
    /* receive what was accepted so far (frees the blocks: AUTO_FREE re-links) */
    static unsigned char rb[8][FC_MSGS][FC_LEN];
    static req_t rr[8][FC_MSGS];
    for (int src = 1; src < np; src++)
        for (int q = 0; q < FC_MSGS; q++)
            irecv(&rr[src][q], src, 1000000 + (uint32_t)q, rb[src][q], FC_LEN);
    while (progress(10))
        ;
    XP_REQUIRE(PtlPTEnable(ni, RECV_IDX) == PTL_OK);
    ptl_ct_event_t one = { 1, 0 };
    XP_REQUIRE(PtlCTInc(fanin_ct, one) == PTL_OK); /* releases the fan-out */
    int got = 0;
    for (int src = 1; src < np; src++)
        for (int q = 0; q < FC_MSGS; q++) {
            wait_done(&rr[src][q]);
            if (!check_data(&rr[src][q], src, 1000000 + (uint32_t)q, FC_LEN)) {
                fprintf(stderr, "rank 0: flow-control message %d from %d bad\n", q, src);
                xp_test_failures_++;
            }
            got++;
        }
    XP_CHECK_EQ(got, total);
    XP_CHECK_EQ(order_errors, 0);
    printf("flow control: PT disabled %d time(s), all %d messages received in order\n",
           fc_disabled_seen, got);
    XP_REQUIRE(xp_barrier() == XP_OK);
}

int main(void)
{
    ptl_pt_index_t pti;
    ptl_ni_limits_t lim;

    XP_REQUIRE(PtlInit() == PTL_OK);
    me = xp_rank();
    np = xp_size();
    if (np < 2 || np > 8)
        XP_TEST_SKIP("needs 2..8 ranks");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    /* modex */
    ptl_process_t id;
    XP_REQUIRE(PtlGetPhysId(ni, &id) == PTL_OK);
    XP_REQUIRE(xp_kv_put("ompi-pattern-id", &id, sizeof id) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    procs = calloc((size_t)np, sizeof(*procs));
    for (int r = 0; r < np; r++) {
        size_t len = sizeof(procs[r]);
        XP_REQUIRE(xp_kv_get(r, "ompi-pattern-id", &procs[r], &len) == XP_OK);
    }
    XP_REQUIRE(PtlEQAlloc(ni, 1024, &eqs[0]) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 1024, &eqs[1]) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, PTL_PT_ONLY_USE_ONCE | PTL_PT_ONLY_TRUNCATE | PTL_PT_FLOWCTRL, eqs[1],
                          RECV_IDX, &pti) == PTL_OK);
    XP_CHECK_EQ(pti, RECV_IDX);
    XP_REQUIRE(PtlPTAlloc(ni, PTL_PT_ONLY_TRUNCATE, eqs[0], READ_IDX, &pti) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, PTL_PT_ONLY_TRUNCATE, eqs[0], FLOWCTL_IDX, &pti) == PTL_OK);
    ptl_md_t mdd = { .start = 0, .length = PTL_SIZE_MAX, .eq_handle = eqs[0],
                     .ct_handle = PTL_CT_NONE, .options = 0 };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    ptl_md_t zd = { .start = 0, .length = 0, .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE,
                    .options = 0 };
    XP_REQUIRE(PtlMDBind(ni, &zd, &zero_md) == PTL_OK);
    /* long overflow ME first, then the short blocks */
    ptl_handle_me_t long_ovf;
    ptl_me_t m = base_me(NULL, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE |
                                  PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE);
    m.match_bits = PROTO_LONG;
    m.ignore_bits = CONTEXT_MASK | SOURCE_MASK | TAG_MASK;
    XP_REQUIRE(PtlMEAppend(ni, RECV_IDX, &m, PTL_OVERFLOW_LIST, NULL, &long_ovf) == PTL_OK);
    for (int i = 0; i < NBLOCKS; i++) {
        blocks[i].tag = REQ_BLOCK;
        blocks[i].mem = malloc(BLOCK_SIZE);
        XP_REQUIRE(blocks[i].mem);
        block_activate(&blocks[i]);
    }
    (void)kind_block;
    (void)nblocks_used;
    (void)pending_block_events;
    (void)fc_alerts;
    fc_init();
    XP_REQUIRE(xp_barrier() == XP_OK);

    phase_exchange();
    triggered_barrier();
    triggered_barrier();
    phase_flowctl();

    while (progress(10))
        ;
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlMEUnlink(long_ovf);
    for (int i = 0; i < NBLOCKS; i++)
        if (blocks[i].active)
            PtlMEUnlink(blocks[i].h);
    PtlMEUnlink(fanin_me);
    PtlMEUnlink(fanout_me);
    PtlMEUnlink(alert_me);
    PtlCTFree(fanin_ct);
    PtlCTFree(fanout_ct);
    PtlCTFree(alert_ct);
    PtlCTFree(epoch_ct);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(zero_md), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
