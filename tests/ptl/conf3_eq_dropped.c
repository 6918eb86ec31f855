/*
 * conf3_eq_dropped - an event queue that overflowed says so on the next
 * event taken from it. PtlEQGet / PtlEQWait / PtlEQPoll return PTL_EQ_DROPPED
 * (with a valid event) for the first event retrieved after events were lost,
 * even when no new event arrives once the application starts draining the
 * full queue; the following events return PTL_OK.
 *
 * One process putting to itself: an EQ of 4 entries on the MD, eight puts
 * with an ACK each (16 initiator events), nothing consumed meanwhile.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"

#define PT 3
#define EQ_SIZE 4
#define NPUT 8

int main(void)
{
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_handle_le_t le_h;
    ptl_process_t self;
    ptl_pt_index_t pt;
    ptl_ct_event_t cte;
    ptl_event_t ev;
    ptl_md_t mdd;
    ptl_le_t le;
    static unsigned char sbuf[64], tbuf[64];

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    memset(&le, 0, sizeof(le));
    le.start = tbuf;
    le.length = sizeof(tbuf);
    le.ct_handle = PTL_CT_NONE;
    le.uid = PTL_UID_ANY;
    le.options = PTL_LE_OP_PUT;
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &le_h) == PTL_OK);

    XP_REQUIRE(PtlEQAlloc(ni, EQ_SIZE, &eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    memset(&mdd, 0, sizeof(mdd));
    mdd.start = sbuf;
    mdd.length = sizeof(sbuf);
    mdd.options = PTL_MD_EVENT_CT_ACK;
    mdd.eq_handle = eq;
    mdd.ct_handle = ct;
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    for (int i = 0; i < NPUT; i++)
        XP_REQUIRE(PtlPut(md, 0, 8, PTL_ACK_REQ, self, PT, 0, 0, NULL, 0) == PTL_OK);
    /* every ACK arrived, so every SEND and ACK event was produced (or lost) */
    XP_REQUIRE(PtlCTWait(ct, NPUT, &cte) == PTL_OK);
    XP_CHECK_EQ(cte.failure, 0);

    /* the queue holds EQ_SIZE events; the other 2*NPUT - EQ_SIZE were dropped */
    int rc = PtlEQGet(eq, &ev);
    XP_CHECK_EQ(rc, PTL_EQ_DROPPED);
    int got = (rc == PTL_OK || rc == PTL_EQ_DROPPED);
    while ((rc = PtlEQGet(eq, &ev)) != PTL_EQ_EMPTY) {
        XP_CHECK_EQ(rc, PTL_OK); /* reported once */
        got++;
    }
    XP_CHECK_EQ(got, EQ_SIZE);

    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(le_h), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
