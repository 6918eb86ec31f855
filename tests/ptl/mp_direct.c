/*
 * mp_direct - atomics, puts and gets applied by the initiator straight to
 * the target's shared heap (ptl/direct.h), and what must keep them off it.
 *
 * Rank 0 is the target; it posts LEs on a non-matching NI, most over
 * memory from its xp_shmalloc heap. Every other rank is an initiator.
 *  A. The path is taken: while rank 0 makes no Portals call at all (run
 *     with XP_PROGRESS=inline, nothing handles its ring), the initiators
 *     complete fetch-adds on one word (no update lost, each sees its old
 *     values increase), then a fetch with a REPLY event, an atomic with
 *     SEND and ACK events, counting ACKs, PtlSwap (SWAP, CSWAP hit and
 *     miss), a plain atomic on an entry without OP_GET and one on an entry
 *     with ACK_DISABLE (SEND, no ACK), puts with an ACK, without, and with
 *     a counting ACK (none from ACK_DISABLE), a put and a 3-word fetch-add
 *     from and into an iovec MD. Rank 0 watches the words;
 *     without the direct path it would wait for its deadline.
 *  B. Direct and ring atomics on one word at once: one entry qualifies,
 *     another over the same memory counts (so the target's handler applies
 *     its atomics); the initiators alternate; the sum is exact.
 *  C. Order: a put through the ring (a counting entry over the same
 *     memory), then at once a fetch of the same word returns the value put.
 *  D. Unlink while the initiators hammer the entry: once PtlLEUnlink
 *     returns the word never changes again, and it holds exactly the
 *     fetch-adds that were answered with success.
 *  E. What must take the ring (rank 0 handling packets): a malloc buffer,
 *     an entry with a counter, a PT with an EQ and full events (the target
 *     sees each), a fetch on an entry without OP_GET (OP_VIOLATION, word
 *     untouched), a disabled PT (PT_DISABLED, untouched), and the entry
 *     again once enabled, and an 8 KiB put from an iovec MD (gathered on
 *     the stack only up to 4 KiB).
 *  F. Puts above 4 KiB (5000 B, 64 KiB with SEND and ACK, 200 KiB) from a
 *     malloc buffer into a heap entry, each initiator into its own slice,
 *     while rank 0 makes no Portals call: copies inside PtlPut up to
 *     XP_SHM_DIRECT_MAX (0, the default: no limit); every byte checked.
 *  G. Gets out of an entry that takes gets only (8 B counted, 5000 B with
 *     a REPLY event there when PtlGet returns, 64 KiB into an iovec MD)
 *     while rank 0 makes no call; E checks that a put there is refused
 *     (OP_VIOLATION) and a get past its end truncated, through the ring.
 * With XP_SHM_DIRECT=0 the same checks hold through the ring (A and F then
 * let rank 0 handle packets while it waits), and with
 * XP_SHM_DIRECT_MAX=4k F's puts (and G's larger gets) take the ring: the first one's SEND
 * event is not there when PtlPut returns, rank 0 being asleep for 200 ms
 * (a direct put's is).
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"
#include "xp_test.h"
#include "xportals/shmem.h"
#include "xportals/xp.h"

enum {
    PT_D = 10,  /* qualifies: heap, OP_PUT|OP_GET, no count, no event */
    PT_R = 11,  /* the same memory, counted: the ring */
    PT_U = 12,  /* qualifies; unlinked in D */
    PT_M = 13,  /* malloc buffer */
    PT_C = 14,  /* heap, with a counter */
    PT_E = 15,  /* heap, PT with an EQ, full events */
    PT_NG = 16, /* heap, OP_PUT only */
    PT_NA = 17, /* heap, ACK_DISABLE */
    PT_L = 18,  /* heap, one SLICE per initiator: F */
    PT_G = 19,  /* heap, OP_GET only, GSIZE bytes of a pattern: G */
};

#define REGION 4096      /* bytes of each heap entry */
#define NA 2000          /* A: fetch-adds per initiator */
#define NB 2000          /* B: atomics per initiator, half through each entry */
#define NC 500           /* C: put + fetch pairs per initiator */
#define DEADLINE_NS 10000000000ull

/* Words of PT_D's region: */
#define W_SUM 0          /* A */
#define W_DONE 1         /* A: initiators finished */
#define W_MIX 2          /* B */
#define W_DONE_F 3       /* F: initiators finished */
#define SLICE (320 * 1024) /* F: bytes of PT_L per initiator */
#define W_DONE_G 4       /* G: initiators finished */
#define W_ASLEEP 5       /* F, G with big_held: rank 0's sleeps begun so far */
#define GSIZE (96 * 1024) /* G: bytes of PT_G */
#define W_OWN(r) (8 * (r))  /* per initiator r >= 1: 8 words */

