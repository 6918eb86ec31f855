/* util/pool: get/put, zeroing, alignment, limits, reuse. */
#include <stdint.h>

#include "util/pool.h"
#include "xp_test.h"

typedef struct obj {
    uint64_t a, b;
    char pad[40];
} obj_t;

static void test_basic(void)
{
    xp_pool_t pool;
    XP_REQUIRE(xp_pool_init(&pool, "test", sizeof(obj_t), 16, 0, XP_POOL_ZERO) == XP_OK);
    obj_t *objs[1000];
    for (int i = 0; i < 1000; i++) {
        objs[i] = xp_pool_get(&pool);
        XP_REQUIRE(objs[i]);
        XP_CHECK_EQ((uintptr_t)objs[i] % 16, 0);
        XP_CHECK(objs[i]->a == 0 && objs[i]->b == 0 && objs[i]->pad[39] == 0);
        objs[i]->a = (uint64_t)i;
        memset(objs[i]->pad, 0x5a, sizeof objs[i]->pad);
    }
    XP_CHECK_EQ(xp_pool_in_use(&pool), 1000);
    XP_CHECK(xp_pool_capacity(&pool) >= 1000);
    /* No two objects overlap: each still holds what was written to it. */
    for (int i = 0; i < 1000; i++)
        XP_CHECK_EQ(objs[i]->a, i);
    for (int i = 0; i < 1000; i += 2)
        xp_pool_put(&pool, objs[i]);
    XP_CHECK_EQ(xp_pool_in_use(&pool), 500);
    size_t cap = xp_pool_capacity(&pool);
    /* Returned objects are reused before the pool grows, and come back zeroed. */
    for (int i = 0; i < 1000; i += 2) {
        objs[i] = xp_pool_get(&pool);
        XP_CHECK(objs[i]->a == 0 && objs[i]->pad[0] == 0);
    }
    XP_CHECK_EQ(xp_pool_capacity(&pool), cap);
    xp_pool_put(&pool, NULL);
    xp_pool_destroy(&pool); /* frees objects still in use */
}

static void test_limit_and_align(void)
{
    xp_pool_t pool;
    XP_REQUIRE(xp_pool_init(&pool, "limited", 3, 4, 10, XP_POOL_CACHE_ALIGN) == XP_OK);
    void *objs[10];
    for (int i = 0; i < 10; i++) {
        objs[i] = xp_pool_get(&pool);
        XP_REQUIRE(objs[i]);
        XP_CHECK_EQ((uintptr_t)objs[i] % 64, 0);
    }
    XP_CHECK(xp_pool_get(&pool) == NULL); /* max_objs reached */
    XP_CHECK_EQ(xp_pool_capacity(&pool), 10);
    xp_pool_put(&pool, objs[3]);
    XP_CHECK(xp_pool_get(&pool) == objs[3]);
    xp_pool_destroy(&pool);
}

static void test_bad_args(void)
{
    xp_pool_t pool;
    XP_CHECK_EQ(xp_pool_init(&pool, "x", 0, 0, 0, 0), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_pool_init(NULL, "x", 8, 0, 0, 0), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_pool_init(&pool, "x", 64, SIZE_MAX / 2, 0, 0), XP_ERR_OVERFLOW);
    /* Default chunk size; destroy of an unused pool. */
    XP_REQUIRE(xp_pool_init(&pool, NULL, 1 << 20, 0, 0, 0) == XP_OK);
    void *big = xp_pool_get(&pool);
    XP_CHECK(big != NULL);
    xp_pool_destroy(&pool);
    xp_pool_destroy(NULL);
}

/* Under AddressSanitizer a free object is poisoned past its link word (a
 * use after put is reported), a taken one is not; elsewhere nothing to see. */
#if XP_POOL_ASAN
#include <sanitizer/asan_interface.h>
static void test_poison(void)
{
    xp_pool_t pool;
    XP_REQUIRE(xp_pool_init(&pool, "poison", 48, 4, 0, 0) == XP_OK);
    char *a = xp_pool_get(&pool), *b = xp_pool_get(&pool);
    XP_REQUIRE(a && b);
    XP_CHECK(!__asan_region_is_poisoned(a, 48));
    XP_CHECK(__asan_address_is_poisoned(b + 48 + sizeof(void *))); /* the next, free */
    memset(a, 1, 48);
    xp_pool_put(&pool, a);
    XP_CHECK(!__asan_address_is_poisoned(a)); /* the link word */
    XP_CHECK(__asan_address_is_poisoned(a + sizeof(void *)));
    XP_CHECK(__asan_address_is_poisoned(a + 47));
    XP_CHECK(xp_pool_get(&pool) == a);
    XP_CHECK(!__asan_region_is_poisoned(a, 48));
    xp_pool_destroy(&pool);
}
#else
static void test_poison(void)
{
}
#endif

int main(void)
{
    test_poison();
    test_basic();
    test_limit_and_align();
    test_bad_args();
    return xp_test_result();
}
