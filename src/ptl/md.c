/* ptl/md.c - memory descriptors (PtlMDBind/Release) and region helpers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptl/ct.h"
#include "ptl/engine.h"
#include "ptl/eq.h"
#include "ptl/md.h"
#include "ptl/progress.h"
#include "ptl/wire.h"
#include "util/clock.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/pool.h"

/* Address `off` bytes into a contiguous region, computed on integers: the
 * whole-address-space region starts at NULL, and an event may name an
 * offset past the end that a peer sent (C leaves both undefined on pointers). */
static inline char *contiguous_at(const xp_region_t *r, ptl_size_t off)
{
    return (char *)((uintptr_t)r->start + off);
}

xp_status_t xp_region_init(xp_region_t *r, void *start, ptl_size_t length, unsigned options,
                           int max_iovecs)
{
    memset(r, 0, sizeof(*r));
    if (!(options & PTL_IOVEC)) {
        r->start = start;
        r->length = length;
        return XP_OK;
    }
    if (length > (ptl_size_t)max_iovecs || (length > 0 && !start))
        return XP_ERR_INVALID;
    if (length > 0) {
        r->iov = malloc(sizeof(ptl_iovec_t) * length);
        if (!r->iov)
            return XP_ERR_NO_MEMORY;
        memcpy(r->iov, start, sizeof(ptl_iovec_t) * length);
    }
    r->niov = (int)length;
    for (int i = 0; i < r->niov; i++) {
        if (r->length + r->iov[i].iov_len < r->length) {
            free(r->iov);
            return XP_ERR_INVALID;
        }
        r->length += r->iov[i].iov_len;
    }
    return XP_OK;
}

void xp_region_fini(xp_region_t *r)
{
    free(r->iov);
    r->iov = NULL;
}

int xp_region_iov(const xp_region_t *r, ptl_size_t off, ptl_size_t len, struct iovec *out, int max)
{
    int n = 0;
    if (len == 0)
        return 0;
    if (!r->iov) {
        if (max < 1)
            return -1;
        out[0].iov_base = contiguous_at(r, off);
        out[0].iov_len = len;
        return 1;
    }
    for (int i = 0; i < r->niov && len > 0; i++) {
        ptl_size_t l = r->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        ptl_size_t take = l - off < len ? l - off : len;
        if (n == max)
            return -1;
        out[n].iov_base = (char *)r->iov[i].iov_base + off;
        out[n].iov_len = take;
        n++;
        len -= take;
        off = 0;
    }
    return n;
}

void xp_region_write(const xp_region_t *r, ptl_size_t off, const void *src, ptl_size_t len)
{
    const char *s = src;
    if (len == 0) /* start may be NULL for an empty region (memcpy's NULL is UB) */
        return;
    if (!r->iov) {
        xp_copy(contiguous_at(r, off), src, len);
        return;
    }
    for (int i = 0; i < r->niov && len > 0; i++) {
        ptl_size_t l = r->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        ptl_size_t take = l - off < len ? l - off : len;
        xp_copy((char *)r->iov[i].iov_base + off, s, take);
        s += take;
        len -= take;
        off = 0;
    }
}

void xp_region_read(const xp_region_t *r, ptl_size_t off, void *dst, ptl_size_t len)
{
    char *d = dst;
    if (len == 0)
        return;
    if (!r->iov) {
        xp_copy(dst, contiguous_at(r, off), len);
        return;
    }
    for (int i = 0; i < r->niov && len > 0; i++) {
        ptl_size_t l = r->iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        ptl_size_t take = l - off < len ? l - off : len;
        xp_copy(d, (char *)r->iov[i].iov_base + off, take);
        d += take;
        len -= take;
        off = 0;
    }
}

void *xp_region_addr(const xp_region_t *r, ptl_size_t off)
{
    if (!r->iov)
        return contiguous_at(r, off);
    for (int i = 0; i < r->niov; i++) {
        if (off < r->iov[i].iov_len)
            return (char *)r->iov[i].iov_base + off;
        off -= r->iov[i].iov_len;
    }
    return NULL;
}

int xp_region_contiguous(const xp_region_t *r, ptl_size_t off, ptl_size_t len)
{
    if (!r->iov)
        return 1;
    for (int i = 0; i < r->niov; i++) {
        if (off < r->iov[i].iov_len)
            return len <= r->iov[i].iov_len - off;
        off -= r->iov[i].iov_len;
    }
    return len == 0;
}

xp_md_t *xp_md_from_handle(ptl_handle_md_t h)
{
    return xp_handle_lookup(&xp_ptl_state()->md_table, h);
}

#define MD_OPTIONS (PTL_MD_OPTIONS_MASK | PTL_IOVEC)

