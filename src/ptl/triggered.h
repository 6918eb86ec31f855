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
} xp_trig_kind_t;

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
} xp_trig_t;

/* Issue a chain of released operations (linked through their `next`) and
 * everything they release in turn; frees them. Called by ct.c with no lock
 * held. */
void xp_trig_run(xp_trig_t *ready);
/* Free a chain of pending operations without issuing them (PtlCTFree,
 * PtlCTCancelTriggered, NI teardown); release_ni: give back their NI counts
 * (0 at library teardown, when the NIs are gone). */
void xp_trig_discard(xp_trig_t *list, int release_ni);

#endif
