/* util/hash: random operations checked against a plain reference array. */
#include <stdint.h>

#include "util/clock.h"
#include "util/hash.h"
#include "xp_test.h"

#define NKEYS 4096

typedef struct ref {
    uint64_t key;
    int present;
    void *value;
} ref_t;

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void check_against(const xp_hash_t *h, const ref_t *ref, size_t n)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i++) {
        void **v = xp_hash_find(h, ref[i].key);
        if (ref[i].present) {
            present++;
            XP_CHECK(v && *v == ref[i].value);
        } else {
            XP_CHECK(v == NULL);
        }
    }
    XP_CHECK_EQ(xp_hash_count(h), present);
}

static void test_random_ops(void)
{
    static ref_t ref[NKEYS];
    xp_hash_t h;
    XP_REQUIRE(xp_hash_init(&h, 0) == XP_OK);
    /* Keys: a mix of small consecutive ids, 0, UINT64_MAX and random values,
     * some sharing their low bits so probe runs collide. */
    for (size_t i = 0; i < NKEYS; i++) {
        if (i % 4 == 0)
            ref[i].key = i;
        else if (i % 4 == 1)
            ref[i].key = (uint64_t)i << 40;
        else
            ref[i].key = rnd();
    }
    ref[5].key = UINT64_MAX;
    for (int round = 0; round < 200000; round++) {
        size_t i = rnd() % NKEYS;
        void *val = (void *)(uintptr_t)(rnd() | 1);
        switch (rnd() % 4) {
        case 0:
        case 1: {
            xp_status_t st = xp_hash_insert(&h, ref[i].key, val);
            XP_CHECK_EQ(st, ref[i].present ? XP_ERR_EXISTS : XP_OK);
            if (!ref[i].present)
                ref[i].present = 1, ref[i].value = val;
            break;
        }
        case 2: {
            void *out = NULL;
            xp_status_t st = xp_hash_remove(&h, ref[i].key, &out);
            XP_CHECK_EQ(st, ref[i].present ? XP_OK : XP_ERR_NOT_FOUND);
            if (ref[i].present)
                XP_CHECK(out == ref[i].value);
            ref[i].present = 0;
            break;
        }
        case 3:
            XP_CHECK_EQ(xp_hash_put(&h, ref[i].key, val), XP_OK);
            ref[i].present = 1, ref[i].value = val;
            break;
        }
        if (round % 20000 == 0)
            check_against(&h, ref, NKEYS);
    }
    check_against(&h, ref, NKEYS);

    /* Iteration visits each entry exactly once. */
    size_t it = 0, seen = 0;
    uint64_t key;
    void *value;
    while (xp_hash_next(&h, &it, &key, &value)) {
        seen++;
        int found = 0;
        for (size_t i = 0; i < NKEYS; i++)
            if (ref[i].present && ref[i].key == key)
                found = ref[i].value == value;
        XP_CHECK(found);
    }
    XP_CHECK_EQ(seen, xp_hash_count(&h));

    xp_hash_clear(&h);
    XP_CHECK_EQ(xp_hash_count(&h), 0);
    XP_CHECK(xp_hash_get(&h, ref[0].key) == NULL);
    xp_hash_destroy(&h);
}

static void test_null_values_and_growth(void)
{
    xp_hash_t h;
    XP_REQUIRE(xp_hash_init(&h, 1000) == XP_OK);
    size_t cap = h.mask + 1;
    for (uint64_t k = 0; k < 1000; k++)
        XP_CHECK_EQ(xp_hash_insert(&h, k, NULL), XP_OK);
    XP_CHECK_EQ(h.mask + 1, cap); /* sized up front: no growth */
    XP_CHECK(xp_hash_find(&h, 999) != NULL);
    XP_CHECK(xp_hash_find(&h, 1000) == NULL);
    for (uint64_t k = 1000; k < 100000; k++)
        XP_CHECK_EQ(xp_hash_insert(&h, k, (void *)(uintptr_t)k), XP_OK);
    XP_CHECK(h.count * 10 <= (h.mask + 1) * 7); /* load factor stays <= 0.7 */
    for (uint64_t k = 0; k < 100000; k += 2)
        XP_CHECK_EQ(xp_hash_remove(&h, k, NULL), XP_OK);
    for (uint64_t k = 1; k < 100000; k += 2)
        XP_CHECK(xp_hash_get(&h, k) == (k < 1000 ? NULL : (void *)(uintptr_t)k));
    XP_CHECK_EQ(xp_hash_count(&h), 50000);
    xp_hash_destroy(&h);
}

static void test_mixers(void)
{
    XP_CHECK(xp_hash64(1) != xp_hash64(2));
    XP_CHECK(xp_hash64(0) != xp_hash64(1));
    XP_CHECK(xp_hash_combine(xp_hash64(1), 2) != xp_hash_combine(xp_hash64(2), 1));
    /* Avalanche, roughly: flipping one input bit flips about half the output bits. */
    int total = 0;
    for (int b = 0; b < 64; b++)
        total += __builtin_popcountll(xp_hash64(12345) ^ xp_hash64(12345 ^ (1ull << b)));
    XP_CHECK(total > 64 * 24 && total < 64 * 40);
}

/* Not a benchmark: a sanity bound that lookups stay O(1) (prints the figure). */
static void time_lookups(uint64_t n, int reps)
{
    xp_hash_t h;
    XP_REQUIRE(xp_hash_init(&h, 0) == XP_OK);
    for (uint64_t k = 0; k < n; k++)
        XP_REQUIRE(xp_hash_insert(&h, xp_hash_combine(k, 7), (void *)(uintptr_t)(k + 1)) == XP_OK);
    uint64_t t0 = xp_time_ns(), sum = 0;
    for (int r = 0; r < reps; r++)
        for (uint64_t k = 0; k < n; k++)
            sum += (uintptr_t)xp_hash_get(&h, xp_hash_combine(k, 7));
    uint64_t t1 = xp_time_ns();
    XP_CHECK_EQ(sum, (uint64_t)reps * n * (n + 1) / 2);
    fprintf(stderr, "hash: table of %llu entries: %.1f ns per hit (key hashing included)\n",
            (unsigned long long)n, (double)(t1 - t0) / (double)n / reps);
    xp_hash_destroy(&h);
}

int main(void)
{
    test_mixers();
    test_random_ops();
    test_null_values_and_growth();
    time_lookups(1024, 1000);
    time_lookups(1 << 20, 1);
    return xp_test_result();
}
