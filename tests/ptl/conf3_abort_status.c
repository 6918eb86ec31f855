/*
 * conf3_abort_status - PtlAbort (Portals 4.3) makes every thread blocked in
 * PtlCTWait, PtlCTPoll, PtlEQWait or PtlEQPoll return PTL_ABORTED. (Freeing
 * the CT / EQ a thread waits on is a different event: PTL_INTERRUPTED.)
 * After the abort the objects are still usable: a second round of waits is
 * aborted the same way.
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "xp_test.h"

static ptl_handle_ct_t ct;
static ptl_handle_eq_t eq;
static int finished; /* waits returned (atomic) */

/* Count a returned wait. */
static void *done(int rc)
{
    __atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL);
    return (void *)(intptr_t)rc;
}

static void *ct_wait(void *arg)
{
    ptl_ct_event_t e;
    (void)arg;
    return done(PtlCTWait(ct, 10, &e));
}

static void *ct_poll(void *arg)
{
    ptl_ct_event_t e;
    ptl_size_t test = 10;
    unsigned int which;
    (void)arg;
    return done(PtlCTPoll(&ct, &test, 1, PTL_TIME_FOREVER, &e, &which));
}

static void *eq_wait(void *arg)
{
    ptl_event_t ev;
    (void)arg;
    return done(PtlEQWait(eq, &ev));
}

static void *eq_poll(void *arg)
{
    ptl_event_t ev;
    unsigned int which;
    (void)arg;
    return done(PtlEQPoll(&eq, 1, PTL_TIME_FOREVER, &ev, &which));
}

int main(void)
{
    ptl_handle_ni_t ni;
    void *(*fn[4])(void *) = {ct_wait, ct_poll, eq_wait, eq_poll};

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 16, &eq) == PTL_OK);

    for (int round = 0; round < 2; round++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            XP_REQUIRE(pthread_create(&t[i], NULL, fn[i], NULL) == 0);
        /* A thread that reaches its wait after an abort waits on: abort
         * again until all four have returned (no sleep-based guess). */
        usleep(20 * 1000);
        for (int tries = 0; __atomic_load_n(&finished, __ATOMIC_ACQUIRE) < 4 * (round + 1);
             tries++) {
            XP_CHECK_EQ(PtlAbort(), PTL_OK);
            XP_REQUIRE(tries < 1000); /* 20 s */
            usleep(20 * 1000);
        }
        for (int i = 0; i < 4; i++) {
            void *rc;
            pthread_join(t[i], &rc);
            XP_CHECK_EQ((int)(intptr_t)rc, PTL_ABORTED);
        }
    }

    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
