/* The CUDA agent plugin (libxpaccel_cuda.so): a persistent kernel drains a
 * task queue that lives in pinned, mapped host memory, so a producer on the
 * host (or the Portals engine delivering an XTQ put) launches GPU work with
 * plain stores - no host thread and no kernel launch on the path.
 *
 * Block 0 / thread 0 is the packet processor: it launches packets in order
 * (so the barrier bit is always honoured), waits for barrier-AND/OR
 * dependencies, and publishes each kernel dispatch as a "job" that every
 * block of the persistent grid works on; the last block to finish completes
 * the packet (decrements its completion signal: system-scope atomics where
 * the link has them, else stores under a lock, see signal_add).
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
/* load_value_seq reads both in one 16-byte load. */
static_assert(offsetof(xp_signal_t, value) == 0 && offsetof(xp_signal_t, seq) == 8,
              "signal layout differs from accel.h");

typedef void (*xp_cuda_device_fn_t)(void *kernarg, uint64_t i, uint64_t n);

#define JOB_EXIT (~0ull)

struct ctl {
    volatile int stop;   /* drain the queue, then exit */
    volatile int pause;  /* exit before the next packet; queue_resume relaunches */
};
/* The device reads both flags in one 8-byte load (load_ctl). */
static_assert(offsetof(ctl, stop) == 0 && offsetof(ctl, pause) == 4 && sizeof(ctl) == 8,
              "ctl layout");

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

__device__ static void host_lock(void)
{
    while (atomicCAS(&g_host_signal_lock, 0u, 1u) != 0u)
        __nanosleep(32);
    __threadfence();
}

__device__ static void host_unlock(void)
{
    __threadfence_system();
    atomicExch(&g_host_signal_lock, 0u);
}

/* What one thread pays on the link to host memory (pinned, mapped), as
 * bench/cuda_link_probe measured it on an H100 without native atomics:
 * a strong load 1.16 us, 16 bytes as much as 8, and strong loads do not
 * overlap (three take 3.1 us) while plain ones after an acquire do; a
 * system-scope fence 0.7-0.85 us; a store a few ns (posted). So the device
 * reads host memory seldom and 16 bytes at a time, keeps what only it
 * writes in registers, and fences once per update. */

