/*
 * bench/ptl_append.c - what posting a receive costs: PtlMEAppend of a
 * use-once priority ME (an MPI library's receive over the Portals MTL) and
 * its PtlMEUnlink, per pair; the same for a persistent LE on a non-matching
 * NI. Each rank measures on its own (no traffic); rank 0 reports.
 *
 *   xprun -n 1 ptl_append [--iters 100000] [--reps 11] [--posted 0]
 *
 * --posted N: N entries that never match stay on the list below the one
 * appended and unlinked (a list walk would show here).
 */
#include "bench_common.h"

enum { PT = 5 };

/* A 64-byte entry for puts from anyone, without link or unlink events. */
static ptl_me_t entry_desc(char *buf, unsigned extra_options)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = buf;
    me.length = 64;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE |
                 extra_options;
    me.match_id.rank = PTL_RANK_ANY;
    return me;
}

/* The same entry for a non-matching NI. */
static ptl_le_t le_of(const ptl_me_t *me)
{
    ptl_le_t le = { me->start, me->length, me->ct_handle, me->uid, me->options };
    return le;
}

/* ns per append + unlink over `iters` pairs. */
static double pairs(long iters, ptl_handle_ni_t ni, int matching, char *buf)
{
    ptl_me_t me = entry_desc(buf, matching ? PTL_ME_USE_ONCE : 0);
    ptl_le_t le = le_of(&me);
    double t0 = bench_now_us();
    for (long i = 0; i < iters; i++) {
        ptl_handle_me_t h;
        if (matching) {
            me.match_bits = (ptl_match_bits_t)i;
            BENCH_CHECK(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, NULL, &h));
            BENCH_CHECK(PtlMEUnlink(h));
        } else {
            BENCH_CHECK(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &h));
            BENCH_CHECK(PtlLEUnlink(h));
        }
    }
    return (bench_now_us() - t0) * 1000.0 / (double)iters;
}

/* Entries that stay, from any source like the measured one (match bits no
 * sender uses; LEs behind the measured one are never reached). */
static void post_idle(const bench_t *b, ptl_handle_ni_t ni, int matching, char *buf,
                      ptl_handle_any_t *h)
{
    ptl_process_t any = { .rank = PTL_RANK_ANY };
    for (long i = 0; i < b->posted; i++)
        h[i] = bench_post(ni, matching, PT, buf, 64, PTL_CT_NONE, 0, any, ~(ptl_match_bits_t)i);
}

static void run(bench_t *b, int matching, double *v)
{
    static char buf[64];
    ptl_pt_index_t pt;
    ptl_handle_ni_t ni = bench_ni(matching, b->posted + 16);
    ptl_handle_any_t *idle = calloc((size_t)b->posted + 1, sizeof(*idle));

    if (!idle)
        bench_die("calloc", -1);
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    post_idle(b, ni, matching, buf, idle);
    for (long r = 0; r < b->warmup; r++)
        pairs(1000, ni, matching, buf);
    for (long r = 0; r < b->reps; r++)
        v[r] = pairs(b->iters, ni, matching, buf);
    for (long i = 0; i < b->posted; i++)
        BENCH_CHECK(matching ? PtlMEUnlink(idle[i]) : PtlLEUnlink(idle[i]));
    free(idle);
    BENCH_CHECK(PtlPTFree(ni, pt));
    BENCH_CHECK(PtlNIFini(ni));
    if (b->rank == 0) {
        bench_stats_t st = bench_stats(v, b->reps);
        printf("bench=ptl_append list=%s posted=%ld iters=%ld reps=%ld median_ns=%.1f "
               "min_ns=%.1f p90_ns=%.1f\n",
               matching ? "me" : "le", b->posted, b->iters, b->reps, st.median, st.min, st.p90);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 0, .max_size = 0, .iters = 100000, .warmup = 3, .reps = 11,
                  .window = 1 };
    bench_init(&b, argc, argv, "[--posted N]");
    double *v = calloc((size_t)b.reps, sizeof(*v));
    if (!v)
        bench_die("calloc", -1);
    run(&b, 1, v);
    bench_barrier(&b);
    run(&b, 0, v);
    free(v);
    bench_fini(&b);
    return 0;
}
