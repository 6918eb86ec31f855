/*
 * bench/c2c_probe.c - core-to-core cache-line ping-pong: how long one cache
 * line takes to move from one core to another, one way.
 *
 *   c2c_probe [--cpus 0,1] [--iters 2000] [--samples 15] [--near-ns 130]
 *             [--busy-ns 1000]
 *
 * Two threads pinned to the two CPUs hand a counter back and forth in one
 * cache line; a sample is the mean of --iters round trips, halved. The
 * median sample labels the machine's current state, which bench/compare.sh
 * records with every trial: on the 2-vCPU VM this was written on, the vCPUs
 * flip between ~54 ns ("near", e.g. sharing a cache) and ~256 ns ("far").
 *   near: median < --near-ns   far: < --busy-ns
 *   busy: the probe itself was descheduled (another process on a CPU)
 *
 * Output: one key=value line, e.g.
 *   bench=c2c_probe cpus=0,1 iters=2000 samples=15 oneway_ns=54.2 min_ns=52.8 p90_ns=58.0 state=near
 * Exit status: 0, 1 on a system error (e.g. a CPU that does not exist), 2 on
 * a bad command line. No Portals call: it needs no launcher.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int    cpu[2];
    long   iters, samples;
    double near_ns, busy_ns;
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

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Answers odd values with the next even one until it sees UINT64_MAX - 1. */
static void *respond(void *arg)
{
    responder_t *r = arg;
    uint64_t expect = 1;
    if (pin_self(r->opts->cpu[1]) != 0) {
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
            cpu_relax();
        }
    }
}

/* Sends odd values and waits for the answers; *next is the next odd value. */
static double sample_ns(const probe_opts_t *o, probe_line_t *line, uint64_t *next)
{
    double t0 = now_ns();
    for (long i = 0; i < o->iters; i++) {
        uint64_t v = *next;
        line->turn = v;
        while (line->turn != v + 1)
            ;
        *next = v + 2;
    }
    return (now_ns() - t0) / (2.0 * (double)o->iters);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--cpus A,B] [--iters N] [--samples N] [--near-ns NS] [--busy-ns NS]\n",
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
        } else {
            usage(argv[0]);
        }
        if (*end || end == v)
            usage(argv[0]);
        i++;
    }
    if (o->cpu[0] < 0 || o->cpu[1] < 0 || o->cpu[0] == o->cpu[1] || o->cpu[0] >= CPU_SETSIZE ||
        o->cpu[1] >= CPU_SETSIZE || o->iters < 1 || o->samples < 1 || o->near_ns <= 0 ||
        o->busy_ns <= o->near_ns)
        usage(argv[0]);
}

static const char *state_of(const probe_opts_t *o, double ns)
{
    return ns < o->near_ns ? "near" : ns < o->busy_ns ? "far" : "busy";
}

/* Runs the samples into v (sorted) over `line`; 0 on success. */
static int measure(const probe_opts_t *o, probe_line_t *line, double *v)
{
    responder_t r = { o, line, 0 };
    pthread_t tid;
    uint64_t next = 1;

    line->turn = 0;
    if (pin_self(o->cpu[0]) != 0) {
        fprintf(stderr, "c2c_probe: cannot run on CPU %d\n", o->cpu[0]);
        return 1;
    }
    if (pthread_create(&tid, NULL, respond, &r) != 0) {
        perror("c2c_probe: pthread_create");
        return 1;
    }
    while (r.ready == 0)
        cpu_relax();
    if (r.ready < 0) {
        pthread_join(tid, NULL);
        fprintf(stderr, "c2c_probe: cannot run on CPU %d\n", o->cpu[1]);
        return 1;
    }
    for (long s = 0; s < o->samples; s++)
        v[s] = sample_ns(o, line, &next);
    line->turn = UINT64_MAX - 1;
    pthread_join(tid, NULL);
    qsort(v, (size_t)o->samples, sizeof(*v), cmp_double);
    return 0;
}

int main(int argc, char **argv)
{
    probe_opts_t o = { { 0, 1 }, 2000, 15, 130.0, 1000.0 };
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
    double med = v[o.samples / 2];
    long p90 = (o.samples * 9) / 10 < o.samples ? (o.samples * 9) / 10 : o.samples - 1;
    printf("bench=c2c_probe cpus=%d,%d iters=%ld samples=%ld oneway_ns=%.1f min_ns=%.1f "
           "p90_ns=%.1f state=%s\n",
           o.cpu[0], o.cpu[1], o.iters, o.samples, med, v[0], v[p90], state_of(&o, med));
    free(v);
    return 0;
}
