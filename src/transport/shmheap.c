/* The shared heap segment and xp_shmalloc (see shmheap.h, xportals/shmem.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shmheap.h"
#include "util/log.h"
#include "xportals/shmem.h"

static xp_status_t map_heap(int fd, size_t size, unsigned char **out)
{
    /* NORESERVE: address space only; tmpfs pages come on first touch. */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        xp_log_errno(XP_LOG_ERROR, "mmap of a %zu-byte shared heap", size);
        return XP_ERR_NO_MEMORY;
    }
    *out = p;
    return XP_OK;
}

xp_status_t xp_shmheap_create(const char *name, size_t size, xp_shmheap_t *heap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!name || !heap || strlen(name) >= XP_SHM_NAME_MAX || !size || size % page)
        return XP_ERR_INVALID;
    memset(heap, 0, sizeof *heap);
    xp_status_t st;
    int fd = xp_shm_create_sized(name, size + XP_SHMHEAP_META, &st);
    if (fd < 0)
        return st;
    st = map_heap(fd, size + XP_SHMHEAP_META, &heap->base);
    if (st != XP_OK)
        goto err_unlink;
    st = xp_buddy_init(&heap->buddy, 0, size, XP_SHMHEAP_MIN_BLOCK);
    if (st != XP_OK)
        goto err_unmap;
    close(fd);
    pthread_mutex_init(&heap->lock, NULL);
    heap->size = size;
    heap->meta = heap->base + size;
    strcpy(heap->name, name);
    heap->owner = 1;
    heap->linked = 1;
    return XP_OK;
err_unmap:
    munmap(heap->base, size + XP_SHMHEAP_META);
    heap->base = NULL;
err_unlink:
    close(fd);
    shm_unlink(name);
    return st;
}

xp_status_t xp_shmheap_attach(const char *name, size_t size, xp_shmheap_t *heap)
{
    struct stat sb;
    if (!name || !heap || strlen(name) >= XP_SHM_NAME_MAX || !size)
        return XP_ERR_INVALID;
    memset(heap, 0, sizeof *heap);
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        xp_log_errno(XP_LOG_WARN, "shm_open(%s) of a peer's shared heap", name);
        return XP_ERR_NOT_FOUND;
    }
    xp_status_t st = XP_ERR_PROTOCOL;
    if (fstat(fd, &sb) < 0 || (size_t)sb.st_size != size + XP_SHMHEAP_META) {
        xp_warn("shared heap %s: size %lld, expected %zu", name, (long long)sb.st_size,
                size + XP_SHMHEAP_META);
        goto out_close;
    }
    st = map_heap(fd, size + XP_SHMHEAP_META, &heap->base);
    if (st == XP_OK) {
        heap->size = size;
        heap->meta = heap->base + size;
        strcpy(heap->name, name);
    }
out_close:
    close(fd);
    return st;
}

void xp_shmheap_unlink(xp_shmheap_t *heap)
{
    if (heap->owner && heap->linked) {
        shm_unlink(heap->name);
        heap->linked = 0;
    }
}

void xp_shmheap_close(xp_shmheap_t *heap)
{
    if (!heap->base)
        return;
    xp_shmheap_unlink(heap);
    munmap(heap->base, heap->size + XP_SHMHEAP_META);
    if (heap->owner) {
        xp_buddy_destroy(&heap->buddy);
        pthread_mutex_destroy(&heap->lock);
    }
    heap->base = NULL;
}

void *xp_shmheap_alloc(xp_shmheap_t *heap, size_t size)
{
    uint64_t off;
    if (!heap->owner || !size)
        return NULL;
    pthread_mutex_lock(&heap->lock);
    xp_status_t st = xp_buddy_alloc(&heap->buddy, size, &off);
    pthread_mutex_unlock(&heap->lock);
    return st == XP_OK ? heap->base + off : NULL;
}

xp_status_t xp_shmheap_free(xp_shmheap_t *heap, void *ptr)
{
    uintptr_t p = (uintptr_t)ptr, b = (uintptr_t)heap->base;
    if (!heap->owner || !xp_shmheap_in(b, heap->size, p, 1))
        return XP_ERR_INVALID;
    pthread_mutex_lock(&heap->lock);
    xp_status_t st = xp_buddy_free(&heap->buddy, p - b);
    pthread_mutex_unlock(&heap->lock);
    return st;
}

/* ---------------------------------------------------------------- public */

void *xp_shmalloc(size_t size)
{
    xp_shmheap_t *h = xp_shm_heap();
    if (!h)
        return NULL;
    void *p = xp_shmheap_alloc(h, size);
    if (!p) { /* read bounce blocks are only freed lazily */
        xp_shm_heap_reclaim();
        p = xp_shmheap_alloc(h, size);
    }
    return p;
}

void xp_shfree(void *ptr)
{
    if (!ptr)
        return;
    xp_shmheap_t *h = xp_shm_heap();
    if (!h || xp_shmheap_free(h, ptr) != XP_OK)
        xp_error("xp_shfree(%p): not a block from xp_shmalloc", ptr);
}

int xp_shm_contains(const void *ptr, size_t len)
{
    xp_shmheap_t *h = xp_shm_heap();
    return h && xp_shmheap_in((uintptr_t)h->base, h->size, (uintptr_t)ptr, len);
}
