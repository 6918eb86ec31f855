/*
 * test_put_paths - PtlPut's compact path and everything it hands to the
 * general one, from this process to itself: lengths around the compact
 * form's limit (255), every ack_req, an MD that counts sends (with and
 * without PTL_MD_EVENT_CT_BYTES), an MD with an EQ (SEND event fields), an
 * iovec MD, the whole-address-space MD (start NULL), a logical map set with
 * PtlSetMap (two logical ranks naming this process), and bad arguments:
 * ack_req out of range, the reserved handle index, a stale handle, ranges
 * that wrap, a rank outside the map. Every delivered byte is checked.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"

#define PT 5
#define LEN 600

static unsigned char src[LEN], dst[LEN];
static ptl_handle_ni_t ni;
static ptl_handle_ct_t ct_le;
static uint64_t arrived;

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 29u + 7u);
}

/* Wait for the next put to land and check dst[roff, +len) == src[soff, +len)
 * and that nothing else in dst changed. */
static void landed(size_t soff, size_t roff, size_t len)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(ct_le, ++arrived, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
    size_t bad = 0;
    for (size_t i = 0; i < LEN; i++) {
        unsigned char want = i >= roff && i < roff + len ? src[soff + i - roff] : 0xee;
        bad += dst[i] != want;
    }
    XP_CHECK_EQ(bad, 0);
    memset(dst, 0xee, sizeof dst);
}

static ptl_handle_md_t bind(void *start, ptl_size_t length, unsigned options, ptl_handle_eq_t eq,
                            ptl_handle_ct_t ct)
{
    ptl_md_t d = { .start = start, .length = length, .options = options, .eq_handle = eq,
                   .ct_handle = ct };
    ptl_handle_md_t h;
    XP_REQUIRE(PtlMDBind(ni, &d, &h) == PTL_OK);
    return h;
}

static void lengths(ptl_handle_md_t md, ptl_process_t me)
{
    static const size_t lens[] = { 0, 1, 7, 8, 9, 40, 64, 65, 200, 254, 255, 256, 257, 512 };
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        for (size_t off = 0; off < 3; off++) {
            XP_REQUIRE(PtlPut(md, off, lens[k], PTL_NO_ACK_REQ, me, PT, 0, off + 1, NULL, 0) ==
                       PTL_OK);
            landed(off, off + 1, lens[k]);
        }
    }
}

