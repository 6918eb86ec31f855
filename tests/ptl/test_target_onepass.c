/*
 * test_target_onepass - the target's one-pass path for small inline puts
 * and one-element atomics (target.c fast_put, fast_atomic: per-entry
 * XP_LE_FAST_* flags computed at append) and every condition that must send
 * a message to the full path instead. Each rank
 * puts to the next one (itself with 1 process) and checks what landed in
 * its own entries:
 *   - a plain persistent LE counting with a CT (one pass), truncation with
 *     EVENT_CT_BYTES (target count and the ACK's length), an offset past the
 *     end (zero bytes, still counted), a put too long for a compact header
 *     (full header, one pass);
 *   - options that disable the one pass: MANAGE_LOCAL (consecutive offsets),
 *     ACK_DISABLE with a counting ACK (completion without a count), a uid
 *     other than PTL_UID_ANY (permission violation), an iovec LE, an EQ with
 *     events enabled (full PUT event) and with COMM_DISABLE (no event), a
 *     disabled PT (PT_DISABLED failure), the overflow list;
 *   - a triggered CTInc on the entry's CT (fired after the PT is left);
 *   - atomics (target.c fast_atomic): a fetch-add and a PtlAtomic BXOR in
 *     one pass; MIN (the general form), a misaligned element, an element that does not fit or
 *     lies past the end, an entry without OP_GET (fetch refused) and
 *     ACK_DISABLE on the full path;
 *   - the atomic path's forms (test_atomic_forms): compact fetches of 4
 *     and 8 bytes, a full-header fetch, a PtlAtomic without an ACK, a
 *     fetch-add while an earlier wildcard ME is in the list;
 *   - the general form (test_atomic_general): fetch MAX, PtlAtomic MIN
 *     with a counting ACK, PtlSwap SWAP / CSWAP (equal and not) / MSWAP, a
 *     double SUM, a signed-byte MIN; a misaligned element and two
 *     elements at once (both the full path);
 *   - on a matching NI: exact MEs found by hash, an earlier wildcard ME
 *     winning over a later exact one, an earlier NO_TRUNCATE ME too short
 *     for the message skipped, USE_ONCE MEs consumed in order, a put that
 *     matches nothing dropped;
 *   - puts without an ACK (the frameless form of the one pass in
 *     xp_eng_recv): 0..16 bytes, longer ones (its out-of-line copy),
 *     truncation, an offset past the end, two alternating ME keys (hash
 *     walk, not the cached entry), an exact ME found while the list also
 *     holds a wildcard ME (left to the general form), a disabled PT (the
 *     put dropped, nothing counted).
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_entries.h"
#include "xp_test.h"
#include "xportals/xp.h"

#define PT 5

typedef struct side {
    ptl_handle_ni_t ni;
    ptl_handle_md_t md_n, md_b, md_f; /* ACKs counted as events / as bytes / failures */
    ptl_handle_ct_t ct_n, ct_b, ct_f;
    ptl_size_t want_n, want_b;
    ptl_process_t next;
    int matching;
} side_t;

static unsigned char src[2048];

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
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct_n) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct_b) == PTL_OK);
    memset(&md, 0, sizeof(md));
    md.start = src;
    md.length = sizeof(src);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = s->ct_n;
    md.options = PTL_MD_EVENT_CT_ACK;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_n) == PTL_OK);
    md.ct_handle = s->ct_b;
    md.options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_BYTES;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_b) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->ct_f) == PTL_OK);
    md.ct_handle = s->ct_f;
    md.options = PTL_MD_EVENT_CT_ACK;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->md_f) == PTL_OK);
    s->next.rank = (ptl_rank_t)((xp_rank() + 1) % xp_size());
}

static void side_fini(side_t *s)
{
    PtlMDRelease(s->md_n);
    PtlMDRelease(s->md_b);
    PtlMDRelease(s->md_f);
    PtlCTFree(s->ct_n);
    PtlCTFree(s->ct_b);
    PtlCTFree(s->ct_f);
    PtlPTFree(s->ni, PT);
    PtlNIFini(s->ni);
}

/* An entry on `pt` of this side's NI (an ME matching `bits` from the
 * previous rank, or anything with `any`, on a matching NI). */
static ptl_handle_any_t post(side_t *s, ptl_pt_index_t pt, void *buf, ptl_size_t len,
                             unsigned opts, ptl_handle_ct_t ct, ptl_uid_t uid, ptl_list_t list,
                             uint64_t bits, int any)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = buf;
    me.length = len;
    me.ct_handle = ct;
    me.uid = uid;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_LINK_DISABLE | opts;
    me.match_id.rank = any ? PTL_RANK_ANY : (ptl_rank_t)((xp_rank() + xp_size() - 1) % xp_size());
    me.match_bits = bits;
    me.ignore_bits = any ? ~(ptl_match_bits_t)0 : 0;
    return xp_test_append(s->ni, s->matching, pt, &me, list);
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

/* A put with a counting ACK through md_n (bytes = 0) or md_b. */
static void put(side_t *s, ptl_pt_index_t pt, ptl_size_t len, ptl_size_t roff, uint64_t bits,
                int bytes)
{
    XP_REQUIRE(PtlPut(bytes ? s->md_b : s->md_n, 0, len, PTL_CT_ACK_REQ, s->next, pt, bits, roff,
                      NULL, 0) == PTL_OK);
}

