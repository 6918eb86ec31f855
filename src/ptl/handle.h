/*
 * ptl/handle.h - scalar Portals handles and the tables that resolve them.
 *
 * A handle is 32 bits (ptl_handle_any_t):
 *
 *    31    28 27    24 23      17 16              0
 *   +--------+--------+----------+-----------------+
 *   |  type  |   ni   |   gen    |      index      |
 *   +--------+--------+----------+-----------------+
 *
 *   type       xp_handle_type_t (0 is never valid);
 *   ni         the NI slot (0..15, ni.h) the object belongs to (PtlNIHandle);
 *   gen        7-bit generation, bumped each time a slot is freed, so a stale handle does not
 *              resolve to the slot's next object;
 *   index      slot in the type's table; the all-ones index is never used, so
 *              PTL_EQ_NONE (0x3fffffff), PTL_CT_NONE (0x5fffffff) and
 *              PTL_INVALID_HANDLE (0xffffffff) never name an object.
 *
 * A table is an array of slots in chunks that are allocated on demand and
 * never move, so lookups take no lock: check the type, load the slot, compare
 * the handle stored in it. Alloc and free take the table's spin lock (held
 * for a few stores: a pthread mutex cost a locked instruction more on each
 * side, and an entry append plus its unlink take it twice). Free slots
 * are reused first-in first-out, which spreads reuse over all free slots and
 * makes a stale handle that happens to match a new generation unlikely.
 *
 * Tables run in one of two modes:
 *   - external objects: the caller owns the memory, the table stores a
 *     pointer (xp_handle_alloc);
 *   - stable objects (obj_size > 0): the table allocates one object per slot
 *     on first use and keeps it until the table is destroyed, even when the
 *     handle is freed (xp_handle_alloc_stable). A thread that resolved a
 *     handle and is still using the pointer when another thread frees the
 *     handle never touches freed memory; it re-checks the handle to see that
 *     the object is gone. CT and EQ use this mode.
 */
#ifndef XP_PTL_HANDLE_H
#define XP_PTL_HANDLE_H

#include <stddef.h>
#include <stdint.h>
#include "portals4.h"
#include "util/atomic.h"
#include "xportals/status.h"

typedef enum {
    XP_HANDLE_NONE = 0, /* never valid */
    XP_HANDLE_NI = 1,
    XP_HANDLE_EQ = 2,
    XP_HANDLE_CT = 3,
    XP_HANDLE_MD = 4,
    XP_HANDLE_LE = 5,
    XP_HANDLE_ME = 6,
    XP_HANDLE_TYPE_LAST
} xp_handle_type_t;

#define XP_HANDLE_TYPE_SHIFT 28
#define XP_HANDLE_NI_SHIFT   24
#define XP_HANDLE_NI_MASK    0xfu
#define XP_HANDLE_GEN_SHIFT  17
#define XP_HANDLE_GEN_MASK   0x7fu
#define XP_HANDLE_INDEX_MASK 0x1ffffu
/* Most objects one table can hold (the all-ones index is reserved). */
#define XP_HANDLE_MAX_OBJECTS XP_HANDLE_INDEX_MASK
/* Number of NI slots a handle can name. */
#define XP_HANDLE_MAX_NIS (XP_HANDLE_NI_MASK + 1)

#define XP_HANDLE_CHUNK_SHIFT 10
#define XP_HANDLE_CHUNK_SIZE  (1u << XP_HANDLE_CHUNK_SHIFT)
#define XP_HANDLE_MAX_CHUNKS  ((XP_HANDLE_INDEX_MASK >> XP_HANDLE_CHUNK_SHIFT) + 1)

static inline xp_handle_type_t xp_handle_type_of(ptl_handle_any_t h)
{
    return (xp_handle_type_t)(h >> XP_HANDLE_TYPE_SHIFT);
}

static inline unsigned xp_handle_ni_of(ptl_handle_any_t h)
{
    return (h >> XP_HANDLE_NI_SHIFT) & XP_HANDLE_NI_MASK;
}

static inline uint32_t xp_handle_index_of(ptl_handle_any_t h)
{
    return h & XP_HANDLE_INDEX_MASK;
}

/* Compose a handle (for objects that are not kept in a table, e.g. the NI:
 * xp_handle_make(XP_HANDLE_NI, ni_slot, 0, 0)). */
static inline ptl_handle_any_t xp_handle_make(xp_handle_type_t type, unsigned ni,
                                              unsigned gen, uint32_t index)
{
    return ((uint32_t)type << XP_HANDLE_TYPE_SHIFT) |
           ((ni & XP_HANDLE_NI_MASK) << XP_HANDLE_NI_SHIFT) |
           ((gen & XP_HANDLE_GEN_MASK) << XP_HANDLE_GEN_SHIFT) | (index & XP_HANDLE_INDEX_MASK);
}

typedef struct xp_handle_slot {
    ptl_handle_any_t handle; /* the live handle; 0 while the slot is free */
    uint32_t gen;            /* generation of the next handle */
    uint32_t next_free;      /* free FIFO link: index + 1, 0 = end */
    void *obj;
} xp_handle_slot_t;

