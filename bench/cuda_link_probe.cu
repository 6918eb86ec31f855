/* cuda_link_probe: what one GPU thread pays for the accesses the CUDA agent
 * makes to pinned, mapped host memory (its queue, packets and signals),
 * next to a load from device memory. Each figure is the time of 200
 * repetitions in one thread divided by 200, median of the runs:
 *   bench=cuda_link_probe what=host_load ns=1167
 *
 *   host_load         strong 8-byte load of host memory, each waiting for the last
 *   host_load_x3      three independent strong loads, then their sum (do they overlap?)
 *   host_load_16b     one strong 16-byte load
 *   acquire_plain_4x16  an acquire load, then four plain 16-byte loads (a packet)
 *   host_store        a strong store to host memory (posted)
 *   fence_sys         __threadfence_system() with nothing outstanding
 *   store_fence_sys   a store to host memory, then __threadfence_system()
 *   fence_gpu         __threadfence()
 *   device_load       strong 8-byte load of device memory, each waiting for the last
 * Usage: cuda_link_probe [runs]. Exits 77 without a GPU. */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 200, MAX_RUNS = 64 };

typedef enum {
    HOST_LOAD, HOST_LOAD_X3, HOST_LOAD_16B, ACQUIRE_PLAIN_4X16, HOST_STORE, FENCE_SYS,
    STORE_FENCE_SYS, FENCE_GPU, DEVICE_LOAD, NWHAT
} what_t;

static const char *const names[NWHAT] = {
    "host_load", "host_load_x3", "host_load_16b", "acquire_plain_4x16", "host_store",
    "fence_sys", "store_fence_sys", "fence_gpu", "device_load",
};

__device__ static uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static uint64_t load_16b(const uint64_t *p)
{
    uint64_t a, b;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
    return a + b;
}

__device__ static uint64_t load_acquire(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* Every address depends on the previous value (always 0), so each
 * repetition waits for the last one's loads. */
__global__ void probe(uint64_t *host, uint64_t *dev, uint64_t *out)
{
    volatile uint64_t *vh = host, *vd = dev;
    uint64_t acc = 0, t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        acc += vh[acc & 8];
    out[HOST_LOAD] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++) {
        uint64_t a = vh[acc & 8], b = vh[1 + (acc & 8)], c = vh[2 + (acc & 8)];
        acc += a + b + c;
    }
    out[HOST_LOAD_X3] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        acc += load_16b(host + (acc & 8));
    out[HOST_LOAD_16B] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++) {
        const ulonglong2 *body = (const ulonglong2 *)(host + 16 + (load_acquire(host + (acc & 8)) & 8));
        ulonglong2 a = body[0], b = body[1], c = body[2], d = body[3];
        acc += a.x + b.x + c.x + d.x;
    }
    out[ACQUIRE_PLAIN_4X16] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        vh[32] = i;
    out[HOST_STORE] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        __threadfence_system();
    out[FENCE_SYS] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++) {
        vh[32] = i;
        __threadfence_system();
    }
    out[STORE_FENCE_SYS] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        __threadfence();
    out[FENCE_GPU] = now_ns() - t;

    t = now_ns();
    for (int i = 0; i < N; i++)
        acc += vd[acc & 8];
    out[DEVICE_LOAD] = now_ns() - t;

    out[NWHAT] = acc; /* keeps the loads */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 11;
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: cuda_link_probe [runs 1-%d]\n", MAX_RUNS);
        return 2;
    }
    uint64_t *host, *host_dev, *dev, *out;
    if (cudaHostAlloc((void **)&host, 4096, cudaHostAllocMapped) != cudaSuccess) {
        printf("SKIP: no GPU\n");
        return 77;
    }
    if (cudaHostGetDevicePointer((void **)&host_dev, host, 0) != cudaSuccess ||
        cudaMalloc((void **)&dev, 4096) != cudaSuccess || cudaMemset(dev, 0, 4096) != cudaSuccess ||
        cudaHostAlloc((void **)&out, (NWHAT + 1) * sizeof(uint64_t), cudaHostAllocMapped) != cudaSuccess) {
        fprintf(stderr, "cuda_link_probe: CUDA set-up failed\n");
        return 1;
    }
    for (int i = 0; i < 512; i++)
        host[i] = 0;
    uint64_t *out_dev, samples[NWHAT][MAX_RUNS];
    cudaHostGetDevicePointer((void **)&out_dev, out, 0);
    for (int r = 0; r < runs; r++) {
        probe<<<1, 1>>>(host_dev, dev, out_dev);
        if (cudaDeviceSynchronize() != cudaSuccess) {
            fprintf(stderr, "cuda_link_probe: kernel failed\n");
            return 1;
        }
        for (int w = 0; w < NWHAT; w++)
            samples[w][r] = out[w];
    }
    int native = 0;
    cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0);
    printf("# host native atomics: %d\n", native);
    for (int w = 0; w < NWHAT; w++) {
        qsort(samples[w], runs, sizeof(uint64_t), cmp_u64);
        printf("bench=cuda_link_probe what=%s runs=%d ns=%.0f\n", names[w], runs,
               (double)samples[w][runs / 2] / N);
    }
    return 0;
}
