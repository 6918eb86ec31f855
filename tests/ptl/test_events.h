/*
 * tests/ptl/test_events.h - the next event of an EQ in a multi-process test
 * (mp_bounce, mp_eager): waits up to 5 s (20 under TSan), and a test whose
 * event does not come stops there, saying which rank waited for what, and
 * whether the event was missed or late: a look with no wait right after the
 * timeout that finds it says the waiter slept through its arrival (a lost
 * wake-up); one that finds it only within a further wait says the peer was slow
 * (a loaded or sanitized run).
 */
#ifndef XP_TEST_EVENTS_H
#define XP_TEST_EVENTS_H

#include <portals4.h>
#include <stdio.h>
#include <time.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define XP_TEST_EVENT_WAIT_MS XP_TEST_WAIT_MS(5000)

/* After a wait that timed out: was the event there already (missed), or
 * does it come within one more wait (late)? Says which on stderr. */
static inline void xp_test_event_missing(ptl_handle_eq_t eq, const char *what)
{
    ptl_event_t ev;
    unsigned which;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int now = PtlEQPoll(&eq, 1, 0, &ev, &which);
    int later = now == PTL_OK ? now : PtlEQPoll(&eq, 1, XP_TEST_EVENT_WAIT_MS, &ev, &which);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    if (now == PTL_OK)
        fprintf(stderr, "rank %d: %s: no event in %d ms, but there at once after (missed "
                "wake-up)\n", xp_rank(), what, XP_TEST_EVENT_WAIT_MS);
    else if (later == PTL_OK)
        fprintf(stderr, "rank %d: %s: no event in %d ms; it came %.1f ms later (slow peer)\n",
                xp_rank(), what, XP_TEST_EVENT_WAIT_MS, ms);
    else
        fprintf(stderr, "rank %d: %s: no event in %d ms, nor in as long again\n", xp_rank(), what,
                XP_TEST_EVENT_WAIT_MS);
}

static inline ptl_event_t xp_test_next_event(ptl_handle_eq_t eq, const char *what)
{
    ptl_event_t ev;
    unsigned which;
    int rc = PtlEQPoll(&eq, 1, XP_TEST_EVENT_WAIT_MS, &ev, &which);
    if (rc == PTL_EQ_EMPTY)
        xp_test_event_missing(eq, what);
    else if (rc != PTL_OK)
        fprintf(stderr, "rank %d: %s: PtlEQPoll rc %d\n", xp_rank(), what, rc);
    XP_REQUIRE(rc == PTL_OK);
    return ev;
}

#endif
