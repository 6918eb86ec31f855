/*
 * bench/probe_util.h - the clock, pinning, spin and sorting helpers every
 * benchmark uses. The stand-alone probes (c2c_probe, ring_stream) include
 * it alone: they make no Portals call, so not bench_common.h (which pulls in
 * portals4.h and the launcher's barrier, and includes this).
 */
#ifndef XP_BENCH_PROBE_UTIL_H
#define XP_BENCH_PROBE_UTIL_H

#include <sched.h>
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

#endif
