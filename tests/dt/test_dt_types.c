/* Known shapes (sizes, bounds, packed bytes), sender / receiver type pairs of
 * equal signature, threads on large copies, and every error path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/dt.h"
#include "dt/dt_internal.h"

static void check_shape(xp_dt_t t, size_t size, size_t extent, ptrdiff_t lb, ptrdiff_t tlb, size_t text)
{
    size_t s = 0, e = 0, te = 0;
    ptrdiff_t l = 0, tl = 0;
    XP_CHECK_EQ(xp_dt_size(t, &s), XP_OK);
    XP_CHECK_EQ(xp_dt_extent(t, &e), XP_OK);
    XP_CHECK_EQ(xp_dt_lb(t, &l), XP_OK);
    XP_CHECK_EQ(xp_dt_true_extent(t, &tl, &te), XP_OK);
    XP_CHECK_EQ(s, size);
    XP_CHECK_EQ(e, extent);
    XP_CHECK_EQ(l, lb);
    XP_CHECK_EQ(tl, tlb);
    XP_CHECK_EQ(te, text);
}

static void test_shapes(void)
{
    xp_dt_t v, n, r, s, c, z;
    check_shape(XP_DT_DOUBLE, 8, 8, 0, 0, 8);
    check_shape(XP_DT_LONG_DOUBLE_COMPLEX, 2 * sizeof(long double), 2 * sizeof(long double), 0, 0,
                2 * sizeof(long double));
    XP_REQUIRE(xp_dt_vector(3, 2, 4, XP_DT_DOUBLE, &v) == XP_OK);
    check_shape(v, 48, 80, 0, 0, 80);
    XP_REQUIRE(xp_dt_vector(3, 1, -2, XP_DT_INT32, &n) == XP_OK);
    check_shape(n, 12, 20, -16, -16, 20);
    XP_REQUIRE(xp_dt_resized(v, -8, 100, &r) == XP_OK);
    check_shape(r, 48, 100, -8, 0, 80);
    size_t bl[2] = {1, 2};
    ptrdiff_t d[2] = {16, -4};
    xp_dt_t ty[2] = {XP_DT_DOUBLE, XP_DT_INT16};
    XP_REQUIRE(xp_dt_struct(2, bl, d, ty, &s) == XP_OK);
    check_shape(s, 12, 28, -4, -4, 28);
    XP_REQUIRE(xp_dt_contiguous(0, XP_DT_DOUBLE, &z) == XP_OK);
    check_shape(z, 0, 0, 0, 0, 0);
    XP_REQUIRE(xp_dt_contiguous(5, r, &c) == XP_OK); /* copies 100 bytes apart */
    check_shape(c, 240, 500, -8, 0, 480);
    /* Freed children stay alive inside their parents. */
    XP_CHECK_EQ(xp_dt_free(&v), XP_OK);
    XP_CHECK(v == XP_DT_NULL);
    XP_CHECK_EQ(xp_dt_free(&r), XP_OK);
    XP_CHECK_EQ(xp_dt_commit(c), XP_OK);
    double src[64], pk[30];
    for (int i = 0; i < 64; i++)
        src[i] = i;
    XP_CHECK_EQ(xp_dt_pack_all(c, 1, src, pk), XP_OK);
    /* element k of c: vector at 100k bytes = 12.5 doubles: only k even is aligned; check k = 0, 2 */
    XP_CHECK(pk[0] == 0 && pk[1] == 1 && pk[2] == 4 && pk[3] == 5 && pk[4] == 8 && pk[5] == 9);
    XP_CHECK(pk[12] == 25 && pk[13] == 26 && pk[14] == 29);
    xp_dt_free(&n);
    xp_dt_free(&s);
    xp_dt_free(&c);
    xp_dt_free(&z);
}

