/*
 * test_get_onepass - small gets: the compact request (ptl/wire.h
 * xp_wire_sget_t, PtlGet's memo and in-place write, ops.c) and the target's
 * one-pass get (target.c fast_get: XP_LE_FAST_GET entries, the REPLY
 * written in place in its compact form), and every case that must take the
 * full path instead, with the same results. Each rank gets from the next
 * one (itself with 1 process) and checks the bytes, the initiator's REPLY
 * counts and events and the target's counts and events:
 *   - 0..4096 bytes (XP_WIRE_SGET_MAX; 255 and 256 wrap the REPLY's length
 *     byte, 2112 is where glibc's memcpy changes method) at several offsets
 *     from an LE/ME that allows puts and gets and from one that allows gets
 *     only, counted as events and as bytes on both sides;
 *   - the full path: 64 KiB (RMA),
 *     a get reaching past the entry's end (truncated: REPLY mlength), an
 *     MD with an EQ (full header: user_ptr echoed in the REPLY event), a
 *     PT with an EQ and events (the target's GET event), an entry without
 *     OP_GET (OP_VIOLATION), another uid (PERM_VIOLATION), a disabled PT
 *     (PT_DISABLED), USE_ONCE MEs consumed in order;
 *   - a window of 5000 gets without waiting: full request rings and full
 *     answer lanes (both fallbacks);
 *   - the memo: alternating MDs and targets (on an LE: the next rank and
 *     this one), a released MD's handle refused
 *     at once, a new MD bound after it, offsets and lengths outside the MD
 *     refused.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_entries.h"
#include "xp_test.h"
#include "xportals/xp.h"

#define PT 6
#define PT_EV 7
#define TBUF 70000

typedef struct side {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;      /* the MD with events */
    ptl_handle_eq_t teq;     /* PT_EV's */
    ptl_handle_md_t md_n, md_b, md_e;
    ptl_handle_ct_t ct_n, ct_b;
    ptl_size_t want_n, want_b;
    ptl_process_t next;
    int matching;
} side_t;

static unsigned char tbuf[TBUF];   /* what the previous rank gets from */
static unsigned char dst[TBUF];    /* where this rank's gets land */

static unsigned char tbyte(int owner, size_t i)
{
    return (unsigned char)(owner * 31 + i * 7 + 1);
}

static int prev_rank(void)
{
    return (xp_rank() + xp_size() - 1) % xp_size();
}

static void barrier(void)
{
    XP_REQUIRE(xp_barrier() == XP_OK);
}

static void side_init(side_t *s, int matching)
{
    ptl_md_t md;
    ptl_pt_index_t pt;
    memset(s, 0, sizeof(*s));
    s->matching = matching;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT,
                         (matching ? PTL_NI_MATCHING : PTL_NI_NO_MATCHING) | PTL_NI_LOGICAL,
                         PTL_PID_ANY, NULL, NULL, &s->ni) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(s->ni, 64, &s->teq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, s->teq, PT_EV, &pt) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(s->ni, 64, &s->eq) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct_n) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct_b) == PTL_OK);
    memset(&md, 0, sizeof(md));
    md.start = dst;
    md.length = sizeof(dst);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = s->ct_n;
    md.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_n) == PTL_OK);
    md.ct_handle = s->ct_b;
    md.options = PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_CT_BYTES;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_b) == PTL_OK);
    md.ct_handle = PTL_CT_NONE;
    md.eq_handle = s->eq;
    md.options = PTL_MD_EVENT_SEND_DISABLE;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_e) == PTL_OK);
    s->next.rank = (ptl_rank_t)((xp_rank() + 1) % xp_size());
    for (size_t i = 0; i < sizeof(tbuf); i++)
        tbuf[i] = tbyte(xp_rank(), i);
}

static void side_fini(side_t *s)
{
    PtlMDRelease(s->md_n);
    PtlMDRelease(s->md_b);
    PtlMDRelease(s->md_e);
    PtlCTFree(s->ct_n);
    PtlCTFree(s->ct_b);
    PtlPTFree(s->ni, PT);
    PtlPTFree(s->ni, PT_EV);
    PtlEQFree(s->eq);
    PtlEQFree(s->teq);
    PtlNIFini(s->ni);
}

/* An entry over tbuf[0, len) on pt: an ME matching `bits` from the
 * previous rank (USE_ONCE with `once`) on a matching NI, else an LE. */
