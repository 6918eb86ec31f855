/*
 * mp_events - Portals 4 conformance between processes on a non-matching
 * logical NI: every event field of put / get / atomic / fetch-atomic / swap
 * on both sides, the four acknowledgement kinds, MD options (SUCCESS_DISABLE,
 * SEND_DISABLE, CT_SEND/REPLY/ACK/BYTES), LE options (OP_PUT/OP_GET
 * violations, USE_ONCE + AUTO_UNLINK, ACK_DISABLE, EVENT_COMM/SUCCESS_DISABLE,
 * CT_COMM/BYTES, uid checks), truncation and remote offsets, PTL_IOVEC on both
 * sides, and concurrent atomics on one location (with 3+ ranks).
 *
 * Every phase: each rank appends its entry, barrier, sends to its right
 * neighbour, checks its initiator events, then checks the target events that
 * its left neighbour caused, barrier.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 10
#define TLEN 4096
#define WAIT_MS 5000

typedef struct ctx {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq_t, eq_i; /* target side, initiator side */
    ptl_handle_ct_t ct_t, ct_i;
    ptl_process_t right;
    ptl_rank_t rank, left;
    int n;
    ptl_uid_t uid;
    unsigned char *tbuf, *sbuf, *rbuf;
    /* Portals barrier: waiting in PtlCTWait keeps this process serving its
     * peers even with XP_PROGRESS=inline (a launcher barrier would not) */
    ptl_handle_ct_t bar_ct;
    ptl_handle_md_t bar_md;
    ptl_size_t bar_epoch;
} ctx_t;

static void get_event(ptl_handle_eq_t eq, ptl_event_t *ev, int line)
{
    unsigned which;
    int rc = PtlEQPoll(&eq, 1, WAIT_MS, ev, &which);
    if (rc != PTL_OK) {
        fprintf(stderr, "line %d: no event (rc %d)\n", line, rc);
        exit(1);
    }
}

/* The next event must be of `type` and succeed (or fail with `fail`). */
#define EXPECT(eq, ev, typ, fail)                                              \
    do {                                                                       \
        get_event(eq, ev, __LINE__);                                           \
        XP_CHECK_EQ((ev)->type, typ);                                          \
        XP_CHECK_EQ((ev)->ni_fail_type, fail);                                 \
    } while (0)

#define EXPECT_EMPTY(eq)                                                       \
    do {                                                                       \
        ptl_event_t e_;                                                        \
        int rc_ = PtlEQGet(eq, &e_);                                           \
        if (rc_ != PTL_EQ_EMPTY)                                               \
            fprintf(stderr, "unexpected event type %d fail %d\n", e_.type,     \
                    e_.ni_fail_type);                                          \
        XP_CHECK_EQ(rc_, PTL_EQ_EMPTY);                                        \
    } while (0)

/* PtlCTWait with a deadline, so a missing count fails instead of hanging. */
static void wait_ct_line(ptl_handle_ct_t ct, ptl_size_t n, ptl_ct_event_t *v, int line)
{
    unsigned which;
    int rc = PtlCTPoll(&ct, &n, 1, WAIT_MS, v, &which);
    if (rc != PTL_OK) {
        fprintf(stderr, "line %d: counter did not reach %llu (rc %d)\n", line,
                (unsigned long long)n, rc);
        exit(1);
    }
}
#define wait_ct(ct, n, v) wait_ct_line(ct, n, v, __LINE__)

static void reset(ctx_t *c)
{
    ptl_ct_event_t zero = { 0, 0 };
    XP_REQUIRE(PtlCTSet(c->ct_t, zero) == PTL_OK);
    XP_REQUIRE(PtlCTSet(c->ct_i, zero) == PTL_OK);
    EXPECT_EMPTY(c->eq_t);
    EXPECT_EMPTY(c->eq_i);
}

static ptl_handle_le_t append(ctx_t *c, void *start, ptl_size_t len, unsigned options,
                              ptl_uid_t uid, void *user_ptr)
{
    ptl_handle_le_t h;
    ptl_le_t le = { .start = start, .length = len, .ct_handle = c->ct_t, .uid = uid,
                    .options = options | PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlLEAppend(c->ni, PT, &le, PTL_PRIORITY_LIST, user_ptr, &h) == PTL_OK);
    return h;
}

