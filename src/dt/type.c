/* Datatype objects: predefined types, constructors, queries, signatures. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "dt/dt_internal.h"
#include "util/log.h"

/* ------------------------------------------------------------ signature hash
 * Polynomial hash modulo the Mersenne prime 2^61-1: H(a1..an) = sum ai P^(n-i).
 * It composes: H(A||B) = H(A) P^|B| + H(B), so a parent's signature comes from
 * its children's in O(log count) without walking the elements. */
#define SIG_MOD ((UINT64_C(1) << 61) - 1)
#define SIG_P   UINT64_C(0x0a3b5c7d9e1f2437)

static uint64_t sig_mul(uint64_t a, uint64_t b)
{
    unsigned __int128 x = (unsigned __int128)a * b;
    uint64_t r = (uint64_t)(x & SIG_MOD) + (uint64_t)(x >> 61);
    return r >= SIG_MOD ? r - SIG_MOD : r;
}

static uint64_t sig_add(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= SIG_MOD ? r - SIG_MOD : r;
}

typedef struct sig { uint64_t h, pw; } sig_t_;

static sig_t_ sig_concat(sig_t_ a, sig_t_ b)
{
    return (sig_t_){sig_add(sig_mul(a.h, b.pw), b.h), sig_mul(a.pw, b.pw)};
}

