/* Task queue protocol: bounds, full queue, and many producers in several
 * processes (threads in each) against one consumer: no packet lost or
 * duplicated, each producer's order kept. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/accel.h"

#define NPROC 3
#define NTHREAD 2
#define PER_PRODUCER 20000
#define NPROD (NPROC * NTHREAD)

static xp_aql_packet_t agent_pkt(uint64_t a0, uint64_t a1)
{
    xp_aql_packet_t p;
    memset(&p, 0, sizeof(p));
    p.agent.header = xp_aql_header(XP_AQL_TYPE_AGENT_DISPATCH, 0);
    p.agent.arg[0] = a0;
    p.agent.arg[1] = a1;
    p.agent.arg[3] = ~a1;
    return p;
}

static void test_basic(void)
{
    xp_queue_t *q;
    XP_CHECK_EQ(xp_queue_create(3, &q), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_queue_create(0, &q), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_queue_create(4, NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_queue_bytes(6), 0);
    XP_REQUIRE(xp_queue_create(4, &q) == XP_OK);
    XP_CHECK_EQ(xp_queue_size(q), 4);
    XP_CHECK(xp_queue_peek(q) == NULL);

    xp_aql_packet_t bad = agent_pkt(0, 0);
    bad.header = xp_aql_header(XP_AQL_TYPE_INVALID, 0);
    XP_CHECK_EQ(xp_queue_try_push(q, &bad, NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_queue_push(NULL, &bad, 0, NULL), XP_ERR_INVALID);

    for (uint64_t i = 0; i < 4; i++) {
        xp_aql_packet_t p = agent_pkt(i, i);
        uint64_t idx = 99;
        XP_CHECK_EQ(xp_queue_try_push(q, &p, &idx), XP_OK);
        XP_CHECK_EQ(idx, i);
    }
    xp_aql_packet_t p = agent_pkt(9, 9);
    XP_CHECK_EQ(xp_queue_try_push(q, &p, NULL), XP_ERR_AGAIN);
    XP_CHECK_EQ(xp_queue_push(q, &p, 1000000, NULL), XP_ERR_TIMEOUT);
    XP_CHECK_EQ(xp_queue_load_write_index(q), 4); /* nothing was reserved */
    for (uint64_t i = 0; i < 4; i++) {
        xp_aql_packet_t *got = xp_queue_peek(q);
        XP_REQUIRE(got != NULL);
        XP_CHECK_EQ(got->agent.arg[0], i);
        xp_queue_release(q);
    }
    XP_CHECK(xp_queue_peek(q) == NULL);
    XP_CHECK_EQ(xp_queue_load_read_index(q), 4);
    XP_CHECK_EQ(xp_queue_try_push(q, &p, NULL), XP_OK);
    xp_queue_destroy(q);

    /* caller memory + attach */
    size_t bytes = xp_queue_bytes(8);
    void *mem = aligned_alloc(64, bytes);
    XP_CHECK_EQ(xp_queue_init_at(mem, bytes - 1, 8, &q), XP_ERR_INVALID);
    XP_REQUIRE(xp_queue_init_at(mem, bytes, 8, &q) == XP_OK);
    xp_queue_t *q2;
    XP_REQUIRE(xp_queue_attach(mem, bytes, &q2) == XP_OK);
    XP_CHECK_EQ(xp_queue_try_push(q2, &p, NULL), XP_OK);
    XP_CHECK(xp_queue_peek(q) != NULL);
    xp_queue_destroy(q2);
    xp_queue_destroy(q);
    memset(mem, 0, bytes);
    XP_CHECK_EQ(xp_queue_attach(mem, bytes, &q2), XP_ERR_INVALID);
    free(mem);
}

typedef struct {
    xp_queue_t *q;
    uint64_t producer;
} prod_arg_t;

static void *produce(void *arg)
{
    prod_arg_t *a = arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        xp_aql_packet_t p = agent_pkt(a->producer, i);
        if (xp_queue_push(a->q, &p, 10000000000ull, NULL) != XP_OK)
            return (void *)1;
    }
    return NULL;
}

static void test_contention(void)
{
    xp_queue_t *q;
    XP_REQUIRE(xp_queue_create(64, &q) == XP_OK); /* small: producers often find it full */
    pid_t pids[NPROC];
    for (int pr = 0; pr < NPROC; pr++) {
        pids[pr] = fork();
        XP_REQUIRE(pids[pr] >= 0);
        if (pids[pr] == 0) {
            pthread_t t[NTHREAD];
            prod_arg_t args[NTHREAD];
            int bad = 0;
            for (int i = 0; i < NTHREAD; i++) {
                args[i] = (prod_arg_t){q, (uint64_t)(pr * NTHREAD + i)};
                pthread_create(&t[i], NULL, produce, &args[i]);
            }
            for (int i = 0; i < NTHREAD; i++) {
                void *rv;
                pthread_join(t[i], &rv);
                bad |= rv != NULL;
            }
            _exit(bad);
        }
    }
    uint64_t next[NPROD] = {0};
    uint64_t total = 0, errors = 0;
    xp_signal_t *db = xp_queue_doorbell(q);
    while (total < (uint64_t)NPROD * PER_PRODUCER) {
        xp_aql_packet_t *p = xp_queue_peek(q);
        if (!p) {
            int64_t seen = xp_signal_load(db);
            if (!xp_queue_peek(q) &&
                xp_signal_wait(db, XP_SIGNAL_NE, seen, 5000000000ull, NULL) == XP_ERR_TIMEOUT &&
                !xp_queue_peek(q))
                break; /* stuck: counted as a failure below */
            continue;
        }
        uint64_t prod = p->agent.arg[0], seq = p->agent.arg[1];
        if (prod >= NPROD || seq != next[prod] || p->agent.arg[3] != ~seq)
            errors++;
        else
            next[prod]++;
        xp_queue_release(q);
        total++;
    }
    for (int pr = 0; pr < NPROC; pr++) {
        int status;
        waitpid(pids[pr], &status, 0);
        XP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    XP_CHECK_EQ(errors, 0);
    XP_CHECK_EQ(total, (uint64_t)NPROD * PER_PRODUCER);
    for (int i = 0; i < NPROD; i++)
        XP_CHECK_EQ(next[i], PER_PRODUCER);
    XP_CHECK(xp_queue_peek(q) == NULL);
    XP_CHECK_EQ(xp_queue_load_write_index(q), (uint64_t)NPROD * PER_PRODUCER);
    xp_queue_destroy(q);
}

int main(void)
{
    test_basic();
    test_contention();
    return xp_test_result();
}