/* The fields PtlPut's compact path reads instead of deciding per call. */
static void md_fast_fields(xp_md_t *m)
{
    const xp_region_t *r = &m->region;
    ptl_size_t lim = m->ni->limits.max_msg_size < XP_WIRE_SPUT_MAX ? m->ni->limits.max_msg_size
                                                                   : XP_WIRE_SPUT_MAX;
    m->slot = (uint8_t)m->ni->slot;
    m->ct_send = m->ct && (m->options & PTL_MD_EVENT_CT_SEND) ? m->ct : NULL;
    /* start + offset is then never NULL and never wraps: the path sends
     * from it without the transport's NULL check. */
    m->sput_lim = !r->iov && !m->eq && r->start &&
                          r->length <= (ptl_size_t)(UINTPTR_MAX - (uintptr_t)r->start)
                      ? lim + 1
                      : 0;
}

int PtlMDBind(ptl_handle_ni_t ni_handle, const ptl_md_t *md, ptl_handle_md_t *md_handle)
{
    xp_ni_t *ni;
    xp_md_t *m;
    xp_status_t rc;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ni = xp_ni_from_handle(ni_handle);
    if (!ni || !md || !md_handle || (md->options & ~MD_OPTIONS))
        return PTL_ARG_INVALID;
    m = xp_zalloc(sizeof(*m));
    if (!m)
        return PTL_NO_SPACE;
    m->ni = ni;
    m->options = md->options;
    m->owner = xp_thread_id();
    if (md->eq_handle != PTL_EQ_NONE) {
        m->eq = xp_eq_from_handle(md->eq_handle);
        if (!m->eq || xp_eq_ni(m->eq) != ni)
            goto err_free_md;
    }
    if (md->ct_handle != PTL_CT_NONE) {
        m->ct = xp_ct_from_handle(md->ct_handle);
        if (!m->ct || xp_ct_ni(m->ct) != ni)
            goto err_free_md;
    }
    rc = xp_region_init(&m->region, md->start, md->length, md->options, ni->limits.max_iovecs);
    if (rc != XP_OK) {
        free(m);
        return xp_ptl_rc(rc);
    }
    md_fast_fields(m);
    rc = xp_ni_obj_acquire(ni, XP_NI_OBJ_MD);
    if (rc != XP_OK)
        goto err_region;
    rc = xp_handle_alloc(&xp_ptl_state()->md_table, (unsigned)ni->slot, m, &m->handle);
    if (rc != XP_OK)
        goto err_release;
    *md_handle = m->handle;
    return PTL_OK;
err_release:
    xp_ni_obj_release(ni, XP_NI_OBJ_MD);
err_region:
    xp_region_fini(&m->region);
    free(m);
    return xp_ptl_rc(rc);
err_free_md:
    free(m);
    return PTL_ARG_INVALID;
}

static void md_free(xp_md_t *m)
{
    xp_ptl_state_t *st = xp_ptl_state();
    xp_put_memo_forget(st);
    xp_handle_free(&st->md_table, m->handle);
    xp_ni_obj_release(m->ni, XP_NI_OBJ_MD);
    xp_region_fini(&m->region);
    free(m);
}

int PtlMDRelease(ptl_handle_md_t md_handle)
{
    xp_md_t *m;
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    m = xp_md_from_handle(md_handle);
    if (!m)
        return PTL_ARG_INVALID;
    /* Let answers that already arrived be handled before deciding. */
    if (xp_md_pending(m) > 0)
        xp_ptl_progress();
    /* Decide and free under the poll lock: a packet handler holds it while
     * it posts the events of the MD's last answer (which the application
     * may have seen already; the answer is counted after them) or issues a
     * triggered operation on the MD (a put without an answer posts its SEND
     * event after the packet left, when the target may already have told the
     * application). Once the handle is freed, a later handler's lookup fails. */
    xp_ptl_state_t *st = xp_ptl_state();
    xp_poll_lock(st);
    if (xp_md_pending(m) > 0) {
        xp_poll_unlock(st);
        return PTL_IN_USE;
    }
    md_free(m);
    xp_poll_unlock(st);
    return PTL_OK;
}

static void count_pending(ptl_handle_any_t h, void *obj, void *arg)
{
    (void)h;
    *(int *)arg += xp_md_pending((const xp_md_t *)obj) > 0;
}

void xp_md_drain(int slot, long timeout_ms)
{
    xp_ptl_state_t *st = xp_ptl_state();
    uint64_t deadline = xp_deadline_ns(timeout_ms);
    for (unsigned spins = 0;;) {
        int busy = 0;
        xp_handle_foreach(&st->md_table, slot, count_pending, &busy);
        if (!busy || xp_time_ns() >= deadline)
            return;
        if (xp_ptl_progress() == 0)
            xp_ptl_busy_pause(st, &spins);
    }
}

void xp_md_fini_all(xp_ni_t *ni)
{
    xp_ptl_state_t *st = xp_ptl_state();
    ptl_handle_any_t hs[256];
    uint32_t n;
    do {
        n = xp_handle_collect(&st->md_table, ni->slot, hs, 256);
        for (uint32_t i = 0; i < n && i < 256; i++) {
            xp_md_t *m = xp_handle_lookup(&st->md_table, hs[i]);
            if (m)
                md_free(m);
        }
    } while (n > 256);
}
