/*
 * bench/bench_common.h - shared harness of the Portals benchmarks (header
 * only: every bench/NAME.c is a separate program).
 *
 * Only the public Portals 4 API is used. A benchmark runs under
 * `xprun -n 2` (or more); rank and size come from a logical NI (PtlGetId,
 * PtlGetMap) and the barrier is built from Portals puts on its own
 * non-matching NI and portal table entry. The one exception is the very
 * first synchronisation: a put that arrives before the peer has appended
 * its barrier entry would be dropped, so that one uses the launcher's
 * barrier (xp_barrier, the runtime PtlInit starts).
 *
 * Output: one line per measurement of space-separated key=value pairs,
 * statistics over `reps` repeated runs (median, min, p90).
 */
#ifndef XP_BENCH_COMMON_H
#define XP_BENCH_COMMON_H

#include <inttypes.h>
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <xportals/shmem.h>
#include <xportals/xp.h>

#include "probe_util.h"

/* Portal table index of the barrier on its non-matching NI. */
#define BENCH_BARRIER_PT 63

typedef struct {
    /* options (defaults set by bench_init, overridable on the command line) */
    size_t min_size, max_size;
    long   iters, warmup, reps, window, queue, posted;
    long   bits;           /* ping-pong match bits; -1: the default, 0x42 */
    long   offset;         /* --offset B: data starts B bytes into both buffers
                            * (the local and remote offsets; benchmarks that list it) */
    long   roffset;        /* --roffset B: into the target's buffer (default: offset) */
    int    use_me, any_source;
    int    heap;           /* --heap: buffers from xp_shmalloc (benchmarks that list it) */
    int    uncounted;      /* --uncounted: the streams' target entry counts nothing */
    int    touch;          /* --touch: the ping-pong writes its data before each put */
    int    pause;          /* --pause: a memory wait pauses after each look */
    int    no_state_probe; /* --no-state-probe: no per-repetition state probe */
    /* bench_stream, rank 0: seconds per repetition spent in the loops of
     * PtlPut calls alone (the window's issue, not its wait), for report() */
    double *issue;
    /* identity */
    int rank, size;
    /* barrier */
    ptl_handle_ni_t bar_ni;
    ptl_handle_ct_t bar_ct;
    ptl_handle_le_t bar_le;
    ptl_handle_md_t bar_md;
    uint64_t        bar_epoch;
    char            bar_buf[8];
    /* the line of the per-repetition state probe (probe_util.h), ranks 0
     * and 1; NULL: no probes (not under xprun, or the mapping failed) */
    probe_rep_line_t *rep_line;
    uint64_t          rep_next;
    /* bench_stream, rank 0: the probes around its repetitions (reps + 1),
     * for report(); NULL when the target does not take part (--uncounted) */
    double           *rep_ns;
} bench_t;

static inline void bench_die(const char *what, int rc)
{
    fprintf(stderr, "bench: %s failed (rc=%d)\n", what, rc);
    exit(1);
}

/* Abort on any Portals error: a benchmark has no recovery path. */
#define BENCH_CHECK(call)                                                      \
    do {                                                                       \
        int bench_rc_ = (call);                                                \
        if (bench_rc_ != PTL_OK)                                               \
            bench_die(#call, bench_rc_);                                       \
    } while (0)

static inline double bench_now_us(void)
{
    return probe_now_ns() * 1e-3;
}

/* ------------------------------------------------------------ statistics */

typedef struct {
    double median, min, p90;
} bench_stats_t;

/* Sorts v. */
static inline bench_stats_t bench_stats(double *v, long n)
{
    bench_stats_t s = { 0, 0, 0 };
    if (n <= 0)
        return s;
    qsort(v, (size_t)n, sizeof(*v), probe_cmp_double);
    s.median = v[n / 2];
    s.min = v[0];
    s.p90 = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
    return s;
}

/* ------------------------------------------------------------ options */

static inline void bench_usage(const char *prog, const char *extra)
{
    fprintf(stderr,
            "usage: %s [--min-size B] [--max-size B] [--iters N] [--warmup N] [--reps N]\n"
            "          [--no-state-probe]\n"
            "          %s\n"
            "sizes accept k/m suffixes (KiB, MiB)\n",
            prog, extra ? extra : "");
    exit(2);
}

static inline size_t bench_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end == 'k' || *end == 'K')
        v <<= 10;
    else if (*end == 'm' || *end == 'M')
        v <<= 20;
    else if (*end != '\0')
        return (size_t)-1;
    return (size_t)v;
}

