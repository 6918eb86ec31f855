/*
 * test_handle - handle tables: encoding, lookup of live / stale / foreign /
 * constant handles, growth over chunks, limits, FIFO reuse, stable objects,
 * and lookups racing with alloc/free.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ptl/handle.h"
#include "xp_test.h"

static void test_encoding(void)
{
    ptl_handle_any_t h = xp_handle_make(XP_HANDLE_CT, 13, 5, 1234);

    XP_CHECK_EQ(xp_handle_type_of(h), XP_HANDLE_CT);
    XP_CHECK_EQ(xp_handle_ni_of(h), 13);
    XP_CHECK_EQ(xp_handle_index_of(h), 1234);
    XP_CHECK_EQ(PtlHandleIsEqual(h, h), 1);
    XP_CHECK_EQ(PtlHandleIsEqual(h, h + 1), 0);
    XP_CHECK_EQ(PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE), 1);
    XP_CHECK_EQ(PtlHandleIsEqual(PTL_EQ_NONE, PTL_CT_NONE), 0);
}

static void test_basic(void)
{
    xp_handle_table_t t, other;
    int objs[8];
    ptl_handle_any_t h[8], h2;

    XP_REQUIRE(xp_handle_table_init(&t, XP_HANDLE_MD, 0, 0) == XP_OK);
    XP_REQUIRE(xp_handle_table_init(&other, XP_HANDLE_ME, 0, 0) == XP_OK);
    XP_CHECK_EQ(xp_handle_table_init(&other, XP_HANDLE_NONE, 0, 0), XP_ERR_INVALID);
    XP_REQUIRE(xp_handle_table_init(&other, XP_HANDLE_ME, 0, 0) == XP_OK);
    for (int i = 0; i < 8; i++) {
        XP_CHECK_EQ(xp_handle_alloc(&t, (unsigned)i, &objs[i], &h[i]), XP_OK);
        XP_CHECK_EQ(xp_handle_type_of(h[i]), XP_HANDLE_MD);
        XP_CHECK_EQ(xp_handle_ni_of(h[i]), i);
        XP_CHECK(h[i] != 0 && h[i] != PTL_INVALID_HANDLE);
    }
    for (int i = 0; i < 8; i++)
        XP_CHECK(xp_handle_lookup(&t, h[i]) == &objs[i]);
    XP_CHECK_EQ(xp_handle_count(&t), 8);
    /* Wrong type, constants, junk. */
    XP_CHECK(xp_handle_lookup(&other, h[0]) == NULL);
    XP_CHECK(xp_handle_lookup(&t, PTL_INVALID_HANDLE) == NULL);
    XP_CHECK(xp_handle_lookup(&t, PTL_EQ_NONE) == NULL);
    XP_CHECK(xp_handle_lookup(&t, PTL_CT_NONE) == NULL);
    XP_CHECK(xp_handle_lookup(&t, 0) == NULL);
    XP_CHECK(xp_handle_lookup(&t, xp_handle_make(XP_HANDLE_MD, 0, 0, 100000)) == NULL);
    XP_CHECK(xp_handle_lookup(&t, h[0] ^ (1u << XP_HANDLE_GEN_SHIFT)) == NULL);
    XP_CHECK_EQ(xp_handle_alloc(&t, XP_HANDLE_MAX_NIS, &objs[0], &h2), XP_ERR_INVALID);
    /* Free, stale, double free. */
    XP_CHECK_EQ(xp_handle_free(&t, h[3]), XP_OK);
    XP_CHECK(xp_handle_lookup(&t, h[3]) == NULL);
    XP_CHECK_EQ(xp_handle_free(&t, h[3]), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_handle_free(&other, h[4]), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_handle_free(&t, PTL_INVALID_HANDLE), XP_ERR_INVALID);
    /* Reuse gives a different handle; the stale one stays dead. */
    XP_CHECK_EQ(xp_handle_alloc(&t, 3, &objs[3], &h2), XP_OK);
    XP_CHECK(h2 != h[3]);
    XP_CHECK(xp_handle_lookup(&t, h[3]) == NULL);
    XP_CHECK(xp_handle_lookup(&t, h2) == &objs[3]);
    /* Collect by NI. */
    {
        ptl_handle_any_t out[16];
        XP_CHECK_EQ(xp_handle_collect(&t, 3, out, 16), 1);
        XP_CHECK_EQ(out[0], h2);
        XP_CHECK_EQ(xp_handle_collect(&t, -1, out, 2), 8);
    }
    xp_handle_table_fini(&t);
    xp_handle_table_fini(&other);
}

static void test_limits_and_growth(void)
{
    xp_handle_table_t t;
    enum { N = 5000 };
    static ptl_handle_any_t h[N];
    static int objs[N];
    ptl_handle_any_t extra;

    XP_REQUIRE(xp_handle_table_init(&t, XP_HANDLE_LE, N, 0) == XP_OK);
    for (int i = 0; i < N; i++)
        XP_REQUIRE(xp_handle_alloc(&t, 0, &objs[i], &h[i]) == XP_OK);
    XP_CHECK_EQ(xp_handle_alloc(&t, 0, &objs[0], &extra), XP_ERR_NO_RESOURCE);
    for (int i = 0; i < N; i++)
        XP_CHECK(xp_handle_lookup(&t, h[i]) == &objs[i]);
    /* FIFO reuse: after freeing 0..9, the next alloc takes slot of h[0]. */
    for (int i = 0; i < 10; i++)
        XP_CHECK_EQ(xp_handle_free(&t, h[i]), XP_OK);
    XP_CHECK_EQ(xp_handle_alloc(&t, 0, &objs[0], &extra), XP_OK);
    XP_CHECK_EQ(xp_handle_index_of(extra), xp_handle_index_of(h[0]));
    xp_handle_table_fini(&t);
}

