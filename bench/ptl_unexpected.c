/*
 * bench/ptl_unexpected.c - the offload paper's worst case for matching.
 *
 * Ranks 1..n-1 send Q messages (message i from sender 1 + i % (n-1), match
 * bits i) to rank 0 before it posts any receive: they land in an overflow
 * ME and Q unexpected headers queue up. Rank 0 then appends Q use-once
 * priority MEs, newest tag first, so every append matches the LAST header
 * of the unexpected queue. Reported: time per match (append + search +
 * overflow event) for Q = 1, 10, ... --queue. With fixed sources the search
 * is a hash lookup (flat); with --any-source it walks the queue (linear).
 *
 *   xprun -n 2 ptl_unexpected [--queue 100000] [--size 8] [--reps 3] [--any-source]
 */
#include "bench_common.h"

enum { PT = 4 };

typedef struct {
    ptl_handle_ni_t ni;
    ptl_pt_index_t  pt;
    ptl_handle_ct_t ovf_ct, me_ct, send_ct;
    ptl_handle_md_t md;
    char           *ovf_buf, *rbuf, *sbuf;
    uint64_t        ovf_count, me_count, send_count;
} unexp_t;

static int sender_of(const bench_t *b, long i)
{
    return 1 + (int)(i % (b->size - 1));
}

static void post_overflow(const bench_t *b, unexp_t *u, long q, ptl_handle_me_t *h)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = u->ovf_buf;
    me.length = (ptl_size_t)q * b->max_size;
    me.ct_handle = u->ovf_ct;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_CT_COMM |
                 PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                 PTL_ME_EVENT_UNLINK_DISABLE;
    me.match_id.rank = PTL_RANK_ANY;
    me.match_bits = 0;
    me.ignore_bits = ~(ptl_match_bits_t)0;
    me.min_free = 0;
    BENCH_CHECK(PtlMEAppend(u->ni, u->pt, &me, PTL_OVERFLOW_LIST, NULL, h));
}

/* Receiver side of one repetition: seconds per match. */
static double receive_all(const bench_t *b, unexp_t *u, long q)
{
    ptl_ct_event_t ev;
    ptl_handle_me_t h;
    ptl_me_t me;

    u->ovf_count += (uint64_t)q;
    BENCH_CHECK(PtlCTWait(u->ovf_ct, u->ovf_count, &ev)); /* all unexpected */
    memset(&me, 0, sizeof(me));
    me.start = u->rbuf;
    me.length = b->max_size;
    me.ct_handle = u->me_ct;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_CT_OVERFLOW |
                 PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE |
                 PTL_ME_EVENT_UNLINK_DISABLE | PTL_ME_EVENT_OVER_DISABLE;
    me.ignore_bits = 0;
    double t0 = bench_now_us();
    for (long i = q - 1; i >= 0; i--) {
        me.match_id.rank = b->any_source ? PTL_RANK_ANY : (ptl_rank_t)sender_of(b, i);
        me.match_bits = (ptl_match_bits_t)i;
        BENCH_CHECK(PtlMEAppend(u->ni, u->pt, &me, PTL_PRIORITY_LIST, NULL, &h));
    }
    u->me_count += (uint64_t)q;
    BENCH_CHECK(PtlCTWait(u->me_ct, u->me_count, &ev));
    double t = bench_now_us() - t0;
    if (ev.failure)
        bench_die("unexpected matches (failure counted)", (int)ev.failure);
    return t / (double)q;
}

static void send_share(const bench_t *b, unexp_t *u, long q)
{
    ptl_ct_event_t ev;
    for (long i = 0; i < q; i++) {
        if (sender_of(b, i) != b->rank)
            continue;
        BENCH_CHECK(PtlPut(u->md, 0, b->max_size, PTL_NO_ACK_REQ, bench_peer(0), u->pt,
                           (ptl_match_bits_t)i, 0, NULL, 0));
        u->send_count++;
    }
    BENCH_CHECK(PtlCTWait(u->send_ct, u->send_count, &ev));
}

static void run_queue(bench_t *b, unexp_t *u, long q, double *v)
{
    for (long r = 0; r < b->reps; r++) {
        ptl_handle_me_t ovf = PTL_INVALID_HANDLE;
        if (b->rank == 0)
            post_overflow(b, u, q, &ovf);
        bench_barrier(b); /* the overflow list is ready */
        if (b->rank == 0)
            v[r] = receive_all(b, u, q);
        else
            send_share(b, u, q);
        if (b->rank == 0)
            BENCH_CHECK(PtlMEUnlink(ovf));
        bench_barrier(b);
    }
    if (b->rank == 0) {
        bench_stats_t st = bench_stats(v, b->reps);
        printf("bench=ptl_unexpected queue=%ld senders=%d size=%zu source=%s reps=%ld "
               "median_us_per_match=%.3f min_us_per_match=%.3f p90_us_per_match=%.3f\n",
               q, b->size - 1, b->max_size, b->any_source ? "any" : "fixed", b->reps,
               st.median, st.min, st.p90);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    bench_t b = { .min_size = 8, .max_size = 8, .iters = 1, .warmup = 0, .reps = 3,
                  .window = 1, .queue = 0 };
    unexp_t u = { 0 };

    bench_init(&b, argc, argv, "[--queue N] [--size B] [--any-source]");
    if (b.queue == 0)
        b.queue = b.any_source ? 10000 : 100000; /* wildcard walks are quadratic */
    if (b.size < 2) {
        if (b.rank == 0)
            fprintf(stderr, "ptl_unexpected: needs 2 or more processes (xprun -n 2)\n");
        bench_fini(&b);
        return 0;
    }
    long room;
    u.ni = bench_ni_room(1, b.queue + 64, &room);
    if (room - 64 < b.queue) {
        if (b.rank == 0)
            fprintf(stderr, "ptl_unexpected: the NI grants room for %ld entries/headers; "
                            "largest queue %ld instead of %ld\n", room, room - 64, b.queue);
        b.queue = room - 64;
    }
    BENCH_CHECK(PtlCTAlloc(u.ni, &u.ovf_ct));
    BENCH_CHECK(PtlCTAlloc(u.ni, &u.me_ct));
    BENCH_CHECK(PtlCTAlloc(u.ni, &u.send_ct));
    BENCH_CHECK(PtlPTAlloc(u.ni, 0, PTL_EQ_NONE, PT, &u.pt));
    u.ovf_buf = bench_alloc((size_t)b.queue * b.max_size);
    u.rbuf = bench_alloc(b.max_size);
    u.sbuf = bench_alloc(b.max_size);
    u.md = bench_md(u.ni, u.sbuf, b.max_size, PTL_MD_EVENT_CT_SEND, u.send_ct);
    double *v = calloc((size_t)b.reps, sizeof(*v));

    /* 1, 10, 100, ... and the largest queue itself */
    for (long q = 1;; q = q * 10 < b.queue ? q * 10 : b.queue) {
        run_queue(&b, &u, q, v);
        if (q == b.queue)
            break;
    }

    PtlMDRelease(u.md);
    PtlPTFree(u.ni, u.pt);
    PtlCTFree(u.send_ct);
    PtlCTFree(u.me_ct);
    PtlCTFree(u.ovf_ct);
    PtlNIFini(u.ni);
    free(v);
    free(u.ovf_buf);
    free(u.rbuf);
    free(u.sbuf);
    bench_fini(&b);
    return 0;
}
