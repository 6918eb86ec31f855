/*
 * transport/shm_ring.h - lock-free multi-producer single-consumer packet ring.
 *
 * The ring lives in shared memory (one per receiving process). It is an array
 * of 64-byte cells; a packet occupies 1..n consecutive cells and is always
 * contiguous (a producer that would wrap first claims the cells up to the end
 * as a "skip" packet), so the consumer hands the handler a pointer straight
 * into the ring: no copy on the receive side.
 *
 * A packet's first cell starts with one 64-bit header word: the low 32 bits
 * of its claim position, its length (16 bits) and its sender (16 bits).
 * Producers claim cells with a compare-and-swap on `tail`, write the
 * packet, then publish it with one release store of that word. A packet
 * too long for 16 bits (or from a sender that does not fit them, or
 * padding) has a long header: the word says XP_SHM_LONG and the next 8
 * bytes hold the 32-bit length and sender. The short header leaves 56
 * bytes in the first cell: a compact put header (40 bytes) and 16 bytes of
 * data travel in one cell.
 * The consumer delivers the packet at `head` when that cell's word carries
 * head's position, gives every cell after the first that it frees a word
 * that no position of that cell can carry (so stale payload bytes can never
 * look like a later position; a first cell keeps an older position, and
 * every cell is written again each lap, so 32 bits of it never match
 * again) and advances `head`.
 * Producers read `head` only when their cached copy says the ring is full.
 * `tail`, `head` and the read-only geometry sit on separate cache lines.
 */
#ifndef XP_TRANSPORT_SHM_RING_H
#define XP_TRANSPORT_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transport/transport.h"
#include "util/atomic.h"
#include "util/copy.h"

#define XP_SHM_CELL 64u               /* bytes per cell */
#define XP_SHM_CELL_HDR 16u           /* the largest packet header (a long one) */
#define XP_SHM_CELL_HDR_SHORT 8u      /* the common one: the header word alone */
#define XP_SHM_LONG 0xffffu           /* length field of a long header */
#define XP_SHM_RING_MAGIC 0x58505249u /* "XPRI" */
#define XP_SHM_SKIP_LEN UINT32_MAX    /* len of padding up to the end of the array */

typedef struct xp_shm_cell {
    uint64_t word; /* (uint32_t)position | len16 << 32 | src16 << 48 once published */
    unsigned char payload[XP_SHM_CELL - XP_SHM_CELL_HDR_SHORT];
} xp_shm_cell_t;

/* What follows the word of a long header. */
typedef struct xp_shm_long {
    uint32_t len;  /* payload bytes, or XP_SHM_SKIP_LEN for padding */
    int32_t src;   /* sender rank; for padding: number of cells */
} xp_shm_long_t;

/* Whether a packet of len bytes from src has the short header. */
static inline int xp_shm_hdr_short(size_t len, int src)
{
    return len < XP_SHM_LONG && (unsigned)src < XP_SHM_LONG;
}

/* Cells a packet of len bytes from src takes. */
static inline uint64_t xp_shm_cells_for(size_t len, int src)
{
    size_t hdr = xp_shm_hdr_short(len, src) ? XP_SHM_CELL_HDR_SHORT : XP_SHM_CELL_HDR;
    return ((uint64_t)len + hdr + XP_SHM_CELL - 1) / XP_SHM_CELL;
}

/* The length and sender bits of a short header word. */
static inline uint64_t xp_shm_word_short(size_t len, int src)
{
    return (uint64_t)len << 32 | (uint64_t)(unsigned)src << 48;
}

/* Start a packet of len bytes from src in cell c at position pos: writes
 * what a long header has after its word, sets *word to the header word that
 * publishes it (xp_shm_cell_publish, after its bytes), and returns where
 * its bytes go (8-byte aligned). */
