/*
 * test_fuzz_packet - the engine's packet handler (xp_eng_recv, target and
 * answer sides) on malformed packets, in a singleton process
 * (fuzz/ptl_packet_env.c builds the NIs, PTs and entries).
 *
 * First one directed case per rule (truncated headers, payloads shorter than
 * the announced length, RMA segment lists that do not fit the payload or
 * do not add up, inline gets above the packet size, atomics with bad
 * types / sizes / operand lengths, unknown types, bad slots / PTs / source
 * ranks, replies that would land outside their MD, answers nobody asked
 * for): each is dropped and counted (status registers), never trusted.
 * Then thousands of random and mutated-valid packets: no crash (run under
 * ASan/UBSan in check-sanitize), no byte written outside an entry's buffer.
 * Deterministic; argv[1] overrides the number of random packets.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../fuzz/ptl_packet_env.h"
#include "ptl/progress.h"
#include "ptl/wire.h"
#include "xp_fuzz.h"
#include "xp_test.h"

#define MAXPKT 8192

/* Deliver one packet from rank 0, settle, and say how many rejections it added. */
static uint64_t rejected_by(const unsigned char *pkt, size_t len, int src)
{
    uint64_t before = xp_fuzz_ptl_rejections();
    int saved = xp_fuzz_quiet();
    unsigned char *copy = malloc(len ? len : 1); /* exact size for ASan */
    XP_REQUIRE(copy);
    memcpy(copy, pkt, len);
    xp_fuzz_ptl_deliver(src, copy, len);
    free(copy);
    xp_fuzz_ptl_settle();
    xp_fuzz_loud(saved);
    return xp_fuzz_ptl_rejections() - before;
}

/* Rewrite the header of a wire packet (payload kept) with `edit` applied. */
static size_t edit_header(unsigned char *pkt, size_t len, void (*edit)(xp_pkt_t *, void *),
                          void *arg)
{
    xp_pkt_t h;
    unsigned char payload[MAXPKT];
    size_t hl = xp_fuzz_ptl_hdr_decode(pkt, len, &h);
    XP_REQUIRE(hl);
    size_t plen = len - hl;
    memcpy(payload, pkt + hl, plen);
    edit(&h, arg);
    size_t nhl = xp_fuzz_ptl_hdr_encode(&h, pkt);
    memcpy(pkt + nhl, payload, plen);
    return nhl + plen;
}

static void set_rma(xp_pkt_t *h, void *arg)
{
    h->flags |= XP_PKT_F_RMA;
    h->nseg = *(uint32_t *)arg;
}

static void set_atomic_type(xp_pkt_t *h, void *arg)
{
    h->atomic_type = *(uint8_t *)arg;
}

static void set_nseg(xp_pkt_t *h, void *arg)
{
    h->nseg = *(uint32_t *)arg;
}

static void set_slot(xp_pkt_t *h, void *arg)
{
    h->slot = *(uint8_t *)arg;
}

static void set_pt(xp_pkt_t *h, void *arg)
{
    h->pt_index = *(uint32_t *)arg;
}

static void set_type(xp_pkt_t *h, void *arg)
{
    h->type = *(uint8_t *)arg;
}

static void set_reply(xp_pkt_t *h, void *arg)
{
    const uint64_t *v = arg; /* local_offset, mlength */
    h->type = XP_PKT_REPLY;
    h->local_offset = v[0];
    h->mlength = v[1];
}

/* Make a fetch request fit the compact fetch form (no echo, no header
 * data, no flags, a 32-bit local offset, rlength = its operand). */
static void fit_sfetch(xp_pkt_t *h, size_t plen)
{
    h->flags = h->ack_req = h->fail = h->ptl_list = 0;
    h->nseg = 0;
    h->hdr_data = h->mlength = h->user_ptr = 0;
    h->local_offset &= UINT32_MAX;
    h->rlength = plen;
}

/* Make a get request fit the compact get form (no echo, no header data,
 * no flags, a 32-bit local offset, a reply the compact REPLY carries). */
