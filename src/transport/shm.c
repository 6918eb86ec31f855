/*
 * transport/shm.c - processes on one machine.
 *
 * Every process owns a segment (shm_seg.h) with its inbox ring and process
 * doorbell; at open it publishes the segment's name through the runtime's
 * key-value exchange, maps the segments of every peer on its node, and after
 * a barrier (every peer has mapped it) unlinks its own name, so /dev/shm is
 * clean even if a process is SIGKILLed later. Packets go into the receiver's
 * ring; bulk data moves single-copy with process_vm_readv/writev where a probe
 * at open shows it is allowed; a large one is shared with the peer whose
 * memory it copies, so that both processes' CPUs copy (shm_split.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "transport/shm_internal.h"
#include "transport/tl_list.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/log.h"
#include "util/tsan.h"

#define SHM_MAX_PACKET (32u * 1024u)
#define SHM_KV_KEY "xp.tl.shm"
#define SHM_LIVENESS_NS 1000000ull /* 1 ms */
/* Pair lanes: a pair ring's half must hold the largest packet. */
#define PAIR_MIN_CELLS 2048u
#define PAIR_LANES 2 /* per sender: 0 requests of one thread, 1 answers */
/* What a process publishes about its segment. */
typedef struct shm_addr {
    char name[XP_SHM_NAME_MAX];
    int32_t pid;
    uint64_t hdr_addr; /* where the owner mapped it (to probe CMA) */
    char heap_name[XP_SHM_NAME_MAX]; /* "" when the owner has no shared heap */
    uint64_t heap_addr; /* where the owner mapped its heap */
    uint64_t heap_size;
    char pair_name[XP_SHM_NAME_MAX]; /* "" when the owner has no pair lanes */
    uint64_t pair_size;
    uint32_t pair_cells;
    uint32_t pair_nlocal;
} shm_addr_t;

static uint32_t ring_cells(void)
{
    size_t bytes = xp_config()->shm_ring_size / XP_SHM_CELL;
    uint32_t n = 16;
    while ((size_t)n * 2 <= bytes && n < (1u << 30))
        n *= 2;
    return n;
}

/* Our shared heap (xp_shmalloc). Without one (XP_SHM_HEAP_SIZE=0, or no
 * room) everything still works, through process_vm_readv/writev. */
static void create_heap(shm_tl_t *s)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = xp_config()->shm_heap_size / page * page;
    char name[XP_SHM_NAME_MAX];
    if (!size)
        return;
    snprintf(name, sizeof name, "/xp-%s-%d-heap", xp_runtime_job_id(), s->rank);
    if (xp_shmheap_create(name, size, &s->heap) != XP_OK)
        xp_warn("shm: no shared heap (xp_shmalloc returns NULL)");
}

/* Index of `rank` among the ranks of its node (pair lanes are laid out by it). */
static int local_index(int rank)
{
    int node = xp_node_of(rank), i = 0;
    for (int r = 0; r < rank; r++)
        i += xp_node_of(r) == node;
    return i;
}

/* The start of a pair object: which lanes a sender has ever used, so that
 * the owner polls only those (a 64-rank node has 126 lanes per process).
 * A sender sets its lane's flag, then bumps `gen`, before its first packet. */
typedef struct pair_hdr {
    uint64_t gen XP_CACHE_ALIGNED;
    uint8_t active[] XP_CACHE_ALIGNED; /* one per lane: sender index * PAIR_LANES + lane */
} pair_hdr_t;

static size_t pair_ring_bytes(uint32_t cells)
{
    size_t b = xp_shm_ring_bytes(cells);
    return (b + XP_CACHE_LINE - 1) / XP_CACHE_LINE * XP_CACHE_LINE;
}

static size_t pair_hdr_bytes(uint32_t nlocal)
{
    size_t b = offsetof(pair_hdr_t, active) + (size_t)nlocal * PAIR_LANES, page = 4096;
    return (b + page - 1) / page * page;
}

static size_t pair_bytes(uint32_t cells, uint32_t nlocal)
{
    return pair_hdr_bytes(nlocal) + pair_ring_bytes(cells) * nlocal * PAIR_LANES;
}

static xp_shm_ring_t *pair_ring(void *base, uint32_t cells, uint32_t nlocal, int sender_index,
                                int lane)
{
    size_t i = (size_t)sender_index * PAIR_LANES + (size_t)lane;
    return (xp_shm_ring_t *)((char *)base + pair_hdr_bytes(nlocal) + i * pair_ring_bytes(cells));
}

/* Our pair object: one lane per (local sender, lane), headers only written
 * (the cells of unused lanes stay unallocated). Without it (XP_SHM_PAIR_RING_SIZE=0,
 * or no room) every packet goes through the inbox. */
