/* The CUDA agent plugin (libxpaccel_cuda.so): a persistent kernel drains a
 * task queue that lives in pinned, mapped host memory, so a producer on the
 * host (or the Portals engine delivering an XTQ put) launches GPU work with
 * plain stores - no host thread and no kernel launch on the path.
 *
 * Block 0 / thread 0 is the packet processor: it launches packets in order
 * (so the barrier bit is always honoured), waits for barrier-AND/OR
 * dependencies, and publishes each kernel dispatch as a "job" that every
 * block of the persistent grid works on; the last block to finish completes
 * the packet (decrements its completion signal with a system-scope atomic).
 * Work-items are spread over the persistent grid (the packet's work-group
 * sizes are not used). Kernel objects are XP_CUDA_KERNEL_* built-ins or a
 * device function pointer of type xp_cuda_device_fn_t. Agent dispatch packets
 * are not executed by the GPU: they are completed and skipped. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern "C" {
#include "accel/cuda_plugin.h"
#include "xportals/accel.h"
}

/* Mirror of the queue layout of accel_internal.h (kept C-only there). */
struct queue_shm {
    uint64_t magic;
    uint32_t size;
    uint32_t mask;
    uint64_t bytes;
    alignas(64) uint64_t write_index;
    alignas(64) uint64_t read_index;
    xp_signal_t doorbell;
    xp_signal_t space;
    alignas(64) xp_aql_packet_t ring[1];
};

/* xp_queue_shm_t's layout (accel_internal.h asserts the same offsets). */
static_assert(offsetof(queue_shm, write_index) == 64 && offsetof(queue_shm, read_index) == 128 &&
                  offsetof(queue_shm, doorbell) == 192 && offsetof(queue_shm, space) == 256 &&
                  offsetof(queue_shm, ring) == 320,
              "queue layout differs from accel_internal.h");

typedef void (*xp_cuda_device_fn_t)(void *kernarg, uint64_t i, uint64_t n);

#define JOB_EXIT (~0ull)

struct ctl {
    volatile int stop;
};

struct job {
    xp_aql_kernel_dispatch_t pkt;
    unsigned long long gen;     /* bumped for every job; JOB_EXIT to leave */
    unsigned int finished;      /* blocks done with the current job */
    int busy;
};

struct handle {
    cudaStream_t stream;
    ctl *ctl_host;
    job *job_dev;
    int device;
};

/* ---------------------------------------------------------------- device */

__device__ static void signal_add(uint64_t sig_addr, long long delta)
{
    if (!sig_addr)
        return;
    xp_signal_t *s = (xp_signal_t *)sig_addr;
    /* begun before the value, seq after it: a host waiter that sees the value
     * does not return before seq is bumped (signal.c, lifetime invariant). */
    atomicAdd_system((unsigned int *)&s->begun, 1u);
    __threadfence_system();
    atomicAdd_system((unsigned long long *)&s->value, (unsigned long long)delta);
    __threadfence_system();
    atomicAdd_system((unsigned int *)&s->seq, 1u);
}

__device__ static void queue_release(queue_shm *q, uint64_t r)
{
    volatile xp_aql_packet_t *slot = &q->ring[r & q->mask];
    slot->header = (uint16_t)XP_AQL_TYPE_INVALID;
    __threadfence_system();
    *(volatile uint64_t *)&q->read_index = r + 1;
    atomicAdd_system((unsigned int *)&q->space.begun, 1u);
    __threadfence_system();
    *(volatile int64_t *)&q->space.value = (int64_t)(r + 1);
    __threadfence_system();
    atomicAdd_system((unsigned int *)&q->space.seq, 1u);
}

__device__ static int deps_done(const xp_aql_barrier_t *b)
{
    int is_or = (b->header & 0xff) == XP_AQL_TYPE_BARRIER_OR, used = 0;
    for (int i = 0; i < 5; i++) {
        if (!b->dep_signal[i])
            continue;
        used = 1;
        int done = *(volatile int64_t *)&((xp_signal_t *)b->dep_signal[i])->value == 0;
        if (is_or && done)
            return 1;
        if (!is_or && !done)
            return 0;
    }
    return is_or ? !used : 1;
}

