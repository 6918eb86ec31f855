/*
 * bench/mpi/mpi_bench.c - the MPI peer of the Portals benchmarks, for
 * bench/compare.sh. Built by the script with mpicc.mpich and mpicc.openmpi
 * (not by CMake: it needs an MPI compiler wrapper).
 *
 *   mpiexec -n 2 mpi_bench --mode MODE [--min-size B] [--max-size B]
 *                          [--iters N] [--warmup N] [--reps N] [--window N]
 *                          [--offset B] [--roffset B]
 *
 * --offset / --roffset (pingpong, bw, msgrate; as ptl_pingpong's and
 * ptl_bw's): the sent data starts B bytes into its page-aligned buffer, the
 * received data --roffset bytes (default: --offset).
 *
 * Modes, mirroring bench/ptl_*.c (ranks 0 and 1; statistics over --reps
 * repetitions: median, min, p90):
 *   pingpong      MPI_Send / MPI_Recv ping-pong, half round trip (µs)
 *   put_pingpong  MPI_Put + MPI_Win_flush ping-pong into an MPI_Win_allocate
 *                 window; the target polls the flag word the put writes
 *                 (passive target, lock_all, MPI_Win_sync), half round trip
 *   bw            windows of MPI_Isend / MPI_Irecv from rank 0 to rank 1, each
 *                 window closed by a zero-byte ack (GB/s = 1e9 B/s)
 *   msgrate       the same with small messages (messages per second)
 *   fadd          MPI_Fetch_and_op (MPI_SUM, uint64) + MPI_Win_flush from rank 0
 *                 to rank 1's window, round trip per operation (µs); rank 1
 *                 waits in MPI_Barrier (its progress serves emulated atomics)
 *   ring          a token of --min-size bytes (MPI_Send / MPI_Recv) passed
 *                 round all the ranks (any number from 2: run with more ranks
 *                 than CPUs to see the oversubscribed case), µs per hop
 *   get           MPI_Get + MPI_Win_flush of --min-size .. --max-size bytes
 *                 from rank 1's window into rank 0's buffer, round trip per
 *                 operation (µs); rank 1 waits in MPI_Barrier. The window is
 *                 MPI_Win_allocate memory (shared between the processes by
 *                 both MPIs here), so this is a copy from mapped memory
 *
 * Output: one key=value line per size from rank 0 (ring: np=N as well), e.g.
 *   bench=mpi_pingpong size=8 iters=10000 reps=11 median_us=0.101 min_us=... p90_us=...
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* (probe_util.h's pinning) */
#endif
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_util.h" /* (bench/: compare.sh passes -I) */

typedef enum {
    MODE_PINGPONG, MODE_PUT_PINGPONG, MODE_BW, MODE_MSGRATE, MODE_FADD, MODE_GET, MODE_RING
} mode_t_;

typedef struct {
    mode_t_ mode;
    size_t  min_size, max_size;
    long    iters, warmup, reps, window;
    long    offset, roffset; /* send / receive data this far into their buffers */
    int     rank, size;
    char   *sbuf, *rbuf;
    MPI_Request *req;
    /* the per-repetition state probe (probe_util.h; ping-pongs): a line in
     * an MPI shared-memory window, NULL without one */
    MPI_Win probe_win;
    probe_rep_line_t *probe_line;
    uint64_t probe_next;
} opts_t;

typedef struct {
    double median, min, p90;
} stats_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v (ascending). */
static stats_t stats_of(double *v, long n)
{
    stats_t s;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    s.median = v[n / 2];
    s.min = v[0];
    s.p90 = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
    return s;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s --mode pingpong|put_pingpong|bw|msgrate|fadd|get|ring [--min-size B] [--max-size B]\n"
            "          [--size B] [--iters N] [--warmup N] [--reps N] [--window N]\n"
            "          [--offset B] [--roffset B] (pingpong, bw, msgrate: the sent data starts B\n"
            "          bytes into its page-aligned buffer, the received --roffset, default --offset)\n"
            "sizes accept k/m suffixes (KiB, MiB)\n",
            prog);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static long parse_num(const char *s, int allow_suffix)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (allow_suffix && (*end == 'k' || *end == 'K'))
        v <<= 10, end++;
    else if (allow_suffix && (*end == 'm' || *end == 'M'))
        v <<= 20, end++;
    return *end || v < 0 || end == s ? -1 : (long)v;
}