static void create_pair(shm_tl_t *s)
{
    size_t want = xp_config()->shm_pair_ring_size / XP_SHM_CELL;
    uint32_t cells = PAIR_MIN_CELLS;
    int node = xp_node_of(s->rank);
    if (!want)
        return;
    while ((size_t)cells * 2 <= want && cells < (1u << 24))
        cells *= 2;
    for (int r = 0; r < s->size; r++)
        s->nlocal += xp_node_of(r) == node;
    size_t len = pair_bytes(cells, (uint32_t)s->nlocal);
    snprintf(s->pair_name, sizeof s->pair_name, "/xp-%s-%d-pair", xp_runtime_job_id(), s->rank);
    xp_status_t st;
    int fd = xp_shm_create_sized(s->pair_name, len, &st);
    if (fd < 0)
        return;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        xp_log_errno(XP_LOG_WARN, "shm: mmap of %zu bytes of pair lanes", len);
        shm_unlink(s->pair_name);
        return;
    }
    for (int i = 0; i < s->nlocal; i++)
        for (int lane = 0; lane < PAIR_LANES; lane++)
            xp_shm_ring_init_zeroed(pair_ring(m, cells, (uint32_t)s->nlocal, i, lane), cells);
    s->pair_base = m;
    s->pair_len = len;
    s->pair_cells = cells;
    s->linked_pair = 1;
}

/* Room for the rings we poll: the lanes peers have started to use (rx,
 * appended to by add_active_lanes), then the inbox. */
static xp_status_t collect_rx(shm_tl_t *s)
{
    size_t nlanes = s->pair_base ? (size_t)s->nlocal * PAIR_LANES : 0;
    s->rx = calloc(nlanes + 1, sizeof *s->rx);
    s->rx_listed = calloc(nlanes + 1, 1);
    if (!s->rx || !s->rx_listed)
        return XP_ERR_NO_MEMORY;
    if (s->pair_base)
        s->pair_gen = &((pair_hdr_t *)s->pair_base)->gen;
    return XP_OK;
}

/* Append the lanes that peers have activated since we last looked. Only
 * the poller runs it; readers of rx see a prefix (rx entries are written
 * before nrx grows). */
static void add_active_lanes(shm_tl_t *s)
{
    pair_hdr_t *h = s->pair_base;
    uint64_t gen = xp_load_acquire(&h->gen);
    int n = s->nrx, mine = local_index(s->rank);
    for (int i = 0; i < s->nlocal; i++)
        for (int lane = 0; i != mine && lane < PAIR_LANES; lane++) {
            int k = i * PAIR_LANES + lane;
            if (s->rx_listed[k] || !xp_load_acquire(&h->active[k]))
                continue;
            s->rx_listed[k] = 1;
            s->rx[n].gate = lane ? NULL : pair_ring(s->pair_base, s->pair_cells,
                                                    (uint32_t)s->nlocal, i, 1);
            s->rx[n++].ring = pair_ring(s->pair_base, s->pair_cells, (uint32_t)s->nlocal, i, lane);
        }
    xp_store_release(&s->nrx, n);
    xp_store_release(&s->rx_gen, gen);
}

/* Map the pair object `rank` published and take our two lanes in it. */
static void attach_pair(shm_tl_t *s, shm_peer_t *p, const shm_addr_t *addr)
{
    struct stat sb;
    if (!addr->pair_name[0] || addr->pair_cells < PAIR_MIN_CELLS ||
        (addr->pair_cells & (addr->pair_cells - 1)))
        return;
    size_t len = (size_t)addr->pair_size;
    int idx = local_index(s->rank);
    if (idx >= (int)addr->pair_nlocal || pair_bytes(addr->pair_cells, addr->pair_nlocal) != len)
        return;
    int fd = shm_open(addr->pair_name, O_RDWR, 0);
    if (fd < 0) {
        xp_log_errno(XP_LOG_WARN, "shm_open(%s) of a peer's pair lanes", addr->pair_name);
        return;
    }
    void *m = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size == len)
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    xp_shm_ring_t *req = pair_ring(m, addr->pair_cells, addr->pair_nlocal, idx, 0);
    xp_shm_ring_t *ans = pair_ring(m, addr->pair_cells, addr->pair_nlocal, idx, 1);
    size_t ring_len = pair_ring_bytes(addr->pair_cells);
    if (!xp_shm_ring_valid(req, ring_len) || !xp_shm_ring_valid(ans, ring_len)) {
        munmap(m, len);
        return;
    }
    p->pair_map = m;
    p->pair_len = len;
    p->ip.ring = req;
    p->ip.mask = req->ncells - 1;
    p->lane_ans = ans;
    p->lane_hdr = m;
    p->lane_index = idx * PAIR_LANES;
}

/* A mapped heap as the engine's window (xp_tl_window_t), `remote` being
 * where its owner mapped it. */
