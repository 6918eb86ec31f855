/*
 * xportals/dt.h - derived datatypes: MPI-style type constructors, and fast
 * pack / unpack of any byte window of the packed stream, on the CPU and (when
 * the CUDA plugin is present and a GPU is usable) on the GPU.
 *
 * A type describes where the bytes of one element lie relative to a buffer
 * origin (its "type map"); `count` elements of a type follow each other with a
 * stride of the type's extent. The packed stream of (type, count) is the
 * concatenation of all those bytes in type-map order.
 *
 * Life cycle: build with a constructor, xp_dt_commit() (flattens the type into
 * cached copy units), use, xp_dt_free(). A type may be freed while types built
 * from it are still alive (children are reference counted). Predefined types
 * (XP_DT_DOUBLE, ...) are constants that need no commit and are never freed.
 *
 * Thread safety: constructors, commit and free of distinct types may run in
 * parallel; a committed type may be used by many threads at once.
 *
 * Buffers may lie in host or device (CUDA) memory; the memory type of each
 * buffer is detected automatically (device buffers need the xpdt_cuda plugin
 * and a GPU; without them every buffer is treated as host memory).
 */
#ifndef XPORTALS_DT_H
#define XPORTALS_DT_H

#include <stddef.h>
#include <stdint.h>
#include "xportals/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xp_dt *xp_dt_t;

/* Identifiers of the predefined (basic) types. Values are part of the ABI. */
enum {
    XP_DT_ID_CHAR = 1,
    XP_DT_ID_INT8,
    XP_DT_ID_UINT8,
    XP_DT_ID_INT16,
    XP_DT_ID_UINT16,
    XP_DT_ID_INT32,
    XP_DT_ID_UINT32,
    XP_DT_ID_INT64,
    XP_DT_ID_UINT64,
    XP_DT_ID_FLOAT,
    XP_DT_ID_DOUBLE,
    XP_DT_ID_LONG_DOUBLE,
    XP_DT_ID_FLOAT_COMPLEX,        /* float _Complex */
    XP_DT_ID_DOUBLE_COMPLEX,       /* double _Complex */
    XP_DT_ID_LONG_DOUBLE_COMPLEX,  /* long double _Complex */
    XP_DT_ID_BYTE,                 /* uninterpreted byte: matches only BYTE */
    XP_DT_ID_COUNT_                /* number of ids + 1 */
};

/* Predefined handles are small constants (usable in static initialisers). */
#define XP_DT_PREDEFINED_(id) ((xp_dt_t)(uintptr_t)(id))
#define XP_DT_NULL                 ((xp_dt_t)0)
#define XP_DT_CHAR                 XP_DT_PREDEFINED_(XP_DT_ID_CHAR)
#define XP_DT_INT8                 XP_DT_PREDEFINED_(XP_DT_ID_INT8)
#define XP_DT_UINT8                XP_DT_PREDEFINED_(XP_DT_ID_UINT8)
#define XP_DT_INT16                XP_DT_PREDEFINED_(XP_DT_ID_INT16)
#define XP_DT_UINT16               XP_DT_PREDEFINED_(XP_DT_ID_UINT16)
#define XP_DT_INT32                XP_DT_PREDEFINED_(XP_DT_ID_INT32)
#define XP_DT_UINT32               XP_DT_PREDEFINED_(XP_DT_ID_UINT32)
#define XP_DT_INT64                XP_DT_PREDEFINED_(XP_DT_ID_INT64)
#define XP_DT_UINT64               XP_DT_PREDEFINED_(XP_DT_ID_UINT64)
#define XP_DT_FLOAT                XP_DT_PREDEFINED_(XP_DT_ID_FLOAT)
#define XP_DT_DOUBLE               XP_DT_PREDEFINED_(XP_DT_ID_DOUBLE)
#define XP_DT_LONG_DOUBLE          XP_DT_PREDEFINED_(XP_DT_ID_LONG_DOUBLE)
#define XP_DT_FLOAT_COMPLEX        XP_DT_PREDEFINED_(XP_DT_ID_FLOAT_COMPLEX)
#define XP_DT_DOUBLE_COMPLEX       XP_DT_PREDEFINED_(XP_DT_ID_DOUBLE_COMPLEX)
#define XP_DT_LONG_DOUBLE_COMPLEX  XP_DT_PREDEFINED_(XP_DT_ID_LONG_DOUBLE_COMPLEX)
#define XP_DT_BYTE                 XP_DT_PREDEFINED_(XP_DT_ID_BYTE)

