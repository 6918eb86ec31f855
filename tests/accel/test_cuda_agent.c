/* The CUDA agent doing real work, next to the application's own CUDA use.
 * Skipped (77) without a GPU or the plugins. With one:
 *   - built-in kernels (SUM_F64 on device memory, COPY from pinned memory)
 *     run by the persistent kernel, results checked on the host;
 *   - 200 packets through a 64-slot queue without waiting (the GPU frees
 *     slots; the producer waits on the device-updated space signal);
 *   - a pause while packets stream in stops the kernel within a few of
 *     them; the rest runs after the resume;
 *   - a barrier-AND packet holds back the packet behind it until its
 *     dependency signal reaches 0;
 *   - signals created and destroyed while the kernel runs, and the
 *     application's cudaMalloc / cudaFree between xp_accel_cuda_pause() and
 *     xp_accel_cuda_resume() (cudaFree waits for every kernel: without the
 *     pause it would wait for the persistent one for good);
 *   - the datatype engine packing device buffers while the agent runs;
 *   - an XTQ put to this process whose task (SUM_F64 into device memory)
 *     the engine enqueues into the CUDA agent's queue.
 * Prints the median push -> completion-signal time of a NOP packet. */
#include <cuda_runtime.h>
#include <portals4.h>
#include <portals4_xtq.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/accel.h"
#include "xportals/dt.h"

#define N 65536
#define SEC 5000000000ull

typedef struct sum_args {
    double *dst;
    const double *src;
    uint64_t n;
} sum_args_t;

typedef struct gpu {
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t *done;
    sum_args_t *args;        /* pinned, mapped: the kernel reads it */
    double *d_dst, *d_src;   /* device */
    double *h;               /* host scratch */
} gpu_t;

static xp_aql_packet_t kernel_packet(uint64_t kobj, void *args, uint32_t grid, xp_signal_t *sig)
{
    xp_aql_packet_t p;
    memset(&p, 0, sizeof(p));
    p.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
    p.kernel.setup = 1;
    p.kernel.workgroup_size_x = 256;
    p.kernel.grid_size_x = grid;
    p.kernel.grid_size_y = p.kernel.grid_size_z = 1;
    p.kernel.kernel_object = kobj;
    p.kernel.kernarg_address = (uint64_t)(uintptr_t)args;
    p.kernel.completion_signal = (uint64_t)(uintptr_t)sig;
    return p;
}

/* One packet, then wait for its completion signal. */
static xp_status_t run_one(gpu_t *g, const xp_aql_packet_t *p)
{
    xp_signal_store(g->done, 1);
    xp_status_t st = xp_queue_push(g->q, p, SEC, NULL);
    if (st != XP_OK)
        return st;
    return xp_signal_wait(g->done, XP_SIGNAL_EQ, 0, SEC, NULL);
}

