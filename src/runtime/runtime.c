/*
 * The runtime: picks a bootstrap backend (boot.h), learns rank and size,
 * publishes this process's pid and host name and derives node ids and local
 * ranks from everybody's, then serves the public API of xportals/xp.h.
 *
 * xp_init/xp_finalize are reference counted and, like MPI_Init, must not be
 * called from two threads at once; everything else is thread safe once
 * xp_init has returned (backends serialise their own launcher traffic).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/boot.h"
#include "runtime/kv_codec.h"
#include "runtime/runtime.h"
#include "util/config.h"
#include "util/context.h"
#include "util/log.h"
#include "util/tsan.h"
#include "util/hash.h"

#define HOST_MAX 255
#define PROC_KEY "xp.proc" /* value: uint32 pid, then the host name */

typedef struct proc_record {
    uint32_t pid;
    char host[HOST_MAX + 1];
} proc_record_t;

struct xp_runtime {
    int refcount;
    const xp_boot_ops_t *ops;
    void *boot;
    int rank, size;
    int node_id, num_nodes, local_rank, local_size;
    int *node_of; /* [size] */
    pid_t *pids;  /* [size] */
    char job_id[XP_JOB_ID_MAX + 1];
    char hostname[HOST_MAX + 1];
};

enum { BOOT_AUTO, BOOT_PMI1, BOOT_PMIX, BOOT_SINGLETON }; /* XP_BOOTSTRAP choices */

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

static xp_status_t choose_backend(const xp_boot_ops_t **out)
{
    int choice = xp_config()->bootstrap;
    if (choice == BOOT_AUTO) {
        if (env_set("PMI_FD") || env_set("PMI_PORT"))
            choice = BOOT_PMI1;
        else if (env_set("PMIX_RANK") || env_set("PMIX_NAMESPACE"))
            choice = BOOT_PMIX;
        else
            choice = BOOT_SINGLETON;
    }
    switch (choice) {
    case BOOT_PMI1:
        *out = &xp_boot_pmi1;
        return XP_OK;
    case BOOT_PMIX:
#if XP_RUNTIME_WITH_PMIX
        *out = &xp_boot_pmix;
        return XP_OK;
#else
        xp_error("started by a PMIx launcher (or XP_BOOTSTRAP=pmix), but this Xportals was "
                 "built without PMIx (install libpmix-dev and rebuild)");
        return XP_ERR_UNSUPPORTED;
#endif
    default:
        *out = &xp_boot_singleton;
        return XP_OK;
    }
}

/* Keep letters, digits, '-' and '_' so the id can name files and segments;
 * a name too long keeps its start and a hash of the whole, to stay unique. */
