/*
 * test_me_semantics - matching list entries through the real engine, one
 * process sending to itself on a matching physical NI: specification order
 * (earliest matching entry, priority before overflow, wildcards vs fixed
 * sources, ignore bits), PTL_EVENT_LINK, USE_ONCE + AUTO_UNLINK, overflow
 * list + unexpected headers (*_OVERFLOW events, the header consumed by a
 * priority append, AUTO_UNLINK of a consumed use-once entry), PtlMESearch
 * (SEARCH_ONLY / SEARCH_DELETE / NO_MATCH), MANAGE_LOCAL + min_free with
 * AUTO_UNLINK and AUTO_FREE only after the last header into the buffer is
 * consumed, NO_TRUNCATE, truncation, ACK_DISABLE, uid and op violations,
 * PTL_NI_DROPPED, counting (CT_COMM on an overflow entry, CT_OVERFLOW on the
 * priority entry), UNEXPECTED_HDR_DISABLE, EVENT_UNLINK_DISABLE.
 *
 * "No further event" is checked with a fence: a put to an entry appended
 * first, whose event must be the next one in the queue.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"

#define PT 5
#define FENCE_BITS UINT64_C(0xFE11CE)

static ptl_handle_ni_t ni;
static ptl_handle_eq_t teq, ieq;
static ptl_handle_md_t md;
static ptl_process_t self;
static unsigned char sbuf[4096];
static unsigned char fence_buf[8];

static int next_event(ptl_handle_eq_t eq, ptl_event_t *ev)
{
    unsigned int which;
    return PtlEQPoll(&eq, 1, 5000, ev, &which);
}

/* The next target event, which must be of `type`. */
static ptl_event_t expect(ptl_event_kind_t type, int line)
{
    ptl_event_t ev;
    memset(&ev, 0, sizeof(ev));
    int rc = next_event(teq, &ev);
    if (rc != PTL_OK || ev.type != type) {
        fprintf(stderr, "line %d: expected event %d, got rc %d type %d\n", line, type, rc,
                rc == PTL_OK ? (int)ev.type : -1);
        xp_test_failures_++;
    }
    return ev;
}
#define EXPECT(type) expect(type, __LINE__)

/* The initiator's answer (ACK or REPLY) for the last operation: skips SEND. */
static ptl_event_t answer(int line)
{
    ptl_event_t ev;
    for (;;) {
        int rc = next_event(ieq, &ev);
        if (rc != PTL_OK) {
            fprintf(stderr, "line %d: no initiator answer (rc %d)\n", line, rc);
            xp_test_failures_++;
            memset(&ev, 0, sizeof(ev));
            return ev;
        }
        if (ev.type != PTL_EVENT_SEND)
            return ev;
    }
}
#define ANSWER() answer(__LINE__)

static void put(ptl_size_t off, ptl_size_t len, ptl_match_bits_t bits, ptl_size_t roff)
{
    XP_REQUIRE(PtlPut(md, off, len, PTL_ACK_REQ, self, PT, bits, roff, NULL, 0xda7a) == PTL_OK);
}

/* No target event other than the fence's own PUT may come next. */
static ptl_event_t expect_quiet(int line)
{
    put(0, 1, FENCE_BITS, 0);
    ptl_event_t ev = expect(PTL_EVENT_PUT, line);
    if (ev.match_bits != FENCE_BITS) {
        fprintf(stderr, "line %d: unexpected PUT event before the fence\n", line);
        xp_test_failures_++;
        expect(PTL_EVENT_PUT, line);
    }
    return answer(line);
}
#define QUIET() expect_quiet(__LINE__)

static ptl_me_t me_init(void *start, ptl_size_t len, ptl_match_bits_t bits, ptl_match_bits_t ign,
                        unsigned opts)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = start;
    me.length = len;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = opts;
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    me.match_bits = bits;
    me.ignore_bits = ign;
    return me;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + seed))
            return 0;
    return 1;
}

