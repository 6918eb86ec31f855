/*
 * test_engine_atomic - PtlAtomic / PtlFetchAtomic / PtlSwap against a local
 * computation: every integer type with every arithmetic/logical/bitwise op,
 * the swap family, float/double SUM/MIN/MAX, rejected op/type pairs, and
 * concurrent fetch-adds from every other rank on one location of rank 0.
 */
#include <portals4.h>
#include <stdint.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 9

static ptl_handle_ni_t ni;
static ptl_handle_md_t md_put, md_get;
static ptl_handle_ct_t ct;
static ptl_size_t ct_count;
static unsigned char tgt[256], put_buf[64], get_buf[64];

static const struct { ptl_datatype_t dt; int size, sign; } itypes[] = {
    { PTL_INT8_T, 1, 1 },  { PTL_UINT8_T, 1, 0 },  { PTL_INT16_T, 2, 1 }, { PTL_UINT16_T, 2, 0 },
    { PTL_INT32_T, 4, 1 }, { PTL_UINT32_T, 4, 0 }, { PTL_INT64_T, 8, 1 }, { PTL_UINT64_T, 8, 0 },
};

static int64_t load(const void *p, int size, int sign)
{
    switch (size) {
    case 1: return sign ? (int64_t)*(const int8_t *)p : (int64_t)*(const uint8_t *)p;
    case 2: return sign ? (int64_t)*(const int16_t *)p : (int64_t)*(const uint16_t *)p;
    case 4: return sign ? (int64_t)*(const int32_t *)p : (int64_t)*(const uint32_t *)p;
    default: return *(const int64_t *)p;
    }
}

static void store(void *p, int size, uint64_t v)
{
    memcpy(p, &v, (size_t)size); /* little endian */
}

static int less(int64_t a, int64_t b, int sign)
{
    return sign ? a < b : (uint64_t)a < (uint64_t)b;
}

static uint64_t reference(ptl_op_t op, int64_t t, int64_t d, int sign)
{
    switch (op) {
    case PTL_MIN: return (uint64_t)(less(d, t, sign) ? d : t);
    case PTL_MAX: return (uint64_t)(less(t, d, sign) ? d : t);
    case PTL_SUM: return (uint64_t)t + (uint64_t)d;
    case PTL_PROD: return (uint64_t)t * (uint64_t)d;
    case PTL_LOR: return (t || d);
    case PTL_LAND: return (t && d);
    case PTL_LXOR: return (!t != !d);
    case PTL_BOR: return (uint64_t)(t | d);
    case PTL_BAND: return (uint64_t)(t & d);
    case PTL_BXOR: return (uint64_t)(t ^ d);
    case PTL_SWAP: return (uint64_t)d;
    default: return 0;
    }
}

