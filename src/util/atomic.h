/*
 * util/atomic.h - atomics, CPU pause, and spin-then-futex waiting.
 *
 * Waiters spin briefly (XP_SPIN_COUNT polls with a pause) because a reply on
 * the same machine often arrives within a microsecond, then sleep on a futex
 * so an idle process uses no CPU and oversubscribed jobs still run. The futex
 * word is 32 bits; it is shared between processes when it lives in shared
 * memory (FUTEX_WAIT without the PRIVATE flag).
 */
#ifndef XP_UTIL_ATOMIC_H
#define XP_UTIL_ATOMIC_H

#include <stdint.h>
#include "xportals/status.h"

#define XP_CACHE_LINE 64
#define XP_CACHE_ALIGNED __attribute__((aligned(XP_CACHE_LINE)))

#define xp_load_acquire(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define xp_load_relaxed(p)      __atomic_load_n((p), __ATOMIC_RELAXED)
#define xp_store_release(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define xp_store_relaxed(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define xp_fetch_add(p, v)      __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define xp_fetch_sub(p, v)      __atomic_fetch_sub((p), (v), __ATOMIC_ACQ_REL)
#define xp_exchange(p, v)       __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define xp_cas(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define xp_fence()              __atomic_thread_fence(__ATOMIC_SEQ_CST)

static inline void xp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A lock for sections of a few dozen instructions taken on every message
 * (an event queue's push and take): one exchange to take it and a plain
 * release store to give it back, where a pthread mutex spends a locked
 * instruction on each (~20-30 ns apiece on the VMs measured). A waiter that
 * keeps finding it held yields its CPU (the holder may be preempted: more
 * threads than CPUs). Zero-initialised = free. */
typedef struct xp_spinlock {
    int held;
} xp_spinlock_t;

void xp_spin_lock_slow(xp_spinlock_t *l);

static inline void xp_spin_lock(xp_spinlock_t *l)
{
    if (__builtin_expect(!__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE), 1))
        return;
    xp_spin_lock_slow(l);
}

static inline void xp_spin_unlock(xp_spinlock_t *l)
{
    __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

/* Cache hints for a line handed from one core to another (a ring cell).
 * xp_prefetch_write asks for the line in exclusive state ahead of the
 * stores that will fill it: its fetch from the reader's cache then
 * overlaps the writes before it instead of stalling the first store.
 * xp_cache_demote, after the line is published, pushes it out of the
 * writer's private caches to the shared one, where the reader's load finds
 * it without a snoop into the writer's core. Both are hints: prefetchw runs
 * on every x86-64 still sold (a NOP where absent), cldemote is encoded in
 * the reserved-NOP space (a NOP before Tremont / Sapphire Rapids). */
static inline void xp_prefetch_write(const void *p)
{
#if defined(__x86_64__)
    __asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* Ask for the line in shared state: the reader's side of a cell whose
 * bytes it will read a little later (shm_ring.h). */
static inline void xp_prefetch_read(const void *p)
{
    __builtin_prefetch(p, 0, 3);
}

static inline void xp_cache_demote(const void *p)
{
#if defined(__x86_64__)
    __asm__ __volatile__("cldemote %0" ::"m"(*(const char *)p));
#else
    (void)p;
#endif
}

/* Sleep while *word == expected, at most timeout_ns (UINT64_MAX: forever).
 * Returns XP_OK when woken or the value differs, XP_ERR_TIMEOUT on timeout.
 * Spurious wake-ups are possible: callers re-check their condition. */
xp_status_t xp_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns);
/* Wake up to `count` waiters on word (INT32_MAX: all). */
void xp_futex_wake(uint32_t *word, int count);

/* Wait until pred(arg) is true: spin XP_SPIN_COUNT times, then sleep on *word
 * (a "doorbell" the producer bumps with xp_doorbell_ring). deadline_ns is
 * absolute (xp_time_ns clock); UINT64_MAX waits forever. */
typedef int (*xp_wait_pred_t)(void *arg);
xp_status_t xp_wait_until(xp_wait_pred_t pred, void *arg, uint32_t *word, uint64_t deadline_ns);

/* A doorbell: a 32-bit sequence plus a count of sleepers, so a producer only
 * pays for the futex system call when somebody actually sleeps, and `armed`,
 * which a sleeper sets before it sleeps and a ring clears, so that a
 * sleeper already woken but not yet running costs the rings after the
 * first no further futex call (util/atomic.c). */
typedef struct xp_doorbell {
    uint32_t seq;
    uint32_t sleepers;
    uint32_t armed;
} xp_doorbell_t;

static inline void xp_doorbell_init(xp_doorbell_t *db)
{
    db->seq = 0;
    db->sleepers = 0;
    db->armed = 0;
}

/* The sleeper's mark, after it has read seq into `seen` and before it
 * counts itself in sleepers (util/atomic.c). */
static inline void xp_doorbell_arm(xp_doorbell_t *db)
{
    __atomic_store_n(&db->armed, 1, __ATOMIC_SEQ_CST);
}
void xp_doorbell_ring(xp_doorbell_t *db);
/* The sleeper's half of the protocol, once (util/atomic.c): seq into
 * `seen`, the mark, sleepers++, before(before_arg) if not NULL (a fence
 * that stands in for one senders leave out), pred, the futex until
 * deadline_ns, sleepers--. XP_OK when pred held, XP_ERR_TIMEOUT at the
 * deadline, XP_ERR_AGAIN when woken (or raced: look again), else the
 * futex's error. */
xp_status_t xp_doorbell_sleep(xp_doorbell_t *db, xp_wait_pred_t pred, void *arg,
                              uint64_t deadline_ns, void (*before)(void *), void *before_arg);
/* Spin-then-sleep until pred(arg) holds or the deadline passes. */
xp_status_t xp_doorbell_wait(xp_doorbell_t *db, xp_wait_pred_t pred, void *arg, uint64_t deadline_ns);

#endif
