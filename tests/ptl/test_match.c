/*
 * tests/ptl/test_match.c - the matching module against a plain linear
 * reference matcher.
 *
 * Directed cases first (spec helpers, tiers, growth, bad `after`), then
 * thousands of random cases: appends to both lists (fixed / wildcard sources,
 * with and without ignore bits), arrivals with a random accept predicate and
 * use-once consumption, removals, unexpected-header lookups for new entries,
 * SEARCH_ONLY / SEARCH_DELETE walks and ordered iteration - every answer is
 * compared with a linear scan in append (arrival) order.
 */
#include <stdint.h>

#include "ptl/match.h"
#include "xp_test.h"

/* ------------------------------------------------------------ random */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *s, unsigned n)
{
    return (unsigned)(rng_next(s) % n);
}

/* ------------------------------------------------------------ model */

enum { MAX_OPS = 400 };

typedef struct {
    xp_match_entry_t e;
    int              id;
    int              list;
    int              linked;   /* reference's view */
} ent_t;

typedef struct {
    xp_match_header_t h;
    int               id;
    int               linked;
} hdr_t;

typedef struct {
    ent_t    ents[MAX_OPS];
    int      nents;
    hdr_t    hdrs[MAX_OPS];
    int      nhdrs;
    uint64_t salt;             /* accept predicate of the current search */
    int      reject_mod;       /* 0: accept all; else reject 1 in reject_mod */
} model_t;

static int accept_id(const model_t *m, int id)
{
    if (!m->reject_mod)
        return 1;
    uint64_t x = m->salt ^ (uint64_t)id * UINT64_C(0x9e3779b97f4a7c15);
    return rng_next(&x) % (uint64_t)m->reject_mod != 0;
}

static int accept_entry(xp_match_entry_t *e, void *arg)
{
    return accept_id(arg, xp_container_of(e, ent_t, e)->id);
}

static int accept_header(xp_match_header_t *h, void *arg)
{
    return accept_id(arg, xp_container_of(h, hdr_t, h)->id);
}

/* Reference: linear scans in append / arrival order. */
static ent_t *ref_find(model_t *m, int list, uint64_t src, uint64_t bits)
{
    for (int i = 0; i < m->nents; i++) {
        ent_t *x = &m->ents[i];
        if (x->linked && x->list == list && xp_match_spec_matches(&x->e.spec, src, bits) &&
            accept_id(m, x->id))
            return x;
    }
    return NULL;
}

static hdr_t *ref_uh_find(model_t *m, const xp_match_spec_t *spec, int after_idx)
{
    for (int i = after_idx + 1; i < m->nhdrs; i++) {
        hdr_t *x = &m->hdrs[i];
        if (x->linked && xp_match_spec_matches(spec, x->h.source, x->h.match_bits) &&
            accept_id(m, x->id))
            return x;
    }
    return NULL;
}

/* Small value sets so that matches, collisions and ties are frequent. */
static uint64_t rand_source(uint64_t *s)
{
    return xp_match_source_physical(rng_below(s, 3), rng_below(s, 3));
}

static uint64_t rand_bits(uint64_t *s)
{
    return rng_below(s, 8) | (uint64_t)rng_below(s, 2) << 40;
}

static xp_match_spec_t rand_spec(uint64_t *s)
{
    uint32_t nid = rng_below(s, 3), pid = rng_below(s, 3);
    int shape = (int)rng_below(s, 8);
    uint64_t ignore = 0;
    if (rng_below(s, 3) == 0)
        ignore = rng_below(s, 8) | (rng_below(s, 2) ? UINT64_C(1) << 40 : 0);
    if (shape == 7)
        return xp_match_spec_any();
    return xp_match_spec_physical(rand_bits(s), ignore, nid, shape == 4 || shape == 6, pid,
                                  shape == 5 || shape == 6);
}

/* ------------------------------------------------------------ random ops */