typedef struct ctx {
    int rank, size, direct;
    int big_direct;              /* F's puts, G's gets are direct (XP_SHM_DIRECT_MAX) */
    int big_held;                /* ... or wait for rank 0, asleep for 200 ms first */
    int polls;                   /* watch() must handle packets (the ring serves) */
    uint64_t holds;              /* big_held sleeps of rank 0 so far */
    unsigned char *big;          /* target: PT_L's memory; initiator: the source */
    unsigned char *gmem;         /* target: PT_G's memory */
    ptl_handle_md_t md_big;      /* initiator: over big, events on ieq */
    ptl_handle_ni_t ni;
    ptl_process_t target;
    /* target */
    uint64_t *heap;              /* 8 regions of REGION bytes */
    uint64_t mbuf[8];
    ptl_handle_ct_t rct, cct;    /* PT_R's and PT_C's counters */
    ptl_handle_eq_t teq;         /* PT_E's EQ */
    ptl_handle_le_t le[8];
    /* initiator */
    uint64_t lbuf[16];
    ptl_handle_eq_t ieq;
    ptl_handle_ct_t ict, ect;
    ptl_handle_md_t md_ct, md_ev; /* CT only (the one-word fast path); EQ and CT */
    uint64_t ia[2], ib[3];        /* the two pieces of md_iov */
    ptl_iovec_t iov[2];
    ptl_handle_md_t md_iov;       /* PTL_IOVEC over ia and ib (40 bytes), counting on ict */
    uint64_t nct, nect;           /* successes so far on ict, ect */
} ctx_t;

static uint64_t *region(ctx_t *c, int i)
{
    return c->heap + (size_t)i * (REGION / 8);
}

static void post(ctx_t *c, int slot, ptl_pt_index_t pt, void *start, size_t len, unsigned opts,
                 ptl_handle_ct_t ct, ptl_handle_eq_t eq)
{
    ptl_pt_index_t got;
    ptl_le_t le = { .start = start, .length = len, .ct_handle = ct, .uid = PTL_UID_ANY,
                    .options = opts | PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, eq, pt, &got) == PTL_OK);
    XP_REQUIRE(PtlLEAppend(c->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &c->le[slot]) == PTL_OK);
}

/* G's bytes: PT_G's at offset i. */
static unsigned char get_byte(size_t i)
{
    return (unsigned char)(i * 13u + (i >> 8) + 5u);
}

static void target_setup(ctx_t *c)
{
    const unsigned rw = PTL_LE_OP_PUT | PTL_LE_OP_GET, quiet = PTL_LE_EVENT_COMM_DISABLE;
    XP_REQUIRE((c->heap = xp_shmalloc(8 * REGION)) != NULL);
    memset(c->heap, 0, 8 * REGION);
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->rct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->cct) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(c->ni, 1024, &c->teq) == PTL_OK);
    post(c, 0, PT_D, region(c, 0), REGION, rw | quiet, PTL_CT_NONE, PTL_EQ_NONE);
    post(c, 1, PT_R, region(c, 0), REGION, rw | PTL_LE_EVENT_CT_COMM | quiet, c->rct, PTL_EQ_NONE);
    post(c, 2, PT_U, region(c, 1), REGION, rw | quiet, PTL_CT_NONE, PTL_EQ_NONE);
    post(c, 3, PT_M, c->mbuf, sizeof c->mbuf, rw | quiet, PTL_CT_NONE, PTL_EQ_NONE);
    post(c, 4, PT_C, region(c, 2), REGION, rw | PTL_LE_EVENT_CT_COMM | quiet, c->cct, PTL_EQ_NONE);
    post(c, 5, PT_E, region(c, 3), REGION, rw, PTL_CT_NONE, c->teq);
    post(c, 6, PT_NG, region(c, 4), REGION, PTL_LE_OP_PUT | quiet, PTL_CT_NONE, PTL_EQ_NONE);
    post(c, 7, PT_NA, region(c, 5), REGION, rw | PTL_LE_ACK_DISABLE | quiet, PTL_CT_NONE,
         PTL_EQ_NONE);
    size_t big = (size_t)(c->size - 1) * SLICE;
    XP_REQUIRE((c->big = xp_shmalloc(big)) != NULL);
    memset(c->big, 0, big);
    ptl_handle_le_t h;
    ptl_pt_index_t got;
    ptl_le_t le = { .start = c->big, .length = big, .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY, .options = rw | quiet | PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, PTL_EQ_NONE, PT_L, &got) == PTL_OK);
    XP_REQUIRE(PtlLEAppend(c->ni, PT_L, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    XP_REQUIRE((c->gmem = xp_shmalloc(GSIZE)) != NULL);
    for (size_t i = 0; i < GSIZE; i++)
        c->gmem[i] = get_byte(i);
    le.start = c->gmem;
    le.length = GSIZE;
    le.options = PTL_LE_OP_GET | quiet | PTL_LE_EVENT_LINK_DISABLE;
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, PTL_EQ_NONE, PT_G, &got) == PTL_OK);
    XP_REQUIRE(PtlLEAppend(c->ni, PT_G, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
}

/* F's bytes: what initiator r puts at offset i of its slice. */
static unsigned char big_byte(int r, size_t i)
{
    return (unsigned char)((size_t)r * 31u + i * 7u + (i >> 9));
}

static void initiator_setup(ctx_t *c)
{
    XP_REQUIRE(PtlEQAlloc(c->ni, 256, &c->ieq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->ict) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->ect) == PTL_OK);
    ptl_md_t md = { .start = c->lbuf, .length = sizeof c->lbuf, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = c->ict,
                    .options = PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_ACK };
    XP_REQUIRE(PtlMDBind(c->ni, &md, &c->md_ct) == PTL_OK);
    md.eq_handle = c->ieq;
    md.ct_handle = c->ect;
    XP_REQUIRE(PtlMDBind(c->ni, &md, &c->md_ev) == PTL_OK);
    c->iov[0] = (ptl_iovec_t){ .iov_base = c->ia, .iov_len = sizeof c->ia };
    c->iov[1] = (ptl_iovec_t){ .iov_base = c->ib, .iov_len = sizeof c->ib };
    md = (ptl_md_t){ .start = c->iov, .length = 2, .eq_handle = PTL_EQ_NONE, .ct_handle = c->ict,
                     .options = PTL_IOVEC | PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_ACK };
    XP_REQUIRE(PtlMDBind(c->ni, &md, &c->md_iov) == PTL_OK);
    XP_REQUIRE((c->big = malloc(SLICE)) != NULL);
    for (size_t i = 0; i < SLICE; i++)
        c->big[i] = big_byte(c->rank, i);
    md = (ptl_md_t){ .start = c->big, .length = SLICE, .eq_handle = c->ieq,
                     .ct_handle = PTL_CT_NONE, .options = 0 };
    XP_REQUIRE(PtlMDBind(c->ni, &md, &c->md_big) == PTL_OK);
}

