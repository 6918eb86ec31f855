/*
 * bench/ring_stream.c - what a ring of 64-byte cells between two processes
 * costs per packet, with nothing of the library around it: the floor under
 * the shm transport's streams and ping-pongs, and what other stores made
 * with each packet do to it (docs/performance-notes.md, round 31).
 *
 *   ring_stream [--mode stream|pingpong] [--packets N] [--cells 1024]
 *               [--cell-stores C] [--extra-stores K] [--touch D] [--no-reader]
 *               [--reps R] [--cpus A,B]
 *
 * stream: one process writes N packets (4 M) into a ring of --cells cells (a
 *   power of two), each as C 8-byte stores into its cell (1-7) and then the
 *   release store of its sequence number in the cell's first word; the other
 *   process waits for each (a pause per look), reads it and stores its head,
 *   which the writer reads only when its view says the ring is full.
 *   Reported: ns per packet. --no-reader: the same writer alone, on a
 *   ring of its own.
 * pingpong: one ring per direction; each side answers the other's packet
 *   with its own (N: 400 K). Reported: one-way ns (half a round trip).
 * --extra-stores K: K more stores per packet, before its cell's, into 8
 *   lines only the writer uses (what a caller's frame and spills are).
 * --touch D: after each publication, a store into the cell D ahead (when
 *   it is free): its line is taken back from the reader while the reader
 *   is busy elsewhere.
 *
 * Output: one key=value line, e.g.
 *   bench=ring_stream mode=stream cells=1024 cell_stores=7 extra_stores=0
 *   touch=0 reader=1 packets=4000000 reps=5 median_ns=10.4 min_ns=10.2
 * Exit status: 0; 1 when a process could not run or the other stopped
 * answering; 2 on a bad command line. No Portals call: it needs no launcher.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
    int pingpong, reader, cell_stores, extra_stores, cpu[2];
    long packets, cells, touch, reps;
} rs_opts_t;

typedef struct {
    _Alignas(64) uint64_t w[8]; /* w[0]: sequence number once published */
} rs_cell_t;

/* The shared mapping: two rings (the second only for pingpong), the
 * reader's head on its own line, and the child's state. */
typedef struct {
    _Alignas(64) volatile uint64_t head;
    _Alignas(64) volatile int ready; /* child: 1 pinned, -1 could not pin */
    _Alignas(64) rs_cell_t cells[];  /* 2 * opts->cells */
} rs_area_t;

/* Waits (a pause per look) until cell c carries n; -1 after ~a second
 * of looks without it (the other process is gone). */
static int wait_cell(const rs_cell_t *c, uint64_t n)
{
    for (unsigned long spins = 1; __atomic_load_n(&c->w[0], __ATOMIC_ACQUIRE) != n; spins++) {
        probe_relax();
        if ((spins & 0xfffff) == 0 && spins > (1ul << 26))
            return -1;
    }
    return 0;
}

/* Packet n into ring r: the extra stores, the cell's, its publication,
 * then the store ahead when the cell D ahead is free (head: the last
 * packet the reader took, as far as this writer knows). */
static inline void put_packet(const rs_opts_t *o, rs_cell_t *r, uint64_t n, uint64_t head,
                              volatile uint64_t *own)
{
    uint64_t mask = (uint64_t)o->cells - 1;
    rs_cell_t *c = &r[n & mask];
    for (int k = 0; k < o->extra_stores; k++)
        own[(k & 7) * 8] = n;
    for (int k = 1; k <= o->cell_stores; k++)
        c->w[k] = n;
    __atomic_store_n(&c->w[0], n, __ATOMIC_RELEASE);
    if (o->touch && n + (uint64_t)o->touch - head < (uint64_t)o->cells)
        /* 0 is no sequence number: the reader waits on, never takes, it */
        __atomic_store_n(&r[(n + (uint64_t)o->touch) & mask].w[0], 0, __ATOMIC_RELAXED);
}

/* The reader of a stream, or the answering side of a ping-pong. */
static void child(const rs_opts_t *o, rs_area_t *a)
{
    static volatile uint64_t own[64];
    rs_cell_t *in = a->cells, *out = a->cells + o->cells;
    uint64_t total = ((uint64_t)o->packets + (uint64_t)o->cells) * (uint64_t)o->reps;
    uint64_t mask = (uint64_t)o->cells - 1, sum = 0;
    if (probe_pin(o->cpu[1]) != 0) {
        a->ready = -1;
        _exit(1);
    }
    a->ready = 1;
    for (uint64_t n = 1; n <= total; n++) {
        if (wait_cell(&in[n & mask], n) != 0)
            _exit(1);
        sum += in[n & mask].w[1];
        if (o->pingpong)
            put_packet(o, out, n, n - 1, own);
        else
            __atomic_store_n(&a->head, n, __ATOMIC_RELEASE);
    }
    _exit(sum == 1 ? 2 : 0); /* (sum keeps the loads) */
}

/* One repetition of the writer's side: ns per packet (stream) or one-way
 * ns (pingpong) over o->packets packets numbered from *next; -1 when the
 * other process stopped answering. The first lap of the ring is not timed
 * (every cell's line in place). */
