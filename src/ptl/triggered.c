/*
 * ptl/triggered.c - PtlTriggered*: record the call, issue it when released.
 */
#include "ptl/triggered.h"

#include <stdlib.h>
#include <string.h>

#include "portals4_xtq.h"
#include "ptl/atomic_ops.h"
#include "ptl/ct.h"
#include "ptl/engine.h" /* xp_eng_put_gather, XP_PKT_F_XTQ */
#include "ptl/md.h"
#include "util/log.h"
#include "util/pool.h"

/* The per-thread work list of released operations (see triggered.h). It is
 * thread-private scratch state, not shared: a thread that is already issuing
 * appends, the outermost call drains. */
typedef struct trig_work {
    xp_trig_t *head, *tail;
    int draining;
    int deferred; /* xp_trig_defer_begin depth */
} trig_work_t;

/* initial-exec: every packet handler touches it (xp_trig_defer_begin/end),
 * and the default model for a shared library calls __tls_get_addr each time;
 * 24 bytes fit glibc's static TLS reserve even when libportals is dlopen'ed. */
static __thread trig_work_t tls_work __attribute__((tls_model("initial-exec")));

static void trig_free(xp_trig_t *t, int release_ni)
{
    if (release_ni)
        xp_ni_obj_release(t->ni, XP_NI_OBJ_TRIGGERED);
    free(t);
}

void xp_trig_discard(xp_trig_t *list, int release_ni)
{
    while (list) {
        xp_trig_t *next = list->next;
        if (list->kind == XP_TRIG_CALL && list->call.drop)
            list->call.drop(list->call.arg, release_ni);
        trig_free(list, release_ni);
        list = next;
    }
}

static void ct_op(xp_trig_t *t)
{
    xp_ct_t *ct = xp_ct_from_handle(t->ct);

    if (!ct) { /* freed while the operation waited: nothing to change */
        xp_debug("triggered CT operation on a freed CT %#x dropped", t->ct);
        return;
    }
    if (t->kind == XP_TRIG_CTINC)
        xp_ct_add(ct, t->value.success, t->value.failure);
    else
        xp_ct_set(ct, t->value);
}

static void issue(xp_trig_t *t)
{
    const void *operand = t->has_operand ? t->operand : NULL;
    int rc = PTL_OK;

    switch (t->kind) {
    case XP_TRIG_PUT:
        rc = PtlPut(t->md, t->local_offset, t->length, t->ack_req, t->target, t->pt_index,
                    t->match_bits, t->remote_offset, t->user_ptr, t->hdr_data);
        break;
    case XP_TRIG_GET:
        rc = PtlGet(t->md, t->local_offset, t->length, t->target, t->pt_index, t->match_bits,
                    t->remote_offset, t->user_ptr);
        break;
    case XP_TRIG_ATOMIC:
        rc = PtlAtomic(t->md, t->local_offset, t->length, t->ack_req, t->target, t->pt_index,
                       t->match_bits, t->remote_offset, t->user_ptr, t->hdr_data, t->op, t->dt);
        break;
    case XP_TRIG_FETCH:
        rc = PtlFetchAtomic(t->get_md, t->local_get_offset, t->md, t->local_offset, t->length,
                            t->target, t->pt_index, t->match_bits, t->remote_offset,
                            t->user_ptr, t->hdr_data, t->op, t->dt);
        break;
    case XP_TRIG_SWAP:
        rc = PtlSwap(t->get_md, t->local_get_offset, t->md, t->local_offset, t->length,
                     t->target, t->pt_index, t->match_bits, t->remote_offset, t->user_ptr,
                     t->hdr_data, operand, t->op, t->dt);
        break;
    case XP_TRIG_CTINC:
    case XP_TRIG_CTSET:
        ct_op(t);
        break;
    case XP_TRIG_XTQPUT:
        rc = xp_eng_put_gather(t->md, t->local_offset, t->length, t->get_md, t->local_get_offset,
                               t->length2, t->ack_req, t->target, t->pt_index, t->match_bits,
                               t->remote_offset, t->user_ptr, t->hdr_data, XP_PKT_F_XTQ);
        break;
    case XP_TRIG_CALL:
        rc = t->call.fire(t->call.arg);
        break;
    }
    if (rc != PTL_OK)
        xp_warn("triggered operation (kind %d, threshold %llu) failed to issue: rc %d",
                (int)t->kind, (unsigned long long)t->threshold, rc);
}

