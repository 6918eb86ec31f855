/*
 * bench/ptl_msgrate.c - message rate of small puts from rank 0 to rank 1
 * (windows of puts on an LE, each window completed by counting acks).
 *
 *   xprun -n 2 ptl_msgrate [--size 8] [--window 256] [--iters 200] [--heap] [--uncounted]
 *
 * median_put_us: the initiator's time in its PtlPut calls alone per message
 * (each window's issue without its wait for the ACKs), median over the
 * repetitions: where it is most of median_us_per_msg, the initiator bounds
 * the rate (NA for windows under BENCH_ISSUE_MIN: two clock reads per
 * window would weigh on them).
 * --heap: both buffers from xp_shmalloc; --uncounted: the target's entry
 * counts nothing and the target makes no call while the puts stream (an
 * OpenSHMEM put into the symmetric heap: with --heap each put is then a
 * copy by the initiator, ptl/direct.h).
 */
#include "bench_common.h"

static void report(const bench_t *b, size_t size, long iters, double *sec)
{
    double msgs = (double)b->window * (double)iters;
    char states[192];
    bench_rep_states(b, sec, b->rep_ns, b->reps, msgs, "mps", states, sizeof states);
    bench_stats_t st = bench_stats(sec, b->reps);
    bench_stats_t is = bench_stats(b->issue, b->reps);
    char put[32] = "NA";
    if (b->window >= BENCH_ISSUE_MIN)
        snprintf(put, sizeof put, "%.3f", is.median * 1e6 / msgs);
    printf("bench=ptl_msgrate size=%zu window=%ld iters=%ld reps=%ld median_mps=%.0f "
           "max_mps=%.0f p10_mps=%.0f median_us_per_msg=%.3f median_put_us=%s buffers=%s "
           "target=%s%s\n",
           size, b->window, iters, b->reps, msgs / st.median, msgs / st.min, msgs / st.p90,
           st.median * 1e6 / msgs, put, b->heap ? "heap" : "malloc",
           b->uncounted ? "uncounted" : "counted", states);
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 8, .max_size = 8, .iters = 200, .warmup = 5, .reps = 5,
                  .window = 256 };
    bench_init(&b, argc, argv, "[--window N] [--heap] [--uncounted]");
    bench_stream(&b, report);
    bench_fini(&b);
    return 0;
}
