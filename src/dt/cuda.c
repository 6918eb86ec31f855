/* The GPU side of the datatype engine: loading the xpdt_cuda plugin, memory
 * type detection, and pack / unpack with at least one device buffer.
 *
 * The plugin is loaded lazily: only once the process has the CUDA driver
 * loaded (no device buffer can exist before), so a host-only program never
 * pays for it. Device buffers are packed by the plugin's kernels: the vector
 * kernel when the whole message is one strided vector, the work-unit kernel
 * otherwise, with the unit list of (type, count) cached in device memory. */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt/dt_internal.h"
#include "dt/state.h"
#include "util/config.h"
#include "util/context.h"
#include "util/cuda_probe.h"
#include "util/log.h"

#ifndef XP_DT_PLUGIN_INSTALL_DIR
#define XP_DT_PLUGIN_INSTALL_DIR "/usr/local/lib/xportals"
#endif
#define PLUGIN_NAME "libxpdt_cuda.so"

struct dt_gpu_cache {
    size_t count;   /* elements the units describe */
    size_t n;
    dt_unit_t *host;/* for finding the units of a window */
    uint32_t max_len; /* longest unit: short ones get a thread each, not a warp */
    void *dev;      /* plugin handle of the device copy */
};

/* Candidate paths: next to the object holding this code (libportals.so:
 * <libdir>/xportals/; a test or tool: <dir>/../lib/xportals/), then the
 * install location. */
static void *open_plugin(void)
{
    Dl_info info;
    char dir[PATH_MAX], path[PATH_MAX + 64];
    if (dladdr((void *)open_plugin, &info) && info.dli_fname) {
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            const char *fmt[] = {"%s/xportals/" PLUGIN_NAME, "%s/../lib/xportals/" PLUGIN_NAME};
            for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof path, fmt[i], dir);
                void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (h)
                    return h;
            }
        }
    }
    void *h = dlopen(XP_DT_PLUGIN_INSTALL_DIR "/" PLUGIN_NAME, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        xp_info("datatype: no CUDA plugin (%s): device buffers unsupported", dlerror());
    return h;
}

static void load_plugin(xp_dt_state_t *s)
{
    void *h = open_plugin();
    if (!h) {
        s->cuda_state = -1;
        return;
    }
    xp_dt_cuda_plugin_fn get = (xp_dt_cuda_plugin_fn)dlsym(h, "xp_dt_cuda_plugin");
    const xp_dt_cuda_ops_t *ops = get ? get() : NULL;
    if (!ops || ops->size < sizeof *ops || ops->abi != XP_DT_CUDA_ABI || ops->init() != 0) {
        xp_info("datatype: CUDA plugin unusable (no GPU or ABI mismatch)");
        dlclose(h);
        s->cuda_state = -1;
        return;
    }
    s->cuda_dl = h;
    s->cuda = ops;
    __atomic_store_n(&s->cuda_state, 1, __ATOMIC_RELEASE);
}

/* The plugin's ops once usable; NULL otherwise. force: load even when the
 * process does not use CUDA yet. */
static const xp_dt_cuda_ops_t *plugin(int force)
{
    if (xp_config()->dt_cuda == 0)
        return NULL;
    xp_dt_state_t *s = xp_dt_state();
    if (!s)
        return NULL;
    int state = __atomic_load_n(&s->cuda_state, __ATOMIC_ACQUIRE);
    if (state)
        return state > 0 ? s->cuda : NULL;
    if (!force && !xp_cuda_driver_loaded(&s->probed_adds))
        return NULL; /* no CUDA in this process (yet): every buffer is host memory */
    pthread_mutex_lock(&s->cuda_lock);
    if (!s->cuda_state) {
        /* The plugin loads its kernels at init; a module load may wait for
         * every running kernel, so CUDA agents' persistent kernels pause. */
        void (*quiesce)(int) = __atomic_load_n(&xp_ctx.gpu_quiesce_hook, __ATOMIC_ACQUIRE);
        if (quiesce)
            quiesce(1);
        load_plugin(s);
        if (quiesce)
            quiesce(0);
    }
    pthread_mutex_unlock(&s->cuda_lock);
    return s->cuda_state > 0 ? s->cuda : NULL;
}

int xp_dt_cuda_available(void)
{
    return plugin(1) != NULL;
}

int xp_dt_mem_is_device(const void *p)
{
    const xp_dt_cuda_ops_t *ops = plugin(0);
    void *dev;
    return ops && ops->mem_type(p, &dev) == XP_DT_MEM_DEVICE;
}

void xp_dt_gpu_cache_free(struct xp_dt *t)
{
    struct dt_gpu_cache *c = t->gpu;
    if (!c)
        return;
    xp_dt_state_t *s = xp_dt_state();
    if (c->dev && s && s->cuda)
        s->cuda->units_free(c->dev);
    free(c->host);
    free(c);
    t->gpu = NULL;
}

