/*
 * The oversubscribed wait's test of a yield that found nobody to run
 * (ptl/progress.c, yield_phase): the bound it derives from the machine's
 * system-call cost, and, on this machine, that a yield with nobody else on
 * the CPU comes back under that bound (with a fixed 1 us, every yield on a
 * VM whose system calls take ~1.1 us looked like a context switch).
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#include "ptl/progress.h"
#include "util/clock.h"
#include "xp_test.h"

static void bound_from_cost(void)
{
    XP_CHECK(xp_ptl_yield_alone_ns(0) == 1000);
    XP_CHECK(xp_ptl_yield_alone_ns(300) == 1000);
    XP_CHECK(xp_ptl_yield_alone_ns(500) == 1000);
    XP_CHECK(xp_ptl_yield_alone_ns(501) == 1002);
    XP_CHECK(xp_ptl_yield_alone_ns(1042) == 2084);
    XP_CHECK(xp_ptl_yield_alone_ns(25000) == 50000);
    XP_CHECK(xp_ptl_yield_alone_ns(1000000) == 50000);   /* capped */
    XP_CHECK(xp_ptl_yield_alone_ns(UINT64_MAX / 4) == 50000);
}

/* The fastest of n sched_yield calls on this thread's CPU, in ns. */
static uint64_t yield_min_ns(int n)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        uint64_t t0 = xp_time_ns();
        sched_yield();
        uint64_t d = xp_time_ns() - t0;
        if (d < best)
            best = d;
    }
    return best;
}

int main(void)
{
    bound_from_cost();
    /* Alone on one CPU (pinned where we run): the fastest yield is one that
     * found nobody, unless the CPU is busy with others all along. */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
    (void)sched_setaffinity(0, sizeof set, &set);
    uint64_t sys = xp_ptl_syscall_cost_ns(), yield = yield_min_ns(64);
    uint32_t bound = xp_ptl_yield_alone_ns(sys);
    printf("system call %lu ns, fastest yield %lu ns, bound %u ns\n", (unsigned long)sys,
           (unsigned long)yield, bound);
    XP_CHECK(sys > 0 && sys < 1000000);
    if (yield > 100000) {
        printf("every yield ran somebody else: the CPU is busy; not judged\n");
        return xp_test_failures_ ? 1 : 77;
    }
    XP_CHECK(yield < bound);
    return xp_test_result();
}
