/*
 * header_cxx.cpp - include/portals4.h is valid C++ (extern "C" linkage, no C-only
 * constructs) and declares every function with the prototype clients use: in
 * C++ a function converts only to a pointer of exactly its own type.
 * Compiled (not run) by the header_cxx CTest test.
 */
#include <portals4.h>

extern "C" int xp_header_cxx_probe(void);

static void sink(const volatile void *) {}

int xp_header_cxx_probe(void)
{
#define XP_SIG_SINK(p) sink(reinterpret_cast<const volatile void *>(p))
#include "header_sigs.inc"
#undef XP_SIG_SINK
    ptl_me_t me = ptl_me_t();
    me.match_id.phys.nid = PTL_NID_ANY;
    me.match_id.phys.pid = PTL_PID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_IOVEC;
    ptl_event_t ev = ptl_event_t();
    ev.type = PTL_EVENT_PUT;
    ev.ni_fail_type = PTL_NI_OK;
    ev.atomic_operation = PTL_SUM;
    ev.atomic_type = PTL_DOUBLE;
    ev.ptl_list = PTL_OVERFLOW_LIST;
    return me.options != 0 && ev.type == PTL_EVENT_PUT ? PTL_OK : PTL_FAIL;
}
