/* ptl/progress.c - inline progress, the progress thread and the wait primitive.
 *
 * Why no wake-up is lost (the doorbell's own rule is in util/atomic.c):
 * - With a progress thread, an application waiter sleeps on app_word after
 *   app_parked++ and a fence; its last look before the futex covers its
 *   condition and PtlAbort, and xp_ptl_notify bumps app_word after their
 *   changes. Arrivals do not wake it: the progress thread handles them.
 * - Otherwise a waiter sleeps only through xp_tl_wait, after app_db_sleepers++ and a
 *   fence, and its last look before the futex covers its condition, PtlAbort
 *   (abort_gen), our inbox (xp_tl_pending) and queued answers (defer_count).
 *   Each of those changes is followed by something that rings: CT/EQ updates
 *   and xp_ptl_interrupt call xp_ptl_notify (fence, then app_db_sleepers and
 *   sleepers), an arrival is rung by its sender, and answers still queued
 *   after a flush call xp_ptl_notify; and since the peer draining its ring
 *   rings nobody, a sleep with queued answers lasts at most DEFER_RETRY_NS.
 * - Only the thread holding poll_lock runs handlers. A poller that loses the
 *   trylock does not sleep while xp_tl_pending(): a packet that arrived when
 *   nobody slept rang nobody, and the holder may return without it.
 * - The progress thread parks (futex on park_word) while an application
 *   thread spins actively and polls for it, or has begun to since the
 *   previous park (between two waits: app_active); the park is bounded by
 *   PARK_NS .. PARK_MAX_NS, so the hand-back when that waiter returns (or
 *   leaves the library to compute) needs no wake-up (one
 *   that goes to sleep on app_word wakes it: end_active, which app_active
 *   notices even when the progress thread was not parked). Its doorbell
 *   sleep looks at the inbox, the spin slots, defer_count and progress_stop;
 *   PtlFini rings the doorbell directly.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptl/engine.h"
#include "ptl/progress.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/context.h"
#include "util/log.h"
#include "xportals/xp.h"

/* How long the progress thread stays parked while application threads spin
 * (it re-checks after this; nobody wakes it, so waiters pay no syscall).
 * Each park that ends with them still busy doubles the next one, up to
 * PARK_MAX_NS: on the 2-vCPU VM this was measured on, every timed wake-up
 * (timer, two context switches on the application thread's CPU) cost the
 * application ~30 us, ~7 ns of each one-way of an 8 B ping-pong at 1 ms
 * (docs/performance-notes.md, round 12). Any other outcome (the threads no
 * longer busy, a hand-back) starts again from PARK_NS. */
#define PARK_NS 1000000ull
#define PARK_MAX_NS 4000000ull
/* Deferred answers wait for room in a peer's ring, and nothing rings our
 * doorbell when that peer drains it: a thread that would sleep while some
 * are queued sleeps at most this long, then retries them. */
#define DEFER_RETRY_NS 50000ull
/* Active phases per PARK_NS above which the application threads count as
 * living in waits (app_active): gaps between waits average < ~16 us (the
 * count scales with the park's length). */
#define BUSY_PHASES 64u

static int deferred(const xp_ptl_state_t *st)
{
    return __atomic_load_n(&st->defer_count, __ATOMIC_ACQUIRE) != 0;
}

/* The tail of xp_ptl_poll_inline when answers are queued (poll lock held,
 * poll_owner set): retry them, release. */
int xp_ptl_poll_deferred(xp_ptl_state_t *st, int n)
{
    xp_eng_flush_deferred();
    int left = deferred(st);
    __atomic_store_n(&st->poll_owner, 0, __ATOMIC_RELAXED);
    xp_poll_unlock(st);
    /* Answers still queued (a peer's ring is full): wake a sleeper of this
     * process (the progress thread) to retry them. Sleepers look at
     * defer_count after announcing themselves, so this cannot miss one. */
    if (left)
        xp_ptl_notify();
    return n;
}

static int progress_poll(xp_ptl_state_t *st)
{
    return xp_ptl_poll_inline(st);
}

int xp_ptl_progress(void)
{
    int n = progress_poll(xp_ptl_state());
    return n < 0 ? 0 : n;
}

/* With more local ranks than CPUs, a loop of looks that find nothing holds
 * a CPU that the peer it waits for may need: every XP_PTL_IDLE_LOOKS of
 * them in a row yield it. An MPI library's blocking send over Portals waits for the
 * target's acknowledgement in such a loop; with 4 ranks on 2 CPUs and
 * XP_PROGRESS=inline, a rank's 3000 MPI_Sends to a rank receiving from all
 * took 3-12 s behind that rank's spin (Open MPI's MTL, which yields only
 * in receives). The count is per process, updated without a locked
 * instruction: only how often the yield comes rests on it. */
static void idle_look(xp_ptl_state_t *st, int handled)
{
    uint32_t k = handled > 0 ? 0 : __atomic_load_n(&st->idle_looks, __ATOMIC_RELAXED) + 1;
    if (k >= XP_PTL_IDLE_LOOKS) {
        k = 0;
        sched_yield();
    }
    __atomic_store_n(&st->idle_looks, k, __ATOMIC_RELAXED);
}