static ptl_handle_md_t bind(ctx_t *c, void *start, ptl_size_t len, unsigned options, int with_eq)
{
    ptl_handle_md_t h;
    ptl_md_t md = { .start = start, .length = len, .options = options,
                    .eq_handle = with_eq ? c->eq_i : PTL_EQ_NONE, .ct_handle = c->ct_i };
    XP_REQUIRE(PtlMDBind(c->ni, &md, &h) == PTL_OK);
    return h;
}

#define BAR_PT 11

static void barrier_init(ctx_t *c)
{
    ptl_pt_index_t pt;
    ptl_handle_le_t le;
    ptl_le_t led = { .start = NULL, .length = 0, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                     .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_LINK_DISABLE |
                                PTL_LE_EVENT_SUCCESS_DISABLE };
    ptl_md_t md = { .start = NULL, .length = 0, .options = 0, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = PTL_CT_NONE };
    XP_REQUIRE(PtlCTAlloc(c->ni, &c->bar_ct) == PTL_OK);
    led.ct_handle = c->bar_ct;
    XP_REQUIRE(PtlPTAlloc(c->ni, 0, PTL_EQ_NONE, BAR_PT, &pt) == PTL_OK);
    XP_REQUIRE(PtlLEAppend(c->ni, BAR_PT, &led, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    XP_REQUIRE(PtlMDBind(c->ni, &md, &c->bar_md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* every barrier entry exists */
}

static void barrier_c(ctx_t *c)
{
    ptl_ct_event_t v;
    ptl_process_t p;
    c->bar_epoch++;
    for (int r = 0; r < c->n; r++) {
        if ((ptl_rank_t)r == c->rank)
            continue;
        memset(&p, 0, sizeof(p));
        p.rank = (ptl_rank_t)r;
        XP_REQUIRE(PtlPut(c->bar_md, 0, 0, PTL_NO_ACK_REQ, p, BAR_PT, 0, 0, NULL, 0) == PTL_OK);
    }
    XP_REQUIRE(PtlCTWait(c->bar_ct, c->bar_epoch * (ptl_size_t)(c->n - 1), &v) == PTL_OK);
    XP_REQUIRE(v.failure == 0);
}
#define barrier() barrier_c(c)

/* Target fields common to every target-side event. */
static void check_target(ctx_t *c, const ptl_event_t *ev, void *user_ptr, ptl_size_t rlength,
                         ptl_size_t mlength, ptl_size_t roff, ptl_hdr_data_t hdr)
{
    XP_CHECK(ev->user_ptr == user_ptr);
    XP_CHECK_EQ(ev->rlength, rlength);
    XP_CHECK_EQ(ev->mlength, mlength);
    XP_CHECK_EQ(ev->remote_offset, roff);
    XP_CHECK(ev->start == (void *)(c->tbuf + roff));
    XP_CHECK_EQ(ev->hdr_data, hdr);
    XP_CHECK_EQ(ev->uid, c->uid);
    XP_CHECK_EQ(ev->initiator.rank, c->left);
    XP_CHECK_EQ(ev->pt_index, PT);
    XP_CHECK_EQ(ev->ptl_list, PTL_PRIORITY_LIST);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13u + seed);
}

/* Put with a full ack: SEND then ACK at the initiator, PUT at the target. */
static void phase_put(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    memset(c->tbuf, 0, TLEN);
    ptl_handle_le_t le = append(c, c->tbuf, 256, PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM,
                                PTL_UID_ANY, (void *)0xA1);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_SEND, 1);
    fill(c->sbuf, 256, c->rank);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 4, 32, PTL_ACK_REQ, c->right, PT, 0, 8, (void *)0xB1, 0x1234), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB1);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB1);
    XP_CHECK_EQ(ev.mlength, 32);
    XP_CHECK_EQ(ev.remote_offset, 8);
    XP_CHECK_EQ(ev.ptl_list, PTL_PRIORITY_LIST);
    wait_ct(c->ct_i, 2, &v);
    XP_CHECK(v.success == 2 && v.failure == 0);
    /* target */
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    check_target(c, &ev, (void *)0xA1, 32, 32, 8, 0x1234);
    wait_ct(c->ct_t, 1, &v);
    unsigned char full[36];
    fill(full, 36, c->left); /* the left neighbour's pattern, sent from offset 4 */
    XP_CHECK_EQ(memcmp(c->tbuf + 8, full + 4, 32), 0);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Truncation: 32 bytes into 16 at offset 8 moves 8; past the end moves 0. */