static xp_tl_window_t heap_window(const shm_tl_t *s, const xp_shmheap_t *h, uint64_t remote)
{
    return (xp_tl_window_t){ .base = h->base, .remote = remote, .size = h->size, .meta = h->meta,
                             .local_index = local_index(s->rank), .nlocal = xp_local_size(),
                             .asym = s->asym };
}

/* Map the segment `rank` published; failure leaves the peer unreachable. */
static void attach_peer(shm_tl_t *s, int rank)
{
    shm_addr_t addr;
    size_t len = sizeof addr;
    shm_peer_t *p = &s->peers[rank];
    if (xp_kv_get(rank, SHM_KV_KEY, &addr, &len) != XP_OK || len != sizeof addr) {
        xp_warn("shm: rank %d published no segment; it is unreachable through shm", rank);
        return;
    }
    addr.name[XP_SHM_NAME_MAX - 1] = '\0';
    if (xp_shm_seg_attach(addr.name, &p->seg) != XP_OK)
        return;
    p->ring = &p->seg.hdr->ring;
    p->ip.db = &p->seg.hdr->doorbell;
    p->pid = addr.pid;
    p->caps = XP_TL_CAP_SAME_NODE;
    p->ip.fence = !(s->asym && (p->seg.hdr->flags & XP_SHM_SEG_ASYM_FENCE));
    /* Probe single-copy access: read the peer's segment header where it mapped it. */
    uint64_t magic = 0;
    struct iovec l = {&magic, sizeof magic}, r = {(void *)(uintptr_t)addr.hdr_addr, sizeof magic};
    if (xp_cma_copy(addr.pid, 0, &l, 1, &r, 1) == XP_OK && magic == s->own.hdr->magic)
        p->caps |= XP_TL_CAP_RMA;
    else
        xp_info("shm: no process_vm_readv access to rank %d (pid %d)", rank, (int)addr.pid);
    addr.heap_name[XP_SHM_NAME_MAX - 1] = '\0';
    if (addr.heap_name[0] &&
        xp_shmheap_attach(addr.heap_name, (size_t)addr.heap_size, &p->heap) == XP_OK) {
        p->heap_remote = addr.heap_addr;
        p->win = heap_window(s, &p->heap, p->heap_remote);
    }
    addr.pair_name[XP_SHM_NAME_MAX - 1] = '\0';
    attach_pair(s, p, &addr);
    /* Where the lanes it sends us have their heads: whether we took one of
     * its packets since our last request (xp_tl_inplace_ahead). Not for
     * answers: each follows a packet taken, and a stream of ACKs, which
     * the initiator does not wait for, then lost the prefetch (8 B rate
     * 28-41 -> 25-30 M/s). */
    if (s->pair_base && p->ip.ring) {
        int j = local_index(rank);
        for (int lane = 0; lane < PAIR_LANES; lane++)
            p->ip.rx_head[lane] =
                &pair_ring(s->pair_base, s->pair_cells, (uint32_t)s->nlocal, j, lane)->head;
    }
}

/* The collective part of open: publish, fence, attach, barrier, unlink. Every
 * rank runs the same collectives even after a local failure, so that nobody hangs. */
static xp_status_t exchange(shm_tl_t *s, xp_status_t created)
{
    xp_status_t st = created;
    if (created == XP_OK) {
        shm_addr_t addr = {.pid = (int32_t)getpid(), .hdr_addr = (uintptr_t)s->own.hdr};
        snprintf(addr.name, sizeof addr.name, "%s", s->own.name);
        if (s->heap.base) {
            snprintf(addr.heap_name, sizeof addr.heap_name, "%s", s->heap.name);
            addr.heap_addr = (uintptr_t)s->heap.base;
            addr.heap_size = s->heap.size;
        }
        if (s->pair_base) {
            snprintf(addr.pair_name, sizeof addr.pair_name, "%s", s->pair_name);
            addr.pair_size = s->pair_len;
            addr.pair_cells = s->pair_cells;
            addr.pair_nlocal = (uint32_t)s->nlocal;
        }
        st = xp_kv_put(SHM_KV_KEY, &addr, sizeof addr);
    }
    xp_status_t fst = xp_kv_fence();
    if (st == XP_OK)
        st = fst;
    int node = xp_node_of(s->rank);
    for (int r = 0; st == XP_OK && r < s->size; r++)
        if (r != s->rank && xp_node_of(r) == node)
            attach_peer(s, r);
    xp_status_t bst = xp_barrier();
    if (created == XP_OK)
        xp_shm_seg_unlink(&s->own);
    if (s->heap.base)
        xp_shmheap_unlink(&s->heap);
    if (s->linked_pair) {
        shm_unlink(s->pair_name);
        s->linked_pair = 0;
    }
    return st == XP_OK ? bst : st;
}

