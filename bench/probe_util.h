/*
 * bench/probe_util.h - the clock, pinning, spin and sorting helpers every
 * benchmark uses. The stand-alone probes (c2c_probe, ring_stream) include
 * it alone: they make no Portals call, so not bench_common.h (which pulls in
 * portals4.h and the launcher's barrier, and includes this).
 */
#ifndef XP_BENCH_PROBE_UTIL_H
#define XP_BENCH_PROBE_UTIL_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double probe_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Pin the calling thread to cpu; 0 on success. */
static inline int probe_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* The CPU's spin-wait hint (x86 `pause`), once per look of a loop that
 * waits on memory, as the library's own waits. */
static inline void probe_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline int probe_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------ the state of each repetition
 *
 * The 2-vCPU VMs flip between their near and far states many times a
 * second (the Zen 3 VM of round 35: 30 back-to-back c2c_probe runs in 0.3 s
 * read n n n ... f f f n n ... f), so a label taken before and after a whole
 * trial (compare.sh) often covers repetitions of both states. The
 * ping-pongs (bench_common.h, mpi/mpi_bench.c) therefore hand one line of
 * memory both processes map back and forth PROBE_REP_ITERS times before
 * each repetition and after the last: a repetition is near when the probes
 * on both sides of it are (one-way under PROBE_NEAR_NS, c2c_probe's
 * --near-ns), far when both are not (and under PROBE_BUSY_NS), mixed
 * otherwise. */
#define PROBE_REP_ITERS 200
/* One-way times that make a state near (under) and busy (from): also
 * c2c_probe's --near-ns and --busy-ns defaults. */
#define PROBE_NEAR_NS 130.0
#define PROBE_BUSY_NS 1000.0

typedef struct {
    _Alignas(64) volatile uint64_t turn;
    char pad[64 - sizeof(uint64_t)];
} probe_rep_line_t;

/* Waits (a pause per look) until the line holds v; -1 after ~2 s without
 * it (the peer is gone or never probes). */
static inline int probe_rep_wait(const probe_rep_line_t *l, uint64_t v)
{
    double give_up = 0;
    for (unsigned long n = 1; l->turn != v; n++) {
        probe_relax();
        if ((n & 0xffff) == 0) {
            double now = probe_now_ns();
            if (give_up == 0)
                give_up = now + 2e9;
            else if (now > give_up)
                return -1;
        }
    }
    return 0;
}

/* One probe by both processes of the pair: the leader (rank 0) stores odd
 * values and waits for each next even one, which the follower stores. One
 * round trip untimed first, so that the time leaves out how late the
 * other side came. *next is the next odd value, kept by the caller from
 * probe to probe (both sides start at 1). Returns the leader's one-way ns,
 * 0 on the follower, -1 when the other side did not answer. */
static inline double probe_rep_run(probe_rep_line_t *l, int leader, uint64_t *next)
{
    double t0 = 0;
    for (long i = 0; i <= PROBE_REP_ITERS; i++) {
        uint64_t v = *next;
        if (i == 1)
            t0 = probe_now_ns();
        if (leader) {
            l->turn = v;
            if (probe_rep_wait(l, v + 1) != 0)
                return -1;
        } else {
            if (probe_rep_wait(l, v) != 0)
                return -1;
            l->turn = v + 1;
        }
        *next = v + 2;
    }
    return leader ? (probe_now_ns() - t0) / (2.0 * PROBE_REP_ITERS) : 0;
}

/* 'n'ear, 'f'ar or 'm'ixed (busy or unprobed included) for a repetition
 * between probes of one-way times a and b ns. */
static inline char probe_rep_state(double a, double b)
{
    int na = a > 0 && a < PROBE_NEAR_NS, nb = b > 0 && b < PROBE_NEAR_NS;
    int fa = a >= PROBE_NEAR_NS && a < PROBE_BUSY_NS;
    int fb = b >= PROBE_NEAR_NS && b < PROBE_BUSY_NS;
    return na && nb ? 'n' : fa && fb ? 'f' : 'm';
}

/* The keys that say the states of reps repetitions with results v[] (any
 * unit) between probes ns[0..reps]: "near_reps=N near_median=X far_reps=M
 * far_median=Y" (median '-' without repetitions in that state), into out
 * (at least 128 bytes). tmp: room for reps doubles. */
static inline void probe_rep_keys(const double *v, const double *ns, long reps, double *tmp,
                                  const char *unit, char *out, size_t room)
{
    double med[2];
    long cnt[2];
    for (int k = 0; k < 2; k++) {
        char want = k ? 'f' : 'n';
        cnt[k] = 0;
        for (long r = 0; r < reps; r++)
            if (probe_rep_state(ns[r], ns[r + 1]) == want)
                tmp[cnt[k]++] = v[r];
        qsort(tmp, (size_t)cnt[k], sizeof(*tmp), probe_cmp_double);
        med[k] = cnt[k] ? tmp[cnt[k] / 2] : 0;
    }
    char nm[32] = "-", fm[32] = "-";
    if (cnt[0])
        snprintf(nm, sizeof nm, "%.3f", med[0]);
    if (cnt[1])
        snprintf(fm, sizeof fm, "%.3f", med[1]);
    snprintf(out, room, "near_reps=%ld near_median_%s=%s far_reps=%ld far_median_%s=%s", cnt[0],
             unit, nm, cnt[1], unit, fm);
}

/* What a benchmark line appends for its repetitions: " " and
 * probe_rep_keys' keys, or "" without probes (ns NULL, ns[0] < 0, or no
 * memory). The value of repetition r is v[r], or per / v[r] when per > 0
 * (a rate from seconds: messages, or 1e-9 bytes for GB/s). v is left as it
 * is. */
static inline void probe_rep_suffix(const double *v, const double *ns, long reps, double per,
                                    const char *unit, char *out, size_t room)
{
    double *x = ns && ns[0] >= 0 ? calloc(2 * (size_t)reps, sizeof(*x)) : NULL;
    out[0] = '\0';
    if (!x || room < 2) {
        free(x);
        return;
    }
    for (long r = 0; r < reps; r++)
        x[r] = per > 0 ? per / v[r] : v[r];
    out[0] = ' ';
    probe_rep_keys(x, ns, reps, x + reps, unit, out + 1, room - 1);
    free(x);
}

#endif
