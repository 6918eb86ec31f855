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
 */
void xp_doorbell_ring(xp_doorbell_t *db)
{
    __atomic_fetch_add(&db->seq, 1, __ATOMIC_SEQ_CST);
    /* seq_cst pairs with the sleeper's increment of `sleepers` before it
     * re-checks its predicate: either it sees our work or we see it. */
    if (__atomic_load_n(&db->sleepers, __ATOMIC_SEQ_CST))
        xp_futex_wake(&db->seq, INT_MAX);
}

xp_status_t xp_doorbell_wait(xp_doorbell_t *db, xp_wait_pred_t pred, void *arg, uint64_t deadline_ns)
{
    long spins = spin_count();
    for (long i = 0; i < spins; i++) {
        if (pred(arg))
            return XP_OK;
        xp_cpu_relax();
    }
    for (;;) {
        uint32_t seen = __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&db->sleepers, 1, __ATOMIC_SEQ_CST);
        if (pred(arg)) {
            __atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_SEQ_CST);
            return XP_OK;
        }
        uint64_t now = xp_time_ns();
        if (now >= deadline_ns) {
            __atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_SEQ_CST);
            return XP_ERR_TIMEOUT;
        }
        xp_status_t st = xp_futex_wait(&db->seq, seen,
                                       deadline_ns == UINT64_MAX ? UINT64_MAX : deadline_ns - now);
        __atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_SEQ_CST);
        if (st != XP_OK && st != XP_ERR_TIMEOUT)
            return st;
    }
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