static void sanitize_job_id(const char *raw, char *out)
{
    char full[sizeof ((xp_boot_info_t *)0)->job_id + 20];
    if (strlen(raw) > XP_JOB_ID_MAX)
        snprintf(full, sizeof full, "%.31s_%016llx", raw, (unsigned long long)xp_hash_string(raw));
    else
        snprintf(full, sizeof full, "%s", raw);
    size_t n = 0;
    for (const char *s = full; *s && n < XP_JOB_ID_MAX; s++) {
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
}

static xp_status_t read_record(struct xp_runtime *rt, int rank, proc_record_t *rec)
{
    size_t len = sizeof *rec - 1;
    memset(rec, 0, sizeof *rec);
    xp_status_t st = rt->ops->get(rt->boot, rank, PROC_KEY, rec, &len);
    if (st == XP_OK && len < sizeof rec->pid)
        st = XP_ERR_PROTOCOL;
    if (st != XP_OK) {
        xp_error("cannot read the process record of rank %d: %s", rank, xp_status_string(st));
        return st;
    }
    rec->host[len - sizeof rec->pid] = '\0';
    rt->pids[rank] = (pid_t)rec->pid;
    return XP_OK;
}

/* Without a launcher's map: read every rank's record and number the hosts
 * in the order of their lowest rank. */
static xp_status_t nodes_from_hosts(struct xp_runtime *rt)
{
    char(*hosts)[HOST_MAX + 1] = calloc((size_t)rt->size, sizeof *hosts);
    if (!hosts)
        return XP_ERR_NO_MEMORY;
    xp_status_t st = XP_OK;
    rt->num_nodes = 0;
    for (int r = 0; r < rt->size && st == XP_OK; r++) {
        proc_record_t rec;
        st = read_record(rt, r, &rec);
        if (st != XP_OK)
            break;
        strcpy(hosts[r], rec.host);
        int node = -1;
        for (int q = 0; q < r && node < 0; q++)
            if (!strcmp(hosts[q], rec.host))
                node = rt->node_of[q];
        rt->node_of[r] = node >= 0 ? node : rt->num_nodes++;
    }
    free(hosts);
    return st;
}

/* With the launcher's map, only the ranks on our node are read (for their
 * pids): O(local size) requests instead of O(size). */
static xp_status_t nodes_from_launcher(struct xp_runtime *rt)
{
    xp_status_t st = rt->ops->node_map(rt->boot, rt->size, rt->node_of, &rt->num_nodes);
    for (int r = 0; r < rt->size && st == XP_OK; r++) {
        proc_record_t rec;
        if (rt->node_of[r] == rt->node_of[rt->rank])
            st = read_record(rt, r, &rec);
    }
    return st;
}

/* Everybody publishes pid and host; one fence; then nodes and local ranks. */
static xp_status_t learn_nodes(struct xp_runtime *rt)
{
    proc_record_t me = {.pid = (uint32_t)getpid()};
    snprintf(me.host, sizeof me.host, "%s", rt->hostname);
    xp_status_t st = rt->ops->put(rt->boot, PROC_KEY, &me, sizeof me.pid + strlen(me.host));
    if (st == XP_OK)
        st = rt->ops->fence(rt->boot);
    if (st != XP_OK)
        return st;
    rt->node_of = calloc((size_t)rt->size, sizeof *rt->node_of);
    rt->pids = calloc((size_t)rt->size, sizeof *rt->pids);
    if (!rt->node_of || !rt->pids)
        return XP_ERR_NO_MEMORY;
    if (!rt->ops->node_map || nodes_from_launcher(rt) != XP_OK) {
        memset(rt->pids, 0, (size_t)rt->size * sizeof *rt->pids);
        st = nodes_from_hosts(rt);
    }
    if (st != XP_OK)
        return st;
    rt->node_id = rt->node_of[rt->rank];
    rt->local_rank = rt->local_size = 0;
    for (int r = 0; r < rt->size; r++) {
        if (rt->node_of[r] != rt->node_id)
            continue;
        if (r < rt->rank)
            rt->local_rank++;
        rt->local_size++;
    }
    return XP_OK;
}

static void runtime_free(struct xp_runtime *rt)
{
    free(rt->node_of);
    free(rt->pids);
    free(rt);
}

static xp_status_t runtime_start(struct xp_runtime **out)
{
    struct xp_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return XP_ERR_NO_MEMORY;
    if (gethostname(rt->hostname, sizeof rt->hostname - 1) < 0)
        snprintf(rt->hostname, sizeof rt->hostname, "localhost");
    xp_boot_info_t info = {0};
    xp_status_t st = choose_backend(&rt->ops);
    if (st == XP_OK)
        st = rt->ops->init((int)xp_config()->bootstrap_timeout, &rt->boot, &info);
    if (st != XP_OK) {
        xp_error("bootstrap %s failed: %s", rt->ops ? rt->ops->name : "selection",
                 xp_status_string(st));
        free(rt);
        return st;
    }
    rt->rank = info.rank;
    rt->size = info.size;
    sanitize_job_id(info.job_id, rt->job_id);
    xp_log_set_rank(rt->rank);
    st = learn_nodes(rt);
    if (st != XP_OK) {
        rt->ops->finalize(rt->boot);
        runtime_free(rt);
        return st;
    }
    xp_debug("rank %d of %d via %s, node %d of %d, local rank %d of %d, job %s", rt->rank,
             rt->size, rt->ops->name, rt->node_id, rt->num_nodes, rt->local_rank, rt->local_size,
             rt->job_id);
    *out = rt;
    return XP_OK;
}

XP_EXPORT xp_status_t xp_init(int *argc, char ***argv)
{
    if (xp_ctx.runtime) {
        xp_ctx.runtime->refcount++;
        return XP_OK;
    }
    xp_status_t st = xp_config_status();
    if (st != XP_OK) {
        xp_error("refusing to start: bad XP_* setting (see the messages above)");
        return st;
    }
    struct xp_runtime *rt;
    st = runtime_start(&rt);
    if (st != XP_OK)
        return st;
    rt->refcount = 1;
    __atomic_store_n(&xp_ctx.runtime, rt, __ATOMIC_RELEASE);
    return XP_OK;
}

XP_EXPORT xp_status_t xp_finalize(void)
{
    struct xp_runtime *rt = xp_ctx.runtime;
    if (!rt)
        return XP_ERR_NOT_INIT;
    if (--rt->refcount > 0)
        return XP_OK;
    __atomic_store_n(&xp_ctx.runtime, NULL, __ATOMIC_RELEASE);
    rt->ops->finalize(rt->boot);
    runtime_free(rt);
    xp_log_set_rank(-1);
    return XP_OK;
}

static struct xp_runtime *rt_get(void)
{
    return __atomic_load_n(&xp_ctx.runtime, __ATOMIC_ACQUIRE);
}

XP_EXPORT int xp_initialized(void)
{
    return rt_get() != NULL;
}

XP_EXPORT int xp_rank(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->rank : -1;
}

XP_EXPORT int xp_size(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->size : 0;
}

XP_EXPORT int xp_local_rank(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->local_rank : -1;
}

XP_EXPORT int xp_local_size(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->local_size : 0;
}

XP_EXPORT int xp_node_id(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->node_id : -1;
}

XP_EXPORT int xp_num_nodes(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->num_nodes : 0;
}

XP_EXPORT int xp_node_of(int rank)
{
    struct xp_runtime *rt = rt_get();
    if (!rt || rank < 0 || rank >= rt->size)
        return -1;
    return rt->node_of[rank];
}

XP_EXPORT const char *xp_bootstrap_name(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->ops->name : "none";
}

/* Most polls around a barrier (each handles up to a transport's budget):
 * a stream of new packets cannot hold us there. */
#define BARRIER_DRAIN_MAX 64

static void drain(int (*look)(void))
{
    for (int i = 0; look && i < BARRIER_DRAIN_MAX && look() > 0; i++)
        ;
}

XP_EXPORT xp_status_t xp_barrier(void)
{
    struct xp_runtime *rt = rt_get();
    /* Handle the Portals packets that are here before and after the barrier
     * (context.h): requests sent to us before the peers entered it are
     * handled, and answered, before we leave it. */
    int (*look)(void) = __atomic_load_n(&xp_ctx.runtime_poll_hook, __ATOMIC_ACQUIRE);
    drain(look);
    xp_tsan_message_out();
    xp_status_t st = rt ? rt->ops->barrier(rt->boot) : XP_ERR_NOT_INIT;
    /* Leaving a barrier is a message in: whatever the peers did before it,
     * including their reactions to our threads' packets, came first. */
    xp_tsan_message_in();
    if (st == XP_OK)
        drain(look);
    return st;
}

XP_EXPORT void xp_abort(int code, const char *msg)
{
    struct xp_runtime *rt = rt_get();
    if (code == 0)
        code = 1; /* an abort is a failure, whatever the caller says */
    xp_error("xp_abort(%d): %s", code, msg ? msg : "");
    if (rt)
        rt->ops->abort(rt->boot, code, msg);
    fflush(stdout);
    fflush(stderr);
    _exit(code & 0xff ? code & 0xff : 1);
}

XP_EXPORT xp_status_t xp_kv_put(const char *key, const void *value, size_t len)
{
    struct xp_runtime *rt = rt_get();
    if (!rt)
        return XP_ERR_NOT_INIT;
    if (!xp_kv_key_ok(key) || len > XP_KV_MAX_VALUE || (len && !value)) {
        xp_error("xp_kv_put: bad key \"%s\" or length %zu (max key %d chars, value %d bytes)",
                 key ? key : "(null)", len, XP_KV_MAX_KEY, XP_KV_MAX_VALUE);
        return XP_ERR_INVALID;
    }
    return rt->ops->put(rt->boot, key, value, len);
}

XP_EXPORT xp_status_t xp_kv_fence(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->ops->fence(rt->boot) : XP_ERR_NOT_INIT;
}

XP_EXPORT xp_status_t xp_kv_get(int rank, const char *key, void *value, size_t *len)
{
    struct xp_runtime *rt = rt_get();
    if (!rt)
        return XP_ERR_NOT_INIT;
    if (rank < 0 || rank >= rt->size || !xp_kv_key_ok(key) || !len || (*len && !value))
        return XP_ERR_INVALID;
    return rt->ops->get(rt->boot, rank, key, value, len);
}

const char *xp_runtime_job_id(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->job_id : "";
}

const char *xp_runtime_hostname(void)
{
    struct xp_runtime *rt = rt_get();
    return rt ? rt->hostname : "";
}

pid_t xp_runtime_pid_of(int rank)
{
    struct xp_runtime *rt = rt_get();
    if (!rt || rank < 0 || rank >= rt->size || rt->pids[rank] == 0)
        return -1; /* not known: a rank on another node */
    return rt->pids[rank];
}
