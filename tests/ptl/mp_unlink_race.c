/*
 * mp_unlink_race - PtlMEUnlink racing the handler's auto-unlink of the same
 * use-once ME (an MPI receive cancelled while its message arrives).
 *
 * Round k: rank 1 appends a use-once ME for match bits k, tells rank 0
 * "ready k", waits a little (0 to a few microseconds, varying per round) and
 * unlinks the ME; rank 0 puts k as soon as it sees "ready k". Either the
 * unlink comes first (PTL_OK; the put then matches nothing and is dropped)
 * or the put consumed the ME first (the unlink answers PTL_ARG_INVALID):
 * never both, never neither. At the end the puts delivered (the MEs' CT),
 * the unlinks that failed and the initiator's successful ACKs must agree.
 * The handler frees a consumed ME right after it frees its handle, so an
 * unlink must not look at the entry before it holds the PT lock (pt.c reads
 * the entry's PT with the handle pinned); that window is a few instructions
 * wide and this test does not hit it on demand -- it checks that the two
 * outcomes stay exclusive and counted while unlink and handler really run
 * at once (the progress thread has a CPU of its own: --bind-to none).
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT_ME 5    /* rank 1: the use-once MEs */
#define PT_CTL 6   /* both: "ready k" (rank 0), the final count (rank 1) */
#define ROUNDS 4000
#define WAIT_MS 10000

static int wait_ct(ptl_handle_ct_t ct, ptl_size_t n)
{
    ptl_ct_event_t ev;
    unsigned int which;
    int rc = PtlCTPoll(&ct, &n, 1, WAIT_MS, &ev, &which);
    if (rc != PTL_OK || ev.failure)
        fprintf(stderr, "rank %d: wait for %llu: rc %d, failure %llu\n", xp_rank(),
                (unsigned long long)n, rc, (unsigned long long)ev.failure);
    return rc == PTL_OK && !ev.failure;
}

/* An LE on PT_CTL counting every put into buf. */
static ptl_handle_ct_t control_le(ptl_handle_ni_t ni, void *buf, size_t len)
{
    ptl_handle_ct_t ct;
    ptl_pt_index_t pt;
    ptl_handle_me_t h;
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT_CTL, &pt) == PTL_OK);
    ptl_me_t me = {.start = buf, .length = len, .ct_handle = ct, .uid = PTL_UID_ANY,
                   .options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM,
                   .match_id = {.rank = PTL_RANK_ANY}};
    XP_REQUIRE(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    return ct;
}

static ptl_handle_md_t bind_md(ptl_handle_ni_t ni, void *buf, size_t len, ptl_handle_eq_t eq)
{
    ptl_handle_md_t md;
    ptl_md_t d = {.start = buf, .length = len, .eq_handle = eq, .ct_handle = PTL_CT_NONE,
                  .options = PTL_MD_EVENT_SEND_DISABLE};
    XP_REQUIRE(PtlMDBind(ni, &d, &md) == PTL_OK);
    return md;
}

static void initiator(ptl_handle_ni_t ni)
{
    static uint64_t ready[1], out[1];
    ptl_handle_eq_t eq;
    ptl_event_t ev;
    ptl_process_t peer = {.rank = 1};
    uint64_t ok = 0, dropped = 0;

    ptl_handle_ct_t ct_ready = control_le(ni, ready, sizeof ready);
    XP_REQUIRE(PtlEQAlloc(ni, ROUNDS + 16, &eq) == PTL_OK);
    ptl_handle_md_t md = bind_md(ni, out, sizeof out, eq);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (ptl_size_t k = 1; k <= ROUNDS; k++) {
        if (!wait_ct(ct_ready, k)) {
            XP_CHECK(0);
            return;
        }
        XP_REQUIRE(PtlPut(md, 0, sizeof out, PTL_ACK_REQ, peer, PT_ME, k, 0, NULL, 0) == PTL_OK);
    }
    for (int i = 0; i < ROUNDS; i++) {
        XP_REQUIRE(PtlEQWait(eq, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
        if (ev.ni_fail_type == PTL_NI_OK)
            ok++;
        else
            dropped++;
    }
    fprintf(stderr, "rank 0: %llu puts delivered, %llu dropped\n", (unsigned long long)ok,
            (unsigned long long)dropped);
    out[0] = ok;
    PtlMDRelease(md);
    md = bind_md(ni, out, sizeof out, PTL_EQ_NONE);
    XP_REQUIRE(PtlPut(md, 0, sizeof out, PTL_NO_ACK_REQ, peer, PT_CTL, 0, 0, NULL, 0) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlMDRelease(md);
    PtlEQFree(eq);
}

/* Busy for 0 to 64 microseconds, varying per round, so that the unlink
 * lands before, during and after the put's handling (a progress thread
 * woken by the arrival takes microseconds to run) in different rounds; in
 * odd rounds polling (PtlCTGet makes progress), so that with inline
 * progress the put is consumed first too. */
static void jitter(ptl_size_t k, ptl_handle_ct_t ct)
{
    uint64_t t0 = xp_test_now_ns(), span = (k % 64) * 1000 + (k % 7) * 150;
    ptl_ct_event_t ev;
    while (xp_test_now_ns() - t0 < span)
        if (k & 1) /* poll: the handler runs in this thread (inline progress) */
            PtlCTGet(ct, &ev);
}

static void target(ptl_handle_ni_t ni)
{
    static uint64_t inbox[1], sink[1], one[1] = {1};
    ptl_handle_ct_t ct_del, ct_final = control_le(ni, inbox, sizeof inbox);
    ptl_pt_index_t pt;
    ptl_process_t peer = {.rank = 0};
    uint64_t unlinked = 0, consumed = 0;

    XP_REQUIRE(PtlCTAlloc(ni, &ct_del) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT_ME, &pt) == PTL_OK);
    ptl_handle_md_t md = bind_md(ni, one, sizeof one, PTL_EQ_NONE);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (ptl_size_t k = 1; k <= ROUNDS; k++) {
        ptl_me_t me = {.start = sink, .length = sizeof sink, .ct_handle = ct_del,
                       .uid = PTL_UID_ANY,
                       .options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_CT_COMM,
                       .match_id = {.rank = PTL_RANK_ANY}, .match_bits = k};
        ptl_handle_me_t h;
        XP_REQUIRE(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
        XP_REQUIRE(PtlPut(md, 0, sizeof one, PTL_NO_ACK_REQ, peer, PT_CTL, 0, 0, NULL, 0) ==
                   PTL_OK);
        jitter(k, ct_del);
        int rc = PtlMEUnlink(h);
        if (rc == PTL_OK)
            unlinked++;
        else if (rc == PTL_ARG_INVALID)
            consumed++;
        else
            XP_CHECK_EQ(rc, PTL_OK);
    }
    /* Rank 0 reports after its last ACK: every put was handled here. */
    XP_REQUIRE(wait_ct(ct_final, 1));
    ptl_ct_event_t del;
    XP_CHECK_EQ(PtlCTGet(ct_del, &del), PTL_OK);
    fprintf(stderr, "rank 1: %llu unlinked first, %llu consumed first\n",
            (unsigned long long)unlinked, (unsigned long long)consumed);
    XP_CHECK_EQ(unlinked + consumed, ROUNDS);
    XP_CHECK_EQ(del.success, consumed);
    XP_CHECK_EQ(inbox[0], consumed);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlMDRelease(md);
}

int main(void)
{
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    if (xp_rank() == 0)
        initiator(ni);
    else
        target(ni);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlNIFini(ni);
    PtlFini();
    return xp_test_result();
}
