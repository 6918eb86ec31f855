/*
 * test_atomic_ops - every Portals atomic operation on every datatype against
 * a straightforward computation, the invalid pairs, length rules, fetching,
 * and concurrent updates (no lost update with the CAS path).
 */
#include <complex.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "ptl/atomic_ops.h"
#include "xp_test.h"

#define NELEM 4

static const ptl_op_t all_ops[] = {
    PTL_MIN, PTL_MAX, PTL_SUM, PTL_PROD, PTL_LOR, PTL_LAND, PTL_BOR, PTL_BAND, PTL_LXOR,
    PTL_BXOR, PTL_SWAP, PTL_CSWAP, PTL_CSWAP_NE, PTL_CSWAP_LE, PTL_CSWAP_LT, PTL_CSWAP_GE,
    PTL_CSWAP_GT, PTL_MSWAP};
static const ptl_datatype_t all_types[] = {
    PTL_INT8_T, PTL_UINT8_T, PTL_INT16_T, PTL_UINT16_T, PTL_INT32_T, PTL_UINT32_T,
    PTL_INT64_T, PTL_UINT64_T, PTL_FLOAT, PTL_DOUBLE, PTL_LONG_DOUBLE, PTL_FLOAT_COMPLEX,
    PTL_DOUBLE_COMPLEX, PTL_LONG_DOUBLE_COMPLEX};
#define NOPS (sizeof(all_ops) / sizeof(all_ops[0]))
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

static int is_int(ptl_datatype_t dt) { return dt <= PTL_UINT64_T; }
static int is_complex(ptl_datatype_t dt)
{
    return dt == PTL_FLOAT_COMPLEX || dt == PTL_DOUBLE_COMPLEX || dt == PTL_LONG_DOUBLE_COMPLEX;
}
static int single(ptl_op_t op) { return op >= PTL_CSWAP && op <= PTL_MSWAP; }

/* The expected validity table, written out independently of the library. */
static int expect_pair_valid(ptl_op_t op, ptl_datatype_t dt)
{
    switch (op) {
    case PTL_SUM: case PTL_PROD: case PTL_SWAP: case PTL_CSWAP: case PTL_CSWAP_NE:
        return 1;
    case PTL_MIN: case PTL_MAX: case PTL_CSWAP_LE: case PTL_CSWAP_LT: case PTL_CSWAP_GE:
    case PTL_CSWAP_GT:
        return !is_complex(dt);
    default:
        return is_int(dt);
    }
}

/* Reference computation on long double / long double complex (exact for the
 * small values used), then converted to the element type. */
typedef long double _Complex ref_t;

static int ref_cmp_true(ptl_op_t op, ref_t o, ref_t d)
{
    switch (op) {
    case PTL_CSWAP: return o == d;
    case PTL_CSWAP_NE: return o != d;
    case PTL_CSWAP_LE: return creall(o) <= creall(d);
    case PTL_CSWAP_LT: return creall(o) < creall(d);
    case PTL_CSWAP_GE: return creall(o) >= creall(d);
    case PTL_CSWAP_GT: return creall(o) > creall(d);
    default: return 0;
    }
}

static ref_t ref_op(ptl_op_t op, ref_t d, ref_t x, ref_t o)
{
    long double rd = creall(d), rx = creall(x);
    long long id = (long long)rd, ix = (long long)rx, io = (long long)creall(o);
    switch (op) {
    case PTL_SUM: return d + x;
    case PTL_PROD: return d * x;
    case PTL_MIN: return rx < rd ? x : d;
    case PTL_MAX: return rx > rd ? x : d;
    case PTL_LAND: return (id && ix) ? 1 : 0;
    case PTL_LOR: return (id || ix) ? 1 : 0;
    case PTL_LXOR: return (!id != !ix) ? 1 : 0;
    case PTL_BAND: return (ref_t)(id & ix);
    case PTL_BOR: return (ref_t)(id | ix);
    case PTL_BXOR: return (ref_t)(id ^ ix);
    case PTL_SWAP: return x;
    case PTL_MSWAP: return (ref_t)((io & ix) | (~io & id));
    default: return ref_cmp_true(op, o, d) ? x : d;
    }
}

