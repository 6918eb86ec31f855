/*
 * test_triggered_mp - triggered operations through the real engine, across
 * processes: a token travels around the ring of ranks, each hop being a
 * PtlTriggeredPut released by the arrival counter of the previous hop (no
 * application call at the forwarding ranks between posting and the final
 * wait). Then a triggered CTInc chain, and PtlCTFree of a CT that still has
 * a pending triggered put (dropped cleanly).
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 7

int main(void)
{
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct_le, ct_md, a, b, spare;
    ptl_handle_md_t md;
    ptl_handle_le_t leh;
    ptl_pt_index_t pti;
    ptl_process_t me, right;
    ptl_ct_event_t cte;
    uint64_t recv_buf = 0, send_buf;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &me) == PTL_OK);
    int n = xp_size();
    right.rank = (me.rank + 1) % (ptl_rank_t)n;
    send_buf = 1000 + me.rank;

    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_le) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_md) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PT, &pti) == PTL_OK);
    ptl_le_t le = {.start = &recv_buf, .length = sizeof recv_buf, .ct_handle = ct_le,
                   .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_SUCCESS_DISABLE};
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t mdd = {.start = &send_buf, .length = sizeof send_buf, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = ct_md, .options = PTL_MD_EVENT_CT_SEND};
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);

    /* Ranks 1..n-1 forward when the token arrives; rank 0 starts it. */
    if (me.rank != 0)
        XP_CHECK_EQ(PtlTriggeredPut(md, 0, sizeof send_buf, PTL_NO_ACK_REQ, right, PT, 0, 0,
                                    NULL, 0, ct_le, 1), PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (me.rank == 0)
        XP_CHECK_EQ(PtlPut(md, 0, sizeof send_buf, PTL_NO_ACK_REQ, right, PT, 0, 0, NULL, 0),
                    PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct_le, 1, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 1);
    XP_CHECK_EQ(cte.failure, 0);
    XP_CHECK_EQ(recv_buf, 1000 + (me.rank + (ptl_rank_t)n - 1) % (ptl_rank_t)n);
    XP_CHECK_EQ(PtlCTWait(ct_md, 1, &cte), PTL_OK); /* our own send completed */

    /* Local chain: a reaching 2 increments b by 5. */
    XP_REQUIRE(PtlCTAlloc(ni, &a) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &b) == PTL_OK);
    XP_CHECK_EQ(PtlTriggeredCTInc(b, (ptl_ct_event_t){5, 0}, a, 2), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(a, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(b, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 0);
    XP_CHECK_EQ(PtlCTInc(a, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTWait(b, 5, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 5);

    /* Free a CT with a pending triggered put: nothing is sent. */
    XP_REQUIRE(PtlCTAlloc(ni, &spare) == PTL_OK);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, sizeof send_buf, PTL_NO_ACK_REQ, right, PT, 0, 0, NULL,
                                0, spare, 1), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(spare), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(spare, (ptl_ct_event_t){1, 0}), PTL_ARG_INVALID);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlCTGet(ct_le, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 1);

    XP_CHECK_EQ(PtlCTFree(a), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(b), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, pti), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_le), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_md), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
