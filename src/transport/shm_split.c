/*
 * transport/shm_split.c - bulk data between processes on one machine.
 *
 * A copy whose remote side lies in the peer's shared heap is a memcpy
 * through our mapping of it; any other goes through process_vm_readv/writev
 * (single copy), and a large one is shared with the peer whose memory it
 * copies (split_copy), so that both processes' CPUs copy: we ask it through
 * its inbox (a packet that never reaches the engine: shm.c hands it to
 * xp_shm_split_help) and both claim chunks from our split area.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/shm_internal.h"
#include "util/copy.h"
#include "util/log.h"

#define SPLIT_MAGIC 0x58505350u     /* "XPSP" */
#define SPLIT_MIN_CHUNK (16u * 1024u)
#define SPLIT_MAX_IOV 64u           /* segments per side of a shared transfer */

/* A request to help with a shared transfer (split_copy). It travels through
 * the helper's inbox with src = -2 - requester, so it never reaches the
 * engine (shm_deliver). It is followed by nhelper segments of the helper's
 * buffer, then nrequester of the requester's, each in its owner's address
 * space; both lists hold len bytes. */
typedef struct split_req {
    uint32_t magic;
    uint32_t gen;            /* the requester's split.claim generation */
    uint32_t nchunks;        /* ceil(len / chunk) */
    uint32_t to_helper;      /* 1: the helper reads the requester's memory into its own */
    uint64_t chunk;
    uint64_t len;
    uint32_t nhelper, nrequester;
} split_req_t;

typedef struct split_seg {
    uint64_t addr, len;
} split_seg_t;

/* Is r a well-formed request for a transfer of at most 2^32 chunks? */
static int split_req_ok(const split_req_t *r)
{
    return r->magic == SPLIT_MAGIC && r->chunk >= 4096 && r->len <= UINT64_MAX - r->chunk &&
           r->nchunks == (r->len + r->chunk - 1) / r->chunk && r->nhelper >= 1 &&
           r->nhelper <= SPLIT_MAX_IOV && r->nrequester >= 1 && r->nrequester <= SPLIT_MAX_IOV;
}

/* n segments of a request as an iovec; 0 unless they hold exactly len bytes. */
static int split_segs_iov(const split_seg_t *seg, uint32_t n, uint64_t len, struct iovec *iov)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (seg[i].len > len - total)
            return 0;
        total += seg[i].len;
        iov[i].iov_base = (void *)(uintptr_t)seg[i].addr;
        iov[i].iov_len = (size_t)seg[i].len;
    }
    return total == len;
}

/* The bytes [off, off+len) of an iovec list (which holds them) as a list. */
static int iov_slice(const struct iovec *v, int n, size_t off, size_t len, struct iovec *out)
{
    int k = 0;
    for (int i = 0; i < n && len > 0; i++) {
        if (off >= v[i].iov_len) {
            off -= v[i].iov_len;
            continue;
        }
        size_t take = v[i].iov_len - off < len ? v[i].iov_len - off : len;
        out[k].iov_base = (char *)v[i].iov_base + off;
        out[k++].iov_len = take;
        len -= take;
        off = 0;
    }
    return k;
}

#define HEAP_MAX_IOV 64

/* The remote side lies in the peer's shared heap: a plain copy through our
 * mapping of it (no system call, no page pinning). 0: not applicable. */
static int heap_copy(shm_peer_t *p, int do_write, const struct iovec *local, int nlocal,
                     const struct iovec *remote, int nremote, xp_status_t *st)
{
    struct iovec mine[HEAP_MAX_IOV];
    if (!p->heap.base || nremote > HEAP_MAX_IOV)
        return 0;
    for (int i = 0; i < nremote; i++) {
        uint64_t a = (uintptr_t)remote[i].iov_base;
        if (!xp_shmheap_in(p->heap_remote, p->heap.size, a, remote[i].iov_len))
            return 0;
        mine[i].iov_base = p->heap.base + (a - p->heap_remote);
        mine[i].iov_len = remote[i].iov_len;
    }
    *st = do_write ? xp_iov_copy(mine, nremote, local, nlocal)
                   : xp_iov_copy(local, nlocal, mine, nremote);
    return 1;
}

