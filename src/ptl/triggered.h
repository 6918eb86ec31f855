/*
 * ptl/triggered.h - triggered operations (PtlTriggered*, PtlCTCancelTriggered).
 *
 * Each CT keeps its pending operations in a list sorted by threshold; equal
 * thresholds keep the order of the calls, so operations released together
 * are issued in the order the application posted them. An operation is
 * released when success + failure of its CT reaches the threshold; if that is
 * already true when it is posted, it is issued at once by the posting call.
 *
 * Issuing: operations are collected under the CT lock, the lock is dropped,
 * then each is issued through the ordinary public call (PtlPut, PtlGet,
 * PtlAtomic, PtlFetchAtomic, PtlSwap) with the stored arguments, or applied
 * to its CT (CTInc, CTSet). A thread keeps one work list: a CT update made
 * while that thread is already issuing triggered operations (a triggered
 * CTInc, or the engine counting a loopback delivery inside PtlPut) only
 * appends to the list, so chains of any depth run in a loop, never by
 * recursion. An issue that fails (e.g. its MD was released meanwhile) is
 * logged and dropped.
 *
 * Each pending operation counts against the NI's max_triggered_ops
 * (PTL_NO_SPACE beyond it).
 */
#ifndef XP_PTL_TRIGGERED_H
#define XP_PTL_TRIGGERED_H

#include "portals4.h"
#include "ptl/ni.h"

typedef enum {
    XP_TRIG_PUT,
    XP_TRIG_GET,
    XP_TRIG_ATOMIC,
    XP_TRIG_FETCH,
    XP_TRIG_SWAP,
    XP_TRIG_CTINC,
    XP_TRIG_CTSET,
    XP_TRIG_XTQPUT, /* PtlTriggeredXtqPut (xtq/): a gathering put, see engine.h */
    XP_TRIG_CALL,   /* another module's operation (list operations, pt.c): see
                     * xp_trig_post_call */
} xp_trig_kind_t;

/* An operation of another module, released like any triggered operation.
 * fire(arg) runs it (outside every lock, from the work list; a negative or
 * PTL_* error is only logged). drop(arg, release_ni) runs instead when the
 * operation is discarded unissued (PtlCTFree, PtlCTCancelTriggered, NI
 * teardown; release_ni as for xp_trig_discard); NULL when there is nothing
 * to free. Exactly one of the two runs, once. */
typedef struct xp_trig_call {
    int (*fire)(void *arg);
    void (*drop)(void *arg, int release_ni);
    void *arg;
} xp_trig_call_t;

/* One pending operation: the arguments of the call it will make. */
typedef struct xp_trig {
    struct xp_trig *next;  /* CT list (sorted by threshold) or work list */
    ptl_size_t threshold;
    xp_trig_kind_t kind;
    xp_ni_t *ni;           /* counted against ni's XP_NI_OBJ_TRIGGERED */
    ptl_handle_md_t md;    /* put MD (put, atomic, fetch, swap) or get MD (get) */
    ptl_handle_md_t get_md; /* fetch, swap: the MD receiving the old values;
                             * XTQ put: the payload MD */
    ptl_size_t local_offset;
    ptl_size_t local_get_offset; /* XTQ put: the payload offset */
    ptl_size_t length2;    /* XTQ put: the payload length (length: command + arguments) */
    ptl_size_t length;
    ptl_ack_req_t ack_req;
    ptl_process_t target;
    ptl_pt_index_t pt_index;
    ptl_match_bits_t match_bits;
    ptl_size_t remote_offset;
    void *user_ptr;
    ptl_hdr_data_t hdr_data;
    ptl_op_t op;
    ptl_datatype_t dt;
    int has_operand;
    unsigned char operand[32]; /* swap operand: one element (<= long double complex) */
    ptl_handle_ct_t ct;    /* CTInc / CTSet: the CT to change */
    ptl_ct_event_t value;  /* CTInc: increment; CTSet: new value */
    xp_trig_call_t call;   /* XP_TRIG_CALL */
} xp_trig_t;

/* Issue a chain of released operations (linked through their `next`) and
 * everything they release in turn; frees them. Called by ct.c with no lock
 * held. */
void xp_trig_run(xp_trig_t *ready);
/* Counters updated while a PT lock is held (the packet handler, appends and
 * searches) must not issue operations under it: a triggered append takes
 * that PT lock, a put the transport's. Between begin and end, operations
 * released on this thread wait in its work list; the outermost end issues
 * them. Nests. */
void xp_trig_defer_begin(void);
void xp_trig_defer_end(void);
/* Free a chain of pending operations without issuing them (PtlCTFree,
 * PtlCTCancelTriggered, NI teardown); release_ni: give back their NI counts
 * (0 at library teardown, when the NIs are gone). */
void xp_trig_discard(xp_trig_t *list, int release_ni);

/* Post `call` on the CT of trig_ct_handle, released at `threshold`, counted
 * against the NI's max_triggered_ops like the PtlTriggered* calls. Returns a
 * PTL_* code: PTL_NO_INIT, PTL_ARG_INVALID (not a live CT, or the CT belongs
 * to another NI than ni), PTL_NO_SPACE. On success the call owns arg (it may
 * already have fired, by this call, when the threshold was reached); on
 * failure nothing ran and arg is still the caller's. */
int xp_trig_post_call(xp_ni_t *ni, ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold,
                      const xp_trig_call_t *call);

#endif
