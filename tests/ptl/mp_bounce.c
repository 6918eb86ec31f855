/*
 * mp_bounce - PtlPut (and PtlGet) through shm bounce blocks
 * (XP_SHM_BOUNCE_MAX), 2 ranks.
 *
 * Rank 0 puts and gets, rank 1 is the target. Sizes around the edges: one
 * packet, just above it, up to XP_SHM_BOUNCE_MAX and just above it (plain
 * RMA then), every byte checked, odd local and remote offsets, bytes around
 * untouched. Initiator: SEND (and, with PTL_ACK_REQ, ACK after it) with the
 * lengths and offsets of the put, from a contiguous, a PTL_IOVEC and a
 * shared-heap MD (the last never bounces: the SEND event's mlength tells
 * which path a put took, see put_sizes); REPLY events of gets into a
 * contiguous and an iovec MD; target: the PUT/GET events' lengths and start.
 * Also truncation by a short LE (put and get), puts dropped at the target
 * (no entry, no PT, a disabled PT, a get-only LE) and 100 gets, after which
 * both sides' blocks must have come back (20 blocks of 1 MiB allocated),
 * and 4 threads putting at once. With XP_SHM_BOUNCE_MAX=0 the same
 * operations go as plain RMA. --die: bounce puts whose initiator exits
 * right after posting them still land whole (die_test).
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/config.h"
#include "test_offsets.h"
#include "test_events.h"
#include "xp_test.h"
#include "xportals/shmem.h"
#include "xportals/xp.h"

#define PT_LE 5       /* persistent LE over tgt */
#define PT_SHORT 6    /* an LE of SHORT_LEN bytes over tgt2: truncation */
#define PT_EMPTY 7    /* allocated, no entry: dropped */
#define PT_OFF 8      /* an LE, but the PT disabled */
#define PT_GETONLY 9  /* an LE that takes no puts: operation violation */
#define PT_GET 10     /* get-only LE over gsrc */
#define PT_GSHORT 11  /* get-only LE of SHORT_LEN bytes over gsrc: truncated gets */
#define PT_NONE 20    /* never allocated */
#define BUF (24u << 20)
#define SHORT_LEN ((512u << 10) + 5)
#define WAIT_MS XP_TEST_WAIT_MS(5000)
#define MIB (1u << 20)
#define NSEG 3
#define NDROP 100
#define NTHREADS 4
#define PER_THREAD 40
#define EQ_LEN 2048
#define NGETS 100

static const size_t sizes[] = {1000, 32 * 1024 - 79, 32768, 65536 + 3, MIB, 2 * MIB - 64,
                               2 * MIB - 63, 2 * MIB, 2 * MIB + 1};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

typedef struct ctx {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq; /* rank 0: the MDs'; rank 1: the PTs' */
    ptl_handle_ct_t ct;
    ptl_process_t peer;
    int rank;
    unsigned char *src, *tgt, *tgt2;
    unsigned char *hsrc;  /* rank 0: a copy of src in our shared heap (NULL: no heap) */
    unsigned char *gsrc;  /* rank 1: what gets read (gbyte_of) */
    unsigned char *gdst;  /* rank 0: where gets land */
    ptl_iovec_t src_iov[NSEG], gdst_iov[NSEG];
} ctx_t;

/* Where an MD lies (bind). */
enum { MD_SRC, MD_SRC_IOV, MD_HEAP, MD_GDST, MD_GDST_IOV };

static unsigned char byte_of(size_t i)
{
    return (unsigned char)(i * 131u + 7u + (i >> 12));
}

static unsigned char gbyte_of(size_t i)
{
    return (unsigned char)(i * 89u + 101u + (i >> 10));
}

/* Offsets of operation k (test_offsets.h). */
static size_t roff_of(int k) { return xp_test_roff(sizes, k); }
static size_t loff_of(int k) { return xp_test_loff(sizes, k); }

/* A heap whose bounce cap (a quarter of it) holds every round's blocks at
 * once; a smaller one (the smallheap run) makes puts fall back to plain RMA
 * now and then, which must work just as well. */
#define BIG_HEAP (128u << 20)

static int big_heap(void)
{
    return xp_config()->shm_heap_size >= BIG_HEAP;
}

/* The largest put or get whose data we stage for the peer: XP_SHM_BOUNCE_MAX
 * where XP_SHM_BOUNCE is on (or auto chose blocks in this process), else 0. */
