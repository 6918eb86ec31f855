/*
 * tests/ptl/progress_pair.h - the start of a two-rank test of the progress
 * thread (mp_progress_handback, mp_progress_memspin, mp_fetch_parked).
 */
#ifndef XP_TESTS_PTL_PROGRESS_PAIR_H
#define XP_TESTS_PTL_PROGRESS_PAIR_H

#include <portals4.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

/* Skips (77) unless the progress thread runs (XP_PROGRESS thread, the
 * default) and the job has two ranks; PtlInit. Returns this rank. */
static inline int xp_test_progress_pair_init(void)
{
    const char *mode = getenv("XP_PROGRESS");
    if (mode && strcmp(mode, "thread") != 0)
        XP_TEST_SKIP("needs the progress thread");
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    return xp_rank();
}

/* A logical NI without matching, and its PT index `index` (in *pt). */
static inline ptl_handle_ni_t xp_test_pair_ni(ptl_pt_index_t index, ptl_pt_index_t *pt)
{
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, index, pt) == PTL_OK);
    return ni;
}

#endif
