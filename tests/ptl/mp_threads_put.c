/*
 * mp_threads_put - several application threads of one process put to the
 * same peer at once, through one shared MD (bound by the main thread, which
 * puts too) with counting acknowledgements. Rank 1 checks, from its PUT
 * events, that every message arrived once and that each thread's messages
 * arrived in the order that thread sent them; rank 0 checks the ACK count
 * and that the MD can be released afterwards (no answer left expected).
 * A second phase passes a token between the threads (each put happens
 * after the previous thread's, in happens-before order): the target must
 * see them in exactly that order, although they leave from different threads.
 */
#include <portals4.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 5
#define NTHREADS 4
#define NPUTS 3000   /* per thread, phase 1 */
#define NTOKEN 2000  /* puts in phase 2, all threads together */
#define WAIT_MS 10000
#define PHASE_SHIFT 48
#define THREAD_SHIFT 32

typedef struct shared {
    ptl_handle_md_t md;
    ptl_process_t target;
    unsigned turn; /* phase 2: the next token value */
    int fails;
} shared_t;

typedef struct worker {
    shared_t *sh;
    int id;
    pthread_t tid;
} worker_t;

static ptl_hdr_data_t tag(unsigned phase, unsigned thread, unsigned seq)
{
    return (ptl_hdr_data_t)phase << PHASE_SHIFT | (ptl_hdr_data_t)thread << THREAD_SHIFT | seq;
}

static void put_one(shared_t *sh, int id, ptl_hdr_data_t hdr)
{
    int rc = PtlPut(sh->md, (ptl_size_t)id * 8, 8, PTL_CT_ACK_REQ, sh->target, PT, 0,
                    (ptl_size_t)id * 8, NULL, hdr);
    if (rc != PTL_OK)
        __atomic_add_fetch(&sh->fails, 1, __ATOMIC_RELAXED);
}

/* Phase 1: NPUTS puts as fast as possible. */
static void *stream(void *arg)
{
    worker_t *w = arg;
    for (unsigned i = 0; i < NPUTS; i++)
        put_one(w->sh, w->id, tag(1, (unsigned)w->id, i));
    return NULL;
}

/* Phase 2: put when the token is ours, then hand it on. */
static void *token(void *arg)
{
    worker_t *w = arg;
    for (;;) {
        unsigned t = __atomic_load_n(&w->sh->turn, __ATOMIC_ACQUIRE);
        if (t >= NTOKEN)
            return NULL;
        if (t % NTHREADS != (unsigned)w->id) {
            sched_yield(); /* xprun binds a rank's threads to one CPU */
            continue;
        }
        put_one(w->sh, w->id, tag(2, (unsigned)w->id, t));
        __atomic_store_n(&w->sh->turn, t + 1, __ATOMIC_RELEASE);
    }
}

/* Run fn on NTHREADS - 1 new threads and on this one (id 0, the MD's binder). */
static void run_threads(shared_t *sh, void *(*fn)(void *))
{
    worker_t w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        w[i] = (worker_t){sh, i, 0};
    for (int i = 1; i < NTHREADS; i++)
        XP_REQUIRE(pthread_create(&w[i].tid, NULL, fn, &w[i]) == 0);
    fn(&w[0]);
    for (int i = 1; i < NTHREADS; i++)
        pthread_join(w[i].tid, NULL);
}

static void wait_ct(ptl_handle_ct_t ct, ptl_size_t n)
{
    ptl_ct_event_t v;
    unsigned which;
    int rc = PtlCTPoll(&ct, &n, 1, WAIT_MS, &v, &which);
    XP_CHECK_EQ(rc, PTL_OK);
    XP_CHECK_EQ(v.failure, 0);
    XP_CHECK_EQ(v.success, n);
}

