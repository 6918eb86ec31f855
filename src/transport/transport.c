/*
 * transport/transport.c - the transport manager: registration, selection per
 * peer, and the xp_tl_* calls the engine makes.
 *
 * Transports come from one explicit list (tl_list.h). XP_TRANSPORTS names the
 * ones to open, in order of preference; each peer is served by the first open
 * transport that reaches it, resolved once at init into a route table so a
 * send is an array index and one indirect call.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/shm_seg.h" /* xp_membarrier_global */
#include "transport/shmheap.h"
#include "transport/tl_list.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/context.h"
#include "util/log.h"
#include "util/tsan.h"
#include "xportals/xp.h"

#define TL_MAX_OPEN XP_TL_MAX_OPEN
#define TL_POLL_BUDGET XP_TL_POLL_BUDGET
/* Polls before sleeping when this node runs more ranks than we have CPUs:
 * then a spinning waiter only keeps the rank it waits for off the CPU, so
 * it should sleep after about a microsecond (the futex wake-up costs a few;
 * spinning costs a time slice). */
#define TL_OVERSUB_SPINS 16

#define XP_TL_OPS_(name) &xp_tl_##name##_ops,
static const xp_tl_ops_t *const registry[] = {XP_TL_LIST(XP_TL_OPS_)};
#undef XP_TL_OPS_
#define XP_TL_NAME_(name) #name,
static const char *const registry_names[] = {XP_TL_LIST(XP_TL_NAME_) NULL};
#undef XP_TL_NAME_
#define NREGISTRY (sizeof registry / sizeof registry[0])

/* Does table `ops` (of ops->size bytes) contain `field`? */
#define OPS_HAS(ops, field) \
    ((ops)->size >= offsetof(xp_tl_ops_t, field) + sizeof((ops)->field) && (ops)->field)

typedef struct tl_open {
    const xp_tl_ops_t *ops;
    xp_tl_t *tl;
} tl_open_t;

struct xp_tl_state {
    xp_tl_routes_t rt;       /* first: read by the inline xp_tl_route */
    xp_tl_polls_t polls;     /* second: read by the inline xp_tl_pending and
                              * xp_tl_progress_excl (xp_tl_head_t) */
    xp_tl_params_t params;   /* transports keep a pointer to it */
    int nopen;
    tl_open_t open[TL_MAX_OPEN];
    xp_doorbell_t local_doorbell; /* when no transport offers a shared one */
    long spins;              /* xp_tl_spin_count() */
    long node_cpus;          /* seen by the transports (0: unknown): xp_tl_node_cpus */
};

_Static_assert(offsetof(struct xp_tl_state, rt) == offsetof(xp_tl_head_t, rt) &&
                   offsetof(struct xp_tl_state, polls) == offsetof(xp_tl_head_t, polls),
               "transport.h's inline functions read the state's head as xp_tl_head_t");

const char *const *xp_tl_names(void)
{
    return registry_names;
}

/* Reject incomplete tables (the libfabric habit). */
static int ops_complete(const xp_tl_ops_t *ops, const char *name)
{
    int ok = ops->size >= offsetof(xp_tl_ops_t, writev) + sizeof ops->writev && ops->name &&
             !strcmp(ops->name, name) && ops->max_packet && ops->open && ops->close &&
             ops->reaches && ops->send && ops->poll;
    if (ok && (ops->caps & XP_TL_CAP_RMA))
        ok = ops->readv && ops->writev;
    if (!ok)
        xp_error("transport '%s' has an incomplete ops table; not used", name);
    return ok;
}

static const xp_tl_ops_t *lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < NREGISTRY; i++)
        if (strlen(registry_names[i]) == len && !strncmp(registry_names[i], name, len))
            return ops_complete(registry[i], registry_names[i]) ? registry[i] : NULL;
    return NULL;
}

static void close_all(struct xp_tl_state *st)
{
    for (int i = st->nopen - 1; i >= 0; i--)
        st->open[i].ops->close(st->open[i].tl);
    st->nopen = 0;
}

