/*
 * transport/inplace.h - in-place sends: the caller writes a packet's header
 * and payload straight into a route's ring cells instead of building the
 * header on its stack for send() to copy.
 *
 * A transport offers it per peer through xp_tl_ops_t::inplace (the shm
 * transport: the pair request lane of one thread of ours, a single-producer
 * ring). xp_tl_route_reserve either claims room for one packet (and returns
 * where its bytes go: the caller writes header and payload there, e.g. with
 * xp_tl_copy_small) or returns NULL, and
 * then nothing was written and the caller sends the ordinary way
 * (xp_tl_route_send), which handles every other case: a thread other than
 * the lane's owner, a lane not announced yet, other threads' requests still
 * in flight, a full or wrapping lane, a dead peer. (The reserve judges room
 * by the sender's cached view of the consumer's head; only the ordinary
 * send looks at the head again, so after NULL for a full lane, send the
 * ordinary way rather than reserving again.) A successful reserve MUST
 * be followed by xp_tl_route_commit on the same thread, with no other send
 * in between: the commit publishes the packet (release) and rings the peer.
 */
#ifndef XP_TRANSPORT_INPLACE_H
#define XP_TRANSPORT_INPLACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "transport/shm_ring.h"
#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/atomic.h"
#include "util/copy.h"
#include "util/tsan.h"

/* The state a peer's in-place sends read and write (the shm transport's
 * per-peer sender state holds it; its send functions use the same fields,
 * so that both paths keep the one-producer rule of the lane). */
struct xp_tl_inplace {
    uintptr_t owner;       /* xp_thread_id() of the lane's one producer once it
                            * has announced the lane; 0: nobody fills it in place
                            * (none yet, or the peer is dead) */
    xp_shm_ring_t *ring;   /* the lane (NULL: none) */
    uint64_t mask;         /* its ncells - 1 */
    uint64_t cached_head;  /* the owner's view of ring->head */
    uint64_t owner_seen;   /* owner only: other_end value known delivered */
    xp_doorbell_t *db;     /* the peer's doorbell */
    int fence;             /* ringing it needs a store-load fence */
    int dead;              /* the peer is gone */
    int src;               /* our rank: the packets' sender */
    /* The heads of the lanes this peer sends us (NULL: none), and their sum
     * at our last send: whether we took a packet of its since
     * (xp_tl_inplace_ahead). Written by the lane's producer only. */
    const uint64_t *rx_head[2];
    uint64_t rx_seen;
    /* Written by the other threads of ours: end position in the peer's
     * inbox of the last request they put there (their line alone). */
    uint64_t other_end XP_CACHE_ALIGNED;
};

/* ip.owner of a send_excl lane (xp_tl_route_reserve_excl): filled in place
 * by whichever thread its callers' serialisation admits. */
#define XP_TL_INPLACE_ANY ((uintptr_t)1)

/* A reserved packet, between reserve and commit. */
typedef struct xp_tl_cell {
    xp_shm_cell_t *cell;
    uint64_t word;         /* its header word: the commit publishes it */
} xp_tl_cell_t;

/* Whether a send on ip's lane should ask for the cell a few ahead
 * (xp_shm_cell_prefetch): not when we took a packet of the peer's since our
 * last send to it. Then the peer answers what we send, as in a ping-pong,
 * and waits at the very cell we fill: the line it spins on must come back
 * to us anyway, and a second one asked for then, the cell ahead, only
 * competes with it (8 B ping-pong in the Zen 5 VM's far state, 8
 * interleaved rounds: 0.336-0.367 -> 0.311-0.341 us one way). A stream's
 * sender takes nothing between its sends, and keeps the prefetch that its
 * rate needs (8 B, 27-33 M/s with it, 13-17 without). Two loads of lines
 * we write as we take packets. */
static inline int xp_tl_inplace_ahead(xp_tl_inplace_t *ip)
{
    if (!ip->rx_head[0])
        return 1;
    uint64_t seen = xp_load_relaxed(ip->rx_head[0]) + xp_load_relaxed(ip->rx_head[1]);
    if (seen == ip->rx_seen)
        return 1;
    ip->rx_seen = seen;
    return 0;
}

/* The ring part of the reserves: room for len bytes on ip's lane, `ring`
 * (ip->ring, which a caller may keep: it is set before the lane has an
 * owner and never changes after); `ahead`: ask for the cell a few past it
 * (xp_tl_inplace_ahead). */
static inline void *xp_tl_inplace_reserve_ring_ahead(xp_tl_inplace_t *ip, xp_shm_ring_t *ring,
                                                     size_t len, xp_tl_cell_t *out, int ahead)
{
    uint64_t need = xp_shm_cells_for(len, ip->src);
    uint64_t t = xp_load_relaxed(&ring->tail), end = t + need, mask = ip->mask;
    /* The common case of xp_shm_ring_try_push_single: no wrap (the first
     * and last cells in one lap: need <= ncells), room by the cached head
     * (never ahead of the tail). */
    if (__builtin_expect(((end - 1) ^ t) > mask || end - ip->cached_head > mask + 1, 0))
        return NULL;
    xp_shm_cell_t *c = &ring->cells[t & mask];
    if (ahead)
        xp_shm_cell_prefetch(ring->cells, t, mask);
    xp_tsan_message_out();
    xp_store_release(&ring->tail, end);
    out->cell = c;
    return xp_shm_cell_open(c, t, len, ip->src, &out->word);
}

