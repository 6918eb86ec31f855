/*
 * xtq_mp.h - shared setup of the multi-process XTQ tests: one matching NI,
 * one portal table entry with an event queue, helpers that build command
 * packets and wait for acknowledgements. Public API only (links portals).
 */
#ifndef XTQ_MP_H
#define XTQ_MP_H

#include <portals4.h>
#include <portals4_xtq.h>
#include <string.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

typedef struct xtq_env {
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;      /* target events of the portal table entry */
    ptl_handle_eq_t md_eq;   /* initiator events (SEND disabled: only ACKs) */
    ptl_pt_index_t pt;
    ptl_process_t me;
    int size;
} xtq_env_t;

static inline void xtq_env_init(xtq_env_t *e, ptl_pt_index_t pt)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &e->ni) == PTL_OK);
    XP_REQUIRE(PtlGetId(e->ni, &e->me) == PTL_OK);
    e->size = xp_size();
    XP_REQUIRE(PtlEQAlloc(e->ni, 4096, &e->eq) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(e->ni, 4096, &e->md_eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(e->ni, 0, e->eq, pt, &e->pt) == PTL_OK);
}

static inline void xtq_env_fini(xtq_env_t *e)
{
    XP_CHECK_EQ(PtlPTFree(e->ni, e->pt), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(e->eq), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(e->md_eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(e->ni), PTL_OK);
    PtlFini();
}

/* An ME that takes XTQ puts with match bits `bits` into [buf, buf+len). */
static inline ptl_handle_me_t xtq_me(xtq_env_t *e, void *buf, size_t len, ptl_match_bits_t bits,
                                     ptl_handle_ct_t ct)
{
    ptl_handle_me_t h;
    ptl_me_t me = {.start = buf, .length = len, .ct_handle = ct, .uid = PTL_UID_ANY,
                   .options = PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE |
                              (ct != PTL_CT_NONE ? PTL_ME_EVENT_CT_COMM : 0),
                   .match_id = {.rank = PTL_RANK_ANY}, .match_bits = bits, .ignore_bits = 0};
    XP_REQUIRE(PtlMEAppend(e->ni, e->pt, &me, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
    return h;
}

/* An MD over the whole address space with the initiator event queue. */
static inline ptl_handle_md_t xtq_md_all(xtq_env_t *e, ptl_handle_ct_t ct)
{
    ptl_handle_md_t h;
    ptl_md_t md = {.start = NULL, .length = PTL_SIZE_MAX, .eq_handle = e->md_eq,
                   .ct_handle = ct,
                   .options = PTL_MD_EVENT_SEND_DISABLE |
                              (ct != PTL_CT_NONE ? PTL_MD_EVENT_CT_ACK : 0)};
    XP_REQUIRE(PtlMDBind(e->ni, &md, &h) == PTL_OK);
    return h;
}

/* Kernel dispatch of one work-group of one work-item. */
static inline void xtq_kernel_cmd(xp_aql_packet_t *c, uint64_t kindex, uint16_t qindex,
                                  uint64_t args_len)
{
    memset(c, 0, sizeof(*c));
    c->kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
    c->kernel.setup = 1;
    c->kernel.workgroup_size_x = c->kernel.workgroup_size_y = c->kernel.workgroup_size_z = 1;
    c->kernel.grid_size_x = c->kernel.grid_size_y = c->kernel.grid_size_z = 1;
    xp_xtq_cmd_set_kernel(c, kindex, args_len);
    xp_xtq_cmd_set_queue(c, qindex);
}

/* Agent dispatch (CPU function) with two embedded scalar arguments. */
static inline void xtq_agent_cmd(xp_aql_packet_t *c, uint64_t findex, uint16_t qindex,
                                 uint64_t a2, uint64_t a3)
{
    memset(c, 0, sizeof(*c));
    c->agent.header = xp_aql_header(XP_AQL_TYPE_AGENT_DISPATCH, 0);
    c->agent.arg[2] = a2;
    c->agent.arg[3] = a3;
    xp_xtq_cmd_set_function(c, findex);
    xp_xtq_cmd_set_queue(c, qindex);
}

/* The CT once success + failure reached `total` (the engine may answer the
 * initiator before it counts at the target, so a target that learns of the
 * end from its peer waits a little for its own counts). */
static inline ptl_ct_event_t xtq_ct_settled(ptl_handle_ct_t ct, ptl_size_t total)
{
    ptl_ct_event_t c = {0, 0};
    for (int i = 0; i < 500000; i++) {
        XP_REQUIRE(PtlCTGet(ct, &c) == PTL_OK);
        if (c.success + c.failure >= total)
            break;
        usleep(10);
    }
    return c;
}

/* The next ACK event of the initiator queue. */
static inline ptl_event_t xtq_wait_ack(xtq_env_t *e)
{
    ptl_event_t ev;
    for (;;) {
        XP_REQUIRE(PtlEQWait(e->md_eq, &ev) == PTL_OK);
        if (ev.type == PTL_EVENT_ACK)
            return ev;
    }
}

#endif
