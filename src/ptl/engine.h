/*
 * ptl/engine.h - internals shared by the engine's files (init, NI, PT, LE/ME,
 * MD, initiator and target sides of the packet protocol, progress).
 *
 * Design (DESIGN.md section 2; decisions taken here):
 *
 * Identity. pid = job rank + 1 (ni.c: phys_of_rank), nid = node index
 * (xp_node_of). A physical id (nid, pid) names job rank pid - 1; no process
 * has pid 0, which Open MPI's coll/portals4 takes for a logical address (it
 * disqualifies itself on that rank only, and the job hangs in its first
 * collective). A logical rank goes through the NI's map
 * (identity unless PtlSetMap installed a permutation). Events carry the
 * initiator as the receiving NI addresses it.
 *
 * Packets. Every Portals message is one transport packet: a fixed header
 * (xp_pkt_t) followed by an optional payload. On the wire the commonest
 * small messages use a compact form of the header (ptl/wire.h). The initiator keeps NO per
 * operation state: the header carries the initiator's MD handle, user_ptr and
 * local offset, and acknowledgements / replies echo them back, so the
 * initiator finds its MD by handle (generation-checked) when the answer
 * arrives. MD->pending counts answers still expected (PtlMDRelease -> PTL_IN_USE).
 *
 * Data path. A put/atomic payload up to the inline limit (what fits in one
 * packet) travels in the packet; the SEND event is generated as soon as the
 * transport took the packet. Larger puts and get replies use the transport's
 * single-copy RMA: the packet carries the initiator's (address, length)
 * segments; the target reads them (put) or writes them (get reply) and then
 * sends the answer (ACK, a bare completion, or REPLY); the initiator's SEND
 * event for a large put is generated when that answer arrives.
 *
 * Target processing is synchronous inside the packet handler, under the PT
 * lock: match, check permissions, move data, generate events/counts, answer.
 * Answers that cannot be sent right away (peer ring full) are deferred and
 * flushed by the progress loop, so two processes flooding each other never
 * deadlock.
 *
 * Atomics are applied by the target's engine, under one process-wide atomic
 * lock, so atomics from several initiators on one location are atomic with
 * respect to each other (also for long double and complex types).
 */
#ifndef XP_PTL_ENGINE_H
#define XP_PTL_ENGINE_H

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "portals4.h"
#include "ptl/handle.h"
#include "ptl/ni.h"
#include "transport/transport.h" /* xp_thread_id */
#include "util/atomic.h"
#include "util/context.h"
#include "xportals/status.h"

/* ---------------------------------------------------------------- packets */

typedef enum {
    XP_PKT_PUT = 1,
    XP_PKT_GET,
    XP_PKT_ATOMIC,
    XP_PKT_FETCH,    /* PtlFetchAtomic */
    XP_PKT_SWAP,     /* PtlSwap */
    XP_PKT_ACK,      /* answer to PUT/ATOMIC (full or counting ack, or bare completion) */
    XP_PKT_REPLY,    /* answer to GET/FETCH/SWAP */
} xp_pkt_type_t;

enum {
    XP_PKT_F_RMA     = 1u << 0, /* request: data by RMA (segments in payload) */
    XP_PKT_F_NOACK   = 1u << 1, /* answer: completion only, no ack counting/event */
    XP_PKT_F_SENDEV  = 1u << 2, /* answer: initiator still owes the SEND event */
    XP_PKT_F_XTQ     = 1u << 3, /* request: an XTQ put (xtq/): after delivery the target
                                 * hands the landed message to the XTQ hook */
    XP_PKT_F_MANY    = 1u << 4, /* answer: nseg successful counting ACKs for one MD in
                                 * one packet, mlength = their total (xp_eng_ack_many) */
    XP_PKT_F_BOUNCE  = 1u << 5, /* with XP_PKT_F_RMA, on a put request or a REPLY: the
                                 * data waits in a bounce block of the sender
                                 * (xp_tl_bounce_alloc), its one xp_seg_t the payload;
                                 * the reader gives it back (xp_tl_bounce_done). The
                                 * put is answered like an inline one */
};

