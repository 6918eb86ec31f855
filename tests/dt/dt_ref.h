/*
 * tests/dt/dt_ref.h - a reference datatype engine for the tests: random
 * nested types built through the public API together with a shadow tree,
 * and a walker that visits the shadow tree basic element by basic element
 * (no flattening, no merging), giving the packed stream byte for byte.
 */
#ifndef XP_TEST_DT_REF_H
#define XP_TEST_DT_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/dt.h"

enum { R_BASIC, R_CONTIG, R_VECTOR, R_HVECTOR, R_INDEXED, R_HINDEXED, R_IBLOCK, R_STRUCT, R_SUBARRAY,
       R_RESIZED, R_DUP, R_NKINDS };

typedef struct rnode {
    int kind;
    xp_dt_t h;            /* the library's type */
    int basic_id;         /* R_BASIC */
    size_t count, blen;
    ptrdiff_t stride;     /* bytes */
    size_t *blens;
    ptrdiff_t *displs;    /* bytes */
    struct rnode **kids;  /* 1 child, or count for struct */
    int ndims, order;
    size_t sizes[4], subsizes[4], starts[4];
} rnode_t;

/* A piece of the packed stream: len bytes at byte offset off of the buffer;
 * basic = id of the basic type. */
typedef struct rpiece { ptrdiff_t off; size_t len; int basic; } rpiece_t;
typedef struct rlist { rpiece_t *p; size_t n, cap; } rlist_t;

static uint64_t rng_state_ = 88172645463325252ull;
static inline uint64_t rnd(void)
{
    rng_state_ ^= rng_state_ << 13;
    rng_state_ ^= rng_state_ >> 7;
    rng_state_ ^= rng_state_ << 17;
    return rng_state_;
}
static inline size_t rndn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static inline size_t ext_of(xp_dt_t h)
{
    size_t e = 0;
    XP_REQUIRE(xp_dt_extent(h, &e) == XP_OK);
    return e;
}

static inline void rl_push(rlist_t *l, ptrdiff_t off, size_t len, int basic)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->p = realloc(l->p, l->cap * sizeof *l->p);
        XP_REQUIRE(l->p);
    }
    l->p[l->n++] = (rpiece_t){off, len, basic};
}

static const size_t basic_sizes_[] = {0, 1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, sizeof(long double),
                                      8, 16, 2 * sizeof(long double), 1};

static void ref_walk(const rnode_t *n, ptrdiff_t base, rlist_t *out)
{
    switch (n->kind) {
    case R_BASIC:
        rl_push(out, base, basic_sizes_[n->basic_id], n->basic_id);
        return;
    case R_CONTIG:
    case R_VECTOR:
    case R_HVECTOR: {
        ptrdiff_t e = (ptrdiff_t)ext_of(n->kids[0]->h);
        for (size_t i = 0; i < n->count; i++)
            for (size_t j = 0; j < n->blen; j++)
                ref_walk(n->kids[0], base + (ptrdiff_t)i * n->stride + (ptrdiff_t)j * e, out);
        return;
    }
    case R_INDEXED:
    case R_HINDEXED:
    case R_IBLOCK:
    case R_STRUCT:
        for (size_t i = 0; i < n->count; i++) {
            const rnode_t *k = n->kind == R_STRUCT ? n->kids[i] : n->kids[0];
            ptrdiff_t e = (ptrdiff_t)ext_of(k->h);
            for (size_t j = 0; j < n->blens[i]; j++)
                ref_walk(k, base + n->displs[i] + (ptrdiff_t)j * e, out);
        }
        return;
    case R_SUBARRAY: {
        /* Every index tuple of the sub-array in the array's order. */
        ptrdiff_t e = (ptrdiff_t)ext_of(n->kids[0]->h);
        size_t idx[4] = {0}, total = 1;
        for (int d = 0; d < n->ndims; d++)
            total *= n->subsizes[d];
        for (size_t k = 0; k < total; k++) {
            size_t rem = k;
            for (int q = 0; q < n->ndims; q++) {
                int d = n->order == XP_DT_ORDER_C ? n->ndims - 1 - q : q;
                idx[d] = rem % n->subsizes[d];
                rem /= n->subsizes[d];
            }
            ptrdiff_t off = 0, mult = e;
            for (int q = 0; q < n->ndims; q++) {
                int d = n->order == XP_DT_ORDER_C ? n->ndims - 1 - q : q;
                off += (ptrdiff_t)(n->starts[d] + idx[d]) * mult;
                mult *= (ptrdiff_t)n->sizes[d];
            }
            ref_walk(n->kids[0], base + off, out);
        }
        return;
    }
    case R_RESIZED:
    case R_DUP:
        ref_walk(n->kids[0], base, out);
        return;
    }
}

/* Pieces of `count` elements of n at origin 0. */
static inline void ref_pieces(const rnode_t *n, size_t count, rlist_t *out)
{
    ptrdiff_t e = (ptrdiff_t)ext_of(n->h);
    out->n = 0;
    for (size_t i = 0; i < count; i++)
        ref_walk(n, (ptrdiff_t)i * e, out);
}

static const int basic_ids_[] = {XP_DT_ID_CHAR, XP_DT_ID_INT8, XP_DT_ID_INT16, XP_DT_ID_INT32, XP_DT_ID_UINT64,
                                 XP_DT_ID_FLOAT, XP_DT_ID_DOUBLE, XP_DT_ID_DOUBLE_COMPLEX, XP_DT_ID_BYTE};

