/*
 * transport/shm_ring.h - lock-free multi-producer single-consumer packet ring.
 *
 * The ring lives in shared memory (one per receiving process). It is an array
 * of 64-byte cells; a packet occupies 1..n consecutive cells and is always
 * contiguous (a producer that would wrap first claims the cells up to the end
 * as a "skip" packet), so the consumer hands the handler a pointer straight
 * into the ring: no copy on the receive side.
 *
 * Producers claim cells with a compare-and-swap on `tail`, write the packet,
 * then publish it by storing the claim position into the first cell's `seq`
 * (release). The consumer delivers the packet at `head` when that cell's seq
 * equals head, clears the seq word of every cell after the first that it
 * frees (so stale payload bytes can never look like a later position; a
 * first cell keeps an older position, which never matches again) and
 * advances `head`.
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

#define XP_SHM_CELL 64u               /* bytes per cell */
#define XP_SHM_CELL_HDR 16u           /* seq + len + src at the start of a packet */
#define XP_SHM_RING_MAGIC 0x58505249u /* "XPRI" */
#define XP_SHM_SKIP_LEN UINT32_MAX    /* len of padding up to the end of the array */
#define XP_SHM_FREE_SEQ UINT64_MAX    /* seq of a cell that no packet starts at */

typedef struct xp_shm_cell {
    uint64_t seq;  /* claim position once published; older or UINT64_MAX when free */
    uint32_t len;  /* payload bytes, or XP_SHM_SKIP_LEN for padding */
    int32_t src;   /* sender rank; for padding: number of cells */
    unsigned char payload[XP_SHM_CELL - XP_SHM_CELL_HDR];
} xp_shm_cell_t;

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
 * zeroed seq never equals a position. For rings mostly never used (one per
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
        memcpy(dst, s, n);
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
 * cached head, not too large): 1 when it pushed the packet, 0 when the
 * caller must call xp_shm_ring_push_single (nothing was written). It makes
 * no call, so a sender's fast path stays a leaf. */
static inline int xp_shm_ring_try_push_single(xp_shm_ring_t *ring, const uint64_t *cached_head,
                                              int src, const void *hdr, size_t hdr_len,
                                              const void *data, size_t data_len)
{
    size_t len = hdr_len + data_len;
    size_t need = (XP_SHM_CELL_HDR + len + XP_SHM_CELL - 1) / XP_SHM_CELL;
    uint32_t ncells = ring->ncells;
    uint64_t t = xp_load_relaxed(&ring->tail);
    uint32_t idx = (uint32_t)(t & (ncells - 1));
    /* need <= ncells / 2 is len <= xp_shm_ring_max_packet(ring). */
    if (__builtin_expect(need > ncells / 2 || idx + need > ncells ||
                             (int64_t)(t + need - xp_load_relaxed(cached_head)) > (int64_t)ncells,
                         0))
        return 0;
    xp_shm_cell_t *c = &ring->cells[idx];
    xp_store_release(&ring->tail, t + need);
    c->len = (uint32_t)len;
    c->src = src;
    xp_shm_copy_small(c->payload, hdr, hdr_len);
    xp_shm_copy_small(c->payload + hdr_len, data, data_len);
    xp_store_release(&c->seq, t);
    return 1;
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
    if (xp_load_relaxed(&ring->cells[h & (ring->ncells - 1)].seq) != h)
        return 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

/* Log a malformed packet at position h (out of line: never on the fast
 * path). Returns -1. */
int xp_shm_ring_corrupt(const xp_shm_ring_t *ring, uint64_t h);

/* Free the n cells of the packet (or padding) at position h and advance
 * head past them. Only cells after the first can hold payload bytes where
 * a seq belongs, so only their seq words are cleared; the first one keeps
 * its (older) position, which never equals a later one, and so stays a line
 * the consumer only reads. */
static inline void xp_shm_ring_release(xp_shm_ring_t *ring, uint64_t h, uint32_t n)
{
    uint32_t mask = ring->ncells - 1;
    for (uint32_t i = 1; i < n; i++)
        xp_store_relaxed(&ring->cells[(h + i) & mask].seq, XP_SHM_FREE_SEQ);
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
        if (xp_load_acquire(&c->seq) != h)
            return 0;
        uint32_t len = c->len, room = ncells - (uint32_t)(h & mask);
        if (__builtin_expect(len == XP_SHM_SKIP_LEN, 0)) { /* padding: c->src cells */
            uint32_t skip = (uint32_t)c->src;
            if (skip == 0 || skip > room)
                return xp_shm_ring_corrupt(ring, h);
            xp_shm_ring_release(ring, h, skip);
            h += skip;
            continue;
        }
        uint64_t n = ((uint64_t)len + XP_SHM_CELL_HDR + XP_SHM_CELL - 1) / XP_SHM_CELL;
        if (__builtin_expect(n > room || n > ncells / 2, 0))
            return xp_shm_ring_corrupt(ring, h);
        if (gate && xp_shm_ring_pending(gate))
            return XP_SHM_RING_GATED;
        fn(arg, c->src, c->payload, len);
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