static void fit_sget(xp_pkt_t *h)
{
    h->flags = h->ack_req = h->fail = h->ptl_list = h->atomic_op = h->atomic_type = 0;
    h->nseg = 0;
    h->hdr_data = h->mlength = h->user_ptr = 0;
    h->local_offset &= UINT32_MAX;
    h->rlength &= XP_WIRE_SGET_MAX;
}

static void set_remote_offset(xp_pkt_t *h, void *arg)
{
    h->remote_offset = *(uint64_t *)arg;
}

/* Re-encode a wire packet with xp_wire_encode (a compact form where one
 * fits; a REPLY made to fit one: no flags, lengths = its data). */
static size_t to_compact(unsigned char *pkt, size_t len)
{
    xp_pkt_t h;
    unsigned char payload[MAXPKT];
    size_t hl = xp_fuzz_ptl_hdr_decode(pkt, len, &h), nhl;
    XP_REQUIRE(hl);
    size_t plen = len - hl;
    memcpy(payload, pkt + hl, plen);
    if (h.type == XP_PKT_REPLY) {
        h.flags = 0;
        h.rlength = h.mlength = plen;
    }
    if (h.type == XP_PKT_FETCH)
        fit_sfetch(&h, plen);
    if (h.type == XP_PKT_GET)
        fit_sget(&h);
    xp_wire_t w;
    const void *wh = xp_wire_encode(&h, plen, &w, &nhl);
    memcpy(pkt, wh, nhl);
    memcpy(pkt + nhl, payload, plen);
    return nhl + plen;
}