/* A loop of non-blocking looks is an active wait whose beginning and end
 * the library does not see: an MPI library's progress loop (Open MPI's
 * Portals MTL polls its EQs with timeout 0 between everything it does).
 * Each look counts as an active phase, so that the progress thread parks
 * (app_active) and leaves the packets to the loop. Uncounted, every arrival
 * woke the progress thread, which raced the loop for the poll lock and for
 * the CPU they share: MPI 8 B ping-pong over the MTL 1.5-6 us against 0.7-1.0
 * with XP_PROGRESS=inline. A look now and then (computing in between) stays
 * below BUSY_PHASES per park and leaves the thread serving. */
int xp_ptl_app_poll(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    if (__atomic_load_n(&st->progress_running, __ATOMIC_RELAXED))
        __atomic_store_n(&st->active_phases,
                         __atomic_load_n(&st->active_phases, __ATOMIC_RELAXED) + 1,
                         __ATOMIC_RELAXED);
    int n = xp_ptl_progress();
    if (__builtin_expect(st->poll_yield, 0))
        idle_look(st, n);
    return n;
}

/* Spins before a thread that wants the poll lock goes to sleep for it: the
 * holder is usually in a short handler, but often on this very CPU (xprun
 * binds a rank's threads to one), so do not spin long. */
#define POLL_LOCK_SPINS 64

void xp_poll_lock(xp_ptl_state_t *st)
{
    xp_poll_lock_t *l = &st->poll_lock;
    for (int i = 0; i < POLL_LOCK_SPINS; i++) {
        if (xp_poll_trylock(st))
            return;
        xp_cpu_relax();
    }
    while (!xp_poll_trylock(st)) {
        /* Announce, fence, look: either the holder's release is visible
         * now, or its look at `sleepers` after the release sees us and
         * wakes us (xp_poll_unlock); the futex re-checks `held` itself. */
        __atomic_add_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
        xp_ptl_heavy_fence();
        if (__atomic_load_n(&l->held, __ATOMIC_ACQUIRE) != 0)
            xp_futex_wait(&l->held, 1, UINT64_MAX);
        __atomic_sub_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
    }
}

void xp_poll_wake(xp_ptl_state_t *st)
{
    xp_futex_wake(&st->poll_lock.held, INT_MAX);
}

/* Called on every CT/EQ update, so it must not write the doorbell's cache
 * line when nobody sleeps: peers read `sleepers` on that line in every send
 * to us, and a write here made each of their sends miss it. Only application
 * threads asleep in xp_ptl_wait_until wait for local updates: the progress
 * thread sleeps for arrivals (they ring for themselves) and deferred answers,
 * so ringing for it cost every local update a futex wake plus a wake-up and
 * re-sleep of that thread (ptl_unexpected: ~1 us per match once the progress
 * thread had gone to sleep). The fence orders the caller's update before the
 * look (a sleeper bumps app_db_sleepers or app_parked before its last check
 * of the condition). */
void xp_ptl_notify(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    xp_doorbell_t *db = xp_tl_doorbell();
    xp_fence();
    if (__atomic_load_n(&st->app_parked, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&st->app_word, 1, __ATOMIC_SEQ_CST);
        xp_futex_wake(&st->app_word, INT_MAX);
    }
    if (!db)
        return;
    if (!__atomic_load_n(&st->app_db_sleepers, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&st->defer_count, __ATOMIC_RELAXED))
        return;
    if (__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED))
        xp_doorbell_ring(db);
}

void xp_ptl_interrupt(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    __atomic_add_fetch(&st->abort_gen, 1, __ATOMIC_ACQ_REL);
    xp_ptl_notify();
}

void xp_ptl_abort(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    __atomic_add_fetch(&st->user_abort_gen, 1, __ATOMIC_ACQ_REL);
    xp_ptl_interrupt();
}

typedef struct wait_ctx {
    xp_wait_pred_t pred;
    xp_ptl_arm_fn arm;
    void *arg;
    uint32_t gen;
    xp_ptl_state_t *st;
    int idle; /* the last wait_pred's poll found nothing pending */
} wait_ctx_t;

static int wait_pred(void *arg)
{
    wait_ctx_t *w = arg;
    if (w->pred(w->arg))
        return 1;
    if (__atomic_load_n(&w->st->abort_gen, __ATOMIC_ACQUIRE) != w->gen)
        return 1;
    /* Look again only if this poll did something: after an idle one the
     * condition can only have changed through another thread, which the
     * next spin's first look sees (or, before a sleep, the sleeper's
     * announcement makes that thread wake us). */
    int n = progress_poll(w->st);
    w->idle = n < 0;
    return n >= 0 && w->pred(w->arg);
}

/* Before sleeping: also stay awake for an arrival that another thread's
 * poll may have left behind (xp_tl_wait's contract for pollers) and, in
 * sleep_pred, for queued answers (retried by a bounded sleep: sleep_once). */
static int retry_pred(void *arg)
{
    wait_ctx_t *w = arg;
    if (w->arm)
        w->arm(w->arg);
    return wait_pred(arg) || xp_tl_pending();
}

static int sleep_pred(void *arg)
{
    return retry_pred(arg) || deferred(((wait_ctx_t *)arg)->st);
}

