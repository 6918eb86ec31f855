/* The CPU pack / unpack engine and the public pack / unpack entry points.
 *
 * Every walk works on a byte window of the packed stream, so a pipeline can
 * pack fragment after fragment. The copy loops are specialised: the whole
 * message as one strided loop when it is a vector (no per-block lookups),
 * fixed-size copies for small blocks, a tiled loop for vectors of tiny blocks
 * whose elements interleave (a transpose), and a binary search into the
 * cached segments only at the start of a window for irregular types. */
#include <string.h>

#include "dt/dt_internal.h"
#include "dt/state.h"
#include "util/config.h"
#include "util/copy.h"
#include "util/log.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE void blk_op(int dir, char *nc, char *pk, size_t n, const dt_job_t *j)
{
    if (dir == DT_DIR_PACK)
        xp_copy(pk, nc, n);
    else if (dir == DT_DIR_UNPACK)
        xp_copy(nc, pk, n);
    else if (dir == DT_DIR_PACK_NT)
        xp_dt_stream_push(j->stream, pk, nc, n);
    else if (dir == DT_DIR_UNPACK_NT)
        xp_dt_stream_push(j->stream, nc, pk, n);
    else
        j->reduce(nc, pk, n / j->esize);
}

/* Large strided reads: the hardware prefetcher restarts at every block, so
 * ask for the next block while copying this one (measured on the 2048 x 2048
 * sub-matrix pack: ~13 -> ~17 GB/s median on this machine). */
#define PREFETCH_MIN 2048
static ALWAYS_INLINE void prefetch_block(const char *p, size_t n)
{
    if (n > 16384)
        n = 16384;
    for (size_t k = 0; k < n; k += 64)
        __builtin_prefetch(p + k, 0, 3);
}

/* n whole blocks of L bytes, stride apart; fixed-size copies for small L. */
static ALWAYS_INLINE void vec_full(int dir, char *nc, ptrdiff_t stride, size_t L, size_t n, char *pk,
                                   const dt_job_t *j)
{
#define VEC_LOOP(LEN)                                                     \
    for (size_t b = 0; b < n; b++, nc += stride, pk += (LEN))             \
        blk_op(dir, nc, pk, (LEN), j);                                    \
    return
    if (dir == DT_DIR_PACK || dir == DT_DIR_UNPACK) {
        switch (L) {
        case 1: VEC_LOOP(1);
        case 2: VEC_LOOP(2);
        case 4: VEC_LOOP(4);
        case 8: VEC_LOOP(8);
        case 16: VEC_LOOP(16);
        case 24: VEC_LOOP(24);
        case 32: VEC_LOOP(32);
        case 64: VEC_LOOP(64);
        default: break;
        }
    }
    if (dir == DT_DIR_PACK && L >= PREFETCH_MIN) {
        for (size_t b = 0; b < n; b++, nc += stride, pk += L) {
            if (b + 1 < n)
                prefetch_block(nc + stride, L);
            xp_copy(pk, nc, L);
        }
        return;
    }
    VEC_LOOP(L);
#undef VEC_LOOP
}

/* Window [off, off + len) of the packed stream of a vector of blocks. */
static ALWAYS_INLINE void vec_window(int dir, char *nc, ptrdiff_t stride, size_t L, size_t off, size_t len,
                                     char *pk, const dt_job_t *j)
{
    size_t b = off / L, in = off % L;
    nc += (ptrdiff_t)b * stride;
    if (in) {
        size_t n = L - in < len ? L - in : len;
        blk_op(dir, nc + in, pk, n, j);
        pk += n;
        len -= n;
        nc += stride;
    }
    size_t nfull = len / L;
    vec_full(dir, nc, stride, L, nfull, pk, j);
    nc += (ptrdiff_t)nfull * stride;
    pk += nfull * L;
    len -= nfull * L;
    if (len)
        blk_op(dir, nc, pk, len, j);
}

