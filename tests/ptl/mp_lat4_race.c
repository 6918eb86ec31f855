/*
 * mp_lat4_race - the packet handler's lock-free paths against application
 * threads of the target (pt.h, ct.c): while rank 0 streams counted,
 * acknowledged puts to one ME, rank 1 runs
 *  - a thread that appends and unlinks other MEs on the same PT (the PT
 *    handshake: an application thread inside the PT with or without the
 *    poll lock while messages are delivered),
 *  - a thread that posts triggered CT increments with thresholds the
 *    counter is passing (the first post on a CT and the handler's count
 *    without a fence), and adds to the same counter with PtlCTInc (an
 *    atomic add next to the handler's plain store),
 *  - its main thread waiting on the counter, also across pauses of the
 *    sender long enough for the waiter to go to sleep (the threshold it
 *    registers against the handler's count).
 * Every message, increment and triggered operation must be counted once,
 * and no wait may miss its wake-up (each is bounded: a lost wake-up is a
 * failure, not a hang).
 */
#include <portals4.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 7
#define BITS 1
#define NSTREAM 20000  /* phase 1: puts back to back */
#define NBURST 20      /* phase 2: bursts ... */
#define BURST 50       /* ... of this many puts ... */
#define PAUSE_US 3000  /* ... with this pause after each */
#define NPUT (NSTREAM + NBURST * BURST)
#define NTRIG 2000     /* triggered increments, thresholds 5, 10, ... */
#define TRIG_STEP 5
#define NINC 3000      /* PtlCTInc by an application thread */
#define SLOTS 512
#define WAIT_MS 5000

typedef struct target_state {
    ptl_handle_ni_t ni;
    ptl_pt_index_t pt;
    ptl_handle_ct_t ct, ct2;
    int done;      /* main thread finished waiting */
    int churns;    /* appends + unlinks done */
    int failures;
} target_state_t;

static void fail(target_state_t *t, const char *what, int rc)
{
    fprintf(stderr, "rank 1: %s failed (rc %d)\n", what, rc);
    __atomic_add_fetch(&t->failures, 1, __ATOMIC_RELAXED);
}

/* Append and unlink MEs that never match, until the main thread is done. */
static void *churn(void *arg)
{
    target_state_t *t = arg;
    static uint64_t dummy[4];
    for (unsigned i = 0; !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE); i++) {
        ptl_me_t me = {.start = dummy, .length = sizeof dummy, .ct_handle = PTL_CT_NONE,
                       .uid = PTL_UID_ANY, .options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE,
                       .match_id = {.rank = PTL_RANK_ANY}, .match_bits = 1000 + (i & 63)};
        ptl_handle_me_t h;
        int rc = PtlMEAppend(t->ni, t->pt, &me, (i & 1) ? PTL_OVERFLOW_LIST : PTL_PRIORITY_LIST,
                             NULL, &h);
        if (rc != PTL_OK) {
            fail(t, "PtlMEAppend", rc);
            return NULL;
        }
        rc = PtlMEUnlink(h);
        if (rc != PTL_OK) {
            fail(t, "PtlMEUnlink", rc);
            return NULL;
        }
        __atomic_add_fetch(&t->churns, 1, __ATOMIC_RELAXED);
        if ((i & 15) == 15)
            sched_yield(); /* xprun binds a rank's threads to one CPU */
    }
    return NULL;
}

/* Triggered increments of ct2 on ct's thresholds, and PtlCTInc on ct. */
static void *trig(void *arg)
{
    target_state_t *t = arg;
    ptl_ct_event_t one = {.success = 1, .failure = 0};
    for (int k = 1, inc = 0; k <= NTRIG || inc < NINC; k++, inc++) {
        if (k <= NTRIG) {
            int rc = PtlTriggeredCTInc(t->ct2, one, t->ct, (ptl_size_t)k * TRIG_STEP);
            if (rc != PTL_OK) {
                fail(t, "PtlTriggeredCTInc", rc);
                return NULL;
            }
        }
        if (inc < NINC) {
            int rc = PtlCTInc(t->ct, one);
            if (rc != PTL_OK) {
                fail(t, "PtlCTInc", rc);
                return NULL;
            }
        }
        if ((k & 31) == 31)
            sched_yield();
    }
    return NULL;
}

static int wait_ct(ptl_handle_ct_t ct, ptl_size_t n, const char *what)
{
    ptl_ct_event_t v;
    unsigned which;
    int rc = PtlCTPoll(&ct, &n, 1, WAIT_MS, &v, &which);
    if (rc != PTL_OK || v.failure || v.success < n) {
        ptl_ct_event_t now = {0, 0};
        PtlCTGet(ct, &now);
        fprintf(stderr, "rank 1: %s: wait for %llu: rc %d, success %llu failure %llu (now %llu)\n",
                what, (unsigned long long)n, rc, (unsigned long long)v.success,
                (unsigned long long)v.failure, (unsigned long long)now.success);
        return 0;
    }
    return 1;
}

