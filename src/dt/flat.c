/* Commit: flatten one element of a type into merged vector segments. */
#include <stdlib.h>
#include <string.h>

#include "dt/dt_internal.h"
#include "util/config.h"
#include "util/log.h"

void xp_dt_flat_free(dt_flat_t *f)
{
    free(f->seg);
    memset(f, 0, sizeof *f);
}

static size_t flat_bytes(const dt_flat_t *f)
{
    if (!f->nseg)
        return 0;
    const dt_seg_t *l = &f->seg[f->nseg - 1];
    return l->poff + l->blen * l->count;
}

/* Append count blocks of blen bytes at disp, stride apart, merging with the
 * last segment when the result is still one segment: a block that continues
 * the previous one, or that continues its stride pattern. */
static xp_status_t flat_append(dt_flat_t *f, ptrdiff_t disp, ptrdiff_t stride, size_t blen, size_t count)
{
    if (!blen || !count)
        return XP_OK;
    if (count > 1 && stride == (ptrdiff_t)blen) {
        blen *= count;
        count = 1;
    }
    if (count == 1)
        stride = 0;
    if (f->nseg) {
        dt_seg_t *l = &f->seg[f->nseg - 1];
        if (l->count == 1 && count == 1 && l->disp + (ptrdiff_t)l->blen == disp) {
            l->blen += blen;
            return XP_OK;
        }
        if (l->blen == blen) {
            if (l->count == 1 && (count == 1 || stride == disp - l->disp)) {
                l->stride = disp - l->disp;
                l->count += count;
                return XP_OK;
            }
            if (l->count > 1 && disp == l->disp + (ptrdiff_t)l->count * l->stride &&
                (count == 1 || stride == l->stride)) {
                l->count += count;
                return XP_OK;
            }
        }
    }
    if (f->nseg == f->cap) {
        size_t max = xp_config()->dt_max_segments;
        if (f->nseg >= max) {
            xp_error("datatype: flattened form exceeds XP_DT_MAX_SEGMENTS=%zu segments", max);
            return XP_ERR_NO_RESOURCE;
        }
        size_t cap = f->cap ? f->cap * 2 : 4;
        if (cap > max)
            cap = max;
        dt_seg_t *s = realloc(f->seg, cap * sizeof *s);
        if (!s)
            return XP_ERR_NO_MEMORY;
        f->seg = s;
        f->cap = cap;
    }
    f->seg[f->nseg] = (dt_seg_t){disp, stride, blen, count, flat_bytes(f)};
    f->nseg++;
    return XP_OK;
}

/* Append k copies of src, the j-th shifted by base + j * step. */
static xp_status_t flat_repeat(dt_flat_t *out, const dt_flat_t *src, size_t k, ptrdiff_t base, ptrdiff_t step)
{
    xp_status_t st = XP_OK;
    if (!k || !src->nseg)
        return XP_OK;
    if (src->nseg == 1) {
        const dt_seg_t *s = &src->seg[0];
        if (s->count == 1 || k == 1)
            /* One vector of copies: blocks step apart (or the single copy). */
            return s->count == 1 ? flat_append(out, base + s->disp, step, s->blen, k)
                                 : flat_append(out, base + s->disp, s->stride, s->blen, s->count);
        if ((ptrdiff_t)s->count * s->stride == step)
            /* The copies continue the segment's own stride. */
            return flat_append(out, base + s->disp, s->stride, s->blen, s->count * k);
    }
    for (size_t j = 0; j < k && st == XP_OK; j++)
        for (size_t i = 0; i < src->nseg && st == XP_OK; i++) {
            const dt_seg_t *s = &src->seg[i];
            st = flat_append(out, base + (ptrdiff_t)j * step + s->disp, s->stride, s->blen, s->count);
        }
    return st;
}

static ptrdiff_t extent_of(const struct xp_dt *t)
{
    return t->ub - t->lb;
}

/* Append blen copies of child c at disp (copies one extent apart). */
static xp_status_t flat_block(dt_flat_t *out, const struct xp_dt *c, size_t blen, ptrdiff_t disp)
{
    dt_flat_t cf = {0};
    xp_status_t st = xp_dt_flatten(c, &cf);
    if (st == XP_OK)
        st = flat_repeat(out, &cf, blen, disp, extent_of(c));
    xp_dt_flat_free(&cf);
    return st;
}

