/* objects_fake_engine.c - see objects_fake_engine.h. */
#include "objects_fake_engine.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ptl/ct.h"
#include "ptl/handle.h"
#include "ptl/md.h"
#include "ptl/progress.h"
#include "util/clock.h"

fake_engine_t fake;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

void fake_init(int max_cts, int max_eqs, int max_trig)
{
    memset(&fake, 0, sizeof(fake));
    for (int i = 0; i < 2; i++) {
        xp_ni_t *ni = &fake.ni[i];
        ni->slot = i;
        ni->handle = xp_handle_make(XP_HANDLE_NI, (unsigned)i, 0, 0);
        pthread_mutex_init(&ni->lock, NULL);
        ni->limits.max_cts = max_cts;
        ni->limits.max_eqs = max_eqs;
        ni->limits.max_triggered_ops = max_trig;
        ni->limits.max_atomic_size = 512;
        ni->limits.max_fetch_atomic_size = 512;
        ni->limits.max_msg_size = (ptl_size_t)INT64_MAX;
        ni->physical = 1; /* targets through xp_ni_target_rank_phys below */
    }
    fake.initialized = 1;
}

void fake_fini(void)
{
    xp_ptl_objects_fini();
    fake.initialized = 0;
}

int xp_ptl_initialized(void) { return fake.initialized; }

/* Every MD handle names one MD of FAKE_MD_LEN bytes on NI 0. */
xp_md_t *xp_md_from_handle(ptl_handle_md_t h)
{
    static xp_md_t md;
    if (xp_handle_type_of(h) != XP_HANDLE_MD)
        return NULL;
    md.handle = h;
    md.ni = &fake.ni[0];
    md.region.length = FAKE_MD_LEN;
    return &md;
}

int xp_ni_target_rank_phys(const xp_ni_t *ni, ptl_process_t id)
{
    (void)ni;
    return id.phys.pid == FAKE_BAD_PID ? -1 : 0;
}

xp_ni_t *xp_ni_from_handle(ptl_handle_ni_t h)
{
    if (xp_handle_type_of(h) != XP_HANDLE_NI || xp_handle_ni_of(h) > 1)
        return NULL;
    return fake.ni[xp_handle_ni_of(h)].handle == h ? &fake.ni[xp_handle_ni_of(h)] : NULL;
}

static int limit_of(xp_ni_t *ni, xp_ni_obj_kind_t kind)
{
    switch (kind) {
    case XP_NI_OBJ_CT: return ni->limits.max_cts;
    case XP_NI_OBJ_EQ: return ni->limits.max_eqs;
    case XP_NI_OBJ_TRIGGERED: return ni->limits.max_triggered_ops;
    default: return 1 << 30;
    }
}

xp_status_t xp_ni_obj_acquire(xp_ni_t *ni, xp_ni_obj_kind_t kind)
{
    xp_status_t st = XP_OK;
    pthread_mutex_lock(&ni->lock);
    if (ni->obj_count[kind] >= limit_of(ni, kind))
        st = XP_ERR_NO_RESOURCE;
    else
        ni->obj_count[kind]++;
    pthread_mutex_unlock(&ni->lock);
    return st;
}

void xp_ni_obj_release(xp_ni_t *ni, xp_ni_obj_kind_t kind)
{
    pthread_mutex_lock(&ni->lock);
    ni->obj_count[kind]--;
    pthread_mutex_unlock(&ni->lock);
}

int xp_ptl_rc(xp_status_t st)
{
    switch (st) {
    case XP_OK: return PTL_OK;
    case XP_ERR_INVALID: return PTL_ARG_INVALID;
    case XP_ERR_NO_MEMORY: case XP_ERR_NO_RESOURCE: return PTL_NO_SPACE;
    case XP_ERR_CANCELED: return PTL_INTERRUPTED;
    default: return PTL_FAIL;
    }
}