/* The kernel copies process_vm_readv/writev's bytes with the same `rep
 * movsb` as glibc's memcpy (util/copy.h), and as slowly when the
 * destination lies 1..15 bytes further into its line than the source: 1
 * MiB puts from malloc at 3.5-5.3 GB/s instead of 21-42 (round 28; for
 * 16..31 it is slower by less, and staging did not help). Such a copy
 * of one range on each side goes through our stage in slices: the kernel
 * copies between the peer's range and a stage slice that has its alignment
 * (relative alignment 0), xp_copy between the slice and ours (its loop takes
 * the misaligned case). The stage stays in this core's L2. */
#define STAGE (256u * 1024u)
#define STAGE_MIN (8u * 1024u)

static int cma_misaligned(int do_write, const struct iovec *local, int nlocal,
                          const struct iovec *remote, int nremote)
{
    if (nlocal != 1 || nremote != 1 || local->iov_len != remote->iov_len ||
        local->iov_len < STAGE_MIN)
        return 0;
    unsigned rel = do_write ? xp_copy_rel(remote->iov_base, local->iov_base)
                            : xp_copy_rel(local->iov_base, remote->iov_base);
    return rel - 1 < 15;
}

static xp_status_t cma_staged(shm_tl_t *s, pid_t pid, int do_write, unsigned char *mine,
                              uintptr_t theirs, size_t len)
{
    unsigned char *st = s->stage + (theirs & 63);
    for (size_t off = 0; off < len;) {
        size_t n = len - off < STAGE ? len - off : STAGE;
        struct iovec l = {st, n}, r = {(void *)(theirs + off), n};
        xp_status_t rc;
        if (do_write) {
            xp_copy(st, mine + off, n);
            rc = xp_cma_copy(pid, 1, &l, 1, &r, 1);
        } else {
            rc = xp_cma_copy(pid, 0, &l, 1, &r, 1);
            if (rc == XP_OK)
                xp_copy(mine + off, st, n);
        }
        if (rc != XP_OK)
            return rc;
        off += n;
    }
    return XP_OK;
}

/* xp_cma_copy with peer p, staged where the kernel's copy would be slow and
 * the stage is free (another thread may hold it: then directly). */
static xp_status_t cma_copy(shm_tl_t *s, shm_peer_t *p, int do_write, const struct iovec *local,
                            int nlocal, const struct iovec *remote, int nremote)
{
    if (!cma_misaligned(do_write, local, nlocal, remote, nremote) ||
        __atomic_exchange_n(&s->staging, 1, __ATOMIC_ACQUIRE))
        return xp_cma_copy(p->pid, do_write, local, nlocal, remote, nremote);
    if (!s->stage)
        s->stage = aligned_alloc(64, STAGE + 64);
    xp_status_t st = s->stage ? cma_staged(s, p->pid, do_write, local->iov_base,
                                           (uintptr_t)remote->iov_base, local->iov_len)
                              : xp_cma_copy(p->pid, do_write, local, nlocal, remote, nremote);
    __atomic_store_n(&s->staging, 0, __ATOMIC_RELEASE);
    return st;
}

/* Copy chunk `c` of a shared transfer between `mine` (ours) and `theirs`
 * (p's memory): the same slice of both lists; with a plain memcpy where
 * that slice of theirs lies in p's shared heap. */
static xp_status_t split_chunk_copy(shm_tl_t *s, shm_peer_t *p, int do_write, uint64_t c,
                                    uint64_t chunk,
                                    uint64_t len, const struct iovec *mine, int nmine,
                                    const struct iovec *theirs, int ntheirs)
{
    struct iovec a[SPLIT_MAX_IOV], b[SPLIT_MAX_IOV];
    size_t off = (size_t)(c * chunk), n = (size_t)(len - off < chunk ? len - off : chunk);
    int na = iov_slice(mine, nmine, off, n, a), nb = iov_slice(theirs, ntheirs, off, n, b);
    xp_status_t st;
    if (heap_copy(p, do_write, a, na, b, nb, &st))
        return st;
    return cma_copy(s, p, do_write, a, na, b, nb);
}

/* Copy the chunks of a peer's shared transfer that we can still claim (we
 * are the process whose memory it copies). A stale request claims nothing;
 * a chunk we claim we copy at once, without waiting for anything, since the
 * requester waits for it. */