/* Header of every engine packet (requests and answers share it). */
typedef struct xp_pkt {
    uint8_t type;          /* xp_pkt_type_t */
    uint8_t slot;          /* target NI slot (answers: initiator NI slot) */
    uint8_t ack_req;       /* ptl_ack_req_t */
    uint8_t flags;         /* XP_PKT_F_* */
    uint8_t atomic_op;     /* ptl_op_t */
    uint8_t atomic_type;   /* ptl_datatype_t */
    uint8_t fail;          /* answers: ptl_ni_fail_t */
    uint8_t ptl_list;      /* answers: list matched */
    uint32_t pt_index;
    uint32_t md_handle;    /* initiator MD receiving the answer (put MD or get MD) */
    uint32_t uid;          /* initiator's uid */
    uint32_t nseg;         /* RMA: number of xp_seg_t in the payload */
    uint64_t match_bits;
    uint64_t hdr_data;
    uint64_t rlength;      /* requested length */
    uint64_t mlength;      /* answers: manipulated length */
    uint64_t remote_offset;
    uint64_t local_offset; /* echoed: offset in md_handle */
    uint64_t user_ptr;     /* echoed */
} xp_pkt_t;

/* One initiator-side segment of an RMA transfer. */
typedef struct xp_seg {
    uint64_t addr;
    uint64_t len;
} xp_seg_t;

/* Largest inline payload towards `rank` (packet size minus header). */
size_t xp_eng_inline_max(int rank);
/* Largest put or get payload that goes inline to `rank`: xp_eng_inline_max,
 * or less where the transport moves larger ones faster otherwise (its
 * eager_max). Atomics always go inline, up to xp_eng_inline_max. */
size_t xp_eng_eager_max(int rank);
/* Send a packet; spins with progress while the peer's ring is full.
 * From the handler (in_handler = 1) a full ring defers the packet instead. */
xp_status_t xp_eng_send(int rank, const xp_pkt_t *hdr, const void *payload, size_t len,
                        const void *payload2, size_t len2, int in_handler);
/* Flush deferred answers (progress loop). */
void xp_eng_flush_deferred(void);
/* From the handler: a successful PTL_CT_ACK_REQ acknowledgement `a` (no
 * event, no SEND event owed) for `rank`. Consecutive ones for the same MD
 * are sent as one XP_PKT_F_MANY packet when the poll batch ends (the next
 * xp_eng_flush_deferred) or before any other answer, so answers stay in
 * order; the initiator's CT sees the same total. */
void xp_eng_ack_many(int rank, const xp_pkt_t *a);
/* The same from the request's fields (slot, ack_req and MD handle as its
 * packet has them; the list and the length delivered), without a full
 * header: the one-pass handlers' first ACK of a run. */
void xp_eng_ack_first(int rank, uint8_t slot, uint8_t ack_req, uint32_t md_handle,
                      uint8_t ptl_list, uint64_t mlength);
/* From the handler: the compact REPLY `w` (ptl/wire.h) with its len data
 * bytes, straight to the route when nothing is deferred and the ring has
 * room; else as xp_eng_send(in_handler = 1) sends its full header (in order
 * behind deferred answers). */
struct xp_wire_sreply;
void xp_eng_send_sreply(int rank, const struct xp_wire_sreply *w, const void *data, size_t len);
/* Hand back the bounce block of `rank` whose xp_seg_t starts `payload`
 * (a put request's or a REPLY's, XP_PKT_F_BOUNCE), if it holds one: shorter
 * (malformed) payloads name no segment to trust. */
void xp_eng_bounce_give_back(int rank, const void *payload, size_t len);
/* Pipelined bounce blocks (transport.h, bounce_fill): how many of a
 * len-byte block's bytes to stage before its request goes (all of a small
 * one); then stage bytes [from, to) of the block (region data from off),
 * publishing each chunk, the one that ends at `to` only if `last`. */
size_t xp_eng_bounce_first(size_t len);
struct xp_region;
void xp_eng_bounce_stage(int rank, const struct xp_region *rg, uint64_t off, unsigned char *b,
                         size_t from, size_t to, int last);

/* ---------------------------------------------------------------- process state */

/* The poll lock: one thread handles packets at a time (xp_ptl_progress), and
 * a few other paths keep handlers out while they hold it. Not a pthread
 * mutex: its unlock is a locked exchange, which waits for the handler's
 * stores to the sender's ring lines to drain and sat between a handled
 * packet and the waiter's reply. Here the release is a plain store; a thread
 * that sleeps for the lock announces itself in `sleepers` and issues the
 * heavy fence before its last look (the Dekker handshake of xp_pt_enter),
 * the holder reads `sleepers` after its release with the light fence. */
typedef struct xp_poll_lock {
    uint32_t held;     /* 0 free, 1 held (futex word) */
    uint32_t sleepers; /* threads about to sleep or asleep on `held` */
} xp_poll_lock_t;