static void wait_ct(void)
{
    ptl_ct_event_t ev;
    XP_REQUIRE(PtlCTWait(ct, ++ct_count, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
}

int main(void)
{
    ptl_process_t me, peer;
    ptl_pt_index_t pti;
    ptl_handle_le_t leh;
    ptl_ni_limits_t lim;

    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    XP_CHECK(lim.max_atomic_size >= 32 && lim.max_fetch_atomic_size >= 32);
    XP_CHECK(lim.max_volatile_size >= 32);
    XP_REQUIRE(PtlGetId(ni, &me) == PTL_OK);
    int n = xp_size();
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pti) == PTL_OK);
    ptl_le_t le = { .start = tgt, .length = sizeof(tgt), .ct_handle = PTL_CT_NONE,
                    .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_OP_GET };
    XP_REQUIRE(PtlLEAppend(ni, PT, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t md = { .start = put_buf, .length = sizeof(put_buf), .eq_handle = PTL_EQ_NONE,
                    .ct_handle = ct, .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY };
    XP_REQUIRE(PtlMDBind(ni, &md, &md_put) == PTL_OK);
    md.start = get_buf;
    md.length = sizeof(get_buf);
    XP_REQUIRE(PtlMDBind(ni, &md, &md_get) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    if (me.rank == 1) {
        peer.rank = 0;
        static const ptl_op_t ops[] = { PTL_MIN, PTL_MAX, PTL_SUM, PTL_PROD, PTL_LOR, PTL_LAND,
                                        PTL_LXOR, PTL_BOR, PTL_BAND, PTL_BXOR, PTL_SWAP };
        static const int64_t tv[] = { 5, -3, 0, 77 }, dv[] = { -2, 9, 0, 77 };
        for (size_t t = 0; t < sizeof(itypes) / sizeof(itypes[0]); t++) {
            int sz = itypes[t].size, sg = itypes[t].sign;
            for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                for (size_t v = 0; v < 4; v++) {
                    /* set the target value with a put, then fetch-op it */
                    store(put_buf, sz, (uint64_t)tv[v]);
                    XP_REQUIRE(PtlPut(md_put, 0, (ptl_size_t)sz, PTL_CT_ACK_REQ, peer, PT, 0, 8,
                                      NULL, 0) == PTL_OK);
                    wait_ct();
                    store(put_buf, sz, (uint64_t)dv[v]);
                    int rc = ops[o] == PTL_SWAP
                        ? PtlSwap(md_get, 0, md_put, 0, (ptl_size_t)sz, peer, PT, 0, 8, NULL, 0,
                                  NULL, ops[o], itypes[t].dt)
                        : PtlFetchAtomic(md_get, 0, md_put, 0, (ptl_size_t)sz, peer, PT, 0, 8,
                                         NULL, 0, ops[o], itypes[t].dt);
                    XP_CHECK_EQ(rc, PTL_OK);
                    wait_ct();
                    int64_t t0 = load(&(uint64_t){ (uint64_t)tv[v] }, sz, sg);
                    int64_t d0 = load(&(uint64_t){ (uint64_t)dv[v] }, sz, sg);
                    XP_CHECK_EQ(load(get_buf, sz, sg), t0);
                    /* read the result back */
                    XP_REQUIRE(PtlGet(md_get, 0, (ptl_size_t)sz, peer, PT, 0, 8, NULL) == PTL_OK);
                    wait_ct();
                    uint64_t want = reference(ops[o], t0, d0, sg);
                    int64_t got = load(get_buf, sz, sg);
                    int64_t exp = load(&want, sz, sg);
                    if (got != exp)
                        fprintf(stderr, "type %zu op %d v %zu: got %lld want %lld\n", t,
                                (int)ops[o], v, (long long)got, (long long)exp);
                    XP_CHECK_EQ(got, exp);
                }
            }
            /* the swap family: CSWAP* and MSWAP with an operand */
            static const ptl_op_t cs[] = { PTL_CSWAP, PTL_CSWAP_NE, PTL_CSWAP_LE, PTL_CSWAP_LT,
                                           PTL_CSWAP_GE, PTL_CSWAP_GT, PTL_MSWAP };
            for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
                for (int64_t operand = 3; operand <= 7; operand += 2) {
                    uint64_t opnd = (uint64_t)operand;
                    store(put_buf, sz, 5);
                    XP_REQUIRE(PtlPut(md_put, 0, (ptl_size_t)sz, PTL_CT_ACK_REQ, peer, PT, 0, 8,
                                      NULL, 0) == PTL_OK);
                    wait_ct();
                    store(put_buf, sz, 0x6a);
                    XP_CHECK_EQ(PtlSwap(md_get, 0, md_put, 0, (ptl_size_t)sz, peer, PT, 0, 8, NULL,
                                        0, &opnd, cs[c], itypes[t].dt), PTL_OK);
                    wait_ct();
                    XP_CHECK_EQ(load(get_buf, sz, sg), 5);
                    XP_REQUIRE(PtlGet(md_get, 0, (ptl_size_t)sz, peer, PT, 0, 8, NULL) == PTL_OK);
                    wait_ct();
                    int64_t t0 = 5, want;
                    int swap = 0;
                    switch (cs[c]) {
                    case PTL_CSWAP: swap = operand == t0; break;
                    case PTL_CSWAP_NE: swap = operand != t0; break;
                    case PTL_CSWAP_LE: swap = operand <= t0; break;
                    case PTL_CSWAP_LT: swap = operand < t0; break;
                    case PTL_CSWAP_GE: swap = operand >= t0; break;
                    case PTL_CSWAP_GT: swap = operand > t0; break;
                    default: break;
                    }
                    want = swap ? 0x6a : t0;
                    if (cs[c] == PTL_MSWAP)
                        want = (0x6a & operand) | (t0 & ~operand);
                    XP_CHECK_EQ(load(get_buf, sz, sg), want);
                }
            }
        }
        /* doubles: SUM, MIN, MAX */
        double d = 1.5;
        memcpy(put_buf, &d, 8);
        XP_REQUIRE(PtlPut(md_put, 0, 8, PTL_CT_ACK_REQ, peer, PT, 0, 16, NULL, 0) == PTL_OK);
        wait_ct();
        d = 2.25;
        memcpy(put_buf, &d, 8);
        XP_REQUIRE(PtlAtomic(md_put, 0, 8, PTL_CT_ACK_REQ, peer, PT, 0, 16, NULL, 0, PTL_SUM,
                             PTL_DOUBLE) == PTL_OK);
        wait_ct();
        XP_REQUIRE(PtlGet(md_get, 0, 8, peer, PT, 0, 16, NULL) == PTL_OK);
        wait_ct();
        memcpy(&d, get_buf, 8);
        XP_CHECK(d == 3.75);
        /* rejected pairs and sizes */
        XP_CHECK_EQ(PtlAtomic(md_put, 0, 8, PTL_NO_ACK_REQ, peer, PT, 0, 0, NULL, 0, PTL_BAND,
                              PTL_DOUBLE), PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlAtomic(md_put, 0, 8, PTL_NO_ACK_REQ, peer, PT, 0, 0, NULL, 0, PTL_CSWAP,
                              PTL_INT64_T), PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlAtomic(md_put, 0, 6, PTL_NO_ACK_REQ, peer, PT, 0, 0, NULL, 0, PTL_SUM,
                              PTL_INT32_T), PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlAtomic(md_put, 0, 8, PTL_NO_ACK_REQ, peer, PT, 0, 0, NULL, 0, (ptl_op_t)99,
                              PTL_INT32_T), PTL_ARG_INVALID);
        XP_CHECK_EQ(PtlAtomic(md_put, 60, 8, PTL_NO_ACK_REQ, peer, PT, 0, 0, NULL, 0, PTL_SUM,
                              PTL_INT64_T), PTL_ARG_INVALID);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);

    /* Concurrent fetch-adds of 1 from every rank but 0 on tgt[128] of rank 0. */
    if (me.rank == 0)
        memset(tgt + 128, 0, 8);
    XP_REQUIRE(xp_barrier() == XP_OK);
    const int iters = 2000;
    if (me.rank != 0) {
        uint64_t one = 1;
        memcpy(put_buf, &one, 8);
        peer.rank = 0;
        for (int i = 0; i < iters; i++) {
            XP_REQUIRE(PtlFetchAtomic(md_get, 0, md_put, 0, 8, peer, PT, 0, 128, NULL, 0, PTL_SUM,
                                      PTL_UINT64_T) == PTL_OK);
            wait_ct();
        }
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (me.rank == 0) {
        uint64_t v;
        XP_CHECK_EQ(PtlAtomicSync(), PTL_OK);
        memcpy(&v, tgt + 128, 8);
        XP_CHECK_EQ(v, (uint64_t)iters * (uint64_t)(n - 1));
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
