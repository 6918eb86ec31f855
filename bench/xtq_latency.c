/*
 * xtq_latency - remote task launch to completion signal, in the XTQ paper's
 * three configurations (§V-A, Fig. 7), in one run:
 *
 *   cpu  two-sided: PtlPut of the payload; the target's application thread
 *        takes the PUT event and computes the task itself.
 *   hsa  two-sided: PtlPut of the payload; the target's application thread
 *        takes the PUT event, builds an AQL kernel-dispatch packet and pushes
 *        it into the CPU agent's queue; the agent runs the task.
 *   xtq  one-sided: PtlXtqPut of command packet + payload; the target's
 *        engine rewrites and enqueues the packet; the target's application
 *        thread does nothing (it sleeps until the run ends).
 *
 * The task sums the payload (doubles). The completion signal lives in a
 * shared-memory page both ranks map (same machine), so the initiator sees the
 * decrement directly: latency = call issued -> signal observed by rank 0.
 * Timestamps are CLOCK_MONOTONIC, common to both processes.
 *
 * Each (mode, size) is measured twice: pass 1 gives the latency and the CPU
 * cost (target application thread CPU time per task: CLOCK_THREAD_CPUTIME_ID;
 * target process CPU time per task: every thread, progress thread and agent
 * worker included); pass 2 runs a spinning observer thread at the target
 * that timestamps when the payload lands in memory and when the queue's
 * write index moves, for the phase split (issue, transfer, enqueue, launch =
 * enqueue -> task start, run, complete = task end -> signal seen at rank 0).
 *
 *   xprun -n 2 xtq_latency [-n iters] [-s]        (-s: size sweep 8 B..64 KiB)
 *
 * Output: one line per (mode, size), key=value, medians in microseconds.
 */
#include <fcntl.h>
#include <portals4.h>
#include <portals4_xtq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "xportals/xp.h"

#define PT 11
#define MAX_ITERS 2000
#define MAX_SIZE (64 * 1024)
#define KARGS 4
#define CMD_LEN (PTL_XTQ_CMD_SIZE + KARGS * 8)
#define SIG_START (1ll << 40)

enum { MODE_CPU, MODE_HSA, MODE_XTQ, NMODES };
static const char *mode_name[NMODES] = {"cpu", "hsa", "xtq"};

/* The page both ranks map. */
typedef struct shared {
    xp_signal_t sig;                 /* completion signal: decremented once per task */
    double result;
    uint64_t land[MAX_ITERS], enq[MAX_ITERS], start[MAX_ITERS], end[MAX_ITERS];
    double tcpu_us, pcpu_us;         /* target CPU per task (pass 1) */
} shared_t;

typedef struct bench {
    int rank, iters, sweep;
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    shared_t *sh;
    /* target */
    xp_agent_t *agent;
    xp_queue_t *q;
    char *recv;                      /* receive buffer (cpu/hsa: payload; xtq: cmd + payload) */
    /* observer (pass 2) */
    pthread_t obs;
    volatile int obs_stop;
    volatile uint64_t *stamp;        /* where the payload's last word lands */
} bench_t;

static void die(const char *what, int rc)
{
    fprintf(stderr, "xtq_latency: %s failed (%d)\n", what, rc);
    exit(1);
}
#define CHECK(call) do { int rc_ = (call); if (rc_ != PTL_OK) die(#call, rc_); } while (0)

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_us(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, int n)
{
    if (n <= 0)
        return -1;
    qsort(v, (size_t)n, sizeof(*v), cmp_u64);
    return (double)v[n / 2] / 1e3;
}

/* ---------------------------------------------------------------- the task */

/* kernarg: {shared_t *sh, const double *payload, uint64_t n, uint64_t seq} */
static void sum_task(shared_t *sh, const double *p, uint64_t n, uint64_t seq)
{
    sh->start[seq] = now_ns();
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += p[i];
    sh->result = s;
    sh->end[seq] = now_ns();
}

static void sum_kernel(const xp_kernel_ctx_t *ctx)
{
    const uint64_t *a = ctx->kernarg;
    sum_task((shared_t *)a[0], (const double *)a[1], a[2], a[3]);
}

/* ---------------------------------------------------------------- target */