/* Open each transport named in the comma-separated list, in order. */
static xp_status_t open_list(struct xp_tl_state *st, const char *list)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ", ");
        if (len) {
            const xp_tl_ops_t *ops = lookup(p, len);
            if (!ops) {
                xp_error("XP_TRANSPORTS: unknown or unusable transport '%.*s' (known: self, shm)",
                         (int)len, p);
                return XP_ERR_CONFIG;
            }
            int dup = 0;
            for (int i = 0; i < st->nopen; i++)
                dup |= st->open[i].ops == ops;
            if (!dup) {
                if (st->nopen == TL_MAX_OPEN)
                    return XP_ERR_CONFIG;
                xp_status_t s = ops->open(&st->params, &st->open[st->nopen].tl);
                if (s != XP_OK) {
                    xp_error("transport %s failed to open: %s", ops->name, xp_status_string(s));
                    return s;
                }
                st->open[st->nopen++].ops = ops;
            }
        }
        p += len;
        p += strspn(p, ", ");
    }
    if (!st->nopen) {
        xp_error("XP_TRANSPORTS names no transport");
        return XP_ERR_CONFIG;
    }
    return XP_OK;
}

static void build_routes(struct xp_tl_state *st)
{
    for (int r = 0; r < st->rt.size; r++) {
        for (int i = 0; i < st->nopen; i++) {
            const xp_tl_ops_t *ops = st->open[i].ops;
            xp_tl_t *tl = st->open[i].tl;
            if (!ops->reaches(tl, r))
                continue;
            st->rt.routes[r] = (xp_tl_route_t){
                .send = ops->send,
                .send_excl = OPS_HAS(ops, send_excl) ? ops->send_excl : ops->send,
                .tl = tl,
                .max_packet = ops->max_packet,
                .eager_max = OPS_HAS(ops, eager_max) ? ops->eager_max(tl, r) : SIZE_MAX,
                .caps = OPS_HAS(ops, peer_caps) ? ops->peer_caps(tl, r) : ops->caps,
                .ops = ops,
                .inplace = OPS_HAS(ops, inplace) ? ops->inplace(tl, r) : NULL,
                .inplace_excl = OPS_HAS(ops, inplace_excl) ? ops->inplace_excl(tl, r) : NULL,
                .window = OPS_HAS(ops, window) && OPS_HAS(ops, quiet) ? ops->window(tl, r) : NULL,
                .quiet = OPS_HAS(ops, quiet) ? ops->quiet : NULL,
            };
            break;
        }
    }
    xp_tl_polls_t *pl = &st->polls;
    memset(pl, 0, sizeof *pl);
    for (int i = 0; i < st->nopen; i++) {
        const xp_tl_ops_t *ops = st->open[i].ops;
        pl->poll_excl[pl->npoll] = OPS_HAS(ops, poll_excl) ? ops->poll_excl : ops->poll;
        pl->poll_tl[pl->npoll++] = st->open[i].tl;
        if (!OPS_HAS(ops, pending)) {
            pl->always_pending = 1;
            continue;
        }
        pl->pending[pl->npending] = ops->pending;
        pl->poll_hint[pl->npending] = OPS_HAS(ops, poll_hint) ? ops->poll_hint : NULL;
        pl->pending_tl[pl->npending++] = st->open[i].tl;
    }
    /* The process doorbell must be one that peers can ring. */
    st->params.doorbell = &st->local_doorbell;
    for (int i = 0; i < st->nopen; i++) {
        const xp_tl_ops_t *ops = st->open[i].ops;
        xp_doorbell_t *db = OPS_HAS(ops, doorbell) ? ops->doorbell(st->open[i].tl) : NULL;
        if (db) {
            st->params.doorbell = db;
            break;
        }
    }
}

long xp_tl_node_cpus_seen(long seen)
{
    long set = xp_config()->node_cpus;
    return set > 0 ? set : seen > 0 ? seen : sysconf(_SC_NPROCESSORS_ONLN);
}