/* Window [r, r + len) inside one element whose origin is nc. */
static ALWAYS_INLINE void elem_window(int dir, const dt_flat_t *f, char *nc, size_t r, size_t len, char *pk,
                                      const dt_job_t *j)
{
    size_t k = xp_dt_flat_find(f, r);
    while (len) {
        const dt_seg_t *s = &f->seg[k++];
        size_t o = r - s->poff;
        size_t n = s->blen * s->count - o;
        if (n > len)
            n = len;
        if (s->count == 1) {
            if (dir == DT_DIR_PACK && n < len && f->seg[k].blen >= PREFETCH_MIN)
                prefetch_block(nc + f->seg[k].disp, f->seg[k].blen);
            blk_op(dir, nc + s->disp + o, pk, n, j);
        }
        else
            vec_window(dir, nc + s->disp, s->stride, s->blen, o, n, pk, j);
        pk += n;
        r += n;
        len -= n;
    }
}

/* Whole elements [e, e + ne) of a one-segment type whose copies interleave
 * (tiny blocks, small extent: a transpose). Copying a tile of neighbouring
 * elements block row by block row reads whole cache lines once. The tile is
 * narrow: its TILE output streams lie `size` bytes apart, often a power of
 * two, and so share L1 sets; measured here on the 2048 x 2048 transpose,
 * pack ran at ~3.6 GB/s with 8, ~2.0 with 16 and < 1 with 32 or more. */
#define TILE 8
static ALWAYS_INLINE void tiled(int dir, char *nc, const dt_seg_t *s, ptrdiff_t ext, size_t size, size_t ne,
                                char *pk, const dt_job_t *j)
{
    for (size_t e0 = 0; e0 < ne; e0 += TILE) {
        size_t nt = ne - e0 < TILE ? ne - e0 : TILE;
        char *src = nc + (ptrdiff_t)e0 * ext + s->disp;
        char *dst = pk + e0 * size;
        if (nt == TILE && (dir == DT_DIR_PACK || dir == DT_DIR_UNPACK) && s->blen == 8) {
            for (size_t b = 0; b < s->count; b++, src += s->stride, dst += 8)
                for (size_t i = 0; i < TILE; i++)
                    blk_op(dir, src + (ptrdiff_t)i * ext, dst + i * size, 8, j);
            continue;
        }
        for (size_t b = 0; b < s->count; b++, src += s->stride, dst += s->blen)
            for (size_t i = 0; i < nt; i++)
                blk_op(dir, src + (ptrdiff_t)i * ext, dst + i * size, s->blen, j);
    }
}

static ALWAYS_INLINE void run_dir(int dir, const dt_job_t *job, size_t off, size_t len)
{
    const struct xp_dt *t = job->t;
    const dt_flat_t *f = &t->flat;
    const size_t size = t->size;
    const ptrdiff_t ext = t->ub - t->lb;
    char *pk = job->pk + (off - job->off);
    char *nc = job->nc;

    if (!len)
        return;
    if (f->nseg == 1) {
        const dt_seg_t *s = &f->seg[0];
        if (s->count == 1) {
            /* Each element is one block: contiguous or one vector overall. */
            if (ext == (ptrdiff_t)size || job->count == 1)
                blk_op(dir, nc + s->disp + off, pk, len, job);
            else
                vec_window(dir, nc + s->disp, ext, size, off, len, pk, job);
            return;
        }
        if ((ptrdiff_t)s->count * s->stride == ext || job->count == 1) {
            /* Elements continue the segment's stride: one long vector. */
            vec_window(dir, nc + s->disp, s->stride, s->blen, off, len, pk, job);
            return;
        }
    }
    size_t e = off / size, r = off % size;
    if (r) {
        size_t n = size - r < len ? size - r : len;
        elem_window(dir, f, nc + (ptrdiff_t)e * ext, r, n, pk, job);
        pk += n;
        len -= n;
        e++;
    }
    size_t nfull = len / size;
    if (f->nseg == 1 && f->seg[0].blen <= 32 && f->seg[0].count >= 4 && nfull >= 2 && ext <= 256 &&
        ext >= -256) {
        tiled(dir, nc + (ptrdiff_t)e * ext, &f->seg[0], ext, size, nfull, pk, job);
    } else {
        for (size_t i = 0; i < nfull; i++)
            elem_window(dir, f, nc + (ptrdiff_t)(e + i) * ext, 0, size, pk + i * size, job);
    }
    e += nfull;
    pk += nfull * size;
    len -= nfull * size;
    if (len)
        elem_window(dir, f, nc + (ptrdiff_t)e * ext, 0, len, pk, job);
}

