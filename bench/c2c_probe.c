/*
 * bench/c2c_probe.c - core-to-core cache-line ping-pong: how long one cache
 * line takes to move from one core to another, one way.
 *
 *   c2c_probe [--cpus 0,1] [--iters 2000] [--samples 15] [--near-ns 130]
 *             [--busy-ns 1000] [--near-ring-ns 200]
 *
 * Two threads pinned to the two CPUs hand a counter back and forth in one
 * cache line; a sample is the mean of --iters round trips, halved. The
 * median sample, with the ring floor below, labels the machine's current
 * state, which bench/compare.sh records with every trial: on the 2-vCPU VM
 * this was written on, the vCPUs flip between ~54 ns ("near", e.g. sharing
 * a cache) and ~256 ns ("far").
 *   busy: median >= --busy-ns (the probe itself was descheduled)
 *   near: median < --near-ns and ring_ns < --near-ring-ns (without a ring
 *         figure, the median alone)
 *   far:  otherwise
 * Both figures, because neither alone tells the states apart on every VM
 * seen: on the AMD (Zen 4) VM of rounds 25-26 the far state's one-way time
 * (112-157 ns) straddles 130 ns, while its ring floor (240-265 ns) lies far
 * from the near state's (27-69 ns); on the Zen 5 VM of round 34 the far
 * state's ring floor (140-300 ns) straddles 200 ns, while its one-way time
 * (185-260 ns) lies far from the near state's (40-45 ns). The Intel VM of
 * round 15 (one state: one-way 85-93 ns, ring 166-177 ns) stays near.
 *
 * Then a second figure, ring_ns: two processes (as two ranks would be)
 * pass a sequence number through one ring of 64-byte cells per direction in
 * a shared mapping, each waiting for the next cell with a pause per look,
 * as the shm transport's rings are used: the floor under a library's
 * small-message one-way time. On the VM above it took two values within
 * the near state (~28 and ~41 ns) that oneway_ns did not tell apart, and
 * Xportals' 8-byte ping-pong followed ring_ns, not oneway_ns.
 *
 * Output: one key=value line, e.g.
 *   bench=c2c_probe cpus=0,1 iters=2000 samples=15 oneway_ns=29.8 min_ns=29.3 p90_ns=30.2
 *   state=near ring_ns=31.0
 * (ring_ns=NA when the second process could not run).
 * Exit status: 0, 1 on a system error (e.g. a CPU that does not exist), 2 on
 * a bad command line. No Portals call: it needs no launcher.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_util.h"

typedef struct {
    int    cpu[2];
    long   iters, samples;
    double near_ns, busy_ns, near_ring_ns;
} probe_opts_t;

/* The line both threads write; padded so nothing else shares it. */
typedef struct {
    _Alignas(64) volatile uint64_t turn;
    char pad[64 - sizeof(uint64_t)];
} probe_line_t;

typedef struct {
    const probe_opts_t *opts;
    probe_line_t       *line;
    volatile int        ready; /* 1: pinned and answering, -1: could not pin */
} responder_t;

/* Answers odd values with the next even one until it sees UINT64_MAX - 1. */
static void *respond(void *arg)
{
    responder_t *r = arg;
    uint64_t expect = 1;
    if (probe_pin(r->opts->cpu[1]) != 0) {
        r->ready = -1;
        return NULL;
    }
    r->ready = 1;
    for (;;) {
        uint64_t v = r->line->turn;
        if (v == UINT64_MAX - 1)
            return NULL;
        if (v == expect) {
            r->line->turn = v + 1;
            expect = v + 2;
        } else {
            probe_relax();
        }
    }
}

/* Sends odd values and waits for the answers; *next is the next odd value. */
static double sample_ns(const probe_opts_t *o, probe_line_t *line, uint64_t *next)
{
    double t0 = probe_now_ns();
    for (long i = 0; i < o->iters; i++) {
        uint64_t v = *next;
        line->turn = v;
        while (line->turn != v + 1)
            ;
        *next = v + 2;
    }
    return (probe_now_ns() - t0) / (2.0 * (double)o->iters);
}