/* Slots of application threads that spin in a wait while a progress thread
 * runs: a thread takes one (owner = its xp_thread_id) on its first counted
 * wait and keeps it; entering and leaving an active phase is then a plain
 * store to `spinning`, where a shared counter needs a locked add and sub
 * (the sub is on the path from the packet to the wait's return). Threads
 * that find every slot taken count themselves in active_waiters. */
#define XP_PTL_SPIN_SLOTS 16
typedef struct xp_ptl_spin_slot {
    uintptr_t owner; /* 0: free */
    int spinning;    /* owner is in a counted active phase */
} __attribute__((aligned(64))) xp_ptl_spin_slot_t;

typedef struct xp_ptl_state {
    pthread_mutex_t lock;     /* init/fini and NI slots */
    int init_count;
    xp_ni_t *ni[XP_PTL_NI_SLOTS];
    int rank, size;
    uint32_t uid;
    /* progress */
    pthread_t progress_thread;
    int progress_running;
    int progress_stop;
    long progress_spins;           /* its polls before a doorbell sleep (progress.c) */
    int progress_nap;              /* it naps before that sleep (progress.c) */
    xp_poll_lock_t poll_lock;      /* one thread handles packets at a time (zero: free) */
    uint32_t abort_gen;            /* bumped by xp_ptl_interrupt */
    uint32_t user_abort_gen;       /* bumped by PtlAbort (before abort_gen) */
    int active_waiters;            /* app threads spinning in xp_ptl_wait_until without a
                                    * spin slot (all taken) */
    xp_ptl_spin_slot_t spin_slot[XP_PTL_SPIN_SLOTS]; /* the others (progress.c) */
    uint32_t active_phases;        /* active phases begun (plain increments: progress.c) */
    int poll_yield;                /* more local ranks than CPUs: idle looks yield (progress.c) */
    uint32_t idle_looks;           /* idle non-blocking looks since the last yield (plain) */
    uint64_t yield_ns;             /* oversubscribed: a wait's yielding phase (progress.c) */
    uint32_t yield_skip;           /* waits left that skip it, and the next such pause */
    uint32_t yield_backoff;        /*   after a slow yield (plain; progress.c) */
    int yield_alone;               /* the last yield found nobody else to run (plain) */
    uint32_t yield_alone_ns;       /* a yield shorter than this found nobody (progress.c) */
    int app_sleepers;              /* app threads asleep in xp_ptl_wait_until */
    int app_db_sleepers;           /* of those, asleep on the doorbell (no progress thread) */
    int app_parked;                /* of those, asleep on app_word (thread progress) */
    uint32_t app_word;             /* bumped by xp_ptl_notify while app_parked > 0 */
    uint32_t park_word;            /* progress thread parks here while app threads spin */
    uintptr_t poll_owner;          /* xp_thread_id() of the thread handling packets in
                                    * xp_ptl_progress, else 0 */
    int asym_fence;                /* membarrier registered: xp_ptl_light_fence is a
                                    * compiler barrier (progress.c) */
    int direct;                    /* XP_SHM_DIRECT (ptl/direct.h) */
    /* deferred answers: the poll-lock holder's (ops.c, defer_count_add) */
    struct xp_deferred *defer_head, *defer_tail;
    int defer_count;               /* queued answers + 1 while `many` holds ACKs */
    struct {                       /* counting ACKs gathered for one (rank, MD) */
        int rank;
        uint32_t count;            /* 0: none held */
        uint8_t slot, ack_req;     /* the first request's */
        uint8_t ptl_list;          /* the first delivery's */
        uint32_t md_handle;
        uint64_t mlength;          /* summed */
    } many;
    /* atomics */
    pthread_mutex_t atomic_lock;
    /* handle tables of the engine's objects */
    xp_handle_table_t md_table, le_table, me_table;
    /* XTQ hooks, installed by xtq/ (a layer above) when it first registers a
     * table: function pointers keep ptl free of a link dependency on xtq.
     * xtq_deliver runs in the packet handler under the PT lock and never
     * blocks; it returns PTL_NI_OK or the failure for the initiator's ACK. */
    ptl_ni_fail_t (*xtq_deliver)(ptl_handle_ni_t ni, void *landed, size_t len);
    void (*xtq_ni_fini)(ptl_handle_ni_t ni); /* the NI is being destroyed */
    /* Memos of the MD and route of the last compact put (PtlPut), the
     * last compact fetch (PtlFetchAtomic, by its put MD) and the last
     * compact get (PtlGet), ops.c: a call
     * like the previous one skips the chain of dependent loads from handle
     * to ring (table, MD, NI, map, route). Each is one thread's: the first
     * to claim `owner` fills and reads it, no other thread touches the
     * rest. Valid while `epoch` equals put_epoch. */
    struct xp_route_memo {
        uintptr_t owner;          /* xp_thread_id() of its thread; 0: unclaimed */
        uint64_t epoch;
        ptl_handle_md_t md_handle;
        ptl_rank_t rank;          /* logical target rank */
        int job_rank;             /* its job rank */
        uint32_t put_lim;         /* PtlPut's compact bound: md->sput_lim, at most
                                   * 1 + route->eager_max (ops.c, put_lim) */
        struct xp_md *md;
        const struct xp_tl_route *route;
        struct xp_tl_inplace *ip;      /* route->inplace, or NULL */
        struct xp_shm_ring *ring;      /* ip->ring */
    } put_memo XP_CACHE_ALIGNED, fetch_memo XP_CACHE_ALIGNED, get_memo XP_CACHE_ALIGNED;
    /* The one-pass REPLY's route (target.c, reply_reserve: fetching
     * atomics and small gets): the last answer lane written in place, by
     * whichever thread holds the poll lock (it orders their uses). Valid
     * while `epoch` equals put_epoch. */
    struct {
        int rank;                      /* -1: none */
        uint64_t epoch;
        size_t max_packet;             /* route->max_packet */
        const struct xp_tl_route *route;
        struct xp_tl_inplace *ip;      /* route->inplace_excl (not NULL) */
        struct xp_shm_ring *ring;      /* ip->ring */
    } reply_memo XP_CACHE_ALIGNED;
    /* The MD of the last compact REPLY handled here (ops.c,
     * xp_eng_handle_sreply), by whichever thread holds the poll lock.
     * Valid while `epoch` equals put_epoch. */
    struct {
        ptl_handle_md_t md_handle;     /* 0: none (no MD has handle 0) */
        uint64_t epoch;
        struct xp_md *md;
    } sreply_memo;
    /* Bumped (xp_put_memo_forget) whenever what a memo holds may go: an MD
     * freed, an NI's map set, an NI destroyed, the transports closed. */
    uint64_t put_epoch;      /* 64 bits: never wraps in practice */
    /* xp_tl_own_window() since the transports started (ptl/direct.h: the
     * target's descriptors), NULL: none. Last, so that no field above
     * moves against the cache lines. */
    const struct xp_tl_window *own_window;
    size_t direct_max;             /* XP_SHM_DIRECT_MAX (ptl/direct.h) */
    /* The threads (xp_thread_id) that own this process's busy words in
     * peers' heaps, by index (ptl/direct.h; 0: free). */
    uintptr_t direct_thread[4];
} xp_ptl_state_t;

