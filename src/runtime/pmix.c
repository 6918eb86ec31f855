/*
 * PMIx bootstrap (built when libpmix is found): Open MPI's mpirun/prterun,
 * PRRTE and Slurm --mpi=pmix. Values travel as PMIx byte objects; our keys
 * get an "xp." prefix so they can never collide with PMIx's own "pmix.*".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "runtime/boot.h"
#include "util/context.h"
#include "util/log.h"

#define KEY_PREFIX "xp."

typedef struct pmix_state {
    pmix_proc_t me;
} pmix_state_t;

static xp_status_t from_pmix(pmix_status_t rc)
{
    switch (rc) {
    case PMIX_SUCCESS:
        return XP_OK;
    case PMIX_ERR_NOT_FOUND:
        return XP_ERR_NOT_FOUND;
    case PMIX_ERR_TIMEOUT:
        return XP_ERR_TIMEOUT;
    case PMIX_ERR_NOMEM:
        return XP_ERR_NO_MEMORY;
    case PMIX_ERR_BAD_PARAM:
        return XP_ERR_INVALID;
    default:
        return XP_ERR_IO;
    }
}

static void prefixed(const char *key, char *out, size_t len)
{
    snprintf(out, len, KEY_PREFIX "%s", key);
}

/* PMIx_Init and PMIx_Finalize count references, and only the last finalize
 * tells the launcher that the process finalized. A Portals client that never
 * calls PtlFini leaves ours held, and then an MPI library's finalize (the
 * same libpmix) is not the last: Open MPI's mpirun reported every rank
 * "exiting improperly" once its osc/portals4 component had called PtlInit,
 * which it never pairs with PtlFini. So the reference still held at exit
 * (or when this library is unloaded: atexit in a shared object runs then)
 * is given back here. */
static void pmix_at_exit(void)
{
    if (!xp_ctx.pmix_held)
        return;
    xp_ctx.pmix_held = 0;
    xp_ctx_drop_runtime_hooks(); /* Portals may be gone */
    PMIx_Finalize(NULL, 0);
}

static xp_status_t pmix_init(int timeout_s, void **state, xp_boot_info_t *info)
{
    pmix_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return XP_ERR_NO_MEMORY;
    pmix_status_t rc = PMIx_Init(&s->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        xp_error("PMIx_Init failed: %s", PMIx_Error_string(rc));
        free(s);
        return from_pmix(rc);
    }
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, s->me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *val = NULL;
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || !val || val->type != PMIX_UINT32) {
        xp_error("PMIx: cannot read the job size: %s", PMIx_Error_string(rc));
        if (val)
            PMIX_VALUE_RELEASE(val);
        PMIx_Finalize(NULL, 0);
        free(s);
        return rc != PMIX_SUCCESS ? from_pmix(rc) : XP_ERR_PROTOCOL;
    }
    info->size = (int)val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    xp_ctx.pmix_held = 1;
    if (!xp_ctx.pmix_atexit) {
        xp_ctx.pmix_atexit = 1;
        atexit(pmix_at_exit);
    }
    info->rank = (int)s->me.rank;
    snprintf(info->job_id, sizeof info->job_id, "%s", s->me.nspace);
    *state = s;
    return XP_OK;
}

static xp_status_t pmix_put(void *state, const char *key, const void *value, size_t len)
{
    char k[PMIX_MAX_KEYLEN + 1];
    static const char empty = 0;
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)(len ? value : &empty); /* PMIx copies it */
    v.data.bo.size = len;
    prefixed(key, k, sizeof k);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v);
    if (rc != PMIX_SUCCESS)
        xp_error("PMIx_Put(%s) failed: %s", k, PMIx_Error_string(rc));
    return from_pmix(rc);
}

static xp_status_t pmix_fence(void *state)
{
    pmix_status_t rc = PMIx_Commit();
    if (rc == PMIX_SUCCESS) {
        pmix_info_t info;
        bool collect = true;
        PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
        rc = PMIx_Fence(NULL, 0, &info, 1);
        PMIX_INFO_DESTRUCT(&info);
    }
    if (rc != PMIX_SUCCESS)
        xp_error("PMIx fence failed: %s", PMIx_Error_string(rc));
    return from_pmix(rc);
}

static xp_status_t pmix_get(void *state, int rank, const char *key, void *value, size_t *len)
{
    pmix_state_t *s = state;
    char k[PMIX_MAX_KEYLEN + 1];
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_info_t info;
    bool immediate = true; /* our contract: put, fence, get; never wait for a key */
    PMIX_LOAD_PROCID(&proc, s->me.nspace, (pmix_rank_t)rank);
    PMIX_INFO_LOAD(&info, PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
    prefixed(key, k, sizeof k);
    pmix_status_t rc = PMIx_Get(&proc, k, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        return rc == PMIX_ERR_NOT_FOUND ? XP_ERR_NOT_FOUND : from_pmix(rc);
    xp_status_t st = XP_OK;
    if (!val || val->type != PMIX_BYTE_OBJECT) {
        xp_error("PMIx: value of %s from rank %d is not a byte object", key, rank);
        st = XP_ERR_PROTOCOL;
    } else if (val->data.bo.size > *len) {
        st = XP_ERR_TRUNCATED;
    } else {
        if (val->data.bo.size)
            memcpy(value, val->data.bo.bytes, val->data.bo.size);
        *len = val->data.bo.size;
    }
    if (val)
        PMIX_VALUE_RELEASE(val);
    return st;
}

static xp_status_t pmix_barrier(void *state)
{
    pmix_status_t rc = PMIx_Fence(NULL, 0, NULL, 0);
    if (rc != PMIX_SUCCESS)
        xp_error("PMIx barrier failed: %s", PMIx_Error_string(rc));
    return from_pmix(rc);
}

static void pmix_abort(void *state, int code, const char *msg)
{
    PMIx_Abort(code, msg ? msg : "xp_abort", NULL, 0);
}

static void pmix_finalize(void *state)
{
    xp_ctx.pmix_held = 0;
    PMIx_Finalize(NULL, 0);
    free(state);
}

const xp_boot_ops_t xp_boot_pmix = {
    .name = "pmix",
    .init = pmix_init,
    .put = pmix_put,
    .fence = pmix_fence,
    .get = pmix_get,
    .barrier = pmix_barrier,
    .abort = pmix_abort,
    .finalize = pmix_finalize,
};
