/*
 * transport/shm_internal.h - what shm.c (rings, lanes, sends, polls) and
 * shm_split.c (bulk copies: the shared heap, process_vm_readv/writev and
 * copies split with the peer) share. Not installed.
 */
#ifndef XP_TRANSPORT_SHM_INTERNAL_H
#define XP_TRANSPORT_SHM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/inplace.h"
#include "transport/shm_ring.h"
#include "transport/shm_seg.h"
#include "transport/shmheap.h"
#include "transport/transport.h"
#include "util/atomic.h"

typedef struct shm_peer {
    uint64_t cached_head;  /* senders' view of the peer ring's head */
    xp_shm_ring_t *ring;   /* NULL: not reachable */
    xp_shm_seg_t seg;      /* our mapping (unused for our own rank) */
    xp_shmheap_t heap;     /* our mapping of its shared heap (base NULL: none) */
    uint64_t heap_remote;  /* where the owner mapped that heap */
    xp_tl_window_t win;    /* the same for the engine (shm_window) */
    /* shm_quiet's memo: the lane_req tail and inbox end (other_end) of
     * ours that the peer was seen to have handled, so that a repeated
     * check reads no line the peer writes while we sent nothing new. Any
     * thread may store them (relaxed): a stale memo only costs a look. */
    uint64_t quiet_tail, quiet_other;
    uint64_t checked_ns;   /* last liveness check */
    pid_t pid;
    uint32_t caps;
    /* Our lanes into its pair object (NULL: none; then sends use its inbox).
     * lane_req (ip.ring) carries the requests of one thread of ours (req_owner, the
     * first that sends one) with no locked instruction; lane_ans our answers
     * (send_excl: its callers are serialised by the engine's poll lock); the
     * requests of other threads go to its inbox. Causal order: the peer
     * handles what lane_ans holds before each lane_req packet (shm_poll);
     * inbox and lane_req wait until the peer has handled the other's earlier
     * packets (send_owner, send_other). */
    xp_shm_ring_t *lane_ans;
    uintptr_t req_owner;   /* xp_thread_id() of lane_req's producer; 0: none yet */
    void *lane_hdr;        /* its pair object's pair_hdr_t */
    int lane_index;        /* our first lane's index in it */
    uint8_t req_on, ans_on; /* we have announced lane_req / lane_ans */
    void *pair_map;        /* our mapping of its pair object */
    size_t pair_len;
    /* lane_req (ip.ring), its owner's state once announced (ip.owner: the
     * one compare of the common send), the doorbell, and other_end on its
     * own line: what shm_send's common case and the in-place sends read
     * (transport/inplace.h). */
    xp_tl_inplace_t ip;
    /* lane_ans in place (transport/inplace.h's _excl functions): ans.ring
     * and ans.owner (XP_TL_INPLACE_ANY) are set once lane_ans is announced;
     * ans.cached_head is the one cached head of lane_ans for both paths. */
    xp_tl_inplace_t ans;
} XP_CACHE_ALIGNED shm_peer_t;

/* A lane we poll; for a request lane, gate is the same sender's answer lane
 * (drained before each request: shm_poll). */
typedef struct rx_lane {
    xp_shm_ring_t *ring, *gate;
} rx_lane_t;

/* Our outstanding bounce blocks (shm_bounce.c): at most XP_SHM_BOUNCE_LIST
 * (a power of two) at a time. */
#define XP_SHM_BOUNCE_LIST 1024u
typedef struct xp_shm_bounce_blk {
    unsigned char *blk;
    size_t size;           /* heap bytes it takes */
    size_t len;            /* data bytes: staged in full once its fill says so */
    int rank;              /* its reader */
} xp_shm_bounce_blk_t;

