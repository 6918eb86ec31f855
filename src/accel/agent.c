/* Agents: the kind-independent part (queues and signals owned by an agent).
 * Each kind supplies an xp_agent_ops_t (cpu_agent.c, cuda_loader.c). */
#include <stdlib.h>
#include <string.h>

#include "accel/accel_internal.h"
#include "util/log.h"

static const xp_agent_ops_t *ops_of(xp_agent_kind_t kind)
{
    switch (kind) {
    case XP_AGENT_CPU:  return &xp_agent_cpu_ops;
    case XP_AGENT_CUDA: return &xp_agent_cuda_ops;
    }
    return NULL;
}

xp_status_t xp_agent_create(const xp_agent_params_t *params, xp_agent_t **agent_out)
{
    if (!params || !agent_out || params->num_workers < 0 || params->num_workers > 1024)
        return XP_ERR_INVALID;
    const xp_agent_ops_t *ops = ops_of(params->kind);
    if (!ops || ops->size != sizeof(*ops))
        return XP_ERR_INVALID;
    xp_agent_t *agent = calloc(1, sizeof(*agent));
    if (!agent)
        return XP_ERR_NO_MEMORY;
    agent->ops = ops;
    agent->kind = params->kind;
    pthread_mutex_init(&agent->lock, NULL);
    xp_list_init(&agent->queues);
    xp_status_t st = ops->start(agent, params);
    if (st != XP_OK) {
        pthread_mutex_destroy(&agent->lock);
        free(agent);
        return st;
    }
    *agent_out = agent;
    return XP_OK;
}

void xp_agent_destroy(xp_agent_t *agent)
{
    if (!agent)
        return;
    for (;;) {
        pthread_mutex_lock(&agent->lock);
        xp_queue_t *q = xp_list_first_entry(&agent->queues, xp_queue_t, agent_link);
        pthread_mutex_unlock(&agent->lock);
        if (!q)
            break;
        xp_queue_destroy(q);
    }
    agent->ops->stop(agent);
    pthread_mutex_destroy(&agent->lock);
    free(agent);
}

xp_agent_kind_t xp_agent_kind(const xp_agent_t *agent)
{
    return agent->kind;
}

xp_status_t xp_agent_queue_create(xp_agent_t *agent, uint32_t size, xp_queue_t **queue_out)
{
    size_t bytes = xp_queue_bytes(size);
    if (!agent || !queue_out || !bytes)
        return XP_ERR_INVALID;
    void *mem;
    xp_status_t st = agent->ops->queue_alloc(agent, bytes, &mem);
    if (st != XP_OK)
        return st;
    xp_queue_format(mem, bytes, size);
    xp_queue_t *q;
    st = xp_queue_handle_new(mem, bytes, XP_QUEUE_MEM_AGENT, &q);
    if (st != XP_OK)
        goto err_free_mem;
    q->agent = agent;
    st = agent->ops->queue_added(agent, q);
    if (st != XP_OK)
        goto err_free_handle;
    pthread_mutex_lock(&agent->lock);
    xp_list_push_back(&agent->queues, &q->agent_link);
    pthread_mutex_unlock(&agent->lock);
    *queue_out = q;
    return XP_OK;

err_free_handle:
    free(q);
err_free_mem:
    agent->ops->queue_free(agent, mem, bytes);
    return st;
}

xp_status_t xp_agent_signal_create(xp_agent_t *agent, int64_t value, xp_signal_t **signal_out)
{
    if (!agent || !signal_out)
        return XP_ERR_INVALID;
    xp_signal_t *sig;
    xp_status_t st = agent->ops->signal_alloc(agent, &sig);
    if (st != XP_OK)
        return st;
    xp_signal_init(sig, value, agent->kind == XP_AGENT_CUDA ? XP_SIGNAL_F_DEVICE : 0);
    *signal_out = sig;
    return XP_OK;
}

void xp_agent_signal_destroy(xp_agent_t *agent, xp_signal_t *signal)
{
    if (agent && signal)
        agent->ops->signal_free(agent, signal);
}
