/*
 * test_wire: the compact wire forms of engine headers (ptl/wire.h). A header
 * that a compact form can carry round-trips through it with every field the
 * receiver reads intact (the omitted ones come back zero); one it cannot
 * carry is sent whole; malformed compact headers are refused, never read
 * past their end.
 */
#include <string.h>

#include "ptl/wire.h"
#include "xp_test.h"

static xp_pkt_t put_hdr(size_t len, uint8_t ack_req)
{
    xp_pkt_t h;
    memset(&h, 0, sizeof(h));
    h.type = XP_PKT_PUT;
    h.slot = 3;
    h.ack_req = ack_req;
    h.pt_index = 7;
    h.md_handle = 0xabcd1234u;
    h.uid = 1000;
    h.match_bits = 0x0123456789abcdefull;
    h.hdr_data = 0xfeedfacecafebeefull;
    h.rlength = len;
    h.remote_offset = 1ull << 40;
    return h;
}

/* Encode h with len payload bytes, append the payload, decode; returns the
 * wire header size. */
static size_t round_trip(const xp_pkt_t *h, size_t len, xp_pkt_t *out)
{
    unsigned char pkt[sizeof(xp_pkt_t) + XP_WIRE_SPUT_MAX + 8];
    xp_wire_t w;
    size_t hlen, dlen = 0;
    const void *hdr = xp_wire_encode(h, len, &w, &hlen);
    memcpy(pkt, hdr, hlen);
    memset(pkt + hlen, 0x5a, len);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + len, out, &dlen), 0);
    XP_CHECK_EQ(dlen, hlen);
    return hlen;
}

static void test_small_put(void)
{
    static const uint8_t acks[] = { PTL_NO_ACK_REQ, PTL_CT_ACK_REQ, PTL_OC_ACK_REQ };
    for (size_t a = 0; a < sizeof(acks); a++) {
        xp_pkt_t h = put_hdr(8, acks[a]), d;
        XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sput_t));
        /* Everything the target reads survives; nothing else is invented. */
        XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    }
    /* From 0 bytes to XP_WIRE_SPUT_MAX: the frame gives the length, the
     * length byte only its low 8 bits (255, 256 and 4096 wrap it). */
    static const size_t lens[] = { 0, 255, 256, 257, 1024, XP_WIRE_SPUT_MAX };
    xp_pkt_t h, d;
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        h = put_hdr(lens[l], PTL_CT_ACK_REQ);
        XP_CHECK_EQ(round_trip(&h, lens[l], &d), sizeof(xp_wire_sput_t));
        XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    }
    /* With the 8-byte cell header word, 40 + 16 bytes fill one 64-byte cell. */
    XP_CHECK_EQ(8 + sizeof(xp_wire_sput_t) + 16, 64);
}

/* Without match bits and header data: the 24-byte form, every field intact;
 * either one nonzero keeps the 40-byte form. */
static void test_tiny_put(void)
{
    static const uint8_t acks[] = { PTL_NO_ACK_REQ, PTL_CT_ACK_REQ, PTL_OC_ACK_REQ };
    static const size_t lens[] = { 0, 1, 8, 32, 255, 256, XP_WIRE_SPUT_MAX };
    for (size_t a = 0; a < sizeof(acks); a++) {
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            xp_pkt_t h = put_hdr(lens[l], acks[a]), d;
            h.match_bits = h.hdr_data = 0;
            XP_CHECK_EQ(round_trip(&h, lens[l], &d), sizeof(xp_wire_tput_t));
            XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
        }
    }
    xp_pkt_t h = put_hdr(8, PTL_NO_ACK_REQ), d;
    h.hdr_data = 0;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sput_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = put_hdr(8, PTL_NO_ACK_REQ);
    h.match_bits = 0;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sput_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    /* A full ACK still needs the whole header. */
    h = put_hdr(8, PTL_ACK_REQ);
    h.match_bits = h.hdr_data = 0;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    /* 8-byte cell header word + 24 + 32 bytes: one cell. */
    XP_CHECK_EQ(8 + sizeof(xp_wire_tput_t) + 32, 64);
}