/* One sleep of the passive phase. While answers are queued it lasts at most
 * DEFER_RETRY_NS (nobody tells us when the peer's ring has room: sleeping
 * until the deadline deadlocked two inline ranks that both held answers for
 * each other); the timeout of that short sleep is XP_OK (retry). */
static xp_status_t sleep_once(wait_ctx_t *w, uint64_t deadline_ns)
{
    if (!deferred(w->st))
        return xp_tl_wait(sleep_pred, w, deadline_ns);
    uint64_t retry = xp_time_ns() + DEFER_RETRY_NS;
    if (retry >= deadline_ns)
        return xp_tl_wait(retry_pred, w, deadline_ns);
    xp_status_t rc = xp_tl_wait(retry_pred, w, retry);
    return rc == XP_ERR_TIMEOUT ? XP_OK : rc;
}

/* The passive phase with a progress thread: sleep on app_word, which only
 * xp_ptl_notify (a CT reaching a waiter's threshold, an event, PtlAbort)
 * bumps. Packet arrivals do not wake this thread: they wake the progress
 * thread, which is then the only runnable thread of this process. Waking
 * the application thread on every arrival made it compete for this
 * process's CPU (xprun binds a rank's threads to one) with the progress
 * thread in the middle of a long copy that a peer waited for (split_copy). */
static xp_status_t park_app(wait_ctx_t *w, uint64_t deadline_ns)
{
    xp_ptl_state_t *st = w->st;
    xp_status_t rc = XP_OK;
    __atomic_add_fetch(&st->app_sleepers, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&st->app_parked, 1, __ATOMIC_SEQ_CST);
    xp_fence();
    for (;;) {
        uint32_t seen = __atomic_load_n(&st->app_word, __ATOMIC_SEQ_CST);
        if (w->arm)
            w->arm(w->arg);
        if (wait_pred(w))
            break;
        uint64_t now = xp_time_ns();
        if (now >= deadline_ns) {
            rc = XP_ERR_TIMEOUT;
            break;
        }
        xp_futex_wait(&st->app_word, seen, deadline_ns == UINT64_MAX ? UINT64_MAX : deadline_ns - now);
    }
    __atomic_sub_fetch(&st->app_parked, 1, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&st->app_sleepers, 1, __ATOMIC_SEQ_CST);
    return rc;
}

/* Application threads park on app_word only while the progress thread runs
 * (and is not the caller: it must keep polling). */
static int can_park(const xp_ptl_state_t *st)
{
    return __atomic_load_n(&st->progress_running, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&st->progress_stop, __ATOMIC_ACQUIRE) &&
           !pthread_equal(pthread_self(), st->progress_thread);
}

/* At the start of an active wait: a progress thread that a peer's ring woke
 * from its doorbell sleep stays counted in the doorbell's sleepers until it
 * runs, and it waits for this CPU (xprun binds a rank's threads to one)
 * behind our spin for up to a scheduler slice: meanwhile every send of every
 * peer rings the doorbell again, a futex wake per message (8 B ping-pong
 * 0.10 -> 0.20 us for whole short runs). Let it run once: it sees us active
 * and parks, off the doorbell. A load of a line peers only read, per wait. */
static inline void let_sleeper_run(xp_ptl_state_t *st)
{
    xp_doorbell_t *db = xp_tl_doorbell();
    if (__builtin_expect(db && __atomic_load_n(&db->sleepers, __ATOMIC_RELAXED) != 0, 0) &&
        can_park(st))
        sched_yield();
}

/* The progress thread parks while application threads spin; when the last
 * one stops spinning, hand polling back to it at once. */
int xp_ptl_spinning(const xp_ptl_state_t *st)
{
    int n = __atomic_load_n(&st->active_waiters, __ATOMIC_SEQ_CST);
    for (int i = 0; i < XP_PTL_SPIN_SLOTS; i++)
        n += __atomic_load_n(&st->spin_slot[i].spinning, __ATOMIC_SEQ_CST);
    return n;
}

/* The calling thread's spin slot word (taking a free slot the first time),
 * or NULL when other threads hold every slot. Slots are never given back:
 * a thread that exits leaves its xp_thread_id to a new thread, which finds
 * the slot as its own. */
static int *spin_slot(xp_ptl_state_t *st)
{
    uintptr_t me = xp_thread_id();
    unsigned h = (unsigned)(((uint64_t)me * 0x9e3779b97f4a7c15ull) >> 60);
    for (unsigned k = 0; k < XP_PTL_SPIN_SLOTS; k++) {
        xp_ptl_spin_slot_t *sl = &st->spin_slot[(h + k) % XP_PTL_SPIN_SLOTS];
        uintptr_t o = __atomic_load_n(&sl->owner, __ATOMIC_RELAXED);
        if (o == me || (o == 0 && __atomic_compare_exchange_n(&sl->owner, &o, me, 0,
                                                               __ATOMIC_RELAXED,
                                                               __ATOMIC_RELAXED)))
            return &sl->spinning;
    }
    return NULL;
}

/* An active phase that did not see its condition ends and the thread goes
 * to sleep on app_word: the last spinning thread out wakes the progress
 * thread. Sequentially consistent store and loads: of two threads leaving
 * at once, at least one sees the other's slot cleared and wakes it. */