/* Wait for the initiator's counts: want_n ACKs on md_n, want_b bytes
 * acknowledged on md_b, no failure. */
static void wait_acks(side_t *s)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(s->ct_n, s->want_n, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, s->want_n);
    XP_CHECK_EQ(ev.failure, 0);
    XP_REQUIRE(PtlCTWait(s->ct_b, s->want_b, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, s->want_b);
    XP_CHECK_EQ(ev.failure, 0);
}

/* A put (through md_f) that the target must refuse: its ACK counts one
 * failure (a failure ends PtlCTWait, so the count is reset after each). */
static void put_refused(side_t *s, ptl_pt_index_t pt, uint64_t bits)
{
    ptl_ct_event_t ev, zero = { 0, 0 };
    XP_REQUIRE(PtlPut(s->md_f, 0, 8, PTL_CT_ACK_REQ, s->next, pt, bits, 0, NULL, 0) == PTL_OK);
    XP_REQUIRE(PtlCTWait(s->ct_f, 1, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, 0);
    XP_CHECK_EQ(ev.failure, 1);
    XP_REQUIRE(PtlCTSet(s->ct_f, zero) == PTL_OK);
}

/* A target CT must reach `success` (no failure); a count that stays short
 * is reported with the line instead of hanging. */
static void expect_ct_at(int line, ptl_handle_ct_t ct, ptl_size_t success)
{
    ptl_ct_event_t ev;
    unsigned int which;
    int rc = PtlCTPoll(&ct, &success, 1, 10000, &ev, &which);
    if (rc != PTL_OK)
        fprintf(stderr, "line %d: rank %d: CT at %llu/%llu, want %llu (rc %d)\n", line, xp_rank(),
                (unsigned long long)ev.success, (unsigned long long)ev.failure,
                (unsigned long long)success, rc);
    XP_REQUIRE(rc == PTL_OK);
    XP_CHECK_EQ(ev.success, success);
    XP_CHECK_EQ(ev.failure, 0);
}
#define expect_ct(ct, n) expect_ct_at(__LINE__, ct, n)

static void fill_src(unsigned char seed)
{
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(seed + i * 7);
}

/* One pass: plain LE/ME, truncation counted in bytes, offset past the end,
 * a put too long for the compact header. */
static void test_plain(side_t *s)
{
    static unsigned char buf[8], big[1500];
    ptl_handle_ct_t cb = new_ct(s), cn = new_ct(s);
    ptl_handle_any_t e1 = post(s, PT, buf, sizeof(buf), PTL_ME_EVENT_CT_BYTES, cb, PTL_UID_ANY,
                               PTL_PRIORITY_LIST, 1, 0);
    ptl_handle_any_t e2 = post(s, PT, big, sizeof(big), 0, cn, PTL_UID_ANY, PTL_PRIORITY_LIST, 2,
                               0);
    memset(buf, 0xEE, sizeof(buf));
    memset(big, 0xEE, sizeof(big));
    fill_src(1);
    barrier();
    put(s, PT, 16, 4, 1, 1); /* truncated to 4 bytes */
    s->want_b += 4;
    wait_acks(s);
    expect_ct(cb, 4);
    XP_CHECK(memcmp(buf + 4, src, 4) == 0);
    XP_CHECK_EQ(buf[3], 0xEE);
    put(s, PT, 8, 100, 1, 0); /* past the end: 0 bytes */
    s->want_n++;
    wait_acks(s);
    if (!s->matching) { /* on an LE NI the first LE takes everything */
        expect_ct(cb, 4);
    } else {
        put(s, PT, 1000, 300, 2, 0); /* > 255 bytes: full header */
        s->want_n++;
        wait_acks(s);
        expect_ct(cn, 1);
        XP_CHECK(memcmp(big + 300, src, 1000) == 0);
        XP_CHECK_EQ(big[299], 0xEE);
        XP_CHECK_EQ(big[1300], 0xEE);
    }
    barrier();
    unlink_entry(s, e1);
    unlink_entry(s, e2);
    PtlCTFree(cb);
    PtlCTFree(cn);
    if (!s->matching) { /* the full-header put on an LE */
        ptl_handle_ct_t c = new_ct(s);
        ptl_handle_any_t e = post(s, PT, big, sizeof(big), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST,
                                  0, 0);
        barrier();
        put(s, PT, 1000, 300, 0, 0);
        s->want_n++;
        wait_acks(s);
        expect_ct(c, 1);
        XP_CHECK(memcmp(big + 300, src, 1000) == 0);
        barrier();
        unlink_entry(s, e);
        PtlCTFree(c);
    }
}

/* Options that send the put to the full path. */
static void test_options(side_t *s)
{
    static unsigned char ml[32], na[8], perm[8], p1[4], p2[4];
    ptl_handle_ct_t c = new_ct(s);
    ptl_uid_t uid;
    XP_REQUIRE(PtlGetUid(s->ni, &uid) == PTL_OK);
    ptl_size_t n = 0; /* c's count */
    ptl_handle_any_t e;
    fill_src(9);
    if (s->matching) { /* MANAGE_LOCAL (MEs only): the second put lands after the first */
        e = post(s, PT, ml, sizeof(ml), PTL_ME_MANAGE_LOCAL, c, PTL_UID_ANY, PTL_PRIORITY_LIST,
                 3, 0);
        memset(ml, 0, sizeof(ml));
        barrier();
        put(s, PT, 8, 0, 3, 0);
        put(s, PT, 8, 0, 3, 0);
        s->want_n += 2;
        wait_acks(s);
        expect_ct(c, n += 2);
        XP_CHECK(memcmp(ml, src, 8) == 0 && memcmp(ml + 8, src, 8) == 0);
        barrier();
        unlink_entry(s, e);
    }

    /* ACK_DISABLE: the counting ACK becomes a bare completion (no count);
     * the next put's ACK arrives after it */
    e = post(s, PT, na, sizeof(na), PTL_ME_ACK_DISABLE, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 4, 0);
    barrier();
    put(s, PT, 8, 0, 4, 0);
    expect_ct(c, ++n);
    barrier();
    unlink_entry(s, e);
    e = post(s, PT, na, sizeof(na), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 4, 0);
    barrier();
    put(s, PT, 8, 0, 4, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, ++n);
    barrier();
    unlink_entry(s, e);

    /* another uid: permission violation, nothing delivered or counted */
    e = post(s, PT, perm, sizeof(perm), 0, c, uid + 1, PTL_PRIORITY_LIST, 5, 0);
    memset(perm, 0, sizeof(perm));
    barrier();
    put_refused(s, PT, 5);
    barrier();
    expect_ct(c, n);
    XP_CHECK_EQ(perm[0], 0);
    unlink_entry(s, e);

    /* an iovec entry: the message is split over its pieces */
    ptl_iovec_t iov[2] = { { p1, sizeof(p1) }, { p2, sizeof(p2) } };
    e = post(s, PT, iov, 2, PTL_IOVEC, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 6, 0);
    barrier();
    put(s, PT, 8, 0, 6, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, ++n);
    XP_CHECK(memcmp(p1, src, 4) == 0 && memcmp(p2, src + 4, 4) == 0);
    barrier();
    unlink_entry(s, e);

    /* a disabled PT: the initiator learns it, nothing is counted */
    e = post(s, PT, na, sizeof(na), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 7, 0);
    XP_REQUIRE(PtlPTDisable(s->ni, PT) == PTL_OK);
    barrier();
    put_refused(s, PT, 7);
    barrier();
    XP_REQUIRE(PtlPTEnable(s->ni, PT) == PTL_OK);
    expect_ct(c, n);
    unlink_entry(s, e);

    /* the overflow list only */
    e = post(s, PT, na, sizeof(na), PTL_ME_UNEXPECTED_HDR_DISABLE, c, PTL_UID_ANY,
             PTL_OVERFLOW_LIST, 8, 0);
    memset(na, 0, sizeof(na));
    barrier();
    put(s, PT, 8, 0, 8, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, ++n);
    XP_CHECK(memcmp(na, src, 8) == 0);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(c);
}

/* A PT with an EQ: events enabled on one entry (full path), disabled on
 * another (one pass, and no event). */
static void test_eq(side_t *s)
{
    static unsigned char a[8], b[8];
    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    ptl_event_t ev;
    ptl_handle_ct_t c = new_ct(s);
    XP_REQUIRE(PtlEQAlloc(s->ni, 16, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, eq, PT + 1, &pt) == PTL_OK);
    ptl_handle_any_t quiet = post(s, pt, a, sizeof(a), PTL_ME_EVENT_COMM_DISABLE, c, PTL_UID_ANY,
                                  PTL_PRIORITY_LIST, 1, 0);
    barrier();
    put(s, pt, 8, 0, 1, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, 1);
    XP_CHECK_EQ(PtlEQGet(eq, &ev), PTL_EQ_EMPTY);
    barrier();
    unlink_entry(s, quiet);
    ptl_handle_any_t loud = post(s, pt, b, sizeof(b), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 1, 0);
    barrier();
    put(s, pt, 6, 1, 1, 0);
    s->want_n++;
    wait_acks(s);
    unsigned int which;
    XP_REQUIRE(PtlEQPoll(&eq, 1, 10000, &ev, &which) == PTL_OK); /* not a hang if missing */
    XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
    XP_CHECK_EQ(ev.mlength, 6);
    XP_CHECK_EQ(ev.remote_offset, 1);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    expect_ct(c, 2);
    barrier();
    unlink_entry(s, loud);
    PtlPTFree(s->ni, pt);
    PtlEQFree(eq);
    PtlCTFree(c);
}

/* A triggered CTInc on the entry's CT fires from the put's count. */
static void test_triggered(side_t *s)
{
    static unsigned char a[8];
    ptl_handle_ct_t c = new_ct(s);
    ptl_ct_event_t inc = { 10, 0 };
    ptl_handle_any_t e = post(s, PT, a, sizeof(a), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 9, 0);
    XP_REQUIRE(PtlTriggeredCTInc(c, inc, c, 1) == PTL_OK);
    barrier();
    put(s, PT, 8, 0, 9, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, 11);
    barrier();
    unlink_entry(s, e);
    PtlCTFree(c);
}

/* A fetching atomic on `pt` of the next rank through md_g (replies into
 * `fetched`), operand from src; waits for the reply. refused: the target
 * must answer with a failure. */
static unsigned char fetched[16];

static void fetch_op(side_t *s, ptl_handle_md_t md_g, ptl_handle_ct_t ct_g, ptl_size_t *n_g,
                     ptl_size_t roff, uint64_t bits, ptl_op_t op, ptl_datatype_t dt,
                     ptl_size_t len, int refused)
{
    ptl_ct_event_t ev, reset;
    XP_REQUIRE(PtlFetchAtomic(md_g, 0, s->md_n, 0, len, s->next, PT, bits, roff, NULL, 0, op, dt) ==
               PTL_OK);
    XP_REQUIRE(PtlCTWait(ct_g, *n_g + 1, &ev) == PTL_OK);
    if (refused) {
        XP_CHECK_EQ(ev.success, *n_g);
        XP_CHECK_EQ(ev.failure, 1);
        reset.success = *n_g;
        reset.failure = 0;
        XP_REQUIRE(PtlCTSet(ct_g, reset) == PTL_OK);
    } else {
        XP_CHECK_EQ(ev.success, ++*n_g);
        XP_CHECK_EQ(ev.failure, 0);
    }
}

/* Atomics: one-element native ones take the one pass; other operations,
 * a misaligned element, one that does not fit, an entry without OP_GET
 * and ACK_DISABLE take the full path. */
static void test_atomics(side_t *s)
{
    static uint64_t w[4], ng[2];
    ptl_handle_ct_t c = new_ct(s), ct_g;
    ptl_handle_md_t md_g;
    ptl_md_t md;
    ptl_size_t n_g = 0, n = 0;
    uint64_t v;
    uint32_t v32;
    XP_REQUIRE(PtlCTAlloc(s->ni, &ct_g) == PTL_OK);
    memset(&md, 0, sizeof(md));
    md.start = fetched;
    md.length = sizeof(fetched);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct_g;
    md.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &md_g) == PTL_OK);
    ptl_handle_any_t e = post(s, PT, w, sizeof(w), PTL_ME_OP_GET, c, PTL_UID_ANY,
                              PTL_PRIORITY_LIST, 20, 0);
    w[0] = 0;
    w[1] = 100;
    w[2] = UINT64_C(0xF0F0F0F0F0F0F0F0);
    w[3] = 7;
    barrier();
    /* fetch-add, 8 bytes: one pass */
    v = 5;
    memcpy(src, &v, 8);
    fetch_op(s, md_g, ct_g, &n_g, 8, 20, PTL_SUM, PTL_UINT64_T, 8, 0);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 100);
    /* PtlAtomic BXOR on 4 bytes with a counting ACK: one pass */
    v32 = 0xFFFFFFFFu;
    memcpy(src, &v32, 4);
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 4, PTL_CT_ACK_REQ, s->next, PT, 20, 16, NULL, 0, PTL_BXOR,
                         PTL_UINT32_T) == PTL_OK);
    s->want_n++;
    wait_acks(s);
    /* MIN: the general form (xp_atomic_apply) */
    v = 3;
    memcpy(src, &v, 8);
    fetch_op(s, md_g, ct_g, &n_g, 24, 20, PTL_MIN, PTL_UINT64_T, 8, 0);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 7);
    /* a misaligned 4-byte element: the full path */
    v32 = 0x01010101u;
    memcpy(src, &v32, 4);
    fetch_op(s, md_g, ct_g, &n_g, 2, 20, PTL_SUM, PTL_UINT32_T, 4, 0);
    memcpy(&v32, fetched, 4);
    XP_CHECK_EQ(v32, 0);
    /* an element that does not fit: nothing changes, nothing fetched */
    memset(fetched, 0xCC, sizeof(fetched));
    fetch_op(s, md_g, ct_g, &n_g, sizeof(w) - 4, 20, PTL_SUM, PTL_UINT64_T, 8, 0);
    XP_CHECK_EQ(fetched[0], 0xCC);
    fetch_op(s, md_g, ct_g, &n_g, 4096, 20, PTL_SUM, PTL_UINT64_T, 8, 0); /* past the end */
    XP_CHECK_EQ(fetched[0], 0xCC);
    expect_ct(c, n += 6);
    barrier();
    XP_CHECK_EQ(w[1], 105);
    XP_CHECK_EQ(w[2], UINT64_C(0xF0F0F0F00F0F0F0F));
    XP_CHECK_EQ(w[3], 3);
    XP_CHECK_EQ(w[0], UINT64_C(0x0000010101010000)); /* bytes 2..5 */
    unlink_entry(s, e);
    /* no OP_GET: a fetching atomic is refused, a plain one is not */
    e = post(s, PT, ng, sizeof(ng), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 21, 0);
    ng[0] = 1;
    ng[1] = 0;
    barrier();
    v = 1;
    memcpy(src, &v, 8);
    fetch_op(s, md_g, ct_g, &n_g, 0, 21, PTL_SUM, PTL_UINT64_T, 8, 1);
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 8, PTL_CT_ACK_REQ, s->next, PT, 21, 0, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    s->want_n++;
    wait_acks(s);
    expect_ct(c, ++n);
    barrier();
    XP_CHECK_EQ(ng[0], 2);
    unlink_entry(s, e);
    /* ACK_DISABLE: the counting ACK becomes a bare completion */
    e = post(s, PT, ng, sizeof(ng), PTL_ME_ACK_DISABLE, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 22, 0);
    barrier();
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 8, PTL_CT_ACK_REQ, s->next, PT, 22, 8, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    expect_ct(c, ++n);
    barrier();
    unlink_entry(s, e);
    e = post(s, PT, ng, sizeof(ng), 0, c, PTL_UID_ANY, PTL_PRIORITY_LIST, 22, 0);
    barrier();
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 8, PTL_CT_ACK_REQ, s->next, PT, 22, 8, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    s->want_n++;
    wait_acks(s); /* exactly one more: the bare completion was not counted */
    expect_ct(c, ++n);
    barrier();
    XP_CHECK_EQ(ng[1], 2);
    unlink_entry(s, e);
    PtlMDRelease(md_g);
    PtlCTFree(ct_g);
    PtlCTFree(c);
}