static size_t bounce_max(void)
{
    size_t max = xp_tl_bounce_max(1 - xp_rank());
    if (xp_config()->shm_bounce == XP_SHM_BOUNCE_ON)
        XP_CHECK_EQ(max, xp_config()->shm_heap_size ? xp_config()->shm_bounce_max : 0);
    if (xp_config()->shm_bounce == XP_SHM_BOUNCE_OFF)
        XP_CHECK_EQ(max, 0);
    return max;
}

/* Bounce blocks of 1 MiB the cap holds (check_blocks_back), at most 20. */
static int blocks_of_mib(void)
{
    size_t n = xp_config()->shm_heap_size / 4 / (2 * MIB);
    return bounce_max() < MIB ? 0 : n < 20 ? (int)n : 20;
}

/* Puts that go inline (sizes[0]) or through a bounce block (see
 * put_sizes): not from our shared heap, whence the target copies directly.
 * -1: either (a small heap's cap may be full). */
static int bounced(int k, int where)
{
    size_t max = bounce_max();
    if (k == 0 || where == MD_HEAP || sizes[k] > max || !max)
        return k == 0;
    return big_heap() ? 1 : -1;
}

static void *tag(int k)
{
    return (void *)(uintptr_t)(k + 1);
}

static void expect_no_event(ptl_handle_eq_t eq)
{
    ptl_event_t ev;
    int rc = PtlEQGet(eq, &ev);
    if (rc != PTL_EQ_EMPTY)
        fprintf(stderr, "rank %d: unexpected event type %d (rc %d)\n", xp_rank(), ev.type, rc);
    XP_CHECK_EQ(rc, PTL_EQ_EMPTY);
}

typedef unsigned char pattern_fn(size_t i);

/* dst[0, n) is the pattern from offset so; the bytes just before and after are zero. */
static void check_pat(const unsigned char *dst, size_t n, pattern_fn *pat, size_t so,
                      const char *what, size_t k)
{
    for (size_t i = 0; i < n; i++)
        if (dst[i] != pat(so + i)) {
            fprintf(stderr, "%s %zu (%zu bytes): byte %zu is %u, want %u\n", what, k, n, i,
                    dst[i], pat(so + i));
            XP_CHECK(0);
            return;
        }
    XP_CHECK_EQ(dst[-1], 0);
    XP_CHECK_EQ(dst[n], 0);
}

static void check_landed(const unsigned char *dst, size_t n, size_t so, const char *what, size_t k)
{
    check_pat(dst, n, byte_of, so, what, k);
}

static void append(ctx_t *c, ptl_pt_index_t pt, void *start, ptl_size_t len, unsigned op)
{
    ptl_handle_le_t h;
    ptl_le_t le = {.start = start, .length = len, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                   .options = op | PTL_LE_EVENT_LINK_DISABLE};
    XP_REQUIRE(PtlLEAppend(c->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
}

static void pt_alloc(ctx_t *c, ptl_pt_index_t pt)
{
    ptl_pt_index_t got;
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, c->eq, pt, &got) == PTL_OK);
}

static ptl_handle_md_t bind(ctx_t *c, int where, ptl_handle_ct_t ct, ptl_handle_eq_t eq)
{
    ptl_handle_md_t h;
    void *const start[] = {c->src, c->src_iov, c->hsrc, c->gdst, c->gdst_iov};
    int iov = where == MD_SRC_IOV || where == MD_GDST_IOV;
    ptl_md_t md = {.start = start[where], .length = iov ? NSEG : BUF,
                   .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY | (iov ? PTL_IOVEC : 0),
                   .eq_handle = eq, .ct_handle = ct};
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    return h;
}

/* ---- rank 1: the target ---- */

static void target_setup(ctx_t *c)
{
    XP_REQUIRE(PtlEQAlloc(c->ni, EQ_LEN, &c->eq) == PTL_OK);
    pt_alloc(c, PT_LE);
    append(c, PT_LE, c->tgt, BUF, PTL_LE_OP_PUT);
    pt_alloc(c, PT_SHORT);
    append(c, PT_SHORT, c->tgt2, SHORT_LEN, PTL_LE_OP_PUT);
    pt_alloc(c, PT_EMPTY);
    pt_alloc(c, PT_OFF);
    append(c, PT_OFF, c->tgt2, BUF, PTL_LE_OP_PUT);
    XP_REQUIRE(PtlPTDisable(c->ni, PT_OFF) == PTL_OK);
    pt_alloc(c, PT_GETONLY);
    append(c, PT_GETONLY, c->tgt2, BUF, PTL_LE_OP_GET);
    pt_alloc(c, PT_GET);
    append(c, PT_GET, c->gsrc, BUF, PTL_LE_OP_GET);
    pt_alloc(c, PT_GSHORT);
    append(c, PT_GSHORT, c->gsrc, SHORT_LEN, PTL_LE_OP_GET);
}

