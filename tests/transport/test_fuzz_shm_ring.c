/*
 * test_fuzz_shm_ring - the ring's consumer (xp_shm_ring_poll) on cells that a
 * faulty or hostile peer wrote: valid packets pushed with xp_shm_ring_push,
 * interleaved with random overwrites of cell headers (short and long ones
 * whose position is the one the consumer expects, lengths around every
 * boundary, skip records with bad cell counts, any source rank) and of
 * payload bytes. Senders include ranks that need the long header.
 *
 * Whatever the cells hold, the consumer must never hand the handler a packet
 * that reaches outside the cell array or is longer than the largest packet;
 * it reports a corrupt record by returning -1. Packets not touched by a corruption arrive
 * intact and in order. Deterministic; argv[1] overrides the round count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm_ring.h"
#include "xp_fuzz.h"
#include "xp_test.h"

#define NCELLS 64u

typedef struct sink {
    const xp_shm_ring_t *ring;
    size_t ring_bytes;
    int delivered;
    int bad;             /* packets that broke the contract */
    unsigned char copy[NCELLS * XP_SHM_CELL];
    /* what the last delivered packet looked like */
    int src;
    size_t len;
} sink_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    sink_t *s = arg;
    const unsigned char *lo = (const unsigned char *)s->ring->cells;
    const unsigned char *hi = (const unsigned char *)s->ring + s->ring_bytes;
    const unsigned char *p = pkt;
    if (p < lo || p > hi || len > (size_t)(hi - p) || len > xp_shm_ring_max_packet(s->ring)) {
        s->bad++;
        return;
    }
    /* Touch every byte, so ASan sees a read outside the mapping. */
    memcpy(s->copy, pkt, len);
    s->delivered++;
    s->src = src;
    s->len = len;
}

/* The sender of numbered packet seq: short and long headers (a rank of 16
 * bits or more, a negative one as the split helpers' requests carry). */
static int numbered_src(uint32_t seq)
{
    static const int srcs[7] = { 0, 1, 2, 0xfffe, 0xffff, 70000, -3 };
    return srcs[seq % 7];
}

/* Write a header word (and a long header's rest) into c as a peer might. */
static void set_header(xp_shm_cell_t *c, uint64_t pos, uint32_t len, int32_t src, int lng)
{
    if (lng) {
        xp_shm_long_t l = { len, src };
        memcpy(c->payload, &l, sizeof(l));
        c->word = (uint32_t)pos | (uint64_t)XP_SHM_LONG << 32;
    } else {
        c->word = (uint32_t)pos | (uint64_t)(len & 0xffff) << 32 | (uint64_t)(src & 0xffff) << 48;
    }
}

/* Push a packet whose payload says who it is: 4 bytes of sequence number,
 * then bytes derived from it. */
static xp_status_t push_numbered(xp_shm_ring_t *ring, uint64_t *cached, uint32_t seq, size_t len)
{
    unsigned char buf[NCELLS * XP_SHM_CELL];
    if (len < 4)
        len = 4;
    memcpy(buf, &seq, 4);
    for (size_t i = 4; i < len; i++)
        buf[i] = (unsigned char)(seq * 13 + i);
    return xp_shm_ring_push(ring, cached, numbered_src(seq), buf, len, NULL, 0);
}

static int numbered_ok(const unsigned char *p, size_t len, uint32_t seq)
{
    uint32_t got;
    if (len < 4)
        return 0;
    memcpy(&got, p, 4);
    if (got != seq)
        return 0;
    for (size_t i = 4; i < len; i++)
        if (p[i] != (unsigned char)(seq * 13 + i))
            return 0;
    return 1;
}

static uint32_t interesting_len(xp_rng_t *r, const xp_shm_ring_t *ring)
{
    uint32_t max = (uint32_t)xp_shm_ring_max_packet(ring);
    switch (xp_rng_below(r, 8)) {
    case 0: return 0;
    case 1: return UINT32_MAX;              /* the skip marker */
    case 2: return UINT32_MAX - 1;
    case 3: return max;
    case 4: return max + 1;
    case 5: return (uint32_t)xp_rng_below(r, NCELLS * XP_SHM_CELL * 2);
    case 6: return 1u << xp_rng_below(r, 32);
    default: return (uint32_t)xp_rng_next(r);
    }
}

/* Overwrite one cell between head and a bit past tail with garbage that the
 * consumer may take for a published record. */
static void corrupt(xp_rng_t *r, xp_shm_ring_t *ring)
{
    uint64_t h = ring->head, t = ring->tail;
    uint64_t pos = h + xp_rng_below(r, (size_t)(t - h) + 3);
    xp_shm_cell_t *c = &ring->cells[pos & (NCELLS - 1)];
    switch (xp_rng_below(r, 5)) {
    case 0: /* a published header with a bad length */
        set_header(c, pos, interesting_len(r, ring), (int32_t)xp_rng_next(r),
                   (int)xp_rng_below(r, 2));
        break;
    case 1: /* a skip record with a bad cell count */
        set_header(c, pos, UINT32_MAX,
                   xp_rng_below(r, 2) ? (int32_t)xp_rng_below(r, NCELLS * 2)
                                      : (int32_t)xp_rng_next(r),
                   1);
        break;
    case 2: /* the whole cell random (seq rarely matches) */
        xp_rng_fill(r, c, sizeof(*c));
        break;
    case 3: /* payload bytes only: delivery must still be bounded */
        xp_rng_fill(r, c->payload, sizeof(c->payload));
        break;
    default: /* a stale position */
        c->word = (c->word & ~(uint64_t)UINT32_MAX) |
                  (uint32_t)(pos + NCELLS * (1 + xp_rng_below(r, 3)));
        break;
    }
}

