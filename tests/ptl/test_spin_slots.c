/*
 * The wait's spin slots (ptl/progress.c): application threads that spin in a
 * wait while a progress thread runs count themselves in per-thread slots,
 * and those that find every slot taken in active_waiters. NTHREADS (more
 * than XP_PTL_SPIN_SLOTS) threads wait on one CT at once, twice (the second
 * time new threads, which may inherit the first ones' thread ids): every
 * one is counted (spinning or asleep), one PtlCTInc ends every wait, and
 * nobody counts as spinning afterwards. With XP_PROGRESS=inline nothing is
 * counted as spinning and no slot is taken.
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ptl/engine.h"
#include "ptl/progress.h"
#include "util/clock.h"
#include "xp_test.h"

#define NTHREADS (XP_PTL_SPIN_SLOTS + 4)

typedef struct waiter {
    ptl_handle_ct_t ct;
    ptl_size_t test;
    int rc;
    ptl_ct_event_t v;
} waiter_t;

static void *wait_ct(void *arg)
{
    waiter_t *w = arg;
    w->rc = PtlCTWait(w->ct, w->test, &w->v);
    return NULL;
}

/* Threads inside a wait past their first look: spinning or asleep. */
static int threads_waiting(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    return xp_ptl_spinning(st) + __atomic_load_n(&st->app_sleepers, __ATOMIC_ACQUIRE);
}

static int slots_taken(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    int n = 0;
    for (int i = 0; i < XP_PTL_SPIN_SLOTS; i++)
        n += __atomic_load_n(&st->spin_slot[i].owner, __ATOMIC_ACQUIRE) != 0;
    return n;
}

static void one_round(ptl_handle_ct_t ct, ptl_size_t test)
{
    pthread_t t[NTHREADS];
    waiter_t w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (waiter_t){ct, test, -1, {0, 0}};
        XP_REQUIRE(pthread_create(&t[i], NULL, wait_ct, &w[i]) == 0);
    }
    uint64_t deadline = xp_time_ns() + 20000000000ull;
    while (threads_waiting() < NTHREADS && xp_time_ns() < deadline)
        nanosleep(&(struct timespec){0, 100000}, NULL);
    if (threads_waiting() != NTHREADS)
        fprintf(stderr, "after 20 s, %d of %d threads wait\n", threads_waiting(), NTHREADS);
    XP_CHECK_EQ(threads_waiting(), NTHREADS);
    XP_CHECK_EQ(PtlCTInc(ct, (ptl_ct_event_t){1, 0}), PTL_OK);
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        XP_CHECK_EQ(w[i].rc, PTL_OK);
        XP_CHECK(w[i].v.success >= test);
    }
    XP_CHECK_EQ(xp_ptl_spinning(xp_ptl_state()), 0);
}

int main(void)
{
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    int threaded = __atomic_load_n(&xp_ptl_state()->progress_running, __ATOMIC_ACQUIRE);
    one_round(ct, 1);
    /* Every slot was taken (NTHREADS live threads began a counted wait), or
     * none without a progress thread. */
    XP_CHECK_EQ(slots_taken(), threaded ? XP_PTL_SPIN_SLOTS : 0);
    one_round(ct, 2);
    XP_CHECK_EQ(slots_taken(), threaded ? XP_PTL_SPIN_SLOTS : 0);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