static void shm_tl_close(xp_tl_t *tl)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    for (int r = 0; s->peers && r < s->size; r++)
        if (r != s->rank) {
            xp_shm_seg_close(&s->peers[r].seg);
            xp_shmheap_close(&s->peers[r].heap);
            if (s->peers[r].pair_map)
                munmap(s->peers[r].pair_map, s->peers[r].pair_len);
        }
    if (s->linked_pair)
        shm_unlink(s->pair_name);
    if (s->pair_base)
        munmap(s->pair_base, s->pair_len);
    free(s->rx);
    free(s->rx_listed);
    free(s->stage);
    xp_shm_bounce_fini(s);
    xp_shm_seg_close(&s->own);
    xp_shmheap_close(&s->heap);
    free(s->peers);
    free(s);
}

/* The CPUs that this process and the local peers it attached may run on,
 * as each recorded them in its segment: launchers bind ranks (xprun one CPU
 * each, round the CPUs of its own mask), so no one rank's mask tells. */
static long node_cpus_of(const shm_tl_t *s)
{
    long n = 0;
    for (int w = 0; w < XP_SHM_CPU_WORDS; w++) {
        uint64_t bits = s->own.hdr->cpus[w];
        for (int r = 0; r < s->size; r++)
            if (r != s->rank && s->peers[r].seg.hdr)
                bits |= s->peers[r].seg.hdr->cpus[w];
        n += __builtin_popcountll(bits);
    }
    return n;
}

static long shm_node_cpus(xp_tl_t *tl)
{
    return ((shm_tl_t *)tl)->node_cpus;
}

static xp_status_t shm_tl_open(const xp_tl_params_t *params, xp_tl_t **tl_out)
{
    if (!xp_initialized())
        return XP_ERR_NOT_INIT;
    shm_tl_t *s = aligned_alloc(XP_CACHE_LINE, sizeof *s);
    if (!s)
        return XP_ERR_NO_MEMORY;
    memset(s, 0, sizeof *s);
    s->params = params;
    s->rank = xp_rank();
    s->size = xp_size();
    s->peers = aligned_alloc(XP_CACHE_LINE, sizeof(shm_peer_t) * (size_t)s->size);
    if (!s->peers) {
        free(s);
        return XP_ERR_NO_MEMORY;
    }
    memset(s->peers, 0, sizeof(shm_peer_t) * (size_t)s->size);
    for (int r = 0; r < s->size; r++)
        s->peers[r].ip.src = s->rank;
    /* Let peers read/write our memory with process_vm_* under Yama (no-op elsewhere). */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    char name[XP_SHM_NAME_MAX];
    snprintf(name, sizeof name, "/xp-%s-%d", xp_runtime_job_id(), s->rank);
    xp_status_t st = xp_shm_seg_create(name, ring_cells(), &s->own);
    create_heap(s);
    xp_shm_bounce_init(s);
    create_pair(s);
    s->asym = xp_config()->shm_asym_fence && xp_membarrier_register();
    if (st == XP_OK && s->asym)
        s->own.hdr->flags |= XP_SHM_SEG_ASYM_FENCE;
    st = exchange(s, st);
    if (st == XP_OK)
        st = collect_rx(s);
    if (st == XP_OK)
        s->node_cpus = node_cpus_of(s);
    if (st == XP_OK) {
        size_t verdict = xp_shm_eager_probe(s);
        s->eager_max = xp_shm_eager_limit(s->bounce.single, verdict);
        xp_shm_bounce_mid(s, verdict);
    }
    if (st != XP_OK) {
        shm_tl_close((xp_tl_t *)s);
        return st;
    }
    s->inbox = &s->own.hdr->ring;
    /* Sharing a copy with a peer that may share our CPU gains nothing. */
    s->split_min = xp_tl_oversubscribed_seen(s->node_cpus) ? 0 : xp_config()->shm_split_min;
    s->split_chunk = xp_config()->shm_split_chunk;
    shm_peer_t *me = &s->peers[s->rank];
    me->ring = s->inbox;
    me->ip.db = &s->own.hdr->doorbell;
    me->pid = getpid();
    me->ip.fence = !s->asym;
    me->caps = XP_TL_CAP_SAME_NODE | XP_TL_CAP_RMA;
    me->heap_remote = (uintptr_t)s->heap.base;
    if (s->heap.base)
        s->own_win = heap_window(s, &s->heap, me->heap_remote);
    *tl_out = (xp_tl_t *)s;
    return XP_OK;
}

static int shm_reaches(xp_tl_t *tl, int rank)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    return rank >= 0 && rank < s->size && s->peers[rank].ring;
}

/* A full ring that nobody drains any more may mean the peer died; look at
 * most once per SHM_LIVENESS_NS per peer, since callers retry in a loop. */
int xp_shm_peer_gone(shm_peer_t *p)
{
    uint64_t now = xp_time_ns(), last = xp_load_relaxed(&p->checked_ns);
    if (now - last < SHM_LIVENESS_NS)
        return 0;
    xp_store_relaxed(&p->checked_ns, now);
    if (xp_pid_alive(p->pid))
        return 0;
    xp_shm_peer_mark_dead(p);
    return 1;
}

