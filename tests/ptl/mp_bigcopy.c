/*
 * mp_bigcopy - large puts and gets between processes, every byte checked.
 *
 * Each rank puts to its right neighbour and gets from it: sizes around the
 * shm split-copy threshold and chunk size (odd ones included), all in flight
 * at once, with contiguous and PTL_IOVEC MDs and LEs, while the target waits
 * in PtlCTWait (polls, then sleeps) or is busy outside Portals (sleeps), in
 * whichever progress mode XP_PROGRESS selects; in one round more threads
 * wait on the same counter for different thresholds (a counter wakes only
 * the sleepers whose threshold it reached: none may be left asleep).
 *
 * The local offsets lie 1000 + k bytes past the remote ones, so a put's
 * destination is 19..24 bytes into its line past its source's position and
 * a get's 40..45. MP_BIGCOPY_SHIFT moves them: -32 makes the gets' 8..13 and
 * -48 the puts' 3..8, the relative alignments the shm transport stages
 * through its own buffer (shm_split.c, cma_copy); with --die, -56 makes the
 * puts that the dying initiator leaves behind staged ones.
 *
 * With --die (2 ranks): rank 0 posts large puts to rank 1 and exits in the
 * middle of them, while its threads may be copying a share of them; rank 1
 * must see every put counted as a success or a failure within seconds.
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_offsets.h"
#include "xp_test.h"
#include "xportals/xp.h"

#define PT_PUT 5     /* contiguous entry over tgt */
#define PT_PUT_IOV 6 /* the same memory as three odd-sized segments */
#define PT_GET 7     /* contiguous entry over gsrc */
#define PT_GET_IOV 8
#define BUF (16u << 20)
#define WAIT_MS 20000
#define NSEG 3

static const size_t sizes[] = {(128u << 10) + 5, (512u << 10) + 1, 1u << 20, (2u << 20) + 4097, (4u << 20) - 7,
                               (6u << 20) + 12345};
enum { NOPS = sizeof sizes / sizeof sizes[0] };

typedef struct ctx {
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct_t, ct_i; /* target side (entries), initiator side (MDs) */
    ptl_process_t right;
    int rank, left, n;
    unsigned char *tgt, *src, *gsrc, *gdst, *want;
    ptl_iovec_t tgt_iov[NSEG], src_iov[NSEG], gsrc_iov[NSEG], gdst_iov[NSEG];
    ptl_size_t ct_t_seen, ct_i_seen;
} ctx_t;

