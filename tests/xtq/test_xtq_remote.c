/*
 * test_xtq_remote - PtlXtqPut through the real engine, across processes.
 * Rank 0 sends tasks to every other rank: kernel dispatches and agent
 * (function) dispatches with payloads of 0 B, 64 B, 4 KiB (inline packets)
 * and 1 MiB (single-copy RMA, gathered from two buffers). The target's CPU
 * agent runs them with no application thread involved; each task checks its
 * payload byte by byte and the rewritten addresses, and the target verifies
 * the results. Then the refusals: bad kernel / queue index (PTL_NI_XTQ_BAD_INDEX
 * in the ACK event and on the MD's CT with PTL_CT_ACK_REQ), a message
 * truncated by its entry (PTL_NI_XTQ_BAD_COMMAND), arguments the initiator
 * rejects (PTL_ARG_INVALID); the target's CT counts each refusal as a
 * failure, and a good task still runs afterwards.
 */
#include <stdlib.h>

#include "xtq_mp.h"

#define PT 5
#define KIDX 42   /* the paper's coordinated index */
#define FIDX 7
#define QIDX 42
#define SLOT ((size_t)(1u << 20) + 4096)
#define NSIZES 4
#define NTASKS (2 * NSIZES + 1) /* kernel + function per size, one after the refusals */
#define ARGS 32

static const size_t sizes[NSIZES] = {0, 64, 4096, 1u << 20};

typedef struct result {
    uint64_t ran, ok, len, tb_ok;
} result_t;

typedef struct target {
    result_t res[NTASKS];
} target_t;

static int payload_ok(const uint8_t *p, uint64_t len, uint64_t seed)
{
    for (uint64_t i = 0; i < len; i++)
        if (p[i] != (uint8_t)(seed + i * 7))
            return 0;
    return 1;
}

static void record(target_t *tb, const uint8_t *payload, uint64_t len, uint64_t seed, int tb_ok)
{
    result_t *r = &tb->res[seed % NTASKS];
    r->ok = payload_ok(payload, len, seed);
    r->len = len;
    r->tb_ok = (uint64_t)tb_ok;
    __atomic_add_fetch(&r->ran, 1, __ATOMIC_RELEASE);
}

/* kernarg: {target_t *tb, uint8_t *payload, uint64_t len, uint64_t seed} */
static void check_kernel(const xp_kernel_ctx_t *ctx)
{
    const uint64_t *a = ctx->kernarg;
    int args_follow_packet = (uintptr_t)ctx->kernarg == (uintptr_t)ctx->packet->kernarg_address;
    record((target_t *)a[0], (const uint8_t *)a[1], a[2], a[3], args_follow_packet);
}

static void check_function(uint16_t type, const uint64_t arg[4], void *ret)
{
    (void)type;
    record((target_t *)arg[0], (const uint8_t *)arg[1], arg[2], arg[3], ret == NULL);
}

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(seed + i * 7);
}

/* Send one task (kernel if kind == 0, else function) and expect ni_fail `want`. */
static void send_task(xtq_env_t *e, ptl_handle_md_t md, int target, int kind, uint64_t seed,
                      const uint8_t *payload, size_t len, ptl_size_t remote_off,
                      ptl_match_bits_t bits, uint64_t kidx, uint16_t qidx, ptl_ni_fail_t want)
{
    struct {
        xp_aql_packet_t pkt;
        uint64_t args[ARGS / 8];
    } cmd;
    size_t cmd_len = 64;
    if (kind == 0) {
        xtq_kernel_cmd(&cmd.pkt, kidx, qidx, ARGS);
        cmd.args[0] = cmd.args[1] = 0xdeadbeef; /* rewritten by the target */
        cmd.args[2] = len;
        cmd.args[3] = seed;
        cmd_len += ARGS;
    } else {
        xtq_agent_cmd(&cmd.pkt, kidx, qidx, len, seed);
    }
    ptl_process_t t = {.rank = (ptl_rank_t)target};
    for (;;) {
        XP_REQUIRE(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&cmd, cmd_len, md,
                             (ptl_size_t)(uintptr_t)payload, len, PTL_ACK_REQ, t, PT, bits,
                             remote_off, (void *)(uintptr_t)seed, 0) == PTL_OK);
        ptl_event_t ev = xtq_wait_ack(e);
        XP_CHECK_EQ((uintptr_t)ev.user_ptr, seed);
        if (ev.ni_fail_type == PTL_NI_XTQ_QUEUE_FULL && want == PTL_NI_OK)
            continue; /* flow control: try again */
        XP_CHECK_EQ(ev.ni_fail_type, want);
        if (want == PTL_NI_OK)
            XP_CHECK_EQ(ev.mlength, cmd_len + len);
        return;
    }
}