static void fuzz_round(xp_rng_t *r, xp_shm_ring_t *ring, size_t bytes, sink_t *sink)
{
    uint64_t cached = 0;
    uint32_t pushed = 0, expect = 0;
    int corrupted = 0;
    xp_shm_ring_init(ring, NCELLS);
    memset(ring->cells, 0xa5, NCELLS * sizeof(xp_shm_cell_t));
    for (uint32_t i = 0; i < NCELLS; i++)
        ring->cells[i].word = xp_shm_free_word(i);
    int steps = 20 + (int)xp_rng_below(r, 60);
    for (int s = 0; s < steps; s++) {
        switch (xp_rng_below(r, 4)) {
        case 0:
        case 1: {
            size_t len = xp_rng_below(r, 8) ? xp_rng_below(r, 200)
                                            : xp_rng_below(r, xp_shm_ring_max_packet(ring) + 1);
            xp_status_t st = push_numbered(ring, &cached, pushed, len);
            XP_CHECK(st == XP_OK || st == XP_ERR_AGAIN);
            if (st == XP_OK)
                pushed++;
            break;
        }
        case 2:
            if (xp_rng_below(r, 3) == 0) {
                corrupt(r, ring);
                corrupted = 1;
            }
            break;
        default: {
            int before = sink->delivered, bad_before = sink->bad;
            int n = xp_shm_ring_poll(ring, 1 + (int)xp_rng_below(r, 8), on_packet, sink);
            XP_CHECK_EQ(sink->bad, bad_before);
            if (n < 0) {
                XP_CHECK(corrupted);
                break;
            }
            XP_CHECK_EQ(n, sink->delivered - before);
            /* Until the first corruption, every packet is the next one, intact. */
            if (!corrupted && n > 0) {
                expect += (uint32_t)n;
                XP_CHECK(numbered_ok(sink->copy, sink->len, expect - 1));
                XP_CHECK_EQ(sink->src, numbered_src(expect - 1));
            }
            break;
        }
        }
        /* Garbage published past tail moves head past it: packets are
         * lost then, but every access stays inside the ring. */
        if (!corrupted)
            XP_CHECK(ring->head <= ring->tail);
    }
    (void)bytes;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100000;
    size_t bytes = xp_shm_ring_bytes(NCELLS);
    /* Exactly the ring's size, so a read past its end is an ASan error. */
    xp_shm_ring_t *ring = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    sink_t *sink = calloc(1, sizeof(*sink));
    XP_REQUIRE(ring && sink);
    sink->ring = ring;
    sink->ring_bytes = bytes;
    xp_rng_t r = { 0x51a6f00du };

    /* Known cases first. */
    uint64_t cached = 0;
    xp_shm_ring_init(ring, NCELLS);
    XP_CHECK_EQ(push_numbered(ring, &cached, 0, 10), XP_OK);
    set_header(&ring->cells[0], 0, UINT32_MAX - 1, 0, 1); /* a length no ring can hold */
    int saved = xp_fuzz_quiet();
    int n = xp_shm_ring_poll(ring, 4, on_packet, sink);
    xp_fuzz_loud(saved);
    XP_CHECK_EQ(n, -1);
    XP_CHECK_EQ(sink->delivered, 0);
    xp_shm_ring_init(ring, NCELLS);
    cached = 0;
    XP_CHECK_EQ(push_numbered(ring, &cached, 0, 10), XP_OK);
    set_header(&ring->cells[0], 0, UINT32_MAX, NCELLS + 1, 1); /* a skip past the end */
    saved = xp_fuzz_quiet();
    n = xp_shm_ring_poll(ring, 4, on_packet, sink);
    xp_fuzz_loud(saved);
    XP_CHECK_EQ(n, -1);
    XP_CHECK(!xp_shm_ring_valid(ring, bytes - 1));
    XP_CHECK(xp_shm_ring_valid(ring, bytes));

    /* A second argument keeps the log (to read why a check failed). */
    saved = argc > 2 ? -1 : xp_fuzz_quiet();
    for (int i = 0; i < rounds; i++)
        fuzz_round(&r, ring, bytes, sink);
    xp_fuzz_loud(saved);
    fflush(stdout);
    printf("%d rounds, %d packets delivered, %d out of bounds\n", rounds, sink->delivered,
           sink->bad);
    XP_CHECK_EQ(sink->bad, 0);
    free(sink);
    free(ring);
    return xp_test_result();
}
