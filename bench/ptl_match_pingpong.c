/*
 * bench/ptl_match_pingpong.c - ME put + counting-event wait on a matching
 * NI, half round-trip latency; with --posted N, N receives that never match
 * are posted before the one that does (fixed source: found by hashing; with
 * --any-source: a wildcard list the matcher has to walk).
 *
 *   xprun -n 2 ptl_match_pingpong [--max-size 8] [--posted 0] [--any-source]
 *                                 [--bits N] [--heap]
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 0, .max_size = 8, .iters = 10000, .warmup = 100, .reps = 11,
                  .window = 1 };
    bench_init(&b, argc, argv, "[--posted N] [--any-source] [--bits N] [--heap]");
    bench_pingpong(&b, "ptl_match_pingpong", 1);
    bench_fini(&b);
    return 0;
}
