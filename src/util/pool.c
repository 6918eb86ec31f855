/* Fixed-size object pool; see pool.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/pool.h"
#include "util/log.h"

/* Under AddressSanitizer (XP_POOL_ASAN) a free object is poisoned past its
 * link word, so a use after xp_pool_put is reported as a use after free
 * would be: memory that a pool recycles is never given back to malloc,
 * whose checks it would otherwise escape. */
#if XP_POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON_FREE(pool, obj)                                                                 \
    ASAN_POISON_MEMORY_REGION((char *)(obj) + sizeof(void *), (pool)->obj_size - sizeof(void *))
#define UNPOISON(pool, obj) ASAN_UNPOISON_MEMORY_REGION((obj), (pool)->obj_size)
#else
#define POISON_FREE(pool, obj) ((void)0)
#define UNPOISON(pool, obj) ((void)0)
#endif

#define DEFAULT_CHUNK_BYTES (64 * 1024)

/* A chunk starts with this header, padded to the object alignment. */
typedef struct chunk {
    struct chunk *next;
} chunk_t;

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

xp_status_t xp_pool_init(xp_pool_t *pool, const char *name, size_t obj_size,
                         size_t objs_per_chunk, size_t max_objs, unsigned flags)
{
    if (!pool || !obj_size || obj_size > SIZE_MAX / 4)
        return XP_ERR_INVALID;
    size_t align = (flags & XP_POOL_CACHE_ALIGN) ? 64 : 16;
    size_t size = round_up(obj_size < sizeof(void *) ? sizeof(void *) : obj_size, align);
    if (!objs_per_chunk)
        objs_per_chunk = size >= DEFAULT_CHUNK_BYTES / 4 ? 4 : DEFAULT_CHUNK_BYTES / size;
    if (objs_per_chunk > (SIZE_MAX - align) / size)
        return XP_ERR_OVERFLOW;
    memset(pool, 0, sizeof *pool);
    pool->obj_size = size;
    pool->objs_per_chunk = objs_per_chunk;
    pool->max_objs = max_objs;
    pool->align = align;
    pool->flags = flags;
    pool->name = name ? name : "pool";
    return XP_OK;
}

void xp_pool_destroy(xp_pool_t *pool)
{
    if (!pool)
        return;
    chunk_t *c = pool->chunks;
    while (c) {
        chunk_t *next = c->next;
        free(c);
        c = next;
    }
    pool->chunks = NULL;
    pool->free_list = NULL;
    pool->capacity = 0;
    pool->in_use = 0;
}

static int add_chunk(xp_pool_t *pool)
{
    size_t n = pool->objs_per_chunk;
    if (pool->max_objs && pool->capacity + n > pool->max_objs)
        n = pool->max_objs - pool->capacity;
    if (!n)
        return -1;
    chunk_t *c = NULL;
    if (posix_memalign((void **)&c, pool->align, pool->align + n * pool->obj_size)) {
        xp_error("%s: cannot allocate %zu objects of %zu bytes", pool->name, n, pool->obj_size);
        return -1;
    }
    c->next = pool->chunks;
    pool->chunks = c;
    /* Thread the new objects onto the free list, lowest address first. */
    char *base = (char *)c + pool->align;
    for (size_t i = n; i-- > 0;) {
        void **obj = (void **)(base + i * pool->obj_size);
        *obj = pool->free_list;
        pool->free_list = obj;
        POISON_FREE(pool, obj);
    }
    pool->capacity += n;
    return 0;
}

void *xp_pool_get(xp_pool_t *pool)
{
    if (!pool->free_list && add_chunk(pool))
        return NULL;
    void **obj = pool->free_list;
    pool->free_list = *obj;
    pool->in_use++;
    UNPOISON(pool, obj);
    if (pool->flags & XP_POOL_ZERO)
        memset(obj, 0, pool->obj_size);
    return obj;
}

void xp_pool_put(xp_pool_t *pool, void *obj)
{
    if (!obj)
        return;
    *(void **)obj = pool->free_list;
    pool->free_list = obj;
    pool->in_use--;
    POISON_FREE(pool, obj);
}
