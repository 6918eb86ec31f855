/*
 * ptl/atomic_ops.c - element-wise arithmetic of Portals atomics.
 *
 * One combine function per element type computes the new target value from
 * (old target, data, operand); the switch on the operation is loop invariant,
 * so the compiler unswitches the loops and vectorises the plain path.
 */
#include "ptl/atomic_ops.h"

#include <complex.h>
#include <stdint.h>
#include <string.h>

typedef float _Complex xp_fcomplex_t;
typedef double _Complex xp_dcomplex_t;
typedef long double _Complex xp_ldcomplex_t;

size_t xp_atomic_type_size(ptl_datatype_t dt)
{
    switch (dt) {
    case PTL_INT8_T: case PTL_UINT8_T: return 1;
    case PTL_INT16_T: case PTL_UINT16_T: return 2;
    case PTL_INT32_T: case PTL_UINT32_T: return 4;
    case PTL_INT64_T: case PTL_UINT64_T: return 8;
    case PTL_FLOAT: return sizeof(float);
    case PTL_DOUBLE: return sizeof(double);
    case PTL_LONG_DOUBLE: return sizeof(long double);
    case PTL_FLOAT_COMPLEX: return sizeof(xp_fcomplex_t);
    case PTL_DOUBLE_COMPLEX: return sizeof(xp_dcomplex_t);
    case PTL_LONG_DOUBLE_COMPLEX: return sizeof(xp_ldcomplex_t);
    default: return 0;
    }
}

typedef enum { CLASS_NONE, CLASS_INT, CLASS_REAL, CLASS_COMPLEX } type_class_t;

static type_class_t type_class(ptl_datatype_t dt)
{
    switch (dt) {
    case PTL_INT8_T: case PTL_UINT8_T: case PTL_INT16_T: case PTL_UINT16_T:
    case PTL_INT32_T: case PTL_UINT32_T: case PTL_INT64_T: case PTL_UINT64_T:
        return CLASS_INT;
    case PTL_FLOAT: case PTL_DOUBLE: case PTL_LONG_DOUBLE:
        return CLASS_REAL;
    case PTL_FLOAT_COMPLEX: case PTL_DOUBLE_COMPLEX: case PTL_LONG_DOUBLE_COMPLEX:
        return CLASS_COMPLEX;
    default:
        return CLASS_NONE;
    }
}

int xp_atomic_is_swap(ptl_op_t op)
{
    switch (op) {
    case PTL_SWAP: case PTL_CSWAP: case PTL_CSWAP_NE: case PTL_CSWAP_LE:
    case PTL_CSWAP_LT: case PTL_CSWAP_GE: case PTL_CSWAP_GT: case PTL_MSWAP:
        return 1;
    default:
        return 0;
    }
}

/* 1 if the operation works on one element only. */
static int single_element(ptl_op_t op)
{
    return xp_atomic_is_swap(op) && op != PTL_SWAP;
}

/* Bit mask of the type classes op accepts (1 << CLASS_x); 0: unknown op. */
static unsigned op_classes(ptl_op_t op)
{
    const unsigned i = 1u << CLASS_INT, r = 1u << CLASS_REAL, c = 1u << CLASS_COMPLEX;
    switch (op) {
    case PTL_SUM: case PTL_PROD: case PTL_SWAP: case PTL_CSWAP: case PTL_CSWAP_NE:
        return i | r | c;
    case PTL_MIN: case PTL_MAX: case PTL_CSWAP_LE: case PTL_CSWAP_LT:
    case PTL_CSWAP_GE: case PTL_CSWAP_GT:
        return i | r;
    case PTL_LAND: case PTL_LOR: case PTL_LXOR: case PTL_BAND: case PTL_BOR:
    case PTL_BXOR: case PTL_MSWAP:
        return i;
    default:
        return 0;
    }
}

static int pair_valid(ptl_op_t op, ptl_datatype_t dt)
{
    type_class_t cls = type_class(dt);
    return cls != CLASS_NONE && (op_classes(op) & (1u << cls)) != 0;
}

int xp_atomic_valid(ptl_op_t op, ptl_datatype_t dt, int kind)
{
    if (!pair_valid(op, dt))
        return 0;
    switch (kind) {
    case XP_ATOMIC_PLAIN:
    case XP_ATOMIC_FETCH:
        return !xp_atomic_is_swap(op);
    case XP_ATOMIC_SWAP:
        return xp_atomic_is_swap(op);
    default:
        return 0;
    }
}

