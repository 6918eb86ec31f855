/*
 * ptl/direct.h - atomics, puts and gets applied straight to a peer's
 * shared heap.
 *
 * Every local peer maps every process's shared heap (transport/shmheap.h),
 * and the target applies an atomic on aligned 1-8-byte elements with one
 * hardware read-modify-write per element (xp_atomic_apply). So when the
 * entry an atomic would land in lies in the target's heap and asks nothing
 * of the target's CPU (no event, no counter), the initiator can apply the
 * same instruction through its own mapping: one cache-line transfer instead
 * of a request, a handler and a REPLY. A put of up to XP_SHM_DIRECT_MAX
 * bytes into such an entry is a copy through the mapping in the same way
 * (the target's handler would make the same copy).
 *
 * The target says which entries qualify: for each (NI slot, PT index) a
 * descriptor in its heap's meta bytes (XP_SHMHEAP_META) describes the head
 * of the PT's priority list when that head is an LE that
 *   - is persistent, one contiguous buffer inside the heap, PTL_LE_OP_PUT
 *     or PTL_LE_OP_GET or both (XP_LE_FAST_PUT / XP_LE_FAST_GET: no
 *     USE_ONCE, no MANAGE_LOCAL, no NO_TRUNCATE);
 *   - counts nothing (no CT with EVENT_CT_COMM) and posts no full event
 *     (no EQ on the PT, or EVENT_COMM_DISABLE / SUCCESS_DISABLE);
 * on an enabled, non-matching PT without PTL_PT_FLOWCTRL. The target
 * rewrites it under the PT lock whenever that head or the PT's state
 * changes (xp_direct_sync).
 *
 * The protocol with initiators is a Dekker handshake: an initiator adds 1
 * to the descriptor's `inflight` (a locked instruction: a full fence), then
 * reads `open`; the target closing it stores 0 in `open`, fences, and waits
 * until `inflight` is 0. So after the close returns - before PtlLEUnlink,
 * PtlPTDisable or PtlNIFini returns - no initiator touches the buffer, and
 * an initiator that saw it open saw the offset and length of that opening.
 *
 * Where the target can issue a global membarrier (XP_DIRECT_ASYM), an
 * initiator thread that takes them (its window's asym) and owns one of its
 * process's XP_DIRECT_THREADS busy words in the target's meta bytes uses
 * the asymmetric form instead, once it has registered for the descriptor's
 * current opening: a plain store of the descriptor's id into its busy
 * word, then the reads of `open` and of the opening's number `gen` (still
 * the one registered for); a plain store of 0 after the access. It
 * registers on an access by the locked form: inside that hold it sets
 * `asym_used` and notes (id, gen) beside its busy word. The close stores 0
 * in `open`, fences, waits for `inflight`; then, if the opening has
 * `asym_used`, issues the membarrier (a full barrier in every such
 * initiator thread: either its read of `open` comes after it, or its store
 * of the id is visible after it) and waits until no busy word holds the
 * descriptor's id. An access costs no locked instruction after the first
 * of an opening; a close costs a membarrier (a few microseconds) only
 * where some initiator used the busy words since the opening.
 *
 * Order: an initiator takes the direct path only when the target has
 * handled every request it sent there before (the transport's quiet():
 * ring cells are released after their handler), so a put sent earlier is
 * in memory before the atomic applies (PTL_TOTAL_DATA_ORDERING). What the
 * initiator does afterwards goes through the ring and comes after it.
 *
 * A get from such an entry (one with PTL_LE_OP_GET) is, the same way, the
 * copy the target's handler would make into the REPLY, made by the
 * initiator out of the mapping into its MD.
 *
 * The initiator posts its own SEND, ACK and REPLY events and counts as the
 * answer would have (ops.c). Everything else - a matching NI, a malloc
 * buffer, events or counts at the target, misaligned or long elements
 * (long double, double complex), a range past the entry (truncation), a
 * put or get over XP_SHM_DIRECT_MAX (0, the default: none), a put over
 * XP_DIRECT_GATHER_MAX from an iovec MD - takes the ring.
 * XP_SHM_DIRECT=0 turns the path off.
 *
 * A put of any size is one copy inside PtlPut, with the descriptor held:
 * the target's CPU takes no part (an entry that qualifies counts nothing,
 * so its owner learns of data by reading memory, and a ring put would need
 * its progress thread to wake), and a close waits for the copy.
 */
#ifndef XP_PTL_DIRECT_H
#define XP_PTL_DIRECT_H

#include <stddef.h>
#include <stdint.h>

#include "portals4.h"
#include "transport/transport.h"

struct xp_ni;
struct xp_pt;

