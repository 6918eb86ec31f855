/*
 * mp_unexpected_deep - more than 10^5 unexpected headers on one portal
 * index, each found by the receive that matches it, newest first (the
 * offload paper's worst case, every append matching the LAST header), and
 * the max_unexpected_headers limit enforced when it is small.
 *
 * Rank 0 asks for room (desired max_unexpected_headers / max_entries /
 * max_list_size above the engine's defaults: granted up to its caps).
 * Ranks 1..n-1 send DEEP 8-byte puts (message i from rank 1 + i % (n-1),
 * match bits i, hdr_data ~i, payload i) that all land in one MANAGE_LOCAL
 * overflow ME. Rank 0 then appends DEEP use-once priority MEs, newest tag
 * first, each with its sender as the fixed source: every append must
 * produce exactly one PTL_EVENT_PUT_OVERFLOW, at once, for its message
 * (bits, hdr_data, initiator, payload at ev.start inside the overflow
 * buffer). Afterwards no header is left (PtlMESearch finds nothing).
 *
 * Then on a second NI (interface 1) with desired max_unexpected_headers =
 * SMALL, SMALL + EXTRA messages arrive unexpected: exactly SMALL are kept,
 * the rest are dropped (failed acknowledgement at the sender, drop count at
 * the target), and the kept ones match.
 */
#include <portals4.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define DEEP 120000
#define SMALL 100
#define EXTRA 37
#define PT 6
#define SZ 8

static int me, n;

static int sender_of(long i)
{
    return 1 + (int)(i % (n - 1));
}

static ptl_handle_ni_t open_ni(ptl_interface_t iface, int uh, int entries)
{
    ptl_ni_limits_t want, got;
    ptl_handle_ni_t ni;
    memset(&want, 0, sizeof(want));
    want.max_unexpected_headers = uh;
    want.max_entries = entries;
    want.max_list_size = entries;
    XP_REQUIRE(PtlNIInit(iface, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, &want, &got, &ni) ==
               PTL_OK);
    XP_CHECK_EQ(got.max_unexpected_headers, uh);
    XP_CHECK_EQ(got.max_entries, entries);
    XP_CHECK_EQ(got.max_list_size, entries);
    return ni;
}

/* ---------------------------------------------------------------- receiver */

typedef struct rx {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ovf_ct;
    ptl_handle_me_t ovf;
    uint64_t *ovf_buf;
    long count;
} rx_t;

