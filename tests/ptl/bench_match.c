/*
 * tests/ptl/bench_match.c - micro-benchmark of the matching module alone
 * (not a test: built next to the tests, run by hand).
 *
 *   bench_match [max_queue]     (default 100000)
 *
 * For queue lengths 1, 10, ... max_queue:
 *   uh_exact     N unexpected headers from 64 senders with distinct tags; every
 *                new receive (fixed source + tag) matches the LAST header: the
 *                offload paper's worst case, answered by a hash lookup.
 *   uh_wildcard  the same with ANY_SOURCE receives: an ordered scan (linear).
 *   prq_exact    N posted receives; every arrival matches the LAST one.
 *   prq_wildcard the same with ANY_SOURCE receives (linear scan).
 * and le_first: the non-matching NI case (first entry of the list).
 * One key=value line per measurement: ns per operation (median of 5 runs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ptl/match.h"

enum { SENDERS = 64, REPS = 5 };

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* Linear scans get fewer repetitions so that a run stays short. */
static size_t op_count(size_t n, int wildcard)
{
    size_t ops = wildcard ? 4000000 / n : 20000;
    return ops < 20 ? 20 : ops > 20000 ? 20000 : ops;
}

/* Header i comes from source i % SENDERS with its own tag i. */
static uint64_t src_of(size_t i) { return i % SENDERS; }
static uint64_t tag_of(size_t i) { return i; }

/* Fill n headers, then time `ops` searches each matching the newest one
 * (that header is removed and re-inserted, so the queue length stays n). */
static double run_uh(size_t n, int wildcard, xp_match_header_t *h)
{
    xp_match_table_t t;
    size_t ops = op_count(n, wildcard);
    if (xp_match_table_init(&t) != XP_OK)
        exit(1);
    for (size_t i = 0; i < n; i++)
        xp_match_uh_insert(&t, &h[i], src_of(i), tag_of(i));
    double t0 = now_ns();
    size_t found = 0;
    for (size_t k = 0; k < ops; k++) {
        size_t last = n - 1;
        xp_match_spec_t s = xp_match_spec_logical(tag_of(last), 0, (uint32_t)src_of(last), wildcard);
        xp_match_header_t *x = xp_match_uh_find(&t, &s, NULL, NULL, NULL);
        if (x == &h[last]) {
            found++;
            xp_match_uh_remove(&t, x);
            xp_match_uh_insert(&t, x, src_of(last), tag_of(last));
        }
    }
    double per = (now_ns() - t0) / (double)ops;
    xp_match_table_fini(&t);
    if (found != ops) {
        fprintf(stderr, "bench_match: wrong match\n");
        exit(1);
    }
    return per;
}

static double run_prq(size_t n, int wildcard, xp_match_entry_t *e)
{
    xp_match_table_t t;
    size_t ops = op_count(n, wildcard);
    if (xp_match_table_init(&t) != XP_OK)
        exit(1);
    for (size_t i = 0; i < n; i++) {
        xp_match_spec_t s = xp_match_spec_logical(tag_of(i), 0, (uint32_t)src_of(i), wildcard);
        xp_match_entry_init(&e[i], &s, NULL);
        xp_match_append(&t, XP_MATCH_PRIORITY, &e[i]);
    }
    double t0 = now_ns();
    size_t found = 0;
    for (size_t k = 0; k < ops; k++) {
        size_t last = n - 1;
        xp_match_entry_t *x =
            xp_match_find(&t, XP_MATCH_PRIORITY, src_of(last), tag_of(last), NULL, NULL);
        if (x == &e[last]) { /* use-once: consumed, then re-posted */
            found++;
            xp_match_remove(&t, x);
            xp_match_append(&t, XP_MATCH_PRIORITY, x);
        }
    }
    double per = (now_ns() - t0) / (double)ops;
    xp_match_table_fini(&t);
    if (found != ops) {
        fprintf(stderr, "bench_match: wrong match\n");
        exit(1);
    }
    return per;
}

static double run_le_first(xp_match_entry_t *e)
{
    xp_match_table_t t;
    xp_match_spec_t any = xp_match_spec_any();
    size_t ops = 1000000;
    if (xp_match_table_init(&t) != XP_OK)
        exit(1);
    for (int i = 0; i < 16; i++) {
        xp_match_entry_init(&e[i], &any, NULL);
        xp_match_append(&t, XP_MATCH_PRIORITY, &e[i]);
    }
    volatile uintptr_t sink = 0;
    double t0 = now_ns();
    for (size_t k = 0; k < ops; k++)
        sink += (uintptr_t)xp_match_find(&t, XP_MATCH_PRIORITY, k, k, NULL, NULL);
    double per = (now_ns() - t0) / (double)ops;
    (void)sink;
    xp_match_table_fini(&t);
    return per;
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
    xp_match_header_t *h = calloc(max, sizeof(*h));
    xp_match_entry_t *e = calloc(max > 16 ? max : 16, sizeof(*e));
    static const char *names[] = { "uh_exact", "uh_wildcard", "prq_exact", "prq_wildcard" };
    double v[REPS];

    if (!h || !e)
        return 1;
    for (size_t n = 1; n <= max; n *= 10) {
        for (int kind = 0; kind < 4; kind++) {
            for (int r = 0; r < REPS; r++)
                v[r] = kind < 2 ? run_uh(n, kind & 1, h) : run_prq(n, kind & 1, e);
            printf("bench=match_module case=%s queue=%zu median_ns=%.1f\n", names[kind], n,
                   median(v, REPS));
        }
    }
    for (int r = 0; r < REPS; r++)
        v[r] = run_le_first(e);
    printf("bench=match_module case=le_first queue=16 median_ns=%.1f\n", median(v, REPS));
    free(h);
    free(e);
    return 0;
}
