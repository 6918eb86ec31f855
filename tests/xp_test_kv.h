/*
 * tests/xp_test_kv.h - multi-process tests: values shared through the
 * runtime's key-value store (xp_kv_*).
 */
#ifndef XP_TEST_KV_H
#define XP_TEST_KV_H

#include "xp_test.h"
#include "xportals/xp.h"

/* Rank `from`'s v on every rank (a collective: every rank calls it with
 * the same from and key). For ranks that must agree on a choice each
 * process makes for itself, such as the shm copy probe's under
 * XP_SHM_BOUNCE=auto. */
static inline size_t xp_test_rank_size(int from, const char *key, size_t v)
{
    size_t got = v, len = sizeof got;
    if (xp_rank() == from)
        XP_REQUIRE(xp_kv_put(key, &v, sizeof v) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    if (xp_rank() != from)
        XP_REQUIRE(xp_kv_get(from, key, &got, &len) == XP_OK && len == sizeof got);
    return got;
}

/* Rank 0's v on every rank (xp_test_rank_size). */
static inline size_t xp_test_rank0_size(const char *key, size_t v)
{
    return xp_test_rank_size(0, key, v);
}

#endif
