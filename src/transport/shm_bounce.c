/*
 * transport/shm_bounce.c - bounce blocks: the payload of a request too large
 * for one packet, staged in our shared heap, from where the peer copies it
 * with one memcpy through its mapping of the heap.
 *
 * Why: process_vm_readv pins the source pages on every call; on the
 * development VM a 32 KiB read costs about 3 us and a 256 KiB one 19 us,
 * against 0.2 and 2 us for a memcpy. A copy into our heap plus the peer's
 * copy out is several times faster for mid-size puts, and lets a stream of
 * them use both CPUs (docs/performance-notes.md, round 10).
 *
 * A block is a BOUNCE_HDR-byte header, whose first word the reader sets
 * (release) once it has copied the data out and whose second word is a
 * cookie (BOUNCE_MAGIC ^ the header's address, cleared when the block is
 * freed) that the reader checks first, so that a wrong or stale address
 * cannot set a word of some other heap memory; then the data.
 *
 * Pipelined: the writer may send the request after staging only the first
 * chunk and stage the rest while the reader copies behind it (the header's
 * fill word: bytes staged so far; its len word: the data length). A large
 * put then costs about one copy instead of two in a row, and the reader
 * takes lines the writer has just written, which stays fast where a whole
 * staged MiB in the other core's cache was not (the far core-to-core state,
 * docs/performance-notes.md round 11). Every writer ends with a fill of
 * the whole length, after which it never touches the block; the owner
 * frees a block only after that, and the reader hands one back only after
 * that, so an answer (an ACK) never overtakes the writer. The owner
 * trusts nothing else in shared memory: its outstanding blocks are listed in
 * a private ring, oldest first, and freed from there once done (the oldest
 * ones as new blocks are taken; every done one when the list, the cap or
 * the heap is full). The cap keeps most of the heap for xp_shmalloc.
 */
#include <sched.h>
#include <stdlib.h>

#include "transport/shm_internal.h"
#include "util/config.h"
#include "util/log.h"

#define BOUNCE_HDR 64u      /* the done word and the cookie, alone on their line */
#define BOUNCE_CAP_DIV 4u   /* outstanding blocks take at most heap size / this */
#define BOUNCE_MAGIC 0x58504f554e434531ull /* "XPOUNCE1" */

/* The header's words: done (the reader sets it), cookie, fill (bytes
 * staged), len (data bytes; the writer's, fixed before the request goes). */
enum { W_DONE, W_COOKIE, W_FILL, W_LEN };

/* Spins of a reader waiting for the writer's next chunk before it yields
 * its CPU and looks whether the writer still lives: the writer may share
 * the reader's CPU (an oversubscribed node). */
#define FILL_SPINS 256

/* XP_SHM_BOUNCE_MAX, or 0 where bounce blocks are off, do not pay here
 * (XP_SHM_BOUNCE; its probe is not run without a peer) or have no heap;
 * *single: single copies were chosen (off, or the probe's choice). */
static size_t bounce_limit(const shm_tl_t *s, int *single)
{
    xp_shm_copy_probe_t p = { 0 };
    size_t max = s->size < 2 ? 0 : xp_shm_bounce_limit(&p);
    *single = xp_shm_single_copies(&p);
    if (p.len)
        xp_info("shm: bounce blocks %s (%zu bytes: process_vm_readv %.0f ns%s, memcpy %.0f ns)",
                max ? "on" : "off", p.len, p.cma_ns, p.cma_ok ? "" : " (not allowed)", p.copy_ns);
    return s->heap.base ? max : 0;
}

/* Serve blocks up to max bytes (0: none): their list, or no blocks at all
 * where it cannot be allocated. */
static void blocks_on(xp_shm_bounce_t *b, size_t max)
{
    b->list = max ? calloc(XP_SHM_BOUNCE_LIST, sizeof(*b->list)) : NULL;
    b->max = b->list ? max : 0;
}

void xp_shm_bounce_init(shm_tl_t *s)
{
    xp_shm_bounce_t *b = &s->bounce;
    pthread_mutex_init(&b->lock, NULL);
    b->cap = s->heap.size / BOUNCE_CAP_DIV;
    blocks_on(b, bounce_limit(s, &b->single));
}

void xp_shm_bounce_mid(shm_tl_t *s, size_t verdict)
{
    xp_shm_bounce_t *b = &s->bounce;
    size_t max = xp_shm_mid_bounce_limit();
    if (!max || b->max || !s->heap.base || verdict < XP_SHM_PROBE_MAX)
        return;
    blocks_on(b, max);
    xp_debug("shm: bounce blocks up to %zu bytes (the eager probe's verdict)", b->max);
}

size_t xp_shm_bounce_max(xp_tl_t *tl)
{
    return ((const shm_tl_t *)tl)->bounce.max;
}