long xp_tl_node_cpus(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    return xp_tl_node_cpus_seen(st ? st->node_cpus : 0);
}

/* What the first transport that can tell saw of the node's CPUs. */
static long seen_cpus(struct xp_tl_state *st)
{
    for (int i = 0; i < st->nopen; i++) {
        const xp_tl_ops_t *ops = st->open[i].ops;
        long n = OPS_HAS(ops, node_cpus) ? ops->node_cpus(st->open[i].tl) : 0;
        if (n > 0)
            return n;
    }
    return 0;
}

int xp_tl_oversubscribed_seen(long seen)
{
    long ncpu = xp_tl_node_cpus_seen(seen);
    return ncpu > 0 && xp_local_size() > ncpu;
}

int xp_tl_oversubscribed(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    return xp_tl_oversubscribed_seen(st ? st->node_cpus : 0);
}

/* XP_SPIN_COUNT, unless the node is oversubscribed and the user did not
 * set it. */
static long choose_spins(void)
{
    long spins = xp_config()->spin_count;
    if (!xp_ctx.config_set[XP_CFG_IDX_spin_count] && xp_tl_oversubscribed() &&
        spins > TL_OVERSUB_SPINS) {
        xp_info("%d local ranks on %ld CPUs: waiters spin %d polls before sleeping",
                xp_local_size(), xp_tl_node_cpus(), TL_OVERSUB_SPINS);
        spins = TL_OVERSUB_SPINS;
    }
    return spins;
}

long xp_tl_spin_count(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    return st ? st->spins : xp_config()->spin_count;
}

xp_status_t xp_tl_init(xp_tl_recv_fn recv, void *recv_arg)
{
    if (!recv)
        return XP_ERR_INVALID;
    if (!xp_initialized())
        return XP_ERR_NOT_INIT;
    if (xp_ctx.tl)
        return XP_ERR_EXISTS;
    struct xp_tl_state *st = calloc(1, sizeof *st);
    if (!st)
        return XP_ERR_NO_MEMORY;
    st->params.recv = recv;
    st->params.recv_arg = recv_arg;
    xp_doorbell_init(&st->local_doorbell);
    st->rt.size = xp_size();
    st->rt.routes = calloc((size_t)st->rt.size, sizeof *st->rt.routes);
    xp_status_t s = st->rt.routes ? open_list(st, xp_config()->transports) : XP_ERR_NO_MEMORY;
    if (s != XP_OK)
        goto err_close;
    build_routes(st);
    st->node_cpus = seen_cpus(st);
    xp_ctx.tl = st; /* (before choose_spins: it asks xp_tl_oversubscribed) */
    st->spins = choose_spins();
    return XP_OK;
err_close:
    close_all(st);
    free(st->rt.routes);
    free(st);
    return s;
}

void xp_tl_fini(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    if (!st)
        return;
    xp_ctx.tl = NULL;
    close_all(st);
    free(st->rt.routes);
    free(st);
}

static xp_status_t route_error(int rank)
{
    struct xp_tl_state *st = xp_ctx.tl;
    if (!st)
        return XP_ERR_NOT_INIT;
    if (rank < 0 || rank >= st->rt.size)
        return XP_ERR_INVALID;
    return XP_ERR_NOT_FOUND;
}

/* The checks both sends make; NULL (with *err set) when the send must fail. */
static inline const xp_tl_route_t *send_route(int rank, const void *hdr, size_t hdr_len,
                                              const void *data, size_t data_len,
                                              xp_status_t *err)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (!r) {
        *err = route_error(rank);
        return NULL;
    }
    if (hdr_len + data_len > r->max_packet || hdr_len + data_len < hdr_len) {
        *err = XP_ERR_OVERFLOW;
        return NULL;
    }
    if ((hdr_len && !hdr) || (data_len && !data)) {
        *err = XP_ERR_INVALID;
        return NULL;
    }
    return r;
}

