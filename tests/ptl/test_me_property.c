/*
 * test_me_property - the engine's matching against a plain linear reference
 * matcher, through the public API (one process sending to itself on a
 * matching physical NI).
 *
 * Random sequences of: priority appends (use-once or persistent, fixed or
 * wildcard sources, with and without ignore bits), overflow appends,
 * arrivals (puts), unlinks and PtlMESearch (ONLY / DELETE). The reference
 * keeps three arrays in order (priority list, overflow list, unexpected
 * headers) and predicts every event: which entry a message lands in (or
 * PTL_NI_DROPPED), which headers an append consumes (PUT_OVERFLOW in arrival
 * order, AUTO_UNLINK for a consumed use-once entry, else LINK), what a search
 * reports. Every message carries its number in hdr_data.
 *
 * Arguments: [cases] [ops per case] [seed].
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"

#define PT 9
#define MAXE 48

typedef struct ent {
    uintptr_t id;
    ptl_match_bits_t bits, ign;
    int src;      /* 0 any, 1 self, 2 nid only, 3 another pid (never matches) */
    int use_once;
    ptl_handle_me_t h;
} ent_t;

typedef struct hdr {
    uint64_t msg;
    ptl_match_bits_t bits;
} hdr_t;

static ptl_handle_ni_t ni;
static ptl_handle_eq_t teq, ieq;
static ptl_handle_md_t md;
static ptl_process_t self;
static char dummy[1];

static ent_t prio[MAXE], ovf[MAXE];
static int nprio, novf;
static hdr_t uh[4096];
static int nuh;
static uint64_t next_msg, next_id = 1;
static unsigned long nchecks;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int src_matches(int src)
{
    return src == 0 || src == 1 || src == 2;
}

static int matches(const ent_t *e, ptl_match_bits_t bits)
{
    return src_matches(e->src) && ((bits ^ e->bits) & ~e->ign) == 0;
}

static ptl_event_t get_event(ptl_handle_eq_t eq)
{
    ptl_event_t ev;
    unsigned int which;
    memset(&ev, 0, sizeof(ev));
    if (PtlEQPoll(&eq, 1, 5000, &ev, &which) != PTL_OK) {
        fprintf(stderr, "no event (timeout)\n");
        exit(1);
    }
    return ev;
}

static int expect_ev(ptl_event_kind_t type, uintptr_t id, int64_t msg)
{
    ptl_event_t ev = get_event(teq);
    nchecks++;
    if (ev.type != type || (uintptr_t)ev.user_ptr != id ||
        (msg >= 0 && ev.hdr_data != (uint64_t)msg)) {
        fprintf(stderr, "expected event %d user %lu msg %lld, got %d user %lu msg %llu\n", type,
                (unsigned long)id, (long long)msg, ev.type, (unsigned long)(uintptr_t)ev.user_ptr,
                (unsigned long long)ev.hdr_data);
        return 0;
    }
    return 1;
}

static ptl_me_t make_me(const ent_t *e)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = dummy;
    me.length = 0;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | (e->use_once ? PTL_ME_USE_ONCE : 0);
    me.match_bits = e->bits;
    me.ignore_bits = e->ign;
    switch (e->src) {
    case 0: me.match_id.phys.nid = PTL_NID_ANY; me.match_id.phys.pid = PTL_PID_ANY; break;
    case 1: me.match_id = self; break;
    case 2: me.match_id.phys.nid = self.phys.nid; me.match_id.phys.pid = PTL_PID_ANY; break;
    default: me.match_id.phys.nid = self.phys.nid; me.match_id.phys.pid = self.phys.pid + 1000; break;
    }
    return me;
}

static void random_ent(ent_t *e, int overflow)
{
    static const ptl_match_bits_t igns[] = { 0, 0, 0, 1, 3, 7, ~UINT64_C(0) };
    e->id = (uintptr_t)next_id++;
    e->bits = rnd() % 8;
    e->ign = igns[rnd() % 7];
    e->src = (int)(rnd() % 4);
    e->use_once = overflow ? 0 : (int)(rnd() % 2);
}

