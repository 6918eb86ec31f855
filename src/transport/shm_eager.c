/*
 * transport/shm_eager.c - the node's eager limit, measured.
 *
 * Above the eager limit a put or get moves by one process_vm_readv/writev
 * (where single copies were chosen); below it, in ring packets: a memcpy in
 * by the sender and a memcpy out by the receiver, whose lines travel from
 * one core to the other. Which is faster at 8-32 KiB depends on the machine
 * and cannot be timed by one process alone: on the AMD EPYC VM of round 28
 * the packets took 0.70 / 1.26 us at 8 / 16 KiB against 2.37 / 3.06 by
 * single copy, on the H100 machine's Xeon 2.7-2.9 / 4.5-5.5 against
 * 1.8-2.1 / 1.7-2.8 (docs/performance-notes.md). So, where XP_SHM_EAGER_MAX
 * or XP_SHM_BOUNCE is auto, the node's first two local ranks time both at
 * 8, 16 and 32 KiB right after the segments are exchanged (~0.5 ms): the
 * first (the prober) copies into its segment's probe buffer, or only
 * pings, and the second (the echo) copies the bytes out of that buffer, or
 * reads them from the prober's private source with process_vm_readv, and
 * answers; each with a source the prober has not written since its last
 * send and with one it writes just before. Both kinds of round trip have
 * the same two line transfers for the ping and the pong, so their
 * difference is the copies'. The prober publishes the verdict; every local
 * rank takes it (a rank that chose bounce blocks keeps a whole packet).
 * Where copies through memory won at 32 KiB too, bounce blocks (two such
 * copies, through the sender's heap) are also faster than single copies
 * above a packet, up to where single copies are shared by both CPUs
 * (shm_bounce.c, xp_shm_bounce_mid).
 *
 * Nothing here can hang or fail open: every wait has a deadline, after
 * which the prober gives XP_SHM_AUTO_EAGER_MAX as its verdict and the
 * others take that (ranks may end with different limits, which the engine
 * allows: each sender picks its own path). A node with more local ranks
 * than CPUs runs no probe (its timings would be of the scheduler), unless
 * XP_SHM_EAGER_PROBE=on; XP_SHM_EAGER_PROBE=off runs none anywhere.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "transport/shm_internal.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/copy.h"
#include "util/log.h"

#define PROBE_SIZES 3      /* XP_SHM_PROBE_SIZE0 << 0 .. 2: 8, 16 and 32 KiB */
#define PROBE_ROUNDS 9     /* timed round trips per kind and size (plus one warm-up) */
#define PROBE_WAIT_MS 50   /* longest wait of prober and echo for each other, each time */
#define VERDICT_WAIT_MS 2000 /* longest wait for the verdict (normally < 1 ms) */
#define PROBE_SPINS 4096   /* polls before a waiter also yields its CPU */
#define PROBE_END 0xffu    /* ping: no more round trips */

/* ping's low byte: the size index times four; plus 1 for a single copy
 * (else through memory), plus 2 where the prober writes its source just
 * before (the data just produced; else untouched since its last send). */
enum { K_SINGLE = 1, K_TOUCHED = 2, KINDS = 4 * PROBE_SIZES };

static inline size_t kind_len(unsigned k)
{
    return (size_t)XP_SHM_PROBE_SIZE0 << (k >> 2);
}

size_t xp_shm_eager_pick(const double *ring, const double *single, int n)
{
    size_t limit = XP_SHM_AUTO_EAGER_MAX;
    for (int i = 0; i < n && ring[i] < single[i]; i++)
        limit = (size_t)XP_SHM_PROBE_SIZE0 << i;
    return limit;
}

size_t xp_shm_eager_verdict(uint64_t word)
{
    size_t limit = (size_t)(word & ~XP_SHM_VERDICT_DONE);
    if (!(word & XP_SHM_VERDICT_DONE))
        return XP_SHM_AUTO_EAGER_MAX;
    for (int i = 0; i < PROBE_SIZES; i++)
        if (limit == (size_t)XP_SHM_PROBE_SIZE0 << i)
            return limit;
    return XP_SHM_AUTO_EAGER_MAX;
}

/* Spin until *w differs from `old` (returns the new value) or the deadline
 * passes (returns `old`). Yields after a while: the other side may share
 * our CPU. */