typedef struct xp_shm_bounce {
    pthread_mutex_t lock;
    size_t max;            /* XP_SHM_BOUNCE_MAX; 0: no bounce blocks (XP_SHM_BOUNCE) */
    int single;            /* single copies chosen: XP_SHM_BOUNCE off, or auto's probe */
    size_t cap, bytes;     /* most heap bytes outstanding; now */
    xp_shm_bounce_blk_t *list; /* the blocks, oldest first, from head to tail */
    uint32_t head, tail;   /* positions in list (modulo its size) */
} xp_shm_bounce_t;

typedef struct shm_tl {
    int polling XP_CACHE_ALIGNED; /* consumer trylock */
    xp_shm_ring_t *inbox;
    const xp_tl_params_t *params;
    int rank, size;
    int asym;              /* registered for global membarriers */
    int splitting;         /* our split area is in use (split_copy) */
    int staging;           /* `stage` is in use (shm_split.c, cma_copy) */
    unsigned char *stage;  /* STAGE + 64 bytes (shm_split.c), allocated on first use */
    uint32_t split_gen;    /* last generation of our split area */
    long node_cpus;        /* the local ranks' CPUs, a union of their masks (0: unknown) */
    size_t split_min;      /* XP_SHM_SPLIT_MIN; 0 when oversubscribed */
    size_t split_chunk;    /* XP_SHM_SPLIT_CHUNK */
    size_t eager_max;      /* XP_SHM_EAGER_MAX, resolved (SIZE_MAX: a whole packet) */
    xp_shm_seg_t own;
    xp_shmheap_t heap;     /* our shared heap (xp_shmalloc); base NULL: none */
    xp_tl_window_t own_win; /* heap as a window (shm_window(-1)) */
    xp_shm_bounce_t bounce; /* blocks of heap staged for peers (shm_bounce.c) */
    shm_peer_t *peers;     /* size entries */
    /* Our pair object: PAIR_LANES rings per local sender (by local index),
     * which peers map; we poll the lanes peers have used (rx), then the
     * inbox. */
    void *pair_base;
    size_t pair_len;
    uint32_t pair_cells;
    int nlocal, linked_pair;
    char pair_name[XP_SHM_NAME_MAX];
    rx_lane_t *rx;         /* the active lanes (nrx), then room for more */
    int nrx;
    int rx_next;           /* where shm_pending starts (poller writes) */
    uint64_t rx_gen;       /* pair_hdr_t gen that rx reflects */
    uint64_t *pair_gen;    /* &our pair_hdr_t gen; NULL without lanes */
    uint8_t *rx_listed;    /* per lane: already in rx (poller only) */
} shm_tl_t;

/* Write the first word of each line of another process's memory that
 * starts in data[off, end) (data line-aligned) and whose first word lies
 * there, once we have read those bytes (bytes at and after end may still
 * be written). The writer's next copy into these lines then takes them
 * from our cache modified, which on the AMD EPYC VM is 3.4-5 times faster
 * than taking lines we only read (8 KiB 1.12 against 0.33 us;
 * docs/performance-notes.md, round 29). A ring's consumer does the same to
 * its cells (xp_shm_ring_release); a bounce block's reader to the block
 * before it hands it back (shm_bounce.c), and the eager probe's echo to
 * its buffer (shm_eager.c). The memory must be ours to write until we say
 * so. */
static inline void xp_shm_own_lines(unsigned char *data, uint64_t off, uint64_t end)
{
    for (uint64_t i = (off + XP_CACHE_LINE - 1) & ~(uint64_t)(XP_CACHE_LINE - 1);
         i + sizeof(uint64_t) <= end; i += XP_CACHE_LINE)
        xp_store_relaxed((uint64_t *)(void *)(data + i), 0);
}

/* Peer p is gone: sends to it fail from now on. Its in-place sends stop
 * too (ip.owner 0: the reserve's one owner compare covers death, and the
 * ordinary send then says XP_ERR_PEER_DEAD). */
static inline void xp_shm_peer_mark_dead(shm_peer_t *p)
{
    xp_store_relaxed(&p->ip.dead, 1);
    xp_store_relaxed(&p->ip.owner, 0);
    xp_store_relaxed(&p->ans.owner, 0);
}

