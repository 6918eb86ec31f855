/* Property test: thousands of random nested types, random counts, random
 * windows. Pack, unpack and reduce-unpack must equal the reference walker
 * byte for byte; sizes, true extents and signatures must agree with it. */
#include <stdio.h>

#include "dt/dt_internal.h"
#include "dt_ref.h"

#define NTYPES 3000

typedef struct buf {
    unsigned char *mem;
    unsigned char *origin; /* mem + shift: the buffer origin the type is relative to */
    size_t len;
} buf_t;

/* A buffer covering every byte of the pieces (checked against true extent). */
static void buf_for(const rlist_t *l, xp_dt_t h, size_t count, buf_t *b)
{
    ptrdiff_t lo = 0, hi = 0, tlb;
    size_t text, ext = ext_of(h);
    XP_REQUIRE(xp_dt_true_extent(h, &tlb, &text) == XP_OK);
    for (size_t i = 0; i < l->n; i++) {
        ptrdiff_t a = l->p[i].off, z = a + (ptrdiff_t)l->p[i].len;
        if (i == 0 || a < lo)
            lo = a;
        if (i == 0 || z > hi)
            hi = z;
    }
    if (l->n) {
        /* true bounds of count elements */
        ptrdiff_t tlo = tlb, thi = tlb + (ptrdiff_t)text + (ptrdiff_t)(count - 1) * (ptrdiff_t)ext;
        XP_CHECK_INT(lo, >=, tlo);
        XP_CHECK_INT(hi, <=, thi);
        if (count == 1) {
            XP_CHECK_EQ(lo, tlb);
            XP_CHECK_EQ(hi, tlb + (ptrdiff_t)text);
        }
    }
    b->len = (size_t)(hi - lo) + 64;
    b->mem = malloc(b->len);
    XP_REQUIRE(b->mem);
    b->origin = b->mem + 32 - lo;
    for (size_t i = 0; i < b->len; i++)
        b->mem[i] = (unsigned char)rnd();
}

static void ref_pack(const rlist_t *l, const unsigned char *origin, unsigned char *out)
{
    size_t p = 0;
    for (size_t i = 0; i < l->n; i++) {
        memcpy(out + p, origin + l->p[i].off, l->p[i].len);
        p += l->p[i].len;
    }
}

/* Reference unpack of the window [off, off + len) (bytes in stream order). */
static void ref_unpack(const rlist_t *l, const unsigned char *win, size_t off, size_t len, unsigned char *origin)
{
    size_t p = 0;
    for (size_t i = 0; i < l->n; i++) {
        for (size_t b = 0; b < l->p[i].len; b++, p++)
            if (p >= off && p < off + len)
                origin[l->p[i].off + (ptrdiff_t)b] = win[p - off];
    }
}

/* Whether pieces overlap (unpack of overlapping types is order dependent). */
static int overlapping(const rlist_t *l, const buf_t *b)
{
    unsigned char *seen = calloc(b->len, 1);
    int ovl = 0;
    for (size_t i = 0; i < l->n && !ovl; i++)
        for (size_t k = 0; k < l->p[i].len; k++) {
            size_t at = (size_t)((b->origin - b->mem) + l->p[i].off) + k;
            if (seen[at]++) {
                ovl = 1;
                break;
            }
        }
    free(seen);
    return ovl;
}

static void random_window(size_t total, size_t *off, size_t *len)
{
    switch (rndn(4)) {
    case 0: *off = 0; *len = total; break;
    case 1: *off = rndn(total + 1); *len = total - *off; break;
    default: *off = rndn(total + 1); *len = rndn(total - *off + 1); break;
    }
}

