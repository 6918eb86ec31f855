/* The CUDA agent as libportals sees it: the plugin is loaded on first need
 * (dlopen), memory-type queries go through it with a small range cache, and
 * the agent ops forward to it. Without the plugin or a GPU every pointer is
 * host memory and creating a CUDA agent fails with XP_ERR_UNSUPPORTED. */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel_internal.h"
#include "accel/cuda_plugin.h"
#include "util/config.h"
#include "util/context.h"
#include "util/cuda_probe.h"
#include "util/log.h"

#define RANGE_CACHE_SIZE 64

typedef struct mem_range {
    uintptr_t base;
    size_t len;
    int type;
} mem_range_t;

/* Process state of the accel layer (xp_ctx.accel). */
struct xp_accel_state {
    pthread_mutex_t lock;
    int tried;                        /* load attempted */
    unsigned long long probed_adds;   /* loader state at the last negative driver probe */
    void *dl;
    const xp_cuda_plugin_ops_t *ops;
    int ndevices;
    mem_range_t ranges[RANGE_CACHE_SIZE];
    unsigned next_range;              /* round-robin replacement */
    /* Persistent kernels running in this process (plugin handles), paused
     * around every plugin call that allocates or frees CUDA memory. */
    pthread_mutex_t quiesce_lock;
    void **running;
    size_t nrunning, cap;
    unsigned quiesce_depth;           /* nesting of quiesce() (owner: quiesce_lock) */
};

/* The state is created on first use and published with a CAS, so the
 * library context stays the only global. */
static struct xp_accel_state *state_get(void)
{
    struct xp_accel_state *s = __atomic_load_n(&xp_ctx.accel, __ATOMIC_ACQUIRE);
    if (s)
        return s;
    struct xp_accel_state *fresh = calloc(1, sizeof(*fresh));
    if (!fresh)
        abort(); /* a few hundred bytes: nothing sensible is left to do */
    pthread_mutex_init(&fresh->lock, NULL);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&fresh->quiesce_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (__atomic_compare_exchange_n(&xp_ctx.accel, &s, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    pthread_mutex_destroy(&fresh->quiesce_lock);
    pthread_mutex_destroy(&fresh->lock);
    free(fresh);
    return s;
}

static void *try_open(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, XP_CUDA_PLUGIN_FILE) >= (int)sizeof(path))
        return NULL;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        xp_debug("CUDA plugin %s not loaded: %s", path, dlerror());
    return dl;
}

/* XP_ACCEL_PLUGIN_DIR, then <dir of libportals>/xportals, then
 * <dir of libportals>/../lib/xportals (tests linking the static layers). */
static void *open_plugin(void)
{
    const char *dir = xp_config()->accel_plugin_dir;
    if (dir && *dir)
        return try_open(dir);
    Dl_info info;
    if (!dladdr((void *)open_plugin, &info) || !info.dli_fname)
        return NULL;
    char self[PATH_MAX], sub[PATH_MAX];
    snprintf(self, sizeof(self), "%s", info.dli_fname);
    char *base = dirname(self);
    snprintf(sub, sizeof(sub), "%s/xportals", base);
    void *dl = try_open(sub);
    if (!dl) {
        snprintf(sub, sizeof(sub), "%s/../lib/xportals", base);
        dl = try_open(sub);
    }
    return dl;
}

static void quiesce_hook(int pause);

static void load_locked(struct xp_accel_state *s)
{
    if (s->tried)
        return;
    s->tried = 1;
    if (xp_config()->accel_cuda == 0) /* off */
        return;
    void *dl = open_plugin();
    if (!dl)
        return;
    xp_cuda_plugin_get_fn get = (xp_cuda_plugin_get_fn)dlsym(dl, XP_CUDA_PLUGIN_SYMBOL);
    const xp_cuda_plugin_ops_t *ops = get ? get() : NULL;
    if (!ops || ops->size != sizeof(*ops) || ops->abi != XP_CUDA_PLUGIN_ABI) {
        xp_warn("CUDA plugin has no or an incompatible %s, ignored", XP_CUDA_PLUGIN_SYMBOL);
        dlclose(dl);
        return;
    }
    s->dl = dl;
    s->ops = ops;
    s->ndevices = ops->device_count();
    __atomic_store_n(&xp_ctx.gpu_quiesce_hook, quiesce_hook, __ATOMIC_RELEASE);
    xp_debug("CUDA plugin loaded, %d device(s)", s->ndevices);
}