static unsigned char byte_of(unsigned seed, size_t i)
{
    return (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = byte_of(seed, i);
}

/* Three segments of odd lengths covering buf[0, BUF). */
static void split3(ptl_iovec_t *iov, unsigned char *buf)
{
    size_t a = (3u << 20) + 333, b = (5u << 20) + 77;
    iov[0] = (ptl_iovec_t){buf, a};
    iov[1] = (ptl_iovec_t){buf + a, b};
    iov[2] = (ptl_iovec_t){buf + a + b, BUF - a - b};
}

/* Offsets of operation k (test_offsets.h); MP_BIGCOPY_SHIFT=-N moves every
 * local offset N bytes down (main reads it). */
static long shift;
static size_t roff_of(int k) { return xp_test_roff(sizes, k); }
static size_t loff_of(int k) { return (size_t)((long)xp_test_loff(sizes, k) + shift); }

static void wait_ct(ptl_handle_ct_t ct, ptl_size_t *seen, ptl_size_t add, const char *what)
{
    ptl_ct_event_t v;
    unsigned which;
    *seen += add;
    int rc = PtlCTPoll(&ct, seen, 1, WAIT_MS, &v, &which);
    if (rc != PTL_OK || v.failure || v.success != *seen)
        fprintf(stderr, "rank %d: %s: rc %d, success %llu of %llu, failure %llu\n", xp_rank(),
                what, rc, (unsigned long long)v.success, (unsigned long long)*seen,
                (unsigned long long)v.failure);
    XP_REQUIRE(rc == PTL_OK);
    XP_CHECK_EQ(v.failure, 0);
    XP_CHECK_EQ(v.success, *seen);
}

static void append(ctx_t *c, ptl_pt_index_t pt, void *start, ptl_size_t len, unsigned opts)
{
    ptl_handle_le_t h;
    ptl_le_t le = {.start = start, .length = len, .ct_handle = c->ct_t, .uid = PTL_UID_ANY,
                   .options = opts | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_LINK_DISABLE |
                              PTL_LE_EVENT_SUCCESS_DISABLE};
    ptl_pt_index_t got;
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, PTL_EQ_NONE, pt, &got) == PTL_OK);
    XP_REQUIRE(PtlLEAppend(c->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
}

static ptl_handle_md_t bind(ctx_t *c, void *start, ptl_size_t len, unsigned opts)
{
    ptl_handle_md_t h;
    ptl_md_t md = {.start = start, .length = len, .options = opts, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = c->ct_i};
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    return h;
}

static void check_bytes(const unsigned char *got, size_t off, size_t n, unsigned seed,
                        size_t seed_off, const char *what, int k)
{
    for (size_t i = 0; i < n; i++)
        if (got[off + i] != byte_of(seed, seed_off + i)) {
            fprintf(stderr, "rank %d: %s %d (%zu bytes): byte %zu is %u, want %u\n", xp_rank(),
                    what, k, n, i, got[off + i], byte_of(seed, seed_off + i));
            XP_CHECK(0);
            return;
        }
}

typedef struct waiter {
    pthread_t thread;
    ptl_handle_ct_t ct;
    ptl_size_t test;
    int rc;
    double seconds; /* how long the wait took */
} waiter_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *waiter_main(void *arg)
{
    waiter_t *w = arg;
    ptl_ct_event_t v;
    unsigned which;
    double t0 = now_s();
    w->rc = PtlCTPoll(&w->ct, &w->test, 1, WAIT_MS, &v, &which);
    w->seconds = now_s() - t0;
    return NULL;
}

enum { NWAITERS = 3 };
#define WAKE_S 5.0

/* Threads waiting for the first, the second and the last put of a round. */
static void waiters_start(ctx_t *c, waiter_t *w)
{
    ptl_size_t add[NWAITERS] = {1, 2, NOPS};
    for (int i = 0; i < NWAITERS; i++) {
        w[i] = (waiter_t){.ct = c->ct_t, .test = c->ct_t_seen + add[i], .rc = -1};
        XP_REQUIRE(pthread_create(&w[i].thread, NULL, waiter_main, &w[i]) == 0);
    }
}

/* A sleeper that nobody woke still sees its count when its sleep times
 * out, so a lost wake-up shows as time: the puts take milliseconds. */
static void waiters_join(waiter_t *w)
{
    for (int i = 0; i < NWAITERS; i++) {
        pthread_join(w[i].thread, NULL);
        XP_CHECK_EQ(w[i].rc, PTL_OK);
        if (w[i].seconds > WAKE_S)
            fprintf(stderr, "rank %d: waiter %d (count %llu) took %.1f s: not woken\n",
                    xp_rank(), i, (unsigned long long)w[i].test, w[i].seconds);
        XP_CHECK(w[i].seconds <= WAKE_S);
    }
}

/* One round of puts to the right neighbour; the left one's land in tgt. */
static void put_round(ctx_t *c, int md_iov, int le_iov, int target_busy, int waiters)
{
    waiter_t w[NWAITERS];
    ptl_handle_md_t md = md_iov ? bind(c, c->src_iov, NSEG, PTL_IOVEC | PTL_MD_EVENT_CT_ACK)
                                : bind(c, c->src, BUF, PTL_MD_EVENT_CT_ACK);
    memset(c->tgt, 0, BUF);
    if (waiters)
        waiters_start(c, w);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* With waiters, no acknowledgements (an arriving ACK would wake every
     * sleeper of the process and hide a counter that fails to), and the
     * puts come once the waiters have stopped spinning and sleep. */
    if (waiters)
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    for (int k = 0; k < NOPS; k++)
        XP_CHECK_EQ(PtlPut(md, loff_of(k), sizes[k], waiters ? PTL_NO_ACK_REQ : PTL_CT_ACK_REQ, c->right,
                           le_iov ? PT_PUT_IOV : PT_PUT, 0, roff_of(k), NULL, 0),
                    PTL_OK);
    if (target_busy) /* outside Portals while the data comes in */
        nanosleep(&(struct timespec){0, 30000000}, NULL);
    wait_ct(c->ct_t, &c->ct_t_seen, NOPS, "puts received");
    if (waiters)
        waiters_join(w);
    for (int k = 0; k < NOPS; k++)
        check_bytes(c->tgt, roff_of(k), sizes[k], (unsigned)c->left, loff_of(k), "put", k);
    if (!waiters)
        wait_ct(c->ct_i, &c->ct_i_seen, NOPS, "puts acknowledged");
    XP_REQUIRE(xp_barrier() == XP_OK); /* our puts have been read */
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* One round of gets from the right neighbour's gsrc into gdst. */
static void get_round(ctx_t *c, int md_iov, int le_iov)
{
    ptl_handle_md_t md = md_iov ? bind(c, c->gdst_iov, NSEG, PTL_IOVEC | PTL_MD_EVENT_CT_REPLY)
                                : bind(c, c->gdst, BUF, PTL_MD_EVENT_CT_REPLY);
    memset(c->gdst, 0, BUF);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int k = 0; k < NOPS; k++)
        XP_CHECK_EQ(PtlGet(md, loff_of(k), sizes[k], c->right, le_iov ? PT_GET_IOV : PT_GET, 0,
                           roff_of(k), NULL),
                    PTL_OK);
    wait_ct(c->ct_i, &c->ct_i_seen, NOPS, "replies");
    for (int k = 0; k < NOPS; k++)
        check_bytes(c->gdst, loff_of(k), sizes[k], (unsigned)(c->right.rank + 100), roff_of(k),
                    "get", k);
    /* Our entry served the left neighbour's gets meanwhile. */
    wait_ct(c->ct_t, &c->ct_t_seen, NOPS, "gets served");
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void setup(ctx_t *c)
{
    ptl_process_t me;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &c->ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(c->ni, &me) == PTL_OK);
    c->rank = (int)me.rank;
    c->n = xp_size();
    c->right.rank = (ptl_rank_t)((c->rank + 1) % c->n);
    c->left = (c->rank + c->n - 1) % c->n;
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->ct_t) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->ct_i) == PTL_OK);
}

