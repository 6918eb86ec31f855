/*
 * util/hash.h - open-addressing hash table: uint64_t key -> void * value.
 *
 * Robin Hood linear probing: an insert that travels further than the resident
 * of a slot takes the slot and carries the resident on, so probe lengths stay
 * short and even; a removal shifts the following run back by one slot instead
 * of leaving a tombstone, so lookups never slow down after many removals. The
 * table doubles when it would become more than 70% full. Every key value is
 * allowed (0 and UINT64_MAX included); values are opaque (NULL allowed).
 *
 * Not thread safe: callers serialise access (the matching engine holds its
 * portal table entry's lock). Keys should already be well mixed, or be hashed
 * by the caller with xp_hash64 / xp_hash_combine (the table mixes them once
 * more, cheaply, so raw small integers are fine too).
 *
 *   xp_hash_t h;
 *   xp_hash_init(&h, 0);
 *   xp_hash_insert(&h, key, obj);
 *   obj = xp_hash_get(&h, key);             // NULL if absent
 *   xp_hash_remove(&h, key, &obj);
 *   for (size_t it = 0; xp_hash_next(&h, &it, &key, &obj);) ...
 *   xp_hash_destroy(&h);
 */
#ifndef XP_UTIL_HASH_H
#define XP_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "xportals/status.h"

/* A strong 64-bit mixer (every input bit affects every output bit). */
static inline uint64_t xp_hash64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Fold value v into a running hash h (order matters: (a,b) != (b,a)).
 * For a fixed v it is a bijection of h, and for a fixed h a bijection of v,
 * so distinct (source, match bits) pairs never collide through one field. */
static inline uint64_t xp_hash_combine(uint64_t h, uint64_t v)
{
    return xp_hash64((h * 0x9e3779b97f4a7c15ull) ^ xp_hash64(v));
}

/* FNV-1a of a NUL-terminated string: stable across processes and builds, so
 * it can name things that peers must agree on (launcher keys, job ids). */
static inline uint64_t xp_hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

typedef struct xp_hash_slot {
    uint64_t key;
    void *value;
    uint32_t dist; /* 0: empty; else 1 + distance from the key's home slot */
} xp_hash_slot_t;

typedef struct xp_hash {
    xp_hash_slot_t *slots;
    size_t mask;  /* capacity - 1 (capacity is a power of two, >= 8) */
    unsigned shift; /* 64 - log2(capacity): home slot = top bits of a product */
    size_t count;
    size_t grow_at; /* count that triggers doubling */
} xp_hash_t;

/* Empty table sized for about `expected` entries without growing (0: small). */
xp_status_t xp_hash_init(xp_hash_t *h, size_t expected);
/* Free the table (not the values). The table may be re-initialised. */
void xp_hash_destroy(xp_hash_t *h);
/* Remove every entry, keep the memory. */
void xp_hash_clear(xp_hash_t *h);

/* Add key -> value. XP_ERR_EXISTS if key is present (value unchanged),
 * XP_ERR_NO_MEMORY if growing failed. */
xp_status_t xp_hash_insert(xp_hash_t *h, uint64_t key, void *value);
/* Add or replace. */
xp_status_t xp_hash_put(xp_hash_t *h, uint64_t key, void *value);
/* Remove key; its value goes to *value_out (if non-NULL). XP_ERR_NOT_FOUND if absent. */
xp_status_t xp_hash_remove(xp_hash_t *h, uint64_t key, void **value_out);

static inline size_t xp_hash_home(const xp_hash_t *h, uint64_t key)
{
    /* Fibonacci hashing: cheap, and good enough for raw ids as keys. */
    return (size_t)(((key ^ (key >> 29)) * 0x9e3779b97f4a7c15ull) >> h->shift);
}

/* Where key's value is stored (valid until the next insert/put/remove), or NULL. */
static inline void **xp_hash_find(const xp_hash_t *h, uint64_t key)
{
    size_t i = xp_hash_home(h, key);
    for (uint32_t d = 1;; d++, i = (i + 1) & h->mask) {
        xp_hash_slot_t *s = &h->slots[i];
        /* Robin Hood invariant: once residents are closer to home than we
         * would be, the key cannot be further on. */
        if (s->dist < d)
            return NULL;
        if (s->key == key)
            return &s->value;
    }
}

/* The value of key, or NULL if absent (use xp_hash_find to store NULL values). */
static inline void *xp_hash_get(const xp_hash_t *h, uint64_t key)
{
    void **v = xp_hash_find(h, key);
    return v ? *v : NULL;
}

static inline size_t xp_hash_count(const xp_hash_t *h)
{
    return h->count;
}

/* Iterate: start with *iter = 0; returns 1 and the next entry, or 0 at the
 * end. The table must not change during the iteration. */
int xp_hash_next(const xp_hash_t *h, size_t *iter, uint64_t *key, void **value);

#endif
