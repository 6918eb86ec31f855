/*
 * header_c99.c - include/portals4.h needs nothing beyond ISO C99: compiled
 * (not run) with -std=c99 -pedantic-errors by the header_c99 CTest test.
 */
#include <portals4.h>

int xp_header_c99_probe(void);

static int seen;
static void sink(const volatile void *p) { seen += p != 0; }

int xp_header_c99_probe(void)
{
#define XP_SIG_SINK(p) sink((p) ? (const volatile void *)&seen : 0)
#include "header_sigs.inc"
#undef XP_SIG_SINK
    ptl_le_t le = { 0, 0, PTL_CT_NONE, PTL_UID_ANY, PTL_LE_OP_PUT };
    ptl_md_t md = { 0, 0, PTL_MD_EVENT_CT_SEND, PTL_EQ_NONE, PTL_CT_NONE };
    return seen && le.options != 0 && md.options != 0 ? PTL_OK : PTL_FAIL;
}
