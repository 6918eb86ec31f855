/*
 * portals4.h - the Portals 4 network programming interface, as implemented by
 * Xportals (libportals.so).
 *
 * Names, types and semantics follow the Portals 4 specification (4.1/4.2)
 * and the names used by the reference implementation's header, so existing
 * clients (Sandia OpenSHMEM, Open MPI mtl/btl portals4) build unchanged.
 * The text here is ours. Every handle is a 32-bit scalar: compare handles
 * with == or PtlHandleIsEqual(). Numeric values of options and enumerations
 * are this library's own (clients recompile against this header).
 *
 * Xportals extensions are marked "Xportals:".
 */
#ifndef PORTALS4_H
#define PORTALS4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PTL_EXPORT
#define PTL_EXPORT __attribute__((visibility("default")))
#endif

#define PTL_MAJOR_VERSION 4
#define PTL_MINOR_VERSION 2

/* ------------------------------------------------------------------ return codes */

/* Every Ptl* function that returns int returns one of these. */
enum ptl_retvals {
    PTL_OK = 0,          /* success */
    PTL_ARG_INVALID,     /* an argument (handle, pointer, size, option) is invalid */
    PTL_CT_NONE_REACHED, /* PtlCTPoll timed out before any counter reached its test */
    PTL_EQ_DROPPED,      /* success, but at least one event was lost before this one */
    PTL_EQ_EMPTY,        /* no event available (or PtlEQPoll timed out) */
    PTL_FAIL,            /* non-specific failure */
    PTL_IGNORED,         /* PtlSetMap: a map is already in use; the call changed nothing */
    PTL_IN_USE,          /* the resource is busy (pending operations, attached entries) */
    PTL_INTERRUPTED,     /* a wait was interrupted (its CT/EQ freed, NI finalized) */
    PTL_LIST_TOO_LONG,   /* the list would exceed max_list_size */
    PTL_NO_INIT,         /* PtlInit has not completed successfully */
    PTL_NO_SPACE,        /* out of memory or of an object limit */
    PTL_PID_IN_USE,      /* the requested pid is taken */
    PTL_PT_FULL,         /* no free portal table entry */
    PTL_PT_EQ_NEEDED,    /* PTL_PT_FLOWCTRL requested without an event queue */
    PTL_PT_IN_USE,       /* the requested portal table index is taken */
    PTL_ABORTED,         /* a wait was ended by PtlAbort */
    /* Codes of the 4.0 drafts, kept so that older clients' switch statements
     * still compile; this library never returns them. */
    PTL_NI_NOT_LOGICAL,  /* 4.0: a logical-NI call on a physical NI (now PTL_ARG_INVALID) */
    PTL_SIZE_INVALID     /* 4.0: a map size differing from an earlier one (now PTL_ARG_INVALID) */
};
#define PTL_STATUS_LAST (PTL_SIZE_INVALID + 1)

/* ------------------------------------------------------------------ base types */

typedef uint64_t ptl_size_t;        /* sizes and offsets */
typedef uint32_t ptl_pt_index_t;    /* portal table index */
typedef uint64_t ptl_match_bits_t;  /* match bits (matching NIs) */
typedef uint64_t ptl_hdr_data_t;    /* 64 bits of out-of-band user data */
typedef unsigned int ptl_time_t;    /* milliseconds */
typedef unsigned int ptl_interface_t; /* interface number, 0..n-1 */
typedef uint32_t ptl_nid_t;         /* node identifier (physical addressing) */
typedef uint32_t ptl_pid_t;         /* process identifier (physical addressing) */
typedef uint32_t ptl_rank_t;        /* rank (logical addressing) */
typedef uint32_t ptl_uid_t;         /* user identifier */
typedef uint32_t ptl_jid_t;         /* job identifier (legacy, 4.0) */
typedef int ptl_sr_value_t;         /* value of a status register */
typedef unsigned char ptl_ni_fail_t; /* failure kind carried in events */

/* Handles: scalar, opaque, never reused while the object lives. */
typedef uint32_t ptl_handle_any_t;
typedef ptl_handle_any_t ptl_handle_ni_t;
typedef ptl_handle_any_t ptl_handle_eq_t;
typedef ptl_handle_any_t ptl_handle_ct_t;
typedef ptl_handle_any_t ptl_handle_md_t;
typedef ptl_handle_any_t ptl_handle_le_t;
typedef ptl_handle_any_t ptl_handle_me_t;