/* The forms of the one-pass atomic path (target.c fast_atomic without a
 * frame; its answer and count out of line): a compact fetch of 4 and 8
 * bytes replying into an offset of the get MD, a fetch with the full
 * header (hdr_data: fast_fetch_full), a PtlAtomic without an ACK (counted
 * at the target only), and on a matching NI a fetch-add to an exact ME
 * while an earlier wildcard ME is in the list (left to the general form:
 * the wildcard entry takes it). */
static void test_atomic_forms(side_t *s)
{
    static uint64_t a[4], wl[2];
    ptl_handle_ct_t c = new_ct(s), cwl = new_ct(s), ct_g;
    ptl_handle_md_t md_g;
    ptl_md_t md;
    ptl_size_t n_g = 0, n = 0;
    uint64_t v;
    uint32_t v32;
    XP_REQUIRE(PtlCTAlloc(s->ni, &ct_g) == PTL_OK);
    memset(&md, 0, sizeof(md));
    md.start = fetched;
    md.length = sizeof(fetched);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct_g;
    md.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &md_g) == PTL_OK);
    ptl_handle_any_t ew = 0;
    if (s->matching)
        ew = post(s, PT, wl, sizeof(wl), PTL_ME_OP_GET, cwl, PTL_UID_ANY, PTL_PRIORITY_LIST, 0,
                  1);
    ptl_handle_any_t e = post(s, PT, a, sizeof(a), PTL_ME_OP_GET, c, PTL_UID_ANY,
                              PTL_PRIORITY_LIST, 30, 0);
    a[0] = 10;
    a[1] = UINT64_C(0x1111111122222222);
    a[2] = 1000;
    a[3] = 0;
    wl[0] = 40;
    wl[1] = 0;
    barrier();
    if (s->matching) {
        /* the earlier wildcard ME wins (general form) */
        v = 2;
        memcpy(src, &v, 8);
        fetch_op(s, md_g, ct_g, &n_g, 0, 30, PTL_SUM, PTL_INT64_T, 8, 0);
        memcpy(&v, fetched, 8);
        XP_CHECK_EQ(v, 40);
        expect_ct(cwl, 1);
        barrier();
        XP_CHECK_EQ(wl[0], 42);
        XP_CHECK_EQ(a[0], 10);
        unlink_entry(s, ew);
        barrier();
    }
    /* compact fetch, 8 bytes, into offset 8 of the get MD */
    memset(fetched, 0xCC, sizeof(fetched));
    v = 3;
    memcpy(src, &v, 8);
    XP_REQUIRE(PtlFetchAtomic(md_g, 8, s->md_n, 0, 8, s->next, PT, 30, 0, NULL, 0, PTL_SUM,
                              PTL_UINT64_T) == PTL_OK);
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(ct_g, ++n_g, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
    memcpy(&v, fetched + 8, 8);
    XP_CHECK_EQ(v, 10);
    XP_CHECK_EQ(fetched[0], 0xCC);
    /* compact fetch, 4 bytes (BAND on the low word of a[1]) */
    memset(fetched, 0xCC, sizeof(fetched));
    v32 = 0x0000FFFFu;
    memcpy(src, &v32, 4);
    fetch_op(s, md_g, ct_g, &n_g, 8, 30, PTL_BAND, PTL_UINT32_T, 4, 0);
    memcpy(&v32, fetched, 4);
    XP_CHECK_EQ(v32, 0x22222222u);
    XP_CHECK_EQ(fetched[4], 0xCC); /* 4 bytes replied, no more */
    /* a fetch with the full header (hdr_data), BOR on 8 bytes */
    v = 0x0F;
    memcpy(src, &v, 8);
    XP_REQUIRE(PtlFetchAtomic(md_g, 0, s->md_n, 0, 8, s->next, PT, 30, 16, NULL, 77, PTL_BOR,
                              PTL_UINT64_T) == PTL_OK);
    XP_REQUIRE(PtlCTWait(ct_g, ++n_g, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 1000);
    /* PtlAtomic without an ACK: only the target counts it */
    v = 5;
    memcpy(src, &v, 8);
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 8, PTL_NO_ACK_REQ, s->next, PT, 30, 24, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 8, PTL_NO_ACK_REQ, s->next, PT, 30, 24, NULL, 0, PTL_SUM,
                         PTL_UINT64_T) == PTL_OK);
    expect_ct(c, n += 5);
    barrier();
    XP_CHECK_EQ(a[0], 13);
    XP_CHECK_EQ(a[1], UINT64_C(0x1111111100002222));
    XP_CHECK_EQ(a[2], 1000 | 0x0F);
    XP_CHECK_EQ(a[3], 10);
    unlink_entry(s, e);
    barrier();
    PtlMDRelease(md_g);
    PtlCTFree(ct_g);
    PtlCTFree(cwl);
    PtlCTFree(c);
}

