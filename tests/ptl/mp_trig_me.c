/*
 * mp_trig_me - triggered list operations across processes (np 2): at rank 1
 * a remote put's arrival, counted on a "doorbell" entry's CT, releases a
 * PtlTriggeredMEAppend; the payload put that follows matches the new entry,
 * and its own arrival releases a PtlTriggeredMEUnlink of that entry, so a
 * third put is dropped. Rank 1 makes no Portals call between posting and
 * waiting for the payload. Then the same with an overflow entry: the payload
 * arrives first (unexpected), and the doorbell's append consumes it.
 *
 * Rank 0 sends each put only after the previous one's ACK: rank 1 handles
 * packets one at a time and releases triggered operations before it takes
 * the next one, so the order is deterministic.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 9
#define BELL 0x1
#define DATA 0x2
#define BELL2 0x3
#define DATA2 0x4

static ptl_handle_md_t md;
static ptl_handle_eq_t ieq;

static ptl_me_t me_init(void *start, ptl_size_t len, ptl_match_bits_t bits, ptl_handle_ct_t ct,
                        unsigned opts)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = start;
    me.length = len;
    me.ct_handle = ct;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | opts;
    me.match_id.rank = PTL_RANK_ANY;
    me.match_bits = bits;
    return me;
}

/* PtlCTWait with a time limit: a broken engine fails the test, not hangs it. */
static int ct_wait(ptl_handle_ct_t ct, ptl_size_t test, ptl_ct_event_t *ev)
{
    unsigned int which;
    return PtlCTPoll(&ct, &test, 1, 10000, ev, &which);
}

/* Put 8 bytes to rank 1 and return the ACK's ni_fail_type. */
static int put_acked(ptl_match_bits_t bits)
{
    ptl_event_t ev;
    XP_REQUIRE(PtlPut(md, 0, 8, PTL_ACK_REQ, (ptl_process_t){.rank = 1}, PT, bits, 0, NULL, 0) ==
               PTL_OK);
    do {
        unsigned int which;
        XP_REQUIRE(PtlEQPoll(&ieq, 1, 10000, &ev, &which) == PTL_OK);
    } while (ev.type != PTL_EVENT_ACK);
    return ev.ni_fail_type;
}

static void initiator(ptl_handle_ni_t ni)
{
    uint64_t v = 0x5eed;
    ptl_md_t mdd = {.start = &v, .length = sizeof v, .eq_handle = ieq, .ct_handle = PTL_CT_NONE};

    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(put_acked(DATA), PTL_NI_DROPPED); /* not appended yet */
    XP_CHECK_EQ(put_acked(BELL), PTL_NI_OK);      /* releases the append */
    v = 0x1234;
    XP_CHECK_EQ(put_acked(DATA), PTL_NI_OK);      /* lands; releases the unlink */
    XP_CHECK_EQ(put_acked(DATA), PTL_NI_DROPPED);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* part 2 set up at rank 1 */
    /* Part 2: payload first (overflow), then the doorbell. */
    v = 0x9876;
    XP_CHECK_EQ(put_acked(DATA2), PTL_NI_OK);
    XP_CHECK_EQ(put_acked(BELL2), PTL_NI_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void target(ptl_handle_ni_t ni, ptl_handle_eq_t teq)
{
    uint64_t bell = 0, data = 0, ov[4] = {0};
    ptl_handle_ct_t c_bell, c_data;
    ptl_handle_me_t hb, hd, hov;
    ptl_ct_event_t cte;
    ptl_event_t ev;

    XP_REQUIRE(PtlCTAlloc(ni, &c_bell) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &c_data) == PTL_OK);
    ptl_me_t me = me_init(&bell, sizeof bell, BELL, c_bell,
                          PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE);
    XP_REQUIRE(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, NULL, &hb) == PTL_OK);
    me = me_init(&data, sizeof data, DATA, c_data, PTL_ME_EVENT_CT_COMM);
    XP_CHECK_EQ(PtlTriggeredMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, &data, &hd, c_bell, 1),
                PTL_OK);
    XP_CHECK_EQ(PtlTriggeredMEUnlink(hd, c_data, 1), PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(ct_wait(c_data, 1, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 1);
    XP_CHECK_EQ(data, 0x1234);
    XP_REQUIRE(xp_barrier() == XP_OK); /* the initiator saw the third put dropped */
    XP_CHECK_EQ(PtlEQGet(teq, &ev), PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == &data);
    XP_CHECK_EQ(PtlEQGet(teq, &ev), PTL_EQ_EMPTY);
    XP_CHECK_EQ(PtlMEUnlink(hd), PTL_ARG_INVALID);

    /* Part 2: the doorbell's CT reaches 2 with the second bell. */
    me = me_init(ov, sizeof ov, DATA2, PTL_CT_NONE,
                 PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE);
    XP_REQUIRE(PtlMEAppend(ni, PT, &me, PTL_OVERFLOW_LIST, NULL, &hov) == PTL_OK);
    me = me_init(&bell, sizeof bell, BELL2, c_bell,
                 PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE);
    XP_REQUIRE(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, NULL, &hb) == PTL_OK);
    data = 0;
    me = me_init(&data, sizeof data, DATA2, c_data,
                 PTL_ME_EVENT_CT_OVERFLOW | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE);
    XP_CHECK_EQ(PtlTriggeredMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, &data, &hd, c_bell, 2),
                PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(ct_wait(c_data, 2, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 2);
    XP_CHECK_EQ(PtlEQGet(teq, &ev), PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK(ev.user_ptr == &data);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK(ev.start == ov); /* the payload stays in the overflow buffer */
    XP_CHECK_EQ(ov[0], 0x9876);
    XP_CHECK_EQ(PtlMEUnlink(hd), PTL_ARG_INVALID); /* use-once, consumed */
    XP_CHECK_EQ(PtlMEUnlink(hov), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(c_bell), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(c_data), PTL_OK);
}

int main(void)
{
    ptl_handle_ni_t ni;
    ptl_handle_eq_t teq;
    ptl_process_t self;
    ptl_pt_index_t pti;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &self) == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    XP_REQUIRE(PtlEQAlloc(ni, 64, &teq) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &ieq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, teq, PT, &pti) == PTL_OK);
    if (self.rank == 0)
        initiator(ni);
    else
        target(ni, teq);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
