/*
 * test_eq - event queues on a stand-in engine: errors, order, EMPTY, the
 * DROPPED rule, waiting and polling (timeouts, which, free and abort
 * interrupts), several producers and consumers at once.
 */
#include <pthread.h>
#include <stdlib.h>

#include "objects_fake_engine.h"
#include "ptl/eq.h"
#include "ptl/progress.h"
#include "util/clock.h"
#include "xp_test.h"

static ptl_event_t ev_of(uint64_t n)
{
    ptl_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = PTL_EVENT_PUT;
    ev.hdr_data = n;
    ev.mlength = n * 3;
    return ev;
}

static void test_errors(void)
{
    ptl_handle_eq_t eq, eqs[4], extra;
    ptl_event_t ev;

    XP_CHECK_EQ(PtlEQAlloc(fake.ni[0].handle, 0, &eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQAlloc(fake.ni[0].handle, 8, NULL), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQAlloc(PTL_INVALID_HANDLE, 8, &eq), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQAlloc(fake.ni[0].handle, (ptl_size_t)1 << 40, &eq), PTL_NO_SPACE);
    for (int i = 0; i < 4; i++)
        XP_CHECK_EQ(PtlEQAlloc(fake.ni[0].handle, 8, &eqs[i]), PTL_OK);
    XP_CHECK_EQ(PtlEQAlloc(fake.ni[0].handle, 8, &extra), PTL_NO_SPACE); /* max_eqs = 4 */
    XP_CHECK_EQ(PtlEQFree(eqs[3]), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eqs[3]), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQGet(eqs[3], &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQWait(eqs[3], &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQGet(PTL_EQ_NONE, &ev), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQGet(eqs[0], NULL), PTL_ARG_INVALID);
    XP_CHECK(xp_eq_from_handle(eqs[3]) == NULL);
    for (int i = 0; i < 3; i++)
        XP_CHECK_EQ(PtlEQFree(eqs[i]), PTL_OK);
    XP_CHECK_EQ(fake.ni[0].obj_count[XP_NI_OBJ_EQ], 0);
}

static void test_order_and_drop(void)
{
    ptl_handle_eq_t h;
    xp_eq_t *eq;
    ptl_event_t ev;

    XP_REQUIRE(PtlEQAlloc(fake.ni[0].handle, 3, &h) == PTL_OK); /* room for 4 */
    eq = xp_eq_from_handle(h);
    XP_REQUIRE(eq != NULL);
    XP_CHECK_EQ(PtlEQGet(h, &ev), PTL_EQ_EMPTY);
    for (int i = 1; i <= 4; i++) {
        ptl_event_t e = ev_of(i);
        XP_CHECK(xp_eq_has_space(eq));
        XP_CHECK_EQ(xp_eq_push(eq, &e), 0);
    }
    XP_CHECK(!xp_eq_has_space(eq));
    {
        ptl_event_t e = ev_of(99);
        XP_CHECK(xp_eq_try_push(eq, &e) != 0); /* full, and no loss recorded */
    }
    XP_CHECK_EQ(PtlEQGet(h, &ev), PTL_OK);
    XP_CHECK_EQ(ev.hdr_data, 1);
    {
        ptl_event_t e = ev_of(1);
        XP_CHECK_EQ(xp_eq_try_push(eq, &e), 0);
    }
    /* now 2 3 4 1 are queued; rotate back to 1 2 3 4 for the checks below */
    for (int i = 0; i < 3; i++) {
        ptl_event_t e;
        XP_CHECK_EQ(PtlEQGet(h, &e), PTL_OK);
        XP_CHECK_EQ(xp_eq_try_push(eq, &e), 0);
    }
    {
        ptl_event_t e = ev_of(5);
        XP_CHECK(xp_eq_push(eq, &e) != 0); /* dropped */
    }
    /* The four queued events come out in order; the first one taken after
     * the loss reports it (the queue is still full then, so no later event
     * could carry the news), and only once. */
    for (int i = 1; i <= 4; i++) {
        XP_CHECK_EQ(PtlEQGet(h, &ev), i == 1 ? PTL_EQ_DROPPED : PTL_OK);
        XP_CHECK_EQ(ev.hdr_data, i);
        XP_CHECK_EQ(ev.mlength, 3 * i);
    }
    XP_CHECK_EQ(PtlEQGet(h, &ev), PTL_EQ_EMPTY);
    /* Later events are not marked; a new loss is reported again. */
    {
        ptl_event_t e6 = ev_of(6), e7 = ev_of(7);
        XP_CHECK_EQ(xp_eq_push(eq, &e6), 0);
        XP_CHECK_EQ(xp_eq_push(eq, &e7), 0);
    }
    XP_CHECK_EQ(PtlEQGet(h, &ev), PTL_OK);
    XP_CHECK_EQ(ev.hdr_data, 6);
    XP_CHECK_EQ(PtlEQWait(h, &ev), PTL_OK);
    XP_CHECK_EQ(ev.hdr_data, 7);
    for (int i = 0; i < 5; i++) {
        ptl_event_t e = ev_of(10 + i);
        XP_CHECK_EQ(xp_eq_push(eq, &e), i < 4 ? 0 : 1); /* the 5th is lost */
    }
    for (int i = 0; i < 4; i++) {
        XP_CHECK_EQ(PtlEQGet(h, &ev), i == 0 ? PTL_EQ_DROPPED : PTL_OK);
        XP_CHECK_EQ(ev.hdr_data, 10 + i);
    }
    XP_CHECK_EQ(PtlEQFree(h), PTL_OK);
    {
        ptl_event_t e = ev_of(8);
        XP_CHECK(xp_eq_push(eq, &e) != 0); /* a racing producer finds it dead */
    }
}

typedef struct act {
    ptl_handle_eq_t h;
    int mode; /* 0: push one event; 1: free; 2: abort */
    int late; /* the main thread never got into its wait */
} act_t;

/* Acts once the main thread is inside its wait, so the wake-up, interrupt
 * or free is always one that arrives during the wait. */
static void *actor(void *arg)
{
    act_t *a = arg;
    a->late = !fake_await_waiters(1, "EQ actor");
    if (a->mode == 0) {
        ptl_event_t e = ev_of(42);
        xp_eq_push(xp_eq_from_handle(a->h), &e);
    } else if (a->mode == 1) {
        PtlEQFree(a->h);
    } else {
        xp_ptl_interrupt();
    }
    return NULL;
}

static void test_wait_poll(void)
{
    ptl_handle_eq_t h[2], other;
    ptl_event_t ev;
    unsigned int which = 99;
    pthread_t th;
    act_t a;
    uint64_t t0;

    XP_REQUIRE(PtlEQAlloc(fake.ni[0].handle, 16, &h[0]) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(fake.ni[0].handle, 16, &h[1]) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(fake.ni[1].handle, 16, &other) == PTL_OK);
    XP_CHECK_EQ(PtlEQPoll(h, 0, 0, &ev, &which), PTL_ARG_INVALID);
    XP_CHECK_EQ(PtlEQPoll(h, 2, 0, NULL, &which), PTL_ARG_INVALID);
    {
        ptl_handle_eq_t mixed[2] = {h[0], other};
        XP_CHECK_EQ(PtlEQPoll(mixed, 2, 0, &ev, &which), PTL_ARG_INVALID);
    }
    XP_CHECK_EQ(PtlEQPoll(h, 2, 0, &ev, &which), PTL_EQ_EMPTY);
    t0 = xp_time_ns();
    XP_CHECK_EQ(PtlEQPoll(h, 2, 50, &ev, &which), PTL_EQ_EMPTY);
    XP_CHECK(xp_time_ns() - t0 >= 45000000ull);
    XP_CHECK_EQ(which, 99);
    /* An event on the second queue, delivered while polling forever. */
    a = (act_t){h[1], 0, 0};
    pthread_create(&th, NULL, actor, &a);
    XP_CHECK_EQ(PtlEQPoll(h, 2, PTL_TIME_FOREVER, &ev, &which), PTL_OK);
    pthread_join(th, NULL);
    XP_CHECK(!a.late);
    XP_CHECK_EQ(which, 1);
    XP_CHECK_EQ(ev.hdr_data, 42);
    /* PtlEQWait woken by an event, interrupted by abort, then by a free. */
    a = (act_t){h[0], 0, 0};
    pthread_create(&th, NULL, actor, &a);
    XP_CHECK_EQ(PtlEQWait(h[0], &ev), PTL_OK);
    pthread_join(th, NULL);
    XP_CHECK(!a.late);
    XP_CHECK_EQ(ev.hdr_data, 42);
    a = (act_t){h[0], 2, 0};
    pthread_create(&th, NULL, actor, &a);
    XP_CHECK_EQ(PtlEQWait(h[0], &ev), PTL_INTERRUPTED);
    pthread_join(th, NULL);
    XP_CHECK(!a.late);
    fake.aborted = 0;
    a = (act_t){h[0], 1, 0};
    pthread_create(&th, NULL, actor, &a);
    XP_CHECK_EQ(PtlEQWait(h[0], &ev), PTL_INTERRUPTED);
    pthread_join(th, NULL);
    XP_CHECK(!a.late);
    XP_CHECK_EQ(PtlEQFree(h[1]), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(other), PTL_OK);
}

/* Two producers, two consumers, a small queue: every event exactly once.
 * 10000 events wrap the 64-entry ring about 150 times; more only adds time
 * on a loaded machine, where every preemption of a thread holding the EQ's
 * mutex stalls the other three. Every loop stops at a shared deadline (a
 * lost event would otherwise spin the others forever) and the test then
 * says how far each side got. */
#define PER_PRODUCER 5000
typedef struct mpmc {
    ptl_handle_eq_t h;
    uint64_t deadline;
    int producer;
    int pushed[2];       /* per producer (atomic) */
    unsigned char *seen; /* 2 * PER_PRODUCER */
    int taken;
    int bad;
    int expired;
} mpmc_t;

static int mpmc_expired(mpmc_t *m)
{
    if (xp_time_ns() < m->deadline)
        return 0;
    __atomic_store_n(&m->expired, 1, __ATOMIC_RELAXED);
    return 1;
}

static void *producer(void *arg)
{
    mpmc_t *m = arg;
    xp_eq_t *eq = xp_eq_from_handle(m->h);
    int id = __atomic_fetch_add(&m->producer, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < PER_PRODUCER; i++) {
        ptl_event_t e = ev_of((uint64_t)(id * PER_PRODUCER + i));
        /* full: wait for the consumers (flow control) */
        for (unsigned attempt = 0; xp_eq_try_push(eq, &e) != 0; attempt++) {
            if (mpmc_expired(m))
                return NULL;
            fake_backoff(attempt);
        }
        __atomic_store_n(&m->pushed[id], i + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    mpmc_t *m = arg;
    ptl_event_t ev;
    while (__atomic_load_n(&m->taken, __ATOMIC_RELAXED) < 2 * PER_PRODUCER && !mpmc_expired(m)) {
        int rc = PtlEQPoll(&m->h, 1, 10, &ev, &(unsigned int){0});
        if (rc == PTL_EQ_EMPTY)
            continue;
        if (rc != PTL_OK || ev.hdr_data >= 2 * PER_PRODUCER || m->seen[ev.hdr_data]++) {
            fprintf(stderr, "mpmc: rc %d, event %llu\n", rc, (unsigned long long)ev.hdr_data);
            __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
            break;
        }
        __atomic_add_fetch(&m->taken, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_mpmc(void)
{
    mpmc_t m = {0};
    pthread_t th[4];

    m.seen = calloc(2 * PER_PRODUCER, 1);
    XP_REQUIRE(m.seen && PtlEQAlloc(fake.ni[0].handle, 64, &m.h) == PTL_OK);
    m.deadline = xp_time_ns() + FAKE_DEADLINE_NS;
    pthread_create(&th[0], NULL, producer, &m);
    pthread_create(&th[1], NULL, producer, &m);
    pthread_create(&th[2], NULL, consumer, &m);
    pthread_create(&th[3], NULL, consumer, &m);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    if (m.expired)
        fprintf(stderr, "mpmc: deadline passed: pushed %d + %d of %d each, taken %d\n",
                m.pushed[0], m.pushed[1], PER_PRODUCER, m.taken);
    XP_CHECK_EQ(m.expired, 0);
    XP_CHECK_EQ(m.bad, 0);
    XP_CHECK_EQ(m.taken, 2 * PER_PRODUCER);
    XP_CHECK_EQ(PtlEQFree(m.h), PTL_OK);
    free(m.seen);
}

int main(void)
{
    ptl_handle_eq_t h = 1;
    ptl_event_t ev;
    unsigned int which;

    XP_CHECK_EQ(PtlEQAlloc(1, 8, &h), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQGet(h, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQWait(h, &ev), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQPoll(&h, 1, 0, &ev, &which), PTL_NO_INIT);
    XP_CHECK_EQ(PtlEQFree(h), PTL_NO_INIT);
    fake_init(4, 4, 100);
    test_errors();
    test_order_and_drop();
    /* Backstop for the waits without a deadline of their own. */
    fake_watchdog("test_wait_poll", 40);
    test_wait_poll();
    fake_watchdog("test_mpmc", 40);
    test_mpmc();
    fake_watchdog("", 0);
    fake_fini();
    return xp_test_result();
}