static void check_arrival(model_t *m, xp_match_table_t *t, uint64_t *s)
{
    uint64_t src = rand_source(s), bits = rand_bits(s);
    m->salt = rng_next(s);
    m->reject_mod = (int)rng_below(s, 4);
    for (int list = 0; list < XP_MATCH_NLISTS; list++) {
        ent_t *want = ref_find(m, list, src, bits);
        xp_match_entry_t *got =
            xp_match_find(t, list, src, bits, m->reject_mod ? accept_entry : NULL, m);
        XP_CHECK(got == (want ? &want->e : NULL));
        if (got != (want ? &want->e : NULL)) {
            fprintf(stderr, "  arrival src=%#llx bits=%#llx list=%d: got id %d want id %d\n",
                    (unsigned long long)src, (unsigned long long)bits, list,
                    got ? xp_container_of(got, ent_t, e)->id : -1, want ? want->id : -1);
            return;
        }
        if (want && rng_below(s, 2)) { /* use-once entry: consumed */
            xp_match_remove(t, &want->e);
            want->linked = 0;
        }
        if (want && list == XP_MATCH_PRIORITY)
            return;
    }
    /* No priority match: the header becomes unexpected. */
    if (m->nhdrs < MAX_OPS) {
        hdr_t *h = &m->hdrs[m->nhdrs];
        h->id = 1000 + m->nhdrs;
        h->linked = 1;
        m->nhdrs++;
        xp_match_uh_insert(t, &h->h, src, bits);
    }
}

static int hdr_index(model_t *m, xp_match_header_t *h)
{
    return h ? (int)(xp_container_of(h, hdr_t, h) - m->hdrs) : -1;
}

/* A new entry: priority appends first consume the earliest unexpected match. */
static void check_append(model_t *m, xp_match_table_t *t, uint64_t *s)
{
    if (m->nents >= MAX_OPS)
        return;
    ent_t *x = &m->ents[m->nents];
    xp_match_spec_t spec = rand_spec(s);
    x->id = m->nents;
    x->list = rng_below(s, 3) == 0 ? XP_MATCH_OVERFLOW : XP_MATCH_PRIORITY;
    xp_match_entry_init(&x->e, &spec, x);
    if (x->list == XP_MATCH_PRIORITY) {
        m->salt = rng_next(s);
        m->reject_mod = (int)rng_below(s, 4);
        hdr_t *want = ref_uh_find(m, &spec, -1);
        xp_match_header_t *got =
            xp_match_uh_find(t, &spec, NULL, m->reject_mod ? accept_header : NULL, m);
        XP_CHECK_EQ(hdr_index(m, got), want ? want - m->hdrs : -1);
        if (want && rng_below(s, 2)) { /* use-once ME satisfied by the header */
            xp_match_uh_remove(t, &want->h);
            want->linked = 0;
            m->nents++;
            x->linked = 0;
            return;
        }
    }
    xp_match_append(t, x->list, &x->e);
    x->linked = 1;
    m->nents++;
}

static void check_remove_entry(model_t *m, xp_match_table_t *t, uint64_t *s)
{
    if (!m->nents)
        return;
    ent_t *x = &m->ents[rng_below(s, m->nents)];
    xp_match_remove(t, &x->e); /* also when already removed: a no-op */
    x->linked = 0;
}

static void check_remove_header(model_t *m, xp_match_table_t *t, uint64_t *s)
{
    if (!m->nhdrs)
        return;
    hdr_t *x = &m->hdrs[rng_below(s, m->nhdrs)];
    xp_match_uh_remove(t, &x->h);
    x->linked = 0;
}

/* PtlMESearch: SEARCH_ONLY walks every match; SEARCH_DELETE removes them. */
static void check_search(model_t *m, xp_match_table_t *t, uint64_t *s)
{
    xp_match_spec_t spec = rand_spec(s);
    int del = (int)rng_below(s, 2);
    m->salt = rng_next(s);
    m->reject_mod = (int)rng_below(s, 4);
    int ref_idx = -1;
    xp_match_header_t *got = NULL;
    for (;;) {
        hdr_t *want = ref_uh_find(m, &spec, ref_idx);
        xp_match_header_t *next =
            xp_match_uh_find(t, &spec, got, m->reject_mod ? accept_header : NULL, m);
        XP_CHECK_EQ(hdr_index(m, next), want ? want - m->hdrs : -1);
        if (!want || hdr_index(m, next) != want - m->hdrs)
            break;
        if (del && got) {
            xp_match_uh_remove(t, got);
            xp_container_of(got, hdr_t, h)->linked = 0;
        }
        got = next;
        ref_idx = (int)(want - m->hdrs);
    }
    if (del && got) {
        xp_match_uh_remove(t, got);
        xp_container_of(got, hdr_t, h)->linked = 0;
    }
}