static inline long bench_parse_long(const char *s)
{
    char *end;
    long v = strtol(s, &end, 0);
    return *end || v < 0 ? -1 : v;
}

/* Whether option `a` is one that `extra` (the benchmark's usage text past
 * the sizes, iterations and repetitions every benchmark takes) lists: an
 * option a benchmark does not honour is refused, not silently ignored (a
 * run with --me or --heap must measure what it says). */
static inline int bench_takes(const char *extra, const char *a)
{
    size_t n = strlen(a);
    for (const char *p = extra; p && (p = strstr(p, a)) != NULL; p += n)
        if ((p == extra || p[-1] == '[') && (p[n] == ']' || p[n] == ' '))
            return 1;
    return 0;
}

/* Parses the common options into b (b's defaults are set by the caller). */
static inline void bench_parse(bench_t *b, int argc, char **argv, const char *extra)
{
    static const char *const base[] = { "--min-size", "--max-size", "--size", "--iters",
                                        "--warmup", "--reps", "--no-state-probe", "-h",
                                        "--help" };
    b->bits = -1;
    b->roffset = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long *lp = NULL;
        size_t k = 0;
        while (k < sizeof(base) / sizeof(base[0]) && strcmp(a, base[k]))
            k++;
        if (k == sizeof(base) / sizeof(base[0]) && !bench_takes(extra, a)) {
            fprintf(stderr, "%s: option %s is not one this benchmark takes\n", argv[0], a);
            bench_usage(argv[0], extra);
        }
        if (!strcmp(a, "--me")) { b->use_me = 1; continue; }
        if (!strcmp(a, "--any-source")) { b->any_source = 1; continue; }
        if (!strcmp(a, "--heap")) { b->heap = 1; continue; }
        if (!strcmp(a, "--uncounted")) { b->uncounted = 1; continue; }
        if (!strcmp(a, "--touch")) { b->touch = 1; continue; }
        if (!strcmp(a, "--pause")) { b->pause = 1; continue; }
        if (!strcmp(a, "--no-state-probe")) { b->no_state_probe = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help") || !v)
            bench_usage(argv[0], extra);
        if (!strcmp(a, "--min-size") || !strcmp(a, "--max-size") || !strcmp(a, "--size")) {
            size_t s = bench_parse_size(v);
            if (s == (size_t)-1)
                bench_usage(argv[0], extra);
            if (strcmp(a, "--max-size"))
                b->min_size = s;
            if (strcmp(a, "--min-size"))
                b->max_size = s;
            i++;
            continue;
        }
        if (!strcmp(a, "--iters")) lp = &b->iters;
        else if (!strcmp(a, "--warmup")) lp = &b->warmup;
        else if (!strcmp(a, "--reps")) lp = &b->reps;
        else if (!strcmp(a, "--window")) lp = &b->window;
        else if (!strcmp(a, "--queue")) lp = &b->queue;
        else if (!strcmp(a, "--posted")) lp = &b->posted;
        else if (!strcmp(a, "--bits")) lp = &b->bits;
        else if (!strcmp(a, "--offset")) lp = &b->offset;
        else if (!strcmp(a, "--roffset")) lp = &b->roffset;
        else bench_usage(argv[0], extra);
        if ((*lp = bench_parse_long(v)) < 0)
            bench_usage(argv[0], extra);
        i++;
    }
    if (b->roffset < 0)
        b->roffset = b->offset;
    if (b->min_size > b->max_size || b->reps < 1 || b->iters < 1 || b->window < 1)
        bench_usage(argv[0], extra);
}

/* ------------------------------------------------------------ identity, barrier */

static inline ptl_process_t bench_peer(int rank)
{
    ptl_process_t p;
    p.rank = (ptl_rank_t)rank;
    return p;
}

/* Counter-based barrier: everybody puts 0 bytes to rank 0, which waits for
 * (size-1) * epoch arrivals and then releases everybody. A fast rank's next
 * arrival can only follow its release, so cumulative thresholds suffice. */