static void *observer(void *arg)
{
    bench_t *b = arg;
    uint64_t wi = b->q ? xp_queue_load_write_index(b->q) : 0;
    uint64_t last = 0;
    while (!b->obs_stop) {
        uint64_t s = *b->stamp;
        if (s != last && s >= 1 && s <= MAX_ITERS) {
            b->sh->land[s - 1] = now_ns();
            last = s;
        }
        if (b->q && xp_queue_load_write_index(b->q) != wi) {
            wi = xp_queue_load_write_index(b->q);
            if (last)
                b->sh->enq[last - 1] = now_ns();
        }
    }
    return NULL;
}

/* The target's application thread in cpu / hsa mode: one PUT event per task. */
static void serve(bench_t *b, int mode, size_t size, int n)
{
    static uint64_t kargs[64][KARGS];
    uint64_t nd = size / 8;
    for (int i = 0; i < n;) {
        ptl_event_t ev;
        CHECK(PtlEQWait(b->eq, &ev));
        if (ev.type != PTL_EVENT_PUT)
            continue;
        const double *p = (const double *)ev.start;
        uint64_t seq = ((const uint64_t *)p)[nd - 1] - 1;
        if (mode == MODE_CPU) {
            sum_task(b->sh, p, nd, seq);
            xp_signal_add(&b->sh->sig, -1);
        } else {
            uint64_t *k = kargs[i % 64];
            xp_aql_packet_t pkt;
            k[0] = (uint64_t)(uintptr_t)b->sh;
            k[1] = (uint64_t)(uintptr_t)p;
            k[2] = nd;
            k[3] = seq;
            memset(&pkt, 0, sizeof pkt);
            pkt.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
            pkt.kernel.setup = 1;
            pkt.kernel.workgroup_size_x = pkt.kernel.workgroup_size_y = pkt.kernel.workgroup_size_z = 1;
            pkt.kernel.grid_size_x = pkt.kernel.grid_size_y = pkt.kernel.grid_size_z = 1;
            pkt.kernel.kernel_object = (uint64_t)(uintptr_t)sum_kernel;
            pkt.kernel.kernarg_address = (uint64_t)(uintptr_t)k;
            pkt.kernel.completion_signal = (uint64_t)(uintptr_t)&b->sh->sig;
            if (xp_queue_push(b->q, &pkt, UINT64_MAX, NULL) != XP_OK)
                die("xp_queue_push", -1);
        }
        i++;
    }
}

static void target_run(bench_t *b, int mode, size_t size, int pass)
{
    size_t off = mode == MODE_XTQ ? CMD_LEN : 0;
    b->stamp = (volatile uint64_t *)(b->recv + off + size - 8);
    *b->stamp = 0;
    b->obs_stop = 0;
    if (pass == 2 && pthread_create(&b->obs, NULL, observer, b) != 0)
        die("pthread_create", -1);
    xp_barrier();
    double t0 = cpu_us(CLOCK_THREAD_CPUTIME_ID), p0 = cpu_us(CLOCK_PROCESS_CPUTIME_ID);
    /* xtq: the application thread does nothing; it blocks in the barrier
     * below (a read from the launcher) until rank 0 has seen every task end. */
    if (mode != MODE_XTQ) {
        serve(b, mode, size, b->iters);
        /* hsa: the agent may still be running the last task */
        xp_signal_wait(&b->sh->sig, XP_SIGNAL_EQ, SIG_START - b->iters, UINT64_MAX, NULL);
    }
    xp_barrier();
    if (pass == 1) {
        b->sh->tcpu_us = (cpu_us(CLOCK_THREAD_CPUTIME_ID) - t0) / b->iters;
        b->sh->pcpu_us = (cpu_us(CLOCK_PROCESS_CPUTIME_ID) - p0) / b->iters;
    }
    if (pass == 2) {
        b->obs_stop = 1;
        pthread_join(b->obs, NULL);
    }
    xp_barrier();
}

/* ---------------------------------------------------------------- initiator */

typedef struct times {
    uint64_t issue0[MAX_ITERS], issue1[MAX_ITERS], done[MAX_ITERS];
} times_t;

