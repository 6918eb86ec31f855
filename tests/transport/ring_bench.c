/*
 * ring_bench - a token passed around all ranks (8-byte put + PtlCTWait per
 * hop); prints the median time per hop. Oversubscription check: 4 ranks on
 * 2 CPUs must take microseconds per hop, not milliseconds.
 *
 *   xprun -n 4 <build>/libexec/xportals/ring_bench [--iters 2000] [--reps 5]
 */
#include "bench_common.h"
int main(int argc, char **argv)
{
    bench_t b = { .min_size = 8, .max_size = 8, .iters = 2000, .warmup = 50, .reps = 5, .window = 1 };
    bench_init(&b, argc, argv, NULL);
    ptl_handle_ni_t ni = bench_ni(0, 64);
    ptl_pt_index_t pt; ptl_handle_ct_t ct; ptl_ct_event_t ev;
    char *rbuf = bench_alloc(8), *sbuf = bench_alloc(8);
    BENCH_CHECK(PtlCTAlloc(ni, &ct));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 5, &pt));
    bench_post(ni, 0, pt, rbuf, 8, ct, 0, bench_peer(0), 0);
    ptl_handle_md_t md = bench_md(ni, sbuf, 8, 0, PTL_CT_NONE);
    int next = (b.rank + 1) % b.size;
    uint64_t count = 0;
    double *v = calloc(b.reps, sizeof *v);
    bench_barrier(&b);
    for (long r = 0; r < b.reps; r++) {
        double t0 = 0;
        for (long i = 0; i < b.warmup + b.iters; i++) {
            if (i == b.warmup) t0 = bench_now_us();
            count++;
            if (b.rank == 0) {
                BENCH_CHECK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, bench_peer(next), pt, 0, 0, NULL, 0));
                BENCH_CHECK(PtlCTWait(ct, count, &ev));
            } else {
                BENCH_CHECK(PtlCTWait(ct, count, &ev));
                BENCH_CHECK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, bench_peer(next), pt, 0, 0, NULL, 0));
            }
        }
        v[r] = (bench_now_us() - t0) / (double)b.iters / b.size;
    }
    bench_stats_t s = bench_stats(v, b.reps);
    if (b.rank == 0)
        printf("bench=ring np=%d size=8 iters=%ld reps=%ld median_us=%.3f min_us=%.3f\n", b.size,
               b.iters, b.reps, s.median, s.min);
    bench_fini(&b);
    return 0;
}
