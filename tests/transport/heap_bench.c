/*
 * heap_bench - Portals put bandwidth with the source buffer from malloc
 * (staged in a bounce block up to XP_SHM_BOUNCE_MAX, which the target copies
 * out behind the initiator; process_vm_readv above) or from the shared heap
 * (xp_shmalloc: the target copies with memcpy through its mapping), the two
 * kinds interleaved in every repetition so both see the same machine state.
 *
 *   xprun -n 2 <build>/libexec/xportals/heap_bench [--min-size 64k] [--max-size 4m]
 *                                                   [--window 16] [--reps 7]
 *
 * Prints one line per size and kind: median / max GB/s (1e9 B/s) over reps.
 */
#include "bench_common.h"

#include <xportals/shmem.h>

enum { PT = 3, KINDS = 2 };

static const char *const kind_name[KINDS] = {"malloc", "shmheap"};

static double run_window(bench_t *b, ptl_handle_md_t md, size_t size, long iters,
                         ptl_handle_ct_t rct, ptl_handle_ct_t act, uint64_t *count)
{
    ptl_ct_event_t ev;
    double t0 = bench_now_us();
    for (long i = 0; i < iters; i++) {
        *count += (uint64_t)b->window;
        if (b->rank == 0) {
            for (long w = 0; w < b->window; w++)
                BENCH_CHECK(PtlPut(md, 0, size, PTL_CT_ACK_REQ, bench_peer(1), PT, 0, 0, NULL, 0));
            BENCH_CHECK(PtlCTWait(act, *count, &ev));
        } else {
            BENCH_CHECK(PtlCTWait(rct, *count, &ev));
        }
        if (ev.failure)
            bench_die("heap_bench (failure counted)", (int)ev.failure);
    }
    return (bench_now_us() - t0) * 1e-6;
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 64 << 10, .max_size = 4 << 20, .iters = 20, .warmup = 2,
                  .reps = 7, .window = 16 };
    bench_init(&b, argc, argv, NULL);
    ptl_handle_ni_t ni = bench_ni(0, 64);
    ptl_pt_index_t pt;
    ptl_handle_ct_t rct, act;
    char *rbuf = bench_alloc(b.max_size);
    char *src[KINDS] = {bench_alloc(b.max_size), xp_shmalloc(b.max_size)};
    ptl_handle_md_t md[KINDS];
    double *v[KINDS];
    uint64_t count = 0;

    if (!src[1])
        bench_die("xp_shmalloc (XP_SHM_HEAP_SIZE too small?)", -1);
    memset(src[1], 1, b.max_size);
    BENCH_CHECK(PtlCTAlloc(ni, &rct));
    BENCH_CHECK(PtlCTAlloc(ni, &act));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    ptl_handle_any_t recv = bench_post(ni, 0, pt, rbuf, b.max_size, rct, 0, bench_peer(0), 0);
    for (int k = 0; k < KINDS; k++) {
        md[k] = bench_md(ni, src[k], b.max_size, PTL_MD_EVENT_CT_ACK, act);
        v[k] = calloc((size_t)b.reps, sizeof(double));
    }
    bench_barrier(&b);
    for (size_t size = b.min_size; b.rank < 2 && size <= b.max_size; size = bench_next_size(size)) {
        long iters = bench_iters_for(&b, size) / 8 + 3;
        for (long r = 0; r < b.reps; r++)
            for (int k = 0; k < KINDS; k++) {
                run_window(&b, md[k], size, b.warmup, rct, act, &count);
                v[k][r] = run_window(&b, md[k], size, iters, rct, act, &count);
            }
        for (int k = 0; k < KINDS && b.rank == 0; k++) {
            double bytes = (double)size * (double)b.window * (double)iters;
            bench_stats_t st = bench_stats(v[k], b.reps);
            printf("bench=heap_bw src=%s size=%zu window=%ld iters=%ld reps=%ld median_gbs=%.3f "
                   "max_gbs=%.3f\n", kind_name[k], size, b.window, iters, b.reps,
                   bytes / st.median * 1e-9, bytes / st.min * 1e-9);
        }
        fflush(stdout);
    }
    bench_barrier(&b);
    for (int k = 0; k < KINDS; k++) {
        PtlMDRelease(md[k]);
        free(v[k]);
    }
    PtlLEUnlink(recv);
    PtlPTFree(ni, pt);
    PtlCTFree(act);
    PtlCTFree(rct);
    PtlNIFini(ni);
    xp_shfree(src[1]);
    free(src[0]);
    free(rbuf);
    bench_fini(&b);
    return 0;
}