static void drain(trig_work_t *w)
{
    w->draining = 1;
    while (w->head) {
        xp_trig_t *t = w->head;
        w->head = t->next;
        if (!w->head)
            w->tail = NULL;
        t->next = NULL;
        issue(t);
        trig_free(t, 1);
    }
    w->draining = 0;
}

void xp_trig_run(xp_trig_t *ready)
{
    trig_work_t *w = &tls_work;
    xp_trig_t *last = ready;

    if (!ready)
        return;
    while (last->next)
        last = last->next;
    if (w->tail)
        w->tail->next = ready;
    else
        w->head = ready;
    w->tail = last;
    /* An outer call on this thread issues them, in order: the one that is
     * draining, or xp_trig_defer_end once the caller's PT lock is gone. */
    if (w->draining || w->deferred)
        return;
    drain(w);
}

void xp_trig_defer_begin(void)
{
    tls_work.deferred++;
}

void xp_trig_defer_end(void)
{
    trig_work_t *w = &tls_work;

    if (--w->deferred == 0 && !w->draining && w->head)
        drain(w);
}

/* ------------------------------------------------------------------ API */

/* Allocate a record for an operation on NI ni, counted against its limit. */
static int trig_new(xp_ni_t *ni, xp_trig_kind_t kind, ptl_size_t threshold, xp_trig_t **out)
{
    xp_status_t st;
    xp_trig_t *t = NULL;

    st = xp_ni_obj_acquire(ni, XP_NI_OBJ_TRIGGERED);
    if (st != XP_OK)
        return xp_ptl_rc(st);
    t = xp_zalloc(sizeof(*t));
    if (!t) {
        xp_ni_obj_release(ni, XP_NI_OBJ_TRIGGERED);
        return PTL_NO_SPACE;
    }
    t->kind = kind;
    t->threshold = threshold;
    t->ni = ni;
    *out = t;
    return PTL_OK;
}

/* Attach t to its trigger CT (or issue it now); frees t on failure. */
static int trig_post(ptl_handle_ct_t trig_ct_handle, xp_trig_t *t)
{
    if (xp_ct_post_trig(trig_ct_handle, t) != XP_OK) {
        trig_free(t, 1);
        return PTL_ARG_INVALID;
    }
    return PTL_OK;
}

/* The NI of the trigger CT: every triggered call starts here. */
static int trig_ni(ptl_handle_ct_t trig_ct_handle, xp_ni_t **ni)
{
    xp_ct_t *ct;

    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    ct = xp_ct_from_handle(trig_ct_handle);
    if (!ct)
        return PTL_ARG_INVALID;
    *ni = xp_ct_ni(ct);
    return PTL_OK;
}

/* A data operation's local side, checked at the call as the immediate
 * call checks it: an MD, [off, off + len) inside it, len within `limit`
 * (NULL: the MD's NI's message size), a target that NI can address. The
 * call that issues the operation checks again when it fires (the MD may be
 * gone by then), but what fails there is lost without an event: an
 * argument that is already wrong must fail here, with PTL_ARG_INVALID. */
static int md_args_ok(ptl_handle_md_t h, ptl_size_t off, ptl_size_t len,
                      const ptl_size_t *limit, ptl_process_t target)
{
    const xp_md_t *md = xp_md_from_handle(h);
    if (!md || !xp_region_holds(&md->region, off, len))
        return 0;
    if (len > (limit ? *limit : md->ni->limits.max_msg_size))
        return 0;
    return xp_ni_target_rank(md->ni, target) >= 0;
}

