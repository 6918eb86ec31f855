/*
 * test_api_errors - Portals 4 conformance, single process, non-matching and
 * NI-level interfaces: every call before PtlInit, PtlInit/PtlFini reference
 * counting, PtlNIInit variants and limits, identity and maps, PT allocation,
 * LE/MD/CT/EQ argument checking, stale and wrong-type handles, NULL output
 * pointers, EQ overflow, CT wait rules, bundles, PtlAbort; the matching
 * and triggered calls' argument checks. The few data
 * movements go to this process itself (loopback), so no launcher is needed.
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptl/engine.h" /* xp_ptl_state: how many threads wait (abort_waiters) */
#include "ptl/progress.h"
#include "util/clock.h"
#include "xp_test.h"

#define NL (PTL_NI_NO_MATCHING | PTL_NI_LOGICAL)
#define NP (PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL)
#define ML (PTL_NI_MATCHING | PTL_NI_LOGICAL)
#define MP (PTL_NI_MATCHING | PTL_NI_PHYSICAL)

static ptl_process_t self_rank(void)
{
    ptl_process_t p;
    memset(&p, 0, sizeof(p));
    p.rank = 0;
    return p;
}

/* before_init's matching and triggered calls. */
static void before_init_matching(ptl_handle_ni_t ni, ptl_handle_ct_t ct, ptl_handle_any_t h,
                                 ptl_process_t p)
{
    ptl_me_t me = { 0 };
    ptl_le_t le = { 0 };
    ptl_ct_event_t cte = { 1, 0 };
    uint64_t operand = 0;

    XP_CHECK_EQ(PtlMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlMEUnlink(h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlMESearch(ni, 1, &me, PTL_SEARCH_ONLY, NULL), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTCancelTriggered(ct), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredCTSet(ct, cte, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredGet(h, 0, 8, p, 1, 0, 0, NULL, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredAtomic(h, 0, 8, PTL_NO_ACK_REQ, p, 1, 0, 0, NULL, 0, PTL_SUM,
                                   PTL_UINT64_T, ct, 1),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredFetchAtomic(h, 0, h, 0, 8, p, 1, 0, 0, NULL, 0, PTL_SUM,
                                        PTL_UINT64_T, ct, 1),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredSwap(h, 0, h, 0, 8, p, 1, 0, 0, NULL, 0, &operand, PTL_CSWAP,
                                 PTL_UINT64_T, ct, 1),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredLEAppend(ni, 1, &le, PTL_PRIORITY_LIST, NULL, &h, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredMEAppend(ni, 1, &me, PTL_PRIORITY_LIST, NULL, &h, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredLEUnlink(h, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredMEUnlink(h, ct, 1), PTL_NO_INIT);
}

/* Every call before PtlInit: PTL_NO_INIT, never a crash. */
static void before_init(void)
{
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_ni_limits_t lim;
    ptl_sr_value_t sr;
    ptl_process_t id;
    ptl_uid_t uid;
    ptl_size_t sz;
    ptl_pt_index_t pti;
    ptl_md_t md = { 0 };
    ptl_le_t le = { 0 };
    ptl_handle_any_t h;
    ptl_ct_event_t cte = { 0, 0 };
    ptl_event_t ev;
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_size_t test = 1;
    unsigned which;
    ptl_process_t p = self_rank();

    PtlFini(); /* harmless */
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, NULL, &lim, &ni), PTL_NO_INIT);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_NO_INIT);
    XP_CHECK_EQ(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &sr), PTL_NO_INIT);
    XP_CHECK_EQ(PtlNIHandle(ni, &h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlGetUid(ni, &uid), PTL_NO_INIT);
    XP_CHECK_EQ(PtlGetId(ni, &id), PTL_NO_INIT);
    XP_CHECK_EQ(PtlGetPhysId(ni, &id), PTL_NO_INIT);
    XP_CHECK_EQ(PtlSetMap(ni, 1, &id), PTL_NO_INIT);
    XP_CHECK_EQ(PtlGetMap(ni, 1, &id, &sz), PTL_NO_INIT);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 1, &pti), PTL_NO_INIT);
    XP_CHECK_EQ(PtlPTFree(ni, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlPTEnable(ni, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlPTDisable(ni, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlLEAppend(ni, 1, &le, PTL_PRIORITY_LIST, NULL, &h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlLEUnlink(h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlLESearch(ni, 1, &le, PTL_SEARCH_ONLY, NULL), PTL_NO_INIT);
    XP_CHECK_EQ(PtlMDBind(ni, &md, &h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlMDRelease(h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlPut(h, 0, 0, PTL_NO_ACK_REQ, p, 1, 0, 0, NULL, 0), PTL_NO_INIT);
    XP_CHECK_EQ(PtlGet(h, 0, 0, p, 1, 0, 0, NULL), PTL_NO_INIT);
    XP_CHECK_EQ(PtlAtomic(h, 0, 8, PTL_NO_ACK_REQ, p, 1, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlFetchAtomic(h, 0, h, 0, 8, p, 1, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlSwap(h, 0, h, 0, 8, p, 1, 0, 0, NULL, 0, NULL, PTL_SWAP, PTL_INT64_T),
                PTL_NO_INIT);
    XP_CHECK_EQ(PtlAtomicSync(), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTAlloc(ni, &ct), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTGet(ct, &cte), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTWait(ct, 1, &cte), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTPoll(&ct, &test, 1, 0, &cte, &which), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTSet(ct, cte), PTL_NO_INIT);
    XP_CHECK_EQ(PtlCTInc(ct, cte), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQAlloc(ni, 8, &eq), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQWait(eq, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQPoll(&eq, 1, 0, &ev, &which), PTL_NO_INIT);
    XP_CHECK_EQ(PtlStartBundle(ni), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEndBundle(ni), PTL_NO_INIT);
    XP_CHECK_EQ(PtlAbort(), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredPut(h, 0, 0, PTL_NO_ACK_REQ, p, 1, 0, 0, NULL, 0, ct, 1), PTL_NO_INIT);
    XP_CHECK_EQ(PtlTriggeredCTInc(ct, cte, ct, 1), PTL_NO_INIT);
    before_init_matching(ni, ct, h, p);
}

/* PtlInit/PtlFini nest; PtlFini of the last reference frees everything. */
static void init_refcount(void)
{
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlInit() == PTL_OK);
    PtlFini();
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, NULL, NULL, &ni), PTL_OK);
    PtlFini(); /* last reference; the NI left open is freed */
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, NULL, NULL, &ni), PTL_NO_INIT);
    XP_CHECK_EQ(PtlAbort(), PTL_NO_INIT);
    /* and it can start again */
    XP_REQUIRE(PtlInit() == PTL_OK);
    PtlFini();
}

/* small: the NI was asked for atomic sizes under 32, and granted them. */
static void check_limits(const ptl_ni_limits_t *l, int small)
{
    XP_CHECK(l->max_entries > 0);
    XP_CHECK(l->max_mds > 0);
    XP_CHECK(l->max_cts > 0);
    XP_CHECK(l->max_eqs > 0);
    XP_CHECK(l->max_pt_index >= 4); /* 63 unless asked for less */
    XP_CHECK(l->max_iovecs > 0);
    XP_CHECK(l->max_list_size > 0);
    XP_CHECK(l->max_msg_size > 0);
    /* Clients (SOS) refuse less than a long double complex: so much unless
     * asked for less. */
    XP_CHECK(small || l->max_atomic_size >= 32);
    XP_CHECK(small || l->max_fetch_atomic_size >= 32);
    XP_CHECK(l->max_volatile_size >= 32);
    XP_CHECK(l->max_fetch_atomic_size <= l->max_atomic_size);
}

/* On an NI granted max_msg_size 4, max_atomic_size 4, max_fetch_atomic_size
 * 4: what exceeds them is refused by the immediate and the triggered calls
 * alike (a triggered one accepted here would fail silently when it fires). */
static void small_limits(ptl_handle_ni_t ni)
{
    static unsigned char buf[64];
    ptl_md_t mdd = {.start = buf, .length = sizeof buf, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t md;
    ptl_handle_ct_t ct;
    ptl_process_t p;
    uint64_t operand = 0;
    XP_REQUIRE(PtlGetId(ni, &p) == PTL_OK);
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_CHECK_EQ(PtlPut(md, 0, 5, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 5, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGet(md, 0, 5, p, 0, 0, 0, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredGet(md, 0, 5, p, 0, 0, 0, NULL, ct, 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(md, 0, 5, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, PTL_SUM, PTL_UINT8_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(md, 0, 5, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, PTL_SUM,
                                   PTL_UINT8_T, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(md, 0, md, 32, 5, p, 0, 0, 0, NULL, 0, PTL_SUM, PTL_UINT8_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredFetchAtomic(md, 0, md, 32, 5, p, 0, 0, 0, NULL, 0, PTL_SUM,
                                        PTL_UINT8_T, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSwap(md, 0, md, 32, 5, p, 0, 0, 0, NULL, 0, &operand, PTL_SWAP, PTL_UINT8_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredSwap(md, 0, md, 32, 5, p, 0, 0, 0, NULL, 0, &operand, PTL_SWAP,
                                 PTL_UINT8_T, ct, 1),
                PTL_ARG_INVALID);
    /* Past the MD's end, and an MD released before the call. */
    XP_CHECK_EQ(PtlTriggeredPut(md, 62, 4, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, ct, 1),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 4, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, ct, 1),
                PTL_ARG_INVALID);
    ptl_ct_event_t ev;
    XP_CHECK_EQ(PtlCTGet(ct, &ev), PTL_OK);
    XP_CHECK_EQ(ev.success + ev.failure, 0); /* nothing was posted */
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

static void ni_init_fini(void)
{
    ptl_handle_ni_t h[4], again, bad;
    ptl_ni_limits_t lim, lim2, want;
    static const unsigned opts[4] = { NL, NP, ML, MP };

    XP_REQUIRE(PtlInit() == PTL_OK);
    /* bad options, iface, pid, output pointer */
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, 0, PTL_PID_ANY, NULL, &lim, &bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_NO_MATCHING | PTL_NI_LOGICAL,
                          PTL_PID_ANY, NULL, &lim, &bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL | PTL_NI_PHYSICAL,
                          PTL_PID_ANY, NULL, &lim, &bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NL | (1u << 20), PTL_PID_ANY, NULL, &lim, &bad),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(1000, NL, PTL_PID_ANY, NULL, &lim, &bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, NULL, &lim, NULL), PTL_ARG_INVALID);
    XP_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, NL, 12345, NULL, &lim, &bad) != PTL_OK);

    /* desired limits lower ours on the first init of a slot */
    memset(&want, 0, sizeof(want));
    want.max_entries = 3;
    want.max_mds = 2;
    want.max_pt_index = 4; /* fewer PT entries than the default are granted */
    want.max_list_size = 2;
    want.max_msg_size = 4;
    /* Smaller atomic sizes too, as the reference grants them; the fetching
     * size (no preference here) follows: never more than max_atomic_size. */
    want.max_atomic_size = 4;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, opts[0], PTL_PID_ANY, &want, &lim, &h[0]) == PTL_OK);
    XP_CHECK_EQ(lim.max_entries, 3);
    XP_CHECK_EQ(lim.max_mds, 2);
    XP_CHECK_EQ(lim.max_pt_index, 4);
    XP_CHECK_EQ(lim.max_list_size, 2);
    XP_CHECK_EQ(lim.max_msg_size, 4);
    XP_CHECK_EQ(lim.max_atomic_size, 4);
    XP_CHECK_EQ(lim.max_fetch_atomic_size, 4);
    XP_CHECK(lim.max_cts > 0 && lim.max_eqs > 0);
    check_limits(&lim, 1);
    small_limits(h[0]);
    for (int i = 1; i < 4; i++) {
        XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, opts[i], PTL_PID_ANY, NULL, &lim2, &h[i]) == PTL_OK);
        check_limits(&lim2, 0);
        XP_CHECK(lim2.max_pt_index >= 63);
        for (int j = 0; j < i; j++)
            XP_CHECK(h[i] != h[j]);
    }
    /* Same interface and options: the same NI, its limits unchanged. */
    want.max_entries = 1000;
    XP_CHECK_EQ(PtlNIInit(0, opts[0], PTL_PID_ANY, &want, &lim2, &again), PTL_OK);
    XP_CHECK_EQ(again, h[0]);
    XP_CHECK_EQ(lim2.max_entries, 3);
    XP_CHECK_EQ(PtlHandleIsEqual(again, h[0]), 1);
    XP_CHECK_EQ(PtlNIFini(again), PTL_OK); /* one reference left */
    ptl_process_t id;
    XP_CHECK_EQ(PtlGetId(h[0], &id), PTL_OK);

    for (int i = 0; i < 4; i++)
        XP_CHECK_EQ(PtlNIFini(h[i]), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(h[0]), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetId(h[0], &id), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIFini(PTL_INVALID_HANDLE), PTL_ARG_INVALID);
    PtlFini();
}

/* Identity, uid, maps, status registers, PtlNIHandle. */
static void identity(ptl_handle_ni_t ni, ptl_handle_ni_t phys)
{
    ptl_process_t id, pid, map[4];
    ptl_uid_t uid;
    ptl_jid_t jid;
    ptl_size_t n = 99;
    ptl_sr_value_t v = -1;

    XP_CHECK_EQ(PtlGetUid(ni, &uid), PTL_OK);
    XP_CHECK_EQ(uid, (ptl_uid_t)getuid());
    XP_CHECK_EQ(PtlGetUid(ni, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetJid(ni, &jid), PTL_OK);
    XP_CHECK_EQ(PtlGetId(ni, &id), PTL_OK);
    XP_CHECK_EQ(id.rank, 0);
    XP_CHECK_EQ(PtlGetId(ni, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetPhysId(ni, &pid), PTL_OK);
    XP_CHECK_EQ(PtlGetPhysId(ni, NULL), PTL_ARG_INVALID);
    /* No process has pid 0: Open MPI's coll/portals4 takes pid 0 for a
     * logical address and disqualifies itself on that rank alone. */
    XP_CHECK(pid.phys.pid != 0);
    /* Our own pid asked for explicitly is the same NI; pid 0 is nobody's. */
    ptl_handle_ni_t again;
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NP, pid.phys.pid, NULL, NULL, &again), PTL_OK);
    XP_CHECK(PtlHandleIsEqual(again, phys));
    XP_CHECK_EQ(PtlNIFini(again), PTL_OK);
    XP_CHECK_EQ(PtlNIInit(PTL_IFACE_DEFAULT, NP, 0, NULL, NULL, &again), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetId(phys, &id), PTL_OK);
    XP_CHECK_EQ(id.phys.nid, pid.phys.nid);
    XP_CHECK_EQ(id.phys.pid, pid.phys.pid);

    XP_CHECK_EQ(PtlGetMap(ni, 4, map, &n), PTL_OK);
    XP_CHECK_EQ(n, 1);
    XP_CHECK_EQ(map[0].phys.nid, pid.phys.nid);
    XP_CHECK_EQ(map[0].phys.pid, pid.phys.pid);
    XP_CHECK_EQ(PtlGetMap(ni, 0, NULL, &n), PTL_OK);
    XP_CHECK_EQ(n, 1);
    XP_CHECK_EQ(PtlGetMap(ni, 4, map, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetMap(phys, 4, map, &n), PTL_ARG_INVALID);
    /* The map the launcher gave is accepted again; a bad entry is refused. */
    XP_CHECK_EQ(PtlSetMap(ni, 1, &pid), PTL_OK);
    map[0] = pid;
    map[0].phys.pid += 7;
    XP_CHECK(PtlSetMap(ni, 1, map) != PTL_OK);
    map[0].phys.pid = 0;
    XP_CHECK_EQ(PtlSetMap(ni, 1, map), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSetMap(ni, 0, map), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSetMap(ni, 1, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSetMap(phys, 1, &pid), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGetId(ni, &id), PTL_OK);
    XP_CHECK_EQ(id.rank, 0);

    for (int r = 0; r < PTL_SR_LAST; r++) {
        XP_CHECK_EQ(PtlNIStatus(ni, (ptl_sr_index_t)r, &v), PTL_OK);
        XP_CHECK_EQ(v, 0);
    }
    XP_CHECK_EQ(PtlNIStatus(ni, (ptl_sr_index_t)PTL_SR_LAST, &v), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIStatus(PTL_INVALID_HANDLE, PTL_SR_DROP_COUNT, &v), PTL_ARG_INVALID);

    ptl_handle_ni_t nh;
    XP_CHECK_EQ(PtlNIHandle(ni, &nh), PTL_OK);
    XP_CHECK_EQ(nh, ni);
    XP_CHECK_EQ(PtlNIHandle(ni, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIHandle(PTL_INVALID_HANDLE, &nh), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIHandle(PTL_EQ_NONE, &nh), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIHandle(PTL_CT_NONE, &nh), PTL_ARG_INVALID);
}

static void pt_alloc(ptl_handle_ni_t ni, ptl_handle_eq_t eq, int max_pt)
{
    ptl_pt_index_t a, b, any;
    ptl_handle_eq_t eq_phys;
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 5, &a), PTL_OK);
    XP_CHECK_EQ(a, 5);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 5, &b), PTL_PT_IN_USE);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &any), PTL_OK);
    XP_CHECK(any != 5 && any <= (ptl_pt_index_t)max_pt);
    b = 77;
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, (ptl_pt_index_t)max_pt + 1, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(ni, PTL_PT_FLOWCTRL, PTL_EQ_NONE, 6, &b), PTL_PT_EQ_NEEDED);
    XP_CHECK_EQ(PtlPTAlloc(ni, 1u << 10, PTL_EQ_NONE, 6, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 6, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_INVALID_HANDLE, 6, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_CT_NONE, 6, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(PTL_INVALID_HANDLE, 0, PTL_EQ_NONE, 6, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTAlloc(ni, PTL_PT_FLOWCTRL, eq, 6, &b), PTL_OK);
    /* an EQ of another NI is not this NI's */
    ptl_handle_ni_t other;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, MP, PTL_PID_ANY, NULL, NULL, &other) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(other, 4, &eq_phys) == PTL_OK);
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, eq_phys, 7, &b), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIFini(other), PTL_OK);
    /* stale EQ after its NI went away */
    XP_CHECK_EQ(PtlEQFree(eq_phys), PTL_ARG_INVALID);

    XP_CHECK_EQ(PtlPTDisable(ni, 5), PTL_OK);
    XP_CHECK_EQ(PtlPTEnable(ni, 5), PTL_OK);
    XP_CHECK_EQ(PtlPTDisable(ni, 9), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTEnable(ni, (ptl_pt_index_t)max_pt + 1), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTFree(ni, 5), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, 5), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTFree(ni, 6), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PTL_PT_ANY), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTFree(ni, 7), PTL_ARG_INVALID); /* the failed calls allocated nothing */
    /* The unordered-matching permission is an accepted option. */
    XP_CHECK_EQ(PtlPTAlloc(ni, PTL_PT_MATCH_UNORDERED | PTL_PT_ONLY_USE_ONCE, PTL_EQ_NONE, 7, &b),
                PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, 7), PTL_OK);
    /* PT_ANY until full, then PTL_PT_FULL */
    int n = 0;
    ptl_pt_index_t got;
    while (PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &got) == PTL_OK)
        n++;
    XP_CHECK_EQ(n, max_pt + 1 - 1); /* one index (the earlier PT_ANY) still taken */
    XP_CHECK_EQ(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &got), PTL_PT_FULL);
    for (int i = 0; i <= max_pt; i++)
        XP_CHECK_EQ(PtlPTFree(ni, (ptl_pt_index_t)i), PTL_OK);
}

