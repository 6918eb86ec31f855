/*
 * bench/ptl_bw.c - unidirectional bandwidth: windows of puts from rank 0 to
 * rank 1 (an LE on a non-matching NI), each window completed by counting
 * acknowledgements. With --heap both buffers come from the shared heap
 * (xp_shmalloc), which the target copies from through its mapping.
 *
 *   xprun -n 2 ptl_bw [--min-size 8] [--max-size 4m] [--window 64] [--iters 200] [--heap]
 *                     [--uncounted] [--offset B] [--roffset B]
 *
 * --uncounted: the target's entry counts nothing (ptl_msgrate.c). --offset:
 * the data starts B bytes into both buffers (an alignment other than a
 * page's: memcpy's speed depends on it, docs/performance-notes.md round 28);
 * --roffset: B bytes into the target's buffer instead.
 */
#include "bench_common.h"

/* GB/s = 1e9 bytes per second; statistics over repetitions. */
static void report(const bench_t *b, size_t size, long iters, double *sec)
{
    double bytes = (double)size * (double)b->window * (double)iters;
    char states[192];
    bench_rep_states(b, sec, b->rep_ns, b->reps, bytes * 1e-9, "gbs", states, sizeof states);
    bench_stats_t st = bench_stats(sec, b->reps); /* sorted: fastest first */
    printf("bench=ptl_bw size=%zu buffers=%s window=%ld iters=%ld reps=%ld median_gbs=%.3f "
           "max_gbs=%.3f p10_gbs=%.3f target=%s offset=%ld roffset=%ld%s\n",
           size, b->heap ? "heap" : "malloc", b->window, iters, b->reps,
           bytes / st.median * 1e-9, bytes / st.min * 1e-9, bytes / st.p90 * 1e-9,
           b->uncounted ? "uncounted" : "counted", b->offset, b->roffset, states);
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 8, .max_size = 4 << 20, .iters = 200, .warmup = 5, .reps = 5,
                  .window = 64 };
    bench_init(&b, argc, argv, "[--window N] [--heap] [--uncounted] [--offset B] [--roffset B]");
    bench_stream(&b, report);
    bench_fini(&b);
    return 0;
}
