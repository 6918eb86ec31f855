/*
 * mp_progress_handback - after a long run of busy waits (an 8-byte
 * ping-pong, during which the progress thread stays parked and parks longer
 * and longer: progress.c, PARK_NS .. PARK_MAX_NS), the application thread
 * of rank 1 leaves the library and computes for COMPUTE_MS. Nobody polls for
 * it but its progress thread, which must notice within its longest park and
 * answer rank 0's gets: each get's round trip must stay well under
 * COMPUTE_MS (a progress thread that stayed parked, or parked for ever,
 * would answer only when rank 1 is back in the library).
 *
 * Thread progress only (XP_PROGRESS=inline has no progress thread: skipped).
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress_pair.h"

#define PT 6
#define PINGS 100000  /* ping-pong round trips before the computing phase */
#define COMPUTE_MS 600
#define GETS 5
#define BOUND_MS 150  /* each get's round trip; PARK_MAX_NS is 4 ms */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
    int me = xp_test_progress_pair_init();
    ptl_pt_index_t pt;
    ptl_handle_ni_t ni = xp_test_pair_ni(PT, &pt);
    ptl_handle_ct_t rct, mct;
    XP_REQUIRE(PtlCTAlloc(ni, &rct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &mct) == PTL_OK);
    static uint64_t rbuf[2], sbuf[2];
    rbuf[1] = 0x5eed0000u + (uint64_t)me; /* what a get of [1] reads */
    ptl_le_t le = {.start = rbuf, .length = sizeof rbuf, .ct_handle = rct, .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM};
    ptl_handle_le_t leh;
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t md = {.start = sbuf, .length = sizeof sbuf, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = mct, .options = PTL_MD_EVENT_CT_REPLY};
    ptl_handle_md_t mdh;
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    ptl_process_t peer = {.rank = (ptl_rank_t)(1 - me)};
    ptl_ct_event_t ev;
    XP_REQUIRE(xp_barrier() == XP_OK);

    /* Busy waits: the progress thread parks, longer each time. */
    uint64_t count = 0;
    for (int i = 0; i < PINGS; i++) {
        if (me == 0) {
            XP_REQUIRE(PtlPut(mdh, 0, 8, PTL_NO_ACK_REQ, peer, pt, 0, 0, NULL, 0) == PTL_OK);
            XP_REQUIRE(PtlCTWait(rct, ++count, &ev) == PTL_OK);
        } else {
            XP_REQUIRE(PtlCTWait(rct, ++count, &ev) == PTL_OK);
            XP_REQUIRE(PtlPut(mdh, 0, 8, PTL_NO_ACK_REQ, peer, pt, 0, 0, NULL, 0) == PTL_OK);
        }
    }

    if (me == 1) {
        /* Out of the library: only the progress thread answers now. */
        double end = now_ms() + COMPUTE_MS;
        volatile uint64_t x = 1;
        while (now_ms() < end)
            for (int k = 0; k < 1000; k++)
                x = x * 3 + 1;
    } else {
        double worst = 0;
        for (int g = 0; g < GETS; g++) {
            sbuf[1] = 0;
            double t0 = now_ms();
            XP_REQUIRE(PtlGet(mdh, 8, 8, peer, pt, 0, 8, NULL) == PTL_OK);
            XP_REQUIRE(PtlCTWait(mct, (ptl_size_t)g + 1, &ev) == PTL_OK);
            double ms = now_ms() - t0;
            worst = ms > worst ? ms : worst;
            XP_CHECK_EQ(ev.failure, 0);
            XP_CHECK(sbuf[1] == 0x5eed0001u);
        }
        printf("rank 0: worst get round trip while rank 1 computes: %.2f ms (bound %d)\n", worst,
               BOUND_MS);
        XP_CHECK(worst < BOUND_MS);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(mdh), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    PtlNIFini(ni);
    PtlFini();
    return xp_test_result();
}