/* Store / load one element of dt from a ref_t (wrapping for integers). */
static void put_elem(ptl_datatype_t dt, void *p, ref_t v)
{
    long long i = (long long)creall(v);
    switch (dt) {
    case PTL_INT8_T: { int8_t x = (int8_t)i; memcpy(p, &x, 1); break; }
    case PTL_UINT8_T: { uint8_t x = (uint8_t)i; memcpy(p, &x, 1); break; }
    case PTL_INT16_T: { int16_t x = (int16_t)i; memcpy(p, &x, 2); break; }
    case PTL_UINT16_T: { uint16_t x = (uint16_t)i; memcpy(p, &x, 2); break; }
    case PTL_INT32_T: { int32_t x = (int32_t)i; memcpy(p, &x, 4); break; }
    case PTL_UINT32_T: { uint32_t x = (uint32_t)i; memcpy(p, &x, 4); break; }
    case PTL_INT64_T: { int64_t x = (int64_t)i; memcpy(p, &x, 8); break; }
    case PTL_UINT64_T: { uint64_t x = (uint64_t)i; memcpy(p, &x, 8); break; }
    case PTL_FLOAT: { float x = (float)creall(v); memcpy(p, &x, sizeof x); break; }
    case PTL_DOUBLE: { double x = (double)creall(v); memcpy(p, &x, sizeof x); break; }
    case PTL_LONG_DOUBLE: { long double x = creall(v); memset(p, 0, sizeof x); memcpy(p, &x, sizeof x); break; }
    case PTL_FLOAT_COMPLEX: { float _Complex x = (float _Complex)v; memcpy(p, &x, sizeof x); break; }
    case PTL_DOUBLE_COMPLEX: { double _Complex x = (double _Complex)v; memcpy(p, &x, sizeof x); break; }
    case PTL_LONG_DOUBLE_COMPLEX: { memset(p, 0, sizeof v); memcpy(p, &v, sizeof v); break; }
    }
}

static int elem_equal(ptl_datatype_t dt, const void *a, const void *b)
{
    if (dt == PTL_LONG_DOUBLE) {
        long double x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return x == y;
    }
    if (dt == PTL_LONG_DOUBLE_COMPLEX) {
        ref_t x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return x == y;
    }
    return memcmp(a, b, xp_atomic_type_size(dt)) == 0;
}

/* Values: small, including negatives for signed types and equal pairs so
 * that every compare op takes both branches across the elements. */
static ref_t sample(ptl_datatype_t dt, int which, int i)
{
    static const int tgt[NELEM] = {3, 5, 0, 7};
    static const int dat[NELEM] = {3, 2, 6, 0};
    int v = which ? dat[i] : tgt[i];
    int signed_ok = dt == PTL_INT8_T || dt == PTL_INT16_T || dt == PTL_INT32_T ||
                    dt == PTL_INT64_T || !is_int(dt);
    if (signed_ok && i == 1 && which)
        v = -2;
    if (is_complex(dt))
        return (ref_t)v + (ref_t)(i + 1) * I * (which ? 1 : 0);
    return v;
}

static void check_one(ptl_op_t op, ptl_datatype_t dt)
{
    size_t size = xp_atomic_type_size(dt);
    int n = single(op) ? 1 : NELEM;
    /* target has room for the unaligned copy at target + 1 below. */
    _Alignas(64) unsigned char target[NELEM * 32 + 16], data[NELEM * 32], expect[NELEM * 32];
    _Alignas(64) unsigned char old[NELEM * 32], fetch[NELEM * 32], operand[32];

    /* Operands: equal to the target's first element half of the time. */
    for (int variant = 0; variant < 3; variant++) {
        ref_t o = variant == 0 ? sample(dt, 0, 0) : variant == 1 ? (ref_t)1 : (ref_t)9;
        memset(target, 0, sizeof target);
        memset(data, 0, sizeof data);
        memset(expect, 0, sizeof expect);
        put_elem(dt, operand, o);
        for (int i = 0; i < n; i++) {
            ref_t d = sample(dt, 0, i), x = sample(dt, 1, i);
            /* Read back through the element type so the reference starts
             * from exactly the stored value (wrapping of unsigned types). */
            put_elem(dt, target + i * size, d);
            put_elem(dt, data + i * size, x);
            put_elem(dt, expect + i * size, ref_op(op, d, x, o));
        }
        /* For unsigned types, wrap the reference the same way the element
         * does (negative data only appears for signed types). */
        memcpy(old, target, sizeof old);
        XP_CHECK_EQ(xp_atomic_apply(op, dt, target, data, operand, n * size, fetch), XP_OK);
        for (int i = 0; i < n; i++) {
            if (!elem_equal(dt, target + i * size, expect + i * size)) {
                fprintf(stderr, "%s %s element %d variant %d: wrong result\n",
                        xp_atomic_op_name(op), xp_atomic_type_name(dt), i, variant);
                XP_CHECK(0);
            }
        }
        XP_CHECK(memcmp(fetch, old, n * size) == 0);
        /* The plain path computes the same. */
        memcpy(target, old, sizeof old);
        XP_CHECK_EQ(xp_atomic_apply_plain(op, dt, target, data, operand, n * size, NULL), XP_OK);
        for (int i = 0; i < n; i++)
            XP_CHECK(elem_equal(dt, target + i * size, expect + i * size));
        /* Unaligned target: plain fallback, same result. */
        memcpy(target + 1, old, n * size);
        XP_CHECK_EQ(xp_atomic_apply(op, dt, target + 1, data, operand, n * size, NULL), XP_OK);
        for (int i = 0; i < n; i++)
            XP_CHECK(elem_equal(dt, target + 1 + i * size, expect + i * size));
    }
}

