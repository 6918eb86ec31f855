/*
 * test_reply_small - small replies land exactly where they belong: gets of
 * 1..40 bytes and 8-byte fetch-adds from this process to itself, into a
 * plain MD at offsets 0..3 (the initiator copies small reply data with
 * fixed-size copies), every byte of the MD checked (the reply's bytes
 * and the untouched ones around them); an MD counting reply bytes.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"

#define PT 4
#define SRC_LEN 64
#define DST_LEN 64

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 37u + 11u);
}

int main(void)
{
    static unsigned char src[SRC_LEN], dst[DST_LEN];
    ptl_handle_ni_t ni;
    ptl_ni_limits_t lim;
    ptl_handle_ct_t ct_md;
    ptl_handle_md_t md;
    ptl_handle_le_t leh;
    ptl_pt_index_t pti;
    ptl_process_t me;
    ptl_ct_event_t cte;
    uint64_t replies = 0;

    for (size_t i = 0; i < SRC_LEN; i++)
        src[i] = pattern(i);
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &me) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_md) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pti) == PTL_OK);
    ptl_le_t le = { .start = src, .length = SRC_LEN, .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_OP_GET };
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t mdd = { .start = dst, .length = DST_LEN, .options = PTL_MD_EVENT_CT_REPLY,
                     .eq_handle = PTL_EQ_NONE, .ct_handle = ct_md };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);

    for (size_t len = 1; len <= 40; len++) {
        for (size_t off = 0; off < 4; off++) {
            memset(dst, 0xee, sizeof dst);
            XP_REQUIRE(PtlGet(md, off, len, me, PT, 0, 3, NULL) == PTL_OK);
            XP_REQUIRE(PtlCTWait(ct_md, ++replies, &cte) == PTL_OK);
            XP_CHECK_EQ(cte.failure, 0);
            size_t bad = 0;
            for (size_t i = 0; i < DST_LEN; i++) {
                unsigned char want = i >= off && i < off + len ? pattern(3 + i - off) : 0xee;
                bad += dst[i] != want;
            }
            XP_CHECK_EQ(bad, 0);
        }
    }
    /* Fetch-add: the old value comes back into dst at the offset. */
    uint64_t one = 1, before, after;
    ptl_md_t opd = { .start = &one, .length = sizeof one, .eq_handle = PTL_EQ_NONE,
                     .ct_handle = PTL_CT_NONE };
    ptl_handle_md_t opmd;
    XP_REQUIRE(PtlMDBind(ni, &opd, &opmd) == PTL_OK);
    for (size_t off = 0; off < 4; off++) {
        memset(dst, 0xee, sizeof dst);
        memcpy(&before, src + 16, sizeof before);
        XP_REQUIRE(PtlFetchAtomic(md, off, opmd, 0, sizeof(uint64_t), me, PT, 0, 16, NULL, 0,
                                  PTL_SUM, PTL_UINT64_T) == PTL_OK);
        XP_REQUIRE(PtlCTWait(ct_md, ++replies, &cte) == PTL_OK);
        XP_CHECK_EQ(cte.failure, 0);
        uint64_t got;
        memcpy(&got, dst + off, sizeof got);
        XP_CHECK_EQ(got, before);
        memcpy(&after, src + 16, sizeof after);
        XP_CHECK_EQ(after, before + 1);
        size_t bad = 0;
        for (size_t i = 0; i < DST_LEN; i++)
            bad += (i < off || i >= off + 8) && dst[i] != 0xee;
        XP_CHECK_EQ(bad, 0);
    }
    /* PTL_MD_EVENT_CT_BYTES: a reply counts its bytes (0..40, both copy
     * forms). */
    ptl_handle_ct_t ct_bytes;
    ptl_handle_md_t bmd;
    XP_REQUIRE(PtlCTAlloc(ni, &ct_bytes) == PTL_OK);
    ptl_md_t bd = { .start = dst, .length = DST_LEN,
                    .options = PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_BYTES,
                    .eq_handle = PTL_EQ_NONE, .ct_handle = ct_bytes };
    XP_REQUIRE(PtlMDBind(ni, &bd, &bmd) == PTL_OK);
    uint64_t bytes = 0;
    for (size_t len = 0; len <= 40; len += 4) {
        XP_REQUIRE(PtlGet(bmd, 0, len, me, PT, 0, 0, NULL) == PTL_OK);
        bytes += len;
    }
    unsigned int which;
    XP_CHECK_EQ(PtlCTPoll(&ct_bytes, &bytes, 1, 5000, &cte, &which), PTL_OK);
    XP_CHECK_EQ(cte.success, bytes);
    XP_CHECK_EQ(cte.failure, 0);
    XP_CHECK_EQ(memcmp(dst, src, 40), 0);
    XP_CHECK_EQ(PtlMDRelease(bmd), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_bytes), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(opmd), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct_md), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