const struct xp_cuda_plugin_ops *xp_accel_cuda_plugin(void)
{
    struct xp_accel_state *s = state_get();
    pthread_mutex_lock(&s->lock);
    load_locked(s);
    pthread_mutex_unlock(&s->lock);
    return s->ndevices > 0 ? s->ops : NULL;
}

int xp_accel_cuda_available(void)
{
    return xp_accel_cuda_plugin() != NULL;
}

/* ---- memory types ---- */

xp_mem_type_t xp_mem_type(const void *ptr)
{
    struct xp_accel_state *s = state_get();
    if (!ptr)
        return XP_MEM_HOST;
    if (!__atomic_load_n(&s->tried, __ATOMIC_ACQUIRE)) {
        if (!xp_cuda_driver_loaded(&s->probed_adds))
            return XP_MEM_HOST;
        xp_accel_cuda_plugin();
    }
    if (!s->ops || s->ndevices <= 0)
        return XP_MEM_HOST;
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < RANGE_CACHE_SIZE; i++) {
        mem_range_t *r = &s->ranges[i];
        if (r->len && p - r->base < r->len) {
            int t = r->type;
            pthread_mutex_unlock(&s->lock);
            return (xp_mem_type_t)t;
        }
    }
    pthread_mutex_unlock(&s->lock);
    uintptr_t base = 0;
    size_t len = 0;
    int t = s->ops->mem_query(ptr, &base, &len);
    if (t != XP_MEM_HOST && len) {
        pthread_mutex_lock(&s->lock);
        s->ranges[s->next_range++ % RANGE_CACHE_SIZE] = (mem_range_t){base, len, t};
        pthread_mutex_unlock(&s->lock);
    }
    return (xp_mem_type_t)t;
}

