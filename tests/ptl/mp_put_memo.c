/*
 * mp_put_memo - PtlPut's memo of its last compact put (ops.c: the MD and
 * route a thread used last, valid while nothing they depend on has gone)
 * never sends with what it remembers once that is stale, and never mixes
 * up targets or MDs.
 *
 * Rank 0 puts 8 bytes to rank 1 (the in-place ring path), each round with
 * its own pattern, which rank 1 checks:
 *   - runs of puts with one MD to one target (the memo's hits), then
 *     alternating between two MDs over different buffers and between rank
 *     1 and itself (each put must carry its own MD's bytes to its target);
 *   - the MD released: its handle is refused (PTL_ARG_INVALID) although the
 *     memo named it a moment before, and a new MD (often in the same handle
 *     slot) sends its own bytes;
 *   - arguments the compact path must not take on a memo hit (a range past
 *     the MD, an ack_req out of range): refused, nothing sent;
 *   - the NI finalized (with an MD still bound) and initialized again: that
 *     MD's handle is refused, the new NI's MD works;
 *   - PtlFetchAtomic's memo likewise: runs of fetch-adds to rank 1, then
 *     alternating with fetch-adds to itself (every old value must continue
 *     its own target's sequence), the operand MD released and refused, a
 *     new result MD (the REPLY's MD memo must follow it).
 * Rank 1 counts what arrives with a CT and compares every buffer.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 4
#define RUN 200 /* puts per run */

typedef struct side {
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct;
    ptl_handle_le_t le;
    uint64_t rbuf;   /* what puts land in */
    uint64_t count;  /* puts counted so far */
} side_t;

static uint64_t pat(uint64_t round, unsigned which)
{
    return 0x9E3779B97F4A7C15ull * (round + 1) ^ ((uint64_t)which << 56);
}

/* An NI with the PT, a counted LE over s->rbuf and a barrier. */
static void side_open(side_t *s)
{
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &s->ni) == PTL_OK);
    ptl_pt_index_t pt;
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct) == PTL_OK);
    ptl_le_t le = {.start = &s->rbuf, .length = sizeof s->rbuf, .ct_handle = s->ct,
                   .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM};
    XP_REQUIRE(PtlLEAppend(s->ni, PT, &le, PTL_PRIORITY_LIST, NULL, &s->le) == PTL_OK);
    s->count = 0;
    XP_REQUIRE(xp_barrier() == XP_OK);
}

static void side_close(side_t *s)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlLEUnlink(s->le), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(s->ct), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(s->ni), PTL_OK);
}

