/* accel/cuda_plugin.h - the interface between libportals and the CUDA agent
 * plugin (libxpaccel_cuda.so), which libportals dlopen()s on demand so that
 * the library itself never needs libcudart or a GPU. */
#ifndef XP_ACCEL_CUDA_PLUGIN_H
#define XP_ACCEL_CUDA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include "xportals/status.h"

#define XP_CUDA_PLUGIN_ABI 2
#define XP_CUDA_PLUGIN_SYMBOL "xp_cuda_plugin_get"
#define XP_CUDA_PLUGIN_FILE "libxpaccel_cuda.so"

typedef struct xp_cuda_plugin_ops {
    size_t size;            /* sizeof(xp_cuda_plugin_ops_t), checked by the loader */
    int abi;                /* XP_CUDA_PLUGIN_ABI */
    /* Number of usable devices (0 when no GPU or driver). */
    int (*device_count)(void);
    /* Memory type of ptr (xp_mem_type_t) and, for device memory, the whole
     * allocation [*base, *base + *len) so the caller can cache it. */
    int (*mem_query)(const void *ptr, uintptr_t *base, size_t *len);
    /* Pinned host memory mapped into the device (same address on both). */
    xp_status_t (*host_alloc)(size_t bytes, void **mem_out);
    void (*host_free)(void *mem);
    /* A persistent kernel that drains the queue laid out at `queue_mem`
     * (pinned, from host_alloc) until stopped. */
    xp_status_t (*queue_start)(int device, int nblocks, void *queue_mem, void **handle_out);
    /* Ask it to drain and exit, then wait for it. */
    void (*queue_stop)(void *handle);
    /* Let the persistent kernel exit before its next packet and wait for it
     * (a packet it runs finishes first); resume relaunches it where it
     * stopped. Around every CUDA call that may synchronize the device
     * (cudaFree, cudaFreeHost, page-locked allocations), which would
     * otherwise wait for a kernel that never ends. */
    void (*queue_pause)(void *handle);
    xp_status_t (*queue_resume)(void *handle);
} xp_cuda_plugin_ops_t;

typedef const xp_cuda_plugin_ops_t *(*xp_cuda_plugin_get_fn)(void);

#endif