static void initiator(xtq_env_t *e)
{
    ptl_handle_ct_t ct;
    ptl_ct_event_t cte;
    XP_REQUIRE(PtlCTAlloc(e->ni, &ct) == PTL_OK);
    ptl_handle_md_t md = xtq_md_all(e, PTL_CT_NONE);
    ptl_handle_md_t md_ct = xtq_md_all(e, ct);
    uint8_t *payload = malloc(1u << 20);
    XP_REQUIRE(payload);
    XP_REQUIRE(xp_barrier() == XP_OK);

    for (int t = 1; t < e->size; t++) {
        for (int s = 0; s < NSIZES; s++) {
            for (int kind = 0; kind < 2; kind++) {
                uint64_t seed = (uint64_t)(2 * s + kind);
                fill(payload, sizes[s], seed);
                send_task(e, md, t, kind, seed, payload, sizes[s], seed * SLOT, 1,
                          kind ? FIDX : KIDX, QIDX, PTL_NI_OK);
            }
        }
    }

    /* Refusals (rank 1 only). A refused task's bytes still land, so they go
     * to the slot of the last task, which is sent after them: the queued
     * tasks' arguments must stay intact until their workers run them. */
    uint8_t small[64];
    const ptl_size_t spare = (NTASKS - 1) * SLOT;
    fill(small, sizeof small, 3);
    send_task(e, md, 1, 0, 3, small, 64, spare, 1, 200, QIDX, PTL_NI_XTQ_BAD_INDEX);
    send_task(e, md, 1, 0, 3, small, 64, spare, 1, 300, QIDX, PTL_NI_XTQ_BAD_INDEX);
    send_task(e, md, 1, 1, 3, small, 64, spare, 1, FIDX + 1, QIDX, PTL_NI_XTQ_BAD_INDEX);
    send_task(e, md, 1, 0, 3, small, 64, spare, 1, KIDX, 99, PTL_NI_XTQ_BAD_INDEX);
    send_task(e, md, 1, 0, 3, small, 64, spare, 2, KIDX, QIDX, PTL_NI_XTQ_BAD_COMMAND);

    /* PTL_CT_ACK_REQ: the refusal is a failure on the MD's CT. */
    xp_aql_packet_t bad;
    xtq_agent_cmd(&bad, FIDX + 2, QIDX, 0, 0);
    ptl_process_t one = {.rank = 1};
    XP_CHECK_EQ(PtlXtqPut(md_ct, (ptl_size_t)(uintptr_t)&bad, 64, md_ct, 0, 0, PTL_CT_ACK_REQ, one,
                          PT, 1, spare, NULL, 0), PTL_OK);
    XP_CHECK_EQ(PtlCTWait(ct, 1, &cte), PTL_OK);
    XP_CHECK_EQ(cte.success, 0);
    XP_CHECK_EQ(cte.failure, 1);

    /* Refused at once. */
    xp_aql_packet_t good;
    xtq_agent_cmd(&good, FIDX, QIDX, 0, 0);
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&good, 64, md, 0, 0, PTL_NO_ACK_REQ, one, PT,
                          1, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&good, 64, md, 0, 0, PTL_OC_ACK_REQ, one, PT,
                          1, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&good, 63, md, 0, 0, PTL_ACK_REQ, one, PT, 1,
                          0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&good, 72, md, 0, 0, PTL_ACK_REQ, one, PT, 1,
                          0, NULL, 0), PTL_ARG_INVALID); /* agent dispatch is 64 bytes */
    xp_aql_packet_t k;
    xtq_kernel_cmd(&k, KIDX, QIDX, 16); /* says 16 argument bytes, sends none */
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&k, 64, md, 0, 0, PTL_ACK_REQ, one, PT, 1, 0,
                          NULL, 0), PTL_ARG_INVALID);
    xp_aql_packet_t barrier = {.barrier = {.header = xp_aql_header(XP_AQL_TYPE_BARRIER_AND, 0)}};
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&barrier, 64, md, 0, 0, PTL_ACK_REQ, one, PT,
                          1, 0, NULL, 0), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqPut(PTL_INVALID_HANDLE, 0, 64, md, 0, 0, PTL_ACK_REQ, one, PT, 1, 0, NULL, 0),
                PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&good, 64, PTL_INVALID_HANDLE, 0, 8,
                          PTL_ACK_REQ, one, PT, 1, 0, NULL, 0), PTL_ARG_INVALID);

    /* The target still runs tasks after the refusals. */
    uint64_t seed = NTASKS - 1;
    fill(small, sizeof small, seed);
    send_task(e, md, 1, 0, seed, small, 64, seed * SLOT, 1, KIDX, QIDX, PTL_NI_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md_ct), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    free(payload);
}

