/* Signals: 64-bit values with release updates and spin-then-futex waiting.
 * The futex word is a separate 32-bit sequence bumped by every update, so a
 * waiter never misses a change of the 64-bit value between its check and its
 * sleep.
 *
 * Lifetime invariant. A waiter may return, and its owner free or reuse the
 * signal (a completion signal on the stack), as soon as it sees the value it
 * waits for - which a host update stores before it has looked for sleepers
 * and bumped seq. So every host update is bracketed:
 *   (1) begun++            before the value changes,
 *   (2) the value update,
 *   (3) read waiters,
 *   (4) seq++              the update's last access to the signal,
 *   (5) futex wake if (3) saw sleepers - the address only, not the memory.
 * and no wait returns before seq has caught up with the `begun` it reads
 * after its last look at the value (drain()): an update whose value it can
 * have seen has then passed (4). Updates that begin later are the owner's
 * business (it frees the signal when none are expected). (5) may reach a
 * signal that is gone: a futex wake on such an address at worst wakes an
 * unrelated sleeper spuriously, which every futex sleeper tolerates.
 * No lost wake-up: a sleeper reads seq, increments waiters, then checks the
 * value (all seq_cst); (2)-(3) is the mirror store-then-load, so either the
 * sleeper sees the value or (3) sees the sleeper, and then (4) moves seq
 * after the sleeper's read, so its FUTEX_WAIT fails or is woken by (5).
 * Updates a device makes (CUDA plugin) bump seq without begun; seq then runs
 * ahead, and drain() compares with wrap-around, so it never blocks on them. */
#include <limits.h>
#include <sched.h>
#include <stddef.h>

#include "accel/accel_internal.h"
#include "util/atomic.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/context.h"

/* How long a waiter on a device-updated signal sleeps before re-checking. */
#define DEVICE_SLICE_NS 100000ull
/* With XP_PROGRESS=inline: how long a waiter sleeps for Portals packets
 * before it looks at the signal again (the signal's own futex is not part of
 * that sleep). */
#define PROGRESS_SLICE_NS 50000ull

void xp_signal_init(xp_signal_t *sig, int64_t value, uint32_t flags)
{
    sig->seq = 0;
    sig->waiters = 0;
    sig->flags = flags;
    sig->begun = 0;
    __atomic_store_n(&sig->value, value, __ATOMIC_RELEASE);
}

int64_t xp_signal_load(const xp_signal_t *sig)
{
    return __atomic_load_n(&sig->value, __ATOMIC_ACQUIRE);
}

/* Step (1) of an update. */
static void begin(xp_signal_t *sig)
{
    __atomic_fetch_add(&sig->begun, 1, __ATOMIC_SEQ_CST);
}

/* Steps (3)-(5): after this, the signal may be gone. */
static void wake(xp_signal_t *sig)
{
    uint32_t sleepers = __atomic_load_n(&sig->waiters, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&sig->seq, 1, __ATOMIC_SEQ_CST);
    if (sleepers)
        xp_futex_wake(&sig->seq, INT_MAX);
}

/* An update that begun but changed nothing (a failed CAS) still ends with
 * (4), or drain() would wait for it forever; nobody needs waking. */
static void end_unchanged(xp_signal_t *sig)
{
    __atomic_fetch_add(&sig->seq, 1, __ATOMIC_RELEASE);
}

/* Before a wait returns: let every update begun so far finish with the
 * signal (a few instructions each, unless its thread was preempted). */
static void drain(xp_signal_t *sig)
{
    uint32_t begun = __atomic_load_n(&sig->begun, __ATOMIC_ACQUIRE);
    for (unsigned i = 1; (int32_t)(begun - __atomic_load_n(&sig->seq, __ATOMIC_ACQUIRE)) > 0; i++) {
        if (i % 64 == 0)
            sched_yield();
        else
            xp_cpu_relax();
    }
}

void xp_signal_store(xp_signal_t *sig, int64_t value)
{
    begin(sig);
    __atomic_store_n(&sig->value, value, __ATOMIC_SEQ_CST);
    wake(sig);
}

int64_t xp_signal_add(xp_signal_t *sig, int64_t delta)
{
    begin(sig);
    int64_t old = __atomic_fetch_add(&sig->value, delta, __ATOMIC_SEQ_CST);
    wake(sig);
    return old;
}

int64_t xp_signal_exchange(xp_signal_t *sig, int64_t value)
{
    begin(sig);
    int64_t old = __atomic_exchange_n(&sig->value, value, __ATOMIC_SEQ_CST);
    wake(sig);
    return old;
}