/* Signature of `a` repeated k times (binary doubling). */
static sig_t_ sig_repeat(sig_t_ a, size_t k)
{
    sig_t_ r = {0, 1};
    while (k) {
        if (k & 1)
            r = sig_concat(r, a);
        a = sig_concat(a, a);
        k >>= 1;
    }
    return r;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* ------------------------------------------------------------ predefined */
#define BASIC_SIG(id) ((mix64((uint64_t)(id)) % (SIG_MOD - 1)) + 1)
#define PREDEF(id, ctype)                                                              \
    [id] = {.magic = DT_MAGIC, .kind = DT_BASIC, .basic = id, .predefined = 1,         \
            .has_bounds = 1, .refs = 1, .committed = 1, .size = sizeof(ctype),         \
            .nbasic = 1, .lb = 0, .ub = sizeof(ctype), .true_lb = 0,                   \
            .true_ub = sizeof(ctype), .sig_pow = SIG_P,                                \
            .flat = {1, 1, (dt_seg_t *)&predef[id].one_seg},                            \
            .one_seg = {0, 0, sizeof(ctype), 1, 0}}

static const struct xp_dt predef[XP_DT_ID_COUNT_] = {
    PREDEF(XP_DT_ID_CHAR, char),
    PREDEF(XP_DT_ID_INT8, int8_t),
    PREDEF(XP_DT_ID_UINT8, uint8_t),
    PREDEF(XP_DT_ID_INT16, int16_t),
    PREDEF(XP_DT_ID_UINT16, uint16_t),
    PREDEF(XP_DT_ID_INT32, int32_t),
    PREDEF(XP_DT_ID_UINT32, uint32_t),
    PREDEF(XP_DT_ID_INT64, int64_t),
    PREDEF(XP_DT_ID_UINT64, uint64_t),
    PREDEF(XP_DT_ID_FLOAT, float),
    PREDEF(XP_DT_ID_DOUBLE, double),
    PREDEF(XP_DT_ID_LONG_DOUBLE, long double),
    PREDEF(XP_DT_ID_FLOAT_COMPLEX, float _Complex),
    PREDEF(XP_DT_ID_DOUBLE_COMPLEX, double _Complex),
    PREDEF(XP_DT_ID_LONG_DOUBLE_COMPLEX, long double _Complex),
    PREDEF(XP_DT_ID_BYTE, unsigned char),
};

size_t xp_dt_basic_size(int id)
{
    return id > 0 && id < XP_DT_ID_COUNT_ ? predef[id].size : 0;
}

struct xp_dt *xp_dt_get(xp_dt_t h)
{
    uintptr_t v = (uintptr_t)h;
    if (v > 0 && v < XP_DT_ID_COUNT_)
        return (struct xp_dt *)&predef[v];
    /* Small values are never heap pointers; the magic catches most garbage. */
    if (v < 4096 || (v & (sizeof(void *) - 1)) || h->magic != DT_MAGIC)
        return NULL;
    return h;
}

static uint64_t type_sig_h(const struct xp_dt *t)
{
    return t->kind == DT_BASIC ? BASIC_SIG(t->basic) : t->sig_hash;
}

/* ------------------------------------------------------------ life cycle */
void xp_dt_retain(struct xp_dt *t)
{
    if (!t->predefined)
        __atomic_fetch_add(&t->refs, 1, __ATOMIC_RELAXED);
}

void xp_dt_release(struct xp_dt *t)
{
    if (t->predefined || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (t->child)
        xp_dt_release(t->child);
    if (t->types) {
        for (size_t i = 0; i < t->count; i++)
            xp_dt_release(t->types[i]);
        free(t->types);
    }
    free(t->blens);
    free(t->displs);
    xp_dt_gpu_cache_free(t);
    xp_dt_flat_free(&t->flat);
    pthread_mutex_destroy(&t->gpu_lock);
    t->magic = 0;
    free(t);
}

static struct xp_dt *type_new(int kind)
{
    struct xp_dt *t = calloc(1, sizeof *t);
    if (!t) {
        xp_error("datatype: out of memory");
        return NULL;
    }
    t->magic = DT_MAGIC;
    t->kind = (uint8_t)kind;
    t->refs = 1;
    pthread_mutex_init(&t->gpu_lock, NULL);
    return t;
}

/* ------------------------------------------------------------ bounds
 * Constructors describe their children as blocks: `ncopies` copies of a child
 * whose origins lie between lo and hi. The accumulator derives size, bounds,
 * signature and basic type, and notes any overflow. */
typedef struct acc {
    size_t size, nbasic;
    sig_t_ sig;
    int basic;
    int any_bounds, any_data;
    ptrdiff_t lb, ub, tlb, tub;
    int overflow;
} acc_t;

static void acc_init(acc_t *a)
{
    memset(a, 0, sizeof *a);
    a->sig = (sig_t_){0, 1};
    a->basic = DT_BASIC_NONE;
}

static void acc_block(acc_t *a, ptrdiff_t lo, ptrdiff_t hi, size_t ncopies, const struct xp_dt *c)
{
    size_t sz, nb;
    if (ncopies == 0)
        return;
    if (__builtin_mul_overflow(ncopies, c->size, &sz) || __builtin_add_overflow(a->size, sz, &a->size) ||
        __builtin_mul_overflow(ncopies, c->nbasic, &nb) ||
        __builtin_add_overflow(a->nbasic, nb, &a->nbasic)) {
        a->overflow = 1;
        return;
    }
    a->sig = sig_concat(a->sig, sig_repeat((sig_t_){type_sig_h(c), c->sig_pow}, ncopies));
    if (c->nbasic) {
        if (a->basic == DT_BASIC_NONE)
            a->basic = c->basic;
        else if (a->basic != c->basic)
            a->basic = DT_BASIC_MIXED;
    }
    ptrdiff_t l, u, tl, tu;
    if (__builtin_add_overflow(lo, c->lb, &l) || __builtin_add_overflow(hi, c->ub, &u) ||
        __builtin_add_overflow(lo, c->true_lb, &tl) || __builtin_add_overflow(hi, c->true_ub, &tu)) {
        a->overflow = 1;
        return;
    }
    if (c->has_bounds) {
        a->lb = a->any_bounds ? (l < a->lb ? l : a->lb) : l;
        a->ub = a->any_bounds ? (u > a->ub ? u : a->ub) : u;
        a->any_bounds = 1;
    }
    if (c->nbasic) {
        a->tlb = a->any_data ? (tl < a->tlb ? tl : a->tlb) : tl;
        a->tub = a->any_data ? (tu > a->tub ? tu : a->tub) : tu;
        a->any_data = 1;
    }
}

/* Origins of `n` copies spaced `step` bytes apart from `base`: lowest, highest. */
static int span(ptrdiff_t base, size_t n, ptrdiff_t step, ptrdiff_t *lo, ptrdiff_t *hi)
{
    ptrdiff_t last;
    if (n > (size_t)PTRDIFF_MAX || __builtin_mul_overflow((ptrdiff_t)(n - 1), step, &last) ||
        __builtin_add_overflow(base, last, &last))
        return -1;
    *lo = last < base ? last : base;
    *hi = last < base ? base : last;
    return 0;
}

static xp_status_t acc_finish(acc_t *a, struct xp_dt *t)
{
    ptrdiff_t ext;
    if (a->overflow || __builtin_sub_overflow(a->ub, a->lb, &ext)) {
        xp_error("datatype: size or extent overflows");
        return XP_ERR_OVERFLOW;
    }
    t->size = a->size;
    t->nbasic = a->nbasic;
    t->sig_hash = a->sig.h;
    t->sig_pow = a->sig.pw;
    t->basic = (uint8_t)a->basic;
    t->has_bounds = (uint8_t)a->any_bounds;
    t->lb = a->lb;
    t->ub = a->ub;
    t->true_lb = a->tlb;
    t->true_ub = a->tub;
    return XP_OK;
}

static size_t extent_of(const struct xp_dt *t)
{
    return (size_t)(t->ub - t->lb);
}

/* ------------------------------------------------------------ constructors */
static xp_status_t finish_new(struct xp_dt *t, acc_t *a, xp_dt_t *out)
{
    xp_status_t st = acc_finish(a, t);
    if (st != XP_OK) {
        xp_dt_release(t);
        return st;
    }
    *out = t;
    return XP_OK;
}

static xp_status_t make_hvector(int kind, size_t count, size_t blen, ptrdiff_t stride, struct xp_dt *c,
                                xp_dt_t *out)
{
    acc_t a;
    ptrdiff_t ext = (ptrdiff_t)extent_of(c), lo1, hi1, lo2, hi2, lo, hi;
    size_t n;
    acc_init(&a);
    if (__builtin_mul_overflow(count, blen, &n))
        return XP_ERR_OVERFLOW;
    if (n) {
        /* Extreme origins: first / last block, first / last copy in a block. */
        if (span(0, count, stride, &lo1, &hi1) || span(0, blen, ext, &lo2, &hi2) ||
            __builtin_add_overflow(lo1, lo2, &lo) || __builtin_add_overflow(hi1, hi2, &hi))
            return XP_ERR_OVERFLOW;
        acc_block(&a, lo, hi, n, c);
    }
    struct xp_dt *t = type_new(kind);
    if (!t)
        return XP_ERR_NO_MEMORY;
    t->count = count;
    t->blen = blen;
    t->stride = stride;
    t->child = c;
    xp_dt_retain(c);
    return finish_new(t, &a, out);
}

xp_status_t xp_dt_contiguous(size_t count, xp_dt_t old, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    if (!c || !out)
        return XP_ERR_INVALID;
    return make_hvector(DT_CONTIG, 1, count, 0, c, out);
}

xp_status_t xp_dt_hvector(size_t count, size_t blocklen, ptrdiff_t stride_bytes, xp_dt_t old, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    if (!c || !out)
        return XP_ERR_INVALID;
    return make_hvector(DT_HVECTOR, count, blocklen, stride_bytes, c, out);
}

xp_status_t xp_dt_vector(size_t count, size_t blocklen, ptrdiff_t stride, xp_dt_t old, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    ptrdiff_t bytes;
    if (!c || !out)
        return XP_ERR_INVALID;
    if (__builtin_mul_overflow(stride, (ptrdiff_t)extent_of(c), &bytes))
        return XP_ERR_OVERFLOW;
    return make_hvector(DT_HVECTOR, count, blocklen, bytes, c, out);
}

/* count blocks; types[i] (struct) or c (hindexed) at displs[i] bytes. */
static xp_status_t make_blocks(int kind, size_t count, const size_t blens[], const ptrdiff_t displs[],
                               struct xp_dt **types, struct xp_dt *c, xp_dt_t *out)
{
    acc_t a;
    acc_init(&a);
    for (size_t i = 0; i < count; i++) {
        struct xp_dt *ci = types ? types[i] : c;
        ptrdiff_t lo, hi;
        if (blens[i] == 0)
            continue;
        if (span(displs[i], blens[i], (ptrdiff_t)extent_of(ci), &lo, &hi))
            return XP_ERR_OVERFLOW;
        acc_block(&a, lo, hi, blens[i], ci);
        if (a.overflow)
            return XP_ERR_OVERFLOW;
    }
    struct xp_dt *t = type_new(kind);
    if (!t)
        return XP_ERR_NO_MEMORY;
    t->count = count;
    t->blens = malloc((count ? count : 1) * sizeof *t->blens);
    t->displs = malloc((count ? count : 1) * sizeof *t->displs);
    if (types)
        t->types = malloc((count ? count : 1) * sizeof *t->types);
    if (!t->blens || !t->displs || (types && !t->types)) {
        free(t->types);
        t->types = NULL;
        xp_dt_release(t);
        return XP_ERR_NO_MEMORY;
    }
    memcpy(t->blens, blens, count * sizeof *blens);
    memcpy(t->displs, displs, count * sizeof *displs);
    if (types) {
        for (size_t i = 0; i < count; i++) {
            t->types[i] = types[i];
            xp_dt_retain(types[i]);
        }
    } else {
        t->child = c;
        xp_dt_retain(c);
    }
    return finish_new(t, &a, out);
}

xp_status_t xp_dt_hindexed(size_t count, const size_t blocklens[], const ptrdiff_t displs_bytes[], xp_dt_t old,
                           xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    if (!c || !out || (count && (!blocklens || !displs_bytes)))
        return XP_ERR_INVALID;
    return make_blocks(DT_HINDEXED, count, blocklens, displs_bytes, NULL, c, out);
}

/* Element displacements scaled to bytes (malloc'd copy). */
static xp_status_t scale_displs(size_t count, const ptrdiff_t displs[], size_t ext, ptrdiff_t **out)
{
    ptrdiff_t *d = malloc((count ? count : 1) * sizeof *d);
    if (!d)
        return XP_ERR_NO_MEMORY;
    for (size_t i = 0; i < count; i++) {
        if (__builtin_mul_overflow(displs[i], (ptrdiff_t)ext, &d[i])) {
            free(d);
            return XP_ERR_OVERFLOW;
        }
    }
    *out = d;
    return XP_OK;
}

xp_status_t xp_dt_indexed(size_t count, const size_t blocklens[], const ptrdiff_t displs[], xp_dt_t old,
                          xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    ptrdiff_t *bytes;
    if (!c || !out || (count && (!blocklens || !displs)))
        return XP_ERR_INVALID;
    xp_status_t st = scale_displs(count, displs, extent_of(c), &bytes);
    if (st != XP_OK)
        return st;
    st = make_blocks(DT_HINDEXED, count, blocklens, bytes, NULL, c, out);
    free(bytes);
    return st;
}

xp_status_t xp_dt_indexed_block(size_t count, size_t blocklen, const ptrdiff_t displs[], xp_dt_t old,
                                xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    if (!c || !out || (count && !displs))
        return XP_ERR_INVALID;
    size_t *bl = malloc((count ? count : 1) * sizeof *bl);
    if (!bl)
        return XP_ERR_NO_MEMORY;
    for (size_t i = 0; i < count; i++)
        bl[i] = blocklen;
    xp_status_t st = xp_dt_indexed(count, bl, displs, old, out);
    free(bl);
    return st;
}

xp_status_t xp_dt_struct(size_t count, const size_t blocklens[], const ptrdiff_t displs_bytes[],
                         const xp_dt_t types[], xp_dt_t *out)
{
    if (!out || (count && (!blocklens || !displs_bytes || !types)))
        return XP_ERR_INVALID;
    struct xp_dt **ts = malloc((count ? count : 1) * sizeof *ts);
    if (!ts)
        return XP_ERR_NO_MEMORY;
    for (size_t i = 0; i < count; i++) {
        ts[i] = xp_dt_get(types[i]);
        if (!ts[i]) {
            free(ts);
            return XP_ERR_INVALID;
        }
    }
    xp_status_t st = make_blocks(DT_STRUCT, count, blocklens, displs_bytes, ts, NULL, out);
    free(ts);
    return st;
}

xp_status_t xp_dt_resized(xp_dt_t old, ptrdiff_t lb, size_t extent, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    ptrdiff_t ub;
    if (!c || !out)
        return XP_ERR_INVALID;
    if (extent > (size_t)PTRDIFF_MAX || __builtin_add_overflow(lb, (ptrdiff_t)extent, &ub))
        return XP_ERR_OVERFLOW;
    struct xp_dt *t = type_new(DT_RESIZED);
    if (!t)
        return XP_ERR_NO_MEMORY;
    t->child = c;
    xp_dt_retain(c);
    t->size = c->size;
    t->nbasic = c->nbasic;
    t->sig_hash = type_sig_h(c);
    t->sig_pow = c->sig_pow;
    t->basic = c->basic;
    t->has_bounds = 1;
    t->lb = lb;
    t->ub = ub;
    t->true_lb = c->true_lb;
    t->true_ub = c->true_ub;
    *out = t;
    return XP_OK;
}

xp_status_t xp_dt_dup(xp_dt_t old, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    xp_dt_t t;
    if (!c || !out)
        return XP_ERR_INVALID;
    xp_status_t st = xp_dt_resized(old, c->lb, extent_of(c), &t);
    if (st != XP_OK)
        return st;
    t->has_bounds = c->has_bounds;
    if (c->committed && (st = xp_dt_commit(t)) != XP_OK) {
        xp_dt_release(t);
        return st;
    }
    *out = t;
    return XP_OK;
}

static void free_chain(xp_dt_t *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i])
            xp_dt_release(ts[i]);
}

