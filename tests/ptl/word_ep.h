/*
 * word_ep.h - a rank's end of a word exchange for multi-process tests: a
 * non-matching logical NI, an LE over `in` that counts each put on `ct`,
 * and an MD over `out` to put from (8-byte puts, PTL_NO_ACK_REQ).
 */
#ifndef XP_TEST_WORD_EP_H
#define XP_TEST_WORD_EP_H

#include <portals4.h>
#include <stdint.h>

#include "xp_test.h"

typedef struct word_ep {
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct;
    ptl_handle_le_t le;
    ptl_handle_md_t md;
    ptl_pt_index_t pt;
    uint64_t in, out;
} word_ep_t;

/* PtlInit and the objects above on portal index pt. */
static inline void word_ep_open(word_ep_t *e, ptl_pt_index_t pt)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &e->ni) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(e->ni, &e->ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(e->ni, 0, PTL_EQ_NONE, pt, &e->pt) == PTL_OK);
    ptl_le_t le = {.start = &e->in, .length = sizeof e->in, .ct_handle = e->ct,
                   .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM};
    XP_REQUIRE(PtlLEAppend(e->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &e->le) == PTL_OK);
    ptl_md_t md = {.start = &e->out, .length = sizeof e->out, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = PTL_CT_NONE};
    XP_REQUIRE(PtlMDBind(e->ni, &md, &e->md) == PTL_OK);
}

/* Put `value` (through out) into rank `to`'s word. */
static inline void word_ep_put(word_ep_t *e, int to, uint64_t value)
{
    ptl_process_t peer = {.rank = (ptl_rank_t)to};
    e->out = value;
    XP_REQUIRE(PtlPut(e->md, 0, sizeof e->out, PTL_NO_ACK_REQ, peer, e->pt, 0, 0, NULL, 0) ==
               PTL_OK);
}

/* Wait until `count` puts have arrived, none failed. */
static inline void word_ep_wait(word_ep_t *e, uint64_t count)
{
    ptl_ct_event_t c;
    XP_REQUIRE(PtlCTWait(e->ct, count, &c) == PTL_OK && c.failure == 0);
}

/* Everything word_ep_open made, then PtlFini. */
static inline void word_ep_close(word_ep_t *e)
{
    XP_REQUIRE(PtlMDRelease(e->md) == PTL_OK);
    XP_REQUIRE(PtlLEUnlink(e->le) == PTL_OK);
    XP_REQUIRE(PtlPTFree(e->ni, e->pt) == PTL_OK);
    XP_REQUIRE(PtlCTFree(e->ct) == PTL_OK);
    XP_REQUIRE(PtlNIFini(e->ni) == PTL_OK);
    PtlFini();
}

#endif