/* Status registers of an NI (PtlNIStatus). */
typedef enum {
    PTL_SR_DROP_COUNT,             /* messages dropped at this NI */
    PTL_SR_PERMISSIONS_VIOLATIONS, /* messages rejected by access (uid) checks */
    PTL_SR_OPERATIONS_VIOLATIONS   /* messages rejected by operation checks (e.g. get on put-only) */
} ptl_sr_index_t;
#define PTL_SR_LAST (PTL_SR_OPERATIONS_VIOLATIONS + 1)

/* A process, either logical (rank) or physical (nid, pid). */
typedef union {
    ptl_rank_t rank;
    struct {
        ptl_nid_t nid;
        ptl_pid_t pid;
    } phys;
} ptl_process_t;

/* One element of a scatter/gather list (PTL_IOVEC). */
typedef struct {
    void *iov_base;
    ptl_size_t iov_len;
} ptl_iovec_t;

/* Legacy (4.0) access control id. */
typedef union {
    ptl_uid_t uid;
    ptl_jid_t jid;
} ptl_ac_id_t;

/* ------------------------------------------------------------------ constants */

#define PTL_EQ_NONE        ((ptl_handle_eq_t)0x3fffffffu) /* no event queue */
#define PTL_CT_NONE        ((ptl_handle_ct_t)0x5fffffffu) /* no counting event */
#define PTL_INVALID_HANDLE ((ptl_handle_any_t)0xffffffffu)
#define PTL_IFACE_DEFAULT  ((ptl_interface_t)0xffffffffu) /* interface 0 */
#define PTL_PID_ANY        ((ptl_pid_t)0xffffffffu)
#define PTL_NID_ANY        ((ptl_nid_t)0xffffffffu)
#define PTL_RANK_ANY       ((ptl_rank_t)0xffffffffu)
#define PTL_UID_ANY        ((ptl_uid_t)0xffffffffu)
#define PTL_JID_ANY        ((ptl_jid_t)0xffffffffu)
#define PTL_JID_NONE       ((ptl_jid_t)0)
#define PTL_PT_ANY         ((ptl_pt_index_t)0xffffffffu)
#define PTL_TIME_FOREVER   ((ptl_time_t)0xffffffffu)
#define PTL_SIZE_MAX       ((ptl_size_t)UINT64_MAX)

/* Generic option: `start` points to an array of ptl_iovec_t and `length` is
 * the number of elements (MD, LE, ME). */
#define PTL_IOVEC (1u << 0)

/* ------------------------------------------------------------------ init */

/* Initialise the library (reference counted; also initialises the Xportals
 * runtime, so a program launched by xprun/Hydra/PMIx needs nothing else). */
PTL_EXPORT int PtlInit(void);
/* Drop one PtlInit reference; the last one releases every resource. */
PTL_EXPORT void PtlFini(void);

/* ------------------------------------------------------------------ network interfaces */

#define PTL_NI_MATCHING    (1u << 0) /* matching list entries (ME) */
#define PTL_NI_NO_MATCHING (1u << 1) /* non-matching list entries (LE) */
#define PTL_NI_LOGICAL     (1u << 2) /* address peers by rank */
#define PTL_NI_PHYSICAL    (1u << 3) /* address peers by (nid, pid) */
#define PTL_NI_INIT_OPTIONS_MASK ((1u << 4) - 1)

/* Failure kinds (ptl_event_t.ni_fail_type). */
#define PTL_NI_OK             ((ptl_ni_fail_t)0)  /* success */
#define PTL_NI_UNDELIVERABLE  ((ptl_ni_fail_t)1)  /* the target could not be reached */
#define PTL_NI_PT_DISABLED    ((ptl_ni_fail_t)2)  /* the target PT entry is disabled (flow control) */
#define PTL_NI_DROPPED        ((ptl_ni_fail_t)3)  /* dropped at the target (no entry, ...) */
#define PTL_NI_PERM_VIOLATION ((ptl_ni_fail_t)4)  /* uid check failed at the target */
#define PTL_NI_OP_VIOLATION   ((ptl_ni_fail_t)5)  /* operation not allowed by the entry */
#define PTL_NI_SEGV           ((ptl_ni_fail_t)6)  /* the entry's memory was not accessible */
#define PTL_NI_NO_MATCH       ((ptl_ni_fail_t)7)  /* PtlLE/MESearch found nothing */
#define PTL_NI_TARGET_INVALID ((ptl_ni_fail_t)8)  /* the target id is not valid */
#define PTL_NI_FLOW_CTRL      PTL_NI_PT_DISABLED  /* 4.0 name */

