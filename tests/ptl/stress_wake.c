/*
 * stress_wake - hammer the engine's sleep/wake paths (doorbell, xp_tl_wait,
 * progress-thread parking, CT/EQ notify) until a lost wake-up shows.
 *
 * A token goes round the ranks (0 -> 1 -> ... -> 0). The holder of token k
 * first does one round trip of "work" with the next rank (fetch-add, acked
 * put, get, acked atomic with an EQ, CTPoll-waited fetch-add) and then passes
 * the token through one of four channels, so the receiver waits in
 * PtlCTWait, PtlEQWait, a PtlCTPoll loop or a PtlEQPoll loop. Every few
 * tokens the holder floods every peer with acked puts (full rings, deferred
 * answers). An optional helper thread per process ping-pongs with itself
 * (self transport, PtlEQWait) so that two application waiters and the
 * progress thread share the doorbell. Run it with a small XP_SPIN_COUNT so
 * that waiters really sleep.
 *
 * Hangs become failures: a watchdog thread per process notices when the
 * main loop (or the helper) made no step for --deadline-ms, prints what the
 * process waits for and the doorbell state, rings the doorbell once to tell
 * a lost wake-up (it then moves again) from a real deadlock, and exits 3.
 *
 *   xprun -n 3 stress_wake [--seconds 2] [--deadline-ms 5000] [--hogs 1]
 *                          [--flood-every 16] [--flood 1500] [--helper] [--gdb]
 * (--gdb: a stalled process prints the stacks of its threads with gdb).
 */
#include <portals4.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptl/engine.h"
#include "ptl/progress.h" /* xp_ptl_spinning */
#include "transport/transport.h"
#include "util/clock.h"
#include "util/config.h"
#include "xp_test.h"
#include "xportals/xp.h"

enum { PT_TOK = 1, PT_EV = 2, PT_DATA = 3, PT_SELF = 4 };
enum { MAX_HOGS = 8, FLOOD_BYTES = 256, WORK_BYTES = 64, DATA_BYTES = 4096 };

#define TOK_STOP 1u
#define TOK_SHIFT 1

/* Memory that peers read and write. */
typedef struct tgt_mem {
    uint64_t tok_ct_slot;  /* CT-channel tokens land here */
    uint64_t tok_ev_slot;  /* EQ-channel tokens land here */
    uint64_t counter;      /* fetch-adds / atomics from the previous rank */
    unsigned char data[DATA_BYTES];
} tgt_mem_t;

/* Local source and sink buffers. */
typedef struct io_mem {
    uint64_t tok;          /* the token we send */
    uint64_t one;          /* operand of the adds */
    uint64_t fetched;      /* fetch-add / get results */
    unsigned char payload[DATA_BYTES];
    unsigned char sink[DATA_BYTES];
} io_mem_t;

typedef struct stress {
    /* options */
    double seconds;
    long deadline_ms;
    int hogs, flood_every, flood_n, helper, gdb;
    /* identity */
    int rank, size, next;
    /* Portals objects */
    ptl_handle_ni_t ni;
    ptl_handle_ct_t tok_ct, data_ct, ack_ct, rep_ct;
    ptl_handle_eq_t tok_eq, ack_eq, self_eq;
    ptl_handle_md_t md_out, md_in, md_ev, md_self;
    ptl_handle_le_t le_tok, le_ev, le_data, le_self;
    tgt_mem_t tgt;
    io_mem_t io;
    uint64_t self_slot, self_src;
    /* running expectations */
    uint64_t toks_in, acks, replies, adds_sent, ev_acks;
    unsigned long tokens, floods, fails;
    /* watchdog */
    uint64_t beat, helper_beat;   /* bumped on every step */
    const char *what;             /* what the main thread waits for */
    uint64_t what_val;
    const char *helper_what;
    int stop;                     /* main loop done: helper and watchdog end */
    pid_t hog_pid[MAX_HOGS];
    int nhogs;
} stress_t;