/* Stream (dt/stream.c) copies whose window is large against the last-level
 * cache: source and destination together exceed it, so the destination
 * would not stay cached anyway. Not for small blocks, where a queued piece
 * per block would cost more than the stores save. */
#define STREAM_MIN_BLOCK 256
#define STREAM_MIN_WINDOW 4096 /* below, not worth asking the state for the cache size */
static int use_stream(const dt_job_t *job)
{
    if (job->dir == DT_DIR_REDUCE || job->len < STREAM_MIN_WINDOW)
        return 0;
    size_t min = xp_config()->dt_stream_min;
    if (!min) {
        const xp_dt_state_t *s = xp_dt_state();
        min = s ? s->llc / 2 : SIZE_MAX;
    }
    const struct xp_dt *t = job->t;
    return job->len >= min && (t->nblocks <= 1 || t->size / t->nblocks >= STREAM_MIN_BLOCK);
}

void xp_dt_cpu_run(const dt_job_t *job, size_t off, size_t len)
{
    if (use_stream(job)) {
        dt_stream_t stream = {.n = 0};
        dt_job_t sj = *job;
        sj.stream = &stream;
        run_dir(job->dir == DT_DIR_PACK ? DT_DIR_PACK_NT : DT_DIR_UNPACK_NT, &sj, off, len);
        xp_dt_stream_flush(&stream);
        return;
    }
    switch (job->dir) {
    case DT_DIR_PACK: run_dir(DT_DIR_PACK, job, off, len); break;
    case DT_DIR_UNPACK: run_dir(DT_DIR_UNPACK, job, off, len); break;
    default: run_dir(DT_DIR_REDUCE, job, off, len); break;
    }
}

/* ------------------------------------------------------------ threads */
typedef struct split {
    const dt_job_t *job;
    size_t chunk; /* bytes per task, a multiple of 4 KiB */
} split_t;

static void split_task(void *arg, unsigned i)
{
    const split_t *sp = arg;
    size_t start = (size_t)i * sp->chunk;
    if (start >= sp->job->len)
        return;
    size_t n = sp->job->len - start < sp->chunk ? sp->job->len - start : sp->chunk;
    xp_dt_cpu_run(sp->job, sp->job->off + start, n);
}

void xp_dt_cpu_exec(const dt_job_t *job)
{
    const xp_config_t *cfg = xp_config();
    unsigned nt = (unsigned)cfg->dt_threads;
    if (nt > 1 && job->len >= cfg->dt_par_min) {
        /* Even byte ranges of the packed stream: each thread seeks on its own. */
        split_t sp = {job, ((job->len + nt - 1) / nt + 4095) & ~(size_t)4095};
        if (xp_dt_pool_run(nt, split_task, &sp) == XP_OK)
            return;
    }
    xp_dt_cpu_run(job, job->off, job->len);
}

unsigned xp_dt_cpu_threads(void)
{
    return (unsigned)xp_config()->dt_threads;
}

