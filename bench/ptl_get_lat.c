/*
 * bench/ptl_get_lat.c - PtlGet round trip from rank 0 to an LE on rank 1,
 * completed by the reply counter, over a size sweep; the last reply's bytes
 * are checked.
 *
 * With --heap the target's buffer comes from its shared heap (xp_shmalloc)
 * and its LE counts nothing (an OpenSHMEM symmetric heap, an MPI window in
 * shared memory): the gets are copies out of the initiator's mapping
 * (ptl/direct.h), what a get from a mapped segment is. Rank 1 then waits in
 * a barrier after each size instead of on its counter.
 *
 *   xprun -n 2 ptl_get_lat [--min-size 8] [--max-size 4m] [--iters 2000] [--reps 11]
 *                          [--heap]
 */
#include "bench_common.h"

/* The byte at i of the target's buffer. */
static unsigned char src_byte(size_t i)
{
    return (unsigned char)(i * 7u + 3u);
}

int main(int argc, char **argv)
{
    enum { PT = 4 };
    bench_t b = { .min_size = 8, .max_size = 4 << 20, .iters = 2000, .warmup = 50, .reps = 11,
                  .window = 1 };
    bench_init(&b, argc, argv, "[--heap]");

    ptl_handle_ni_t ni = bench_ni(0, 64);
    ptl_pt_index_t pt;
    ptl_handle_ct_t tct, rct;
    ptl_ct_event_t ev;
    uint64_t tcount = 0, rcount = 0;
    unsigned char *src = bench_alloc_buf(&b, b.max_size), *dst = bench_alloc(b.max_size);
    double *v = calloc((size_t)b.reps, sizeof(*v));
    int active = b.rank < 2 && b.size >= 2;

    if (b.size < 2 && b.rank == 0)
        fprintf(stderr, "ptl_get_lat: needs 2 processes (xprun -n 2)\n");
    for (size_t i = 0; i < b.max_size; i++)
        src[i] = src_byte(i);
    BENCH_CHECK(PtlCTAlloc(ni, &tct));
    BENCH_CHECK(PtlCTAlloc(ni, &rct));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    ptl_handle_any_t le = bench_post(ni, 0, pt, src, b.max_size, b.heap ? PTL_CT_NONE : tct, 0,
                                     bench_peer(0), 0);
    ptl_handle_md_t md = bench_md(ni, dst, b.max_size, PTL_MD_EVENT_CT_REPLY, rct);
    bench_barrier(&b);

    /* (with --heap every rank takes part in the barrier of each size) */
    int looping = active || (b.heap && b.size >= 2);
    for (size_t size = b.min_size; looping && size <= b.max_size; size = bench_next_size(size)) {
        long iters = bench_iters_for(&b, size);
        for (long r = 0; r < b.reps; r++) {
            double t0 = 0;
            if (b.rank != 0) { /* serves the gets while it waits for their count */
                if (b.heap)
                    continue; /* (nothing to serve: a barrier per size below) */
                tcount += (uint64_t)(b.warmup + iters);
                BENCH_CHECK(PtlCTWait(tct, tcount, &ev));
                continue;
            }
            for (long i = 0; i < b.warmup + iters; i++) {
                if (i == b.warmup)
                    t0 = bench_now_us();
                BENCH_CHECK(PtlGet(md, 0, size, bench_peer(1), pt, 0, 0, NULL));
                BENCH_CHECK(PtlCTWait(rct, ++rcount, &ev));
                if (ev.failure)
                    bench_die("get (failure counted)", (int)ev.failure);
            }
            v[r] = (bench_now_us() - t0) / (double)iters;
        }
        if (b.heap)
            bench_barrier(&b);
        if (b.rank != 0)
            continue;
        for (size_t i = 0; i < size; i++)
            if (dst[i] != src_byte(i))
                bench_die("get: wrong byte in the reply", (int)i);
        bench_stats_t st = bench_stats(v, b.reps);
        printf("bench=ptl_get target=%s size=%zu iters=%ld reps=%ld median_us=%.3f min_us=%.3f "
               "p90_us=%.3f\n",
               b.heap ? "heap" : "malloc", size, iters, b.reps, st.median, st.min, st.p90);
        fflush(stdout);
    }
    bench_barrier(&b);
    PtlMDRelease(md);
    PtlLEUnlink(le);
    PtlPTFree(ni, pt);
    PtlCTFree(rct);
    PtlCTFree(tct);
    PtlNIFini(ni);
    free(v);
    bench_free_buf(&b, src);
    free(dst);
    bench_fini(&b);
    return 0;
}