/* Where a recorded data operation goes: the arguments every kind shares. */
static void set_dest(xp_trig_t *t, ptl_process_t target_id, ptl_pt_index_t pt_index,
                     ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                     ptl_hdr_data_t hdr_data)
{
    t->target = target_id;
    t->pt_index = pt_index;
    t->match_bits = match_bits;
    t->remote_offset = remote_offset;
    t->user_ptr = user_ptr;
    t->hdr_data = hdr_data;
}

int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                    ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                    ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                    ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle,
                    ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    if (!md_args_ok(md_handle, local_offset, length, NULL, target_id) ||
        (unsigned)ack_req > PTL_OC_ACK_REQ)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, XP_TRIG_PUT, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->md = md_handle;
    t->local_offset = local_offset;
    t->length = length;
    t->ack_req = ack_req;
    set_dest(t, target_id, pt_index, match_bits, remote_offset, user_ptr, hdr_data);
    return trig_post(trig_ct_handle, t);
}

int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                    ptl_process_t target_id, ptl_pt_index_t pt_index,
                    ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                    ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    if (!md_args_ok(md_handle, local_offset, length, NULL, target_id))
        return PTL_ARG_INVALID;
    rc = trig_new(ni, XP_TRIG_GET, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->md = md_handle;
    t->local_offset = local_offset;
    t->length = length;
    set_dest(t, target_id, pt_index, match_bits, remote_offset, user_ptr, 0);
    return trig_post(trig_ct_handle, t);
}

int PtlTriggeredAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                       ptl_ack_req_t ack_req, ptl_process_t target_id,
                       ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                       ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                       ptl_op_t operation, ptl_datatype_t datatype,
                       ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    if (!md_args_ok(md_handle, local_offset, length, &ni->limits.max_atomic_size, target_id) ||
        (unsigned)ack_req > PTL_OC_ACK_REQ ||
        xp_atomic_check(operation, datatype, length, XP_ATOMIC_PLAIN) != XP_OK)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, XP_TRIG_ATOMIC, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->md = md_handle;
    t->local_offset = local_offset;
    t->length = length;
    t->ack_req = ack_req;
    set_dest(t, target_id, pt_index, match_bits, remote_offset, user_ptr, hdr_data);
    t->op = operation;
    t->dt = datatype;
    return trig_post(trig_ct_handle, t);
}

/* Shared by TriggeredFetchAtomic and TriggeredSwap. */
static int trig_fetch_like(xp_trig_kind_t kind, ptl_handle_md_t get_md,
                           ptl_size_t local_get_offset, ptl_handle_md_t put_md,
                           ptl_size_t local_put_offset, ptl_size_t length,
                           ptl_process_t target_id, ptl_pt_index_t pt_index,
                           ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                           void *user_ptr, ptl_hdr_data_t hdr_data, const void *operand,
                           ptl_op_t operation, ptl_datatype_t datatype,
                           ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    int akind = kind == XP_TRIG_SWAP ? XP_ATOMIC_SWAP : XP_ATOMIC_FETCH;
    size_t esize = xp_atomic_type_size(datatype);
    xp_ni_t *ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    const ptl_size_t *lim = &ni->limits.max_fetch_atomic_size;
    if (!md_args_ok(get_md, local_get_offset, length, lim, target_id) ||
        !md_args_ok(put_md, local_put_offset, length, lim, target_id) ||
        xp_atomic_check(operation, datatype, length, akind) != XP_OK)
        return PTL_ARG_INVALID;
    /* CSWAP* and MSWAP need their operand; SWAP ignores it. */
    if (kind == XP_TRIG_SWAP && operation != PTL_SWAP && !operand)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, kind, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->get_md = get_md;
    t->local_get_offset = local_get_offset;
    t->md = put_md;
    t->local_offset = local_put_offset;
    t->length = length;
    set_dest(t, target_id, pt_index, match_bits, remote_offset, user_ptr, hdr_data);
    t->op = operation;
    t->dt = datatype;
    /* The operand is read when the operation fires, but the caller's buffer
     * may be gone by then: keep a copy (one element). */
    if (kind == XP_TRIG_SWAP && operand && esize <= sizeof(t->operand)) {
        memcpy(t->operand, operand, esize);
        t->has_operand = 1;
    }
    return trig_post(trig_ct_handle, t);
}

