/*
 * test_target_fast - the target's short cuts for small messages (target.c),
 * checked against what the specification asks, on a non-matching logical NI:
 *   - the first priority LE wins without a search (a use-once one too,
 *     truncating), and once it is consumed the next one;
 *   - inline puts of 1 to 16 bytes at every offset 0..7 land exactly, with
 *     the bytes around them untouched;
 *   - atomics without the process-wide lock (aligned 1-8 byte elements in
 *     a contiguous LE) and with it (misaligned elements, an iovec LE with an
 *     element across two pieces, long double) give the right old and new
 *     values;
 *   - every rank fetch-adds the same word of rank 0 concurrently: no update
 *     is lost and every fetched value is distinct.
 * Runs with 1 process (sending to itself) and with several.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 7
#define ROUNDS 2000

static ptl_handle_ni_t ni;
static ptl_handle_md_t md, md_get; /* md: src (acks); md_get: fetched (replies) */
static ptl_handle_ct_t md_ct;
static ptl_size_t md_count;
static unsigned char src[64], fetched[64];

/* Wait for the initiator's count of the last operation (ack or reply). */
static void wait_md(void)
{
    ptl_ct_event_t ev;
    md_count++;
    XP_REQUIRE(PtlCTWait(md_ct, md_count, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
}

static ptl_handle_le_t append(void *start, ptl_size_t len, unsigned opts, ptl_handle_ct_t ct)
{
    ptl_le_t le;
    ptl_handle_le_t h;
    memset(&le, 0, sizeof(le));
    le.start = start;
    le.length = len;
    le.ct_handle = ct;
    le.uid = PTL_UID_ANY;
    le.options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_COMM_DISABLE |
                 PTL_LE_EVENT_LINK_DISABLE | opts;
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    return h;
}

static void put_to(ptl_process_t to, ptl_size_t len, ptl_size_t roff)
{
    XP_REQUIRE(PtlPut(md, 0, len, PTL_CT_ACK_REQ, to, PT, 0, roff, NULL, 0) == PTL_OK);
    wait_md();
}

static void fetch(ptl_process_t to, ptl_size_t roff, ptl_size_t len, ptl_op_t op,
                  ptl_datatype_t dt)
{
    int rc = op == PTL_SWAP /* PtlSwap's, not PtlFetchAtomic's */
                 ? PtlSwap(md_get, 0, md, 0, len, to, PT, 0, roff, NULL, 0, NULL, op, dt)
                 : PtlFetchAtomic(md_get, 0, md, 0, len, to, PT, 0, roff, NULL, 0, op, dt);
    XP_REQUIRE(rc == PTL_OK);
    wait_md();
}

/* Count on a CT, which must reach `n` successes. */
static void expect_ct(ptl_handle_ct_t ct, ptl_size_t n)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(ct, n, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, n);
    XP_CHECK_EQ(ev.failure, 0);
}

static void test_first_le(ptl_process_t self)
{
    static unsigned char first[16], second[64];
    ptl_handle_ct_t c1, c2;
    XP_REQUIRE(PtlCTAlloc(ni, &c1) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &c2) == PTL_OK);
    append(first, sizeof(first), PTL_LE_USE_ONCE, c1);
    ptl_handle_le_t l2 = append(second, sizeof(second), 0, c2);
    memset(src, 0xAB, sizeof(src));
    put_to(self, 32, 0); /* the first (use-once) entry takes it, truncated */
    expect_ct(c1, 1);
    XP_CHECK_EQ(first[15], 0xAB);
    XP_CHECK_EQ(second[0], 0);
    put_to(self, 2, 0); /* the first is gone: the second */
    expect_ct(c2, 1);
    XP_CHECK_EQ(second[1], 0xAB);
    XP_CHECK_EQ(second[2], 0);
    PtlLEUnlink(l2);
    PtlCTFree(c1);
    PtlCTFree(c2);
}