/* A PUT event for each size (a plain RMA put may complete after a later
 * bounce one: matched by offset). */
static void target_sizes(ctx_t *c, const char *what)
{
    int seen[NSIZES] = {0};
    for (int n = 0; n < NSIZES; n++) {
        ptl_event_t ev = xp_test_next_event(c->eq, what);
        int k = 0;
        while (k < NSIZES - 1 && roff_of(k) != ev.remote_offset)
            k++;
        XP_CHECK_EQ(ev.remote_offset, roff_of(k));
        XP_CHECK_EQ(seen[k]++, 0);
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.rlength, sizes[k]);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
        XP_CHECK(ev.start == c->tgt + roff_of(k));
        XP_CHECK_EQ(ev.pt_index, PT_LE);
    }
    for (int k = 0; k < NSIZES; k++)
        check_landed(c->tgt + roff_of(k), sizes[k], loff_of(k), what, (size_t)k);
    memset(c->tgt, 0, BUF);
    XP_REQUIRE(xp_barrier() == XP_OK); /* put_sizes's */
}

/* Truncated puts: mlength = what the LE has from the offset on. */
static void target_short(ctx_t *c)
{
    static const size_t roff[] = {0, 1000};
    for (int k = 0; k < 2; k++) {
        ptl_event_t ev = xp_test_next_event(c->eq, "truncated put");
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        XP_CHECK_EQ(ev.rlength, MIB);
        XP_CHECK_EQ(ev.mlength, SHORT_LEN - roff[k]);
        XP_CHECK(ev.start == c->tgt2 + roff[k]);
    }
}

/* After every put: the truncated ones' bytes, and none beyond the LE (nor
 * from the puts to the disabled PT or the get-only LE, which cover tgt2 too). */
static void check_short(const ctx_t *c)
{
    /* The second put (from local offset 7) overwrote the first from 1000 on. */
    for (size_t i = 0; i < SHORT_LEN; i++)
        if (c->tgt2[i] != byte_of(i < 1000 ? i : i - 1000 + 7)) {
            fprintf(stderr, "truncated: byte %zu is %u\n", i, c->tgt2[i]);
            XP_CHECK(0);
            break;
        }
    for (size_t i = SHORT_LEN; i < 4 * MIB; i++)
        if (c->tgt2[i]) {
            fprintf(stderr, "truncated: byte %zu beyond the LE is %u\n", i, c->tgt2[i]);
            XP_CHECK(0);
            break;
        }
}

/* ---- rank 0: the initiator ---- */

/* One put per size; SEND first, then (acked) ACK, per put, in put order
 * for each put (events of different puts may interleave). */
