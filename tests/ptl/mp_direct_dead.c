/*
 * mp_direct_dead - a peer that dies inside a direct access (ptl/direct.h)
 * must not hang the target's close for ever.
 *
 * Rank 0 publishes an LE over memory of its shared heap. Rank 1 enters the
 * descriptor as an initiator does (its in-flight count + 1, through its
 * mapping of rank 0's heap) and exits at once, never leaving it. Rank 0's
 * PtlLEUnlink waits for that count, finds after its patience (1 s) that a
 * peer is dead, and returns; it must do so within the test's limit, and
 * PtlNIFini and PtlFini must return too. (Without the liveness check the
 * unlink never returns and xprun kills the job.)
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ptl/direct.h"
#include "ptl/engine.h"
#include "ptl/ni.h"
#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xportals/shmem.h"
#include "xportals/xp.h"

#define PT 7
#define LIMIT_NS 10000000000ull

int main(void)
{
    ptl_handle_ni_t nih;
    ptl_pt_index_t got;
    XP_REQUIRE(PtlInit() == PTL_OK);
    int rank = xp_rank();
    if (xp_size() != 2)
        XP_TEST_SKIP("needs 2 ranks");
    if (!xp_config()->shm_direct || xp_config()->shm_heap_size == 0)
        XP_TEST_SKIP("no direct path (XP_SHM_DIRECT=0 or no shared heap)");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &nih) == PTL_OK);
    int slot = xp_ni_from_handle(nih)->slot;
    ptl_handle_le_t le;
    if (rank == 0) {
        uint64_t *word = xp_shmalloc(64);
        XP_REQUIRE(word != NULL);
        XP_REQUIRE(PtlPTAlloc(nih, 0, PTL_EQ_NONE, PT, &got) == PTL_OK);
        ptl_le_t d = { .start = word, .length = 64, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                       .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_COMM_DISABLE |
                                  PTL_LE_EVENT_LINK_DISABLE };
        XP_REQUIRE(PtlLEAppend(nih, PT, &d, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (rank == 1) {
        const xp_tl_route_t *r = xp_tl_route(0);
        XP_REQUIRE(r && r->window);
        XP_REQUIRE(xp_direct_maybe(r, slot, PT)); /* published */
        xp_direct_desc_t *d = xp_direct_desc(r->window->meta, slot, PT);
        __atomic_fetch_add(&d->inflight, 1, __ATOMIC_SEQ_CST);
        _exit(0); /* inside the access, for good */
    }
    const xp_tl_window_t *w = xp_ptl_state()->own_window;
    XP_REQUIRE(w != NULL);
    xp_direct_desc_t *d = xp_direct_desc(w->meta, slot, PT);
    uint64_t t0 = xp_test_now_ns();
    while (__atomic_load_n(&d->inflight, __ATOMIC_ACQUIRE) == 0)
        XP_REQUIRE(xp_test_now_ns() - t0 < LIMIT_NS);
    t0 = xp_test_now_ns();
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    uint64_t waited = xp_test_now_ns() - t0;
    fprintf(stderr, "rank 0: PtlLEUnlink returned after %.3f s\n", (double)waited * 1e-9);
    XP_CHECK(waited < LIMIT_NS);
    XP_CHECK(waited > 500000000ull); /* it did wait for the peer first */
    XP_CHECK_EQ(PtlPTFree(nih, PT), PTL_OK);
    PtlNIFini(nih);
    PtlFini();
    return xp_test_result();
}