static void test_link_and_order(void)
{
    unsigned char a[64], b[64], c[64];
    ptl_handle_me_t ha, hb, hc;
    ptl_me_t me = me_init(a, sizeof a, 0x10, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, a, &ha), PTL_OK);
    ptl_event_t ev = EXPECT(PTL_EVENT_LINK);
    XP_CHECK(ev.user_ptr == a);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    /* same bits, fixed source, appended later */
    me = me_init(b, sizeof b, 0x10, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE);
    me.match_id = self;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, b, &hb), PTL_OK);
    /* wildcard on bits 0x1x, appended last */
    me = me_init(c, sizeof c, 0x10, 0xF, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, c, &hc), PTL_OK);

    fill(sbuf, 16, 1);
    put(0, 16, 0x10, 0); /* -> a (earliest) */
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == a);
    XP_CHECK_EQ(ev.ptl_list, PTL_PRIORITY_LIST);
    XP_CHECK(ev.start == a);
    XP_CHECK_EQ(ev.mlength, 16);
    XP_CHECK_EQ(ev.hdr_data, 0xda7a);
    XP_CHECK_EQ(ev.initiator.phys.nid, self.phys.nid);
    XP_CHECK_EQ(ev.initiator.phys.pid, self.phys.pid);
    XP_CHECK(same(a, 16, 1));
    ev = EXPECT(PTL_EVENT_AUTO_UNLINK);
    XP_CHECK(ev.user_ptr == a);
    ev = ANSWER();
    XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.ptl_list, PTL_PRIORITY_LIST);
    XP_CHECK_EQ(ev.mlength, 16);
    XP_CHECK_EQ(PtlMEUnlink(ha), PTL_ARG_INVALID); /* already gone */

    put(0, 8, 0x13, 0); /* only c matches 0x13 */
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == c);
    EXPECT(PTL_EVENT_AUTO_UNLINK);
    ANSWER();
    put(0, 8, 0x10, 0); /* -> b */
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == b);
    EXPECT(PTL_EVENT_AUTO_UNLINK);
    ANSWER();
    /* nothing left: dropped (no flow control on this PT) */
    put(0, 8, 0x10, 0);
    ev = ANSWER();
    XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_DROPPED);
    XP_CHECK_EQ(ev.mlength, 0);
    QUIET();

    /* A wildcard appended before a fixed entry wins over it. */
    me = me_init(a, sizeof a, 0x20, 0xFF, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, a, &ha), PTL_OK);
    me = me_init(b, sizeof b, 0x21, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_LINK_DISABLE);
    me.match_id = self;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, b, &hb), PTL_OK);
    put(0, 4, 0x21, 0);
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == a);
    EXPECT(PTL_EVENT_AUTO_UNLINK);
    ANSWER();
    put(0, 4, 0x21, 0);
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == b);
    EXPECT(PTL_EVENT_AUTO_UNLINK);
    ANSWER();
    QUIET();
}

