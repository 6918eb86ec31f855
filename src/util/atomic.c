/* Futex wrappers and the spin-then-sleep doorbell (see atomic.h). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/atomic.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/log.h"

xp_status_t xp_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts, *tsp = NULL;
    if (timeout_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
        ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
        tsp = &ts;
    }
    long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, tsp, NULL, 0);
    if (rc == 0 || errno == EAGAIN || errno == EINTR)
        return XP_OK;
    if (errno == ETIMEDOUT)
        return XP_ERR_TIMEOUT;
    xp_log_errno(XP_LOG_ERROR, "futex wait");
    return XP_ERR_INTERNAL;
}

void xp_futex_wake(uint32_t *word, int count)
{
    if (syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0) < 0)
        xp_log_errno(XP_LOG_ERROR, "futex wake");
}

static long spin_count(void)
{
    return xp_config()->spin_count;
}

xp_status_t xp_wait_until(xp_wait_pred_t pred, void *arg, uint32_t *word, uint64_t deadline_ns)
{
    long spins = spin_count();
    for (long i = 0; i < spins; i++) {
        if (pred(arg))
            return XP_OK;
        xp_cpu_relax();
    }
    for (;;) {
        uint32_t seen = xp_load_acquire(word);
        if (pred(arg))
            return XP_OK;
        uint64_t now = xp_time_ns();
        if (now >= deadline_ns)
            return XP_ERR_TIMEOUT;
        xp_status_t st = xp_futex_wait(word, seen, deadline_ns == UINT64_MAX ? UINT64_MAX : deadline_ns - now);
        if (st != XP_OK && st != XP_ERR_TIMEOUT)
            return st;
    }
}

/*
 * No lost wake-up, the doorbell's invariant. A sleeper (1) reads seq into
 * `seen`, (2) increments sleepers, (3) checks its condition, (4) sleeps in
 * FUTEX_WAIT(seq, seen), and decrements sleepers only after (4) returns.
 * A waker (a) publishes the condition, (b) fences (store-load), (c) looks at
 * sleepers and, if nonzero, increments seq and then wakes. With (2)-(3) and
 * (a)-(c) both store-then-load and ordered by a full barrier, either (3)
 * sees the publication or (c) sees the sleeper; in the latter case seq moves
 * after (1), so (4) either finds seq != seen (the kernel compares under its
 * bucket lock) or is already queued and gets the wake. Reading `seen` after
 * (3) would lose a ring that falls between (3) and the read.
 *
 * One futex wake per sleep, not per ring. Between (1) and (2) the sleeper
 * sets `armed` (xp_doorbell_arm); a waker takes it (exchange with 0) before
 * it increments seq, and makes the futex call only if it took a mark. A
 * sleeper queued in (4) with `seen` is woken: its mark came after the
 * increment that made `seen` (it read seq first), so a waker took it after
 * that increment, and that waker's own increment and wake come after its
 * exchange; the kernel either finds seq != seen or wakes the queued
 * sleeper (the wake wakes all). A waker that takes no mark knows that every
 * sleeper that marked has been (or is being) woken since, or reads seq
 * afresh after our increment and so sees our publication in (3). Without
 * it, a sleeper woken but not yet running (on a CPU shared with the sender,
 * or behind a computing rank) stayed in `sleepers`, and every packet until
 * it ran cost its sender a futex call: 2 ranks on one CPU, 65536 puts
 * into a full ring, 2.9-3.7 us per message in about one run in three (73218
 * futex calls in such a run).
 */
void xp_doorbell_ring(xp_doorbell_t *db)
{
    uint32_t armed = __atomic_exchange_n(&db->armed, 0, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&db->seq, 1, __ATOMIC_SEQ_CST);
    /* seq_cst pairs with the sleeper's increment of `sleepers` before it
     * re-checks its predicate: either it sees our work or we see it. */
    if (armed && __atomic_load_n(&db->sleepers, __ATOMIC_SEQ_CST))
        xp_futex_wake(&db->seq, INT_MAX);
}

xp_status_t xp_doorbell_sleep(xp_doorbell_t *db, xp_wait_pred_t pred, void *arg,
                              uint64_t deadline_ns, void (*before)(void *), void *before_arg)
{
    uint32_t seen = __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST);
    xp_doorbell_arm(db);
    __atomic_fetch_add(&db->sleepers, 1, __ATOMIC_SEQ_CST);
    if (before)
        before(before_arg);
    xp_status_t s = XP_OK;
    if (!pred(arg)) {
        uint64_t now = xp_time_ns();
        s = now >= deadline_ns ? XP_ERR_TIMEOUT
                               : xp_futex_wait(&db->seq, seen,
                                               deadline_ns == UINT64_MAX ? UINT64_MAX
                                                                         : deadline_ns - now);
        if (s == XP_OK)
            s = XP_ERR_AGAIN;
    }
    __atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_SEQ_CST);
    return s;
}

xp_status_t xp_doorbell_wait(xp_doorbell_t *db, xp_wait_pred_t pred, void *arg, uint64_t deadline_ns)
{
    long spins = spin_count();
    for (long i = 0; i < spins; i++) {
        if (pred(arg))
            return XP_OK;
        xp_cpu_relax();
    }
    xp_status_t s;
    while ((s = xp_doorbell_sleep(db, pred, arg, deadline_ns, NULL, NULL)) == XP_ERR_AGAIN)
        ;
    /* A sleep that timed out looks once more (its wake may have raced). */
    if (s == XP_ERR_TIMEOUT && pred(arg))
        return XP_OK;
    return s;
}

/* Spin reading (not exchanging: the line stays shared while held), and
 * yield after a while: a holder that is not running frees it only once it
 * runs again. */
void xp_spin_lock_slow(xp_spinlock_t *l)
{
    for (unsigned n = 1;; n++) {
        if (!__atomic_load_n(&l->held, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE))
            return;
        if (n % 128 == 0)
            sched_yield();
        else
            xp_cpu_relax();
    }
}
