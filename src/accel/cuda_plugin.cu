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
    volatile int stop;   /* drain the queue, then exit */
    volatile int pause;  /* exit before the next packet; queue_resume relaunches */
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
    queue_shm *queue_dev;
    ctl *ctl_dev;        /* the device's address of ctl_host */
    int device;
    int nblocks;
    int running;         /* launched and not paused since */
    int native;          /* the link has native atomics on host memory */
};

/* ---------------------------------------------------------------- device */

/* Where the link to the host has no native atomics (PCIe without AtomicOps:
 * cudaDevAttrHostNativeAtomicSupported = 0, as on the H100 VM this was
 * tested on, where compute-sanitizer rejects system-scope atomics on pinned
 * memory), the device's updates of host signals are plain read-modify-writes
 * serialised by this lock in device memory: the grids of all queues of the
 * process are then the only writers of a signal while its task runs (the
 * host sets a completion signal before it pushes the packet, and only waits
 * afterwards), which is how signals are used with a CUDA agent. */
__device__ static unsigned int g_host_signal_lock;

__device__ static void host_lock(int native)
{
    if (native)
        return;
    while (atomicCAS(&g_host_signal_lock, 0u, 1u) != 0u)
        __nanosleep(32);
    __threadfence();
}

__device__ static void host_unlock(int native)
{
    if (native)
        return;
    __threadfence_system();
    atomicExch(&g_host_signal_lock, 0u);
}

__device__ static void host_inc32(unsigned int *p, int native)
{
    if (native)
        atomicAdd_system(p, 1u);
    else
        *(volatile unsigned int *)p = *(volatile unsigned int *)p + 1u;
}

/* A host signal's value changed by the device: added to (add) or stored
 * (the space signal, whose only writer is the GPU). begun before the value,
 * seq after it: a host waiter that sees the value does not return before
 * seq is bumped (signal.c, lifetime invariant). */
__device__ static void signal_update(xp_signal_t *s, long long v, int add, int native)
{
    host_lock(native);
    host_inc32((unsigned int *)&s->begun, native);
    __threadfence_system();
    if (!add)
        *(volatile int64_t *)&s->value = (int64_t)v;
    else if (native)
        atomicAdd_system((unsigned long long *)&s->value, (unsigned long long)v);
    else
        *(volatile long long *)&s->value = *(volatile long long *)&s->value + v;
    __threadfence_system();
    host_inc32((unsigned int *)&s->seq, native);
    host_unlock(native);
}

__device__ static void signal_add(uint64_t sig_addr, long long delta, int native)
{
    if (sig_addr)
        signal_update((xp_signal_t *)sig_addr, delta, 1, native);
}

/* The GPU is the only writer of the space signal. */
__device__ static void queue_release(queue_shm *q, uint64_t r, int native)
{
    volatile xp_aql_packet_t *slot = &q->ring[r & q->mask];
    slot->header = (uint16_t)XP_AQL_TYPE_INVALID;
    __threadfence_system();
    *(volatile uint64_t *)&q->read_index = r + 1;
    signal_update(&q->space, (long long)(r + 1), 0, native);
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
__device__ static void dispatch(queue_shm *q, ctl *c, job *j, int native)
{
    while (*(volatile int *)&j->busy)
        __nanosleep(100);
    for (;;) {
        if (c->pause) { /* packets left in the queue wait for the relaunch */
            __threadfence();
            *(volatile unsigned long long *)&j->gen = JOB_EXIT;
            return;
        }
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
            queue_release(q, r, native);
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
            queue_release(q, r, native);
            signal_add(p.barrier.completion_signal, -1, native);
            continue;
        }
        /* agent dispatch / vendor packets: not run on the GPU */
        queue_release(q, r, native);
        if (type == XP_AQL_TYPE_AGENT_DISPATCH)
            signal_add(p.agent.completion_signal, -1, native);
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

__global__ void xp_cuda_persistent(queue_shm *q, ctl *c, job *j, int native)
{
    __shared__ unsigned long long s_gen;
    unsigned long long my_gen = 0;
    for (;;) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            dispatch(q, c, j, native);
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
                signal_add(sig, -1, native);
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

static int launch(handle *h)
{
    /* A fresh job record: generation 0, no job busy (a paused grid left
     * JOB_EXIT in it). Stream-ordered before the launch. */
    if (cudaMemsetAsync(h->job_dev, 0, sizeof(job), h->stream) != cudaSuccess)
        return -1;
    xp_cuda_persistent<<<h->nblocks, 256, 0, h->stream>>>(h->queue_dev, h->ctl_dev, h->job_dev, h->native);
    h->running = cudaGetLastError() == cudaSuccess;
    return h->running ? 0 : -1;
}

static xp_status_t queue_start(int device, int nblocks, void *queue_mem, void **handle_out)
{
    handle *h = new handle();
    h->device = device;
    if (cudaSetDevice(device) != cudaSuccess)
        goto err_free_handle;
    if (nblocks <= 0) {
        /* Leave most of the GPU to other kernels: the grid is resident for good. */
        int sms = 1;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        nblocks = sms < 4 ? sms : 4;
    }
    h->nblocks = nblocks;
    if (cudaDeviceGetAttribute(&h->native, cudaDevAttrHostNativeAtomicSupported, device) != cudaSuccess)
        h->native = 0;
    if (cudaHostGetDevicePointer((void **)&h->queue_dev, queue_mem, 0) != cudaSuccess)
        goto err_free_handle;
    if (cudaHostAlloc((void **)&h->ctl_host, sizeof(ctl), cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
        goto err_free_handle;
    h->ctl_host->stop = 0;
    h->ctl_host->pause = 0;
    if (cudaHostGetDevicePointer((void **)&h->ctl_dev, h->ctl_host, 0) != cudaSuccess)
        goto err_free_ctl;
    if (cudaMalloc((void **)&h->job_dev, sizeof(job)) != cudaSuccess)
        goto err_free_ctl;
    if (cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking) != cudaSuccess)
        goto err_free_job;
    if (launch(h) != 0)
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
    cudaGetLastError();
    return XP_ERR_UNSUPPORTED;
}

/* The grid leaves before its next packet (a packet it is running finishes
 * first); the queue keeps what is published. */
static void queue_pause(void *hv)
{
    handle *h = (handle *)hv;
    __atomic_store_n(&h->ctl_host->pause, 1, __ATOMIC_SEQ_CST);
    cudaStreamSynchronize(h->stream);
    h->running = 0;
}

static xp_status_t queue_resume(void *hv)
{
    handle *h = (handle *)hv;
    __atomic_store_n(&h->ctl_host->pause, 0, __ATOMIC_SEQ_CST);
    return launch(h) == 0 ? XP_OK : XP_ERR_IO;
}

static void queue_stop(void *hv)
{
    handle *h = (handle *)hv;
    if (!h)
        return;
    __atomic_store_n(&h->ctl_host->stop, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->ctl_host->pause, 0, __ATOMIC_SEQ_CST);
    if (!h->running)
        launch(h); /* a paused grid drains what is published, then exits */
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
    queue_pause,
    queue_resume,
};

extern "C" __attribute__((visibility("default"))) const xp_cuda_plugin_ops_t *xp_cuda_plugin_get(void)
{
    return &plugin_ops;
}