static int check_one(rnode_t *n, size_t count)
{
    rlist_t l = {0};
    buf_t b;
    ref_pieces(n, count, &l);
    size_t total = 0, sz = size_of(n->h);
    for (size_t i = 0; i < l.n; i++)
        total += l.p[i].len;
    XP_CHECK_EQ(total, sz * count);
    buf_for(&l, n->h, count, &b);
    unsigned char *ref = malloc(total + 1), *got = malloc(total + 16);
    ref_pack(&l, b.origin, ref);

    /* Whole and fragmented pack. */
    int fails = xp_test_failures_;
    XP_CHECK_EQ(xp_dt_pack_all(n->h, count, b.origin, got), XP_OK);
    XP_CHECK(total == 0 || !memcmp(got, ref, total));
    for (int w = 0; w < 4; w++) {
        size_t off, len;
        random_window(total, &off, &len);
        memset(got, 0xEE, total + 16);
        XP_CHECK_EQ(xp_dt_pack(n->h, count, b.origin, got, off, len), XP_OK);
        XP_CHECK(len == 0 || !memcmp(got, ref + off, len));
        XP_CHECK_EQ(got[len], 0xEE); /* exactly len bytes written */
    }
    if (total) {
        size_t frag = 1 + rndn(total);
        memset(got, 0, total);
        for (size_t off = 0; off < total; off += frag)
            XP_CHECK_EQ(xp_dt_pack(n->h, count, b.origin, got + off, off, off + frag > total ? total - off : frag),
                        XP_OK);
        XP_CHECK(!memcmp(got, ref, total));
    }

    /* The GPU work units (each at most `unit` bytes) reproduce the stream. */
    if (rndn(4) == 0) {
        dt_unit_t *u;
        size_t nu, unit = 1 + rndn(24);
        XP_CHECK_EQ(xp_dt_units_build(xp_dt_get(n->h), count, unit, &u, &nu), XP_OK);
        memset(got, 0, total);
        size_t sum = 0;
        for (size_t i = 0; i < nu; i++) {
            XP_CHECK(u[i].len >= 1 && u[i].len <= unit && u[i].dst + u[i].len <= total);
            memcpy(got + u[i].dst, b.origin + u[i].src, u[i].len);
            sum += u[i].len;
        }
        XP_CHECK_EQ(sum, total);
        XP_CHECK(!total || !memcmp(got, ref, total));
        free(u);
    }

    /* Unpack windows of random bytes into a copy of the buffer. */
    if (!overlapping(&l, &b)) {
        unsigned char *a = malloc(b.len), *e = malloc(b.len);
        for (int w = 0; w < 3; w++) {
            size_t off, len;
            random_window(total, &off, &len);
            for (size_t i = 0; i < total; i++)
                got[i] = (unsigned char)rnd();
            memcpy(a, b.mem, b.len);
            memcpy(e, b.mem, b.len);
            XP_CHECK_EQ(xp_dt_unpack(n->h, count, got, a + (b.origin - b.mem), off, len), XP_OK);
            ref_unpack(&l, got, off, len, e + (b.origin - b.mem));
            XP_CHECK(!memcmp(a, e, b.len));
        }
        free(a);
        free(e);
    }
    free(ref);
    free(got);
    free(b.mem);
    free(l.p);
    return xp_test_failures_ == fails;
}

