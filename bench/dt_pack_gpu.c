/* dt_pack_gpu: the datatype engine on device buffers (the paper's §5), on
 * the same double-precision matrices as dt_pack, next to what CUDA itself
 * offers for the same bytes:
 *
 *   where=d2d   typed data and packed buffer in device memory (Fig. 6; the
 *               limit is cudaMemcpy of the packed size, device to device;
 *               for the vector also cudaMemcpy2D, Fig. 8's "mcp2d-d2d")
 *   where=d2h0  packed buffer in pinned host memory, written by the kernel
 *               directly ("zero copy"; the limit is cudaMemcpy of the packed
 *               size device to pinned host; vector: cudaMemcpy2D d2h)
 *   where=d2h   packed buffer in pageable host memory (staged through a
 *               device buffer and copied)
 *
 * Each pack is checked once against the CPU engine on a host copy before it
 * is timed. Times are wall clock around synchronous calls (the engine's
 * calls return when the data is in place; CUDA's copies are followed by a
 * stream synchronisation), median of --reps, GB/s of packed bytes:
 *   bench=dt_pack_gpu type=vector impl=xportals op=pack where=d2d GBs=1234.5
 * Usage: dt_pack_gpu [reps]. Needs a GPU and the xpdt_cuda plugin. */
#include <cuda_runtime.h>

#include "dt_types.h"

typedef struct gbench {
    int reps;
    double *samples;
    double *h_big;          /* host copy of the typed data */
    double *d_big, *d_pk;   /* device */
    double *pinned, *pageable, *ref;
} gbench_t;

static void die(const char *what)
{
    fprintf(stderr, "dt_pack_gpu: %s\n", what);
    exit(1);
}

static void report(const char *type, const char *impl, const char *op, const char *where, double gbs)
{
    printf("bench=dt_pack_gpu type=%s impl=%s op=%s where=%s GBs=%.2f\n", type, impl, op, where, gbs);
    fflush(stdout);
}

typedef struct op {
    xp_dt_t t;
    size_t count, bytes;
    int unpack;
    double *nc, *pk;
} op_t;

static void xp_op(const op_t *o)
{
    xp_status_t st = o->unpack ? xp_dt_unpack_all(o->t, o->count, o->pk, o->nc)
                               : xp_dt_pack_all(o->t, o->count, o->nc, o->pk);
    if (st != XP_OK)
        die(xp_status_string(st));
}

/* Median GB/s of reps calls of fn(arg) after one warm-up. */
static double timed(gbench_t *b, size_t bytes, void (*fn)(const void *), const void *arg)
{
    fn(arg);
    for (int r = 0; r < b->reps; r++) {
        double t0 = now();
        fn(arg);
        b->samples[r] = (double)bytes / (now() - t0) / 1e9;
    }
    return median(b->samples, b->reps);
}

static void run_xp(const void *arg)
{
    xp_op(arg);
}

typedef struct copy {
    void *dst;
    const void *src;
    size_t bytes;
    /* 2-D copies (vector): rows of width bytes, pitches */
    size_t width, rows, dpitch, spitch;
} copy_t;

static void run_copy(const void *arg)
{
    const copy_t *c = arg;
    cudaError_t e = c->rows ? cudaMemcpy2DAsync(c->dst, c->dpitch, c->src, c->spitch, c->width, c->rows,
                                                cudaMemcpyDefault, 0)
                            : cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDefault, 0);
    if (e != cudaSuccess || cudaStreamSynchronize(0) != cudaSuccess)
        die("cudaMemcpy");
}

/* The engine's pack into `pk` (device, pinned or pageable) equals the CPU's. */
static void check_pack(gbench_t *b, const op_t *o, const char *where)
{
    xp_op(o);
    if (cudaMemcpy(b->pageable, o->pk, o->bytes, cudaMemcpyDefault) != cudaSuccess)
        die("cudaMemcpy (check)");
    if (memcmp(b->pageable, b->ref, o->bytes)) {
        fprintf(stderr, "dt_pack_gpu: %s pack differs from the CPU engine's\n", where);
        exit(1);
    }
}

static void bench_type(gbench_t *b, type_id_t id)
{
    size_t count, size;
    xp_dt_t t = make_type(id, &count);
    xp_dt_size(t, &size);
    size_t bytes = size * count;
    if (xp_dt_pack_all(t, count, b->h_big, b->ref) != XP_OK)
        die("CPU pack");
    struct { const char *where; double *pk; } dst[] = {
        {"d2d", b->d_pk}, {"d2h0", b->pinned}, {"d2h", b->pageable}};
    for (int w = 0; w < 3; w++) {
        op_t o = {t, count, bytes, 0, b->d_big, dst[w].pk};
        if (w < 2)
            check_pack(b, &o, dst[w].where);
        for (int unpack = 0; unpack < 2; unpack++) {
            o.unpack = unpack;
            report(type_names[id], "xportals", unpack ? "unpack" : "pack", dst[w].where,
                   timed(b, bytes, run_xp, &o));
        }
        if (w == 2)
            continue;
        /* CUDA's copy of the packed size between the same kinds of memory */
        copy_t c = {dst[w].pk, b->d_big, bytes, 0, 0, 0, 0};
        report(type_names[id], "cudamemcpy", "copy", dst[w].where, timed(b, bytes, run_copy, &c));
        if (id == T_VECTOR) { /* the vector as a 2-D copy: N columns of N doubles, pitch 2N */
            copy_t c2 = {dst[w].pk, b->d_big, 0, N * sizeof(double), N, N * sizeof(double),
                         2 * N * sizeof(double)};
            report(type_names[id], "cudamemcpy2d", "pack", dst[w].where, timed(b, bytes, run_copy, &c2));
        }
    }
    xp_dt_free(&t);
}

int main(int argc, char **argv)
{
    gbench_t b = {.reps = argc > 1 ? atoi(argv[1]) : 20};
    int ndev = 0;
    if (b.reps < 1)
        b.reps = 1;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "dt_pack_gpu: no GPU\n");
        return 77;
    }
    if (!xp_dt_cuda_available()) {
        fprintf(stderr, "dt_pack_gpu: the xpdt_cuda plugin is not usable\n");
        return 77;
    }
    size_t big = (size_t)4 * N * N * sizeof(double), packed = (size_t)N * N * sizeof(double);
    b.samples = malloc((size_t)b.reps * sizeof(double));
    b.h_big = malloc(big);
    b.pageable = malloc(packed);
    b.ref = malloc(packed);
    if (!b.samples || !b.h_big || !b.pageable || !b.ref || cudaMalloc((void **)&b.d_big, big) != cudaSuccess ||
        cudaMalloc((void **)&b.d_pk, packed) != cudaSuccess ||
        cudaHostAlloc((void **)&b.pinned, packed, cudaHostAllocMapped) != cudaSuccess)
        die("allocation");
    for (size_t i = 0; i < big / sizeof(double); i++)
        b.h_big[i] = (double)i;
    if (cudaMemcpy(b.d_big, b.h_big, big, cudaMemcpyHostToDevice) != cudaSuccess)
        die("cudaMemcpy");
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("# device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    for (int id = 0; id < T_COUNT; id++)
        if (id != T_VECTOR_CONTIG) /* on the device the same kernel as vector */
            bench_type(&b, (type_id_t)id);
    cudaFree(b.d_big);
    cudaFree(b.d_pk);
    cudaFreeHost(b.pinned);
    free(b.samples);
    free(b.h_big);
    free(b.pageable);
    free(b.ref);
    return 0;
}