static void check_sum(gpu_t *g)
{
    for (int i = 0; i < N; i++)
        g->h[i] = i;
    XP_REQUIRE(cudaMemcpy(g->d_dst, g->h, N * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
    for (int i = 0; i < N; i++)
        g->h[i] = 2.0 * i;
    XP_REQUIRE(cudaMemcpy(g->d_src, g->h, N * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);
    *g->args = (sum_args_t){g->d_dst, g->d_src, N};
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_SUM_F64, g->args, N, g->done);
    XP_CHECK_EQ(run_one(g, &p), XP_OK);
    XP_REQUIRE(cudaMemcpy(g->h, g->d_dst, N * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += g->h[i] != 3.0 * i;
    XP_CHECK_EQ(bad, 0);
}

/* COPY from pinned host memory into device memory. */
static void check_copy(gpu_t *g)
{
    enum { BYTES = 10007 };
    unsigned char *src;
    xp_accel_cuda_pause(); /* page-locked allocations may wait for every kernel too */
    XP_REQUIRE(cudaHostAlloc((void **)&src, BYTES, cudaHostAllocMapped) == cudaSuccess);
    xp_accel_cuda_resume();
    for (int i = 0; i < BYTES; i++)
        src[i] = (unsigned char)(i * 13 + 1);
    struct { void *dst; const void *src; uint64_t n; } *a = (void *)g->args;
    a->dst = g->d_dst;
    a->src = src;
    a->n = BYTES;
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_COPY, a, BYTES, g->done);
    XP_CHECK_EQ(run_one(g, &p), XP_OK);
    unsigned char *back = malloc(BYTES);
    XP_REQUIRE(cudaMemcpy(back, g->d_dst, BYTES, cudaMemcpyDeviceToHost) == cudaSuccess);
    XP_CHECK(!memcmp(back, src, BYTES));
    free(back);
    xp_accel_cuda_pause();
    XP_CHECK_EQ(cudaFreeHost(src), cudaSuccess);
    xp_accel_cuda_resume();
}

/* More packets than slots, no waiting in between. */
static void check_burst(gpu_t *g)
{
    enum { K = 200 };
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 64, g->done);
    xp_signal_store(g->done, K);
    uint64_t t0 = xp_test_now_ns();
    for (int i = 0; i < K; i++)
        XP_CHECK_EQ(xp_queue_push(g->q, &p, SEC, NULL), XP_OK);
    XP_CHECK_EQ(xp_signal_wait(g->done, XP_SIGNAL_EQ, 0, SEC, NULL), XP_OK);
    uint64_t dt = xp_test_now_ns() - t0;
    /* the slot of a packet is free before its completion is signalled */
    XP_CHECK_EQ(xp_queue_load_read_index(g->q), xp_queue_load_write_index(g->q));
    printf("cuda agent: %d NOP packets (grid 64) pushed at once: %.2f us per packet\n", K, dt / 1e3 / K);
}

/* A pause while packets stream in: the kernel leaves within a few packets
 * (it looks at the pause flag on every 8th look at the queue), nothing
 * completes while it is paused, and after the resume the rest runs and
 * every slot is freed. 64 packets fill the queue, so no push waits for
 * room a paused kernel would not make. */
static void check_pause_in_burst(gpu_t *g)
{
    enum { K = 64 };
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 64, g->done);
    xp_signal_store(g->done, K);
    for (int i = 0; i < K; i++)
        XP_CHECK_EQ(xp_queue_push(g->q, &p, SEC, NULL), XP_OK);
    xp_accel_cuda_pause();
    int64_t left = xp_signal_load(g->done);
    uint64_t r = xp_queue_load_read_index(g->q);
    usleep(20000);
    XP_CHECK_EQ(xp_signal_load(g->done), left);
    XP_CHECK_EQ(xp_queue_load_read_index(g->q), r);
    xp_accel_cuda_resume();
    XP_CHECK_EQ(xp_signal_wait(g->done, XP_SIGNAL_EQ, 0, SEC, NULL), XP_OK);
    XP_CHECK_EQ(xp_queue_load_read_index(g->q), xp_queue_load_write_index(g->q));
    printf("cuda agent: paused with %lld of %d packets left\n", (long long)left, K);
}

static void check_barrier(gpu_t *g)
{
    xp_signal_t *gate, *bdone;
    XP_REQUIRE(xp_agent_signal_create(g->agent, 1, &gate) == XP_OK);
    XP_REQUIRE(xp_agent_signal_create(g->agent, 1, &bdone) == XP_OK);
    xp_aql_packet_t b;
    memset(&b, 0, sizeof(b));
    b.barrier.header = xp_aql_header(XP_AQL_TYPE_BARRIER_AND, 0);
    b.barrier.dep_signal[0] = (uint64_t)(uintptr_t)gate;
    b.barrier.completion_signal = (uint64_t)(uintptr_t)bdone;
    xp_aql_packet_t k = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 1, g->done);
    xp_signal_store(g->done, 1);
    XP_CHECK_EQ(xp_queue_push(g->q, &b, SEC, NULL), XP_OK);
    XP_CHECK_EQ(xp_queue_push(g->q, &k, SEC, NULL), XP_OK);
    /* held back: neither completes while the gate is up */
    XP_CHECK_EQ(xp_signal_wait(g->done, XP_SIGNAL_EQ, 0, 20000000ull, NULL), XP_ERR_TIMEOUT);
    XP_CHECK_EQ(xp_signal_load(bdone), 1);
    xp_signal_store(gate, 0);
    XP_CHECK_EQ(xp_signal_wait(bdone, XP_SIGNAL_EQ, 0, SEC, NULL), XP_OK);
    XP_CHECK_EQ(xp_signal_wait(g->done, XP_SIGNAL_EQ, 0, SEC, NULL), XP_OK);
    xp_agent_signal_destroy(g->agent, gate);
    xp_agent_signal_destroy(g->agent, bdone);
}

/* Allocations and frees while the kernel runs, then it still works. */
static void check_alloc_while_running(gpu_t *g)
{
    for (int i = 0; i < 10; i++) {
        xp_signal_t *s;
        XP_REQUIRE(xp_agent_signal_create(g->agent, i, &s) == XP_OK);
        XP_CHECK_EQ(xp_signal_load(s), i);
        xp_agent_signal_destroy(g->agent, s);
    }
    void *tmp = NULL;
    xp_accel_cuda_pause();
    xp_accel_cuda_pause(); /* nests */
    XP_CHECK_EQ(cudaMalloc(&tmp, 1 << 20), cudaSuccess);
    xp_accel_cuda_resume();
    XP_CHECK_EQ(cudaFree(tmp), cudaSuccess);
    xp_accel_cuda_resume();
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 1, g->done);
    XP_CHECK_EQ(run_one(g, &p), XP_OK);
}

