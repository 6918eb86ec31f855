/* ptl/md.h - memory descriptors and the region helpers shared with LE/ME. */
#ifndef XP_PTL_MD_H
#define XP_PTL_MD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "portals4.h"
#include "ptl/ni.h"
#include "transport/transport.h"

struct xp_ct;
struct xp_eq;

/* A memory region: contiguous (iov == NULL) or a copied iovec list. */
typedef struct xp_region {
    char *start;          /* contiguous: base address */
    ptl_size_t length;    /* total length */
    ptl_iovec_t *iov;     /* PTL_IOVEC: owned copy */
    int niov;
} xp_region_t;

typedef struct xp_md {
    ptl_handle_md_t handle;
    xp_ni_t *ni;
    xp_region_t region;
    unsigned int options;
    struct xp_eq *eq;
    struct xp_ct *ct;
    /* What PtlPut's compact path reads, fixed at bind time: */
    struct xp_ct *ct_send;     /* ct when the MD counts sends (PTL_MD_EVENT_CT_SEND), else NULL */
    ptl_size_t sput_lim;       /* 1 + the longest put that may take the compact path (a plain
                                * MD without EQ whose every address is nonzero and below
                                * 2^64; at most max_msg_size and XP_WIRE_SPUT_MAX); 0: none */
    uint8_t slot;              /* ni->slot */
    /* Answers (acks, replies) still expected = issued - answered. The
     * binding thread counts its operations with a plain store (a locked add
     * here waited, in a stream of puts, for the previous put's stores into
     * the peer's ring to drain); other threads with an atomic add. */
    uintptr_t owner;           /* xp_thread_id() of the thread that bound it */
    uint64_t issued_owner;     /* written by `owner` only */
    uint64_t issued_other;     /* atomic; also undoes operations that failed */
    uint64_t answered;         /* written by the poll-lock holder only */
} xp_md_t;

/* An operation on md will be answered (before it is sent). */
static inline void xp_md_expect(xp_md_t *md)
{
    if (xp_thread_id() == md->owner)
        __atomic_store_n(&md->issued_owner,
                         __atomic_load_n(&md->issued_owner, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&md->issued_other, 1, __ATOMIC_RELAXED);
}

/* An expected operation was never sent (it will get no answer). */
static inline void xp_md_unexpect(xp_md_t *md)
{
    __atomic_sub_fetch(&md->issued_other, 1, __ATOMIC_RELAXED);
}

/* n answers arrived: only the holder of the engine's poll lock calls this. */
static inline void xp_md_answered(xp_md_t *md, uint64_t n)
{
    __atomic_store_n(&md->answered, __atomic_load_n(&md->answered, __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELEASE);
}

/* Answers still expected. `answered` is read first, so a concurrent answer
 * can only make the result too large (the MD looks busy), never negative. */
static inline uint64_t xp_md_pending(const xp_md_t *md)
{
    uint64_t done = __atomic_load_n(&md->answered, __ATOMIC_ACQUIRE);
    uint64_t issued = __atomic_load_n(&md->issued_owner, __ATOMIC_RELAXED) +
                      __atomic_load_n(&md->issued_other, __ATOMIC_RELAXED);
    return issued - done;
}

/* Region from start/length/options (PTL_IOVEC copies the list; max_iovecs
 * enforced). XP_ERR_INVALID for a bad list. */
xp_status_t xp_region_init(xp_region_t *r, void *start, ptl_size_t length, unsigned options,
                           int max_iovecs);
void xp_region_fini(xp_region_t *r);
/* Up to `max` iovecs covering [off, off+len) of r; returns the count, or -1
 * if more than max would be needed. */
int xp_region_iov(const xp_region_t *r, ptl_size_t off, ptl_size_t len, struct iovec *out, int max);
/* Copy between a region and a flat buffer. */
void xp_region_write(const xp_region_t *r, ptl_size_t off, const void *src, ptl_size_t len);
void xp_region_read(const xp_region_t *r, ptl_size_t off, void *dst, ptl_size_t len);
/* Address of offset off (NULL if off is past the end of an iovec list). */
void *xp_region_addr(const xp_region_t *r, ptl_size_t off);
/* 1 if [off, off+len) lies inside the region (no overflow for any values). */
static inline int xp_region_holds(const xp_region_t *r, ptl_size_t off, ptl_size_t len)
{
    return off <= r->length && len <= r->length - off;
}
/* 1 if [off, off+len) lies in one contiguous piece. */
int xp_region_contiguous(const xp_region_t *r, ptl_size_t off, ptl_size_t len);

xp_md_t *xp_md_from_handle(ptl_handle_md_t h);

#endif