/* Before our first packet in lane k (0 requests, 1 answers) of peer p: tell
 * the peer to start polling it (once per lane and process lifetime). */
static void activate(shm_peer_t *p, int lane)
{
    pair_hdr_t *h = p->lane_hdr;
    xp_store_release(&h->active[p->lane_index + lane], (uint8_t)1);
    __atomic_add_fetch(&h->gen, 1, __ATOMIC_ACQ_REL);
}

/* After a push: ring the peer on success; a full ring may mean it died. */
static xp_status_t pushed(shm_peer_t *p, xp_status_t st)
{
    if (st == XP_OK) {
        xp_shm_doorbell_ring_fenced(p->ip.db, p->ip.fence);
        return XP_OK;
    }
    if (st == XP_ERR_AGAIN && xp_shm_peer_gone(p))
        return XP_ERR_PEER_DEAD;
    return st;
}

/* Has the peer handled everything up to position `end` of ring r? */
static inline int delivered(xp_shm_ring_t *r, uint64_t end)
{
    return (int64_t)(xp_load_acquire(&r->head) - end) >= 0;
}

/* A request of lane_req's owner thread. Requests other threads put in the
 * inbox before it (in happens-before order) must be handled first: wait
 * (AGAIN: the caller polls and retries) until the peer has. A plain load of
 * a line nobody writes while only the owner sends. (Our earlier answers
 * need no wait: the peer drains lane_ans before each lane_req packet.) */
static xp_status_t send_owner(shm_tl_t *s, shm_peer_t *p, const void *hdr, size_t hdr_len,
                              const void *data, size_t data_len)
{
    uint64_t other = xp_load_acquire(&p->ip.other_end);
    if (other != p->ip.owner_seen) {
        if (!delivered(p->ring, other))
            return pushed(p, XP_ERR_AGAIN);
        p->ip.owner_seen = other;
    }
    if (__builtin_expect(!p->req_on, 0)) {
        activate(p, 0);
        p->req_on = 1;
        xp_store_relaxed(&p->ip.owner, xp_thread_id());
    }
    return pushed(p, xp_shm_ring_push_single(p->ip.ring, &p->ip.cached_head, s->rank, hdr,
                                             hdr_len, data, data_len));
}

/* Is this thread lane_req's owner (claiming it if nobody is)? The value of a
 * thread that has exited may be reused by a new one, which is fine. */
static inline int is_owner(shm_peer_t *p)
{
    uintptr_t me = xp_thread_id(), owner = xp_load_relaxed(&p->req_owner);
    return __builtin_expect(owner == me, 1) || (!owner && xp_cas(&p->req_owner, &owner, me));
}

/* A request of any other thread: through the inbox (locked claim), once the
 * peer has handled what went through the lanes before it. */
static xp_status_t send_other(shm_tl_t *s, shm_peer_t *p, const void *hdr, size_t hdr_len,
                              const void *data, size_t data_len)
{
    uint64_t end, cur;
    if (!delivered(p->ip.ring, xp_load_acquire(&p->ip.ring->tail)) ||
        !delivered(p->lane_ans, xp_load_acquire(&p->lane_ans->tail)))
        return pushed(p, XP_ERR_AGAIN);
    xp_status_t st = xp_shm_ring_push_end(p->ring, &p->cached_head, s->rank, hdr, hdr_len, data,
                                          data_len, &end);
    if (st == XP_OK) {
        cur = xp_load_relaxed(&p->ip.other_end);
        while ((int64_t)(end - cur) > 0 && !xp_cas(&p->ip.other_end, &cur, end))
            ;
    }
    return pushed(p, st);
}

/* shm_send's cases other than the lane owner's common one. */
static __attribute__((noinline)) xp_status_t send_general(shm_tl_t *s, shm_peer_t *p,
                                                          const void *hdr, size_t hdr_len,
                                                          const void *data, size_t data_len)
{
    if (xp_load_relaxed(&p->ip.dead))
        return XP_ERR_PEER_DEAD;
    if (p->ip.ring)
        return is_owner(p) ? send_owner(s, p, hdr, hdr_len, data, data_len)
                           : send_other(s, p, hdr, hdr_len, data, data_len);
    return pushed(p, xp_shm_ring_push(p->ring, &p->cached_head, s->rank, hdr, hdr_len, data,
                                      data_len));
}

