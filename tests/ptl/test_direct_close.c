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
        n += (uint64_t)xp_direct_atomic(&s->route, 0, s->slot, PT, xp_ptl_state()->uid, 0, PTL_SUM,
                                        PTL_UINT64_T, &one, NULL, 8, 1, &old, &flags);
    __atomic_store_n(&s->applied, n, __ATOMIC_RELEASE);
    return NULL;
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
    XP_REQUIRE(PtlPTFree(nih, PT) == PTL_OK);
    PtlNIFini(nih);
    PtlFini();
    return xp_test_result();
}
