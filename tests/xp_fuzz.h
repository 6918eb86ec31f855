/*
 * tests/xp_fuzz.h - helpers of the deterministic fuzz tests (test_fuzz_*.c):
 * a seeded generator that gives the same inputs on every machine, and a
 * switch that sends stderr to /dev/null while thousands of malformed inputs
 * are logged (the checks still count; failures are summarised after).
 */
#ifndef XP_FUZZ_H
#define XP_FUZZ_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef struct xp_rng {
    uint64_t s;
} xp_rng_t;

/* splitmix64 */
static inline uint64_t xp_rng_next(xp_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static inline size_t xp_rng_below(xp_rng_t *r, size_t n)
{
    return n ? (size_t)(xp_rng_next(r) % n) : 0;
}

/* Fill n bytes with random values. */
static inline void xp_rng_fill(xp_rng_t *r, void *p, size_t n)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)xp_rng_next(r);
}

/* Sanitizer runtimes provide this; reports keep going to the real stderr. */
extern void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

/* Silence stderr (returns the saved descriptor for xp_fuzz_loud); sanitizer
 * reports still reach the original stderr. */
static inline int xp_fuzz_quiet(void)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    if (saved >= 0 && __sanitizer_set_report_fd)
        __sanitizer_set_report_fd((void *)(intptr_t)saved);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, STDERR_FILENO);
        close(null);
    }
    return saved;
}

static inline void xp_fuzz_loud(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    if (__sanitizer_set_report_fd)
        __sanitizer_set_report_fd((void *)(intptr_t)STDERR_FILENO);
    close(saved);
}

#endif
