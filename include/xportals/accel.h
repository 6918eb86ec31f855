/*
 * xportals/accel.h - accelerator agents, user-mode task queues, signals and
 * memory-type detection (HSA-style, see DESIGN.md §4).
 *
 * Signals are 64-bit values that producers store / add to with release order
 * and consumers wait on (spin briefly, then sleep on a futex). A signal is a
 * plain struct, so it can be placed in shared memory and used by several
 * processes (or in pinned mapped memory and updated by a GPU).
 *
 * A task queue is a ring of 64-byte packets in the HSA "Architected Queuing
 * Language" (AQL) layout, with monotonically increasing 64-bit read and write
 * indices and a doorbell signal. Any number of producers, in any number of
 * processes that map the queue, reserve slots with an atomic add on the write
 * index, write the body, publish the header last and ring the doorbell. One
 * agent consumes it: the CPU agent (worker threads) or the CUDA agent (a
 * persistent GPU kernel, loaded from a plugin at run time).
 */
#ifndef XPORTALS_ACCEL_H
#define XPORTALS_ACCEL_H

#include <stddef.h>
#include <stdint.h>
#include "xportals/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ signals */

/* A signal. Fields are public only so its size is known and it can live in
 * shared or mapped memory; use the functions below to touch it. */
typedef struct xp_signal {
    int64_t value;
    uint32_t seq;      /* futex word: bumped by every update */
    uint32_t waiters;  /* sleepers on seq, so updates only wake when needed */
    uint32_t flags;    /* XP_SIGNAL_F_* */
    uint32_t begun;    /* host updates begun; seq catches up when they are done */
    uint64_t pad_[5];
} __attribute__((aligned(64))) xp_signal_t;

enum {
    /* The signal may be updated by a device that cannot wake futex sleepers
     * (a GPU): waiters sleep in short slices and re-check. */
    XP_SIGNAL_F_DEVICE = 1u << 0,
};

typedef enum {
    XP_SIGNAL_EQ  = 0,
    XP_SIGNAL_NE  = 1,
    XP_SIGNAL_LT  = 2,
    XP_SIGNAL_GTE = 3,
} xp_signal_cond_t;

XP_EXPORT void xp_signal_init(xp_signal_t *sig, int64_t value, uint32_t flags);
/* Acquire load of the value. */
XP_EXPORT int64_t xp_signal_load(const xp_signal_t *sig);
/* Release store; wakes waiters. */
XP_EXPORT void xp_signal_store(xp_signal_t *sig, int64_t value);
/* Atomic add (release); returns the value before. Wakes waiters. */
XP_EXPORT int64_t xp_signal_add(xp_signal_t *sig, int64_t delta);
/* Atomic exchange; returns the value before. */
XP_EXPORT int64_t xp_signal_exchange(xp_signal_t *sig, int64_t value);
/* Compare-and-swap: stores desired if the value equals expected; returns the
 * value observed (== expected on success). */
XP_EXPORT int64_t xp_signal_cas(xp_signal_t *sig, int64_t expected, int64_t desired);
/* Wait until (value cond compare) holds. timeout_ns: UINT64_MAX = forever.
 * XP_OK (the satisfying value in *value_out if non-NULL), XP_ERR_TIMEOUT,
 * XP_ERR_INVALID (NULL signal, bad condition). With XP_PROGRESS=inline and
 * Portals initialised, the waiting thread also handles incoming Portals
 * packets (XTQ task descriptors among them) and sees the signal within
 * 50 us of its change when no packet arrives. */
XP_EXPORT xp_status_t xp_signal_wait(xp_signal_t *sig, xp_signal_cond_t cond, int64_t compare,
                                     uint64_t timeout_ns, int64_t *value_out);

/* ------------------------------------------------------------- AQL packets */

#define XP_AQL_PACKET_SIZE 64

