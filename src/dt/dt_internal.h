/*
 * dt/dt_internal.h - the datatype object, its flattened form and the engines.
 *
 * A type is a tree (constructor + children). Commit flattens one element of
 * the tree into segments: each segment is a vector of `count` blocks of `blen`
 * bytes, `stride` bytes apart, whose first block sits `disp` bytes from the
 * element origin and `poff` bytes into the element's packed stream. A
 * contiguous block is a segment with count 1. Regular types (vector,
 * subarray rows, contiguous) flatten into one or a few segments, so the cached
 * form stays small; irregular types (indexed) get one segment per block.
 * The list for `count` elements is never materialised on the CPU: element i
 * is the same list shifted by i * extent (packed: i * size).
 */
#ifndef XP_DT_INTERNAL_H
#define XP_DT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "xportals/dt.h"

enum dt_kind { DT_BASIC, DT_CONTIG, DT_HVECTOR, DT_HINDEXED, DT_STRUCT, DT_RESIZED };

#define DT_BASIC_NONE  0    /* empty type: no basic element */
#define DT_BASIC_MIXED 0xff /* several basic types */
#define DT_MAGIC 0x78706474u

typedef struct dt_seg {
    ptrdiff_t disp;   /* first block, bytes from the element origin */
    ptrdiff_t stride; /* between blocks (0 when count == 1) */
    size_t blen;      /* bytes per block */
    size_t count;     /* blocks */
    size_t poff;      /* packed offset of the first block in the element */
} dt_seg_t;

typedef struct dt_flat {
    size_t nseg;
    size_t cap;
    dt_seg_t *seg;
} dt_flat_t;

struct dt_gpu_cache; /* dt/cuda.c: work units of (type, count) in device memory */

struct xp_dt {
    uint32_t magic;
    uint8_t kind;
    uint8_t basic;      /* XP_DT_ID_*, DT_BASIC_NONE or DT_BASIC_MIXED */
    uint8_t predefined;
    uint8_t has_bounds; /* contributes lb/ub to a parent (has data or explicit bounds) */
    int refs;
    int committed;
    size_t size;        /* packed bytes */
    size_t nbasic;      /* basic elements (signature length) */
    size_t nblocks;     /* blocks of one flattened element (0: predefined, one) */
    ptrdiff_t lb, ub, true_lb, true_ub;
    uint64_t sig_hash, sig_pow; /* polynomial hash of the signature, P^nbasic */

    /* constructor arguments */
    size_t count;        /* CONTIG, HVECTOR: count; HINDEXED, STRUCT: blocks */
    size_t blen;         /* HVECTOR */
    ptrdiff_t stride;    /* HVECTOR, bytes */
    size_t *blens;       /* HINDEXED, STRUCT */
    ptrdiff_t *displs;   /* HINDEXED, STRUCT, bytes */
    struct xp_dt **types;/* STRUCT */
    struct xp_dt *child; /* CONTIG, HVECTOR, HINDEXED, RESIZED */

    /* commit */
    dt_flat_t flat;
    dt_seg_t one_seg;    /* storage of the predefined types' flat form */
    pthread_mutex_t gpu_lock;
    struct dt_gpu_cache *gpu;
};

/* The object behind a handle, or NULL for NULL / garbage / freed handles. */
struct xp_dt *xp_dt_get(xp_dt_t h);

/* type.c */
void xp_dt_retain(struct xp_dt *t);
void xp_dt_release(struct xp_dt *t);
size_t xp_dt_basic_size(int id);

/* flat.c: flatten one element of t into *out (freshly allocated). */
xp_status_t xp_dt_flatten(const struct xp_dt *t, dt_flat_t *out);
void xp_dt_flat_free(dt_flat_t *f);
/* Index of the segment holding packed byte r of an element (r < size). */
size_t xp_dt_flat_find(const dt_flat_t *f, size_t r);

/* Work units for the GPU: <source offset, packed offset, length> with every
 * length <= unit bytes, for `count` elements. *n_out units in *out (malloc). */
typedef struct dt_unit {
    int64_t src;  /* bytes from the buffer origin */
    uint64_t dst; /* packed offset */
    uint32_t len;
    uint32_t pad_;
} dt_unit_t;
xp_status_t xp_dt_units_build(const struct xp_dt *t, size_t count, size_t unit, dt_unit_t **out,
                              size_t *n_out);

/* stream.c: a copy of a sequence of pieces with non-temporal stores and a
 * software prefetch running ahead of it, for windows much larger than the
 * cache. Pieces are queued, and copied once the prefetch is far enough
 * ahead; flush copies the rest and fences the stores. */
#define DT_STREAM_RING 64
typedef struct dt_piece {
    const char *src;
    char *dst;
    size_t len;
} dt_piece_t;
typedef struct dt_stream {
    dt_piece_t ring[DT_STREAM_RING];
    unsigned head, n;
    size_t queued; /* bytes in the ring */
} dt_stream_t;
void xp_dt_stream_push(dt_stream_t *s, char *dst, const char *src, size_t len);
void xp_dt_stream_flush(dt_stream_t *s);
/* Bytes of the last-level cache one core shares (a default if unknown). */
size_t xp_dt_llc_bytes(void);

/* pack.c: the CPU engine. dir (the _NT forms copy through a dt_stream_t): */
enum { DT_DIR_PACK, DT_DIR_UNPACK, DT_DIR_REDUCE, DT_DIR_PACK_NT, DT_DIR_UNPACK_NT };
typedef void (*dt_reduce_fn)(void *inout, const void *in, size_t n);
typedef struct dt_job {
    const struct xp_dt *t;
    size_t count;
    char *nc;          /* the typed (non-contiguous) buffer */
    char *pk;          /* packed bytes of the window, pk[0] = stream byte `off` */
    size_t off, len;
    int dir;
    size_t esize;      /* REDUCE: basic element size */
    dt_stream_t *stream; /* _NT directions: the running thread's stream */
    dt_reduce_fn reduce;
} dt_job_t;
/* Run the part [off, off + len) of job (inside the job's window). */
void xp_dt_cpu_run(const dt_job_t *job, size_t off, size_t len);
/* Run the whole job, on several threads when worth it. */
void xp_dt_cpu_exec(const dt_job_t *job);

/* reduce.c */
dt_reduce_fn xp_dt_reduce_fn(xp_dt_op_t op, int basic);

/* pool.c: run fn(arg, i) for i in [0, n) on the pool's threads (and the
 * caller). Returns XP_ERR_* if no pool could be made (caller runs serially). */
typedef void (*dt_task_fn)(void *arg, unsigned i);
xp_status_t xp_dt_pool_run(unsigned n, dt_task_fn fn, void *arg);
unsigned xp_dt_pool_threads(void);

/* cuda.c: the run-time loaded GPU engine. */
/* 1 if p is device memory (0 when no plugin or no GPU). */
int xp_dt_mem_is_device(const void *p);
/* Pack / unpack where at least one buffer is device memory. */
xp_status_t xp_dt_gpu_exec(const dt_job_t *job, int nc_dev, int pk_dev);
void xp_dt_gpu_cache_free(struct xp_dt *t);

#endif
