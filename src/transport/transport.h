/*
 * transport/transport.h - the one interface between the engine and the wires.
 *
 * A transport moves *packets* (a header and a payload gathered into one
 * message of at most ops->max_packet bytes, delivered whole, in order per
 * sender/receiver pair) and, when it has XP_TL_CAP_RMA, copies *bulk data*
 * directly between this process and a peer's address space (single copy).
 * The engine never asks which transport it is talking to; it asks for
 * capabilities. Transports are listed in one table (transport.c) and chosen
 * per peer: the first transport in XP_TRANSPORTS that reaches the peer.
 */
#ifndef XP_TRANSPORT_TRANSPORT_H
#define XP_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/uio.h>

#include "util/atomic.h"
#include "util/context.h"
#include "util/tsan.h"
#include "xportals/status.h"

enum {
    XP_TL_CAP_RMA       = 1u << 0, /* read/write of a peer's memory by address */
    XP_TL_CAP_SAME_NODE = 1u << 1, /* peers share memory (shm segments can be mapped) */
    XP_TL_CAP_LOOPBACK  = 1u << 2, /* reaches only this process */
};

typedef struct xp_tl xp_tl_t;
/* A peer's in-place send lane (transport/inplace.h). */
typedef struct xp_tl_inplace xp_tl_inplace_t;

/* A peer's memory that this process maps (shm: the peer's shared heap): an
 * address `a` of the peer's in [remote, remote + size) is ours at
 * base + (a - remote). `meta` is the peer's XP_SHMHEAP_META bytes of
 * engine descriptors (transport/shmheap.h), mapped here too. */
typedef struct xp_tl_window {
    unsigned char *base;
    uint64_t remote;
    size_t size;
    unsigned char *meta;
    int local_index; /* this process's index among its node's ranks */
    int nlocal;      /* the node's ranks (every mapper of the meta bytes) */
    int asym;        /* this process takes global membarriers (xp_tl_global_fence) */
} xp_tl_window_t;

/* A full barrier in every thread of every local process whose window says
 * `asym` (a global expedited membarrier): the heavy side of a handshake
 * whose light side is a plain store and a later load. Only where this
 * process's own window has asym. */
void xp_tl_global_fence(void);

/* A cheap identifier of the calling thread, unique among live threads (the
 * thread pointer: one register read, where pthread_self() is a call). A
 * thread that exits may leave its value to a new one. */
