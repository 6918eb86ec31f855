/*
 * ptl/eq.h - event queues (PtlEQ*), as the engine sees them.
 *
 * An EQ is a ring of whole ptl_event_t, with room for at least the count
 * given to PtlEQAlloc (rounded up to a power of two). Producers (the packet
 * handler, the initiator paths, any thread) and consumers (PtlEQGet/Wait/Poll
 * in any thread) serialize on the EQ's spin lock (util/atomic.h); an empty
 * queue is detected without it.
 *
 * Full queue: the new event is dropped (never an older one) and the next
 * PtlEQGet/Wait/Poll that returns an event answers PTL_EQ_DROPPED ("at least
 * one event was lost since the previous one you got"), at once rather than
 * with the next event stored after the loss, which never comes while the
 * queue stays full (as in the reference implementation). With
 * PTL_PT_FLOWCTRL the engine checks xp_eq_has_space() before accepting a
 * message, so events are not lost there.
 *
 * Freeing: PtlEQFree invalidates the handle; waiters return PTL_INTERRUPTED.
 * The object stays in its handle slot (handle.h) so a racing producer that
 * resolved it earlier finds a dead queue and drops its event, never freed
 * memory.
 */
#ifndef XP_PTL_EQ_H
#define XP_PTL_EQ_H

#include "portals4.h"
#include "ptl/handle.h"
#include "ptl/ni.h"

typedef struct xp_eq xp_eq_t;

/* The EQ of a live handle, NULL otherwise (PTL_EQ_NONE included). */
xp_eq_t *xp_eq_from_handle(ptl_handle_eq_t handle);

/* Append a copy of *ev and wake waiters. 0 on success; nonzero if the event
 * was dropped (queue full: the drop is reported by a later get; or the EQ
 * was freed). */
int xp_eq_push(xp_eq_t *eq, const ptl_event_t *ev);

/* Like xp_eq_push, but a full queue leaves no trace: returns nonzero and the
 * caller keeps the event (flow control: check-and-push in one step, exact
 * even with several producers, unlike xp_eq_has_space + xp_eq_push). */
int xp_eq_try_push(xp_eq_t *eq, const ptl_event_t *ev);

/* 1 if at least `n` more events fit right now (flow control), else 0. */
int xp_eq_has_space_n(xp_eq_t *eq, unsigned int n);
static inline int xp_eq_has_space(xp_eq_t *eq) { return xp_eq_has_space_n(eq, 1); }

/* Handle and NI of a live EQ. */
ptl_handle_eq_t xp_eq_handle(const xp_eq_t *eq);
xp_ni_t *xp_eq_ni(const xp_eq_t *eq);

/* PtlNIFini (last reference): free every EQ of this NI. */
void xp_eq_ni_fini(xp_ni_t *ni);

/* For handle.c. */
size_t xp_eq_object_size(void);
void xp_eq_destroy_all(xp_handle_table_t *table);

#endif
