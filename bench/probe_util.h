/*
 * bench/probe_util.h - what the stand-alone probes (c2c_probe, ring_stream)
 * share: they make no Portals call, so they do not include bench_common.h
 * (which pulls in portals4.h and the launcher's barrier).
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

/* One pause per look of a spin, as the library's own waits. */
static inline void probe_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline int probe_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