xp_status_t xp_tl_send(int rank, const void *hdr, size_t hdr_len, const void *data, size_t data_len)
{
    xp_status_t err;
    const xp_tl_route_t *r = send_route(rank, hdr, hdr_len, data, data_len, &err);
    return r ? xp_tl_route_send(r, rank, hdr, hdr_len, data, data_len) : err;
}

xp_status_t xp_tl_send_excl(int rank, const void *hdr, size_t hdr_len, const void *data,
                            size_t data_len)
{
    xp_status_t err;
    const xp_tl_route_t *r = send_route(rank, hdr, hdr_len, data, data_len, &err);
    return r ? xp_tl_route_send_excl(r, rank, hdr, hdr_len, data, data_len) : err;
}

int xp_tl_progress(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    if (!st)
        return 0;
    int n = 0;
    /* What arrives may have been sent in reaction to our messages (TSan
     * builds only; the transports' own delivery work is covered too). */
    xp_tsan_message_in();
    for (int i = 0; i < st->nopen; i++)
        n += st->open[i].ops->poll(st->open[i].tl, TL_POLL_BUDGET);
    return n;
}

size_t xp_tl_max_packet(int rank)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r ? r->max_packet : 0;
}

uint32_t xp_tl_caps(int rank)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r ? r->caps : 0;
}

static xp_status_t rma(int rank, int do_write, const struct iovec *local, int nlocal,
                       const struct iovec *remote, int nremote)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (!r)
        return route_error(rank);
    if (!(r->caps & XP_TL_CAP_RMA))
        return XP_ERR_UNSUPPORTED;
    if (nlocal < 0 || nremote < 0 || (nlocal && !local) || (nremote && !remote))
        return XP_ERR_INVALID;
    return do_write ? r->ops->writev(r->tl, rank, local, nlocal, remote, nremote)
                    : r->ops->readv(r->tl, rank, local, nlocal, remote, nremote);
}

xp_status_t xp_tl_readv(int rank, const struct iovec *local, int nlocal, const struct iovec *remote,
                        int nremote)
{
    return rma(rank, 0, local, nlocal, remote, nremote);
}

xp_status_t xp_tl_writev(int rank, const struct iovec *local, int nlocal, const struct iovec *remote,
                         int nremote)
{
    return rma(rank, 1, local, nlocal, remote, nremote);
}

void *xp_tl_bounce_alloc(int rank, size_t len)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r && OPS_HAS(r->ops, bounce_alloc) ? r->ops->bounce_alloc(r->tl, rank, len) : NULL;
}

size_t xp_tl_bounce_max(int rank)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r && OPS_HAS(r->ops, bounce_max) ? r->ops->bounce_max(r->tl) : 0;
}

void xp_tl_bounce_done(int rank, uint64_t addr)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (r && OPS_HAS(r->ops, bounce_done))
        r->ops->bounce_done(r->tl, rank, addr);
}

void xp_tl_bounce_cancel(int rank, void *buf)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (r && OPS_HAS(r->ops, bounce_done))
        r->ops->bounce_done(r->tl, -1, (uint64_t)(uintptr_t)buf);
}

void xp_tl_bounce_fill(int rank, void *buf, size_t n)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (r && OPS_HAS(r->ops, bounce_fill))
        r->ops->bounce_fill(r->tl, buf, n);
}

xp_status_t xp_tl_bounce_read(int rank, const struct iovec *local, int nlocal, uint64_t addr,
                              size_t len)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (r && OPS_HAS(r->ops, bounce_read))
        return r->ops->bounce_read(r->tl, rank, local, nlocal, addr, len);
    struct iovec remote = { (void *)(uintptr_t)addr, len };
    return xp_tl_readv(rank, local, nlocal, &remote, 1);
}

int xp_tl_direct_ours(int rank, const void *p, size_t len)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    return r && OPS_HAS(r->ops, direct) && r->ops->direct(r->tl, rank, (uintptr_t)p, len, 0);
}