static void test_full_put(void)
{
    xp_pkt_t d;
    /* A full ACK echoes user_ptr and local_offset: the whole header goes. */
    xp_pkt_t h = put_hdr(8, PTL_ACK_REQ);
    h.user_ptr = 0x1234;
    h.local_offset = 64;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = put_hdr(XP_WIRE_SPUT_MAX + 1, PTL_NO_ACK_REQ); /* longer than a compact put */
    XP_CHECK_EQ(round_trip(&h, XP_WIRE_SPUT_MAX + 1, &d), sizeof(xp_pkt_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = put_hdr(8, PTL_NO_ACK_REQ);
    h.flags = XP_PKT_F_XTQ;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    XP_CHECK_EQ(d.flags, XP_PKT_F_XTQ);
    h = put_hdr(4096, PTL_NO_ACK_REQ); /* RMA-style: rlength != payload */
    XP_CHECK_EQ(round_trip(&h, 16, &d), sizeof(xp_pkt_t));
    h = put_hdr(8, PTL_NO_ACK_REQ);
    h.type = XP_PKT_ATOMIC;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
}

static xp_pkt_t ack_hdr(uint8_t ack_req, uint8_t flags)
{
    xp_pkt_t h;
    memset(&h, 0, sizeof(h));
    h.type = XP_PKT_ACK;
    h.slot = 1;
    h.ack_req = ack_req;
    h.flags = flags;
    h.fail = PTL_NI_PERM_VIOLATION;
    h.ptl_list = PTL_OVERFLOW_LIST;
    h.md_handle = 0x55aa55aau;
    h.nseg = flags & XP_PKT_F_MANY ? 17 : 0;
    h.mlength = 136;
    return h;
}

static void test_acks(void)
{
    xp_pkt_t d, h = ack_hdr(PTL_CT_ACK_REQ, XP_PKT_F_MANY);
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sack_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = ack_hdr(PTL_OC_ACK_REQ, 0);
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sack_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = ack_hdr(PTL_ACK_REQ, XP_PKT_F_NOACK); /* ACK_DISABLE: completion only */
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sack_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    /* A full ACK event or an owed SEND event needs the echoed fields. */
    h = ack_hdr(PTL_ACK_REQ, 0);
    h.user_ptr = 99;
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_pkt_t));
    XP_CHECK_EQ(d.user_ptr, 99);
    h = ack_hdr(PTL_CT_ACK_REQ, XP_PKT_F_SENDEV);
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_pkt_t));
    h = ack_hdr(PTL_CT_ACK_REQ, 0);
    h.type = XP_PKT_REPLY;
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_pkt_t));
}

static xp_pkt_t reply_hdr(size_t len)
{
    xp_pkt_t h;
    memset(&h, 0, sizeof(h));
    h.type = XP_PKT_REPLY;
    h.slot = 2;
    h.fail = PTL_NI_OK;
    h.ptl_list = PTL_PRIORITY_LIST;
    h.atomic_op = PTL_SUM;
    h.atomic_type = PTL_UINT64_T;
    h.md_handle = 0x12345678u;
    h.pt_index = 9;
    h.rlength = len;
    h.mlength = len;
    h.remote_offset = 1ull << 33;
    h.local_offset = 24;
    h.user_ptr = 0xdeadbeef0badf00dull;
    return h;
}

static void test_replies(void)
{
    xp_pkt_t h = reply_hdr(8), d;
    /* A fetch-add's REPLY: header and 8 bytes in one 64-byte cell. */
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sreply_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    XP_CHECK_EQ(16 + sizeof(xp_wire_sreply_t) + 8, 64);
    h = reply_hdr(0);
    h.fail = PTL_NI_OP_VIOLATION;
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sreply_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    /* Up to XP_WIRE_SREPLY_MAX: the frame gives the length (255, 256 and
     * 4096 wrap the length byte). */
    static const size_t lens[] = {255, 256, 257, 1000, XP_WIRE_SREPLY_MAX};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        h = reply_hdr(lens[l]);
        XP_CHECK_EQ(round_trip(&h, lens[l], &d), sizeof(xp_wire_sreply_t));
        XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    }
    /* Fields a REPLY event does not have are not carried. */
    h = reply_hdr(8);
    h.match_bits = 5;
    h.hdr_data = 6;
    h.uid = 7;
    h.ack_req = PTL_CT_ACK_REQ;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sreply_t));
    XP_CHECK(d.match_bits == 0 && d.hdr_data == 0 && d.uid == 0 && d.ack_req == 0);
    XP_CHECK_EQ(d.user_ptr, h.user_ptr);
    XP_CHECK_EQ(d.local_offset, 24);
    /* Whole headers: too long, RMA data, a truncated reply, lengths that
     * differ from the data sent. */
    h = reply_hdr(XP_WIRE_SREPLY_MAX + 1);
    XP_CHECK_EQ(round_trip(&h, XP_WIRE_SREPLY_MAX + 1, &d), sizeof(xp_pkt_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = reply_hdr(8);
    h.flags = XP_PKT_F_RMA;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    XP_CHECK_EQ(d.flags, XP_PKT_F_RMA);
    h = reply_hdr(8);
    h.rlength = 16;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    XP_CHECK_EQ(d.rlength, 16);
    h = reply_hdr(8);
    h.mlength = 4;
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_pkt_t));
    /* xp_wire_sreply_unpack is the decoder's view. */
    h = reply_hdr(8);
    xp_wire_sreply_t s;
    xp_wire_sreply_fill(&s, &h, 8);
    xp_wire_sreply_unpack(&s, 8, &d);
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
}