xp_status_t xp_dt_subarray(int ndims, const size_t sizes[], const size_t subsizes[], const size_t starts[],
                           int order, xp_dt_t old, xp_dt_t *out)
{
    struct xp_dt *c = xp_dt_get(old);
    if (!c || !out || ndims < 1 || ndims > 64 || !sizes || !subsizes || !starts ||
        (order != XP_DT_ORDER_C && order != XP_DT_ORDER_FORTRAN))
        return XP_ERR_INVALID;
    for (int d = 0; d < ndims; d++)
        if (sizes[d] < 1 || subsizes[d] > sizes[d] || starts[d] > sizes[d] - subsizes[d])
            return XP_ERR_INVALID;
    /* Dimensions from the fastest-varying outwards: each one is a vector of
     * the previous with a stride of the previous dimensions' full size. */
    xp_dt_t chain[66] = {0};
    size_t stride = extent_of(c);
    ptrdiff_t start_off = 0, off;
    xp_dt_t prev = old;
    xp_status_t st = XP_OK;
    for (int k = 0; k < ndims; k++) {
        int d = order == XP_DT_ORDER_C ? ndims - 1 - k : k;
        if (stride > (size_t)PTRDIFF_MAX ||
            __builtin_mul_overflow((ptrdiff_t)starts[d], (ptrdiff_t)stride, &off) ||
            __builtin_add_overflow(start_off, off, &start_off)) {
            st = XP_ERR_OVERFLOW;
            goto err_free_chain;
        }
        st = xp_dt_hvector(subsizes[d], 1, (ptrdiff_t)stride, prev, &chain[k]);
        if (st != XP_OK)
            goto err_free_chain;
        prev = chain[k];
        if (__builtin_mul_overflow(stride, sizes[d], &stride)) {
            st = XP_ERR_OVERFLOW;
            goto err_free_chain;
        }
    }
    size_t one = 1;
    if ((st = xp_dt_hindexed(1, &one, &start_off, prev, &chain[ndims])) != XP_OK)
        goto err_free_chain;
    if ((st = xp_dt_resized(chain[ndims], 0, stride, &chain[ndims + 1])) != XP_OK)
        goto err_free_chain;
    *out = chain[ndims + 1];
    free_chain(chain, ndims + 1);
    return XP_OK;
err_free_chain:
    free_chain(chain, ndims + 2);
    return st;
}

