/* util/atomic: futex timeouts, doorbells between threads and between processes. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/atomic.h"
#include "util/clock.h"
#include "xp_test.h"

#define ROUNDS 1000
#define WAIT_NS (10ull * 1000000000ull) /* per wait: generous on a loaded machine */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void test_futex_wait(void)
{
    uint32_t word = 5;
    /* Value differs: returns at once. */
    XP_CHECK_EQ(xp_futex_wait(&word, 4, UINT64_MAX), XP_OK);
    uint64_t t0 = xp_time_ns();
    XP_CHECK_EQ(xp_futex_wait(&word, 5, 30 * 1000000ull), XP_ERR_TIMEOUT);
    XP_CHECK_INT(xp_time_ns() - t0, >=, 29 * 1000000ull);
    xp_futex_wake(&word, 1); /* nobody waiting: fine */
}

/* ---- a ping-pong through two doorbells; the state may live in shared memory */
typedef struct pingpong {
    xp_doorbell_t to_b, to_a;
    uint32_t turn; /* even: a's turn, odd: b's */
    uint32_t ok_b;
} pingpong_t;

typedef struct want {
    uint32_t *word;
    uint32_t value;
} want_t;

static int turn_is(void *arg)
{
    want_t *w = arg;
    return xp_load_acquire(w->word) == w->value;
}

/* Side a takes even turns (0, 2, ...), b odd ones; each rings the other. */
static int play(pingpong_t *pp, int side)
{
    xp_doorbell_t *mine = side ? &pp->to_b : &pp->to_a;
    xp_doorbell_t *theirs = side ? &pp->to_a : &pp->to_b;
    for (uint32_t r = (uint32_t)side; r < 2 * ROUNDS; r += 2) {
        want_t w = {&pp->turn, r};
        if (xp_doorbell_wait(mine, turn_is, &w, xp_time_ns() + WAIT_NS) != XP_OK)
            return 0;
        xp_store_release(&pp->turn, r + 1);
        xp_doorbell_ring(theirs);
    }
    return 1;
}

static void *player_b(void *arg)
{
    pingpong_t *pp = arg;
    pp->ok_b = (uint32_t)play(pp, 1);
    return NULL;
}

static void test_doorbell_threads(void)
{
    pingpong_t pp;
    xp_doorbell_init(&pp.to_a);
    xp_doorbell_init(&pp.to_b);
    pp.turn = 0;
    pp.ok_b = 0;
    pthread_t t;
    uint64_t t0 = xp_time_ns();
    XP_REQUIRE(pthread_create(&t, NULL, player_b, &pp) == 0);
    XP_CHECK(play(&pp, 0));
    pthread_join(t, NULL);
    XP_CHECK(pp.ok_b);
    XP_CHECK_EQ(pp.turn, 2 * ROUNDS);
    fprintf(stderr, "doorbell, threads: %d round trips, %.1f us each (XP_SPIN_COUNT=10)\n",
            ROUNDS, (double)(xp_time_ns() - t0) / ROUNDS / 1000.0);
}