static inline void bench_barrier(bench_t *b)
{
    ptl_ct_event_t ev;
    b->bar_epoch++;
    if (b->size == 1)
        return;
    if (b->rank == 0) {
        BENCH_CHECK(PtlCTWait(b->bar_ct, b->bar_epoch * (uint64_t)(b->size - 1), &ev));
        for (int r = 1; r < b->size; r++)
            BENCH_CHECK(PtlPut(b->bar_md, 0, 0, PTL_NO_ACK_REQ, bench_peer(r), BENCH_BARRIER_PT,
                               0, 0, NULL, 0));
    } else {
        BENCH_CHECK(PtlPut(b->bar_md, 0, 0, PTL_NO_ACK_REQ, bench_peer(0), BENCH_BARRIER_PT, 0,
                           0, NULL, 0));
        BENCH_CHECK(PtlCTWait(b->bar_ct, b->bar_epoch, &ev));
    }
    if (ev.failure)
        bench_die("barrier (failure counted)", (int)ev.failure);
}

static inline void bench_barrier_setup(bench_t *b)
{
    ptl_pt_index_t pt;
    ptl_le_t le;
    ptl_md_t md;
    ptl_process_t id, first;
    ptl_size_t map_size = 0;

    BENCH_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                          NULL, NULL, &b->bar_ni));
    BENCH_CHECK(PtlGetId(b->bar_ni, &id));
    BENCH_CHECK(PtlGetMap(b->bar_ni, 1, &first, &map_size));
    b->rank = (int)id.rank;
    b->size = (int)map_size;
    BENCH_CHECK(PtlCTAlloc(b->bar_ni, &b->bar_ct));
    BENCH_CHECK(PtlPTAlloc(b->bar_ni, 0, PTL_EQ_NONE, BENCH_BARRIER_PT, &pt));
    memset(&le, 0, sizeof(le));
    le.start = NULL;
    le.length = 0;
    le.ct_handle = b->bar_ct;
    le.uid = PTL_UID_ANY;
    le.options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM | PTL_LE_EVENT_COMM_DISABLE;
    BENCH_CHECK(PtlLEAppend(b->bar_ni, pt, &le, PTL_PRIORITY_LIST, NULL, &b->bar_le));
    memset(&md, 0, sizeof(md));
    md.start = b->bar_buf;
    md.length = sizeof(b->bar_buf);
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = PTL_CT_NONE;
    BENCH_CHECK(PtlMDBind(b->bar_ni, &md, &b->bar_md));
    b->bar_epoch = 0;
    if (xp_barrier() != XP_OK) /* every barrier entry is now appended */
        bench_die("xp_barrier", -1);
}

/* The state probe's line, ranks 0 and 1: a POSIX shared-memory object
 * named after xprun's job (XPRUN_JOBID), made by rank 0, mapped by rank 1
 * after a barrier, unlinked after the next. Without it (another launcher, a
 * failed call) the ping-pongs print no per-state keys. */
