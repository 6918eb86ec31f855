/* PtlXtqPut: the initiator side of XTQ, a gathering put flagged for the
 * target's XTQ hook (ptl/ops.c does the sending). */
#include "portals4_xtq.h"
#include "ptl/engine.h"
#include "ptl/md.h"
#include "xtq/xtq.h"

/* The command packet must say what the target will find: its type, and for a
 * kernel dispatch the argument bytes that follow it (reserved2). Checking here
 * turns a malformed command into PTL_ARG_INVALID instead of a refusal later. */
static int command_ok(ptl_handle_md_t md_handle, ptl_size_t off, ptl_size_t len)
{
    xp_md_t *md = xp_md_from_handle(md_handle);
    xp_aql_packet_t cmd;
    if (!md || len < PTL_XTQ_CMD_SIZE || !xp_region_holds(&md->region, off, len))
        return 0;
    xp_region_read(&md->region, off, &cmd, sizeof(cmd));
    switch (xp_aql_header_type(cmd.header)) {
    case XP_AQL_TYPE_KERNEL_DISPATCH:
        return cmd.kernel.reserved2 == len - PTL_XTQ_CMD_SIZE;
    case XP_AQL_TYPE_AGENT_DISPATCH:
        return len == PTL_XTQ_CMD_SIZE;
    default:
        return 0;
    }
}

int PtlXtqPut(ptl_handle_md_t cmd_md_handle, ptl_size_t cmd_offset, ptl_size_t cmd_length,
              ptl_handle_md_t payload_md_handle, ptl_size_t payload_offset,
              ptl_size_t payload_length, ptl_ack_req_t ack_req, ptl_process_t target_id,
              ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
              void *user_ptr, ptl_hdr_data_t hdr_data)
{
    if (!xp_ptl_initialized())
        return PTL_NO_INIT;
    if (!command_ok(cmd_md_handle, cmd_offset, cmd_length))
        return PTL_ARG_INVALID;
    return xp_eng_put_gather(cmd_md_handle, cmd_offset, cmd_length, payload_md_handle,
                             payload_offset, payload_length, ack_req, target_id, pt_index,
                             match_bits, remote_offset, user_ptr, hdr_data, XP_PKT_F_XTQ);
}
