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

__global__ void vector_kernel(int dir, char *nc, int64_t stride, uint64_t blen, uint64_t first, uint64_t nblk,
                              uint64_t off, uint64_t len, char *pk)
{
    unsigned lane = threadIdx.x % WARP;
    uint64_t warp = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / WARP;
    uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / WARP;
    for (uint64_t b = first + warp; b < first + nblk; b += nwarps) {
        uint64_t p = b * blen;
        int64_t o = (int64_t)b * stride;
        uint64_t n = clamp(&p, blen, off, len, &o);
        if (!n)
            continue;
        if (dir == 0)
            warp_copy(pk + (p - off), nc + o, n, lane);
        else
            warp_copy(nc + o, pk + (p - off), n, lane);
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

static unsigned grid_for(uint64_t pieces)
{
    uint64_t blocks = (pieces + THREADS / WARP - 1) / (THREADS / WARP);
    if (blocks > 65535)
        blocks = 65535; /* the kernels walk grid-stride */
    return blocks ? (unsigned)blocks : 1;
}

static int init(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
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
    return cudaGetLastError() == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess ? 0 : -1;
}

static int vector(int dir, char *nc, int64_t stride, uint64_t blen, uint64_t off, uint64_t len, char *pk)
{
    if (!len)
        return 0;
    uint64_t first = off / blen, last = (off + len - 1) / blen;
    uint64_t nblk = last - first + 1;
    vector_kernel<<<grid_for(nblk), THREADS>>>(dir, nc, stride, blen, first, nblk, off, len, pk);
    return finish();
}

static void *units_upload(const xp_dt_cuda_unit_t *u, size_t n)
{
    void *d = NULL;
    if (cudaMalloc(&d, n ? n * sizeof *u : 1) != cudaSuccess)
        return NULL;
    if (n && cudaMemcpy(d, u, n * sizeof *u, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        return NULL;
    }
    return d;
}

static void units_free(void *units)
{
    cudaFree(units);
}

static int units_run(int dir, void *units, size_t first, size_t n, char *nc, char *pk, uint64_t off, uint64_t len)
{
    if (!n || !len)
        return 0;
    units_kernel<<<grid_for(n), THREADS>>>(dir, (const xp_dt_cuda_unit_t *)units + first, n, nc, pk, off, len);
    return finish();
}

static void *dev_alloc(size_t n)
{
    void *d = NULL;
    return cudaMalloc(&d, n ? n : 1) == cudaSuccess ? d : NULL;
}

static void dev_free(void *p)
{
    cudaFree(p);
}

static int copy(void *dst, const void *src, size_t n)
{
    return cudaMemcpy(dst, src, n, cudaMemcpyDefault) == cudaSuccess ? 0 : -1;
}

static const xp_dt_cuda_ops_t ops = {
    sizeof(xp_dt_cuda_ops_t), XP_DT_CUDA_ABI, init, mem_type, vector, units_upload, units_free,
    units_run, dev_alloc, dev_free, copy,
};

extern "C" __attribute__((visibility("default"))) const xp_dt_cuda_ops_t *xp_dt_cuda_plugin(void)
{
    return &ops;
}
