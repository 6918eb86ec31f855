/*
 * xportals/shmem.h - the shared heap: memory that every process of the job
 * on this machine has mapped.
 *
 * Each process owns one heap segment (XP_SHM_HEAP_SIZE bytes of address
 * space, pages allocated on first touch) that the shm transport maps into
 * every local peer when the job starts. A Portals transfer whose *remote*
 * buffer lies in the peer's heap is then a plain memcpy by the process that
 * does the copy - no process_vm_readv, no page pinning: a put whose source
 * buffer the initiator took from xp_shmalloc, a get whose destination it
 * took from xp_shmalloc. Any other buffer still works (single-copy
 * process_vm_readv/writev).
 *
 * Available between PtlInit (or the first xp_tl_init) and the matching
 * PtlFini; memory from the heap must not be used after that. Thread-safe.
 */
#ifndef XPORTALS_SHMEM_H
#define XPORTALS_SHMEM_H

#include <stddef.h>

#include "xportals/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At least `size` bytes (rounded up to a power of two, >= 256), aligned to
 * 256 bytes, from this process's shared heap. NULL if size is 0, the heap
 * is exhausted or disabled (XP_SHM_HEAP_SIZE=0), or Portals is not initialised. */
XP_EXPORT void *xp_shmalloc(size_t size);
/* Give back a block from xp_shmalloc; NULL is ignored, a pointer that did
 * not come from xp_shmalloc is reported and ignored. */
XP_EXPORT void xp_shfree(void *ptr);
/* Nonzero if [ptr, ptr+len) lies inside this process's shared heap. */
XP_EXPORT int xp_shm_contains(const void *ptr, size_t len);

#ifdef __cplusplus
}
#endif

#endif