static void target(ptl_handle_ni_t ni)
{
    static uint64_t buf[SLOTS];
    target_state_t t = {.ni = ni};
    ptl_handle_me_t me;
    pthread_t th[2];
    XP_REQUIRE(PtlCTAlloc(ni, &t.ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &t.ct2) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &t.pt) == PTL_OK);
    ptl_me_t e = {.start = buf, .length = sizeof buf, .ct_handle = t.ct, .uid = PTL_UID_ANY,
                  .options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_CT_COMM |
                             PTL_ME_EVENT_SUCCESS_DISABLE,
                  .match_id = {.rank = PTL_RANK_ANY}, .match_bits = BITS};
    XP_REQUIRE(PtlMEAppend(ni, t.pt, &e, PTL_PRIORITY_LIST, NULL, &me) == PTL_OK);
    XP_REQUIRE(pthread_create(&th[0], NULL, churn, &t) == 0);
    XP_REQUIRE(pthread_create(&th[1], NULL, trig, &t) == 0);
    XP_REQUIRE(xp_barrier() == XP_OK);

    /* Thresholds are lower bounds: PtlCTInc adds on top of the messages. */
    XP_CHECK(wait_ct(t.ct, NSTREAM, "stream"));
    for (int b = 0; b < NBURST; b++)
        XP_CHECK(wait_ct(t.ct, NSTREAM + (ptl_size_t)(b + 1) * BURST, "burst"));
    __atomic_store_n(&t.done, 1, __ATOMIC_RELEASE);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    XP_CHECK_EQ(t.failures, 0);
    XP_CHECK(t.churns > 0);
    /* Every message and every increment counted once ... */
    XP_CHECK(wait_ct(t.ct, NPUT + NINC, "all"));
    ptl_ct_event_t v;
    XP_CHECK_EQ(PtlCTGet(t.ct, &v), PTL_OK);
    XP_CHECK_EQ(v.success, NPUT + NINC);
    XP_CHECK_EQ(v.failure, 0);
    /* ... and every triggered increment issued once (all thresholds passed). */
    XP_CHECK(wait_ct(t.ct2, NTRIG, "triggered"));
    XP_CHECK_EQ(PtlCTGet(t.ct2, &v), PTL_OK);
    XP_CHECK_EQ(v.success, NTRIG);
    /* The last burst's payloads, in their slots. */
    for (int i = NPUT - BURST; i < NPUT; i++)
        XP_CHECK_EQ(buf[i % SLOTS], (uint64_t)i);
    XP_CHECK_EQ(PtlMEUnlink(me), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, t.pt), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(t.ct2), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(t.ct), PTL_OK);
}

static void initiator(ptl_handle_ni_t ni)
{
    static uint64_t seq[NPUT];
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_process_t peer = {.rank = 1};
    for (int i = 0; i < NPUT; i++)
        seq[i] = (uint64_t)i;
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    ptl_md_t d = {.start = seq, .length = sizeof seq, .options = PTL_MD_EVENT_CT_ACK,
                  .eq_handle = PTL_EQ_NONE, .ct_handle = ct};
    XP_REQUIRE(PtlMDBind(ni, &d, &md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 0; i < NPUT; i++) {
        int rc = PtlPut(md, (ptl_size_t)i * 8, 8, PTL_CT_ACK_REQ, peer, PT, BITS,
                        (ptl_size_t)(i % SLOTS) * 8, NULL, 0);
        XP_CHECK_EQ(rc, PTL_OK);
        if (i >= NSTREAM && (i - NSTREAM) % BURST == BURST - 1)
            usleep(PAUSE_US);
    }
    ptl_ct_event_t v;
    unsigned which;
    ptl_size_t n = NPUT;
    XP_CHECK_EQ(PtlCTPoll(&ct, &n, 1, WAIT_MS, &v, &which), PTL_OK);
    XP_CHECK_EQ(v.success, NPUT);
    XP_CHECK_EQ(v.failure, 0);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

int main(void)
{
    ptl_handle_ni_t ni;
    ptl_ni_limits_t lim;
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         &lim, &ni) == PTL_OK);
    if (lim.max_triggered_ops < NTRIG)
        XP_TEST_SKIP("fewer triggered operations than the test posts");
    if (xp_rank() == 0)
        initiator(ni);
    else
        target(ni);
    XP_REQUIRE(xp_barrier() == XP_OK);
    PtlNIFini(ni);
    PtlFini();
    return xp_test_result();
}
