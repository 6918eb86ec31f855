/*
 * transport/shmheap.h - a process's shared heap segment (the memory behind
 * xp_shmalloc, include/xportals/shmem.h).
 *
 * The owner creates the segment (sparse: pages come on first touch) and
 * allocates from it with a buddy allocator whose metadata stays in private
 * memory; peers attach by name and only translate addresses: a pointer the
 * owner handed out maps to peer_base + (ptr - owner_base). Like the inbox
 * segment, the name is unlinked once every peer has attached.
 *
 * Behind the `size` bytes the allocator hands out, the segment holds
 * XP_SHMHEAP_META bytes that every mapping sees at `meta`: the engine's
 * descriptors of entries that peers may update directly and the peers'
 * busy words (ptl/direct.h); untouched pages of it take no memory.
 * They lie outside [base, base + size), so no address check made for data
 * (xp_shmheap_in) ever admits them.
 */
#ifndef XP_TRANSPORT_SHMHEAP_H
#define XP_TRANSPORT_SHMHEAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/buddy.h"

#define XP_SHMHEAP_MIN_BLOCK 256u
#define XP_SHMHEAP_META (512u * 1024u) /* a multiple of every page size in use */

typedef struct xp_shmheap {
    unsigned char *base;   /* this process's mapping; NULL when not mapped */
    size_t size;           /* bytes the allocator manages (data) */
    unsigned char *meta;   /* base + size: XP_SHMHEAP_META bytes for the engine */
    char name[XP_SHM_NAME_MAX];
    int owner;             /* 1: created here (allocator below is live) */
    int linked;            /* 1: the name still exists */
    pthread_mutex_t lock;  /* owner: the allocator */
    xp_buddy_t buddy;      /* offsets from base */
} xp_shmheap_t;

/* Create and map a heap of `size` bytes (a multiple of the page size). */
xp_status_t xp_shmheap_create(const char *name, size_t size, xp_shmheap_t *heap);
/* Map a peer's heap by name; `size` is what the owner published. */
xp_status_t xp_shmheap_attach(const char *name, size_t size, xp_shmheap_t *heap);
/* Remove the name (mappings stay). Idempotent. */
void xp_shmheap_unlink(xp_shmheap_t *heap);
/* Unmap (and unlink if still linked and owned). Idempotent. */
void xp_shmheap_close(xp_shmheap_t *heap);

/* Owner only. */
void *xp_shmheap_alloc(xp_shmheap_t *heap, size_t size);
xp_status_t xp_shmheap_free(xp_shmheap_t *heap, void *ptr);

/* Nonzero if [addr, addr+len) lies in a heap that starts at `base` (an
 * address in whichever process `base` belongs to) and spans `size` bytes. */
static inline int xp_shmheap_in(uint64_t base, size_t size, uint64_t addr, size_t len)
{
    return base && addr >= base && len <= size && addr - base <= size - len;
}

/* The heap of this process's open shm transport, NULL if none (shm.c). */
xp_shmheap_t *xp_shm_heap(void);
/* Free what that transport's bounce blocks (shm_bounce.c) no longer need,
 * so that a failing xp_shmalloc can try again. */
void xp_shm_heap_reclaim(void);

/* The open instance of transport `ops`, NULL if it is not open (transport.c). */
xp_tl_t *xp_tl_instance(const xp_tl_ops_t *ops);

#endif
