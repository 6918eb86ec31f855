/*
 * mp_bounce_get - gets above one packet, which the target answers from a
 * bounce block of its shared heap up to its bounce limit (and by writing
 * into the initiator's memory above it, or when the initiator's buffer lies
 * in its own shared heap), every byte and the REPLY events checked.
 *
 * Rank 0 gets from rank 1's entry: sizes around the packet limit and the
 * bounce limit, with local and remote offsets; into a PTL_IOVEC MD; from an
 * entry shorter than asked (mlength is what the entry has, the rest of the
 * MD untouched); into a buffer of rank 0's shared heap; from an index with
 * no entry (PTL_NI_DROPPED, nothing written); then more gets of the largest
 * staged size than the cap holds at once. Then rank 1 checks that every
 * block it staged came back: it can take most of its cap in new blocks.
 * Rank 1 serves the gets from PtlCTPoll on its entry's counter, so the test
 * runs in both progress modes and with any XP_SHM_BOUNCE_MAX.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xp_test_kv.h"
#include "xportals/shmem.h"
#include "xportals/xp.h"

#define PT 9        /* rank 1's entry over src */
#define PT_SHORT 10 /* an entry over the first SHORT_LEN bytes of src */
#define PT_NONE 11  /* allocated, no entry */
#define BUF (5u << 20)
#define SHORT_LEN 100000u
#define WAIT_MS 10000
#define NSEG 3

static const size_t sizes[] = {32768 - 79, 32768, 65536 + 3, 1u << 20, (2u << 20) - 63,
                               2u << 20, (2u << 20) + 1};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static unsigned char src_byte(size_t i)
{
    return (unsigned char)(i * 13u + 5u + (i >> 11));
}

typedef struct ctx {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t ct; /* rank 1: gets served by its entries */
    ptl_process_t peer;
    unsigned char *buf;
} ctx_t;

static ptl_handle_md_t bind(ctx_t *c, void *start, ptl_size_t len, unsigned opts)
{
    ptl_handle_md_t h;
    ptl_md_t md = {.start = start, .length = len, .options = opts, .eq_handle = c->eq,
                   .ct_handle = PTL_CT_NONE};
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    return h;
}

/* One get of len bytes at remote offset roff into md at loff; its REPLY. */
static ptl_event_t get_one(ctx_t *c, ptl_handle_md_t md, ptl_size_t loff, ptl_size_t len,
                           ptl_pt_index_t pt, ptl_size_t roff)
{
    ptl_event_t ev;
    unsigned which;
    memset(&ev, 0, sizeof ev);
    XP_CHECK_EQ(PtlGet(md, loff, len, c->peer, pt, 0, roff, NULL), PTL_OK);
    XP_CHECK_EQ(PtlEQPoll(&c->eq, 1, WAIT_MS, &ev, &which), PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
    return ev;
}

/* got[0, n) holds src[roff, roff+n). */
static int same(const unsigned char *got, size_t n, size_t roff)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != src_byte(roff + i)) {
            fprintf(stderr, "byte %zu of %zu: %u, want %u\n", i, n, got[i], src_byte(roff + i));
            return 0;
        }
    return 1;
}

static int untouched(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0xEE)
            return 0;
    return 1;
}

static void sizes_contiguous(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, c->buf, BUF, 0);
    for (int k = 0; k < NSIZES; k++) {
        size_t loff = 7 + (size_t)k, roff = 4096 + 3 * (size_t)k;
        memset(c->buf, 0xEE, BUF);
        ptl_event_t ev = get_one(c, md, loff, sizes[k], PT, roff);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
        XP_CHECK(untouched(c->buf, loff));
        XP_CHECK(same(c->buf + loff, sizes[k], roff));
        XP_CHECK(untouched(c->buf + loff + sizes[k], 64));
    }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Three odd segments over buf. */
static void sizes_iovec(ctx_t *c)
{
    ptl_iovec_t iov[NSEG] = {{c->buf, 40000}, {c->buf + 50000, 1500001}, {c->buf + 1600000, 2000000}};
    ptl_size_t total = 40000 + 1500001 + 2000000;
    ptl_handle_md_t md = bind(c, iov, NSEG, PTL_IOVEC);
    size_t len = 1u << 20, loff = 30000; /* crosses the first two segments */
    memset(c->buf, 0xEE, BUF);
    ptl_event_t ev = get_one(c, md, loff, len, PT, 11);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, len);
    XP_CHECK(same(c->buf + loff, 10000, 11));
    XP_CHECK(untouched(c->buf + 40000, 10000));
    XP_CHECK(same(c->buf + 50000, len - 10000, 11 + 10000));
    XP_CHECK(total > loff + len);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* The entry has SHORT_LEN - roff bytes from roff: that much comes. */
static void truncated(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, c->buf, BUF, 0);
    size_t roff = 1000, want = 200000, have = SHORT_LEN - roff;
    memset(c->buf, 0xEE, BUF);
    ptl_event_t ev = get_one(c, md, 0, want, PT_SHORT, roff);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, have);
    XP_CHECK_EQ(ev.rlength, want);
    XP_CHECK(same(c->buf, have, roff));
    XP_CHECK(untouched(c->buf + have, want - have));
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Into our shared heap: the target writes there directly (no block). */
static void into_heap(ctx_t *c)
{
    size_t len = 300000;
    unsigned char *h = xp_shmalloc(len + 64);
    if (!h) {
        fprintf(stderr, "no shared heap: into_heap skipped\n");
        return;
    }
    memset(h, 0xEE, len + 64);
    ptl_handle_md_t md = bind(c, h, len + 64, 0);
    ptl_event_t ev = get_one(c, md, 32, len, PT, 77);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, len);
    XP_CHECK(untouched(h, 32));
    XP_CHECK(same(h + 32, len, 77));
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    xp_shfree(h);
}