static inline uintptr_t xp_thread_id(void)
{
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && (defined(__x86_64__) || defined(__aarch64__))
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/* Called by poll() for every packet that arrived; `pkt` is valid only during the call. */
typedef void (*xp_tl_recv_fn)(void *arg, int src_rank, const void *pkt, size_t len);

/* open() may keep the params pointer: it stays valid until close(). The
 * manager fills in `doorbell` after every transport is open (it may come from
 * a transport's shared segment), so a transport reads params->doorbell when it
 * rings, never caching it at open. */
typedef struct xp_tl_params {
    xp_tl_recv_fn recv;   /* packet handler (the engine's dispatcher) */
    void *recv_arg;
    xp_doorbell_t *doorbell; /* process doorbell to ring on arrival, may be NULL */
} xp_tl_params_t;

typedef struct xp_tl_ops {
    size_t size;          /* sizeof(xp_tl_ops_t): the first field, checked at registration */
    const char *name;
    uint32_t caps;        /* XP_TL_CAP_* */
    size_t max_packet;    /* largest header+payload of one send() */

    xp_status_t (*open)(const xp_tl_params_t *params, xp_tl_t **tl_out);
    void (*close)(xp_tl_t *tl);
    /* Nonzero if this transport can reach `rank`. */
    int (*reaches)(xp_tl_t *tl, int rank);
    /* Send hdr+data as one packet. XP_ERR_AGAIN: no room right now (caller
     * polls and retries); XP_ERR_PEER_DEAD: the peer is gone. */
    xp_status_t (*send)(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                        const void *data, size_t data_len);
    /* Deliver up to `budget` arrived packets to params->recv; returns how many. */
    int (*poll)(xp_tl_t *tl, int budget);
    /* XP_TL_CAP_RMA only (NULL otherwise): copy between local and remote
     * iovecs of `rank`'s address space (total lengths equal). */
    xp_status_t (*readv)(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                         const struct iovec *remote, int nremote);
    xp_status_t (*writev)(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                          const struct iovec *remote, int nremote);
    /* ---- Optional (may be NULL; tables with a smaller `size` lack them). ---- */
    /* Nonzero if poll() would deliver a packet now (cheap; any thread).
     * With poll_hint: a positive hint of where it saw one (an int below
     * 2^24), for poll_hint. */
    int (*pending)(xp_tl_t *tl);
    /* A doorbell living in memory that peers can ring (shared segment): the
     * first open transport that has one provides the process doorbell. */
    xp_doorbell_t *(*doorbell)(xp_tl_t *tl);
    /* Capabilities towards one reachable peer when they differ from `caps`
     * (e.g. RMA only where a probe succeeded at open). */
    uint32_t (*peer_caps)(xp_tl_t *tl, int rank);
    /* Called by xp_tl_wait after it has announced a sleeper on the process
     * doorbell and before its last check of the predicate (e.g. the
     * sleeper's half of an asymmetric fence). */
    void (*before_sleep)(xp_tl_t *tl);
    /* Like send, for callers that are serialised among themselves (the
     * engine sends its answers with its poll lock held): the transport may
     * use a lane with a single producer and no locked instruction. Packets
     * sent this way stay in order among themselves; they are not ordered
     * with those of send(). NULL: send() is used. */
    xp_status_t (*send_excl)(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                             const void *data, size_t data_len);
    /* Like poll, for the one caller that polls this transport at a time
     * (the engine, with its poll lock held; nothing else polls at once):
     * the transport may skip its own consumer trylock, a locked instruction
     * per poll. NULL: poll() is used. */
    int (*poll_excl)(xp_tl_t *tl, int budget);
    /* The in-place send state towards `rank` (transport/inplace.h: packets
     * written straight into a single-producer ring by its one producer
     * thread, ordered with send()'s), or NULL: none. Asked once per route. */
    xp_tl_inplace_t *(*inplace)(xp_tl_t *tl, int rank);
    /* Like poll_excl, given what pending() returned (its hint): the
     * transport may deliver only from where pending() saw a packet (what
     * else is pending is found by the next pending()), as long as pending()
     * looks in an order that lets no source starve. NULL: poll_excl. */
    int (*poll_hint)(xp_tl_t *tl, int budget, int hint);
    /* The same for send_excl's packets (transport/inplace.h's _excl
     * functions: written in place by whichever thread the caller's
     * serialisation admits, ordered with send_excl's), or NULL: none. */
    xp_tl_inplace_t *(*inplace_excl)(xp_tl_t *tl, int rank);
    /* Staging memory for `len` payload bytes bound for `rank` that the
     * peer copies out directly (shm: a block of our shared heap, which it
     * maps), so that a request too large for one packet needs no page
     * pinning of the peer's RMA read. The caller stages the data
     * (publishing it with bounce_fill, required with bounce_alloc), sends
     * its address as the one RMA segment of a request that says so, and
     * after its last fill never touches it again: the reader hands it back
     * with bounce_done (the block of a reader that dies is freed too).
     * NULL: none for this size or peer now; use plain RMA. */
    void *(*bounce_alloc)(xp_tl_t *tl, int rank, size_t len);
    /* Reader side: we have copied out rank's bounce block at `addr` (an
     * address in rank); a bad address is ignored. rank -1: a block of ours
     * whose request could not be sent. */
    void (*bounce_done)(xp_tl_t *tl, int rank, uint64_t addr);
    /* Nonzero if an RMA copy between rank and [addr, addr+len) is a plain
     * memcpy already (shm: the range lies in a shared heap): then staging
     * it in a bounce block would only add a copy. theirs: addr is an
     * address in rank; else one of ours. */
    int (*direct)(xp_tl_t *tl, int rank, uint64_t addr, size_t len, int theirs);
    /* Writer side: the first n bytes of our block `buf` are staged
     * (bounce_alloc's blocks start at 0). A request may name a block before
     * it is full: the reader copies behind the writer. Every block needs a
     * last fill of its whole length, even one whose request was never sent;
     * after it the writer must not touch the block, and only after it does
     * the reader hand the block back (so its answer comes after whatever
     * the writer did before that fill: the SEND event). */
    void (*bounce_fill)(xp_tl_t *tl, void *buf, size_t n);
    /* Reader side: copy rank's block at `addr` (len bytes) into local,
     * following its fill; XP_OK, XP_ERR_INVALID (not a block of rank's heap) or
     * XP_ERR_PEER_DEAD (the writer died before staging it all). NULL:
     * readv. */
    xp_status_t (*bounce_read)(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                               uint64_t addr, size_t len);
    /* The largest len bounce_alloc may serve (0: it serves none), which a
     * transport may choose at open by what copies cost (shm:
     * XP_SHM_BOUNCE). NULL: 0. */
    size_t (*bounce_max)(xp_tl_t *tl);
    /* The largest put or get payload worth a packet to rank; a larger one
     * (that still fits a packet) moves faster by RMA or a bounce block here
     * (shm: XP_SHM_EAGER_MAX). Asked once per route. NULL: SIZE_MAX, every
     * payload that fits a packet. */
    size_t (*eager_max)(xp_tl_t *tl, int rank);
    /* The window onto `rank`'s memory that we map (rank -1: our own heap,
     * whose meta bytes peers see), or NULL: none. Stable from open to close.
     * Asked once per route (and by xp_tl_own_window). */
    const xp_tl_window_t *(*window)(xp_tl_t *tl, int rank);
    /* Nonzero if `rank` has handled every request packet this process has
     * sent it (through send or in place: its handler has returned for
     * each), so that a direct access to its memory now comes after them.
     * Answers (send_excl) are not counted. Cheap; any thread. */
    int (*quiet)(xp_tl_t *tl, int rank);
    /* Nonzero if a peer that maps our window has died (checked now; slow:
     * for a caller that has waited on its peers for a long time). */
    int (*peers_lost)(xp_tl_t *tl);
    /* The CPUs the node's ranks may run on, as the transport saw them when it
     * opened (the union of the local ranks' affinity masks), or 0: unknown. */
    long (*node_cpus)(xp_tl_t *tl);
} xp_tl_ops_t;

/* ---- The transport manager: what the engine calls. ---- */

typedef xp_status_t (*xp_tl_send_fn)(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                                     const void *data, size_t data_len);

/* How packets reach one peer, resolved once by xp_tl_init: the route's
 * transport, its send functions and limits. Valid until xp_tl_fini. */
typedef struct xp_tl_route {
    xp_tl_send_fn send;      /* NULL: the peer is unreachable */
    xp_tl_send_fn send_excl; /* ops->send_excl, or ops->send when it has none */
    xp_tl_t *tl;
    size_t max_packet;       /* largest hdr_len + data_len */
    size_t eager_max;        /* ops->eager_max's (SIZE_MAX: none) */
    uint32_t caps;           /* XP_TL_CAP_* towards this peer */
    const xp_tl_ops_t *ops;
    xp_tl_inplace_t *inplace; /* ops->inplace's, NULL: none (transport/inplace.h) */
    xp_tl_inplace_t *inplace_excl; /* ops->inplace_excl's, NULL: none */
    const xp_tl_window_t *window;  /* ops->window's, NULL: none */
    int (*quiet)(xp_tl_t *tl, int rank); /* ops->quiet (set whenever window is) */
} xp_tl_route_t;

/* The head of the manager's state (xp_ctx.tl points to a struct that starts
 * with it), so that the route lookup below is inline: the engine looks up a
 * route for every packet it sends. */
typedef struct xp_tl_routes {
    int size;                /* job size: one route per rank */
    xp_tl_route_t *routes;
} xp_tl_routes_t;

#define XP_TL_MAX_OPEN 8     /* transports one process opens at most */
#define XP_TL_POLL_BUDGET 64 /* packets per transport per xp_tl_progress */

/* The open transports' pending and poll functions, resolved once by
 * xp_tl_init: xp_tl_pending (a waiter's every spin) and xp_tl_progress_excl
 * (the engine's poll) below call them directly, inline. */
typedef struct xp_tl_polls {
    int npending;        /* open transports with a pending() */
    int always_pending;  /* one has none: it may always have work */
    int (*pending[XP_TL_MAX_OPEN])(xp_tl_t *tl);
    xp_tl_t *pending_tl[XP_TL_MAX_OPEN];
    /* pending_tl[i]'s ops->poll_hint, or NULL */
    int (*poll_hint[XP_TL_MAX_OPEN])(xp_tl_t *tl, int budget, int hint);
    int npoll;           /* open transports */
    int (*poll_excl[XP_TL_MAX_OPEN])(xp_tl_t *tl, int budget); /* else ops->poll */
    xp_tl_t *poll_tl[XP_TL_MAX_OPEN];
} xp_tl_polls_t;

/* The head of the manager's state, as the inline functions below see it
 * (transport.c's state starts with these two members). */
typedef struct xp_tl_head {
    xp_tl_routes_t rt;
    xp_tl_polls_t polls;
} xp_tl_head_t;

/* The route to `rank`; NULL before xp_tl_init, for a bad rank, or when no
 * transport reaches it. */
static inline const xp_tl_route_t *xp_tl_route(int rank)
{
    const xp_tl_routes_t *rt = (const xp_tl_routes_t *)(const void *)xp_ctx.tl;
    if (__builtin_expect(!rt || (unsigned)rank >= (unsigned)rt->size, 0))
        return NULL;
    const xp_tl_route_t *r = &rt->routes[rank];
    return __builtin_expect(r->send != NULL, 1) ? r : NULL;
}

/* xp_tl_send on a route the caller looked up, without xp_tl_send's argument
 * checks, which the caller has made: hdr != NULL, data != NULL when
 * data_len > 0, hdr_len + data_len <= r->max_packet. */
static inline xp_status_t xp_tl_route_send(const xp_tl_route_t *r, int rank, const void *hdr,
                                           size_t hdr_len, const void *data, size_t data_len)
{
    xp_tsan_message_out();
    return r->send(r->tl, rank, hdr, hdr_len, data, data_len);
}

/* The same for xp_tl_send_excl (the caller holds the engine's poll lock). */
static inline xp_status_t xp_tl_route_send_excl(const xp_tl_route_t *r, int rank,
                                                const void *hdr, size_t hdr_len,
                                                const void *data, size_t data_len)
{
    xp_tsan_message_out();
    return r->send_excl(r->tl, rank, hdr, hdr_len, data, data_len);
}

/* Open the transports named in XP_TRANSPORTS for this job (needs xp_init).
 * Packets are handed to recv; every arrival rings the process doorbell. */
xp_status_t xp_tl_init(xp_tl_recv_fn recv, void *recv_arg);
void xp_tl_fini(void);
/* Send one packet to rank (any rank of the job, including this one).
 * Thread-safe, and safe to call from inside the packet handler. Never blocks:
 * XP_ERR_AGAIN when the peer's inbox is full (poll and retry later; inside
 * the handler, queue the packet instead of spinning: the handler runs with
 * this process's inbox locked, so spinning there can deadlock two peers that
 * both wait for room); XP_ERR_PEER_DEAD when the peer process is gone;
 * XP_ERR_OVERFLOW above xp_tl_max_packet(rank); XP_ERR_NOT_FOUND when no
 * transport reaches rank; XP_ERR_INVALID for a bad rank. */
xp_status_t xp_tl_send(int rank, const void *hdr, size_t hdr_len, const void *data, size_t data_len);
/* xp_tl_send for a caller that holds the engine's poll lock, so that no two
 * such sends run at once (answers: ACK, REPLY). Same results as xp_tl_send;
 * the packets keep their order among themselves but not with respect to
 * xp_tl_send's (requests), which the engine does not need for answers. */
xp_status_t xp_tl_send_excl(int rank, const void *hdr, size_t hdr_len, const void *data,
                            size_t data_len);
/* Poll every open transport; returns the number of packets delivered.
 * Callable from several threads (one polls a given inbox at a time; the others
 * return 0 at once) and from inside the handler (returns 0). */
int xp_tl_progress(void);
/* xp_tl_progress for a caller that holds the engine's poll lock while no
 * other thread polls through xp_tl_progress (the engine is its only user in
 * the library): the transports skip their consumer trylock. Not from inside
 * the handler (the engine's trylock already keeps it out). */
static inline int xp_tl_progress_excl(void)
{
    const xp_tl_head_t *h = (const xp_tl_head_t *)(const void *)xp_ctx.tl;
    int n = 0;
    if (!h)
        return 0;
    /* What arrives may have been sent in reaction to our messages (TSan
     * builds only; the transports' own delivery work is covered too). */
    xp_tsan_message_in();
    for (int i = 0; i < h->polls.npoll; i++)
        n += h->polls.poll_excl[i](h->polls.poll_tl[i], XP_TL_POLL_BUDGET);
    return n;
}
/* Nonzero if xp_tl_progress() would deliver something now: the predicate a
 * progress thread gives xp_doorbell_wait(xp_tl_doorbell(), ...). The value
 * is a hint for xp_tl_progress_hint: which transport (the low 3 bits) saw
 * a packet where (the rest; 0: no hint). */
static inline int xp_tl_pending(void)
{
    const xp_tl_head_t *h = (const xp_tl_head_t *)(const void *)xp_ctx.tl;
    if (!h)
        return 0;
    if (h->polls.always_pending)
        return 1;
    for (int i = 0; i < h->polls.npending; i++) {
        int r = h->polls.pending[i](h->polls.pending_tl[i]);
        if (r)
            return h->polls.poll_hint[i] ? r * XP_TL_MAX_OPEN + i : 1;
    }
    return 0;
}
/* xp_tl_progress_excl given what xp_tl_pending returned just before (0 is
 * fine): the transport that saw a packet may deliver only from where it
 * saw it, so that the packet a waiter spins for reaches the handler
 * without a look at every other ring, before or after it. What else is
 * pending is found by the next xp_tl_pending. */
static inline int xp_tl_progress_hint(int pending)
{
    const xp_tl_head_t *h = (const xp_tl_head_t *)(const void *)xp_ctx.tl;
    int i = pending & (XP_TL_MAX_OPEN - 1), r = pending / XP_TL_MAX_OPEN;
    if (r <= 0 || !h || i >= h->polls.npending || !h->polls.poll_hint[i])
        return xp_tl_progress_excl();
    xp_tsan_message_in();
    return h->polls.poll_hint[i](h->polls.pending_tl[i], XP_TL_POLL_BUDGET, r);
}
/* Largest packet that reaches `rank`; 0 if unreachable. */
size_t xp_tl_max_packet(int rank);
uint32_t xp_tl_caps(int rank);
xp_status_t xp_tl_readv(int rank, const struct iovec *local, int nlocal, const struct iovec *remote, int nremote);
xp_status_t xp_tl_writev(int rank, const struct iovec *local, int nlocal, const struct iovec *remote, int nremote);
/* The route's bounce_alloc / bounce_done (xp_tl_ops_t); NULL / nothing when
 * its transport has none. */
void *xp_tl_bounce_alloc(int rank, size_t len);
void xp_tl_bounce_done(int rank, uint64_t addr);
/* The route's bounce_max (0: no bounce blocks to rank). */
size_t xp_tl_bounce_max(int rank);
/* Give back a block of xp_tl_bounce_alloc(rank, ...) whose request was not sent. */
void xp_tl_bounce_cancel(int rank, void *buf);
/* The route's bounce_fill / bounce_read (xp_tl_ops_t): the first n bytes of
 * our block buf for rank are staged; copy rank's block at addr into local
 * (readv where the transport has no bounce_read). */
void xp_tl_bounce_fill(int rank, void *buf, size_t n);
xp_status_t xp_tl_bounce_read(int rank, const struct iovec *local, int nlocal, uint64_t addr,
                              size_t len);
/* The route's direct (xp_tl_ops_t) for our [p, p+len) / rank's segments
 * (all of them); 0 when its transport has none. */
int xp_tl_direct_ours(int rank, const void *p, size_t len);
int xp_tl_direct_theirs(int rank, const struct iovec *segs, int n);
/* Our own window (xp_tl_ops_t's window for this rank) from the first open
 * transport that has one, NULL: none (the engine publishes descriptors in
 * its meta bytes: ptl/direct.h). */
const xp_tl_window_t *xp_tl_own_window(void);
/* Nonzero if any open transport's peers_lost says so. */
int xp_tl_peers_lost(void);
/* The process doorbell (in shared memory, so peers can ring it). Senders
 * only pay for seq++ and a futex wake when `sleepers` is nonzero. With
 * XP_SHM_ASYM_FENCE=1, shm senders do not even fence before looking (the
 * sleeper issues a global membarrier instead: ~4x the small-packet rate);
 * then every sleeper MUST use xp_tl_wait, since xp_doorbell_wait can miss a
 * packet's wake-up. Ringing it (xp_doorbell_ring) to wake a sleeper of this
 * process for other reasons (an event, shutdown) is always fine. */
xp_doorbell_t *xp_tl_doorbell(void);
/* Spin XP_SPIN_COUNT polls of pred(arg), then sleep on the process doorbell
 * until pred holds or deadline_ns (absolute, xp_time_ns clock; UINT64_MAX:
 * never) passes: XP_OK or XP_ERR_TIMEOUT. Wakes on every packet arrival and
 * every xp_doorbell_ring(xp_tl_doorbell()). pred NULL means xp_tl_pending();
 * a thread that polls the transports must include xp_tl_pending() in pred.
 * Thread-safe; idle sleepers use no CPU. */
xp_status_t xp_tl_wait(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns);
/* xp_tl_wait with `spins` polls of pred before the sleep instead of
 * xp_tl_spin_count() (0: sleep at once). */
xp_status_t xp_tl_wait_spin(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns, long spins);
/* A nap of at most max_ns on the process doorbell without the transports'
 * before_sleep (XP_SHM_ASYM_FENCE's membarrier, ~4 us): a packet whose
 * sender did not see this sleeper in time may not ring it, so it can be
 * found only when the nap ends. For a thread that sleeps after every
 * packet; an xp_tl_wait must follow a nap that ends with pred false.
 * Returns pred(arg) at the end. */
int xp_tl_nap(xp_wait_pred_t pred, void *arg, uint64_t max_ns);
/* The CPUs the node's ranks share: XP_NODE_CPUS if set, else what an open
 * transport saw (shm: the union of the local ranks' affinity masks, so that
 * 4 ranks that a launcher bound to 2 CPUs, or that run under taskset or a
 * cpuset, count 2), else the online CPUs. Not this process's own mask:
 * launchers such as xprun bind each rank to one CPU. */
long xp_tl_node_cpus(void);
/* The same with `seen` standing for what the transports saw (0: nothing):
 * for a transport that asks while it opens. */
long xp_tl_node_cpus_seen(long seen);
/* Whether the node runs more local ranks than xp_tl_node_cpus(). */
int xp_tl_oversubscribed(void);
/* The same with xp_tl_node_cpus_seen(seen): for a transport that opens. */
int xp_tl_oversubscribed_seen(long seen);
/* Polls a waiter should spin before sleeping: XP_SPIN_COUNT, or far fewer
 * when the node runs more local ranks than this process has CPUs (unless
 * XP_SPIN_COUNT was set explicitly). xp_tl_wait spins this many. */
long xp_tl_spin_count(void);
/* Names of the compiled-in transports (for xpinfo), NULL-terminated. */
const char *const *xp_tl_names(void);

#endif
