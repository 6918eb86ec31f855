/*
 * test_direct_close - the close handshake of ptl/direct.h, in one process
 * so that its window is hit millions of times: one thread applies
 * fetch-adds through xp_direct_atomic (the initiator's side, on a route
 * made of this process's own window) while another appends and unlinks the
 * entry over the word. After each PtlLEUnlink returns, the word must not
 * change any more, and every fetch-add reported as applied must be in it.
 * (Without the wait for `inflight` in the close, a fetch-add that saw the
 * descriptor open lands after the unlink: the check fails within a few
 * rounds.)
 *
 * Then the same with puts of BIG bytes through xp_direct_put, alternating
 * two patterns: an access that lasts microseconds, so that a close that
 * did not wait for initiators inside one (their busy word, or `inflight`)
 * sees the buffer change after PtlLEUnlink returned.
 */
#include <portals4.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "ptl/direct.h"
#include "ptl/engine.h"
#include "ptl/ni.h"
#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xportals/shmem.h"

#define PT 5
#define ROUNDS 2000
#define BIG (1024 * 1024)
#define PUT_ROUNDS 200

typedef struct shared {
    xp_tl_route_t route;
    int slot;
    int started, stop;
    uint64_t applied; /* fetch-adds xp_direct_atomic reported as done */
} shared_t;

static int always_quiet(xp_tl_t *tl, int rank)
{
    (void)tl;
    (void)rank;
    return 1;
}

static void *hammer(void *arg)
{
    shared_t *s = arg;
    uint64_t one = 1, old, n = 0;
    unsigned flags;
    __atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
        if (xp_direct_atomic(&s->route, 0, s->slot, PT, xp_ptl_state()->uid, 0, PTL_SUM,
                             PTL_UINT64_T, &one, NULL, 8, 1, &old, &flags))
            __atomic_store_n(&s->applied, ++n, __ATOMIC_RELEASE);
    return NULL;
}

/* Puts of BIG bytes, patterns 0x11 and 0x22 in turn, until told to stop. */
static void *hammer_put(void *arg)
{
    shared_t *s = arg;
    static unsigned char src[2][BIG];
    uint64_t n = 0;
    unsigned flags;
    memset(src[0], 0x11, BIG);
    memset(src[1], 0x22, BIG);
    __atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
        if (xp_direct_put(&s->route, 0, s->slot, PT, xp_ptl_state()->uid, 0, src[n & 1], BIG,
                          &flags))
            __atomic_store_n(&s->applied, ++n, __ATOMIC_RELEASE);
    return NULL;
}