/* Wait for the count of the one operation in flight on ct (*n successes
 * so far): 1 if it failed. PtlCTWait returns as soon as the failure count
 * is nonzero, so a failure is cleared once seen. */
static int ct_next(ptl_handle_ct_t ct, uint64_t *n)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(ct, *n + 1, &ev) == PTL_OK);
    if (ev.failure) {
        XP_CHECK_EQ(ev.success, *n);
        ev.failure = 0;
        XP_REQUIRE(PtlCTSet(ct, ev) == PTL_OK);
        return 1;
    }
    *n = ev.success;
    return 0;
}

/* The next event of ieq, which must be of `type`. */
static ptl_event_t ev_next(ctx_t *c, ptl_event_kind_t type)
{
    ptl_event_t ev;
    XP_REQUIRE(PtlEQWait(c->ieq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, type);
    return ev;
}

/* A fetch-add of v at byte offset off of pt through md_ct: the old value,
 * or UINT64_MAX with *fail set when the REPLY counted a failure. */
static uint64_t fadd(ctx_t *c, ptl_pt_index_t pt, ptl_size_t off, uint64_t v, int *fail)
{
    c->lbuf[1] = v;
    XP_REQUIRE(PtlFetchAtomic(c->md_ct, 0, c->md_ct, 8, 8, c->target, pt, 0, off, NULL, 0, PTL_SUM,
                              PTL_UINT64_T) == PTL_OK);
    int failed = ct_next(c->ict, &c->nct);
    if (fail)
        *fail = failed;
    return failed ? UINT64_MAX : c->lbuf[0];
}

/* ---------------------------------------------------------------- A */

/* Rank 0: wait (no Portals call with the direct path) until the word
 * reaches want. */
static void watch(ctx_t *c, const uint64_t *w, uint64_t want, const char *what)
{
    uint64_t t0 = xp_test_now_ns();
    ptl_event_t ev;
    unsigned int which;
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != want) {
        if (xp_test_now_ns() - t0 > DEADLINE_NS) {
            fprintf(stderr, "rank 0: %s: %llu, expected %llu\n", what,
                    (unsigned long long)*w, (unsigned long long)want);
            XP_CHECK(0);
            return;
        }
        if (c->polls) /* the ring: someone must handle it */
            (void)PtlEQPoll(&c->teq, 1, 1, &ev, &which);
        else
            usleep(100);
    }
}