static xp_status_t shm_send(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                            const void *data, size_t data_len)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    shm_peer_t *p = &s->peers[rank];
    /* No size check here: transport.c's send_route checked hdr_len +
     * data_len against this route's max_packet (SHM_MAX_PACKET) already
     * (xp_tl_route_send's callers do), and the ring's push checks its own
     * limit too. The common case is send_owner's with the lane announced
     * and nothing of other threads' waiting in the inbox, in one compare
     * of the owner and a load of other_end; the rest goes out of line. */
    if (__builtin_expect(xp_load_relaxed(&p->ip.owner) == xp_thread_id() && /* not dead */
                             xp_load_acquire(&p->ip.other_end) == p->ip.owner_seen &&
                             xp_shm_ring_try_push_single_ahead(
                                 p->ip.ring, &p->ip.cached_head, xp_tl_inplace_ahead(&p->ip),
                                 s->rank, hdr, hdr_len, data, data_len),
                         1)) {
        xp_shm_doorbell_ring_fenced(p->ip.db, p->ip.fence);
        return XP_OK;
    }
    /* (A full or wrapping lane too: send_general pushes again, slowly.) */
    return send_general(s, p, hdr, hdr_len, data, data_len);
}

/* Answers: the engine serialises these callers (its poll lock), so they
 * share lane_ans, whichever thread polls. (Our earlier requests are not
 * waited for: an answer is caused by a packet of the peer's, not by them.) */
static __attribute__((noinline)) xp_status_t send_excl_general(xp_tl_t *tl, int rank,
                                                               const void *hdr, size_t hdr_len,
                                                               const void *data,
                                                               size_t data_len)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    shm_peer_t *p = &s->peers[rank];
    if (!p->lane_ans)
        return shm_send(tl, rank, hdr, hdr_len, data, data_len);
    if (xp_load_relaxed(&p->ip.dead))
        return XP_ERR_PEER_DEAD;
    if (!p->ans_on) {
        activate(p, 1);
        p->ans_on = 1;
        /* From now on in place too (the caller is serialised with every
         * other answer sender, in place or not). */
        p->ans.ring = p->lane_ans;
        p->ans.mask = p->lane_ans->ncells - 1;
        p->ans.db = p->ip.db;
        p->ans.fence = p->ip.fence;
        p->ans.src = s->rank;
        xp_store_relaxed(&p->ans.owner, XP_TL_INPLACE_ANY);
    }
    return pushed(p, xp_shm_ring_push_single(p->lane_ans, &p->ans.cached_head, s->rank, hdr,
                                             hdr_len, data, data_len));
}

static xp_status_t shm_send_excl(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                                 const void *data, size_t data_len)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    shm_peer_t *p = &s->peers[rank];
    /* No size check: as for shm_send, the route's was made. The common
     * case: the answer lane is announced already. */
    if (__builtin_expect(p->ans_on && !xp_load_relaxed(&p->ip.dead) &&
                             xp_shm_ring_try_push_single(p->lane_ans, &p->ans.cached_head,
                                                         s->rank, hdr, hdr_len, data, data_len),
                         1)) {
        xp_shm_doorbell_ring_fenced(p->ip.db, p->ip.fence);
        return XP_OK;
    }
    return send_excl_general(tl, rank, hdr, hdr_len, data, data_len);
}

/* A peer has started to use a lane we do not poll yet. */
static inline int lanes_added(const shm_tl_t *s)
{
    return s->pair_gen && xp_load_relaxed(s->pair_gen) != xp_load_relaxed(&s->rx_gen);
}

/* shm_pending's hints (for shm_poll_hint): lane i of rx, or everything
 * (the inbox, lanes to add). */
#define HINT_ALL 1
#define HINT_LANE 2

/* Looks at the lanes from rx_next on, then the inbox, then the lanes
 * before rx_next: shm_poll_hint, which delivers from one lane only, moves
 * rx_next past the lane it served, so that a lane that never runs dry does
 * not hide the others. */
static int shm_pending(xp_tl_t *tl)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    const rx_lane_t *rx = s->rx;
    int n = xp_load_acquire(&s->nrx), start = xp_load_relaxed(&s->rx_next), i;
    for (i = start; i < n; i++)
        if (xp_shm_ring_pending(rx[i].ring))
            return HINT_LANE + i;
    if (xp_shm_ring_pending(s->inbox) || lanes_added(s))
        return HINT_ALL;
    for (i = 0; i < start && i < n; i++)
        if (xp_shm_ring_pending(rx[i].ring))
            return HINT_LANE + i;
    return 0;
}

/* Packets from peers go to the engine; negative sources are our own
 * requests (xp_shm_split_help). Inlined into the ring's take
 * (xp_shm_ring_take). */
static inline void shm_deliver(void *arg, int src, const void *pkt, size_t len)
{
    shm_tl_t *s = arg;
    /* Per packet, not per poll (ThreadSanitizer builds only): one poll may
     * run long enough to take packets sent in reaction to messages our
     * other threads sent after it began (util/tsan.h). */
    xp_tsan_message_in();
    if (__builtin_expect(src >= 0, 1))
        s->params->recv(s->params->recv_arg, src, pkt, len);
    else
        xp_shm_split_help(s, -2 - src, pkt, len);
}