/* A PtlSwap on `pt` of the next rank (operand `cmp`, data from src),
 * reply into `fetched`; waits for it. */
static void swap_op(side_t *s, ptl_handle_md_t md_g, ptl_handle_ct_t ct_g, ptl_size_t *n_g,
                    ptl_size_t roff, uint64_t bits, ptl_op_t op, ptl_datatype_t dt,
                    ptl_size_t len, const void *cmp)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlSwap(md_g, 0, s->md_n, 0, len, s->next, PT, bits, roff, NULL, 0, cmp, op, dt) ==
               PTL_OK);
    XP_REQUIRE(PtlCTWait(ct_g, ++*n_g, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, *n_g);
    XP_CHECK_EQ(ev.failure, 0);
}

/* The general form of the one-pass atomic path (fast_atomic_general with
 * xp_atomic_apply): operations other than the native four, PtlSwap's
 * family, 1-byte and floating-point elements; a misaligned element and a
 * two-element atomic (still the full path). Each is checked for the value fetched and the
 * value left. */
static void test_atomic_general(side_t *s)
{
    static uint64_t g[10];
    ptl_handle_ct_t c = new_ct(s), ct_g;
    ptl_handle_md_t md_g;
    ptl_md_t md;
    ptl_size_t n_g = 0, n = 0;
    uint64_t v, cmp;
    uint32_t v32;
    int8_t v8;
    double d;
    XP_REQUIRE(PtlCTAlloc(s->ni, &ct_g) == PTL_OK);
    memset(&md, 0, sizeof(md));
    md.start = fetched;
    md.length = sizeof(fetched);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct_g;
    md.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &md_g) == PTL_OK);
    ptl_handle_any_t e = post(s, PT, g, sizeof(g), PTL_ME_OP_GET, c, PTL_UID_ANY,
                              PTL_PRIORITY_LIST, 40, 0);
    memset(g, 0, sizeof(g));
    g[0] = 5;
    v32 = 16;
    memcpy(&g[1], &v32, 4);
    g[2] = 100;
    g[3] = 0xFF00;
    d = 1.5;
    memcpy(&g[4], &d, 8);
    v8 = 50;
    memcpy((char *)&g[5], &v8, 1);
    v32 = 1000;
    memcpy((char *)&g[6] + 2, &v32, 4); /* misaligned */
    g[8] = 1;
    g[9] = 2;
    barrier();
    /* fetch MAX, 8 bytes */
    v = 9;
    memcpy(src, &v, 8);
    fetch_op(s, md_g, ct_g, &n_g, 0, 40, PTL_MAX, PTL_UINT64_T, 8, 0);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 5);
    /* PtlAtomic MIN, 4 bytes, with a counting ACK */
    v32 = 7;
    memcpy(src, &v32, 4);
    XP_REQUIRE(PtlAtomic(s->md_n, 0, 4, PTL_CT_ACK_REQ, s->next, PT, 40, 8, NULL, 0, PTL_MIN,
                         PTL_INT32_T) == PTL_OK);
    s->want_n++;
    wait_acks(s);
    /* SWAP, then CSWAP that matches, then one that does not */
    v = 200;
    memcpy(src, &v, 8);
    swap_op(s, md_g, ct_g, &n_g, 16, 40, PTL_SWAP, PTL_UINT64_T, 8, NULL);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 100);
    cmp = 200;
    v = 300;
    memcpy(src, &v, 8);
    swap_op(s, md_g, ct_g, &n_g, 16, 40, PTL_CSWAP, PTL_UINT64_T, 8, &cmp);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 200);
    cmp = 1;
    v = 400;
    memcpy(src, &v, 8);
    swap_op(s, md_g, ct_g, &n_g, 16, 40, PTL_CSWAP, PTL_UINT64_T, 8, &cmp);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 300);
    /* MSWAP: (old & ~mask) | (data & mask) */
    cmp = 0x0F0F;
    v = 0xAAAA;
    memcpy(src, &v, 8);
    swap_op(s, md_g, ct_g, &n_g, 24, 40, PTL_MSWAP, PTL_UINT64_T, 8, &cmp);
    memcpy(&v, fetched, 8);
    XP_CHECK_EQ(v, 0xFF00);
    /* fetch SUM on a double */
    d = 2.25;
    memcpy(src, &d, 8);
    fetch_op(s, md_g, ct_g, &n_g, 32, 40, PTL_SUM, PTL_DOUBLE, 8, 0);
    memcpy(&d, fetched, 8);
    XP_CHECK(d == 1.5);
    /* fetch MIN on one signed byte */
    v8 = -3;
    memcpy(src, &v8, 1);
    fetch_op(s, md_g, ct_g, &n_g, 40, 40, PTL_MIN, PTL_INT8_T, 1, 0);
    memcpy(&v8, fetched, 1);
    XP_CHECK_EQ(v8, 50);
    /* a misaligned 4-byte MAX: the full path (its lock) */
    v32 = 2000;
    memcpy(src, &v32, 4);
    fetch_op(s, md_g, ct_g, &n_g, 50, 40, PTL_MAX, PTL_UINT32_T, 4, 0);
    memcpy(&v32, fetched, 4);
    XP_CHECK_EQ(v32, 1000);
    /* two elements (a fetch SUM of 16 bytes): the full path */
    uint64_t two[2] = {10, 20};
    memcpy(src, two, 16);
    fetch_op(s, md_g, ct_g, &n_g, 64, 40, PTL_SUM, PTL_UINT64_T, 16, 0);
    memcpy(two, fetched, 16);
    XP_CHECK_EQ(two[0], 1);
    XP_CHECK_EQ(two[1], 2);
    expect_ct(c, n += 10);
    barrier();
    XP_CHECK_EQ(g[0], 9);
    memcpy(&v32, &g[1], 4);
    XP_CHECK_EQ(v32, 7);
    XP_CHECK_EQ(g[2], 300);
    XP_CHECK_EQ(g[3], 0xFA0A);
    memcpy(&d, &g[4], 8);
    XP_CHECK(d == 3.75);
    memcpy(&v8, (char *)&g[5], 1);
    XP_CHECK_EQ(v8, -3);
    memcpy(&v32, (char *)&g[6] + 2, 4);
    XP_CHECK_EQ(v32, 2000);
    XP_CHECK_EQ(g[8], 11);
    XP_CHECK_EQ(g[9], 22);
    unlink_entry(s, e);
    barrier();
    PtlMDRelease(md_g);
    PtlCTFree(ct_g);
    PtlCTFree(c);
}