/* Header bits (HSA packet header layout). */
enum {
    XP_AQL_HEADER_TYPE_SHIFT = 0, /* 8 bits: xp_aql_type_t */
    XP_AQL_HEADER_BARRIER_SHIFT = 8, /* 1 bit: wait for every earlier packet */
    XP_AQL_HEADER_ACQUIRE_SHIFT = 9, /* 2 bits: acquire fence scope */
    XP_AQL_HEADER_RELEASE_SHIFT = 11, /* 2 bits: release fence scope */
};
#define XP_AQL_HEADER_BARRIER (1u << XP_AQL_HEADER_BARRIER_SHIFT)

typedef enum {
    XP_AQL_TYPE_VENDOR = 0,
    XP_AQL_TYPE_INVALID = 1,        /* slot free / not yet published */
    XP_AQL_TYPE_KERNEL_DISPATCH = 2,
    XP_AQL_TYPE_BARRIER_AND = 3,
    XP_AQL_TYPE_AGENT_DISPATCH = 4,
    XP_AQL_TYPE_BARRIER_OR = 5,
} xp_aql_type_t;

/* Kernel dispatch: run kernel_object over a grid of work-items grouped in
 * work-groups. setup bits 0-1: number of dimensions (1..3). The 16 bits
 * `reserved0` carry the XTQ queue index (see portals4_xtq.h). */
typedef struct xp_aql_kernel_dispatch {
    uint16_t header;
    uint16_t setup;
    uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z;
    uint16_t reserved0;
    uint32_t grid_size_x, grid_size_y, grid_size_z;
    uint32_t private_segment_size;
    uint32_t group_segment_size;
    uint64_t kernel_object;     /* CPU agent: an xp_cpu_kernel_fn_t */
    uint64_t kernarg_address;   /* pointer to the kernel arguments */
    uint64_t reserved2;
    uint64_t completion_signal; /* xp_signal_t *, 0 = none; decremented on completion */
} xp_aql_kernel_dispatch_t;

/* Agent dispatch: call a function with four arguments. HSA leaves the word
 * at offset 48 reserved; Xportals names it `function` (the function the CPU
 * agent calls). `type` is passed through to the function unchanged. The low
 * 16 bits of `reserved0` carry the XTQ queue index. */
typedef struct xp_aql_agent_dispatch {
    uint16_t header;
    uint16_t type;
    uint32_t reserved0;
    uint64_t return_address;
    uint64_t arg[4];
    uint64_t function;          /* CPU agent: an xp_agent_fn_t */
    uint64_t completion_signal;
} xp_aql_agent_dispatch_t;

/* Barrier-AND (all non-null dependencies reach 0) / barrier-OR (any does). */
typedef struct xp_aql_barrier {
    uint16_t header;
    uint16_t reserved0;
    uint32_t reserved1;
    uint64_t dep_signal[5];     /* xp_signal_t *, 0 = unused */
    uint64_t reserved2;
    uint64_t completion_signal;
} xp_aql_barrier_t;

typedef union xp_aql_packet {
    uint16_t header;
    xp_aql_kernel_dispatch_t kernel;
    xp_aql_agent_dispatch_t agent;
    xp_aql_barrier_t barrier;
    uint8_t bytes[XP_AQL_PACKET_SIZE];
} xp_aql_packet_t;

static inline uint16_t xp_aql_header(xp_aql_type_t type, int barrier)
{
    return (uint16_t)(((unsigned)type << XP_AQL_HEADER_TYPE_SHIFT) |
                      (barrier ? XP_AQL_HEADER_BARRIER : 0u));
}
static inline xp_aql_type_t xp_aql_header_type(uint16_t header)
{
    return (xp_aql_type_t)(header & 0xffu);
}