/* Up to budget packets of one lane. For a request lane, whatever its
 * sender's answer lane (gate) holds goes first, before each request: an
 * answer sent before a request, in happens-before order, is handled before
 * it. A corrupt ring stops the lane (nothing of this sender is delivered
 * any more). */
static __attribute__((noinline)) int poll_lane(shm_tl_t *s, xp_shm_ring_t *r,
                                               xp_shm_ring_t *gate, int budget)
{
    int n = 0, got;
    while (n < budget) {
        got = xp_shm_ring_take_gated(r, shm_deliver, s, gate);
        if (got == XP_SHM_RING_GATED)
            got = xp_shm_ring_take(gate, shm_deliver, s); /* 0: padding only */
        else if (got == 0)
            break;
        if (got < 0)
            break; /* corrupt: nothing of this sender is delivered any more */
        n += got;
    }
    return n;
}

/* A peer's first packet in a lane we do not poll yet. */
static __attribute__((noinline, cold)) void add_lanes(shm_tl_t *s)
{
    add_active_lanes(s);
}

/* The consumer's work; the caller is the only consumer now. Every ring in
 * turn: their relative order does not matter, senders keep causal order
 * themselves (shm_send). An empty ring costs one look at its head cell. A
 * request lane's gate is polled by poll_lane only when the lane has a
 * packet: otherwise the gate, which is active once it holds one, is polled
 * as a lane of its own. */
static int poll_all(shm_tl_t *s, int budget)
{
    int n = 0;
    if (__builtin_expect(lanes_added(s), 0))
        add_lanes(s);
    const rx_lane_t *rx = s->rx;
    for (int i = 0, nrx = s->nrx; i < nrx; i++) {
        if (!xp_shm_ring_pending(rx[i].ring))
            continue;
        n += poll_lane(s, rx[i].ring, rx[i].gate, budget - n);
        if (n >= budget)
            return n;
    }
    if (xp_shm_ring_pending(s->inbox))
        n += poll_lane(s, s->inbox, NULL, budget - n);
    return n;
}

static int shm_poll(xp_tl_t *tl, int budget)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    if (!shm_pending(tl) || __atomic_exchange_n(&s->polling, 1, __ATOMIC_ACQUIRE))
        return 0;
    int n = poll_all(s, budget);
    __atomic_store_n(&s->polling, 0, __ATOMIC_RELEASE);
    return n;
}

/* shm_poll_excl given shm_pending's hint: only the lane where it saw a
 * packet (a waiter's packet reaches the handler without a look at every
 * other ring, before or after it); the next look starts after it. */
static int shm_poll_hint(xp_tl_t *tl, int budget, int hint)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    int i = hint - HINT_LANE;
    if (i < 0 || i >= s->nrx)
        return poll_all(s, budget);
    if (s->rx_next != i + 1)
        xp_store_relaxed(&s->rx_next, i + 1);
    xp_shm_ring_t *r = s->rx[i].ring, *gate = s->rx[i].gate;
    /* The common case, one packet and nothing behind it, without
     * poll_lane's loop and frame; the rest (a gate to drain first, more
     * packets, padding, a corrupt ring) goes there. */
    int got = xp_shm_ring_take_gated(r, shm_deliver, s, gate);
    if (__builtin_expect(got == 1, 1))
        return xp_shm_ring_pending(r) ? 1 + poll_lane(s, r, gate, budget - 1) : 1;
    return got == XP_SHM_RING_GATED ? poll_lane(s, r, gate, budget) : 0;
}

/* The engine's poll (its poll lock held, no other consumer): no trylock.
 * `polling` stays 0, so a stray xp_tl_progress at the same time would not
 * be kept out: the engine is the only caller of either in the library. */
static int shm_poll_excl(xp_tl_t *tl, int budget)
{
    return poll_all((shm_tl_t *)tl, budget);
}

static xp_status_t shm_readv(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                             const struct iovec *remote, int nremote)
{
    return xp_shm_rma((shm_tl_t *)tl, rank, 0, local, nlocal, remote, nremote);
}

static xp_status_t shm_writev(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                              const struct iovec *remote, int nremote)
{
    return xp_shm_rma((shm_tl_t *)tl, rank, 1, local, nlocal, remote, nremote);
}

static xp_doorbell_t *shm_doorbell(xp_tl_t *tl)
{
    return &((shm_tl_t *)tl)->own.hdr->doorbell;
}

/* The sleeper's half of the asymmetric fence (see xp_shm_doorbell_ring_fenced). */
static void shm_before_sleep(xp_tl_t *tl)
{
    if (((shm_tl_t *)tl)->asym)
        xp_membarrier_global();
}

static uint32_t shm_peer_caps(xp_tl_t *tl, int rank)
{
    return ((shm_tl_t *)tl)->peers[rank].caps;
}