xp_status_t xp_atomic_check(ptl_op_t op, ptl_datatype_t dt, size_t len, int kind)
{
    size_t size;

    if (!xp_atomic_valid(op, dt, kind))
        return XP_ERR_INVALID;
    size = xp_atomic_type_size(dt);
    if (len % size != 0)
        return XP_ERR_INVALID;
    if (single_element(op) && len != size)
        return XP_ERR_INVALID;
    return XP_OK;
}

/* ------------------------------------------------------------------ combine */

/* Integers: arithmetic in uint64_t so that overflow wraps instead of being
 * undefined; the conversion back truncates (GCC defines it as modulo). */
#define XP_DEFINE_INT_COMBINE(NAME, T)                                          \
    static inline T NAME(ptl_op_t op, T d, T x, T o)                            \
    {                                                                           \
        switch (op) {                                                           \
        case PTL_SUM:  return (T)((uint64_t)d + (uint64_t)x);                   \
        case PTL_PROD: return (T)((uint64_t)d * (uint64_t)x);                   \
        case PTL_MIN:  return x < d ? x : d;                                    \
        case PTL_MAX:  return x > d ? x : d;                                    \
        case PTL_LAND: return (T)(d && x);                                      \
        case PTL_LOR:  return (T)(d || x);                                      \
        case PTL_LXOR: return (T)(!d != !x);                                    \
        case PTL_BAND: return (T)(d & x);                                       \
        case PTL_BOR:  return (T)(d | x);                                       \
        case PTL_BXOR: return (T)(d ^ x);                                       \
        case PTL_SWAP: return x;                                                \
        case PTL_CSWAP:    return o == d ? x : d;                               \
        case PTL_CSWAP_NE: return o != d ? x : d;                               \
        case PTL_CSWAP_LE: return o <= d ? x : d;                               \
        case PTL_CSWAP_LT: return o < d ? x : d;                                \
        case PTL_CSWAP_GE: return o >= d ? x : d;                               \
        case PTL_CSWAP_GT: return o > d ? x : d;                                \
        case PTL_MSWAP: return (T)((o & x) | (~o & d));                         \
        default: return d;                                                      \
        }                                                                       \
    }

#define XP_DEFINE_REAL_COMBINE(NAME, T)                                         \
    static inline T NAME(ptl_op_t op, T d, T x, T o)                            \
    {                                                                           \
        switch (op) {                                                           \
        case PTL_SUM:  return d + x;                                            \
        case PTL_PROD: return d * x;                                            \
        case PTL_MIN:  return x < d ? x : d;                                    \
        case PTL_MAX:  return x > d ? x : d;                                    \
        case PTL_SWAP: return x;                                                \
        case PTL_CSWAP:    return o == d ? x : d;                               \
        case PTL_CSWAP_NE: return o != d ? x : d;                               \
        case PTL_CSWAP_LE: return o <= d ? x : d;                               \
        case PTL_CSWAP_LT: return o < d ? x : d;                                \
        case PTL_CSWAP_GE: return o >= d ? x : d;                               \
        case PTL_CSWAP_GT: return o > d ? x : d;                                \
        default: return d;                                                      \
        }                                                                       \
    }

#define XP_DEFINE_COMPLEX_COMBINE(NAME, T)                                      \
    static inline T NAME(ptl_op_t op, T d, T x, T o)                            \
    {                                                                           \
        switch (op) {                                                           \
        case PTL_SUM:  return d + x;                                            \
        case PTL_PROD: return d * x;                                            \
        case PTL_SWAP: return x;                                                \
        case PTL_CSWAP:    return o == d ? x : d;                               \
        case PTL_CSWAP_NE: return o != d ? x : d;                               \
        default: return d;                                                      \
        }                                                                       \
    }

