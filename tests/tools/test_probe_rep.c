/*
 * test_probe_rep - the per-repetition state labels of the ping-pong
 * benchmarks (bench/probe_util.h): which repetitions count as near, far or
 * mixed from the probes on both sides of them, and the keys they print.
 * Pure logic, no processes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "../bench/probe_util.h"
#include "xp_test.h"

static void test_state(void)
{
    XP_CHECK_EQ(probe_rep_state(35, 40), 'n');
    XP_CHECK_EQ(probe_rep_state(200, 250), 'f');
    XP_CHECK_EQ(probe_rep_state(35, 250), 'm'); /* flipped during the repetition */
    XP_CHECK_EQ(probe_rep_state(250, 35), 'm');
    XP_CHECK_EQ(probe_rep_state(-1, 35), 'm');             /* no probe on one side */
    XP_CHECK_EQ(probe_rep_state(0, 35), 'm');              /* the follower's answer: no time */
    XP_CHECK_EQ(probe_rep_state(2000, 2500), 'm');         /* busy: neither */
    XP_CHECK_EQ(probe_rep_state(PROBE_NEAR_NS, 200), 'f'); /* the bound is far */
}

static void test_keys(void)
{
    /* probes: near near near far far far near; reps 0,1 near, 2 mixed,
     * 3,4 far, 5 mixed */
    const double ns[] = {30, 31, 32, 210, 220, 230, 33};
    const double v[] = {0.10, 0.12, 0.5, 0.30, 0.34, 0.2};
    double tmp[6];
    char out[160];
    probe_rep_keys(v, ns, 6, tmp, "us", out, sizeof out);
    XP_CHECK(strcmp(out, "near_reps=2 near_median_us=0.120 far_reps=2 far_median_us=0.340") == 0);
    /* none far: '-' */
    const double ns2[] = {30, 31, 32};
    const double v2[] = {0.2, 0.1};
    probe_rep_keys(v2, ns2, 2, tmp, "us", out, sizeof out);
    XP_CHECK(strcmp(out, "near_reps=2 near_median_us=0.200 far_reps=0 far_median_us=-") == 0);
    /* the results themselves are left in their order */
    XP_CHECK(v2[0] == 0.2 && v2[1] == 0.1);
}

/* What a line appends: the keys behind a space, rates from seconds, and
 * nothing without probes. */
static void test_suffix(void)
{
    const double ns[] = {30, 31, 32};
    const double sec[] = {0.5, 0.25};
    const double unprobed[] = {-1, -1, -1};
    char out[160];
    probe_rep_suffix(sec, ns, 2, 100.0, "mps", out, sizeof out);
    XP_CHECK(strcmp(out, " near_reps=2 near_median_mps=400.000 far_reps=0 far_median_mps=-") == 0);
    XP_CHECK(sec[0] == 0.5 && sec[1] == 0.25);
    probe_rep_suffix(sec, ns, 2, 0, "us", out, sizeof out);
    XP_CHECK(strcmp(out, " near_reps=2 near_median_us=0.500 far_reps=0 far_median_us=-") == 0);
    probe_rep_suffix(sec, unprobed, 2, 0, "us", out, sizeof out);
    XP_CHECK(out[0] == '\0');
    probe_rep_suffix(sec, NULL, 2, 0, "us", out, sizeof out);
    XP_CHECK(out[0] == '\0');
}

int main(void)
{
    test_state();
    test_keys();
    test_suffix();
    return xp_test_result();
}