int xp_ptl_progress(void) { return 0; }
int xp_ptl_app_poll(void) { return 0; }
void xp_ptl_notify(void) {}
void xp_ptl_interrupt(void) { __atomic_store_n(&fake.aborted, 1, __ATOMIC_RELEASE); }

void fake_backoff(unsigned attempt)
{
    if (attempt < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* Sleeps between looks (fake_backoff) as the real engine's waiters do, so
 * that spinning waiters do not starve the threads they wait for. */
xp_status_t xp_ptl_wait_until(xp_wait_pred_t pred, void *arg, uint64_t deadline_ns)
{
    xp_status_t st;

    __atomic_add_fetch(&fake.waiters, 1, __ATOMIC_SEQ_CST);
    for (unsigned attempt = 0;; attempt++) {
        if (pred(arg)) {
            st = XP_OK;
            break;
        }
        if (__atomic_load_n(&fake.aborted, __ATOMIC_ACQUIRE)) {
            st = XP_ERR_CANCELED;
            break;
        }
        if (deadline_ns != UINT64_MAX && xp_time_ns() >= deadline_ns) {
            st = XP_ERR_TIMEOUT;
            break;
        }
        fake_backoff(attempt);
    }
    __atomic_sub_fetch(&fake.waiters, 1, __ATOMIC_SEQ_CST);
    return st;
}

/* The fake notify wakes nobody: waiters poll, so arming is a plain call. */
xp_status_t xp_ptl_wait_until_armed(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                                    uint64_t deadline_ns)
{
    if (arm)
        arm(arg);
    return xp_ptl_wait_until(pred, arg, deadline_ns);
}

/* PtlCTWait inlines the engine's spin (ptl/progress.h): here it runs on a
 * state of its own with no transport and no spins, so every such wait
 * goes straight to xp_ptl_wait_rest, i.e. to the fake wait above. */
static xp_ptl_state_t fake_state;

xp_ptl_state_t *xp_ptl_state_create(void)
{
    return &fake_state;
}

void xp_ptl_active_begin(xp_ptl_active_t *a)
{
    a->spins = 0;
    a->counted = 0;
    a->spinning = NULL;
}

int xp_ptl_may_park(const xp_ptl_state_t *st)
{
    (void)st;
    return 0;
}

int xp_ptl_poll_deferred(xp_ptl_state_t *st, int n)
{
    (void)st;
    return n;
}

void xp_poll_wake(xp_ptl_state_t *st)
{
    (void)st;
}

xp_status_t xp_ptl_wait_rest(xp_wait_pred_t pred, xp_ptl_arm_fn arm, void *arg,
                             uint64_t deadline_ns, xp_ptl_active_t *a, int why)
{
    (void)a;
    (void)why;
    return xp_ptl_wait_until_armed(pred, arm, arg, deadline_ns);
}

int fake_await_waiters(int n, const char *what)
{
    uint64_t deadline = xp_time_ns() + FAKE_DEADLINE_NS;

    for (unsigned attempt = 0; __atomic_load_n(&fake.waiters, __ATOMIC_SEQ_CST) < n; attempt++) {
        if (xp_time_ns() >= deadline) {
            fprintf(stderr, "fake engine: %s: %d thread(s) waiting after %llu s, expected %d\n",
                    what, __atomic_load_n(&fake.waiters, __ATOMIC_SEQ_CST),
                    FAKE_DEADLINE_NS / 1000000000ull, n);
            return 0;
        }
        fake_backoff(attempt);
    }
    return 1;
}

/* The watchdog's phase; read by the signal handler only. */
static const char *volatile watchdog_phase;

static void on_watchdog(int sig)
{
    const char *p = watchdog_phase;
    static const char msg[] = "watchdog: no progress, stuck in: ";

    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, p, strlen(p)) < 0 || write(2, "\n", 1) < 0)
        _exit(1);
    _exit(1);
}

void fake_watchdog(const char *phase, unsigned seconds)
{
    watchdog_phase = phase;
    signal(SIGALRM, on_watchdog);
    alarm(seconds);
}