static void put_sizes(ctx_t *c, int where, ptl_ack_req_t ack)
{
    ptl_handle_md_t md = bind(c, where, c->ct, c->eq);
    for (int k = 0; k < NSIZES; k++)
        XP_CHECK_EQ(PtlPut(md, loff_of(k), sizes[k], ack, c->peer, PT_LE, 0, roff_of(k), tag(k),
                           0),
                    PTL_OK);
    int sent[NSIZES] = {0}, acked[NSIZES] = {0};
    int want = ack == PTL_ACK_REQ ? 2 * NSIZES : NSIZES;
    for (int n = 0; n < want; n++) {
        ptl_event_t ev = xp_test_next_event(c->eq, "put");
        int k = (int)((uintptr_t)ev.user_ptr - 1);
        XP_REQUIRE(k >= 0 && k < NSIZES);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        if (ev.type == PTL_EVENT_SEND) {
            XP_CHECK_EQ(sent[k]++, 0);
            /* The spec leaves a SEND event's mlength open; the engine's
             * says which path the put took: inline and bounce puts 0, plain
             * RMA ones (posted from the ACK) the length. So this checks that
             * every size from above one packet to XP_SHM_BOUNCE_MAX bounced. */
            int b = bounced(k, where);
            if (b >= 0)
                XP_CHECK_EQ(ev.mlength, b ? 0 : sizes[k]);
            else
                XP_CHECK(ev.mlength == 0 || ev.mlength == sizes[k]);
            XP_CHECK_EQ(ev.rlength, sizes[k]);
        } else {
            XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
            XP_CHECK_EQ(ack, PTL_ACK_REQ);
            XP_CHECK_EQ(sent[k], 1); /* ACK after SEND */
            XP_CHECK_EQ(acked[k]++, 0);
            XP_CHECK_EQ(ev.mlength, sizes[k]);
            XP_CHECK_EQ(ev.rlength, sizes[k]);
            XP_CHECK_EQ(ev.remote_offset, roff_of(k));
        }
    }
    XP_REQUIRE(xp_barrier() == XP_OK); /* the target has seen every put */
    expect_no_event(c->eq);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void put_short(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, MD_SRC, c->ct, c->eq);
    static const size_t roff[] = {0, 1000}, loff[] = {0, 7};
    for (int k = 0; k < 2; k++) {
        XP_CHECK_EQ(PtlPut(md, loff[k], MIB, PTL_ACK_REQ, c->peer, PT_SHORT, 0, roff[k], tag(k), 0),
                    PTL_OK);
        ptl_event_t ev = xp_test_next_event(c->eq, "truncated SEND");
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        ev = xp_test_next_event(c->eq, "truncated ACK");
        XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.mlength, SHORT_LEN - roff[k]);
    }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* NDROP 1 MiB puts to pt: each ACK fails with `fail`, counted as a failure. */
static void put_dropped(ctx_t *c, ptl_pt_index_t pt, ptl_ni_fail_t fail)
{
    ptl_handle_ct_t ct;
    XP_REQUIRE(PtlCTAlloc(c->ni, &ct) == PTL_OK);
    ptl_handle_md_t md = bind(c, MD_SRC, ct, c->eq);
    for (int k = 0; k < NDROP; k++) {
        XP_CHECK_EQ(PtlPut(md, (size_t)k * 4099, MIB, PTL_ACK_REQ, c->peer, pt, 0, 0, tag(0), 0),
                    PTL_OK);
        ptl_event_t ev = xp_test_next_event(c->eq, "dropped SEND");
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        ev = xp_test_next_event(c->eq, "dropped ACK");
        XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
        if (ev.ni_fail_type != fail)
            fprintf(stderr, "put to PT %u: ACK fail type %d, want %d\n", pt, ev.ni_fail_type, fail);
        XP_CHECK_EQ(ev.ni_fail_type, fail);
        XP_CHECK_EQ(ev.mlength, 0);
    }
    ptl_ct_event_t v;
    XP_CHECK_EQ(PtlCTGet(ct, &v), PTL_OK);
    XP_CHECK_EQ(v.success, 0);
    XP_CHECK_EQ(v.failure, NDROP);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

/* Every block for peer came back (dropped puts, gets): 20 blocks of 1 MiB
 * are free (the cap holds 32 with the default heap). */
static void check_blocks_back(int peer)
{
    void *b[20];
    int want = blocks_of_mib();
    for (int i = 0; i < 20; i++) {
        b[i] = xp_tl_bounce_alloc(peer, MIB);
        XP_CHECK(i < want ? b[i] != NULL : b[i] == NULL);
    }
    for (int i = 0; i < 20; i++)
        if (b[i]) {
            xp_tl_bounce_fill(peer, b[i], MIB); /* (a writer's last fill) */
            xp_tl_bounce_cancel(peer, b[i]);
        }
}

typedef struct thr {
    pthread_t t;
    ctx_t *c;
    int id, rc;
} thr_t;

/* Slot of put i of thread t in the target: distinct, odd offsets; sizes
 * between one packet and ~100 KiB. */
#define SLOT (BUF / (NTHREADS * PER_THREAD))
static size_t thr_len(int t, int i)
{
    return 33000 + (size_t)((t * PER_THREAD + i) * 2711) % (SLOT - 33000 - 8);
}

static void *thr_main(void *arg)
{
    thr_t *th = arg;
    ptl_handle_ct_t ct;
    XP_REQUIRE(PtlCTAlloc(th->c->ni, &ct) == PTL_OK);
    ptl_handle_md_t md = bind(th->c, MD_SRC, ct, PTL_EQ_NONE);
    for (int i = 0; i < PER_THREAD; i++) {
        size_t slot = (size_t)(th->id * PER_THREAD + i) * SLOT;
        if (PtlPut(md, slot + 5, thr_len(th->id, i), PTL_CT_ACK_REQ, th->c->peer, PT_LE, 0,
                   slot + 1, NULL, 0) != PTL_OK)
            th->rc = -1;
    }
    ptl_ct_event_t v;
    ptl_size_t test = PER_THREAD;
    unsigned which;
    if (PtlCTPoll(&ct, &test, 1, WAIT_MS, &v, &which) != PTL_OK || v.success != PER_THREAD ||
        v.failure)
        th->rc = -2;
    PtlMDRelease(md);
    PtlCTFree(ct);
    return NULL;
}

static void put_threads(ctx_t *c)
{
    thr_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        th[t] = (thr_t){.c = c, .id = t};
        XP_REQUIRE(pthread_create(&th[t].t, NULL, thr_main, &th[t]) == 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t].t, NULL);
        XP_CHECK_EQ(th[t].rc, 0);
    }
}

