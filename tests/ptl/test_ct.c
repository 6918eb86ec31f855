/*
 * test_ct - counting events on a stand-in engine: errors, limits, get/set/
 * inc, waiting (fast path, woken by another thread, by a failure, by
 * PtlCTFree, by abort), polling with timeouts, concurrent increments.
 */
#include <pthread.h>

#include "objects_fake_engine.h"
#include "ptl/ct.h"
#include "ptl/progress.h"
#include "util/clock.h"
#include "xp_test.h"

static const ptl_ct_event_t one = {1, 0};

static void test_no_init(void)
{
    ptl_handle_ct_t ct;
    ptl_ct_event_t ev;
    unsigned int which;
    ptl_size_t test = 1;

    XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, &ct), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTFree(ct = 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTGet(ct, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTWait(ct, 1, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTPoll(&ct, &test, 1, 0, &ev, &which), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTSet(ct, one), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTInc(ct, one), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTCancelTriggered(ct), PTL_NO_INIT);
}

static void test_errors_and_limits(void)
{
    ptl_handle_ct_t ct[4], extra;
    ptl_ct_event_t ev;

    XP_CHECK_EQ(PtlCTAlloc(PTL_INVALID_HANDLE, &extra), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, NULL), PTL_ARG_INVALID);
    for (int i = 0; i < 4; i++)
        XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, &ct[i]), PTL_OK);
    XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, &extra), PTL_NO_SPACE); /* max_cts = 4 */
    XP_CHECK_EQ(PtlCTAlloc(fake.ni[1].handle, &extra), PTL_OK);       /* per NI */
    XP_CHECK_EQ(xp_handle_ni_of(extra), 1);
    XP_CHECK_EQ(PtlCTFree(extra), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct[3]), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct[3]), PTL_ARG_INVALID); /* stale */
    XP_CHECK_EQ(PtlCTGet(ct[3], &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTInc(ct[3], one), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTSet(ct[3], one), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTWait(ct[3], 0, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(PTL_CT_NONE, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(PTL_INVALID_HANDLE, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(fake.ni[0].handle, &ev), PTL_ARG_INVALID); /* wrong type */
    XP_CHECK_EQ(PtlCTGet(ct[0], NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTWait(ct[0], 0, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, &ct[3]), PTL_OK); /* the freed one is back */
    /* Counters: get, inc, set; inc with both fields is invalid. */
    XP_CHECK_EQ(PtlCTGet(ct[0], &ev), PTL_OK);
    XP_CHECK(ev.success == 0 && ev.failure == 0);
    XP_CHECK_EQ(PtlCTInc(ct[0], (ptl_ct_event_t){5, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct[0], (ptl_ct_event_t){0, 2}), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct[0], (ptl_ct_event_t){1, 1}), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(ct[0], &ev), PTL_OK);
    XP_CHECK(ev.success == 5 && ev.failure == 2);
    XP_CHECK_EQ(PtlCTSet(ct[0], (ptl_ct_event_t){UINT64_MAX - 1, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct[0], one), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(ct[0], &ev), PTL_OK);
    XP_CHECK(ev.success == UINT64_MAX && ev.failure == 0); /* 64-bit counters */
    /* A reused slot starts from zero. */
    XP_CHECK_EQ(PtlCTFree(ct[0]), PTL_OK);
    XP_CHECK_EQ(PtlCTAlloc(fake.ni[0].handle, &ct[0]), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(ct[0], &ev), PTL_OK);
    XP_CHECK(ev.success == 0 && ev.failure == 0);
    for (int i = 0; i < 4; i++)
        XP_CHECK_EQ(PtlCTFree(ct[i]), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_CT], 0);
}

typedef struct bump {
    ptl_handle_ct_t ct;
    int mode; /* 0: success x n; 1: one failure; 2: free the CT; 3: abort */
    int n;
    int late; /* the main thread never got into its wait */
} bump_t;

/* Acts once the main thread is inside its wait, so the update, free or
 * abort is always one that arrives during the wait. */
static void *bumper(void *arg)
{
    bump_t *b = arg;
    b->late = !fake_await_waiters(1, "CT bumper");
    if (b->mode == 0) {
        for (int i = 0; i < b->n; i++)
            PtlCTInc(b->ct, one);
    } else if (b->mode == 1) {
        PtlCTInc(b->ct, (ptl_ct_event_t){0, 1});
    } else if (b->mode == 2) {
        PtlCTFree(b->ct);
    } else {
        xp_ptl_interrupt();
    }
    return NULL;
}

static int wait_with(bump_t *b, ptl_size_t test, ptl_ct_event_t *ev)
{
    pthread_t th;
    int rc;
    pthread_create(&th, NULL, bumper, b);
    rc = PtlCTWait(b->ct, test, ev);
    pthread_join(th, NULL);
    XP_CHECK(!b->late);
    return rc;
}

static void test_wait(void)
{
    ptl_handle_ct_t ct;
    ptl_ct_event_t ev;
    bump_t b;

    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct, 0, &ev), PTL_OK); /* fast path */
    b = (bump_t){ct, 0, 10, 0};
    XP_CHECK_EQ(wait_with(&b, 10, &ev), PTL_OK);
    XP_CHECK(ev.success >= 10);
    /* A failure ends the wait even though success never reaches the test. */
    b = (bump_t){ct, 1, 0, 0};
    XP_CHECK_EQ(wait_with(&b, 1000, &ev), PTL_OK);
    XP_CHECK(ev.failure == 1 && ev.success == 10);
    XP_CHECK_EQ(PtlCTSet(ct, (ptl_ct_event_t){0, 0}), PTL_OK);
    /* Abort interrupts. */
    b = (bump_t){ct, 3, 0, 0};
    XP_CHECK_EQ(wait_with(&b, 1000, &ev), PTL_INTERRUPTED);
    fake.aborted = 0;
    /* PtlCTFree from another thread interrupts. */
    b = (bump_t){ct, 2, 0, 0};
    XP_CHECK_EQ(wait_with(&b, 1000, &ev), PTL_INTERRUPTED);
    XP_CHECK_EQ(PtlCTGet(ct, &ev), PTL_ARG_INVALID);
}

static void test_poll(void)
{
    ptl_handle_ct_t ct[3], other;
    ptl_size_t tests[3] = {5, 5, 5};
    ptl_ct_event_t ev;
    unsigned int which = 99;
    uint64_t t0;

    for (int i = 0; i < 3; i++)
        XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct[i]) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(fake.ni[1].handle, &other) == PTL_OK);
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 0, 0, &ev, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTPoll(NULL, tests, 3, 0, &ev, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, 0, NULL, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, 0, &ev, NULL), PTL_ARG_INVALID);
    {
        ptl_handle_ct_t mixed[2] = {ct[0], other};
        XP_CHECK_EQ(PtlCTPoll(mixed, tests, 2, 0, &ev, &which), PTL_ARG_INVALID);
        mixed[1] = PTL_CT_NONE;
        XP_CHECK_EQ(PtlCTPoll(mixed, tests, 2, 0, &ev, &which), PTL_ARG_INVALID);
    }
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, 0, &ev, &which), PTL_CT_NONE_REACHED);
    t0 = xp_time_ns();
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, 50, &ev, &which), PTL_CT_NONE_REACHED);
    XP_CHECK(xp_time_ns() - t0 >= 45000000ull);
    XP_CHECK_EQ(which, 99); /* untouched on failure */
    XP_CHECK_EQ(PtlCTSet(ct[2], (ptl_ct_event_t){5, 0}), PTL_OK);
    XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, 0, &ev, &which), PTL_OK);
    XP_CHECK_EQ(which, 2);
    XP_CHECK_EQ(ev.success, 5);
    /* Woken by another thread, forever timeout. */
    {
        bump_t b = {ct[1], 0, 5, 0};
        pthread_t th;
        XP_CHECK_EQ(PtlCTSet(ct[2], (ptl_ct_event_t){0, 0}), PTL_OK);
        pthread_create(&th, NULL, bumper, &b);
        XP_CHECK_EQ(PtlCTPoll(ct, tests, 3, PTL_TIME_FOREVER, &ev, &which), PTL_OK);
        pthread_join(th, NULL);
        XP_CHECK(!b.late);
        XP_CHECK_EQ(which, 1);
    }
    for (int i = 0; i < 3; i++)
        XP_CHECK_EQ(PtlCTFree(ct[i]), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(other), PTL_OK);
}

/* Engine-style updates from several threads: nothing lost. */
static void *adder(void *arg)
{
    xp_ct_t *ct = xp_ct_from_handle(*(ptl_handle_ct_t *)arg);
    for (int i = 0; i < 100000; i++)
        xp_ct_add(ct, 1, (i % 1000) == 0);
    return NULL;
}

static void test_concurrent(void)
{
    ptl_handle_ct_t ct;
    pthread_t th[3];
    ptl_ct_event_t ev;

    XP_REQUIRE(PtlCTAlloc(fake.ni[0].handle, &ct) == PTL_OK);
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, adder, &ct);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    XP_CHECK_EQ(PtlCTGet(ct, &ev), PTL_OK);
    XP_CHECK_EQ(ev.success, 300000);
    XP_CHECK_EQ(ev.failure, 300);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

int main(void)
{
    test_no_init();
    fake_init(4, 4, 100);
    test_errors_and_limits();
    /* Backstop for the waits without a deadline of their own. */
    fake_watchdog("test_wait", 40);
    test_wait();
    fake_watchdog("test_poll", 40);
    test_poll();
    fake_watchdog("", 0);
    test_concurrent();
    fake_fini();
    return xp_test_result();
}