/* Features (ptl_ni_limits_t.features). */
#define PTL_TARGET_BIND_INACCESSIBLE (1u << 0) /* LEs/MEs may describe unmapped memory */
#define PTL_TOTAL_DATA_ORDERING      (1u << 1) /* all data arrives in issue order */
#define PTL_COHERENT_ATOMICS         (1u << 2) /* Xportals: atomics coherent with the host */

/* Limits of an NI: requested with `desired`, granted in `actual`. */
typedef struct {
    int max_entries;            /* LEs/MEs allocated at once */
    int max_unexpected_headers; /* unexpected headers queued at once */
    int max_mds;                /* MDs allocated at once */
    int max_cts;                /* CTs allocated at once */
    int max_eqs;                /* EQs allocated at once */
    int max_pt_index;           /* largest PT index (>= 63) */
    int max_iovecs;             /* elements of one PTL_IOVEC list */
    int max_list_size;          /* entries on one PT list */
    int max_triggered_ops;      /* outstanding triggered operations */
    ptl_size_t max_msg_size;    /* largest put/get/reply */
    ptl_size_t max_atomic_size; /* largest PtlAtomic */
    ptl_size_t max_fetch_atomic_size; /* largest PtlFetchAtomic/PtlSwap */
    ptl_size_t max_waw_ordered_size;  /* write-after-write ordering guarantee */
    ptl_size_t max_war_ordered_size;  /* write-after-read ordering guarantee */
    ptl_size_t max_volatile_size;     /* largest operation honouring PTL_MD_VOLATILE */
    unsigned int features;            /* PTL_TARGET_BIND_INACCESSIBLE | PTL_TOTAL_DATA_ORDERING */
} ptl_ni_limits_t;

/* Open (or share) interface `iface` with `options` (exactly one of MATCHING /
 * NO_MATCHING and one of LOGICAL / PHYSICAL). Several calls with the same
 * iface and options share one reference-counted NI (same handle); desired
 * limits are honoured on the first call only. */
PTL_EXPORT int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid,
                         const ptl_ni_limits_t *desired, ptl_ni_limits_t *actual,
                         ptl_handle_ni_t *ni_handle);
/* Drop one PtlNIInit reference; the last one frees everything bound to the NI. */
PTL_EXPORT int PtlNIFini(ptl_handle_ni_t ni_handle);
PTL_EXPORT int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t status_register,
                           ptl_sr_value_t *status);
/* The NI an object (or the NI itself) belongs to. */
PTL_EXPORT int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle);
/* Logical NIs: rank -> (nid, pid) map. Xportals already knows the job's map
 * from the launcher; setting the same map returns PTL_OK, a different one
 * PTL_IGNORED once the NI is in use. */
PTL_EXPORT int PtlSetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size,
                         const ptl_process_t *mapping);
/* Copy up to map_size entries of the map; *actual_map_size = its full size. */
PTL_EXPORT int PtlGetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size,
                         ptl_process_t *mapping, ptl_size_t *actual_map_size);

/* ------------------------------------------------------------------ portal table */

#define PTL_PT_ONLY_USE_ONCE (1u << 0) /* hint: every entry is USE_ONCE */
#define PTL_PT_FLOWCTRL      (1u << 1) /* disable the entry on resource exhaustion */
#define PTL_PT_ONLY_TRUNCATE (1u << 2) /* hint: no entry uses NO_TRUNCATE */
/* Permission: messages may match this entry's lists out of order (a
 * hashed matching unit's option, used by e.g. distributed hash tables).
 * Accepted; matching stays ordered here (the hashed lists keep insertion
 * order), which every unordered client accepts. */
#define PTL_PT_MATCH_UNORDERED (1u << 3)
#define PTL_PT_ALLOC_OPTIONS_MASK ((1u << 4) - 1)

PTL_EXPORT int PtlPTAlloc(ptl_handle_ni_t ni_handle, unsigned int options,
                          ptl_handle_eq_t eq_handle, ptl_pt_index_t pt_index_req,
                          ptl_pt_index_t *pt_index);
PTL_EXPORT int PtlPTFree(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
/* Stop accepting messages; returns once messages in progress have completed. */
PTL_EXPORT int PtlPTDisable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);
PTL_EXPORT int PtlPTEnable(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index);