/* The datatype plugin's kernels and staging buffers next to the agent. */
static void check_dt(gpu_t *g)
{
    enum { ROWS = 64, COLS = 64 };
    xp_dt_t v;
    XP_REQUIRE(xp_dt_vector(COLS, ROWS, 2 * ROWS, XP_DT_DOUBLE, &v) == XP_OK && xp_dt_commit(v) == XP_OK);
    size_t packed = ROWS * COLS * sizeof(double);
    for (int i = 0; i < 2 * ROWS * COLS; i++)
        g->h[i] = i * 0.5;
    XP_REQUIRE(cudaMemcpy(g->d_src, g->h, 2 * packed, cudaMemcpyHostToDevice) == cudaSuccess);
    double *ref = malloc(packed), *got = malloc(packed);
    XP_CHECK_EQ(xp_dt_pack_all(v, 1, g->h, ref), XP_OK);
    /* device -> device, then device -> pageable host (staged) */
    XP_CHECK_EQ(xp_dt_pack(v, 1, g->d_src, g->d_dst, 0, packed), XP_OK);
    XP_REQUIRE(cudaMemcpy(got, g->d_dst, packed, cudaMemcpyDeviceToHost) == cudaSuccess);
    XP_CHECK(!memcmp(got, ref, packed));
    memset(got, 0, packed);
    XP_CHECK_EQ(xp_dt_pack(v, 1, g->d_src, got, 0, packed), XP_OK);
    XP_CHECK(!memcmp(got, ref, packed));
    xp_dt_free(&v);
    free(ref);
    free(got);
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 1, g->done);
    XP_CHECK_EQ(run_one(g, &p), XP_OK);
}

/* ---- XTQ to this process ---- */

#define XPT 9
#define KIDX 3
#define QIDX 3
#define XN 1024