static inline void bench_rep_probe_setup(bench_t *b)
{
    const char *job = getenv("XPRUN_JOBID");
    char name[96];
    int fd = -1;
    b->rep_line = NULL;
    b->rep_next = 1;
    /* (every rank has the same options and environment) */
    if (b->no_state_probe || !job || b->size < 2)
        return;
    snprintf(name, sizeof name, "/xpbench-probe-%.64s", job);
    for (size_t i = 1; name[i]; i++) /* (one path component) */
        if (name[i] == '/')
            name[i] = '_';
    if (b->rank == 0) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0 && ftruncate(fd, sizeof(probe_rep_line_t)) != 0) {
            close(fd);
            fd = -1;
        }
    }
    bench_barrier(b);
    if (b->rank == 1)
        fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) {
        void *p = mmap(NULL, sizeof(probe_rep_line_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        b->rep_line = p == MAP_FAILED ? NULL : p;
    }
    bench_barrier(b);
    if (b->rank == 0)
        shm_unlink(name);
}

/* One state probe (both of ranks 0 and 1 call it at the same point):
 * rank 0's one-way ns, 0 on rank 1, -1 without probes (and from then on
 * when the other side did not answer). */
static inline double bench_rep_probe(bench_t *b)
{
    if (!b->rep_line)
        return -1;
    double ns = probe_rep_run(b->rep_line, b->rank == 0, &b->rep_next);
    if (ns < 0) {
        munmap(b->rep_line, sizeof(probe_rep_line_t));
        b->rep_line = NULL;
    }
    return ns;
}

/* Rank 0: what a line appends for reps results v[] between the state
 * probes ns[0..reps] (probe_rep_suffix: per > 0 turns seconds into a rate
 * per / v[r] in `unit`); "" elsewhere or without probes. */
static inline void bench_rep_states(const bench_t *b, const double *v, const double *ns,
                                    long reps, double per, const char *unit, char *out,
                                    size_t room)
{
    if (b->rank == 0)
        probe_rep_suffix(v, ns, reps, per, unit, out, room);
    else
        out[0] = '\0';
}

/* Initialise Portals, learn rank/size, set up the barrier and synchronise. */
static inline void bench_init(bench_t *b, int argc, char **argv, const char *extra)
{
    bench_parse(b, argc, argv, extra);
    BENCH_CHECK(PtlInit());
    bench_barrier_setup(b);
    bench_rep_probe_setup(b);
}

static inline void bench_fini(bench_t *b)
{
    if (b->rep_line)
        munmap(b->rep_line, sizeof(probe_rep_line_t));
    bench_barrier(b);
    PtlMDRelease(b->bar_md);
    PtlLEUnlink(b->bar_le);
    PtlPTFree(b->bar_ni, BENCH_BARRIER_PT);
    PtlCTFree(b->bar_ct);
    PtlNIFini(b->bar_ni);
    PtlFini();
}

/* ------------------------------------------------------------ data-path helpers */

static inline long bench_min_room(const ptl_ni_limits_t *l)
{
    long m = l->max_entries;
    if (l->max_unexpected_headers < m)
        m = l->max_unexpected_headers;
    if (l->max_list_size < m)
        m = l->max_list_size;
    return m;
}

/* A logical NI with room for `entries` list entries and unexpected headers
 * if the library grants it: asks for the defaults first, then re-opens
 * asking for more. *room (if not NULL) = what was granted; without room,
 * too little is fatal. */
static inline ptl_handle_ni_t bench_ni_room(int matching, long entries, long *room)
{
    unsigned opts = (matching ? PTL_NI_MATCHING : PTL_NI_NO_MATCHING) | PTL_NI_LOGICAL;
    ptl_ni_limits_t actual, desired;
    ptl_handle_ni_t ni;

    BENCH_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, opts, PTL_PID_ANY, NULL, &actual, &ni));
    if (bench_min_room(&actual) < entries) {
        BENCH_CHECK(PtlNIFini(ni));
        desired = actual;
        if (desired.max_entries < entries)
            desired.max_entries = (int)entries;
        if (desired.max_unexpected_headers < entries)
            desired.max_unexpected_headers = (int)entries;
        if (desired.max_list_size < entries)
            desired.max_list_size = (int)entries;
        BENCH_CHECK(PtlNIInit(PTL_IFACE_DEFAULT, opts, PTL_PID_ANY, &desired, &actual, &ni));
    }
    if (room)
        *room = bench_min_room(&actual);
    else if (bench_min_room(&actual) < entries) {
        fprintf(stderr, "bench: NI grants max_entries=%d max_unexpected_headers=%d "
                        "max_list_size=%d, need %ld\n",
                actual.max_entries, actual.max_unexpected_headers, actual.max_list_size,
                entries);
        exit(1);
    }
    return ni;
}

static inline ptl_handle_ni_t bench_ni(int matching, long entries)
{
    return bench_ni_room(matching, entries, NULL);
}

static inline ptl_handle_md_t bench_md(ptl_handle_ni_t ni, void *buf, size_t len,
                                       unsigned options, ptl_handle_ct_t ct)
{
    ptl_md_t md;
    ptl_handle_md_t h;
    memset(&md, 0, sizeof(md));
    md.start = buf;
    md.length = len;
    md.options = options;
    md.eq_handle = PTL_EQ_NONE;
    md.ct_handle = ct;
    BENCH_CHECK(PtlMDBind(ni, &md, &h));
    return h;
}

/* A persistent receive buffer counted by `ct`: an LE on a non-matching NI,
 * an ME (fixed source `peer`, match bits `bits`) on a matching one. */