static void directed(void)
{
    unsigned char pkt[MAXPKT], data[MAXPKT];
    unsigned char *tbuf = xp_fuzz_ptl_target_buf();
    size_t n;
    memset(data, 0x77, sizeof(data));

    /* A well-formed put is accepted (the anchor for everything below). */
    memset(tbuf, 0, 4096);
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 64, data, 64, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    XP_CHECK(tbuf[0] == 0x77 && tbuf[63] == 0x77 && tbuf[64] == 0);

    /* Truncated headers: nothing to answer, nothing counted, no crash. */
    for (size_t cut = 0; cut < 24; cut++)
        XP_CHECK_EQ(rejected_by(pkt, cut, 0), 0);

    /* Inline put announcing 4096 bytes but carrying 8. */
    memset(tbuf, 0, 4096);
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 4096, data, 8, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    XP_CHECK(tbuf[0] == 0);
    /* ... and carrying more than it announces. */
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 8, data, 64, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);

    /* RMA put whose segment list is longer than the payload. */
    uint32_t nseg = 1000;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 4096, data, 16, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_rma, &nseg);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* One segment of 10 bytes for a 4096-byte put. */
    xp_seg_t seg = { (uint64_t)(uintptr_t)data, 10 };
    nseg = 1;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 4096, &seg, sizeof(seg), pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_rma, &nseg);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* Segment lengths whose sum wraps around 2^64. */
    xp_seg_t wrap[2] = { { (uint64_t)(uintptr_t)data, UINT64_MAX }, { (uint64_t)(uintptr_t)data, 4097 } };
    nseg = 2;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 4096, wrap, sizeof(wrap), pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_rma, &nseg);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* More segments than the target ever reads. */
    xp_seg_t many[65];
    for (int i = 0; i < 65; i++)
        many[i] = (xp_seg_t){ (uint64_t)(uintptr_t)data, 1 };
    nseg = 65;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 65, many, sizeof(many), pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_rma, &nseg);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);

    /* Inline get larger than any packet (the reply could not carry it). */
    n = xp_fuzz_ptl_template(0, XP_PKT_GET, 1ull << 40, NULL, 0, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* Inline get with a payload it should not have. */
    n = xp_fuzz_ptl_template(0, XP_PKT_GET, 8, data, 8, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);

    /* Atomics: unknown datatype, size above max_atomic_size, short payload. */
    uint8_t bad_type = 200;
    n = xp_fuzz_ptl_template(0, XP_PKT_ATOMIC, 8, data, 8, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_atomic_type, &bad_type);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    n = xp_fuzz_ptl_template(0, XP_PKT_ATOMIC, 4096, data, 4096, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 64, data, 8, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    n = xp_fuzz_ptl_template(0, XP_PKT_ATOMIC, 12, data, 12, pkt, sizeof(pkt)); /* 1.5 elements */
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* Swap whose operand length runs past the payload. */
    uint32_t oplen = 1000;
    n = xp_fuzz_ptl_template(0, XP_PKT_SWAP, 8, data, 8, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_nseg, &oplen);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* A valid fetch-add is accepted. */
    n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 8, data, 8, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    /* ... and in the compact fetch form; compact ones outside the entry,
     * cut short, with a lying length byte or a bad type/size. */
    n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 8, data, 8, pkt, sizeof(pkt));
    n = to_compact(pkt, n);
    XP_CHECK_EQ(pkt[0], XP_WIRE_SFETCH);
    XP_CHECK_EQ(n, sizeof(xp_wire_sfetch_t) + 8);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    uint64_t roffs[3] = { 4096 - 4, UINT64_MAX - 3, 1ull << 40 };
    for (int i = 0; i < 3; i++) {
        n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 8, data, 8, pkt, sizeof(pkt));
        n = edit_header(pkt, n, set_remote_offset, &roffs[i]);
        n = to_compact(pkt, n);
        XP_CHECK_EQ(pkt[0], XP_WIRE_SFETCH);
        rejected_by(pkt, n, 0);
    }
    n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 8, data, 8, pkt, sizeof(pkt));
    n = to_compact(pkt, n);
    for (size_t cut = 0; cut < n; cut += 5)
        rejected_by(pkt, cut, 0);
    pkt[offsetof(xp_wire_sfetch_t, len)] = 200;
    rejected_by(pkt, n, 0);
    pkt[offsetof(xp_wire_sfetch_t, len)] = 8;
    pkt[offsetof(xp_wire_sfetch_t, atomic_type)] = 200;
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    n = xp_fuzz_ptl_template(0, XP_PKT_FETCH, 12, data, 12, pkt, sizeof(pkt));
    n = to_compact(pkt, n);
    XP_CHECK_EQ(pkt[0], XP_WIRE_SFETCH);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);

    /* A valid small get is accepted, in both forms; compact ones reaching
     * outside the entry, cut short or with bytes after the header. */
    n = xp_fuzz_ptl_template(0, XP_PKT_GET, 8, NULL, 0, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    n = to_compact(pkt, n);
    XP_CHECK_EQ(pkt[0], XP_WIRE_SGET);
    XP_CHECK_EQ(n, sizeof(xp_wire_sget_t));
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    for (int i = 0; i < 3; i++) {
        n = xp_fuzz_ptl_template(0, XP_PKT_GET, 200, NULL, 0, pkt, sizeof(pkt));
        n = edit_header(pkt, n, set_remote_offset, &roffs[i]);
        n = to_compact(pkt, n);
        XP_CHECK_EQ(pkt[0], XP_WIRE_SGET);
        rejected_by(pkt, n, 0);
    }
    n = xp_fuzz_ptl_template(0, XP_PKT_GET, 8, NULL, 0, pkt, sizeof(pkt));
    n = to_compact(pkt, n);
    for (size_t cut = 0; cut < n; cut += 3)
        rejected_by(pkt, cut, 0);
    memset(pkt + n, 0x55, 16);
    rejected_by(pkt, n + 16, 0);
    rejected_by(pkt, n + 1, 0);

    /* Unknown packet types are dropped (nothing to count them against). */
    uint8_t types[3] = { 0, 8, 255 };
    for (int i = 0; i < 3; i++) {
        n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 8, data, 8, pkt, sizeof(pkt));
        n = edit_header(pkt, n, set_type, &types[i]);
        XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    }
    /* No such NI slot / PT: answered (undeliverable / dropped), no crash. */
    uint8_t slot = 255;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 8, data, 8, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_slot, &slot);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 0);
    uint32_t pt = 0x7fffffff;
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 8, data, 8, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_pt, &pt);
    XP_CHECK_EQ(rejected_by(pkt, n, 0), 1);
    /* Source ranks that are not in the job: dropped before anything else. */
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 8, data, 8, pkt, sizeof(pkt));
    XP_CHECK_EQ(rejected_by(pkt, n, -1), 0);
    XP_CHECK_EQ(rejected_by(pkt, n, 1 << 30), 0);

    /* A reply whose data would land past the end of its MD (64 KiB). */
    uint64_t lo[2] = { 65536 - 4, 64 };
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 64, data, 64, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_reply, lo);
    rejected_by(pkt, n, 0);
    uint64_t far[2] = { UINT64_MAX - 8, 64 };
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 64, data, 64, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_reply, far);
    rejected_by(pkt, n, 0);

    /* The same replies in the compact form (their own receive path), and
     * compact ones cut short or with a length byte that lies. */
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 64, data, 64, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_reply, lo);
    n = to_compact(pkt, n);
    XP_CHECK_EQ(pkt[0], XP_WIRE_SREPLY);
    rejected_by(pkt, n, 0);
    n = xp_fuzz_ptl_template(0, XP_PKT_PUT, 64, data, 64, pkt, sizeof(pkt));
    n = edit_header(pkt, n, set_reply, far);
    n = to_compact(pkt, n);
    XP_CHECK_EQ(pkt[0], XP_WIRE_SREPLY);
    rejected_by(pkt, n, 0);
    for (size_t cut = 0; cut < n; cut += 7)
        rejected_by(pkt, cut, 0);
    pkt[offsetof(xp_wire_sreply_t, len)] = 200;
    rejected_by(pkt, n, 0);

    XP_CHECK(xp_fuzz_ptl_guards_ok());
}