/* Every route memo is stale from now on. */
static inline void xp_put_memo_forget(xp_ptl_state_t *st)
{
    __atomic_add_fetch(&st->put_epoch, 1, __ATOMIC_RELEASE);
}

/* The common case of xp_eng_ack_many, inline for the packet handler: the
 * acknowledgement (successful, counting, mlength bytes) joins those already
 * gathered for the same (rank, MD). 1 if it did; 0: the caller passes the
 * full answer to xp_eng_ack_many. Poll-lock holder only. */
static inline int xp_eng_ack_join(xp_ptl_state_t *st, int rank, uint32_t md_handle,
                                  uint64_t mlength)
{
    if (st->many.count && st->many.rank == rank && st->many.md_handle == md_handle &&
        st->many.count < UINT32_MAX) {
        st->many.count++;
        st->many.mlength += mlength;
        return 1;
    }
    return 0;
}

/* The process state, created on first use (NULL only when out of memory). */
xp_ptl_state_t *xp_ptl_state_create(void);
/* Inline: the engine asks for it several times per packet and per idle poll. */
static inline xp_ptl_state_t *xp_ptl_state(void)
{
    xp_ptl_state_t *st = __atomic_load_n(&xp_ctx.ptl, __ATOMIC_ACQUIRE);
    return __builtin_expect(st != NULL, 1) ? st : xp_ptl_state_create();
}

/* The process state if it exists (no creation: usable by modules that are
 * unit-tested without the engine, such as ct.c). */
static inline xp_ptl_state_t *xp_ptl_state_peek(void)
{
    return __atomic_load_n(&xp_ctx.ptl, __ATOMIC_ACQUIRE);
}

/* Whether the caller handles packets in xp_ptl_progress now (holds the poll
 * lock there): such a thread is the only writer of handler-owned words
 * (ct.c). Other holders of the poll lock answer no. */