typedef struct xp_handle_table {
    xp_spinlock_t lock;     /* alloc / free / growth; never taken by lookup */
    xp_handle_type_t type;
    size_t obj_size;        /* > 0: stable objects owned by the table */
    uint32_t max_objects;
    uint32_t nslots;        /* slots created so far (all chunks up to here) */
    uint32_t count;         /* live handles */
    uint32_t free_head;     /* index + 1 of the oldest free slot, 0 = none */
    uint32_t free_tail;
    xp_handle_slot_t *chunks[XP_HANDLE_MAX_CHUNKS];
} xp_handle_table_t;

/* Prepare an empty table for handles of `type`, at most max_objects live at a
 * time (clamped to XP_HANDLE_MAX_OBJECTS). obj_size > 0 selects stable
 * objects of that size (zeroed when first created). */
xp_status_t xp_handle_table_init(xp_handle_table_t *t, xp_handle_type_t type,
                                 uint32_t max_objects, size_t obj_size);
/* Release the table's memory (and its stable objects). Live external objects
 * are the caller's to free first (see xp_handle_foreach). */
void xp_handle_table_fini(xp_handle_table_t *t);

/* Give obj a handle in NI slot `ni`. XP_ERR_NO_RESOURCE when max_objects are
 * live, XP_ERR_NO_MEMORY, XP_ERR_INVALID on a stable-object table. */
xp_status_t xp_handle_alloc(xp_handle_table_t *t, unsigned ni, void *obj,
                            ptl_handle_any_t *handle_out);
/* Stable-object tables: a handle and its object (same memory as the last
 * object of this slot, if the slot was used before: the caller
 * reinitializes it, keeping whatever must survive reuse such as locks). */
xp_status_t xp_handle_alloc_stable(xp_handle_table_t *t, unsigned ni, void **obj_out,
                                   ptl_handle_any_t *handle_out);
/* Invalidate a handle. XP_ERR_INVALID if it is not live in this table. */
xp_status_t xp_handle_free(xp_handle_table_t *t, ptl_handle_any_t h);

/* The object of a live handle, NULL for anything else (wrong type, stale,
 * free, out of range, PTL_*_NONE). Lock-free. */
static inline void *xp_handle_lookup(const xp_handle_table_t *t, ptl_handle_any_t h)
{
    uint32_t index = xp_handle_index_of(h);
    xp_handle_slot_t *chunk, *slot;
    void *obj;

    /* The reserved all-ones index needs no test of its own: its slot is
     * never handed out, so its handle word stays 0 and never equals h. */
    if (xp_handle_type_of(h) != t->type)
        return NULL;
    chunk = __atomic_load_n(&t->chunks[index >> XP_HANDLE_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
    if (!chunk)
        return NULL;
    slot = &chunk[index & (XP_HANDLE_CHUNK_SIZE - 1)];
    /* Object first, then the handle: publish stores the object before the
     * handle, and free clears the handle before the object, so an object
     * read here that is not h's (the slot's next one, or NULL) is always
     * followed by a handle word other than h. One handle compare suffices. */
    obj = __atomic_load_n(&slot->obj, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot->handle, __ATOMIC_ACQUIRE) != h)
        return NULL;
    return obj;
}

/* Run fn(obj, arg) under the table lock if h is live (1: it ran, 0: h is
 * not live). For external objects that another thread frees right after
 * freeing their handle (entries, which the target handler unlinks), this is
 * where their fields can be read without holding what protects the object:
 * the handle cannot die, and so the object cannot be freed, meanwhile.
 * fn must not alloc or free in t. */
int xp_handle_peek(xp_handle_table_t *t, ptl_handle_any_t h, void (*fn)(void *obj, void *arg),
                   void *arg);

/* 1 while h is live in t (for waiters that hold a stable object's pointer). */
static inline int xp_handle_is_live(const xp_handle_table_t *t, ptl_handle_any_t h)
{
    return xp_handle_lookup(t, h) != NULL;
}

/* Number of live handles. */
uint32_t xp_handle_count(xp_handle_table_t *t);

/* Call fn(handle, obj, arg) for every live handle whose NI slot is `ni`
 * (any NI: ni < 0), under the table lock: fn must not alloc or free in t.
 * Handles are collected first when the caller needs to free them: see
 * xp_handle_collect. */
void xp_handle_foreach(xp_handle_table_t *t, int ni,
                       void (*fn)(ptl_handle_any_t h, void *obj, void *arg), void *arg);

/* Copy up to max live handles of NI slot ni (any: ni < 0) into out; returns
 * how many were live in total (may exceed max). */
uint32_t xp_handle_collect(xp_handle_table_t *t, int ni, ptl_handle_any_t *out, uint32_t max);

/* ------------------------------------------------------------------------
 * The process-wide tables of the objects module (CT and EQ), hung off the
 * library context (xp_ctx.ptl_objects). Created on first use; destroyed by
 * xp_ptl_objects_fini() from the last PtlFini. (Implemented in ct.c, so that
 * the table code above stands alone.)
 */
typedef struct xp_ptl_objects {
    xp_handle_table_t ct;
    xp_handle_table_t eq;
} xp_ptl_objects_t;

/* The tables, created if needed (NULL only when out of memory). */
xp_ptl_objects_t *xp_ptl_objects(void);
/* The tables if they exist, else NULL (lookups: never create). */
xp_ptl_objects_t *xp_ptl_objects_peek(void);
/* Destroy the tables and every CT/EQ still in them (last PtlFini). */
void xp_ptl_objects_fini(void);

#endif