static void check_iteration(model_t *m, xp_match_table_t *t)
{
    for (int list = 0; list < XP_MATCH_NLISTS; list++) {
        xp_match_entry_t *e = xp_match_first(t, list);
        size_t n = 0;
        for (int i = 0; i < m->nents; i++) {
            ent_t *x = &m->ents[i];
            if (!x->linked || x->list != list)
                continue;
            XP_CHECK(e == &x->e);
            if (e != &x->e)
                return;
            e = xp_match_next(t, e);
            n++;
        }
        XP_CHECK(e == NULL);
        XP_CHECK_EQ(xp_match_count(t, list), n);
    }
    xp_match_header_t *h = xp_match_uh_first(t);
    size_t n = 0;
    for (int i = 0; i < m->nhdrs; i++) {
        if (!m->hdrs[i].linked)
            continue;
        XP_CHECK(h == &m->hdrs[i].h);
        if (h != &m->hdrs[i].h)
            return;
        h = xp_match_uh_next(t, h);
        n++;
    }
    XP_CHECK(h == NULL);
    XP_CHECK_EQ(xp_match_uh_count(t), n);
}

static void random_case(uint64_t seed, int nops)
{
    static model_t m;
    xp_match_table_t t;
    uint64_t s = seed;

    memset(&m, 0, sizeof(m));
    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    for (int i = 0; i < nops; i++) {
        switch (rng_below(&s, 10)) {
        case 0: case 1: case 2: check_append(&m, &t, &s); break;
        case 3: case 4: case 5: check_arrival(&m, &t, &s); break;
        case 6: check_remove_entry(&m, &t, &s); break;
        case 7: check_remove_header(&m, &t, &s); break;
        case 8: check_search(&m, &t, &s); break;
        default: check_iteration(&m, &t); break;
        }
    }
    check_iteration(&m, &t);
    xp_match_table_fini(&t);
}

/* ------------------------------------------------------------ directed */

static void test_spec_helpers(void)
{
    xp_match_spec_t any = xp_match_spec_any();
    XP_CHECK(xp_match_spec_matches(&any, 123, ~UINT64_C(0)));

    xp_match_spec_t l = xp_match_spec_logical(0xab, 0x0f, 5, 0);
    XP_CHECK(xp_match_spec_matches(&l, 5, 0xa3));
    XP_CHECK(!xp_match_spec_matches(&l, 5, 0xbb));
    XP_CHECK(!xp_match_spec_matches(&l, 6, 0xab));
    l = xp_match_spec_logical(0xab, 0, 5, 1);
    XP_CHECK(xp_match_spec_matches(&l, 77, 0xab));

    uint64_t src = xp_match_source_physical(3, 9);
    xp_match_spec_t p = xp_match_spec_physical(1, 0, 3, 0, 9, 0);
    XP_CHECK(xp_match_spec_matches(&p, src, 1));
    XP_CHECK(!xp_match_spec_matches(&p, xp_match_source_physical(3, 8), 1));
    p = xp_match_spec_physical(1, 0, 3, 0, 0, 1); /* nid 3, any pid */
    XP_CHECK(xp_match_spec_matches(&p, xp_match_source_physical(3, 8), 1));
    XP_CHECK(!xp_match_spec_matches(&p, xp_match_source_physical(4, 9), 1));
    p = xp_match_spec_physical(1, 0, 0, 1, 9, 0); /* any nid, pid 9 */
    XP_CHECK(xp_match_spec_matches(&p, xp_match_source_physical(4, 9), 1));
    XP_CHECK(!xp_match_spec_matches(&p, xp_match_source_physical(3, 8), 1));
}

