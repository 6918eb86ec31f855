/* XTQ lookup tables: index -> target-local resource, per NI. */
#include <stdlib.h>

#include "xtq/xtq.h"

xp_status_t xp_xtq_tables_create(xp_xtq_tables_t **tables_out)
{
    xp_xtq_tables_t *t = calloc(1, sizeof(*t));
    if (!t)
        return XP_ERR_NO_MEMORY;
    pthread_mutex_init(&t->lock, NULL);
    *tables_out = t;
    return XP_OK;
}

void xp_xtq_tables_destroy(xp_xtq_tables_t *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static int bad_index(uint64_t index)
{
    return index >= PTL_XTQ_TABLE_SIZE;
}

xp_status_t xp_xtq_tables_set_kernel(xp_xtq_tables_t *t, uint64_t index, uint64_t kernel_object,
                                     void *target_buffer, xp_signal_t *signal)
{
    if (!t || bad_index(index) || !kernel_object)
        return XP_ERR_INVALID;
    xp_status_t st = XP_ERR_EXISTS;
    pthread_mutex_lock(&t->lock);
    xp_xtq_kernel_entry_t *e = &t->kernel[index];
    if (!e->kernel_object) {
        *e = (xp_xtq_kernel_entry_t){kernel_object, target_buffer, signal};
        st = XP_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

xp_status_t xp_xtq_tables_set_function(xp_xtq_tables_t *t, uint64_t index, xp_agent_fn_t fn,
                                       void *target_buffer, xp_signal_t *signal)
{
    if (!t || bad_index(index) || !fn)
        return XP_ERR_INVALID;
    xp_status_t st = XP_ERR_EXISTS;
    pthread_mutex_lock(&t->lock);
    xp_xtq_function_entry_t *e = &t->function[index];
    if (!e->function) {
        *e = (xp_xtq_function_entry_t){fn, target_buffer, signal};
        st = XP_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

xp_status_t xp_xtq_tables_set_queue(xp_xtq_tables_t *t, uint64_t index, xp_queue_t *queue)
{
    if (!t || bad_index(index) || !queue)
        return XP_ERR_INVALID;
    xp_status_t st = XP_ERR_EXISTS;
    pthread_mutex_lock(&t->lock);
    if (!t->queue[index]) {
        t->queue[index] = queue;
        st = XP_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

xp_status_t xp_xtq_tables_clear_kernel(xp_xtq_tables_t *t, uint64_t index)
{
    if (!t || bad_index(index))
        return XP_ERR_INVALID;
    pthread_mutex_lock(&t->lock);
    xp_status_t st = t->kernel[index].kernel_object ? XP_OK : XP_ERR_NOT_FOUND;
    t->kernel[index] = (xp_xtq_kernel_entry_t){0};
    pthread_mutex_unlock(&t->lock);
    return st;
}

xp_status_t xp_xtq_tables_clear_function(xp_xtq_tables_t *t, uint64_t index)
{
    if (!t || bad_index(index))
        return XP_ERR_INVALID;
    pthread_mutex_lock(&t->lock);
    xp_status_t st = t->function[index].function ? XP_OK : XP_ERR_NOT_FOUND;
    t->function[index] = (xp_xtq_function_entry_t){0};
    pthread_mutex_unlock(&t->lock);
    return st;
}

xp_status_t xp_xtq_tables_clear_queue(xp_xtq_tables_t *t, uint64_t index)
{
    if (!t || bad_index(index))
        return XP_ERR_INVALID;
    pthread_mutex_lock(&t->lock);
    xp_status_t st = t->queue[index] ? XP_OK : XP_ERR_NOT_FOUND;
    t->queue[index] = NULL;
    pthread_mutex_unlock(&t->lock);
    return st;
}