/* What a CPU kernel sees for one work-group. */
typedef struct xp_kernel_ctx {
    uint32_t group_id[3];       /* this work-group's coordinates */
    uint32_t group_size[3];     /* work-items in this group (clipped at the grid edge) */
    uint32_t base[3];           /* global id of the group's first work-item */
    uint32_t grid_size[3];
    void *kernarg;
    const xp_aql_kernel_dispatch_t *packet;
} xp_kernel_ctx_t;

/* A CPU "kernel": called once per work-group, loops over its work-items. */
typedef void (*xp_cpu_kernel_fn_t)(const xp_kernel_ctx_t *ctx);
/* An agent-dispatch function. */
typedef void (*xp_agent_fn_t)(uint16_t type, const uint64_t arg[4], void *return_address);

/* ------------------------------------------------------------------ queues */

typedef struct xp_queue xp_queue_t;   /* opaque */
typedef struct xp_agent xp_agent_t;   /* opaque */

/* Bytes of memory a queue of `size` packets occupies (size: power of two >= 2). */
XP_EXPORT size_t xp_queue_bytes(uint32_t size);
/* Create a queue in anonymous shared memory (inherited by fork()), not bound
 * to an agent. */
XP_EXPORT xp_status_t xp_queue_create(uint32_t size, xp_queue_t **queue_out);
/* Lay a queue out in caller memory of xp_queue_bytes(size) bytes, 64-byte
 * aligned (e.g. a shm_open segment mapped by several processes). */
XP_EXPORT xp_status_t xp_queue_init_at(void *mem, size_t bytes, uint32_t size, xp_queue_t **queue_out);
/* Use a queue another process laid out at `mem` (checks its header). */
XP_EXPORT xp_status_t xp_queue_attach(void *mem, size_t bytes, xp_queue_t **queue_out);
/* Free a queue made by xp_queue_create / xp_agent_queue_create (NULL ok).
 * Detaches from xp_queue_init_at / attach memory without freeing it. */
XP_EXPORT void xp_queue_destroy(xp_queue_t *queue);

XP_EXPORT uint32_t xp_queue_size(const xp_queue_t *queue);
XP_EXPORT uint64_t xp_queue_load_read_index(const xp_queue_t *queue);
XP_EXPORT uint64_t xp_queue_load_write_index(const xp_queue_t *queue);
XP_EXPORT xp_signal_t *xp_queue_doorbell(xp_queue_t *queue);

/* Producer, low level (HSA style): reserve `n` slots, returns the first index.
 * The caller waits until index - read_index < size before writing a slot. */
XP_EXPORT uint64_t xp_queue_add_write_index(xp_queue_t *queue, uint64_t n);
XP_EXPORT xp_aql_packet_t *xp_queue_slot(xp_queue_t *queue, uint64_t index);
/* Write packet bytes 2..63 into the slot, then its header with release order,
 * then ring the doorbell. */
XP_EXPORT void xp_queue_publish(xp_queue_t *queue, uint64_t index, const xp_aql_packet_t *pkt);

/* Producer, high level: reserve, wait while full (timeout_ns; UINT64_MAX =
 * forever), write, publish, ring. The packet's header type must be a valid
 * packet type. On XP_ERR_TIMEOUT the reserved slot is filled with a no-op
 * barrier so the queue never stalls. *index_out (may be NULL) = slot used. */
XP_EXPORT xp_status_t xp_queue_push(xp_queue_t *queue, const xp_aql_packet_t *pkt,
                                    uint64_t timeout_ns, uint64_t *index_out);
/* Non-blocking: XP_ERR_AGAIN if the queue is full (nothing reserved). */
XP_EXPORT xp_status_t xp_queue_try_push(xp_queue_t *queue, const xp_aql_packet_t *pkt,
                                        uint64_t *index_out);

/* Consumer side for hand-written consumers (an agent does this itself): the
 * packet at the read index if it is published, else NULL. */
XP_EXPORT xp_aql_packet_t *xp_queue_peek(xp_queue_t *queue);
/* Mark the packet at the read index free and advance the read index. */
XP_EXPORT void xp_queue_release(xp_queue_t *queue);