static inline ptl_handle_any_t bench_post(ptl_handle_ni_t ni, int matching, ptl_pt_index_t pt,
                                          void *buf, size_t len, ptl_handle_ct_t ct,
                                          unsigned extra_options, ptl_process_t peer,
                                          ptl_match_bits_t bits)
{
    ptl_handle_any_t h;
    if (matching) {
        ptl_me_t me;
        memset(&me, 0, sizeof(me));
        me.start = buf;
        me.length = len;
        me.ct_handle = ct;
        me.uid = PTL_UID_ANY;
        me.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_CT_COMM |
                     PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE | extra_options;
        me.match_id = peer;
        me.match_bits = bits;
        me.ignore_bits = 0;
        BENCH_CHECK(PtlMEAppend(ni, pt, &me, PTL_PRIORITY_LIST, NULL, &h));
    } else {
        ptl_le_t le;
        memset(&le, 0, sizeof(le));
        le.start = buf;
        le.length = len;
        le.ct_handle = ct;
        le.uid = PTL_UID_ANY;
        le.options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM |
                     PTL_LE_EVENT_COMM_DISABLE | PTL_LE_EVENT_LINK_DISABLE | extra_options;
        BENCH_CHECK(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &h));
    }
    return h;
}

/* 0, 1, 2, 4, ... up to max (0 only when min is 0). */
static inline size_t bench_next_size(size_t s)
{
    return s ? s * 2 : 1;
}

/* Page-aligned; from 1 MiB on aligned to 2 MiB, so that under xprun's
 * glibc.malloc.hugetlb=1 a large buffer lies in transparent huge pages in
 * every run: with 4 KiB alignment whether it did varied from run to run,
 * and ptl_bw at 1 MiB read ~25 or ~43 GB/s by that (single copies pin the
 * pages; AMD VM, round 29). mpi_bench allocates the same way. */
static inline void *bench_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, len >= (1u << 20) ? (2u << 20) : 4096, len ? len : 8))
        bench_die("posix_memalign", -1);
    memset(p, 0, len ? len : 8);
    return p;
}

/* Bytes each buffer of a ping-pong or stream needs: the largest message
 * past the larger of --offset and --roffset (both sides use both sizes). */
static inline size_t bench_span(const bench_t *b)
{
    return b->max_size + (size_t)(b->offset > b->roffset ? b->offset : b->roffset);
}

/* A buffer of a streaming benchmark: from the shared heap with --heap
 * (xp_shmalloc: peers copy it through their mapping), else bench_alloc's. */
static inline void *bench_alloc_buf(const bench_t *b, size_t len)
{
    if (!b->heap)
        return bench_alloc(len);
    void *p = xp_shmalloc(len ? len : 8);
    if (!p)
        bench_die("xp_shmalloc (--heap)", PTL_NO_SPACE);
    memset(p, 0, len ? len : 8);
    return p;
}

static inline void bench_free_buf(const bench_t *b, void *p)
{
    if (b->heap)
        xp_shfree(p);
    else
        free(p);
}

/* Iterations for one size: fewer for large messages so a run stays short. */
static inline long bench_iters_for(const bench_t *b, size_t size)
{
    long n = b->iters;
    if (size > 65536)
        n = (long)((double)b->iters * 65536.0 / (double)size);
    return n < 10 ? 10 : n;
}

/* ------------------------------------------------------------ ping-pong */

/* Half round-trip of put + CT wait between ranks 0 and 1, for every size.
 * matching: ME (fixed source, exact match bits) on a matching NI, else an LE
 * on a non-matching NI. b->posted extra MEs that never match are posted
 * first (fixed source, or any source with --any-source). Rank 0 prints. */