static void initiator_run(bench_t *b, int mode, size_t size, ptl_handle_md_t md, double *payload,
                          times_t *t)
{
    struct {
        xp_aql_packet_t pkt;
        uint64_t kargs[KARGS];
    } cmd;
    ptl_process_t target = {.rank = 1};
    uint64_t nd = size / 8;
    memset(&cmd, 0, sizeof cmd);
    cmd.pkt.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
    cmd.pkt.kernel.setup = 1;
    cmd.pkt.kernel.workgroup_size_x = cmd.pkt.kernel.workgroup_size_y = cmd.pkt.kernel.workgroup_size_z = 1;
    cmd.pkt.kernel.grid_size_x = cmd.pkt.kernel.grid_size_y = cmd.pkt.kernel.grid_size_z = 1;
    xp_xtq_cmd_set_kernel(&cmd.pkt, 1, KARGS * 8);
    xp_xtq_cmd_set_queue(&cmd.pkt, 1);
    cmd.kargs[2] = nd;
    xp_barrier();
    for (int i = 0; i < b->iters; i++) {
        ((uint64_t *)payload)[nd - 1] = (uint64_t)i + 1; /* the landing stamp */
        cmd.kargs[3] = (uint64_t)i;
        t->issue0[i] = now_ns();
        if (mode == MODE_XTQ) {
            int rc;
            while ((rc = PtlXtqPut(md, (ptl_size_t)(uintptr_t)&cmd, CMD_LEN, md,
                                   (ptl_size_t)(uintptr_t)payload, size, PTL_CT_ACK_REQ, target,
                                   b->pt, 1, 0, NULL, 0)) != PTL_OK)
                die("PtlXtqPut", rc);
        } else {
            CHECK(PtlPut(md, (ptl_size_t)(uintptr_t)payload, size, PTL_NO_ACK_REQ, target, b->pt,
                         2, 0, NULL, 0));
        }
        t->issue1[i] = now_ns();
        while (xp_signal_load(&b->sh->sig) != SIG_START - i - 1)
            ;
        t->done[i] = now_ns();
    }
    xp_barrier(); /* pairs with the target's end-of-loop barrier */
    xp_barrier();
}

static void report(bench_t *b, int mode, size_t size, times_t *t1, times_t *t2)
{
    static uint64_t v[6][MAX_ITERS];
    int n = b->iters, k = 0;
    for (int i = 0; i < n; i++)
        v[0][i] = t1->done[i] - t1->issue0[i];
    double lat = median_us(v[0], n);
    shared_t *sh = b->sh;
    for (int i = 0; i < n; i++) {
        uint64_t land = sh->land[i], enq = mode == MODE_CPU ? land : sh->enq[i];
        if (!land || !enq || land < t2->issue1[i] || enq < land || sh->start[i] < enq)
            continue; /* the observer missed this one */
        v[0][k] = t2->issue1[i] - t2->issue0[i];
        v[1][k] = land - t2->issue1[i];
        v[2][k] = enq - land;
        v[3][k] = sh->start[i] - enq;
        v[4][k] = sh->end[i] - sh->start[i];
        v[5][k] = t2->done[i] - sh->end[i];
        k++;
    }
    printf("bench=xtq_latency mode=%s size=%zu iters=%d median_us=%.2f issue_us=%.2f "
           "transfer_us=%.2f enqueue_us=%.2f launch_us=%.2f run_us=%.2f complete_us=%.2f "
           "phase_samples=%d target_cpu_us=%.2f target_proc_cpu_us=%.2f\n",
           mode_name[mode], size, n, lat, median_us(v[0], k), median_us(v[1], k),
           median_us(v[2], k), median_us(v[3], k), median_us(v[4], k), median_us(v[5], k), k,
           sh->tcpu_us, sh->pcpu_us);
    fflush(stdout);
}

static shared_t *map_shared(int rank)
{
    char name[64];
    snprintf(name, sizeof name, "/xp_xtq_latency_%d", (int)getppid());
    int fd = -1;
    if (rank == 0)
        fd = shm_open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    xp_barrier();
    if (rank != 0)
        fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0 || (rank == 0 && ftruncate(fd, sizeof(shared_t)) != 0))
        die("shm_open", -1);
    xp_barrier();
    shared_t *sh = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (sh == MAP_FAILED)
        die("mmap", -1);
    xp_barrier();
    if (rank == 0)
        shm_unlink(name);
    return sh;
}

