/*
 * util/pool.h - fixed-size object pool.
 *
 * Objects are carved from chunks of `objs_per_chunk` objects; a free object
 * holds the link of the free list in its first bytes, so get and put are O(1)
 * and there is no per-object overhead. The pool grows one chunk at a time
 * (up to `max_objs` objects if non-zero, which callers use to enforce limits
 * such as a Portals NI's max_mes) and never shrinks; xp_pool_destroy frees
 * every chunk, including objects still in use.
 *
 * Objects are aligned to 16 bytes (XP_POOL_CACHE_ALIGN: 64, and sizes rounded
 * up to whole cache lines so objects never share one).
 *
 * NOT THREAD SAFE: callers that share a pool between threads hold a lock
 * around xp_pool_get / xp_pool_put.
 */
#ifndef XP_UTIL_POOL_H
#define XP_UTIL_POOL_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "xportals/status.h"

/* 1 in an AddressSanitizer build: free objects are then poisoned past their
 * link word (pool.c), so a use after xp_pool_put is reported. */
#if defined(__SANITIZE_ADDRESS__)
#define XP_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XP_POOL_ASAN 1
#endif
#endif
#ifndef XP_POOL_ASAN
#define XP_POOL_ASAN 0
#endif

/* A zeroed object for the per-operation allocations (entries, MDs,
 * triggered operations). glibc's calloc skips the per-thread cache that
 * malloc and free use, so once a second thread exists (the progress thread)
 * each calloc/free pair took the arena lock: 120-128 ns against 60 for
 * malloc + memset + free (216 bytes, the Intel VM of round 21). */
static inline void *xp_zalloc(size_t size)
{
    void *p = malloc(size);
    /* The empty asm hides where p came from: gcc turns malloc + memset of
     * the same size back into calloc. */
    __asm__("" : "+r"(p));
    if (p)
        memset(p, 0, size);
    return p;
}

enum {
    XP_POOL_ZERO        = 1u << 0, /* xp_pool_get returns zeroed objects */
    XP_POOL_CACHE_ALIGN = 1u << 1, /* 64-byte aligned, whole cache lines */
};

typedef struct xp_pool {
    size_t obj_size;       /* rounded up to the alignment */
    size_t objs_per_chunk;
    size_t max_objs;       /* 0: unlimited */
    size_t align;
    unsigned flags;
    void *free_list;       /* free objects, linked through their first word */
    void *chunks;          /* chunks, linked through their header */
    size_t capacity;       /* objects in all chunks */
    size_t in_use;
    const char *name;      /* for error messages */
} xp_pool_t;

/* Initialise an empty pool (no memory is allocated until the first get).
 * obj_size > 0; objs_per_chunk 0 picks a chunk of about 64 KiB. */
xp_status_t xp_pool_init(xp_pool_t *pool, const char *name, size_t obj_size,
                         size_t objs_per_chunk, size_t max_objs, unsigned flags);
/* Free every chunk. Objects still in use become invalid. */
void xp_pool_destroy(xp_pool_t *pool);

/* An object, or NULL when max_objs are in use or memory is exhausted (the
 * caller maps that to its resource error; the pool logs only out-of-memory). */
void *xp_pool_get(xp_pool_t *pool);
/* Return an object obtained from this pool (NULL is ignored). */
void xp_pool_put(xp_pool_t *pool, void *obj);

static inline size_t xp_pool_in_use(const xp_pool_t *pool)
{
    return pool->in_use;
}

static inline size_t xp_pool_capacity(const xp_pool_t *pool)
{
    return pool->capacity;
}

#endif