void xp_mem_type_invalidate(const void *ptr, size_t len)
{
    struct xp_accel_state *s = state_get();
    uintptr_t lo = (uintptr_t)ptr, hi = lo + len;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < RANGE_CACHE_SIZE; i++) {
        mem_range_t *r = &s->ranges[i];
        if (r->len && r->base < hi && lo < r->base + r->len)
            r->len = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- the CUDA agent ---- */

/* A persistent kernel never ends by itself, and cudaFree, cudaFreeHost and
 * page-locked allocations may wait for every kernel of the device to end:
 * called while an agent's grid runs, they would wait for good. So every such
 * plugin call runs between quiesce() and resume(), with every grid of the
 * process paused (it exits before its next packet; the queue keeps what is
 * published) and relaunched after. */
static void quiesce(struct xp_accel_state *s)
{
    pthread_mutex_lock(&s->quiesce_lock); /* recursive: xp_accel_cuda_pause() nests */
    if (s->quiesce_depth++ == 0)
        for (size_t i = 0; i < s->nrunning; i++)
            s->ops->queue_pause(s->running[i]);
}

static void resume(struct xp_accel_state *s)
{
    if (--s->quiesce_depth == 0)
        for (size_t i = 0; i < s->nrunning; i++)
            if (s->ops->queue_resume(s->running[i]) != XP_OK)
                xp_error("CUDA agent: relaunching a queue's kernel failed");
    pthread_mutex_unlock(&s->quiesce_lock);
}

void xp_accel_cuda_pause(void)
{
    struct xp_accel_state *s = state_get();
    if (s->ops)
        quiesce(s);
}

void xp_accel_cuda_resume(void)
{
    struct xp_accel_state *s = state_get();
    if (s->ops)
        resume(s);
}

static void quiesce_hook(int pause)
{
    if (pause)
        xp_accel_cuda_pause();
    else
        xp_accel_cuda_resume();
}

/* Both called between quiesce() and resume(). */
static int running_add(struct xp_accel_state *s, void *h)
{
    if (s->nrunning == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        void **r = realloc(s->running, cap * sizeof(*r));
        if (!r)
            return -1;
        s->running = r;
        s->cap = cap;
    }
    s->running[s->nrunning++] = h;
    return 0;
}

static void running_remove(struct xp_accel_state *s, void *h)
{
    for (size_t i = 0; i < s->nrunning; i++)
        if (s->running[i] == h) {
            s->running[i] = s->running[--s->nrunning];
            return;
        }
}

typedef struct cuda_agent {
    const xp_cuda_plugin_ops_t *ops;
    int device;
    int nblocks;
} cuda_agent_t;

static xp_status_t cuda_start(xp_agent_t *agent, const xp_agent_params_t *params)
{
    const xp_cuda_plugin_ops_t *ops = xp_accel_cuda_plugin();
    if (!ops)
        return XP_ERR_UNSUPPORTED;
    if (params->device < 0 || params->device >= state_get()->ndevices)
        return XP_ERR_INVALID;
    cuda_agent_t *a = calloc(1, sizeof(*a));
    if (!a)
        return XP_ERR_NO_MEMORY;
    a->ops = ops;
    a->device = params->device;
    a->nblocks = params->num_workers;
    agent->impl = a;
    return XP_OK;
}

static void cuda_stop(xp_agent_t *agent)
{
    free(agent->impl);
}

/* Pinned mapped memory for queues and signals. */
static xp_status_t pinned_alloc(xp_agent_t *agent, size_t bytes, void **mem_out)
{
    cuda_agent_t *a = agent->impl;
    struct xp_accel_state *s = state_get();
    quiesce(s);
    xp_status_t st = a->ops->host_alloc(bytes, mem_out);
    resume(s);
    return st;
}

static void pinned_free(xp_agent_t *agent, void *mem)
{
    cuda_agent_t *a = agent->impl;
    struct xp_accel_state *s = state_get();
    quiesce(s);
    a->ops->host_free(mem);
    resume(s);
}

static xp_status_t cuda_queue_alloc(xp_agent_t *agent, size_t bytes, void **mem_out)
{
    return pinned_alloc(agent, bytes, mem_out);
}

static void cuda_queue_free(xp_agent_t *agent, void *mem, size_t bytes)
{
    pinned_free(agent, mem);
}

static xp_status_t cuda_queue_added(xp_agent_t *agent, xp_queue_t *queue)
{
    cuda_agent_t *a = agent->impl;
    struct xp_accel_state *s = state_get();
    /* The GPU advances the read index and cannot wake futex sleepers. */
    queue->shm->space.flags |= XP_SIGNAL_F_DEVICE;
    quiesce(s);
    xp_status_t st = a->ops->queue_start(a->device, a->nblocks, queue->shm, &queue->agent_data);
    if (st == XP_OK) {
        /* Paused like the others; resume() relaunches it with them (or later,
         * when an outer xp_accel_cuda_pause() ends). */
        a->ops->queue_pause(queue->agent_data);
        if (running_add(s, queue->agent_data) != 0) {
            a->ops->queue_stop(queue->agent_data);
            queue->agent_data = NULL;
            st = XP_ERR_NO_MEMORY;
        }
    }
    resume(s);
    return st;
}

static void cuda_queue_removed(xp_agent_t *agent, xp_queue_t *queue)
{
    cuda_agent_t *a = agent->impl;
    struct xp_accel_state *s = state_get();
    /* Its grid is relaunched to drain the queue and exit while the others
     * are paused (the plugin frees its memory then). */
    quiesce(s);
    running_remove(s, queue->agent_data);
    a->ops->queue_stop(queue->agent_data);
    resume(s);
    queue->agent_data = NULL;
}

static xp_status_t cuda_signal_alloc(xp_agent_t *agent, xp_signal_t **signal_out)
{
    return pinned_alloc(agent, sizeof(xp_signal_t), (void **)signal_out);
}

static void cuda_signal_free(xp_agent_t *agent, xp_signal_t *signal)
{
    pinned_free(agent, signal);
}

const xp_agent_ops_t xp_agent_cuda_ops = {
    .size = sizeof(xp_agent_ops_t),
    .name = "cuda",
    .start = cuda_start,
    .stop = cuda_stop,
    .queue_alloc = cuda_queue_alloc,
    .queue_free = cuda_queue_free,
    .queue_added = cuda_queue_added,
    .queue_removed = cuda_queue_removed,
    .signal_alloc = cuda_signal_alloc,
    .signal_free = cuda_signal_free,
};
