/* Signals: 64-bit values with release updates and spin-then-futex waiting.
 * The futex word is a separate 32-bit sequence bumped by every update, so a
 * waiter never misses a change of the 64-bit value between its check and its
 * sleep. */
#include <limits.h>
#include <stddef.h>

#include "accel/accel_internal.h"
#include "util/atomic.h"
#include "util/clock.h"
#include "util/config.h"

/* How long a waiter on a device-updated signal sleeps before re-checking. */
#define DEVICE_SLICE_NS 100000ull

void xp_signal_init(xp_signal_t *sig, int64_t value, uint32_t flags)
{
    sig->seq = 0;
    sig->waiters = 0;
    sig->flags = flags;
    sig->reserved_ = 0;
    __atomic_store_n(&sig->value, value, __ATOMIC_RELEASE);
}

int64_t xp_signal_load(const xp_signal_t *sig)
{
    return __atomic_load_n(&sig->value, __ATOMIC_ACQUIRE);
}

static void wake(xp_signal_t *sig)
{
    __atomic_fetch_add(&sig->seq, 1, __ATOMIC_SEQ_CST);
    /* seq_cst pairs with the waiter's increment of `waiters` before its
     * re-check: either it sees the new value or we see it waiting. */
    if (__atomic_load_n(&sig->waiters, __ATOMIC_SEQ_CST))
        xp_futex_wake(&sig->seq, INT_MAX);
}

void xp_signal_store(xp_signal_t *sig, int64_t value)
{
    __atomic_store_n(&sig->value, value, __ATOMIC_SEQ_CST);
    wake(sig);
}

int64_t xp_signal_add(xp_signal_t *sig, int64_t delta)
{
    int64_t old = __atomic_fetch_add(&sig->value, delta, __ATOMIC_SEQ_CST);
    wake(sig);
    return old;
}

int64_t xp_signal_exchange(xp_signal_t *sig, int64_t value)
{
    int64_t old = __atomic_exchange_n(&sig->value, value, __ATOMIC_SEQ_CST);
    wake(sig);
    return old;
}

int64_t xp_signal_cas(xp_signal_t *sig, int64_t expected, int64_t desired)
{
    int64_t seen = expected;
    if (__atomic_compare_exchange_n(&sig->value, &seen, desired, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_ACQUIRE))
        wake(sig);
    return seen;
}

static int satisfied(xp_signal_cond_t cond, int64_t v, int64_t cmp)
{
    switch (cond) {
    case XP_SIGNAL_EQ:  return v == cmp;
    case XP_SIGNAL_NE:  return v != cmp;
    case XP_SIGNAL_LT:  return v < cmp;
    case XP_SIGNAL_GTE: return v >= cmp;
    }
    return 0;
}

static xp_status_t sleep_until(xp_signal_t *sig, xp_signal_cond_t cond, int64_t cmp,
                               uint64_t deadline, int64_t *value_out)
{
    for (;;) {
        uint32_t seen = __atomic_load_n(&sig->seq, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&sig->waiters, 1, __ATOMIC_SEQ_CST);
        int64_t v = __atomic_load_n(&sig->value, __ATOMIC_SEQ_CST);
        uint64_t now = xp_time_ns();
        xp_status_t st = XP_OK;
        if (!satisfied(cond, v, cmp) && now < deadline) {
            uint64_t slice = deadline == UINT64_MAX ? UINT64_MAX : deadline - now;
            if ((sig->flags & XP_SIGNAL_F_DEVICE) && slice > DEVICE_SLICE_NS)
                slice = DEVICE_SLICE_NS;
            st = xp_futex_wait(&sig->seq, seen, slice);
        }
        __atomic_fetch_sub(&sig->waiters, 1, __ATOMIC_SEQ_CST);
        if (satisfied(cond, v, cmp)) {
            *value_out = v;
            return XP_OK;
        }
        if (now >= deadline)
            return XP_ERR_TIMEOUT;
        if (st != XP_OK && st != XP_ERR_TIMEOUT)
            return st;
    }
}

xp_status_t xp_signal_wait(xp_signal_t *sig, xp_signal_cond_t cond, int64_t compare,
                           uint64_t timeout_ns, int64_t *value_out)
{
    if (!sig || (unsigned)cond > XP_SIGNAL_GTE)
        return XP_ERR_INVALID;
    uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : xp_time_ns() + timeout_ns;
    long spins = xp_config()->spin_count;
    int64_t v = 0;
    for (long i = 0; i < spins; i++) {
        v = __atomic_load_n(&sig->value, __ATOMIC_ACQUIRE);
        if (satisfied(cond, v, compare))
            goto done;
        xp_cpu_relax();
    }
    xp_status_t st = sleep_until(sig, cond, compare, deadline, &v);
    if (st != XP_OK)
        return st;
done:
    if (value_out)
        *value_out = v;
    return XP_OK;
}

void xp_signal_kick(xp_signal_t *sig)
{
    wake(sig);
}

xp_status_t xp_signal_wait_pred(xp_signal_t *sig, int (*pred)(void *), void *arg, uint64_t deadline_ns)
{
    long spins = xp_config()->spin_count;
    for (long i = 0; i < spins; i++) {
        if (pred(arg))
            return XP_OK;
        xp_cpu_relax();
    }
    for (;;) {
        uint32_t seen = __atomic_load_n(&sig->seq, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&sig->waiters, 1, __ATOMIC_SEQ_CST);
        int ok = pred(arg);
        uint64_t now = xp_time_ns();
        xp_status_t st = XP_OK;
        if (!ok && now < deadline_ns) {
            uint64_t slice = deadline_ns == UINT64_MAX ? UINT64_MAX : deadline_ns - now;
            if ((sig->flags & XP_SIGNAL_F_DEVICE) && slice > DEVICE_SLICE_NS)
                slice = DEVICE_SLICE_NS;
            st = xp_futex_wait(&sig->seq, seen, slice);
        }
        __atomic_fetch_sub(&sig->waiters, 1, __ATOMIC_SEQ_CST);
        if (ok || pred(arg))
            return XP_OK;
        if (xp_time_ns() >= deadline_ns)
            return XP_ERR_TIMEOUT;
        if (st != XP_OK && st != XP_ERR_TIMEOUT)
            return st;
    }
}