/* ------------------------------------------------------------------ identification */

PTL_EXPORT int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid);
/* This process: rank on a logical NI, (nid, pid) on a physical one. */
PTL_EXPORT int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_t *id);
/* This process's physical (nid, pid), whatever the NI's addressing. */
PTL_EXPORT int PtlGetPhysId(ptl_handle_ni_t ni_handle, ptl_process_t *id);
/* Legacy (4.0): always PTL_JID_NONE. */
PTL_EXPORT int PtlGetJid(ptl_handle_ni_t ni_handle, ptl_jid_t *jid);

/* ------------------------------------------------------------------ memory descriptors */

#define PTL_MD_EVENT_SUCCESS_DISABLE (1u << 1) /* no full events for successes */
#define PTL_MD_EVENT_SEND_DISABLE    (1u << 2) /* no PTL_EVENT_SEND full events */
#define PTL_MD_EVENT_CT_SEND         (1u << 3) /* count SEND events */
#define PTL_MD_EVENT_CT_REPLY        (1u << 4) /* count REPLY events */
#define PTL_MD_EVENT_CT_ACK          (1u << 5) /* count ACK events */
#define PTL_MD_EVENT_CT_BYTES        (1u << 6) /* count bytes instead of events */
#define PTL_MD_UNORDERED             (1u << 7) /* operations may arrive out of order */
#define PTL_MD_VOLATILE              (1u << 8) /* buffer reusable as soon as the call returns */
#define PTL_MD_OPTIONS_MASK          (((1u << 9) - 1))

/* Initiator-side memory: start/length (or an iovec array with PTL_IOVEC). */
typedef struct {
    void *start;
    ptl_size_t length;
    unsigned int options;
    ptl_handle_eq_t eq_handle; /* PTL_EQ_NONE: no full events */
    ptl_handle_ct_t ct_handle; /* PTL_CT_NONE: no counting events */
} ptl_md_t;

PTL_EXPORT int PtlMDBind(ptl_handle_ni_t ni_handle, const ptl_md_t *md,
                         ptl_handle_md_t *md_handle);
/* PTL_IN_USE while operations on the MD are pending. */
PTL_EXPORT int PtlMDRelease(ptl_handle_md_t md_handle);

/* ------------------------------------------------------------------ list entries */

typedef enum {
    PTL_PRIORITY_LIST, /* searched first */
    PTL_OVERFLOW_LIST, /* searched when nothing in the priority list matched */
    PTL_PROBE_ONLY     /* legacy (4.0 append-as-search); use PtlLE/MESearch */
} ptl_list_t;
#define PTL_OVERFLOW PTL_OVERFLOW_LIST /* 4.0 name */

typedef enum {
    PTL_SEARCH_ONLY,   /* report a match in the unexpected list (probe) */
    PTL_SEARCH_DELETE  /* report and remove matches */
} ptl_search_op_t;

/* ME options (bit 0 is PTL_IOVEC). */
#define PTL_ME_OP_PUT                 (1u << 1)  /* accept puts and atomics */
#define PTL_ME_OP_GET                 (1u << 2)  /* accept gets (and fetching atomics with OP_PUT) */
#define PTL_ME_MANAGE_LOCAL           (1u << 3)  /* offsets managed by the target */
#define PTL_ME_NO_TRUNCATE            (1u << 4)  /* do not match messages that would not fit */
#define PTL_ME_USE_ONCE               (1u << 5)  /* unlink after the first match */
#define PTL_ME_MAY_ALIGN              (1u << 6)  /* MANAGE_LOCAL may align offsets */
#define PTL_ME_ACK_DISABLE            (1u << 7)  /* never send acknowledgements */
#define PTL_ME_UNEXPECTED_HDR_DISABLE (1u << 8)  /* overflow matches keep no unexpected header */
#define PTL_ME_IS_ACCESSIBLE          (1u << 9)  /* the application promises the memory is mapped */
#define PTL_ME_EVENT_COMM_DISABLE     (1u << 10) /* no PUT/GET/ATOMIC... full events */
#define PTL_ME_EVENT_FLOWCTRL_DISABLE (1u << 11) /* no PT_DISABLED events */
#define PTL_ME_EVENT_SUCCESS_DISABLE  (1u << 12) /* no full events for successes */
#define PTL_ME_EVENT_OVER_DISABLE     (1u << 13) /* no *_OVERFLOW events */
#define PTL_ME_EVENT_UNLINK_DISABLE   (1u << 14) /* no AUTO_UNLINK / AUTO_FREE events */
#define PTL_ME_EVENT_LINK_DISABLE     (1u << 15) /* no LINK event */
#define PTL_ME_EVENT_CT_COMM          (1u << 16) /* count communication events */
#define PTL_ME_EVENT_CT_OVERFLOW      (1u << 17) /* count overflow events */
#define PTL_ME_EVENT_CT_BYTES         (1u << 18) /* count bytes instead of events */
#define PTL_ME_AUTH_USE_JID           (1u << 19) /* legacy 4.0: check jid instead of uid */
/* Portals 4.3: with MANAGE_LOCAL, each unexpected header that a priority
 * append consumes advances the local offset by the header's rlength (the
 * space the message would have taken), and min_free applies to it. */
