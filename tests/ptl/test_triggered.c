/*
 * test_triggered - triggered operations on a stand-in engine: release at the
 * threshold (success + failure), order, immediate release, every kind,
 * chains without recursion, PtlCTFree / PtlCTCancelTriggered with pending
 * operations, the NI limit, and posting racing with increments.
 */
#include <pthread.h>
#include <string.h>

#include "objects_fake_engine.h"
#include "ptl/ct.h"
#include "xp_test.h"

static const ptl_process_t me = {.rank = 0};

static int put_at(ptl_handle_ct_t ct, ptl_size_t threshold, uintptr_t tag)
{
    return PtlTriggeredPut(FAKE_MD(1), 0, 8, PTL_NO_ACK_REQ, me, 0, 0, 0, (void *)tag, 0, ct,
                           threshold);
}

static void test_release_and_order(void)
{
    ptl_handle_ct_t ct;

    fake.ncalls = 0;
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    /* Posted out of order; equal thresholds keep call order. */
    XP_CHECK_EQ(put_at(ct, 3, 30), PTL_OK);
    XP_CHECK_EQ(put_at(ct, 1, 10), PTL_OK);
    XP_CHECK_EQ(put_at(ct, 2, 20), PTL_OK);
    XP_CHECK_EQ(put_at(ct, 2, 21), PTL_OK);
    XP_CHECK_EQ(put_at(ct, 5, 50), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 0);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 1);
    /* A failure counts toward the threshold too. */
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){0, 2}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 4);
    XP_CHECK_EQ((uintptr_t)fake.calls[0].user_ptr, 10);
    XP_CHECK_EQ((uintptr_t)fake.calls[1].user_ptr, 20);
    XP_CHECK_EQ((uintptr_t)fake.calls[2].user_ptr, 21);
    XP_CHECK_EQ((uintptr_t)fake.calls[3].user_ptr, 30);
    /* Already reached: issued by the posting call. */
    XP_CHECK_EQ(put_at(ct, 2, 99), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 5);
    /* PtlCTSet jumping past the threshold releases; lowering does nothing. */
    XP_CHECK_EQ(PtlCTSet(ct, (ptl_ct_event_t){0, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 5);
    XP_CHECK_EQ(PtlCTSet(ct, (ptl_ct_event_t){7, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 6);
    XP_CHECK_EQ((uintptr_t)fake.calls[5].user_ptr, 50);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

static void test_kinds_and_args(void)
{
    ptl_handle_ct_t ct, ct2, ct_other_ni;
    ptl_ct_event_t ev;
    uint64_t operand = 0x1122334455667788ull;

    fake.ncalls = 0;
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct2) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(fake.ni[1].handle, &ct_other_ni) == PTL_OK);
    /* Bad arguments are rejected at post time. */
    XP_CHECK_EQ(put_at(PTL_CT_NONE, 1, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(PTL_INVALID_HANDLE, 0, 8, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL, 0,
                                ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(FAKE_MD(1), 0, 8, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL, 0,
                                   PTL_BAND, PTL_DOUBLE, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(FAKE_MD(1), 0, 8, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL, 0,
                                   PTL_SWAP, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(FAKE_MD(1), 0, 1024, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL, 0,
                                   PTL_SUM, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredSwap(FAKE_MD(2), 0, FAKE_MD(1), 0, 8, me, 0, 0, 0, NULL, 0, NULL,
                                 PTL_CSWAP, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredSwap(FAKE_MD(2), 0, FAKE_MD(1), 0, 16, me, 0, 0, 0, NULL, 0,
                                 &operand, PTL_CSWAP, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    /* The local side is checked at the call, as PtlPut checks it (found only
     * when the operation fires, it would be lost without an event): past
     * the MD's end, over the message size, a target the NI cannot address. */
    const ptl_process_t bad = {.phys = {.nid = 0, .pid = FAKE_BAD_PID}};
    XP_CHECK_EQ(PtlTriggeredPut(FAKE_MD(1), FAKE_MD_LEN - 4, 8, PTL_NO_ACK_REQ, me, 0, 0, 0,
                                NULL, 0, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredGet(FAKE_MD(1), 0, FAKE_MD_LEN + 1, me, 0, 0, 0, NULL, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(FAKE_MD(1), 0, 8, PTL_NO_ACK_REQ, bad, 0, 0, 0, NULL, 0, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(FAKE_MD(1), FAKE_MD_LEN, 8, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL,
                                   0, PTL_SUM, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredFetchAtomic(FAKE_MD(2), FAKE_MD_LEN - 4, FAKE_MD(1), 0, 8, me, 0, 0,
                                        0, NULL, 0, PTL_SUM, PTL_INT64_T, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredSwap(FAKE_MD(2), 0, FAKE_MD(1), 0, 8, bad, 0, 0, 0, NULL, 0,
                                 &operand, PTL_CSWAP, PTL_INT64_T, ct, 1), PTL_ARG_INVALID);
    fake.ni[0].limits.max_msg_size = 4;
    XP_CHECK_EQ(PtlTriggeredPut(FAKE_MD(1), 0, 5, PTL_NO_ACK_REQ, me, 0, 0, 0, NULL, 0, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredGet(FAKE_MD(1), 0, 5, me, 0, 0, 0, NULL, ct, 1), PTL_ARG_INVALID);
    fake.ni[0].limits.max_msg_size = (ptl_size_t)INT64_MAX;
    XP_CHECK_EQ(PtlTriggeredCTInc(ct_other_ni, (ptl_ct_event_t){1, 0}, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredCTInc(ct2, (ptl_ct_event_t){1, 1}, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    /* One of each kind at threshold 1. */
    XP_CHECK_EQ(PtlTriggeredGet(FAKE_MD(1), 0, 16, me, 0, 0, 0, (void *)1, ct, 1), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredAtomic(FAKE_MD(1), 0, 8, PTL_ACK_REQ, me, 0, 0, 0, (void *)2, 0,
                                   PTL_SUM, PTL_INT64_T, ct, 1), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredFetchAtomic(FAKE_MD(2), 0, FAKE_MD(1), 0, 8, me, 0, 0, 0, (void *)3,
                                        0, PTL_MAX, PTL_DOUBLE, ct, 1), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredSwap(FAKE_MD(2), 0, FAKE_MD(1), 0, 8, me, 0, 0, 0, (void *)4, 0,
                                 &operand, PTL_CSWAP, PTL_INT64_T, ct, 1), PTL_OK);
    operand = 0; /* the posted operation kept its own copy */
    XP_CHECK_EQ(PtlTriggeredCTInc(ct2, (ptl_ct_event_t){0, 3}, ct, 1), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredCTSet(ct2, (ptl_ct_event_t){7, 0}, ct, 2), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 6);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 4);
    for (int i = 0; i < 4; i++) {
        XP_CHECK_EQ(fake.calls[i].kind, i + 1);
        XP_CHECK_EQ((uintptr_t)fake.calls[i].user_ptr, i + 1);
    }
    {
        uint64_t got;
        memcpy(&got, fake.calls[3].operand, 8);
        XP_CHECK_EQ(got, 0x1122334455667788ull);
    }
    XP_CHECK_EQ(PtlCTGet(ct2, &ev), PTL_OK);
    XP_CHECK(ev.success == 0 && ev.failure == 3);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(ct2, &ev), PTL_OK);
    XP_CHECK(ev.success == 7 && ev.failure == 0);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    PtlCTFree(ct);
    PtlCTFree(ct2);
    PtlCTFree(ct_other_ni);
}

/* A chain: ct[i] reaching 1 increments ct[i+1]; the last one releases a put.
 * And a put whose loopback delivery counts on the CT that releases the next
 * put. Both must run iteratively (data call nesting depth 1). */
static void test_chains(void)
{
    enum { N = 3 };
    ptl_handle_ct_t ct[N];
    ptl_handle_ct_t loop;

    fake.ncalls = 0;
    fake.max_depth = 0;
    for (int i = 0; i < N; i++)
        XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct[i]) == PTL_OK);
    for (int i = 0; i + 1 < N; i++)
        XP_CHECK_EQ(PtlTriggeredCTInc(ct[i + 1], (ptl_ct_event_t){1, 0}, ct[i], 1), PTL_OK);
    XP_CHECK_EQ(put_at(ct[N - 1], 1, 7), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct[0], (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 1);
    for (int i = 0; i < N; i++)
        PtlCTFree(ct[i]);

    /* 2000 puts, put k released when the loopback count reaches k. */
    fake.ncalls = 0;
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &loop) == PTL_OK);
    fake.put_counts_ct = loop;
    fake.ni[0].limits.max_triggered_ops = 100000;
    for (int k = 1; k <= 2000; k++)
        XP_CHECK_EQ(put_at(loop, (ptl_size_t)k, (uintptr_t)k), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(loop, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 2000);
    XP_CHECK_EQ(fake.max_depth, 1);
    for (int k = 0; k < 2000; k++)
        XP_CHECK_EQ((uintptr_t)fake.calls[k].user_ptr, k + 1);
    fake.put_counts_ct = 0;
    fake.ni[0].limits.max_triggered_ops = 100;
    PtlCTFree(loop);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
}

static void test_free_cancel_limit(void)
{
    ptl_handle_ct_t ct, target;
    ptl_ct_event_t ev;

    fake.ncalls = 0;
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    for (int i = 0; i < 100; i++)
        XP_CHECK_EQ(put_at(ct, 10, 0), PTL_OK);
    XP_CHECK_EQ(put_at(ct, 10, 0), PTL_NO_SPACE); /* max_triggered_ops = 100 */
    XP_CHECK_EQ(PtlCTCancelTriggered(ct), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){10, 0}), PTL_OK);
    XP_CHECK_EQ(fake.ncalls, 0); /* cancelled: never issued */
    XP_CHECK_EQ(PtlCTCancelTriggered(PTL_CT_NONE), PTL_ARG_INVALID);
    /* Free with pending operations: dropped cleanly, counts given back. */
    XP_CHECK_EQ(PtlCTSet(ct, (ptl_ct_event_t){0, 0}), PTL_OK);
    for (int i = 0; i < 50; i++)
        XP_CHECK_EQ(put_at(ct, 5, 0), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    XP_CHECK_EQ(put_at(ct, 1, 0), PTL_ARG_INVALID);
    /* A triggered CTInc whose target CT is freed before it fires: dropped. */
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &target) == PTL_OK);
    XP_CHECK_EQ(PtlTriggeredCTInc(target, (ptl_ct_event_t){1, 0}, ct, 1), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(target), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){1, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(target, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
}

/* Posting races with increments from other threads: every operation whose
 * threshold is reached is issued exactly once. */
typedef struct race {
    ptl_handle_ct_t ct;
} race_t;

static void *incrementer(void *arg)
{
    race_t *r = arg;
    xp_ct_t *ct = xp_ct_from_handle(r->ct);
    for (int i = 0; i < 5000; i++)
        xp_ct_add(ct, 1, 0);
    return NULL;
}

static void test_race(void)
{
    race_t r;
    pthread_t th[2];
    int seen[10001] = {0};

    fake.ncalls = 0;
    fake.ni[0].limits.max_triggered_ops = 20000;
    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &r.ct) == PTL_OK);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, incrementer, &r);
    for (int k = 1; k <= 10000; k++)
        XP_CHECK_EQ(put_at(r.ct, (ptl_size_t)k, (uintptr_t)k), PTL_OK);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    XP_CHECK_EQ(fake.ncalls, 10000);
    for (int i = 0; i < fake.ncalls; i++) {
        uintptr_t k = (uintptr_t)fake.calls[i].user_ptr;
        XP_CHECK(k >= 1 && k <= 10000 && !seen[k]);
        if (k >= 1 && k <= 10000)
            seen[k] = 1;
    }
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_TRIGGERED], 0);
    PtlCTFree(r.ct);
}

int main(void)
{
    ptl_handle_ct_t ct = 1;

    XP_CHECK_EQ(put_at(ct, 1, 0), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredCTInc(ct, (ptl_ct_event_t){1, 0}, ct, 1), PTL_NO_INIT);
    fake_init(16, 4, 100);
    test_release_and_order();
    test_kinds_and_args();
    test_chains();
    test_free_cancel_limit();
    test_race();
    fake_fini();
    return xp_test_result();
}