static void phase_truncate(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    ptl_handle_le_t le = append(c, c->tbuf, 16, PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM |
                                PTL_LE_EVENT_CT_BYTES, PTL_UID_ANY, NULL);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_BYTES, 1);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 32, PTL_ACK_REQ, c->right, PT, 0, 8, NULL, 1), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(PtlPut(md, 0, 32, PTL_ACK_REQ, c->right, PT, 0, 100, NULL, 2), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 0);
    wait_ct(c->ct_i, 8, &v); /* CT_BYTES on the ack: 8 + 0 bytes */
    XP_CHECK_EQ(v.success, 8);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK_EQ(ev.rlength, 32);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(ev.remote_offset, 8);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 0);
    XP_CHECK_EQ(ev.hdr_data, 2);
    PtlCTGet(c->ct_t, &v);
    XP_CHECK_EQ(v.success, 8); /* bytes */
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Get: GET at the target, REPLY at the initiator. */
static void phase_get(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    fill(c->tbuf, 256, 100 + c->rank);
    ptl_handle_le_t le = append(c, c->tbuf, 256, PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM,
                                PTL_UID_ANY, (void *)0xA2);
    memset(c->rbuf, 0, 256);
    ptl_handle_md_t md = bind(c, c->rbuf, 256, PTL_MD_EVENT_CT_REPLY, 1);
    barrier();
    XP_CHECK_EQ(PtlGet(md, 16, 64, c->right, PT, 0, 32, (void *)0xB2), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_REPLY, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB2);
    XP_CHECK_EQ(ev.mlength, 64);
    XP_CHECK_EQ(ev.remote_offset, 32);
    wait_ct(c->ct_i, 1, &v);
    unsigned char want[256];
    fill(want, 256, 100 + c->right.rank);
    XP_CHECK_EQ(memcmp(c->rbuf + 16, want + 32, 64), 0);
    EXPECT_EMPTY(c->eq_i); /* a get has no SEND event */
    EXPECT(c->eq_t, &ev, PTL_EVENT_GET, PTL_NI_OK);
    check_target(c, &ev, (void *)0xA2, 64, 64, 32, 0);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Atomic, fetch-atomic and swap: operation and type in the events. */
static void phase_atomics(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    int64_t *t = (int64_t *)c->tbuf, *s = (int64_t *)c->sbuf, *r = (int64_t *)c->rbuf;
    reset(c);
    t[0] = 100;
    t[1] = 7;
    t[2] = 5;
    ptl_handle_le_t le = append(c, c->tbuf, 64, PTL_LE_OP_PUT | PTL_LE_OP_GET |
                                PTL_LE_EVENT_CT_COMM, PTL_UID_ANY, (void *)0xA3);
    ptl_handle_md_t put_md = bind(c, c->sbuf, 64, PTL_MD_EVENT_CT_ACK, 1);
    ptl_handle_md_t get_md = bind(c, c->rbuf, 64, PTL_MD_EVENT_CT_REPLY, 1);
    s[0] = 11;
    s[1] = 3;
    s[2] = 9;
    barrier();
    XP_CHECK_EQ(PtlAtomic(put_md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, (void *)0xB3, 0x33,
                          PTL_SUM, PTL_INT64_T), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB3);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(PtlFetchAtomic(get_md, 8, put_md, 8, 8, c->right, PT, 0, 8, (void *)0xB4, 0x44,
                               PTL_MAX, PTL_INT64_T), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB4);
    EXPECT(c->eq_i, &ev, PTL_EVENT_REPLY, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB4);
    XP_CHECK_EQ(ev.mlength, 8);
    XP_CHECK_EQ(r[1], 7);
    int64_t operand = 5;
    XP_CHECK_EQ(PtlSwap(get_md, 16, put_md, 16, 8, c->right, PT, 0, 16, (void *)0xB5, 0x55,
                        &operand, PTL_CSWAP, PTL_INT64_T), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_REPLY, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xB5);
    XP_CHECK_EQ(r[2], 5);
    wait_ct(c->ct_i, 3, &v); /* 1 ack + 2 replies */
    XP_CHECK(v.success == 3 && v.failure == 0);

    EXPECT(c->eq_t, &ev, PTL_EVENT_ATOMIC, PTL_NI_OK);
    check_target(c, &ev, (void *)0xA3, 8, 8, 0, 0x33);
    XP_CHECK_EQ(ev.atomic_operation, PTL_SUM);
    XP_CHECK_EQ(ev.atomic_type, PTL_INT64_T);
    EXPECT(c->eq_t, &ev, PTL_EVENT_FETCH_ATOMIC, PTL_NI_OK);
    check_target(c, &ev, (void *)0xA3, 8, 8, 8, 0x44);
    XP_CHECK_EQ(ev.atomic_operation, PTL_MAX);
    XP_CHECK_EQ(ev.atomic_type, PTL_INT64_T);
    EXPECT(c->eq_t, &ev, PTL_EVENT_FETCH_ATOMIC, PTL_NI_OK);
    check_target(c, &ev, (void *)0xA3, 8, 8, 16, 0x55);
    XP_CHECK_EQ(ev.atomic_operation, PTL_CSWAP);
    XP_CHECK_EQ(ev.atomic_type, PTL_INT64_T);
    XP_CHECK_EQ(t[0], 111);
    XP_CHECK_EQ(t[1], 7);
    XP_CHECK_EQ(t[2], 9);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(put_md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(get_md), PTL_OK);
}

/* PTL_CT_ACK_REQ and PTL_OC_ACK_REQ count, never post an ACK event;
 * PTL_NO_ACK_REQ gives nothing but SEND. */
static void phase_ack_kinds(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    ptl_handle_le_t le = append(c, c->tbuf, 256, PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM,
                                PTL_UID_ANY, NULL);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK, 1);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 16, PTL_CT_ACK_REQ, c->right, PT, 0, 0, (void *)1, 0), PTL_OK);
    XP_CHECK_EQ(PtlPut(md, 0, 16, PTL_OC_ACK_REQ, c->right, PT, 0, 0, (void *)2, 0), PTL_OK);
    XP_CHECK_EQ(PtlAtomic(md, 0, 8, PTL_OC_ACK_REQ, c->right, PT, 0, 0, (void *)3, 0, PTL_BOR,
                          PTL_UINT64_T), PTL_OK);
    XP_CHECK_EQ(PtlPut(md, 0, 16, PTL_NO_ACK_REQ, c->right, PT, 0, 0, (void *)4, 0), PTL_OK);
    wait_ct(c->ct_i, 3, &v);
    for (int i = 1; i <= 4; i++) {
        EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
        XP_CHECK(ev.user_ptr == (void *)(uintptr_t)i);
    }
    wait_ct(c->ct_t, 4, &v);
    barrier(); /* every answer of the right neighbour has arrived */
    PtlCTGet(c->ct_i, &v);
    XP_CHECK(v.success == 3 && v.failure == 0);
    EXPECT_EMPTY(c->eq_i);
    for (int i = 0; i < 4; i++)
        EXPECT(c->eq_t, &ev, i == 2 ? PTL_EVENT_ATOMIC : PTL_EVENT_PUT, PTL_NI_OK);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* MD event options. */
