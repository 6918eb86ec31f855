/* XTQ rewrite against hand-built expected packets, registration errors, bad
 * indices and malformed commands. */
#include <stdlib.h>

#include "xp_test.h"
#include "xtq/xtq.h"

#define KIDX 5
#define FIDX 9
#define QIDX 3
#define ARGS 24
#define PAYLOAD 100

static void dummy_kernel(const xp_kernel_ctx_t *ctx) { (void)ctx; }
static void dummy_fn(uint16_t type, const uint64_t arg[4], void *ret) { (void)type; (void)arg; (void)ret; }

static uint64_t u64(const void *p) { return (uint64_t)(uintptr_t)p; }

static void test_registration(xp_xtq_tables_t *t, xp_queue_t *q, xp_signal_t *sig, void *tb)
{
    XP_CHECK_EQ(xp_xtq_tables_set_kernel(t, PTL_XTQ_TABLE_SIZE, u64(dummy_kernel), tb, sig), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_xtq_tables_set_kernel(t, 1, 0, tb, sig), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_xtq_tables_set_function(t, 1, NULL, tb, sig), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_xtq_tables_set_queue(t, 1, NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_xtq_tables_set_queue(NULL, 1, q), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_xtq_tables_set_kernel(t, KIDX, u64(dummy_kernel), tb, sig), XP_OK);
    XP_CHECK_EQ(xp_xtq_tables_set_kernel(t, KIDX, u64(dummy_kernel), tb, sig), XP_ERR_EXISTS);
    XP_CHECK_EQ(xp_xtq_tables_set_function(t, FIDX, dummy_fn, tb, sig), XP_OK);
    XP_CHECK_EQ(xp_xtq_tables_set_function(t, FIDX, dummy_fn, tb, sig), XP_ERR_EXISTS);
    XP_CHECK_EQ(xp_xtq_tables_set_queue(t, QIDX, q), XP_OK);
    XP_CHECK_EQ(xp_xtq_tables_set_queue(t, QIDX, q), XP_ERR_EXISTS);
    XP_CHECK_EQ(xp_xtq_tables_clear_kernel(t, 77), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(xp_xtq_tables_clear_function(t, 77), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(xp_xtq_tables_clear_queue(t, 77), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(xp_xtq_tables_clear_queue(t, 1000), XP_ERR_INVALID);
    /* register / deregister / register again */
    XP_CHECK_EQ(xp_xtq_tables_set_queue(t, 7, q), XP_OK);
    XP_CHECK_EQ(xp_xtq_tables_clear_queue(t, 7), XP_OK);
    XP_CHECK_EQ(xp_xtq_tables_clear_queue(t, 7), XP_ERR_NOT_FOUND);
}

/* The message as it lands: command, kernel arguments, payload. */
static uint8_t *kernel_message(uint64_t kidx, uint64_t args_len, uint16_t qidx)
{
    uint8_t *m = aligned_alloc(64, 384);
    xp_aql_packet_t *c = (xp_aql_packet_t *)m;
    memset(c, 0, sizeof(*c));
    c->kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 1);
    c->kernel.setup = 1;
    c->kernel.workgroup_size_x = 32;
    c->kernel.workgroup_size_y = c->kernel.workgroup_size_z = 1;
    c->kernel.grid_size_x = 100;
    c->kernel.grid_size_y = c->kernel.grid_size_z = 1;
    c->kernel.private_segment_size = 11;
    c->kernel.group_segment_size = 22;
    c->kernel.kernarg_address = 0xdeadbeef;    /* initiator garbage: replaced */
    c->kernel.completion_signal = 0x12345678; /* initiator garbage: replaced */
    xp_xtq_cmd_set_kernel(c, kidx, args_len);
    xp_xtq_cmd_set_queue(c, qidx);
    uint64_t *args = (uint64_t *)(m + 64);
    args[0] = 0xa0; args[1] = 0xa1; args[2] = 0xa2;
    for (int i = 0; i < PAYLOAD; i++)
        m[64 + ARGS + i] = (uint8_t)i;
    return m;
}

static void test_kernel_rewrite(xp_xtq_tables_t *t, xp_queue_t *q, xp_signal_t *sig, void *tb)
{
    uint8_t *m = kernel_message(KIDX, ARGS, QIDX);
    /* expected packet, built field by field */
    xp_aql_packet_t want;
    memset(&want, 0, sizeof(want));
    want.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 1);
    want.kernel.setup = 1;
    want.kernel.workgroup_size_x = 32;
    want.kernel.workgroup_size_y = want.kernel.workgroup_size_z = 1;
    want.kernel.reserved0 = QIDX;
    want.kernel.grid_size_x = 100;
    want.kernel.grid_size_y = want.kernel.grid_size_z = 1;
    want.kernel.private_segment_size = 11;
    want.kernel.group_segment_size = 22;
    want.kernel.kernel_object = u64(dummy_kernel);
    want.kernel.kernarg_address = u64(m + 64);
    want.kernel.reserved2 = ARGS;
    want.kernel.completion_signal = u64(sig);

    xp_xtq_rewrite_t rw;
    XP_REQUIRE(xp_xtq_rewrite(t, m, 64 + ARGS + PAYLOAD, &rw) == XP_XTQ_OK);
    XP_CHECK(memcmp(&rw.packet, &want, sizeof(want)) == 0);
    XP_CHECK(rw.queue == q);
    XP_CHECK_EQ(rw.npatch, 2);
    XP_CHECK_EQ(rw.patch[0], u64(tb));
    XP_CHECK_EQ(rw.patch[1], u64(m + 64 + ARGS));
    /* pure: the landed message is untouched until enqueue */
    XP_CHECK_EQ(((uint64_t *)(m + 64))[0], 0xa0);

    XP_REQUIRE(xp_xtq_enqueue(&rw) == XP_XTQ_OK);
    uint64_t *args = (uint64_t *)(m + 64);
    XP_CHECK_EQ(args[0], u64(tb));
    XP_CHECK_EQ(args[1], u64(m + 64 + ARGS));
    XP_CHECK_EQ(args[2], 0xa2);            /* third argument passes through */
    xp_aql_packet_t *got = xp_queue_peek(q);
    XP_REQUIRE(got != NULL);
    XP_CHECK(memcmp(got, &want, sizeof(want)) == 0);
    xp_queue_release(q);

    /* 8 bytes of arguments: only the target buffer is patched */
    xp_xtq_cmd_set_kernel((xp_aql_packet_t *)m, KIDX, 8);
    XP_REQUIRE(xp_xtq_rewrite(t, m, 64 + ARGS + PAYLOAD, &rw) == XP_XTQ_OK);
    XP_CHECK_EQ(rw.npatch, 1);
    /* no arguments: no kernarg address */
    xp_xtq_cmd_set_kernel((xp_aql_packet_t *)m, KIDX, 0);
    XP_REQUIRE(xp_xtq_rewrite(t, m, 64 + ARGS + PAYLOAD, &rw) == XP_XTQ_OK);
    XP_CHECK_EQ(rw.npatch, 0);
    XP_CHECK_EQ(rw.packet.kernel.kernarg_address, 0);
    free(m);
}

static void test_function_rewrite(xp_xtq_tables_t *t, xp_queue_t *q, xp_signal_t *sig, void *tb)
{
    uint8_t *m = aligned_alloc(64, 192);
    xp_aql_packet_t *c = (xp_aql_packet_t *)m;
    memset(c, 0, sizeof(*c));
    c->agent.header = xp_aql_header(XP_AQL_TYPE_AGENT_DISPATCH, 0);
    c->agent.type = 42;
    c->agent.return_address = 0x999;
    c->agent.arg[0] = 1; c->agent.arg[1] = 2; c->agent.arg[2] = 3; c->agent.arg[3] = 4;
    c->agent.reserved0 = 0xabcd0000u;
    xp_xtq_cmd_set_function(c, FIDX);
    xp_xtq_cmd_set_queue(c, QIDX);

    xp_aql_packet_t want;
    memset(&want, 0, sizeof(want));
    want.agent.header = xp_aql_header(XP_AQL_TYPE_AGENT_DISPATCH, 0);
    want.agent.type = 42;
    want.agent.reserved0 = 0xabcd0000u | QIDX;
    want.agent.return_address = 0;
    want.agent.arg[0] = u64(tb);
    want.agent.arg[1] = u64(m + 64);
    want.agent.arg[2] = 3;
    want.agent.arg[3] = 4;
    want.agent.function = u64(dummy_fn);
    want.agent.completion_signal = u64(sig);

    XP_CHECK_EQ(xp_xtq_process(t, m, 64 + PAYLOAD), XP_XTQ_OK);
    xp_aql_packet_t *got = xp_queue_peek(q);
    XP_REQUIRE(got != NULL);
    XP_CHECK(memcmp(got, &want, sizeof(want)) == 0);
    xp_queue_release(q);
    free(m);
}

static void test_bad_commands(xp_xtq_tables_t *t, xp_queue_t *q)
{
    xp_xtq_rewrite_t rw;
    uint8_t *m = kernel_message(KIDX + 1, ARGS, QIDX);      /* kernel not registered */
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_INDEX);
    free(m);
    m = kernel_message(PTL_XTQ_TABLE_SIZE + 3, ARGS, QIDX); /* beyond the table */
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_INDEX);
    free(m);
    m = kernel_message(KIDX, ARGS, QIDX + 1);                /* queue not registered */
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_INDEX);
    free(m);
    m = kernel_message(KIDX, ARGS, 0xffff);
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_INDEX);
    free(m);
    m = kernel_message(KIDX, ARGS, QIDX);
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS - 1, &rw), XP_XTQ_BAD_COMMAND); /* truncated args */
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 63, &rw), XP_XTQ_BAD_COMMAND);
    XP_CHECK_EQ(xp_xtq_rewrite(t, NULL, 128, &rw), XP_XTQ_BAD_COMMAND);
    xp_xtq_cmd_set_kernel((xp_aql_packet_t *)m, KIDX, UINT64_MAX);             /* absurd length */
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_COMMAND);
    ((xp_aql_packet_t *)m)->header = xp_aql_header(XP_AQL_TYPE_BARRIER_AND, 0);
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_COMMAND);
    ((xp_aql_packet_t *)m)->header = 0xffff;
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS, &rw), XP_XTQ_BAD_COMMAND);
    free(m);
    XP_CHECK(xp_queue_peek(q) == NULL); /* nothing was enqueued */
    XP_CHECK_EQ(xp_xtq_fail_type(XP_XTQ_QUEUE_FULL), PTL_NI_XTQ_QUEUE_FULL);
    XP_CHECK_EQ(xp_xtq_fail_type(XP_XTQ_BAD_INDEX), PTL_NI_XTQ_BAD_INDEX);
    XP_CHECK_EQ(xp_xtq_fail_type(XP_XTQ_OK), PTL_NI_OK);
}

int main(void)
{
    xp_xtq_tables_t *t;
    xp_queue_t *q;
    xp_signal_t sig;
    static char target_buffer[256];
    xp_signal_init(&sig, 1, 0);
    XP_REQUIRE(xp_xtq_tables_create(&t) == XP_OK);
    XP_REQUIRE(xp_queue_create(8, &q) == XP_OK);
    test_registration(t, q, &sig, target_buffer);
    test_kernel_rewrite(t, q, &sig, target_buffer);
    test_function_rewrite(t, q, &sig, target_buffer);
    test_bad_commands(t, q);
    /* deregistered entries are refused */
    XP_CHECK_EQ(xp_xtq_tables_clear_kernel(t, KIDX), XP_OK);
    uint8_t *m = kernel_message(KIDX, ARGS, QIDX);
    xp_xtq_rewrite_t rw;
    XP_CHECK_EQ(xp_xtq_rewrite(t, m, 64 + ARGS + PAYLOAD, &rw), XP_XTQ_BAD_INDEX);
    free(m);
    xp_queue_destroy(q);
    xp_xtq_tables_destroy(t);
    return xp_test_result();
}
