/*
 * mp_multi_ni - several network interfaces per process at once, as Open MPI's
 * btl/portals4 opens them (one NI per interface 0..max_btls-1, the physical
 * ids of every interface published in the modex, PtlSetMap on logical NIs
 * from those ids), here every interface x every kind (matching / non-matching
 * x logical / physical): 16 NIs per process.
 *
 * Checked:
 *  - PtlNIInit on every interface the engine offers, distinct handles, per NI
 *    limits (desired max_mds differs per NI), PTL_IFACE_DEFAULT is interface 0
 *    (same handle, reference counted), an interface beyond the last and
 *    PtlNIInit after PtlFini are refused with the specification's errors;
 *  - every NI allocates the SAME portal index with the SAME match bits and
 *    every rank puts (inline and RMA sizes) to every rank on every NI: each
 *    byte lands in the receiving NI of the same interface and kind, with
 *    events (hdr_data names the sending NI, initiator as that NI addresses
 *    it: logical maps differ per interface - identity on even interfaces,
 *    reversed on odd ones);
 *  - a put to a portal index that only NI 0 allocated, sent on another NI,
 *    is dropped there (failed ACK, drop counted on that NI only) and never
 *    reaches NI 0;
 *  - NIs close in a different order on every rank, some with their objects
 *    freed first, some with objects left for PtlNIFini; the survivors keep
 *    working; handles of closed NIs and of their objects are refused; a put
 *    to an NI the target closed fails in the ACK; a closed NI reopens with an
 *    empty portal table; the last ones are left to PtlFini.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define NIFACE 4
#define NKIND 4
#define NNI (NIFACE * NKIND)
#define MAXR 16
#define PT 5
#define LONE_PT 9 /* allocated on NI 0 only */
#define BITS 0xAB
#define SMALL 48
#define LARGE 20000
#define SLOT (SMALL + LARGE)
#define DEADLINE_MS 20000

typedef struct nis {
    int open, iface, matching, physical;
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_md_t md;
    ptl_handle_me_t entry; /* ME or LE on PT */
    unsigned char *rbuf;   /* MAXR * SLOT: rank r writes [r*SLOT, (r+1)*SLOT) */
    unsigned char sbuf[SLOT];
    ptl_process_t peer[MAXR];   /* how this NI addresses rank r */
    ptl_process_t as_seen[MAXR]; /* event.initiator expected for rank r */
} nis_t;

static nis_t nis[NNI];
static int me, n;
static ptl_process_t ids[MAXR][NNI]; /* modex: physical id of every NI of every rank */
static unsigned char lone_buf[64];
static ptl_handle_le_t lone_le;

static unsigned char pat(int round, int i, int src, size_t j)
{
    return (unsigned char)(round * 101 + i * 37 + src * 13 + j * 7 + 1);
}

static unsigned options_of(int k)
{
    return ((k & 2) ? PTL_NI_MATCHING : PTL_NI_NO_MATCHING) |
           ((k & 1) ? PTL_NI_PHYSICAL : PTL_NI_LOGICAL);
}

static void append_entry(int i, ptl_pt_index_t pt, void *start, ptl_size_t len, ptl_handle_me_t *h)
{
    nis_t *x = &nis[i];
    ptl_me_t me_desc;
    memset(&me_desc, 0, sizeof(me_desc));
    me_desc.start = start;
    me_desc.length = len;
    me_desc.ct_handle = PTL_CT_NONE;
    me_desc.uid = PTL_UID_ANY;
    me_desc.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
    if (x->matching) {
        if (x->physical) {
            me_desc.match_id.phys.nid = PTL_NID_ANY;
            me_desc.match_id.phys.pid = PTL_PID_ANY;
        } else {
            me_desc.match_id.rank = PTL_RANK_ANY;
        }
        me_desc.match_bits = BITS;
        XP_REQUIRE(PtlMEAppend(x->ni, pt, &me_desc, PTL_PRIORITY_LIST, x, h) == PTL_OK);
    } else {
        ptl_le_t le;
        memset(&le, 0, sizeof(le));
        le.start = start;
        le.length = len;
        le.ct_handle = PTL_CT_NONE;
        le.uid = PTL_UID_ANY;
        le.options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE;
        XP_REQUIRE(PtlLEAppend(x->ni, pt, &le, PTL_PRIORITY_LIST, x, h) == PTL_OK);
    }
}

