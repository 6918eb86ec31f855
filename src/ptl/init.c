/* ptl/init.c - PtlInit/PtlFini, the process state, return-code mapping, PtlAbort. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ptl/engine.h"
#include "ptl/handle.h"
#include "ptl/progress.h"
#include "runtime/runtime.h"
#include "transport/transport.h"
#include "util/config.h"
#include "util/context.h"
#include "util/log.h"

/* MDs, LEs and MEs of all NIs together: as many as a handle can name (ni.c
 * grants max_entries / max_mds up to this). */
#define XP_PTL_MAX_OBJECTS XP_HANDLE_MAX_OBJECTS

/* The state is created once and kept for the life of the process (PtlFini
 * only drops it back to "not initialised"), so its locks are always valid. */
xp_ptl_state_t *xp_ptl_state_create(void)
{
    xp_ptl_state_t *st = __atomic_load_n(&xp_ctx.ptl, __ATOMIC_ACQUIRE);
    if (st)
        return st;
    st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->atomic_lock, NULL);
    xp_ptl_state_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&xp_ctx.ptl, &expected, st, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(st);
        return expected;
    }
    return st;
}

int xp_ptl_initialized(void)
{
    xp_ptl_state_t *st = __atomic_load_n(&xp_ctx.ptl, __ATOMIC_ACQUIRE);
    return st && __atomic_load_n(&st->init_count, __ATOMIC_ACQUIRE) > 0;
}

int xp_ptl_rc(xp_status_t st)
{
    switch (st) {
    case XP_OK: return PTL_OK;
    case XP_ERR_INVALID: return PTL_ARG_INVALID;
    case XP_ERR_NO_MEMORY:
    case XP_ERR_NO_RESOURCE: return PTL_NO_SPACE;
    case XP_ERR_BUSY: return PTL_IN_USE;
    case XP_ERR_CANCELED: return PTL_INTERRUPTED;
    case XP_ERR_ABORTED: return PTL_ABORTED;
    case XP_ERR_NOT_INIT: return PTL_NO_INIT;
    default: return PTL_FAIL;
    }
}

static xp_status_t tables_init(xp_ptl_state_t *st)
{
    xp_status_t rc = xp_handle_table_init(&st->md_table, XP_HANDLE_MD, XP_PTL_MAX_OBJECTS, 0);
    if (rc != XP_OK)
        return rc;
    rc = xp_handle_table_init(&st->le_table, XP_HANDLE_LE, XP_PTL_MAX_OBJECTS, 0);
    if (rc != XP_OK)
        goto err_fini_md;
    rc = xp_handle_table_init(&st->me_table, XP_HANDLE_ME, XP_PTL_MAX_OBJECTS, 0);
    if (rc != XP_OK)
        goto err_fini_le;
    return XP_OK;
err_fini_le:
    xp_handle_table_fini(&st->le_table);
err_fini_md:
    xp_handle_table_fini(&st->md_table);
    return rc;
}

static void tables_fini(xp_ptl_state_t *st)
{
    xp_handle_table_fini(&st->me_table);
    xp_handle_table_fini(&st->le_table);
    xp_handle_table_fini(&st->md_table);
}

static xp_status_t first_init(xp_ptl_state_t *st)
{
    xp_status_t rc = xp_init(NULL, NULL);
    if (rc != XP_OK) {
        xp_error("PtlInit: runtime initialisation failed: %s", xp_status_string(rc));
        return rc;
    }
    st->rank = xp_rank();
    st->size = xp_size();
    st->uid = (uint32_t)getuid();
    st->direct = xp_config()->shm_direct;
    st->direct_max = xp_config()->shm_direct_max ? xp_config()->shm_direct_max : SIZE_MAX;
    st->reply_memo.rank = -1; /* (no handler runs yet) */
    rc = tables_init(st);
    if (rc != XP_OK)
        goto err_finalize;
    rc = xp_tl_init(xp_eng_recv, st);
    if (rc != XP_OK) {
        xp_error("PtlInit: transports failed to start: %s", xp_status_string(rc));
        goto err_tables;
    }
    st->own_window = xp_tl_own_window();
    rc = xp_ptl_progress_start();
    if (rc != XP_OK)
        goto err_tl;
    return XP_OK;
err_tl:
    xp_tl_fini();
err_tables:
    tables_fini(st);
err_finalize:
    xp_finalize();
    return rc;
}

int PtlInit(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    if (!st)
        return PTL_FAIL;
    pthread_mutex_lock(&st->lock);
    if (st->init_count == 0 && first_init(st) != XP_OK) {
        pthread_mutex_unlock(&st->lock);
        return PTL_FAIL;
    }
    __atomic_add_fetch(&st->init_count, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&st->lock);
    return PTL_OK;
}

void xp_ni_destroy(xp_ni_t *ni); /* ni.c */

void PtlFini(void)
{
    xp_ptl_state_t *st = __atomic_load_n(&xp_ctx.ptl, __ATOMIC_ACQUIRE);
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    if (st->init_count == 0) {
        pthread_mutex_unlock(&st->lock);
        return;
    }
    if (st->init_count > 1) {
        __atomic_sub_fetch(&st->init_count, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&st->lock);
        return;
    }
    /* Last reference: let the transports drain what is in flight, stop the
     * progress thread, then free every NI the application left open. */
    xp_md_drain(-1, XP_MD_DRAIN_MS);
    xp_ptl_interrupt();
    xp_ptl_progress_stop();
    for (int i = 0; i < 100 && xp_ptl_progress() > 0; i++)
        ;
    __atomic_store_n(&st->init_count, 0, __ATOMIC_RELEASE);
    xp_put_memo_forget(st); /* its MDs, maps and routes go now */
    for (int s = 0; s < XP_PTL_NI_SLOTS; s++) {
        if (st->ni[s]) {
            xp_ni_destroy(st->ni[s]);
            st->ni[s] = NULL;
        }
    }
    xp_eng_flush_deferred();
    xp_tl_fini();
    st->own_window = NULL; /* (the NIs above closed their descriptors) */
    tables_fini(st);
    xp_ptl_objects_fini(); /* CT and EQ tables, with any CT/EQ left allocated */
    pthread_mutex_unlock(&st->lock);
    xp_finalize();
}

int PtlAbort(void)
{
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    xp_ptl_abort();
    return PTL_OK;
}

int PtlAtomicSync(void)
{
    xp_ptl_state_t *st;
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    /* Atomics are applied by this process's CPU: aligned 1-8 byte elements
     * with native atomic instructions, the rest under the atomic lock.
     * Taking the lock once (no locked atomic is half done after it) and a
     * full fence order every completed atomic before the caller's later
     * host accesses. */
    st = xp_ptl_state();
    pthread_mutex_lock(&st->atomic_lock);
    xp_fence();
    pthread_mutex_unlock(&st->atomic_lock);
    return PTL_OK;
}
