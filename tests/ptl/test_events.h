/*
 * tests/ptl/test_events.h - the next event of an EQ in a multi-process test
 * (mp_bounce, mp_eager): waits up to 5 s, and a test whose event does not
 * come stops there, saying which rank waited for what.
 */
#ifndef XP_TEST_EVENTS_H
#define XP_TEST_EVENTS_H

#include <portals4.h>
#include <stdio.h>

#include "xp_test.h"
#include "xportals/xp.h"

static inline ptl_event_t xp_test_next_event(ptl_handle_eq_t eq, const char *what)
{
    ptl_event_t ev;
    unsigned which;
    int rc = PtlEQPoll(&eq, 1, 5000, &ev, &which);
    if (rc != PTL_OK)
        fprintf(stderr, "rank %d: %s: PtlEQPoll rc %d\n", xp_rank(), what, rc);
    XP_REQUIRE(rc == PTL_OK);
    return ev;
}

#endif