static void end_active(xp_ptl_state_t *st, xp_ptl_active_t *a)
{
    if (a->spinning)
        __atomic_store_n(a->spinning, 0, __ATOMIC_SEQ_CST);
    else
        __atomic_sub_fetch(&st->active_waiters, 1, __ATOMIC_SEQ_CST);
    if (xp_ptl_spinning(st) == 0 && __atomic_load_n(&st->progress_running, __ATOMIC_ACQUIRE)) {
        __atomic_add_fetch(&st->park_word, 1, __ATOMIC_ACQ_REL);
        xp_futex_wake(&st->park_word, 1);
    }
}

int xp_ptl_may_park(const xp_ptl_state_t *st)
{
    return can_park(st);
}

/* Only waiters of a process with a progress thread count themselves in
 * active_waiters: nobody else reads it, and without a thread the wait's
 * exit has no locked instruction. */
void xp_ptl_active_begin(xp_ptl_active_t *a)
{
    xp_ptl_state_t *st = a->st;
    /* With a yield phase to come (oversubscribed) and others to yield to,
     * one look: a spin holds the CPU the rank we wait for may need
     * (ring_bench -n 4 on 2 CPUs: 2.6-2.8 us per hop after 65 looks, 1.4-1.7
     * after one). */
    a->spins = st->yield_ns && !__atomic_load_n(&st->yield_skip, __ATOMIC_RELAXED) &&
                       !__atomic_load_n(&st->yield_alone, __ATOMIC_RELAXED)
                   ? 1
                   : xp_tl_spin_count() * 4 + 1;
    a->counted = __atomic_load_n(&st->progress_running, __ATOMIC_ACQUIRE);
    /* Active phase: this thread polls; the progress thread parks (it only
     * asks whether someone spins: no ordering needed, a store will do). */
    a->spinning = NULL;
    if (a->counted) {
        a->spinning = spin_slot(st);
        if (a->spinning)
            __atomic_store_n(a->spinning, 1, __ATOMIC_RELEASE);
        else
            __atomic_add_fetch(&st->active_waiters, 1, __ATOMIC_ACQ_REL);
    }
    /* Not a locked add: the progress thread only asks whether it changed,
     * and two threads' racing increments still change it (app_active). */
    __atomic_store_n(&st->active_phases, __atomic_load_n(&st->active_phases, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    let_sleeper_run(st);
}

xp_status_t xp_ptl_wait_until(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns)
{
    return xp_ptl_wait_inline(pred, NULL, arg, deadline_ns);
}

xp_status_t xp_ptl_wait_until_armed(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                                    uint64_t deadline_ns)
{
    return xp_ptl_wait_inline(pred, arm, arg, deadline_ns);
}

/* With more local ranks than CPUs, the rank a waiter waits for often needs
 * this very CPU, and a futex sleep and its cross-CPU wake-up made each hop of
 * a 4-rank ring on 2 CPUs (ring_bench -n 4) cost 25-37 us here. So before it
 * sleeps, a waiter polls on for up to st->yield_ns (XP_OVERSUB_YIELD_US) with
 * a sched_yield before each look: the CPU goes to whoever is runnable, and
 * the waiter is back within a context switch once nobody else is (1.4-2.1 us
 * per hop). Bounded, so a rank left waiting still sleeps and costs nothing;
 * looks that handle packets (a target serving gets or atomics) restart the
 * bound, as they restart the spin's count.
 * - A yield that comes straight back (st->yield_alone_ns: one costs 0.5-0.6
 *   us on the Zen 4 VM, 1.25 us on the Zen 5 one, where any system call
 *   takes ~1.1 us) found nobody else to run: look on without yielding for
 *   twice that, and let the next waits spin first (st->yield_alone,
 *   xp_ptl_active_begin): two ranks of four ping-ponging while the others
 *   sleep, 0.38-0.52 us one way with a yield before every look, 0.11-0.13.
 *   The bound follows the machine's system-call cost (xp_ptl_yield_alone_ns
 *   of xp_ptl_syscall_cost_ns, at start):
 *   with a fixed 1 us, every yield on the Zen 5 VM looked like a switch and
 *   that ping-pong took 0.86-0.90 us one way.
 * - A rank that computes beside us keeps the CPU a yield gives it for a whole
 *   scheduler slice, while a sleeper's wake-up preempts it sooner: a yield
 *   that took over YIELD_SLOW_NS ends the phase, and the next 1, 2, 4 ..
 *   YIELD_BACKOFF_MAX waits skip it (a ping-pong beside computing ranks,
 *   inline: 250-276 us one way with the phase on every wait, 0.5-86 without).
 * Returns -1 when pred held, else why the phase ended, as the spin's. */
#define YIELD_SLOW_NS 500000u
#define YIELD_ALONE_NS 1000u
#define YIELD_ALONE_MAX_NS 50000u
#define YIELD_BACKOFF_MAX 1024u

uint32_t xp_ptl_yield_alone_ns(uint64_t syscall_ns)
{
    uint64_t ns = 2 * syscall_ns;
    return (uint32_t)(ns < YIELD_ALONE_NS ? YIELD_ALONE_NS
                      : ns > YIELD_ALONE_MAX_NS ? YIELD_ALONE_MAX_NS
                                                : ns);
}

/* This machine's cheapest system call, in ns: the fastest of 16 getppid()
 * calls (the fastest: an interrupt or a preemption only lengthens one).
 * getppid, not sched_yield: a yield may run another rank, which at start-up
 * is likely. */
uint64_t xp_ptl_syscall_cost_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t t0 = xp_time_ns();
        (void)syscall(SYS_getppid);
        uint64_t d = xp_time_ns() - t0;
        if (d < best)
            best = d;
    }
    return best;
}