static inline unsigned char *xp_shm_cell_open(xp_shm_cell_t *c, uint64_t pos, size_t len, int src,
                                              uint64_t *word)
{
    if (__builtin_expect(xp_shm_hdr_short(len, src), 1)) {
        *word = (uint32_t)pos | xp_shm_word_short(len, src);
        return c->payload;
    }
    xp_shm_long_t l = { (uint32_t)len, (int32_t)src };
    memcpy(c->payload, &l, sizeof(l));
    *word = (uint32_t)pos | (uint64_t)XP_SHM_LONG << 32;
    return c->payload + sizeof(l);
}

/* Publish the packet whose header word is `word` (release: its bytes are
 * visible to the consumer that sees the word). */
static inline void xp_shm_cell_publish(xp_shm_cell_t *c, uint64_t word)
{
    xp_store_release(&c->word, word);
    /* The reader's next load of it then misses to the shared cache, not
     * into this core (measured with the prefetch below: 8 B message rate
     * 16-24 -> 27-46 M/s, 32 B 14-21 -> 30-37; one-way latency the same). */
    xp_cache_demote(&c->word); /* (reads the word: stays after the store) */
}

/* Cells a sender asks for ahead of the one it fills: far enough that the
 * line has left the reader (who read it one lap ago) by the time the
 * stores come, near enough to stay in this core's cache. 4 measured best
 * of 1, 2, 4 and 6 (1 slows a ping-pong: the reader is still on it). */
#define XP_SHM_PREFETCH_CELLS 4

/* Ask for the cell XP_SHM_PREFETCH_CELLS past position t of a ring of
 * mask + 1 cells in exclusive state (a hint: nothing changes). */
static inline void xp_shm_cell_prefetch(xp_shm_cell_t *cells, uint64_t t, uint64_t mask)
{
    xp_prefetch_write(&cells[(t + XP_SHM_PREFETCH_CELLS) & mask]);
}

/* The word of a freed cell at position pos: its low bits are those of the
 * next cell, so no position of this cell ever equals it. */
static inline uint64_t xp_shm_free_word(uint64_t pos)
{
    return (uint32_t)(pos + 1);
}

/* Whether cell c holds a packet published at position pos. */
static inline int xp_shm_cell_at(uint64_t word, uint64_t pos)
{
    return (uint32_t)word == (uint32_t)pos;
}

typedef struct xp_shm_ring {
    uint32_t magic;
    uint32_t ncells;      /* power of two */
    uint64_t tail XP_CACHE_ALIGNED; /* next position to claim (producers) */
    uint64_t head XP_CACHE_ALIGNED; /* next position to deliver (consumer) */
    xp_shm_cell_t cells[] XP_CACHE_ALIGNED;
} xp_shm_ring_t;

/* Bytes needed for a ring of ncells (a power of two >= 16). */
size_t xp_shm_ring_bytes(uint32_t ncells);
/* Initialise a ring in zeroed or reused memory of xp_shm_ring_bytes(ncells). */
void xp_shm_ring_init(xp_shm_ring_t *ring, uint32_t ncells);
/* Nonzero if `ring` looks initialised with ncells cells (for an attacher). */
int xp_shm_ring_valid(const xp_shm_ring_t *ring, size_t mapped_bytes);
/* Largest hdr_len + data_len one push accepts (half the ring, at most). */
size_t xp_shm_ring_max_packet(const xp_shm_ring_t *ring);

/* Initialise a ring in memory that is all zeroes (a fresh shared-memory
 * object) without touching its cells: positions start at ncells, so a
 * zeroed word never carries a position. For rings mostly never used (one per
 * sender pair), so that their pages stay unallocated. */
void xp_shm_ring_init_zeroed(xp_shm_ring_t *ring, uint32_t ncells);

/* Append one packet from rank src. Thread-safe and lock-free.
 * cached_head: the producer's private copy of ring->head (start it at 0).
 * XP_ERR_AGAIN: not enough free cells now; XP_ERR_OVERFLOW: too large. */