XP_DEFINE_INT_COMBINE(combine_i8, int8_t)
XP_DEFINE_INT_COMBINE(combine_u8, uint8_t)
XP_DEFINE_INT_COMBINE(combine_i16, int16_t)
XP_DEFINE_INT_COMBINE(combine_u16, uint16_t)
XP_DEFINE_INT_COMBINE(combine_i32, int32_t)
XP_DEFINE_INT_COMBINE(combine_u32, uint32_t)
XP_DEFINE_INT_COMBINE(combine_i64, int64_t)
XP_DEFINE_INT_COMBINE(combine_u64, uint64_t)
XP_DEFINE_REAL_COMBINE(combine_f, float)
XP_DEFINE_REAL_COMBINE(combine_d, double)
XP_DEFINE_REAL_COMBINE(combine_ld, long double)
XP_DEFINE_COMPLEX_COMBINE(combine_fc, xp_fcomplex_t)
XP_DEFINE_COMPLEX_COMBINE(combine_dc, xp_dcomplex_t)
XP_DEFINE_COMPLEX_COMBINE(combine_ldc, xp_ldcomplex_t)

/* -------------------------------------------------------------------- apply */

/*
 * Apply loops for one element type. Buffers are accessed through memcpy so
 * unaligned initiator data and fetch buffers are fine. The atomic variant
 * (elements of at most 8 bytes, aligned target) retries a compare-and-swap on
 * the element's bytes; comparing bytes, not values, also terminates for NaN.
 */
/* The plain loop: the caller serialises (or the element cannot be CASed). */
#define XP_DEFINE_PLAIN_LOOP(NAME, T, COMBINE)                                  \
    static void NAME##_plain(ptl_op_t op, char *t, const char *s, T o,          \
                             size_t n, char *f)                                 \
    {                                                                           \
        if (f)                                                                  \
            memcpy(f, t, n * sizeof(T));                                        \
        for (size_t i = 0; i < n; i++) {                                        \
            T d, x;                                                             \
            memcpy(&d, t + i * sizeof(T), sizeof(T));                           \
            memcpy(&x, s + i * sizeof(T), sizeof(T));                           \
            d = COMBINE(op, d, x, o);                                           \
            memcpy(t + i * sizeof(T), &d, sizeof(T));                           \
        }                                                                       \
    }

/* The operand (one element, zero when absent) as a value of type T. */
#define XP_LOAD_OPERAND(T, o, operand)                                          \
    do {                                                                        \
        memset(&(o), 0, sizeof(o));                                             \
        if (operand)                                                            \
            memcpy(&(o), (operand), sizeof(T));                                 \
    } while (0)

/* Integer SUM, BAND, BOR, BXOR and SWAP are one native read-modify-write
 * instruction each (lock xadd, lock and/or/xor, xchg): no load + CAS loop.
 * Wrapping unsigned arithmetic on the bits is the integer SUM's result. */
#define XP_DEFINE_NATIVE_RMW(NAME, U)                                           \
    static inline int NAME(ptl_op_t op, U *p, U x, U *old)                      \
    {                                                                           \
        switch (op) {                                                           \
        case PTL_SUM: *old = __atomic_fetch_add(p, x, __ATOMIC_ACQ_REL); return 1; \
        case PTL_BAND: *old = __atomic_fetch_and(p, x, __ATOMIC_ACQ_REL); return 1; \
        case PTL_BOR: *old = __atomic_fetch_or(p, x, __ATOMIC_ACQ_REL); return 1; \
        case PTL_BXOR: *old = __atomic_fetch_xor(p, x, __ATOMIC_ACQ_REL); return 1; \
        case PTL_SWAP: *old = __atomic_exchange_n(p, x, __ATOMIC_ACQ_REL); return 1; \
        default: return 0;                                                      \
        }                                                                       \
    }
XP_DEFINE_NATIVE_RMW(native_rmw_u8, uint8_t)
XP_DEFINE_NATIVE_RMW(native_rmw_u16, uint16_t)
XP_DEFINE_NATIVE_RMW(native_rmw_u32, uint32_t)
XP_DEFINE_NATIVE_RMW(native_rmw_u64, uint64_t)

/* Real and complex elements have no native read-modify-write. */
#define native_rmw_none(op, p, x, old) 0