/* After a yield that came straight back: look without yielding for twice
 * st->yield_alone_ns (so that the looks, not the yields, take most of the
 * time) or until pred holds; *handled notes looks that handled packets.
 * Returns pred's last answer. */
static int alone_spin(xp_ptl_state_t *st, xp_wait_pred_t pred, void *arg, uint64_t now,
                      int *handled)
{
    uint64_t stop = now + 2 * (uint64_t)st->yield_alone_ns;
    for (unsigned i = 1;; i++) {
        xp_cpu_relax();
        if (xp_ptl_poll_inline(st) > 0)
            *handled = 1;
        if (pred(arg))
            return 1;
        if ((i & 15) == 0 && xp_time_ns() >= stop)
            return 0;
    }
}

/* A yield that took a scheduler slice: the next 1, 2, 4 .. waits skip the
 * phase (relaxed: a heuristic, racing threads of a process only blur it). */
static void yield_was_slow(xp_ptl_state_t *st)
{
    uint32_t b = __atomic_load_n(&st->yield_backoff, __ATOMIC_RELAXED);
    b = b == 0 ? 1 : b < YIELD_BACKOFF_MAX ? b * 2 : b;
    __atomic_store_n(&st->yield_backoff, b, __ATOMIC_RELAXED);
    __atomic_store_n(&st->yield_skip, b, __ATOMIC_RELAXED);
}

static int yield_phase(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns,
                       xp_ptl_active_t *a)
{
    xp_ptl_state_t *st = a->st;
    uint32_t skip = __atomic_load_n(&st->yield_skip, __ATOMIC_RELAXED);
    if (skip) {
        __atomic_store_n(&st->yield_skip, skip - 1, __ATOMIC_RELAXED);
        return XP_PTL_SPUN;
    }
    uint64_t now = xp_time_ns(), end = now + st->yield_ns;
    for (;;) {
        uint64_t then = now;
        sched_yield();
        now = xp_time_ns();
        int held, handled = 0;
        while (!(held = pred(arg)) && xp_ptl_poll_inline(st) > 0)
            handled = 1; /* no yield between looks that handle packets */
        if (!held)
            held = pred(arg);
        int alone = now - then < st->yield_alone_ns;
        if (__atomic_load_n(&st->yield_alone, __ATOMIC_RELAXED) != alone)
            __atomic_store_n(&st->yield_alone, alone, __ATOMIC_RELAXED);
        if (!held && alone) {
            held = alone_spin(st, pred, arg, now, &handled);
            now = xp_time_ns();
        }
        if (handled) /* serving peers (gets, atomics): stay, as the spin does */
            end = now + st->yield_ns;
        if (now - then > YIELD_SLOW_NS) {
            yield_was_slow(st);
            return held ? -1 : XP_PTL_SPUN;
        }
        if (held) {
            __atomic_store_n(&st->yield_backoff, 0, __ATOMIC_RELAXED);
            return -1;
        }
        if (__atomic_load_n(&st->abort_gen, __ATOMIC_ACQUIRE) != a->gen)
            return XP_PTL_SPIN_ABORT;
        if (now >= deadline_ns)
            return XP_PTL_SPIN_TIMEOUT;
        if (now >= end)
            return XP_PTL_SPUN;
    }
}