static void dropped(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, c->buf, BUF, 0);
    memset(c->buf, 0xEE, BUF);
    ptl_event_t ev = get_one(c, md, 0, 1u << 20, PT_NONE, 0);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_DROPPED);
    XP_CHECK(untouched(c->buf, 1u << 20));
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* The largest staged get (XP_SHM_BOUNCE_MAX, at most BUF), the heap bytes
 * its block takes (the header and the buddy allocator's power of two, as
 * shm_bounce.c counts them) and how many such blocks the cap (a quarter of
 * the heap) holds. */
/* Rank 1's bounce limit (it stages the replies): XP_SHM_BOUNCE_MAX, or
 * less where auto chose blocks for mid-size transfers only (shm_bounce.c,
 * xp_shm_bounce_mid); 0: none. Both ranks know it (main). */
static size_t server_max;

static size_t big_len(void)
{
    /* (many() reads at remote offsets up to nmany(): keep inside BUF.) */
    size_t m = server_max ? server_max : xp_config()->shm_bounce_max;
    return m < BUF / 2 ? m : BUF / 2;
}

static size_t blocks_in_cap(void)
{
    size_t b = 256;
    while (b < 64 + big_len())
        b *= 2;
    return xp_config()->shm_heap_size / 4 / b;
}

/* More such gets than the cap holds at once: only blocks that come back
 * let them all be staged. */
static int nmany(void)
{
    return big_len() >= 65536 ? (int)blocks_in_cap() + 8 : 0;
}

/* Gets served by rank 1's entries, counted on c->ct. */
static ptl_size_t nserved(void)
{
    return NSIZES + 1 + 1 + 1 + (ptl_size_t)nmany();
}

static void many(ctx_t *c)
{
    ptl_handle_md_t md = bind(c, c->buf, BUF, 0);
    for (int i = 0; i < nmany(); i++) {
        ptl_event_t ev = get_one(c, md, 0, big_len(), PT, (size_t)i);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    }
    if (nmany() > 0)
        XP_CHECK(same(c->buf, big_len(), (size_t)nmany() - 1));
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void append(ctx_t *c, ptl_pt_index_t pt, ptl_size_t len)
{
    ptl_le_t le = {.start = c->buf, .length = len, .ct_handle = c->ct, .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_SUCCESS_DISABLE |
                              PTL_LE_EVENT_LINK_DISABLE};
    ptl_handle_le_t h;
    ptl_pt_index_t got;
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, PTL_EQ_NONE, pt, &got) == PTL_OK);
    if (pt != PT_NONE)
        XP_REQUIRE(PtlLEAppend(c->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
}

/* Rank 1: serve the gets, then check its blocks came back: with the read
 * ones freed it can take blocks up to its cap again. */
static void serve(ctx_t *c)
{
    ptl_ct_event_t v;
    unsigned which;
    ptl_size_t want = nserved();
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlCTPoll(&c->ct, &want, 1, 4 * WAIT_MS, &v, &which), PTL_OK);
    XP_CHECK_EQ(v.success, nserved());
    XP_CHECK_EQ(v.failure, 0);
    XP_REQUIRE(xp_barrier() == XP_OK); /* every reply has been copied out */
    void *probe = xp_tl_bounce_alloc(0, 64);
    if (!probe)
        return; /* no bounce blocks here (XP_SHM_BOUNCE off, or auto chose none) */
    xp_tl_bounce_fill(0, probe, 64); /* (a writer's last fill) */
    xp_tl_bounce_cancel(0, probe);
    /* Half the cap in blocks of the largest size: fails if the gets' blocks
     * (more than the cap) did not all come back. */
    size_t want_blocks = blocks_in_cap() / 2 < 24 ? blocks_in_cap() / 2 : 24;
    void *blk[24];
    size_t n = 0;
    while (n < want_blocks && (blk[n] = xp_tl_bounce_alloc(0, big_len())) != NULL)
        xp_tl_bounce_fill(0, blk[n++], big_len());
    XP_CHECK_EQ(n, want_blocks);
    while (n > 0)
        xp_tl_bounce_cancel(0, blk[--n]);
}

int main(void)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &c.ni) == PTL_OK);
    c.peer.rank = (ptl_rank_t)(1 - xp_rank());
    server_max = xp_test_rank_size(1, "bounce_get.max", xp_tl_bounce_max(0));
    c.buf = malloc(BUF);
    XP_REQUIRE(c.buf != NULL);
    XP_REQUIRE(PtlEQAlloc(c.ni, 64, &c.eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c.ni, &c.ct) == PTL_OK);
    if (xp_rank() == 1) {
        for (size_t i = 0; i < BUF; i++)
            c.buf[i] = src_byte(i);
        append(&c, PT, BUF);
        append(&c, PT_SHORT, SHORT_LEN);
        append(&c, PT_NONE, 0);
        serve(&c);
    } else {
        XP_REQUIRE(xp_barrier() == XP_OK);
        sizes_contiguous(&c);
        sizes_iovec(&c);
        truncated(&c);
        into_heap(&c);
        dropped(&c);
        many(&c);
        XP_REQUIRE(xp_barrier() == XP_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlNIFini(c.ni);
    PtlFini();
    free(c.buf);
    return xp_test_result();
}