static void le_append(ptl_handle_ni_t ni, ptl_handle_ni_t mni, ptl_handle_ct_t ct,
                      ptl_handle_eq_t eq)
{
    char buf[64];
    ptl_pt_index_t pt;
    ptl_handle_le_t h1, h2, h3, hx;
    ptl_le_t le = { .start = buf, .length = sizeof(buf), .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT };
    ptl_event_t ev;

    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, 3, &pt) == PTL_OK);
    XP_CHECK_EQ(PtlLEAppend(ni, 4, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEAppend(ni, 9999, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEAppend(ni, pt, NULL, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, (ptl_list_t)7, NULL, &hx), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEAppend(PTL_INVALID_HANDLE, pt, &le, PTL_PRIORITY_LIST, NULL, &hx),
                PTL_ARG_INVALID);
    /* LEs belong on non-matching NIs */
    XP_CHECK_EQ(PtlLEAppend(mni, pt, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    le.options = PTL_LE_OP_PUT | PTL_ME_MANAGE_LOCAL; /* an ME-only option */
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    le.options = PTL_LE_OP_PUT | (1u << 30);
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    le.options = PTL_LE_OP_PUT;
    le.ct_handle = eq; /* wrong type */
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_ARG_INVALID);
    le.ct_handle = ct;
    /* every LE option is accepted */
    le.options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_USE_ONCE | PTL_LE_ACK_DISABLE |
                 PTL_LE_UNEXPECTED_HDR_DISABLE | PTL_LE_IS_ACCESSIBLE |
                 PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_FLOWCTRL_DISABLE |
                 PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_OVER_DISABLE |
                 PTL_LE_EVENT_UNLINK_DISABLE | PTL_LE_EVENT_LINK_DISABLE | PTL_LE_EVENT_CT_COMM |
                 PTL_LE_EVENT_CT_OVERFLOW | PTL_LE_EVENT_CT_BYTES;
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &h1), PTL_OK);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY); /* LINK_DISABLE: no LINK event */
    le.options = PTL_LE_OP_PUT;
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_OVERFLOW_LIST, (void *)0x55, &h2), PTL_OK);
    /* without LINK_DISABLE the append posts PTL_EVENT_LINK */
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_LINK);
    XP_CHECK(ev.user_ptr == (void *)0x55);
    XP_CHECK_EQ(ev.pt_index, pt);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    /* max_list_size is 2 on this NI */
    XP_CHECK_EQ(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_LIST_TOO_LONG);
    XP_CHECK(h1 != h2);
    /* max_entries is 3: a third entry on another PT fits, a fourth does not */
    ptl_pt_index_t pt2;
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, 4, &pt2) == PTL_OK);
    XP_CHECK_EQ(PtlLEAppend(ni, pt2, &le, PTL_PRIORITY_LIST, NULL, &h3), PTL_OK);
    XP_CHECK_EQ(PtlLEAppend(ni, pt2, &le, PTL_PRIORITY_LIST, NULL, &hx), PTL_NO_SPACE);
    ptl_handle_ni_t nh;
    XP_CHECK_EQ(PtlNIHandle(h1, &nh), PTL_OK);
    XP_CHECK_EQ(nh, ni);

    /* a PT with entries cannot be freed */
    XP_CHECK_EQ(PtlPTFree(ni, pt), PTL_IN_USE);
    XP_CHECK_EQ(PtlLEUnlink(h1), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(h1), PTL_ARG_INVALID); /* stale */
    XP_CHECK_EQ(PtlNIHandle(h1, &nh), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEUnlink(ct), PTL_ARG_INVALID); /* wrong type */
    XP_CHECK_EQ(PtlLEUnlink(PTL_INVALID_HANDLE), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLEUnlink(h2), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(h3), PTL_OK);
    /* PtlLEUnlink posts no event (no AUTO_UNLINK for explicit unlinks) */
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);

    /* search with nothing unexpected: one SEARCH event, NO_MATCH */
    XP_CHECK_EQ(PtlLESearch(ni, pt, &le, PTL_SEARCH_ONLY, (void *)0x77), PTL_OK);
    XP_REQUIRE(PtlEQGet(eq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
    XP_CHECK(ev.user_ptr == (void *)0x77);
    XP_CHECK_EQ(PtlLESearch(ni, pt, &le, (ptl_search_op_t)9, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLESearch(ni, pt, NULL, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLESearch(ni, 60, &le, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlLESearch(mni, pt, &le, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPTFree(ni, pt), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, pt2), PTL_OK);
}

static void md_bind(ptl_handle_ni_t ni, ptl_handle_ct_t ct, ptl_handle_eq_t eq)
{
    char buf[64], buf2[32];
    ptl_handle_md_t h1, h2, hx;
    ptl_iovec_t iov[2] = { { buf, 16 }, { buf2, 16 } };
    ptl_md_t md = { .start = buf, .length = sizeof(buf), .options = 0,
                    .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE };

    XP_CHECK_EQ(PtlMDBind(ni, NULL, &hx), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDBind(ni, &md, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDBind(PTL_INVALID_HANDLE, &md, &hx), PTL_ARG_INVALID);
    md.options = 1u << 25;
    XP_CHECK_EQ(PtlMDBind(ni, &md, &hx), PTL_ARG_INVALID);
    md.options = 0;
    md.eq_handle = ct; /* wrong type */
    XP_CHECK_EQ(PtlMDBind(ni, &md, &hx), PTL_ARG_INVALID);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = eq; /* wrong type */
    XP_CHECK_EQ(PtlMDBind(ni, &md, &hx), PTL_ARG_INVALID);
    md.ct_handle = PTL_CT_NONE;
    /* the whole address space, every option */
    ptl_md_t all = { .start = NULL, .length = PTL_SIZE_MAX, .eq_handle = eq, .ct_handle = ct,
                     .options = PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_EVENT_SEND_DISABLE |
                                PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_REPLY |
                                PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_BYTES |
                                PTL_MD_UNORDERED | PTL_MD_VOLATILE };
    XP_CHECK_EQ(PtlMDBind(ni, &all, &h1), PTL_OK);
    /* an iovec list; more elements than max_iovecs is refused */
    ptl_md_t mv = { .start = iov, .length = 2, .options = PTL_IOVEC, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = PTL_CT_NONE };
    XP_CHECK_EQ(PtlMDBind(ni, &mv, &h2), PTL_OK);
    XP_CHECK(h1 != h2);
    /* max_mds is 2 on this NI */
    XP_CHECK_EQ(PtlMDBind(ni, &md, &hx), PTL_NO_SPACE);
    ptl_handle_ni_t nh;
    XP_CHECK_EQ(PtlNIHandle(h2, &nh), PTL_OK);
    XP_CHECK_EQ(nh, ni);
    XP_CHECK_EQ(PtlMDRelease(h2), PTL_OK);
    mv.length = 100000;
    XP_CHECK_EQ(PtlMDBind(ni, &mv, &hx), PTL_ARG_INVALID);
    mv.start = NULL;
    mv.length = 2;
    XP_CHECK_EQ(PtlMDBind(ni, &mv, &hx), PTL_ARG_INVALID);

    /* operations on stale, wrong-type and out-of-range arguments */
    ptl_process_t me = self_rank(), nobody = self_rank();
    nobody.rank = 1000;
    XP_CHECK_EQ(PtlPut(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(ct, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGet(h2, 0, 8, me, 3, 0, 0, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(h2, 0, h2, 0, 8, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDRelease(h2), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMDRelease(eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIHandle(h2, &nh), PTL_ARG_INVALID);
    XP_REQUIRE(PtlMDBind(ni, &md, &h2) == PTL_OK);
    XP_CHECK_EQ(PtlPut(h2, 60, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(h2, 65, 0, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(h2, 8, UINT64_MAX, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(h2, 0, 8, (ptl_ack_req_t)9, me, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(h2, 0, 8, PTL_NO_ACK_REQ, nobody, 3, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGet(h2, 60, 8, me, 3, 0, 0, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGet(h2, 0, 8, nobody, 3, 0, 0, NULL), PTL_ARG_INVALID);

    /* atomics: sizes, op/type pairs, operands */
    ptl_ni_limits_t lim;
    ptl_handle_ni_t tmp;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, NULL, &lim, &tmp) == PTL_OK);
    XP_CHECK_EQ(tmp, ni);
    PtlNIFini(tmp);
    XP_CHECK_EQ(PtlAtomic(h1, (ptl_size_t)(uintptr_t)buf, lim.max_atomic_size + 8, PTL_NO_ACK_REQ,
                          me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_BAND, PTL_DOUBLE),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_SWAP, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_MIN,
                          PTL_DOUBLE_COMPLEX), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, (ptl_op_t)99,
                          PTL_INT64_T), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_SUM,
                          (ptl_datatype_t)99), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 6, PTL_NO_ACK_REQ, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT32_T),
                PTL_ARG_INVALID); /* not whole elements */
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, (ptl_ack_req_t)9, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomic(h2, 0, 8, PTL_NO_ACK_REQ, nobody, 3, 0, 0, NULL, 0, PTL_SUM,
                          PTL_INT64_T), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(h2, 0, h2, 8, 8, me, 3, 0, 0, NULL, 0, PTL_CSWAP, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(h2, 0, ct, 8, 8, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(h2, 60, h2, 8, 8, me, 3, 0, 0, NULL, 0, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlFetchAtomic(h1, (ptl_size_t)(uintptr_t)buf, h1, (ptl_size_t)(uintptr_t)buf,
                               lim.max_fetch_atomic_size + 8, me, 3, 0, 0, NULL, 0, PTL_SUM,
                               PTL_INT64_T), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSwap(h2, 0, h2, 8, 8, me, 3, 0, 0, NULL, 0, NULL, PTL_CSWAP, PTL_INT64_T),
                PTL_ARG_INVALID); /* CSWAP needs an operand */
    uint64_t operand = 0;
    XP_CHECK_EQ(PtlSwap(h2, 0, h2, 16, 16, me, 3, 0, 0, NULL, 0, &operand, PTL_CSWAP, PTL_INT64_T),
                PTL_ARG_INVALID); /* CSWAP works on one element */
    XP_CHECK_EQ(PtlSwap(h2, 0, h2, 8, 8, me, 3, 0, 0, NULL, 0, &operand, PTL_SUM, PTL_INT64_T),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlSwap(h2, 0, h2, 8, 8, me, 3, 0, 0, NULL, 0, &operand, PTL_MSWAP, PTL_DOUBLE),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlAtomicSync(), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(h2), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(h1), PTL_OK);
}

static void ct_calls(ptl_handle_ni_t ni, ptl_handle_eq_t eq)
{
    ptl_handle_ct_t ct, ct2;
    ptl_ct_event_t v, one = { 1, 0 }, fail = { 0, 1 }, both = { 1, 1 };
    unsigned which = 99;

    XP_CHECK_EQ(PtlCTAlloc(ni, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTAlloc(PTL_INVALID_HANDLE, &ct), PTL_ARG_INVALID);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct2) == PTL_OK);
    XP_CHECK_EQ(PtlCTGet(ct, &v), PTL_OK);
    XP_CHECK(v.success == 0 && v.failure == 0);
    XP_CHECK_EQ(PtlCTGet(ct, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(eq, &v), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTInc(ct, one), PTL_OK);
    XP_CHECK_EQ(PtlCTInc(ct, one), PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct, 2, &v), PTL_OK);
    XP_CHECK_EQ(v.success, 2);
    XP_CHECK_EQ(PtlCTWait(ct, 1, &v), PTL_OK); /* already past */
    XP_CHECK_EQ(PtlCTInc(ct, both), PTL_ARG_INVALID);
    /* a non-zero failure count ends the wait even below the threshold */
    XP_CHECK_EQ(PtlCTInc(ct, fail), PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct, 100, &v), PTL_OK);
    XP_CHECK_EQ(v.success, 2);
    XP_CHECK_EQ(v.failure, 1);
    ptl_ct_event_t set = { 5, 0 };
    XP_CHECK_EQ(PtlCTSet(ct, set), PTL_OK);
    XP_CHECK_EQ(PtlCTGet(ct, &v), PTL_OK);
    XP_CHECK(v.success == 5 && v.failure == 0);
    /* poll: timeout, then the second CT reached */
    ptl_handle_ct_t cts[2] = { ct, ct2 };
    ptl_size_t tests[2] = { 10, 1 };
    XP_CHECK_EQ(PtlCTPoll(cts, tests, 2, 20, &v, &which), PTL_CT_NONE_REACHED);
    XP_CHECK_EQ(PtlCTPoll(cts, tests, 2, 0, &v, &which), PTL_CT_NONE_REACHED);
    XP_CHECK_EQ(PtlCTInc(ct2, one), PTL_OK);
    XP_CHECK_EQ(PtlCTPoll(cts, tests, 2, 20, &v, &which), PTL_OK);
    XP_CHECK_EQ(which, 1);
    XP_CHECK_EQ(v.success, 1);
    XP_CHECK_EQ(PtlCTPoll(cts, tests, 0, 0, &v, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTPoll(NULL, tests, 2, 0, &v, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTPoll(cts, tests, 2, 0, NULL, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTGet(ct, &v), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTWait(ct, 1, &v), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTSet(ct, set), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTInc(ct, one), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTFree(eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTFree(ct2), PTL_OK);
}

/* EQ calls; overflow through loopback puts. */
static void eq_calls(ptl_handle_ni_t ni)
{
    ptl_handle_eq_t eq, eqs[1];
    ptl_event_t ev;
    unsigned which;
    ptl_pt_index_t pt;
    ptl_handle_le_t leh;
    ptl_handle_md_t mdh;
    ptl_handle_ct_t ct;
    char tbuf[64], sbuf[8] = "abcdefg";

    XP_CHECK_EQ(PtlEQAlloc(ni, 4, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQAlloc(ni, 0, &eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQAlloc(PTL_INVALID_HANDLE, 4, &eq), PTL_ARG_INVALID);
    XP_REQUIRE(PtlEQAlloc(ni, 4, &eq) == PTL_OK);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
    XP_CHECK_EQ(PtlEQGet(eq, NULL), PTL_ARG_INVALID);
    eqs[0] = eq;
    XP_CHECK_EQ(PtlEQPoll(eqs, 1, 10, &ev, &which), PTL_EQ_EMPTY);
    XP_CHECK_EQ(PtlEQPoll(eqs, 1, 0, &ev, &which), PTL_EQ_EMPTY);
    XP_CHECK_EQ(PtlEQPoll(eqs, 0, 0, &ev, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQPoll(NULL, 1, 0, &ev, &which), PTL_ARG_INVALID);

    /* 8 puts to ourselves into an EQ of 4: some events are lost and the
     * next event read after the loss says so (PTL_EQ_DROPPED) exactly once */
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PTL_PT_ANY, &pt) == PTL_OK);
    ptl_le_t le = { .start = tbuf, .length = sizeof(tbuf), .ct_handle = ct,
                    .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t md = { .start = sbuf, .length = sizeof(sbuf), .options = 0,
                    .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE };
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    ptl_ct_event_t cte;
    for (int i = 0; i < 8; i++) {
        XP_REQUIRE(PtlPut(mdh, 0, 8, PTL_NO_ACK_REQ, self_rank(), pt, 0, (ptl_size_t)i * 8,
                          (void *)(uintptr_t)i, (ptl_hdr_data_t)i) == PTL_OK);
        XP_REQUIRE(PtlCTWait(ct, (ptl_size_t)i + 1, &cte) == PTL_OK);
    }
    int got = 0, dropped = 0, rc;
    while ((rc = PtlEQGet(eq, &ev)) != PTL_EQ_EMPTY) {
        XP_CHECK(rc == PTL_OK || rc == PTL_EQ_DROPPED);
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        dropped += rc == PTL_EQ_DROPPED;
        got++;
        if (got > 8)
            break;
    }
    XP_CHECK(got >= 4 && got < 8);
    /* one more event after the loss: exactly one DROPPED in total */
    XP_REQUIRE(PtlPut(mdh, 0, 8, PTL_NO_ACK_REQ, self_rank(), pt, 0, 0, NULL, 99) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct, 9, &cte) == PTL_OK);
    rc = PtlEQWait(eq, &ev);
    XP_CHECK(rc == PTL_OK || rc == PTL_EQ_DROPPED);
    dropped += rc == PTL_EQ_DROPPED;
    XP_CHECK_EQ(ev.hdr_data, 99);
    XP_CHECK_EQ(dropped, 1);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
    XP_CHECK_EQ(memcmp(tbuf + 56, sbuf, 8), 0);

    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, pt), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(mdh), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQWait(eq, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQPoll(eqs, 1, 0, &ev, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQFree(PTL_EQ_NONE), PTL_ARG_INVALID);
}

static void handles_and_bundles(ptl_handle_ni_t ni)
{
    ptl_handle_ct_t a, b;
    XP_REQUIRE(PtlCTAlloc(ni, &a) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &b) == PTL_OK);
    XP_CHECK_EQ(PtlHandleIsEqual(a, a), 1);
    XP_CHECK_EQ(PtlHandleIsEqual(a, b), 0);
    XP_CHECK_EQ(PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE), 1);
    XP_CHECK_EQ(PtlHandleIsEqual(PTL_EQ_NONE, PTL_CT_NONE), 0);
    XP_CHECK_EQ(PtlCTFree(a), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(b), PTL_OK);

    XP_CHECK_EQ(PtlStartBundle(ni), PTL_OK);
    XP_CHECK_EQ(PtlStartBundle(ni), PTL_OK);
    XP_CHECK_EQ(PtlEndBundle(ni), PTL_OK);
    XP_CHECK_EQ(PtlEndBundle(ni), PTL_OK);
    XP_CHECK_EQ(PtlStartBundle(PTL_INVALID_HANDLE), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEndBundle(PTL_INVALID_HANDLE), PTL_ARG_INVALID);
}

typedef struct waiter {
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct;
    int eq_rc, ct_rc;
} waiter_t;

static void *eq_waiter(void *arg)
{
    waiter_t *w = arg;
    ptl_event_t ev;
    w->eq_rc = PtlEQWait(w->eq, &ev);
    return NULL;
}

static void *ct_waiter(void *arg)
{
    waiter_t *w = arg;
    ptl_ct_event_t v;
    w->ct_rc = PtlCTWait(w->ct, 1000, &v);
    return NULL;
}

/* Application threads inside xp_ptl_wait_until past their first look at
 * the condition, spinning or asleep: from then on a PtlAbort ends their wait. */
static int threads_waiting(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    return xp_ptl_spinning(st) +
           __atomic_load_n(&st->app_sleepers, __ATOMIC_ACQUIRE);
}

/* PtlAbort wakes every blocked waiter with PTL_ABORTED (a freed CT or EQ gives PTL_INTERRUPTED). */
static void abort_waiters(ptl_handle_ni_t ni)
{
    waiter_t w = { 0 };
    pthread_t t1, t2;
    XP_REQUIRE(PtlEQAlloc(ni, 4, &w.eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &w.ct) == PTL_OK);
    w.eq_rc = w.ct_rc = -1;
    XP_REQUIRE(pthread_create(&t1, NULL, eq_waiter, &w) == 0);
    XP_REQUIRE(pthread_create(&t2, NULL, ct_waiter, &w) == 0);
    /* Abort once both threads are blocked, not after a sleep: PtlAbort ends
     * the waits in progress, and a thread that reached PtlEQWait after it
     * (a loaded machine) waited forever. */
    uint64_t deadline = xp_time_ns() + 20000000000ull;
    while (threads_waiting() < 2 && xp_time_ns() < deadline)
        nanosleep(&(struct timespec){0, 100000}, NULL);
    if (threads_waiting() < 2)
        fprintf(stderr, "abort_waiters: after 20 s, %d of 2 threads wait\n", threads_waiting());
    XP_REQUIRE(threads_waiting() >= 2);
    XP_CHECK_EQ(PtlAbort(), PTL_OK);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    XP_CHECK_EQ(w.eq_rc, PTL_ABORTED);
    XP_CHECK_EQ(w.ct_rc, PTL_ABORTED);
    XP_CHECK_EQ(PtlEQFree(w.eq), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(w.ct), PTL_OK);
}

/* ME calls and triggered operations with bad arguments: PTL_ARG_INVALID,
 * nothing posted (a threshold of 1000 is never reached here). ni is
 * non-matching with its CT ct and MD md; mni is matching, pt allocated. */
static void me_trig_args(ptl_handle_ni_t ni, ptl_handle_ni_t mni, ptl_pt_index_t pt,
                         ptl_handle_ct_t ct, ptl_handle_md_t md)
{
    static char buf[64];
    const ptl_handle_ct_t bad = (ptl_handle_ct_t)0x12345678;
    ptl_process_t p = self_rank();
    ptl_me_t me = { .start = buf, .length = sizeof(buf), .ct_handle = PTL_CT_NONE,
                    .options = PTL_ME_OP_PUT };
    ptl_le_t le = { .start = buf, .length = sizeof(buf), .ct_handle = PTL_CT_NONE };
    ptl_ct_event_t one = { 1, 0 }, both = { 1, 1 };
    ptl_handle_any_t h;
    uint64_t operand = 0;

    me.match_id.rank = PTL_RANK_ANY;
    XP_CHECK_EQ(PtlMEAppend(ni, 0, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(mni, pt, NULL, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(mni, pt, &me, PTL_PRIORITY_LIST, NULL, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(mni, pt, &me, (ptl_list_t)7, NULL, &h), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(mni, 100000, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
    me.ct_handle = bad;
    XP_CHECK_EQ(PtlMEAppend(mni, pt, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
    me.ct_handle = ct; /* another NI's CT */
    XP_CHECK_EQ(PtlMEAppend(mni, pt, &me, PTL_PRIORITY_LIST, NULL, &h), PTL_ARG_INVALID);
    me.ct_handle = PTL_CT_NONE;
    XP_CHECK_EQ(PtlMEUnlink(bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEUnlink(md), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMESearch(mni, pt, &me, (ptl_search_op_t)9, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMESearch(mni, pt, NULL, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMESearch(ni, 0, &me, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTCancelTriggered(bad), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTCancelTriggered(md), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredCTInc(bad, one, ct, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredCTInc(ct, one, bad, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredCTInc(ct, both, ct, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredCTSet(bad, one, ct, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(bad, 0, 8, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 8, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, bad, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 8, (ptl_ack_req_t)99, p, 0, 0, 0, NULL, 0, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredGet(md, 0, 8, p, 0, 0, 0, NULL, bad, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(md, 0, 8, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, (ptl_op_t)99,
                                   PTL_UINT64_T, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredAtomic(md, 0, 7, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, PTL_SUM,
                                   PTL_UINT64_T, ct, 1000),
                PTL_ARG_INVALID);
    /* PTL_SWAP is PtlSwap's, not PtlFetchAtomic's */
    XP_CHECK_EQ(PtlTriggeredFetchAtomic(md, 0, md, 0, 8, p, 0, 0, 0, NULL, 0, PTL_SWAP,
                                        PTL_UINT64_T, ct, 1000),
                PTL_ARG_INVALID);
    /* CSWAP without its operand, and on more than one element */
    XP_CHECK_EQ(PtlTriggeredSwap(md, 0, md, 0, 8, p, 0, 0, 0, NULL, 0, NULL, PTL_CSWAP,
                                 PTL_UINT64_T, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredSwap(md, 0, md, 0, 16, p, 0, 0, 0, NULL, 0, &operand, PTL_CSWAP,
                                 PTL_UINT64_T, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredLEAppend(ni, 0, NULL, PTL_PRIORITY_LIST, NULL, &h, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredLEAppend(ni, 0, &le, PTL_PRIORITY_LIST, NULL, &h, bad, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredLEAppend(ni, 0, &le, PTL_PRIORITY_LIST, NULL, NULL, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredMEAppend(ni, 0, &me, PTL_PRIORITY_LIST, NULL, &h, ct, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredLEUnlink(bad, ct, 1000), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredMEUnlink(md, ct, 1000), PTL_ARG_INVALID);
    /* A CT freed with an operation waiting on it takes no more. */
    ptl_handle_ct_t gone;
    XP_REQUIRE(PtlCTAlloc(ni, &gone) == PTL_OK);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 8, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, gone, 1000),
                PTL_OK);
    XP_CHECK_EQ(PtlCTFree(gone), PTL_OK);
    XP_CHECK_EQ(PtlTriggeredPut(md, 0, 8, PTL_NO_ACK_REQ, p, 0, 0, 0, NULL, 0, gone, 1000),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlCTCancelTriggered(gone), PTL_ARG_INVALID);
}

int main(void)
{
    ptl_handle_ni_t ni, mni, phys;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct;
    ptl_ni_limits_t want, lim;

    before_init();
    init_refcount();
    ni_init_fini();

    XP_REQUIRE(PtlInit() == PTL_OK);
    memset(&want, 0, sizeof(want));
    want.max_entries = 3;
    want.max_mds = 2;
    want.max_list_size = 2;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, NL, PTL_PID_ANY, &want, &lim, &ni) == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, ML, PTL_PID_ANY, NULL, NULL, &mni) == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, NP, PTL_PID_ANY, NULL, NULL, &phys) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 16, &eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    ptl_handle_ni_t nh;
    XP_CHECK_EQ(PtlNIHandle(eq, &nh), PTL_OK);
    XP_CHECK_EQ(nh, ni);
    XP_CHECK_EQ(PtlNIHandle(ct, &nh), PTL_OK);
    XP_CHECK_EQ(nh, ni);

    identity(ni, phys);
    pt_alloc(ni, eq, lim.max_pt_index);
    le_append(ni, mni, ct, eq);
    md_bind(ni, ct, eq);
    {
        ptl_md_t d = { .start = NULL, .length = 64, .eq_handle = PTL_EQ_NONE,
                       .ct_handle = PTL_CT_NONE };
        static char mbuf[64];
        ptl_handle_md_t dh;
        ptl_pt_index_t mpt;
        d.start = mbuf;
        XP_REQUIRE(PtlMDBind(ni, &d, &dh) == PTL_OK);
        XP_REQUIRE(PtlPTAlloc(mni, 0, PTL_EQ_NONE, PTL_PT_ANY, &mpt) == PTL_OK);
        me_trig_args(ni, mni, mpt, ct, dh);
        XP_CHECK_EQ(PtlPTFree(mni, mpt), PTL_OK);
        XP_CHECK_EQ(PtlMDRelease(dh), PTL_OK);
    }
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    ct_calls(ni, eq);
    eq_calls(ni);
    handles_and_bundles(ni);
    abort_waiters(ni);

    /* PtlNIFini frees what the application left bound */
    ptl_md_t md = { .start = NULL, .length = 0, .options = 0, .eq_handle = eq,
                    .ct_handle = PTL_CT_NONE };
    ptl_handle_md_t mdh;
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(mdh), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlNIFini(mni), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(phys), PTL_OK);
    PtlFini();
    XP_CHECK_EQ(PtlAbort(), PTL_NO_INIT);
    return xp_test_result();
}
