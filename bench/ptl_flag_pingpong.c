/*
 * bench/ptl_flag_pingpong.c - OpenSHMEM-style ping-pong: an 8-byte put of a
 * counter into the peer's flag, then a wait until the own flag holds the
 * peer's answer; half round trip. Two ways to wait, both measured:
 *
 *   wait=ct      PtlCTGet on the flag's counter, then PtlCTWait for one more
 *                (Sandia OpenSHMEM's single-threaded wait_until over
 *                Portals): the waiting thread handles the packets itself.
 *   wait=memory  reads of the flag only, no library call (OpenSHMEM's
 *                polling wait, hard polling, or any thread that waits on
 *                memory): only the progress thread handles the puts, so this
 *                measures its wake-up and how soon it gives the CPU back.
 *                Needs XP_PROGRESS=thread (skipped with inline progress).
 *                --pause: a `pause` after each look, as Sandia OpenSHMEM's
 *                SHMEM_WAIT has on x86 (SPINLOCK_BODY); without it the loop
 *                only reads (a spin without pause leaves the loop later:
 *                a two-process /tmp program here, 0.052-0.060 against 0.048-0.052 us).
 *
 * With --heap the flags lie in the shared heap (xp_shmalloc) and their LEs
 * count nothing (OpenSHMEM's hard polling on a heap the library maps): the
 * puts are copies through the initiator's mapping (ptl/direct.h), what the
 * peers' puts into a mapped segment are; only wait=memory runs.
 *
 * Sizes above 8 bytes (--max-size) are OpenSHMEM's put-with-signal done by
 * hand: a put of `size` bytes into the data area next to the flag, then the
 * 8-byte put of the flag, which Portals delivers after the data (puts from
 * one initiator to one target are ordered). The data's first and last words
 * are checked in the last iteration of each repetition.
 *
 *   xprun -n 2 ptl_flag_pingpong [--iters 20000] [--reps 11] [--heap] [--pause]
 *                                [--min-size B --max-size B]
 */
#include "bench_common.h"

enum { FLAG_PT = 3 };

typedef struct {
    ptl_handle_md_t md;
    ptl_handle_ct_t ct;
    ptl_pt_index_t pt;
    volatile uint64_t *flag; /* the LE: the flag, then max_size bytes of data */
    uint64_t *src;           /* the MD: the same layout */
    size_t size;             /* bytes of data per iteration (8: the flag alone) */
    int pause;               /* --pause */
} flag_pp_t;

/* Wait until the flag holds v, by the counter or by memory reads. */
static void wait_flag(const flag_pp_t *f, uint64_t v, int by_ct)
{
    ptl_ct_event_t c;
    while (*f->flag != v) {
        if (!by_ct) {
            if (f->pause)
                probe_relax();
            continue;
        }
        BENCH_CHECK(PtlCTGet(f->ct, &c));
        if (*f->flag == v)
            break;
        BENCH_CHECK(PtlCTWait(f->ct, c.success + c.failure + 1, &c));
    }
}

static void send_flag(const flag_pp_t *f, int peer, uint64_t v)
{
    if (f->size > sizeof(uint64_t)) {
        unsigned char *data = (unsigned char *)(f->src + 1);
        memcpy(data, &v, sizeof v);
        memcpy(data + f->size - sizeof v, &v, sizeof v);
        BENCH_CHECK(PtlPut(f->md, sizeof(uint64_t), f->size, PTL_NO_ACK_REQ, bench_peer(peer),
                           f->pt, 0, sizeof(uint64_t), NULL, 0));
    }
    *f->src = v;
    BENCH_CHECK(PtlPut(f->md, 0, sizeof(uint64_t), PTL_NO_ACK_REQ, bench_peer(peer), f->pt, 0, 0,
                       NULL, 0));
}

/* After a repetition: the data that came with the last flag v. */
static void check_data(const flag_pp_t *f, uint64_t v)
{
    uint64_t first, last;
    const unsigned char *data = (const unsigned char *)(f->flag + 1);
    if (f->size <= sizeof(uint64_t))
        return;
    memcpy(&first, data, sizeof first);
    memcpy(&last, data + f->size - sizeof last, sizeof last);
    if (first != v || last != v)
        bench_die("flag ping-pong: data behind its flag", (int)(first != v));
}

/* Record iteration i's half round trip: the time since the previous
 * stamp. Each rank stamps right after its put, while the put is in flight
 * (a clock read costs ~40 ns on this VM; between a wait and the next put it
 * would lengthen every round trip by that much). The first timed iteration
 * stamps from t0. */
static void stamp(const bench_t *b, double *rt, long i, double *prev)
{
    if (i < b->warmup)
        return;
    double now = bench_now_us();
    rt[i - b->warmup] = (now - *prev) / 2.0;
    *prev = now;
}

/* Per repetition the mean half round trip (median_us etc., like the other
 * benchmarks), and over all timed round trips their own percentiles: a
 * thread that waits on memory depends on the scheduler, and its rare
 * millisecond stalls show in the means, not in the typical round trip. */
