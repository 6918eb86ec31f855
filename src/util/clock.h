/* util/clock.h - monotonic time for timeouts and benchmarks. */
#ifndef XP_UTIL_CLOCK_H
#define XP_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds from an arbitrary fixed point (CLOCK_MONOTONIC; vDSO, ~20 ns). */
static inline uint64_t xp_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double xp_time_sec(void)
{
    return (double)xp_time_ns() * 1e-9;
}

/* Absolute deadline `timeout_ms` from now; a negative timeout means never. */
static inline uint64_t xp_deadline_ns(long timeout_ms)
{
    return timeout_ms < 0 ? UINT64_MAX : xp_time_ns() + (uint64_t)timeout_ms * 1000000ull;
}

#endif