static double run_once(const rs_opts_t *o, rs_area_t *a, uint64_t *next)
{
    static volatile uint64_t own[64];
    rs_cell_t *out = a->cells, *in = a->cells + o->cells;
    uint64_t mask = (uint64_t)o->cells - 1, head = *next - 1;
    double t0 = 0;
    for (long i = -o->cells; i < o->packets; i++) {
        uint64_t n = (*next)++;
        if (i == 0)
            t0 = probe_now_ns();
        if (o->pingpong) {
            put_packet(o, out, n, n - 1, own);
            if (wait_cell(&in[n & mask], n) != 0)
                return -1;
            continue;
        }
        for (unsigned long spins = 1; o->reader && n - head >= (uint64_t)o->cells; spins++) {
            head = __atomic_load_n(&a->head, __ATOMIC_ACQUIRE);
            if ((spins & 0xfffff) == 0 && spins > (1ul << 26))
                return -1;
        }
        put_packet(o, out, n, o->reader ? head : n - 1, own);
    }
    /* A stream ends when the reader has taken the last packet. */
    for (unsigned long spins = 1; !o->pingpong && o->reader && a->head != *next - 1; spins++) {
        probe_relax();
        if ((spins & 0xfffff) == 0 && spins > (1ul << 26))
            return -1;
    }
    return (probe_now_ns() - t0) / (double)o->packets / (o->pingpong ? 2.0 : 1.0);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--mode stream|pingpong] [--packets N] [--cells N] [--cell-stores 1-7]\n"
            "          [--extra-stores K] [--touch D] [--no-reader] [--reps R] [--cpus A,B]\n",
            prog);
    exit(2);
}

static long number(const char *prog, const char *v)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : -1;
    if (!v || end == v || *end || x < 0)
        usage(prog);
    return x;
}

static void parse(rs_opts_t *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-reader")) {
            o->reader = 0;
            continue;
        }
        if (!v)
            usage(argv[0]);
        i++;
        if (!strcmp(a, "--mode") && (!strcmp(v, "stream") || !strcmp(v, "pingpong"))) {
            o->pingpong = !strcmp(v, "pingpong");
        } else if (!strcmp(a, "--packets")) {
            if ((o->packets = number(argv[0], v)) < 1)
                usage(argv[0]);
        } else if (!strcmp(a, "--cells")) {
            o->cells = number(argv[0], v);
        } else if (!strcmp(a, "--cell-stores")) {
            o->cell_stores = (int)number(argv[0], v);
        } else if (!strcmp(a, "--extra-stores")) {
            o->extra_stores = (int)number(argv[0], v);
        } else if (!strcmp(a, "--touch")) {
            o->touch = number(argv[0], v);
        } else if (!strcmp(a, "--reps")) {
            o->reps = number(argv[0], v);
        } else if (!strcmp(a, "--cpus")) {
            char *end;
            o->cpu[0] = (int)strtol(v, &end, 10);
            if (end == v || *end != ',')
                usage(argv[0]);
            o->cpu[1] = (int)number(argv[0], end + 1);
        } else {
            usage(argv[0]);
        }
    }
    if (o->cells < 16 || o->cells > (1L << 20) ||
        (o->cells & (o->cells - 1)) || o->cell_stores < 1 || o->cell_stores > 7 ||
        o->extra_stores > 1000 || o->touch >= o->cells || o->reps < 1 || o->cpu[0] < 0 ||
        o->cpu[0] == o->cpu[1] || o->cpu[0] >= CPU_SETSIZE || o->cpu[1] >= CPU_SETSIZE ||
        (o->pingpong && !o->reader))
        usage(argv[0]);
}

int main(int argc, char **argv)
{
    rs_opts_t o = { 0, 1, 7, 0, { 0, 1 }, 0, 1024, 0, 5 };
    parse(&o, argc, argv);
    if (o.packets == 0) /* a ping-pong's packet takes a round trip */
        o.packets = o.pingpong ? 400000 : 4000000;
    size_t bytes = sizeof(rs_area_t) + 2 * (size_t)o.cells * sizeof(rs_cell_t);
    rs_area_t *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double *v = calloc((size_t)o.reps, sizeof(*v));
    pid_t pid = 0;
    int rc = 0, status;
    if (a == MAP_FAILED || !v) {
        fprintf(stderr, "ring_stream: out of memory\n");
        return 1;
    }
    memset(a, 0, bytes); /* no page faults in the samples; no word is a sequence number */
    if (probe_pin(o.cpu[0]) != 0) {
        fprintf(stderr, "ring_stream: cannot run on CPU %d\n", o.cpu[0]);
        return 1;
    }
    if (o.reader) {
        fflush(stdout);
        pid = fork();
        if (pid == 0)
            child(&o, a);
        while (pid > 0 && a->ready == 0)
            probe_relax();
        if (pid < 0 || a->ready < 0) {
            fprintf(stderr, "ring_stream: no reader on CPU %d\n", o.cpu[1]);
            rc = 1;
        }
    }
    uint64_t next = 1;
    for (long r = 0; rc == 0 && r < o.reps; r++)
        if ((v[r] = run_once(&o, a, &next)) < 0) {
            fprintf(stderr, "ring_stream: the reader stopped answering\n");
            rc = 1;
        }
    if (pid > 0) {
        if (rc != 0)
            kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    if (rc == 0) {
        qsort(v, (size_t)o.reps, sizeof(*v), probe_cmp_double);
        printf("bench=ring_stream mode=%s cells=%ld cell_stores=%d extra_stores=%d touch=%ld "
               "reader=%d packets=%ld reps=%ld median_ns=%.1f min_ns=%.1f\n",
               o.pingpong ? "pingpong" : "stream", o.cells, o.cell_stores, o.extra_stores,
               o.touch, o.reader, o.packets, o.reps, v[o.reps / 2], v[0]);
    }
    free(v);
    munmap(a, bytes);
    return rc;
}
