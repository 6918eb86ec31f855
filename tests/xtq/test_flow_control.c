/* Flow control without the network: the target's queue is small and its CPU
 * agent slow, so deliveries find the queue full; every refusal is reported
 * (XP_XTQ_QUEUE_FULL -> PTL_NI_XTQ_QUEUE_FULL) and the "initiator" retries
 * until every task ran exactly once with its own payload. */
#include <stdlib.h>
#include <unistd.h>

#include "xp_test.h"
#include "xtq/xtq.h"

#define NTASKS 200
#define NVALS 16
#define ARGS 16

typedef struct {
    uint64_t sum[NTASKS];
    uint32_t runs[NTASKS];
} target_t;

/* kernarg: {target_t *tb, uint64_t *payload}; payload: task id, then values. */
static void sum_kernel(const xp_kernel_ctx_t *ctx)
{
    uint64_t **args = ctx->kernarg;
    target_t *tb = (target_t *)args[0];
    const uint64_t *payload = args[1];
    uint64_t id = payload[0];
    uint64_t s = 0;
    for (int i = 1; i <= NVALS; i++)
        s += payload[i];
    tb->sum[id] = s;
    __atomic_fetch_add(&tb->runs[id], 1, __ATOMIC_RELAXED);
    if (id % 16 == 0)
        usleep(2000); /* a slow task now and then: the queue fills up */
}

int main(void)
{
    xp_xtq_tables_t *t;
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t done;
    target_t *tb = calloc(1, sizeof(*tb));
    xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 1};
    XP_REQUIRE(xp_agent_create(&params, &agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(agent, 4, &q) == XP_OK);
    XP_REQUIRE(xp_xtq_tables_create(&t) == XP_OK);
    xp_signal_init(&done, NTASKS, 0);
    XP_REQUIRE(xp_xtq_tables_set_kernel(t, 1, (uint64_t)(uintptr_t)sum_kernel, tb, &done) == XP_OK);
    XP_REQUIRE(xp_xtq_tables_set_queue(t, 2, q) == XP_OK);

    /* every message lands in its own slot of the receive buffer */
    size_t msg_len = 64 + ARGS + (NVALS + 1) * 8;
    uint8_t *recv = aligned_alloc(64, NTASKS * 256);
    int full = 0, retries_left = 1000000;
    for (uint64_t id = 0; id < NTASKS; id++) {
        uint8_t *m = recv + id * 256;
        for (;;) {
            /* (re)deliver: the initiator's retry writes the message again */
            xp_aql_packet_t *c = (xp_aql_packet_t *)m;
            memset(c, 0, sizeof(*c));
            c->kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
            c->kernel.setup = 1;
            c->kernel.workgroup_size_x = 1;
            c->kernel.grid_size_x = 1;
            xp_xtq_cmd_set_kernel(c, 1, ARGS);
            xp_xtq_cmd_set_queue(c, 2);
            uint64_t *payload = (uint64_t *)(m + 64 + ARGS);
            payload[0] = id;
            for (int i = 1; i <= NVALS; i++)
                payload[i] = id * 1000 + (uint64_t)i;
            xp_xtq_result_t r = xp_xtq_process(t, m, msg_len);
            if (r == XP_XTQ_OK)
                break;
            XP_REQUIRE(r == XP_XTQ_QUEUE_FULL);
            XP_REQUIRE(xp_xtq_fail_type(r) == PTL_NI_XTQ_QUEUE_FULL);
            full++;
            XP_REQUIRE(--retries_left > 0);
            usleep(50);
        }
    }
    XP_CHECK_EQ(xp_signal_wait(&done, XP_SIGNAL_EQ, 0, 10000000000ull, NULL), XP_OK);
    int bad = 0;
    for (uint64_t id = 0; id < NTASKS; id++) {
        uint64_t want = 0;
        for (int i = 1; i <= NVALS; i++)
            want += id * 1000 + (uint64_t)i;
        bad += tb->runs[id] != 1 || tb->sum[id] != want;
    }
    XP_CHECK_EQ(bad, 0);
    XP_CHECK(full > 0); /* the test did exercise flow control */
    printf("flow control: %d deliveries refused (queue full) and retried\n", full);
    xp_agent_destroy(agent);
    xp_xtq_tables_destroy(t);
    free(recv);
    free(tb);
    return xp_test_result();
}
