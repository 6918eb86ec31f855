/*
 * test_poll_lock: the poll lock (ptl/engine.h) excludes, wakes its sleepers
 * and never loses a wake-up: its release is a plain store, and a thread that
 * sleeps for it relies on the fence handshake with the holder's look at
 * `sleepers`. Threads take it with xp_poll_lock (which sleeps when it is
 * busy) or xp_poll_trylock, hold it for a while (so that others go to
 * sleep) or not at all, and update a plain counter inside; a lost wake-up
 * shows as a hang (the ctest timeout), a broken exclusion as a wrong count.
 * Run once with full fences on both sides, once with the private expedited
 * membarrier registered (the light side a compiler barrier), as PtlInit
 * sets it up.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ptl/engine.h"
#include "xp_test.h"

#define THREADS 4
#define ROUNDS 20000

typedef struct shared {
    xp_ptl_state_t *st;
    long counter;      /* only changed with the poll lock held */
    int inside;        /* threads inside: must stay <= 1 */
    int bad;           /* a second thread was seen inside */
    long tries_won;    /* trylock successes (under the lock) */
} shared_t;

typedef struct arg {
    shared_t *sh;
    int id;
} arg_t;

static void hold_a_while(unsigned i)
{
    /* Now and then hold the lock long enough for waiters to go to sleep. */
    if (i % 512 == 0) {
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, NULL);
    } else if (i % 16 == 0) {
        for (int k = 0; k < 200; k++)
            xp_cpu_relax();
    }
}

static void critical(shared_t *sh, unsigned i)
{
    if (__atomic_add_fetch(&sh->inside, 1, __ATOMIC_RELAXED) != 1)
        __atomic_store_n(&sh->bad, 1, __ATOMIC_RELAXED);
    long c = sh->counter;
    hold_a_while(i);
    sh->counter = c + 1;
    __atomic_sub_fetch(&sh->inside, 1, __ATOMIC_RELAXED);
}

static void *worker(void *p)
{
    arg_t *a = p;
    shared_t *sh = a->sh;
    for (unsigned i = 0; i < ROUNDS; i++) {
        /* Odd threads mostly try (as the pollers do), even ones block (as
         * the progress thread, send_then_event and teardown do). */
        if ((a->id & 1) && i % 4 != 0) {
            while (!xp_poll_trylock(sh->st))
                xp_cpu_relax();
            sh->tries_won++;
        } else {
            xp_poll_lock(sh->st);
        }
        critical(sh, i + (unsigned)a->id);
        xp_poll_unlock(sh->st);
    }
    return NULL;
}

static void run(xp_ptl_state_t *st)
{
    shared_t sh = { st, 0, 0, 0, 0 };
    pthread_t t[THREADS];
    arg_t a[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i].sh = &sh;
        a[i].id = i;
        XP_CHECK_EQ(pthread_create(&t[i], NULL, worker, &a[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    XP_CHECK_EQ(sh.bad, 0);
    XP_CHECK_EQ(sh.counter, (long)THREADS * ROUNDS);
    XP_CHECK_EQ(st->poll_lock.held, 0u);
    XP_CHECK_EQ(st->poll_lock.sleepers, 0u);
}

int main(void)
{
    xp_ptl_state_t *st = xp_ptl_state();
    XP_CHECK(st != NULL);
    if (!st)
        return xp_test_result();

    /* Not recursive: the holder's own trylock fails. */
    XP_CHECK(xp_poll_trylock(st));
    XP_CHECK(!xp_poll_trylock(st));
    xp_poll_unlock(st);
    XP_CHECK(xp_poll_trylock(st));
    xp_poll_unlock(st);

    st->asym_fence = 0;
    run(st);

    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        __atomic_store_n(&st->asym_fence, 1, __ATOMIC_SEQ_CST);
        run(st);
    } else {
        fprintf(stderr, "no private expedited membarrier: asymmetric round not run\n");
    }
    return xp_test_result();
}