static void target_threads(ctx_t *c)
{
    for (int n = 0; n < NTHREADS * PER_THREAD; n++) {
        ptl_event_t ev = xp_test_next_event(c->eq, "threads' put");
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        XP_CHECK_EQ(ev.mlength, ev.rlength);
    }
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < PER_THREAD; i++) {
            size_t slot = (size_t)(t * PER_THREAD + i) * SLOT;
            check_landed(c->tgt + slot + 1, thr_len(t, i), slot + 5, "thread put",
                         (size_t)(t * PER_THREAD + i));
        }
}

/* ---- gets: the target stages the data in a bounce block for us ---- */

/* Which size an event at remote offset off is for. */
static int size_at(ptl_size_t off)
{
    int k = 0;
    while (k < NSIZES - 1 && roff_of(k) != off)
        k++;
    XP_CHECK_EQ(off, roff_of(k));
    return k;
}

static void target_gets(ctx_t *c)
{
    for (int n = 0; n < NSIZES; n++) {
        ptl_event_t ev = xp_test_next_event(c->eq, "get served");
        int k = size_at(ev.remote_offset);
        XP_CHECK_EQ(ev.type, PTL_EVENT_GET);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.rlength, sizes[k]);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
        XP_CHECK(ev.start == c->gsrc + roff_of(k));
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
}

/* One get per size into gdst (contiguous or 3 odd segments): REPLY events
 * with the lengths, every byte, the bytes around untouched. */
static void get_sizes(ctx_t *c, int where)
{
    ptl_handle_md_t md = bind(c, where, c->ct, c->eq);
    memset(c->gdst, 0, BUF);
    for (int k = 0; k < NSIZES; k++)
        XP_CHECK_EQ(PtlGet(md, loff_of(k), sizes[k], c->peer, PT_GET, 0, roff_of(k), tag(k)),
                    PTL_OK);
    int replied[NSIZES] = {0};
    for (int n = 0; n < NSIZES; n++) {
        ptl_event_t ev = xp_test_next_event(c->eq, "reply");
        int k = (int)((uintptr_t)ev.user_ptr - 1);
        XP_REQUIRE(k >= 0 && k < NSIZES);
        XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(replied[k]++, 0);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
        XP_CHECK_EQ(ev.rlength, sizes[k]);
        XP_CHECK_EQ(ev.remote_offset, roff_of(k));
    }
    for (int k = 0; k < NSIZES; k++)
        check_pat(c->gdst + loff_of(k), sizes[k], gbyte_of, roff_of(k),
                  where == MD_GDST ? "get" : "iovec get", (size_t)k);
    XP_REQUIRE(xp_barrier() == XP_OK);
    expect_no_event(c->eq);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* A truncated get (the LE ends first), then NGETS gets of 1 MiB: the target
 * must have its blocks back afterwards (check_blocks_back there). */
static void get_short_many(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, MD_GDST, c->ct, c->eq);
    memset(c->gdst, 0, BUF);
    XP_CHECK_EQ(PtlGet(md, 5, MIB, c->peer, PT_GSHORT, 0, 1000, tag(0)), PTL_OK);
    ptl_event_t ev = xp_test_next_event(c->eq, "truncated reply");
    XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, SHORT_LEN - 1000);
    check_pat(c->gdst + 5, SHORT_LEN - 1000, gbyte_of, 1000, "truncated get", 0);
    for (size_t i = 5 + SHORT_LEN - 1000; i < 5 + MIB; i++)
        if (c->gdst[i]) {
            fprintf(stderr, "truncated get: byte %zu beyond mlength is %u\n", i, c->gdst[i]);
            XP_CHECK(0);
            break;
        }
    for (int k = 0; k < NGETS; k++) {
        size_t off = (size_t)k * 4099;
        XP_CHECK_EQ(PtlGet(md, off, MIB, c->peer, PT_GET, 0, off + 1, tag(k)), PTL_OK);
        ev = xp_test_next_event(c->eq, "reply of many");
        XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.mlength, MIB);
    }
    /* The gets overlap: the last one's bytes are all there. */
    const unsigned char *last = c->gdst + (size_t)(NGETS - 1) * 4099;
    for (size_t i = 0; i < MIB; i++)
        if (last[i] != gbyte_of((NGETS - 1) * 4099 + 1 + i)) {
            fprintf(stderr, "last of many gets: byte %zu is %u\n", i, last[i]);
            XP_CHECK(0);
            break;
        }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void target_get_short_many(ctx_t *c)
{
    ptl_event_t ev = xp_test_next_event(c->eq, "truncated get served");
    XP_CHECK_EQ(ev.type, PTL_EVENT_GET);
    XP_CHECK_EQ(ev.mlength, SHORT_LEN - 1000);
    XP_CHECK_EQ(ev.rlength, MIB);
    for (int k = 0; k < NGETS; k++) {
        ev = xp_test_next_event(c->eq, "get of many served");
        XP_CHECK_EQ(ev.type, PTL_EVENT_GET);
        XP_CHECK_EQ(ev.mlength, MIB);
    }
}