static void test_all_pairs(void)
{
    int valid = 0, invalid = 0;

    for (size_t a = 0; a < NOPS; a++) {
        for (size_t b = 0; b < NTYPES; b++) {
            ptl_op_t op = all_ops[a];
            ptl_datatype_t dt = all_types[b];
            size_t size = xp_atomic_type_size(dt);
            unsigned char buf[64] = {0}, data[64] = {0}, opnd[32] = {0};
            int kind = single(op) || op == PTL_SWAP ? XP_ATOMIC_SWAP : XP_ATOMIC_PLAIN;

            XP_CHECK_EQ(xp_atomic_valid(op, dt, kind), expect_pair_valid(op, dt));
            /* The other family never accepts it. */
            XP_CHECK_EQ(xp_atomic_valid(op, dt, kind == XP_ATOMIC_SWAP ? XP_ATOMIC_FETCH
                                                                      : XP_ATOMIC_SWAP), 0);
            if (kind == XP_ATOMIC_PLAIN)
                XP_CHECK_EQ(xp_atomic_valid(op, dt, XP_ATOMIC_FETCH), expect_pair_valid(op, dt));
            if (expect_pair_valid(op, dt)) {
                valid++;
                check_one(op, dt);
            } else {
                invalid++;
                XP_CHECK_EQ(xp_atomic_apply(op, dt, buf, data, opnd, size, NULL), XP_ERR_INVALID);
                XP_CHECK_EQ(xp_atomic_check(op, dt, size, kind), XP_ERR_INVALID);
                for (size_t i = 0; i < sizeof buf; i++)
                    XP_CHECK_EQ(buf[i], 0);
            }
        }
    }
    /* 18 ops x 14 types: 8 integer types take all 18; 3 reals take 11; 3 complex 5. */
    XP_CHECK_EQ(valid, 8 * 18 + 3 * 11 + 3 * 5);
    XP_CHECK_EQ(invalid, 18 * 14 - valid);
}

