/* xtq/registry.h - lookup tables per NI and the hooks the engine calls. */
#ifndef XP_XTQ_REGISTRY_H
#define XP_XTQ_REGISTRY_H

#include <stddef.h>
#include "portals4.h"
#include "xtq/xtq.h"

/* The tables of an NI (create = 1: make them on first use). */
xp_xtq_tables_t *xp_xtq_tables_of(ptl_handle_ni_t ni, int create);

/* ENGINE HOOK (target side): a put flagged XTQ has written its whole message
 * (command packet, kernel arguments, payload; not truncated) at `landed`
 * in the matched entry. Rewrites and enqueues; returns PTL_NI_OK or the
 * failure kind the engine must report in the initiator's ACK event. */
ptl_ni_fail_t xp_xtq_deliver(ptl_handle_ni_t ni, void *landed, size_t landed_len);
/* ENGINE HOOK: the NI's last PtlNIFini: drop its tables. */
void xp_xtq_ni_fini(ptl_handle_ni_t ni);

/* Whether `ni` names a live NI (ni_check.c: through the engine when it is
 * built, else any handle but PTL_INVALID_HANDLE). */
int xp_xtq_ni_valid(ptl_handle_ni_t ni);
/* Give the engine xp_xtq_deliver and xp_xtq_ni_fini (idempotent; called
 * whenever a table is created). */
void xp_xtq_install_hooks(void);

#endif