/* ---- both ---- */

static void setup(ctx_t *c)
{
    ptl_process_t me;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &c->ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(c->ni, &me) == PTL_OK);
    c->rank = (int)me.rank;
    c->peer.rank = (ptl_rank_t)(1 - c->rank);
    c->src = malloc(BUF);
    c->tgt = calloc(1, BUF + 2);
    c->tgt2 = calloc(1, BUF);
    c->gsrc = malloc(BUF);
    c->gdst = calloc(1, BUF + 2);
    XP_REQUIRE(c->src && c->tgt && c->tgt2 && c->gsrc && c->gdst);
    c->tgt++; /* check_landed looks one byte before a put at offset 0 */
    c->gdst++;
    for (size_t i = 0; i < BUF; i++) {
        c->src[i] = byte_of(i);
        c->gsrc[i] = gbyte_of(i);
    }
    if (c->rank == 0 && big_heap()) {
        XP_REQUIRE((c->hsrc = xp_shmalloc(BUF)));
        memcpy(c->hsrc, c->src, BUF);
    }
    /* Three odd segments over src (the MD's offsets are the same). */
    size_t a = 40000 + 1, b = (3u << 20) + 77;
    c->src_iov[0] = (ptl_iovec_t){c->src, a};
    c->src_iov[1] = (ptl_iovec_t){c->src + a, b};
    c->src_iov[2] = (ptl_iovec_t){c->src + a + b, BUF - a - b};
    c->gdst_iov[0] = (ptl_iovec_t){c->gdst, b};
    c->gdst_iov[1] = (ptl_iovec_t){c->gdst + b, a};
    c->gdst_iov[2] = (ptl_iovec_t){c->gdst + a + b, BUF - a - b};
    if (c->rank == 0) {
        XP_REQUIRE(PtlEQAlloc(c->ni, EQ_LEN, &c->eq) == PTL_OK);
        XP_REQUIRE(PtlCTAlloc(c->ni, &c->ct) == PTL_OK);
    } else {
        target_setup(c);
    }
}

/* Puts of every size from malloc'd and iovec MDs, with and without ACK,
 * and from our shared heap (no bounce block there); gets likewise. */