/* Thread (0,0): process packets until one is a kernel (published as a job)
 * or the agent is stopped with an empty queue. */
__device__ static void dispatch(queue_shm *q, ctl *c, job *j)
{
    while (*(volatile int *)&j->busy)
        __nanosleep(100);
    for (;;) {
        uint64_t r = *(volatile uint64_t *)&q->read_index;
        volatile xp_aql_packet_t *slot = &q->ring[r & q->mask];
        uint16_t header = slot->header;
        unsigned type = header & 0xffu;
        if (type == XP_AQL_TYPE_INVALID) {
            if (c->stop) {
                __threadfence();
                *(volatile unsigned long long *)&j->gen = JOB_EXIT;
                return;
            }
            __nanosleep(200);
            continue;
        }
        __threadfence_system();
        xp_aql_packet_t p;
        for (int i = 0; i < 8; i++)
            ((uint64_t *)&p)[i] = ((volatile uint64_t *)slot)[i];
        p.header = header;
        if (type == XP_AQL_TYPE_KERNEL_DISPATCH) {
            queue_release(q, r);
            j->pkt = p.kernel;
            j->finished = 0;
            *(volatile int *)&j->busy = 1;
            __threadfence();
            atomicAdd(&j->gen, 1ull);
            return;
        }
        if (type == XP_AQL_TYPE_BARRIER_AND || type == XP_AQL_TYPE_BARRIER_OR) {
            if (!deps_done(&p.barrier)) {
                if (c->stop) { /* never satisfied: give up on stop */
                    *(volatile unsigned long long *)&j->gen = JOB_EXIT;
                    return;
                }
                __nanosleep(500);
                continue;
            }
            queue_release(q, r);
            signal_add(p.barrier.completion_signal, -1);
            continue;
        }
        /* agent dispatch / vendor packets: not run on the GPU */
        queue_release(q, r);
        if (type == XP_AQL_TYPE_AGENT_DISPATCH)
            signal_add(p.agent.completion_signal, -1);
    }
}

__device__ static void run_item(uint64_t kobj, void *kernarg, uint64_t i, uint64_t n)
{
    switch (kobj) {
    case XP_CUDA_KERNEL_NOP:
        return;
    case XP_CUDA_KERNEL_SUM_F64: {
        struct a { double *dst; const double *src; uint64_t n; } *x = (struct a *)kernarg;
        if (i < x->n)
            x->dst[i] += x->src[i];
        return;
    }
    case XP_CUDA_KERNEL_SUM_F32: {
        struct a { float *dst; const float *src; uint64_t n; } *x = (struct a *)kernarg;
        if (i < x->n)
            x->dst[i] += x->src[i];
        return;
    }
    case XP_CUDA_KERNEL_COPY: {
        struct a { uint8_t *dst; const uint8_t *src; uint64_t n; } *x = (struct a *)kernarg;
        if (i < x->n)
            x->dst[i] = x->src[i];
        return;
    }
    default:
        ((xp_cuda_device_fn_t)kobj)(kernarg, i, n);
    }
}

__global__ void xp_cuda_persistent(queue_shm *q, ctl *c, job *j)
{
    __shared__ unsigned long long s_gen;
    unsigned long long my_gen = 0;
    for (;;) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            dispatch(q, c, j);
        if (threadIdx.x == 0) {
            unsigned long long g;
            while ((g = *(volatile unsigned long long *)&j->gen) == my_gen)
                __nanosleep(100);
            s_gen = g;
        }
        __syncthreads();
        my_gen = s_gen;
        if (my_gen == JOB_EXIT)
            return;
        __threadfence();
        const xp_aql_kernel_dispatch_t *p = &j->pkt;
        uint64_t n = (uint64_t)p->grid_size_x * (p->grid_size_y ? p->grid_size_y : 1) *
                     (p->grid_size_z ? p->grid_size_z : 1);
        uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            run_item(p->kernel_object, (void *)p->kernarg_address, i, n);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            if (atomicAdd(&j->finished, 1u) == gridDim.x - 1) {
                uint64_t sig = j->pkt.completion_signal;
                *(volatile int *)&j->busy = 0;
                signal_add(sig, -1);
            }
        }
        __syncthreads();
    }
}