static xp_status_t flatten_into(const struct xp_dt *t, dt_flat_t *out)
{
    switch (t->kind) {
    case DT_BASIC:
        return flat_append(out, 0, 0, t->size, 1);
    case DT_RESIZED:
        return flat_block(out, t->child, 1, 0);
    case DT_CONTIG:
    case DT_HVECTOR: {
        /* One block of the vector, then the block repeated at the stride. */
        dt_flat_t blk = {0};
        xp_status_t st = flat_block(&blk, t->child, t->blen, 0);
        if (st == XP_OK)
            st = flat_repeat(out, &blk, t->count, 0, t->stride);
        xp_dt_flat_free(&blk);
        return st;
    }
    case DT_HINDEXED: {
        dt_flat_t cf = {0};
        xp_status_t st = xp_dt_flatten(t->child, &cf);
        for (size_t i = 0; i < t->count && st == XP_OK; i++)
            st = flat_repeat(out, &cf, t->blens[i], t->displs[i], extent_of(t->child));
        xp_dt_flat_free(&cf);
        return st;
    }
    case DT_STRUCT: {
        xp_status_t st = XP_OK;
        for (size_t i = 0; i < t->count && st == XP_OK; i++)
            st = flat_block(out, t->types[i], t->blens[i], t->displs[i]);
        return st;
    }
    }
    return XP_ERR_INTERNAL;
}

xp_status_t xp_dt_flatten(const struct xp_dt *t, dt_flat_t *out)
{
    dt_flat_t f = {0};
    if (t->committed && t->flat.nseg) {
        /* Reuse a committed child's cached form. */
        f.seg = malloc(t->flat.nseg * sizeof *f.seg);
        if (!f.seg)
            return XP_ERR_NO_MEMORY;
        memcpy(f.seg, t->flat.seg, t->flat.nseg * sizeof *f.seg);
        f.nseg = f.cap = t->flat.nseg;
        *out = f;
        return XP_OK;
    }
    xp_status_t st = flatten_into(t, &f);
    if (st != XP_OK) {
        xp_dt_flat_free(&f);
        return st;
    }
    if (f.nseg && f.nseg < f.cap) {
        dt_seg_t *s = realloc(f.seg, f.nseg * sizeof *s); /* keep the cache tight */
        if (s) {
            f.seg = s;
            f.cap = f.nseg;
        }
    }
    *out = f;
    return XP_OK;
}

size_t xp_dt_flat_find(const dt_flat_t *f, size_t r)
{
    size_t lo = 0, hi = f->nseg; /* invariant: seg[lo].poff <= r < seg[hi].poff */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->seg[mid].poff <= r)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------------ work units */
typedef struct units { dt_unit_t *u; size_t n, cap; } units_t;

static int units_push(units_t *us, int64_t src, uint64_t dst, size_t len, size_t unit)
{
    while (len) {
        size_t l = len < unit ? len : unit;
        if (us->n == us->cap) {
            size_t cap = us->cap ? us->cap * 2 : 64;
            dt_unit_t *u = realloc(us->u, cap * sizeof *u);
            if (!u)
                return -1;
            us->u = u;
            us->cap = cap;
        }
        us->u[us->n++] = (dt_unit_t){src, dst, (uint32_t)l, 0};
        src += (int64_t)l;
        dst += l;
        len -= l;
    }
    return 0;
}

xp_status_t xp_dt_units_build(const struct xp_dt *t, size_t count, size_t unit, dt_unit_t **out, size_t *n_out)
{
    units_t us = {0};
    const dt_flat_t *f = &t->flat;
    if (!t->committed || unit == 0 || unit > UINT32_MAX)
        return XP_ERR_INVALID;
    for (size_t e = 0; e < count; e++) {
        int64_t base = (int64_t)e * extent_of(t);
        uint64_t pbase = (uint64_t)e * t->size;
        for (size_t i = 0; i < f->nseg; i++) {
            const dt_seg_t *s = &f->seg[i];
            for (size_t b = 0; b < s->count; b++)
                if (units_push(&us, base + s->disp + (int64_t)b * s->stride, pbase + s->poff + b * s->blen,
                               s->blen, unit)) {
                    free(us.u);
                    return XP_ERR_NO_MEMORY;
                }
        }
    }
    *out = us.u;
    *n_out = us.n;
    return XP_OK;
}
