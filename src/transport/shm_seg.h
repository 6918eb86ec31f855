/*
 * transport/shm_seg.h - a process's shared-memory segment, cross-memory
 * copies (process_vm_readv/writev) and peer liveness. Independent of the
 * runtime so that fork()-based tests can use it directly.
 *
 * A segment holds a header (magic, owner pid), the owner's process doorbell on
 * its own cache line, and the owner's inbox ring. The owner creates it; peers
 * attach by name; the owner unlinks the name once every peer has attached, so
 * nothing is left in /dev/shm even if a process is killed.
 */
#ifndef XP_TRANSPORT_SHM_SEG_H
#define XP_TRANSPORT_SHM_SEG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/shm_ring.h"
#include "util/atomic.h"

#define XP_SHM_NAME_MAX 96

/* hdr->flags: the owner's sleepers issue a global membarrier before their
 * last check, so producers that registered need no fence when ringing. */
#define XP_SHM_SEG_ASYM_FENCE 1u

/* A large single-copy transfer that the segment's owner shares with the
 * peer whose memory it copies (shm.c, split_copy): both claim fixed-size
 * chunks from `claim` = (transfer generation << 32) | next chunk, so a late
 * helper whose generation is stale claims nothing; `done` counts the chunks
 * the helper finished in the current generation; `error` is its failure. */
typedef struct xp_shm_split {
    uint64_t claim;
    uint32_t done;
    int32_t error;
} xp_shm_split_t;

/* The node's eager probe (shm_eager.c), used in the segment of the node's
 * first local rank only: its pings (and the source its peer reads by
 * process_vm_readv), the second local rank's pongs, the verdict, each on
 * its own line, then the buffer the ring-like copies go through. Pages
 * nobody touches cost nothing. */
#define XP_SHM_PROBE_MAX 32768u
typedef struct xp_shm_probe_area {
    uint64_t ping XP_CACHE_ALIGNED; /* seq << 32 | what to do */
    uint64_t src;                   /* the prober's private source */
    uint64_t pong XP_CACHE_ALIGNED; /* seq << 32 | status */
    uint64_t verdict XP_CACHE_ALIGNED; /* published bit (bit 63) | eager limit */
    unsigned char buf[XP_SHM_PROBE_MAX] XP_CACHE_ALIGNED;
} xp_shm_probe_area_t;

/* CPUs a segment's header records (its owner's affinity mask, bit i: CPU i). */
#define XP_SHM_CPU_WORDS 16 /* 1024 CPUs */

typedef struct xp_shm_seg_hdr {
    uint64_t magic;
    uint32_t version;
    int32_t pid;          /* owner */
    uint64_t size;        /* bytes mapped */
    uint32_t flags;       /* XP_SHM_SEG_* */
    uint64_t cpus[XP_SHM_CPU_WORDS]; /* the owner's CPUs when it created the segment:
                                      * local peers count the node's (shm.c) */
    xp_doorbell_t doorbell XP_CACHE_ALIGNED;
    char pad_[XP_CACHE_LINE - sizeof(xp_doorbell_t)];
    xp_shm_split_t split XP_CACHE_ALIGNED; /* written by the owner and its helper */
    xp_shm_probe_area_t probe;           /* shm_eager.c */
    xp_shm_ring_t ring XP_CACHE_ALIGNED; /* the inbox; cells follow */
} xp_shm_seg_hdr_t;

typedef struct xp_shm_seg {
    xp_shm_seg_hdr_t *hdr; /* NULL when not mapped */
    size_t size;
    char name[XP_SHM_NAME_MAX]; /* "/xp-<job>-<rank>" */
    int owner;                  /* 1: created by this process */
    int linked;                 /* 1: the name still exists in /dev/shm */
} xp_shm_seg_t;

/* Create (exclusively; a stale name from a crashed run is replaced) and map a
 * segment with a ring of ncells cells (power of two). */
/* Create the shared-memory object `name` with `size` bytes, replacing a stale
 * one a crashed job left behind. Returns its descriptor, or -1 with *st set
 * (the error is logged). Used for inboxes and for the shared heap. */