static void initiator(ptl_handle_ni_t ni)
{
    static unsigned char buf[NTHREADS * 8];
    ptl_handle_ct_t ct;
    shared_t sh = {.target = {.rank = 1}};
    XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
    ptl_md_t md = {.start = buf, .length = sizeof buf, .options = PTL_MD_EVENT_CT_ACK,
                   .eq_handle = PTL_EQ_NONE, .ct_handle = ct};
    XP_REQUIRE(PtlMDBind(ni, &md, &sh.md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    run_threads(&sh, stream);
    wait_ct(ct, (ptl_size_t)NTHREADS * NPUTS);
    run_threads(&sh, token);
    wait_ct(ct, (ptl_size_t)NTHREADS * NPUTS + NTOKEN);
    XP_CHECK_EQ(sh.fails, 0);
    /* Every answer counted, from whichever thread sent the put. */
    XP_CHECK_EQ(PtlMDRelease(sh.md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
}

static void target(ptl_handle_ni_t ni)
{
    static unsigned char buf[NTHREADS * 8];
    unsigned next[NTHREADS] = {0}, next_token = 0;
    ptl_handle_eq_t eq;
    ptl_pt_index_t pt;
    ptl_handle_le_t le;
    XP_REQUIRE(PtlEQAlloc(ni, NTHREADS * NPUTS + NTOKEN + 16, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eq, PT, &pt) == PTL_OK);
    ptl_le_t e = {.start = buf, .length = sizeof buf, .ct_handle = PTL_CT_NONE,
                  .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE};
    XP_REQUIRE(PtlLEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    int bad = 0;
    for (long n = 0; n < (long)NTHREADS * NPUTS + NTOKEN; n++) {
        ptl_event_t ev;
        unsigned which;
        int rc = PtlEQPoll(&eq, 1, WAIT_MS, &ev, &which);
        if (rc != PTL_OK) {
            fprintf(stderr, "target: event %ld of %ld missing (rc %d)\n", n,
                    (long)NTHREADS * NPUTS + NTOKEN, rc);
            XP_CHECK_EQ(rc, PTL_OK);
            break;
        }
        unsigned phase = (unsigned)(ev.hdr_data >> PHASE_SHIFT);
        unsigned th = (unsigned)(ev.hdr_data >> THREAD_SHIFT) & 0xffff;
        unsigned seq = (unsigned)ev.hdr_data;
        int ok = ev.type == PTL_EVENT_PUT && ev.ni_fail_type == PTL_NI_OK && th < NTHREADS &&
                 ev.mlength == 8 &&
                 (phase == 1 ? n < (long)NTHREADS * NPUTS && seq == next[th]
                             : phase == 2 && seq == next_token && seq % NTHREADS == th);
        if (!ok && bad++ < 5)
            fprintf(stderr, "target: event %ld: type %d fail %d phase %u thread %u seq %u "
                    "(expected %u)\n", n, ev.type, ev.ni_fail_type, phase, th, seq,
                    phase == 1 && th < NTHREADS ? next[th] : next_token);
        if (phase == 1 && th < NTHREADS)
            next[th] = seq + 1;
        else
            next_token = seq + 1;
    }
    XP_CHECK_EQ(bad, 0);
    ptl_event_t extra;
    XP_CHECK_EQ(PtlEQGet(eq, &extra), PTL_EQ_EMPTY);
    XP_CHECK_EQ(PtlLEUnlink(le), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, pt), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
}

int main(int argc, char **argv)
{
    ptl_handle_ni_t ni;
    ptl_ni_limits_t lim;
    (void)argc;
    (void)argv;
    XP_REQUIRE(PtlInit() == PTL_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, &lim, &ni) == PTL_OK);
    ptl_process_t ids[2], me;
    XP_REQUIRE(PtlGetPhysId(ni, &me) == PTL_OK);
    XP_REQUIRE(xp_kv_put("mp_threads_put.id", &me, sizeof me) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    for (int r = 0; r < 2; r++) {
        size_t len = sizeof ids[r];
        XP_REQUIRE(xp_kv_get(r, "mp_threads_put.id", &ids[r], &len) == XP_OK);
    }
    int rc = PtlSetMap(ni, 2, ids);
    XP_REQUIRE(rc == PTL_OK || rc == PTL_IGNORED);
    if (xp_rank() == 0)
        initiator(ni);
    else
        target(ni);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
