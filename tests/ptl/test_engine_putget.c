/*
 * test_engine_putget - put and get of 0 B .. 16 MiB between neighbours on a
 * non-matching logical NI, with data verification, acks counted on a CT and
 * the full events (SEND, ACK, REPLY at the initiator; PUT, GET at the target).
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 5
#define MAXSZ (16u << 20)

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)(i * 131u + seed * 7u + (i >> 9));
}

static int wait_event(ptl_handle_eq_t eq, ptl_event_t *ev)
{
    return PtlEQWait(eq, ev);
}

int main(void)
{
    static const size_t sizes[] = { 0, 1, 7, 8, 63, 64, 255, 1000, 4095, 4096, 8192, 65536,
                                    100000, 1u << 20, 4u << 20, MAXSZ };
    ptl_handle_ni_t ni;
    ptl_ni_limits_t lim;
    ptl_handle_eq_t eq_tgt, eq_md;
    ptl_handle_ct_t ct_md, ct_le;
    ptl_handle_md_t md;
    ptl_handle_le_t leh;
    ptl_pt_index_t pti;
    ptl_process_t me, right, left;
    ptl_event_t ev;
    ptl_ct_event_t cte;
    unsigned char *tbuf = malloc(MAXSZ), *sbuf = malloc(MAXSZ);

    XP_REQUIRE(tbuf && sbuf);
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &me) == PTL_OK);
    int n = xp_size();
    XP_CHECK_EQ(me.rank, xp_rank());
    right.rank = (me.rank + 1) % (ptl_rank_t)n;
    left.rank = (me.rank + (ptl_rank_t)n - 1) % (ptl_rank_t)n;

    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq_tgt) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq_md) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_md) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_le) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq_tgt, PT, &pti) == PTL_OK);
    XP_CHECK_EQ(pti, PT);

    ptl_le_t le = { .start = tbuf, .length = MAXSZ, .ct_handle = ct_le, .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM |
                               PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, (void *)0x1234, &leh) == PTL_OK);
    ptl_md_t mdd = { .start = sbuf, .length = MAXSZ, .eq_handle = eq_md, .ct_handle = ct_md,
                     .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    ptl_size_t acks = 0, target_count = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t sz = sizes[k];
        for (size_t i = 0; i < sz; i++)
            sbuf[i] = pattern(i, (unsigned)(me.rank * 100 + k));
        /* put at offset 3 so offsets are exercised */
        size_t off = sz == MAXSZ ? 0 : 3;
        XP_REQUIRE(PtlPut(md, 0, sz, PTL_ACK_REQ, right, PT, 0, off, (void *)k, 0xabc0 + k) ==
                   PTL_OK);
        XP_REQUIRE(PtlCTWait(ct_md, ++acks, &cte) == PTL_OK);
        XP_CHECK_EQ(cte.failure, 0);
        /* initiator events: SEND then ACK */
        XP_REQUIRE(wait_event(eq_md, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        XP_CHECK_EQ((size_t)ev.user_ptr, k);
        XP_REQUIRE(wait_event(eq_md, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
        XP_CHECK_EQ(ev.mlength, sz);
        XP_CHECK_EQ(ev.remote_offset, off);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        /* target side: the PUT event from the left neighbour */
        XP_REQUIRE(PtlCTWait(ct_le, ++target_count, &cte) == PTL_OK);
        XP_REQUIRE(wait_event(eq_tgt, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        XP_CHECK_EQ(ev.rlength, sz);
        XP_CHECK_EQ(ev.mlength, sz);
        XP_CHECK_EQ(ev.remote_offset, off);
        XP_CHECK_EQ(ev.hdr_data, 0xabc0 + k);
        XP_CHECK_EQ(ev.initiator.rank, left.rank);
        XP_CHECK_EQ((uintptr_t)ev.user_ptr, 0x1234);
        XP_CHECK(ev.start == tbuf + off);
        XP_CHECK_EQ(ev.pt_index, PT);
        XP_CHECK_EQ(ev.ptl_list, PTL_PRIORITY_LIST);
        size_t bad = 0;
        for (size_t i = 0; i < sz; i++)
            if (tbuf[off + i] != pattern(i, (unsigned)(left.rank * 100 + k)))
                bad++;
        XP_CHECK_EQ(bad, 0);
        XP_REQUIRE(xp_barrier() == XP_OK);

        /* get it back from the right neighbour (which holds our data) */
        memset(sbuf, 0, sz);
        XP_REQUIRE(PtlGet(md, 0, sz, right, PT, 0, off, (void *)(k + 1000)) == PTL_OK);
        XP_REQUIRE(PtlCTWait(ct_md, ++acks, &cte) == PTL_OK);
        XP_REQUIRE(wait_event(eq_md, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
        XP_CHECK_EQ(ev.mlength, sz);
        XP_CHECK_EQ((size_t)ev.user_ptr, k + 1000);
        bad = 0;
        for (size_t i = 0; i < sz; i++)
            if (sbuf[i] != pattern(i, (unsigned)(me.rank * 100 + k)))
                bad++;
        XP_CHECK_EQ(bad, 0);
        XP_REQUIRE(PtlCTWait(ct_le, ++target_count, &cte) == PTL_OK);
        XP_REQUIRE(wait_event(eq_tgt, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_GET);
        XP_CHECK_EQ(ev.mlength, sz);
        XP_REQUIRE(xp_barrier() == XP_OK);
    }
    /* truncation: a put past the end of the LE delivers what fits */
    XP_REQUIRE(PtlPut(md, 0, 100, PTL_ACK_REQ, right, PT, 0, MAXSZ - 10, NULL, 0) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct_md, ++acks, &cte) == PTL_OK);
    XP_REQUIRE(wait_event(eq_md, &ev) == PTL_OK); /* SEND */
    XP_REQUIRE(wait_event(eq_md, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.mlength, 10);
    /* serve the left neighbour's put too (XP_PROGRESS=inline needs us in the library) */
    XP_REQUIRE(PtlCTWait(ct_le, ++target_count, &cte) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    free(tbuf);
    free(sbuf);
    return xp_test_result();
}