static void run(bench_t *b, flag_pp_t *f, int by_ct, uint64_t *next)
{
    long iters = bench_iters_for(b, f->size);
    double *v = calloc((size_t)b->reps, sizeof(*v));
    double *rt = calloc((size_t)(b->reps * iters), sizeof(*rt));
    double *ns = calloc((size_t)b->reps + 1, sizeof(*ns));
    int peer = 1 - b->rank;
    for (long r = 0; r < b->reps; r++) {
        double t0 = 0, prev = 0;
        ns[r] = bench_rep_probe(b);
        for (long i = 0; i < b->warmup + iters; i++) {
            uint64_t x = ++*next;
            int last = i == b->warmup + iters - 1;
            if (i == b->warmup)
                t0 = prev = bench_now_us();
            if (b->rank == 0) {
                send_flag(f, peer, x);
                stamp(b, rt + r * iters, i, &prev);
                wait_flag(f, x, by_ct);
                if (last)
                    check_data(f, x);
            } else {
                wait_flag(f, x, by_ct);
                if (last) /* (before the answer: then the peer puts again) */
                    check_data(f, x);
                send_flag(f, peer, x);
                stamp(b, rt + r * iters, i, &prev);
            }
        }
        v[r] = (bench_now_us() - t0) / (2.0 * (double)iters);
    }
    ns[b->reps] = bench_rep_probe(b);
    if (b->rank == 0) {
        long n = b->reps * iters;
        char states[160];
        bench_rep_states(b, v, ns, b->reps, 0, "us", states, sizeof states);
        bench_stats_t st = bench_stats(v, b->reps);
        qsort(rt, (size_t)n, sizeof(*rt), probe_cmp_double);
        printf("bench=ptl_flag_pingpong wait=%s target=%s size=%zu iters=%ld reps=%ld "
               "median_us=%.3f min_us=%.3f p90_us=%.3f iter_p50_us=%.3f iter_p99_us=%.3f "
               "iter_max_us=%.1f pause=%d%s\n",
               by_ct ? "ct" : "memory", b->heap ? "heap" : "malloc", f->size, iters, b->reps,
               st.median, st.min, st.p90, rt[n / 2], rt[n * 99 / 100], rt[n - 1],
               !by_ct && f->pause, states);
        fflush(stdout);
    }
    free(rt);
    free(ns);
    free(v);
}

/* Both ways to wait (those this mode has) for every size. */
static void run_sizes(bench_t *b, flag_pp_t *f, int by_ct, uint64_t *next)
{
    for (size_t size = b->min_size; size <= b->max_size; size = bench_next_size(size)) {
        f->size = size < sizeof(uint64_t) ? sizeof(uint64_t) : size;
        run(b, f, by_ct, next);
    }
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 8, .max_size = 8, .iters = 20000, .warmup = 200, .reps = 11,
                  .window = 1 };
    bench_init(&b, argc, argv, "[--heap] [--pause]");
    const char *mode = getenv("XP_PROGRESS");
    int progress_thread = !mode || !strcmp(mode, "thread");
    int active = b.rank < 2 && b.size >= 2;
    if (b.size < 2 && b.rank == 0)
        fprintf(stderr, "ptl_flag_pingpong: needs 2 processes (xprun -n 2)\n");

    ptl_handle_ni_t ni = bench_ni(0, 64);
    flag_pp_t f = { .pause = b.pause };
    /* The flag, then the data (none when only 8-byte puts are asked for). */
    size_t bytes = sizeof(uint64_t) + (b.max_size > sizeof(uint64_t) ? b.max_size : 0);
    f.flag = bench_alloc_buf(&b, bytes); /* (zeroed) */
    f.src = bench_alloc(bytes);
    BENCH_CHECK(PtlCTAlloc(ni, &f.ct));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, FLAG_PT, &f.pt));
    ptl_handle_any_t le = bench_post(ni, 0, f.pt, (void *)f.flag, bytes,
                                     b.heap ? PTL_CT_NONE : f.ct, 0, bench_peer(0), 0);
    /* VOLATILE: the source is rewritten as soon as each put returns. */
    f.md = bench_md(ni, f.src, bytes, PTL_MD_VOLATILE, PTL_CT_NONE);
    bench_barrier(&b);

    uint64_t next = 0;
    if (active && !b.heap) /* (the heap's LE has no counter to wait on) */
        run_sizes(&b, &f, 1, &next);
    bench_barrier(&b);
    if (active && progress_thread)
        run_sizes(&b, &f, 0, &next);
    else if (active && b.rank == 0)
        printf("# wait=memory skipped: XP_PROGRESS=%s has no progress thread\n", mode);
    bench_barrier(&b);

    PtlMDRelease(f.md);
    PtlLEUnlink(le);
    PtlPTFree(ni, f.pt);
    PtlCTFree(f.ct);
    PtlNIFini(ni);
    bench_free_buf(&b, (void *)f.flag);
    free(f.src);
    bench_fini(&b);
    return 0;
}