#define PTL_ME_LOCAL_INC_UH_RLENGTH   (1u << 20)
#define PTL_ME_APPEND_OPTIONS_MASK    ((1u << 21) - 1)

/* LE options: the subset of ME options that applies without matching. */
#define PTL_LE_OP_PUT                 PTL_ME_OP_PUT
#define PTL_LE_OP_GET                 PTL_ME_OP_GET
#define PTL_LE_USE_ONCE               PTL_ME_USE_ONCE
#define PTL_LE_ACK_DISABLE            PTL_ME_ACK_DISABLE
#define PTL_LE_UNEXPECTED_HDR_DISABLE PTL_ME_UNEXPECTED_HDR_DISABLE
#define PTL_LE_IS_ACCESSIBLE          PTL_ME_IS_ACCESSIBLE
#define PTL_LE_EVENT_COMM_DISABLE     PTL_ME_EVENT_COMM_DISABLE
#define PTL_LE_EVENT_FLOWCTRL_DISABLE PTL_ME_EVENT_FLOWCTRL_DISABLE
#define PTL_LE_EVENT_SUCCESS_DISABLE  PTL_ME_EVENT_SUCCESS_DISABLE
#define PTL_LE_EVENT_OVER_DISABLE     PTL_ME_EVENT_OVER_DISABLE
#define PTL_LE_EVENT_UNLINK_DISABLE   PTL_ME_EVENT_UNLINK_DISABLE
#define PTL_LE_EVENT_LINK_DISABLE     PTL_ME_EVENT_LINK_DISABLE
#define PTL_LE_EVENT_CT_COMM          PTL_ME_EVENT_CT_COMM
#define PTL_LE_EVENT_CT_OVERFLOW      PTL_ME_EVENT_CT_OVERFLOW
#define PTL_LE_EVENT_CT_BYTES         PTL_ME_EVENT_CT_BYTES
#define PTL_LE_AUTH_USE_JID           PTL_ME_AUTH_USE_JID
#define PTL_LE_APPEND_OPTIONS_MASK    PTL_ME_APPEND_OPTIONS_MASK

/* Target-side memory on a non-matching NI. */
typedef struct {
    void *start;               /* may be NULL when length is 0 */
    ptl_size_t length;
    ptl_handle_ct_t ct_handle; /* PTL_CT_NONE: no counting */
    ptl_uid_t uid;             /* who may access it; PTL_UID_ANY: everybody */
    unsigned int options;      /* PTL_LE_* | PTL_IOVEC */
} ptl_le_t;

/* Target-side memory on a matching NI. */
typedef struct {
    void *start;
    ptl_size_t length;
    ptl_handle_ct_t ct_handle;
    ptl_uid_t uid;
    unsigned int options;        /* PTL_ME_* | PTL_IOVEC */
    ptl_process_t match_id;      /* initiator to accept (PTL_RANK_ANY / PTL_NID_ANY,PTL_PID_ANY) */
    ptl_match_bits_t match_bits; /* matches when ((in ^ match_bits) & ~ignore_bits) == 0 */
    ptl_match_bits_t ignore_bits;
    ptl_size_t min_free;         /* MANAGE_LOCAL: unlink when less than this is left */
} ptl_me_t;

PTL_EXPORT int PtlLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                           const ptl_le_t *le, ptl_list_t ptl_list, void *user_ptr,
                           ptl_handle_le_t *le_handle);
