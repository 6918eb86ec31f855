/* Shared-memory segments, cross-memory copies and liveness (see shm_seg.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm_seg.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/copy.h"
#include "util/log.h"

#define SEG_MAGIC 0x78702d73686d3031ull /* "xp-shm01" */
#define SEG_VERSION 5u /* 2: split-copy area; 3: eager probe area; 4: owner's CPUs;
                           * 5: the doorbell's mark (util/atomic.h) */

static size_t seg_bytes(uint32_t ncells)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t b = offsetof(xp_shm_seg_hdr_t, ring) + xp_shm_ring_bytes(ncells);
    return (b + page - 1) / page * page;
}

static xp_status_t map_fd(int fd, size_t size, xp_shm_seg_hdr_t **out)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        xp_log_errno(XP_LOG_ERROR, "mmap of %zu bytes of shared memory", size);
        return XP_ERR_NO_MEMORY;
    }
    *out = p;
    return XP_OK;
}

int xp_shm_create_sized(const char *name, size_t size, xp_status_t *st)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        xp_warn("replacing stale shared-memory segment %s", name);
        shm_unlink(name);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        xp_log_errno(XP_LOG_ERROR, "shm_open(%s)", name);
        *st = errno == EACCES ? XP_ERR_PERMISSION : XP_ERR_IO;
        return -1;
    }
    if (ftruncate(fd, (off_t)size) < 0) {
        xp_log_errno(XP_LOG_ERROR, "ftruncate(%s, %zu)", name, size);
        close(fd);
        shm_unlink(name);
        *st = XP_ERR_NO_RESOURCE;
        return -1;
    }
    return fd;
}

/* The CPUs this process may run on (the online ones if it cannot tell). */
static void record_cpus(xp_shm_seg_hdr_t *hdr)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        CPU_ZERO(&set);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &set);
    }
    for (int c = 0; c < XP_SHM_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            hdr->cpus[c / 64] |= 1ull << (c % 64);
}

xp_status_t xp_shm_seg_create(const char *name, uint32_t ncells, xp_shm_seg_t *seg)
{
    if (!name || strlen(name) >= XP_SHM_NAME_MAX || ncells < 16 || (ncells & (ncells - 1)))
        return XP_ERR_INVALID;
    size_t size = seg_bytes(ncells);
    xp_status_t st;
    int fd = xp_shm_create_sized(name, size, &st);
    if (fd < 0)
        return st;
    xp_shm_seg_hdr_t *hdr;
    st = map_fd(fd, size, &hdr);
    if (st != XP_OK)
        goto err_unlink;
    close(fd);
    hdr->version = SEG_VERSION;
    hdr->pid = (int32_t)getpid();
    hdr->size = size;
    record_cpus(hdr);
    xp_doorbell_init(&hdr->doorbell);
    xp_shm_ring_init(&hdr->ring, ncells);
    xp_store_release(&hdr->magic, SEG_MAGIC);
    seg->hdr = hdr;
    seg->size = size;
    strcpy(seg->name, name);
    seg->owner = 1;
    seg->linked = 1;
    return XP_OK;
err_unlink:
    close(fd);
    shm_unlink(name);
    return st;
}

xp_status_t xp_shm_seg_attach(const char *name, xp_shm_seg_t *seg)
{
    if (!name || strlen(name) >= XP_SHM_NAME_MAX)
        return XP_ERR_INVALID;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        xp_log_errno(XP_LOG_ERROR, "shm_open(%s)", name);
        return errno == ENOENT ? XP_ERR_NOT_FOUND : XP_ERR_IO;
    }
    struct stat sb;
    xp_status_t st = XP_ERR_PROTOCOL;
    if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < sizeof(xp_shm_seg_hdr_t)) {
        xp_error("shared-memory segment %s is too small", name);
        goto err_close;
    }
    xp_shm_seg_hdr_t *hdr;
    st = map_fd(fd, (size_t)sb.st_size, &hdr);
    if (st != XP_OK)
        goto err_close;
    close(fd);
    if (xp_load_acquire(&hdr->magic) != SEG_MAGIC || hdr->version != SEG_VERSION ||
        hdr->size != (uint64_t)sb.st_size ||
        !xp_shm_ring_valid(&hdr->ring, (size_t)sb.st_size - offsetof(xp_shm_seg_hdr_t, ring))) {
        xp_error("shared-memory segment %s is not an Xportals inbox (version %u)", name,
                 hdr->version);
        munmap(hdr, (size_t)sb.st_size);
        return XP_ERR_PROTOCOL;
    }
    seg->hdr = hdr;
    seg->size = (size_t)sb.st_size;
    strcpy(seg->name, name);
    seg->owner = 0;
    seg->linked = 0;
    return XP_OK;
err_close:
    close(fd);
    return st;
}

