/*
 * ptl/progress.h - how the Portals engine makes progress and how callers wait.
 *
 * Packets are handled inside xp_tl_progress(), in whichever thread polls:
 * every waiting or polling API call (inline progress) and, with
 * XP_PROGRESS=thread (the default), a per-process progress thread that
 * sleeps on the process doorbell (xp_tl_doorbell()), which every arriving
 * packet rings, when its poll finds nothing (after a spin only where a CPU
 * is likely spare for it: progress.c, progress_thread_sleep_mode). Only one
 * thread runs the packet handler at a time (the others skip polling and
 * just re-check their condition), so the handler never runs concurrently
 * with itself.
 *
 * While an application thread actively spins in xp_ptl_wait_until, the
 * progress thread parks off the doorbell, so senders do not pay for a futex
 * wake on every packet during ping-pong.
 */
#ifndef XP_PTL_PROGRESS_H
#define XP_PTL_PROGRESS_H

#include <sched.h>
#include <stdint.h>

#include "ptl/engine.h"
#include "transport/transport.h"
#include "util/atomic.h"
#include "util/clock.h"
#include "xportals/status.h"

/* Poll the transports once (unless another thread is polling right now) and
 * flush deferred replies. Returns the number of packets handled. */
int xp_ptl_progress(void);

/* xp_ptl_progress for an application's non-blocking look (PtlEQGet,
 * PtlCTGet, PtlEQPoll/PtlCTPoll with timeout 0), which also counts as an
 * active phase: see progress.c. */
int xp_ptl_app_poll(void);

/* THE waiting primitive of CTWait/CTPoll/EQWait/EQPoll: until pred(arg) is
 * true, run inline progress, spin briefly, then sleep on the doorbell.
 * deadline_ns is absolute (xp_time_ns clock), UINT64_MAX = forever.
 * Returns XP_OK, XP_ERR_TIMEOUT, XP_ERR_ABORTED when PtlAbort happened
 * during the wait, or XP_ERR_CANCELED when an object/NI teardown that calls
 * xp_ptl_interrupt did. */
xp_status_t xp_ptl_wait_until(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns);

/* Called before every check of the condition that may precede a sleep
 * (not while spinning): a waiter registers there what it waits for, so
 * that updaters wake it only when its condition may hold (ct.c). */
typedef void (*xp_ptl_arm_fn)(void *arg);

/* xp_ptl_wait_until with an arm callback (may be NULL). */
xp_status_t xp_ptl_wait_until_armed(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                                    uint64_t deadline_ns);

/* The longest sched_yield that found nobody else to run, on a machine whose
 * cheapest system call takes syscall_ns: twice that, and at least 1 us (a
 * yield that ran somebody costs two context switches at least). Pure. */
uint32_t xp_ptl_yield_alone_ns(uint64_t syscall_ns);
/* This machine's cheapest system call, in ns: the fastest of 16 getppid()
 * calls (~16 system calls' time). */
uint64_t xp_ptl_syscall_cost_ns(void);

/* ---- The wait's active phase, inline so that a caller with a known
 * predicate (PtlCTWait) gets it inlined into its spin loop: from the moment
 * the loop sees a packet until the wait returns, no call through a pointer
 * to the predicate and no second look at the transports. ---- */

/* One active phase of xp_ptl_wait_inline (the state the passive phase
 * needs when the spin ends without the condition). */
typedef struct xp_ptl_active {
    xp_ptl_state_t *st;
    uint32_t gen;       /* abort_gen at the start */
    uint32_t user_gen;  /* user_abort_gen at the start */
    int counted;        /* counted as spinning (only while a progress thread runs) */
    int *spinning;      /* counted: our spin slot's word, or NULL (active_waiters) */
    long spins;         /* looks before the passive phase */
} xp_ptl_active_t;

/* Start an active phase of a->st, whose gen and user_gen the caller read
 * before its first look at the condition (out of line: it overlaps the
 * wait for the packet). */
void xp_ptl_active_begin(xp_ptl_active_t *a);

/* Why the spin of xp_ptl_wait_inline ended without the condition. */
enum { XP_PTL_SPUN = 0, XP_PTL_SPIN_ABORT = 1, XP_PTL_SPIN_TIMEOUT = 2 };

/* The rest of a wait whose active spin ended without the condition (`why`):
 * the passive phase (park or doorbell sleep) and the abort check. */
xp_status_t xp_ptl_wait_rest(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                             uint64_t deadline_ns, xp_ptl_active_t *a, int why);

/* Whether an application thread may park on app_word now (a progress
 * thread runs and is not the caller). */
int xp_ptl_may_park(const xp_ptl_state_t *st);

/* Queued answers left after a poll: retry them (out of line, rare). */
int xp_ptl_poll_deferred(xp_ptl_state_t *st, int n);

/* xp_ptl_progress for a spinning waiter, or -1 when nothing was pending (no
 * transport packet, no queued answer): an idle poll is a few loads and no
 * locked instruction. */
static inline int xp_ptl_poll_inline(xp_ptl_state_t *st)
{
    int hint = xp_tl_pending();
    if (!hint && !__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE))
        return -1;
    if (!xp_poll_trylock(st))
        return 0;
    __atomic_store_n(&st->poll_owner, xp_thread_id(), __ATOMIC_RELAXED);
    int n = xp_tl_progress_hint(hint);
    if (__builtin_expect(__atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE) != 0, 0))
        return xp_ptl_poll_deferred(st, n); /* flushes, unlocks */
    __atomic_store_n(&st->poll_owner, 0, __ATOMIC_RELAXED);
    xp_poll_unlock(st);
    return n;
}

