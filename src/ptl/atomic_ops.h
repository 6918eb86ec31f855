/*
 * ptl/atomic_ops.h - the arithmetic of Portals atomic operations.
 *
 * Pure functions: no engine state. The engine calls xp_atomic_check() when an
 * application starts an atomic (PtlAtomic / PtlFetchAtomic / PtlSwap and the
 * triggered forms) and xp_atomic_apply() at the target when the operation is
 * delivered.
 *
 * Semantics (Portals 4 specification, "Atomic Operations"):
 *   - SUM PROD MIN MAX LAND LOR LXOR BAND BOR BXOR: target[i] = target[i] op
 *     data[i] for every element of the message. Logical ops yield 0 or 1.
 *     PROD of complex types is the complex product. Integer arithmetic wraps.
 *   - SWAP: target[i] = data[i] for every element.
 *   - CSWAP, CSWAP_NE/LE/LT/GE/GT: one element only. If (operand REL target)
 *     then target = data, where operand is the extra argument of PtlSwap
 *     (CSWAP: ==, NE: !=, LE: <=, LT: <, GE: >=, GT: >).
 *   - MSWAP: one element only. target = (operand & data) | (~operand & target).
 *   - Fetching forms return the values of the target before the operation.
 *
 * Valid (operation, datatype) pairs:
 *   - bitwise and logical ops (LAND LOR LXOR BAND BOR BXOR) and MSWAP: integer
 *     types only;
 *   - MIN MAX CSWAP_LE/LT/GE/GT: integer and real floating types, not complex;
 *   - SUM PROD SWAP CSWAP CSWAP_NE: every type.
 *   - PtlAtomic / PtlFetchAtomic take the non-swap operations; PtlSwap takes
 *     SWAP, CSWAP* and MSWAP only.
 */
#ifndef XP_PTL_ATOMIC_OPS_H
#define XP_PTL_ATOMIC_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "portals4.h"
#include "xportals/status.h"

/* Which API call an atomic comes from; 0 and 1 read as "fetching" = no/yes. */
typedef enum {
    XP_ATOMIC_PLAIN = 0, /* PtlAtomic, PtlTriggeredAtomic */
    XP_ATOMIC_FETCH = 1, /* PtlFetchAtomic, PtlTriggeredFetchAtomic */
    XP_ATOMIC_SWAP  = 2, /* PtlSwap, PtlTriggeredSwap */
} xp_atomic_kind_t;

/* Size in bytes of one element of dt (sizeof(long double) for PTL_LONG_DOUBLE,
 * twice the real size for complex types); 0 for an unknown datatype. */
size_t xp_atomic_type_size(ptl_datatype_t dt);

/* 1 if op is one of the swap family (SWAP, CSWAP*, MSWAP). */
int xp_atomic_is_swap(ptl_op_t op);

/* 1 if op may be applied to dt by a call of this kind, else 0. */
int xp_atomic_valid(ptl_op_t op, ptl_datatype_t dt, int kind);

/* Full argument check of an atomic message of len bytes: the pair is valid
 * for the kind, len is a multiple of the element size, and CSWAP* / MSWAP
 * carry exactly one element. XP_OK or XP_ERR_INVALID (len 0 is accepted). */
xp_status_t xp_atomic_check(ptl_op_t op, ptl_datatype_t dt, size_t len, int kind);

/* Apply op element-wise on len bytes at target.
 *   data     - the initiator's data (len bytes);
 *   operand  - the compare value (CSWAP*) or mask (MSWAP): one element; may be
 *              NULL for other operations;
 *   fetch_out - if not NULL, receives the len bytes of the target as they were
 *              before the operation (may not overlap target).
 * Elements of 1, 2, 4 or 8 bytes that are naturally aligned are updated with
 * atomic compare-and-swap, so concurrent xp_atomic_apply calls on the same
 * memory (several threads, or several processes on shared memory) never lose
 * an update; larger elements (double complex, long double) are not atomic
 * and need the caller's serialization.
 * Returns XP_OK, or XP_ERR_INVALID (invalid pair, bad length, missing
 * operand) without touching memory. */
xp_status_t xp_atomic_apply(ptl_op_t op, ptl_datatype_t dt, void *target, const void *data,
                            const void *operand, size_t len, void *fetch_out);

/* Same as xp_atomic_apply without the per-element compare-and-swap: plain
 * loads and stores that the compiler vectorises (several times faster on
 * long vectors). Only for callers that already serialize every access to
 * the target memory. */
xp_status_t xp_atomic_apply_plain(ptl_op_t op, ptl_datatype_t dt, void *target,
                                  const void *data, const void *operand, size_t len,
                                  void *fetch_out);

/* The common single-element case without the generic dispatch: one
 * aligned 4- or 8-byte integer and an operation with a native
 * read-modify-write instruction (SUM, BAND, BOR, BXOR, SWAP). Applies it,
 * stores the old value in fetch_out (if not NULL) and returns 1; returns 0
 * without touching memory for anything else (then use xp_atomic_apply).
 * The caller has validated (op, dt) for the call kind. */
static inline __attribute__((always_inline)) int
xp_atomic_apply_word(ptl_op_t op, ptl_datatype_t dt, void *target, const void *data, size_t len,
                     void *fetch_out)
{
    uint64_t x, old;
    size_t size = (dt == PTL_INT64_T || dt == PTL_UINT64_T)   ? 8
                  : (dt == PTL_INT32_T || dt == PTL_UINT32_T) ? 4
                                                              : 0;
    if (size == 0 || len != size || ((uintptr_t)target % size) != 0)
        return 0;
    /* Copies of a constant size: single moves, no library call. */
    if (size == 8) {
        uint64_t *p = target;
        __builtin_memcpy(&x, data, 8);
        switch (op) {
        case PTL_SUM: old = __atomic_fetch_add(p, x, __ATOMIC_ACQ_REL); break;
        case PTL_BAND: old = __atomic_fetch_and(p, x, __ATOMIC_ACQ_REL); break;
        case PTL_BOR: old = __atomic_fetch_or(p, x, __ATOMIC_ACQ_REL); break;
        case PTL_BXOR: old = __atomic_fetch_xor(p, x, __ATOMIC_ACQ_REL); break;
        case PTL_SWAP: old = __atomic_exchange_n(p, x, __ATOMIC_ACQ_REL); break;
        default: return 0;
        }
        if (fetch_out)
            __builtin_memcpy(fetch_out, &old, 8);
    } else {
        uint32_t *p = target, y, o;
        __builtin_memcpy(&y, data, 4);
        switch (op) {
        case PTL_SUM: o = __atomic_fetch_add(p, y, __ATOMIC_ACQ_REL); break;
        case PTL_BAND: o = __atomic_fetch_and(p, y, __ATOMIC_ACQ_REL); break;
        case PTL_BOR: o = __atomic_fetch_or(p, y, __ATOMIC_ACQ_REL); break;
        case PTL_BXOR: o = __atomic_fetch_xor(p, y, __ATOMIC_ACQ_REL); break;
        case PTL_SWAP: o = __atomic_exchange_n(p, y, __ATOMIC_ACQ_REL); break;
        default: return 0;
        }
        if (fetch_out)
            __builtin_memcpy(fetch_out, &o, 4);
    }
    return 1;
}

/* Names for messages and tests: "PTL_SUM", "PTL_INT32_T"; "?" if unknown. */
const char *xp_atomic_op_name(ptl_op_t op);
const char *xp_atomic_type_name(ptl_datatype_t dt);

#endif