int main(int argc, char **argv)
{
    bench_t b = {.iters = 500};
    ptl_process_t me;
    int opt;
    while ((opt = getopt(argc, argv, "n:s")) != -1) {
        if (opt == 'n')
            b.iters = atoi(optarg);
        else if (opt == 's')
            b.sweep = 1;
        else {
            fprintf(stderr, "usage: xprun -n 2 xtq_latency [-n iters] [-s]\n");
            return 2;
        }
    }
    if (b.iters < 1 || b.iters > MAX_ITERS)
        b.iters = 500;
    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
                    &b.ni));
    CHECK(PtlGetId(b.ni, &me));
    b.rank = (int)me.rank;
    if (xp_size() != 2) {
        fprintf(stderr, "xtq_latency: run with xprun -n 2\n");
        return 2;
    }
    CHECK(PtlEQAlloc(b.ni, 4096, &b.eq));
    CHECK(PtlPTAlloc(b.ni, 0, b.eq, PT, &b.pt));
    b.sh = map_shared(b.rank);

    size_t sizes[16];
    int nsizes = 0;
    if (b.sweep)
        for (size_t s = 8; s <= MAX_SIZE; s *= 4)
            sizes[nsizes++] = s;
    else {
        sizes[nsizes++] = 64;
        sizes[nsizes++] = 4096;
    }

    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    double *payload = NULL;
    static times_t t1, t2;
    if (b.rank == 0) {
        CHECK(PtlCTAlloc(b.ni, &ct));
        ptl_md_t mdd = {.start = NULL, .length = PTL_SIZE_MAX, .eq_handle = PTL_EQ_NONE,
                        .ct_handle = ct, .options = PTL_MD_EVENT_CT_ACK};
        CHECK(PtlMDBind(b.ni, &mdd, &md));
        payload = aligned_alloc(64, MAX_SIZE);
        for (int i = 0; i < MAX_SIZE / 8; i++)
            payload[i] = 1.0;
    } else {
        ptl_handle_me_t h;
        xp_agent_params_t params = {.kind = XP_AGENT_CPU, .num_workers = 1};
        if (xp_agent_create(&params, &b.agent) != XP_OK ||
            xp_agent_queue_create(b.agent, 256, &b.q) != XP_OK)
            die("agent setup", -1);
        b.recv = aligned_alloc(64, MAX_SIZE + CMD_LEN + 64);
        memset(b.recv, 0, MAX_SIZE + CMD_LEN + 64);
        unsigned base = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_UNLINK_DISABLE;
        ptl_me_t xme = {.start = b.recv, .length = MAX_SIZE + CMD_LEN, .ct_handle = PTL_CT_NONE,
                        .uid = PTL_UID_ANY, .options = base | PTL_ME_EVENT_SUCCESS_DISABLE,
                        .match_id = {.rank = PTL_RANK_ANY}, .match_bits = 1};
        ptl_me_t pme = xme;
        pme.options = base;
        pme.match_bits = 2;
        CHECK(PtlMEAppend(b.ni, PT, &xme, PTL_PRIORITY_LIST, NULL, &h));
        CHECK(PtlMEAppend(b.ni, PT, &pme, PTL_PRIORITY_LIST, NULL, &h));
        CHECK(PtlXtqRegisterKernel(b.ni, 1, (uint64_t)(uintptr_t)sum_kernel, b.sh, &b.sh->sig));
        CHECK(PtlXtqRegisterQueue(b.ni, 1, b.q));
    }
    for (int s = 0; s < nsizes; s++) {
        for (int mode = 0; mode < NMODES; mode++) {
            for (int pass = 1; pass <= 2; pass++) {
                if (b.rank == 0) {
                    xp_signal_init(&b.sh->sig, SIG_START, 0);
                    memset(b.sh->land, 0, sizeof b.sh->land);
                    memset(b.sh->enq, 0, sizeof b.sh->enq);
                }
                xp_barrier();
                if (b.rank == 0)
                    initiator_run(&b, mode, sizes[s], md, payload, pass == 1 ? &t1 : &t2);
                else
                    target_run(&b, mode, sizes[s], pass);
            }
            xp_barrier();
            if (b.rank == 0)
                report(&b, mode, sizes[s], &t1, &t2);
        }
    }
    xp_barrier();
    if (b.agent)
        xp_agent_destroy(b.agent);
    PtlNIFini(b.ni);
    PtlFini();
    return 0;
}