static inline void bench_pingpong(bench_t *b, const char *name, int matching)
{
    enum { PT = 1 };
    /* 0x42 unless --bits says otherwise: with 0 (what an OpenSHMEM put
     * sends) a small put takes the shortest wire form. */
    const ptl_match_bits_t bits = b->bits >= 0 ? (ptl_match_bits_t)b->bits : 0x42;
    long extra = matching ? b->posted : 0;
    ptl_handle_ni_t ni = bench_ni(matching, extra + 64);
    ptl_pt_index_t pt;
    ptl_handle_ct_t rct;
    ptl_ct_event_t ev;
    int peer = 1 - b->rank, active = b->rank < 2 && b->size >= 2;
    size_t off = (size_t)b->offset, roff = (size_t)b->roffset, span = bench_span(b);
    char *rbuf = bench_alloc_buf(b, span), *sbuf = bench_alloc_buf(b, span);
    ptl_handle_any_t *others = calloc((size_t)extra + 1, sizeof(*others));
    double *v = calloc((size_t)b->reps, sizeof(*v));
    double *ns = calloc((size_t)b->reps + 1, sizeof(*ns));
    uint64_t count = 0;

    if (b->size < 2 && b->rank == 0)
        fprintf(stderr, "%s: needs 2 processes (xprun -n 2)\n", name);
    BENCH_CHECK(PtlCTAlloc(ni, &rct));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    for (long i = 0; i < extra; i++) {
        ptl_process_t src = bench_peer(peer);
        if (b->any_source)
            src.rank = PTL_RANK_ANY;
        others[i] = bench_post(ni, 1, pt, rbuf, span, PTL_CT_NONE, 0, src,
                               bits + 1 + (ptl_match_bits_t)i);
    }
    ptl_handle_any_t recv = bench_post(ni, matching, pt, rbuf, span, rct, 0,
                                       bench_peer(peer), bits);
    ptl_handle_md_t md = bench_md(ni, sbuf, span, 0, PTL_CT_NONE);
    bench_barrier(b);

    for (size_t size = b->min_size; active && size <= b->max_size; size = bench_next_size(size)) {
        long iters = bench_iters_for(b, size);
        for (long r = 0; r < b->reps; r++) {
            double t0 = 0;
            ns[r] = bench_rep_probe(b);
            for (long i = 0; i < b->warmup + iters; i++) {
                if (i == b->warmup)
                    t0 = bench_now_us();
                /* --touch: data just produced, its lines modified in this
                 * core's cache (the peer's answer says our last put was
                 * read, so the buffer is ours again). */
                if (b->rank == 0) {
                    if (b->touch)
                        memset(sbuf + off, (int)i & 0xff, size);
                    BENCH_CHECK(PtlPut(md, off, size, PTL_NO_ACK_REQ, bench_peer(peer), pt, bits,
                                       roff, NULL, 0));
                    BENCH_CHECK(PtlCTWait(rct, ++count, &ev));
                } else {
                    BENCH_CHECK(PtlCTWait(rct, ++count, &ev));
                    if (b->touch)
                        memset(sbuf + off, (int)i & 0xff, size);
                    BENCH_CHECK(PtlPut(md, off, size, PTL_NO_ACK_REQ, bench_peer(peer), pt, bits,
                                       roff, NULL, 0));
                }
                if (ev.failure)
                    bench_die("ping-pong (failure counted)", (int)ev.failure);
            }
            v[r] = (bench_now_us() - t0) / (2.0 * (double)iters);
        }
        ns[b->reps] = bench_rep_probe(b);
        char states[160];
        bench_rep_states(b, v, ns, b->reps, 0, "us", states, sizeof states);
        bench_stats_t st = bench_stats(v, b->reps); /* (sorts v: after the keys) */
        if (b->rank == 0)
            printf("bench=%s list=%s size=%zu iters=%ld reps=%ld posted=%ld any_source=%d "
                   "bits=%#llx median_us=%.3f min_us=%.3f p90_us=%.3f buffers=%s offset=%zu "
                   "roffset=%zu touch=%d%s\n",
                   name, matching ? "me" : "le", size, iters, b->reps, extra, b->any_source,
                   (unsigned long long)bits, st.median, st.min, st.p90,
                   b->heap ? "heap" : "malloc", off, roff, b->touch, states);
        fflush(stdout);
    }

    bench_barrier(b);
    PtlMDRelease(md);
    if (matching)
        PtlMEUnlink(recv);
    else
        PtlLEUnlink(recv);
    for (long i = 0; i < extra; i++)
        PtlMEUnlink(others[i]);
    PtlPTFree(ni, pt);
    PtlCTFree(rct);
    PtlNIFini(ni);
    free(others);
    free(v);
    free(ns);
    bench_free_buf(b, rbuf);
    bench_free_buf(b, sbuf);
}

/* ------------------------------------------------------------ streaming */

/* Rank 0 streams windows of b->window puts to rank 1 and waits for their
 * counting acknowledgements; rank 1 waits on its LE counter, or with
 * --uncounted (an OpenSHMEM target: its entry counts nothing) makes no call
 * until the barrier after the last size. Per size, the result of each
 * repetition is seconds for b->window * iters messages.
 * report(b, size, iters, v_seconds) prints (rank 0), with b->rep_ns the
 * state probes around the repetitions (bench_rep_states). */