static void phase_md_options(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    ptl_handle_le_t le = append(c, c->tbuf, 256, PTL_LE_OP_PUT | PTL_LE_OP_GET |
                                PTL_LE_EVENT_CT_COMM, PTL_UID_ANY, NULL);
    /* SUCCESS_DISABLE: no full events, counts still happen */
    ptl_handle_md_t md1 = bind(c, c->sbuf, 256, PTL_MD_EVENT_SUCCESS_DISABLE |
                               PTL_MD_EVENT_CT_SEND | PTL_MD_EVENT_CT_ACK |
                               PTL_MD_EVENT_CT_REPLY, 1);
    /* SEND_DISABLE: ACK but no SEND; CT_BYTES counts bytes */
    ptl_handle_md_t md2 = bind(c, c->sbuf, 256, PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_CT_SEND |
                               PTL_MD_EVENT_CT_BYTES, 1);
    barrier();
    XP_CHECK_EQ(PtlPut(md1, 0, 16, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    XP_CHECK_EQ(PtlGet(md1, 0, 16, c->right, PT, 0, 0, NULL), PTL_OK);
    wait_ct(c->ct_i, 3, &v); /* send + ack + reply */
    XP_CHECK(v.success == 3 && v.failure == 0);
    EXPECT_EMPTY(c->eq_i);
    ptl_ct_event_t zero = { 0, 0 };
    PtlCTSet(c->ct_i, zero);
    XP_CHECK_EQ(PtlPut(md2, 0, 24, PTL_ACK_REQ, c->right, PT, 0, 0, (void *)0xC2, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xC2);
    wait_ct(c->ct_i, 24, &v); /* the SEND counted as 24 bytes */
    XP_CHECK_EQ(v.success, 24);
    EXPECT_EMPTY(c->eq_i);
    wait_ct(c->ct_t, 3, &v);
    for (int i = 0; i < 3; i++)
        get_event(c->eq_t, &ev, __LINE__);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md1), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md2), PTL_OK);
}

