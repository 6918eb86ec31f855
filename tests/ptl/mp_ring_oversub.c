/*
 * mp_ring_oversub - issue 5's oversubscription target: with more ranks than
 * CPUs (4 ranks under xprun on a 2-CPU machine), a token passed around the
 * ring of ranks by 8-byte puts, each rank blocking in PtlCTWait for it,
 * still takes microseconds per hop, not milliseconds.
 *
 * The fault this guards against is a waiter that keeps its CPU while the
 * rank it waits for cannot run (spinning without yielding, or a progress
 * thread competing for the CPU): each hop then lasts a scheduler slice,
 * milliseconds. Measured here 12-14 us per hop (bench ring_bench, the same
 * pattern). Every hop checks the token's value.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 6
#define LAPS 500
/* Milliseconds per hop is the fault; ThreadSanitizer runs every access
 * through its checks. */
#define LIMIT_US (XP_TEST_TSAN ? 1000.0 : 500.0)

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    int me = xp_rank(), n = xp_size();
    if (n < 2)
        XP_TEST_SKIP("needs 2 or more ranks");
    ptl_process_t next = {.rank = (ptl_rank_t)((me + 1) % n)};
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct;
    ptl_handle_le_t le;
    ptl_handle_md_t mdh;
    ptl_pt_index_t pt;
    ptl_ct_event_t c;
    uint64_t in = 0, out = 0;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    ptl_le_t e = {.start = &in, .length = sizeof in, .ct_handle = ct, .uid = PTL_UID_ANY,
                  .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM};
    XP_REQUIRE(PtlLEAppend(ni, PT, &e, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    ptl_md_t md = {.start = &out, .length = sizeof out, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = PTL_CT_NONE};
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    /* The token counts hops: rank r receives (lap * n + r) on lap `lap`. */
    uint64_t t0 = xp_test_now_ns();
    for (uint64_t lap = 0; lap < LAPS; lap++) {
        if (me != 0 || lap != 0) {
            XP_REQUIRE(PtlCTWait(ct, me == 0 ? lap : lap + 1, &c) == PTL_OK && c.failure == 0);
            XP_REQUIRE(in == lap * (uint64_t)n + (uint64_t)me);
        }
        out = lap * (uint64_t)n + (uint64_t)me + 1;
        XP_REQUIRE(PtlPut(mdh, 0, 8, PTL_NO_ACK_REQ, next, PT, 0, 0, NULL, 0) == PTL_OK);
    }
    if (me == 0) { /* the last lap's token comes home */
        XP_REQUIRE(PtlCTWait(ct, LAPS, &c) == PTL_OK && c.failure == 0);
        XP_REQUIRE(in == (uint64_t)LAPS * (uint64_t)n);
        double us = (double)(xp_test_now_ns() - t0) / 1e3 / ((double)LAPS * n);
        printf("%d ranks: %.2f us per hop\n", n, us);
        XP_CHECK(us < LIMIT_US);
    }

    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(PtlMDRelease(mdh) == PTL_OK);
    XP_REQUIRE(PtlLEUnlink(le) == PTL_OK);
    XP_REQUIRE(PtlPTFree(ni, pt) == PTL_OK);
    XP_REQUIRE(PtlCTFree(ct) == PTL_OK);
    XP_REQUIRE(PtlNIFini(ni) == PTL_OK);
    PtlFini();
    xp_finalize();
    return xp_test_result();
}