static void open_ni(int i)
{
    nis_t *x = &nis[i];
    ptl_ni_limits_t desired, actual;
    ptl_pt_index_t got;
    ptl_md_t md;

    x->iface = i / NKIND;
    x->matching = !!(i & 2);
    x->physical = i & 1;
    memset(&desired, 0, sizeof(desired));
    desired.max_mds = 200 + i;
    XP_REQUIRE(PtlNIInit((ptl_interface_t)x->iface, options_of(i % NKIND), PTL_PID_ANY, &desired,
                         &actual, &x->ni) == PTL_OK);
    XP_CHECK_EQ(actual.max_mds, 200 + i);
    XP_REQUIRE(PtlEQAlloc(x->ni, 256, &x->eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(x->ni, 0, x->eq, PT, &got) == PTL_OK);
    XP_CHECK_EQ(got, PT);
    if (!x->rbuf)
        x->rbuf = calloc(MAXR, SLOT);
    XP_REQUIRE(x->rbuf);
    append_entry(i, PT, x->rbuf, (ptl_size_t)n * SLOT, &x->entry);
    memset(&md, 0, sizeof(md));
    md.start = x->sbuf;
    md.length = SLOT;
    md.eq_handle = x->eq;
    md.ct_handle = PTL_CT_NONE;
    XP_REQUIRE(PtlMDBind(x->ni, &md, &x->md) == PTL_OK);
    x->open = 1;
}

/* The btl's modex: every rank publishes the physical id of each NI. */
static void exchange_ids(void)
{
    ptl_process_t mine[NNI];
    size_t len;
    for (int i = 0; i < NNI; i++)
        XP_REQUIRE(PtlGetPhysId(nis[i].ni, &mine[i]) == PTL_OK);
    XP_REQUIRE(xp_kv_put("mp_multi_ni", mine, sizeof(mine)) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    for (int r = 0; r < n; r++) {
        len = sizeof(ids[r]);
        XP_REQUIRE(xp_kv_get(r, "mp_multi_ni", ids[r], &len) == XP_OK && len == sizeof(ids[r]));
    }
}

/* Logical rank j of interface `iface` is process perm(j): identity on even
 * interfaces, reversed on odd ones (perm is its own inverse). */
static int perm(int iface, int j)
{
    return (iface & 1) ? n - 1 - j : j;
}

static void set_addressing(int i)
{
    nis_t *x = &nis[i];
    int phys_i = i | 1; /* the physical NI of the same interface and matching kind */
    if (x->physical) {
        for (int r = 0; r < n; r++)
            x->peer[r] = x->as_seen[r] = ids[r][i];
        return;
    }
    ptl_process_t map[MAXR];
    for (int j = 0; j < n; j++)
        map[j] = ids[perm(x->iface, j)][phys_i];
    XP_REQUIRE(PtlSetMap(x->ni, (ptl_size_t)n, map) == PTL_OK);
    for (int r = 0; r < n; r++) {
        memset(&x->peer[r], 0, sizeof(x->peer[r]));
        x->peer[r].rank = (ptl_rank_t)perm(x->iface, r);
        x->as_seen[r] = x->peer[r];
    }
}

static int same_process(const nis_t *x, ptl_process_t a, ptl_process_t b)
{
    if (x->physical)
        return a.phys.nid == b.phys.nid && a.phys.pid == b.phys.pid;
    return a.rank == b.rank;
}

typedef struct counts {
    int put, send, ack, ack_fail;
} counts_t;

/* Check one event of NI i in round `round`. */
static void check_event(int i, int round, const ptl_event_t *ev, counts_t *c)
{
    nis_t *x = &nis[i];
    switch (ev->type) {
    case PTL_EVENT_PUT: {
        int src = (int)(ev->hdr_data & 0xff);
        XP_CHECK_EQ((ev->hdr_data >> 8) & 0xff, (uint64_t)i); /* sent on the same NI */
        XP_CHECK_EQ(ev->hdr_data >> 16, (uint64_t)round);
        XP_CHECK_EQ(ev->pt_index, PT);
        XP_CHECK_EQ(ev->ni_fail_type, PTL_NI_OK);
        XP_CHECK(ev->user_ptr == x);
        XP_REQUIRE(src >= 0 && src < n);
        XP_CHECK(same_process(x, ev->initiator, x->as_seen[src]));
        XP_CHECK(ev->mlength == SMALL || ev->mlength == LARGE);
        c->put++;
        break;
    }
    case PTL_EVENT_SEND:
        XP_CHECK_EQ(ev->ni_fail_type, PTL_NI_OK);
        c->send++;
        break;
    case PTL_EVENT_ACK:
        if (ev->ni_fail_type == PTL_NI_OK)
            c->ack++;
        else
            c->ack_fail++;
        break;
    default:
        fprintf(stderr, "rank %d NI %d: unexpected event %d\n", me, i, ev->type);
        xp_test_failures_++;
    }
}

/* Poll every open NI's EQ (one at a time: PtlEQPoll takes EQs of one NI)
 * until each has `want` (put, send, ack) events or the deadline passes. */
static void wait_events(int round, const counts_t *want, counts_t *got)
{
    uint64_t spins = 0;
    int done;
    memset(got, 0, sizeof(*got) * NNI);
    do {
        done = 1;
        for (int i = 0; i < NNI; i++) {
            ptl_event_t ev;
            unsigned which;
            if (!nis[i].open)
                continue;
            if (got[i].put >= want[i].put && got[i].send >= want[i].send &&
                got[i].ack + got[i].ack_fail >= want[i].ack + want[i].ack_fail)
                continue;
            done = 0;
            int rc = PtlEQPoll(&nis[i].eq, 1, 1, &ev, &which);
            if (rc == PTL_OK)
                check_event(i, round, &ev, &got[i]);
            else
                XP_REQUIRE(rc == PTL_EQ_EMPTY);
        }
    } while (!done && ++spins < DEADLINE_MS);
    for (int i = 0; i < NNI; i++) {
        if (!nis[i].open)
            continue;
        XP_CHECK_EQ(got[i].put, want[i].put);
        XP_CHECK_EQ(got[i].send, want[i].send);
        XP_CHECK_EQ(got[i].ack, want[i].ack);
        XP_CHECK_EQ(got[i].ack_fail, want[i].ack_fail);
    }
}

/* Every rank puts SMALL and LARGE bytes to every rank on every open NI. */
static void round_trip(int round)
{
    counts_t want[NNI], got[NNI];
    int bad = 0;

    for (int i = 0; i < NNI; i++) {
        if (!nis[i].open)
            continue;
        memset(nis[i].rbuf, 0, (size_t)n * SLOT);
        for (size_t j = 0; j < SLOT; j++)
            nis[i].sbuf[j] = pat(round, i, me, j);
        want[i] = (counts_t){.put = 2 * n, .send = 2 * n, .ack = 2 * n};
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 0; i < NNI; i++) {
        nis_t *x = &nis[i];
        if (!x->open)
            continue;
        for (int r = 0; r < n; r++) {
            ptl_hdr_data_t hd = ((uint64_t)round << 16) | ((uint64_t)i << 8) | (uint64_t)me;
            ptl_size_t base = (ptl_size_t)me * SLOT;
            XP_REQUIRE(PtlPut(x->md, 0, SMALL, PTL_ACK_REQ, x->peer[r], PT, BITS, base, NULL, hd) ==
                       PTL_OK);
            XP_REQUIRE(PtlPut(x->md, SMALL, LARGE, PTL_ACK_REQ, x->peer[r], PT, BITS, base + SMALL,
                              NULL, hd) == PTL_OK);
        }
    }
    wait_events(round, want, got);
    for (int i = 0; i < NNI; i++) {
        if (!nis[i].open)
            continue;
        for (int src = 0; src < n; src++)
            for (size_t j = 0; j < SLOT; j++)
                if (nis[i].rbuf[(size_t)src * SLOT + j] != pat(round, i, src, j)) {
                    if (bad++ < 5)
                        fprintf(stderr, "rank %d round %d NI %d: byte %zu from rank %d wrong\n", me,
                                round, i, j, src);
                    break;
                }
    }
    XP_CHECK_EQ(bad, 0);
    XP_REQUIRE(xp_barrier() == XP_OK);
}

/* A put on NI i != 0 to LONE_PT (allocated on NI 0 only) of the next rank:
 * dropped on NI i, counted there, never seen by NI 0. */
static void lone_pt_isolation(void)
{
    counts_t want[NNI], got[NNI];
    int next = (me + 1) % n;
    ptl_sr_value_t drops;

    memset(want, 0, sizeof(want));
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 1; i < NNI; i++) {
        XP_REQUIRE(PtlPut(nis[i].md, 0, 16, PTL_ACK_REQ, nis[i].peer[next], LONE_PT, BITS, 0, NULL,
                          ((uint64_t)i << 8) | (uint64_t)me) == PTL_OK);
        want[i] = (counts_t){.send = 1, .ack_fail = 1};
    }
    wait_events(0, want, got);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 0; i < NNI; i++) {
        XP_REQUIRE(PtlNIStatus(nis[i].ni, PTL_SR_DROP_COUNT, &drops) == PTL_OK);
        XP_CHECK_EQ(drops, i == 0 ? 0 : 1);
    }
    for (size_t j = 0; j < sizeof(lone_buf); j++)
        XP_CHECK_EQ(lone_buf[j], 0);
}

