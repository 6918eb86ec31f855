/*
 * mp_put_forms - puts in every wire form arrive whole, across the
 * shared-memory ring: without match bits and header data (the 24-byte
 * form: up to 32 bytes of data in one ring cell), with either one (the
 * 40-byte form: up to 16 bytes in one cell), and longer ones that take
 * more cells: every length from 0 to 80 bytes, then lengths around the
 * compact forms' one-byte length field and their end (XP_WIRE_SPUT_MAX,
 * 4 KiB), with and without a counting ACK. The source and target offsets
 * vary, so the copies meet every relative alignment class (util/copy.h).
 * The _eager1k variant lowers XP_SHM_EAGER_MAX: the longer puts then go by
 * single copy, not in a compact packet.
 *
 * Rank 1 has a matching NI with two PTs, each with a persistent ME that
 * ignores every match bit: one without an EQ, counted (the target's one-pass
 * path), one with an EQ (the general path), whose PUT events must carry the
 * match bits, header data, lengths and offset that rank 0 sent. Rank 1
 * checks every byte of its buffer after each put, rank 0 its ACK count.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT_FAST 6
#define PT_EV 7
#define MAXLEN 4200
#define BUF (MAXLEN + 256)

static unsigned char rbuf[2][BUF];

static unsigned char pattern(unsigned round, size_t i)
{
    return (unsigned char)(round * 131u + i * 7u + 1u);
}

typedef struct form {
    ptl_match_bits_t bits;
    ptl_hdr_data_t hdr;
} form_t;

static const form_t forms[] = {
    { 0, 0 },                          /* the 24-byte form */
    { 0x0123456789abcdefull, 0 },      /* the 40-byte form: bits */
    { 0, 0xfeedfacecafebeefull },      /* the 40-byte form: header data */
};

/* Rank 1: the put of round r (len bytes at roff, form f) landed in rbuf[pt]
 * and nothing around it changed; then the buffer is reset. */
static void check_landed(int which, unsigned r, size_t len, size_t roff)
{
    size_t bad = 0;
    for (size_t i = 0; i < BUF; i++) {
        unsigned char want = i >= roff && i < roff + len ? pattern(r, i - roff) : 0xee;
        bad += rbuf[which][i] != want;
    }
    if (bad)
        fprintf(stderr, "round %u (%s, %zu bytes at %zu): %zu bytes wrong\n", r,
                which ? "EQ" : "counted", len, roff, bad);
    XP_CHECK_EQ(bad, 0);
    memset(rbuf[which], 0xee, BUF);
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    int me = xp_rank();
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct;
    ptl_pt_index_t pt;
    ptl_handle_me_t meh[2];
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT_FAST, &pt) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PT_EV, &pt) == PTL_OK);
    memset(rbuf, 0xee, sizeof rbuf);
    for (int i = 0; i < 2; i++) {
        ptl_me_t m = {.start = rbuf[i], .length = BUF, .ct_handle = i ? PTL_CT_NONE : ct,
                      .uid = PTL_UID_ANY, .match_id = {.rank = PTL_RANK_ANY},
                      .match_bits = 0, .ignore_bits = ~(ptl_match_bits_t)0,
                      .options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE |
                                 (i ? 0 : PTL_ME_EVENT_CT_COMM)};
        XP_REQUIRE(PtlMEAppend(ni, i ? PT_EV : PT_FAST, &m, PTL_PRIORITY_LIST, NULL, &meh[i]) ==
                   PTL_OK);
    }
    ptl_handle_ct_t ack_ct;
    ptl_handle_md_t md;
    static unsigned char sbuf[MAXLEN + 64];
    XP_REQUIRE(PtlCTAlloc(ni, &ack_ct) == PTL_OK);
    ptl_md_t mdd = {.start = sbuf, .length = sizeof sbuf, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = ack_ct, .options = PTL_MD_EVENT_CT_ACK};
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    static const size_t longer[] = {255, 256, 257, 1000, 2048, 2053, 2111, 2112, 4095, 4096,
                                    4097, MAXLEN};
    size_t nlen = 81 + sizeof longer / sizeof longer[0];
    unsigned round = 0;
    uint64_t counted = 0, acks = 0;
    for (size_t li = 0; li < nlen; li++) {
        size_t len = li <= 80 ? li : longer[li - 81];
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            for (int which = 0; which < 2; which++) {
                for (int ack = 0; ack < 2; ack++, round++) {
                    size_t roff = (round * 37u) % (BUF - len + 1);
                    size_t loff = (round * 11u) % 64;
                    if (me == 0) {
                        for (size_t i = 0; i < len; i++)
                            sbuf[loff + i] = pattern(round, i);
                        ptl_process_t t = {.rank = 1};
                        XP_CHECK_EQ(PtlPut(md, loff, len, ack ? PTL_CT_ACK_REQ : PTL_NO_ACK_REQ, t,
                                           which ? PT_EV : PT_FAST, forms[f].bits, roff, NULL,
                                           forms[f].hdr),
                                    PTL_OK);
                        acks += (uint64_t)ack;
                    } else if (which == 0) {
                        ptl_ct_event_t c;
                        XP_REQUIRE(PtlCTWait(ct, ++counted, &c) == PTL_OK);
                        XP_CHECK_EQ(c.failure, 0);
                        check_landed(0, round, len, roff);
                    } else {
                        ptl_event_t ev;
                        XP_REQUIRE(PtlEQWait(eq, &ev) == PTL_OK);
                        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
                        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
                        XP_CHECK_EQ(ev.match_bits, forms[f].bits);
                        XP_CHECK_EQ(ev.hdr_data, forms[f].hdr);
                        XP_CHECK_EQ(ev.rlength, len);
                        XP_CHECK_EQ(ev.mlength, len);
                        XP_CHECK_EQ(ev.remote_offset, roff);
                        XP_CHECK_EQ(ev.initiator.rank, 0);
                        XP_CHECK(ev.start == rbuf[1] + roff);
                        check_landed(1, round, len, roff);
                    }
                    /* The next put reuses the send buffer and the target's. */
                    if (me == 0 && ack) {
                        ptl_ct_event_t c;
                        XP_REQUIRE(PtlCTWait(ack_ct, acks, &c) == PTL_OK);
                        XP_CHECK_EQ(c.failure, 0);
                    }
                    XP_REQUIRE(xp_barrier() == XP_OK);
                }
            }
        }
    }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(meh[0]), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(meh[1]), PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