void xp_shm_bounce_fini(shm_tl_t *s)
{
    xp_shm_bounce_t *b = &s->bounce;
    /* The blocks go with the heap's mapping. */
    free(b->list);
    b->list = NULL;
    b->max = 0;
    pthread_mutex_destroy(&b->lock);
}

static xp_shm_bounce_blk_t *at(xp_shm_bounce_t *b, uint32_t pos)
{
    return &b->list[pos & (XP_SHM_BOUNCE_LIST - 1)];
}

/* Read, or never to be read (its reader is dead), and no longer written:
 * a thread of ours may still stage a pipelined block that a dead reader
 * left, or one whose request was dropped (its reader waits for the fill). */
static int block_done(const shm_tl_t *s, const xp_shm_bounce_blk_t *e)
{
    const uint64_t *w = (const uint64_t *)(const void *)e->blk;
    return (xp_load_acquire(&w[W_DONE]) != 0 || xp_load_relaxed(&s->peers[e->rank].ip.dead)) &&
           xp_load_acquire(&w[W_FILL]) >= e->len;
}

static void block_free(shm_tl_t *s, const xp_shm_bounce_blk_t *e)
{
    xp_store_relaxed(&((uint64_t *)(void *)e->blk)[W_COOKIE], 0);
    xp_shmheap_free(&s->heap, e->blk);
    s->bounce.bytes -= e->size;
}

/* Free the done blocks at the head of the list (b->lock held). */
static void sweep_head(shm_tl_t *s)
{
    xp_shm_bounce_t *b = &s->bounce;
    while (b->head != b->tail && block_done(s, at(b, b->head)))
        block_free(s, at(b, b->head++));
}

/* Free every done block, keeping the others in order (b->lock held; when
 * something is full: a slow reader at the head holds the rest). */
static void sweep_all(shm_tl_t *s)
{
    xp_shm_bounce_t *b = &s->bounce;
    uint32_t keep = b->head;
    for (uint32_t i = b->head; i != b->tail; i++) {
        xp_shm_bounce_blk_t e = *at(b, i);
        if (block_done(s, &e))
            block_free(s, &e);
        else
            *at(b, keep++) = e;
    }
    b->tail = keep;
}

/* Room for one more block of `size` bytes now (b->lock held). */
static int room(const xp_shm_bounce_t *b, size_t size)
{
    return b->tail - b->head < XP_SHM_BOUNCE_LIST && size <= b->cap - b->bytes;
}

void *xp_shm_bounce_alloc(xp_tl_t *tl, int rank, size_t len)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    xp_shm_bounce_t *b = &s->bounce;
    if (len == 0 || len > b->max || rank < 0 || rank >= s->size || rank == s->rank ||
        xp_load_relaxed(&s->peers[rank].ip.dead))
        return NULL;
    /* What the heap's buddy allocator takes for it: a power of two. */
    size_t size = XP_SHMHEAP_MIN_BLOCK;
    while (size < BOUNCE_HDR + len)
        size *= 2;
    unsigned char *blk = NULL;
    pthread_mutex_lock(&b->lock);
    sweep_head(s);
    if (!room(b, size))
        sweep_all(s);
    if (room(b, size) && !(blk = xp_shmheap_alloc(&s->heap, size))) {
        sweep_all(s);
        blk = xp_shmheap_alloc(&s->heap, size);
    }
    if (blk) {
        /* Published to the reader by the send of the request (release). */
        uint64_t *w = (uint64_t *)(void *)blk;
        xp_store_relaxed(&w[W_DONE], 0);
        xp_store_relaxed(&w[W_FILL], 0);
        xp_store_relaxed(&w[W_LEN], len);
        xp_store_relaxed(&w[W_COOKIE], BOUNCE_MAGIC ^ (uint64_t)(uintptr_t)blk);
        *at(b, b->tail++) = (xp_shm_bounce_blk_t){ blk, size, len, rank };
        b->bytes += size;
    }
    pthread_mutex_unlock(&b->lock);
    return blk ? blk + BOUNCE_HDR : NULL;
}

int xp_shm_direct(xp_tl_t *tl, int rank, uint64_t addr, size_t len, int theirs)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    if (rank < 0 || rank >= s->size || rank == s->rank)
        return 0;
    const shm_peer_t *p = &s->peers[rank];
    /* (Ours: only if that peer has mapped our heap; we cannot tell, and
     * when it has not, its copy still works, with process_vm_readv.) */
    return theirs ? p->heap.base && xp_shmheap_in(p->heap_remote, p->heap.size, addr, len)
                  : xp_shmheap_in((uintptr_t)s->heap.base, s->heap.size, addr, len);
}

void xp_shm_bounce_reclaim(shm_tl_t *s)
{
    xp_shm_bounce_t *b = &s->bounce;
    if (!b->list)
        return;
    pthread_mutex_lock(&b->lock);
    sweep_all(s);
    pthread_mutex_unlock(&b->lock);
}

