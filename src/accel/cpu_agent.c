/* The CPU agent: each queue it owns gets a pool of worker threads. Workers
 * take turns as the queue's packet processor (under the queue's lock): they
 * launch packets in order, honour the barrier bit and barrier-AND/OR
 * packets, and spread a kernel dispatch's work-groups over all workers. Idle
 * workers spin briefly, then sleep on the queue's doorbell signal. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "accel/accel_internal.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/log.h"

/* Sleep slice while a barrier packet waits on foreign signals (their
 * updates wake their own waiters, not ours). */
#define DEP_SLICE_NS 200000ull

typedef struct cpu_job {
    xp_aql_kernel_dispatch_t pkt;
    uint32_t ngroups[3];
    uint64_t total;         /* work-groups */
    uint64_t next;          /* next group to hand out (under the queue lock) */
    uint64_t remaining;     /* groups not finished (atomic) */
} cpu_job_t;

typedef struct cpu_queue {
    xp_queue_t *queue;
    pthread_mutex_t lock;
    cpu_job_t *cur;         /* kernel whose groups are being handed out */
    int in_flight;          /* launched, not completed (atomic) */
    int stop;
    int nthreads;
    pthread_t *threads;
} cpu_queue_t;

typedef struct cpu_agent {
    int num_workers;
} cpu_agent_t;

typedef enum { ACT_GROUP, ACT_AGENT, ACT_IDLE, ACT_BLOCKED, ACT_STOP } action_t;

typedef struct work {
    cpu_job_t *job;
    uint64_t group;
    xp_aql_agent_dispatch_t agent_pkt;
} work_t;

static void complete(cpu_queue_t *s, uint64_t signal)
{
    if (signal)
        xp_signal_add((xp_signal_t *)(uintptr_t)signal, -1);
    /* A barrier-bit packet may be waiting for the last completion. */
    if (__atomic_sub_fetch(&s->in_flight, 1, __ATOMIC_ACQ_REL) == 0)
        xp_signal_kick(&s->queue->shm->doorbell);
}

static uint32_t div_up(uint32_t a, uint32_t b)
{
    return a / b + (a % b != 0);
}

static cpu_job_t *new_job(const xp_aql_kernel_dispatch_t *pkt)
{
    if (!pkt->kernel_object || !pkt->workgroup_size_x) {
        xp_error("kernel dispatch with no kernel object or a zero work-group size");
        return NULL;
    }
    cpu_job_t *job = malloc(sizeof(*job));
    if (!job) {
        xp_error("out of memory for a kernel dispatch");
        return NULL;
    }
    job->pkt = *pkt;
    unsigned dims = pkt->setup & 3u;
    uint32_t grid[3] = {pkt->grid_size_x, dims >= 2 ? pkt->grid_size_y : 1, dims >= 3 ? pkt->grid_size_z : 1};
    uint16_t wg[3] = {pkt->workgroup_size_x, dims >= 2 ? pkt->workgroup_size_y : 1,
                      dims >= 3 ? pkt->workgroup_size_z : 1};
    job->pkt.grid_size_y = grid[1];
    job->pkt.grid_size_z = grid[2];
    job->pkt.workgroup_size_y = wg[1] ? wg[1] : 1;
    job->pkt.workgroup_size_z = wg[2] ? wg[2] : 1;
    job->ngroups[0] = div_up(grid[0], wg[0]);
    job->ngroups[1] = div_up(grid[1], job->pkt.workgroup_size_y);
    job->ngroups[2] = div_up(grid[2], job->pkt.workgroup_size_z);
    job->total = (uint64_t)job->ngroups[0] * job->ngroups[1] * job->ngroups[2];
    job->next = 0;
    job->remaining = job->total;
    return job;
}

static int deps_satisfied(const xp_aql_barrier_t *b)
{
    int any_used = 0;
    int is_or = xp_aql_header_type(b->header) == XP_AQL_TYPE_BARRIER_OR;
    for (int i = 0; i < 5; i++) {
        if (!b->dep_signal[i])
            continue;
        any_used = 1;
        int done = xp_signal_load((xp_signal_t *)(uintptr_t)b->dep_signal[i]) == 0;
        if (is_or && done)
            return 1;
        if (!is_or && !done)
            return 0;
    }
    return is_or ? !any_used : 1;
}