static void target(xtq_env_t *e)
{
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t ksig, fsig;
    ptl_handle_ct_t ct, ct2;
    ptl_ct_event_t cte;
    target_t *tb = calloc(1, sizeof(*tb));
    uint8_t *recv = aligned_alloc(64, NTASKS * SLOT);
    uint8_t small[100];
    int expect_k = NSIZES + (e->me.rank == 1), expect_f = NSIZES;
    XP_REQUIRE(tb && recv);
    xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 2};
    XP_REQUIRE(xp_agent_create(&params, &agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(agent, 16, &q) == XP_OK);
    xp_signal_init(&ksig, expect_k, 0);
    xp_signal_init(&fsig, expect_f, 0);
    XP_REQUIRE(PtlCTAlloc(e->ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(e->ni, &ct2) == PTL_OK);
    ptl_handle_me_t me = xtq_me(e, recv, NTASKS * SLOT, 1, ct);
    ptl_handle_me_t me2 = xtq_me(e, small, sizeof small, 2, ct2);

    /* Registration errors. */
    XP_CHECK_EQ(PtlXtqRegisterKernel(PTL_INVALID_HANDLE, KIDX, 1, NULL, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, PTL_XTQ_TABLE_SIZE, 1, NULL, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, KIDX, 0, NULL, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqRegisterQueue(e->ni, QIDX, NULL), PTL_ARG_INVALID);

    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, KIDX, (uint64_t)(uintptr_t)check_kernel, tb, &ksig),
                PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, KIDX, (uint64_t)(uintptr_t)check_kernel, tb, &ksig),
                PTL_IN_USE);
    XP_CHECK_EQ(PtlXtqRegisterFunction(e->ni, FIDX, check_function, tb, &fsig), PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterQueue(e->ni, QIDX, q), PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* The application thread only waits. */
    XP_CHECK_EQ(xp_signal_wait(&ksig, XP_SIGNAL_EQ, 0, 20ull * 1000000000, NULL), XP_OK);
    XP_CHECK_EQ(xp_signal_wait(&fsig, XP_SIGNAL_EQ, 0, 20ull * 1000000000, NULL), XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    for (int s = 0; s < NSIZES; s++) {
        for (int kind = 0; kind < 2; kind++) {
            result_t *r = &tb->res[2 * s + kind];
            XP_CHECK_EQ(__atomic_load_n(&r->ran, __ATOMIC_ACQUIRE), 1);
            XP_CHECK_EQ(r->ok, 1);
            XP_CHECK_EQ(r->len, sizes[s]);
            XP_CHECK_EQ(r->tb_ok, 1);
        }
    }
    XP_CHECK_EQ(tb->res[NTASKS - 1].ran, e->me.rank == 1 ? 1 : 0);
    int refused = e->me.rank == 1 ? 5 : 0;
    cte = xtq_ct_settled(ct, (ptl_size_t)(expect_k + expect_f + refused));
    XP_CHECK_EQ(cte.success, expect_k + expect_f);
    XP_CHECK_EQ(cte.failure, refused);
    if (e->me.rank == 1) {
        cte = xtq_ct_settled(ct2, 1);
        XP_CHECK_EQ(cte.success, 0);
        XP_CHECK_EQ(cte.failure, 1);
    }

    XP_CHECK_EQ(PtlXtqDeregisterKernel(e->ni, KIDX), PTL_OK);
    XP_CHECK_EQ(PtlXtqDeregisterKernel(e->ni, KIDX), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlXtqDeregisterFunction(e->ni, FIDX), PTL_OK);
    XP_CHECK_EQ(PtlXtqDeregisterQueue(e->ni, QIDX), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(me), PTL_OK);
    XP_CHECK_EQ(PtlMEUnlink(me2), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct2), PTL_OK);
    xp_agent_destroy(agent);
    free(recv);
    free(tb);
}

int main(void)
{
    xtq_env_t e;
    xtq_env_init(&e, PT);
    if (e.size < 2)
        XP_TEST_SKIP("needs at least 2 processes");
    if (e.me.rank == 0)
        initiator(&e);
    else
        target(&e);
    xtq_env_fini(&e);
    return xp_test_result();
}