/* An acquire load of a packet header: the body is read after it (no fence). */
__device__ static uint16_t load_acquire_u16(const volatile uint16_t *p)
{
    uint16_t v;
    asm volatile("ld.acquire.sys.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}

/* One strong 16-byte load: a signal's value and seq in one round trip. */
__device__ static void load_value_seq(const xp_signal_t *s, long long *value, unsigned int *seq)
{
    unsigned long long v, w;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(v), "=l"(w) : "l"(s) : "memory");
    *value = (long long)v;
    *seq = (unsigned int)w; /* seq is the low half of the second word */
}

/* A host signal's value changed by the device. The value is its last store,
 * after seq and begun: a host waiter that sees it finds seq caught up with
 * begun, so it may return and free the signal (signal.c, lifetime
 * invariant) while the device no longer touches it. (Sleepers are not woken
 * either way: a device signal's waiters sleep in short slices.) Without
 * native atomics, under the lock, value and seq are read in one load; begun
 * equals seq then, as no host update runs while a task that completes the
 * signal is in flight. */
__device__ static void signal_add(uint64_t sig_addr, long long delta, int native)
{
    xp_signal_t *s = (xp_signal_t *)sig_addr;
    if (!s)
        return;
    if (native) {
        atomicAdd_system((unsigned int *)&s->begun, 1u);
        __threadfence_system();
        atomicAdd_system((unsigned long long *)&s->value, (unsigned long long)delta);
        __threadfence_system();
        atomicAdd_system((unsigned int *)&s->seq, 1u);
        return;
    }
    volatile xp_signal_t *vs = s;
    long long value;
    unsigned int seq;
    host_lock();
    load_value_seq(s, &value, &seq);
    vs->seq = seq + 1u;
    vs->begun = seq + 1u;
    __threadfence_system();
    vs->value = value + delta;
    host_unlock();
}

/* Where thread (0,0) is in its queue. It is the only writer of the read
 * index and of the space signal, so it keeps both in registers (read once
 * per launch) and updates the host's copies with stores alone. */
struct cursor {
    uint64_t r;          /* the read index */
    unsigned int seq;    /* the space signal's seq (and begun) */
    unsigned int mask;   /* the ring's (constant) */
    unsigned int looks;  /* at the queue, this launch */
    int known;
};

__device__ static void cursor_load(queue_shm *q, cursor *cur)
{
    if (cur->known)
        return;
    cur->r = *(volatile uint64_t *)&q->read_index;
    cur->seq = *(volatile unsigned int *)&q->space.seq;
    cur->mask = *(volatile uint32_t *)&q->mask;
    cur->known = 1;
}

/* Frees the slot at the read index. The slot is marked free before the index
 * moves past it (a producer may write it as soon as it sees the room). The
 * space signal's seq and begun are stored without a fence after the index: a
 * producer waiting for room sleeps in short slices (a device signal), and
 * seq only ends such a sleep early; the signal lives as long as the queue,
 * so its waiters need no lifetime guard, and begun == seq keeps drain()
 * from waiting. */
__device__ static void queue_release(queue_shm *q, cursor *cur)
{
    volatile xp_aql_packet_t *slot = &q->ring[cur->r & cur->mask];
    slot->header = (uint16_t)XP_AQL_TYPE_INVALID;
    __threadfence_system();
    cur->r++;
    cur->seq++;
    *(volatile uint64_t *)&q->read_index = cur->r;
    *(volatile int64_t *)&q->space.value = (int64_t)cur->r;
    *(volatile unsigned int *)&q->space.seq = cur->seq;
    *(volatile unsigned int *)&q->space.begun = cur->seq;
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

/* The flags: a round trip over the link, so looked at on every 8th look at
 * the queue (the first of a launch included). A pause then takes effect
 * within 8 packets, a stop within 8 looks at an empty queue. */
#define CTL_EVERY 8u

/* ctl's two flags in one load: stop in the low half, pause in the high. */
__device__ static unsigned long long load_ctl(const ctl *c)
{
    return *(const volatile unsigned long long *)c;
}

__device__ static void leave(job *j)
{
    __threadfence();
    *(volatile unsigned long long *)&j->gen = JOB_EXIT;
}

/* Thread (0,0): process packets until one is a kernel (published as a job),
 * the agent is paused, or it is stopped with an empty queue. */
__device__ static void dispatch(queue_shm *q, ctl *c, job *j, cursor *cur, int native)
{
    while (*(volatile int *)&j->busy)
        __nanosleep(100);
    for (;;) {
        cursor_load(q, cur);
        unsigned long long flags = cur->looks++ % CTL_EVERY ? 0 : load_ctl(c);
        int stop = (unsigned int)flags != 0;
        if (flags >> 32) { /* paused: packets left in the queue wait for the relaunch */
            leave(j);
            return;
        }
        volatile xp_aql_packet_t *slot = &q->ring[cur->r & cur->mask];
        uint16_t header = load_acquire_u16(&slot->header);
        unsigned type = header & 0xffu;
        if (type == XP_AQL_TYPE_INVALID) {
            if (stop) {
                leave(j);
                return;
            }
            __nanosleep(200);
            continue;
        }
        /* After the acquire: plain loads, 16 bytes each, in flight together. */
        const ulonglong2 *body = (const ulonglong2 *)slot;
        union {
            ulonglong2 w[4];
            xp_aql_packet_t p;
        } u;
        ulonglong2 w0 = body[0], w1 = body[1], w2 = body[2], w3 = body[3];
        u.w[0] = w0;
        u.w[1] = w1;
        u.w[2] = w2;
        u.w[3] = w3;
        xp_aql_packet_t p = u.p;
        p.header = header;
        if (type == XP_AQL_TYPE_KERNEL_DISPATCH) {
            queue_release(q, cur);
            j->pkt = p.kernel;
            j->finished = 0;
            *(volatile int *)&j->busy = 1;
            __threadfence();
            atomicAdd(&j->gen, 1ull);
            return;
        }
        if (type == XP_AQL_TYPE_BARRIER_AND || type == XP_AQL_TYPE_BARRIER_OR) {
            if (!deps_done(&p.barrier)) {
                if (stop) { /* never satisfied: give up on stop */
                    leave(j);
                    return;
                }
                __nanosleep(500);
                continue;
            }
            queue_release(q, cur);
            signal_add(p.barrier.completion_signal, -1, native);
            continue;
        }
        /* agent dispatch / vendor packets: not run on the GPU */
        queue_release(q, cur);
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
    cursor cur = {0, 0, 0, 0, 0}; /* thread (0,0)'s */
    for (;;) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            dispatch(q, c, j, &cur, native);
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