static void acks(ptl_handle_md_t md, ptl_handle_ct_t ct_md, ptl_process_t me)
{
    static const ptl_ack_req_t reqs[] = { PTL_NO_ACK_REQ, PTL_ACK_REQ, PTL_CT_ACK_REQ,
                                          PTL_OC_ACK_REQ };
    uint64_t acked = 0;
    ptl_ct_event_t ev;
    for (size_t k = 0; k < 4; k++) {
        XP_REQUIRE(PtlPut(md, 4, 8, reqs[k], me, PT, 0, 16, NULL, 0) == PTL_OK);
        landed(4, 16, 8);
        if (reqs[k] != PTL_NO_ACK_REQ) {
            XP_REQUIRE(PtlCTWait(ct_md, ++acked, &ev) == PTL_OK);
            XP_CHECK_EQ(ev.failure, 0);
        }
    }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

int main(void)
{
    ptl_ni_limits_t lim;
    ptl_process_t me;
    ptl_handle_le_t leh;
    ptl_pt_index_t pti;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct_md;
    ptl_ct_event_t cev;

    for (size_t i = 0; i < LEN; i++)
        src[i] = pattern(i);
    memset(dst, 0xee, sizeof dst);
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &me) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_le) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_md) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pti) == PTL_OK);
    ptl_le_t le = { .start = dst, .length = LEN, .ct_handle = ct_le, .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM };
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);

    /* A plain MD: compact up to 255 bytes, the full header above. */
    ptl_handle_md_t plain = bind(src, LEN, 0, PTL_EQ_NONE, PTL_CT_NONE);
    lengths(plain, me);

    /* Every ack_req, counted on the MD. */
    acks(bind(src, LEN, PTL_MD_EVENT_CT_ACK, PTL_EQ_NONE, ct_md), ct_md, me);

    /* Counting sends: 1 per put, or the bytes. */
    ptl_handle_ct_t ct_send;
    XP_REQUIRE(PtlCTAlloc(ni, &ct_send) == PTL_OK);
    ptl_handle_md_t cs = bind(src, LEN, PTL_MD_EVENT_CT_SEND, PTL_EQ_NONE, ct_send);
    XP_REQUIRE(PtlPut(cs, 0, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0) == PTL_OK);
    landed(0, 0, 8);
    XP_REQUIRE(PtlPut(cs, 0, 300, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0) == PTL_OK);
    landed(0, 0, 300);
    XP_REQUIRE(PtlCTGet(ct_send, &cev) == PTL_OK);
    XP_CHECK_EQ(cev.success, 2);
    XP_CHECK_EQ(PtlMDRelease(cs), PTL_OK);
    XP_REQUIRE(PtlCTSet(ct_send, (ptl_ct_event_t){ 0, 0 }) == PTL_OK);
    cs = bind(src, LEN, PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_BYTES, PTL_EQ_NONE, ct_send);
    XP_REQUIRE(PtlPut(cs, 2, 13, PTL_CT_ACK_REQ, me, PT, 0, 5, NULL, 0) == PTL_OK);
    landed(2, 5, 13);
    XP_REQUIRE(PtlCTGet(ct_send, &cev) == PTL_OK);
    XP_CHECK_EQ(cev.success, 13);

    /* An MD with an EQ: the SEND event names the put. */
    ptl_handle_md_t with_eq = bind(src, LEN, 0, eq, PTL_CT_NONE);
    XP_REQUIRE(PtlPut(with_eq, 3, 8, PTL_NO_ACK_REQ, me, PT, 0, 9, (void *)0x1234, 0) == PTL_OK);
    landed(3, 9, 8);
    ptl_event_t ev;
    XP_REQUIRE(PtlEQWait(eq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0x1234);
    XP_CHECK(ev.start == src + 3);

    /* An iovec MD (gathered) and the whole address space (start NULL). */
    ptl_iovec_t iov[2] = { { src + 100, 5 }, { src + 10, 20 } };
    ptl_handle_md_t vec = bind(iov, 2, PTL_IOVEC, PTL_EQ_NONE, PTL_CT_NONE);
    XP_REQUIRE(PtlPut(vec, 3, 4, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0) == PTL_OK);
    {
        ptl_ct_event_t e2;
        XP_REQUIRE(PtlCTWait(ct_le, ++arrived, &e2) == PTL_OK);
        unsigned char want[4] = { src[103], src[104], src[10], src[11] };
        XP_CHECK(memcmp(dst, want, 4) == 0);
        memset(dst, 0xee, sizeof dst);
    }
    ptl_handle_md_t all = bind(NULL, PTL_SIZE_MAX, 0, PTL_EQ_NONE, PTL_CT_NONE);
    XP_REQUIRE(PtlPut(all, (ptl_size_t)(uintptr_t)(src + 20), 8, PTL_NO_ACK_REQ, me, PT, 0, 30,
                      NULL, 0) == PTL_OK);
    landed(20, 30, 8);

    /* Bad arguments: errors, nothing sent. */
    XP_CHECK_EQ(PtlPut(plain, 0, 8, (ptl_ack_req_t)4, me, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain, 0, 8, (ptl_ack_req_t)-1, me, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain | 0x1ffffu, 0, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain, 1, LEN, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain, LEN + 1, 0, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain, UINT64_MAX, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(all, UINT64_MAX - 3, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0),
                PTL_ARG_INVALID);
    ptl_process_t far = me;
    far.rank = 7;
    XP_CHECK_EQ(PtlPut(plain, 0, 8, PTL_NO_ACK_REQ, far, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    far.rank = UINT32_MAX;
    XP_CHECK_EQ(PtlPut(plain, 0, 8, PTL_NO_ACK_REQ, far, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    /* A stale handle: released, the slot given to a new MD. */
    ptl_handle_md_t old = plain;
    XP_CHECK_EQ(PtlMDRelease(plain), PTL_OK);
    plain = bind(src, LEN, 0, PTL_EQ_NONE, PTL_CT_NONE);
    XP_CHECK(plain != old);
    XP_CHECK_EQ(PtlPut(old, 0, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlPut(plain, 0, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0), PTL_OK);
    landed(0, 0, 8);

    /* A map with two logical ranks, both this process: the compact path
     * looks its route up in the new map. */
    ptl_process_t self_phys;
    ptl_handle_ni_t pni;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY,
                         NULL, NULL, &pni) == PTL_OK);
    XP_REQUIRE(PtlGetPhysId(pni, &self_phys) == PTL_OK);
    ptl_process_t map[2] = { self_phys, self_phys };
    XP_REQUIRE(PtlSetMap(ni, 2, map) == PTL_OK);
    ptl_process_t one = { .rank = 1 }, two = { .rank = 2 };
    XP_REQUIRE(PtlPut(plain, 6, 8, PTL_NO_ACK_REQ, one, PT, 0, 40, NULL, 0) == PTL_OK);
    landed(6, 40, 8);
    XP_REQUIRE(PtlPut(plain, 6, 100, PTL_NO_ACK_REQ, me, PT, 0, 41, NULL, 0) == PTL_OK);
    landed(6, 41, 100);
    XP_CHECK_EQ(PtlPut(plain, 0, 8, PTL_NO_ACK_REQ, two, PT, 0, 0, NULL, 0), PTL_ARG_INVALID);

    XP_CHECK_EQ(PtlNIFini(pni), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    /* After PtlFini: PTL_NO_INIT, not a crash. */
    XP_CHECK_EQ(PtlPut(plain, 0, 8, PTL_NO_ACK_REQ, me, PT, 0, 0, NULL, 0), PTL_NO_INIT);
    return xp_test_result();
}