static ptl_handle_md_t bind(ptl_handle_ni_t ni, uint64_t *buf)
{
    ptl_md_t md = {.start = buf, .length = sizeof *buf, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t h;
    XP_REQUIRE(PtlMDBind(ni, &md, &h) == PTL_OK);
    return h;
}

/* The next put to land in s carries `want`. */
static void expect(side_t *s, uint64_t want, const char *what, uint64_t round)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(s->ct, ++s->count, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
    if (s->rbuf != want) {
        fprintf(stderr, "rank %d: %s, round %llu: got %#llx, want %#llx\n", xp_rank(), what,
                (unsigned long long)round, (unsigned long long)s->rbuf,
                (unsigned long long)want);
        XP_CHECK(s->rbuf == want);
    }
}

/* One put from rank 0 of `val` through md (whose buffer is *buf) to `to`
 * (0: itself, 1: rank 1), checked where it lands. Rank 1 takes part in
 * every put (the barrier orders the rounds). */
static void one(side_t *s, ptl_handle_md_t md, uint64_t *buf, uint64_t val, int to,
                const char *what, uint64_t round)
{
    int me = xp_rank();
    if (me == 0) {
        *buf = val;
        ptl_process_t t = {.rank = (ptl_rank_t)to};
        XP_CHECK_EQ(PtlPut(md, 0, sizeof *buf, PTL_NO_ACK_REQ, t, PT, 0, 0, NULL, 0), PTL_OK);
    }
    if (me == to)
        expect(s, val, what, round);
    /* No put before the last one's target has checked it: the next one
     * overwrites that buffer. */
    XP_REQUIRE(xp_barrier() == XP_OK);
}

/* Rank 0: one fetch-add of 1 (operand MD op) to `to`, its old value
 * checked against *want (then incremented); res/rct: the result MD and
 * its REPLY counter. Rank 1 counts its share in s->count. */
static void fetch_one(side_t *s, ptl_handle_md_t op, ptl_handle_md_t res, ptl_handle_ct_t rct,
                      uint64_t *res_buf, uint64_t *replies, int to, uint64_t *want)
{
    ptl_ct_event_t ev;
    if (xp_rank() == 0) {
        ptl_process_t t = {.rank = (ptl_rank_t)to};
        XP_CHECK_EQ(PtlFetchAtomic(res, 0, op, 0, 8, t, PT, 0, 0, NULL, 0, PTL_SUM,
                                   PTL_UINT64_T), PTL_OK);
        XP_REQUIRE(PtlCTWait(rct, ++*replies, &ev) == PTL_OK);
        XP_CHECK_EQ(ev.failure, 0);
        if (*res_buf != *want) {
            fprintf(stderr, "fetch to %d: old value %#llx, want %#llx\n", to,
                    (unsigned long long)*res_buf, (unsigned long long)*want);
            XP_CHECK(*res_buf == *want);
        }
        ++*want;
        if (to == 0)
            s->count++; /* our own LE counted it too */
    } else if (to == 1) {
        XP_REQUIRE(PtlCTWait(s->ct, ++s->count, &ev) == PTL_OK);
    }
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    int me = xp_rank();
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    side_t s;
    uint64_t a_buf = 0, b_buf = 0, round = 0;
    side_open(&s);
    ptl_handle_md_t a = bind(s.ni, &a_buf), b = bind(s.ni, &b_buf);

    /* A run with one MD and target: the memo's hits. */
    for (int i = 0; i < RUN; i++, round++)
        one(&s, a, &a_buf, pat(round, 1), 1, "run", round);
    /* Two MDs, two targets, alternating. */
    for (int i = 0; i < RUN; i++, round++) {
        int to = (i >> 1) & 1;
        if (i & 1)
            one(&s, b, &b_buf, pat(round, 2), to, "alternating (MD b)", round);
        else
            one(&s, a, &a_buf, pat(round, 1), to, "alternating (MD a)", round);
    }

    /* Refused on a memo hit, nothing sent (the next put checks that). */
    if (me == 0) {
        ptl_process_t one1 = {.rank = 1};
        XP_CHECK_EQ(PtlPut(a, 1, sizeof a_buf, PTL_NO_ACK_REQ, one1, PT, 0, 0, NULL, 0),
                    PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlPut(a, 0, sizeof a_buf, (ptl_ack_req_t)7, one1, PT, 0, 0, NULL, 0),
                    PTL_ARG_INVALID);
    }
    one(&s, a, &a_buf, pat(round, 1), 1, "after refusals", round);
    round++;

    /* Released: refused at once; a new MD sends its own bytes. */
    ptl_handle_md_t old = a;
    XP_CHECK_EQ(PtlMDRelease(a), PTL_OK);
    if (me == 0) {
        ptl_process_t one1 = {.rank = 1};
        XP_CHECK_EQ(PtlPut(old, 0, sizeof a_buf, PTL_NO_ACK_REQ, one1, PT, 0, 0, NULL, 0),
                    PTL_ARG_INVALID);
    }
    uint64_t c_buf = 0;
    ptl_handle_md_t c = bind(s.ni, &c_buf);
    for (int i = 0; i < RUN; i++, round++)
        one(&s, c, &c_buf, pat(round, 3), 1, "new MD", round);
    XP_CHECK_EQ(PtlMDRelease(b), PTL_OK);

    /* Fetch-adds: rank 1's buffer holds the last put's value, rank 0's
     * its own; each fetch's old value continues its target's sequence. */
    {
        uint64_t one1 = 1, res_buf = 0, replies = 0;
        uint64_t want1 = pat(round - 1, 3), want0 = s.rbuf;
        ptl_handle_ct_t rct;
        XP_REQUIRE(PtlCTAlloc(s.ni, &rct) == PTL_OK);
        ptl_md_t rmd = {.start = &res_buf, .length = 8, .eq_handle = PTL_EQ_NONE,
                        .ct_handle = rct, .options = PTL_MD_EVENT_CT_REPLY};
        ptl_handle_md_t res, op = bind(s.ni, &one1);
        XP_REQUIRE(PtlMDBind(s.ni, &rmd, &res) == PTL_OK);
        XP_REQUIRE(xp_barrier() == XP_OK);
        for (int i = 0; i < RUN; i++)
            fetch_one(&s, op, res, rct, &res_buf, &replies, 1, &want1);
        for (int i = 0; i < RUN; i++) {
            int to = (i >> 1) & 1;
            fetch_one(&s, op, res, rct, &res_buf, &replies, to, to ? &want1 : &want0);
        }
        XP_REQUIRE(xp_barrier() == XP_OK);
        ptl_handle_md_t old_op = op;
        XP_CHECK_EQ(PtlMDRelease(op), PTL_OK);
        if (me == 0) {
            ptl_process_t one1r = {.rank = 1};
            XP_CHECK_EQ(PtlFetchAtomic(res, 0, old_op, 0, 8, one1r, PT, 0, 0, NULL, 0, PTL_SUM,
                                       PTL_UINT64_T),
                        PTL_ARG_INVALID);
        }
        op = bind(s.ni, &one1);
        /* A new result MD over another buffer: the REPLYs' MD memo must
         * not write the old one. */
        uint64_t res2_buf = 0;
        ptl_handle_md_t res_old = res;
        rmd.start = &res2_buf;
        XP_REQUIRE(PtlMDBind(s.ni, &rmd, &res) == PTL_OK); /* (before the release:
                                                              another object) */
        XP_CHECK_EQ(PtlMDRelease(res_old), PTL_OK);
        res_buf = 0;
        XP_REQUIRE(xp_barrier() == XP_OK);
        for (int i = 0; i < RUN; i++) {
            fetch_one(&s, op, res, rct, &res2_buf, &replies, 1, &want1);
            XP_CHECK_EQ(res_buf, 0);
        }
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_CHECK_EQ(PtlMDRelease(op), PTL_OK);
        XP_CHECK_EQ(PtlMDRelease(res), PTL_OK);
        XP_CHECK_EQ(PtlCTFree(rct), PTL_OK);
    }

    /* The NI again (its MD c freed with it): c is refused, although the
     * memo named it last, and the new NI's MD works. */
    side_close(&s);
    side_open(&s);
    if (me == 0) {
        ptl_process_t one1 = {.rank = 1};
        XP_CHECK_EQ(PtlPut(c, 0, sizeof c_buf, PTL_NO_ACK_REQ, one1, PT, 0, 0, NULL, 0),
                    PTL_ARG_INVALID);
    }
    ptl_handle_md_t d = bind(s.ni, &a_buf);
    for (int i = 0; i < RUN; i++, round++)
        one(&s, d, &a_buf, pat(round, 4), 1, "new NI", round);
    XP_CHECK_EQ(PtlMDRelease(d), PTL_OK);
    side_close(&s);
    PtlFini();
    return xp_test_result();
}