enum {
    XP_DIRECT_OPEN = 1u << 0,  /* the descriptor describes a qualifying entry */
    XP_DIRECT_GET = 1u << 1,   /* ... which has PTL_LE_OP_GET (gets; with PUT: fetch, swap) */
    XP_DIRECT_NOACK = 1u << 2, /* ... and PTL_LE_ACK_DISABLE */
    XP_DIRECT_PUT = 1u << 3,   /* ... which has PTL_LE_OP_PUT (puts, atomics) */
    XP_DIRECT_ASYM = 1u << 4,  /* its owner closes with a global membarrier (busy words) */
};

/* Busy words per process in a target's meta bytes (the threads of an
 * initiator that may access without a locked instruction). */
#define XP_DIRECT_THREADS 4

#define XP_DIRECT_PTS 256 /* PT indexes per NI slot: max_pt_index is at most 255 */

/* One per (NI slot, PT index) in the meta bytes of its owner's heap, on its
 * own cache line: initiators write `inflight`, so the line moves between
 * them, and the owner reads it only when it closes the descriptor. */
typedef struct xp_direct_desc {
    uint64_t inflight; /* initiators between their look at `open` and their update */
    uint32_t open;     /* XP_DIRECT_* flags; 0: closed */
    uint32_t uid;      /* the uid the entry accepts, PTL_UID_ANY: any */
    uint64_t off;      /* the entry's buffer: offset in the heap ... */
    uint64_t len;      /* ... and length (set while closed) */
    uint64_t gen;      /* openings so far (bumped while closed) */
    uint32_t asym_used; /* this opening has busy-word users (XP_DIRECT_ASYM) */
} __attribute__((aligned(64))) xp_direct_desc_t;

static inline xp_direct_desc_t *xp_direct_desc(unsigned char *meta, int slot,
                                               ptl_pt_index_t pt_index)
{
    return (xp_direct_desc_t *)(void *)meta + (size_t)slot * XP_DIRECT_PTS + pt_index;
}

/* Whether the target behind route r publishes an entry on (slot, pt_index)
 * now: a plain look at a line nobody writes while it stays so, before
 * anything else of the direct path. Most targets publish nothing. */
static inline int xp_direct_maybe(const xp_tl_route_t *r, int slot, ptl_pt_index_t pt_index)
{
    return r->window && pt_index < XP_DIRECT_PTS &&
           __atomic_load_n(&xp_direct_desc(r->window->meta, slot, pt_index)->open,
                           __ATOMIC_RELAXED) != 0;
}

/* Target side, PT lock held: make the PT's descriptor describe its
 * priority head if that qualifies, or close it (waiting for initiators in
 * flight). Cheap when nothing changed. */
void xp_direct_sync(struct xp_ni *ni, struct xp_pt *pt);

/* Initiator side: apply an atomic (len bytes of `data`, `operand` for the
 * swap family) at remote_offset of the entry on (slot, pt_index) of the
 * peer behind route r, through its window; `fetch` when the call fetches
 * (the entry must take gets), the old values then in fetch_out (len bytes,
 * not overlapping data). Returns 1 when applied, with the descriptor's
 * XP_DIRECT_* flags in *flags; 0 (nothing touched) when the message must
 * go through the ring. The caller has checked (op, dt, len). */
int xp_direct_atomic(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                     uint32_t uid, ptl_size_t remote_offset, ptl_op_t op, ptl_datatype_t dt,
                     const void *data, const void *operand, size_t len, int fetch,
                     void *fetch_out, unsigned *flags);

/* Largest direct put from an iovec MD, whose bytes are gathered on the
 * stack first. From a contiguous MD the limit is XP_SHM_DIRECT_MAX. */
#define XP_DIRECT_GATHER_MAX 4096

/* The same for a put of len bytes of `data` (the caller applies
 * XP_SHM_DIRECT_MAX): copied into the entry through our mapping, the
 * descriptor held for the whole copy. 1: written; 0: nothing touched, send
 * it. */
int xp_direct_put(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const void *data, size_t len,
                  unsigned *flags);

struct xp_region;
/* A get of len bytes at remote_offset of the entry (which must take gets)
 * into dst at dst_off (plain or iovec; the caller applies
 * XP_SHM_DIRECT_MAX): copied out through our mapping, the descriptor held
 * for the whole copy. 1: read; 0: nothing touched, send the request. */
int xp_direct_get(const xp_tl_route_t *r, int rank, int slot, ptl_pt_index_t pt_index,
                  uint32_t uid, ptl_size_t remote_offset, const struct xp_region *dst,
                  ptl_size_t dst_off, size_t len);

#endif