static void test_overflow_and_search(void)
{
    static unsigned char ovf[1024];
    unsigned char r[64];
    ptl_handle_me_t ho, hr;
    ptl_handle_ct_t ct_o, ct_r;
    ptl_ct_event_t cte;
    XP_REQUIRE(PtlCTAlloc(ni, &ct_o) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &ct_r) == PTL_OK);
    ptl_me_t me = me_init(ovf, sizeof ovf, 0, ~UINT64_C(0),
                          PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_CT_COMM |
                          PTL_ME_EVENT_LINK_DISABLE);
    me.ct_handle = ct_o;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_OVERFLOW_LIST, ovf, &ho), PTL_OK);

    fill(sbuf, 40, 3);
    put(0, 40, 0x100, 0);
    ptl_event_t ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == ovf);
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    XP_CHECK(ev.start == ovf);
    ev = ANSWER();
    XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    XP_CHECK_EQ(ev.mlength, 40);
    fill(sbuf, 24, 4);
    put(0, 24, 0x101, 0);
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.start == ovf + 40); /* MANAGE_LOCAL: next free offset */
    XP_CHECK_EQ(ev.remote_offset, 40);
    ANSWER();
    XP_CHECK_EQ(PtlCTGet(ct_o, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 2); /* CT_COMM counts arrivals on an overflow entry */

    /* SEARCH_ONLY: reports, keeps the header */
    me = me_init(NULL, 0, 0x100, 0, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_ONLY, (void *)0x5EA), PTL_OK);
    ev = EXPECT(PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0x5EA);
    XP_CHECK_EQ(ev.match_bits, 0x100);
    XP_CHECK_EQ(ev.mlength, 40);
    XP_CHECK(ev.start == ovf);
    me = me_init(NULL, 0, 0x999, 0, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_ONLY, (void *)0x5EB), PTL_OK);
    ev = EXPECT(PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
    XP_CHECK(ev.user_ptr == (void *)0x5EB);

    /* Priority append (use-once, CT_OVERFLOW) consumes the first header. */
    me = me_init(r, sizeof r, 0x100, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_CT_OVERFLOW);
    me.match_id = self;
    me.ct_handle = ct_r;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK(ev.user_ptr == r);
    XP_CHECK(ev.start == ovf);
    XP_CHECK_EQ(ev.mlength, 40);
    XP_CHECK_EQ(ev.rlength, 40);
    XP_CHECK_EQ(ev.hdr_data, 0xda7a);
    XP_CHECK(same(ovf, 40, 3));
    ev = EXPECT(PTL_EVENT_AUTO_UNLINK); /* used once, never linked: no LINK */
    XP_CHECK(ev.user_ptr == r);
    XP_CHECK_EQ(PtlCTGet(ct_r, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 1);
    XP_CHECK_EQ(PtlMEUnlink(hr), PTL_ARG_INVALID);
    QUIET();

    /* The header is gone; SEARCH_DELETE takes the second one. */
    me = me_init(NULL, 0, 0x100, 0, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_ONLY, NULL), PTL_OK);
    ev = EXPECT(PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
    me = me_init(NULL, 0, 0x100, 0xFF, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_DELETE, (void *)0xDE1), PTL_OK);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK(ev.user_ptr == (void *)0xDE1);
    XP_CHECK_EQ(ev.match_bits, 0x101);
    XP_CHECK(ev.start == ovf + 40);
    XP_CHECK(same(ovf + 40, 24, 4));
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_DELETE, (void *)0xDE2), PTL_OK);
    ev = EXPECT(PTL_EVENT_SEARCH);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_NO_MATCH);
    QUIET();

    /* A persistent priority append consumes every matching header, in
     * arrival order, then is linked. */
    put(0, 8, 0x200, 0);
    EXPECT(PTL_EVENT_PUT);
    ANSWER();
    put(0, 8, 0x300, 0);
    EXPECT(PTL_EVENT_PUT);
    ANSWER();
    put(0, 8, 0x201, 0);
    EXPECT(PTL_EVENT_PUT);
    ANSWER();
    me = me_init(r, sizeof r, 0x200, 0xF, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK_EQ(ev.match_bits, 0x200);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK_EQ(ev.match_bits, 0x201);
    EXPECT(PTL_EVENT_LINK);
    /* now linked: a new 0x202 goes to the priority entry */
    put(0, 8, 0x202, 0);
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK_EQ(ev.ptl_list, PTL_PRIORITY_LIST);
    XP_CHECK(ev.user_ptr == r);
    ANSWER();
    XP_CHECK_EQ(PtlMEUnlink(hr), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(hr), PTL_ARG_INVALID);
    /* the 0x300 header is still there */
    me = me_init(NULL, 0, 0x300, 0, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, PTL_SEARCH_DELETE, NULL), PTL_OK);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK_EQ(ev.match_bits, 0x300);
    QUIET();

    /* UNLINK_DISABLE: a consumed use-once entry reports nothing more. */
    put(0, 8, 0x400, 0);
    EXPECT(PTL_EVENT_PUT);
    ANSWER();
    me = me_init(r, sizeof r, 0x400, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
    EXPECT(PTL_EVENT_PUT_OVERFLOW);
    QUIET();

    /* Explicit unlink of the overflow entry: no events; a header into its
     * buffer stays usable. */
    put(0, 8, 0x500, 0);
    EXPECT(PTL_EVENT_PUT);
    ANSWER();
    XP_CHECK_EQ(PtlMEUnlink(ho), PTL_OK);
    me = me_init(r, sizeof r, 0x500, 0, PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
    ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
    XP_CHECK_EQ(ev.match_bits, 0x500);
    QUIET();
    PtlCTFree(ct_o);
    PtlCTFree(ct_r);
}

/* MANAGE_LOCAL + min_free: AUTO_UNLINK when less than min_free is left,
 * AUTO_FREE once the last unexpected header into the buffer is consumed. */
static void test_min_free(void)
{
    static unsigned char ovf[100];
    unsigned char r[64];
    ptl_handle_me_t ho, hr;
    ptl_me_t me = me_init(ovf, sizeof ovf, 0, ~UINT64_C(0),
                          PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_MAY_ALIGN |
                          PTL_ME_EVENT_LINK_DISABLE);
    me.min_free = 40;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_OVERFLOW_LIST, ovf, &ho), PTL_OK);
    for (int i = 0; i < 3; i++) {
        fill(sbuf, 30, 10 + (unsigned)i);
        put(0, 30, 0x600 + (ptl_match_bits_t)i, 0);
        ptl_event_t ev = EXPECT(PTL_EVENT_PUT);
        XP_CHECK(ev.start == ovf + 30 * i);
        ANSWER();
    }
    /* 100 - 90 = 10 < 40 after the third */
    ptl_event_t ev = EXPECT(PTL_EVENT_AUTO_UNLINK);
    XP_CHECK(ev.user_ptr == ovf);
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    QUIET(); /* no AUTO_FREE yet: three headers point into it */
    XP_CHECK_EQ(PtlMEUnlink(ho), PTL_ARG_INVALID);
    for (int i = 0; i < 3; i++) {
        me = me_init(r, sizeof r, 0x600 + (ptl_match_bits_t)i, 0,
                     PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_UNLINK_DISABLE);
        XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
        ev = EXPECT(PTL_EVENT_PUT_OVERFLOW);
        XP_CHECK(ev.start == ovf + 30 * i);
        XP_CHECK(same(ev.start, 30, 10 + (unsigned)i));
        if (i < 2)
            QUIET();
    }
    ev = EXPECT(PTL_EVENT_AUTO_FREE);
    XP_CHECK(ev.user_ptr == ovf);
    QUIET();

    /* With headers disabled, AUTO_FREE follows AUTO_UNLINK at once. */
    me = me_init(ovf, sizeof ovf, 0, ~UINT64_C(0),
                 PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_UNEXPECTED_HDR_DISABLE |
                 PTL_ME_EVENT_LINK_DISABLE);
    me.min_free = 60;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_OVERFLOW_LIST, ovf, &ho), PTL_OK);
    put(0, 50, 0x700, 0);
    EXPECT(PTL_EVENT_PUT);
    EXPECT(PTL_EVENT_AUTO_UNLINK);
    EXPECT(PTL_EVENT_AUTO_FREE);
    ANSWER();
    me = me_init(r, sizeof r, 0x700, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, r, &hr), PTL_OK);
    QUIET(); /* no header was kept */
    XP_CHECK_EQ(PtlMEUnlink(hr), PTL_OK);
}