/* Exact entry appended after a wildcard one loses; before it, wins. */
static void test_tier_order(void)
{
    xp_match_table_t t;
    xp_match_entry_t a, b, c;
    xp_match_spec_t wild = xp_match_spec_logical(7, 0, 0, 1);
    xp_match_spec_t exact = xp_match_spec_logical(7, 0, 2, 0);
    xp_match_spec_t bysrc = xp_match_spec_logical(0, ~UINT64_C(0), 2, 0);

    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    xp_match_entry_init(&a, &wild, NULL);
    xp_match_entry_init(&b, &exact, NULL);
    xp_match_entry_init(&c, &bysrc, NULL);
    xp_match_append(&t, XP_MATCH_PRIORITY, &a);
    xp_match_append(&t, XP_MATCH_PRIORITY, &b);
    xp_match_append(&t, XP_MATCH_PRIORITY, &c);
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 2, 7, NULL, NULL) == &a);
    xp_match_remove(&t, &a);
    XP_CHECK(!xp_match_entry_linked(&a));
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 2, 7, NULL, NULL) == &b);
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 2, 8, NULL, NULL) == &c);
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 3, 7, NULL, NULL) == NULL);
    XP_CHECK(xp_match_find(&t, XP_MATCH_OVERFLOW, 2, 7, NULL, NULL) == NULL);
    xp_match_remove(&t, &a); /* twice: no-op */
    XP_CHECK_EQ(xp_match_count(&t, XP_MATCH_PRIORITY), 2);
    xp_match_append(&t, XP_MATCH_PRIORITY, &a); /* re-append: now last */
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 2, 7, NULL, NULL) == &b);
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 9, 7, NULL, NULL) == &a);
    xp_match_table_fini(&t);
}

/* Many exact entries and headers: hashes grow, order and lookups survive. */
static void test_growth(void)
{
    enum { N = 20000 };
    static xp_match_entry_t e[N];
    static xp_match_header_t h[N];
    xp_match_table_t t;

    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    for (int i = 0; i < N; i++) {
        xp_match_spec_t s = xp_match_spec_logical((uint64_t)(i % 5000), 0, (uint32_t)(i % 7), 0);
        xp_match_entry_init(&e[i], &s, NULL);
        xp_match_append(&t, XP_MATCH_PRIORITY, &e[i]);
        xp_match_uh_insert(&t, &h[i], (uint64_t)(i % 7), (uint64_t)(i % 5000));
    }
    int bad = 0;
    for (int i = 0; i < 5000 * 7; i++) {
        /* 5000 and 7 are coprime: the first j with this (source, bits) is i. */
        int first = i < N ? i : -1;
        xp_match_entry_t *got = xp_match_find(&t, XP_MATCH_PRIORITY, (uint64_t)(i % 7),
                                              (uint64_t)(i % 5000), NULL, NULL);
        if (got != (first < 0 ? NULL : &e[first]))
            bad++;
        xp_match_spec_t s = xp_match_spec_logical((uint64_t)(i % 5000), 0, (uint32_t)(i % 7), 0);
        if (xp_match_uh_find(&t, &s, NULL, NULL, NULL) != (first < 0 ? NULL : &h[first]))
            bad++;
    }
    XP_CHECK_EQ(bad, 0);
    /* A source-tier search walks every header of source 3 in arrival order. */
    xp_match_spec_t s3 = xp_match_spec_logical(0, ~UINT64_C(0), 3, 0);
    int n = 0, last = -1, ordered = 1;
    for (xp_match_header_t *x = xp_match_uh_find(&t, &s3, NULL, NULL, NULL); x;
         x = xp_match_uh_find(&t, &s3, x, NULL, NULL)) {
        int idx = (int)(x - h);
        ordered &= idx > last && idx % 7 == 3;
        last = idx;
        n++;
    }
    XP_CHECK(ordered);
    XP_CHECK_EQ(n, (N - 3 + 6) / 7);
    xp_match_table_fini(&t);
}

