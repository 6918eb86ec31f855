/* Which lookup tables belong to which NI (xp_ctx.xtq), the registration API,
 * and the engine's delivery hook. */
#include <stdlib.h>

#include "xtq/xtq.h"
#include "xtq/registry.h"
#include "util/context.h"
#include "util/log.h"

#define MAX_NIS 16

struct xp_xtq_state {
    pthread_mutex_t lock;
    int n;
    ptl_handle_ni_t ni[MAX_NIS];
    xp_xtq_tables_t *tables[MAX_NIS];
};

/* Created on first use and published with a CAS: no global but the context. */
static struct xp_xtq_state *state_get(void)
{
    struct xp_xtq_state *s = __atomic_load_n(&xp_ctx.xtq, __ATOMIC_ACQUIRE);
    if (s)
        return s;
    struct xp_xtq_state *fresh = calloc(1, sizeof(*fresh));
    if (!fresh)
        return NULL;
    pthread_mutex_init(&fresh->lock, NULL);
    if (__atomic_compare_exchange_n(&xp_ctx.xtq, &s, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    pthread_mutex_destroy(&fresh->lock);
    free(fresh);
    return s;
}

xp_xtq_tables_t *xp_xtq_tables_of(ptl_handle_ni_t ni, int create)
{
    struct xp_xtq_state *s = state_get();
    if (!s)
        return NULL;
    xp_xtq_tables_t *t = NULL;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++)
        if (s->ni[i] == ni)
            t = s->tables[i];
    if (!t && create && s->n < MAX_NIS && xp_xtq_tables_create(&t) == XP_OK) {
        s->ni[s->n] = ni;
        s->tables[s->n++] = t;
        xp_xtq_install_hooks();
    }
    pthread_mutex_unlock(&s->lock);
    return t;
}

void xp_xtq_ni_fini(ptl_handle_ni_t ni)
{
    struct xp_xtq_state *s = __atomic_load_n(&xp_ctx.xtq, __ATOMIC_ACQUIRE);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n; i++) {
        if (s->ni[i] != ni)
            continue;
        xp_xtq_tables_destroy(s->tables[i]);
        s->n--;
        s->ni[i] = s->ni[s->n];
        s->tables[i] = s->tables[s->n];
        break;
    }
    pthread_mutex_unlock(&s->lock);
}

ptl_ni_fail_t xp_xtq_deliver(ptl_handle_ni_t ni, void *landed, size_t landed_len)
{
    xp_xtq_tables_t *t = xp_xtq_tables_of(ni, 0);
    if (!t)
        return PTL_NI_XTQ_BAD_INDEX; /* nothing was ever registered on this NI */
    xp_xtq_result_t r = xp_xtq_process(t, landed, landed_len);
    if (r != XP_XTQ_OK)
        xp_debug("XTQ delivery refused: ni_fail %u", (unsigned)xp_xtq_fail_type(r));
    return xp_xtq_fail_type(r);
}

/* ---- the public registration API ---- */

static int rc_of(xp_status_t st)
{
    switch (st) {
    case XP_OK:            return PTL_OK;
    case XP_ERR_EXISTS:    return PTL_IN_USE;
    case XP_ERR_NO_MEMORY: return PTL_NO_SPACE;
    default:               return PTL_ARG_INVALID;
    }
}

static xp_xtq_tables_t *tables_for_call(ptl_handle_ni_t ni, int create)
{
    if (!xp_xtq_ni_valid(ni))
        return NULL;
    return xp_xtq_tables_of(ni, create);
}

int PtlXtqRegisterKernel(ptl_handle_ni_t ni, ptl_size_t index, uint64_t kernel_object,
                         void *target_buffer, xp_signal_t *signal)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 1);
    return t ? rc_of(xp_xtq_tables_set_kernel(t, index, kernel_object, target_buffer, signal))
             : PTL_ARG_INVALID;
}

int PtlXtqRegisterFunction(ptl_handle_ni_t ni, ptl_size_t index, xp_agent_fn_t function,
                           void *target_buffer, xp_signal_t *signal)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 1);
    return t ? rc_of(xp_xtq_tables_set_function(t, index, function, target_buffer, signal))
             : PTL_ARG_INVALID;
}

int PtlXtqRegisterQueue(ptl_handle_ni_t ni, ptl_size_t index, xp_queue_t *queue)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 1);
    return t ? rc_of(xp_xtq_tables_set_queue(t, index, queue)) : PTL_ARG_INVALID;
}

int PtlXtqDeregisterKernel(ptl_handle_ni_t ni, ptl_size_t index)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 0);
    return t ? rc_of(xp_xtq_tables_clear_kernel(t, index)) : PTL_ARG_INVALID;
}

int PtlXtqDeregisterFunction(ptl_handle_ni_t ni, ptl_size_t index)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 0);
    return t ? rc_of(xp_xtq_tables_clear_function(t, index)) : PTL_ARG_INVALID;
}

int PtlXtqDeregisterQueue(ptl_handle_ni_t ni, ptl_size_t index)
{
    xp_xtq_tables_t *t = tables_for_call(ni, 0);
    return t ? rc_of(xp_xtq_tables_clear_queue(t, index)) : PTL_ARG_INVALID;
}