static xp_pkt_t fetch_hdr(size_t len)
{
    xp_pkt_t h;
    memset(&h, 0, sizeof(h));
    h.type = XP_PKT_FETCH;
    h.slot = 4;
    h.atomic_op = PTL_SUM;
    h.atomic_type = PTL_INT64_T;
    h.pt_index = 11;
    h.md_handle = 0x87654321u;
    h.uid = 1001;
    h.match_bits = 0xfedcba9876543210ull;
    h.rlength = len;
    h.remote_offset = (1ull << 50) + 8;
    h.local_offset = UINT32_MAX;
    return h;
}

static void test_fetches(void)
{
    xp_pkt_t h = fetch_hdr(8), d;
    /* A fetch-add without echo: header and operand in one 64-byte cell,
     * lossless. */
    XP_CHECK_EQ(round_trip(&h, 8, &d), sizeof(xp_wire_sfetch_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    XP_CHECK_EQ(16 + sizeof(xp_wire_sfetch_t) + 8, 64);
    h = fetch_hdr(0);
    h.local_offset = 0;
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sfetch_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = fetch_hdr(255);
    XP_CHECK_EQ(round_trip(&h, 255, &d), sizeof(xp_wire_sfetch_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    /* Anything it would lose goes whole: user_ptr, header data, a 64-bit
     * offset, ack_req, flags, an operand length other than the payload, too
     * long, other types. */
    for (int i = 0; i < 9; i++) {
        size_t len = 8;
        h = fetch_hdr(8);
        switch (i) {
        case 0: h.user_ptr = 1; break;
        case 1: h.hdr_data = 1; break;
        case 2: h.local_offset = 1ull << 32; break;
        case 3: h.ack_req = PTL_CT_ACK_REQ; break;
        case 4: h.flags = XP_PKT_F_RMA; break;
        case 5: h.rlength = 16; break;
        case 6: h = fetch_hdr(256); len = 256; break;
        case 7: h.type = XP_PKT_SWAP; break;
        default: h.nseg = 8; break;
        }
        XP_CHECK_EQ(round_trip(&h, len, &d), sizeof(xp_pkt_t));
        XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    }
}

static xp_pkt_t get_hdr(uint64_t len)
{
    xp_pkt_t h;
    memset(&h, 0, sizeof(h));
    h.type = XP_PKT_GET;
    h.slot = 2;
    h.pt_index = 9;
    h.md_handle = 0x12345678u;
    h.uid = 1002;
    h.match_bits = 0x0123456789abcdefull;
    h.rlength = len;
    h.remote_offset = (1ull << 45) + 3;
    h.local_offset = UINT32_MAX;
    return h;
}

static void test_gets(void)
{
    xp_pkt_t h = get_hdr(8), d;
    /* A small get without echo: one 64-byte cell, lossless. */
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sget_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    XP_CHECK(16 + sizeof(xp_wire_sget_t) <= 64);
    h = get_hdr(0);
    h.local_offset = 0;
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sget_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    h = get_hdr(XP_WIRE_SGET_MAX);
    XP_CHECK_EQ(round_trip(&h, 0, &d), sizeof(xp_wire_sget_t));
    XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    /* Anything it would lose goes whole: user_ptr, header data, a 64-bit
     * offset, a reply too long for a compact REPLY, flags and segments (an
     * RMA get), ack_req, atomic fields, a payload. */
    for (int i = 0; i < 9; i++) {
        size_t len = 0;
        h = get_hdr(8);
        switch (i) {
        case 0: h.user_ptr = 1; break;
        case 1: h.hdr_data = 1; break;
        case 2: h.local_offset = 1ull << 32; break;
        case 3: h.rlength = XP_WIRE_SGET_MAX + 1; break;
        case 4: h.flags = XP_PKT_F_RMA; h.nseg = 1; len = sizeof(xp_seg_t); break;
        case 5: h.ack_req = PTL_CT_ACK_REQ; break;
        case 6: h.atomic_op = PTL_SUM; break;
        case 7: h.atomic_type = PTL_INT32_T; break;
        default: len = 8; break;
        }
        XP_CHECK_EQ(round_trip(&h, len, &d), sizeof(xp_pkt_t));
        XP_CHECK(memcmp(&h, &d, sizeof(h)) == 0);
    }
    /* A compact get that asks for more than a compact REPLY carries is
     * refused, not answered. */
    h = get_hdr(8);
    xp_wire_t w;
    size_t hlen, dlen;
    const void *hdr = xp_wire_encode(&h, 0, &w, &hlen);
    XP_CHECK_EQ(hlen, sizeof(xp_wire_sget_t));
    unsigned char pkt[sizeof(xp_wire_sget_t)];
    memcpy(pkt, hdr, hlen);
    uint16_t big = XP_WIRE_SGET_MAX + 1;
    memcpy(pkt + offsetof(xp_wire_sget_t, len), &big, sizeof(big));
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), -1);
}

static void test_malformed(void)
{
    unsigned char pkt[sizeof(xp_pkt_t) + 64];
    xp_pkt_t h = put_hdr(8, PTL_CT_ACK_REQ), d;
    xp_wire_t w;
    size_t hlen, dlen;
    const void *hdr = xp_wire_encode(&h, 8, &w, &hlen);
    memcpy(pkt, hdr, hlen);
    /* Truncated header, and a length byte that disagrees with the packet. */
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 7, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 9, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), 0);
    /* A compact put never claims a full ACK or an unknown ack kind. */
    pkt[2] = PTL_ACK_REQ;
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), -1);
    pkt[2] = 200;
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), -1);
    /* The same for the tiny put. */
    h.match_bits = h.hdr_data = 0;
    hdr = xp_wire_encode(&h, 8, &w, &hlen);
    XP_CHECK_EQ(hlen, sizeof(xp_wire_tput_t));
    memcpy(pkt, hdr, hlen);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 7, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 9, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), 0);
    XP_CHECK_EQ(d.type, XP_PKT_PUT);
    pkt[2] = PTL_ACK_REQ;
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), -1);
    pkt[2] = 200;
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), -1);
    /* A compact ACK with flags it cannot carry. */
    xp_pkt_t a = ack_hdr(PTL_CT_ACK_REQ, 0);
    hdr = xp_wire_encode(&a, 0, &w, &hlen);
    memcpy(pkt, hdr, hlen);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), 0);
    pkt[3] = XP_PKT_F_SENDEV;
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    /* A compact REPLY whose length byte disagrees with the packet, or cut
     * short. */
    xp_pkt_t rp = reply_hdr(8);
    hdr = xp_wire_encode(&rp, 8, &w, &hlen);
    XP_CHECK_EQ(hlen, sizeof(xp_wire_sreply_t));
    memcpy(pkt, hdr, hlen);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), 0);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 7, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 9, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, 1, &d, &dlen), -1);
    /* A compact fetch whose length byte disagrees with the packet, or cut
     * short. */
    xp_pkt_t fh = fetch_hdr(8);
    hdr = xp_wire_encode(&fh, 8, &w, &hlen);
    XP_CHECK_EQ(hlen, sizeof(xp_wire_sfetch_t));
    memcpy(pkt, hdr, hlen);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 8, &d, &dlen), 0);
    XP_CHECK_EQ(d.type, XP_PKT_FETCH);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 7, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 9, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    /* A compact get carries nothing after its header, and is not cut
     * short. */
    xp_pkt_t gh = get_hdr(8);
    hdr = xp_wire_encode(&gh, 0, &w, &hlen);
    XP_CHECK_EQ(hlen, sizeof(xp_wire_sget_t));
    memcpy(pkt, hdr, hlen);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen, &d, &dlen), 0);
    XP_CHECK_EQ(d.type, XP_PKT_GET);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen + 1, &d, &dlen), -1);
    XP_CHECK_EQ(xp_wire_decode(pkt, hlen - 1, &d, &dlen), -1);
    /* Empty and short full headers. */
    XP_CHECK_EQ(xp_wire_decode(pkt, 0, &d, &dlen), -1);
    memset(pkt, 0, sizeof(pkt));
    pkt[0] = XP_PKT_PUT;
    XP_CHECK_EQ(xp_wire_decode(pkt, sizeof(xp_pkt_t) - 1, &d, &dlen), -1);
}

int main(void)
{
    test_small_put();
    test_tiny_put();
    test_full_put();
    test_acks();
    test_replies();
    test_fetches();
    test_gets();
    test_malformed();
    return xp_test_result();
}