PTL_EXPORT int PtlLEUnlink(ptl_handle_le_t le_handle);
PTL_EXPORT int PtlLESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                           const ptl_le_t *le, ptl_search_op_t ptl_search_op,
                           void *user_ptr);
PTL_EXPORT int PtlMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                           const ptl_me_t *me, ptl_list_t ptl_list, void *user_ptr,
                           ptl_handle_me_t *me_handle);
PTL_EXPORT int PtlMEUnlink(ptl_handle_me_t me_handle);
PTL_EXPORT int PtlMESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                           const ptl_me_t *me, ptl_search_op_t ptl_search_op,
                           void *user_ptr);

/* ------------------------------------------------------------------ counting events */

typedef struct {
    ptl_size_t success; /* successful events (or bytes with *_CT_BYTES) */
    ptl_size_t failure; /* failed events (always counted as events) */
} ptl_ct_event_t;

typedef enum { PTL_CT_OPERATION, PTL_CT_BYTE } ptl_ct_type_t;

PTL_EXPORT int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle);
PTL_EXPORT int PtlCTFree(ptl_handle_ct_t ct_handle);
/* Destroy, without running them, the triggered operations waiting on the CT. */
PTL_EXPORT int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle);
PTL_EXPORT int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event);
/* Wait until success >= test, or until failure is non-zero. */
PTL_EXPORT int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event);
PTL_EXPORT int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests,
                         unsigned int size, ptl_time_t timeout, ptl_ct_event_t *event,
                         unsigned int *which);
PTL_EXPORT int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct);
PTL_EXPORT int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment);

/* ------------------------------------------------------------------ data movement */

typedef enum {
    PTL_NO_ACK_REQ, /* no acknowledgement */
    PTL_ACK_REQ,    /* full acknowledgement (PTL_EVENT_ACK and counting) */
    PTL_CT_ACK_REQ, /* counting acknowledgement only (mlength with CT_BYTES) */
    PTL_OC_ACK_REQ  /* operation-completed acknowledgement: counts operations only */
} ptl_ack_req_t;

PTL_EXPORT int PtlPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                      ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                      ptl_hdr_data_t hdr_data);
PTL_EXPORT int PtlGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                      ptl_process_t target_id, ptl_pt_index_t pt_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr);

/* ------------------------------------------------------------------ atomics */

typedef enum {
    PTL_MIN, PTL_MAX, PTL_SUM, PTL_PROD,
    PTL_LOR, PTL_LAND, PTL_BOR, PTL_BAND, PTL_LXOR, PTL_BXOR,
    PTL_SWAP,     /* target := operand-data, returns old */
    PTL_CSWAP,    /* swap if operand == target */
    PTL_CSWAP_NE, /* swap if operand != target */
    PTL_CSWAP_LE, /* swap if operand <= target */
    PTL_CSWAP_LT, /* swap if operand <  target */
    PTL_CSWAP_GE, /* swap if operand >= target */
    PTL_CSWAP_GT, /* swap if operand >  target */
    PTL_MSWAP     /* target := (data & operand) | (target & ~operand) */
} ptl_op_t;
#define PTL_OP_LAST (PTL_MSWAP + 1)

typedef enum {
    PTL_INT8_T, PTL_UINT8_T, PTL_INT16_T, PTL_UINT16_T,
    PTL_INT32_T, PTL_UINT32_T, PTL_INT64_T, PTL_UINT64_T,
    PTL_FLOAT, PTL_FLOAT_COMPLEX, PTL_DOUBLE, PTL_DOUBLE_COMPLEX,
    PTL_LONG_DOUBLE, PTL_LONG_DOUBLE_COMPLEX
} ptl_datatype_t;
#define PTL_DATATYPE_LAST (PTL_LONG_DOUBLE_COMPLEX + 1)

PTL_EXPORT int PtlAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                         ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                         ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                         ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype);
PTL_EXPORT int PtlFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                              ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                              ptl_size_t length, ptl_process_t target_id,
                              ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                              ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                              ptl_op_t operation, ptl_datatype_t datatype);
PTL_EXPORT int PtlSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                       ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                       ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                       ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                       ptl_hdr_data_t hdr_data, const void *operand, ptl_op_t operation,
                       ptl_datatype_t datatype);
/* Make host accesses to locations touched by earlier atomics safe. */
PTL_EXPORT int PtlAtomicSync(void);

/* ------------------------------------------------------------------ events */

