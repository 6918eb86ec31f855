/* The xpdt_cuda plugin: GPU pack / unpack kernels of the datatype engine.
 *
 * Both kernels give one warp one contiguous piece at a time (a vector block,
 * or a work unit of at most XP_DT_WORK_UNIT bytes) and walk over the pieces
 * grid-stride. Inside a piece the lanes copy 8-byte words, so a warp touches
 * 256 consecutive bytes per step (coalesced); when source and destination
 * are not equally aligned modulo 8 the piece is copied byte by byte, and the
 * unaligned head and tail are copied bytewise before / after the words. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "dt/cuda_plugin.h"

#define WARP 32
#define THREADS 256

/* All work of the plugin goes to one non-blocking stream with stream-ordered
 * allocations (cudaMallocAsync / cudaFreeAsync): neither waits for kernels on
 * other streams, so packing keeps working while a CUDA agent's persistent
 * kernel runs in the process (cudaFree / cudaFreeHost would wait for it for
 * good), and a pack does not wait for the application's own kernels. Set
 * once by init(), which the library calls once per process under a lock. */
static cudaStream_t g_stream;
static int g_async_alloc; /* the device has memory pools */

/* Copy n bytes with the 32 lanes of a warp. */
__device__ static void warp_copy(char *dst, const char *src, uint64_t n, unsigned lane)
{
    if ((((uintptr_t)dst ^ (uintptr_t)src) & 7) == 0) {
        uint64_t head = (8 - ((uintptr_t)src & 7)) & 7;
        if (head > n)
            head = n;
        if (lane < head)
            dst[lane] = src[lane];
        dst += head;
        src += head;
        n -= head;
        uint64_t words = n / 8;
        const uint64_t *s8 = (const uint64_t *)src;
        uint64_t *d8 = (uint64_t *)dst;
#pragma unroll 4
        for (uint64_t i = lane; i < words; i += WARP)
            d8[i] = s8[i];
        uint64_t tail = n - words * 8;
        if (lane < tail)
            dst[words * 8 + lane] = src[words * 8 + lane];
    } else {
        for (uint64_t i = lane; i < n; i += WARP)
            dst[i] = src[i];
    }
}

/* Packed range [p, p + l) of a piece, clamped to the window [off, off + len):
 * returns the clamped length and moves the typed address along. */
__device__ static uint64_t clamp(uint64_t *p, uint64_t l, uint64_t off, uint64_t len, int64_t *nc_off)
{
    uint64_t lo = *p > off ? *p : off;
    uint64_t hi = *p + l < off + len ? *p + l : off + len;
    if (hi <= lo)
        return 0;
    *nc_off += (int64_t)(lo - *p);
    *p = lo;
    return hi - lo;
}

/* Blocks longer than CHUNK are cut into CHUNK-byte pieces, so that a few
 * long blocks still spread over enough warps to keep the memory system busy
 * (2048 blocks of 16 KiB gave one warp each: a quarter of the H100's warps).
 * A multiple of 8 keeps each piece's alignment that of its block. */
#define CHUNK 2048

__global__ void vector_kernel(int dir, char *nc, int64_t stride, uint64_t blen, uint64_t first, uint64_t nblk,
                              uint64_t off, uint64_t len, char *pk)
{
    unsigned lane = threadIdx.x % WARP;
    uint64_t warp = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / WARP;
    uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / WARP;
    uint64_t nch = (blen + CHUNK - 1) / CHUNK;
    for (uint64_t k = warp; k < nblk * nch; k += nwarps) {
        uint64_t b = first + k / nch, c = (k % nch) * CHUNK;
        uint64_t p = b * blen + c;
        int64_t o = (int64_t)b * stride + (int64_t)c;
        uint64_t n = clamp(&p, blen - c < CHUNK ? blen - c : CHUNK, off, len, &o);
        if (!n)
            continue;
        if (dir == 0)
            warp_copy(pk + (p - off), nc + o, n, lane);
        else
            warp_copy(nc + o, pk + (p - off), n, lane);
    }
}

/* Units of at most SMALL_UNIT bytes (a transpose's single elements): one
 * thread each instead of one warp each, which left 31 lanes idle. */
#define SMALL_UNIT 16

__global__ void small_units_kernel(int dir, const xp_dt_cuda_unit_t *u, uint64_t nunits, char *nc, char *pk,
                                   uint64_t off, uint64_t len)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < nunits; i += stride) {
        uint64_t p = u[i].dst;
        int64_t o = u[i].src;
        uint64_t n = clamp(&p, u[i].len, off, len, &o);
        if (!n)
            continue;
        char *d = dir == 0 ? pk + (p - off) : nc + o;
        const char *s = dir == 0 ? nc + o : pk + (p - off);
        if (n == 8 && (((uintptr_t)d | (uintptr_t)s) & 7) == 0)
            *(uint64_t *)d = *(const uint64_t *)s;
        else
            for (uint64_t j = 0; j < n; j++)
                d[j] = s[j];
    }
}