static void free_objects(int i)
{
    nis_t *x = &nis[i];
    if (x->matching)
        XP_CHECK_EQ(PtlMEUnlink(x->entry), PTL_OK);
    else
        XP_CHECK_EQ(PtlLEUnlink(x->entry), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(x->md), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(x->ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(x->eq), PTL_OK);
}

static void close_ni(int i, int free_first)
{
    nis_t *x = &nis[i];
    ptl_sr_value_t v;
    ptl_event_t ev;
    if (free_first)
        free_objects(i);
    XP_REQUIRE(PtlNIFini(x->ni) == PTL_OK);
    x->open = 0;
    /* The NI and everything it owned are gone. */
    XP_CHECK_EQ(PtlNIStatus(x->ni, PTL_SR_DROP_COUNT, &v), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIFini(x->ni), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQGet(x->eq, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDRelease(x->md), PTL_ARG_INVALID);
    if (x->matching)
        XP_CHECK_EQ(PtlMEUnlink(x->entry), PTL_ARG_INVALID);
    else
        XP_CHECK_EQ(PtlLEUnlink(x->entry), PTL_ARG_INVALID);
}

static void shuffle(int *v, int len, unsigned seed)
{
    for (int k = len - 1; k > 0; k--) {
        int j = (int)(rand_r(&seed) % (unsigned)(k + 1));
        int t = v[k];
        v[k] = v[j];
        v[j] = t;
    }
}

static void check_open_errors(void)
{
    ptl_handle_ni_t h, h0;
    ptl_ni_limits_t lim;
    /* An interface beyond the last one is not a valid network interface. */
    XP_CHECK_EQ(PtlNIInit(NIFACE, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &h),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(1000, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &h),
                PTL_ARG_INVALID);
    /* An explicit pid: another rank's is in use, one past every rank's is
     * nobody's, and so is 0 (pids are ranks + 1). */
    ptl_pid_t top = 0;
    for (int r = 0; r < n; r++)
        top = ids[r][3].phys.pid > top ? ids[r][3].phys.pid : top;
    XP_CHECK_EQ(top, (ptl_pid_t)n);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL,
                          ids[(me + 1) % n][3].phys.pid, NULL, NULL, &h),
                n > 1 ? PTL_PID_IN_USE : PTL_OK);
    if (n == 1)
        XP_CHECK_EQ(PtlNIFini(h), PTL_OK);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, top + 1, NULL,
                          NULL, &h),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, 0, NULL, NULL, &h),
                PTL_ARG_INVALID);
    /* PTL_IFACE_DEFAULT is interface 0: same NI, one more reference. */
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         &lim, &h0) == PTL_OK);
    XP_CHECK_EQ(h0, nis[3].ni);
    XP_CHECK_EQ(lim.max_mds, 203); /* the limits the NI was created with */
    XP_CHECK_EQ(PtlNIFini(h0), PTL_OK);
    XP_CHECK_EQ(PtlNIStatus(nis[3].ni, PTL_SR_DROP_COUNT, &(ptl_sr_value_t){0}), PTL_OK);
    /* Handles are distinct and name their NI. */
    for (int i = 0; i < NNI; i++)
        for (int j = i + 1; j < NNI; j++)
            XP_CHECK(nis[i].ni != nis[j].ni);
    for (int i = 0; i < NNI; i++) {
        XP_CHECK_EQ(PtlNIHandle(nis[i].md, &h), PTL_OK);
        XP_CHECK_EQ(h, nis[i].ni);
        XP_CHECK_EQ(PtlNIHandle(nis[i].eq, &h), PTL_OK);
        XP_CHECK_EQ(h, nis[i].ni);
        XP_CHECK_EQ(PtlNIHandle(nis[i].entry, &h), PTL_OK);
        XP_CHECK_EQ(h, nis[i].ni);
    }
    /* An object of one NI is refused by another. */
    {
        ptl_pt_index_t got;
        ptl_md_t md = {.start = lone_buf, .length = 1, .eq_handle = nis[0].eq,
                       .ct_handle = PTL_CT_NONE};
        ptl_handle_md_t mdh;
        XP_CHECK_EQ(PtlPTAlloc(nis[1].ni, 0, nis[0].eq, 20, &got), PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlMDBind(nis[1].ni, &md, &mdh), PTL_ARG_INVALID);
    }
}