typedef enum {
    PTL_EVENT_GET,                   /* target: a get was served */
    PTL_EVENT_GET_OVERFLOW,          /* target: a get matched an unexpected header */
    PTL_EVENT_PUT,                   /* target: a put was delivered */
    PTL_EVENT_PUT_OVERFLOW,          /* target: an append matched an unexpected put */
    PTL_EVENT_ATOMIC,                /* target: an atomic was applied */
    PTL_EVENT_ATOMIC_OVERFLOW,       /* target: an append matched an unexpected atomic */
    PTL_EVENT_FETCH_ATOMIC,          /* target: a fetching atomic / swap was applied */
    PTL_EVENT_FETCH_ATOMIC_OVERFLOW, /* target: an append matched an unexpected fetch-atomic */
    PTL_EVENT_REPLY,                 /* initiator: reply data arrived */
    PTL_EVENT_SEND,                  /* initiator: the buffer may be reused */
    PTL_EVENT_ACK,                   /* initiator: the target acknowledged */
    PTL_EVENT_PT_DISABLED,           /* target: flow control disabled the PT entry */
    PTL_EVENT_LINK,                  /* target: an appended entry is linked */
    PTL_EVENT_AUTO_UNLINK,           /* target: an entry was unlinked automatically */
    PTL_EVENT_AUTO_FREE,             /* target: an unlinked overflow entry is free */
    PTL_EVENT_SEARCH                 /* target: result of PtlLE/MESearch */
} ptl_event_kind_t;

/* A full event. Fields that do not apply to an event kind are undefined. */
typedef struct {
    void *start;                 /* target: where the data went */
    void *user_ptr;              /* the user_ptr of the operation or the entry */
    ptl_hdr_data_t hdr_data;     /* from the initiator */
    ptl_match_bits_t match_bits; /* from the initiator (matching NIs) */
    ptl_size_t rlength;          /* requested length */
    ptl_size_t mlength;          /* length actually moved */
    ptl_size_t remote_offset;    /* target: offset requested; initiator: offset used */
    ptl_uid_t uid;               /* initiator's uid */
    ptl_process_t initiator;     /* initiator's id (rank or nid/pid as the NI addresses) */
    ptl_event_kind_t type;
    ptl_pt_index_t pt_index;
    ptl_ni_fail_t ni_fail_type;  /* PTL_NI_OK on success */
    ptl_op_t atomic_operation;
    ptl_datatype_t atomic_type;
    ptl_list_t ptl_list;         /* list the message matched in */
} ptl_event_t;

PTL_EXPORT int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count,
                          ptl_handle_eq_t *eq_handle);
PTL_EXPORT int PtlEQFree(ptl_handle_eq_t eq_handle);
/* Non-blocking: PTL_OK, PTL_EQ_DROPPED (event returned, some lost), PTL_EQ_EMPTY. */
PTL_EXPORT int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event);
PTL_EXPORT int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event);
PTL_EXPORT int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size,
                         ptl_time_t timeout, ptl_event_t *event, unsigned int *which);

/* ------------------------------------------------------------------ triggered operations */

PTL_EXPORT int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset,
                               ptl_size_t length, ptl_ack_req_t ack_req,
                               ptl_process_t target_id, ptl_pt_index_t pt_index,
                               ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                               void *user_ptr, ptl_hdr_data_t hdr_data,
                               ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset,
                               ptl_size_t length, ptl_process_t target_id,
                               ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                               ptl_size_t remote_offset, void *user_ptr,
                               ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset,
                                  ptl_size_t length, ptl_ack_req_t ack_req,
                                  ptl_process_t target_id, ptl_pt_index_t pt_index,
                                  ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                                  void *user_ptr, ptl_hdr_data_t hdr_data,
                                  ptl_op_t operation, ptl_datatype_t datatype,
                                  ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md_handle,
                                       ptl_size_t local_get_offset,
                                       ptl_handle_md_t put_md_handle,
                                       ptl_size_t local_put_offset, ptl_size_t length,
                                       ptl_process_t target_id, ptl_pt_index_t pt_index,
                                       ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                                       void *user_ptr, ptl_hdr_data_t hdr_data,
                                       ptl_op_t operation, ptl_datatype_t datatype,
                                       ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                                ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset,
                                ptl_size_t length, ptl_process_t target_id,
                                ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                                ptl_size_t remote_offset, void *user_ptr,
                                ptl_hdr_data_t hdr_data, const void *operand,
                                ptl_op_t operation, ptl_datatype_t datatype,
                                ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment,
                                 ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct,
                                 ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold);