static void test_small_puts(ptl_process_t self)
{
    static unsigned char buf[64];
    ptl_handle_ct_t c;
    ptl_size_t n = 0;
    XP_REQUIRE(PtlCTAlloc(ni, &c) == PTL_OK);
    ptl_handle_le_t l = append(buf, sizeof(buf), 0, c);
    for (unsigned i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i + 1);
    for (size_t len = 1; len <= 16; len++) {
        for (size_t off = 0; off < 8; off++) {
            memset(buf, 0xEE, sizeof(buf));
            put_to(self, len, off);
            expect_ct(c, ++n);
            int bad = 0;
            for (size_t i = 0; i < sizeof(buf); i++) {
                unsigned char want = i >= off && i < off + len ? src[i - off] : 0xEE;
                bad += buf[i] != want;
            }
            if (bad)
                fprintf(stderr, "put of %zu bytes at offset %zu: %d wrong bytes\n", len, off, bad);
            XP_CHECK_EQ(bad, 0);
        }
    }
    PtlLEUnlink(l);
    PtlCTFree(c);
}

/* One fetching atomic on `target` (an LE over it), checking old and new. */
static void check_fetch(ptl_process_t self, void *target, size_t tlen, ptl_size_t roff,
                        ptl_op_t op, ptl_datatype_t dt, uint64_t init, uint64_t operand,
                        uint64_t want, int size)
{
    ptl_handle_le_t l = append(target, tlen, 0, PTL_CT_NONE);
    uint64_t got = 0, old = 0;
    memcpy((char *)target + roff, &init, (size_t)size);
    memcpy(src, &operand, (size_t)size);
    fetch(self, roff, (ptl_size_t)size, op, dt);
    memcpy(&got, (char *)target + roff, (size_t)size);
    memcpy(&old, fetched, (size_t)size);
    if (got != want || old != init)
        fprintf(stderr, "op %d type %d size %d offset %zu: got %llx (want %llx), old %llx\n",
                (int)op, (int)dt, size, (size_t)roff, (unsigned long long)got,
                (unsigned long long)want, (unsigned long long)old);
    XP_CHECK_EQ(got, want);
    XP_CHECK_EQ(old, init);
    PtlLEUnlink(l);
}

static void test_atomics_local(ptl_process_t self)
{
    static uint64_t words[8];
    unsigned char *w = (unsigned char *)words;
    static const struct { ptl_datatype_t dt; int size, sign; } types[] = {
        { PTL_UINT8_T, 1, 0 }, { PTL_INT16_T, 2, 1 }, { PTL_UINT32_T, 4, 0 }, { PTL_INT64_T, 8, 1 },
    };
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        int s = types[t].size;
        uint64_t mask = s == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * s)) - 1;
        uint64_t a = UINT64_C(0xF0F0F0F0F0F0F0F5) & mask, b = UINT64_C(0x3C3C3C3C3C3C3C3C) & mask;
        /* aligned: the lock-free path; misaligned (offset 1): the lock path */
        for (ptl_size_t off = 0; off <= (s > 1 ? 1u : 0u); off++) {
            ptl_size_t roff = 8 + (off ? 1 : 0);
            check_fetch(self, w, sizeof(words), roff, PTL_SUM, types[t].dt, a, b, (a + b) & mask, s);
            check_fetch(self, w, sizeof(words), roff, PTL_BAND, types[t].dt, a, b, a & b, s);
            check_fetch(self, w, sizeof(words), roff, PTL_BOR, types[t].dt, a, b, a | b, s);
            check_fetch(self, w, sizeof(words), roff, PTL_BXOR, types[t].dt, a, b, a ^ b, s);
            check_fetch(self, w, sizeof(words), roff, PTL_SWAP, types[t].dt, a, b, b, s);
            /* a has its top bit set: below b when signed */
            check_fetch(self, w, sizeof(words), roff, PTL_MAX, types[t].dt, b, a,
                        types[t].sign ? b : a, s);
        }
    }
    /* long double: no native atomic, the lock path */
    static long double ld[2];
    ptl_handle_le_t l = append(ld, sizeof(ld), 0, PTL_CT_NONE);
    long double one = 1.5L, two = 2.25L, old;
    ld[1] = one;
    memcpy(src, &two, sizeof(two));
    fetch(self, sizeof(long double), sizeof(long double), PTL_SUM, PTL_LONG_DOUBLE);
    memcpy(&old, fetched, sizeof(old));
    XP_CHECK(ld[1] == 3.75L);
    XP_CHECK(old == 1.5L);
    PtlLEUnlink(l);
    /* an iovec LE whose second element straddles its two pieces */
    static unsigned char p1[12], p2[12];
    ptl_iovec_t iov[2] = { { p1, sizeof(p1) }, { p2, sizeof(p2) } };
    ptl_le_t le;
    memset(&le, 0, sizeof(le));
    le.start = iov;
    le.length = 2;
    le.ct_handle = PTL_CT_NONE;
    le.uid = PTL_UID_ANY;
    le.options = PTL_IOVEC | PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_COMM_DISABLE |
                 PTL_LE_EVENT_LINK_DISABLE;
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &l) == PTL_OK);
    uint64_t v[2] = { 10, UINT64_C(0x0102030405060708) }, add[2] = { 5, 1 }, now[2];
    memcpy(p1, v, 8);
    memcpy(p1 + 8, &v[1], 4);
    memcpy(p2, (char *)&v[1] + 4, 4);
    memcpy(src, add, sizeof(add));
    fetch(self, 0, 16, PTL_SUM, PTL_UINT64_T);
    memcpy(&now[0], p1, 8);
    memcpy(&now[1], p1 + 8, 4);
    memcpy((char *)&now[1] + 4, p2, 4);
    XP_CHECK_EQ(now[0], 15);
    XP_CHECK_EQ(now[1], UINT64_C(0x0102030405060709));
    XP_CHECK(memcmp(fetched, v, sizeof(v)) == 0);
    PtlLEUnlink(l);
}

