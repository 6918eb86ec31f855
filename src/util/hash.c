/* Robin Hood open-addressing hash table with backward-shift removal; see hash.h. */
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/log.h"

#define MIN_CAPACITY 8

/* Resize when count would exceed 70% of the capacity. */
static size_t grow_threshold(size_t capacity)
{
    return capacity / 10 * 7 + (capacity % 10) * 7 / 10;
}

static xp_status_t alloc_slots(xp_hash_t *h, size_t capacity)
{
    xp_hash_slot_t *slots = calloc(capacity, sizeof *slots);
    if (!slots) {
        xp_error("hash table: cannot allocate %zu slots", capacity);
        return XP_ERR_NO_MEMORY;
    }
    unsigned log2 = 0;
    while (((size_t)1 << log2) < capacity)
        log2++;
    h->slots = slots;
    h->mask = capacity - 1;
    h->shift = 64 - log2;
    h->count = 0;
    h->grow_at = grow_threshold(capacity);
    return XP_OK;
}

xp_status_t xp_hash_init(xp_hash_t *h, size_t expected)
{
    size_t capacity = MIN_CAPACITY;
    if (!h)
        return XP_ERR_INVALID;
    while (grow_threshold(capacity) < expected) {
        if (capacity > SIZE_MAX / 2 / sizeof(xp_hash_slot_t))
            return XP_ERR_OVERFLOW;
        capacity *= 2;
    }
    return alloc_slots(h, capacity);
}

void xp_hash_destroy(xp_hash_t *h)
{
    if (!h)
        return;
    free(h->slots);
    memset(h, 0, sizeof *h);
}

void xp_hash_clear(xp_hash_t *h)
{
    memset(h->slots, 0, (h->mask + 1) * sizeof *h->slots);
    h->count = 0;
}

/* Place a key known to be absent, with room known to exist. */
static void place(xp_hash_t *h, uint64_t key, void *value)
{
    xp_hash_slot_t cur = {.key = key, .value = value, .dist = 1};
    size_t i = xp_hash_home(h, key);
    for (;; i = (i + 1) & h->mask, cur.dist++) {
        xp_hash_slot_t *s = &h->slots[i];
        if (!s->dist) {
            *s = cur;
            break;
        }
        if (s->dist < cur.dist) {
            /* Take from the rich: the resident is closer to home than we are. */
            xp_hash_slot_t tmp = *s;
            *s = cur;
            cur = tmp;
        }
    }
    h->count++;
}

static xp_status_t grow(xp_hash_t *h)
{
    xp_hash_t bigger;
    size_t old_cap = h->mask + 1;
    if (old_cap > SIZE_MAX / 2 / sizeof(xp_hash_slot_t))
        return XP_ERR_NO_MEMORY;
    xp_status_t st = alloc_slots(&bigger, old_cap * 2);
    if (st != XP_OK)
        return st;
    for (size_t i = 0; i < old_cap; i++)
        if (h->slots[i].dist)
            place(&bigger, h->slots[i].key, h->slots[i].value);
    free(h->slots);
    *h = bigger;
    return XP_OK;
}

xp_status_t xp_hash_insert(xp_hash_t *h, uint64_t key, void *value)
{
    if (xp_hash_find(h, key))
        return XP_ERR_EXISTS;
    if (h->count + 1 > h->grow_at) {
        xp_status_t st = grow(h);
        if (st != XP_OK)
            return st;
    }
    place(h, key, value);
    return XP_OK;
}

xp_status_t xp_hash_put(xp_hash_t *h, uint64_t key, void *value)
{
    void **slot = xp_hash_find(h, key);
    if (slot) {
        *slot = value;
        return XP_OK;
    }
    return xp_hash_insert(h, key, value);
}

xp_status_t xp_hash_remove(xp_hash_t *h, uint64_t key, void **value_out)
{
    void **found = xp_hash_find(h, key);
    if (!found)
        return XP_ERR_NOT_FOUND;
    xp_hash_slot_t *s = (xp_hash_slot_t *)((char *)found - offsetof(xp_hash_slot_t, value));
    if (value_out)
        *value_out = s->value;
    /* Backward shift: pull each following displaced entry one slot closer to
     * home until an empty slot or an entry already at home. */
    size_t i = (size_t)(s - h->slots);
    for (;;) {
        size_t next = (i + 1) & h->mask;
        xp_hash_slot_t *n = &h->slots[next];
        if (n->dist <= 1) {
            h->slots[i].dist = 0;
            break;
        }
        h->slots[i] = *n;
        h->slots[i].dist--;
        i = next;
    }
    h->count--;
    return XP_OK;
}

int xp_hash_next(const xp_hash_t *h, size_t *iter, uint64_t *key, void **value)
{
    for (size_t i = *iter; i <= h->mask; i++) {
        if (h->slots[i].dist) {
            if (key)
                *key = h->slots[i].key;
            if (value)
                *value = h->slots[i].value;
            *iter = i + 1;
            return 1;
        }
    }
    *iter = h->mask + 1;
    return 0;
}
