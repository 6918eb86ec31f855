/*
 * mp_full_ring - a sender that fills its peer's ring: rank 0 puts FLOOD
 * 8-byte messages to rank 1 without waiting (several times what the peer's
 * inbox holds: 1 MiB of 64-byte cells), rank 1 counts them and answers
 * with one put; every message's value is checked.
 *
 * Run also with both ranks on one CPU (taskset -c 0): the sender then finds
 * the ring full while the rank that would drain it cannot run. Spinning on
 * it, the sender held the CPU until its scheduler slice ended: 2.47-2.54 us
 * per message here; yielding every 64 fruitless looks, 0.034-0.048 (2 ranks
 * on 2 CPUs: 0.038-0.041).
 *
 * The sender floods ROUNDS times and every flood is judged: on one CPU
 * (Zen 5 VM, round 34) about one flood in three took 2.9-3.7 us per
 * message while the receiver, asleep on its doorbell, was woken by a futex
 * call for every put until it ran (73218 futex calls in such a run, 5 in a
 * fast one); since a ring makes the futex call only for a sleeper's mark
 * (util/atomic.c), none of 48 floods took over 0.25 us.
 */
#include <stdio.h>

#include "word_ep.h"
#include "xportals/xp.h"

#define PT 8
#define FLOOD 65536
#define ROUNDS 3
/* Per message: over 20x what was measured on one CPU, under the 2.5 us of
 * a spinning sender. */
#define LIMIT_US (XP_TEST_TSAN ? 20.0 : 1.0)

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    int me = xp_rank();
    if (xp_size() != 2)
        XP_TEST_SKIP("needs 2 ranks");
    static uint64_t in[FLOOD], out[FLOOD];
    word_ep_t e; /* rank 1's answer */
    word_ep_open(&e, PT);
    /* The flood's own portal: an LE over one word per message, counting. */
    ptl_handle_ct_t ct;
    ptl_pt_index_t pt;
    ptl_handle_le_t le;
    XP_REQUIRE(PtlCTAlloc(e.ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(e.ni, 0, PTL_EQ_NONE, PT + 1, &pt) == PTL_OK);
    ptl_le_t d = {.start = in, .length = sizeof in, .ct_handle = ct, .uid = PTL_UID_ANY,
                  .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM};
    XP_REQUIRE(PtlLEAppend(e.ni, pt, &d, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    ptl_handle_md_t md;
    ptl_md_t m = {.start = out, .length = sizeof out, .eq_handle = PTL_EQ_NONE,
                  .ct_handle = PTL_CT_NONE};
    XP_REQUIRE(PtlMDBind(e.ni, &m, &md) == PTL_OK);
    for (uint64_t i = 0; i < FLOOD; i++)
        out[i] = i * 7 + 1;
    XP_REQUIRE(xp_barrier() == XP_OK);

    if (me == 0) {
        ptl_process_t peer = {.rank = 1};
        double worst = 0;
        for (int r = 1; r <= ROUNDS; r++) {
            uint64_t t0 = xp_test_now_ns();
            for (uint64_t i = 0; i < FLOOD; i++)
                XP_REQUIRE(PtlPut(md, i * 8, 8, PTL_NO_ACK_REQ, peer, pt, 0, i * 8, NULL, 0) ==
                           PTL_OK);
            word_ep_wait(&e, (uint64_t)r); /* rank 1 has them all */
            double us = (double)(xp_test_now_ns() - t0) / 1e3 / FLOOD;
            printf("%d puts into a full ring: %.3f us per message\n", FLOOD, us);
            worst = us > worst ? us : worst;
        }
        XP_CHECK(worst < LIMIT_US);
    } else {
        for (int r = 1; r <= ROUNDS; r++) {
            ptl_ct_event_t c;
            XP_REQUIRE(PtlCTWait(ct, (ptl_size_t)r * FLOOD, &c) == PTL_OK && c.failure == 0);
            for (uint64_t i = 0; i < FLOOD; i++)
                if (in[i] != i * 7 + 1) {
                    XP_CHECK(in[i] == i * 7 + 1);
                    break;
                }
            word_ep_put(&e, 0, (uint64_t)r);
        }
    }

    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(PtlMDRelease(md) == PTL_OK);
    XP_REQUIRE(PtlLEUnlink(le) == PTL_OK);
    XP_REQUIRE(PtlPTFree(e.ni, pt) == PTL_OK);
    XP_REQUIRE(PtlCTFree(ct) == PTL_OK);
    word_ep_close(&e);
    xp_finalize();
    return xp_test_result();
}