/* Whether peer p has died (it is then marked dead); looks at most once per
 * millisecond per peer, since callers retry in a loop (shm.c). */
int xp_shm_peer_gone(shm_peer_t *p);

/* A peer's request to help with a shared copy, received in our inbox with
 * src = -2 - rank: copy the chunks we can still claim (shm_split.c). */
__attribute__((cold)) void xp_shm_split_help(shm_tl_t *s, int rank, const void *pkt,
                                             size_t len);

/* Bulk copy between our buffer `local` and rank's buffer `remote` (do_write:
 * into rank's memory): through our mapping of its shared heap, else with
 * process_vm_readv/writev, a large one split with the peer (shm_split.c). */
xp_status_t xp_shm_rma(shm_tl_t *s, int rank, int do_write, const struct iovec *local,
                       int nlocal, const struct iovec *remote, int nremote);

/* Bounce blocks (xp_tl_ops_t's bounce_alloc / bounce_done) in our heap:
 * set up after the heap is made, torn down at close. */
void xp_shm_bounce_init(shm_tl_t *s);
/* Where XP_SHM_BOUNCE is auto and its copy probe chose single copies, but
 * the eager probe (shm_eager.c) found copies through memory faster up to
 * its largest size (verdict XP_SHM_PROBE_MAX): bounce blocks for puts and
 * gets above a packet up to XP_SHM_MID_BOUNCE_MAX (and XP_SHM_BOUNCE_MAX);
 * larger ones stay single copies, shared by both CPUs (XP_SHM_SPLIT_MIN).
 * On the AMD EPYC VM, round 29, blocks took 2.95 / 4.86 / 6.20 us for 32 /
 * 64 / 128 KiB ping-pongs against 4.80 / 8.74 / 11.4 by single copy, and
 * streamed 17.0-19.6 GB/s at 32-64 KiB against 8.0-10.0; at 192-256 KiB
 * 25-28 GB/s against 14-23, and 11.1-11.2 us against 11.8-14.9 for a 256
 * KiB ping-pong (13-17 against 31-34 with data written before each put);
 * at 384 / 512 KiB 15.5-17.9 / 21-22 us against 18.5-24.3 / 23-28
 * (19-22 / 28-29 against 41 / 45-52 written before each put); at 1 MiB the
 * single copies won untouched data (31-35 against 42-43 us) and tied
 * written data (57 against 60; docs/performance-notes.md). */
void xp_shm_bounce_mid(shm_tl_t *s, size_t verdict);
void xp_shm_bounce_fini(shm_tl_t *s);
void *xp_shm_bounce_alloc(xp_tl_t *tl, int rank, size_t len);
size_t xp_shm_bounce_max(xp_tl_t *tl);
void xp_shm_bounce_done(xp_tl_t *tl, int rank, uint64_t addr);
void xp_shm_bounce_fill(xp_tl_t *tl, void *buf, size_t n);
xp_status_t xp_shm_bounce_read(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                               uint64_t addr, size_t len);
int xp_shm_direct(xp_tl_t *tl, int rank, uint64_t addr, size_t len, int theirs);
/* The node's verdict where XP_SHM_EAGER_MAX or XP_SHM_BOUNCE is auto,
 * timed by its first two local ranks once the segments are exchanged
 * (shm_eager.c): the eager limit for single copies, XP_SHM_PROBE_MAX
 * where copies through memory won at every size probed (then bounce
 * blocks pay too: xp_shm_bounce_mid); XP_SHM_AUTO_EAGER_MAX where no probe
 * ran or it failed. Collective over the node's ranks, bounded by
 * deadlines. */
size_t xp_shm_eager_probe(shm_tl_t *s);
/* Free every bounce block that has been read (xp_shm_heap_reclaim). */
void xp_shm_bounce_reclaim(shm_tl_t *s);

#endif