static rnode_t *rnode_new(int kind)
{
    rnode_t *n = calloc(1, sizeof *n);
    XP_REQUIRE(n);
    n->kind = kind;
    return n;
}

static inline size_t size_of(xp_dt_t h)
{
    size_t s = 0;
    XP_REQUIRE(xp_dt_size(h, &s) == XP_OK);
    return s;
}

/* A random type of at most `depth` levels; `basic` >= 0 forces one basic
 * type (homogeneous types for the reduce tests). Sizes stay small. */
static rnode_t *rand_type(int depth, int basic)
{
    int kind = depth <= 0 ? R_BASIC : (int)rndn(R_NKINDS);
    if (kind == R_BASIC) {
        rnode_t *n = rnode_new(R_BASIC);
        n->basic_id = basic >= 0 ? basic : basic_ids_[rndn(sizeof basic_ids_ / sizeof basic_ids_[0])];
        n->h = XP_DT_PREDEFINED_(n->basic_id);
        return n;
    }
    rnode_t *n = rnode_new(kind);
    rnode_t *k = rand_type(depth - 1, basic);
    /* Keep the tree small: big children get few copies. */
    size_t ksz = size_of(k->h) + 1, budget = 4096 / ksz + 1, maxc = budget < 6 ? budget : 6;
    ptrdiff_t e = (ptrdiff_t)ext_of(k->h);
    n->kids = calloc(8, sizeof *n->kids);
    n->kids[0] = k;
    xp_status_t st = XP_OK;
    switch (kind) {
    case R_CONTIG:
        n->count = 1;
        n->blen = rndn(maxc + 1);
        n->stride = 0;
        st = xp_dt_contiguous(n->blen, k->h, &n->h);
        break;
    case R_VECTOR: {
        n->count = rndn(maxc + 1);
        n->blen = rndn(3) + (rndn(8) == 0 ? 0 : 1);
        ptrdiff_t s = (ptrdiff_t)rndn(2 * n->blen + 4) - (ptrdiff_t)(rndn(3) == 0 ? n->blen + 2 : 0);
        n->stride = s * e;
        st = xp_dt_vector(n->count, n->blen, s, k->h, &n->h);
        break;
    }
    case R_HVECTOR:
        n->count = rndn(maxc + 1);
        n->blen = rndn(3) + 1;
        n->stride = (ptrdiff_t)rndn(64) - 16;
        st = xp_dt_hvector(n->count, n->blen, n->stride, k->h, &n->h);
        break;
    case R_INDEXED:
    case R_HINDEXED:
    case R_IBLOCK:
    case R_STRUCT: {
        n->count = rndn(5);
        n->blens = calloc(n->count + 1, sizeof *n->blens);
        n->displs = calloc(n->count + 1, sizeof *n->displs);
        ptrdiff_t d[8];
        size_t bl = rndn(3) + 1;
        xp_dt_t types[8];
        for (size_t i = 0; i < n->count; i++) {
            n->blens[i] = kind == R_IBLOCK ? bl : rndn(4);
            d[i] = (ptrdiff_t)rndn(12) - 4;
            if (kind == R_STRUCT && i > 0)
                n->kids[i] = rand_type(depth - 1, basic);
            if (kind == R_STRUCT) {
                types[i] = n->kids[i]->h;
                d[i] = (ptrdiff_t)rndn(96) - 24;
            }
            n->displs[i] = (kind == R_INDEXED || kind == R_IBLOCK) ? d[i] * e : d[i];
        }
        if (kind == R_INDEXED)
            st = xp_dt_indexed(n->count, n->blens, d, k->h, &n->h);
        else if (kind == R_IBLOCK)
            st = xp_dt_indexed_block(n->count, bl, d, k->h, &n->h);
        else if (kind == R_HINDEXED)
            st = xp_dt_hindexed(n->count, n->blens, d, k->h, &n->h);
        else {
            if (n->count == 0)
                types[0] = k->h;
            st = xp_dt_struct(n->count, n->blens, d, types, &n->h);
        }
        break;
    }
    case R_SUBARRAY:
        n->ndims = 1 + (int)rndn(3);
        n->order = rndn(2) ? XP_DT_ORDER_C : XP_DT_ORDER_FORTRAN;
        for (int dd = 0; dd < n->ndims; dd++) {
            n->sizes[dd] = 1 + rndn(4);
            n->subsizes[dd] = rndn(n->sizes[dd] + 1);
            n->starts[dd] = rndn(n->sizes[dd] - n->subsizes[dd] + 1);
        }
        st = xp_dt_subarray(n->ndims, n->sizes, n->subsizes, n->starts, n->order, k->h, &n->h);
        break;
    case R_RESIZED:
        st = xp_dt_resized(k->h, (ptrdiff_t)rndn(32) - 16, rndn(64), &n->h);
        break;
    case R_DUP:
        st = xp_dt_dup(k->h, &n->h);
        break;
    }
    XP_REQUIRE(st == XP_OK);
    return n;
}

static void rnode_free(rnode_t *n)
{
    if (!n)
        return;
    size_t nk = n->kind == R_STRUCT ? (n->count ? n->count : 1) : (n->kind == R_BASIC ? 0 : 1);
    for (size_t i = 0; i < nk; i++)
        rnode_free(n->kids[i]);
    if (n->kind != R_BASIC)
        XP_CHECK_EQ(xp_dt_free(&n->h), XP_OK);
    free(n->kids);
    free(n->blens);
    free(n->displs);
    free(n);
}

#endif