static int record(int kind, ptl_handle_md_t md, ptl_size_t length, void *user_ptr,
                  const void *operand)
{
    int rc = PTL_OK;
    if (xp_handle_type_of(md) != XP_HANDLE_MD)
        return PTL_ARG_INVALID;
    pthread_mutex_lock(&fake_lock);
    if (fake.ncalls < FAKE_MAX_CALLS) {
        fake_call_t *c = &fake.calls[fake.ncalls++];
        c->kind = kind;
        c->md = md;
        c->length = length;
        c->user_ptr = user_ptr;
        if (operand)
            memcpy(c->operand, operand, sizeof(c->operand));
    }
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

/* This thread's nesting of PtlPut calls (test_triggered's race test
 * issues puts from several threads at once). */
static _Thread_local int put_depth;

int PtlPut(ptl_handle_md_t md, ptl_size_t lo, ptl_size_t len, ptl_ack_req_t ack,
           ptl_process_t tgt, ptl_pt_index_t pt, ptl_match_bits_t mb, ptl_size_t ro, void *up,
           ptl_hdr_data_t hd)
{
    int rc;
    xp_ct_t *ct;
    int depth = ++put_depth, max = __atomic_load_n(&fake.max_depth, __ATOMIC_RELAXED);
    while (depth > max && !__atomic_compare_exchange_n(&fake.max_depth, &max, depth, 0,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    rc = record(0, md, len, up, NULL);
    /* Loopback delivery counted inside the call, as a self transport may. */
    if (fake.put_counts_ct && (ct = xp_ct_from_handle(fake.put_counts_ct)))
        xp_ct_add(ct, 1, 0);
    put_depth--;
    return rc;
}

int PtlGet(ptl_handle_md_t md, ptl_size_t lo, ptl_size_t len, ptl_process_t tgt,
           ptl_pt_index_t pt, ptl_match_bits_t mb, ptl_size_t ro, void *up)
{
    return record(1, md, len, up, NULL);
}

int PtlAtomic(ptl_handle_md_t md, ptl_size_t lo, ptl_size_t len, ptl_ack_req_t ack,
              ptl_process_t tgt, ptl_pt_index_t pt, ptl_match_bits_t mb, ptl_size_t ro,
              void *up, ptl_hdr_data_t hd, ptl_op_t op, ptl_datatype_t dt)
{
    return record(2, md, len, up, NULL);
}

int PtlFetchAtomic(ptl_handle_md_t gmd, ptl_size_t glo, ptl_handle_md_t pmd, ptl_size_t plo,
                   ptl_size_t len, ptl_process_t tgt, ptl_pt_index_t pt, ptl_match_bits_t mb,
                   ptl_size_t ro, void *up, ptl_hdr_data_t hd, ptl_op_t op, ptl_datatype_t dt)
{
    return record(3, pmd, len, up, NULL);
}

int PtlSwap(ptl_handle_md_t gmd, ptl_size_t glo, ptl_handle_md_t pmd, ptl_size_t plo,
            ptl_size_t len, ptl_process_t tgt, ptl_pt_index_t pt, ptl_match_bits_t mb,
            ptl_size_t ro, void *up, ptl_hdr_data_t hd, const void *operand, ptl_op_t op,
            ptl_datatype_t dt)
{
    return record(4, pmd, len, up, operand);
}

/* XTQ gathering put (ops.c in the real engine), issued by triggered XTQ puts:
 * recorded as kind 5 with the total length. */
int xp_eng_put_gather(ptl_handle_md_t md1, ptl_size_t off1, ptl_size_t len1, ptl_handle_md_t md2,
                      ptl_size_t off2, ptl_size_t len2, ptl_ack_req_t ack_req,
                      ptl_process_t target_id, ptl_pt_index_t pt_index,
                      ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                      ptl_hdr_data_t hdr_data, unsigned flags)
{
    return record(5, md1, len1 + len2, user_ptr, NULL);
}