static void check_xtq(gpu_t *g)
{
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL,
                         &ni) == PTL_OK);
    ptl_process_t self;
    XP_REQUIRE(PtlGetPhysId(ni, &self) == PTL_OK);
    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, XPT, &pt) == PTL_OK);

    /* The entry the message lands in is pinned and mapped: the GPU reads the
     * rewritten packet's arguments and the payload from it. */
    size_t cmd_len = PTL_XTQ_CMD_SIZE + 3 * sizeof(uint64_t), len = cmd_len + XN * sizeof(double);
    char *landing;
    xp_accel_cuda_pause();
    XP_REQUIRE(cudaHostAlloc((void **)&landing, len, cudaHostAllocMapped) == cudaSuccess);
    xp_accel_cuda_resume();
    ptl_le_t le;
    memset(&le, 0, sizeof(le));
    le.start = landing;
    le.length = len;
    le.ct_handle = PTL_CT_NONE;
    le.uid = PTL_UID_ANY;
    le.options = PTL_LE_OP_PUT | PTL_LE_EVENT_SUCCESS_DISABLE;
    ptl_handle_le_t leh;
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);

    xp_signal_t *xsig;
    XP_REQUIRE(xp_agent_signal_create(g->agent, 1, &xsig) == XP_OK);
    XP_CHECK_EQ(PtlXtqRegisterKernel(ni, KIDX, XP_CUDA_KERNEL_SUM_F64, g->d_dst, xsig), PTL_OK);
    XP_CHECK_EQ(PtlXtqRegisterQueue(ni, QIDX, g->q), PTL_OK);

    for (int i = 0; i < XN; i++)
        g->h[i] = 100.0 + i;
    XP_REQUIRE(cudaMemcpy(g->d_dst, g->h, XN * sizeof(double), cudaMemcpyHostToDevice) == cudaSuccess);

    struct { xp_aql_packet_t pkt; uint64_t args[3]; } cmd;
    cmd.pkt = kernel_packet(0, NULL, XN, NULL);
    cmd.args[0] = cmd.args[1] = 0; /* rewritten: target buffer, payload */
    cmd.args[2] = XN;
    xp_xtq_cmd_set_kernel(&cmd.pkt, KIDX, sizeof(cmd.args));
    xp_xtq_cmd_set_queue(&cmd.pkt, QIDX);
    double *payload = malloc(XN * sizeof(double));
    for (int i = 0; i < XN; i++)
        payload[i] = 0.25 * i;

    ptl_md_t md = {.start = &cmd, .length = cmd_len, .options = 0, .eq_handle = eq, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t mdh, pmdh;
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    md.start = payload;
    md.length = XN * sizeof(double);
    md.options = PTL_MD_EVENT_SEND_DISABLE | PTL_MD_EVENT_SUCCESS_DISABLE;
    XP_REQUIRE(PtlMDBind(ni, &md, &pmdh) == PTL_OK);
    XP_CHECK_EQ(PtlXtqPut(mdh, 0, cmd_len, pmdh, 0, XN * sizeof(double), PTL_ACK_REQ, self, pt, 0, 0, NULL, 0),
                PTL_OK);
    int acked = 0;
    for (int n = 0; n < 4 && !acked; n++) {
        ptl_event_t ev;
        unsigned which;
        if (PtlEQPoll(&eq, 1, 5000, &ev, &which) != PTL_OK)
            break;
        if (ev.type == PTL_EVENT_ACK) {
            XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
            acked = 1;
        }
    }
    XP_CHECK(acked);
    XP_CHECK_EQ(xp_signal_wait(xsig, XP_SIGNAL_EQ, 0, SEC, NULL), XP_OK);
    XP_REQUIRE(cudaMemcpy(g->h, g->d_dst, XN * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
    int bad = 0;
    for (int i = 0; i < XN; i++)
        bad += g->h[i] != 100.0 + i + 0.25 * i;
    XP_CHECK_EQ(bad, 0);

    PtlMDRelease(mdh);
    PtlMDRelease(pmdh);
    PtlXtqDeregisterQueue(ni, QIDX);
    PtlXtqDeregisterKernel(ni, KIDX);
    PtlLEUnlink(leh);
    PtlPTFree(ni, pt);
    PtlEQFree(eq);
    PtlNIFini(ni);
    PtlFini();
    xp_agent_signal_destroy(g->agent, xsig);
    free(payload);
    xp_accel_cuda_pause();
    cudaFreeHost(landing);
    xp_accel_cuda_resume();
}

static void nop_latency(gpu_t *g)
{
    enum { R = 200 };
    uint64_t t[R];
    xp_aql_packet_t p = kernel_packet(XP_CUDA_KERNEL_NOP, NULL, 1, g->done);
    for (int i = 0; i < R; i++) {
        uint64_t t0 = xp_test_now_ns();
        XP_CHECK_EQ(run_one(g, &p), XP_OK);
        t[i] = xp_test_now_ns() - t0;
    }
    uint64_t median = xp_test_median_u64(t, R); /* (sorts t) */
    printf("cuda agent: NOP packet push -> completion signal seen: median %.2f us (min %.2f, p90 %.2f)\n",
           median / 1e3, t[0] / 1e3, t[R * 9 / 10] / 1e3);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        XP_TEST_SKIP("no GPU");
    if (!xp_accel_cuda_available())
        XP_TEST_SKIP("no CUDA agent plugin");
    int native = 0;
    cudaDeviceGetAttribute(&native, cudaDevAttrHostNativeAtomicSupported, 0);
    printf("cuda agent: host native atomics %d\n", native);
    gpu_t g;
    memset(&g, 0, sizeof(g));
    g.h = malloc(2 * N * sizeof(double));
    /* Allocated before the agent's kernel runs (cudaMalloc is not known to
     * wait for kernels, but nothing here depends on it). */
    XP_REQUIRE(cudaMalloc((void **)&g.d_dst, 2 * N * sizeof(double)) == cudaSuccess);
    XP_REQUIRE(cudaMalloc((void **)&g.d_src, 2 * N * sizeof(double)) == cudaSuccess);
    XP_REQUIRE(cudaHostAlloc((void **)&g.args, 4096, cudaHostAllocMapped) == cudaSuccess);

    xp_agent_params_t params = {.kind = XP_AGENT_CUDA, .num_workers = 0, .device = 0};
    XP_REQUIRE(xp_agent_create(&params, &g.agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(g.agent, 64, &g.q) == XP_OK);
    XP_REQUIRE(xp_agent_signal_create(g.agent, 0, &g.done) == XP_OK);
    XP_CHECK_EQ(xp_mem_type(g.d_dst), XP_MEM_CUDA);
    XP_CHECK_EQ(xp_mem_type(g.h), XP_MEM_HOST);

    fprintf(stderr, "sum\n");
    check_sum(&g);
    fprintf(stderr, "copy\n");
    check_copy(&g);
    fprintf(stderr, "burst\n");
    check_burst(&g);
    fprintf(stderr, "pause in a burst\n");
    check_pause_in_burst(&g);
    fprintf(stderr, "barrier\n");
    check_barrier(&g);
    fprintf(stderr, "alloc while running\n");
    check_alloc_while_running(&g);
    fprintf(stderr, "datatype\n");
    check_dt(&g);
    fprintf(stderr, "xtq\n");
    check_xtq(&g);
    nop_latency(&g);

    xp_agent_signal_destroy(g.agent, g.done);
    xp_agent_destroy(g.agent); /* the kernels are gone after this: plain frees */
    cudaFree(g.d_dst);
    cudaFree(g.d_src);
    cudaFreeHost(g.args);
    free(g.h);
    return xp_test_result();
}