/* Larger payloads need another way than packets: RMA to that peer. */
static size_t shm_eager_max(xp_tl_t *tl, int rank)
{
    const shm_tl_t *s = (const shm_tl_t *)tl;
    return s->peers[rank].caps & XP_TL_CAP_RMA ? s->eager_max : SIZE_MAX;
}

/* The request lane's state: its owner thread fills it in place once
 * shm_send has announced it (ip.owner); before that, and for every other
 * thread, the in-place reserve says no and shm_send takes the packet. */
static xp_tl_inplace_t *shm_inplace(xp_tl_t *tl, int rank)
{
    return &((shm_tl_t *)tl)->peers[rank].ip;
}

/* The answer lane's state: filled in place once send_excl has announced
 * it (ans.owner), by the caller send_excl's callers are serialised with. */
static xp_tl_inplace_t *shm_inplace_excl(xp_tl_t *tl, int rank)
{
    return &((shm_tl_t *)tl)->peers[rank].ans;
}

/* A peer's heap as the engine's window (its own with rank -1). */
static const xp_tl_window_t *shm_window(xp_tl_t *tl, int rank)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    if (rank < 0)
        return s->own_win.base ? &s->own_win : NULL;
    if (rank >= s->size || rank == s->rank)
        return NULL;
    return s->peers[rank].win.base ? &s->peers[rank].win : NULL;
}

/* Has the peer handled every request we sent it? Our requests go through
 * lane_req (its tail) and, from other threads, the inbox (other_end, the
 * end of the last one there); the peer releases a packet's cells only after
 * its handler has returned (xp_shm_ring_take_gated), so its head passing
 * both means each has been handled. Without lanes, inbox sends record no
 * end: never quiet. */
static int shm_quiet(xp_tl_t *tl, int rank)
{
    shm_peer_t *p = &((shm_tl_t *)tl)->peers[rank];
    if (!p->ip.ring || xp_load_relaxed(&p->ip.dead))
        return 0;
    uint64_t tail = xp_load_acquire(&p->ip.ring->tail);
    uint64_t other = xp_load_acquire(&p->ip.other_end);
    if (__builtin_expect(tail == xp_load_relaxed(&p->quiet_tail) &&
                             other == xp_load_relaxed(&p->quiet_other),
                         1))
        return 1;
    if (!delivered(p->ip.ring, tail) || !delivered(p->ring, other))
        return 0;
    xp_store_relaxed(&p->quiet_tail, tail);
    xp_store_relaxed(&p->quiet_other, other);
    return 1;
}

/* Has a peer that maps our heap died? (Every reachable local peer does.) */
static int shm_peers_lost(xp_tl_t *tl)
{
    shm_tl_t *s = (shm_tl_t *)tl;
    for (int r = 0; r < s->size; r++) {
        shm_peer_t *p = &s->peers[r];
        if (r != s->rank && p->ring && p->pid > 0 && !xp_pid_alive(p->pid))
            return 1;
    }
    return 0;
}

xp_shmheap_t *xp_shm_heap(void)
{
    shm_tl_t *s = (shm_tl_t *)xp_tl_instance(&xp_tl_shm_ops);
    return s && s->heap.base ? &s->heap : NULL;
}

void xp_shm_heap_reclaim(void)
{
    shm_tl_t *s = (shm_tl_t *)xp_tl_instance(&xp_tl_shm_ops);
    if (s)
        xp_shm_bounce_reclaim(s);
}

const xp_tl_ops_t xp_tl_shm_ops = {
    .size = sizeof(xp_tl_ops_t),
    .name = "shm",
    .caps = XP_TL_CAP_RMA | XP_TL_CAP_SAME_NODE,
    .max_packet = SHM_MAX_PACKET,
    .open = shm_tl_open,
    .close = shm_tl_close,
    .reaches = shm_reaches,
    .send = shm_send,
    .poll = shm_poll,
    .poll_excl = shm_poll_excl,
    .readv = shm_readv,
    .writev = shm_writev,
    .pending = shm_pending,
    .doorbell = shm_doorbell,
    .peer_caps = shm_peer_caps,
    .before_sleep = shm_before_sleep,
    .send_excl = shm_send_excl,
    .inplace = shm_inplace,
    .poll_hint = shm_poll_hint,
    .inplace_excl = shm_inplace_excl,
    .bounce_alloc = xp_shm_bounce_alloc,
    .bounce_done = xp_shm_bounce_done,
    .direct = xp_shm_direct,
    .bounce_fill = xp_shm_bounce_fill,
    .bounce_read = xp_shm_bounce_read,
    .bounce_max = xp_shm_bounce_max,
    .eager_max = shm_eager_max,
    .node_cpus = shm_node_cpus,
    .window = shm_window,
    .quiet = shm_quiet,
    .peers_lost = shm_peers_lost,
};
