/*
 * bench/ptl_atomic_lat.c - 8-byte fetch-add (PtlFetchAtomic PTL_SUM on
 * PTL_UINT64_T) round trip from rank 0 to an LE on rank 1, completed by the
 * reply counter; the final target value is checked.
 *
 * With --heap the target word lies in rank 1's shared heap (xp_shmalloc)
 * and its LE counts nothing, as the window of an MPI passive-target
 * MPI_Fetch_and_op asks nothing of the target's CPU: the initiator then
 * applies the atomic through its mapping (ptl/direct.h; XP_SHM_DIRECT=0
 * sends it through the ring instead). Rank 1 waits in the final barrier.
 *
 *   xprun -n 2 ptl_atomic_lat [--iters 10000] [--reps 11] [--heap]
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
    enum { PT = 3 };
    bench_t b = { .min_size = 8, .max_size = 8, .iters = 10000, .warmup = 100, .reps = 11,
                  .window = 1 };
    bench_init(&b, argc, argv, "[--heap]");

    ptl_handle_ni_t ni = bench_ni(0, 64);
    ptl_pt_index_t pt;
    ptl_handle_ct_t tct, rct;
    ptl_ct_event_t ev;
    uint64_t local_target = 0, operand = 1, result = 0, count = 0;
    uint64_t *target = b.heap ? bench_alloc_buf(&b, sizeof(*target)) : &local_target;
    double *v = calloc((size_t)b.reps, sizeof(*v)), *ns = calloc((size_t)b.reps + 1, sizeof(*ns));
    int active = b.rank < 2 && b.size >= 2;

    if (b.size < 2 && b.rank == 0)
        fprintf(stderr, "ptl_atomic_lat: needs 2 processes (xprun -n 2)\n");
    BENCH_CHECK(PtlCTAlloc(ni, &tct));
    BENCH_CHECK(PtlCTAlloc(ni, &rct));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    ptl_handle_any_t le = bench_post(ni, 0, pt, target, sizeof(*target), b.heap ? PTL_CT_NONE : tct,
                                     0, bench_peer(0), 0);
    ptl_handle_md_t get_md = bench_md(ni, &result, sizeof(result), PTL_MD_EVENT_CT_REPLY, rct);
    ptl_handle_md_t put_md = bench_md(ni, &operand, sizeof(operand), 0, PTL_CT_NONE);
    bench_barrier(&b);

    for (long r = 0; active && r < b.reps; r++) {
        double t0 = 0;
        /* (With --heap rank 1 has nothing to serve: it waits in the probe
         * for the end of rank 0's repetition.) */
        ns[r] = bench_rep_probe(&b);
        if (b.rank == 1) {
            count += (uint64_t)(b.warmup + b.iters);
            if (!b.heap)
                BENCH_CHECK(PtlCTWait(tct, count, &ev));
            continue;
        }
        for (long i = 0; i < b.warmup + b.iters; i++) {
            if (i == b.warmup)
                t0 = bench_now_us();
            BENCH_CHECK(PtlFetchAtomic(get_md, 0, put_md, 0, sizeof(uint64_t), bench_peer(1), pt,
                                       0, 0, NULL, 0, PTL_SUM, PTL_UINT64_T));
            BENCH_CHECK(PtlCTWait(rct, ++count, &ev));
            if (ev.failure)
                bench_die("fetch-add (failure counted)", (int)ev.failure);
        }
        v[r] = (bench_now_us() - t0) / (double)b.iters;
    }
    if (active)
        ns[b.reps] = bench_rep_probe(&b);
    bench_barrier(&b);
    if (active && b.rank == 1 && *target != count) {
        fprintf(stderr, "ptl_atomic_lat: target %" PRIu64 " after %" PRIu64 " fetch-adds\n",
                *target, count);
        exit(1);
    }
    if (active && b.rank == 0) {
        char states[160];
        bench_rep_states(&b, v, ns, b.reps, 0, "us", states, sizeof states);
        bench_stats_t st = bench_stats(v, b.reps);
        printf("bench=ptl_atomic_lat op=fetch_sum type=uint64 size=8 target=%s iters=%ld reps=%ld "
               "median_us=%.3f min_us=%.3f p90_us=%.3f last_result=%" PRIu64 "%s\n",
               b.heap ? "heap" : "stack", b.iters, b.reps, st.median, st.min, st.p90, result,
               states);
    }
    free(ns);
    PtlMDRelease(get_md);
    PtlMDRelease(put_md);
    PtlLEUnlink(le);
    PtlPTFree(ni, pt);
    PtlCTFree(rct);
    PtlCTFree(tct);
    PtlNIFini(ni);
    if (b.heap)
        bench_free_buf(&b, target);
    free(v);
    bench_fini(&b);
    return 0;
}