int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                            ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                            ptl_size_t length, ptl_process_t target_id,
                            ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                            ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                            ptl_op_t operation, ptl_datatype_t datatype,
                            ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    return trig_fetch_like(XP_TRIG_FETCH, get_md_handle, local_get_offset, put_md_handle,
                           local_put_offset, length, target_id, pt_index, match_bits,
                           remote_offset, user_ptr, hdr_data, NULL, operation, datatype,
                           trig_ct_handle, threshold);
}

int PtlTriggeredSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                     ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                     ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                     ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                     ptl_hdr_data_t hdr_data, const void *operand, ptl_op_t operation,
                     ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle,
                     ptl_size_t threshold)
{
    return trig_fetch_like(XP_TRIG_SWAP, get_md_handle, local_get_offset, put_md_handle,
                           local_put_offset, length, target_id, pt_index, match_bits,
                           remote_offset, user_ptr, hdr_data, operand, operation, datatype,
                           trig_ct_handle, threshold);
}

/* XTQ extension (declared in portals4_xtq.h): PtlXtqPut released by a CT. */
int PtlTriggeredXtqPut(ptl_handle_md_t cmd_md_handle, ptl_size_t cmd_offset, ptl_size_t cmd_length,
                       ptl_handle_md_t payload_md_handle, ptl_size_t payload_offset,
                       ptl_size_t payload_length, ptl_ack_req_t ack_req, ptl_process_t target_id,
                       ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                       ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                       ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    if (!md_args_ok(cmd_md_handle, cmd_offset, cmd_length, NULL, target_id) ||
        (payload_length &&
         !md_args_ok(payload_md_handle, payload_offset, payload_length, NULL, target_id)) ||
        (ack_req != PTL_ACK_REQ && ack_req != PTL_CT_ACK_REQ) || cmd_length < PTL_XTQ_CMD_SIZE)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, XP_TRIG_XTQPUT, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->md = cmd_md_handle;
    t->local_offset = cmd_offset;
    t->length = cmd_length;
    t->get_md = payload_md_handle;
    t->local_get_offset = payload_offset;
    t->length2 = payload_length;
    t->ack_req = ack_req;
    set_dest(t, target_id, pt_index, match_bits, remote_offset, user_ptr, hdr_data);
    return trig_post(trig_ct_handle, t);
}

int xp_trig_post_call(xp_ni_t *ni, ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold,
                      const xp_trig_call_t *call)
{
    xp_ni_t *ct_ni;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ct_ni);

    if (rc != PTL_OK)
        return rc;
    if (ct_ni != ni || !call || !call->fire)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, XP_TRIG_CALL, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->call = *call;
    return trig_post(trig_ct_handle, t);
}

/* TriggeredCTInc / TriggeredCTSet: both CTs live on the same NI. */
static int trig_ct_op(xp_trig_kind_t kind, ptl_handle_ct_t ct_handle, ptl_ct_event_t value,
                      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    xp_ni_t *ni;
    xp_ct_t *ct;
    xp_trig_t *t = NULL;
    int rc = trig_ni(trig_ct_handle, &ni);

    if (rc != PTL_OK)
        return rc;
    ct = xp_ct_from_handle(ct_handle);
    if (!ct || xp_ct_ni(ct) != ni)
        return PTL_ARG_INVALID;
    if (kind == XP_TRIG_CTINC && value.success && value.failure)
        return PTL_ARG_INVALID;
    rc = trig_new(ni, kind, threshold, &t);
    if (rc != PTL_OK)
        return rc;
    t->ct = ct_handle;
    t->value = value;
    return trig_post(trig_ct_handle, t);
}

int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment,
                      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    return trig_ct_op(XP_TRIG_CTINC, ct_handle, increment, trig_ct_handle, threshold);
}

int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct,
                      ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    return trig_ct_op(XP_TRIG_CTSET, ct_handle, new_ct, trig_ct_handle, threshold);
}