static ptl_handle_any_t post(side_t *s, ptl_pt_index_t pt, ptl_size_t len, unsigned opts,
                             ptl_handle_ct_t ct, ptl_uid_t uid, uint64_t bits)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = tbuf;
    me.length = len;
    me.ct_handle = ct;
    me.uid = uid;
    me.options = PTL_ME_EVENT_LINK_DISABLE | opts;
    me.match_id.rank = (ptl_rank_t)prev_rank();
    me.match_bits = bits;
    return xp_test_append(s->ni, s->matching, pt, &me, PTL_PRIORITY_LIST);
}

static void unlink_entry(side_t *s, ptl_handle_any_t h)
{
    XP_CHECK_EQ(s->matching ? PtlMEUnlink(h) : PtlLEUnlink(h), PTL_OK);
}

static ptl_handle_ct_t new_ct(side_t *s)
{
    ptl_handle_ct_t ct;
    XP_REQUIRE(PtlCTAlloc(s->ni, &ct) == PTL_OK);
    return ct;
}

/* A target CT must reach `success` (no failure), reported with the line
 * instead of hanging. */
static void expect_ct_at(int line, ptl_handle_ct_t ct, ptl_size_t success, ptl_size_t failure)
{
    ptl_ct_event_t ev;
    unsigned int which;
    ptl_size_t test = success + failure;
    int rc = PtlCTPoll(&ct, &test, 1, 10000, &ev, &which);
    if (rc != PTL_OK || ev.success != success || ev.failure != failure)
        fprintf(stderr, "line %d: rank %d: CT at %llu/%llu, want %llu/%llu (rc %d)\n", line,
                xp_rank(), (unsigned long long)ev.success, (unsigned long long)ev.failure,
                (unsigned long long)success, (unsigned long long)failure, rc);
    XP_REQUIRE(rc == PTL_OK);
    XP_CHECK_EQ(ev.success, success);
    XP_CHECK_EQ(ev.failure, failure);
}
#define expect_ct(ct, n) expect_ct_at(__LINE__, ct, n, 0)

/* dst[doff, doff+len) must hold rank owner's tbuf[roff, roff+len). */
static int landed_from(int owner, size_t doff, size_t roff, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (dst[doff + i] != tbyte(owner, roff + i))
            return 0;
    return 1;
}

/* The same from the next rank. */
static int landed(size_t doff, size_t roff, size_t len)
{
    return landed_from((xp_rank() + 1) % xp_size(), doff, roff, len);
}

/* A get from rank `to` through md_n (counted once) or md_b (in bytes),
 * waited for. */
static void get_counted_to(side_t *s, ptl_rank_t to, int bytes, ptl_size_t doff, ptl_size_t len,
                           ptl_size_t roff, ptl_pt_index_t pt, uint64_t bits)
{
    ptl_process_t target = { .rank = to };
    memset(dst + doff, 0, len);
    XP_REQUIRE(PtlGet(bytes ? s->md_b : s->md_n, doff, len, target, pt, bits, roff, NULL) ==
               PTL_OK);
    if (bytes) {
        s->want_b += len;
        expect_ct(s->ct_b, s->want_b);
    } else {
        s->want_n++;
        expect_ct(s->ct_n, s->want_n);
    }
    if (!landed_from((int)to, doff, roff, len)) {
        fprintf(stderr, "rank %d: get of %llu bytes at %llu: wrong bytes\n", xp_rank(),
                (unsigned long long)len, (unsigned long long)roff);
        XP_CHECK(0);
    }
}

/* The same from the next rank. */
static void get_counted(side_t *s, int bytes, ptl_size_t doff, ptl_size_t len, ptl_size_t roff,
                        ptl_pt_index_t pt, uint64_t bits)
{
    get_counted_to(s, s->next.rank, bytes, doff, len, roff, pt, bits);
}