void xp_shm_seg_unlink(xp_shm_seg_t *seg)
{
    if (!seg->owner || !seg->linked)
        return;
    if (shm_unlink(seg->name) < 0 && errno != ENOENT)
        xp_log_errno(XP_LOG_WARN, "shm_unlink(%s)", seg->name);
    seg->linked = 0;
}

void xp_shm_seg_close(xp_shm_seg_t *seg)
{
    if (!seg->hdr)
        return;
    xp_shm_seg_unlink(seg);
    munmap(seg->hdr, seg->size);
    seg->hdr = NULL;
}

/* A zombie (dead, not yet reaped by its launcher) still answers kill(pid, 0). */
static int is_zombie(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the command name may contain anything */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

int xp_pid_alive(pid_t pid)
{
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 0;
    return !is_zombie(pid);
}

/* A position inside an iovec array. */
typedef struct iov_cursor {
    const struct iovec *iov;
    int n, i;
    size_t off;
} iov_cursor_t;

static size_t iov_total(const struct iovec *iov, int n, int *ok)
{
    size_t total = 0;
    *ok = n >= 0 && (n == 0 || iov);
    for (int i = 0; *ok && i < n; i++) {
        if (iov[i].iov_len && !iov[i].iov_base)
            *ok = 0;
        total += iov[i].iov_len;
    }
    return total;
}

/* Fill out[] with up to max entries starting at the cursor. */
static int cursor_batch(const iov_cursor_t *c, struct iovec *out, int max)
{
    int k = 0;
    for (int i = c->i; i < c->n && k < max; i++) {
        size_t skip = i == c->i ? c->off : 0;
        if (c->iov[i].iov_len == skip)
            continue;
        out[k].iov_base = (char *)c->iov[i].iov_base + skip;
        out[k].iov_len = c->iov[i].iov_len - skip;
        k++;
    }
    return k;
}

static void cursor_advance(iov_cursor_t *c, size_t bytes)
{
    while (bytes && c->i < c->n) {
        size_t left = c->iov[c->i].iov_len - c->off;
        if (bytes < left) {
            c->off += bytes;
            return;
        }
        bytes -= left;
        c->i++;
        c->off = 0;
    }
}

static xp_status_t cma_errno_status(pid_t pid)
{
    switch (errno) {
    case ESRCH: return XP_ERR_PEER_DEAD;
    case EPERM: return XP_ERR_PERMISSION;
    case EFAULT: return XP_ERR_INVALID;
    case ENOMEM: return XP_ERR_NO_MEMORY;
    case ENOSYS: return XP_ERR_UNSUPPORTED;
    default:
        xp_log_errno(XP_LOG_ERROR, "process_vm_readv/writev with pid %d", (int)pid);
        return XP_ERR_IO;
    }
}

#define CMA_BATCH 64

xp_status_t xp_cma_copy(pid_t pid, int do_write, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote)
{
    int ok_l, ok_r;
    size_t total = iov_total(local, nlocal, &ok_l), rtotal = iov_total(remote, nremote, &ok_r);
    if (!ok_l || !ok_r || total != rtotal)
        return XP_ERR_INVALID;
    iov_cursor_t lc = {local, nlocal, 0, 0}, rc = {remote, nremote, 0, 0};
    struct iovec lb[CMA_BATCH], rb[CMA_BATCH];
    size_t done = 0;
    while (done < total) {
        int nl = cursor_batch(&lc, lb, CMA_BATCH), nr = cursor_batch(&rc, rb, CMA_BATCH);
        ssize_t n = do_write ? process_vm_writev(pid, lb, (unsigned long)nl, rb, (unsigned long)nr, 0)
                             : process_vm_readv(pid, lb, (unsigned long)nl, rb, (unsigned long)nr, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return cma_errno_status(pid);
        }
        if (n == 0)
            return XP_ERR_INVALID;
        cursor_advance(&lc, (size_t)n);
        cursor_advance(&rc, (size_t)n);
        done += (size_t)n;
    }
    return XP_OK;
}

/* n bytes from s to d: xp_copy, or memmove where the two overlap (both
 * lists may name the same memory). */
static void copy_or_move(char *d, const char *s, size_t n)
{
    if ((uintptr_t)d + n <= (uintptr_t)s || (uintptr_t)s + n <= (uintptr_t)d)
        xp_copy(d, s, n);
    else
        memmove(d, s, n);
}

xp_status_t xp_iov_copy(const struct iovec *dst, int ndst, const struct iovec *src, int nsrc)
{
    int ok_d, ok_s;
    size_t total = iov_total(dst, ndst, &ok_d), stotal = iov_total(src, nsrc, &ok_s);
    if (!ok_d || !ok_s || total != stotal)
        return XP_ERR_INVALID;
    iov_cursor_t dc = {dst, ndst, 0, 0}, sc = {src, nsrc, 0, 0};
    while (dc.i < ndst && sc.i < nsrc) {
        size_t dl = dst[dc.i].iov_len - dc.off, sl = src[sc.i].iov_len - sc.off;
        size_t n = dl < sl ? dl : sl;
        if (n)
            copy_or_move((char *)dst[dc.i].iov_base + dc.off,
                         (const char *)src[sc.i].iov_base + sc.off, n);
        if (n == dl) { dc.i++; dc.off = 0; } else dc.off += n;
        if (n == sl) { sc.i++; sc.off = 0; } else sc.off += n;
    }
    return XP_OK;
}

xp_status_t xp_iov_copy_in(const struct iovec *dst, int ndst, size_t dst_off, const void *src,
                           size_t n)
{
    int ok;
    size_t total = iov_total(dst, ndst, &ok);
    if (!ok || dst_off > total || n > total - dst_off)
        return XP_ERR_INVALID;
    iov_cursor_t dc = {dst, ndst, 0, 0};
    cursor_advance(&dc, dst_off);
    for (const char *s = src; n; dc.i++, dc.off = 0) {
        size_t k = dst[dc.i].iov_len - dc.off;
        if (k > n)
            k = n;
        xp_copy((char *)dst[dc.i].iov_base + dc.off, s, k);
        s += k;
        n -= k;
    }
    return XP_OK;
}

int xp_membarrier_register(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
        return 0;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

void xp_membarrier_global(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) < 0) {
        xp_log_errno(XP_LOG_ERROR, "membarrier");
        xp_fence();
    }
}