static void rx_open(rx_t *r, ptl_interface_t iface, int uh, long count)
{
    ptl_pt_index_t got;
    ptl_me_t m;
    r->count = count;
    r->ni = open_ni(iface, uh, uh);
    XP_REQUIRE(PtlEQAlloc(r->ni, 64, &r->eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(r->ni, &r->ovf_ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(r->ni, 0, r->eq, PT, &got) == PTL_OK);
    r->ovf_buf = calloc((size_t)count, SZ);
    XP_REQUIRE(r->ovf_buf);
    memset(&m, 0, sizeof(m));
    m.start = r->ovf_buf;
    m.length = (ptl_size_t)count * SZ;
    m.ct_handle = r->ovf_ct;
    m.uid = PTL_UID_ANY;
    m.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_CT_COMM |
                PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    m.match_id.rank = PTL_RANK_ANY;
    m.ignore_bits = ~(ptl_match_bits_t)0;
    XP_REQUIRE(PtlMEAppend(r->ni, PT, &m, PTL_OVERFLOW_LIST, NULL, &r->ovf) == PTL_OK);
}

/* Append a use-once ME for message i (its sender fixed): it must consume
 * the header at once and report it. Returns 1 if it matched. */
static int receive_one(rx_t *r, long i, uint64_t *sink)
{
    ptl_me_t m;
    ptl_handle_me_t h;
    ptl_event_t ev;
    memset(&m, 0, sizeof(m));
    m.start = sink;
    m.length = SZ;
    m.ct_handle = PTL_CT_NONE;
    m.uid = PTL_UID_ANY;
    m.options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE |
                PTL_ME_EVENT_UNLINK_DISABLE;
    m.match_id.rank = (ptl_rank_t)sender_of(i);
    m.match_bits = (ptl_match_bits_t)i;
    XP_REQUIRE(PtlMEAppend(r->ni, PT, &m, PTL_PRIORITY_LIST, (void *)(intptr_t)(i + 1), &h) ==
               PTL_OK);
    if (PtlEQGet(r->eq, &ev) != PTL_OK)
        return 0; /* no header: it is linked, waiting */
    XP_REQUIRE(ev.type == PTL_EVENT_PUT_OVERFLOW);
    XP_REQUIRE(ev.match_bits == (ptl_match_bits_t)i);
    XP_REQUIRE(ev.hdr_data == ~(uint64_t)i);
    XP_REQUIRE(ev.initiator.rank == (ptl_rank_t)sender_of(i));
    XP_REQUIRE(ev.user_ptr == (void *)(intptr_t)(i + 1));
    XP_REQUIRE(ev.mlength == SZ && ev.rlength == SZ);
    XP_REQUIRE(ev.ni_fail_type == PTL_NI_OK);
    /* The payload is where the event says, inside the overflow buffer. */
    XP_REQUIRE((uint64_t *)ev.start >= r->ovf_buf && (uint64_t *)ev.start < r->ovf_buf + r->count);
    uint64_t v;
    memcpy(&v, ev.start, SZ);
    XP_REQUIRE(v == (uint64_t)i);
    XP_CHECK_EQ(PtlEQGet(r->eq, &ev), PTL_EQ_EMPTY); /* exactly one event */
    return 1;
}

static void no_header_left(rx_t *r)
{
    ptl_me_t m;
    ptl_event_t ev;
    memset(&m, 0, sizeof(m));
    m.uid = PTL_UID_ANY;
    m.ct_handle = PTL_CT_NONE;
    m.match_id.rank = PTL_RANK_ANY;
    m.ignore_bits = ~(ptl_match_bits_t)0;
    XP_REQUIRE(PtlMESearch(r->ni, PT, &m, PTL_SEARCH_ONLY, NULL) == PTL_OK);
    XP_REQUIRE(PtlEQGet(r->eq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
}

static void rx_close(rx_t *r)
{
    XP_CHECK_EQ(PtlMEUnlink(r->ovf), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(r->ni), PTL_OK);
    free(r->ovf_buf);
}

static void receiver_deep(void)
{
    rx_t r;
    ptl_ct_event_t c;
    uint64_t sink = 0;
    long matched = 0;
    rx_open(&r, 0, DEEP + 64, DEEP);
    XP_REQUIRE(xp_barrier() == XP_OK); /* overflow list ready */
    XP_REQUIRE(PtlCTWait(r.ovf_ct, DEEP, &c) == PTL_OK);
    XP_CHECK_EQ(c.failure, 0);
    for (long i = DEEP - 1; i >= 0; i--)
        matched += receive_one(&r, i, &sink);
    XP_CHECK_EQ(matched, DEEP);
    XP_CHECK_EQ(sink, 0); /* every message was consumed from the overflow buffer */
    no_header_left(&r);
    rx_close(&r);
}

static void receiver_small(void)
{
    rx_t r;
    ptl_ct_event_t c;
    ptl_sr_value_t drops;
    uint64_t sink = 0;
    long matched = 0;
    rx_open(&r, 1, SMALL, SMALL + EXTRA);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* every sender saw all its acknowledgements */
    XP_REQUIRE(PtlCTGet(r.ovf_ct, &c) == PTL_OK);
    XP_CHECK_EQ(c.success, SMALL);
    XP_REQUIRE(PtlNIStatus(r.ni, PTL_SR_DROP_COUNT, &drops) == PTL_OK);
    XP_CHECK_EQ(drops, EXTRA);
    /* The kept ones are the first SMALL to arrive; each sender's messages
     * arrive in order, so they are not known in advance: match any of them. */
    for (long i = SMALL + EXTRA - 1; i >= 0; i--) {
        ptl_me_t m;
        ptl_handle_me_t h;
        ptl_event_t ev;
        memset(&m, 0, sizeof(m));
        m.start = &sink;
        m.length = SZ;
        m.ct_handle = PTL_CT_NONE;
        m.uid = PTL_UID_ANY;
        m.options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE |
                    PTL_ME_EVENT_UNLINK_DISABLE;
        m.match_id.rank = (ptl_rank_t)sender_of(i);
        m.match_bits = (ptl_match_bits_t)i;
        XP_REQUIRE(PtlMEAppend(r.ni, PT, &m, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
        if (PtlEQGet(r.eq, &ev) == PTL_OK) {
            XP_CHECK_EQ(ev.type, PTL_EVENT_PUT_OVERFLOW);
            XP_CHECK_EQ(ev.match_bits, (uint64_t)i);
            matched++;
        } else {
            XP_CHECK_EQ(PtlMEUnlink(h), PTL_OK); /* its message was dropped */
        }
    }
    XP_CHECK_EQ(matched, SMALL);
    no_header_left(&r);
    rx_close(&r);
}

/* ---------------------------------------------------------------- senders */

static void send_share(ptl_interface_t iface, long count, int expect_fail)
{
    ptl_handle_ni_t ni = open_ni(iface, 1000, 1000);
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_md_t d;
    ptl_ct_event_t c;
    uint64_t *vals = calloc((size_t)count, SZ);
    uint64_t mine = 0;
    XP_REQUIRE(vals);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    memset(&d, 0, sizeof(d));
    d.start = vals;
    d.length = (ptl_size_t)count * SZ;
    d.options = PTL_MD_EVENT_CT_ACK;
    d.eq_handle = PTL_EQ_NONE;
    d.ct_handle = ct;
    XP_REQUIRE(PtlMDBind(ni, &d, &md) == PTL_OK);
    for (long i = 0; i < count; i++)
        vals[i] = (uint64_t)i;
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (long i = 0; i < count; i++) {
        if (sender_of(i) != me)
            continue;
        ptl_process_t to = {.rank = 0};
        XP_REQUIRE(PtlPut(md, (ptl_size_t)i * SZ, SZ, PTL_CT_ACK_REQ, to, PT, (ptl_match_bits_t)i,
                          0, NULL, ~(uint64_t)i) == PTL_OK);
        mine++;
    }
    /* Every put is acknowledged, the refused ones as failures (PtlCTWait
     * returns as soon as failure != 0: then poll the count). */
    for (;;) {
        XP_REQUIRE(PtlCTGet(ct, &c) == PTL_OK);
        if ((uint64_t)(c.success + c.failure) >= mine)
            break;
        if (c.failure == 0)
            XP_REQUIRE(PtlCTWait(ct, mine, &c) == PTL_OK);
        else
            sched_yield();
    }
    if (!expect_fail)
        XP_CHECK_EQ(c.failure, 0);
    if (expect_fail)
        XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    free(vals);
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    me = xp_rank();
    n = xp_size();
    if (n < 2)
        XP_TEST_SKIP("needs 2 or more processes");
    if (me == 0) {
        receiver_deep();
        receiver_small();
    } else {
        send_share(0, DEEP, 0);
        send_share(1, SMALL + EXTRA, 1);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlFini();
    return xp_test_result();
}