static void test_doorbell_processes(void)
{
    pingpong_t *pp = mmap(NULL, sizeof *pp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    XP_REQUIRE(pp != MAP_FAILED);
    xp_doorbell_init(&pp->to_a);
    xp_doorbell_init(&pp->to_b);
    pp->turn = 0;
    uint64_t t0 = xp_time_ns();
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(play(pp, 1) ? 0 : 1);
    XP_CHECK(play(pp, 0));
    int status;
    XP_REQUIRE(waitpid(pid, &status, 0) == pid);
    XP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    XP_CHECK_EQ(pp->turn, 2 * ROUNDS);
    fprintf(stderr, "doorbell, processes: %d round trips, %.1f us each\n", ROUNDS,
            (double)(xp_time_ns() - t0) / ROUNDS / 1000.0);
    munmap(pp, sizeof *pp);
}

/* A late ring wakes a sleeper; no ring means a timeout at the deadline. */
static void *ring_later(void *arg)
{
    pingpong_t *pp = arg;
    sleep_ms(50);
    xp_store_release(&pp->turn, 1);
    xp_doorbell_ring(&pp->to_a);
    return NULL;
}

static void test_doorbell_sleep_and_timeout(void)
{
    pingpong_t pp;
    xp_doorbell_init(&pp.to_a);
    pp.turn = 0;
    want_t w = {&pp.turn, 1};
    uint64_t t0 = xp_time_ns();
    XP_CHECK_EQ(xp_doorbell_wait(&pp.to_a, turn_is, &w, t0 + 30 * 1000000ull), XP_ERR_TIMEOUT);
    XP_CHECK_INT(xp_time_ns() - t0, >=, 29 * 1000000ull);
    XP_CHECK_EQ(pp.to_a.sleepers, 0);

    pthread_t t;
    XP_REQUIRE(pthread_create(&t, NULL, ring_later, &pp) == 0);
    t0 = xp_time_ns();
    XP_CHECK_EQ(xp_doorbell_wait(&pp.to_a, turn_is, &w, t0 + WAIT_NS), XP_OK);
    XP_CHECK_INT(xp_time_ns() - t0, <, WAIT_NS);
    pthread_join(t, NULL);
    XP_CHECK_EQ(pp.to_a.sleepers, 0);

    /* xp_wait_until on a plain futex word. */
    uint32_t word = 0;
    want_t never = {&word, 7};
    t0 = xp_time_ns();
    XP_CHECK_EQ(xp_wait_until(turn_is, &never, &word, t0 + 20 * 1000000ull), XP_ERR_TIMEOUT);
    XP_CHECK_INT(xp_time_ns() - t0, >=, 19 * 1000000ull);
    want_t now = {&word, 0};
    XP_CHECK_EQ(xp_wait_until(turn_is, &now, &word, 0), XP_OK);
}

/* One futex call per sleep: a ring takes the sleeper's mark, and the rings
 * after it, until the sleeper marks again, make none (seq still moves). */
static void test_doorbell_mark(void)
{
    xp_doorbell_t db;
    xp_doorbell_init(&db);
    XP_CHECK_EQ(db.armed, 0);
    db.sleepers = 1; /* a sleeper counted, woken but not yet running */
    xp_doorbell_arm(&db);
    XP_CHECK_EQ(db.armed, 1);
    xp_doorbell_ring(&db); /* takes the mark: the futex call */
    XP_CHECK_EQ(db.armed, 0);
    XP_CHECK_EQ(db.seq, 1);
    xp_doorbell_ring(&db); /* no mark: no call */
    XP_CHECK_EQ(db.armed, 0);
    XP_CHECK_EQ(db.seq, 2);
}

/* Rings that take a sleeper's mark with nothing to publish (as rings for
 * other waiters of the process do) never make it miss the ring that
 * publishes: ROUNDS waits, each after 0-3 empty rings, none lost. */
typedef struct burst {
    xp_doorbell_t db;
    uint32_t turn, ack;
    uint32_t ok;
} burst_t;

static void *burst_waiter(void *arg)
{
    burst_t *b = arg;
    uint32_t ok = 1;
    for (uint32_t i = 1; i <= ROUNDS && ok; i++) {
        want_t w = {&b->turn, i};
        ok = xp_doorbell_wait(&b->db, turn_is, &w, xp_time_ns() + WAIT_NS) == XP_OK;
        xp_store_release(&b->ack, i);
    }
    b->ok = ok;
    return NULL;
}

static void test_doorbell_burst(void)
{
    burst_t b = {.turn = 0, .ack = 0, .ok = 0};
    xp_doorbell_init(&b.db);
    pthread_t t;
    XP_REQUIRE(pthread_create(&t, NULL, burst_waiter, &b) == 0);
    for (uint32_t i = 1; i <= ROUNDS; i++) {
        if (i % 8 == 0)
            sleep_ms(1); /* let it fall asleep now and then */
        for (uint32_t k = 0; k < i % 4; k++)
            xp_doorbell_ring(&b.db);
        xp_store_release(&b.turn, i);
        xp_doorbell_ring(&b.db);
        uint64_t until = xp_time_ns() + WAIT_NS;
        while (xp_load_acquire(&b.ack) < i && xp_time_ns() < until)
            sched_yield();
        if (xp_load_acquire(&b.ack) < i)
            break;
    }
    pthread_join(t, NULL);
    XP_CHECK_EQ(b.ok, 1);
    XP_CHECK_EQ(b.ack, ROUNDS);
    XP_CHECK_EQ(b.db.sleepers, 0);
}

static void test_atomics(void)
{
    uint64_t v = 5;
    XP_CHECK_EQ(xp_fetch_add(&v, 3), 5);
    XP_CHECK_EQ(xp_fetch_sub(&v, 1), 8);
    XP_CHECK_EQ(xp_exchange(&v, 100), 7);
    uint64_t expected = 99;
    XP_CHECK(!xp_cas(&v, &expected, 1));
    XP_CHECK_EQ(expected, 100);
    XP_CHECK(xp_cas(&v, &expected, 1));
    XP_CHECK_EQ(xp_load_relaxed(&v), 1);
}

int main(void)
{
    /* Few spins, so the waits really go to sleep on the futex. */
    setenv("XP_SPIN_COUNT", "10", 1);
    test_atomics();
    test_futex_wait();
    test_doorbell_sleep_and_timeout();
    test_doorbell_mark();
    test_doorbell_burst();
    test_doorbell_threads();
    test_doorbell_processes();
    return xp_test_result();
}