/* LE operation and uid checks: failures reported to the initiator, counted
 * in the target's status registers, no target event. */
static void phase_violations(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    ptl_sr_value_t ops0, ops1, perm0, perm1;
    reset(c);
    PtlNIStatus(c->ni, PTL_SR_OPERATIONS_VIOLATIONS, &ops0);
    PtlNIStatus(c->ni, PTL_SR_PERMISSIONS_VIOLATIONS, &perm0);
    /* put-only entry first, then a get-only one, then one for somebody else */
    ptl_handle_le_t le = append(c, c->tbuf, 256, PTL_LE_OP_PUT, PTL_UID_ANY, NULL);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY, 1);
    barrier();
    XP_CHECK_EQ(PtlGet(md, 0, 8, c->right, PT, 0, 0, (void *)0xD1), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_REPLY, PTL_NI_OP_VIOLATION);
    XP_CHECK(ev.user_ptr == (void *)0xD1);
    wait_ct(c->ct_i, 1, &v);
    XP_CHECK_EQ(v.failure, 1);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    le = append(c, c->tbuf, 256, PTL_LE_OP_GET, PTL_UID_ANY, NULL);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, (void *)0xD2, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OP_VIOLATION);
    XP_CHECK(ev.user_ptr == (void *)0xD2);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    le = append(c, c->tbuf, 256, PTL_LE_OP_PUT | PTL_LE_OP_GET, c->uid + 1, NULL);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, (void *)0xD3, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_PERM_VIOLATION);
    XP_CHECK(ev.user_ptr == (void *)0xD3);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    /* our own uid is accepted */
    le = append(c, c->tbuf, 256, PTL_LE_OP_PUT, c->uid, NULL);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    EXPECT_EMPTY(c->eq_t); /* the violations posted nothing at the target */
    PtlNIStatus(c->ni, PTL_SR_OPERATIONS_VIOLATIONS, &ops1);
    PtlNIStatus(c->ni, PTL_SR_PERMISSIONS_VIOLATIONS, &perm1);
    XP_CHECK_EQ(ops1 - ops0, 2);
    XP_CHECK_EQ(perm1 - perm0, 1);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* USE_ONCE (+ AUTO_UNLINK), ACK_DISABLE, COMM/SUCCESS_DISABLE, no entry. */
