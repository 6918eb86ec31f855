/*
 * util/buddy.h - buddy allocator over a range of OFFSETS.
 *
 * It hands out blocks of a region it never touches: the region may be shared
 * memory mapped at a different address in every process, or memory on a
 * device, so the allocator deals in offsets (base + n * block) and keeps all
 * of its metadata in ordinary heap memory. The Portals offload design uses one
 * for unexpected-message payloads: sizes vary, and freed blocks must merge
 * back so large messages still fit after many small ones.
 *
 * Blocks are powers of two from `min_block` up; a request is rounded up to
 * the next block size (internal fragmentation up to 2x). Metadata is a
 * complete binary tree with one byte per node: each node records the order
 * of the largest free block below it, so alloc and free are O(log(size /
 * min_block)) and the largest free block is read at the root. Memory: about
 * 2 bytes per min_block of region (32 MiB for 1 GiB in 64-byte blocks).
 *
 * The region size need not be a power of two: it must be a multiple of
 * min_block; the tree spans the next power of two and the tail is never
 * handed out.
 *
 * NOT THREAD SAFE: callers lock.
 */
#ifndef XP_UTIL_BUDDY_H
#define XP_UTIL_BUDDY_H

#include <stddef.h>
#include <stdint.h>

#include "xportals/status.h"

typedef struct xp_buddy {
    uint64_t base;      /* offset of the first byte managed */
    size_t size;        /* bytes managed */
    size_t min_block;   /* power of two */
    unsigned min_shift; /* log2(min_block) */
    unsigned levels;    /* tree depth: leaves are at depth levels - 1 */
    size_t nleaves;     /* power of two */
    uint8_t *tree;      /* [1 .. 2*nleaves-1]: 0 none free, k: a free block of min_block << (k-1) */
    size_t free_bytes;
    size_t nallocs;     /* blocks currently allocated */
} xp_buddy_t;

typedef struct xp_buddy_stats {
    size_t size;          /* bytes managed */
    size_t free_bytes;    /* sum of free blocks */
    size_t largest_free;  /* biggest single allocation that would succeed */
    size_t nallocs;       /* blocks allocated now */
} xp_buddy_stats_t;

/* Manage [base, base + size). min_block: a power of two >= 8 (e.g. 64);
 * size: a non-zero multiple of min_block. XP_ERR_INVALID otherwise. */
xp_status_t xp_buddy_init(xp_buddy_t *b, uint64_t base, size_t size, size_t min_block);
void xp_buddy_destroy(xp_buddy_t *b);

/* A block of at least `size` bytes (size > 0): *offset_out = its offset
 * (absolute: base + ...), aligned to its own block size relative to base.
 * XP_ERR_NO_RESOURCE if no free block is big enough, XP_ERR_INVALID for 0. */
xp_status_t xp_buddy_alloc(xp_buddy_t *b, size_t size, uint64_t *offset_out);
/* Free the block that starts at `offset`; it merges with its free buddies.
 * XP_ERR_INVALID if no allocated block starts there (double free, bad offset). */
xp_status_t xp_buddy_free(xp_buddy_t *b, uint64_t offset);
/* Size of the allocated block that starts at offset, or 0 if none does. */
size_t xp_buddy_block_size(const xp_buddy_t *b, uint64_t offset);

void xp_buddy_stats(const xp_buddy_t *b, xp_buddy_stats_t *stats);

#endif
