/*
 * portals4_xtq.h - Extended Task Queuing (XTQ): a Portals 4 put that also
 * enqueues a task into an agent's user-mode queue at the target.
 *
 * Xportals extension (LeBeane et al., "Extended Task Queuing: Active Messages
 * for Heterogeneous Systems", §III-IV). The target registers, at indices the
 * job agrees on, its kernels (Kernel Lookup Table), CPU functions (Function
 * Lookup Table) and queues (Queue Lookup Table). The initiator builds a
 * 64-byte AQL command packet that names those *indices* instead of target
 * addresses and sends it, with kernel arguments and a payload, with
 * PtlXtqPut. At the target the engine - never an application thread -
 * writes the message into the matched list entry, rewrites the packet into
 * target addresses and enqueues it (rings the queue's doorbell).
 *
 * Message layout, as it lands in the matched buffer at address L:
 *
 *     L                 L+64               L+cmd_length         L+cmd_length+payload_length
 *     | command packet  | kernel arguments | payload            |
 *
 * Rewrite (kernel dispatch, packet type XP_AQL_TYPE_KERNEL_DISPATCH):
 *   kernel_object     <- KLT[kernel_object].kernel_object  (initiator wrote the index)
 *   kernarg_address   <- L + 64
 *   kernarg word 0    <- KLT entry's target buffer          (if >= 8 bytes of arguments)
 *   kernarg word 1    <- L + cmd_length (the payload)       (if >= 16 bytes of arguments)
 *   completion_signal <- KLT entry's signal (none if it has none)
 * Rewrite (agent dispatch, CPU tasks; cmd_length must be 64):
 *   function          <- FLT[function].function             (initiator wrote the index)
 *   arg[0]            <- FLT entry's target buffer
 *   arg[1]            <- L + 64 (the payload)
 *   arg[2], arg[3]    passed through (the embedded scalar arguments)
 *   completion_signal <- FLT entry's signal (none if it has none)
 * The queue is QLT[queue index], the index being carried in the packet's
 * reserved bits (xp_xtq_cmd_set_queue). Other fields pass through.
 *
 * Flow control: a full queue, an unregistered index or a malformed command is
 * never dropped silently: the initiator's PTL_EVENT_ACK carries ni_fail_type
 * PTL_NI_XTQ_QUEUE_FULL / PTL_NI_XTQ_BAD_INDEX / PTL_NI_XTQ_BAD_COMMAND (and
 * its CT counts a failure), so it can retry. The payload has landed even
 * then; a retry rewrites it.
 */
#ifndef PORTALS4_XTQ_H
#define PORTALS4_XTQ_H

#include <stdint.h>
#include "portals4.h"
#include "xportals/accel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Entries per lookup table (valid indices 0..PTL_XTQ_TABLE_SIZE-1). */
#define PTL_XTQ_TABLE_SIZE 256
/* Smallest command: one AQL packet. */
#define PTL_XTQ_CMD_SIZE 64

/* Failure kinds in ptl_event_t.ni_fail_type (outside the standard range). */
#define PTL_NI_XTQ_QUEUE_FULL  ((ptl_ni_fail_t)64) /* the target queue had no free slot: retry */
#define PTL_NI_XTQ_BAD_INDEX   ((ptl_ni_fail_t)65) /* kernel/function/queue index not registered */
#define PTL_NI_XTQ_BAD_COMMAND ((ptl_ni_fail_t)66) /* packet type, lengths or truncation */

/* ---- target side: lookup tables ---- */

/* Kernel Lookup Table entry `index`: kernel object (for a CPU agent an
 * xp_cpu_kernel_fn_t, for a CUDA agent an XP_CUDA_KERNEL_* id), optional
 * target-resident buffer (NULL) and optional completion signal (NULL).
 * PTL_ARG_INVALID: bad NI or index, zero kernel object. PTL_IN_USE: the index
 * is registered (deregister first). */
PTL_EXPORT int PtlXtqRegisterKernel(ptl_handle_ni_t ni_handle, ptl_size_t index,
                                    uint64_t kernel_object, void *target_buffer,
                                    xp_signal_t *completion_signal);
/* Function Lookup Table entry `index` (CPU tasks). Xportals also lets a
 * function entry carry a completion signal. */
PTL_EXPORT int PtlXtqRegisterFunction(ptl_handle_ni_t ni_handle, ptl_size_t index,
                                      xp_agent_fn_t function, void *target_buffer,
                                      xp_signal_t *completion_signal);
/* Queue Lookup Table entry `index`. */
PTL_EXPORT int PtlXtqRegisterQueue(ptl_handle_ni_t ni_handle, ptl_size_t index, xp_queue_t *queue);
/* Remove an entry (PTL_ARG_INVALID if it is not registered). Tasks already
 * enqueued are not affected. */
