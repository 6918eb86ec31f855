/*
 * mp_ring_oversub - issue 5's oversubscription target: with more ranks than
 * CPUs (4 ranks under xprun on a 2-CPU machine), a token passed around the
 * ring of ranks by 8-byte puts, each rank blocking in PtlCTWait for it,
 * still takes microseconds per hop, not milliseconds.
 *
 * The fault this guards against is a waiter that keeps its CPU while the
 * rank it waits for cannot run (spinning without yielding, or a progress
 * thread competing for the CPU): each hop then lasts a scheduler slice,
 * milliseconds. Measured on the Intel VM 12-14 us per hop (bench ring_bench,
 * the same pattern); on the AMD VM 25-37 us with a futex sleep per wait,
 * 1.3-1.7 with the waiters' yield phase (XP_OVERSUB_YIELD_US). Every hop
 * checks the token's value.
 *
 * Then each rank waits with a timeout for a count that never comes: the
 * wait returns PTL_CT_NONE_REACHED after its timeout, whether the deadline
 * falls after the yield phase (thread variant: 500 us phase, 20 ms timeout)
 * or inside it (inline variant, run with a 200 ms phase: ends at 20 ms).
 */
#include <stdio.h>

#include "word_ep.h"
#include "xportals/xp.h"

#define PT 6
#define LAPS 500
/* The fault is a scheduler slice per hop (~2 ms here). Alone 12-14 us; with
 * another 2-rank job beside it 400 us was seen. ThreadSanitizer runs every
 * access through its checks. */
#define LIMIT_US (XP_TEST_TSAN ? 1500.0 : 1000.0)
#define TIMEOUT_MS 20

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    int me = xp_rank(), n = xp_size();
    if (n < 2)
        XP_TEST_SKIP("needs 2 or more ranks");
    word_ep_t e;
    word_ep_open(&e, PT);
    XP_REQUIRE(xp_barrier() == XP_OK);

    /* The token counts hops: rank r receives (lap * n + r) on lap `lap`. */
    uint64_t t0 = xp_test_now_ns();
    for (uint64_t lap = 0; lap < LAPS; lap++) {
        if (me != 0 || lap != 0) {
            word_ep_wait(&e, me == 0 ? lap : lap + 1);
            XP_REQUIRE(e.in == lap * (uint64_t)n + (uint64_t)me);
        }
        word_ep_put(&e, (me + 1) % n, lap * (uint64_t)n + (uint64_t)me + 1);
    }
    if (me == 0) { /* the last lap's token comes home */
        word_ep_wait(&e, LAPS);
        XP_REQUIRE(e.in == (uint64_t)LAPS * (uint64_t)n);
        double us = (double)(xp_test_now_ns() - t0) / 1e3 / ((double)LAPS * n);
        printf("%d ranks: %.2f us per hop\n", n, us);
        XP_CHECK(us < LIMIT_US);
    }

    /* Nobody sends any more: a timed wait ends at its timeout. */
    XP_REQUIRE(xp_barrier() == XP_OK);
    ptl_ct_event_t c;
    ptl_size_t want = LAPS + 1000;
    unsigned int which = 99;
    t0 = xp_test_now_ns();
    XP_CHECK_EQ(PtlCTPoll(&e.ct, &want, 1, TIMEOUT_MS, &c, &which), PTL_CT_NONE_REACHED);
    double ms = (double)(xp_test_now_ns() - t0) / 1e6;
    XP_CHECK(ms >= TIMEOUT_MS - 1.0 && ms < TIMEOUT_MS + 2000.0);
    XP_REQUIRE(PtlCTGet(e.ct, &c) == PTL_OK); /* (PtlCTPoll fills c only on success) */
    XP_CHECK(c.success == LAPS && c.failure == 0); /* every rank got LAPS tokens */

    XP_REQUIRE(xp_barrier() == XP_OK);
    word_ep_close(&e);
    xp_finalize();
    return xp_test_result();
}