void xp_shm_split_help(shm_tl_t *s, int rank, const void *pkt, size_t len)
{
    split_req_t r;
    split_seg_t seg[2 * SPLIT_MAX_IOV];
    struct iovec mine[SPLIT_MAX_IOV], theirs[SPLIT_MAX_IOV];
    if (rank < 0 || rank >= s->size || rank == s->rank || !s->peers[rank].seg.hdr ||
        len < sizeof r)
        return;
    memcpy(&r, pkt, sizeof r);
    if (!split_req_ok(&r) || len != sizeof r + sizeof(split_seg_t) * (r.nhelper + r.nrequester)) {
        xp_warn("shm: malformed split request from rank %d dropped", rank);
        return;
    }
    memcpy(seg, (const char *)pkt + sizeof r, len - sizeof r);
    if (!split_segs_iov(seg, r.nhelper, r.len, mine) ||
        !split_segs_iov(seg + r.nhelper, r.nrequester, r.len, theirs)) {
        xp_warn("shm: split request from rank %d with inconsistent lengths dropped", rank);
        return;
    }
    shm_peer_t *p = &s->peers[rank];
    xp_shm_split_t *sp = &p->seg.hdr->split;
    uint64_t gen = (uint64_t)r.gen << 32;
    for (;;) {
        uint64_t w = xp_load_acquire(&sp->claim);
        if ((w & ~(uint64_t)UINT32_MAX) != gen || (uint32_t)w >= r.nchunks)
            return;
        if (!xp_cas(&sp->claim, &w, w + 1))
            continue;
        xp_status_t st = split_chunk_copy(s, p, !r.to_helper, (uint32_t)w, r.chunk, r.len, mine,
                                          (int)r.nhelper, theirs, (int)r.nrequester);
        if (st != XP_OK)
            xp_store_relaxed(&sp->error, (int32_t)st);
        __atomic_add_fetch(&sp->done, 1, __ATOMIC_RELEASE);
    }
}

/* Copy chunks of a shared transfer until none is left to claim; returns
 * how many we copied. */
static uint32_t split_take(shm_tl_t *s, shm_peer_t *p, const split_req_t *r, int do_write,
                           const struct iovec *local, int nlocal, const struct iovec *remote,
                           int nremote, xp_status_t *st)
{
    xp_shm_split_t *sp = &s->own.hdr->split;
    uint32_t mine = 0;
    for (;;) {
        uint64_t w = xp_load_relaxed(&sp->claim);
        if ((uint32_t)w >= r->nchunks)
            return mine;
        if (!xp_cas(&sp->claim, &w, w + 1))
            continue;
        xp_status_t cst = split_chunk_copy(s, p, do_write, (uint32_t)w, r->chunk, r->len, local,
                                           nlocal, remote, nremote);
        if (cst != XP_OK)
            *st = cst;
        mine++;
    }
}

/* About four chunks per transfer, at least SPLIT_MIN_CHUNK, at most
 * XP_SHM_SPLIT_CHUNK: ptl_bw measured 128 KiB puts at 20 GB/s in 64 KiB
 * chunks (11 unsplit), 4 MiB ones at 20 / 22 / 24 GB/s in 64 / 128 / 512
 * KiB chunks; a transfer of one chunk cannot be shared at all. */
static size_t split_chunk_of(const shm_tl_t *s, size_t len)
{
    size_t c = (len / 4 + 4095) & ~(size_t)4095;
    if (c < SPLIT_MIN_CHUNK)
        c = SPLIT_MIN_CHUNK;
    return c < s->split_chunk ? c : s->split_chunk;
}

/* A large copy between our buffer `local` and peer p's buffer `remote`:
 * ask p to copy chunks of it too (it writes what we would read, or reads
 * what we would write) while we copy the others; both claim chunks from our
 * split area, so whatever p does not claim (it may be busy or asleep) we
 * copy ourselves. We wait only for chunks p has claimed, which it copies
 * at once. -1: not applicable (the area is busy: another thread splits). */