/* Reduce-unpack on homogeneous int32 / double types against per-element ops. */
static void check_reduce(rnode_t *n, size_t count, int basic)
{
    rlist_t l = {0};
    buf_t b;
    ref_pieces(n, count, &l);
    buf_for(&l, n->h, count, &b);
    size_t total = size_of(n->h) * count, es = basic == XP_DT_ID_INT32 ? 4 : 8;
    if (overlapping(&l, &b) || !total)
        goto done;
    /* Keep the doubles exact: small integers. */
    unsigned char *in = malloc(total);
    for (size_t i = 0; i < total / es; i++) {
        if (basic == XP_DT_ID_INT32) {
            int32_t v = (int32_t)rnd();
            memcpy(in + i * es, &v, 4);
        } else {
            double v = (double)(int)(rndn(2000)) - 1000;
            memcpy(in + i * es, &v, 8);
        }
    }
    if (basic == XP_DT_ID_DOUBLE)
        for (size_t i = 0; i < l.n; i++)
            for (size_t k = 0; k < l.p[i].len; k += 8) {
                double v = (double)(int)(rndn(2000)) - 1000;
                memcpy(b.origin + l.p[i].off + (ptrdiff_t)k, &v, 8);
            }
    xp_dt_op_t op = (xp_dt_op_t)rndn(XP_DT_OP_COUNT_);
    if (basic == XP_DT_ID_DOUBLE && op >= XP_DT_OP_BAND && op <= XP_DT_OP_BXOR)
        op = XP_DT_OP_SUM;
    size_t off = rndn(total / es + 1) * es, len = rndn((total - off) / es + 1) * es;
    unsigned char *a = malloc(b.len), *e = malloc(b.len);
    memcpy(a, b.mem, b.len);
    memcpy(e, b.mem, b.len);
    XP_CHECK_EQ(xp_dt_unpack_reduce(op, n->h, count, in, a + (b.origin - b.mem), off, len), XP_OK);
    /* reference */
    unsigned char *eo = e + (b.origin - b.mem);
    size_t p = 0;
    for (size_t i = 0; i < l.n; i++)
        for (size_t k = 0; k < l.p[i].len; k += es, p += es) {
            if (p < off || p >= off + len)
                continue;
            unsigned char *d = eo + l.p[i].off + (ptrdiff_t)k;
            const unsigned char *s = in + (p - off);
            if (basic == XP_DT_ID_INT32) {
                int32_t x, y, r;
                memcpy(&x, d, 4);
                memcpy(&y, s, 4);
                switch (op) {
                case XP_DT_OP_SUM: r = (int32_t)((uint32_t)x + (uint32_t)y); break;
                case XP_DT_OP_PROD: r = (int32_t)((uint32_t)x * (uint32_t)y); break;
                case XP_DT_OP_MIN: r = x < y ? x : y; break;
                case XP_DT_OP_MAX: r = x > y ? x : y; break;
                case XP_DT_OP_LAND: r = x && y; break;
                case XP_DT_OP_LOR: r = x || y; break;
                case XP_DT_OP_LXOR: r = !x != !y; break;
                case XP_DT_OP_BAND: r = x & y; break;
                case XP_DT_OP_BOR: r = x | y; break;
                case XP_DT_OP_BXOR: r = x ^ y; break;
                default: r = y; break;
                }
                memcpy(d, &r, 4);
            } else {
                double x, y, r;
                memcpy(&x, d, 8);
                memcpy(&y, s, 8);
                switch (op) {
                case XP_DT_OP_SUM: r = x + y; break;
                case XP_DT_OP_PROD: r = x * y; break;
                case XP_DT_OP_MIN: r = x < y ? x : y; break;
                case XP_DT_OP_MAX: r = x > y ? x : y; break;
                case XP_DT_OP_LAND: r = x && y; break;
                case XP_DT_OP_LOR: r = x || y; break;
                case XP_DT_OP_LXOR: r = !x != !y; break;
                default: r = y; break;
                }
                memcpy(d, &r, 8);
            }
        }
    XP_CHECK(!memcmp(a, e, b.len));
    free(a);
    free(e);
    free(in);
done:
    free(b.mem);
    free(l.p);
}

int main(int argc, char **argv)
{
    int ntypes = argc > 1 ? atoi(argv[1]) : NTYPES;
    if (argc > 2)
        rng_state_ = strtoull(argv[2], NULL, 0);
    int bad = 0;
    for (int i = 0; i < ntypes; i++) {
        uint64_t seed = rng_state_;
        rnode_t *n = rand_type(1 + (int)rndn(4), -1);
        if (rndn(2))
            XP_REQUIRE(xp_dt_commit(n->h) == XP_OK);
        /* Some handles are committed late, through a committed parent. */
        XP_REQUIRE(xp_dt_commit(n->h) == XP_OK);
        size_t count = rndn(4) + (rndn(4) == 0 ? 0 : 1);
        if (!check_one(n, count) && bad++ < 5)
            fprintf(stderr, "type %d (seed %#llx, count %zu) failed\n", i, (unsigned long long)seed, count);
        /* Signature: every homogeneous type matches a contiguous run of its basic type. */
        xp_dt_t basic;
        size_t nb;
        if (xp_dt_basic(n->h, &basic) == XP_OK) {
            int m = 0;
            XP_CHECK_EQ(xp_dt_num_basic(n->h, &nb), XP_OK);
            XP_CHECK_EQ(xp_dt_match(n->h, count, basic, nb * count, &m), XP_OK);
            XP_CHECK_EQ(m, 1);
            if (nb) {
                XP_CHECK_EQ(xp_dt_match(n->h, count + 1, basic, nb * count, &m), XP_OK);
                XP_CHECK_EQ(m, 0);
            }
        }
        rnode_free(n);
    }
    for (int i = 0; i < ntypes / 3; i++) {
        int basic = rndn(2) ? XP_DT_ID_INT32 : XP_DT_ID_DOUBLE;
        rnode_t *n = rand_type(1 + (int)rndn(3), basic);
        XP_REQUIRE(xp_dt_commit(n->h) == XP_OK);
        check_reduce(n, rndn(3) + 1, basic);
        rnode_free(n);
    }
    return xp_test_result();
}