/* xp_tl_inplace_reserve_ring_ahead with the lane's own choice. */
static inline void *xp_tl_inplace_reserve_ring(xp_tl_inplace_t *ip, xp_shm_ring_t *ring,
                                               size_t len, xp_tl_cell_t *out)
{
    return xp_tl_inplace_reserve_ring_ahead(ip, ring, len, out, xp_tl_inplace_ahead(ip));
}

/* xp_tl_route_reserve given the route's in-place state ip (not NULL) and
 * its ring, kept by the caller (no loads through the route). */
static inline void *xp_tl_inplace_reserve(xp_tl_inplace_t *ip, xp_shm_ring_t *ring, size_t len,
                                          xp_tl_cell_t *out)
{
    /* (A dead peer's lane has no owner.) */
    if (xp_load_relaxed(&ip->owner) != xp_thread_id() ||
        xp_load_acquire(&ip->other_end) != ip->owner_seen)
        return NULL;
    return xp_tl_inplace_reserve_ring(ip, ring, len, out);
}

/* Claim room on route r for one packet of len bytes; returns where its
 * bytes go (8-byte aligned, len bytes contiguous) or NULL (nothing was
 * claimed: send the ordinary way). The caller has checked len against
 * r->max_packet (a route's in-place ring holds max_packet in half its
 * cells: shm's pair lanes do), writes the packet, then commits it. */
static inline void *xp_tl_route_reserve(const xp_tl_route_t *r, size_t len, xp_tl_cell_t *out)
{
    xp_tl_inplace_t *ip = r->inplace;
    return ip ? xp_tl_inplace_reserve(ip, ip->ring, len, out) : NULL;
}

/* xp_tl_route_reserve_excl given the route's send_excl in-place state ip
 * (not NULL) and its ring, kept by the caller (not read before the lane is
 * announced: ip->ring is set then). `waited`: an answer that its peer
 * waits for before it sends its next request (the REPLY of a fetching
 * atomic), reserved without asking for the cell ahead. The answer lane
 * asks for it on every other answer, which a stream of ACKs needs (the 8 B
 * rate); but where requests and answers alternate, the peer waits at the
 * very cell this answer fills, and the cell ahead only competes with it
 * (round 34's reason for requests). */
static inline void *xp_tl_inplace_reserve_excl(xp_tl_inplace_t *ip, xp_shm_ring_t *ring,
                                               size_t len, xp_tl_cell_t *out, int waited)
{
    if (!xp_load_relaxed(&ip->owner))
        return NULL;
    return xp_tl_inplace_reserve_ring_ahead(ip, ring, len, out,
                                            !waited && xp_tl_inplace_ahead(ip));
}

/* xp_tl_route_reserve for send_excl's packets (the caller is serialised
 * with every other send_excl caller: the engine's poll lock); commit with
 * xp_tl_route_commit_excl. NULL (nothing claimed): the lane is not
 * announced yet (the first send_excl does it), the peer is dead, or the
 * lane is full or wraps: send with xp_tl_route_send_excl. */
static inline void *xp_tl_route_reserve_excl(const xp_tl_route_t *r, size_t len,
                                             xp_tl_cell_t *out)
{
    xp_tl_inplace_t *ip = r->inplace_excl;
    return ip ? xp_tl_inplace_reserve_excl(ip, ip->ring, len, out, 0) : NULL;
}

/* Copy n bytes into a reserved packet without a library call up to 64
 * bytes: two overlapping fixed-size copies, tested from the small sizes up
 * (an in-place packet is a small one: an 8-byte payload takes two tests). */
static inline void xp_tl_copy_small(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (__builtin_expect(n < 8, 0)) {
        if (n >= 4) {
            __builtin_memcpy(d, s, 4);
            __builtin_memcpy(d + n - 4, s + n - 4, 4);
        } else {
            for (size_t i = 0; i < n; i++)
                d[i] = s[i];
        }
    } else if (n <= 16) {
        __builtin_memcpy(d, s, 8);
        __builtin_memcpy(d + n - 8, s + n - 8, 8);
    } else if (n <= 32) {
        __builtin_memcpy(d, s, 16);
        __builtin_memcpy(d + n - 16, s + n - 16, 16);
    } else if (n <= 64) {
        __builtin_memcpy(d, s, 32);
        __builtin_memcpy(d + n - 32, s + n - 32, 32);
    } else {
        xp_copy(d, s, n);
    }
}

/* Publish the packet reserved on r (written in full) and ring the peer. */
static inline void xp_tl_route_commit(const xp_tl_route_t *r, const xp_tl_cell_t *c)
{
    const xp_tl_inplace_t *ip = r->inplace;
    xp_shm_cell_publish(c->cell, c->word);
    xp_shm_doorbell_ring_fenced(ip->db, ip->fence);
}

/* The same for a packet of xp_tl_route_reserve_excl. */
static inline void xp_tl_route_commit_excl(const xp_tl_route_t *r, const xp_tl_cell_t *c)
{
    const xp_tl_inplace_t *ip = r->inplace_excl;
    xp_shm_cell_publish(c->cell, c->word);
    xp_shm_doorbell_ring_fenced(ip->db, ip->fence);
}

#endif