/* Odd ranks close NI u; even ranks then put on u to the next (odd) rank: the
 * target NI does not exist any more, the ACK says so. */
static void put_to_closed_ni(int u)
{
    counts_t want[NNI], got[NNI];
    int target = me + 1;
    if (me % 2 == 1)
        close_ni(u, 0);
    XP_REQUIRE(xp_barrier() == XP_OK);
    memset(want, 0, sizeof(want));
    if (me % 2 == 0 && target < n) {
        XP_REQUIRE(PtlPut(nis[u].md, 0, SMALL, PTL_ACK_REQ, nis[u].peer[target], PT, BITS, 0, NULL,
                          ((uint64_t)u << 8) | (uint64_t)me) == PTL_OK);
        want[u] = (counts_t){.send = 1, .ack_fail = 1};
    }
    wait_events(2, want, got);
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (me % 2 == 0)
        close_ni(u, 1);
}

/* A closed NI opens again with nothing left of its previous life. */
static void reopen(int i)
{
    nis_t *x = &nis[i];
    ptl_handle_ni_t h;
    ptl_handle_eq_t eq;
    ptl_pt_index_t got;
    XP_REQUIRE(PtlNIInit((ptl_interface_t)x->iface, options_of(i % NKIND), PTL_PID_ANY, NULL, NULL,
                         &h) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(h, 8, &eq) == PTL_OK);
    XP_CHECK_EQ(PtlPTAlloc(h, 0, eq, PT, &got), PTL_OK);
    XP_CHECK_EQ(got, PT);
    XP_CHECK_EQ(PtlNIStatus(h, PTL_SR_DROP_COUNT, &(ptl_sr_value_t){-1}), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(h), PTL_OK);
}