/* A random header field set to a value around a boundary. */
static uint64_t interesting(xp_rng_t *r)
{
    static const uint64_t v[] = { 0, 1, 7, 8, 63, 64, 65, 255, 256, 4095, 4096, 4097, 65535,
                                  65536, 1u << 20, 0x7fffffff, 0xffffffffu, 1ull << 32,
                                  1ull << 63, UINT64_MAX - 1, UINT64_MAX };
    return xp_rng_below(r, 4) ? v[xp_rng_below(r, sizeof(v) / sizeof(v[0]))] : xp_rng_next(r);
}

static void mutate_header(xp_rng_t *r, xp_pkt_t *h)
{
    int edits = 1 + (int)xp_rng_below(r, 3);
    for (int e = 0; e < edits; e++) {
        uint64_t v = interesting(r);
        switch (xp_rng_below(r, 14)) {
        case 0: h->type = (uint8_t)(xp_rng_below(r, 2) ? 1 + xp_rng_below(r, 7) : v); break;
        case 1: h->slot = (uint8_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 4) : v); break;
        case 2: h->ack_req = (uint8_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 4) : v); break;
        case 3: h->flags = (uint8_t)v; break;
        case 4: h->atomic_op = (uint8_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 20) : v); break;
        case 5: h->atomic_type = (uint8_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 16) : v); break;
        case 6: h->pt_index = (uint32_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 4) : v); break;
        case 7: h->nseg = (uint32_t)(xp_rng_below(r, 2) ? xp_rng_below(r, 70) : v); break;
        case 8: h->match_bits = xp_rng_below(r, 2) ? 1 + xp_rng_below(r, 7) : v; break;
        case 9: h->rlength = v; break;
        case 10: h->remote_offset = v; break;
        case 11: h->local_offset = v; break;
        case 12: h->mlength = v; break;
        default: h->fail = (uint8_t)v; break;
        }
    }
}