static uint64_t wait_change(const uint64_t *w, uint64_t old, uint64_t deadline)
{
    for (unsigned spins = 0;; spins++) {
        uint64_t v = xp_load_acquire(w);
        if (v != old)
            return v;
        if (spins >= PROBE_SPINS && !(spins & 255)) {
            if (xp_time_ns() > deadline)
                return old;
            sched_yield();
        }
        xp_cpu_relax();
    }
}

static uint64_t deadline(void)
{
    return xp_deadline_ns(PROBE_WAIT_MS);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One round trip of kind k from src (private to the prober; where the echo
 * reads it, a->src), timed from before the prober writes (touched kinds),
 * copies (through memory) or pings (single copies) to the echo's answer;
 * < 0 when the echo failed or is gone. */
static double round_trip(xp_shm_probe_area_t *a, unsigned char *src, uint32_t seq, unsigned k)
{
    size_t len = kind_len(k);
    uint64_t t0 = xp_time_ns();
    if (k & K_TOUCHED)
        memset(src, (int)(seq & 0xff), len);
    if (!(k & K_SINGLE))
        xp_copy(a->buf, src, len);
    uint64_t old = xp_load_relaxed(&a->pong);
    xp_store_release(&a->ping, (uint64_t)seq << 32 | k);
    uint64_t v = wait_change(&a->pong, old, deadline());
    uint64_t t1 = xp_time_ns();
    if (v >> 32 != seq || (uint32_t)v != 0)
        return -1;
    return (double)(t1 - t0);
}

/* The prober's last word: the verdict for every local rank, then the end
 * for the echo (seq: past every ping sent). */
static size_t publish(xp_shm_probe_area_t *a, size_t verdict, uint32_t seq)
{
    xp_store_release(&a->verdict, XP_SHM_VERDICT_DONE | verdict);
    xp_store_release(&a->ping, (uint64_t)seq << 32 | PROBE_END);
    return verdict;
}

/* The median of each kind's PROBE_ROUNDS times (sorts them). */
static double median_of(double *t)
{
    qsort(t, PROBE_ROUNDS, sizeof t[0], cmp_double);
    return t[PROBE_ROUNDS / 2];
}

/* The prober's side: the verdict, or XP_SHM_AUTO_EAGER_MAX where the echo
 * did not take part. Each size's cost by a path is the sum of its medians
 * with untouched and with touched data, weighing both uses alike: a
 * single copy reads the sender's lines into the reader's cache, and on
 * the AMD EPYC VM the sender's next memset of 32 KiB there took ~30 times
 * as long (a 32 KiB ping-pong 24-26 us against 4-5 untouched, round 29),
 * where through memory the sender's data stays its own. */
static size_t probe(xp_shm_probe_area_t *a, int echo_rank)
{
    double t[KINDS][PROBE_ROUNDS];
    unsigned char *mem = aligned_alloc(XP_CACHE_LINE, 2 * (size_t)XP_SHM_PROBE_MAX);
    size_t verdict = XP_SHM_AUTO_EAGER_MAX;
    uint32_t seq = 1; /* 1 is the echo's "ready" */
    if (!mem) /* (the others must not wait out their deadlines) */
        return publish(a, verdict, ++seq);
    unsigned char *src[2] = {mem, mem + XP_SHM_PROBE_MAX}; /* through memory, single */
    memset(mem, 0x5a, 2 * (size_t)XP_SHM_PROBE_MAX);
    xp_store_relaxed(&a->src, (uint64_t)(uintptr_t)src[1]);
    if (wait_change(&a->pong, 0, deadline()) != (uint64_t)1 << 32)
        goto out;
    /* Round 0 warms the buffers up (first touches); kinds rotate so that
     * none always follows the same one. */
    for (int r = 0; r <= PROBE_ROUNDS; r++)
        for (unsigned j = 0; j < KINDS; j++) {
            unsigned k = (j + (unsigned)r) % KINDS;
            double ns = round_trip(a, src[k & K_SINGLE], ++seq, k);
            if (ns < 0)
                goto out;
            if (r)
                t[k][r - 1] = ns;
        }
    double m[KINDS], ring[PROBE_SIZES], single[PROBE_SIZES];
    for (unsigned k = 0; k < KINDS; k++)
        m[k] = median_of(t[k]);
    for (int i = 0; i < PROBE_SIZES; i++) {
        ring[i] = m[4 * i] + m[4 * i + K_TOUCHED];
        single[i] = m[4 * i + K_SINGLE] + m[4 * i + K_SINGLE + K_TOUCHED];
    }
    verdict = xp_shm_eager_pick(ring, single, PROBE_SIZES);
    xp_info("shm: eager probe with rank %d, round trips (ns) 8 / 16 / 32 KiB, untouched + "
            "touched: through memory %.0f+%.0f / %.0f+%.0f / %.0f+%.0f, single copy "
            "%.0f+%.0f / %.0f+%.0f / %.0f+%.0f: eager limit %zu",
            echo_rank, m[0], m[2], m[4], m[6], m[8], m[10], m[1], m[3], m[5], m[7], m[9], m[11],
            verdict);
out:
    free(mem);
    return publish(a, verdict, ++seq);
}

/* The echo's side: answer each ping until the end, a failure or silence. */
static void echo(xp_shm_probe_area_t *a, pid_t prober)
{
    unsigned char *dst = aligned_alloc(XP_CACHE_LINE, XP_SHM_PROBE_MAX);
    uint64_t ping = 0;
    xp_store_release(&a->pong, (uint64_t)1 << 32);
    for (;;) {
        uint64_t v = wait_change(&a->ping, ping, deadline());
        if (v == ping || (uint8_t)v == PROBE_END)
            break;
        ping = v;
        unsigned k = (uint8_t)v;
        size_t len = kind_len(k);
        uint32_t status = !dst || k >= KINDS;
        if (!status && !(k & K_SINGLE)) {
            xp_copy(dst, a->buf, len);
            xp_shm_own_lines(a->buf, 0, len); /* as a ring's reader does */
        } else if (!status) {
            struct iovec l = {dst, len};
            struct iovec r = {(void *)(uintptr_t)xp_load_relaxed(&a->src), len};
            status = xp_cma_copy(prober, 0, &l, 1, &r, 1) != XP_OK;
        }
        xp_store_release(&a->pong, (v >> 32) << 32 | status);
        if (status)
            break;
    }
    free(dst);
}

/* The first two local ranks' global ranks (-1: none). */
static void leaders(const shm_tl_t *s, int *first, int *second)
{
    int node = xp_node_of(s->rank);
    *first = *second = -1;
    for (int r = 0; r < s->size && *second < 0; r++)
        if (xp_node_of(r) == node)
            *(*first < 0 ? first : second) = r;
}

size_t xp_shm_eager_probe(shm_tl_t *s)
{
    int first, second;
    const xp_config_t *c = xp_config();
    int skip = (c->shm_eager_max && c->shm_bounce != XP_SHM_BOUNCE_AUTO) ||
               c->shm_eager_probe == XP_SHM_PROBE_OFF ||
               (c->shm_eager_probe == XP_SHM_PROBE_AUTO && xp_tl_oversubscribed_seen(s->node_cpus));
    if (xp_local_size() < 2)
        return XP_SHM_AUTO_EAGER_MAX;
    leaders(s, &first, &second);
    if (second < 0 || (first != s->rank && !s->peers[first].seg.hdr))
        return XP_SHM_AUTO_EAGER_MAX;
    xp_shm_seg_hdr_t *h = first == s->rank ? s->own.hdr : s->peers[first].seg.hdr;
    xp_shm_probe_area_t *a = &h->probe;
    if (s->rank == first && skip) {
        /* (a rank whose settings differ from ours waits for nothing) */
        return publish(a, XP_SHM_AUTO_EAGER_MAX, 2);
    }
    if (skip)
        return XP_SHM_AUTO_EAGER_MAX;
    if (s->rank == first)
        return probe(a, second);
    if (s->rank == second)
        echo(a, s->peers[first].pid);
    /* Everybody (the echo too) takes the published verdict, which the
     * prober gives within its own deadlines; the long wait here only keeps
     * a loaded machine from splitting the node's choice. */
    size_t limit =
        xp_shm_eager_verdict(wait_change(&a->verdict, 0, xp_deadline_ns(VERDICT_WAIT_MS)));
    xp_debug("shm: eager limit %zu (the probe of rank %d)", limit, first);
    return limit;
}