static void test_subarray(void)
{
    size_t sizes[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 1};
    xp_dt_t tc, tf;
    double a[20], pk[6];
    for (int i = 0; i < 20; i++)
        a[i] = i;
    XP_REQUIRE(xp_dt_subarray(2, sizes, sub, st, XP_DT_ORDER_C, XP_DT_DOUBLE, &tc) == XP_OK);
    XP_REQUIRE(xp_dt_subarray(2, sizes, sub, st, XP_DT_ORDER_FORTRAN, XP_DT_DOUBLE, &tf) == XP_OK);
    check_shape(tc, 48, 160, 0, 6 * 8, (13 - 6 + 1) * 8);
    XP_REQUIRE(xp_dt_commit(tc) == XP_OK && xp_dt_commit(tf) == XP_OK);
    XP_CHECK_EQ(xp_dt_pack_all(tc, 1, a, pk), XP_OK); /* rows 1..2, cols 1..3 of a 4x5 C array */
    double ec[6] = {6, 7, 8, 11, 12, 13};
    XP_CHECK(!memcmp(pk, ec, sizeof ec));
    XP_CHECK_EQ(xp_dt_pack_all(tf, 1, a, pk), XP_OK); /* 4x5 Fortran: element (i,j) at i + 4j */
    double ef[6] = {5, 6, 9, 10, 13, 14};
    XP_CHECK(!memcmp(pk, ef, sizeof ef));
    xp_dt_free(&tc);
    xp_dt_free(&tf);
}

/* Sender and receiver with different types of equal signature. */
static void test_exchange(void)
{
    enum { N = 64 };
    double *m = malloc(N * N * sizeof *m), *t = malloc(N * N * sizeof *t), *pk = malloc(N * N * sizeof *pk);
    for (int i = 0; i < N * N; i++)
        m[i] = i;
    /* vector <-> contiguous */
    xp_dt_t col, cont, tr1, tr;
    XP_REQUIRE(xp_dt_vector(N, 1, N, XP_DT_DOUBLE, &col) == XP_OK); /* a row of a column-major matrix */
    XP_REQUIRE(xp_dt_contiguous(N, XP_DT_DOUBLE, &cont) == XP_OK);
    XP_REQUIRE(xp_dt_commit(col) == XP_OK && xp_dt_commit(cont) == XP_OK);
    int match = 0;
    XP_CHECK_EQ(xp_dt_match(col, 1, cont, 1, &match), XP_OK);
    XP_CHECK_EQ(match, 1);
    XP_CHECK_EQ(xp_dt_match(col, 1, XP_DT_DOUBLE, N, &match), XP_OK);
    XP_CHECK_EQ(match, 1);
    XP_CHECK_EQ(xp_dt_match(col, 1, XP_DT_INT64, N, &match), XP_OK);
    XP_CHECK_EQ(match, 0);
    XP_CHECK_EQ(xp_dt_pack_all(col, 1, m + 3, pk), XP_OK);
    XP_CHECK_EQ(xp_dt_unpack_all(cont, 1, pk, t), XP_OK);
    for (int i = 0; i < N; i++)
        XP_CHECK(t[i] == m[3 + i * N]);
    /* matrix <-> transpose: the receiver's type reads the matrix row by row */
    XP_REQUIRE(xp_dt_vector(N, 1, N, XP_DT_DOUBLE, &tr1) == XP_OK);
    XP_REQUIRE(xp_dt_resized(tr1, 0, sizeof(double), &tr) == XP_OK);
    XP_REQUIRE(xp_dt_commit(tr) == XP_OK);
    XP_CHECK_EQ(xp_dt_match(tr, N, cont, N, &match), XP_OK);
    XP_CHECK_EQ(match, 1);
    XP_CHECK_EQ(xp_dt_pack_all(cont, N, m, pk), XP_OK);
    XP_CHECK_EQ(xp_dt_unpack_all(tr, N, pk, t), XP_OK);
    int bad = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            bad += t[i * N + j] != m[j * N + i];
    XP_CHECK_EQ(bad, 0);
    /* and back, by fragments of an odd size */
    for (size_t off = 0; off < N * N * 8; off += 1000) {
        size_t len = N * N * 8 - off < 1000 ? N * N * 8 - off : 1000;
        XP_CHECK_EQ(xp_dt_pack(tr, N, t, (char *)pk + off, off, len), XP_OK);
    }
    XP_CHECK(!memcmp(pk, m, N * N * 8));
    xp_dt_free(&col);
    xp_dt_free(&cont);
    xp_dt_free(&tr1);
    xp_dt_free(&tr);
    free(m);
    free(t);
    free(pk);
}

