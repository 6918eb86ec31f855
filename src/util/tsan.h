/* util/tsan.h - causality between processes, told to ThreadSanitizer.
 *
 * TSan sees the synchronisation of the threads of one process only. When
 * the main thread writes a buffer, enters xp_barrier, and a peer that left
 * the barrier puts into that buffer, the progress thread's write is ordered
 * after the main thread's by a chain through the other process (barrier
 * message, then the peer's packet in our inbox), which TSan cannot see: it
 * reports a race that is not one. The runtime therefore "releases" the
 * process's causality token when a message leaves through the bootstrap
 * (xp_barrier), and the transport layer "acquires" it before it hands an
 * arrived packet to the engine. This over-approximates (a packet the peer
 * sent before it saw our barrier is also taken as ordered after it) but
 * only for what a thread did before it entered a barrier; races between the
 * threads of one process around the engine's own state stay visible.
 * Everything here compiles to nothing without -fsanitize=thread. */
#ifndef XP_UTIL_TSAN_H
#define XP_UTIL_TSAN_H

#include "util/context.h"

#if defined(__SANITIZE_THREAD__)
#define XP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XP_TSAN 1
#endif
#endif
#ifndef XP_TSAN
#define XP_TSAN 0
#endif

#if XP_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* What this thread did so far may be what another process reacts to. */
static inline void xp_tsan_message_out(void)
{
#if XP_TSAN
    __tsan_release(&xp_ctx);
#endif
}

/* A message from another process: it may react to any message_out. */
static inline void xp_tsan_message_in(void)
{
#if XP_TSAN
    __tsan_acquire(&xp_ctx);
#endif
}

#endif