static void size_rounds(ctx_t *c)
{
    static const struct {
        int where;
        ptl_ack_req_t ack;
    } rounds[] = {{MD_SRC, PTL_ACK_REQ},     {MD_SRC, PTL_NO_ACK_REQ}, {MD_SRC_IOV, PTL_ACK_REQ},
                  {MD_SRC_IOV, PTL_NO_ACK_REQ}, {MD_HEAP, PTL_ACK_REQ}, {MD_GDST, 0},
                  {MD_GDST_IOV, 0}};
    for (size_t r = 0; r < sizeof rounds / sizeof rounds[0]; r++) {
        int where = rounds[r].where, get = where >= MD_GDST;
        if (where == MD_HEAP && !big_heap())
            continue; /* the same on both ranks */
        if (c->rank == 0 && get)
            get_sizes(c, where);
        else if (c->rank == 0)
            put_sizes(c, where, rounds[r].ack);
        else if (get)
            target_gets(c);
        else
            target_sizes(c, where == MD_SRC ? "put" : where == MD_HEAP ? "heap put" : "iovec put");
        XP_REQUIRE(xp_barrier() == XP_OK);
    }
}

static void run(ctx_t *c)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    size_rounds(c);
    if (c->rank == 0)
        get_short_many(c);
    else
        target_get_short_many(c);
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 1)
        check_blocks_back(0); /* the gets' blocks */
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0) {
        put_short(c);
        put_dropped(c, PT_EMPTY, PTL_NI_DROPPED);
        put_dropped(c, PT_NONE, PTL_NI_DROPPED);
        put_dropped(c, PT_OFF, PTL_NI_PT_DISABLED);
        put_dropped(c, PT_GETONLY, PTL_NI_OP_VIOLATION);
        check_blocks_back(1);
        put_threads(c);
    } else {
        target_short(c);
        target_threads(c);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 1) {
        expect_no_event(c->eq); /* dropped puts post nothing at the target */
        check_short(c);
    }
}

/* --die: rank 0 posts NDIE bounce puts without acknowledgement (their SEND
 * events come at once: the data is in its heap) and exits at once. The
 * target copies from that heap, which it still maps: every put must land
 * whole within seconds, whether or not its initiator still runs. */
#define NDIE 16
#define DIE_SLOT (MIB + 4096)

static void die_test(ctx_t *c)
{
    if (c->rank == 0) {
        ptl_handle_md_t md = bind(c, MD_SRC, PTL_CT_NONE, PTL_EQ_NONE);
        XP_REQUIRE(xp_barrier() == XP_OK);
        for (int k = 0; k < NDIE; k++)
            XP_CHECK_EQ(PtlPut(md, (size_t)k * 7, MIB + (size_t)k, PTL_NO_ACK_REQ, c->peer,
                               PT_LE, 0, (size_t)k * DIE_SLOT, NULL, 0),
                        PTL_OK);
        _exit(xp_test_result()); /* no PtlFini, no barrier */
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    int ok = 0, failed = 0;
    double t0 = (double)time(NULL);
    while (ok + failed < NDIE && (double)time(NULL) - t0 < 15) {
        ptl_event_t ev;
        unsigned which;
        if (PtlEQPoll(&c->eq, 1, 100, &ev, &which) != PTL_OK)
            continue;
        XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
        if (ev.ni_fail_type != PTL_NI_OK) {
            failed++;
            continue;
        }
        ok++;
        size_t k = ev.remote_offset / DIE_SLOT;
        XP_CHECK_EQ(ev.mlength, MIB + k);
        check_landed(c->tgt + k * DIE_SLOT, MIB + k, k * 7, "put of a dead initiator", k);
    }
    fprintf(stderr, "rank 1: %d puts landed whole, %d failed with their initiator\n", ok, failed);
    XP_CHECK_EQ(ok + failed, NDIE);
    /* (The initiator's choice; ours is the same where XP_SHM_BOUNCE is on.) */
    if (big_heap() && xp_config()->shm_bounce == XP_SHM_BOUNCE_ON && xp_config()->shm_bounce_max >= 2 * MIB)
        XP_CHECK_EQ(ok, NDIE); /* all bounced */
}

static void free_bufs(ctx_t *c)
{
    free(c->src);
    free(c->gsrc);
    free(c->gdst - 1);
    free(c->tgt - 1);
    free(c->tgt2);
}

int main(int argc, char **argv)
{
    int die = argc > 1 && !strcmp(argv[1], "--die");
    ctx_t c;
    memset(&c, 0, sizeof c);
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    setup(&c);
    if (die) {
        die_test(&c);
        free_bufs(&c); /* the peer is gone: no barrier, no PtlFini */
        return xp_test_result();
    }
    run(&c);
    XP_REQUIRE(xp_barrier() == XP_OK);
    xp_shfree(c.hsrc);
    PtlNIFini(c.ni);
    PtlFini();
    free_bufs(&c);
    return xp_test_result();
}
