/*
 * ptl/handle.c - handle tables: chunked slot arrays with a FIFO free list.
 */
#include "ptl/handle.h"

#include <stdlib.h>
#include <string.h>
#include "util/log.h"

xp_status_t xp_handle_table_init(xp_handle_table_t *t, xp_handle_type_t type,
                                 uint32_t max_objects, size_t obj_size)
{
    if (type <= XP_HANDLE_NONE || type >= XP_HANDLE_TYPE_LAST)
        return XP_ERR_INVALID;
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->obj_size = obj_size;
    t->max_objects = (max_objects == 0 || max_objects > XP_HANDLE_MAX_OBJECTS)
                         ? XP_HANDLE_MAX_OBJECTS
                         : max_objects;
    return XP_OK;
}

static xp_handle_slot_t *slot_at(xp_handle_table_t *t, uint32_t index)
{
    return &t->chunks[index >> XP_HANDLE_CHUNK_SHIFT][index & (XP_HANDLE_CHUNK_SIZE - 1)];
}

void xp_handle_table_fini(xp_handle_table_t *t)
{
    for (uint32_t c = 0; c < XP_HANDLE_MAX_CHUNKS; c++) {
        xp_handle_slot_t *chunk = t->chunks[c];
        if (!chunk)
            continue;
        if (t->obj_size) {
            for (uint32_t i = 0; i < XP_HANDLE_CHUNK_SIZE; i++)
                free(chunk[i].obj);
        }
        free(chunk);
        t->chunks[c] = NULL;
    }
    t->type = XP_HANDLE_NONE;
}

/* Take the oldest free slot, or create one (growing by a chunk when needed).
 * Called with the lock held. Returns the index, or UINT32_MAX. */
static uint32_t take_slot(xp_handle_table_t *t)
{
    uint32_t index;

    if (t->free_head) {
        index = t->free_head - 1;
        t->free_head = slot_at(t, index)->next_free;
        if (!t->free_head)
            t->free_tail = 0;
        return index;
    }
    index = t->nslots;
    if (index >= XP_HANDLE_INDEX_MASK)
        return UINT32_MAX;
    if (!t->chunks[index >> XP_HANDLE_CHUNK_SHIFT]) {
        xp_handle_slot_t *chunk = calloc(XP_HANDLE_CHUNK_SIZE, sizeof(*chunk));
        if (!chunk) {
            xp_error("handle table: out of memory for %u slots", XP_HANDLE_CHUNK_SIZE);
            return UINT32_MAX;
        }
        /* Published before any handle naming it: lookups load it acquire. */
        __atomic_store_n(&t->chunks[index >> XP_HANDLE_CHUNK_SHIFT], chunk, __ATOMIC_RELEASE);
    }
    t->nslots++;
    return index;
}

static void put_slot(xp_handle_table_t *t, uint32_t index)
{
    xp_handle_slot_t *slot = slot_at(t, index);

    slot->next_free = 0;
    if (t->free_tail)
        slot_at(t, t->free_tail - 1)->next_free = index + 1;
    else
        t->free_head = index + 1;
    t->free_tail = index + 1;
}

/* Common part of both alloc flavours; the lock is held. */
static xp_status_t alloc_locked(xp_handle_table_t *t, unsigned ni, uint32_t *index_out)
{
    uint32_t index;

    if (ni >= XP_HANDLE_MAX_NIS)
        return XP_ERR_INVALID;
    if (t->count >= t->max_objects)
        return XP_ERR_NO_RESOURCE;
    index = take_slot(t);
    if (index == UINT32_MAX)
        return XP_ERR_NO_MEMORY;
    *index_out = index;
    return XP_OK;
}

static ptl_handle_any_t publish(xp_handle_table_t *t, unsigned ni, uint32_t index, void *obj)
{
    xp_handle_slot_t *slot = slot_at(t, index);
    ptl_handle_any_t h = xp_handle_make(t->type, ni, slot->gen, index);

    __atomic_store_n(&slot->obj, obj, __ATOMIC_RELEASE);
    __atomic_store_n(&slot->handle, h, __ATOMIC_RELEASE);
    t->count++;
    return h;
}

xp_status_t xp_handle_alloc(xp_handle_table_t *t, unsigned ni, void *obj,
                            ptl_handle_any_t *handle_out)
{
    uint32_t index;
    xp_status_t st;

    if (t->obj_size || !handle_out)
        return XP_ERR_INVALID;
    xp_spin_lock(&t->lock);
    st = alloc_locked(t, ni, &index);
    if (st == XP_OK)
        *handle_out = publish(t, ni, index, obj);
    xp_spin_unlock(&t->lock);
    return st;
}