/* ------------------------------------------------------------ entry points */
static xp_status_t job_init(dt_job_t *job, int dir, xp_dt_t h, size_t count, const void *nc, const void *pk,
                            size_t offset, size_t len)
{
    struct xp_dt *t = xp_dt_get(h);
    size_t total;
    if (!t || (len && (!nc || !pk)))
        return XP_ERR_INVALID;
    if (!t->committed) {
        xp_error("datatype: pack / unpack of an uncommitted type");
        return XP_ERR_INVALID;
    }
    if (__builtin_mul_overflow(t->size, count, &total))
        return XP_ERR_OVERFLOW;
    if (offset > total || len > total - offset)
        return XP_ERR_TRUNCATED;
    *job = (dt_job_t){.t = t, .count = count, .nc = (char *)nc, .pk = (char *)pk, .off = offset,
                      .len = len, .dir = dir};
    return XP_OK;
}

static xp_status_t job_exec(const dt_job_t *job)
{
    if (!job->len)
        return XP_OK;
    /* Ask about the first byte the type touches: the origin itself may lie
     * outside the allocation (types with a positive true lower bound). */
    int nc_dev = xp_dt_mem_is_device(job->nc + job->t->true_lb), pk_dev = xp_dt_mem_is_device(job->pk);
    if (nc_dev || pk_dev)
        return xp_dt_gpu_exec(job, nc_dev, pk_dev);
    xp_dt_cpu_exec(job);
    return XP_OK;
}

xp_status_t xp_dt_pack(xp_dt_t t, size_t count, const void *src, void *dst, size_t offset, size_t len)
{
    dt_job_t job;
    xp_status_t st = job_init(&job, DT_DIR_PACK, t, count, src, dst, offset, len);
    return st == XP_OK ? job_exec(&job) : st;
}

xp_status_t xp_dt_unpack(xp_dt_t t, size_t count, const void *packed, void *dst, size_t offset, size_t len)
{
    dt_job_t job;
    xp_status_t st = job_init(&job, DT_DIR_UNPACK, t, count, dst, packed, offset, len);
    return st == XP_OK ? job_exec(&job) : st;
}

xp_status_t xp_dt_pack_all(xp_dt_t t, size_t count, const void *src, void *dst)
{
    size_t size;
    xp_status_t st = xp_dt_size(t, &size);
    if (st != XP_OK)
        return st;
    if (count && size > SIZE_MAX / count)
        return XP_ERR_OVERFLOW;
    return xp_dt_pack(t, count, src, dst, 0, size * count);
}

xp_status_t xp_dt_unpack_all(xp_dt_t t, size_t count, const void *packed, void *dst)
{
    size_t size;
    xp_status_t st = xp_dt_size(t, &size);
    if (st != XP_OK)
        return st;
    if (count && size > SIZE_MAX / count)
        return XP_ERR_OVERFLOW;
    return xp_dt_unpack(t, count, packed, dst, 0, size * count);
}

xp_status_t xp_dt_unpack_reduce(xp_dt_op_t op, xp_dt_t h, size_t count, const void *packed, void *dst,
                                size_t offset, size_t len)
{
    dt_job_t job;
    struct xp_dt *t = xp_dt_get(h);
    if (!t || (unsigned)op >= XP_DT_OP_COUNT_)
        return XP_ERR_INVALID;
    if (op == XP_DT_OP_REPLACE)
        return xp_dt_unpack(h, count, packed, dst, offset, len);
    xp_status_t st = job_init(&job, DT_DIR_REDUCE, h, count, dst, packed, offset, len);
    if (st != XP_OK)
        return st;
    if (!len)
        return XP_OK;
    if (t->basic == DT_BASIC_MIXED || t->basic == DT_BASIC_NONE)
        return XP_ERR_UNSUPPORTED;
    job.esize = xp_dt_basic_size(t->basic);
    job.reduce = xp_dt_reduce_fn(op, t->basic);
    if (!job.reduce)
        return XP_ERR_UNSUPPORTED;
    if (offset % job.esize || len % job.esize)
        return XP_ERR_INVALID;
    if (xp_dt_mem_is_device(packed) || xp_dt_mem_is_device(dst))
        return XP_ERR_UNSUPPORTED;
    xp_dt_cpu_exec(&job);
    return XP_OK;
}
