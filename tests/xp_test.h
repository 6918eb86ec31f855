/*
 * tests/xp_test.h - assertions that print both sides and where they failed.
 *
 * A test program is a main() that calls XP_CHECK* and ends with
 * `return xp_test_result();` (0 pass, 1 fail). Exit 77 means "skipped".
 */
#ifndef XP_TEST_H
#define XP_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int xp_test_failures_;

/* CLOCK_MONOTONIC in nanoseconds, for the tests that time what they check. */
static inline uint64_t xp_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int xp_test_cmp_u64_(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts t[0..n) in place (n > 0) and returns its median. */
static inline uint64_t xp_test_median_u64(uint64_t *t, size_t n)
{
    qsort(t, n, sizeof(*t), xp_test_cmp_u64_);
    return t[n / 2];
}

/* XP_TEST_TSAN is 1 in a ThreadSanitizer build. TSan sees no synchronisation
 * made through memory shared between processes (fork + MAP_SHARED): tests
 * that rely on it adapt or skip themselves under TSan, saying why. */
#if defined(__SANITIZE_THREAD__)
#define XP_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XP_TEST_TSAN 1
#endif
#endif
#ifndef XP_TEST_TSAN
#define XP_TEST_TSAN 0
#endif

/* A test's own waits for a peer, in ms: 4 times longer under TSan, as CTest's
 * and xprun's limits are (cmake/XpHelpers.cmake). Under TSan, 4 threads' 160
 * bounce puts of 33-100 KiB beside two other tests on 2 CPUs (mp_bounce) had
 * an event come 85-295 ms after a 5 s wait: slow, not lost. */
#define XP_TEST_WAIT_MS(ms) ((ms) * (XP_TEST_TSAN ? 4 : 1))

#define XP_TEST_SKIP(...)                                                    \
    do {                                                                     \
        fprintf(stderr, "SKIP: " __VA_ARGS__);                               \
        fputc('\n', stderr);                                                 \
        exit(77);                                                            \
    } while (0)

#define XP_CHECK(cond)                                                       \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            xp_test_failures_++;                                             \
        }                                                                    \
    } while (0)

#define XP_CHECK_INT(a, op, b)                                               \
    do {                                                                     \
        long long xa_ = (long long)(a), xb_ = (long long)(b);                \
        if (!(xa_ op xb_)) {                                                 \
            fprintf(stderr, "%s:%d: check failed: %s %s %s (%lld vs %lld)\n", \
                    __FILE__, __LINE__, #a, #op, #b, xa_, xb_);              \
            xp_test_failures_++;                                             \
        }                                                                    \
    } while (0)

#define XP_CHECK_EQ(a, b) XP_CHECK_INT(a, ==, b)

#define XP_CHECK_STR(a, b)                                                   \
    do {                                                                     \
        const char *xa_ = (a), *xb_ = (b);                                   \
        if (!xa_ || !xb_ || strcmp(xa_, xb_)) {                              \
            fprintf(stderr, "%s:%d: check failed: %s == %s (\"%s\" vs \"%s\")\n", \
                    __FILE__, __LINE__, #a, #b, xa_ ? xa_ : "(null)",        \
                    xb_ ? xb_ : "(null)");                                   \
            xp_test_failures_++;                                             \
        }                                                                    \
    } while (0)

/* Abort the test at once (for checks later code depends on). */
#define XP_REQUIRE(cond)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: required: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static inline int xp_test_result(void)
{
    if (xp_test_failures_)
        fprintf(stderr, "%d check(s) failed\n", xp_test_failures_);
    return xp_test_failures_ ? 1 : 0;
}

#endif
