/* Is an NI handle live? Asked of the engine when it is part of the build. */
#include "xtq/registry.h"

#if XP_XTQ_HAVE_ENGINE
#include "ptl/ni.h"

int xp_xtq_ni_valid(ptl_handle_ni_t ni)
{
    return xp_ni_from_handle(ni) != NULL;
}
#else
int xp_xtq_ni_valid(ptl_handle_ni_t ni)
{
    return ni != PTL_INVALID_HANDLE;
}
#endif
