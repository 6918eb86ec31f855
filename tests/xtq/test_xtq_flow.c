/*
 * test_xtq_flow - flow control across processes. Rank 0 is the target: a
 * queue of 4 packets drained by one slow CPU worker. Every other rank sends
 * NTASKS tasks as fast as it can (a window of all of them, each into its own
 * slot of the target's buffer), collects the acknowledgements and sends again
 * exactly the tasks refused with PTL_NI_XTQ_QUEUE_FULL, until all were
 * accepted. The target checks that every task ran exactly once with its own
 * payload, that its entry counted one success per task and one failure per
 * refusal, and that refusals did happen.
 */
#include <stdlib.h>

#include "xtq_mp.h"

#define PT 6
#define NTASKS 64
#define NVALS 16
#define SLOT 256
#define MAXRANKS 16

typedef struct target {
    uint64_t sum[MAXRANKS * NTASKS];
    uint32_t runs[MAXRANKS * NTASKS];
} target_t;

typedef struct msg {
    xp_aql_packet_t pkt;
    uint64_t args[2];           /* rewritten: target buffer, payload */
} msg_t;

/* payload: global task id, then NVALS values */
static void sum_kernel(const xp_kernel_ctx_t *ctx)
{
    uint64_t **args = ctx->kernarg;
    target_t *tb = (target_t *)args[0];
    const uint64_t *p = args[1];
    uint64_t s = 0;
    for (int i = 1; i <= NVALS; i++)
        s += p[i];
    tb->sum[p[0]] = s;
    __atomic_fetch_add(&tb->runs[p[0]], 1, __ATOMIC_RELAXED);
    if (p[0] % 8 == 0)
        usleep(500); /* slow now and then: the queue fills up */
}

static uint64_t expected_sum(uint64_t id)
{
    uint64_t s = 0;
    for (uint64_t i = 1; i <= NVALS; i++)
        s += id * 1000 + i;
    return s;
}

static void initiator(xtq_env_t *e)
{
    static msg_t cmd[NTASKS];
    static uint64_t payload[NTASKS][NVALS + 1];
    int accepted[NTASKS] = {0}, left = NTASKS, sends = 0;
    ptl_handle_md_t md = xtq_md_all(e, PTL_CT_NONE);
    ptl_process_t t0 = {.rank = 0};
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 0; i < NTASKS; i++) {
        uint64_t id = (uint64_t)(e->me.rank - 1) * NTASKS + (uint64_t)i;
        xtq_kernel_cmd(&cmd[i].pkt, 1, 2, sizeof(cmd[i].args));
        payload[i][0] = id;
        for (int v = 1; v <= NVALS; v++)
            payload[i][v] = id * 1000 + (uint64_t)v;
    }
    while (left > 0) {
        int window = 0;
        for (int i = 0; i < NTASKS; i++) {
            if (accepted[i])
                continue;
            uint64_t id = payload[i][0];
            XP_REQUIRE(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&cmd[i], sizeof(cmd[i]), md,
                                 (ptl_size_t)(uintptr_t)payload[i], sizeof(payload[i]),
                                 PTL_ACK_REQ, t0, PT, 1, id * SLOT, (void *)(uintptr_t)i,
                                 0) == PTL_OK);
            window++;
            sends++;
        }
        for (int k = 0; k < window; k++) {
            ptl_event_t ev = xtq_wait_ack(e);
            int i = (int)(uintptr_t)ev.user_ptr;
            XP_REQUIRE(i >= 0 && i < NTASKS && !accepted[i]);
            if (ev.ni_fail_type == PTL_NI_OK) {
                accepted[i] = 1;
                left--;
            } else {
                XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_XTQ_QUEUE_FULL);
            }
        }
        if (left)
            usleep(100); /* back off before the retries */
    }
    fprintf(stderr, "rank %d: %d tasks accepted after %d sends\n", (int)e->me.rank, NTASKS, sends);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
}

static void target(xtq_env_t *e)
{
    int total = (e->size - 1) * NTASKS;
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t done;
    ptl_handle_ct_t ct;
    target_t *tb = calloc(1, sizeof(*tb));
    uint8_t *recv = aligned_alloc(64, (size_t)total * SLOT);
    XP_REQUIRE(tb && recv);
    xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 1};
    XP_REQUIRE(xp_agent_create(&params, &agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(agent, 4, &q) == XP_OK);
    xp_signal_init(&done, total, 0);
    XP_REQUIRE(PtlCTAlloc(e->ni, &ct) == PTL_OK);
    ptl_handle_me_t me = xtq_me(e, recv, (size_t)total * SLOT, 1, ct);
    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, 1, (uint64_t)(uintptr_t)sum_kernel, tb, &done), PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterQueue(e->ni, 2, q), PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(xp_signal_wait(&done, XP_SIGNAL_EQ, 0, 20ull * 1000000000, NULL), XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK); /* every initiator has all its acknowledgements */
    for (int id = 0; id < total; id++) {
        XP_CHECK_EQ(tb->runs[id], 1);
        XP_CHECK_EQ(tb->sum[id], expected_sum((uint64_t)id));
    }
    ptl_ct_event_t c;
    XP_REQUIRE(PtlCTGet(ct, &c) == PTL_OK);
    c = xtq_ct_settled(ct, (ptl_size_t)total + c.failure);
    XP_CHECK_EQ(c.success, total);
    XP_CHECK(c.failure > 0); /* the queue of 4 did fill up */
    fprintf(stderr, "target: %d tasks ran once each, %d refusals (queue full)\n", total,
            (int)c.failure);
    XP_CHECK_EQ(PtlMEUnlink(me), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    xp_agent_destroy(agent);
    free(recv);
    free(tb);
}

int main(void)
{
    xtq_env_t e;
    xtq_env_init(&e, PT);
    if (e.size < 2 || e.size > MAXRANKS + 1)
        XP_TEST_SKIP("needs 2..%d processes", MAXRANKS + 1);
    if (e.me.rank == 0)
        target(&e);
    else
        initiator(&e);
    xtq_env_fini(&e);
    return xp_test_result();
}