/* One cell of the ring measurement: a sequence number alone on its line. */
typedef struct {
    _Alignas(64) volatile uint64_t seq;
    char pad[64 - sizeof(uint64_t)];
} ring_cell_t;

#define RING_CELLS 256 /* per direction, like a short shm ring */
#define RING_ITERS_X 4 /* times --iters round trips per sample */

typedef struct {
    ring_cell_t out[RING_CELLS]; /* written by the parent */
    ring_cell_t back[RING_CELLS]; /* written by the child */
    volatile int ready;           /* the child: 1 pinned, -1 could not pin */
} ring_area_t;

/* Waits (with a pause per look) until cell c holds n; 0, or -1 when more
 * than a second has passed (the other process is gone). */
static int ring_wait(const ring_cell_t *c, uint64_t n)
{
    for (unsigned long spins = 1; c->seq != n; spins++) {
        probe_relax();
        if ((spins & 0xfffff) == 0 && spins > (1ul << 26))
            return -1;
    }
    return 0;
}

/* The child: answers every sequence number of `out` in `back`. */
static void ring_child(const probe_opts_t *o, ring_area_t *a)
{
    uint64_t total = (uint64_t)(o->iters * RING_ITERS_X + RING_CELLS) * (uint64_t)o->samples;
    if (probe_pin(o->cpu[1]) != 0) {
        a->ready = -1;
        _exit(1);
    }
    a->ready = 1;
    for (uint64_t n = 1; n <= total; n++) {
        if (ring_wait(&a->out[n % RING_CELLS], n) != 0)
            _exit(1);
        a->back[n % RING_CELLS].seq = n;
    }
    _exit(0);
}

/* ring_ns's samples into v (sorted); 0 on success, -1 when it could not
 * run (no fork, a CPU it may not use, a child that stopped answering). */
static int ring_measure(const probe_opts_t *o, double *v)
{
    ring_area_t *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
    int rc = -1, status;
    if (a == MAP_FAILED)
        return -1;
    memset(a, 0, sizeof(*a)); /* no page faults in the samples */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        ring_child(o, a);
    if (pid < 0)
        goto out;
    while (a->ready == 0)
        probe_relax();
    if (a->ready > 0) {
        uint64_t n = 1;
        long iters = o->iters * RING_ITERS_X;
        rc = 0;
        for (long s = 0; rc == 0 && s < o->samples; s++) {
            double t0 = 0;
            /* A lap of the rings first: every cell's line back in place. */
            for (long i = -RING_CELLS; rc == 0 && i < iters; i++, n++) {
                if (i == 0)
                    t0 = probe_now_ns();
                a->out[n % RING_CELLS].seq = n;
                rc = ring_wait(&a->back[n % RING_CELLS], n);
            }
            v[s] = (probe_now_ns() - t0) / (2.0 * (double)iters);
        }
    }
    if (rc != 0)
        kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (rc == 0)
        qsort(v, (size_t)o->samples, sizeof(*v), probe_cmp_double);
out:
    munmap(a, sizeof(*a));
    return rc;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--cpus A,B] [--iters N] [--samples N] [--near-ns NS] [--busy-ns NS]\n"
            "          [--near-ring-ns NS]\n",
            prog);
    exit(2);
}