/* `after` that the spec does not match, or that was removed: NULL, no hang. */
static void test_bad_after(void)
{
    xp_match_table_t t;
    xp_match_header_t a, b;
    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    xp_match_uh_insert(&t, &a, 1, 10);
    xp_match_uh_insert(&t, &b, 2, 20);
    xp_match_spec_t s1 = xp_match_spec_logical(10, 0, 1, 0);
    XP_CHECK(xp_match_uh_find(&t, &s1, NULL, NULL, NULL) == &a);
    XP_CHECK(xp_match_uh_find(&t, &s1, &b, NULL, NULL) == NULL);
    xp_match_uh_remove(&t, &a);
    xp_match_uh_remove(&t, &a);
    XP_CHECK(xp_match_uh_find(&t, &s1, &a, NULL, NULL) == NULL);
    XP_CHECK_EQ(xp_match_uh_count(&t), 1);
    XP_CHECK(xp_match_uh_first(&t) == &b);
    XP_CHECK(xp_match_uh_next(&t, &b) == NULL);
    xp_match_table_fini(&t);
}

/* Non-matching NI: every LE matches; the first acceptable one wins. */
static int reject_first(xp_match_entry_t *e, void *arg)
{
    return e != arg;
}

static void test_non_matching(void)
{
    xp_match_table_t t;
    xp_match_entry_t le[3];
    xp_match_spec_t any = xp_match_spec_any();
    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    for (int i = 0; i < 3; i++) {
        xp_match_entry_init(&le[i], &any, NULL);
        xp_match_append(&t, XP_MATCH_PRIORITY, &le[i]);
    }
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 42, 0, NULL, NULL) == &le[0]);
    XP_CHECK(xp_match_find(&t, XP_MATCH_PRIORITY, 42, 0, reject_first, &le[0]) == &le[1]);
    xp_match_table_fini(&t);
}

/* xp_match_find_any (the packet handler's inline lookup with its cached
 * entry) against a walk of the list in append order, on lists of exact-key
 * entries only (its own path) and after a wildcard joins (the fallback),
 * under random appends and removals. */
static void test_find_any(void)
{
    enum { N = 48 };
    xp_match_table_t t;
    xp_match_entry_t e[N];
    uint64_t s = 0xf1d;
    XP_REQUIRE(xp_match_table_init(&t) == XP_OK);
    for (int i = 0; i < N; i++) {
        xp_match_spec_t spec = xp_match_spec_logical(i % 4, 0, (uint32_t)(i / 4 % 3), 0);
        if (i == N - 1)
            spec = xp_match_spec_any();
        xp_match_entry_init(&e[i], &spec, NULL);
    }
    for (int round = 0; round < 20000 && !xp_test_failures_; round++) {
        int i = (int)rng_below(&s, N - (round < 10000 ? 1 : 0));
        if (rng_below(&s, 3) == 0) {
            if (xp_match_entry_linked(&e[i]))
                xp_match_remove(&t, &e[i]);
            else
                xp_match_append(&t, XP_MATCH_PRIORITY, &e[i]);
        }
        uint64_t src = rng_below(&s, 3), bits = rng_below(&s, 4);
        xp_match_entry_t *want = NULL;
        for (xp_match_entry_t *x = xp_match_first(&t, XP_MATCH_PRIORITY); x && !want;
             x = xp_match_next(&t, x))
            if (xp_match_spec_matches(&x->spec, src, bits))
                want = x;
        xp_match_entry_t *got = xp_match_find_any(&t, XP_MATCH_PRIORITY, src, bits);
        XP_CHECK(got == want);
        if (got != want)
            fprintf(stderr, "  round %d src %llu bits %llu: got %d want %d\n", round,
                    (unsigned long long)src, (unsigned long long)bits, got ? (int)(got - e) : -1,
                    want ? (int)(want - e) : -1);
    }
    xp_match_table_fini(&t);
}

int main(int argc, char **argv)
{
    int ncases = argc > 1 ? atoi(argv[1]) : 4000;

    test_spec_helpers();
    test_tier_order();
    test_growth();
    test_bad_after();
    test_non_matching();
    test_find_any();
    for (int i = 0; i < ncases && !xp_test_failures_; i++)
        random_case(UINT64_C(0x5eed) + (uint64_t)i, 50 + i % 350);
    return xp_test_result();
}