xp_status_t xp_handle_alloc_stable(xp_handle_table_t *t, unsigned ni, void **obj_out,
                                   ptl_handle_any_t *handle_out)
{
    uint32_t index;
    xp_status_t st;
    xp_handle_slot_t *slot;

    if (!t->obj_size || !obj_out || !handle_out)
        return XP_ERR_INVALID;
    xp_spin_lock(&t->lock);
    st = alloc_locked(t, ni, &index);
    if (st != XP_OK)
        goto out_unlock;
    slot = slot_at(t, index);
    if (!slot->obj) {
        void *obj = calloc(1, t->obj_size);
        if (!obj) {
            xp_error("handle table: out of memory for an object of %zu bytes", t->obj_size);
            put_slot(t, index);
            st = XP_ERR_NO_MEMORY;
            goto out_unlock;
        }
        __atomic_store_n(&slot->obj, obj, __ATOMIC_RELEASE);
    }
    *obj_out = slot->obj;
    *handle_out = publish(t, ni, index, slot->obj);
out_unlock:
    xp_spin_unlock(&t->lock);
    return st;
}

xp_status_t xp_handle_free(xp_handle_table_t *t, ptl_handle_any_t h)
{
    xp_status_t st = XP_ERR_INVALID;
    uint32_t index = xp_handle_index_of(h);
    xp_handle_slot_t *slot;

    if (xp_handle_type_of(h) != t->type || index == XP_HANDLE_INDEX_MASK)
        return XP_ERR_INVALID;
    xp_spin_lock(&t->lock);
    if (index >= t->nslots)
        goto out_unlock;
    slot = slot_at(t, index);
    if (slot->handle != h)
        goto out_unlock;
    __atomic_store_n(&slot->handle, 0, __ATOMIC_RELEASE);
    if (!t->obj_size)
        __atomic_store_n(&slot->obj, NULL, __ATOMIC_RELEASE);
    slot->gen = (slot->gen + 1) & XP_HANDLE_GEN_MASK;
    t->count--;
    put_slot(t, index);
    st = XP_OK;
out_unlock:
    xp_spin_unlock(&t->lock);
    return st;
}

int xp_handle_peek(xp_handle_table_t *t, ptl_handle_any_t h, void (*fn)(void *obj, void *arg),
                   void *arg)
{
    int live;

    xp_spin_lock(&t->lock);
    void *obj = xp_handle_lookup(t, h);
    live = obj != NULL;
    if (live)
        fn(obj, arg);
    xp_spin_unlock(&t->lock);
    return live;
}

uint32_t xp_handle_count(xp_handle_table_t *t)
{
    uint32_t n;

    xp_spin_lock(&t->lock);
    n = t->count;
    xp_spin_unlock(&t->lock);
    return n;
}

void xp_handle_foreach(xp_handle_table_t *t, int ni,
                       void (*fn)(ptl_handle_any_t h, void *obj, void *arg), void *arg)
{
    xp_spin_lock(&t->lock);
    for (uint32_t i = 0; i < t->nslots; i++) {
        xp_handle_slot_t *slot = slot_at(t, i);
        if (slot->handle && (ni < 0 || xp_handle_ni_of(slot->handle) == (unsigned)ni))
            fn(slot->handle, slot->obj, arg);
    }
    xp_spin_unlock(&t->lock);
}

uint32_t xp_handle_collect(xp_handle_table_t *t, int ni, ptl_handle_any_t *out, uint32_t max)
{
    uint32_t n = 0;

    xp_spin_lock(&t->lock);
    for (uint32_t i = 0; i < t->nslots; i++) {
        xp_handle_slot_t *slot = slot_at(t, i);
        if (!slot->handle || (ni >= 0 && xp_handle_ni_of(slot->handle) != (unsigned)ni))
            continue;
        if (n < max)
            out[n] = slot->handle;
        n++;
    }
    xp_spin_unlock(&t->lock);
    return n;
}

/* ------------------------------------------------------------------ API */

int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2)
{
    /* Handles are unique while their object lives and constants are
     * distinct values, so equality of objects is equality of values.
     * Non-zero when equal, as the reference implementation and Bull's BXI
     * return it: every client tests it as a boolean
     * (`if (!PtlHandleIsEqual(h, PTL_INVALID_HANDLE)) release(h);` in SOS and
     * Open MPI), which the specification's PTL_OK (== 0) for "equal" would
     * invert. */
    return handle1 == handle2;
}