#define XP_DEFINE_APPLY(NAME, T, U, COMBINE, NATIVE)                            \
    XP_DEFINE_PLAIN_LOOP(NAME, T, COMBINE)                                      \
    static void NAME##_atomic(ptl_op_t op, char *t, const char *s, T o,         \
                              size_t n, char *f)                                \
    {                                                                           \
        U *tp = (U *)(void *)t;                                                 \
        for (size_t i = 0; i < n; i++) {                                        \
            U xb, ob;                                                           \
            memcpy(&xb, s + i * sizeof(T), sizeof(T));                          \
            if (NATIVE(op, &tp[i], xb, &ob)) {                                  \
                if (f)                                                          \
                    memcpy(f + i * sizeof(T), &ob, sizeof(T));                  \
                continue;                                                       \
            }                                                                   \
            T old, new_, x;                                                     \
            U old_bits = __atomic_load_n(&tp[i], __ATOMIC_RELAXED), new_bits;   \
            memcpy(&x, s + i * sizeof(T), sizeof(T));                           \
            do {                                                                \
                memcpy(&old, &old_bits, sizeof(T));                             \
                new_ = COMBINE(op, old, x, o);                                  \
                memcpy(&new_bits, &new_, sizeof(T));                            \
            } while (!__atomic_compare_exchange_n(&tp[i], &old_bits, new_bits,  \
                                                  0, __ATOMIC_ACQ_REL,          \
                                                  __ATOMIC_RELAXED));           \
            if (f)                                                              \
                memcpy(f + i * sizeof(T), &old_bits, sizeof(T));                \
        }                                                                       \
    }                                                                           \
    static void NAME(ptl_op_t op, void *target, const void *data,               \
                     const void *operand, size_t len, void *fetch, int plain)   \
    {                                                                           \
        T o;                                                                    \
        size_t n = len / sizeof(T);                                             \
        _Static_assert(sizeof(T) == sizeof(U), "CAS word must match element");  \
        XP_LOAD_OPERAND(T, o, operand);                                         \
        if (!plain && ((uintptr_t)target % sizeof(T)) == 0)                     \
            NAME##_atomic(op, target, data, o, n, fetch);                       \
        else                                                                    \
            NAME##_plain(op, target, data, o, n, fetch);                        \
    }

/* Elements over 8 bytes never take the CAS path: no lock-free 16-byte CAS. */
#define XP_DEFINE_APPLY_PLAIN(NAME, T, COMBINE)                                 \
    XP_DEFINE_PLAIN_LOOP(NAME, T, COMBINE)                                      \
    static void NAME(ptl_op_t op, void *target, const void *data,               \
                     const void *operand, size_t len, void *fetch, int plain)   \
    {                                                                           \
        T o;                                                                    \
        (void)plain;                                                            \
        XP_LOAD_OPERAND(T, o, operand);                                         \
        NAME##_plain(op, target, data, o, len / sizeof(T), fetch);              \
    }

XP_DEFINE_APPLY(apply_i8, int8_t, uint8_t, combine_i8, native_rmw_u8)
XP_DEFINE_APPLY(apply_u8, uint8_t, uint8_t, combine_u8, native_rmw_u8)
XP_DEFINE_APPLY(apply_i16, int16_t, uint16_t, combine_i16, native_rmw_u16)
XP_DEFINE_APPLY(apply_u16, uint16_t, uint16_t, combine_u16, native_rmw_u16)
XP_DEFINE_APPLY(apply_i32, int32_t, uint32_t, combine_i32, native_rmw_u32)
XP_DEFINE_APPLY(apply_u32, uint32_t, uint32_t, combine_u32, native_rmw_u32)
XP_DEFINE_APPLY(apply_i64, int64_t, uint64_t, combine_i64, native_rmw_u64)
XP_DEFINE_APPLY(apply_u64, uint64_t, uint64_t, combine_u64, native_rmw_u64)
XP_DEFINE_APPLY(apply_f, float, uint32_t, combine_f, native_rmw_none)
XP_DEFINE_APPLY(apply_d, double, uint64_t, combine_d, native_rmw_none)
XP_DEFINE_APPLY(apply_fc, xp_fcomplex_t, uint64_t, combine_fc, native_rmw_none)
XP_DEFINE_APPLY_PLAIN(apply_ld, long double, combine_ld)
XP_DEFINE_APPLY_PLAIN(apply_dc, xp_dcomplex_t, combine_dc)
XP_DEFINE_APPLY_PLAIN(apply_ldc, xp_ldcomplex_t, combine_ldc)

typedef void (*apply_fn_t)(ptl_op_t, void *, const void *, const void *, size_t, void *, int);