/* Launch the packet at the read index if it may start. Under s->lock. */
static action_t launch(cpu_queue_t *s, work_t *w, int *relaunch)
{
    xp_aql_packet_t *pkt = xp_queue_peek(s->queue);
    *relaunch = 0;
    if (!pkt)
        return s->stop ? ACT_STOP : ACT_IDLE;
    if ((pkt->header & XP_AQL_HEADER_BARRIER) && __atomic_load_n(&s->in_flight, __ATOMIC_ACQUIRE))
        return ACT_IDLE;
    xp_aql_packet_t copy = *pkt;
    switch (xp_aql_header_type(copy.header)) {
    case XP_AQL_TYPE_KERNEL_DISPATCH: {
        cpu_job_t *job = new_job(&copy.kernel);
        xp_queue_release(s->queue);
        __atomic_add_fetch(&s->in_flight, 1, __ATOMIC_ACQ_REL);
        if (!job || job->total == 0) {
            free(job);
            complete(s, copy.kernel.completion_signal);
        } else {
            s->cur = job;
            if (job->total > 1 && s->nthreads > 1)
                xp_signal_kick(&s->queue->shm->doorbell); /* call the other workers */
        }
        *relaunch = 1;
        return ACT_IDLE;
    }
    case XP_AQL_TYPE_AGENT_DISPATCH:
        xp_queue_release(s->queue);
        __atomic_add_fetch(&s->in_flight, 1, __ATOMIC_ACQ_REL);
        w->agent_pkt = copy.agent;
        return ACT_AGENT;
    case XP_AQL_TYPE_BARRIER_AND:
    case XP_AQL_TYPE_BARRIER_OR:
        if (!deps_satisfied(&copy.barrier))
            return s->stop ? ACT_STOP : ACT_BLOCKED;
        xp_queue_release(s->queue);
        if (copy.barrier.completion_signal)
            xp_signal_add((xp_signal_t *)(uintptr_t)copy.barrier.completion_signal, -1);
        *relaunch = 1;
        return ACT_IDLE;
    default: /* vendor-specific packets: nothing the CPU agent knows how to run */
        xp_error("CPU agent: packet type %u not supported, skipped", xp_aql_header_type(copy.header));
        xp_queue_release(s->queue);
        *relaunch = 1;
        return ACT_IDLE;
    }
}

static action_t next_action(cpu_queue_t *s, work_t *w)
{
    for (;;) {
        cpu_job_t *job = s->cur;
        if (job) {
            w->job = job;
            w->group = job->next++;
            if (job->next == job->total)
                s->cur = NULL;
            return ACT_GROUP;
        }
        int relaunch;
        action_t a = launch(s, w, &relaunch);
        if (!relaunch)
            return a;
    }
}

static void run_group(cpu_queue_t *s, cpu_job_t *job, uint64_t g)
{
    const xp_aql_kernel_dispatch_t *p = &job->pkt;
    uint32_t gid[3] = {(uint32_t)(g % job->ngroups[0]), (uint32_t)((g / job->ngroups[0]) % job->ngroups[1]),
                       (uint32_t)(g / ((uint64_t)job->ngroups[0] * job->ngroups[1]))};
    uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
    uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
    xp_kernel_ctx_t ctx = {.kernarg = (void *)(uintptr_t)p->kernarg_address, .packet = p};
    for (int d = 0; d < 3; d++) {
        ctx.group_id[d] = gid[d];
        ctx.base[d] = gid[d] * wg[d];
        ctx.grid_size[d] = grid[d];
        ctx.group_size[d] = grid[d] - ctx.base[d] < wg[d] ? grid[d] - ctx.base[d] : wg[d];
    }
    ((xp_cpu_kernel_fn_t)(uintptr_t)p->kernel_object)(&ctx);
    if (__atomic_sub_fetch(&job->remaining, 1, __ATOMIC_ACQ_REL) == 0) {
        uint64_t sig = p->completion_signal;
        free(job);
        complete(s, sig);
    }
}

static void run_agent(cpu_queue_t *s, const xp_aql_agent_dispatch_t *p)
{
    if (p->function)
        ((xp_agent_fn_t)(uintptr_t)p->function)(p->type, p->arg, (void *)(uintptr_t)p->return_address);
    else
        xp_error("CPU agent: agent dispatch with no function, skipped");
    complete(s, p->completion_signal);
}

/* Spin, then sleep until the doorbell's sequence moves past `seen` or its
 * value past `seen_value`. The value matters: a producer's update stores the
 * value, then looks for sleepers, then bumps seq (signal.c), so a worker that
 * registers in between sees the new value, not yet the new seq. */
static void idle_wait(xp_signal_t *db, uint32_t seen, int64_t seen_value, uint64_t slice_ns)
{
    long spins = xp_config()->spin_count;
    for (long i = 0; i < spins; i++) {
        if (__atomic_load_n(&db->seq, __ATOMIC_ACQUIRE) != seen)
            return;
        xp_cpu_relax();
    }
    __atomic_fetch_add(&db->waiters, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&db->value, __ATOMIC_SEQ_CST) == seen_value &&
        __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST) == seen)
        xp_futex_wait(&db->seq, seen, slice_ns);
    __atomic_fetch_sub(&db->waiters, 1, __ATOMIC_SEQ_CST);
}

