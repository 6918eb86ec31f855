/*
 * dt/cuda_plugin.h - the interface between libportals and the xpdt_cuda
 * plugin (libxpdt_cuda.so, dlopen()ed at run time so that the library needs
 * neither a GPU nor libcudart). The plugin exports one function,
 * xp_dt_cuda_plugin(), returning its ops table; the table's first field is
 * its size and abi must equal XP_DT_CUDA_ABI.
 *
 * Every function returns 0 on success and a negative value on failure.
 * Pointers passed to the kernels must be device-accessible (device memory,
 * managed memory, or the device alias of pinned host memory).
 */
#ifndef XP_DT_CUDA_PLUGIN_H
#define XP_DT_CUDA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define XP_DT_CUDA_ABI 2

/* Memory types reported by mem_type. */
enum { XP_DT_MEM_HOST = 0, XP_DT_MEM_DEVICE = 1, XP_DT_MEM_PINNED = 2 };

/* One work unit: same layout as dt_unit_t (dt_internal.h). */
typedef struct xp_dt_cuda_unit {
    int64_t src;
    uint64_t dst;
    uint32_t len;
    uint32_t pad_;
} xp_dt_cuda_unit_t;

typedef struct xp_dt_cuda_ops {
    size_t size;
    int abi;
    /* 0 if a GPU is usable in this process; loads the kernels (the caller
     * pauses persistent kernels around it: a module load may wait for them). */
    int (*init)(void);
    /* XP_DT_MEM_*; for PINNED, *dev receives the device alias of p. */
    int (*mem_type)(const void *p, void **dev);
    /* Window [off, off + len) of the packed stream of a vector of blocks of
     * blen bytes, stride bytes apart from nc; pk holds the window. dir 0 =
     * pack (nc -> pk), 1 = unpack. Synchronous. */
    int (*vector)(int dir, char *nc, int64_t stride, uint64_t blen, uint64_t off, uint64_t len, char *pk);
    /* Copy a unit list to device memory; returns a handle (NULL on error). */
    void *(*units_upload)(const xp_dt_cuda_unit_t *u, size_t n);
    void (*units_free)(void *units);
    /* Units [first, first + n) of an uploaded list, clamped to the window
     * [off, off + len) of the packed stream; pk holds the window; max_len:
     * the longest unit of the list. Synchronous. */
    int (*units_run)(int dir, void *units, size_t first, size_t n, char *nc, char *pk, uint64_t off, uint64_t len,
                     uint32_t max_len);
    void *(*dev_alloc)(size_t n);
    void (*dev_free)(void *p);
    /* Synchronous copy in any direction (cudaMemcpyDefault). */
    int (*copy)(void *dst, const void *src, size_t n);
} xp_dt_cuda_ops_t;

typedef const xp_dt_cuda_ops_t *(*xp_dt_cuda_plugin_fn)(void);

#endif