static void phase_a_initiator(ctx_t *c)
{
    ptl_size_t own = W_OWN(c->rank) * 8;
    uint64_t prev = 0;
    for (int i = 0; i < NA; i++) {
        uint64_t old = fadd(c, PT_D, W_SUM * 8, 1, NULL);
        XP_CHECK(i == 0 || old > prev);
        prev = old;
    }
    /* A fetch with a REPLY event: its fields. */
    c->lbuf[1] = 7;
    XP_REQUIRE(PtlFetchAtomic(c->md_ev, 16, c->md_ev, 8, 8, c->target, PT_D, 0, own, (void *)c,
                              0x55, PTL_SUM, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 0);
    ptl_event_t ev = ev_next(c, PTL_EVENT_SEND); /* the put MD's, first */
    XP_CHECK(ev.start == (void *)&c->lbuf[1]);
    ev = ev_next(c, PTL_EVENT_REPLY);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(ev.remote_offset, own);
    XP_CHECK(ev.user_ptr == (void *)c);
    XP_CHECK(ev.start == (void *)&c->lbuf[2]);
    XP_CHECK_EQ(c->lbuf[2], 0);
    /* An atomic with an ACK: SEND, then ACK. */
    XP_REQUIRE(PtlAtomic(c->md_ev, 8, 8, PTL_ACK_REQ, c->target, PT_D, 0, own, (void *)c, 0,
                         PTL_SUM, PTL_UINT64_T) == PTL_OK);
    ev = ev_next(c, PTL_EVENT_SEND);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 0);
    ev = ev_next(c, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    /* Counting ACKs (no event when asked for a count only). */
    XP_REQUIRE(PtlAtomic(c->md_ct, 8, 8, PTL_CT_ACK_REQ, c->target, PT_D, 0, own, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_REQUIRE(PtlAtomic(c->md_ct, 8, 8, PTL_OC_ACK_REQ, c->target, PT_D, 0, own, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0); /* own word: 7 * 4 = 28 */
    /* A counting atomic to an entry with ACK_DISABLE counts nothing (then
     * one to PT_D counts one); the words at own + 8 are not checked. */
    uint64_t before = c->nct;
    XP_REQUIRE(PtlAtomic(c->md_ct, 8, 8, PTL_CT_ACK_REQ, c->target, PT_NA, 0, own + 8, NULL, 0,
                         PTL_SUM, PTL_UINT64_T) == PTL_OK);
    XP_REQUIRE(PtlAtomic(c->md_ct, 8, 8, PTL_CT_ACK_REQ, c->target, PT_D, 0, own + 8, NULL, 0,
                         PTL_SUM, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_CHECK_EQ(c->nct, before + 1);
    /* Swaps: SWAP 5 (old 28), CSWAP 5 -> 9 (hit), CSWAP 4 -> 1 (miss). */
    uint64_t cmp = 5;
    c->lbuf[1] = 5;
    XP_REQUIRE(PtlSwap(c->md_ct, 0, c->md_ct, 8, 8, c->target, PT_D, 0, own, NULL, 0, NULL,
                       PTL_SWAP, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_CHECK_EQ(c->lbuf[0], 28);
    c->lbuf[1] = 9;
    XP_REQUIRE(PtlSwap(c->md_ct, 0, c->md_ct, 8, 8, c->target, PT_D, 0, own, NULL, 0, &cmp,
                       PTL_CSWAP, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_CHECK_EQ(c->lbuf[0], 5);
    cmp = 4;
    c->lbuf[1] = 1;
    XP_REQUIRE(PtlSwap(c->md_ct, 0, c->md_ct, 8, 8, c->target, PT_D, 0, own, NULL, 0, &cmp,
                       PTL_CSWAP, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_CHECK_EQ(c->lbuf[0], 9);
    /* A plain atomic needs only OP_PUT; ACK_DISABLE: SEND, then no ACK. */
    c->lbuf[1] = 3;
    XP_REQUIRE(PtlAtomic(c->md_ev, 8, 8, PTL_NO_ACK_REQ, c->target, PT_NG, 0, own, NULL, 0,
                         PTL_SUM, PTL_UINT64_T) == PTL_OK);
    ev_next(c, PTL_EVENT_SEND);
    XP_REQUIRE(PtlAtomic(c->md_ev, 8, 8, PTL_ACK_REQ, c->target, PT_NA, 0, own, NULL, 0,
                         PTL_SUM, PTL_UINT64_T) == PTL_OK);
    ev_next(c, PTL_EVENT_SEND);
    /* Puts: with an ACK (SEND, then ACK), 40 bytes without, a counting ACK
     * through PtlPut's compact path; a fetch reads the first back. */
    c->lbuf[4] = 0x1234;
    XP_REQUIRE(PtlPut(c->md_ev, 32, 8, PTL_ACK_REQ, c->target, PT_D, 0, own + 16, (void *)c,
                      0) == PTL_OK);
    ev = ev_next(c, PTL_EVENT_SEND);
    XP_CHECK(ev.user_ptr == (void *)c);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 0);
    ev = ev_next(c, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(ev.remote_offset, own + 16);
    for (int i = 0; i < 5; i++)
        c->lbuf[8 + i] = ((uint64_t)c->rank << 8) | (uint64_t)i;
    XP_REQUIRE(PtlPut(c->md_ct, 64, 40, PTL_NO_ACK_REQ, c->target, PT_D, 0, own + 24, NULL, 0) ==
               PTL_OK);
    XP_CHECK_EQ(fadd(c, PT_D, own + 24, 0, NULL), (uint64_t)c->rank << 8);
    XP_REQUIRE(PtlPut(c->md_ct, 32, 8, PTL_CT_ACK_REQ, c->target, PT_NA, 0, own + 16, NULL, 0) ==
               PTL_OK);
    XP_REQUIRE(PtlPut(c->md_ct, 32, 8, PTL_CT_ACK_REQ, c->target, PT_D, 0, own + 16, NULL, 0) ==
               PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0); /* (PT_NA's ACK_DISABLE: no count) */
    /* The same counting ACK to an MD that counts bytes: the put's length. */
    {
        ptl_handle_ct_t bct;
        ptl_handle_md_t bmd;
        ptl_ct_event_t bev;
        ptl_md_t bm = { .start = c->lbuf, .length = sizeof c->lbuf, .eq_handle = PTL_EQ_NONE,
                        .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_BYTES };
        XP_REQUIRE(PtlCTAlloc(c->ni, &bct) == PTL_OK);
        bm.ct_handle = bct;
        XP_REQUIRE(PtlMDBind(c->ni, &bm, &bmd) == PTL_OK);
        XP_REQUIRE(PtlPut(bmd, 32, 8, PTL_CT_ACK_REQ, c->target, PT_D, 0, own + 16, NULL, 0) ==
                   PTL_OK);
        XP_REQUIRE(PtlCTWait(bct, 8, &bev) == PTL_OK);
        XP_CHECK_EQ(bev.success, 8);
        XP_CHECK_EQ(bev.failure, 0);
        XP_CHECK_EQ(PtlMDRelease(bmd), PTL_OK);
        XP_CHECK_EQ(PtlCTFree(bct), PTL_OK);
    }
    /* From and into an iovec MD: a 24-byte put across its two pieces, then a
     * fetch-add of 3 words from its start whose old values land in the
     * second piece. */
    c->ia[0] = 11, c->ia[1] = 12, c->ib[0] = 13, c->ib[1] = 14, c->ib[2] = 15;
    XP_REQUIRE(PtlPut(c->md_iov, 8, 24, PTL_NO_ACK_REQ, c->target, PT_NA, 0, own + 24, NULL,
                      0) == PTL_OK);
    XP_REQUIRE(PtlFetchAtomic(c->md_iov, 16, c->md_iov, 0, 24, c->target, PT_NA, 0, own + 24,
                              NULL, 0, PTL_SUM, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_CHECK_EQ(c->ib[0], 12); /* the old values, what the put left, over 13 14 15 */
    XP_CHECK_EQ(c->ib[1], 13);
    XP_CHECK_EQ(c->ib[2], 14);
    /* Done: rank 0 sees this count while it still makes no call. */
    fadd(c, PT_D, W_DONE * 8, 1, NULL);
}

static void phase_a(ctx_t *c)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0) {
        watch(c, &region(c, 0)[W_SUM], (uint64_t)(c->size - 1) * NA, "fetch-adds");
        watch(c, &region(c, 0)[W_DONE], (uint64_t)(c->size - 1), "initiators done");
    } else {
        phase_a_initiator(c);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    ptl_event_t ev;
    if (c->rank == 0) {
        for (int r = 1; r < c->size; r++) {
            XP_CHECK_EQ(region(c, 0)[W_OWN(r)], 9);
            XP_CHECK_EQ(region(c, 0)[W_OWN(r) + 2], 0x1234);
            for (int i = 0; i < 5; i++)
                XP_CHECK_EQ(region(c, 0)[W_OWN(r) + 3 + i], ((uint64_t)r << 8) | (uint64_t)i);
            XP_CHECK_EQ(region(c, 4)[W_OWN(r)], 3);
            XP_CHECK_EQ(region(c, 5)[W_OWN(r)], 3);
            XP_CHECK_EQ(region(c, 5)[W_OWN(r) + 2], 0x1234);
            /* the iovec put and the fetch-add of (11, 12, 13) on it */
            XP_CHECK_EQ(region(c, 5)[W_OWN(r) + 3], 12 + 11);
            XP_CHECK_EQ(region(c, 5)[W_OWN(r) + 4], 13 + 12);
            XP_CHECK_EQ(region(c, 5)[W_OWN(r) + 5], 14 + 13);
        }
    } else {
        XP_CHECK_EQ(PtlEQGet(c->ieq, &ev), PTL_EQ_EMPTY); /* no ACK from PT_NA */
    }
}

/* ---------------------------------------------------------------- B, C */

static void phase_b(ctx_t *c)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0) {
        ptl_ct_event_t ev;
        XP_REQUIRE(PtlCTWait(c->rct, (uint64_t)(c->size - 1) * (NB / 2), &ev) == PTL_OK);
        XP_CHECK_EQ(ev.failure, 0);
    } else {
        for (int i = 0; i < NB; i++)
            XP_CHECK(fadd(c, i % 2 ? PT_R : PT_D, W_MIX * 8, 1, NULL) != UINT64_MAX);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0)
        XP_CHECK_EQ(region(c, 0)[W_MIX], (uint64_t)(c->size - 1) * NB);
}

static void phase_c(ctx_t *c)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank != 0) {
        ptl_size_t off = (W_OWN(c->rank) + 1) * 8;
        for (uint64_t k = 1; k <= NC; k++) {
            uint64_t v = ((uint64_t)c->rank << 32) | k;
            c->lbuf[3] = v;
            /* Through PT_R (counted: the ring) with no ACK: nothing but the
             * target's handler orders the two. */
            XP_REQUIRE(PtlPut(c->md_ct, 24, 8, PTL_NO_ACK_REQ, c->target, PT_R, 0, off, NULL,
                              0) == PTL_OK);
            uint64_t got = fadd(c, PT_D, off, 0, NULL);
            if (got != v) {
                fprintf(stderr, "rank %d: fetch after put %llu: %llx, expected %llx\n", c->rank,
                        (unsigned long long)k, (unsigned long long)got,
                        (unsigned long long)v);
                XP_CHECK(0);
                break;
            }
        }
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
}

/* ---------------------------------------------------------------- D */

static void phase_d(ctx_t *c)
{
    uint64_t ok = 0, v1 = 0;
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank == 0) {
        usleep(20000); /* the initiators hammer PT_U meanwhile */
        XP_REQUIRE(PtlLEUnlink(c->le[2]) == PTL_OK);
        v1 = __atomic_load_n(&region(c, 1)[0], __ATOMIC_ACQUIRE);
    } else {
        uint64_t t0 = xp_test_now_ns();
        int fail = 0;
        while (!fail && xp_test_now_ns() - t0 < DEADLINE_NS)
            if (fadd(c, PT_U, 0, 1, &fail) != UINT64_MAX)
                ok++;
        XP_CHECK(fail); /* the unlink was seen */
        XP_REQUIRE(xp_kv_put("direct_ok", &ok, sizeof ok) == XP_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    if (c->rank == 0) {
        uint64_t total = 0;
        usleep(10000);
        XP_CHECK_EQ(region(c, 1)[0], v1); /* untouched since the unlink returned */
        for (int r = 1; r < c->size; r++) {
            size_t len = sizeof ok;
            XP_REQUIRE(xp_kv_get(r, "direct_ok", &ok, &len) == XP_OK);
            total += ok;
        }
        XP_CHECK_EQ(v1, total); /* every success applied, nothing else */
    }
}

/* ---------------------------------------------------------------- E */

static void phase_e_initiator(ctx_t *c)
{
    int fail;
    ptl_size_t own = W_OWN(c->rank) * 8;
    XP_CHECK(fadd(c, PT_M, 0, 3, NULL) != UINT64_MAX);
    XP_CHECK(fadd(c, PT_C, own, 3, NULL) == 0);
    XP_CHECK(fadd(c, PT_E, own, 3, NULL) == 0);
    /* No OP_GET: refused (OP_VIOLATION), the word keeps the plain atomic's 3. */
    c->lbuf[1] = 100;
    XP_REQUIRE(PtlFetchAtomic(c->md_ev, 0, c->md_ev, 8, 8, c->target, PT_NG, 0, own, NULL, 0,
                              PTL_SUM, PTL_UINT64_T) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 1);
    ev_next(c, PTL_EVENT_SEND);
    ptl_event_t ev = ev_next(c, PTL_EVENT_REPLY);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OP_VIOLATION);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* rank 0 disabled PT_D in between */
    XP_CHECK(fadd(c, PT_D, own, 1000, &fail) == UINT64_MAX && fail);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* ... and enabled it again */
    XP_CHECK_EQ(fadd(c, PT_D, own, 1, NULL), 9);
    /* 8 KiB from two pieces of md_big: over the stack's 4 KiB, the ring. */
    ptl_iovec_t iov[2] = { { c->big + 1000, 4096 }, { c->big + 9000, 4096 } };
    ptl_md_t md = { .start = iov, .length = 2, .eq_handle = PTL_EQ_NONE, .ct_handle = c->ict,
                    .options = PTL_IOVEC | PTL_MD_EVENT_CT_ACK };
    ptl_handle_md_t h;
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    XP_REQUIRE(PtlPut(h, 0, 8192, PTL_CT_ACK_REQ, c->target, PT_L, 0,
                      (ptl_size_t)(c->rank - 1) * SLICE + SLICE - 8192, NULL, 0) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    XP_REQUIRE(PtlMDRelease(h) == PTL_OK);
    /* PT_G takes gets only: a put is refused (OP_VIOLATION in its ACK);
     * a get past its end is truncated (mlength 8). */
    XP_REQUIRE(PtlPut(c->md_ev, 0, 8, PTL_ACK_REQ, c->target, PT_G, 0, 0, NULL, 0) == PTL_OK);
    ev_next(c, PTL_EVENT_SEND);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 1);
    ev = ev_next(c, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OP_VIOLATION);
    XP_REQUIRE(PtlGet(c->md_ev, 0, 16, c->target, PT_G, 0, GSIZE - 8, NULL) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ect, &c->nect), 0);
    ev = ev_next(c, PTL_EVENT_REPLY);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 8);
    for (size_t i = 0; i < 8; i++)
        XP_CHECK_EQ(((unsigned char *)c->lbuf)[i], get_byte(GSIZE - 8 + i));
}

static void phase_e(ctx_t *c)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank != 0) {
        phase_e_initiator(c);
    } else {
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(PtlPTDisable(c->ni, PT_D) == PTL_OK);
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(xp_barrier() == XP_OK); /* the refused fetches are answered here */
        XP_REQUIRE(PtlPTEnable(c->ni, PT_D) == PTL_OK);
        XP_REQUIRE(xp_barrier() == XP_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank != 0)
        return;
    ptl_ct_event_t ct;
    XP_CHECK_EQ(c->mbuf[0], 3ull * (uint64_t)(c->size - 1));
    XP_REQUIRE(PtlCTGet(c->cct, &ct) == PTL_OK);
    XP_CHECK_EQ(ct.success, (uint64_t)(c->size - 1));
    for (int r = 1; r < c->size; r++) {
        XP_CHECK_EQ(region(c, 2)[W_OWN(r)], 3);
        XP_CHECK_EQ(region(c, 3)[W_OWN(r)], 3);
        XP_CHECK_EQ(region(c, 4)[W_OWN(r)], 3);
        XP_CHECK_EQ(region(c, 0)[W_OWN(r)], 10);
        ptl_event_t ev;
        XP_REQUIRE(PtlEQGet(c->teq, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_FETCH_ATOMIC);
        const unsigned char *at = c->big + (size_t)(r - 1) * SLICE + SLICE - 8192;
        for (size_t i = 0; i < 4096; i++) {
            XP_CHECK_EQ(at[i], big_byte(r, 1000 + i));
            XP_CHECK_EQ(at[4096 + i], big_byte(r, 9000 + i));
        }
    }
}

/* ---------------------------------------------------------------- F */

static const struct {
    size_t off, len;
    ptl_ack_req_t ack;
} big_puts[] = {
    {0, 5000, PTL_NO_ACK_REQ},
    {8192, 65536, PTL_ACK_REQ},
    {8192 + 65536, 200 * 1024, PTL_NO_ACK_REQ},
};

static void phase_f_initiator(ctx_t *c)
{
    ptl_size_t slice = (ptl_size_t)(c->rank - 1) * SLICE;
    for (size_t k = 0; k < sizeof big_puts / sizeof big_puts[0]; k++) {
        XP_REQUIRE(PtlPut(c->md_big, big_puts[k].off, big_puts[k].len, big_puts[k].ack,
                          c->target, PT_L, 0, slice + big_puts[k].off, (void *)c, 0) == PTL_OK);
        /* A direct put is done when PtlPut returns, its SEND posted; a
         * single copy through the ring is done once rank 0 (here making no
         * call) has read the bytes. */
        ptl_event_t ev;
        if (c->big_direct) {
            XP_CHECK_EQ(PtlEQGet(c->ieq, &ev), PTL_OK);
            XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        } else {
            int rc = PTL_EQ_EMPTY;
            if (k == 0 && c->big_held) { /* (rank 0 sleeps before it polls) */
                rc = PtlEQGet(c->ieq, &ev);
                XP_CHECK_EQ(rc, PTL_EQ_EMPTY);
            }
            if (rc != PTL_OK) /* (a failed check above goes on with its event) */
                ev = ev_next(c, PTL_EVENT_SEND);
        }
        /* The spec leaves a SEND's mlength open: the direct path and a
         * single copy (its SEND comes with the target's answer) give the
         * length, a put staged in a bounce block (the copy probe may pick
         * them) 0, as mp_bounce.c checks. */
        if (c->big_direct)
            XP_CHECK_EQ(ev.mlength, big_puts[k].len);
        else
            XP_CHECK(ev.mlength == big_puts[k].len || ev.mlength == 0);
        if (big_puts[k].ack == PTL_ACK_REQ) {
            ev = ev_next(c, PTL_EVENT_ACK);
            XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
            XP_CHECK_EQ(ev.mlength, big_puts[k].len);
            XP_CHECK_EQ(ev.remote_offset, slice + big_puts[k].off);
            XP_CHECK(ev.user_ptr == (void *)c);
        }
    }
    fadd(c, PT_D, W_DONE_F * 8, 1, NULL);
}

/* F's and G's frame: the initiators run `initiator` and count on `word` of
 * PT_D's region when done, while rank 0 watches that count (handling
 * packets itself where the ring must serve: over XP_SHM_DIRECT_MAX); with
 * `hold`, asleep for 200 ms first where the ring serves (big_held). */
static void serve_large(ctx_t *c, void (*initiator)(ctx_t *), int word, const char *what,
                        int hold)
{
    int held = hold && c->big_held;
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (c->rank != 0) {
        /* Start once rank 0 is asleep: it may still handle packets on
         * its way out of the barrier. (The fetch is direct: it needs
         * nothing of rank 0.) */
        while (held && fadd(c, PT_D, W_ASLEEP * 8, 0, NULL) != c->holds + 1)
            ;
        initiator(c);
    } else {
        if (held) {
            __atomic_store_n(&region(c, 0)[W_ASLEEP], c->holds + 1, __ATOMIC_RELEASE);
            usleep(200000);
        }
        c->polls = !c->big_direct;
        watch(c, &region(c, 0)[word], (uint64_t)(c->size - 1), what);
        c->polls = !c->direct;
    }
    c->holds += (uint64_t)held;
    XP_REQUIRE(xp_barrier() == XP_OK);
}

static void phase_f(ctx_t *c)
{
    serve_large(c, phase_f_initiator, W_DONE_F, "large puts done", 1);
    if (c->rank != 0)
        return;
    for (int r = 1; r < c->size; r++) {
        const unsigned char *s = c->big + (size_t)(r - 1) * SLICE;
        size_t bad = 0;
        for (size_t k = 0; k < sizeof big_puts / sizeof big_puts[0]; k++)
            for (size_t i = big_puts[k].off; i < big_puts[k].off + big_puts[k].len; i++)
                bad += s[i] != big_byte(r, i);
        XP_CHECK_EQ(bad, 0);
    }
}

/* ---------------------------------------------------------------- G */

/* n bytes at buf were read from PT_G at offset off. */
static void check_got(const unsigned char *buf, size_t off, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += buf[i] != get_byte(off + i);
    XP_CHECK_EQ(bad, 0);
}

static void phase_g_initiator(ctx_t *c)
{
    ptl_event_t ev;
    /* 8 bytes on the compact path, counted on ict. */
    XP_REQUIRE(PtlGet(c->md_ct, 0, 8, c->target, PT_G, 0, 24, NULL) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    check_got((unsigned char *)c->lbuf, 24, 8);
    /* 5000 bytes with a REPLY event, there when PtlGet returns. */
    memset(c->big, 0, 5000);
    XP_REQUIRE(PtlGet(c->md_big, 0, 5000, c->target, PT_G, 0, 100, (void *)c) == PTL_OK);
    if (c->big_direct) {
        XP_CHECK_EQ(PtlEQGet(c->ieq, &ev), PTL_OK);
        XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
    } else {
        ev = ev_next(c, PTL_EVENT_REPLY);
    }
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 5000);
    XP_CHECK_EQ(ev.remote_offset, 100);
    XP_CHECK(ev.user_ptr == (void *)c);
    XP_CHECK(ev.start == (void *)c->big);
    check_got(c->big, 100, 5000);
    /* 64 KiB into two pieces of an iovec MD, counted. */
    ptl_iovec_t iov[2] = { { c->big + 8192, 40000 }, { c->big + 60000, 25536 } };
    ptl_md_t md = { .start = iov, .length = 2, .eq_handle = PTL_EQ_NONE, .ct_handle = c->ict,
                    .options = PTL_IOVEC | PTL_MD_EVENT_CT_REPLY };
    ptl_handle_md_t h;
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    XP_REQUIRE(PtlGet(h, 0, 65536, c->target, PT_G, 0, 7, NULL) == PTL_OK);
    XP_CHECK_EQ(ct_next(c->ict, &c->nct), 0);
    check_got(c->big + 8192, 7, 40000);
    check_got(c->big + 60000, 7 + 40000, 25536);
    XP_REQUIRE(PtlMDRelease(h) == PTL_OK);
    fadd(c, PT_D, W_DONE_G * 8, 1, NULL);
}

/* G. Gets straight out of the heap (an entry that takes gets only), while
 * rank 0 makes no call: 8 B, 5000 B with a REPLY event, 64 KiB into an
 * iovec MD. (E checked that a put there is refused and a get past the end
 * truncated, through the ring.) */
static void phase_g(ctx_t *c)
{
    serve_large(c, phase_g_initiator, W_DONE_G, "gets done", 0);
}

int main(void)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    XP_REQUIRE(PtlInit() == PTL_OK);
    c.rank = xp_rank();
    c.size = xp_size();
    c.direct = xp_config()->shm_direct;
    c.polls = !c.direct;
    c.big_direct = c.direct && (xp_config()->shm_direct_max == 0 ||
                                xp_config()->shm_direct_max >= 200 * 1024);
    /* (inline progress: nothing but rank 0's calls handles its ring) */
    c.big_held = c.direct && !c.big_direct && xp_config()->progress == 1;
    if (c.size < 2)
        XP_TEST_SKIP("needs 2 or more ranks");
    if (xp_config()->shm_heap_size == 0)
        XP_TEST_SKIP("no shared heap (XP_SHM_HEAP_SIZE=0)");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &c.ni) == PTL_OK);
    c.target.rank = 0;
    if (c.rank == 0)
        target_setup(&c);
    else
        initiator_setup(&c);
    phase_a(&c);
    phase_b(&c);
    phase_c(&c);
    phase_d(&c);
    phase_e(&c);
    phase_f(&c);
    phase_g(&c);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlNIFini(c.ni);
    PtlFini();
    if (c.rank != 0)
        free(c.big);
    return xp_test_result();
}
