/*
 * ptl/ni.h - network interfaces (NI) of the Portals engine.
 *
 * An NI is one (interface, matching?, physical?) combination of this process:
 * slot = iface * 4 + (matching ? 2 : 0) + (physical ? 1 : 0). Several
 * PtlNIInit calls on the same slot share one reference-counted xp_ni_t and
 * get the same handle. Peers address a slot by its number in every packet.
 *
 * Locking: ni->lock protects the NI's object counts, its portal table
 * allocation state and its logical map. Each portal table entry has its own
 * lock (see pt.h) that the packet handler and the list calls take. Never take
 * ni->lock while holding a PT lock.
 */
#ifndef XP_PTL_NI_H
#define XP_PTL_NI_H

#include <pthread.h>
#include <stdint.h>

#include "portals4.h"
#include "xportals/status.h"

/* Interfaces 0..XP_PTL_MAX_IFACES-1 (Open MPI's btl/portals4 opens one per
 * "card", 0..max_btls-1). Each has 4 kinds, so 16 NI slots: exactly what the
 * 4-bit NI field of a handle can name (handle.h). PtlNIInit on a higher
 * interface is PTL_ARG_INVALID (not a valid network interface). */
#define XP_PTL_MAX_IFACES 4
#define XP_PTL_NI_SLOTS   (XP_PTL_MAX_IFACES * 4)

/* Object kinds counted against the NI's limits. */
typedef enum {
    XP_NI_OBJ_ENTRY, /* LE or ME */
    XP_NI_OBJ_MD,
    XP_NI_OBJ_CT,
    XP_NI_OBJ_EQ,
    XP_NI_OBJ_TRIGGERED,
    XP_NI_OBJ_NKINDS
} xp_ni_obj_kind_t;

struct xp_pt;

struct xp_tl_route;

typedef struct xp_ni_map {
    ptl_size_t size;
    /* logical rank -> the route to its job rank when that route takes a
     * compact put of any length (a full header and XP_WIRE_SPUT_MAX bytes
     * fit one packet), else NULL: PtlPut's compact path asks only this.
     * Points into the same allocation, after rank[]. */
    const struct xp_tl_route **sput_route;
    int rank[];                 /* logical rank -> job rank */
} xp_ni_map_t;

typedef struct xp_ni {
    ptl_handle_ni_t handle;
    int slot;                   /* iface * 4 + matching * 2 + physical */
    ptl_interface_t iface;
    unsigned int options;       /* PTL_NI_* given at init */
    int matching, physical;
    int refcount;               /* PtlNIInit calls not yet matched by PtlNIFini */
    pthread_mutex_t lock;
    ptl_ni_limits_t limits;     /* granted limits */
    int obj_count[XP_NI_OBJ_NKINDS];
    struct xp_pt *pt;           /* limits.max_pt_index + 1 entries */
    /* Logical addressing: rank -> job rank (identity unless PtlSetMap said
     * otherwise). The progress thread reads the map while it matches arrivals,
     * which peers may send before this process calls PtlSetMap: a map is
     * immutable once published, PtlSetMap publishes its own with a release
     * store (readers load it with acquire: map_get in ni.c), and the identity map it
     * replaces stays allocated until the NI dies (only one PtlSetMap can
     * replace it). */
    struct xp_ni_map *map;
    struct xp_ni_map *map_identity;
    int map_set;                /* PtlSetMap was called */
    int32_t sr[PTL_SR_LAST];    /* status registers (atomic increments) */
    int bundle_depth;
} xp_ni_t;

/* The NI behind a handle (must be live: NULL otherwise -> PTL_ARG_INVALID). */
xp_ni_t *xp_ni_from_handle(ptl_handle_ni_t handle);
/* The NI of slot `slot` in this process if it is initialised, else NULL
 * (used by the packet handler). */
xp_ni_t *xp_ni_from_slot(int slot);

static inline void xp_ni_lock(xp_ni_t *ni) { pthread_mutex_lock(&ni->lock); }
static inline void xp_ni_unlock(xp_ni_t *ni) { pthread_mutex_unlock(&ni->lock); }

/* Count one more object of `kind` against the NI's limit: XP_ERR_NO_RESOURCE
 * (-> PTL_NO_SPACE) when the limit is reached. Release when the object dies. */
xp_status_t xp_ni_obj_acquire(xp_ni_t *ni, xp_ni_obj_kind_t kind);
void xp_ni_obj_release(xp_ni_t *ni, xp_ni_obj_kind_t kind);

/* Status registers (PTL_SR_*): atomic increment. */
void xp_ni_sr_inc(xp_ni_t *ni, ptl_sr_index_t reg);

/* xp_ni_target_rank for a physical NI (out of line: it asks the runtime). */
int xp_ni_target_rank_phys(const xp_ni_t *ni, ptl_process_t id);

/* Job rank of a target given to PtlPut & co on this NI: logical rank through
 * the map, or (nid, pid) for physical NIs. -1 if invalid. Inline: every
 * operation asks, and the logical case is two loads. */
static inline int xp_ni_target_rank(const xp_ni_t *ni, ptl_process_t id)
{
    if (__builtin_expect(ni->physical, 0))
        return xp_ni_target_rank_phys(ni, id);
    /* A published map is immutable (see xp_ni_t::map). */
    const xp_ni_map_t *map = __atomic_load_n(&ni->map, __ATOMIC_ACQUIRE);
    return id.rank < map->size ? map->rank[id.rank] : -1;
}
/* The ptl_process_t that names job rank `rank` on this NI (event.initiator). */
ptl_process_t xp_ni_process_of(const xp_ni_t *ni, int rank);

/* 1 once PtlInit succeeded (and PtlFini has not dropped the last reference). */
int xp_ptl_initialized(void);

/* The PTL_* return code for an xp_status_t (XP_OK -> PTL_OK,
 * XP_ERR_INVALID -> PTL_ARG_INVALID, XP_ERR_NO_MEMORY/NO_RESOURCE ->
 * PTL_NO_SPACE, XP_ERR_BUSY -> PTL_IN_USE, XP_ERR_CANCELED -> PTL_INTERRUPTED,
 * XP_ERR_NOT_INIT -> PTL_NO_INIT, XP_ERR_TIMEOUT -> PTL_FAIL, other -> PTL_FAIL). */
int xp_ptl_rc(xp_status_t st);

#endif