/* A slot's generation cycles: 128 reuses of one slot come back to the same
 * handle value only after the full cycle. */
static void test_generations(void)
{
    xp_handle_table_t t;
    int obj;
    ptl_handle_any_t first, h;

    XP_REQUIRE(xp_handle_table_init(&t, XP_HANDLE_ME, 1, 0) == XP_OK);
    XP_REQUIRE(xp_handle_alloc(&t, 0, &obj, &first) == XP_OK);
    h = first;
    for (unsigned i = 1; i <= XP_HANDLE_GEN_MASK; i++) {
        XP_CHECK_EQ(xp_handle_free(&t, h), XP_OK);
        XP_CHECK_EQ(xp_handle_alloc(&t, 0, &obj, &h), XP_OK);
        XP_CHECK(h != first);
    }
    xp_handle_table_fini(&t);
}

/* xp_handle_peek: fn runs, under the table lock, only for a live handle. */
static void read_int(void *obj, void *arg)
{
    *(int *)arg = *(int *)obj;
}

static void test_peek(void)
{
    xp_handle_table_t t;
    int obj = 42, seen = 0;
    ptl_handle_any_t h;

    XP_REQUIRE(xp_handle_table_init(&t, XP_HANDLE_ME, 0, 0) == XP_OK);
    XP_REQUIRE(xp_handle_alloc(&t, 2, &obj, &h) == XP_OK);
    XP_CHECK_EQ(xp_handle_peek(&t, h, read_int, &seen), 1);
    XP_CHECK_EQ(seen, 42);
    seen = 0;
    XP_CHECK_EQ(xp_handle_peek(&t, h ^ 1, read_int, &seen), 0); /* another index */
    XP_CHECK_EQ(xp_handle_peek(&t, PTL_INVALID_HANDLE, read_int, &seen), 0);
    XP_CHECK_EQ(xp_handle_free(&t, h), XP_OK);
    XP_CHECK_EQ(xp_handle_peek(&t, h, read_int, &seen), 0); /* stale */
    XP_CHECK_EQ(seen, 0);
    xp_handle_table_fini(&t);
}

static void test_stable(void)
{
    xp_handle_table_t t;
    void *a, *b;
    ptl_handle_any_t ha, hb;

    XP_REQUIRE(xp_handle_table_init(&t, XP_HANDLE_CT, 0, 64) == XP_OK);
    XP_CHECK_EQ(xp_handle_alloc(&t, 0, &a, &ha), XP_ERR_INVALID);
    XP_REQUIRE(xp_handle_alloc_stable(&t, 1, &a, &ha) == XP_OK);
    XP_CHECK(xp_handle_lookup(&t, ha) == a);
    ((char *)a)[0] = 42;
    XP_CHECK_EQ(xp_handle_free(&t, ha), XP_OK);
    XP_CHECK(xp_handle_lookup(&t, ha) == NULL);
    XP_CHECK_EQ(((char *)a)[0], 42); /* memory kept */
    XP_REQUIRE(xp_handle_alloc_stable(&t, 1, &b, &hb) == XP_OK);
    XP_CHECK(a == b);               /* same slot, same object */
    XP_CHECK(ha != hb);
    xp_handle_table_fini(&t);
}

/* Readers resolve handles while writers alloc and free: a lookup returns
 * either NULL or the object the handle was given to. */
typedef struct race {
    xp_handle_table_t t;
    int objs[64];
    ptl_handle_any_t handles[64];
    int stop;
    long bad;
} race_t;

static void *race_reader(void *arg)
{
    race_t *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < 64; i++) {
            ptl_handle_any_t h = __atomic_load_n(&r->handles[i], __ATOMIC_ACQUIRE);
            int *o = xp_handle_lookup(&r->t, h);
            if (o && o != &r->objs[i])
                __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void test_race(void)
{
    race_t *r = calloc(1, sizeof(*r));
    pthread_t th[2];

    XP_REQUIRE(r && xp_handle_table_init(&r->t, XP_HANDLE_MD, 0, 0) == XP_OK);
    for (int i = 0; i < 64; i++)
        XP_REQUIRE(xp_handle_alloc(&r->t, 0, &r->objs[i], &r->handles[i]) == XP_OK);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, race_reader, r);
    for (int k = 0; k < 20000; k++) {
        int i = k % 64;
        ptl_handle_any_t h;
        XP_CHECK_EQ(xp_handle_free(&r->t, r->handles[i]), XP_OK);
        XP_CHECK_EQ(xp_handle_alloc(&r->t, 0, &r->objs[i], &h), XP_OK);
        __atomic_store_n(&r->handles[i], h, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    XP_CHECK_EQ(r->bad, 0);
    xp_handle_table_fini(&r->t);
    free(r);
}

int main(void)
{
    test_encoding();
    test_basic();
    test_limits_and_growth();
    test_generations();
    test_stable();
    test_peek();
    test_race();
    return xp_test_result();
}
