/*
 * objects_fake_engine.h - a stand-in for the engine (NI, limits, waiting,
 * data movement calls) so CT, EQ and triggered operations can be unit-tested
 * on their own. Data movement calls are recorded, not sent.
 */
#ifndef XP_TEST_OBJECTS_FAKE_ENGINE_H
#define XP_TEST_OBJECTS_FAKE_ENGINE_H

#include "portals4.h"
#include "ptl/ni.h"

typedef struct fake_call {
    int kind;              /* 0 put, 1 get, 2 atomic, 3 fetch, 4 swap */
    ptl_handle_md_t md;
    ptl_size_t length;
    void *user_ptr;
    unsigned char operand[32];
} fake_call_t;

#define FAKE_MAX_CALLS 100000

typedef struct fake_engine {
    int initialized;
    xp_ni_t ni[2];
    int ncalls;
    fake_call_t calls[FAKE_MAX_CALLS];
    int max_depth;                 /* deepest nesting of data movement calls in
                                    * one thread (PtlPut; updated atomically) */
    ptl_handle_ct_t put_counts_ct; /* if set, each PtlPut adds 1 here (loopback) */
    int aborted;                   /* make waits return XP_ERR_CANCELED */
    int waiters;                   /* threads inside xp_ptl_wait_until (atomic) */
} fake_engine_t;

extern fake_engine_t fake;

/* PtlInit-like: two NIs (slots 0 and 1) with the given CT/EQ/triggered limits. */
void fake_init(int max_cts, int max_eqs, int max_trig);
void fake_fini(void);
/* Generous bound on anything a test waits for: far above any honest delay on
 * a loaded machine, far below the CTest timeout, so a lost wake-up becomes a
 * failure with a diagnostic instead of a hang. */
#define FAKE_DEADLINE_NS (20ull * 1000000000ull)

/* Back off after `attempt` unsuccessful looks: yield first, then sleep a
 * little so that the thread being waited for gets the CPU even when the
 * machine is oversubscribed. */
void fake_backoff(unsigned attempt);

/* Wait until at least n threads are inside xp_ptl_wait_until: an action
 * meant to interrupt or wake a wait then really happens during it (a sleep
 * proves nothing under load). 1 on success; 0 after FAKE_DEADLINE_NS, with a
 * message naming `what`. */
int fake_await_waiters(int n, const char *what);

/* Turn a hang into a failure: unless re-armed or disarmed (seconds 0) within
 * `seconds`, print `phase` and exit with status 1. phase must stay valid. */
void fake_watchdog(const char *phase, unsigned seconds);

#define FAKE_MD(i) xp_handle_make(XP_HANDLE_MD, 0, 0, (uint32_t)(i))
/* What every FAKE_MD handle covers, and a target pid no NI can address. */
#define FAKE_MD_LEN 65536
#define FAKE_BAD_PID 4242

#endif
