/*
 * mp_beside_compute - more ranks than CPUs, and some of them compute: ranks
 * 0 and 1 ping-pong 8-byte puts, each blocking in PtlCTWait, while ranks 2
 * and 3 compute outside the library (with xprun on a 2-CPU machine, each
 * shares a CPU with one of the pair) and look for rank 0's "done" put with
 * PtlCTGet between stretches of work.
 *
 * The fault this guards against is a waiter woken twice per packet (the
 * progress thread by the doorbell, then the application thread it parked):
 * under the EEVDF scheduler a computing rank keeps its CPU for its slice
 * against each wake-up, so that was 720-920 us one way here; woken by the
 * packet itself 58-214 us (inline: 0.6-152). Both progress modes; every
 * token's value checked.
 */
#include <stdio.h>

#include "word_ep.h"
#include "xportals/xp.h"

#define PT 7
#define ROUNDS 300
#define WORK_US 200
/* Under the 720-920 us of the fault, over twice what was measured. */
#define LIMIT_US (XP_TEST_TSAN ? 1500.0 : 500.0)

static volatile double sink;

/* Compute for about `us` microseconds without entering the library. */
static void work(double us)
{
    uint64_t t0 = xp_test_now_ns();
    while ((double)(xp_test_now_ns() - t0) < us * 1e3)
        sink += 1.0;
}

static void pingpong(word_ep_t *e, int me)
{
    uint64_t t0 = xp_test_now_ns();
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        if (me == 0)
            word_ep_put(e, 1, i);
        word_ep_wait(e, i);
        XP_REQUIRE(e->in == i);
        if (me == 1)
            word_ep_put(e, 0, i);
    }
    double us = (double)(xp_test_now_ns() - t0) / 1e3 / (2.0 * ROUNDS);
    printf("rank %d: %.2f us one way beside computing ranks\n", me, us);
    XP_CHECK(us < LIMIT_US);
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    int me = xp_rank(), n = xp_size();
    if (n < 3)
        XP_TEST_SKIP("needs 3 or more ranks");
    word_ep_t e;
    word_ep_open(&e, PT);
    XP_REQUIRE(xp_barrier() == XP_OK);

    if (me < 2) {
        pingpong(&e, me);
        if (me == 0) /* done: the others stop computing */
            for (int r = 2; r < n; r++)
                word_ep_put(&e, r, 1);
    } else {
        ptl_ct_event_t c = {0, 0};
        while (c.success == 0) {
            work(WORK_US);
            XP_REQUIRE(PtlCTGet(e.ct, &c) == PTL_OK);
        }
        XP_CHECK(c.success == 1 && c.failure == 0 && e.in == 1);
    }

    XP_REQUIRE(xp_barrier() == XP_OK);
    word_ep_close(&e);
    xp_finalize();
    return xp_test_result();
}