PTL_EXPORT int PtlXtqDeregisterKernel(ptl_handle_ni_t ni_handle, ptl_size_t index);
PTL_EXPORT int PtlXtqDeregisterFunction(ptl_handle_ni_t ni_handle, ptl_size_t index);
PTL_EXPORT int PtlXtqDeregisterQueue(ptl_handle_ni_t ni_handle, ptl_size_t index);

/* ---- initiator side ---- */

/* Send a task: a put of the command packet and its kernel arguments
 * ([cmd_offset, cmd_offset+cmd_length) of cmd_md) followed by the payload
 * ([payload_offset, +payload_length) of payload_md; payload_length 0: none),
 * gathered by the engine into one message - the paper's XtqPut. The message
 * is matched at the target like a PtlPut with the same pt_index, match_bits
 * and remote_offset; the matched entry must take it whole and contiguous.
 *
 * cmd_length: PTL_XTQ_CMD_SIZE (+ kernel argument bytes for a kernel dispatch:
 * cmd_length must equal 64 + the packet's reserved2; an agent dispatch has
 * exactly 64). ack_req: PTL_ACK_REQ or PTL_CT_ACK_REQ only, because a task
 * refused at the target (queue full, bad index, bad command) is reported in
 * the acknowledgement's ni_fail_type (ACK event) or as a failure on the MD's
 * CT - without an acknowledgement a refusal would be silent.
 * Events (SEND, ACK) and counts go to cmd_md; payload_md must be on the same
 * NI and stay bound until cmd_md's SEND event. The buffers may be reused
 * after the SEND event (the target may still be running the task).
 * PTL_ARG_INVALID: bad handles, ranges, ack_req or command packet.
 * PTL_NO_INIT: PtlInit not called. */
PTL_EXPORT int PtlXtqPut(ptl_handle_md_t cmd_md_handle, ptl_size_t cmd_offset,
                         ptl_size_t cmd_length, ptl_handle_md_t payload_md_handle,
                         ptl_size_t payload_offset, ptl_size_t payload_length,
                         ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                         ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                         ptl_hdr_data_t hdr_data);

/* PtlXtqPut issued by the engine once trig_ct_handle's success + failure
 * reaches threshold (as PtlTriggeredPut): with a task that increments a CT
 * when it ends, chains of remote tasks run with no application thread. The
 * command packet is read when the operation fires (the buffers must stay
 * valid until then). Checked at once: handle types, ack_req, cmd_length >= 64;
 * MD ranges when it fires (a failure to issue is logged); the command packet
 * only at the target (PTL_NI_XTQ_BAD_COMMAND in the ACK). */
PTL_EXPORT int PtlTriggeredXtqPut(ptl_handle_md_t cmd_md_handle, ptl_size_t cmd_offset,
                                  ptl_size_t cmd_length, ptl_handle_md_t payload_md_handle,
                                  ptl_size_t payload_offset, ptl_size_t payload_length,
                                  ptl_ack_req_t ack_req, ptl_process_t target_id,
                                  ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                                  ptl_size_t remote_offset, void *user_ptr,
                                  ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle,
                                  ptl_size_t threshold);

/* Fill the XTQ fields of a command packet the caller has otherwise set up:
 * for a kernel dispatch, the KLT index goes in kernel_object and the byte
 * count of kernel arguments that follow the packet in reserved2; for an agent
 * dispatch, the FLT index goes in `function`. */
static inline void xp_xtq_cmd_set_kernel(xp_aql_packet_t *cmd, uint64_t kernel_index, uint64_t args_length)
{
    cmd->kernel.kernel_object = kernel_index;
    cmd->kernel.reserved2 = args_length;
}
static inline void xp_xtq_cmd_set_function(xp_aql_packet_t *cmd, uint64_t function_index)
{
    cmd->agent.function = function_index;
}
/* The QLT index lives in the low 16 reserved bits after the header
 * (kernel: reserved0; agent: low half of reserved0). */
static inline void xp_xtq_cmd_set_queue(xp_aql_packet_t *cmd, uint16_t queue_index)
{
    if (xp_aql_header_type(cmd->header) == XP_AQL_TYPE_KERNEL_DISPATCH)
        cmd->kernel.reserved0 = queue_index;
    else
        cmd->agent.reserved0 = (cmd->agent.reserved0 & 0xffff0000u) | queue_index;
}
static inline uint16_t xp_xtq_cmd_queue(const xp_aql_packet_t *cmd)
{
    if (xp_aql_header_type(cmd->header) == XP_AQL_TYPE_KERNEL_DISPATCH)
        return cmd->kernel.reserved0;
    return (uint16_t)(cmd->agent.reserved0 & 0xffffu);
}

#ifdef __cplusplus
}
#endif
#endif