/* With more local ranks than CPUs, a loop of looks that find nothing yields
 * its CPU once per this many (progress.c's idle_look, xp_ptl_busy_pause). */
#define XP_PTL_IDLE_LOOKS 64u

/* A loop that waits on peers without sleeping (their ring full, answers
 * still due) and found nothing to do: a pause, and on a node with more local
 * ranks than CPUs every XP_PTL_IDLE_LOOKS-th time a yield, since the peer
 * may need this very CPU (1 CPU, 2 ranks, a window of 32768 puts overflowing
 * the peer's ring: 0.45 M/s spinning, the peer draining only when the
 * sender's slice ended).
 * Not every time: where the peer has its own CPU a yield to nobody costs
 * 0.5-0.6 us here and slowed that stream to 1.8 M/s. *spins: the loop's. */
static inline void xp_ptl_busy_pause(const xp_ptl_state_t *st, unsigned *spins)
{
    if (__builtin_expect(st->poll_yield, 0) && ++*spins % XP_PTL_IDLE_LOOKS == 0)
        sched_yield();
    else
        xp_cpu_relax();
}

/* End an active phase that saw its condition. */
static inline void xp_ptl_active_end(xp_ptl_active_t *a)
{
    /* A plain store: only the progress thread reads it, to decide whether
     * to stay parked, and nothing waits for it to see this one. */
    if (__builtin_expect(a->counted, 0)) {
        if (__builtin_expect(a->spinning != NULL, 1))
            __atomic_store_n(a->spinning, 0, __ATOMIC_RELEASE);
        else
            __atomic_sub_fetch(&a->st->active_waiters, 1, __ATOMIC_ACQ_REL);
    }
}

/* Application threads in a counted active phase now (a snapshot). */
int xp_ptl_spinning(const xp_ptl_state_t *st);

/* Spins of an active waiter that sees packets pending and not taken
 * (another thread holds the poll lock) before it goes to sleep. */
#define XP_PTL_BUSY_SPINS 64

/* xp_ptl_wait_until_armed, for callers that pass a predicate known at
 * compile time (it is inlined into the spin). */
static inline __attribute__((always_inline)) xp_status_t
xp_ptl_wait_inline(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg, uint64_t deadline_ns)
{
    xp_ptl_active_t a;
    long busy = 0;
    int why = XP_PTL_SPUN;

    a.st = xp_ptl_state();
    /* Before the first look: an abort from then on ends this wait. */
    a.user_gen = __atomic_load_n(&a.st->user_abort_gen, __ATOMIC_ACQUIRE);
    a.gen = __atomic_load_n(&a.st->abort_gen, __ATOMIC_ACQUIRE);
    if (pred(arg))
        return XP_OK;
    xp_ptl_active_begin(&a);
    /* a.spins bounds the looks that handle nothing: a waiter that keeps
     * handling packets (a target serving gets or atomics while it waits for
     * their count) keeps the CPU it already has, instead of parking and
     * handing every packet to the progress thread, a wake-up each
     * (fetch-add round trip 0.39-0.41 us inline; 0.9 us once the progress
     * thread stopped spinning after each packet). */
    for (long i = 0, idle = 0; idle < a.spins; i++, idle++) {
        /* The rings first: this look is what a pause delays, and a packet
         * is seen soonest when the look follows the pause directly (a raw
         * two-process ring with other loads before its look after each
         * pause measured 7-13 ns slower one way; docs/performance-notes.md,
         * round 12). */
        int n = xp_ptl_poll_inline(a.st);
        if (pred(arg)) {
            xp_ptl_active_end(&a);
            return XP_OK;
        }
        if (__builtin_expect(__atomic_load_n(&a.st->abort_gen, __ATOMIC_ACQUIRE) != a.gen, 0)) {
            why = XP_PTL_SPIN_ABORT;
            break;
        }
        if (__builtin_expect((i & 255) == 255, 0) && deadline_ns != UINT64_MAX &&
            xp_time_ns() >= deadline_ns) {
            why = XP_PTL_SPIN_TIMEOUT;
            break;
        }
        /* After a poll that handled something, poll again at once. */
        if (n > 0) {
            idle = -1;
            continue;
        }
        /* Packets that stay pending are another thread's: the progress
         * thread is in a long handler (a large copy that a peer waits for,
         * split_copy). Spinning here takes its CPU (xprun binds a rank's
         * threads to one): sleep and let it run. */
        if (n < 0) {
            busy = 0;
            /* And once more just before the pause (it saves the pause when
             * the packet arrived during the checks above). */
            if (xp_tl_pending())
                continue;
        } else if (!xp_tl_pending()) {
            busy = 0;
        } else if (++busy >= XP_PTL_BUSY_SPINS && xp_ptl_may_park(a.st)) {
            break;
        }
        xp_cpu_relax();
    }
    return xp_ptl_wait_rest(pred, arm, arg, deadline_ns, &a, why);
}

/* Ring the process doorbell after a local CT/EQ update (PtlCTInc/Set,
 * events generated by the engine), so sleeping waiters re-check. Cheap when
 * nobody sleeps. */
void xp_ptl_notify(void);

/* PtlAbort: every current xp_ptl_wait_until returns XP_ERR_ABORTED. */
void xp_ptl_abort(void);
/* Make every current xp_ptl_wait_until return XP_ERR_CANCELED
 * (PtlCTFree/PtlEQFree/PtlNIFini while another thread waits). */
void xp_ptl_interrupt(void);

/* Start/stop the progress thread (PtlInit/PtlFini; no-op with XP_PROGRESS=inline). */
xp_status_t xp_ptl_progress_start(void);
void xp_ptl_progress_stop(void);

#endif
