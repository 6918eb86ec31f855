/*
 * xtq_remote_task - the XTQ paper's Figure 6 program: rank 0 launches a task
 * on rank 1's accelerator with one PtlXtqPut; rank 1 only registers its
 * kernel, signal and queue at the agreed index 42, then waits on the signal.
 * No thread of rank 1's application receives the message or builds the task
 * packet: the Portals engine writes the payload, rewrites the command packet
 * and enqueues it into the agent's queue.
 *
 *     xprun -n 2 xtq_remote_task
 *
 * Here the "accelerator" is the CPU agent (xp_agent_create with XP_AGENT_CPU);
 * with a CUDA agent the kernel object would be a device kernel instead.
 */
#include <portals4.h>
#include <portals4_xtq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xportals/xp.h"

#define INDEX 42          /* the coordinated index of the paper */
#define PT 4
#define N 1024            /* doubles in the payload */
#define CMD_SIZE (PTL_XTQ_CMD_SIZE + 2 * sizeof(uint64_t))

static void die(const char *what, int rc)
{
    fprintf(stderr, "xtq_remote_task: %s failed (%d)\n", what, rc);
    exit(1);
}
#define CHECK(call) do { int rc_ = (call); if (rc_ != PTL_OK) die(#call, rc_); } while (0)

/* The task: kernarg = {double *result (registered target buffer), double *payload}.
 * A CPU "kernel" is called once per work-group; one work-group here. */
static void sum_kernel(const xp_kernel_ctx_t *ctx)
{
    double **args = ctx->kernarg;
    double s = 0;
    for (int i = 0; i < N; i++)
        s += args[1][i];
    *args[0] = s;
}

int main(void)
{
    /* (1) Initialise the RDMA layer (Portals) and the NIC (an NI). */
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_process_t me;
    ptl_pt_index_t pt;
    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
                    &ni));
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlEQAlloc(ni, 64, &eq));
    CHECK(PtlPTAlloc(ni, 0, eq, PT, &pt));
    if (xp_size() != 2) {
        fprintf(stderr, "run with: xprun -n 2 xtq_remote_task\n");
        return 1;
    }

    if (me.rank == 0) {
        /* (2) Build the payload and the command packet naming index 42. */
        double *payload = malloc(N * sizeof(double));
        struct {
            xp_aql_packet_t pkt;
            uint64_t kernarg[2]; /* filled in by the target's rewrite */
        } cmd;
        for (int i = 0; i < N; i++)
            payload[i] = i;
        memset(&cmd, 0, sizeof cmd);
        cmd.pkt.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
        cmd.pkt.kernel.setup = 1;
        cmd.pkt.kernel.workgroup_size_x = cmd.pkt.kernel.grid_size_x = 1;
        cmd.pkt.kernel.workgroup_size_y = cmd.pkt.kernel.grid_size_y = 1;
        cmd.pkt.kernel.workgroup_size_z = cmd.pkt.kernel.grid_size_z = 1;
        xp_xtq_cmd_set_kernel(&cmd.pkt, INDEX, sizeof cmd.kernarg);
        xp_xtq_cmd_set_queue(&cmd.pkt, INDEX);
        ptl_md_t mdd = {.start = NULL, .length = PTL_SIZE_MAX, .eq_handle = eq,
                        .ct_handle = PTL_CT_NONE, .options = PTL_MD_EVENT_SEND_DISABLE};
        ptl_handle_md_t md;
        CHECK(PtlMDBind(ni, &mdd, &md));
        xp_barrier(); /* the target's tables are ready */
        /* (3) Launch on the remote agent: command packet and payload are gathered. */
        ptl_process_t target = {.rank = 1};
        CHECK(PtlXtqPut(md, (ptl_size_t)(uintptr_t)&cmd, CMD_SIZE, md,
                        (ptl_size_t)(uintptr_t)payload, N * sizeof(double), PTL_ACK_REQ, target,
                        PT, 0, 0, NULL, 0));
        ptl_event_t ev;
        CHECK(PtlEQWait(eq, &ev));
        if (ev.type != PTL_EVENT_ACK || ev.ni_fail_type != PTL_NI_OK)
            die("the remote enqueue", (int)ev.ni_fail_type); /* e.g. PTL_NI_XTQ_QUEUE_FULL: retry */
        printf("rank 0: task accepted by rank 1\n");
        xp_barrier();
        CHECK(PtlMDRelease(md));
        free(payload);
    } else {
        /* (4) Post the receive buffer. */
        static char recv_buf[CMD_SIZE + N * sizeof(double)];
        ptl_me_t mee = {.start = recv_buf, .length = sizeof recv_buf, .ct_handle = PTL_CT_NONE,
                        .uid = PTL_UID_ANY,
                        .options = PTL_ME_OP_PUT | PTL_ME_EVENT_SUCCESS_DISABLE,
                        .match_id = {.rank = PTL_RANK_ANY}};
        ptl_handle_me_t meh;
        CHECK(PtlMEAppend(ni, PT, &mee, PTL_PRIORITY_LIST, NULL, &meh));
        /* (5) Initialise the tasking runtime: agent, queue, completion signal. */
        xp_agent_t *agent;
        xp_queue_t *queue;
        xp_signal_t signal;
        double result = 0;
        xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 1};
        if (xp_agent_create(&params, &agent) != XP_OK ||
            xp_agent_queue_create(agent, 64, &queue) != XP_OK)
            die("agent setup", -1);
        xp_signal_init(&signal, 1, 0);
        /* (6) Register kernel (+ target buffer, signal) and queue at index 42. */
        CHECK(PtlXtqRegisterKernel(ni, INDEX, (uint64_t)(uintptr_t)sum_kernel, &result, &signal));
        CHECK(PtlXtqRegisterQueue(ni, INDEX, queue));
        xp_barrier();
        /* (7) Wait for the task to complete. */
        xp_signal_wait(&signal, XP_SIGNAL_EQ, 0, UINT64_MAX, NULL);
        printf("rank 1: task done, sum = %.0f (expected %.0f)\n", result, (double)N * (N - 1) / 2);
        xp_barrier();
        PtlMEUnlink(meh);
        xp_agent_destroy(agent);
    }
    PtlPTFree(ni, pt);
    PtlEQFree(eq);
    PtlNIFini(ni);
    PtlFini();
    return 0;
}
