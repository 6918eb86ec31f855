/*
 * util/copy.h - the copy that moves message data (ring cells, entries,
 * MDs, the shared heap).
 *
 * glibc 2.36's memcpy copies from 2112 bytes (its x86_rep_movsb_threshold
 * here) up to the L2 size with `rep movsb`. On the AMD EPYC (Zen 4) VMs this
 * project is measured on, that instruction is 10-27 times slower when the
 * destination lies 1-15 bytes further into its 64-byte line than the
 * source ((dst - src) mod 64 in 1..15), and 2-2.5 times slower for 16..31:
 * in one thread, in cache, 4 KiB in 1.1 us instead of 42-45 ns, 256 KiB in
 * 78 us instead of 5.5 (docs/performance-notes.md, round 28). Message
 * alignments are the application's and the wire header's, so half of them
 * would pay. Between XP_COPY_LOOP_MIN and XP_COPY_LOOP_MAX, xp_copy sends
 * those relative alignments to a vector loop (unaligned 32-byte loads,
 * aligned 32-byte stores: 4 KiB in 42-59 ns at every alignment) and every
 * other copy to memcpy, whose `rep movsb` was as fast in one thread and
 * not slower (once 2x faster) for copies between processes. An Intel Xeon
 * showed no such penalty; the loop is as fast as glibc there too.
 */
#ifndef XP_UTIL_COPY_H
#define XP_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XP_COPY_LOOP_MIN 2048u
#define XP_COPY_LOOP_MAX (1u << 20)

/* The vector loop (copy.c): any n (meant for n in [XP_COPY_LOOP_MIN,
 * XP_COPY_LOOP_MAX)), dst and src not overlapping; memcpy where the CPU
 * lacks AVX2. */
void xp_copy_loop(void *dst, const void *src, size_t n);

/* How many bytes further into its 64-byte line dst lies than src: the
 * relative alignment `rep movsb` is slow at (1..31 here; the kernel's copy
 * too, shm_split.c). */
static inline unsigned xp_copy_rel(const void *dst, const void *src)
{
    return (unsigned)(((uintptr_t)dst - (uintptr_t)src) & 63);
}

/* memcpy(dst, src, n) for message data: dst and src do not overlap. The
 * test costs a subtraction and two compares; the loop runs where `rep
 * movsb` would be slow: xp_copy_rel in 1..31. */
static inline void xp_copy(void *dst, const void *src, size_t n)
{
    if (n - XP_COPY_LOOP_MIN < (size_t)(XP_COPY_LOOP_MAX - XP_COPY_LOOP_MIN) &&
        xp_copy_rel(dst, src) - 1 < 31)
        xp_copy_loop(dst, src, n);
    else
        memcpy(dst, src, n);
}

#endif