static int consume_headers(const ent_t *e, int use_once, ptl_event_kind_t kind, uintptr_t id)
{
    int consumed = 0;
    if (!src_matches(e->src))
        return 0;
    for (int i = 0; i < nuh;) {
        if (((uh[i].bits ^ e->bits) & ~e->ign) == 0) {
            if (!expect_ev(kind, id, (int64_t)uh[i].msg))
                return -1;
            memmove(&uh[i], &uh[i + 1], sizeof(uh[0]) * (size_t)(nuh - i - 1));
            nuh--;
            consumed++;
            if (use_once)
                break;
        } else {
            i++;
        }
    }
    return consumed;
}

static int op_append_priority(void)
{
    ent_t e;
    random_ent(&e, 0);
    ptl_me_t me = make_me(&e);
    if (PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, (void *)e.id, &e.h) != PTL_OK)
        return 0;
    int c = consume_headers(&e, e.use_once, PTL_EVENT_PUT_OVERFLOW, e.id);
    if (c < 0)
        return 0;
    if (c > 0 && e.use_once)
        return expect_ev(PTL_EVENT_AUTO_UNLINK, e.id, -1);
    prio[nprio++] = e;
    return expect_ev(PTL_EVENT_LINK, e.id, -1);
}

static int op_append_overflow(void)
{
    ent_t e;
    random_ent(&e, 1);
    ptl_me_t me = make_me(&e);
    if (PtlMEAppend(ni, PT, &me, PTL_OVERFLOW_LIST, (void *)e.id, &e.h) != PTL_OK)
        return 0;
    ovf[novf++] = e;
    return expect_ev(PTL_EVENT_LINK, e.id, -1);
}

static int op_put(void)
{
    ptl_match_bits_t bits = rnd() % 8;
    uint64_t msg = next_msg++;
    if (PtlPut(md, 0, 0, PTL_ACK_REQ, self, PT, bits, 0, NULL, msg) != PTL_OK)
        return 0;
    ptl_ni_fail_t want = PTL_NI_OK;
    int i;
    for (i = 0; i < nprio && !matches(&prio[i], bits); i++)
        ;
    if (i < nprio) {
        ent_t e = prio[i];
        if (!expect_ev(PTL_EVENT_PUT, e.id, (int64_t)msg))
            return 0;
        if (e.use_once) {
            memmove(&prio[i], &prio[i + 1], sizeof(prio[0]) * (size_t)(nprio - i - 1));
            nprio--;
            if (!expect_ev(PTL_EVENT_AUTO_UNLINK, e.id, -1))
                return 0;
        }
    } else {
        for (i = 0; i < novf && !matches(&ovf[i], bits); i++)
            ;
        if (i < novf) {
            if (!expect_ev(PTL_EVENT_PUT, ovf[i].id, (int64_t)msg))
                return 0;
            uh[nuh].msg = msg;
            uh[nuh].bits = bits;
            nuh++;
        } else {
            want = PTL_NI_DROPPED;
        }
    }
    for (;;) {
        ptl_event_t ev = get_event(ieq);
        if (ev.type == PTL_EVENT_SEND)
            continue;
        nchecks++;
        if (ev.type != PTL_EVENT_ACK || ev.ni_fail_type != want || ev.hdr_data != msg) {
            fprintf(stderr, "ack: type %d fail %d (want %d) msg %llu\n", ev.type, ev.ni_fail_type,
                    want, (unsigned long long)ev.hdr_data);
            return 0;
        }
        return 1;
    }
}

static int op_unlink(ent_t *list, int *n)
{
    if (*n == 0)
        return 1;
    int i = (int)(rnd() % (uint64_t)*n);
    if (PtlMEUnlink(list[i].h) != PTL_OK)
        return 0;
    memmove(&list[i], &list[i + 1], sizeof(list[0]) * (size_t)(*n - i - 1));
    (*n)--;
    return 1;
}

