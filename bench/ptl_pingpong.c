/*
 * bench/ptl_pingpong.c - put + counting-event wait, half round-trip latency.
 *
 *   xprun -n 2 ptl_pingpong [--min-size 0] [--max-size 4m] [--iters 10000]
 *                           [--reps 11] [--me [--posted N [--any-source]]]
 *                           [--bits N] [--heap] [--offset B] [--roffset B] [--touch]
 *
 * Default: an LE on a non-matching NI; --me: an ME on a matching NI. The
 * puts carry match bits 0x42 (--bits: others; with 0, as an OpenSHMEM put,
 * a small put takes the 24-byte wire form). --heap: both buffers from
 * xp_shmalloc (the target's entry counts, so its puts still take the ring:
 * ptl_flag_pingpong --heap measures the direct path). --offset: the data
 * starts B bytes into both buffers, which are page-aligned otherwise
 * (memcpy's speed depends on the alignment, docs/performance-notes.md
 * round 28); --roffset: B bytes into the target's buffer instead.
 * --touch: each rank writes its message just before putting it (data just
 * produced, modified in its cache; otherwise the buffer is never written,
 * and a copy from it reads lines no core holds modified).
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 0, .max_size = 4 << 20, .iters = 10000, .warmup = 100,
                  .reps = 11, .window = 1 };
    bench_init(&b, argc, argv, "[--me] [--posted N] [--any-source] [--bits N] [--heap] [--offset B] [--roffset B] "
               "[--touch]");
    bench_pingpong(&b, "ptl_pingpong", b.use_me);
    bench_fini(&b);
    return 0;
}