/* ---------------------------------------------------------------- host */

static int device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    if (cuInit(0) != CUDA_SUCCESS)
        return 0;
    return n;
}

static int mem_query(const void *ptr, uintptr_t *base, size_t *len)
{
    CUmemorytype type = (CUmemorytype)0;
    CUdeviceptr start = 0;
    size_t size = 0;
    int managed = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *vals[] = {&type, &start, &size, &managed};
    if (cuPointerGetAttributes(4, attrs, vals, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS)
        return XP_MEM_HOST;
    if (managed) {
        *base = (uintptr_t)start;
        *len = size;
        return XP_MEM_CUDA_MANAGED;
    }
    if (type != CU_MEMORYTYPE_DEVICE)
        return XP_MEM_HOST;
    *base = (uintptr_t)start;
    *len = size;
    return XP_MEM_CUDA;
}

static xp_status_t host_alloc(size_t bytes, void **mem_out)
{
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
        return XP_ERR_NO_MEMORY;
    memset(p, 0, bytes);
    *mem_out = p;
    return XP_OK;
}

static void host_free(void *mem)
{
    cudaFreeHost(mem);
}

static xp_status_t queue_start(int device, int nblocks, void *queue_mem, void **handle_out)
{
    handle *h = new handle();
    queue_shm *dq = NULL;
    void *dctl = NULL;
    h->device = device;
    if (cudaSetDevice(device) != cudaSuccess)
        goto err_free_handle;
    if (nblocks <= 0) {
        /* Leave most of the GPU to other kernels: the grid is resident for good. */
        int sms = 1;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        nblocks = sms < 4 ? sms : 4;
    }
    if (cudaHostGetDevicePointer((void **)&dq, queue_mem, 0) != cudaSuccess)
        goto err_free_handle;
    if (cudaHostAlloc((void **)&h->ctl_host, sizeof(ctl), cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
        goto err_free_handle;
    h->ctl_host->stop = 0;
    cudaHostGetDevicePointer(&dctl, h->ctl_host, 0);
    if (cudaMalloc((void **)&h->job_dev, sizeof(job)) != cudaSuccess)
        goto err_free_ctl;
    cudaMemset(h->job_dev, 0, sizeof(job));
    if (cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking) != cudaSuccess)
        goto err_free_job;
    xp_cuda_persistent<<<nblocks, 256, 0, h->stream>>>(dq, (ctl *)dctl, h->job_dev);
    if (cudaGetLastError() != cudaSuccess)
        goto err_free_stream;
    *handle_out = h;
    return XP_OK;

err_free_stream:
    cudaStreamDestroy(h->stream);
err_free_job:
    cudaFree(h->job_dev);
err_free_ctl:
    cudaFreeHost(h->ctl_host);
err_free_handle:
    delete h;
    return XP_ERR_UNSUPPORTED;
}

static void queue_stop(void *hv)
{
    handle *h = (handle *)hv;
    if (!h)
        return;
    __atomic_store_n(&h->ctl_host->stop, 1, __ATOMIC_SEQ_CST);
    cudaStreamSynchronize(h->stream);
    cudaStreamDestroy(h->stream);
    cudaFree(h->job_dev);
    cudaFreeHost(h->ctl_host);
    delete h;
}

static const xp_cuda_plugin_ops_t plugin_ops = {
    sizeof(xp_cuda_plugin_ops_t),
    XP_CUDA_PLUGIN_ABI,
    device_count,
    mem_query,
    host_alloc,
    host_free,
    queue_start,
    queue_stop,
};

extern "C" __attribute__((visibility("default"))) const xp_cuda_plugin_ops_t *xp_cuda_plugin_get(void)
{
    return &plugin_ops;
}
