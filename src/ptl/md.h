/* ptl/md.h - memory descriptors and the region helpers shared with LE/ME. */
#ifndef XP_PTL_MD_H
#define XP_PTL_MD_H

#include <stddef.h>
#include <sys/uio.h>

#include "portals4.h"
#include "ptl/ni.h"

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
    int pending;           /* answers (acks, replies) still expected */
} xp_md_t;

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
/* 1 if [off, off+len) lies in one contiguous piece. */
int xp_region_contiguous(const xp_region_t *r, ptl_size_t off, ptl_size_t len);

xp_md_t *xp_md_from_handle(ptl_handle_md_t h);

#endif