/* ------------------------------------------------------------------ triggered list operations
 *
 * Extension (not in the Portals 4 specification): the triggered list
 * operations of the reference implementation's WITH_TRIG_ME_OPS build
 * (clients: PDHT, fflib), plus the LE variants. PTL_HAVE_TRIGGERED_ME_OPS is
 * defined to 1 where they exist.
 *
 * PtlTriggeredMEAppend / PtlTriggeredLEAppend: PtlMEAppend / PtlLEAppend
 * performed when success + failure of trig_ct_handle reaches threshold (at
 * once, by this call, if it already has). Unlike the reference, which reads
 * *me and writes *me_handle only when the operation fires:
 *   - everything is checked now, with PtlMEAppend's error codes (PTL_NO_INIT,
 *     PTL_ARG_INVALID: bad NI, options, list, CT of the entry, iovec list,
 *     PT not allocated, trig_ct_handle not a CT of this NI; PTL_NO_SPACE:
 *     max_entries or max_triggered_ops reached);
 *   - *me is copied now (with its iovec list): the caller may reuse it at
 *     once. The buffer it describes must stay valid, as for any append;
 *   - *me_handle is written now, on success, with a live handle. Until the
 *     append fires the entry is in no list (nothing matches it, no event);
 *     PtlMEUnlink on it cancels the append (PTL_OK; the handle dies, the
 *     operation does nothing when released). PtlTriggeredMEUnlink can name it
 *     at once.
 * When it fires, the append behaves as PtlMEAppend at that moment: a priority
 * append first consumes matching unexpected headers, PTL_EVENT_LINK is
 * posted. If it fails then (PT freed, list full: PTL_LIST_TOO_LONG) it is
 * logged and dropped and the handle dies. PtlCTFree / PtlCTCancelTriggered on
 * the trigger CT, and PtlNIFini, discard a pending append and free its
 * entry and handle.
 *
 * PtlTriggeredMEUnlink / PtlTriggeredLEUnlink: PtlMEUnlink / PtlLEUnlink of
 * a live handle (linked or pending) when the trigger reaches threshold.
 * PTL_ARG_INVALID if the handle is not live now. When it fires, an entry that
 * is gone already (use-once consumed, unlinked) is not an error. As with any
 * handle, a stale one could name a later entry in the same slot; each slot
 * reuse changes a 7-bit generation.
 *
 * Both count against the NI's max_triggered_ops while pending.
 */
#define PTL_HAVE_TRIGGERED_ME_OPS 1
PTL_EXPORT int PtlTriggeredMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                                    const ptl_me_t *me, ptl_list_t ptl_list, void *user_ptr,
                                    ptl_handle_me_t *me_handle, ptl_handle_ct_t trig_ct_handle,
                                    ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredMEUnlink(ptl_handle_me_t me_handle, ptl_handle_ct_t trig_ct_handle,
                                    ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index,
                                    const ptl_le_t *le, ptl_list_t ptl_list, void *user_ptr,
                                    ptl_handle_le_t *le_handle, ptl_handle_ct_t trig_ct_handle,
                                    ptl_size_t threshold);
PTL_EXPORT int PtlTriggeredLEUnlink(ptl_handle_le_t le_handle, ptl_handle_ct_t trig_ct_handle,
                                    ptl_size_t threshold);

/* ------------------------------------------------------------------ bundles, handles, abort */

/* Hint: a burst of operations follows (nests; every Start needs an End). */
PTL_EXPORT int PtlStartBundle(ptl_handle_ni_t ni_handle);
/* End of a burst: deferred operations are issued. */
PTL_EXPORT int PtlEndBundle(ptl_handle_ni_t ni_handle);
/* Non-zero (1) if both handles name the same object (or are the same
 * constant), 0 otherwise: the reference implementation's boolean, which
 * clients rely on (`if (!PtlHandleIsEqual(h, PTL_INVALID_HANDLE))` means "h
 * is valid"). The specification's text says PTL_OK / PTL_FAIL, which would
 * invert that test since PTL_OK is 0. */
PTL_EXPORT int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2);
/* Interrupt every thread of this process blocked in PtlEQWait/PtlEQPoll/
 * PtlCTWait/PtlCTPoll: they return PTL_ABORTED. Used before tearing down
 * after a failure. */
PTL_EXPORT int PtlAbort(void);

#ifdef __cplusplus
}
#endif
#endif