xp_status_t xp_ptl_wait_rest(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                             uint64_t deadline_ns, xp_ptl_active_t *a, int why)
{
    xp_ptl_state_t *st = a->st;
    wait_ctx_t w = { pred, arm, arg, a->gen, st, 0 };
    xp_status_t rc = XP_OK;

    if (why == XP_PTL_SPUN && st->yield_ns) {
        why = yield_phase(pred, arg, deadline_ns, a);
        if (why < 0) {
            xp_ptl_active_end(a);
            return XP_OK;
        }
    }
    if (why != XP_PTL_SPUN) {
        xp_ptl_active_end(a);
        rc = why == XP_PTL_SPIN_TIMEOUT ? XP_ERR_TIMEOUT : XP_OK;
        goto check;
    }
    /* With more ranks than CPUs, not on app_word but on the doorbell, as
     * without a progress thread: a rank computing on our CPU keeps it for
     * its slice against each wake-up (EEVDF), and parking takes two of them
     * per packet, the progress thread's and then ours (a ping-pong beside
     * computing ranks, 4 ranks on 2 CPUs, mp_beside_compute: 720-920 us one
     * way; 58-214 us woken by the packet itself, inline 0.6-152). Large
     * copies, which parking keeps from competing with us, are not split
     * there anyway. */
    if (can_park(st) && !st->poll_yield) {
        if (a->counted)
            end_active(st, a);
        rc = park_app(&w, deadline_ns);
        goto check;
    }
    xp_ptl_active_end(a);
    /* Passive phase without a progress thread (or beside one that stays
     * parked, oversubscribed: above): sleep on the doorbell; arrivals and
     * local updates ring it (the latter only while app_db_sleepers > 0:
     * xp_ptl_notify). The fence
     * pairs with notify's: either it sees us here or our next check of the
     * predicate sees its update. xp_tl_wait (not xp_doorbell_wait): with
     * XP_SHM_ASYM_FENCE the sleeper's membarrier is what makes fence-free
     * senders safe. */
    __atomic_add_fetch(&st->app_sleepers, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&st->app_db_sleepers, 1, __ATOMIC_SEQ_CST);
    xp_fence();
    do
        rc = sleep_once(&w, deadline_ns);
    while (rc == XP_OK && !wait_pred(&w));
    __atomic_sub_fetch(&st->app_db_sleepers, 1, __ATOMIC_ACQ_REL);
    __atomic_sub_fetch(&st->app_sleepers, 1, __ATOMIC_ACQ_REL);
check:
    /* The loops above end with rc XP_OK only once wait_pred held: without
     * an abort since we began, that was pred, and it is not asked again. */
    if (rc == XP_OK && __atomic_load_n(&st->abort_gen, __ATOMIC_ACQUIRE) != w.gen &&
        !pred(arg))
        return __atomic_load_n(&st->user_abort_gen, __ATOMIC_ACQUIRE) != a->user_gen
                   ? XP_ERR_ABORTED
                   : XP_ERR_CANCELED;
    return rc;
}

/* Once per process (PtlInit): private expedited membarrier, which only
 * interrupts CPUs that run a thread of this process (engine.h). */