/* A get through md_e: its REPLY event, with user_ptr `up`. */
static ptl_event_t get_event(side_t *s, ptl_size_t doff, ptl_size_t len, ptl_size_t roff,
                             ptl_pt_index_t pt, uint64_t bits, void *up)
{
    ptl_event_t ev;
    memset(dst + doff, 0, len);
    XP_REQUIRE(PtlGet(s->md_e, doff, len, s->next, pt, bits, roff, up) == PTL_OK);
    XP_REQUIRE(PtlEQWait(s->eq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
    XP_CHECK(ev.user_ptr == up);
    return ev;
}

static const ptl_size_t sizes[] = { 0,   1,   3,    4,    7,    8,    9,    15,  16,  17,
                                     32,  33,  64,   100,  255,  256,  257,  1000,
                                     2048, 2111, 2112, 4095, 4096 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
static const ptl_size_t offs[] = { 0, 1, 8, 61 };

/* One pass: every compact size at several offsets, from an entry for puts
 * and gets and from one for gets only, counted as events and as bytes. */
static void test_plain(side_t *s)
{
    ptl_handle_ct_t tct = new_ct(s), tbct = new_ct(s);
    ptl_size_t n = 0, bytes = 0;
    ptl_handle_any_t e1 = post(s, PT, 8192, PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM,
                               tct, PTL_UID_ANY, 1);
    ptl_handle_any_t e2 = post(s, PT, 8192,
                               PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES,
                               tbct, PTL_UID_ANY, 2);
    barrier();
    for (size_t i = 0; i < NSIZES; i++)
        for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
            int bytes_md = (int)((i + o) & 1);
            get_counted(s, bytes_md, offs[o] * 3, sizes[i], offs[o], PT, 1);
            n++;
            if (!s->matching)
                continue; /* an LE list serves every get from its first entry */
            get_counted(s, !bytes_md, offs[o], sizes[i], offs[o] + 5, PT, 2);
            bytes += sizes[i];
        }
    barrier();
    expect_ct(tct, n);
    expect_ct(tbct, bytes);
    barrier();
    unlink_entry(s, e1);
    unlink_entry(s, e2);
    PtlCTFree(tct);
    PtlCTFree(tbct);
}

/* The full path, with what it must give. */
static void test_full(side_t *s)
{
    ptl_handle_ct_t tct = new_ct(s);
    ptl_handle_any_t e = post(s, PT, TBUF, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM |
                                               PTL_ME_EVENT_CT_BYTES,
                              tct, PTL_UID_ANY, 3);
    ptl_size_t bytes = 0;
    barrier();
    get_counted(s, 0, 0, 4097, 7, PT, 3); /* no compact form */
    get_counted(s, 1, 100, 6000, 3, PT, 3);
    get_counted(s, 0, 0, 65536, 11, PT, 3); /* RMA */
    bytes += 4097 + 6000 + 65536;
    /* Past the end: truncated to what is left. */
    ptl_event_t ev = get_event(s, 0, 64, TBUF - 40, PT, 3, (void *)(uintptr_t)0x1234);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 40);
    XP_CHECK(landed(0, TBUF - 40, 40));
    bytes += 40;
    /* An MD with an EQ: user_ptr echoed, the event's fields. */
    ev = get_event(s, 200, 8, 24, PT, 3, (void *)(uintptr_t)0xbeef);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(ev.remote_offset, 24);
    XP_CHECK(ev.start == dst + 200);
    XP_CHECK(landed(200, 24, 8));
    bytes += 8;
    barrier();
    expect_ct(tct, bytes);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(tct);
}

/* A get through md_e that the target refuses with `fail`. */
static void get_refused(side_t *s, ptl_pt_index_t pt, uint64_t bits, ptl_ni_fail_t fail)
{
    ptl_event_t ev = get_event(s, 0, 8, 0, pt, bits, (void *)(uintptr_t)0x77);
    XP_CHECK_EQ(ev.ni_fail_type, fail);
}

/* Entries and PT states that refuse a get, and the target's GET event. */
static void test_refused(side_t *s)
{
    ptl_handle_ct_t tct = new_ct(s);
    ptl_event_t ev;
    /* Without OP_GET. */
    ptl_handle_any_t e = post(s, PT, 64, PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM, tct, PTL_UID_ANY,
                              4);
    barrier();
    get_refused(s, PT, 4, PTL_NI_OP_VIOLATION);
    barrier();
    unlink_entry(s, e);
    /* Another uid. */
    e = post(s, PT, 64, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, tct, 12345, 4);
    barrier();
    get_refused(s, PT, 4, PTL_NI_PERM_VIOLATION);
    barrier();
    unlink_entry(s, e);
    /* A disabled PT. */
    e = post(s, PT, 64, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, tct, PTL_UID_ANY, 4);
    XP_REQUIRE(PtlPTDisable(s->ni, PT) == PTL_OK);
    barrier();
    get_refused(s, PT, 4, PTL_NI_PT_DISABLED);
    barrier();
    XP_REQUIRE(PtlPTEnable(s->ni, PT) == PTL_OK);
    barrier();
    get_counted(s, 0, 0, 8, 8, PT, 4); /* enabled again */
    barrier();
    expect_ct(tct, 1);
    unlink_entry(s, e);
    /* A PT with an EQ: the target's GET event. */
    e = post(s, PT_EV, 256, PTL_ME_OP_GET, PTL_CT_NONE, PTL_UID_ANY, 5);
    barrier();
    get_counted(s, 0, 16, 32, 40, PT_EV, 5);
    XP_REQUIRE(PtlEQWait(s->teq, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.type, PTL_EVENT_GET);
    XP_CHECK_EQ(ev.mlength, 32);
    XP_CHECK_EQ(ev.rlength, 32);
    XP_CHECK_EQ(ev.remote_offset, 40);
    XP_CHECK_EQ(ev.initiator.rank, (ptl_rank_t)prev_rank());
    XP_CHECK(ev.start == tbuf + 40);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    if (s->matching)
        XP_CHECK_EQ(ev.match_bits, 5);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(tct);
}

/* Matching: USE_ONCE MEs consumed in order, then the persistent one
 * behind them; a wildcard ME in front of an exact one wins. */
static void test_me(side_t *s)
{
    if (!s->matching)
        return;
    ptl_handle_ct_t tct = new_ct(s);
    ptl_handle_any_t h;
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = tbuf;
    me.ct_handle = tct;
    me.uid = PTL_UID_ANY;
    me.match_id.rank = (ptl_rank_t)prev_rank();
    me.match_bits = 9;
    me.options = PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES |
                 PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE;
    /* Two USE_ONCE entries (16 and 32 bytes long), then a persistent one. */
    me.length = 16;
    me.options |= PTL_ME_USE_ONCE;
    XP_REQUIRE(PtlMEAppend(s->ni, PT, &me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    me.length = 32;
    XP_REQUIRE(PtlMEAppend(s->ni, PT, &me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    me.length = 4096;
    me.options &= ~(unsigned)PTL_ME_USE_ONCE;
    ptl_handle_any_t keep;
    XP_REQUIRE(PtlMEAppend(s->ni, PT, &me, PTL_PRIORITY_LIST, NULL, &keep) == PTL_OK);
    barrier();
    ptl_event_t ev = get_event(s, 0, 64, 0, PT, 9, NULL); /* the 16-byte one */
    XP_CHECK_EQ(ev.mlength, 16);
    ev = get_event(s, 0, 64, 0, PT, 9, NULL); /* the 32-byte one */
    XP_CHECK_EQ(ev.mlength, 32);
    get_counted(s, 0, 0, 64, 0, PT, 9); /* the persistent one, whole */
    get_counted(s, 1, 0, 64, 64, PT, 9);
    barrier();
    expect_ct(tct, 16 + 32 + 64 + 64);
    barrier();
    unlink_entry(s, keep);
    /* A wildcard ME before an exact one: the wildcard serves. */
    ptl_handle_ct_t wct = new_ct(s);
    me.length = 4096;
    me.ct_handle = wct;
    me.match_id.rank = PTL_RANK_ANY;
    me.ignore_bits = ~(ptl_match_bits_t)0;
    ptl_handle_any_t w, x;
    XP_REQUIRE(PtlMEAppend(s->ni, PT, &me, PTL_PRIORITY_LIST, NULL, &w) == PTL_OK);
    me.ct_handle = tct;
    me.match_id.rank = (ptl_rank_t)prev_rank();
    me.ignore_bits = 0;
    XP_REQUIRE(PtlMEAppend(s->ni, PT, &me, PTL_PRIORITY_LIST, NULL, &x) == PTL_OK);
    barrier();
    get_counted(s, 0, 0, 8, 0, PT, 9);
    barrier();
    expect_ct(wct, 8);
    expect_ct(tct, 16 + 32 + 64 + 64);
    barrier();
    unlink_entry(s, w);
    unlink_entry(s, x);
    PtlCTFree(tct);
    PtlCTFree(wct);
}

/* PtlGet's memo: alternating MDs and targets, arguments refused on a hit,
 * a released MD's handle, a new MD after it. */
static void test_memo(side_t *s)
{
    ptl_handle_ct_t tct = new_ct(s);
    ptl_handle_any_t e = post(s, PT, 4096, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, tct,
                              PTL_UID_ANY, 6);
    ptl_size_t served = 0, to_self = 0;
    barrier();
    for (int i = 0; i < 20; i++) {
        get_counted(s, i % 3 == 0, (ptl_size_t)i, 8, (ptl_size_t)i * 3, PT, 6);
        served++;
        /* An LE takes gets from anybody: every other one to this rank too
         * (the memo's target changes). */
        if (!s->matching && i % 2) {
            get_counted_to(s, (ptl_rank_t)xp_rank(), i % 4 == 1, 100, (ptl_size_t)i, i, PT, 6);
            to_self++;
        }
    }
    /* Refused at once on a hit: past the MD, too long, a bad rank. */
    get_counted(s, 0, 0, 8, 0, PT, 6);
    served++;
    XP_CHECK_EQ(PtlGet(s->md_n, sizeof(dst) - 4, 8, s->next, PT, 6, 0, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlGet(s->md_n, 0, sizeof(dst) + 1, s->next, PT, 6, 0, NULL), PTL_ARG_INVALID);
    ptl_process_t bad = { .rank = (ptl_rank_t)xp_size() };
    XP_CHECK_EQ(PtlGet(s->md_n, 0, 8, bad, PT, 6, 0, NULL), PTL_ARG_INVALID);
    /* A released MD: its handle refused, then a new MD works. */
    ptl_handle_ct_t ct2 = new_ct(s);
    ptl_md_t md;
    ptl_handle_md_t h;
    memset(&md, 0, sizeof(md));
    md.start = dst;
    md.length = 512;
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct2;
    md.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &h) == PTL_OK);
    ptl_ct_event_t cev;
    XP_REQUIRE(PtlGet(h, 0, 8, s->next, PT, 6, 16, NULL) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct2, 1, &cev) == PTL_OK);
    served++;
    XP_CHECK(landed(0, 16, 8));
    XP_CHECK_EQ(PtlMDRelease(h), PTL_OK);
    XP_CHECK_EQ(PtlGet(h, 0, 8, s->next, PT, 6, 16, NULL), PTL_ARG_INVALID);
    md.length = 256;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &h) == PTL_OK);
    XP_CHECK_EQ(PtlGet(h, 250, 8, s->next, PT, 6, 0, NULL), PTL_ARG_INVALID); /* new length */
    memset(dst, 0, 32);
    XP_REQUIRE(PtlGet(h, 8, 24, s->next, PT, 6, 100, NULL) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct2, 2, &cev) == PTL_OK);
    served++;
    XP_CHECK(landed(8, 100, 24));
    XP_CHECK_EQ(PtlMDRelease(h), PTL_OK);
    PtlCTFree(ct2);
    barrier();
    expect_ct(tct, served + to_self);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(tct);
}

/* A window of gets issued without waiting: the requests fill the target's
 * ring (PtlGet's send falls back to the general one, which progresses)
 * and the 3-cell REPLYs the answer lane (the target's in-place REPLY
 * falls back to the deferred send). Every byte and count arrives. */
static void test_window(side_t *s)
{
    enum { N = 5000, SZ = 100, SLOTS = 32 };
    ptl_handle_ct_t tct = new_ct(s);
    ptl_handle_any_t e = post(s, PT, 4096, PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM, tct,
                              PTL_UID_ANY, 8);
    barrier();
    memset(dst, 0, SZ * SLOTS);
    for (int i = 0; i < N; i++)
        XP_REQUIRE(PtlGet(s->md_b, (ptl_size_t)(i % SLOTS) * SZ, SZ, s->next, PT, 8,
                          (ptl_size_t)(i % SLOTS) * SZ, NULL) == PTL_OK);
    s->want_b += (ptl_size_t)N * SZ;
    expect_ct(s->ct_b, s->want_b);
    XP_CHECK(landed(0, 0, SZ * SLOTS));
    barrier();
    expect_ct(tct, N);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(tct);
}

int main(void)
{
    side_t s;
    XP_REQUIRE(PtlInit() == PTL_OK);
    for (int matching = 0; matching <= 1; matching++) {
        side_init(&s, matching);
        test_plain(&s);
        test_full(&s);
        test_refused(&s);
        test_me(&s);
        test_memo(&s);
        test_window(&s);
        barrier();
        side_fini(&s);
    }
    PtlFini();
    return xp_test_result();
}