/* The unit list of (t, count) in device memory: built on first use, then
 * cached on the type (one count at a time). Called with t->gpu_lock held. */
static struct dt_gpu_cache *units_get(const xp_dt_cuda_ops_t *ops, struct xp_dt *t, size_t count)
{
    if (t->gpu && t->gpu->count == count)
        return t->gpu;
    xp_dt_gpu_cache_free(t);
    struct dt_gpu_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->count = count;
    if (xp_dt_units_build(t, count, xp_config()->dt_work_unit, &c->host, &c->n) != XP_OK ||
        !(c->dev = ops->units_upload((const xp_dt_cuda_unit_t *)c->host, c->n))) {
        free(c->host);
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < c->n; i++)
        if (c->host[i].len > c->max_len)
            c->max_len = c->host[i].len;
    t->gpu = c;
    return c;
}

/* First unit whose packed range ends after `off`. */
static size_t unit_find(const struct dt_gpu_cache *c, uint64_t off)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->host[mid].dst + c->host[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Both pointers device-accessible: run a kernel. */
static xp_status_t gpu_kernel(const xp_dt_cuda_ops_t *ops, const dt_job_t *job, char *nc, char *pk)
{
    struct xp_dt *t = (struct xp_dt *)job->t;
    const dt_flat_t *f = &t->flat;
    ptrdiff_t ext = t->ub - t->lb;
    int dir = job->dir == DT_DIR_PACK ? 0 : 1;
    if (f->nseg == 1) {
        const dt_seg_t *s = &f->seg[0];
        if (s->count == 1 && (ext == (ptrdiff_t)t->size || job->count == 1))
            return ops->copy(dir ? nc + s->disp + job->off : pk, dir ? pk : nc + s->disp + job->off, job->len)
                       ? XP_ERR_IO : XP_OK;
        if (s->count == 1)
            return ops->vector(dir, nc + s->disp, ext, t->size, job->off, job->len, pk) ? XP_ERR_IO : XP_OK;
        if ((ptrdiff_t)s->count * s->stride == ext || job->count == 1)
            return ops->vector(dir, nc + s->disp, s->stride, s->blen, job->off, job->len, pk) ? XP_ERR_IO
                                                                                              : XP_OK;
    }
    pthread_mutex_lock(&t->gpu_lock);
    struct dt_gpu_cache *c = units_get(ops, t, job->count);
    xp_status_t st = XP_ERR_NO_MEMORY;
    if (c) {
        size_t first = unit_find(c, job->off), last = unit_find(c, job->off + job->len - 1);
        st = ops->units_run(dir, c->dev, first, last - first + 1, nc, pk, job->off, job->len, c->max_len) ? XP_ERR_IO
                                                                                              : XP_OK;
    }
    pthread_mutex_unlock(&t->gpu_lock);
    return st;
}

xp_status_t xp_dt_gpu_exec(const dt_job_t *job, int nc_dev, int pk_dev)
{
    const xp_dt_cuda_ops_t *ops = plugin(0);
    void *alias;
    xp_status_t st;
    if (!ops)
        return XP_ERR_UNSUPPORTED;
    if (!nc_dev) {
        /* Typed data on the host: CPU engine through a host bounce buffer. */
        char *tmp = malloc(job->len);
        if (!tmp)
            return XP_ERR_NO_MEMORY;
        dt_job_t hj = *job;
        hj.pk = tmp;
        if (job->dir == DT_DIR_UNPACK && ops->copy(tmp, job->pk, job->len)) {
            free(tmp);
            return XP_ERR_IO;
        }
        xp_dt_cpu_exec(&hj);
        st = job->dir == DT_DIR_PACK && ops->copy(job->pk, tmp, job->len) ? XP_ERR_IO : XP_OK;
        free(tmp);
        return st;
    }
    if (pk_dev)
        return gpu_kernel(ops, job, job->nc, job->pk);
    if (xp_config()->dt_zero_copy && ops->mem_type(job->pk, &alias) == XP_DT_MEM_PINNED)
        /* Zero copy: the kernel reads / writes pinned host memory directly. */
        return gpu_kernel(ops, job, job->nc, alias);
    /* Pageable host packed buffer: stage through device memory. */
    char *dev = ops->dev_alloc(job->len);
    if (!dev)
        return XP_ERR_NO_MEMORY;
    st = XP_OK;
    if (job->dir == DT_DIR_UNPACK && ops->copy(dev, job->pk, job->len))
        st = XP_ERR_IO;
    if (st == XP_OK)
        st = gpu_kernel(ops, job, job->nc, dev);
    if (st == XP_OK && job->dir == DT_DIR_PACK && ops->copy(job->pk, dev, job->len))
        st = XP_ERR_IO;
    ops->dev_free(dev);
    return st;
}
