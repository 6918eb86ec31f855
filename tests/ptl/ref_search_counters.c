/*
 * ref_search_counters.c - counting events of PtlLESearch / PtlMESearch, the
 * behaviour the reference suite's test_search_*_counter_* programs probe,
 * on a non-matching (LE) and a matching (ME) logical NI. Our own test.
 *
 * Rank 0 sends 5 puts (match bits 1, 55, 1, 1, 55) that land unexpected in
 * rank 1's overflow entry. Rank 1 then searches with a counter on the
 * searching entry, whose CT options do not matter (none, or CT_BYTES):
 *   - each header found counts one success (its bytes under CT_BYTES), for
 *     SEARCH_ONLY as for SEARCH_DELETE, and the end of the search one
 *     failure; a use-once search that found its header has no end to count;
 *   - SEARCH_ONLY reports every matching header (PTL_EVENT_SEARCH, as the
 *     reference suite's test_persistent_search expects) and consumes none;
 *   - SEARCH_DELETE consumes what it finds: one *_OVERFLOW event each;
 *   - a search of an empty unexpected list reports PTL_EVENT_SEARCH with
 *     PTL_NI_NO_MATCH and counts one failure, use-once or not.
 */
#include <portals4.h>

#include <stdint.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 7

static const ptl_match_bits_t bits[5] = { 1, 55, 1, 1, 55 };

typedef struct {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    int matching;
} ctx_t;