/* ------------------------------------------------------------------ agents */

typedef enum {
    XP_AGENT_CPU = 0,
    XP_AGENT_CUDA = 1,
} xp_agent_kind_t;

typedef struct xp_agent_params {
    xp_agent_kind_t kind;
    int num_workers;  /* CPU: worker threads (0: 1). CUDA: thread blocks of the persistent kernel (0: auto) */
    int device;       /* CUDA: device ordinal */
} xp_agent_params_t;

/* XP_ERR_UNSUPPORTED for CUDA when no plugin / no GPU. */
XP_EXPORT xp_status_t xp_agent_create(const xp_agent_params_t *params, xp_agent_t **agent_out);
/* Stops the agent after it drained what was published; its queues are freed. */
XP_EXPORT void xp_agent_destroy(xp_agent_t *agent);
XP_EXPORT xp_agent_kind_t xp_agent_kind(const xp_agent_t *agent);
/* Create a queue that this agent consumes (CUDA: in pinned mapped memory).
 * Several queues per agent are allowed. */
XP_EXPORT xp_status_t xp_agent_queue_create(xp_agent_t *agent, uint32_t size, xp_queue_t **queue_out);
/* Allocate / free a signal the agent can update (CUDA: pinned mapped memory,
 * flagged XP_SIGNAL_F_DEVICE; CPU: malloc'ed). */
XP_EXPORT xp_status_t xp_agent_signal_create(xp_agent_t *agent, int64_t value, xp_signal_t **signal_out);
XP_EXPORT void xp_agent_signal_destroy(xp_agent_t *agent, xp_signal_t *signal);

/* CUDA agent: built-in device functions usable as kernel_object. The kernel
 * receives (kernarg, work-item global id, grid size). */
enum {
    XP_CUDA_KERNEL_NOP = 1,
    XP_CUDA_KERNEL_SUM_F64 = 2,  /* kernarg: {double *dst, const double *src, uint64_t n}: dst[i] += src[i] */
    XP_CUDA_KERNEL_SUM_F32 = 3,  /* same with float */
    XP_CUDA_KERNEL_COPY = 4,     /* kernarg: {void *dst, const void *src, uint64_t bytes} */
};
/* Whether a CUDA agent can be created here (plugin loaded and a GPU present). */
XP_EXPORT int xp_accel_cuda_available(void);
/* A CUDA agent's queue is drained by a persistent kernel that never ends by
 * itself, and cudaFree, cudaFreeHost, cudaDeviceSynchronize and page-locked
 * allocations wait for every kernel of the device: called while a CUDA agent
 * runs, they would wait for good. Bracket them with pause / resume, which
 * let every agent kernel of the process exit before its next packet (tasks
 * already running finish; what is queued meanwhile stays queued) and
 * relaunch them. Pairs nest; call both from the same thread. The library's
 * own allocations (queues, signals) do this themselves. */
XP_EXPORT void xp_accel_cuda_pause(void);
XP_EXPORT void xp_accel_cuda_resume(void);

/* ------------------------------------------------------------ memory types */

typedef enum {
    XP_MEM_HOST = 0,
    XP_MEM_CUDA = 1,          /* device memory */
    XP_MEM_CUDA_MANAGED = 2,  /* managed (migratable) memory */
} xp_mem_type_t;

/* Which memory `ptr` points into. Host unless the CUDA plugin is loaded (it
 * is, lazily, when the process has the CUDA driver loaded) and the driver
 * says otherwise. Device ranges are cached. */
XP_EXPORT xp_mem_type_t xp_mem_type(const void *ptr);
/* Forget cached ranges overlapping [ptr, ptr+len) (call after freeing device memory). */
XP_EXPORT void xp_mem_type_invalidate(const void *ptr, size_t len);

#ifdef __cplusplus
}
#endif
#endif
