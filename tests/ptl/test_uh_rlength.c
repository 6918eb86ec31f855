/*
 * test_uh_rlength - PTL_ME_LOCAL_INC_UH_RLENGTH (Portals 4.3). One process
 * putting to itself on a matching NI: 3 puts of 8 bytes land unexpected in
 * an overflow ME; then a locally managed priority ME with the option is
 * appended.
 *   - length 64, min_free 0: it consumes the 3 headers (3 PUT_OVERFLOW
 *     events), is linked with its local offset at 24, and the next put lands
 *     at byte 24 of its buffer;
 *   - length 16, min_free 8: after 2 headers only 0 bytes are left, so it
 *     unlinks at once (AUTO_UNLINK, no LINK) and the 3rd header stays
 *     unexpected (a search still finds it);
 *   - without the option the offset stays 0 (the 4.2 behaviour).
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"

#define PT 5

static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;
static ptl_handle_md_t md;
static ptl_handle_ct_t ct;
static ptl_process_t self;
static uint64_t src[4], ovf[16], dst[8];

static ptl_me_t make_me(void *start, ptl_size_t len, unsigned opts, ptl_size_t min_free)
{
    ptl_me_t me;
    memset(&me, 0, sizeof me);
    me.start = start;
    me.length = len;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = opts;
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    me.match_bits = 7;
    me.min_free = min_free;
    return me;
}

/* n puts of 8 bytes with match bits 7, all acknowledged. */
static void put_n(int n, ptl_size_t *acked)
{
    ptl_ct_event_t cte;
    for (int i = 0; i < n; i++)
        XP_REQUIRE(PtlPut(md, 0, 8, PTL_CT_ACK_REQ, self, PT, 7, 0, NULL, 0) == PTL_OK);
    *acked += (ptl_size_t)n;
    XP_REQUIRE(PtlCTWait(ct, *acked, &cte) == PTL_OK);
    XP_CHECK_EQ(cte.failure, 0);
}

static ptl_event_kind_t next_event(ptl_event_t *ev)
{
    XP_REQUIRE(PtlEQWait(eq, ev) == PTL_OK);
    return ev->type;
}

static void expect_empty(void)
{
    ptl_event_t ev;
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
}

/* Append a priority ME after `n` unexpected puts; returns its handle or 0
 * when it unlinked during the append. Checks the overflow events. */
static ptl_handle_me_t append_after(int n, ptl_me_t *me, int consumed, ptl_size_t *acked)
{
    ptl_handle_me_t h;
    ptl_event_t ev;
    put_n(n, acked);
    XP_REQUIRE(PtlMEAppend(ni, PT, me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    for (int i = 0; i < consumed; i++) {
        XP_CHECK_EQ(next_event(&ev), PTL_EVENT_PUT_OVERFLOW);
        XP_CHECK_EQ(ev.rlength, 8);
    }
    return h;
}

int main(void)
{
    ptl_handle_me_t ovf_h, h;
    ptl_event_t ev;
    ptl_size_t acked = 0;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PT, &(ptl_pt_index_t){0}) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    ptl_md_t d = {.start = src, .length = sizeof src, .eq_handle = PTL_EQ_NONE,
                  .ct_handle = ct, .options = PTL_MD_EVENT_CT_ACK};
    XP_REQUIRE(PtlMDBind(ni, &d, &md) == PTL_OK);
    ptl_me_t o = make_me(ovf, sizeof ovf, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL |
                         PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_COMM_DISABLE, 0);
    XP_REQUIRE(PtlMEAppend(ni, PT, &o, PTL_OVERFLOW_LIST, NULL, &ovf_h) == PTL_OK);
    unsigned opts = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_LOCAL_INC_UH_RLENGTH;

    /* 1: three headers advance the offset to 24; the next put lands there. */
    ptl_me_t me = make_me(dst, 64, opts, 0);
    h = append_after(3, &me, 3, &acked);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_LINK);
    src[0] = 0x1122334455667788ull;
    put_n(1, &acked);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_PUT);
    XP_CHECK(ev.start == (void *)&dst[3]);
    XP_CHECK_EQ(dst[3], 0x1122334455667788ull);
    expect_empty();
    XP_CHECK_EQ(PtlMEUnlink(h), PTL_OK);

    /* 2: min_free 8 on 16 bytes: full after 2 headers, unlinked at once;
     * the third header is still unexpected. */
    me = make_me(dst, 16, opts, 8);
    append_after(3, &me, 2, &acked);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_AUTO_UNLINK);
    expect_empty();
    ptl_me_t s = make_me(NULL, 0, PTL_ME_OP_PUT, 0);
    XP_REQUIRE(PtlMESearch(ni, PT, &s, PTL_SEARCH_DELETE, NULL) == PTL_OK);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_PUT_OVERFLOW);
    expect_empty();

    /* 3: without the option the offset is untouched (4.2). */
    me = make_me(dst, 64, PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, 0);
    h = append_after(2, &me, 2, &acked);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_LINK);
    put_n(1, &acked);
    XP_CHECK_EQ(next_event(&ev), PTL_EVENT_PUT);
    XP_CHECK(ev.start == (void *)&dst[0]);
    expect_empty();
    XP_CHECK_EQ(PtlMEUnlink(h), PTL_OK);

    XP_CHECK_EQ(PtlMEUnlink(ovf_h), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