static int asym_fence_register(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        return 0;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* ---------------------------------------------------------------- progress thread */

/* The progress thread's first sleep after a poll that found nothing: a nap
 * without the membarrier that XP_SHM_ASYM_FENCE asks of a sleeper (~4 us of
 * the ~10 per message while the application spins on memory and the progress
 * thread sleeps after every packet). Senders see it asleep and ring, unless
 * their packet raced with its going to sleep (a window of a store buffer's
 * drain): then the nap's end finds the packet. An idle process pays one such
 * wake-up per idle period, then sleeps for good behind the membarrier. */
#define NAP_NS 200000

/* The progress thread's reasons to wake, queued answers aside. */
static int thread_retry_pred(void *arg)
{
    xp_ptl_state_t *st = arg;
    if (__atomic_load_n(&st->progress_stop, __ATOMIC_ACQUIRE))
        return 1;
    if (xp_ptl_spinning(st))
        return 1;
    return xp_tl_pending();
}

static int thread_pred(void *arg)
{
    return thread_retry_pred(arg) || deferred(arg);
}

/* Whether the progress thread should (stay) parked: an application thread
 * spins now, or application threads began at least BUSY_PHASES active
 * phases since the last look (*phases) and none handed polling over since
 * (end_active bumps park_word, `seen`, last looked at in *handoffs): they
 * spend their time in waits and are between two of them, e.g. in the
 * PtlPut of a ping-pong, and will poll again within microseconds. A timed
 * wake-up that found one there used to poll, spin before a doorbell sleep
 * and make peers ring, all on the CPU the application thread needs (xprun
 * binds both to one): ~300 us per wake-up, 3-5 % of an 8 B ping-pong. A
 * thread that waits rarely (computes between waits: peers' requests must
 * not wait for its next wait) or left is served from the next timed
 * wake-up on (<= 2 PARK_MAX_NS, mp_progress_handback). `park_ns`: the
 * length of the park that ends now (the count of phases scales with it). */
static int app_active(xp_ptl_state_t *st, uint32_t seen, uint32_t *phases, uint32_t *handoffs,
                      uint64_t park_ns)
{
    int active = xp_ptl_spinning(st);
    uint32_t began = __atomic_load_n(&st->active_phases, __ATOMIC_RELAXED);
    int recent = began - *phases >= BUSY_PHASES * (uint32_t)(park_ns / PARK_NS) &&
                 seen == *handoffs;
    *phases = began;
    *handoffs = seen;
    return active != 0 || recent;
}

/* The progress thread's poll. When a handler woke a parked application
 * thread (xp_ptl_notify moved app_word), that thread runs on this CPU
 * (xprun binds a rank's threads to one) only once we stop, and the scheduler
 * let us go on first: through the next poll round and the doorbell wait's
 * spin (XP_SPIN_COUNT looks), ~100 us. Let it run now. */
static int thread_progress(xp_ptl_state_t *st)
{
    uint32_t word = __atomic_load_n(&st->app_word, __ATOMIC_RELAXED);
    int n = xp_ptl_progress();
    if (__atomic_load_n(&st->app_word, __ATOMIC_RELAXED) != word)
        sched_yield();
    return n;
}

/* Looks the progress thread makes before its doorbell sleep while it
 * serves a parked application thread (serving_parked): enough to see the
 * next request of a peer that answers each of ours at once (a fetch-add
 * round trip is 0.2-0.8 us here, a look ~30 ns), few enough that a rank
 * receiving now and then spends a few microseconds per packet. Never more
 * than the waiters' own XP_SPIN_COUNT. */
#define PARKED_SPINS 256

static long parked_spins(void)
{
    long n = xp_tl_spin_count();
    return n < PARKED_SPINS ? n : PARKED_SPINS;
}

/* Whether the progress thread, about to sleep where it shares its CPU with
 * the application (progress_nap: no spin, a nap), serves an application
 * thread parked in a wait (park_app). That thread sleeps until its
 * condition, so a short spin here takes the CPU from nobody; without one,
 * each request of a peer that answers at once cost the peer a futex wake
 * and us a sleep: a ring fetch-add took 1.5-2.9 us instead of ~0.25 in
 * about one run in thirty of ptl_atomic_lat (whenever the target's thread
 * had parked at the start of a repetition), 1.1-1.5 in mp_fetch_parked, and
 * 50-78 us with XP_SPIN_COUNT=1-16, where it always parks. Not with more
 * ranks than CPUs (no nap there: a short spin of its own, and the CPU is
 * other ranks' too). */
static int serving_parked(const xp_ptl_state_t *st)
{
    return st->progress_nap && __atomic_load_n(&st->app_parked, __ATOMIC_RELAXED) != 0;
}

static void *progress_main(void *arg)
{
    xp_ptl_state_t *st = arg;
    uint32_t phases = __atomic_load_n(&st->active_phases, __ATOMIC_RELAXED);
    uint32_t handoffs = __atomic_load_n(&st->park_word, __ATOMIC_SEQ_CST);
    uint64_t park_ns = PARK_NS;
    while (!__atomic_load_n(&st->progress_stop, __ATOMIC_ACQUIRE)) {
        /* Read before the spin slots, so end_active's bump is not missed. */
        uint32_t seen = __atomic_load_n(&st->park_word, __ATOMIC_SEQ_CST);
        if (app_active(st, seen, &phases, &handoffs, park_ns)) {
            if (xp_futex_wait(&st->park_word, seen, park_ns) == XP_ERR_TIMEOUT)
                park_ns = park_ns * 2 <= PARK_MAX_NS ? park_ns * 2 : PARK_MAX_NS;
            else
                park_ns = PARK_NS; /* handed back (or a signal) */
            continue;
        }
        park_ns = PARK_NS;
        if (thread_progress(st) > 0)
            continue;
        /* Packets pending but the poll lock taken: another thread handles
         * them (maybe a long single-copy read). Wait for it asleep on the
         * lock instead of spinning: xprun binds both threads of a rank to
         * one CPU, and this spin cost a 4 MiB ping-pong 1-2 ms. */
        if (xp_tl_pending()) {
            xp_poll_lock(st);
            xp_poll_unlock(st);
            continue;
        }
        if (deferred(st)) /* a peer's ring is full: retry soon */
            xp_tl_wait_spin(thread_retry_pred, st, xp_time_ns() + DEFER_RETRY_NS,
                            st->progress_spins);
        else if (serving_parked(st))
            xp_tl_wait_spin(thread_pred, st, UINT64_MAX, parked_spins());
        else if (!st->progress_nap || !xp_tl_nap(thread_pred, st, NAP_NS))
            xp_tl_wait_spin(thread_pred, st, UINT64_MAX, st->progress_spins);
        thread_progress(st);
    }
    return NULL;
}

/* What the wait hook's spin waits for: packets, or the caller's ready(). */
typedef struct hook_wait {
    int (*ready)(void *);
    void *arg;
} hook_wait_t;

static int pending_or_ready(void *p)
{
    hook_wait_t *w = p;
    return xp_tl_pending() || (w->ready && w->ready(w->arg));
}

/* The runtime's wait hook with XP_PROGRESS=inline (util/context.h): a rank
 * blocked in xp_barrier or xp_kv_fence still answers Portals requests. An
 * MPI-style runtime barrier in the middle of a Portals program is common,
 * and without this its peers' gets, atomics and acked puts to this rank
 * hang until it leaves the barrier (test_engine_atomic_np* did). */
static int runtime_wait_hook(uint64_t max_ns, int (*ready)(void *), void *arg)
{
    int n = xp_ptl_progress();
    if (n > 0)
        return n;
    /* The caller's condition ends the spin too: a signal wait whose task
     * this call just handed to a GPU sees the GPU's store at once instead
     * of at the end of the slice (mp_xtq_cuda_inline: 100-1400 us a task
     * before, the GPU's own 25-40 us after). */
    hook_wait_t w = {ready, arg};
    xp_tl_wait(pending_or_ready, &w, xp_time_ns() + max_ns);
    return xp_ptl_progress();
}

/* The runtime's look at Portals packets (util/context.h), in both modes:
 * the packets handled, or 1 when packets wait but another thread holds the
 * poll lock (the progress thread, in a handler that may be long: a large
 * copy that follows its writer). Then it waits for the lock, asleep if need
 * be (the holder often shares our CPU: xprun binds a rank's threads to one),
 * so that by the time this says 0 what was pending has been handled. */
static int runtime_poll_hook(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    int n = xp_ptl_progress();
    if (n > 0)
        return n;
    /* Also when nothing is pending: the progress thread may have handled
     * our packets just before, and the caller reads what its handlers
     * wrote (the lock's release and acquire order it). */
    int pending = xp_tl_pending() != 0;
    xp_poll_lock(st);
    xp_poll_unlock(st);
    return pending;
}

/* How the progress thread falls asleep when its poll finds nothing: its
 * spin first (st->progress_spins) and whether it naps (st->progress_nap).
 * - A CPU likely spare for it (its mask holds two or more CPUs and the node
 *   at least two per local rank): XP_SPIN_COUNT looks, then the doorbell.
 * - Sharing a CPU with the application (xprun binds a rank's threads to
 *   one; on a full node every CPU is theirs): no spin, and a nap first. It
 *   runs only while no application thread waits in the library, so they
 *   compute or spin on memory (shmem_wait_until) on its CPU: there a spin of
 *   XP_SPIN_COUNT looks (~140 us on the 2.1 GHz dev VM) after every packet
 *   held the CPU that the application needs to see what the packet wrote (a
 *   put-and-spin-on-the-flag ping-pong, OpenSHMEM's put + wait_until: 77-87
 *   us per message, p99 2 ms; 10 without the spin; the reference suite's
 *   test_amo_barrier passed 0 of 10 runs). A sleeping progress thread is
 *   woken by the packet's doorbell ring, and the wake-up preempts the
 *   spinning application thread at once.
 * - More local ranks than CPUs: the short spin waiters use there
 *   (xp_tl_spin_count(), ~1-2 us), no nap. Its CPU is shared with other
 *   ranks too, and a short look lets it see its own application thread
 *   begin a wait and park off the doorbell; asleep on the doorbell instead,
 *   every peer's send rings it (ring_bench -n 4 on 2 CPUs: 13-22 us per hop
 *   without the spin or with the nap, 8.2-10.4 with the spin and no nap). */
static void progress_thread_sleep_mode(xp_ptl_state_t *st)
{
    cpu_set_t set;
    long ncpu = xp_tl_node_cpus();
    int spare = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2 &&
                ncpu >= 2 && (long)xp_local_size() * 2 <= ncpu;
    int oversubscribed = xp_tl_oversubscribed();
    st->progress_spins = spare || oversubscribed ? xp_tl_spin_count() : 0;
    /* (While an application thread is parked in a wait, a napping thread
     * spins a little after all: serving_parked.) */
    st->progress_nap = !spare && !oversubscribed;
}

xp_status_t xp_ptl_progress_start(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    int err;
    /* Before any NI exists, so no handler runs yet: handlers read it. */
    if (!st->asym_fence)
        __atomic_store_n(&st->asym_fence, asym_fence_register(), __ATOMIC_SEQ_CST);
    st->poll_yield = xp_tl_oversubscribed();
    st->yield_ns = st->poll_yield ? (uint64_t)xp_config()->oversub_yield_us * 1000u : 0;
    if (st->poll_yield) {
        uint64_t sys_ns = xp_ptl_syscall_cost_ns();
        st->yield_alone_ns = xp_ptl_yield_alone_ns(sys_ns);
        xp_info("%d local ranks on %ld CPUs: blocking waits yield the CPU for up to %ld us "
                "before they sleep (XP_OVERSUB_YIELD_US); a system call takes %lu ns, so a "
                "yield under %u ns found nobody to run",
                xp_local_size(), xp_tl_node_cpus(), (long)xp_config()->oversub_yield_us,
                (unsigned long)sys_ns, st->yield_alone_ns);
    }
    if (xp_config()->progress != 0) { /* "inline" */
        __atomic_store_n(&xp_ctx.runtime_wait_hook, runtime_wait_hook, __ATOMIC_RELEASE);
        __atomic_store_n(&xp_ctx.runtime_poll_hook, runtime_poll_hook, __ATOMIC_RELEASE);
        return XP_OK;
    }
    st->progress_stop = 0;
    progress_thread_sleep_mode(st);
    err = pthread_create(&st->progress_thread, NULL, progress_main, st);
    if (err) {
        errno = err;
        xp_log_errno(XP_LOG_ERROR, "PtlInit: cannot start the progress thread");
        return XP_ERR_NO_RESOURCE;
    }
    st->progress_running = 1;
    __atomic_store_n(&xp_ctx.runtime_poll_hook, runtime_poll_hook, __ATOMIC_RELEASE);
    return XP_OK;
}

void xp_ptl_progress_stop(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    /* Before the transports go: the runtime stops calling into the engine
     * (a thread still inside the hook while another runs PtlFini is the
     * application's race, as any Portals call during PtlFini is). */
    xp_ctx_drop_runtime_hooks();
    if (!st->progress_running)
        return;
    __atomic_store_n(&st->progress_stop, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&st->park_word, 1, __ATOMIC_ACQ_REL);
    xp_futex_wake(&st->park_word, INT_MAX);
    /* The thread may sleep on the doorbell, which xp_ptl_notify no longer
     * rings for it: ring it directly. */
    if (xp_tl_doorbell())
        xp_doorbell_ring(xp_tl_doorbell());
    pthread_join(st->progress_thread, NULL);
    st->progress_running = 0;
}