/* Our own block at addr, whose request was never sent: done. */
static void cancel(shm_tl_t *s, uint64_t addr)
{
    uint64_t base = (uintptr_t)s->heap.base;
    uint64_t hdr = addr - BOUNCE_HDR;
    if (!base || addr < base + BOUNCE_HDR || hdr - base >= s->heap.size ||
        (hdr - base) % XP_SHMHEAP_MIN_BLOCK != 0)
        return;
    uint64_t *w = (uint64_t *)(uintptr_t)hdr;
    /* (Freed once its writer has published the last fill too.) */
    if (xp_load_relaxed(&w[W_COOKIE]) == (BOUNCE_MAGIC ^ hdr))
        xp_store_release(&w[W_DONE], 1);
}

void xp_shm_bounce_fill(xp_tl_t *tl, void *buf, size_t n)
{
    (void)tl;
    /* After the staged bytes (release): the reader copies up to n. */
    xp_store_release(&((uint64_t *)(void *)((unsigned char *)buf - BOUNCE_HDR))[W_FILL], n);
}

/* rank's block whose data starts at addr (an address in rank), through our
 * mapping of its heap: the header's words, or NULL when addr is not a
 * block of that heap now. */
static uint64_t *peer_block(shm_tl_t *s, int rank, uint64_t addr)
{
    if (rank < 0 || rank >= s->size || rank == s->rank)
        return NULL;
    shm_peer_t *p = &s->peers[rank];
    uint64_t hdr = addr - BOUNCE_HDR;
    /* Only a block header of its heap: inside it, on a block boundary
     * (heap blocks are aligned to at least XP_SHMHEAP_MIN_BLOCK). */
    if (!p->heap.base || addr < BOUNCE_HDR ||
        !xp_shmheap_in(p->heap_remote, p->heap.size, hdr, BOUNCE_HDR) ||
        (hdr - p->heap_remote) % XP_SHMHEAP_MIN_BLOCK != 0)
        return NULL;
    uint64_t *w = (uint64_t *)(void *)(p->heap.base + (hdr - p->heap_remote));
    return xp_load_acquire(&w[W_COOKIE]) == (BOUNCE_MAGIC ^ hdr) ? w : NULL;
}

/* Wait until the writer has staged `need` bytes of block w (acquire), and
 * set *filled to what it has staged: XP_OK, or XP_ERR_PEER_DEAD when it
 * died first. */
static xp_status_t wait_fill(shm_peer_t *p, const uint64_t *w, uint64_t need, uint64_t *filled)
{
    for (unsigned spins = 1; (*filled = xp_load_acquire(&w[W_FILL])) < need; spins++) {
        if (spins % FILL_SPINS == 0) {
            if (xp_shm_peer_gone(p))
                return XP_ERR_PEER_DEAD;
            sched_yield();
        }
        xp_cpu_relax();
    }
    return XP_OK;
}

xp_status_t xp_shm_bounce_read(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                               uint64_t addr, size_t len)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    uint64_t *w = peer_block(s, rank, addr);
    if (!w)
        return XP_ERR_INVALID;
    shm_peer_t *p = &s->peers[rank];
    /* The data lies in the heap (the cookie proves a block header there;
     * its len word is the writer's, so check the end again). */
    if (len > xp_load_relaxed(&w[W_LEN]) || !xp_shmheap_in(p->heap_remote, p->heap.size, addr, len))
        return XP_ERR_INVALID;
    const unsigned char *src = p->heap.base + (addr - p->heap_remote);
    /* Each piece as soon as it is staged: [off, what the fill says). */
    for (uint64_t off = 0, end; off < len; off = end) {
        xp_status_t st = wait_fill(p, w, off + 1, &end);
        if (end > len)
            end = len;
        if (st == XP_OK)
            st = xp_iov_copy_in(local, nlocal, off, src + off, end - off);
        if (st != XP_OK)
            return st;
        xp_shm_own_lines((unsigned char *)src, off, end); /* ours until done */
    }
    return XP_OK;
}

void xp_shm_bounce_done(xp_tl_t *tl, int rank, uint64_t addr)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    if (rank == -1) {
        cancel(s, addr);
        return;
    }
    uint64_t *w = peer_block(s, rank, addr);
    if (!w)
        return; /* not a bounce block now */
    /* Only once it is staged in full (a request dropped at once still has
     * its writer busy): the owner frees it then, and what we send after
     * this (the ACK) comes after the writer's SEND event. */
    uint64_t filled;
    if (wait_fill(&s->peers[rank], w, xp_load_relaxed(&w[W_LEN]), &filled) != XP_OK)
        return; /* the writer died: its heap goes with it */
    /* After our copy out (release): the owner may reuse the block. */
    xp_store_release(&w[W_DONE], 1);
}
