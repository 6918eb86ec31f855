/* util/tsan.h - causality between processes, told to ThreadSanitizer.
 *
 * TSan sees the synchronisation of the threads of one process only. When
 * the main thread writes a buffer, enters xp_barrier, and a peer that left
 * the barrier puts into that buffer, the progress thread's write is ordered
 * after the main thread's by a chain through the other process (barrier
 * message, then the peer's packet in our inbox), which TSan cannot see: it
 * reports a race that is not one. The same holds for a packet a peer sends
 * in answer to ours (a bulk transfer the target asks us to help with). So
 * the process's causality token is "released" whenever a message leaves
 * (xp_barrier, xp_tl_send) and "acquired" whenever the transport layer polls
 * for arrivals (xp_tl_progress, before the transports copy anything). This
 * over-approximates: a packet that was not caused by our message is also
 * taken as ordered after it, which can hide a race between a write a thread
 * made before it sent something and the progress thread's later work. A
 * write made after a thread's last send, or never followed by one, is still
 * checked. Everything here compiles to nothing without -fsanitize=thread. */
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
