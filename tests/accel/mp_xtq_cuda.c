/*
 * mp_xtq_cuda - XTQ across processes into a GPU's queue (2 ranks).
 * Skipped (77) without a GPU or the CUDA agent plugin.
 *
 * Rank 1 runs a CUDA agent (the persistent kernel polling a queue in mapped
 * memory) and registers the built-in SUM_F64 kernel (dst[i] += src[i] over
 * a device buffer) and that queue at its XTQ tables. Rank 0 sends NT tasks
 * with PtlXtqPut, one at a time: command packet + 8 KiB of doubles, which
 * lands in rank 1's pinned, mapped entry through the shared-memory
 * transport; rank 1's engine rewrites the packet and enqueues it for the
 * GPU, and rank 1's application only waits for the completion signal the
 * GPU decrements, then answers with a 0-byte put. Rank 1 checks the device
 * buffer against the sum of every payload at the end; rank 0 prints the
 * median round trip (XTQ put -> task on the GPU -> signal -> reply), next to
 * a plain 0-byte put round trip between the same ranks.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "../xtq/xtq_mp.h"
#include "xportals/accel.h"

#define PT 6
#define KIDX 5
#define QIDX 5
#define NT 50
#define XN 1024
#define PING 200
#define SEC 5000000000ull
#define ARGS_LEN (3 * sizeof(uint64_t))
#define CMD_LEN (PTL_XTQ_CMD_SIZE + ARGS_LEN)
#define MSG_LEN (CMD_LEN + XN * sizeof(double))

static double median_us(uint64_t *t, int n)
{
    return xp_test_median_u64(t, (size_t)n) / 1e3;
}

/* Task k's payload element i; what rank 1's device buffer holds at the end. */
static double payload(int k, int i) { return k + 0.25 * i; }
static double expected(int i)
{
    double v = 100.0 + i;
    for (int k = 0; k < NT; k++)
        v += payload(k, i);
    return v;
}

/* 0-byte put with match bits `bits` to rank `to`. */
static void put0(xtq_env_t *e, ptl_handle_md_t md, ptl_rank_t to, ptl_match_bits_t bits)
{
    ptl_process_t p = {.rank = to};
    XP_CHECK_EQ(PtlPut(md, 0, 0, PTL_NO_ACK_REQ, p, e->pt, bits, 0, NULL, 0), PTL_OK);
}

/* Rank 0: NT XTQ tasks, then PING plain round trips. */
static void initiator(xtq_env_t *e, ptl_handle_md_t md, ptl_handle_ct_t ct)
{
    struct {
        xp_aql_packet_t pkt;
        uint64_t args[3];
        double data[XN];
    } *msg = malloc(sizeof(*msg));
    XP_REQUIRE(msg != NULL);
    _Static_assert(sizeof(*msg) == MSG_LEN, "command packet, arguments, payload: contiguous");
    uint64_t t[PING];
    ptl_process_t target = {.rank = 1};
    ptl_size_t seen = 0;
    for (int k = 0; k < NT; k++) {
        xtq_kernel_cmd(&msg->pkt, KIDX, QIDX, ARGS_LEN);
        msg->pkt.kernel.workgroup_size_x = 256;
        msg->pkt.kernel.grid_size_x = XN;
        msg->args[0] = msg->args[1] = 0; /* rewritten: the target buffer, the payload */
        msg->args[2] = XN;
        for (int i = 0; i < XN; i++)
            msg->data[i] = payload(k, i);
        uint64_t t0 = xp_test_now_ns();
        XP_REQUIRE(PtlXtqPut(md, (ptl_size_t)(uintptr_t)msg, CMD_LEN, md,
                             (ptl_size_t)(uintptr_t)msg->data, XN * sizeof(double), PTL_ACK_REQ,
                             target, e->pt, 0, 0, NULL, 0) == PTL_OK);
        ptl_ct_event_t c;
        XP_REQUIRE(PtlCTWait(ct, ++seen, &c) == PTL_OK);
        XP_CHECK_EQ(c.failure, 0);
        t[k] = xp_test_now_ns() - t0;
        /* XTQ puts always ask for the acknowledgement: it carries refusals. */
        ptl_event_t ack = xtq_wait_ack(e);
        XP_CHECK_EQ(ack.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ack.mlength, (ptl_size_t)MSG_LEN);
    }
    double xtq = median_us(t, NT);
    for (int k = 0; k < PING; k++) {
        uint64_t t0 = xp_test_now_ns();
        put0(e, md, 1, 2);
        ptl_ct_event_t c;
        XP_REQUIRE(PtlCTWait(ct, ++seen, &c) == PTL_OK);
        t[k] = xp_test_now_ns() - t0;
    }
    printf("mp_xtq_cuda: XTQ put of %zu B -> SUM_F64 on the GPU -> completion signal -> reply: "
           "median %.2f us over %d tasks; 0-byte put round trip: median %.2f us\n",
           (size_t)MSG_LEN, xtq, NT, median_us(t, PING));
    free(msg);
}