int xp_shm_create_sized(const char *name, size_t size, xp_status_t *st);
xp_status_t xp_shm_seg_create(const char *name, uint32_t ncells, xp_shm_seg_t *seg);
/* Map a peer's segment by name and check it. */
xp_status_t xp_shm_seg_attach(const char *name, xp_shm_seg_t *seg);
/* Remove the name (the mappings stay valid). Idempotent. */
void xp_shm_seg_unlink(xp_shm_seg_t *seg);
/* Unmap (and unlink if this process owns it and has not yet). */
void xp_shm_seg_close(xp_shm_seg_t *seg);

/* Nonzero while process pid exists (kill(pid, 0) does not fail with ESRCH). */
int xp_pid_alive(pid_t pid);

/* Copy between local iovecs and pid's address space (totals must be equal);
 * do_write: local -> remote. Handles partial transfers and > IOV_MAX entries.
 * XP_ERR_PEER_DEAD if pid is gone, XP_ERR_PERMISSION if not allowed,
 * XP_ERR_INVALID for bad addresses or unequal totals. */
xp_status_t xp_cma_copy(pid_t pid, int do_write, const struct iovec *local, int nlocal,
                        const struct iovec *remote, int nremote);
/* What a copy costs this machine, for XP_SHM_BOUNCE=auto (shm_bounce.c):
 * the fastest of a few memcpys of len bytes between two cached buffers of
 * ours, and of a few process_vm_readv of the same bytes from ourselves (the
 * same page pinning as from a peer). cma_ok: 0 when process_vm_readv is not
 * allowed here; len: the bytes probed (0: no probe). */
typedef struct xp_shm_copy_probe {
    double copy_ns, cma_ns;
    int cma_ok;
    size_t len;
} xp_shm_copy_probe_t;
void xp_shm_copy_probe(size_t len, xp_shm_copy_probe_t *out);
/* Whether staging in a bounce block pays, by the probe: where
 * process_vm_readv is not allowed, or costs over XP_SHM_BOUNCE_RATIO
 * memcpys of the same bytes. A bounce is two memcpys (into our heap, and
 * the reader's out of it, pipelined) against one pinned copy. On the AMD VM
 * of rounds 10-11 the readv cost 10-15 memcpys and blocks were 3-4x faster;
 * on the Intel VM of round 15 it cost 2 and they were 2x slower (ping-pong,
 * 32 KiB - 1 MiB; docs/performance-notes.md). Pure. */
#define XP_SHM_BOUNCE_RATIO 6.0
int xp_shm_bounce_pays(const xp_shm_copy_probe_t *p);
/* XP_SHM_BOUNCE's and XP_SHM_EAGER_PROBE's choices (util/config_vars.h). */
enum { XP_SHM_BOUNCE_AUTO, XP_SHM_BOUNCE_ON, XP_SHM_BOUNCE_OFF };
enum { XP_SHM_PROBE_AUTO, XP_SHM_PROBE_ON, XP_SHM_PROBE_OFF };
/* XP_SHM_BOUNCE_MAX where XP_SHM_BOUNCE is on, or auto and the probe (of a
 * 64 KiB copy, run here) says blocks pay; else 0. *probe: the reading, all
 * zero where none was taken (on, off). */
size_t xp_shm_bounce_limit(xp_shm_copy_probe_t *probe);
/* Whether single copies were chosen: XP_SHM_BOUNCE off, or auto and its
 * probe (xp_shm_bounce_limit's) found them cheaper. */
int xp_shm_single_copies(const xp_shm_copy_probe_t *probe);
/* XP_SHM_EAGER_MAX resolved, given whether single copies were chosen and
 * the node's eager probe's verdict (shm_eager.c; XP_SHM_AUTO_EAGER_MAX
 * where it ran none): the setting, else the verdict where single, else
 * SIZE_MAX (whatever fits a packet). Above it a put or get goes by single
 * copy rather than through the rings: on the Intel VM of round 15 a
 * ping-pong of 2 KiB took 1.1-1.2 us in packets and 1.6 by single copy, 4
 * KiB 1.55 both ways, 8 KiB 2.7 against 1.7, 16 KiB 4.9 against 2.0
 * (docs/performance-notes.md). */