static apply_fn_t apply_fn(ptl_datatype_t dt)
{
    switch (dt) {
    case PTL_INT8_T: return apply_i8;
    case PTL_UINT8_T: return apply_u8;
    case PTL_INT16_T: return apply_i16;
    case PTL_UINT16_T: return apply_u16;
    case PTL_INT32_T: return apply_i32;
    case PTL_UINT32_T: return apply_u32;
    case PTL_INT64_T: return apply_i64;
    case PTL_UINT64_T: return apply_u64;
    case PTL_FLOAT: return apply_f;
    case PTL_DOUBLE: return apply_d;
    case PTL_LONG_DOUBLE: return apply_ld;
    case PTL_FLOAT_COMPLEX: return apply_fc;
    case PTL_DOUBLE_COMPLEX: return apply_dc;
    case PTL_LONG_DOUBLE_COMPLEX: return apply_ldc;
    default: return NULL;
    }
}

static xp_status_t apply(ptl_op_t op, ptl_datatype_t dt, void *target, const void *data,
                         const void *operand, size_t len, void *fetch_out, int plain)
{
    size_t size = xp_atomic_type_size(dt);

    if (!pair_valid(op, dt) || len % size != 0)
        return XP_ERR_INVALID;
    if (single_element(op) && (len != size || !operand))
        return XP_ERR_INVALID;
    if (len == 0)
        return XP_OK;
    if (!target || !data)
        return XP_ERR_INVALID;
    apply_fn(dt)(op, target, data, operand, len, fetch_out, plain);
    return XP_OK;
}

xp_status_t xp_atomic_apply(ptl_op_t op, ptl_datatype_t dt, void *target, const void *data,
                            const void *operand, size_t len, void *fetch_out)
{
    return apply(op, dt, target, data, operand, len, fetch_out, 0);
}

xp_status_t xp_atomic_apply_plain(ptl_op_t op, ptl_datatype_t dt, void *target,
                                  const void *data, const void *operand, size_t len,
                                  void *fetch_out)
{
    return apply(op, dt, target, data, operand, len, fetch_out, 1);
}

const char *xp_atomic_op_name(ptl_op_t op)
{
    switch (op) {
#define XP_OP_NAME_(o) case o: return #o;
    XP_OP_NAME_(PTL_MIN) XP_OP_NAME_(PTL_MAX) XP_OP_NAME_(PTL_SUM) XP_OP_NAME_(PTL_PROD)
    XP_OP_NAME_(PTL_LOR) XP_OP_NAME_(PTL_LAND) XP_OP_NAME_(PTL_BOR) XP_OP_NAME_(PTL_BAND)
    XP_OP_NAME_(PTL_LXOR) XP_OP_NAME_(PTL_BXOR) XP_OP_NAME_(PTL_SWAP) XP_OP_NAME_(PTL_CSWAP)
    XP_OP_NAME_(PTL_CSWAP_NE) XP_OP_NAME_(PTL_CSWAP_LE) XP_OP_NAME_(PTL_CSWAP_LT)
    XP_OP_NAME_(PTL_CSWAP_GE) XP_OP_NAME_(PTL_CSWAP_GT) XP_OP_NAME_(PTL_MSWAP)
#undef XP_OP_NAME_
    default: return "?";
    }
}

const char *xp_atomic_type_name(ptl_datatype_t dt)
{
    switch (dt) {
#define XP_DT_NAME_(t) case t: return #t;
    XP_DT_NAME_(PTL_INT8_T) XP_DT_NAME_(PTL_UINT8_T) XP_DT_NAME_(PTL_INT16_T)
    XP_DT_NAME_(PTL_UINT16_T) XP_DT_NAME_(PTL_INT32_T) XP_DT_NAME_(PTL_UINT32_T)
    XP_DT_NAME_(PTL_INT64_T) XP_DT_NAME_(PTL_UINT64_T) XP_DT_NAME_(PTL_FLOAT)
    XP_DT_NAME_(PTL_DOUBLE) XP_DT_NAME_(PTL_LONG_DOUBLE) XP_DT_NAME_(PTL_FLOAT_COMPLEX)
    XP_DT_NAME_(PTL_DOUBLE_COMPLEX) XP_DT_NAME_(PTL_LONG_DOUBLE_COMPLEX)
#undef XP_DT_NAME_
    default: return "?";
    }
}