/* A put without an ACK from md_n (completion: the target's counts). */
static void put_noack(side_t *s, ptl_size_t len, ptl_size_t roff, uint64_t bits)
{
    XP_REQUIRE(PtlPut(s->md_n, 0, len, PTL_NO_ACK_REQ, s->next, PT, bits, roff, NULL, 0) ==
               PTL_OK);
}

/* Puts without an ACK: the one pass that xp_eng_recv does without a frame,
 * and what it leaves to the general form or the full path. */
static void test_noack(side_t *s)
{
    static unsigned char a[64], b[600], w[8];
    static const ptl_size_t lens[] = { 0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 40, 64 };
    ptl_handle_ct_t ca = new_ct(s), cb = new_ct(s), cw = new_ct(s);
    ptl_handle_any_t ea = post(s, PT, a, sizeof(a), PTL_ME_EVENT_CT_BYTES, ca, PTL_UID_ANY,
                               PTL_PRIORITY_LIST, 21, 0);
    ptl_handle_any_t eb = post(s, PT, b, sizeof(b), 0, cb, PTL_UID_ANY, PTL_PRIORITY_LIST, 22, 0);
    ptl_size_t bytes = 0, nb = 0;
    barrier();
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        memset(a, 0xEE, sizeof(a));
        fill_src((unsigned char)(10 + i));
        barrier();
        put_noack(s, lens[i], 0, 21);
        bytes += lens[i];
        expect_ct(ca, bytes);
        XP_CHECK(memcmp(a, src, lens[i]) == 0);
        if (lens[i] < sizeof(a))
            XP_CHECK_EQ(a[lens[i]], 0xEE);
        barrier();
    }
    memset(a, 0xEE, sizeof(a));
    fill_src(30);
    barrier();
    put_noack(s, 12, 60, 21); /* truncated to 4 bytes */
    bytes += 4;
    expect_ct(ca, bytes);
    XP_CHECK(memcmp(a + 60, src, 4) == 0);
    XP_CHECK_EQ(a[59], 0xEE);
    put_noack(s, 8, 64, 21); /* past the end: counted, 0 bytes */
    if (s->matching) {
        put_noack(s, 8, 0, 22); /* behind it: the count above is final */
        expect_ct(cb, ++nb);
        expect_ct(ca, bytes);
        /* alternating keys: the entry is found by hash every time */
        for (int i = 0; i < 6; i++) {
            fill_src((unsigned char)(40 + i));
            barrier();
            put_noack(s, 8, 8 * (ptl_size_t)i, (i & 1) ? 21 : 22);
            if (i & 1) {
                bytes += 8;
                expect_ct(ca, bytes);
                XP_CHECK(memcmp(a + 8 * i, src, 8) == 0);
            } else {
                expect_ct(cb, ++nb);
                XP_CHECK(memcmp(b + 8 * i, src, 8) == 0);
            }
            barrier();
        }
        fill_src(50);
        barrier();
        put_noack(s, 300, 100, 22); /* full header, longer than a compact put */
        expect_ct(cb, ++nb);
        XP_CHECK(memcmp(b + 100, src, 300) == 0);
        barrier();
        /* a wildcard entry after the exact ones: still the exact ones first */
        ptl_handle_any_t ew = post(s, PT, w, sizeof(w), 0, cw, PTL_UID_ANY, PTL_PRIORITY_LIST,
                                   0, 1);
        barrier();
        ptl_handle_ct_t cx = new_ct(s);
        ptl_handle_any_t ex = post(s, PT, w, sizeof(w), 0, cx, PTL_UID_ANY, PTL_PRIORITY_LIST,
                                   24, 0);
        barrier();
        put_noack(s, 8, 0, 22);
        put_noack(s, 8, 0, 23);
        put_noack(s, 8, 0, 24); /* the earlier wildcard entry wins */
        put_noack(s, 8, 0, 22); /* behind them: the counts below are final */
        nb += 2;
        expect_ct(cb, nb);
        expect_ct(cw, 2);
        expect_ct(cx, 0);
        barrier();
        unlink_entry(s, ew);
        unlink_entry(s, ex);
        PtlCTFree(cx);
    }
    /* a disabled PT drops the put: the refused put behind it (same
     * initiator, in order) shows that it was handled */
    barrier();
    XP_REQUIRE(PtlPTDisable(s->ni, PT) == PTL_OK);
    barrier();
    put_noack(s, 8, 0, 22);
    put_refused(s, PT, 22);
    barrier();
    XP_REQUIRE(PtlPTEnable(s->ni, PT) == PTL_OK);
    expect_ct(cb, nb);
    barrier();
    unlink_entry(s, ea);
    unlink_entry(s, eb);
    PtlCTFree(ca);
    PtlCTFree(cb);
    PtlCTFree(cw);
}

