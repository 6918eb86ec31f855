/*
 * tests/ptl/test_entries.h - one entry description for both kinds of NI
 * (test_target_onepass, test_get_onepass, conf3_search_persistent): the ME
 * as given on a matching NI, else an LE with the same start, length,
 * counter, uid and options.
 */
#ifndef XP_TEST_ENTRIES_H
#define XP_TEST_ENTRIES_H

#include <portals4.h>
#include <string.h>

#include "xp_test.h"

/* The LE with me's start, length, counter, uid and options. */
static inline ptl_le_t xp_test_as_le(const ptl_me_t *me)
{
    ptl_le_t le;
    memset(&le, 0, sizeof(le));
    le.start = me->start;
    le.length = me->length;
    le.ct_handle = me->ct_handle;
    le.uid = me->uid;
    le.options = me->options;
    return le;
}

static inline ptl_handle_any_t xp_test_append(ptl_handle_ni_t ni, int matching,
                                              ptl_pt_index_t pt, const ptl_me_t *me,
                                              ptl_list_t list)
{
    ptl_handle_any_t h;
    if (matching) {
        XP_REQUIRE(PtlMEAppend(ni, pt, me, list, NULL, &h) == PTL_OK);
        return h;
    }
    ptl_le_t le = xp_test_as_le(me);
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, list, NULL, &h) == PTL_OK);
    return h;
}

#endif