static void test_sizes_and_lengths(void)
{
    XP_CHECK_EQ(xp_atomic_type_size(PTL_INT8_T), 1);
    XP_CHECK_EQ(xp_atomic_type_size(PTL_UINT16_T), 2);
    XP_CHECK_EQ(xp_atomic_type_size(PTL_FLOAT), 4);
    XP_CHECK_EQ(xp_atomic_type_size(PTL_FLOAT_COMPLEX), 8);
    XP_CHECK_EQ(xp_atomic_type_size(PTL_DOUBLE_COMPLEX), 16);
    XP_CHECK_EQ(xp_atomic_type_size(PTL_LONG_DOUBLE), sizeof(long double));
    XP_CHECK_EQ(xp_atomic_type_size(PTL_LONG_DOUBLE_COMPLEX), 2 * sizeof(long double));
    XP_CHECK_EQ(xp_atomic_type_size((ptl_datatype_t)99), 0);
    /* Bad enum values never pass. */
    XP_CHECK_EQ(xp_atomic_valid((ptl_op_t)99, PTL_INT32_T, XP_ATOMIC_PLAIN), 0);
    XP_CHECK_EQ(xp_atomic_valid(PTL_SUM, (ptl_datatype_t)99, XP_ATOMIC_PLAIN), 0);
    XP_CHECK_EQ(xp_atomic_valid(PTL_SUM, PTL_INT32_T, 7), 0);
    /* Length multiple of the element; CSWAP/MSWAP exactly one element. */
    XP_CHECK_EQ(xp_atomic_check(PTL_SUM, PTL_INT32_T, 12, XP_ATOMIC_PLAIN), XP_OK);
    XP_CHECK_EQ(xp_atomic_check(PTL_SUM, PTL_INT32_T, 6, XP_ATOMIC_PLAIN), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_atomic_check(PTL_SWAP, PTL_INT32_T, 16, XP_ATOMIC_SWAP), XP_OK);
    XP_CHECK_EQ(xp_atomic_check(PTL_CSWAP, PTL_INT32_T, 8, XP_ATOMIC_SWAP), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_atomic_check(PTL_MSWAP, PTL_UINT64_T, 8, XP_ATOMIC_SWAP), XP_OK);
    XP_CHECK_EQ(xp_atomic_check(PTL_SUM, PTL_INT32_T, 0, XP_ATOMIC_PLAIN), XP_OK);
    {
        int32_t t[2] = {1, 2}, d[2] = {3, 4}, o = 1;
        XP_CHECK_EQ(xp_atomic_apply(PTL_CSWAP, PTL_INT32_T, t, d, &o, 8, NULL), XP_ERR_INVALID);
        XP_CHECK_EQ(xp_atomic_apply(PTL_CSWAP, PTL_INT32_T, t, d, NULL, 4, NULL), XP_ERR_INVALID);
        XP_CHECK_EQ(xp_atomic_apply(PTL_SUM, PTL_INT32_T, t, d, NULL, 7, NULL), XP_ERR_INVALID);
        XP_CHECK_EQ(t[0], 1);
        XP_CHECK_EQ(xp_atomic_apply(PTL_SUM, PTL_INT32_T, t, d, NULL, 0, NULL), XP_OK);
        XP_CHECK_EQ(xp_atomic_apply(PTL_SUM, PTL_INT32_T, NULL, d, NULL, 4, NULL), XP_ERR_INVALID);
    }
    /* Wrapping integer arithmetic, not undefined behaviour. */
    {
        int32_t t = INT32_MAX, d = 1;
        XP_CHECK_EQ(xp_atomic_apply(PTL_SUM, PTL_INT32_T, &t, &d, NULL, 4, NULL), XP_OK);
        XP_CHECK_EQ(t, INT32_MIN);
        uint16_t u = 65535, v = 65535;
        XP_CHECK_EQ(xp_atomic_apply(PTL_PROD, PTL_UINT16_T, &u, &v, NULL, 2, NULL), XP_OK);
        XP_CHECK_EQ(u, 1);
    }
    /* Complex product and the MSWAP bit mix. */
    {
        double _Complex t = 1.0 + 2.0 * I, d = 3.0 - 1.0 * I;
        XP_CHECK_EQ(xp_atomic_apply(PTL_PROD, PTL_DOUBLE_COMPLEX, &t, &d, NULL, 16, NULL), XP_OK);
        XP_CHECK(creal(t) == 5.0 && cimag(t) == 5.0);
        uint8_t m = 0xF0, x = 0xAA, y = 0x55;
        XP_CHECK_EQ(xp_atomic_apply(PTL_MSWAP, PTL_UINT8_T, &y, &x, &m, 1, NULL), XP_OK);
        XP_CHECK_EQ(y, 0xA5);
    }
}

/* Several threads add into the same elements: the CAS path loses nothing. */
#define NTHREADS 4
#define NITER 20000
static int64_t shared_i[4];
static double shared_d[4];

static void *adder(void *arg)
{
    int64_t one_i[4] = {1, 1, 1, 1};
    double one_d[4] = {1, 1, 1, 1};
    (void)arg;
    for (int k = 0; k < NITER; k++) {
        xp_atomic_apply(PTL_SUM, PTL_INT64_T, shared_i, one_i, NULL, sizeof one_i, NULL);
        xp_atomic_apply(PTL_SUM, PTL_DOUBLE, shared_d, one_d, NULL, sizeof one_d, NULL);
    }
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, adder, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        XP_CHECK_EQ(shared_i[i], NTHREADS * NITER);
        XP_CHECK(shared_d[i] == (double)(NTHREADS * NITER));
    }
}

int main(void)
{
    test_all_pairs();
    test_sizes_and_lengths();
    test_concurrent();
    return xp_test_result();
}
