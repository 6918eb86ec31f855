/*
 * conf3_search_persistent - PtlMESearch / PtlLESearch with PTL_SEARCH_ONLY
 * and an entry that is not PTL_ME_USE_ONCE is a persistent search: it reports
 * every matching unexpected header in the overflow list (one PTL_EVENT_SEARCH
 * each), exactly like PTL_SEARCH_DELETE already removes every match. A
 * USE_ONCE search reports only the first match. The headers stay where they
 * are: a later SEARCH_DELETE still finds them all.
 *
 * One process putting to itself: three puts that match, one that does not,
 * all parked on an overflow entry as unexpected headers.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "test_entries.h"
#include "xp_test.h"

#define PT 7
#define HIT_BITS UINT64_C(0x77)
#define MISS_BITS UINT64_C(0x55)
#define NHIT 3

static ptl_handle_ni_t ni;
static ptl_handle_eq_t eq;

/* Count the events of `type` (with PTL_NI_OK) until the queue stays empty. */
static int drain(ptl_event_kind_t type, int *others)
{
    ptl_event_t ev;
    unsigned int which;
    int n = 0;
    *others = 0;
    while (PtlEQPoll(&eq, 1, 200, &ev, &which) == PTL_OK) {
        if (ev.type == type && ev.ni_fail_type == PTL_NI_OK)
            n++;
        else
            (*others)++;
    }
    return n;
}

/* The same entry as an LE on a non-matching NI (MANAGE_LOCAL is ME-only). */
static ptl_le_t as_le(const ptl_me_t *me)
{
    ptl_le_t le = xp_test_as_le(me);
    le.options &= ~(unsigned int)PTL_ME_MANAGE_LOCAL;
    return le;
}

static int append(int matching, const ptl_me_t *me, ptl_list_t list, ptl_handle_me_t *h)
{
    if (matching)
        return PtlMEAppend(ni, PT, me, list, NULL, h);
    ptl_le_t le = as_le(me);
    return PtlLEAppend(ni, PT, &le, list, NULL, h);
}

static int search(int matching, const ptl_me_t *me, ptl_search_op_t op)
{
    if (matching)
        return PtlMESearch(ni, PT, me, op, NULL);
    ptl_le_t le = as_le(me);
    return PtlLESearch(ni, PT, &le, op, NULL);
}

static void run(int matching)
{
    ptl_process_t self;
    ptl_handle_md_t md;
    ptl_md_t mdd;
    ptl_handle_ct_t ct;
    ptl_ct_event_t cte;
    ptl_me_t me;
    ptl_handle_me_t ovf;
    static unsigned char sbuf[64], obuf[4096];
    int others;

    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, (matching ? PTL_NI_MATCHING : PTL_NI_NO_MATCHING) |
                         PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    ptl_pt_index_t pt;
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PT, &pt) == PTL_OK);

    /* overflow entry catching everything, no events of its own */
    memset(&me, 0, sizeof(me));
    me.start = obuf;
    me.length = sizeof(obuf);
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE |
                 PTL_ME_EVENT_COMM_DISABLE;
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    me.ignore_bits = ~(ptl_match_bits_t)0;
    XP_REQUIRE(append(matching, &me, PTL_OVERFLOW_LIST, &ovf) == PTL_OK);

    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    memset(&mdd, 0, sizeof(mdd));
    mdd.start = sbuf;
    mdd.length = sizeof(sbuf);
    mdd.options = PTL_MD_EVENT_CT_ACK;
    mdd.eq_handle = PTL_EQ_NONE;
    mdd.ct_handle = ct;
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    for (int i = 0; i < NHIT + 1; i++)
        XP_REQUIRE(PtlPut(md, 0, 8, PTL_CT_ACK_REQ, self, PT, i == 1 ? MISS_BITS : HIT_BITS, 0,
                          NULL, 0) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct, NHIT + 1, &cte) == PTL_OK);
    XP_CHECK_EQ(cte.failure, 0);

    /* the search entry: on a non-matching NI every header matches it */
    int want = matching ? NHIT : NHIT + 1;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
    me.match_bits = HIT_BITS;
    me.ignore_bits = 0;
    XP_CHECK_EQ(search(matching, &me, PTL_SEARCH_ONLY), PTL_OK);
    XP_CHECK_EQ(drain(PTL_EVENT_SEARCH, &others), want); /* persistent: every match */
    XP_CHECK_EQ(others, 0);

    me.options |= PTL_ME_USE_ONCE;
    XP_CHECK_EQ(search(matching, &me, PTL_SEARCH_ONLY), PTL_OK);
    XP_CHECK_EQ(drain(PTL_EVENT_SEARCH, &others), 1); /* use once: the first match */
    XP_CHECK_EQ(others, 0);

    /* SEARCH_ONLY left every header in place */
    me.options &= ~PTL_ME_USE_ONCE;
    XP_CHECK_EQ(search(matching, &me, PTL_SEARCH_DELETE), PTL_OK);
    XP_CHECK_EQ(drain(PTL_EVENT_PUT_OVERFLOW, &others), want);
    XP_CHECK_EQ(others, 0);

    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(matching ? PtlMEUnlink(ovf) : PtlLEUnlink(ovf), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    run(1);
    run(0);
    PtlFini();
    return xp_test_result();
}