static int split_copy(shm_tl_t *s, int rank, int do_write, size_t len, const struct iovec *local,
                      int nlocal, const struct iovec *remote, int nremote, xp_status_t *st_out)
{
    shm_peer_t *p = &s->peers[rank];
    xp_shm_split_t *sp = &s->own.hdr->split;
    split_seg_t seg[2 * SPLIT_MAX_IOV];
    if (__atomic_exchange_n(&s->splitting, 1, __ATOMIC_ACQUIRE))
        return -1;
    uint32_t gen = ++s->split_gen ? s->split_gen : ++s->split_gen;
    size_t chunk = split_chunk_of(s, len);
    split_req_t r = {.magic = SPLIT_MAGIC, .gen = gen, .to_helper = (uint32_t)do_write,
                     .chunk = chunk, .len = len, .nchunks = (uint32_t)((len + chunk - 1) / chunk),
                     .nhelper = (uint32_t)nremote, .nrequester = (uint32_t)nlocal};
    for (int i = 0; i < nremote; i++)
        seg[i] = (split_seg_t){(uintptr_t)remote[i].iov_base, remote[i].iov_len};
    for (int i = 0; i < nlocal; i++)
        seg[nremote + i] = (split_seg_t){(uintptr_t)local[i].iov_base, local[i].iov_len};
    xp_store_relaxed(&sp->done, 0);
    xp_store_relaxed(&sp->error, 0);
    xp_store_release(&sp->claim, (uint64_t)gen << 32);
    if (xp_shm_ring_push(p->ring, &p->cached_head, -2 - s->rank, &r, sizeof r, seg,
                         sizeof(split_seg_t) * (size_t)(nlocal + nremote)) == XP_OK)
        xp_shm_doorbell_ring_fenced(p->ip.db, p->ip.fence);
    xp_status_t st = XP_OK;
    uint32_t theirs =
        r.nchunks - split_take(s, p, &r, do_write, local, nlocal, remote, nremote, &st);
    /* p copies on its own CPU (no split when oversubscribed): spin. */
    while (xp_load_acquire(&sp->done) != theirs) {
        if (xp_shm_peer_gone(p)) {
            st = XP_ERR_PEER_DEAD;
            break;
        }
        xp_cpu_relax();
    }
    if (st == XP_OK && xp_load_relaxed(&sp->error))
        st = (xp_status_t)xp_load_relaxed(&sp->error);
    __atomic_store_n(&s->splitting, 0, __ATOMIC_RELEASE);
    *st_out = st;
    return 0;
}

/* Bytes of a transfer worth sharing with the peer (large, a few segments
 * on each side, equal totals); 0 otherwise. */
static size_t split_fits(const shm_tl_t *s, const struct iovec *local, int nlocal,
                         const struct iovec *remote, int nremote)
{
    size_t n = 0, m = 0;
    if (!s->split_min || nlocal < 1 || nremote < 1 || nlocal > (int)SPLIT_MAX_IOV ||
        nremote > (int)SPLIT_MAX_IOV)
        return 0;
    for (int i = 0; i < nlocal; i++)
        n += local[i].iov_len;
    for (int i = 0; i < nremote; i++)
        m += remote[i].iov_len;
    return n >= s->split_min && n == m && n / SPLIT_MIN_CHUNK < UINT32_MAX - 1 ? n : 0;
}

xp_status_t xp_shm_rma(shm_tl_t *s, int rank, int do_write, const struct iovec *local,
                       int nlocal, const struct iovec *remote, int nremote)
{
    shm_peer_t *p = &s->peers[rank];
    xp_status_t hst;
    size_t n = rank != s->rank ? split_fits(s, local, nlocal, remote, nremote) : 0;
    /* Where single copies were chosen (XP_SHM_BOUNCE), a large copy shared
     * by both CPUs (each chunk through our mapping of the heap where it can)
     * beats our one memcpy from the peer's heap: 1 / 2 / 4 MiB heap puts
     * 20-23 / 11-12 / 11.5 -> 28-35 / 21-28 / 18-19 GB/s on the Intel VM of
     * round 15. */
    int heap = !(n && s->bounce.single && (p->caps & XP_TL_CAP_RMA));
    if (rank != s->rank && heap && heap_copy(p, do_write, local, nlocal, remote, nremote, &hst))
        return hst;
    if (rank == s->rank)
        return do_write ? xp_iov_copy(remote, nremote, local, nlocal)
                        : xp_iov_copy(local, nlocal, remote, nremote);
    if (!(p->caps & XP_TL_CAP_RMA))
        return XP_ERR_UNSUPPORTED;
    if (xp_load_relaxed(&p->ip.dead))
        return XP_ERR_PEER_DEAD;
    xp_status_t st;
    if (!n || split_copy(s, rank, do_write, n, local, nlocal, remote, nremote, &st) != 0)
        st = cma_copy(s, p, do_write, local, nlocal, remote, nremote);
    if (st == XP_ERR_PEER_DEAD)
        xp_shm_peer_mark_dead(p);
    return st;
}