/* Defaults per mode follow the Portals benchmarks of the same family. */
static void set_defaults(opts_t *o)
{
    switch (o->mode) {
    case MODE_PINGPONG:
    case MODE_PUT_PINGPONG:
    case MODE_FADD:
    case MODE_GET:
        o->min_size = 8, o->max_size = 8, o->iters = 10000, o->warmup = 100, o->reps = 11;
        o->window = 1;
        break;
    case MODE_RING: /* ring_bench's */
        o->min_size = 8, o->max_size = 8, o->iters = 2000, o->warmup = 50, o->reps = 5;
        o->window = 1;
        break;
    case MODE_BW:
        o->min_size = 8, o->max_size = 4 << 20, o->iters = 200, o->warmup = 5, o->reps = 5;
        o->window = 64;
        break;
    case MODE_MSGRATE:
        o->min_size = 8, o->max_size = 8, o->iters = 200, o->warmup = 5, o->reps = 5;
        o->window = 256;
        break;
    }
}

static void parse(opts_t *o, int argc, char **argv)
{
    int i;
    const char *mode = NULL;
    for (i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--mode"))
            mode = argv[i + 1];
    if (!mode)
        usage(argv[0]);
    if (!strcmp(mode, "pingpong")) o->mode = MODE_PINGPONG;
    else if (!strcmp(mode, "put_pingpong")) o->mode = MODE_PUT_PINGPONG;
    else if (!strcmp(mode, "bw")) o->mode = MODE_BW;
    else if (!strcmp(mode, "msgrate")) o->mode = MODE_MSGRATE;
    else if (!strcmp(mode, "fadd")) o->mode = MODE_FADD;
    else if (!strcmp(mode, "get")) o->mode = MODE_GET;
    else if (!strcmp(mode, "ring")) o->mode = MODE_RING;
    else usage(argv[0]);
    set_defaults(o);
    o->roffset = -1;
    for (i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        long v;
        if (i + 1 >= argc)
            usage(argv[0]);
        if (!strcmp(a, "--mode"))
            continue;
        v = parse_num(argv[i + 1], 1);
        if (v < 0)
            usage(argv[0]);
        if (!strcmp(a, "--min-size")) o->min_size = (size_t)v;
        else if (!strcmp(a, "--max-size")) o->max_size = (size_t)v;
        else if (!strcmp(a, "--size")) o->min_size = o->max_size = (size_t)v;
        else if (!strcmp(a, "--iters")) o->iters = v;
        else if (!strcmp(a, "--warmup")) o->warmup = v;
        else if (!strcmp(a, "--reps")) o->reps = v;
        else if (!strcmp(a, "--window")) o->window = v;
        else if (!strcmp(a, "--offset")) o->offset = v;
        else if (!strcmp(a, "--roffset")) o->roffset = v;
        else usage(argv[0]);
    }
    if (o->roffset < 0)
        o->roffset = o->offset;
    /* (The window modes put into and get from a window's start.) */
    if ((o->offset || o->roffset) &&
        (o->mode == MODE_PUT_PINGPONG || o->mode == MODE_FADD || o->mode == MODE_GET ||
         o->mode == MODE_RING))
        usage(argv[0]);
    if (o->offset >= 4096 || o->roffset >= 4096)
        usage(argv[0]);
    if (o->min_size > o->max_size || o->iters < 1 || o->reps < 1 || o->window < 1)
        usage(argv[0]);
}

static size_t next_size(size_t s)
{
    return s ? s * 2 : 1;
}

/* Fewer iterations for large messages, as bench_iters_for does. */
static long iters_for(const opts_t *o, size_t size)
{
    long n = o->iters;
    if (size > 65536)
        n = (long)((double)o->iters * 65536.0 / (double)size);
    return n < 10 ? 10 : n;
}

/* ------------------------------------------------------------ send/recv */

static double pingpong_once(const opts_t *o, size_t size, long iters)
{
    int peer = 1 - o->rank;
    double t0 = 0;
    for (long i = 0; i < o->warmup + iters; i++) {
        if (i == o->warmup)
            t0 = now_us();
        if (o->rank == 0) {
            MPI_Send(o->sbuf + o->offset, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(o->rbuf + o->roffset, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(o->rbuf + o->roffset, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(o->sbuf + o->offset, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (now_us() - t0) / (2.0 * (double)iters);
}

/* µs per hop of a token passed 0 -> 1 -> .. -> size-1 -> 0, as ring_bench. */
static double ring_once(const opts_t *o, size_t size, long iters)
{
    int next = (o->rank + 1) % o->size, prev = (o->rank + o->size - 1) % o->size;
    double t0 = 0;
    for (long i = 0; i < o->warmup + iters; i++) {
        if (i == o->warmup)
            t0 = now_us();
        if (o->rank == 0) {
            MPI_Send(o->sbuf, (int)size, MPI_BYTE, next, 4, MPI_COMM_WORLD);
            MPI_Recv(o->rbuf, (int)size, MPI_BYTE, prev, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(o->rbuf, (int)size, MPI_BYTE, prev, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(o->sbuf, (int)size, MPI_BYTE, next, 4, MPI_COMM_WORLD);
        }
    }
    return (now_us() - t0) / ((double)iters * (double)o->size);
}

/* ------------------------------------------------------------ put + flush */

/* The window holds the payload followed by a 64-bit sequence word written by
 * the same put (the last 8 bytes of each message carry the sequence number;
 * messages shorter than 8 bytes are padded to 8). The target spins on it. */
typedef struct {
    MPI_Win  win;
    char    *base;
    uint64_t seq;
} putwin_t;

static size_t put_len(size_t size)
{
    return size < sizeof(uint64_t) ? sizeof(uint64_t) : size;
}

static volatile uint64_t *seq_word(const putwin_t *w, size_t size)
{
    return (volatile uint64_t *)(void *)(w->base + put_len(size) - sizeof(uint64_t));
}

static void put_and_flush(const opts_t *o, putwin_t *w, size_t size)
{
    int peer = 1 - o->rank;
    size_t len = put_len(size);
    memcpy(o->sbuf + len - sizeof(uint64_t), &w->seq, sizeof(uint64_t));
    MPI_Put(o->sbuf, (int)len, MPI_BYTE, peer, 0, (int)len, MPI_BYTE, w->win);
    MPI_Win_flush(peer, w->win);
}

/* MPI_Win_sync orders the load against the put in the unified model; an
 * MPI_Iprobe now and then drives the progress engine, which RMA emulated by
 * active messages (MPICH ch4 here) needs at the target. */
static void wait_seq(putwin_t *w, size_t size)
{
    volatile uint64_t *word = seq_word(w, size);
    unsigned spins = 0;
    int flag;
    while (*word != w->seq) {
        MPI_Win_sync(w->win);
        if ((++spins & 15) == 0)
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
}

static double put_pingpong_once(const opts_t *o, putwin_t *w, size_t size, long iters)
{
    double t0 = 0;
    for (long i = 0; i < o->warmup + iters; i++) {
        if (i == o->warmup)
            t0 = now_us();
        w->seq++;
        if (o->rank == 0) {
            put_and_flush(o, w, size);
            wait_seq(w, size);
        } else {
            wait_seq(w, size);
            put_and_flush(o, w, size);
        }
    }
    return (now_us() - t0) / (2.0 * (double)iters);
}

/* ------------------------------------------------------------ fetch-add */

/* Rank 0: µs per fetch-add; rank 1 only keeps progressing (in the barrier). */
static double fadd_once(const opts_t *o, putwin_t *w, long iters)
{
    const uint64_t one = 1;
    uint64_t result = 0;
    double t0 = 0;
    if (o->rank == 0) {
        for (long i = 0; i < o->warmup + iters; i++) {
            if (i == o->warmup)
                t0 = now_us();
            MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, 1, 0, MPI_SUM, w->win);
            MPI_Win_flush(1, w->win);
        }
        t0 = (now_us() - t0) / (double)iters;
        w->seq = result + 1; /* the value after this rep's last operation */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t0;
}

/* ------------------------------------------------------------ get */

/* Rank 0: µs per get of `size` bytes; rank 1 keeps progressing (in the barrier). */
static double get_once(const opts_t *o, putwin_t *w, size_t size, long iters)
{
    double t0 = 0;
    if (o->rank == 0) {
        for (long i = 0; i < o->warmup + iters; i++) {
            if (i == o->warmup)
                t0 = now_us();
            MPI_Get(o->rbuf, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, w->win);
            MPI_Win_flush(1, w->win);
        }
        t0 = (now_us() - t0) / (double)iters;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t0;
}

/* ------------------------------------------------------------ streaming */

/* Seconds for `iters` windows of o->window messages of `size` bytes. */
static double stream_once(const opts_t *o, size_t size, long iters)
{
    double t0 = 0;
    char ack = 0;
    for (long i = 0; i < o->warmup + iters; i++) {
        if (i == o->warmup)
            t0 = now_us();
        if (o->rank == 0) {
            for (long w = 0; w < o->window; w++)
                MPI_Isend(o->sbuf + o->offset, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                          &o->req[w]);
            MPI_Waitall((int)o->window, o->req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (long w = 0; w < o->window; w++)
                MPI_Irecv(o->rbuf + o->roffset, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                          &o->req[w]);
            MPI_Waitall((int)o->window, o->req, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    return (now_us() - t0) * 1e-6;
}

/* ------------------------------------------------------------ state probe */

/* The probe's line: rank 0's part of an MPI-3 shared-memory window over
 * the node's processes (both ranks of a ping-pong run on one node here). */
static void probe_setup(opts_t *o)
{
    MPI_Comm node;
    o->probe_win = MPI_WIN_NULL;
    o->probe_line = NULL;
    o->probe_next = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return;
    int nsize;
    MPI_Comm_size(node, &nsize);
    void *base = NULL;
    /* Open MPI 4.1's segment starts 8 bytes past a line: a line's room
     * more, and the line at the first boundary in it (the same place in
     * both mappings: they share the page offset). */
    MPI_Aint want = 2 * (MPI_Aint)sizeof(probe_rep_line_t);
    if (nsize == o->size && MPI_Win_allocate_shared(o->rank == 0 ? want : 0, 1, MPI_INFO_NULL,
                                                    node, &base, &o->probe_win) == MPI_SUCCESS) {
        MPI_Aint len;
        int unit;
        char *seg = NULL;
        if (MPI_Win_shared_query(o->probe_win, 0, &len, &unit, &seg) == MPI_SUCCESS && seg &&
            len >= want)
            o->probe_line = (probe_rep_line_t *)(seg + ((64 - ((uintptr_t)seg & 63)) & 63));
        if (o->probe_line && o->rank == 0)
            memset(o->probe_line, 0, sizeof(probe_rep_line_t));
    }
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One probe (ranks 0 and 1 at the same point): rank 0's one-way ns, 0 on
 * rank 1, -1 without a line (or once the other side did not answer). */
static double probe_once(opts_t *o)
{
    if (!o->probe_line || o->rank > 1)
        return -1;
    double ns = probe_rep_run(o->probe_line, o->rank == 0, &o->probe_next);
    if (ns < 0)
        o->probe_line = NULL;
    return ns;
}

/* ------------------------------------------------------------ driver */

static void run_latency(opts_t *o, putwin_t *w, double *v)
{
    const char *name = o->mode == MODE_PINGPONG       ? "mpi_pingpong"
                       : o->mode == MODE_PUT_PINGPONG ? "mpi_put_pingpong"
                       : o->mode == MODE_GET          ? "mpi_get"
                       : o->mode == MODE_RING         ? "mpi_ring"
                                                      : "mpi_fadd";
    /* The ping-pongs and the fetch-add label each repetition (probe_util.h). */
    int probed = o->mode == MODE_PINGPONG || o->mode == MODE_PUT_PINGPONG || o->mode == MODE_FADD;
    double *ns = calloc((size_t)o->reps + 1, sizeof(*ns));
    for (size_t size = o->min_size; size <= o->max_size; size = next_size(size)) {
        long iters = iters_for(o, size);
        for (long r = 0; r < o->reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            ns[r] = probed ? probe_once(o) : -1;
            if (o->mode == MODE_PINGPONG)
                v[r] = pingpong_once(o, size, iters);
            else if (o->mode == MODE_PUT_PINGPONG)
                v[r] = put_pingpong_once(o, w, size, iters);
            else if (o->mode == MODE_GET)
                v[r] = get_once(o, w, size, iters);
            else if (o->mode == MODE_RING)
                v[r] = ring_once(o, size, iters);
            else
                v[r] = fadd_once(o, w, iters);
        }
        ns[o->reps] = probed ? probe_once(o) : -1;
        if (o->rank == 0) {
            char states[160];
            probe_rep_suffix(v, ns, o->reps, 0, "us", states, sizeof states);
            stats_t st = stats_of(v, o->reps);
            printf("bench=%s np=%d size=%zu iters=%ld reps=%ld median_us=%.3f min_us=%.3f "
                   "p90_us=%.3f offset=%ld roffset=%ld%s\n",
                   name, o->size, size, iters, o->reps, st.median, st.min, st.p90, o->offset,
                   o->roffset, states);
            fflush(stdout);
        }
    }
    free(ns);
}

static void run_stream(opts_t *o, double *v)
{
    double *ns = calloc((size_t)o->reps + 1, sizeof(*ns));
    for (size_t size = o->min_size; size <= o->max_size; size = next_size(size)) {
        /* at most ~256 MiB per repetition, as bench_stream does */
        double cap = 268435456.0 / ((double)(size ? size : 1) * (double)o->window);
        long iters = cap < (double)o->iters ? (long)cap : o->iters;
        if (iters < 3)
            iters = 3;
        for (long r = 0; r < o->reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            ns[r] = probe_once(o);
            v[r] = stream_once(o, size, iters);
        }
        ns[o->reps] = probe_once(o);
        if (o->rank != 0)
            continue;
        double msgs = (double)o->window * (double)iters, bytes = msgs * (double)size;
        /* The states of the repetitions (probe_util.h), in the unit printed. */
        char states[192];
        probe_rep_suffix(v, ns, o->reps, o->mode == MODE_BW ? bytes * 1e-9 : msgs,
                         o->mode == MODE_BW ? "gbs" : "mps", states, sizeof states);
        stats_t st = stats_of(v, o->reps); /* seconds: fastest first */
        if (o->mode == MODE_BW)
            printf("bench=mpi_bw size=%zu window=%ld iters=%ld reps=%ld median_gbs=%.3f "
                   "max_gbs=%.3f p10_gbs=%.3f offset=%ld roffset=%ld%s\n",
                   size, o->window, iters, o->reps, bytes / st.median * 1e-9,
                   bytes / st.min * 1e-9, bytes / st.p90 * 1e-9, o->offset, o->roffset, states);
        else
            printf("bench=mpi_msgrate size=%zu window=%ld iters=%ld reps=%ld median_mps=%.0f "
                   "max_mps=%.0f p10_mps=%.0f median_us_per_msg=%.3f%s\n",
                   size, o->window, iters, o->reps, msgs / st.median, msgs / st.min,
                   msgs / st.p90, st.median * 1e6 / msgs, states);
        fflush(stdout);
    }
    free(ns);
}

/* The target word must hold the number of fetch-adds done; rank 0 knows
 * it (w->seq) and sends it to rank 1, which checks its window. */
static void check_fadd(const opts_t *o, putwin_t *w)
{
    uint64_t expect = w->seq;
    MPI_Bcast(&expect, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Win_sync(w->win);
    if (o->rank == 1 && *(volatile uint64_t *)(void *)w->base != expect) {
        fprintf(stderr, "mpi_bench: fetch-add target %llu, expected %llu\n",
                (unsigned long long)*(volatile uint64_t *)(void *)w->base,
                (unsigned long long)expect);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* As bench_common.h's bench_alloc: page-aligned, and from 1 MiB on aligned
 * to 2 MiB, so that under glibc.malloc.hugetlb=1 a large buffer lies in
 * transparent huge pages in every run rather than in some (single copies
 * pin pages: ~25 against ~43 GB/s at 1 MiB on the AMD VM, round 29). */
static char *alloc_buf(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, len >= (1u << 20) ? (2u << 20) : 4096, len ? len : 8)) {
        fprintf(stderr, "mpi_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 0, len ? len : 8);
    return p;
}

int main(int argc, char **argv)
{
    opts_t o;
    putwin_t w = { MPI_WIN_NULL, NULL, 0 };
    double *v;

    memset(&o, 0, sizeof(o));
    o.probe_win = MPI_WIN_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &o.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &o.size);
    parse(&o, argc, argv);
    if (o.mode == MODE_RING ? o.size < 2 : o.size != 2) {
        if (o.rank == 0)
            fprintf(stderr, "mpi_bench: needs exactly 2 processes (ring: 2 or more)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    o.sbuf = alloc_buf(put_len(o.max_size) + (size_t)o.offset);
    o.rbuf = alloc_buf(o.max_size + (size_t)o.roffset);
    o.req = calloc((size_t)o.window, sizeof(*o.req));
    v = calloc((size_t)o.reps, sizeof(*v));
    if (!o.req || !v)
        MPI_Abort(MPI_COMM_WORLD, 1);

    int windowed = o.mode == MODE_PUT_PINGPONG || o.mode == MODE_FADD || o.mode == MODE_GET;
    if (windowed) {
        /* whole pages: MPICH 4.0.2 (ch4) puts into the wrong rank's memory
         * when the shared windows are packed closer than a page */
        size_t wlen = (put_len(o.max_size) + 4095) & ~(size_t)4095;
        MPI_Win_allocate((MPI_Aint)wlen, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base, &w.win);
        memset(w.base, 0, wlen);
        MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (o.mode == MODE_PINGPONG || o.mode == MODE_PUT_PINGPONG || o.mode == MODE_BW ||
        o.mode == MODE_MSGRATE || o.mode == MODE_FADD)
        probe_setup(&o);
    if (o.mode != MODE_BW && o.mode != MODE_MSGRATE)
        run_latency(&o, &w, v);
    else
        run_stream(&o, v);
    if (o.mode == MODE_FADD)
        check_fadd(&o, &w);
    if (windowed) {
        MPI_Win_unlock_all(w.win);
        MPI_Win_free(&w.win);
    }
    if (o.probe_win != MPI_WIN_NULL)
        MPI_Win_free(&o.probe_win);

    free(v);
    free(o.req);
    free(o.sbuf);
    free(o.rbuf);
    MPI_Finalize();
    return 0;
}
