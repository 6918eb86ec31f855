/* Element-wise reductions for xp_dt_unpack_reduce: inout[i] = inout[i] OP in[i].
 * Buffers may be unaligned (windows of a packed stream), hence the
 * byte-aligned element types. Signed sums and products wrap (computed in the
 * unsigned type) instead of being undefined. */
#include <stdint.h>
#include <string.h>

#include "dt/dt_internal.h"

#define U_(T) T __attribute__((aligned(1)))

#define DEF_FN(name, T, EXPR)                                                 \
    static void name(void *io_, const void *in_, size_t n)                    \
    {                                                                         \
        typedef U_(T) ut_;                                                    \
        ut_ *io = io_;                                                        \
        const ut_ *in = in_;                                                  \
        for (size_t i = 0; i < n; i++) {                                      \
            T a = io[i], b = in[i];                                           \
            io[i] = (T)(EXPR);                                                \
        }                                                                     \
    }

/* Integers: every operation. UT is the unsigned type of the same width. */
#define DEF_INT(S, T, UT)                                                     \
    DEF_FN(sum_##S, T, (UT)a + (UT)b)                                         \
    DEF_FN(prod_##S, T, (UT)a * (UT)b)                                        \
    DEF_FN(min_##S, T, a < b ? a : b)                                         \
    DEF_FN(max_##S, T, a > b ? a : b)                                         \
    DEF_FN(land_##S, T, a && b)                                               \
    DEF_FN(lor_##S, T, a || b)                                                \
    DEF_FN(lxor_##S, T, !a != !b)                                             \
    DEF_FN(band_##S, T, a & b)                                                \
    DEF_FN(bor_##S, T, a | b)                                                 \
    DEF_FN(bxor_##S, T, a ^ b)

/* Reals: arithmetic, order and logical operations. */
#define DEF_REAL(S, T)                                                        \
    DEF_FN(sum_##S, T, a + b)                                                 \
    DEF_FN(prod_##S, T, a * b)                                                \
    DEF_FN(min_##S, T, a < b ? a : b)                                         \
    DEF_FN(max_##S, T, a > b ? a : b)                                         \
    DEF_FN(land_##S, T, a && b)                                               \
    DEF_FN(lor_##S, T, a || b)                                                \
    DEF_FN(lxor_##S, T, !a != !b)

/* Complex: sum and product only. */
#define DEF_CPLX(S, T)                                                        \
    DEF_FN(sum_##S, T, a + b)                                                 \
    DEF_FN(prod_##S, T, a * b)

/* Bytes: bitwise only. */
#define DEF_BYTE(S, T)                                                        \
    DEF_FN(band_##S, T, a & b)                                                \
    DEF_FN(bor_##S, T, a | b)                                                 \
    DEF_FN(bxor_##S, T, a ^ b)

DEF_INT(c, char, unsigned char)
DEF_INT(i8, int8_t, uint8_t)
DEF_INT(u8, uint8_t, uint8_t)
DEF_INT(i16, int16_t, uint16_t)
DEF_INT(u16, uint16_t, uint16_t)
DEF_INT(i32, int32_t, uint32_t)
DEF_INT(u32, uint32_t, uint32_t)
DEF_INT(i64, int64_t, uint64_t)
DEF_INT(u64, uint64_t, uint64_t)
DEF_REAL(f, float)
DEF_REAL(d, double)
DEF_REAL(ld, long double)
DEF_CPLX(cf, float _Complex)
DEF_CPLX(cd, double _Complex)
DEF_CPLX(cld, long double _Complex)
DEF_BYTE(b, unsigned char)

#define ROW_INT(S) {sum_##S, prod_##S, min_##S, max_##S, land_##S, lor_##S, lxor_##S, band_##S, bor_##S, bxor_##S}
#define ROW_REAL(S) {sum_##S, prod_##S, min_##S, max_##S, land_##S, lor_##S, lxor_##S, NULL, NULL, NULL}
#define ROW_CPLX(S) {sum_##S, prod_##S, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}
#define ROW_BYTE(S) {NULL, NULL, NULL, NULL, NULL, NULL, NULL, band_##S, bor_##S, bxor_##S}

static const dt_reduce_fn table[XP_DT_ID_COUNT_][XP_DT_OP_REPLACE] = {
    [XP_DT_ID_CHAR] = ROW_INT(c),
    [XP_DT_ID_INT8] = ROW_INT(i8),
    [XP_DT_ID_UINT8] = ROW_INT(u8),
    [XP_DT_ID_INT16] = ROW_INT(i16),
    [XP_DT_ID_UINT16] = ROW_INT(u16),
    [XP_DT_ID_INT32] = ROW_INT(i32),
    [XP_DT_ID_UINT32] = ROW_INT(u32),
    [XP_DT_ID_INT64] = ROW_INT(i64),
    [XP_DT_ID_UINT64] = ROW_INT(u64),
    [XP_DT_ID_FLOAT] = ROW_REAL(f),
    [XP_DT_ID_DOUBLE] = ROW_REAL(d),
    [XP_DT_ID_LONG_DOUBLE] = ROW_REAL(ld),
    [XP_DT_ID_FLOAT_COMPLEX] = ROW_CPLX(cf),
    [XP_DT_ID_DOUBLE_COMPLEX] = ROW_CPLX(cd),
    [XP_DT_ID_LONG_DOUBLE_COMPLEX] = ROW_CPLX(cld),
    [XP_DT_ID_BYTE] = ROW_BYTE(b),
};

dt_reduce_fn xp_dt_reduce_fn(xp_dt_op_t op, int basic)
{
    if (basic <= 0 || basic >= XP_DT_ID_COUNT_ || (unsigned)op >= XP_DT_OP_REPLACE)
        return NULL;
    return table[basic][op];
}
