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
    int depth, max_depth;          /* nesting of data movement calls */
    ptl_handle_ct_t put_counts_ct; /* if set, each PtlPut adds 1 here (loopback) */
    int aborted;                   /* make waits return XP_ERR_CANCELED */
} fake_engine_t;

extern fake_engine_t fake;

/* PtlInit-like: two NIs (slots 0 and 1) with the given CT/EQ/triggered limits. */
void fake_init(int max_cts, int max_eqs, int max_trig);
void fake_fini(void);
#define FAKE_MD(i) xp_handle_make(XP_HANDLE_MD, 0, 0, (uint32_t)(i))

#endif
