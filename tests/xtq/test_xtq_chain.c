/*
 * test_xtq_chain - chains of remote tasks with no application thread on the
 * path: a token goes LAPS times around the ring of ranks, every hop being a
 * PtlTriggeredXtqPut that the previous task released. Each rank's task (run
 * by its CPU agent) adds 1 to the token it received, writes the result into
 * the payload buffer of its outgoing triggered XTQ put and increments a CT;
 * that increment fires the put to the right neighbour. The application
 * threads only post the triggered operations, then wait on the CT; at the end
 * every rank checks the token values each lap carried, and its MD's CT that
 * every triggered put was acknowledged without failure.
 */
#include <stdlib.h>

#include "xtq_mp.h"

#define PT 9
#define LAPS 8
#define SLOT 128

typedef struct node {
    ptl_handle_ct_t ct;
    uint64_t out[LAPS];     /* payload of the put sent after lap k */
    uint32_t runs;
} node_t;

/* arg[0]: node, arg[1]: payload (the token), arg[2]: lap */
static void step(uint16_t type, const uint64_t arg[4], void *ret)
{
    (void)type;
    (void)ret;
    node_t *n = (node_t *)arg[0];
    uint64_t token = *(const uint64_t *)arg[1];
    uint64_t lap = arg[2];
    if (lap < LAPS)
        n->out[lap] = token + 1;
    __atomic_add_fetch(&n->runs, 1, __ATOMIC_RELAXED);
    /* The task's completion releases the next hop. */
    PtlCTInc(n->ct, (ptl_ct_event_t){1, 0});
}

int main(void)
{
    xtq_env_t e;
    xtq_env_init(&e, PT);
    int n = e.size;
    ptl_rank_t r = e.me.rank;
    if (n < 2)
        XP_TEST_SKIP("needs at least 2 processes");
    ptl_process_t right = {.rank = (r + 1) % (ptl_rank_t)n};
    static node_t node;
    static xp_aql_packet_t cmd[LAPS];
    static uint64_t start_token = 0;
    uint8_t *recv = aligned_alloc(64, LAPS * SLOT);
    xp_agent_t *agent;
    xp_queue_t *q;
    ptl_handle_ct_t md_ct;
    ptl_ct_event_t c;
    XP_REQUIRE(recv);

    xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 1};
    XP_REQUIRE(xp_agent_create(&params, &agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(agent, 8, &q) == XP_OK);
    XP_REQUIRE(PtlCTAlloc(e.ni, &node.ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(e.ni, &md_ct) == PTL_OK);
    ptl_handle_me_t me = xtq_me(&e, recv, LAPS * SLOT, 3, PTL_CT_NONE);
    ptl_handle_md_t md = xtq_md_all(&e, md_ct);
    XP_CHECK_EQ(PtlXtqRegisterFunction(e.ni, 1, step, &node, NULL), PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterQueue(e.ni, 1, q), PTL_OK);

    /* Rank 0 sends lap 0 itself and lap k+1 when its task of lap k is done;
     * every other rank forwards lap k when its task of lap k is done. */
    int sends = 0;
    for (int k = 0; k < LAPS; k++) {
        int lap_out = r == 0 ? k + 1 : k;
        if (lap_out >= LAPS)
            continue;
        xtq_agent_cmd(&cmd[lap_out], 1, 1, (uint64_t)lap_out, 0);
        XP_CHECK_EQ(PtlTriggeredXtqPut(md, (ptl_size_t)(uintptr_t)&cmd[lap_out], 64, md,
                                       (ptl_size_t)(uintptr_t)&node.out[k], 8, PTL_CT_ACK_REQ,
                                       right, PT, 3, (ptl_size_t)lap_out * SLOT, NULL, 0, node.ct,
                                       (ptl_size_t)k + 1), PTL_OK);
        sends++;
    }
    /* Refused at once: no acknowledgement, short command, bad trigger CT. */
    XP_CHECK_EQ(PtlTriggeredXtqPut(md, (ptl_size_t)(uintptr_t)&cmd[0], 64, md, 0, 0,
                                   PTL_NO_ACK_REQ, right, PT, 3, 0, NULL, 0, node.ct, 100),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredXtqPut(md, (ptl_size_t)(uintptr_t)&cmd[0], 32, md, 0, 0, PTL_ACK_REQ,
                                   right, PT, 3, 0, NULL, 0, node.ct, 100), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlTriggeredXtqPut(md, (ptl_size_t)(uintptr_t)&cmd[0], 64, md, 0, 0, PTL_ACK_REQ,
                                   right, PT, 3, 0, NULL, 0, PTL_INVALID_HANDLE, 1),
                PTL_ARG_INVALID);
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (r == 0) {
        xp_aql_packet_t first;
        xtq_agent_cmd(&first, 1, 1, 0, 0);
        sends++;
        XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&first, 64, md,
                              (ptl_size_t)(uintptr_t)&start_token, 8, PTL_CT_ACK_REQ, right, PT, 3,
                              0, NULL, 0), PTL_OK);
    }
    /* From here on the application thread only waits. */
    XP_CHECK_EQ(PtlCTWait(node.ct, LAPS, &c), PTL_OK);
    XP_CHECK_EQ(c.success, LAPS);
    XP_CHECK_EQ(c.failure, 0);
    c = xtq_ct_settled(md_ct, (ptl_size_t)sends);
    XP_CHECK_EQ(c.success, sends);
    XP_CHECK_EQ(c.failure, 0);
    XP_REQUIRE(xp_barrier() == XP_OK);

    XP_CHECK_EQ(__atomic_load_n(&node.runs, __ATOMIC_RELAXED), LAPS);
    for (int k = 0; k < LAPS; k++)
        XP_CHECK_EQ(node.out[k], (uint64_t)k * (uint64_t)n + (uint64_t)(r ? (int)r : n));
    if (r == 0)
        fprintf(stderr, "token went %d times around %d ranks: %llu\n", LAPS, n,
                (unsigned long long)node.out[LAPS - 1]);

    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(me), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(node.ct), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(md_ct), PTL_OK);
    xp_agent_destroy(agent);
    free(recv);
    xtq_env_fini(&e);
    return xp_test_result();
}