typedef void (*bench_report_t)(const bench_t *b, size_t size, long iters, double *sec);

/* The smallest window whose PtlPut calls bench_stream times apart
 * (b->issue; 0 below it). */
#define BENCH_ISSUE_MIN 64

static inline void bench_stream(bench_t *b, bench_report_t report)
{
    enum { PT = 2 };
    ptl_handle_ni_t ni = bench_ni(0, 64);
    ptl_pt_index_t pt;
    ptl_handle_ct_t rct, act;
    ptl_ct_event_t ev;
    int active = b->rank < 2 && b->size >= 2;
    size_t off = (size_t)b->offset, roff = (size_t)b->roffset, span = bench_span(b);
    char *rbuf = bench_alloc_buf(b, span), *sbuf = bench_alloc_buf(b, span);
    double *v = calloc((size_t)b->reps, sizeof(*v));
    uint64_t count = 0;

    b->issue = calloc((size_t)b->reps, sizeof(*b->issue));
    /* The target of --uncounted makes no call until the end: no probes. */
    b->rep_ns = b->uncounted ? NULL : calloc((size_t)b->reps + 1, sizeof(*b->rep_ns));
    if (!v || !b->issue || (!b->uncounted && !b->rep_ns))
        bench_die("calloc", 0);
    if (b->size < 2 && b->rank == 0)
        fprintf(stderr, "needs 2 processes (xprun -n 2)\n");
    BENCH_CHECK(PtlCTAlloc(ni, &rct));
    BENCH_CHECK(PtlCTAlloc(ni, &act));
    BENCH_CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt));
    ptl_handle_any_t recv = bench_post(ni, 0, pt, rbuf, span,
                                       b->uncounted ? PTL_CT_NONE : rct, 0, bench_peer(0), 0);
    ptl_handle_md_t md = bench_md(ni, sbuf, span, PTL_MD_EVENT_CT_ACK, act);
    bench_barrier(b);

    for (size_t size = b->min_size; active && (b->rank == 0 || !b->uncounted) &&
                                    size <= b->max_size;
         size = bench_next_size(size)) {
        /* at most ~256 MiB per repetition */
        double cap = 268435456.0 / ((double)(size ? size : 1) * (double)b->window);
        long iters = cap < (double)b->iters ? (long)cap : b->iters;
        if (iters < 3)
            iters = 3;
        for (long r = 0; r < b->reps; r++) {
            double t0 = 0, issue = 0;
            if (b->rep_ns)
                b->rep_ns[r] = bench_rep_probe(b);
            /* (Two clock reads per window, tens of ns: timed only from
             * BENCH_ISSUE_MIN puts up, where they weigh little against
             * the window's puts.) */
            int timed = b->rank == 0 && b->window >= BENCH_ISSUE_MIN;
            for (long i = 0; i < b->warmup + iters; i++) {
                if (i == b->warmup) {
                    t0 = bench_now_us();
                    issue = 0;
                }
                count += (uint64_t)b->window;
                if (b->rank == 0) {
                    double ti = timed ? bench_now_us() : 0;
                    for (long w = 0; w < b->window; w++)
                        BENCH_CHECK(PtlPut(md, off, size, PTL_CT_ACK_REQ, bench_peer(1), pt, 0,
                                           roff, NULL, 0));
                    if (timed)
                        issue += bench_now_us() - ti;
                    BENCH_CHECK(PtlCTWait(act, count, &ev));
                } else {
                    BENCH_CHECK(PtlCTWait(rct, count, &ev));
                }
                if (ev.failure)
                    bench_die("stream (failure counted)", (int)ev.failure);
            }
            v[r] = (bench_now_us() - t0) * 1e-6;
            b->issue[r] = issue * 1e-6;
        }
        if (b->rep_ns)
            b->rep_ns[b->reps] = bench_rep_probe(b);
        if (b->rank == 0)
            report(b, size, iters, v);
        fflush(stdout);
    }

    bench_barrier(b);
    PtlMDRelease(md);
    PtlLEUnlink(recv);
    PtlPTFree(ni, pt);
    PtlCTFree(act);
    PtlCTFree(rct);
    PtlNIFini(ni);
    free(v);
    free(b->issue);
    free(b->rep_ns);
    b->issue = NULL;
    b->rep_ns = NULL;
    bench_free_buf(b, rbuf);
    bench_free_buf(b, sbuf);
}

#endif