/* Repetitions of each copy in xp_shm_copy_probe, after one that warms the
 * buffers: the fastest counts, so a probe preempted in some of them (an
 * oversubscribed node) still reads what a copy costs. */
#define PROBE_REPS 8

void xp_shm_copy_probe(size_t len, xp_shm_copy_probe_t *out)
{
    *out = (xp_shm_copy_probe_t){ .len = len };
    unsigned char *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
    if (!a || !b || !len)
        goto done;
    memset(a, 1, len);
    memset(b, 2, len);
    struct iovec l = { b, len }, r = { a, len };
    double copy = 0, cma = 0;
    for (int i = 0; i <= PROBE_REPS; i++) {
        uint64_t t0 = xp_time_ns();
        memcpy(b, a, len);
        __asm__ volatile("" : : "r"(b) : "memory"); /* the copy is not dead */
        uint64_t t1 = xp_time_ns();
        if (xp_cma_copy(getpid(), 0, &l, 1, &r, 1) != XP_OK)
            goto done;
        uint64_t t2 = xp_time_ns();
        if (i == 1 || (i > 1 && (double)(t1 - t0) < copy))
            copy = (double)(t1 - t0);
        if (i == 1 || (i > 1 && (double)(t2 - t1) < cma))
            cma = (double)(t2 - t1);
    }
    *out = (xp_shm_copy_probe_t){ .copy_ns = copy, .cma_ns = cma, .cma_ok = 1, .len = len };
done:
    free(a);
    free(b);
}

int xp_shm_bounce_pays(const xp_shm_copy_probe_t *p)
{
    return !p->cma_ok || p->cma_ns > XP_SHM_BOUNCE_RATIO * p->copy_ns;
}

/* Bytes of the copies XP_SHM_BOUNCE=auto times: a mid-size transfer. */
#define PROBE_LEN (64u << 10)

size_t xp_shm_bounce_limit(xp_shm_copy_probe_t *probe)
{
    const xp_config_t *c = xp_config();
    *probe = (xp_shm_copy_probe_t){ 0 };
    if (!c->shm_bounce_max || c->shm_bounce == XP_SHM_BOUNCE_OFF)
        return 0;
    if (c->shm_bounce == XP_SHM_BOUNCE_ON)
        return c->shm_bounce_max;
    xp_shm_copy_probe(PROBE_LEN, probe);
    return xp_shm_bounce_pays(probe) ? c->shm_bounce_max : 0;
}

int xp_shm_single_copies(const xp_shm_copy_probe_t *probe)
{
    return xp_config()->shm_bounce == XP_SHM_BOUNCE_OFF ||
           (probe->len && !xp_shm_bounce_pays(probe));
}

size_t xp_shm_eager_limit(int single, size_t verdict)
{
    size_t v = xp_config()->shm_eager_max;
    return v ? v : single ? verdict : SIZE_MAX;
}

size_t xp_shm_mid_bounce_limit(void)
{
    const xp_config_t *c = xp_config();
    if (c->shm_bounce != XP_SHM_BOUNCE_AUTO || !c->shm_heap_size)
        return 0;
    return c->shm_bounce_max < XP_SHM_MID_BOUNCE_MAX ? c->shm_bounce_max : XP_SHM_MID_BOUNCE_MAX;
}
