/* The glue to the engine: is an NI handle live, and the hooks through which
 * the engine hands landed XTQ messages (and NI teardown) to this layer. */
#include "xtq/registry.h"

#if XP_XTQ_HAVE_ENGINE
#include "ptl/engine.h"
#include "ptl/ni.h"

int xp_xtq_ni_valid(ptl_handle_ni_t ni)
{
    return xp_ni_from_handle(ni) != NULL;
}

void xp_xtq_install_hooks(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    if (!st)
        return;
    __atomic_store_n(&st->xtq_ni_fini, xp_xtq_ni_fini, __ATOMIC_RELEASE);
    __atomic_store_n(&st->xtq_deliver, xp_xtq_deliver, __ATOMIC_RELEASE);
}
#else
int xp_xtq_ni_valid(ptl_handle_ni_t ni)
{
    return ni != PTL_INVALID_HANDLE;
}

void xp_xtq_install_hooks(void)
{
}
#endif