static size_t random_packet(xp_rng_t *r, unsigned char *pkt)
{
    unsigned char payload[MAXPKT];
    static const xp_pkt_type_t types[] = { XP_PKT_PUT, XP_PKT_GET, XP_PKT_ATOMIC, XP_PKT_FETCH,
                                           XP_PKT_SWAP, XP_PKT_ACK, XP_PKT_REPLY };
    size_t plen = xp_rng_below(r, 4) ? xp_rng_below(r, 80) : xp_rng_below(r, MAXPKT - 128);
    xp_rng_fill(r, payload, plen);
    switch (xp_rng_below(r, 4)) {
    case 0: { /* raw bytes */
        size_t n = xp_rng_below(r, 200);
        xp_rng_fill(r, pkt, n);
        return n;
    }
    default: { /* a valid request or answer, then header mutations and byte flips */
        xp_pkt_type_t t = types[xp_rng_below(r, 7)];
        uint64_t rlen = xp_rng_below(r, 2) ? plen : interesting(r);
        size_t n = xp_fuzz_ptl_template((unsigned)xp_rng_below(r, 6), t, rlen, payload, plen, pkt,
                                        MAXPKT);
        xp_pkt_t h;
        size_t hl = xp_fuzz_ptl_hdr_decode(pkt, n, &h);
        if (xp_rng_below(r, 4))
            mutate_header(r, &h);
        if (h.flags & XP_PKT_F_RMA && xp_rng_below(r, 2))
            h.nseg = (uint32_t)(plen / sizeof(xp_seg_t));
        size_t nhl;
        if (xp_rng_below(r, 2)) { /* the compact wire form where one fits */
            xp_wire_t w;
            /* Often make a REPLY fit the compact one (its own receive path). */
            if (h.type == XP_PKT_REPLY && plen <= XP_WIRE_SREPLY_MAX && xp_rng_below(r, 2)) {
                h.flags = 0;
                h.rlength = h.mlength = plen;
            }
            /* ... and a fetch the compact fetch form. */
            if (h.type == XP_PKT_FETCH && plen <= XP_WIRE_SFETCH_MAX && xp_rng_below(r, 2))
                fit_sfetch(&h, plen);
            /* ... and a get the compact get form. */
            if (h.type == XP_PKT_GET && !plen && xp_rng_below(r, 2))
                fit_sget(&h);
            const void *wh = xp_wire_encode(&h, plen, &w, &nhl);
            memcpy(pkt, wh, nhl);
        } else {
            nhl = xp_fuzz_ptl_hdr_encode(&h, pkt);
        }
        memmove(pkt + nhl, payload, plen);
        n = nhl + plen;
        (void)hl;
        int flips = xp_rng_below(r, 3) == 0 ? 1 + (int)xp_rng_below(r, 4) : 0;
        for (int f = 0; f < flips && n; f++)
            pkt[xp_rng_below(r, n)] ^= (unsigned char)(1u << xp_rng_below(r, 8));
        if (xp_rng_below(r, 8) == 0)
            n = xp_rng_below(r, n + 1); /* truncated */
        return n;
    }
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200000;
    unsigned char *in = malloc(MAXPKT + 2);
    XP_REQUIRE(in);
    xp_fuzz_ptl_setup();
    directed();

    xp_rng_t r = { 0xfacefeedu };
    int saved = argc > 2 ? -1 : xp_fuzz_quiet();
    for (int i = 0; i < rounds; i++) {
        in[0] = (uint8_t)(xp_rng_below(&r, 8) == 0 ? xp_rng_next(&r) : 0);
        in[1] = (uint8_t)((i % 16 == 15) | ((i % 2048 == 2047) ? 0x1e : 0));
        size_t n = random_packet(&r, in + 2);
        xp_fuzz_ptl_feed(in, n + 2);
        if (i % 4096 == 0 && !xp_fuzz_ptl_guards_ok())
            break;
    }
    xp_fuzz_ptl_settle();
    xp_fuzz_loud(saved);
    XP_CHECK(xp_fuzz_ptl_guards_ok());
    printf("%d random packets, %llu rejections counted\n", rounds,
           (unsigned long long)xp_fuzz_ptl_rejections());
    xp_fuzz_ptl_teardown();
    free(in);
    return xp_test_result();
}