__global__ void units_kernel(int dir, const xp_dt_cuda_unit_t *u, uint64_t nunits, char *nc, char *pk,
                             uint64_t off, uint64_t len)
{
    unsigned lane = threadIdx.x % WARP;
    uint64_t warp = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / WARP;
    uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / WARP;
    for (uint64_t i = warp; i < nunits; i += nwarps) {
        uint64_t p = u[i].dst;
        int64_t o = u[i].src;
        uint64_t n = clamp(&p, u[i].len, off, len, &o);
        if (!n)
            continue;
        if (dir == 0)
            warp_copy(pk + (p - off), nc + o, n, lane);
        else
            warp_copy(nc + o, pk + (p - off), n, lane);
    }
}

/* Blocks of THREADS threads for `pieces` pieces of `per_block` per block. */
static unsigned grid_for_n(uint64_t pieces, uint64_t per_block)
{
    uint64_t blocks = (pieces + per_block - 1) / per_block;
    if (blocks > 65535)
        blocks = 65535; /* the kernels walk grid-stride */
    return blocks ? (unsigned)blocks : 1;
}

/* One warp per piece. */
static unsigned grid_for(uint64_t pieces)
{
    return grid_for_n(pieces, THREADS / WARP);
}

static int init(void)
{
    int n = 0, dev = 0, pools = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1 ||
        cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess)
        g_async_alloc = pools != 0;
    /* Load the kernels now (lazy module loading would load them at their
     * first launch, which may wait for every running kernel). */
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, vector_kernel) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, units_kernel) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, small_units_kernel) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

static int mem_type(const void *p, void **dev)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return XP_DT_MEM_HOST;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
        return XP_DT_MEM_DEVICE;
    case cudaMemoryTypeHost:
        *dev = a.devicePointer;
        return a.devicePointer ? XP_DT_MEM_PINNED : XP_DT_MEM_HOST;
    default:
        return XP_DT_MEM_HOST;
    }
}

static int finish(void)
{
    return cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(g_stream) == cudaSuccess ? 0 : -1;
}

static void *alloc_dev(size_t n)
{
    void *d = NULL;
    cudaError_t e = g_async_alloc ? cudaMallocAsync(&d, n ? n : 1, g_stream) : cudaMalloc(&d, n ? n : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return d;
}

static void free_dev(void *p)
{
    if (!p)
        return;
    if (g_async_alloc) {
        cudaFreeAsync(p, g_stream);
        cudaStreamSynchronize(g_stream);
    } else {
        cudaFree(p);
    }
}

static int vector(int dir, char *nc, int64_t stride, uint64_t blen, uint64_t off, uint64_t len, char *pk)
{
    if (!len)
        return 0;
    uint64_t first = off / blen, last = (off + len - 1) / blen;
    uint64_t nblk = last - first + 1;
    vector_kernel<<<grid_for(nblk * ((blen + CHUNK - 1) / CHUNK)), THREADS, 0, g_stream>>>(dir, nc, stride, blen, first, nblk, off, len, pk);
    return finish();
}

static void *units_upload(const xp_dt_cuda_unit_t *u, size_t n)
{
    void *d = alloc_dev(n * sizeof *u);
    if (!d)
        return NULL;
    if (n && (cudaMemcpyAsync(d, u, n * sizeof *u, cudaMemcpyHostToDevice, g_stream) != cudaSuccess ||
              cudaStreamSynchronize(g_stream) != cudaSuccess)) {
        free_dev(d);
        return NULL;
    }
    return d;
}

static void units_free(void *units)
{
    free_dev(units);
}

static int units_run(int dir, void *units, size_t first, size_t n, char *nc, char *pk, uint64_t off, uint64_t len,
                     uint32_t max_len)
{
    if (!n || !len)
        return 0;
    const xp_dt_cuda_unit_t *u = (const xp_dt_cuda_unit_t *)units + first;
    if (max_len <= SMALL_UNIT)
        small_units_kernel<<<grid_for_n(n, THREADS), THREADS, 0, g_stream>>>(dir, u, n, nc, pk, off, len);
    else
        units_kernel<<<grid_for(n), THREADS, 0, g_stream>>>(dir, u, n, nc, pk, off, len);
    return finish();
}

static void *dev_alloc(size_t n)
{
    void *d = alloc_dev(n);
    /* stream-ordered: usable by this stream at once, by the host's copies
     * only after the allocation itself has run */
    if (d && g_async_alloc && cudaStreamSynchronize(g_stream) != cudaSuccess) {
        free_dev(d);
        return NULL;
    }
    return d;
}

static void dev_free(void *p)
{
    free_dev(p);
}

static int copy(void *dst, const void *src, size_t n)
{
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, g_stream) == cudaSuccess &&
                   cudaStreamSynchronize(g_stream) == cudaSuccess
               ? 0
               : -1;
}

static const xp_dt_cuda_ops_t ops = {
    sizeof(xp_dt_cuda_ops_t), XP_DT_CUDA_ABI, init, mem_type, vector, units_upload, units_free,
    units_run, dev_alloc, dev_free, copy,
};

extern "C" __attribute__((visibility("default"))) const xp_dt_cuda_ops_t *xp_dt_cuda_plugin(void)
{
    return &ops;
}