static void phase_le_options(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    ptl_sr_value_t drop0, drop1;
    reset(c);
    PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &drop0);
    ptl_handle_le_t once = append(c, c->tbuf, 64, PTL_LE_OP_PUT | PTL_LE_USE_ONCE |
                                  PTL_LE_EVENT_CT_COMM, PTL_UID_ANY, (void *)0xE1);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK, 1);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    /* the entry is gone: the second put is dropped */
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    get_event(c->eq_i, &ev, __LINE__);
    XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
    XP_CHECK(ev.ni_fail_type != PTL_NI_OK);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xE1);
    EXPECT(c->eq_t, &ev, PTL_EVENT_AUTO_UNLINK, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0xE1);
    XP_CHECK_EQ(PtlLEUnlink(once), PTL_ARG_INVALID); /* already unlinked */
    barrier();
    PtlNIStatus(c->ni, PTL_SR_DROP_COUNT, &drop1);
    XP_CHECK_EQ(drop1 - drop0, 1);

    /* ACK_DISABLE + COMM_DISABLE: no ACK, no PUT event, the CT still counts */
    ptl_handle_le_t le = append(c, c->tbuf, 64, PTL_LE_OP_PUT | PTL_LE_ACK_DISABLE |
                                PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_CT_COMM, PTL_UID_ANY,
                                NULL);
    PtlCTSet(c->ct_t, (ptl_ct_event_t){ 0, 0 });
    PtlCTSet(c->ct_i, (ptl_ct_event_t){ 0, 0 });
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    wait_ct(c->ct_t, 1, &v);
    barrier();
    PtlCTGet(c->ct_i, &v);
    XP_CHECK_EQ(v.success, 0);
    XP_CHECK_EQ(v.failure, 0);
    EXPECT_EMPTY(c->eq_i);
    EXPECT_EMPTY(c->eq_t);
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);

    /* SUCCESS_DISABLE on the entry */
    le = append(c, c->tbuf, 64, PTL_LE_OP_PUT | PTL_LE_EVENT_SUCCESS_DISABLE |
                PTL_LE_EVENT_CT_COMM, PTL_UID_ANY, NULL);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    wait_ct(c->ct_t, 2, &v);
    barrier();
    EXPECT_EMPTY(c->eq_t);
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* PTL_IOVEC on both sides. */
static void phase_iovec(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    memset(c->tbuf, 0, TLEN);
    ptl_iovec_t tiov[3] = { { c->tbuf, 10 }, { c->tbuf + 100, 7 }, { c->tbuf + 200, 50 } };
    ptl_iovec_t siov[3] = { { c->sbuf + 5, 3 }, { c->sbuf + 50, 20 }, { c->sbuf + 90, 40 } };
    ptl_handle_le_t le;
    ptl_le_t led = { .start = tiov, .length = 3, .ct_handle = c->ct_t, .uid = PTL_UID_ANY,
                     .options = PTL_IOVEC | PTL_LE_OP_PUT | PTL_LE_OP_GET |
                                PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_LINK_DISABLE };
    XP_REQUIRE(PtlLEAppend(c->ni, PT, &led, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    ptl_md_t mdd = { .start = siov, .length = 3, .options = PTL_IOVEC | PTL_MD_EVENT_CT_ACK,
                     .eq_handle = c->eq_i, .ct_handle = c->ct_i };
    ptl_handle_md_t md;
    XP_REQUIRE(PtlMDBind(c->ni, &mdd, &md) == PTL_OK);
    fill(c->sbuf, 256, 7 + c->rank);
    barrier();
    /* 40 bytes from MD offset 2 (spans all three pieces) to LE offset 5 */
    XP_CHECK_EQ(PtlPut(md, 2, 40, PTL_ACK_REQ, c->right, PT, 0, 5, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 40);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK_EQ(ev.mlength, 40);
    XP_CHECK_EQ(ev.remote_offset, 5);
    /* flatten what the left neighbour sent and what landed here */
    unsigned char src[256], flat_s[63], flat_t[67], got[40];
    fill(src, 256, 7 + c->left);
    memcpy(flat_s, src + 5, 3);
    memcpy(flat_s + 3, src + 50, 20);
    memcpy(flat_s + 23, src + 90, 40);
    memcpy(flat_t, c->tbuf, 10);
    memcpy(flat_t + 10, c->tbuf + 100, 7);
    memcpy(flat_t + 17, c->tbuf + 200, 50);
    XP_CHECK_EQ(memcmp(flat_t + 5, flat_s + 2, 40), 0);
    barrier();
    /* and a get back through both lists */
    memset(c->sbuf, 0, 256);
    XP_CHECK_EQ(PtlGet(md, 0, 40, c->right, PT, 0, 5, NULL), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_REPLY, PTL_NI_OK);
    memcpy(got, c->sbuf + 5, 3);
    memcpy(got + 3, c->sbuf + 50, 20);
    memcpy(got + 23, c->sbuf + 90, 17);
    fill(src, 256, 7 + c->rank); /* the right neighbour holds our own pattern */
    memcpy(flat_s, src + 5, 3);
    memcpy(flat_s + 3, src + 50, 20);
    memcpy(flat_s + 23, src + 90, 40);
    XP_CHECK_EQ(memcmp(got, flat_s + 2, 40), 0);
    EXPECT(c->eq_t, &ev, PTL_EVENT_GET, PTL_NI_OK);
    wait_ct(c->ct_t, 2, &v);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* PtlPTDisable by the target, and a FLOWCTRL PT that runs out of entries. */
static void phase_flow(ctx_t *c)
{
    enum { FC_PT = 13 };
    ptl_event_t ev;
    ptl_ct_event_t v;
    ptl_pt_index_t pt;
    reset(c);
    ptl_handle_le_t le = append(c, c->tbuf, 64, PTL_LE_OP_PUT, PTL_UID_ANY, NULL);
    ptl_handle_md_t md = bind(c, c->sbuf, 64, PTL_MD_EVENT_CT_ACK, 1);
    XP_REQUIRE(PtlPTAlloc(c->ni, PTL_PT_FLOWCTRL, c->eq_t, FC_PT, &pt) == PTL_OK);
    XP_CHECK_EQ(PtlPTDisable(c->ni, PT), PTL_OK);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, PT, 0, 0, (void *)0xF1, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_PT_DISABLED);
    XP_CHECK(ev.user_ptr == (void *)0xF1);
    /* flow control: no entry -> the PT disables itself, one PT_DISABLED event */
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, FC_PT, 0, 0, (void *)0xF2, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_PT_DISABLED);
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, FC_PT, 0, 0, (void *)0xF3, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_PT_DISABLED);
    barrier();
    EXPECT(c->eq_t, &ev, PTL_EVENT_PT_DISABLED, PTL_NI_PT_DISABLED);
    XP_CHECK_EQ(ev.pt_index, FC_PT);
    EXPECT_EMPTY(c->eq_t); /* only once, and none for the user's PtlPTDisable */
    /* re-enable both with an entry in place: messages are accepted again */
    ptl_handle_le_t fle;
    ptl_le_t led = { .start = c->tbuf + 64, .length = 64, .ct_handle = c->ct_t,
                     .uid = PTL_UID_ANY,
                     .options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE | PTL_LE_EVENT_CT_COMM };
    XP_REQUIRE(PtlLEAppend(c->ni, FC_PT, &led, PTL_PRIORITY_LIST, NULL, &fle) == PTL_OK);
    XP_CHECK_EQ(PtlPTEnable(c->ni, FC_PT), PTL_OK);
    XP_CHECK_EQ(PtlPTEnable(c->ni, PT), PTL_OK);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 8, PTL_ACK_REQ, c->right, FC_PT, 0, 0, NULL, 0), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    wait_ct(c->ct_t, 1, &v);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK_EQ(ev.pt_index, FC_PT);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(fle), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(c->ni, FC_PT), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* An overflow-list LE keeps an unexpected header: PtlLESearch reports it,
 * a later priority append consumes it with PUT_OVERFLOW. */
static void phase_overflow(ctx_t *c)
{
    ptl_event_t ev;
    ptl_ct_event_t v;
    reset(c);
    ptl_handle_le_t ov;
    ptl_le_t led = { .start = c->tbuf, .length = 256, .ct_handle = c->ct_t, .uid = PTL_UID_ANY,
                     .options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE |
                                PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_CT_OVERFLOW };
    XP_REQUIRE(PtlLEAppend(c->ni, PT, &led, PTL_OVERFLOW_LIST, (void *)0x0F, &ov) == PTL_OK);
    ptl_handle_md_t md = bind(c, c->sbuf, 64, PTL_MD_EVENT_CT_ACK, 1);
    fill(c->sbuf, 64, 40 + c->rank);
    barrier();
    XP_CHECK_EQ(PtlPut(md, 0, 24, PTL_ACK_REQ, c->right, PT, 0, 0, NULL, 0xAB), PTL_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_SEND, PTL_NI_OK);
    EXPECT(c->eq_i, &ev, PTL_EVENT_ACK, PTL_NI_OK);
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    /* the delivery into the overflow entry is a communication event (CT_COMM) */
    wait_ct(c->ct_t, 1, &v);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT, PTL_NI_OK);
    XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
    XP_CHECK(ev.user_ptr == (void *)0x0F);
    XP_CHECK_EQ(ev.mlength, 24);
    void *landed = ev.start;
    /* search: found, the header stays */
    ptl_le_t probe = { .start = NULL, .length = 0, .ct_handle = PTL_CT_NONE,
                       .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT };
    XP_CHECK_EQ(PtlLESearch(c->ni, PT, &probe, PTL_SEARCH_ONLY, (void *)0x5E), PTL_OK);
    EXPECT(c->eq_t, &ev, PTL_EVENT_SEARCH, PTL_NI_OK);
    XP_CHECK(ev.user_ptr == (void *)0x5E);
    XP_CHECK_EQ(ev.mlength, 24);
    XP_CHECK_EQ(ev.hdr_data, 0xAB);
    XP_CHECK_EQ(ev.initiator.rank, c->left);
    /* a priority append takes the header: PUT_OVERFLOW pointing at the data */
    ptl_handle_le_t pr = append(c, c->rbuf, 256, PTL_LE_OP_PUT | PTL_LE_EVENT_CT_OVERFLOW,
                                PTL_UID_ANY, (void *)0x9A);
    EXPECT(c->eq_t, &ev, PTL_EVENT_PUT_OVERFLOW, PTL_NI_OK);
    PtlCTGet(c->ct_t, &v); /* the overflow event counted on the new entry's CT */
    XP_CHECK_EQ(v.success, 2);
    XP_CHECK(ev.user_ptr == (void *)0x9A);
    XP_CHECK_EQ(ev.mlength, 24);
    XP_CHECK_EQ(ev.rlength, 24);
    XP_CHECK_EQ(ev.hdr_data, 0xAB);
    XP_CHECK(ev.start == landed);
    unsigned char want[24];
    fill(want, 24, 40 + c->left);
    XP_CHECK_EQ(memcmp(landed, want, 24), 0);
    XP_CHECK_EQ(PtlLESearch(c->ni, PT, &probe, PTL_SEARCH_ONLY, NULL), PTL_OK);
    EXPECT(c->eq_t, &ev, PTL_EVENT_SEARCH, PTL_NI_NO_MATCH);
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(pr), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(ov), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

/* Every other rank hammers one location of rank 0 with atomics. */
static void phase_concurrent_atomics(ctx_t *c)
{
    enum { ITER = 200 };
    ptl_ct_event_t v;
    int64_t *t = (int64_t *)c->tbuf;
    ptl_process_t zero;
    reset(c);
    memset(&zero, 0, sizeof(zero));
    t[0] = 0;
    t[1] = 0;
    ptl_handle_le_t le = append(c, c->tbuf, 64, PTL_LE_OP_PUT | PTL_LE_OP_GET |
                                PTL_LE_EVENT_SUCCESS_DISABLE, PTL_UID_ANY, NULL);
    ptl_handle_md_t md = bind(c, c->sbuf, 256, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY |
                              PTL_MD_EVENT_SUCCESS_DISABLE, 0);
    int64_t *s = (int64_t *)c->sbuf;
    s[0] = 1;
    barrier();
    if (c->rank != 0) {
        for (int i = 0; i < ITER; i++) {
            XP_REQUIRE(PtlAtomic(md, 0, 8, PTL_CT_ACK_REQ, zero, PT, 0, 0, NULL, 0, PTL_SUM,
                                 PTL_INT64_T) == PTL_OK);
            XP_REQUIRE(PtlFetchAtomic(md, 16 + 8 * (ptl_size_t)(i % 4), md, 0, 8, zero, PT, 0, 8,
                                      NULL, 0, PTL_SUM, PTL_INT64_T) == PTL_OK);
        }
        wait_ct(c->ct_i, 2 * ITER, &v);
        XP_CHECK_EQ(v.failure, 0);
    }
    barrier();
    if (c->rank == 0) {
        XP_CHECK_EQ(t[0], (int64_t)(c->n - 1) * ITER);
        XP_CHECK_EQ(t[1], (int64_t)(c->n - 1) * ITER);
    }
    barrier();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

int main(void)
{
    ctx_t c;
    ptl_process_t me;
    ptl_pt_index_t pt;
    memset(&c, 0, sizeof(c));
    c.tbuf = calloc(1, TLEN);
    c.sbuf = calloc(1, TLEN);
    c.rbuf = calloc(1, TLEN);
    XP_REQUIRE(c.tbuf && c.sbuf && c.rbuf);
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &c.ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(c.ni, &me) == PTL_OK);
    XP_REQUIRE(PtlGetUid(c.ni, &c.uid) == PTL_OK);
    c.n = xp_size();
    if (c.n < 2)
        XP_TEST_SKIP("needs 2 or more ranks");
    c.rank = me.rank;
    c.right.rank = (me.rank + 1) % (ptl_rank_t)c.n;
    c.left = (me.rank + (ptl_rank_t)c.n - 1) % (ptl_rank_t)c.n;
    XP_REQUIRE(PtlEQAlloc(c.ni, 256, &c.eq_t) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(c.ni, 256, &c.eq_i) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c.ni, &c.ct_t) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(c.ni, &c.ct_i) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(c.ni, 0, c.eq_t, PT, &pt) == PTL_OK);
    barrier_init(&c);

    phase_put(&c);
    phase_truncate(&c);
    phase_get(&c);
    phase_atomics(&c);
    phase_ack_kinds(&c);
    phase_md_options(&c);
    phase_violations(&c);
    phase_le_options(&c);
    phase_iovec(&c);
    phase_flow(&c);
    phase_overflow(&c);
    if (c.n >= 3)
        phase_concurrent_atomics(&c);

    barrier_c(&c);
    XP_CHECK_EQ(PtlPTFree(c.ni, PT), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(c.ni), PTL_OK);
    PtlFini();
    free(c.tbuf);
    free(c.sbuf);
    free(c.rbuf);
    return xp_test_result();
}