static void sender(ctx_t *c)
{
    uint64_t v = 0xdeadbeef;
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_ct_event_t cte;
    XP_REQUIRE(PtlCTAlloc(c->ni, &ct) == PTL_OK);
    ptl_md_t d = { .start = &v, .length = sizeof v, .options = PTL_MD_EVENT_CT_ACK,
                   .eq_handle = PTL_EQ_NONE, .ct_handle = ct };
    XP_REQUIRE(PtlMDBind(c->ni, &d, &md) == PTL_OK);
    ptl_process_t peer = { .rank = 1 };
    XP_REQUIRE(xp_barrier() == XP_OK); /* rank 1's overflow entry is linked */
    for (int i = 0; i < 5; i++)
        XP_CHECK_EQ(PtlPut(md, 0, sizeof v, PTL_CT_ACK_REQ, peer, c->pt, bits[i], 0, NULL, 0),
                    PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct, 5, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 5);
    XP_CHECK_EQ(cte.failure, 0);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

/* Search with an LE or ME built from (bits, ignore, options, ct). */
static int search(ctx_t *c, ptl_match_bits_t mb, ptl_match_bits_t ign, unsigned opts,
                  ptl_handle_ct_t ct, ptl_search_op_t op, void *user)
{
    static uint64_t sink;
    if (c->matching) {
        ptl_me_t me = { .start = &sink, .length = sizeof sink, .ct_handle = ct,
                        .uid = PTL_UID_ANY, .options = opts,
                        .match_id = { .rank = PTL_RANK_ANY }, .match_bits = mb,
                        .ignore_bits = ign, .min_free = 0 };
        return PtlMESearch(c->ni, c->pt, &me, op, user);
    }
    ptl_le_t le = { .start = &sink, .length = sizeof sink, .ct_handle = ct,
                    .uid = PTL_UID_ANY, .options = opts };
    return PtlLESearch(c->ni, c->pt, &le, op, user);
}

/* Drain `n` events of kind `kind` (fail type `fail`) with user_ptr `user`. */
static void expect_events(ctx_t *c, int n, ptl_event_kind_t kind, ptl_ni_fail_t fail, void *user)
{
    ptl_event_t ev;
    for (int i = 0; i < n; i++) {
        XP_REQUIRE(PtlEQWait(c->eq, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, kind);
        XP_CHECK_EQ(ev.ni_fail_type, fail);
        XP_CHECK(ev.user_ptr == user);
    }
    XP_CHECK_EQ(PtlEQGet(c->eq, &ev), PTL_EQ_EMPTY);
}

static void check_ct(ptl_handle_ct_t ct, ptl_size_t success, ptl_size_t failure, const char *what)
{
    ptl_ct_event_t cte;
    XP_CHECK_EQ(PtlCTGet(ct, &cte), PTL_OK);
    if (cte.success != success || cte.failure != failure)
        fprintf(stderr, "%s: success %llu failure %llu, expected %llu %llu\n", what,
                (unsigned long long)cte.success, (unsigned long long)cte.failure,
                (unsigned long long)success, (unsigned long long)failure);
    XP_CHECK_EQ(cte.success, success);
    XP_CHECK_EQ(cte.failure, failure);
    ptl_ct_event_t zero = { 0, 0 };
    XP_CHECK_EQ(PtlCTSet(ct, zero), PTL_OK);
}

static void searcher(ctx_t *c)
{
    static uint64_t landing;
    ptl_handle_ct_t ct_arrive, ct_search;
    ptl_handle_any_t ovf;
    ptl_ct_event_t cte;
    XP_REQUIRE(PtlCTAlloc(c->ni, &ct_arrive) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c->ni, &ct_search) == PTL_OK);
    /* Overflow entry: takes everything, no full events, counts arrivals. */
    unsigned aopts = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_COMM_DISABLE |
                     PTL_ME_EVENT_CT_COMM;
    if (c->matching) {
        ptl_me_t me = { .start = &landing, .length = sizeof landing, .ct_handle = ct_arrive,
                        .uid = PTL_UID_ANY, .options = aopts,
                        .match_id = { .rank = PTL_RANK_ANY }, .match_bits = 0,
                        .ignore_bits = ~(ptl_match_bits_t)0, .min_free = 0 };
        XP_REQUIRE(PtlMEAppend(c->ni, c->pt, &me, PTL_OVERFLOW_LIST, NULL, &ovf) == PTL_OK);
    } else {
        ptl_le_t le = { .start = &landing, .length = sizeof landing, .ct_handle = ct_arrive,
                        .uid = PTL_UID_ANY, .options = aopts };
        XP_REQUIRE(PtlLEAppend(c->ni, c->pt, &le, PTL_OVERFLOW_LIST, NULL, &ovf) == PTL_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(PtlCTWait(ct_arrive, 5, &cte) == PTL_OK);
    XP_CHECK_EQ(cte.failure, 0);

    unsigned sopts = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
    ptl_match_bits_t all = ~(ptl_match_bits_t)0;
    int tag;

    /* SEARCH_ONLY: one report and one count per match (ME: bits 1 -> 3;
     * LE: all 5) and one failure at the end, nothing consumed; a use-once
     * entry reports and counts one, and no end. */
    int n = c->matching ? 3 : 5;
    XP_CHECK_EQ(search(c, 1, 0, sopts, ct_search, PTL_SEARCH_ONLY, &tag), PTL_OK);
    expect_events(c, n, PTL_EVENT_SEARCH, PTL_NI_OK, &tag);
    check_ct(ct_search, (ptl_size_t)n, 1, "SEARCH_ONLY");
    XP_CHECK_EQ(search(c, 1, 0, sopts | PTL_ME_USE_ONCE, ct_search, PTL_SEARCH_ONLY, &tag), PTL_OK);
    expect_events(c, 1, PTL_EVENT_SEARCH, PTL_NI_OK, &tag);
    check_ct(ct_search, 1, 0, "USE_ONCE SEARCH_ONLY");
    /* CT_BYTES: the bytes of each header found (8 each). */
    XP_CHECK_EQ(search(c, 1, 0, sopts | PTL_ME_EVENT_CT_BYTES, ct_search, PTL_SEARCH_ONLY, &tag),
                PTL_OK);
    expect_events(c, n, PTL_EVENT_SEARCH, PTL_NI_OK, &tag);
    check_ct(ct_search, (ptl_size_t)n * sizeof(uint64_t), 1, "SEARCH_ONLY, CT_BYTES");

    /* USE_ONCE SEARCH_DELETE: one header consumed and counted. */
    XP_CHECK_EQ(search(c, 55, 0, sopts | PTL_ME_USE_ONCE, ct_search, PTL_SEARCH_DELETE, &tag),
                PTL_OK);
    expect_events(c, 1, PTL_EVENT_PUT_OVERFLOW, PTL_NI_OK, &tag);
    check_ct(ct_search, 1, 0, "USE_ONCE SEARCH_DELETE");

    /* Persistent SEARCH_DELETE: every match (ME: bits 1 -> 3; LE: all 4). */
    n = c->matching ? 3 : 4;
    XP_CHECK_EQ(search(c, 1, 0, sopts, ct_search, PTL_SEARCH_DELETE, &tag), PTL_OK);
    expect_events(c, n, PTL_EVENT_PUT_OVERFLOW, PTL_NI_OK, &tag);
    check_ct(ct_search, (ptl_size_t)n, 1, "persistent SEARCH_DELETE");

    if (c->matching) { /* the last header (bits 55) */
        XP_CHECK_EQ(search(c, 0, all, sopts, ct_search, PTL_SEARCH_DELETE, &tag), PTL_OK);
        expect_events(c, 1, PTL_EVENT_PUT_OVERFLOW, PTL_NI_OK, &tag);
        check_ct(ct_search, 1, 1, "wildcard SEARCH_DELETE");
    }

    /* Empty unexpected list: NO_MATCH and one failure, for either op and
     * either lifetime. */
    XP_CHECK_EQ(search(c, 0, all, sopts, ct_search, PTL_SEARCH_DELETE, &tag), PTL_OK);
    expect_events(c, 1, PTL_EVENT_SEARCH, PTL_NI_NO_MATCH, &tag);
    check_ct(ct_search, 0, 1, "empty list, SEARCH_DELETE");
    XP_CHECK_EQ(search(c, 0, all, sopts | PTL_ME_USE_ONCE, ct_search, PTL_SEARCH_ONLY, &tag),
                PTL_OK);
    expect_events(c, 1, PTL_EVENT_SEARCH, PTL_NI_NO_MATCH, &tag);
    check_ct(ct_search, 0, 1, "empty list, USE_ONCE SEARCH_ONLY");
    /* Without a counter nothing is counted anywhere (the arrival counter
     * saw its 5 arrivals only). */
    XP_CHECK_EQ(search(c, 0, all, sopts, PTL_CT_NONE, PTL_SEARCH_ONLY, &tag), PTL_OK);
    expect_events(c, 1, PTL_EVENT_SEARCH, PTL_NI_NO_MATCH, &tag);
    check_ct(ct_arrive, 5, 0, "arrivals");

    XP_CHECK_EQ(c->matching ? PtlMEUnlink(ovf) : PtlLEUnlink(ovf), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_search), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_arrive), PTL_OK);
}

static void run(int matching)
{
    ctx_t c = { .matching = matching };
    ptl_process_t id;
    unsigned opts = (matching ? PTL_NI_MATCHING : PTL_NI_NO_MATCHING) | PTL_NI_LOGICAL;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, opts, PTL_PID_ANY, NULL, NULL, &c.ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(c.ni, &id) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(c.ni, 64, &c.eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(c.ni, 0, c.eq, PT, &c.pt) == PTL_OK);
    if (id.rank == 0)
        sender(&c);
    else if (id.rank == 1)
        searcher(&c);
    XP_CHECK_EQ(PtlPTFree(c.ni, c.pt), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(c.eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(c.ni), PTL_OK);
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    run(0);
    run(1);
    PtlFini();
    return xp_test_result();
}