typedef struct gpu {
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t *sig;   /* NT, decremented by the GPU once per task */
    double *d_dst;
    char *landing;      /* pinned, mapped: the GPU reads arguments and payload here */
} gpu_t;

static void gpu_setup(gpu_t *g, xtq_env_t *e)
{
    double *h = malloc(XN * sizeof(double));
    XP_REQUIRE(h != NULL);
    for (int i = 0; i < XN; i++)
        h[i] = 100.0 + i;
    /* CUDA calls that may wait for every kernel come before the agent's. */
    XP_REQUIRE(cudaMalloc((void **)&g->d_dst, XN * sizeof(double)) == cudaSuccess);
    XP_REQUIRE(cudaMemcpy(g->d_dst, h, XN * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
    XP_REQUIRE(cudaHostAlloc((void **)&g->landing, MSG_LEN, cudaHostAllocMapped) == cudaSuccess);
    free(h);
    xp_agent_params_t params = {.kind = XP_AGENT_CUDA, .num_workers = 0, .device = 0};
    XP_REQUIRE(xp_agent_create(&params, &g->agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(g->agent, 64, &g->q) == XP_OK);
    XP_REQUIRE(xp_agent_signal_create(g->agent, NT, &g->sig) == XP_OK);
    XP_CHECK_EQ(PtlXtqRegisterKernel(e->ni, KIDX, XP_CUDA_KERNEL_SUM_F64, g->d_dst, g->sig), PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterQueue(e->ni, QIDX, g->q), PTL_OK);
}

/* Rank 1: wait for each task's signal, answer; then the plain round trips. */
static void target(xtq_env_t *e, ptl_handle_md_t md, gpu_t *g, ptl_handle_ct_t ct)
{
    for (int k = 0; k < NT; k++) {
        XP_REQUIRE(xp_signal_wait(g->sig, XP_SIGNAL_EQ, NT - k - 1, SEC, NULL) == XP_OK);
        put0(e, md, 0, 1);
    }
    for (int k = 0; k < PING; k++) {
        ptl_ct_event_t c;
        XP_REQUIRE(PtlCTWait(ct, (ptl_size_t)k + 1, &c) == PTL_OK);
        put0(e, md, 0, 1);
    }
    double *h = malloc(XN * sizeof(double));
    XP_REQUIRE(h != NULL);
    xp_accel_cuda_pause(); /* cudaMemcpy may wait for the persistent kernel */
    XP_REQUIRE(cudaMemcpy(h, g->d_dst, XN * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
    xp_accel_cuda_resume();
    int bad = 0;
    for (int i = 0; i < XN; i++)
        bad += h[i] != expected(i);
    XP_CHECK_EQ(bad, 0);
    free(h);
}

static void gpu_teardown(gpu_t *g, xtq_env_t *e)
{
    XP_CHECK_EQ(PtlXtqDeregisterQueue(e->ni, QIDX), PTL_OK);
    XP_CHECK_EQ(PtlXtqDeregisterKernel(e->ni, KIDX), PTL_OK);
    xp_agent_signal_destroy(g->agent, g->sig);
    xp_agent_destroy(g->agent); /* frees its queue; the kernel is gone: plain frees */
    cudaFreeHost(g->landing);
    cudaFree(g->d_dst);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        XP_TEST_SKIP("no GPU");
    if (!xp_accel_cuda_available())
        XP_TEST_SKIP("no CUDA agent plugin");
    xtq_env_t e;
    xtq_env_init(&e, PT);
    if (e.size != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    ptl_handle_ct_t ct;
    XP_REQUIRE(PtlCTAlloc(e.ni, &ct) == PTL_OK);
    ptl_handle_md_t md = xtq_md_all(&e, PTL_CT_NONE);
    gpu_t g = {0};
    ptl_handle_me_t land = PTL_INVALID_HANDLE, rep;
    if (e.me.rank == 1) {
        gpu_setup(&g, &e);
        land = xtq_me(&e, g.landing, MSG_LEN, 0, PTL_CT_NONE);
        rep = xtq_me(&e, NULL, 0, 2, ct); /* the plain pings */
    } else {
        rep = xtq_me(&e, NULL, 0, 1, ct); /* the replies */
    }
    xp_barrier();
    if (e.me.rank == 0)
        initiator(&e, md, ct);
    else
        target(&e, md, &g, ct);
    xp_barrier();
    XP_CHECK_EQ(PtlMEUnlink(rep), PTL_OK);
    if (e.me.rank == 1) {
        XP_CHECK_EQ(PtlMEUnlink(land), PTL_OK);
        gpu_teardown(&g, &e);
    }
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    xtq_env_fini(&e);
    return xp_test_result();
}