static inline int xp_ptl_polling(void)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    return st && __atomic_load_n(&st->poll_owner, __ATOMIC_RELAXED) == xp_thread_id();
}

/* Handshakes between the packet handler and application threads (pt.h,
 * ct.c) put the expensive fence on the application's side: the handler's
 * xp_ptl_light_fence is a compiler barrier once PtlInit registered the
 * private expedited membarrier (asym_fence), which xp_ptl_heavy_fence then
 * issues (every running thread of this process passes a full fence);
 * without it both are full fences. */
static inline void xp_ptl_light_fence(void)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    if (__builtin_expect(st && __atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), 1))
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    else
        xp_fence();
}

static inline void xp_ptl_heavy_fence(void)
{
    xp_ptl_state_t *st = xp_ptl_state_peek();
    xp_fence();
    /* Cannot fail once registered (membarrier(2)). */
    if (st && __atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED))
        (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

/* Take the poll lock if it is free: 1 on success. Fails also when the
 * caller holds it already (not recursive). */
static inline int xp_poll_trylock(xp_ptl_state_t *st)
{
    uint32_t free_word = 0;
    return __atomic_load_n(&st->poll_lock.held, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(&st->poll_lock.held, &free_word, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* Take the poll lock, sleeping while another thread holds it (progress.c). */
void xp_poll_lock(xp_ptl_state_t *st);
/* Wake the threads asleep on the poll lock (progress.c). */
void xp_poll_wake(xp_ptl_state_t *st);

/* Release: a plain store, then the light side of the sleepers' handshake. */
static inline void xp_poll_unlock(xp_ptl_state_t *st)
{
    __atomic_store_n(&st->poll_lock.held, 0, __ATOMIC_RELEASE);
    if (__builtin_expect(__atomic_load_n(&st->asym_fence, __ATOMIC_RELAXED), 1))
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* xp_ptl_light_fence */
    else
        xp_fence();
    if (__builtin_expect(__atomic_load_n(&st->poll_lock.sleepers, __ATOMIC_RELAXED) != 0, 0))
        xp_poll_wake(st);
}

/* The packet handler (registered with xp_tl_init). */
void xp_eng_recv(void *arg, int src_rank, const void *pkt, size_t len);
/* Answers arriving at the initiator. */
void xp_eng_handle_answer(int src_rank, const xp_pkt_t *h, const void *payload, size_t len);
/* A compact REPLY (ptl/wire.h, XP_WIRE_SREPLY) of `len` bytes (at least its
 * header), read in place: a successful one for a plain MD without an EQ is
 * written and counted here, anything else decoded for xp_eng_handle_answer. */
void xp_eng_handle_sreply(int src_rank, const void *pkt, size_t len);
/* A compact ACK (XP_WIRE_SACK) of `len` bytes (at least its header), read
 * in place: a successful counting one (or a gathered run of them) is
 * counted here, anything else decoded for xp_eng_handle_answer. */
void xp_eng_handle_sack(int src_rank, const void *pkt, size_t len);

/* XTQ (xtq/ builds PtlXtqPut on it): a put whose data is gathered from two
 * MD ranges - [off1, off1+len1) of md1 (command packet + arguments), then
 * [off2, off2+len2) of md2 (payload) - carrying `flags` (XP_PKT_F_XTQ) in its
 * header. Events and counts go to md1; md2 must stay bound until md1's SEND
 * event. ack_req must be PTL_ACK_REQ or PTL_CT_ACK_REQ (an XTQ failure is
 * only ever reported in the acknowledgement). Returns a PTL_* code. */
int xp_eng_put_gather(ptl_handle_md_t md1, ptl_size_t off1, ptl_size_t len1, ptl_handle_md_t md2,
                      ptl_size_t off2, ptl_size_t len2, ptl_ack_req_t ack_req,
                      ptl_process_t target_id, ptl_pt_index_t pt_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                      ptl_hdr_data_t hdr_data, unsigned flags);

/* Free all objects of an NI (PtlNIFini's last reference). */
void xp_pt_fini_all(xp_ni_t *ni);
void xp_md_fini_all(xp_ni_t *ni);
/* Before NI slot (any: -1) goes: handle answers until no MD of it has an
 * operation in flight, for at most timeout_ms. A single-copy put that the
 * target has not read yet reads the initiator's buffer, which the
 * application may reuse, or the process leave, once PtlNIFini / PtlFini
 * returns; without this a put made just before them could be lost. */
#define XP_MD_DRAIN_MS 1000
void xp_md_drain(int slot, long timeout_ms);

#endif
