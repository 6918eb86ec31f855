/*
 * bench/ptl_msgrate.c - message rate of small puts from rank 0 to rank 1
 * (windows of puts on an LE, each window completed by counting acks).
 *
 *   xprun -n 2 ptl_msgrate [--size 8] [--window 256] [--iters 200] [--heap] [--uncounted]
 *
 * --heap: both buffers from xp_shmalloc; --uncounted: the target's entry
 * counts nothing and the target makes no call while the puts stream (an
 * OpenSHMEM put into the symmetric heap: with --heap each put is then a
 * copy by the initiator, ptl/direct.h).
 */
#include "bench_common.h"

static void report(const bench_t *b, size_t size, long iters, double *sec)
{
    double msgs = (double)b->window * (double)iters;
    bench_stats_t st = bench_stats(sec, b->reps);
    printf("bench=ptl_msgrate size=%zu window=%ld iters=%ld reps=%ld median_mps=%.0f "
           "max_mps=%.0f p10_mps=%.0f median_us_per_msg=%.3f buffers=%s target=%s\n",
           size, b->window, iters, b->reps, msgs / st.median, msgs / st.min, msgs / st.p90,
           st.median * 1e6 / msgs, b->heap ? "heap" : "malloc",
           b->uncounted ? "uncounted" : "counted");
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