/* ------------------------------------------------------------ commit / free */
xp_status_t xp_dt_commit(xp_dt_t h)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t)
        return XP_ERR_INVALID;
    if (t->committed)
        return XP_OK;
    xp_status_t st = xp_dt_flatten(t, &t->flat);
    if (st != XP_OK)
        return st;
    t->nblocks = 0;
    for (size_t i = 0; i < t->flat.nseg; i++)
        t->nblocks += t->flat.seg[i].count;
    t->committed = 1;
    return XP_OK;
}

xp_status_t xp_dt_free(xp_dt_t *h)
{
    struct xp_dt *t = h ? xp_dt_get(*h) : NULL;
    if (!t || t->predefined)
        return XP_ERR_INVALID;
    *h = XP_DT_NULL;
    xp_dt_release(t);
    return XP_OK;
}

/* ------------------------------------------------------------ queries */
xp_status_t xp_dt_size(xp_dt_t h, size_t *bytes)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !bytes)
        return XP_ERR_INVALID;
    *bytes = t->size;
    return XP_OK;
}

xp_status_t xp_dt_extent(xp_dt_t h, size_t *extent)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !extent)
        return XP_ERR_INVALID;
    *extent = extent_of(t);
    return XP_OK;
}

xp_status_t xp_dt_lb(xp_dt_t h, ptrdiff_t *lb)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !lb)
        return XP_ERR_INVALID;
    *lb = t->lb;
    return XP_OK;
}