int xp_tl_direct_theirs(int rank, const struct iovec *segs, int n)
{
    const xp_tl_route_t *r = xp_tl_route(rank);
    if (!r || !OPS_HAS(r->ops, direct) || n <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (!r->ops->direct(r->tl, rank, (uintptr_t)segs[i].iov_base, segs[i].iov_len, 1))
            return 0;
    return 1;
}

const xp_tl_window_t *xp_tl_own_window(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    for (int i = 0; st && i < st->nopen; i++) {
        const xp_tl_ops_t *ops = st->open[i].ops;
        const xp_tl_window_t *w =
            OPS_HAS(ops, window) ? ops->window(st->open[i].tl, -1) : NULL;
        if (w)
            return w;
    }
    return NULL;
}

void xp_tl_global_fence(void)
{
    xp_membarrier_global();
}

int xp_tl_peers_lost(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    for (int i = 0; st && i < st->nopen; i++) {
        const xp_tl_ops_t *ops = st->open[i].ops;
        if (OPS_HAS(ops, peers_lost) && ops->peers_lost(st->open[i].tl))
            return 1;
    }
    return 0;
}

xp_tl_t *xp_tl_instance(const xp_tl_ops_t *ops)
{
    struct xp_tl_state *st = xp_ctx.tl;
    for (int i = 0; st && i < st->nopen; i++)
        if (st->open[i].ops == ops)
            return st->open[i].tl;
    return NULL;
}

xp_doorbell_t *xp_tl_doorbell(void)
{
    struct xp_tl_state *st = xp_ctx.tl;
    return st ? st->params.doorbell : NULL;
}

static int pending_pred(void *arg)
{
    return xp_tl_pending();
}

/* before_sleep of every open transport (the membarrier that stands in for
 * the fence XP_SHM_ASYM_FENCE senders leave out): xp_doorbell_sleep's
 * `before`. */
static void transports_before_sleep(void *arg)
{
    struct xp_tl_state *st = arg;
    for (int i = 0; i < st->nopen; i++)
        if (OPS_HAS(st->open[i].ops, before_sleep))
            st->open[i].ops->before_sleep(st->open[i].tl);
}

/* One sleep on the process doorbell (xp_doorbell_sleep, the sleeper's half
 * of the protocol in util/atomic.c), with the transports' before_sleep.
 * Packets arriving after its look at pred ring us because they see
 * sleepers != 0. A poller's pred must include xp_tl_pending(): a packet
 * that arrived while nobody slept rang nobody, so only that look keeps us
 * awake for it. Without `fenced` it skips before_sleep, and a packet whose
 * sender did not see us yet may not ring us (xp_tl_nap). */
static xp_status_t sleep_once(struct xp_tl_state *st, xp_wait_pred_t pred, void *arg,
                              uint64_t deadline_ns, int fenced)
{
    return xp_doorbell_sleep(st->params.doorbell, pred, arg, deadline_ns,
                             fenced ? transports_before_sleep : NULL, st);
}

xp_status_t xp_tl_wait(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns)
{
    return xp_tl_wait_spin(pred, arg, deadline_ns, xp_tl_spin_count());
}

xp_status_t xp_tl_wait_spin(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns, long spins)
{
    struct xp_tl_state *st = xp_ctx.tl;
    if (!st)
        return XP_ERR_NOT_INIT;
    if (!pred)
        pred = pending_pred;
    for (long i = 0; i < spins; i++) {
        if (pred(arg))
            return XP_OK;
        xp_cpu_relax();
    }
    xp_status_t s;
    while ((s = sleep_once(st, pred, arg, deadline_ns, 1)) == XP_ERR_AGAIN)
        ;
    return s;
}

/* One unfenced sleep: bounded, so a missed ring costs at most max_ns. */
int xp_tl_nap(xp_wait_pred_t pred, void *arg, uint64_t max_ns)
{
    struct xp_tl_state *st = xp_ctx.tl;
    if (!pred)
        pred = pending_pred;
    if (st)
        (void)sleep_once(st, pred, arg, xp_time_ns() + max_ns, 0);
    return pred(arg);
}