/* The put phase: after each PtlLEUnlink the buffer must stay as it is. */
static void put_phase(ptl_handle_ni_t nih, shared_t *s)
{
    static unsigned char snap[BIG];
    /* (The hammer's copies run front to back or back to front; both ends
     * are the same pattern once a copy is whole.) */
    unsigned char *buf = xp_shmalloc(BIG);
    pthread_t t;
    XP_REQUIRE(buf != NULL);
    memset(buf, 0, BIG);
    s->started = s->stop = 0;
    s->applied = 0;
    XP_REQUIRE(pthread_create(&t, NULL, hammer_put, s) == 0);
    while (!__atomic_load_n(&s->started, __ATOMIC_ACQUIRE))
        ;
    ptl_le_t le = { .start = buf, .length = BIG, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_EVENT_COMM_DISABLE |
                               PTL_LE_EVENT_LINK_DISABLE };
    int moved = 0;
    for (int r = 0; r < PUT_ROUNDS && !moved; r++) {
        ptl_handle_le_t h;
        uint64_t before = __atomic_load_n(&s->applied, __ATOMIC_ACQUIRE);
        XP_REQUIRE(PtlLEAppend(nih, PT, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
        /* A few puts into this opening: the first registers (the locked
         * form), the next ones take the busy word. */
        uint64_t t1 = xp_test_now_ns();
        while (__atomic_load_n(&s->applied, __ATOMIC_ACQUIRE) < before + 3 &&
               xp_test_now_ns() - t1 < 100000000)
            ;
        for (volatile int i = 0; i < (r % 7) * 3000; i++) /* and somewhere into the next */
            ;
        XP_REQUIRE(PtlLEUnlink(h) == PTL_OK);
        /* Whole puts only: a copy still running has written one end of the
         * buffer and not the other. */
        unsigned char first = __atomic_load_n(&buf[0], __ATOMIC_RELAXED);
        unsigned char last = __atomic_load_n(&buf[BIG - 1], __ATOMIC_RELAXED);
        memcpy(snap, buf, BIG);
        uint64_t t0 = xp_test_now_ns();
        while (xp_test_now_ns() - t0 < 300000) /* well past one copy of BIG bytes */
            ;
        if (first != last || memcmp(snap, buf, BIG) != 0) {
            fprintf(stderr, "put round %d: a put went on after PtlLEUnlink returned\n", r);
            moved = 1;
        }
    }
    XP_CHECK(!moved);
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    XP_REQUIRE(pthread_join(t, NULL) == 0);
    XP_CHECK(s->applied > 0); /* the path was taken at all */
    xp_shfree(buf);
}

int main(void)
{
    ptl_handle_ni_t nih;
    ptl_pt_index_t got;
    pthread_t t;
    shared_t s;
    memset(&s, 0, sizeof s);
    XP_REQUIRE(PtlInit() == PTL_OK);
    const xp_tl_window_t *w = xp_tl_own_window();
    if (!w || !xp_config()->shm_direct)
        XP_TEST_SKIP("no shared heap, or XP_SHM_DIRECT=0");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &nih) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(nih, 0, PTL_EQ_NONE, PT, &got) == PTL_OK);
    uint64_t *word = xp_shmalloc(64);
    XP_REQUIRE(word != NULL);
    *word = 0;
    s.route.window = w;
    s.route.quiet = always_quiet;
    s.slot = xp_ni_from_handle(nih)->slot;
    XP_REQUIRE(pthread_create(&t, NULL, hammer, &s) == 0);
    while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE))
        ;

    ptl_le_t le = { .start = word, .length = 64, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_COMM_DISABLE |
                               PTL_LE_EVENT_LINK_DISABLE };
    int moved = 0;
    for (int r = 0; r < ROUNDS && !moved; r++) {
        ptl_handle_le_t h;
        XP_REQUIRE(PtlLEAppend(nih, PT, &le, PTL_PRIORITY_LIST, NULL, &h) == PTL_OK);
        /* The first opening stays until the hammer got through once (up to
         * 2 s): on a loaded machine its thread may get no CPU while the
         * rounds run, and then the path would never be taken at all. */
        uint64_t t0 = xp_test_now_ns();
        while (r == 0 && !__atomic_load_n(&s.applied, __ATOMIC_ACQUIRE) &&
               xp_test_now_ns() - t0 < 2000000000ull)
            ;
        for (volatile int i = 0; i < 20000; i++)
            ;
        XP_REQUIRE(PtlLEUnlink(h) == PTL_OK);
        uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        for (volatile int i = 0; i < 2000; i++)
            ;
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != v) {
            fprintf(stderr, "round %d: the word moved after PtlLEUnlink returned\n", r);
            moved = 1;
        }
    }
    XP_CHECK(!moved);
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
    XP_REQUIRE(pthread_join(t, NULL) == 0);
    XP_CHECK_EQ(*word, s.applied);
    XP_CHECK(s.applied > 0); /* the path was taken at all */
    xp_shfree(word);
    put_phase(nih, &s);
    XP_REQUIRE(PtlPTFree(nih, PT) == PTL_OK);
    PtlNIFini(nih);
    PtlFini();
    return xp_test_result();
}