static int op_search(void)
{
    ent_t e;
    random_ent(&e, 0);
    ptl_me_t me = make_me(&e);
    int del = (int)(rnd() % 2);
    if (PtlMESearch(ni, PT, &me, del ? PTL_SEARCH_DELETE : PTL_SEARCH_ONLY, (void *)e.id) != PTL_OK)
        return 0;
    if (del) {
        int c = consume_headers(&e, e.use_once, PTL_EVENT_PUT_OVERFLOW, e.id);
        if (c < 0)
            return 0;
        if (c > 0)
            return 1;
    } else if (src_matches(e.src)) {
        /* SEARCH_ONLY: one SEARCH event per matching header, in arrival
         * order; only the first for a use-once search entry. */
        int found = 0;
        for (int i = 0; i < nuh; i++)
            if (((uh[i].bits ^ e.bits) & ~e.ign) == 0) {
                if (!expect_ev(PTL_EVENT_SEARCH, e.id, (int64_t)uh[i].msg))
                    return 0;
                found = 1;
                if (e.use_once)
                    break;
            }
        if (found)
            return 1;
    }
    ptl_event_t ev = get_event(teq);
    nchecks++;
    if (ev.type != PTL_EVENT_SEARCH || ev.ni_fail_type != PTL_NI_NO_MATCH ||
        (uintptr_t)ev.user_ptr != e.id) {
        fprintf(stderr, "search: expected NO_MATCH, got type %d fail %d\n", ev.type, ev.ni_fail_type);
        return 0;
    }
    return 1;
}

static int run_case(int ops)
{
    for (int k = 0; k < ops; k++) {
        unsigned r = (unsigned)(rnd() % 100);
        int ok;
        if (r < 25 && nprio < MAXE)
            ok = op_append_priority();
        else if (r < 32 && novf < MAXE)
            ok = op_append_overflow();
        else if (r < 80)
            ok = op_put();
        else if (r < 88)
            ok = op_unlink(prio, &nprio);
        else if (r < 91)
            ok = op_unlink(ovf, &novf);
        else
            ok = op_search();
        if (!ok) {
            fprintf(stderr, "mismatch at op %d (r %u)\n", k, r);
            return 0;
        }
    }
    /* Clear the case: entries unlinked, headers deleted. */
    while (nprio)
        if (!op_unlink(prio, &nprio))
            return 0;
    while (novf)
        if (!op_unlink(ovf, &novf))
            return 0;
    ent_t all = { .id = 0, .bits = 0, .ign = ~UINT64_C(0), .src = 0, .use_once = 0 };
    ptl_me_t me = make_me(&all);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_DELETE, NULL), PTL_OK);
    if (nuh == 0) {
        ptl_event_t ev = get_event(teq);
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEARCH);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
    }
    if (consume_headers(&all, 0, PTL_EVENT_PUT_OVERFLOW, 0) < 0)
        return 0;
    ptl_event_t ev;
    XP_CHECK_EQ(PtlEQGet(teq, &ev), PTL_EQ_EMPTY);
    return 1;
}

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 300;
    int ops = argc > 2 ? atoi(argv[2]) : 200;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x9e3779b97f4a7c15ull;
    ptl_pt_index_t pti;
    ptl_ni_limits_t lim;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    XP_REQUIRE(lim.max_unexpected_headers >= 4096);
    XP_REQUIRE(PtlGetPhysId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 4096, &teq) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &ieq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, teq, PT, &pti) == PTL_OK);
    ptl_md_t mdd = { .start = dummy, .length = 0, .eq_handle = ieq, .ct_handle = PTL_CT_NONE,
                     .options = PTL_MD_EVENT_SEND_DISABLE };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);

    int failed = 0;
    for (int c = 0; c < cases && !failed; c++) {
        rng_state = seed + (uint64_t)c * 0x2545F4914F6CDD1Dull;
        if (!rng_state)
            rng_state = 1;
        nuh = 0;
        if (!run_case(ops)) {
            fprintf(stderr, "case %d (seed %#llx) failed\n", c, (unsigned long long)rng_state);
            failed = 1;
        }
    }
    XP_CHECK(!failed);
    printf("%d cases x %d ops, %lu events checked\n", cases, ops, nchecks);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