#define XP_SHM_AUTO_EAGER_MAX 4096u
size_t xp_shm_eager_limit(int single, size_t verdict);
/* Where the eager probe's verdict is XP_SHM_PROBE_MAX and XP_SHM_BOUNCE
 * auto chose single copies, bounce blocks up to this size (shm_internal.h,
 * xp_shm_bounce_mid). */
#define XP_SHM_MID_BOUNCE_MAX (512u << 10)
/* The limit of those mid-size blocks by the settings: XP_SHM_MID_BOUNCE_MAX
 * or a smaller XP_SHM_BOUNCE_MAX; 0 where XP_SHM_BOUNCE is not auto or
 * there is no shared heap (XP_SHM_HEAP_SIZE=0). */
size_t xp_shm_mid_bounce_limit(void);
/* The eager probe's verdict (shm_eager.c), given what moving
 * XP_SHM_PROBE_SIZE0 << i bytes (i < n) cost through a shared buffer
 * (ring[i]: a memcpy in, a memcpy out on the other core) and by
 * process_vm_readv (single[i]), each the sum of its round trips' medians
 * with untouched and with freshly written data: the largest of those sizes
 * that the copies through memory move faster, and every smaller one too;
 * else XP_SHM_AUTO_EAGER_MAX. Pure. */
#define XP_SHM_PROBE_SIZE0 8192u
size_t xp_shm_eager_pick(const double *ring, const double *single, int n);
/* The verdict word's published bit (xp_shm_probe_area_t::verdict). */
#define XP_SHM_VERDICT_DONE (1ull << 63)
/* The eager limit a rank takes from the verdict word it read: the
 * published limit where it is one the prober gives (XP_SHM_AUTO_EAGER_MAX
 * or one of the probed sizes), else XP_SHM_AUTO_EAGER_MAX (unpublished in
 * time, or a word no prober of ours wrote: a segment of another version,
 * a stray store). Pure. */
size_t xp_shm_eager_verdict(uint64_t word);
/* Same semantics within this process (memcpy). */
xp_status_t xp_iov_copy(const struct iovec *dst, int ndst, const struct iovec *src, int nsrc);
/* Copy n bytes from src into dst at byte offset dst_off (XP_ERR_INVALID when
 * dst is shorter). */
xp_status_t xp_iov_copy_in(const struct iovec *dst, int ndst, size_t dst_off, const void *src,
                           size_t n);

/* Ring a peer's (or our own) doorbell after publishing a packet: the futex
 * path only if somebody sleeps there. Seeing `sleepers` after our publication
 * needs a store-load fence; it is left out (a compiler barrier only) when the
 * sleeper issues xp_membarrier_global() instead (asymmetric fence: the rare
 * sleeper pays, not every send). The fence was measured to cut the 8-byte
 * packet rate from ~87 to ~22 M/s on the 2-core development machine. */
/* Why the asymmetric form is safe: the sleeper increments `sleepers`, then
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED runs a full barrier on every CPU that runs
 * a thread of a registered process (a sender that is not running passed one
 * in its last context switch), then checks the ring. A sender whose load of
 * `sleepers` came before that barrier had its packet store drained by it,
 * so the sleeper's check sees the packet; one whose load came after sees
 * sleepers != 0 and rings. Needs: the sender registered (need_fence is 0
 * only then) and every sleeper on the doorbell going through xp_tl_wait. */
static inline void xp_shm_doorbell_ring_fenced(xp_doorbell_t *db, int need_fence)
{
    if (__builtin_expect(need_fence, 0)) /* XP_SHM_ASYM_FENCE=0, or no membarrier */
        xp_fence();
    else
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(xp_load_relaxed(&db->sleepers) != 0, 0))
        xp_doorbell_ring(db);
}

static inline void xp_shm_doorbell_ring(xp_doorbell_t *db)
{
    xp_shm_doorbell_ring_fenced(db, 1);
}

/* Register this process for global expedited membarriers; 1 on success. */
int xp_membarrier_register(void);
/* A full memory barrier on every running thread of every registered process. */
void xp_membarrier_global(void);

#endif