/* Rank 0's counter, fetch-added by everybody at once. */
static void test_concurrent_fetch_add(ptl_process_t self, ptl_rank_t size)
{
    static uint64_t counter;
    static uint64_t seen[ROUNDS];
    ptl_handle_ct_t c;
    ptl_process_t zero = self;
    zero.rank = 0;
    XP_REQUIRE(PtlCTAlloc(ni, &c) == PTL_OK);
    ptl_handle_le_t l = append(&counter, sizeof(counter), 0, c);
    XP_REQUIRE(xp_barrier() == XP_OK);
    uint64_t one = 1;
    memcpy(src, &one, 8);
    for (int i = 0; i < ROUNDS; i++) {
        fetch(zero, 0, 8, PTL_SUM, PTL_UINT64_T);
        memcpy(&seen[i], fetched, 8);
    }
    int order_ok = 1;
    for (int i = 1; i < ROUNDS; i++)
        order_ok &= seen[i] > seen[i - 1]; /* one initiator's adds are ordered */
    XP_CHECK(order_ok);
    if (self.rank == 0) {
        expect_ct(c, (ptl_size_t)ROUNDS * (ptl_size_t)size);
        XP_CHECK_EQ(counter, (uint64_t)ROUNDS * (uint64_t)size);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlLEUnlink(l);
    PtlCTFree(c);
}

int main(void)
{
    ptl_process_t self;
    ptl_pt_index_t pt;
    ptl_md_t mdd;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(ni, &self) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &md_ct) == PTL_OK);
    memset(&mdd, 0, sizeof(mdd));
    mdd.start = src;
    mdd.length = sizeof(src);
    mdd.eq_handle = PTL_EQ_NONE;
    mdd.ct_handle = md_ct;
    mdd.options = PTL_MD_EVENT_CT_ACK;
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    mdd.start = fetched;
    mdd.length = sizeof(fetched);
    mdd.options = PTL_MD_EVENT_CT_REPLY;
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md_get) == PTL_OK);

    test_first_le(self);
    test_small_puts(self);
    test_atomics_local(self);
    test_concurrent_fetch_add(self, (ptl_rank_t)xp_size());

    PtlMDRelease(md);
    PtlMDRelease(md_get);
    PtlCTFree(md_ct);
    PtlPTFree(ni, PT);
    PtlNIFini(ni);
    PtlFini();
    return xp_test_result();
}