xp_status_t xp_dt_true_extent(xp_dt_t h, ptrdiff_t *true_lb, size_t *true_extent)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !true_lb || !true_extent)
        return XP_ERR_INVALID;
    *true_lb = t->true_lb;
    *true_extent = (size_t)(t->true_ub - t->true_lb);
    return XP_OK;
}

xp_status_t xp_dt_num_basic(xp_dt_t h, size_t *n)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !n)
        return XP_ERR_INVALID;
    *n = t->nbasic;
    return XP_OK;
}

xp_status_t xp_dt_signature(xp_dt_t h, size_t count, uint64_t *sig)
{
    struct xp_dt *t = xp_dt_get(h);
    size_t n;
    if (!t || !sig)
        return XP_ERR_INVALID;
    if (__builtin_mul_overflow(t->nbasic, count, &n))
        return XP_ERR_OVERFLOW;
    sig_t_ s = sig_repeat((sig_t_){type_sig_h(t), t->sig_pow}, count);
    *sig = mix64(s.h ^ mix64((uint64_t)n));
    return XP_OK;
}

xp_status_t xp_dt_match(xp_dt_t a, size_t count_a, xp_dt_t b, size_t count_b, int *match)
{
    uint64_t sa, sb;
    xp_status_t st;
    if (!match)
        return XP_ERR_INVALID;
    if ((st = xp_dt_signature(a, count_a, &sa)) != XP_OK || (st = xp_dt_signature(b, count_b, &sb)) != XP_OK)
        return st;
    *match = sa == sb;
    return XP_OK;
}

xp_status_t xp_dt_basic(xp_dt_t h, xp_dt_t *basic)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !basic)
        return XP_ERR_INVALID;
    if (t->basic == DT_BASIC_NONE)
        return XP_ERR_NOT_FOUND;
    if (t->basic == DT_BASIC_MIXED)
        return XP_ERR_UNSUPPORTED;
    *basic = XP_DT_PREDEFINED_(t->basic);
    return XP_OK;
}

xp_status_t xp_dt_is_contiguous(xp_dt_t h, size_t count, int *contig, ptrdiff_t *first_byte)
{
    struct xp_dt *t = xp_dt_get(h);
    if (!t || !contig || !first_byte)
        return XP_ERR_INVALID;
    if (!t->committed)
        return XP_ERR_INVALID;
    const dt_flat_t *f = &t->flat;
    if (count == 0 || t->size == 0) {
        *contig = 1;
        *first_byte = 0;
        return XP_OK;
    }
    *contig = f->nseg == 1 && f->seg[0].count == 1 && (count == 1 || extent_of(t) == t->size);
    *first_byte = f->nseg ? f->seg[0].disp : 0;
    return XP_OK;
}