/* A 32 MiB vector split over two threads equals the serial result. */
static void test_threads(void)
{
    enum { R = 2048, C = 1024 };
    double *m = malloc((size_t)R * 2 * C * 8), *pk = malloc((size_t)R * C * 8);
    XP_REQUIRE(m && pk);
    for (size_t i = 0; i < (size_t)R * 2 * C; i++)
        m[i] = (double)i;
    xp_dt_t v;
    XP_REQUIRE(xp_dt_vector(C, R, 2 * R, XP_DT_DOUBLE, &v) == XP_OK && xp_dt_commit(v) == XP_OK);
    XP_CHECK_EQ(xp_dt_pack(v, 1, m, pk, 8, (size_t)R * C * 8 - 16), XP_OK);
    int bad = 0;
    for (size_t c = 0; c < C; c++)
        for (size_t r = 0; r < R; r++) {
            size_t p = c * R + r;
            if (p >= 1 && p < (size_t)R * C - 1)
                bad += pk[p - 1] != m[c * 2 * R + r];
        }
    XP_CHECK_EQ(bad, 0);
    XP_CHECK_EQ(xp_dt_pool_threads(), 2); /* the pool did start */
    xp_dt_free(&v);
    free(m);
    free(pk);
}

static void test_errors(void)
{
    xp_dt_t t = XP_DT_NULL, u;
    size_t s;
    char buf[64];
    XP_CHECK_EQ(xp_dt_contiguous(4, XP_DT_NULL, &t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_contiguous(4, XP_DT_DOUBLE, NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_contiguous(4, (xp_dt_t)(uintptr_t)999, &t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_contiguous(SIZE_MAX / 4, XP_DT_DOUBLE, &t), XP_ERR_OVERFLOW);
    XP_CHECK_EQ(xp_dt_vector(SIZE_MAX / 2, 2, 1, XP_DT_INT8, &t), XP_ERR_OVERFLOW);
    XP_CHECK_EQ(xp_dt_vector(4, 1, PTRDIFF_MAX / 2, XP_DT_DOUBLE, &t), XP_ERR_OVERFLOW);
    XP_CHECK_EQ(xp_dt_hindexed(2, NULL, NULL, XP_DT_DOUBLE, &t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_struct(1, (size_t[]){1}, (ptrdiff_t[]){0}, (xp_dt_t[]){XP_DT_NULL}, &t), XP_ERR_INVALID);
    size_t sz[2] = {4, 4}, sub[2] = {2, 5}, st[2] = {0, 0};
    XP_CHECK_EQ(xp_dt_subarray(2, sz, sub, st, XP_DT_ORDER_C, XP_DT_DOUBLE, &t), XP_ERR_INVALID);
    sub[1] = 2;
    st[0] = 3;
    XP_CHECK_EQ(xp_dt_subarray(2, sz, sub, st, XP_DT_ORDER_C, XP_DT_DOUBLE, &t), XP_ERR_INVALID);
    st[0] = 0;
    XP_CHECK_EQ(xp_dt_subarray(2, sz, sub, st, 7, XP_DT_DOUBLE, &t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_subarray(0, sz, sub, st, XP_DT_ORDER_C, XP_DT_DOUBLE, &t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_resized(XP_DT_DOUBLE, PTRDIFF_MAX, 16, &t), XP_ERR_OVERFLOW);
    XP_CHECK(t == XP_DT_NULL); /* outputs untouched on error */
    XP_CHECK_EQ(xp_dt_size(XP_DT_NULL, &s), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_size(XP_DT_DOUBLE, NULL), XP_ERR_INVALID);

    /* pack: uncommitted, window past the end, NULL buffers */
    XP_REQUIRE(xp_dt_vector(2, 1, 2, XP_DT_INT32, &t) == XP_OK);
    XP_CHECK_EQ(xp_dt_pack(t, 1, buf, buf + 32, 0, 8), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_commit(t), XP_OK);
    XP_CHECK_EQ(xp_dt_commit(t), XP_OK);
    XP_CHECK_EQ(xp_dt_pack(t, 1, buf, buf + 32, 0, 8), XP_OK);
    XP_CHECK_EQ(xp_dt_pack(t, 1, buf, buf + 32, 4, 8), XP_ERR_TRUNCATED);
    XP_CHECK_EQ(xp_dt_pack(t, 2, buf, buf + 32, SIZE_MAX, 2), XP_ERR_TRUNCATED);
    XP_CHECK_EQ(xp_dt_pack(t, SIZE_MAX, buf, buf + 32, 0, 8), XP_ERR_OVERFLOW);
    XP_CHECK_EQ(xp_dt_pack(t, 1, NULL, buf, 0, 8), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_unpack(t, 1, buf, NULL, 0, 8), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_pack(t, 1, NULL, NULL, 0, 0), XP_OK);
    /* reduce: misaligned window, op undefined on the type, mixed types */
    XP_CHECK_EQ(xp_dt_unpack_reduce(XP_DT_OP_SUM, t, 1, buf, buf + 32, 2, 4), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_unpack_reduce((xp_dt_op_t)99, t, 1, buf, buf + 32, 0, 4), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_unpack_reduce(XP_DT_OP_BXOR, XP_DT_DOUBLE, 1, buf, buf + 32, 0, 8), XP_ERR_UNSUPPORTED);
    XP_CHECK_EQ(xp_dt_unpack_reduce(XP_DT_OP_MAX, XP_DT_DOUBLE_COMPLEX, 1, buf, buf + 32, 0, 16),
                XP_ERR_UNSUPPORTED);
    XP_CHECK_EQ(xp_dt_unpack_reduce(XP_DT_OP_SUM, XP_DT_BYTE, 1, buf, buf + 32, 0, 1), XP_ERR_UNSUPPORTED);
    XP_REQUIRE(xp_dt_struct(2, (size_t[]){1, 1}, (ptrdiff_t[]){0, 8}, (xp_dt_t[]){XP_DT_INT32, XP_DT_DOUBLE},
                            &u) == XP_OK);
    XP_CHECK_EQ(xp_dt_commit(u), XP_OK);
    xp_dt_t b;
    XP_CHECK_EQ(xp_dt_basic(u, &b), XP_ERR_UNSUPPORTED);
    XP_CHECK_EQ(xp_dt_unpack_reduce(XP_DT_OP_SUM, u, 1, buf, buf + 32, 0, 12), XP_ERR_UNSUPPORTED);
    XP_CHECK_EQ(xp_dt_basic(t, &b), XP_OK);
    XP_CHECK(b == XP_DT_INT32);
    /* free: predefined, twice, NULL */
    xp_dt_t d = XP_DT_DOUBLE;
    XP_CHECK_EQ(xp_dt_free(&d), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_free(NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_free(&t), XP_OK);
    XP_CHECK_EQ(xp_dt_free(&t), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_dt_free(&u), XP_OK);
    /* contiguity */
    int contig;
    ptrdiff_t first;
    XP_CHECK_EQ(xp_dt_is_contiguous(XP_DT_DOUBLE, 10, &contig, &first), XP_OK);
    XP_CHECK_EQ(contig, 1);
}

int main(void)
{
    /* Large copies on two threads (the test also runs on one core). */
    setenv("XP_DT_THREADS", "2", 1);
    setenv("XP_DT_PAR_MIN", "64k", 1);
    test_shapes();
    test_subarray();
    test_exchange();
    test_threads();
    test_errors();
    return xp_test_result();
}