int main(void)
{
    int order[NNI], closing[NNI], nclose = 0, rest[NNI], nrest = 0;
    ptl_handle_ni_t h;

    XP_REQUIRE(PtlInit() == PTL_OK);
    me = xp_rank();
    n = xp_size();
    if (n > MAXR || n > 255)
        XP_TEST_SKIP("at most %d ranks", MAXR);

    /* Open in a different order on every rank. */
    for (int i = 0; i < NNI; i++)
        order[i] = i;
    shuffle(order, NNI, 7u + (unsigned)me);
    for (int k = 0; k < NNI; k++)
        open_ni(order[k]);
    {
        ptl_pt_index_t got;
        XP_REQUIRE(PtlPTAlloc(nis[0].ni, 0, nis[0].eq, LONE_PT, &got) == PTL_OK);
        append_entry(0, LONE_PT, lone_buf, sizeof(lone_buf), &lone_le);
    }
    exchange_ids();
    for (int i = 0; i < NNI; i++)
        set_addressing(i);
    check_open_errors();

    round_trip(0);
    lone_pt_isolation();

    /* Close half of the NIs (the same set everywhere), in a rank-specific
     * order, every other one with its objects freed first. */
    for (int i = 0; i < NNI; i++) {
        if ((i * 7 + 3) % NNI < NNI / 2 && i != 0)
            closing[nclose++] = i;
        else
            rest[nrest++] = i;
    }
    shuffle(closing, nclose, 99u + (unsigned)me);
    for (int k = 0; k < nclose; k++)
        close_ni(closing[k], k % 2);
    XP_REQUIRE(xp_barrier() == XP_OK);
    round_trip(1);

    if (n >= 2)
        put_to_closed_ni(rest[nrest - 1]);
    nrest--;
    reopen(closing[0]);

    /* Close all but two survivors in another order; PtlFini takes the rest. */
    shuffle(rest, nrest, 1234u + (unsigned)me);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int k = 0; k + 2 < nrest; k++)
        close_ni(rest[k], (k + me) % 2);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlFini();
    XP_CHECK_EQ(PtlNIInit(0, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &h),
                PTL_NO_INIT);
    for (int i = 0; i < NNI; i++)
        free(nis[i].rbuf);
    return xp_test_result();
}