static void parse(probe_opts_t *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v)
            usage(argv[0]);
        if (!strcmp(a, "--cpus")) {
            o->cpu[0] = (int)strtol(v, &end, 10);
            if (*end != ',')
                usage(argv[0]);
            o->cpu[1] = (int)strtol(end + 1, &end, 10);
        } else if (!strcmp(a, "--iters")) {
            o->iters = strtol(v, &end, 10);
        } else if (!strcmp(a, "--samples")) {
            o->samples = strtol(v, &end, 10);
        } else if (!strcmp(a, "--near-ns")) {
            o->near_ns = strtod(v, &end);
        } else if (!strcmp(a, "--busy-ns")) {
            o->busy_ns = strtod(v, &end);
        } else if (!strcmp(a, "--near-ring-ns")) {
            o->near_ring_ns = strtod(v, &end);
        } else {
            usage(argv[0]);
        }
        if (*end || end == v)
            usage(argv[0]);
        i++;
    }
    if (o->cpu[0] < 0 || o->cpu[1] < 0 || o->cpu[0] == o->cpu[1] || o->cpu[0] >= CPU_SETSIZE ||
        o->cpu[1] >= CPU_SETSIZE || o->iters < 1 || o->samples < 1 || o->near_ns <= 0 ||
        o->busy_ns <= o->near_ns || o->near_ring_ns <= 0)
        usage(argv[0]);
}

/* ring_ns < 0: no ring figure. */
static const char *state_of(const probe_opts_t *o, double oneway_ns, double ring_ns)
{
    if (oneway_ns >= o->busy_ns)
        return "busy";
    if (ring_ns >= o->near_ring_ns) /* (> 0: no ring figure is negative) */
        return "far";
    return oneway_ns < o->near_ns ? "near" : "far";
}

/* Runs the samples into v (sorted) over `line`; 0 on success. */
static int measure(const probe_opts_t *o, probe_line_t *line, double *v)
{
    responder_t r = { o, line, 0 };
    pthread_t tid;
    uint64_t next = 1;

    line->turn = 0;
    if (probe_pin(o->cpu[0]) != 0) {
        fprintf(stderr, "c2c_probe: cannot run on CPU %d\n", o->cpu[0]);
        return 1;
    }
    if (pthread_create(&tid, NULL, respond, &r) != 0) {
        perror("c2c_probe: pthread_create");
        return 1;
    }
    while (r.ready == 0)
        probe_relax();
    if (r.ready < 0) {
        pthread_join(tid, NULL);
        fprintf(stderr, "c2c_probe: cannot run on CPU %d\n", o->cpu[1]);
        return 1;
    }
    for (long s = 0; s < o->samples; s++)
        v[s] = sample_ns(o, line, &next);
    line->turn = UINT64_MAX - 1;
    pthread_join(tid, NULL);
    qsort(v, (size_t)o->samples, sizeof(*v), probe_cmp_double);
    return 0;
}

int main(int argc, char **argv)
{
    probe_opts_t o = { { 0, 1 }, 2000, 15, PROBE_NEAR_NS, PROBE_BUSY_NS, 200.0 };
    probe_line_t *line;
    double *v;
    int rc;

    parse(&o, argc, argv);
    v = calloc((size_t)o.samples, sizeof(*v));
    line = aligned_alloc(64, sizeof(*line));
    if (!v || !line) {
        fprintf(stderr, "c2c_probe: out of memory\n");
        free(v);
        free(line);
        return 1;
    }
    rc = measure(&o, line, v);
    free(line);
    if (rc != 0) {
        free(v);
        return 1;
    }
    double med = v[o.samples / 2], min = v[0], ring = -1;
    long p90 = (o.samples * 9) / 10 < o.samples ? (o.samples * 9) / 10 : o.samples - 1;
    double p90_ns = v[p90];
    if (ring_measure(&o, v) == 0)
        ring = v[o.samples / 2];
    printf("bench=c2c_probe cpus=%d,%d iters=%ld samples=%ld oneway_ns=%.1f min_ns=%.1f "
           "p90_ns=%.1f state=%s",
           o.cpu[0], o.cpu[1], o.iters, o.samples, med, min, p90_ns, state_of(&o, med, ring));
    if (ring >= 0)
        printf(" ring_ns=%.1f\n", ring);
    else
        printf(" ring_ns=NA\n");
    free(v);
    return 0;
}