static void test_truncate_and_checks(void)
{
    unsigned char a[8], b[64], g[32];
    ptl_handle_me_t ha, hb, hg;
    ptl_me_t me = me_init(a, sizeof a, 0x800, 0,
                          PTL_ME_OP_PUT | PTL_ME_NO_TRUNCATE | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, a, &ha), PTL_OK);
    me = me_init(b, sizeof b, 0x800, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, b, &hb), PTL_OK);
    put(0, 16, 0x800, 0); /* does not fit a (NO_TRUNCATE): b */
    ptl_event_t ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == b);
    ANSWER();
    put(0, 8, 0x800, 0); /* fits a */
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == a);
    ANSWER();
    put(0, 16, 0x800, 60); /* b truncates: 4 bytes at offset 60 */
    ev = EXPECT(PTL_EVENT_PUT);
    XP_CHECK(ev.user_ptr == b);
    XP_CHECK_EQ(ev.rlength, 16);
    XP_CHECK_EQ(ev.mlength, 4);
    XP_CHECK_EQ(ev.remote_offset, 60);
    ev = ANSWER();
    XP_CHECK_EQ(ev.mlength, 4);
    XP_CHECK_EQ(PtlMEUnlink(ha), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(hb), PTL_OK);

    /* ACK_DISABLE: the initiator gets its SEND but no ACK */
    me = me_init(b, sizeof b, 0x900, 0, PTL_ME_OP_PUT | PTL_ME_ACK_DISABLE | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, b, &hb), PTL_OK);
    put(0, 8, 0x900, 0);
    EXPECT(PTL_EVENT_PUT);
    ev = expect_quiet(__LINE__); /* the fence's ACK comes, never one for 0x900 */
    XP_CHECK_EQ(ev.match_bits, FENCE_BITS);
    XP_CHECK_EQ(PtlMEUnlink(hb), PTL_OK);

    /* uid and operation violations */
    me = me_init(g, sizeof g, 0xA00, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE);
    me.uid = 0x7777777;
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, g, &hg), PTL_OK);
    put(0, 8, 0xA00, 0);
    ev = ANSWER();
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_PERM_VIOLATION);
    XP_CHECK_EQ(PtlMEUnlink(hg), PTL_OK);
    me = me_init(g, sizeof g, 0xB00, 0, PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, PTL_PRIORITY_LIST, g, &hg), PTL_OK);
    XP_REQUIRE(PtlGet(md, 0, 8, self, PT, 0xB00, 0, NULL) == PTL_OK);
    ev = ANSWER();
    XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
    XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OP_VIOLATION);
    QUIET();
    XP_CHECK_EQ(PtlMEUnlink(hg), PTL_OK);

    /* bad arguments: errors, never a crash */
    me = me_init(g, sizeof g, 0, 0, PTL_ME_OP_PUT);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, &me, (ptl_list_t)7, NULL, &hg), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(ni, 200, &me, PTL_PRIORITY_LIST, NULL, &hg), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEAppend(ni, PT, NULL, PTL_PRIORITY_LIST, NULL, &hg), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMESearch(ni, PT, &me, (ptl_search_op_t)9, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlMEUnlink(PTL_INVALID_HANDLE), PTL_ARG_INVALID);
    ptl_le_t le = { .start = g, .length = sizeof g, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT };
    ptl_handle_le_t hl;
    XP_CHECK_EQ(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &hl), PTL_ARG_INVALID);
}

int main(void)
{
    ptl_pt_index_t pti;
    ptl_handle_me_t hf;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetPhysId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 256, &teq) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 256, &ieq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, teq, PT, &pti) == PTL_OK);
    ptl_md_t mdd = { .start = sbuf, .length = sizeof sbuf, .eq_handle = ieq,
                     .ct_handle = PTL_CT_NONE, .options = 0 };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    ptl_me_t fence = me_init(fence_buf, sizeof fence_buf, FENCE_BITS, 0,
                             PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE);
    XP_REQUIRE(PtlMEAppend(ni, PT, &fence, PTL_PRIORITY_LIST, NULL, &hf) == PTL_OK);

    test_link_and_order();
    test_overflow_and_search();
    test_min_free();
    test_truncate_and_checks();

    XP_CHECK_EQ(PtlMEUnlink(hf), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
