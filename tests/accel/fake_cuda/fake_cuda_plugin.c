/* A stand-in for libxpaccel_cuda.so, for machines without a GPU: the same ops
 * table, with host memory and no kernel. It records what a real GPU would
 * punish: an allocation, a free, a start or a stop while another queue's
 * "persistent kernel" runs (cudaFree and friends would wait for it for
 * good), and pauses / resumes of kernels that are not in the state the
 * call expects. test_cuda_quiesce reads the counts through fake_cuda_stats. */
#include <stdlib.h>
#include <string.h>

#include "accel/cuda_plugin.h"
#include "fake_cuda.h"

#define MAX_HANDLES 64

typedef struct fake_handle {
    int running;
} fake_handle_t;

/* A test double's bookkeeping: one per process, like the GPU it stands for. */
static fake_stats_t stats;
static fake_handle_t *handles[MAX_HANDLES];

static int others_running(const fake_handle_t *self)
{
    int n = 0;
    for (int i = 0; i < MAX_HANDLES; i++)
        if (handles[i] && handles[i] != self && handles[i]->running)
            n++;
    return n;
}

static void memory_call(const fake_handle_t *self)
{
    if (others_running(self))
        stats.violations++;
}

static int device_count(void)
{
    return 1;
}

static int mem_query(const void *ptr, uintptr_t *base, size_t *len)
{
    return 0; /* XP_MEM_HOST */
}

static xp_status_t host_alloc(size_t bytes, void **mem_out)
{
    memory_call(NULL);
    void *p;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1))
        return XP_ERR_NO_MEMORY;
    memset(p, 0, bytes);
    *mem_out = p;
    return XP_OK;
}

static void host_free(void *mem)
{
    memory_call(NULL);
    free(mem);
}

static xp_status_t queue_start(int device, int nblocks, void *queue_mem, void **handle_out)
{
    memory_call(NULL);
    for (int i = 0; i < MAX_HANDLES; i++)
        if (!handles[i]) {
            fake_handle_t *h = calloc(1, sizeof(*h));
            h->running = 1;
            handles[i] = h;
            stats.starts++;
            *handle_out = h;
            return XP_OK;
        }
    return XP_ERR_NO_MEMORY;
}

static void queue_stop(void *hv)
{
    fake_handle_t *h = hv;
    memory_call(h);
    for (int i = 0; i < MAX_HANDLES; i++)
        if (handles[i] == h)
            handles[i] = NULL;
    stats.stops++;
    free(h);
}

static void queue_pause(void *hv)
{
    fake_handle_t *h = hv;
    if (!h->running)
        stats.bad_state++;
    h->running = 0;
    stats.pauses++;
}

static xp_status_t queue_resume(void *hv)
{
    fake_handle_t *h = hv;
    if (h->running)
        stats.bad_state++;
    h->running = 1;
    stats.resumes++;
    return XP_OK;
}

static const xp_cuda_plugin_ops_t ops = {
    sizeof(xp_cuda_plugin_ops_t), XP_CUDA_PLUGIN_ABI, device_count, mem_query, host_alloc, host_free,
    queue_start, queue_stop, queue_pause, queue_resume,
};

__attribute__((visibility("default"))) const xp_cuda_plugin_ops_t *xp_cuda_plugin_get(void)
{
    return &ops;
}

__attribute__((visibility("default"))) void fake_cuda_stats(fake_stats_t *out)
{
    stats.running = others_running(NULL);
    *out = stats;
}