/* Array order of xp_dt_subarray. */
#define XP_DT_ORDER_C       0   /* last dimension varies fastest */
#define XP_DT_ORDER_FORTRAN 1   /* first dimension varies fastest */

/* ------------------------------------------------------------ constructors
 * Counts and block lengths are in elements of `old`; `stride` / `displs` of
 * vector / indexed / indexed_block in multiples of old's extent; the h-forms
 * and struct take bytes. Negative strides and displacements are allowed; zero
 * counts give an empty type. Sizes that overflow give XP_ERR_OVERFLOW; a NULL
 * or freed handle, or a NULL array with count > 0, gives XP_ERR_INVALID.
 * *out is set only on success and must be released with xp_dt_free. */
XP_EXPORT xp_status_t xp_dt_contiguous(size_t count, xp_dt_t old, xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_vector(size_t count, size_t blocklen, ptrdiff_t stride, xp_dt_t old,
                                   xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_hvector(size_t count, size_t blocklen, ptrdiff_t stride_bytes, xp_dt_t old,
                                    xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_indexed(size_t count, const size_t blocklens[], const ptrdiff_t displs[],
                                    xp_dt_t old, xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_hindexed(size_t count, const size_t blocklens[],
                                     const ptrdiff_t displs_bytes[], xp_dt_t old, xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_indexed_block(size_t count, size_t blocklen, const ptrdiff_t displs[],
                                          xp_dt_t old, xp_dt_t *out);
XP_EXPORT xp_status_t xp_dt_struct(size_t count, const size_t blocklens[], const ptrdiff_t displs_bytes[],
                                   const xp_dt_t types[], xp_dt_t *out);
/* ndims >= 1; for every dimension subsizes[d] + starts[d] <= sizes[d] and
 * sizes[d] >= 1. The extent of the result is the whole array. */
XP_EXPORT xp_status_t xp_dt_subarray(int ndims, const size_t sizes[], const size_t subsizes[],
                                     const size_t starts[], int order, xp_dt_t old, xp_dt_t *out);
/* Same type map, new lower bound and extent. */
XP_EXPORT xp_status_t xp_dt_resized(xp_dt_t old, ptrdiff_t lb, size_t extent, xp_dt_t *out);
/* An independent copy (same type map; uncommitted if old was uncommitted). */
XP_EXPORT xp_status_t xp_dt_dup(xp_dt_t old, xp_dt_t *out);

/* Flatten the type into its cached copy units. Needed before pack / unpack
 * (predefined types are always committed). Idempotent. */
XP_EXPORT xp_status_t xp_dt_commit(xp_dt_t t);
/* Release the caller's reference and set *t to XP_DT_NULL. Freeing a
 * predefined type is an error (XP_ERR_INVALID). */
XP_EXPORT xp_status_t xp_dt_free(xp_dt_t *t);

/* ------------------------------------------------------------ queries */
XP_EXPORT xp_status_t xp_dt_size(xp_dt_t t, size_t *bytes);          /* packed bytes of one element */
XP_EXPORT xp_status_t xp_dt_extent(xp_dt_t t, size_t *extent);       /* ub - lb */
XP_EXPORT xp_status_t xp_dt_lb(xp_dt_t t, ptrdiff_t *lb);
/* Span of the bytes actually touched by one element (ignores resized bounds). */
XP_EXPORT xp_status_t xp_dt_true_extent(xp_dt_t t, ptrdiff_t *true_lb, size_t *true_extent);
/* Number of basic elements in one element of t (the signature's length). */
XP_EXPORT xp_status_t xp_dt_num_basic(xp_dt_t t, size_t *n);
/* The type signature of `count` elements of t: the sequence of basic types,
 * hashed into 64 bits (independent of layout: a vector of 6 doubles and a
 * contiguous of 6 doubles have the same signature). */
XP_EXPORT xp_status_t xp_dt_signature(xp_dt_t t, size_t count, uint64_t *sig);
/* *match = 1 if (a, count_a) and (b, count_b) have the same signature. */
XP_EXPORT xp_status_t xp_dt_match(xp_dt_t a, size_t count_a, xp_dt_t b, size_t count_b, int *match);
/* The one basic type every element of t is made of; XP_ERR_UNSUPPORTED for
 * a type mixing basic types, XP_ERR_NOT_FOUND for an empty type. */
XP_EXPORT xp_status_t xp_dt_basic(xp_dt_t t, xp_dt_t *basic);
/* *contig = 1 if the packed stream of (t, count) is one contiguous range of
 * the buffer, starting *first_byte bytes from the origin (needs commit). */
XP_EXPORT xp_status_t xp_dt_is_contiguous(xp_dt_t t, size_t count, int *contig, ptrdiff_t *first_byte);

/* ------------------------------------------------------------ pack / unpack
 * Window [offset, offset + len) of the packed stream of `count` elements of
 * committed type t laid out at `src`: dst receives exactly those len bytes.
 * A window beyond count * size gives XP_ERR_TRUNCATED. Packing fragment after
 * fragment (offset 0, k, 2k, ...) gives the same bytes as one whole pack. */
XP_EXPORT xp_status_t xp_dt_pack(xp_dt_t t, size_t count, const void *src, void *dst, size_t offset,
                                 size_t len);
/* The reverse: the len packed bytes at `packed` are the window [offset,
 * offset + len) of the stream; they are scattered into the layout at dst. */
XP_EXPORT xp_status_t xp_dt_unpack(xp_dt_t t, size_t count, const void *packed, void *dst, size_t offset,
                                   size_t len);
/* Whole-message forms: the packed buffer holds count * size bytes. */
XP_EXPORT xp_status_t xp_dt_pack_all(xp_dt_t t, size_t count, const void *src, void *dst);
XP_EXPORT xp_status_t xp_dt_unpack_all(xp_dt_t t, size_t count, const void *packed, void *dst);

/* CPU threads (the caller included) that share one pack / unpack window of
 * at least XP_DT_PAR_MIN bytes: XP_DT_THREADS, default 1. */
XP_EXPORT unsigned xp_dt_cpu_threads(void);

/* ------------------------------------------------------------ reduce-unpack */
typedef enum {
    XP_DT_OP_SUM = 0,
    XP_DT_OP_PROD,
    XP_DT_OP_MIN,
    XP_DT_OP_MAX,
    XP_DT_OP_LAND,
    XP_DT_OP_LOR,
    XP_DT_OP_LXOR,
    XP_DT_OP_BAND,
    XP_DT_OP_BOR,
    XP_DT_OP_BXOR,
    XP_DT_OP_REPLACE, /* plain unpack */
    XP_DT_OP_COUNT_
} xp_dt_op_t;

/* Like xp_dt_unpack, but combines: dst_elem = dst_elem OP packed_elem, for
 * every basic element of the window. t must be made of one basic type (see
 * xp_dt_basic) and offset / len multiples of its size. MIN / MAX / logical
 * ops are not defined on complex types, bitwise ops only on integers, BYTE
 * only supports the bitwise ops and REPLACE: other pairs give
 * XP_ERR_UNSUPPORTED. Host buffers only. */
XP_EXPORT xp_status_t xp_dt_unpack_reduce(xp_dt_op_t op, xp_dt_t t, size_t count, const void *packed,
                                          void *dst, size_t offset, size_t len);

/* ------------------------------------------------------------ GPU
 * 1 if the CUDA plugin is loaded and a GPU is usable in this process. Calling
 * it loads the plugin (the pack functions only load it once they see a CUDA
 * driver in the process). */
XP_EXPORT int xp_dt_cuda_available(void);

#ifdef __cplusplus
}
#endif
#endif