/* --die: see the file comment. */
static void die_test(ctx_t *c)
{
    enum { N = 16 };
    if (c->rank == 1) {
        append(c, PT_PUT, c->tgt, BUF, PTL_LE_OP_PUT);
        XP_REQUIRE(xp_barrier() == XP_OK);
        uint64_t t0 = (uint64_t)time(NULL);
        ptl_ct_event_t v = {0, 0};
        for (;;) {
            XP_REQUIRE(PtlCTGet(c->ct_t, &v) == PTL_OK);
            if (v.success + v.failure >= N)
                break;
            XP_REQUIRE((uint64_t)time(NULL) - t0 < 15); /* a hang fails here */
            ptl_size_t test = v.success + 1;
            unsigned which;
            PtlCTPoll(&c->ct_t, &test, 1, 100, &v, &which);
        }
        fprintf(stderr, "rank 1: %llu puts arrived whole, %llu failed with their initiator\n",
                (unsigned long long)v.success, (unsigned long long)v.failure);
        XP_CHECK_EQ(v.success + v.failure, N);
        return; /* no PtlFini or barrier: the peer is gone */
    }
    ptl_handle_md_t md = bind(c, c->src, BUF, PTL_MD_EVENT_CT_ACK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0) {
        /* With MP_BIGCOPY_SHIFT=-N the source starts N bytes in: 56 puts the
         * target's data 8 bytes further into its line, which it stages. */
        ptl_size_t loff = (ptl_size_t)-shift;
        for (int k = 0; k < N; k++)
            XP_CHECK_EQ(PtlPut(md, loff, BUF / 2, PTL_CT_ACK_REQ, c->right, PT_PUT, 0, 0, NULL, 0),
                        PTL_OK);
        /* Wait (and so help) a little, then vanish mid-transfer. */
        ptl_size_t test = N;
        ptl_ct_event_t v;
        unsigned which;
        PtlCTPoll(&c->ct_i, &test, 1, 2, &v, &which);
        _exit(0);
    }
}

static void rounds(ctx_t *c)
{
    split3(c->tgt_iov, c->tgt);
    split3(c->src_iov, c->src);
    split3(c->gsrc_iov, c->gsrc);
    split3(c->gdst_iov, c->gdst);
    append(c, PT_PUT, c->tgt, BUF, PTL_LE_OP_PUT);
    append(c, PT_PUT_IOV, c->tgt_iov, NSEG, PTL_LE_OP_PUT | PTL_IOVEC);
    append(c, PT_GET, c->gsrc, BUF, PTL_LE_OP_GET);
    append(c, PT_GET_IOV, c->gsrc_iov, NSEG, PTL_LE_OP_GET | PTL_IOVEC);

    put_round(c, 0, 0, 0, 0); /* contiguous both sides: the shared (split) copy */
    put_round(c, 0, 0, 1, 0); /* the same while the target is busy elsewhere */
    put_round(c, 0, 0, 1, 1); /* ... and other threads wait on the counter */
    put_round(c, 1, 0, 0, 0); /* iovec MD */
    put_round(c, 0, 1, 0, 1); /* iovec LE */
    put_round(c, 1, 1, 1, 0);
    get_round(c, 0, 0);
    get_round(c, 1, 0);
    get_round(c, 0, 1);

    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlNIFini(c->ni);
    PtlFini();
}

int main(int argc, char **argv)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    int die = argc > 1 && !strcmp(argv[1], "--die");
    const char *sh = getenv("MP_BIGCOPY_SHIFT");
    shift = sh ? strtol(sh, NULL, 10) : 0;
    XP_REQUIRE(shift > -1000 && shift <= 0);
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() < 2 || (die && xp_size() != 2))
        XP_TEST_SKIP("needs 2 or more ranks (--die: exactly 2)");
    /* Line-aligned, so that the offsets alone set the relative alignments. */
    c.tgt = aligned_alloc(64, BUF);
    c.src = aligned_alloc(64, BUF);
    c.gsrc = aligned_alloc(64, BUF);
    c.gdst = aligned_alloc(64, BUF);
    XP_REQUIRE(c.tgt && c.src && c.gsrc && c.gdst);
    setup(&c);
    fill(c.src, BUF, (unsigned)c.rank);
    fill(c.gsrc, BUF, (unsigned)c.rank + 100);
    if (die)
        die_test(&c); /* rank 0 does not come back */
    else
        rounds(&c);
    free(c.tgt);
    free(c.src);
    free(c.gsrc);
    free(c.gdst);
    return xp_test_result();
}
