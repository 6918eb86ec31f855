/* The XTQ rewrite (paper §III-C): turn the indices an initiator wrote into
 * target addresses, then enqueue. The rewrite is pure so it can be tested
 * against hand-built packets; the enqueue never blocks (a full queue is a
 * result the engine reports to the initiator). */
#include <string.h>

#include "xtq/xtq.h"

static xp_xtq_result_t rewrite_kernel(xp_xtq_tables_t *t, xp_aql_packet_t *p, uintptr_t landed,
                                      size_t landed_len, xp_xtq_rewrite_t *rw)
{
    uint64_t args_len = p->kernel.reserved2;
    if (args_len > landed_len - PTL_XTQ_CMD_SIZE)
        return XP_XTQ_BAD_COMMAND;
    uint64_t index = p->kernel.kernel_object;
    if (index >= PTL_XTQ_TABLE_SIZE || !t->kernel[index].kernel_object)
        return XP_XTQ_BAD_INDEX;
    const xp_xtq_kernel_entry_t *e = &t->kernel[index];
    uintptr_t kernarg = landed + PTL_XTQ_CMD_SIZE;
    p->kernel.kernel_object = e->kernel_object;
    p->kernel.kernarg_address = args_len ? kernarg : 0;
    p->kernel.completion_signal = (uint64_t)(uintptr_t)e->signal;
    rw->kernarg = (uint64_t *)kernarg;
    rw->npatch = args_len >= 16 ? 2 : args_len >= 8 ? 1 : 0;
    rw->patch[0] = (uint64_t)(uintptr_t)e->target_buffer;
    rw->patch[1] = kernarg + args_len; /* the payload */
    return XP_XTQ_OK;
}

static xp_xtq_result_t rewrite_function(xp_xtq_tables_t *t, xp_aql_packet_t *p, uintptr_t landed,
                                        xp_xtq_rewrite_t *rw)
{
    uint64_t index = p->agent.function;
    if (index >= PTL_XTQ_TABLE_SIZE || !t->function[index].function)
        return XP_XTQ_BAD_INDEX;
    const xp_xtq_function_entry_t *e = &t->function[index];
    p->agent.function = (uint64_t)(uintptr_t)e->function;
    p->agent.arg[0] = (uint64_t)(uintptr_t)e->target_buffer;
    p->agent.arg[1] = landed + PTL_XTQ_CMD_SIZE;
    p->agent.completion_signal = (uint64_t)(uintptr_t)e->signal;
    /* The initiator cannot know a target address to return results to. */
    p->agent.return_address = 0;
    rw->kernarg = NULL;
    rw->npatch = 0;
    return XP_XTQ_OK;
}

xp_xtq_result_t xp_xtq_rewrite(xp_xtq_tables_t *t, const void *landed, size_t landed_len,
                               xp_xtq_rewrite_t *rw_out)
{
    if (!t || !landed || landed_len < PTL_XTQ_CMD_SIZE)
        return XP_XTQ_BAD_COMMAND;
    xp_xtq_rewrite_t rw;
    memcpy(&rw.packet, landed, sizeof(rw.packet));
    xp_aql_packet_t *p = &rw.packet;
    xp_aql_type_t type = xp_aql_header_type(p->header);
    if (type != XP_AQL_TYPE_KERNEL_DISPATCH && type != XP_AQL_TYPE_AGENT_DISPATCH)
        return XP_XTQ_BAD_COMMAND;
    uint16_t qindex = xp_xtq_cmd_queue(p);
    xp_xtq_result_t r;
    pthread_mutex_lock(&t->lock);
    rw.queue = qindex < PTL_XTQ_TABLE_SIZE ? t->queue[qindex] : NULL;
    if (!rw.queue)
        r = XP_XTQ_BAD_INDEX;
    else if (type == XP_AQL_TYPE_KERNEL_DISPATCH)
        r = rewrite_kernel(t, p, (uintptr_t)landed, landed_len, &rw);
    else
        r = rewrite_function(t, p, (uintptr_t)landed, &rw);
    pthread_mutex_unlock(&t->lock);
    if (r == XP_XTQ_OK)
        *rw_out = rw;
    return r;
}

xp_xtq_result_t xp_xtq_enqueue(const xp_xtq_rewrite_t *rw)
{
    for (int i = 0; i < rw->npatch; i++)
        rw->kernarg[i] = rw->patch[i];
    xp_status_t st = xp_queue_try_push(rw->queue, &rw->packet, NULL);
    if (st == XP_ERR_AGAIN)
        return XP_XTQ_QUEUE_FULL;
    return st == XP_OK ? XP_XTQ_OK : XP_XTQ_BAD_COMMAND;
}

xp_xtq_result_t xp_xtq_process(xp_xtq_tables_t *t, void *landed, size_t landed_len)
{
    xp_xtq_rewrite_t rw;
    xp_xtq_result_t r = xp_xtq_rewrite(t, landed, landed_len, &rw);
    return r == XP_XTQ_OK ? xp_xtq_enqueue(&rw) : r;
}

ptl_ni_fail_t xp_xtq_fail_type(xp_xtq_result_t r)
{
    switch (r) {
    case XP_XTQ_OK:          return PTL_NI_OK;
    case XP_XTQ_QUEUE_FULL:  return PTL_NI_XTQ_QUEUE_FULL;
    case XP_XTQ_BAD_INDEX:   return PTL_NI_XTQ_BAD_INDEX;
    case XP_XTQ_BAD_COMMAND: return PTL_NI_XTQ_BAD_COMMAND;
    }
    return PTL_NI_XTQ_BAD_COMMAND;
}