static void *worker_main(void *arg)
{
    cpu_queue_t *s = arg;
    xp_signal_t *db = &s->queue->shm->doorbell;
    for (;;) {
        uint32_t seen = __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST);
        int64_t seen_value = __atomic_load_n(&db->value, __ATOMIC_SEQ_CST);
        work_t w;
        pthread_mutex_lock(&s->lock);
        action_t a = next_action(s, &w);
        pthread_mutex_unlock(&s->lock);
        switch (a) {
        case ACT_GROUP:   run_group(s, w.job, w.group); break;
        case ACT_AGENT:   run_agent(s, &w.agent_pkt); break;
        case ACT_IDLE:    idle_wait(db, seen, seen_value, UINT64_MAX); break;
        case ACT_BLOCKED: idle_wait(db, seen, seen_value, DEP_SLICE_NS); break;
        case ACT_STOP:    return NULL;
        }
    }
}

static xp_status_t cpu_start(xp_agent_t *agent, const xp_agent_params_t *params)
{
    cpu_agent_t *a = calloc(1, sizeof(*a));
    if (!a)
        return XP_ERR_NO_MEMORY;
    a->num_workers = params->num_workers > 0 ? params->num_workers : 1;
    agent->impl = a;
    return XP_OK;
}

static void cpu_stop(xp_agent_t *agent)
{
    free(agent->impl);
}

static xp_status_t cpu_queue_alloc(xp_agent_t *agent, size_t bytes, void **mem_out)
{
    /* Shared anonymous memory: producers in forked children reach it too. */
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        xp_log_errno(XP_LOG_ERROR, "mmap of a %zu-byte queue", bytes);
        return XP_ERR_NO_MEMORY;
    }
    *mem_out = mem;
    return XP_OK;
}

static void cpu_queue_free(xp_agent_t *agent, void *mem, size_t bytes)
{
    munmap(mem, bytes);
}

static void stop_workers(cpu_queue_t *s, int n)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_mutex_unlock(&s->lock);
    xp_signal_kick(&s->queue->shm->doorbell);
    for (int i = 0; i < n; i++)
        pthread_join(s->threads[i], NULL);
}

static xp_status_t cpu_queue_added(xp_agent_t *agent, xp_queue_t *queue)
{
    cpu_agent_t *a = agent->impl;
    cpu_queue_t *s = calloc(1, sizeof(*s));
    if (!s)
        return XP_ERR_NO_MEMORY;
    s->threads = calloc((size_t)a->num_workers, sizeof(pthread_t));
    if (!s->threads) {
        free(s);
        return XP_ERR_NO_MEMORY;
    }
    s->queue = queue;
    s->nthreads = a->num_workers;
    pthread_mutex_init(&s->lock, NULL);
    for (int i = 0; i < a->num_workers; i++) {
        int rc = pthread_create(&s->threads[i], NULL, worker_main, s);
        if (rc) {
            errno = rc;
            xp_log_errno(XP_LOG_ERROR, "CPU agent: pthread_create");
            stop_workers(s, i);
            pthread_mutex_destroy(&s->lock);
            free(s->threads);
            free(s);
            return XP_ERR_NO_RESOURCE;
        }
    }
    queue->agent_data = s;
    return XP_OK;
}

static void cpu_queue_removed(xp_agent_t *agent, xp_queue_t *queue)
{
    cpu_queue_t *s = queue->agent_data;
    stop_workers(s, s->nthreads);
    pthread_mutex_destroy(&s->lock);
    free(s->threads);
    free(s);
    queue->agent_data = NULL;
}

static xp_status_t cpu_signal_alloc(xp_agent_t *agent, xp_signal_t **signal_out)
{
    xp_signal_t *sig;
    if (posix_memalign((void **)&sig, 64, sizeof(*sig)))
        return XP_ERR_NO_MEMORY;
    *signal_out = sig;
    return XP_OK;
}

static void cpu_signal_free(xp_agent_t *agent, xp_signal_t *signal)
{
    free(signal);
}

const xp_agent_ops_t xp_agent_cpu_ops = {
    .size = sizeof(xp_agent_ops_t),
    .name = "cpu",
    .start = cpu_start,
    .stop = cpu_stop,
    .queue_alloc = cpu_queue_alloc,
    .queue_free = cpu_queue_free,
    .queue_added = cpu_queue_added,
    .queue_removed = cpu_queue_removed,
    .signal_alloc = cpu_signal_alloc,
    .signal_free = cpu_signal_free,
};