int64_t xp_signal_cas(xp_signal_t *sig, int64_t expected, int64_t desired)
{
    int64_t seen = expected;
    begin(sig);
    if (__atomic_compare_exchange_n(&sig->value, &seen, desired, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_ACQUIRE))
        wake(sig);
    else
        end_unchanged(sig);
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

/* XP_PROGRESS=inline leaves Portals packets to whoever calls into the
 * library, and what a waiter here waits for (an XTQ task whose descriptor
 * is still a packet in this process's ring) may need them: without this, a
 * rank waiting for its remotely queued tasks waits forever. The runtime's
 * wait hook (util/context.h; NULL with a progress thread) handles packets,
 * spins on packets or `ready`, and sleeps on the packets' doorbell for at
 * most a slice, so the signal is seen within PROGRESS_SLICE_NS even when
 * nothing rings the doorbell (a device's update). */
static xp_status_t wait_with_progress(xp_wait_hook_fn hook, int (*ready)(void *), void *arg,
                                      uint64_t deadline)
{
    for (;;) {
        if (ready(arg))
            return XP_OK;
        uint64_t now = xp_time_ns();
        if (now >= deadline)
            return XP_ERR_TIMEOUT;
        hook(deadline - now < PROGRESS_SLICE_NS ? deadline - now : PROGRESS_SLICE_NS, ready, arg);
    }
}

typedef struct cond_arg {
    const xp_signal_t *sig;
    xp_signal_cond_t cond;
    int64_t cmp;
    int64_t v;
} cond_arg_t;

static int cond_ready(void *arg)
{
    cond_arg_t *c = arg;
    c->v = __atomic_load_n(&c->sig->value, __ATOMIC_ACQUIRE);
    return satisfied(c->cond, c->v, c->cmp);
}

static xp_wait_hook_fn progress_hook(void)
{
    return __atomic_load_n(&xp_ctx.runtime_wait_hook, __ATOMIC_ACQUIRE);
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
    int64_t v = 0;
    xp_status_t st = XP_OK;
    /* With inline progress the hook's own spin watches the signal and the
     * packets together: a spin here first would hold back the packets the
     * awaited task may still be in. */
    xp_wait_hook_fn hook = progress_hook();
    if (hook) {
        cond_arg_t c = { sig, cond, compare, 0 };
        st = wait_with_progress(hook, cond_ready, &c, deadline);
        v = c.v;
    } else {
        long spins = xp_config()->spin_count;
        int ok = 0;
        for (long i = 0; i < spins && !ok; i++) {
            v = __atomic_load_n(&sig->value, __ATOMIC_ACQUIRE);
            ok = satisfied(cond, v, compare);
            if (!ok)
                xp_cpu_relax();
        }
        if (!ok)
            st = sleep_until(sig, cond, compare, deadline, &v);
    }
    drain(sig);
    if (st != XP_OK)
        return st;
    if (value_out)
        *value_out = v;
    return XP_OK;
}

/* A kick changes no value, so a sleeper that registered after wake()'s look
 * for sleepers would find nothing new and sleep through it. Here seq moves
 * first and the sleepers are read after it (the mirror of the sleeper's
 * register-then-check): fine for doorbells, which outlive every kick. */
void xp_signal_kick(xp_signal_t *sig)
{
    begin(sig);
    __atomic_fetch_add(&sig->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&sig->waiters, __ATOMIC_SEQ_CST))
        xp_futex_wake(&sig->seq, INT_MAX);
}

xp_status_t xp_signal_wait_pred(xp_signal_t *sig, int (*pred)(void *), void *arg, uint64_t deadline_ns)
{
    xp_wait_hook_fn hook = progress_hook(); /* first, as in xp_signal_wait */
    if (hook) {
        xp_status_t st = wait_with_progress(hook, pred, arg, deadline_ns);
        if (st == XP_OK)
            drain(sig);
        return st;
    }
    long spins = xp_config()->spin_count;
    for (long i = 0; i < spins; i++) {
        if (pred(arg)) {
            drain(sig);
            return XP_OK;
        }
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
        if (ok || pred(arg)) {
            drain(sig);
            return XP_OK;
        }
        if (xp_time_ns() >= deadline_ns)
            return XP_ERR_TIMEOUT;
        if (st != XP_OK && st != XP_ERR_TIMEOUT)
            return st;
    }
}