/* Matching order on a matching NI. */
static void test_me_order(side_t *s)
{
    static unsigned char w[8], x[8], nt[4], y[16], u1[8], u2[8];
    ptl_handle_ct_t cw = new_ct(s), cx = new_ct(s), cy = new_ct(s), cu = new_ct(s);
    /* an earlier wildcard entry wins over a later exact one */
    ptl_handle_any_t ew = post(s, PT, w, sizeof(w), 0, cw, PTL_UID_ANY, PTL_PRIORITY_LIST, 0, 1);
    ptl_handle_any_t ex = post(s, PT, x, sizeof(x), 0, cx, PTL_UID_ANY, PTL_PRIORITY_LIST, 11, 0);
    barrier();
    put(s, PT, 8, 0, 11, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(cw, 1);
    barrier();
    unlink_entry(s, ew);
    barrier();
    put(s, PT, 8, 0, 11, 0); /* now the exact one */
    s->want_n++;
    wait_acks(s);
    expect_ct(cx, 1);
    barrier();
    unlink_entry(s, ex);
    /* an earlier NO_TRUNCATE entry too short is skipped */
    ptl_handle_any_t ent = post(s, PT, nt, sizeof(nt), PTL_ME_NO_TRUNCATE, cx, PTL_UID_ANY,
                                PTL_PRIORITY_LIST, 12, 0);
    ptl_handle_any_t ey = post(s, PT, y, sizeof(y), 0, cy, PTL_UID_ANY, PTL_PRIORITY_LIST, 12, 0);
    barrier();
    put(s, PT, 8, 0, 12, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(cy, 1);
    expect_ct(cx, 1);
    barrier();
    unlink_entry(s, ent);
    unlink_entry(s, ey);
    /* use-once entries are consumed in order */
    post(s, PT, u1, sizeof(u1), PTL_ME_USE_ONCE, cu, PTL_UID_ANY, PTL_PRIORITY_LIST, 13, 0);
    post(s, PT, u2, sizeof(u2), PTL_ME_USE_ONCE, cu, PTL_UID_ANY, PTL_PRIORITY_LIST, 13, 0);
    memset(u1, 0, sizeof(u1));
    memset(u2, 0, sizeof(u2));
    fill_src(3);
    barrier();
    put(s, PT, 8, 0, 13, 0);
    s->want_n++;
    wait_acks(s);
    fill_src(4);
    put(s, PT, 8, 0, 13, 0);
    s->want_n++;
    wait_acks(s);
    expect_ct(cu, 2);
    XP_CHECK_EQ(u1[0], 3);
    XP_CHECK_EQ(u2[0], 4);
    /* nothing left for these bits: dropped */
    put_refused(s, PT, 13);
    barrier();
    PtlCTFree(cw);
    PtlCTFree(cx);
    PtlCTFree(cy);
    PtlCTFree(cu);
}

int main(void)
{
    side_t s;
    XP_REQUIRE(PtlInit() == PTL_OK);
    for (int matching = 0; matching <= 1; matching++) {
        side_init(&s, matching);
        test_plain(&s);
        test_options(&s);
        test_eq(&s);
        test_triggered(&s);
        test_atomics(&s);
        test_atomic_forms(&s);
        test_atomic_general(&s);
        test_noack(&s);
        if (matching)
            test_me_order(&s);
        barrier();
        side_fini(&s);
    }
    PtlFini();
    return xp_test_result();
}