xp_status_t xp_shm_ring_push(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                             const void *hdr, size_t hdr_len, const void *data, size_t data_len);
/* Same, and on success *end is the position just past the packet (the
 * consumer has handled it once ring->head >= *end). */
xp_status_t xp_shm_ring_push_end(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                                 const void *hdr, size_t hdr_len, const void *data,
                                 size_t data_len, uint64_t *end);
/* xp_shm_ring_push_single's cases other than the common one (wrap, full
 * by the cached head, too large). */
xp_status_t xp_shm_ring_push_single_slow(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                                         const void *hdr, size_t hdr_len, const void *data,
                                         size_t data_len);

/* Copy n bytes, without a library call up to 64 (a compact header, a
 * small payload): two overlapping fixed-size copies. */
static inline void xp_shm_copy_small(unsigned char *dst, const void *src, size_t n)
{
    const unsigned char *s = src;
    if (n > 64) {
        xp_copy(dst, s, n);
    } else if (n >= 32) {
        __builtin_memcpy(dst, s, 32);
        __builtin_memcpy(dst + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        __builtin_memcpy(dst, s, 16);
        __builtin_memcpy(dst + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        __builtin_memcpy(dst, s, 8);
        __builtin_memcpy(dst + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        __builtin_memcpy(dst, s, 4);
        __builtin_memcpy(dst + n - 4, s + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            dst[i] = s[i];
    }
}

/* The common case of xp_shm_ring_push_single (no wrap, room known from the
 * cached head, not too large, a short header): 1 when it pushed the packet,
 * 0 when the caller must call xp_shm_ring_push_single (nothing was
 * written). It makes no call, so a sender's fast path stays a leaf.
 * `ahead`: ask for the cell a few past it (xp_shm_cell_prefetch), which a
 * stream wants and a ping-pong does not (transport/inplace.h,
 * xp_tl_inplace_ahead). */
static inline int xp_shm_ring_try_push_single_ahead(xp_shm_ring_t *ring,
                                                    const uint64_t *cached_head, int ahead,
                                                    int src, const void *hdr, size_t hdr_len,
                                                    const void *data, size_t data_len)
{
    size_t len = hdr_len + data_len;
    /* Long headers (rare) take xp_shm_ring_push_single's slow path. */
    if (__builtin_expect(!xp_shm_hdr_short(len, src), 0))
        return 0;
    /* The header word's bits besides the position, made before the stores
     * below: `src` is then dead. Kept live instead, gcc spilled it with a
     * 4-byte store and reloaded it with an 8-byte load (it only needs the
     * low bits), a load that no store can forward to; it waits until the
     * store reaches the cache, behind every older store, i.e. behind the
     * previous packet's cell, whose line the consumer has just read. That
     * serialised every send on a cross-core transfer: tl_bench's 8 B stream
     * 25 -> 54 M/s without it (AMD EPYC VM, round 25). */
    uint64_t need = xp_shm_cells_for(len, src);
    uint64_t bits = xp_shm_word_short(len, src);
    __asm__("" : "+r"(bits)); /* made here, in a 64-bit register */
    uint32_t ncells = ring->ncells;
    uint64_t t = xp_load_relaxed(&ring->tail);
    uint32_t idx = (uint32_t)(t & (ncells - 1));
    /* The first test is len > xp_shm_ring_max_packet(ring). */
    if (__builtin_expect(len + XP_SHM_CELL_HDR > (size_t)(ncells / 2) * XP_SHM_CELL ||
                             idx + need > ncells ||
                             (int64_t)(t + need - xp_load_relaxed(cached_head)) > (int64_t)ncells,
                         0))
        return 0;
    xp_shm_cell_t *c = &ring->cells[idx];
    if (ahead)
        xp_shm_cell_prefetch(ring->cells, t, ncells - 1);
    xp_store_release(&ring->tail, t + need);
    unsigned char *p = c->payload;
    xp_shm_copy_small(p, hdr, hdr_len);
    xp_shm_copy_small(p + hdr_len, data, data_len);
    xp_shm_cell_publish(c, (uint32_t)t | bits);
    return 1;
}

/* xp_shm_ring_try_push_single_ahead with the prefetch. */
static inline int xp_shm_ring_try_push_single(xp_shm_ring_t *ring, const uint64_t *cached_head,
                                              int src, const void *hdr, size_t hdr_len,
                                              const void *data, size_t data_len)
{
    return xp_shm_ring_try_push_single_ahead(ring, cached_head, 1, src, hdr, hdr_len, data,
                                             data_len);
}

/* Append one packet to a ring that has ONE producer (the caller guarantees
 * that no other thread or process pushes to it concurrently): no locked
 * instruction, the tail is advanced with a plain release store. Same
 * results as xp_shm_ring_push. Never mix the two on one ring. Inline: the
 * common case is a few loads and stores around the copies. */
static inline xp_status_t xp_shm_ring_push_single(xp_shm_ring_t *ring, uint64_t *cached_head,
                                                  int src, const void *hdr, size_t hdr_len,
                                                  const void *data, size_t data_len)
{
    if (__builtin_expect(
            xp_shm_ring_try_push_single(ring, cached_head, src, hdr, hdr_len, data, data_len), 1))
        return XP_OK;
    return xp_shm_ring_push_single_slow(ring, cached_head, src, hdr, hdr_len, data, data_len);
}

/* Deliver up to budget packets to fn. One consumer at a time (the caller
 * serialises); returns the number delivered, or -1 if the ring is corrupt. */
int xp_shm_ring_poll(xp_shm_ring_t *ring, int budget, xp_tl_recv_fn fn, void *arg);
/* Same, but stops before each packet while `gate` has one at its head (the
 * caller handles gate's packets first, then calls again): packets published
 * in gate before a packet of ring (in happens-before order) are delivered
 * before it. */
int xp_shm_ring_poll_gated(xp_shm_ring_t *ring, int budget, xp_tl_recv_fn fn, void *arg,
                           xp_shm_ring_t *gate);
/* Nonzero if a packet (or padding) is ready at head. Any thread. */
static inline int xp_shm_ring_pending(xp_shm_ring_t *ring)
{
    /* Relaxed loads and a fence on success only: waiters call this in
     * every spin, over several rings, and acquire loads would make the
     * compiler reload everything around them. */
    uint64_t h = xp_load_relaxed(&ring->head);
    if (!xp_shm_cell_at(xp_load_relaxed(&ring->cells[h & (ring->ncells - 1)].word), h))
        return 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

/* Cells of a packet a reader asks for as it starts on the packet. */
#define XP_SHM_TAKE_PREFETCH_CELLS 32

/* Ask for the lines of the packet of n cells at position h after its first
 * (at most XP_SHM_TAKE_PREFETCH_CELLS: 2 KiB), before its handler runs: the
 * handler decodes, matches and looks up its entry before it copies the
 * payload, and the lines, in the sender's cache until now, travel while it
 * does. Ping-pongs of 128 B-2 KiB 5-9 % faster (AMD EPYC VM, round 27);
 * a one-cell packet skips the loop. Then the cell the next look reads
 * (a stream's next packet is often written already): 8 B rate +0.3 M/s in
 * the median, higher in 14 of 17 interleaved pairs, one-way the same
 * (round 30). */
static inline void xp_shm_packet_prefetch(const xp_shm_ring_t *ring, uint64_t h, uint64_t n)
{
    uint32_t mask = ring->ncells - 1;
    for (uint64_t i = 1; i < n && i <= XP_SHM_TAKE_PREFETCH_CELLS; i++)
        xp_prefetch_read(&ring->cells[(h + i) & mask]);
    xp_prefetch_read(&ring->cells[(h + n) & mask]);
}

/* Log a malformed packet at position h (out of line: never on the fast
 * path). Returns -1. */
int xp_shm_ring_corrupt(const xp_shm_ring_t *ring, uint64_t h);

/* Free the n cells of the packet (or padding) at position h and advance
 * head past them. Only cells after the first can hold payload bytes where
 * a header word belongs, so only their words are cleared; the first one
 * keeps its (older) position, which never equals a later one, and so stays
 * a line the consumer only reads. */
static inline void xp_shm_ring_release(xp_shm_ring_t *ring, uint64_t h, uint32_t n)
{
    uint32_t mask = ring->ncells - 1;
    for (uint32_t i = 1; i < n; i++)
        xp_store_relaxed(&ring->cells[(h + i) & mask].word, xp_shm_free_word(h + i));
    xp_store_release(&ring->head, h + n);
}

/* xp_shm_ring_take_gated's answer when a packet is ready but `gate` has
 * one at its head too: nothing was delivered. */
#define XP_SHM_RING_GATED 2

/* Deliver the packet at head to fn, if one is published there (padding in
 * front of it is skipped): 1 delivered, 0 nothing ready, -1 the ring is
 * corrupt (nothing is delivered from it any more), XP_SHM_RING_GATED: gate
 * (if not NULL) has a packet at its head, looked at after this ring's
 * packet was seen, so that what was published in gate before it (in
 * happens-before order) is delivered first. One consumer at a time.
 * Inline, so that a caller with a known fn calls it directly and a poll of
 * one packet has no loop or budget around it. */
static inline int xp_shm_ring_take_gated(xp_shm_ring_t *ring, xp_tl_recv_fn fn, void *arg,
                                         xp_shm_ring_t *gate)
{
    uint32_t ncells = ring->ncells, mask = ncells - 1;
    uint64_t h = xp_load_relaxed(&ring->head);
    for (;;) {
        xp_shm_cell_t *c = &ring->cells[h & mask];
        uint64_t w = xp_load_acquire(&c->word);
        if (!xp_shm_cell_at(w, h))
            return 0;
        uint32_t len = (uint32_t)(w >> 32) & XP_SHM_LONG, room = ncells - (uint32_t)(h & mask);
        int src = (int)(w >> 48);
        unsigned char *p = c->payload;
        if (__builtin_expect(len == XP_SHM_LONG, 0)) {
            xp_shm_long_t l;
            memcpy(&l, p, sizeof(l));
            p += sizeof(l);
            len = l.len;
            src = l.src;
            if (len == XP_SHM_SKIP_LEN) { /* padding: src cells */
                uint32_t skip = (uint32_t)src;
                if (skip == 0 || skip > room)
                    return xp_shm_ring_corrupt(ring, h);
                xp_shm_ring_release(ring, h, skip);
                h += skip;
                continue;
            }
        }
        uint64_t n = ((uint64_t)len + (size_t)(p - (unsigned char *)c) + XP_SHM_CELL - 1) /
                     XP_SHM_CELL;
        /* (The second test is len > xp_shm_ring_max_packet(ring).) */
        if (__builtin_expect(n > room || (uint64_t)len + XP_SHM_CELL_HDR >
                                             (uint64_t)(ncells / 2) * XP_SHM_CELL,
                             0))
            return xp_shm_ring_corrupt(ring, h);
        if (gate && xp_shm_ring_pending(gate))
            return XP_SHM_RING_GATED;
        xp_shm_packet_prefetch(ring, h, n);
        fn(arg, src, p, len);
        xp_shm_ring_release(ring, h, (uint32_t)n);
        return 1;
    }
}

/* xp_shm_ring_take_gated without a gate. */
static inline int xp_shm_ring_take(xp_shm_ring_t *ring, xp_tl_recv_fn fn, void *arg)
{
    return xp_shm_ring_take_gated(ring, fn, arg, NULL);
}

#endif