static void die(stress_t *s, const char *what, int rc)
{
    fprintf(stderr, "stress_wake rank %d: %s failed: %d\n", s->rank, what, rc);
    for (int i = 0; i < s->nhogs; i++)
        kill(s->hog_pid[i], SIGKILL);
    _exit(1);
}

#define CHECK(s, call)                                                       \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != PTL_OK)                                                   \
            die((s), #call, rc_);                                            \
    } while (0)

static void set_what(stress_t *s, const char *what, uint64_t val)
{
    __atomic_store_n(&s->what_val, val, __ATOMIC_RELAXED);
    __atomic_store_n(&s->what, what, __ATOMIC_RELEASE);
}

static void step(stress_t *s)
{
    __atomic_add_fetch(&s->beat, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ CPU hogs */

static void start_hogs(stress_t *s)
{
    for (int i = 0; i < s->hogs && i < MAX_HOGS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (volatile unsigned long x = 0;; x++)
                ;
        }
        if (pid > 0)
            s->hog_pid[s->nhogs++] = pid;
    }
}

static void stop_hogs(stress_t *s)
{
    for (int i = 0; i < s->nhogs; i++) {
        kill(s->hog_pid[i], SIGKILL);
        waitpid(s->hog_pid[i], NULL, 0);
    }
    s->nhogs = 0;
}

/* ------------------------------------------------------------ watchdog */

static void ct_line(const char *name, ptl_handle_ct_t ct)
{
    ptl_ct_event_t ev = { 0, 0 };
    int rc = PtlCTGet(ct, &ev);
    fprintf(stderr, " %s=%llu/%llu%s", name, (unsigned long long)ev.success,
            (unsigned long long)ev.failure, rc == PTL_OK ? "" : "(?)");
}

static void dump(stress_t *s, const char *why)
{
    xp_doorbell_t *db = xp_tl_doorbell();
    xp_ptl_state_t *st = xp_ptl_state();
    fprintf(stderr,
            "stress_wake rank %d: %s\n  main waits for: %s (%llu), %lu tokens done\n"
            "  helper waits for: %s\n  doorbell seq=%u sleepers=%u, inbox pending=%d,"
            " spinning=%d defer_count=%d progress=%s spin=%ld asym=%d\n ",
            s->rank, why, __atomic_load_n(&s->what, __ATOMIC_ACQUIRE),
            (unsigned long long)__atomic_load_n(&s->what_val, __ATOMIC_RELAXED), s->tokens,
            s->helper ? __atomic_load_n(&s->helper_what, __ATOMIC_ACQUIRE) : "(no helper)",
            db ? __atomic_load_n(&db->seq, __ATOMIC_SEQ_CST) : 0,
            db ? __atomic_load_n(&db->sleepers, __ATOMIC_SEQ_CST) : 0, xp_tl_pending(),
            st ? xp_ptl_spinning(st) : -1,
            st ? __atomic_load_n(&st->defer_count, __ATOMIC_SEQ_CST) : -1,
            xp_config()->progress ? "inline" : "thread", xp_config()->spin_count,
            xp_config()->shm_asym_fence);
    ct_line("tok_ct", s->tok_ct);
    ct_line("ack_ct", s->ack_ct);
    ct_line("rep_ct", s->rep_ct);
    ct_line("data_ct", s->data_ct);
    fprintf(stderr, "\n  expected: toks_in=%llu acks=%llu replies=%llu ev_acks=%llu\n",
            (unsigned long long)s->toks_in, (unsigned long long)s->acks,
            (unsigned long long)s->replies, (unsigned long long)s->ev_acks);
}

/* Main loop and helper are watched separately: one may stall while the
 * other keeps stepping. */
static uint64_t beat_of(stress_t *s, int helper)
{
    return __atomic_load_n(helper ? &s->helper_beat : &s->beat, __ATOMIC_ACQUIRE);
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *watchdog_main(void *arg)
{
    stress_t *s = arg;
    uint64_t last[2] = { beat_of(s, 0), beat_of(s, 1) }, since[2];
    since[0] = since[1] = xp_time_ns();
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        sleep_ms(20);
        uint64_t now = xp_time_ns();
        for (int h = 0; h <= s->helper; h++) {
            uint64_t b = beat_of(s, h);
            if (b != last[h]) {
                last[h] = b;
                since[h] = now;
                continue;
            }
            if (now - since[h] < (uint64_t)s->deadline_ms * 1000000ull)
                continue;
            if (s->gdb) { /* stacks of every thread, before anything moves */
                char cmd[128];
                snprintf(cmd, sizeof cmd,
                         "gdb -p %d -batch -ex 'thread apply all bt' 1>&2 2>/dev/null",
                         (int)getpid());
                if (system(cmd) != 0)
                    fprintf(stderr, "stress_wake: %s failed\n", cmd);
            }
            dump(s, h ? "STALLED: the helper thread made no step within the deadline"
                      : "STALLED: the main thread made no step within the deadline");
            /* Tell a lost wake-up (a ring unsticks it) from a deadlock. */
            xp_doorbell_t *db = xp_tl_doorbell();
            if (db)
                xp_doorbell_ring(db);
            sleep_ms(300);
            /* Peers' watchdogs ring theirs at about the same time: a move
             * may also come from a peer that was unstuck. */
            if (beat_of(s, h) != last[h])
                fprintf(stderr, "stress_wake rank %d: moved again after a doorbell ring: "
                                "LOST WAKE-UP (here or at a peer)\n", s->rank);
            else
                fprintf(stderr, "stress_wake rank %d: still stuck after a doorbell ring "
                                "(deadlock, or the peer is the one stuck)\n", s->rank);
            for (int i = 0; i < s->nhogs; i++)
                kill(s->hog_pid[i], SIGKILL);
            fflush(stderr);
            /* Give the peers' watchdogs time to report too (the launcher
             * stops the job when the first process exits). */
            sleep_ms(s->deadline_ms / 2 + 500);
            _exit(3);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ setup */

static void append_le(stress_t *s, ptl_pt_index_t pt, void *start, size_t len,
                      ptl_handle_ct_t ct, unsigned opts, ptl_handle_le_t *le_out)
{
    ptl_le_t le;
    memset(&le, 0, sizeof le);
    le.start = start;
    le.length = len;
    le.ct_handle = ct;
    le.uid = PTL_UID_ANY;
    le.options = opts;
    CHECK(s, PtlLEAppend(s->ni, pt, &le, PTL_PRIORITY_LIST, NULL, le_out));
}

static void bind_md(stress_t *s, void *start, size_t len, unsigned opts, ptl_handle_eq_t eq,
                    ptl_handle_ct_t ct, ptl_handle_md_t *md_out)
{
    ptl_md_t md = { start, len, opts, eq, ct };
    CHECK(s, PtlMDBind(s->ni, &md, md_out));
}

static void setup(stress_t *s)
{
    ptl_process_t id;
    ptl_pt_index_t pt;
    CHECK(s, PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                       NULL, &s->ni));
    CHECK(s, PtlGetId(s->ni, &id));
    s->rank = (int)id.rank;
    s->size = xp_size();
    s->next = (s->rank + 1) % s->size;
    CHECK(s, PtlCTAlloc(s->ni, &s->tok_ct));
    CHECK(s, PtlCTAlloc(s->ni, &s->data_ct));
    CHECK(s, PtlCTAlloc(s->ni, &s->ack_ct));
    CHECK(s, PtlCTAlloc(s->ni, &s->rep_ct));
    CHECK(s, PtlEQAlloc(s->ni, 64, &s->tok_eq));
    CHECK(s, PtlEQAlloc(s->ni, 64, &s->ack_eq));
    CHECK(s, PtlEQAlloc(s->ni, 64, &s->self_eq));
    CHECK(s, PtlPTAlloc(s->ni, 0, PTL_EQ_NONE, PT_TOK, &pt));
    CHECK(s, PtlPTAlloc(s->ni, 0, s->tok_eq, PT_EV, &pt));
    CHECK(s, PtlPTAlloc(s->ni, 0, PTL_EQ_NONE, PT_DATA, &pt));
    CHECK(s, PtlPTAlloc(s->ni, 0, s->self_eq, PT_SELF, &pt));
    append_le(s, PT_TOK, &s->tgt.tok_ct_slot, 8, s->tok_ct,
              PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM, &s->le_tok);
    append_le(s, PT_EV, &s->tgt.tok_ev_slot, 8, PTL_CT_NONE, PTL_LE_OP_PUT, &s->le_ev);
    append_le(s, PT_DATA, &s->tgt.counter, sizeof s->tgt - offsetof(tgt_mem_t, counter),
              s->data_ct, PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_CT_COMM, &s->le_data);
    append_le(s, PT_SELF, &s->self_slot, 8, PTL_CT_NONE, PTL_LE_OP_PUT, &s->le_self);
    s->io.one = 1;
    bind_md(s, &s->io, sizeof s->io, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY, PTL_EQ_NONE,
            s->ack_ct, &s->md_out);
    bind_md(s, &s->io, sizeof s->io, PTL_MD_EVENT_CT_REPLY, PTL_EQ_NONE, s->rep_ct, &s->md_in);
    bind_md(s, &s->io, sizeof s->io, PTL_MD_EVENT_SEND_DISABLE, s->ack_eq, PTL_CT_NONE,
            &s->md_ev);
    bind_md(s, &s->self_src, 8, PTL_MD_EVENT_SEND_DISABLE, PTL_EQ_NONE, PTL_CT_NONE,
            &s->md_self);
}

static void teardown(stress_t *s)
{
    PtlMDRelease(s->md_self);
    PtlMDRelease(s->md_ev);
    PtlMDRelease(s->md_in);
    PtlMDRelease(s->md_out);
    PtlLEUnlink(s->le_self);
    PtlLEUnlink(s->le_data);
    PtlLEUnlink(s->le_ev);
    PtlLEUnlink(s->le_tok);
    for (int pt = PT_TOK; pt <= PT_SELF; pt++)
        PtlPTFree(s->ni, (ptl_pt_index_t)pt);
    PtlEQFree(s->self_eq);
    PtlEQFree(s->ack_eq);
    PtlEQFree(s->tok_eq);
    PtlCTFree(s->rep_ct);
    PtlCTFree(s->ack_ct);
    PtlCTFree(s->data_ct);
    PtlCTFree(s->tok_ct);
    PtlNIFini(s->ni);
}

/* ------------------------------------------------------------ waits */

static ptl_process_t proc(int rank)
{
    ptl_process_t p;
    p.rank = (ptl_rank_t)rank;
    return p;
}

static void ct_wait(stress_t *s, ptl_handle_ct_t ct, uint64_t test, const char *what)
{
    ptl_ct_event_t ev;
    set_what(s, what, test);
    CHECK(s, PtlCTWait(ct, test, &ev));
    if (ev.failure)
        die(s, what, (int)ev.failure);
}

/* Wait with PtlCTPoll and a short timeout per call: timed sleeps. */
static void ct_poll(stress_t *s, ptl_handle_ct_t ct, uint64_t test, const char *what)
{
    ptl_ct_event_t ev;
    unsigned which;
    int rc;
    set_what(s, what, test);
    while ((rc = PtlCTPoll(&ct, &test, 1, 1, &ev, &which)) == PTL_CT_NONE_REACHED)
        ;
    if (rc != PTL_OK || ev.failure)
        die(s, what, rc != PTL_OK ? rc : (int)ev.failure);
}

/* Next event of `type` from eq (PtlEQWait, or a PtlEQPoll loop). */
static void eq_wait(stress_t *s, ptl_handle_eq_t eq, ptl_event_kind_t type, int poll,
                    ptl_event_t *ev, const char *what)
{
    unsigned which;
    int rc;
    set_what(s, what, 0);
    do {
        if (poll) {
            while ((rc = PtlEQPoll(&eq, 1, 1, ev, &which)) == PTL_EQ_EMPTY)
                ;
        } else {
            rc = PtlEQWait(eq, ev);
        }
        if (rc != PTL_OK)
            die(s, what, rc);
        if (ev->ni_fail_type != PTL_NI_OK)
            die(s, what, (int)ev->ni_fail_type);
    } while (ev->type != type);
}

/* ------------------------------------------------------------ token and work */

/* Token k travels through channel k % 4: CTWait, EQWait, CTPoll, EQPoll. */
static void send_token(stress_t *s, uint64_t k, int stop)
{
    int ch = (int)(k % 4);
    s->io.tok = (k << TOK_SHIFT) | (stop ? TOK_STOP : 0);
    CHECK(s, PtlPut(s->md_out, offsetof(io_mem_t, tok), 8, PTL_NO_ACK_REQ, proc(s->next),
                    (ch & 1) ? PT_EV : PT_TOK, 0, 0, NULL, 0));
}

static uint64_t recv_token(stress_t *s, uint64_t k)
{
    ptl_event_t ev;
    uint64_t tok;
    switch (k % 4) {
    case 0:
        ct_wait(s, s->tok_ct, ++s->toks_in, "token (PtlCTWait)");
        tok = __atomic_load_n(&s->tgt.tok_ct_slot, __ATOMIC_ACQUIRE);
        break;
    case 2:
        ct_poll(s, s->tok_ct, ++s->toks_in, "token (PtlCTPoll loop)");
        tok = __atomic_load_n(&s->tgt.tok_ct_slot, __ATOMIC_ACQUIRE);
        break;
    default:
        eq_wait(s, s->tok_eq, PTL_EVENT_PUT, (int)(k % 4) == 3, &ev,
                (k % 4) == 3 ? "token (PtlEQPoll loop)" : "token (PtlEQWait)");
        tok = __atomic_load_n(&s->tgt.tok_ev_slot, __ATOMIC_ACQUIRE);
        break;
    }
    if (tok >> TOK_SHIFT != k) {
        fprintf(stderr, "stress_wake rank %d: token %llu arrived, expected %llu\n", s->rank,
                (unsigned long long)(tok >> TOK_SHIFT), (unsigned long long)k);
        s->fails++;
    }
    return tok;
}

static void fetch_add(stress_t *s)
{
    CHECK(s, PtlFetchAtomic(s->md_in, offsetof(io_mem_t, fetched), s->md_out,
                            offsetof(io_mem_t, one), 8, proc(s->next), PT_DATA, 0, 0, NULL, 0,
                            PTL_SUM, PTL_UINT64_T));
    s->adds_sent++;
}

/* One round trip with the next rank; kind chosen by k (a cycle prime to 4). */
static void work(stress_t *s, uint64_t k)
{
    ptl_event_t ev;
    size_t off = (size_t)(k * WORK_BYTES) % (DATA_BYTES - WORK_BYTES);
    switch ((k / 4) % 5) {
    case 0:
        fetch_add(s);
        ct_wait(s, s->rep_ct, ++s->replies, "fetch-add reply (PtlCTWait)");
        break;
    case 1:
        memset(s->io.payload, (int)(k & 0xff), WORK_BYTES);
        CHECK(s, PtlPut(s->md_out, offsetof(io_mem_t, payload), WORK_BYTES, PTL_ACK_REQ,
                        proc(s->next), PT_DATA, 0, 8 + off, NULL, 0));
        ct_wait(s, s->ack_ct, ++s->acks, "put ACK (PtlCTWait)");
        break;
    case 2:
        CHECK(s, PtlGet(s->md_in, offsetof(io_mem_t, sink), WORK_BYTES, proc(s->next), PT_DATA, 0,
                        8 + off, NULL));
        ct_wait(s, s->rep_ct, ++s->replies, "get reply (PtlCTWait)");
        break;
    case 3:
        CHECK(s, PtlAtomic(s->md_ev, offsetof(io_mem_t, one), 8, PTL_ACK_REQ, proc(s->next),
                           PT_DATA, 0, 0, NULL, 0, PTL_SUM, PTL_UINT64_T));
        s->adds_sent++;
        eq_wait(s, s->ack_eq, PTL_EVENT_ACK, 0, &ev, "atomic ACK (PtlEQWait)");
        break;
    default:
        fetch_add(s);
        ct_poll(s, s->rep_ct, ++s->replies, "fetch-add reply (PtlCTPoll loop)");
        break;
    }
}

/* Acked puts to every peer, as fast as they go in; then wait for the ACKs.
 * Fills rings both ways, so answers get deferred in the handlers. */
static void flood(stress_t *s)
{
    for (int i = 0; i < s->flood_n; i++)
        for (int r = 0; r < s->size; r++) {
            if (r == s->rank)
                continue;
            size_t off = (size_t)(i * FLOOD_BYTES) % (DATA_BYTES - FLOOD_BYTES);
            set_what(s, "flood put to rank (PtlPut on full rings)", (uint64_t)r);
            CHECK(s, PtlPut(s->md_out, offsetof(io_mem_t, payload), FLOOD_BYTES, PTL_ACK_REQ,
                            proc(r), PT_DATA, 0, 8 + off, NULL, 0));
            s->acks++;
            step(s);
        }
    ct_wait(s, s->ack_ct, s->acks, "flood ACKs (PtlCTWait)");
    s->floods++;
}

/* Final check, done by the holder of the stop token while the next rank
 * still waits (and so progresses): its counter saw all our adds. */
static void verify(stress_t *s)
{
    CHECK(s, PtlGet(s->md_in, offsetof(io_mem_t, fetched), 8, proc(s->next), PT_DATA, 0, 0,
                    NULL));
    ct_wait(s, s->rep_ct, ++s->replies, "final get of the counter");
    if (s->io.fetched != s->adds_sent) {
        fprintf(stderr, "stress_wake rank %d: rank %d counted %llu adds, we sent %llu\n",
                s->rank, s->next, (unsigned long long)s->io.fetched,
                (unsigned long long)s->adds_sent);
        s->fails++;
    }
}

static void hold_token(stress_t *s, uint64_t k, int stop)
{
    /* Every rank floods in the same round of the token; not in the stop
     * round: ranks that passed the stop token on wait in xp_barrier, which
     * does not progress Portals with XP_PROGRESS=inline. */
    uint64_t round = k / (uint64_t)s->size;
    if (!stop && s->flood_every &&
        round % (uint64_t)s->flood_every == (uint64_t)s->flood_every - 1)
        flood(s);
    if (stop)
        verify(s);
    else
        work(s, k);
    send_token(s, k + 1, stop);
    s->tokens++;
    step(s);
}

static void run(stress_t *s)
{
    uint64_t end = xp_time_ns() + (uint64_t)(s->seconds * 1e9);
    uint64_t k = (uint64_t)s->rank;
    if (s->rank == 0) {
        hold_token(s, 0, 0);
        k += (uint64_t)s->size;
    }
    for (;;) {
        uint64_t tok = recv_token(s, k);
        step(s);
        if (s->rank == 0 && (tok & TOK_STOP))
            return; /* came full circle */
        int stop = (tok & TOK_STOP) || (s->rank == 0 && xp_time_ns() >= end);
        hold_token(s, k, stop);
        if (stop && s->rank != 0)
            return;
        k += (uint64_t)s->size;
    }
}

/* ------------------------------------------------------------ helper thread */

static void *helper_main(void *arg)
{
    stress_t *s = arg;
    ptl_event_t ev;
    int rc;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&s->helper_what, "self put", __ATOMIC_RELEASE);
        rc = PtlPut(s->md_self, 0, 8, PTL_NO_ACK_REQ, proc(s->rank), PT_SELF, 0, 0, NULL, 0);
        if (rc != PTL_OK)
            die(s, "helper PtlPut", rc);
        __atomic_store_n(&s->helper_what, "self PUT event (PtlEQWait)", __ATOMIC_RELEASE);
        do {
            rc = PtlEQWait(s->self_eq, &ev);
        } while (rc == PTL_OK && ev.type != PTL_EVENT_PUT);
        if (rc != PTL_OK)
            die(s, "helper PtlEQWait", rc);
        __atomic_add_fetch(&s->helper_beat, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* ------------------------------------------------------------ main */

static void parse(stress_t *s, int argc, char **argv)
{
    s->seconds = 2;
    s->deadline_ms = 5000;
    s->flood_every = 16;
    s->flood_n = 1500;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--helper") || !strcmp(a, "--gdb")) {
            *(a[2] == 'h' ? &s->helper : &s->gdb) = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "stress_wake: %s needs a value (or unknown option)\n", a);
            exit(2);
        }
        i++;
        if (!strcmp(a, "--seconds"))
            s->seconds = atof(v);
        else if (!strcmp(a, "--deadline-ms"))
            s->deadline_ms = atol(v);
        else if (!strcmp(a, "--hogs"))
            s->hogs = atoi(v);
        else if (!strcmp(a, "--flood-every"))
            s->flood_every = atoi(v);
        else if (!strcmp(a, "--flood"))
            s->flood_n = atoi(v);
        else {
            fprintf(stderr, "stress_wake: unknown option %s\n", a);
            exit(2);
        }
    }
    if (s->seconds < 0 || s->deadline_ms <= 0 || s->hogs < 0 || s->hogs > MAX_HOGS ||
        s->flood_every < 0 || s->flood_n < 0) {
        fprintf(stderr, "stress_wake: bad option value\n");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    stress_t *s = calloc(1, sizeof *s);
    pthread_t dog, helper;
    XP_REQUIRE(s);
    parse(s, argc, argv);
    /* Hogs first: fork before any thread exists. Rank from the launcher's
     * environment is not known yet, so every process starts its share. */
    start_hogs(s);
    XP_REQUIRE(PtlInit() == PTL_OK);
    setup(s);
    if (s->size < 2) {
        stop_hogs(s);
        XP_TEST_SKIP("stress_wake needs at least 2 processes");
    }
    XP_REQUIRE(pthread_create(&dog, NULL, watchdog_main, s) == 0);
    /* Every LE exists everywhere before the first token. */
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (s->helper)
        XP_REQUIRE(pthread_create(&helper, NULL, helper_main, s) == 0);
    uint64_t t0 = xp_time_ns();
    run(s);
    double secs = (double)(xp_time_ns() - t0) * 1e-9;
    __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
    if (s->helper)
        pthread_join(helper, NULL);
    pthread_join(dog, NULL);
    stop_hogs(s);
    XP_CHECK_EQ(s->fails, 0);
    if (s->rank == 0)
        printf("stress_wake: np=%d tokens=%lu floods=%lu %.2f s (%.1f us/token) progress=%s "
               "spin=%ld asym_fence=%d hogs/rank=%d helper=%d: %s\n",
               s->size, s->tokens * (unsigned long)s->size, s->floods, secs,
               secs * 1e6 / (double)(s->tokens ? s->tokens * (unsigned long)s->size : 1),
               xp_config()->progress ? "inline" : "thread", xp_config()->spin_count,
               xp_config()->shm_asym_fence, s->hogs, s->helper, s->fails ? "FAIL" : "ok");
    /* Nobody sends after its last token, so the runtime barrier is safe. */
    XP_REQUIRE(xp_barrier() == XP_OK);
    teardown(s);
    PtlFini();
    free(s);
    return xp_test_result();
}
