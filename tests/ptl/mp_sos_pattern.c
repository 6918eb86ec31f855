/*
 * mp_sos_pattern - the way Sandia OpenSHMEM's Portals transport uses the
 * library, call for call (facts taken from its transport_portals4.c/.h; the
 * code here is ours): a non-matching logical NI opened with SOS's desired
 * limits and refused if the actual atomic / fetch-atomic / volatile sizes are
 * below a long double complex; PtlGetPhysId exchanged through the launcher's
 * key-value store and installed with PtlSetMap (PTL_OK or PTL_IGNORED); one
 * EQ of 2048 slots; LEs for the "data" and "heap" segments on explicit PT
 * indices (OP_PUT|OP_GET|LINK_DISABLE|SUCCESS_DISABLE|CT_COMM, own uid, a
 * target CT); whole-address-space MDs (start 0, length PTL_SIZE_MAX) with
 * CT_ACK / CT_REPLY / SUCCESS_DISABLE / VOLATILE / UNORDERED; every put is
 * PTL_OC_ACK_REQ counted on the put CT; the EQ only ever holds SEND events
 * (bounce-buffer and long puts); shmem_quiet = PtlAtomicSync + PtlCTWait on
 * the get and put CTs for the number issued, failure must stay 0; atomics
 * of every op and type (long ones split at max_atomic_size); swap, cswap,
 * mswap and fetch-atomics replying into the whole-address-space get MD;
 * shmemx counters (CT + extra PT + LE, CTWait/Get/Set, then free in SOS's
 * order); teardown in SOS's order.
 */
#include <complex.h>
#include <limits.h>
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define DATA_PT 8
#define HEAP_PT 9
#define EVENT_SLOTS 2048
#define SEG_LEN (4u << 20)
#define BOUNCE_SIZE 2048
#define LONG_LEN (1u << 20)

enum { FRAG_BOUNCE = 1, FRAG_LONG = 2 };

typedef struct frag {
    int type;
    int reference;
    long *completion;
    unsigned char data[BOUNCE_SIZE];
} frag_t;

typedef struct sos {
    ptl_handle_ni_t ni;
    ptl_ni_limits_t limits;
    ptl_handle_eq_t eq;
    ptl_handle_ct_t target_ct, put_ct, get_ct;
    ptl_handle_md_t put_event_md, put_cntr_md, put_volatile_md, get_md;
    ptl_handle_le_t data_le, heap_le;
    ptl_pt_index_t data_pt, heap_pt;
    ptl_size_t pending_put, pending_get;
    int event_slots;
    int me, npes;
    int64_t barrier_epoch;
    long sends_seen;
    uint64_t right_heap_base;
    unsigned char *data_base, *heap_base;
} sos_t;

/* ------------------------------------------------------------------ startup */

static void sos_init(sos_t *s)
{
    ptl_ni_limits_t req;
    ptl_process_t my_id;

    XP_REQUIRE(PtlInit() == PTL_OK);
    req.max_entries = 1024;
    req.max_unexpected_headers = 1024;
    req.max_mds = 1024;
    req.max_eqs = 1024;
    req.max_cts = 1024;
    req.max_pt_index = 64;
    req.max_iovecs = 1024;
    req.max_list_size = 1024;
    req.max_triggered_ops = 1024;
    req.max_msg_size = LONG_MAX;
    req.max_atomic_size = LONG_MAX;
    req.max_fetch_atomic_size = LONG_MAX;
    req.max_waw_ordered_size = LONG_MAX;
    req.max_war_ordered_size = LONG_MAX;
    req.max_volatile_size = LONG_MAX;
    req.features = 0;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         &req, &s->limits, &s->ni) == PTL_OK);
    XP_REQUIRE(PtlGetPhysId(s->ni, &my_id) == PTL_OK);
    XP_REQUIRE(xp_kv_put("portals4-procid", &my_id, sizeof(my_id)) == XP_OK);
    /* SOS with remote virtual addressing publishes its segment bases */
    uint64_t base = (uint64_t)(uintptr_t)s->heap_base;
    XP_REQUIRE(xp_kv_put("portals4-bases", &base, sizeof(base)) == XP_OK);
    s->me = xp_rank();
    s->npes = xp_size();
}

static void sos_startup(sos_t *s)
{
    ptl_process_t *desired = calloc((size_t)s->npes, sizeof(*desired));
    ptl_uid_t uid = PTL_UID_ANY;
    ptl_md_t md;
    ptl_le_t le;
    int ret;

    XP_REQUIRE(desired);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    for (int i = 0; i < s->npes; i++) {
        size_t len = sizeof(ptl_process_t);
        XP_REQUIRE(xp_kv_get(i, "portals4-procid", &desired[i], &len) == XP_OK);
        XP_REQUIRE(len == sizeof(ptl_process_t));
    }
    ret = PtlSetMap(s->ni, (ptl_size_t)s->npes, desired);
    XP_CHECK(ret == PTL_OK || ret == PTL_IGNORED);
    free(desired);
    XP_REQUIRE(PtlGetUid(s->ni, &uid) == PTL_OK);
    size_t blen = sizeof(s->right_heap_base);
    XP_REQUIRE(xp_kv_get((s->me + 1) % s->npes, "portals4-bases", &s->right_heap_base, &blen) ==
               XP_OK);

    /* SOS aborts below a long double complex */
    XP_REQUIRE(s->limits.max_volatile_size >= sizeof(long double complex));
    XP_REQUIRE(s->limits.max_atomic_size >= sizeof(long double complex));
    XP_REQUIRE(s->limits.max_fetch_atomic_size >= sizeof(long double complex));
    if (s->me == 0)
        fprintf(stderr, "actual limits: volatile %llu, atomic %llu, fetch-atomic %llu, "
                "pt index %d, iovecs %d\n", (unsigned long long)s->limits.max_volatile_size,
                (unsigned long long)s->limits.max_atomic_size,
                (unsigned long long)s->limits.max_fetch_atomic_size, s->limits.max_pt_index,
                s->limits.max_iovecs);
    XP_CHECK(s->limits.max_pt_index >= 63);
    XP_CHECK(s->limits.max_msg_size >= LONG_LEN);

    XP_REQUIRE(PtlEQAlloc(s->ni, EVENT_SLOTS, &s->eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, s->eq, DATA_PT, &s->data_pt) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, s->eq, HEAP_PT, &s->heap_pt) == PTL_OK);
    XP_CHECK_EQ(s->data_pt, DATA_PT);
    XP_CHECK_EQ(s->heap_pt, HEAP_PT);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->target_ct) == PTL_OK);
    le.ct_handle = s->target_ct;
    le.uid = uid;
    le.options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_LINK_DISABLE |
                 PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_CT_COMM;
    le.start = s->heap_base;
    le.length = SEG_LEN;
    XP_REQUIRE(PtlLEAppend(s->ni, s->heap_pt, &le, PTL_PRIORITY_LIST, NULL, &s->heap_le) == PTL_OK);
    le.start = s->data_base;
    le.length = SEG_LEN;
    XP_REQUIRE(PtlLEAppend(s->ni, s->data_pt, &le, PTL_PRIORITY_LIST, NULL, &s->data_le) == PTL_OK);

    XP_REQUIRE(PtlCTAlloc(s->ni, &s->put_ct) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(s->ni, &s->get_ct) == PTL_OK);
    md.start = 0;
    md.length = PTL_SIZE_MAX;
    md.eq_handle = s->eq;
    md.ct_handle = s->put_ct;
    md.options = PTL_MD_EVENT_CT_ACK | PTL_MD_UNORDERED;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->put_event_md) == PTL_OK);
    md.options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_UNORDERED;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->put_cntr_md) == PTL_OK);
    md.options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_VOLATILE |
                 PTL_MD_UNORDERED;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->put_volatile_md) == PTL_OK);
    md.options = PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_SUCCESS_DISABLE | PTL_MD_UNORDERED;
    md.ct_handle = s->get_ct;
    XP_REQUIRE(PtlMDBind(s->ni, &md, &s->get_md) == PTL_OK);
    s->event_slots = EVENT_SLOTS;
}

/* ------------------------------------------------------------------ paths */

/* Which segment, and the offset in it, of a symmetric address. */
static void remote_access(const sos_t *s, const void *target, ptl_pt_index_t *pt, ptl_size_t *off)
{
    const unsigned char *t = target;
    if (t >= s->heap_base && t < s->heap_base + SEG_LEN) {
        *pt = s->heap_pt;
        *off = (ptl_size_t)(t - s->heap_base);
    } else {
        XP_REQUIRE(t >= s->data_base && t < s->data_base + SEG_LEN);
        *pt = s->data_pt;
        *off = (ptl_size_t)(t - s->data_base);
    }
}

static ptl_process_t peer_of(int pe)
{
    ptl_process_t p;
    memset(&p, 0, sizeof(p));
    p.rank = (ptl_rank_t)pe;
    return p;
}

/* The only full events SOS ever expects: successful SENDs. */
static void drain_eq(sos_t *s)
{
    ptl_event_t ev;
    XP_REQUIRE(PtlEQWait(s->eq, &ev) == PTL_OK);
    XP_REQUIRE(ev.ni_fail_type == PTL_NI_OK);
    if (ev.type != PTL_EVENT_SEND) {
        fprintf(stderr, "SOS would abort: event type %d on its EQ\n", ev.type);
        exit(1);
    }
    s->event_slots++;
    s->sends_seen++;
    frag_t *f = ev.user_ptr;
    XP_REQUIRE(f != NULL);
    if (f->type == FRAG_BOUNCE) {
        free(f);
    } else {
        (*f->completion)--;
        if (--f->reference <= 0)
            free(f);
    }
}

static void take_slot(sos_t *s)
{
    while (--s->event_slots <= 0) {
        s->event_slots++;
        drain_eq(s);
    }
}

static void put_nb(sos_t *s, void *target, const void *source, size_t len, int pe,
                   long *completion)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, target, &pt, &off);
    if (len <= s->limits.max_volatile_size) {
        XP_REQUIRE(PtlPut(s->put_volatile_md, (ptl_size_t)(uintptr_t)source, len, PTL_OC_ACK_REQ,
                          peer_of(pe), pt, 0, off, NULL, 0) == PTL_OK);
    } else if (len <= BOUNCE_SIZE) {
        take_slot(s);
        frag_t *b = malloc(sizeof(*b));
        XP_REQUIRE(b);
        b->type = FRAG_BOUNCE;
        memcpy(b->data, source, len);
        XP_REQUIRE(PtlPut(s->put_event_md, (ptl_size_t)(uintptr_t)b->data, len, PTL_OC_ACK_REQ,
                          peer_of(pe), pt, 0, off, b, 0) == PTL_OK);
    } else {
        take_slot(s);
        frag_t *f = malloc(sizeof(*f));
        XP_REQUIRE(f);
        f->type = FRAG_LONG;
        f->reference = 1;
        f->completion = completion;
        (*completion)++;
        XP_REQUIRE(PtlPut(s->put_event_md, (ptl_size_t)(uintptr_t)source, len, PTL_OC_ACK_REQ,
                          peer_of(pe), pt, 0, off, f, 0) == PTL_OK);
    }
    s->pending_put++;
}

static void put_nbi_long(sos_t *s, void *target, const void *source, size_t len, int pe)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, target, &pt, &off);
    XP_REQUIRE(PtlPut(s->put_cntr_md, (ptl_size_t)(uintptr_t)source, len, PTL_OC_ACK_REQ,
                      peer_of(pe), pt, 0, off, NULL, 0) == PTL_OK);
    s->pending_put++;
}

static void put_wait(sos_t *s, long *completion)
{
    while (*completion > 0)
        drain_eq(s);
}

static void get(sos_t *s, void *target, const void *source, size_t len, int pe)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, source, &pt, &off);
    XP_REQUIRE(PtlGet(s->get_md, (ptl_size_t)(uintptr_t)target, len, peer_of(pe), pt, 0, off,
                      NULL) == PTL_OK);
    s->pending_get++;
}

static void get_wait(sos_t *s)
{
    ptl_ct_event_t ct;
    XP_REQUIRE(PtlCTWait(s->get_ct, s->pending_get, &ct) == PTL_OK);
    XP_CHECK_EQ(ct.failure, 0);
    XP_CHECK(ct.success >= s->pending_get);
}

static void quiet(sos_t *s)
{
    ptl_ct_event_t ct;
    XP_REQUIRE(PtlAtomicSync() == PTL_OK);
    get_wait(s);
    XP_REQUIRE(PtlCTWait(s->put_ct, s->pending_put, &ct) == PTL_OK);
    XP_CHECK_EQ(ct.failure, 0);
    XP_CHECK_EQ(ct.success, s->pending_put); /* every OC ack counted once, never more */
}

static void atomic_small(sos_t *s, void *target, const void *source, size_t len, int pe,
                         ptl_op_t op, ptl_datatype_t dt)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, target, &pt, &off);
    XP_REQUIRE(PtlAtomic(s->put_volatile_md, (ptl_size_t)(uintptr_t)source, len, PTL_OC_ACK_REQ,
                         peer_of(pe), pt, 0, off, NULL, 0, op, dt) == PTL_OK);
    s->pending_put++;
}

/* A long atomic is split at max_atomic_size, each piece with a SEND event. */
static void atomic_long(sos_t *s, void *target, const void *source, size_t len, int pe,
                        ptl_op_t op, ptl_datatype_t dt, long *completion)
{
    ptl_pt_index_t pt;
    ptl_size_t off, sent = 0;
    remote_access(s, target, &pt, &off);
    frag_t *f = malloc(sizeof(*f));
    XP_REQUIRE(f);
    f->type = FRAG_LONG;
    f->reference = 0;
    f->completion = completion;
    while (sent < len) {
        take_slot(s);
        size_t n = len - sent < s->limits.max_atomic_size ? len - sent : s->limits.max_atomic_size;
        (*completion)++;
        f->reference++;
        XP_REQUIRE(PtlAtomic(s->put_event_md, (ptl_size_t)(uintptr_t)source + sent, n,
                             PTL_OC_ACK_REQ, peer_of(pe), pt, 0, off + sent, f, 0, op, dt) ==
                   PTL_OK);
        s->pending_put++;
        sent += n;
    }
}

static void swap_op(sos_t *s, void *target, const void *source, void *dest, const void *operand,
                    size_t len, int pe, ptl_op_t op, ptl_datatype_t dt)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, target, &pt, &off);
    XP_REQUIRE(PtlSwap(s->get_md, (ptl_size_t)(uintptr_t)dest, s->put_volatile_md,
                       (ptl_size_t)(uintptr_t)source, len, peer_of(pe), pt, 0, off, NULL, 0,
                       operand, op, dt) == PTL_OK);
    s->pending_get++;
}

static void fetch_atomic(sos_t *s, void *target, const void *source, void *dest, size_t len,
                         int pe, ptl_op_t op, ptl_datatype_t dt)
{
    ptl_pt_index_t pt;
    ptl_size_t off;
    remote_access(s, target, &pt, &off);
    XP_REQUIRE(PtlFetchAtomic(s->get_md, (ptl_size_t)(uintptr_t)dest, s->put_volatile_md,
                              (ptl_size_t)(uintptr_t)source, len, peer_of(pe), pt, 0, off, NULL,
                              0, op, dt) == PTL_OK);
    s->pending_get++;
}

/* A barrier as SOS builds it: an atomic increment of a symmetric counter on
 * every other PE, then waiting on the target CT (received-counter wait) until
 * the local counter is complete. Waiting in PtlCTWait keeps serving peers,
 * so this also works with XP_PROGRESS=inline. */
static void barrier(sos_t *s)
{
    int64_t one = 1;
    /* The engine applies atomics with atomic instructions while we poll:
     * read the counter with an atomic load too (SOS uses volatile; TSan,
     * rightly, calls a plain read racing with the engine's write a race). */
    int64_t *counter = (int64_t *)(s->heap_base + SEG_LEN - 64);
    ptl_ct_event_t ct;
    quiet(s);
    s->barrier_epoch++;
    for (int pe = 0; pe < s->npes; pe++)
        if (pe != s->me)
            atomic_small(s, (void *)counter, &one, sizeof(one), pe, PTL_SUM, PTL_INT64_T);
    quiet(s);
    for (;;) {
        XP_REQUIRE(PtlCTGet(s->target_ct, &ct) == PTL_OK);
        XP_REQUIRE(PtlAtomicSync() == PTL_OK);
        if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= s->barrier_epoch * (s->npes - 1))
            break;
        XP_REQUIRE(PtlCTWait(s->target_ct, ct.success + ct.failure + 1, &ct) == PTL_OK);
        XP_REQUIRE(ct.failure == 0);
    }
}

/* ------------------------------------------------------------------ checks */

static unsigned char pat(size_t i, int pe)
{
    return (unsigned char)(i * 31u + (unsigned)pe * 17u + (i >> 11));
}

/* Puts of every size class and gets back; VOLATILE: the source is reused
 * as soon as PtlPut returns. */
static void test_put_get(sos_t *s)
{
    int right = (s->me + 1) % s->npes, left = (s->me + s->npes - 1) % s->npes;
    static const size_t sizes[] = { 1, 8, 100, 1000, BOUNCE_SIZE, 4096, 16384, 30000, 65536,
                                    LONG_LEN };
    unsigned char *src = malloc(LONG_LEN), *dst = malloc(LONG_LEN);
    long completion = 0;
    XP_REQUIRE(src && dst);
    size_t off = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        for (size_t i = 0; i < n; i++)
            src[i] = pat(i + k, s->me);
        unsigned char *seg = (k & 1) ? s->heap_base : s->data_base;
        put_nb(s, seg + off, src, n, right, &completion);
        if (n <= s->limits.max_volatile_size)
            memset(src, 0xEE, n); /* volatile: reusable at once */
        else if (n > BOUNCE_SIZE)
            put_wait(s, &completion); /* long put: wait for its SEND */
        off += n + 64;
    }
    /* and one long non-blocking-implicit put through the counting MD */
    for (size_t i = 0; i < 65536; i++)
        src[i] = pat(i, s->me + 50);
    put_nbi_long(s, s->heap_base + 3 * 1024 * 1024, src, 65536, right);
    put_wait(s, &completion);
    barrier(s);
    off = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], bad = 0;
        unsigned char *seg = (k & 1) ? s->heap_base : s->data_base;
        for (size_t i = 0; i < n; i++)
            bad += seg[off + i] != pat(i + k, left);
        if (bad)
            fprintf(stderr, "put of %zu bytes: %zu bytes wrong\n", n, bad);
        XP_CHECK_EQ(bad, 0);
        off += n + 64;
    }
    /* gets of the same ranges from the right neighbour (it holds our data) */
    off = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], bad = 0;
        unsigned char *seg = (k & 1) ? s->heap_base : s->data_base;
        memset(dst, 0, n);
        get(s, dst, seg + off, n, right);
        get_wait(s);
        for (size_t i = 0; i < n; i++)
            bad += dst[i] != pat(i + k, s->me);
        XP_CHECK_EQ(bad, 0);
        off += n + 64;
    }
    get(s, dst, s->heap_base + 3 * 1024 * 1024, 65536, right);
    quiet(s);
    size_t bad = 0;
    for (size_t i = 0; i < 65536; i++)
        bad += dst[i] != pat(i, s->me + 50);
    XP_CHECK_EQ(bad, 0);
    barrier(s);
    free(src);
    free(dst);
}

/* Values as every datatype (complex: real part). */
static void set_val(ptl_datatype_t dt, void *p, long v)
{
    switch (dt) {
    case PTL_INT8_T: *(int8_t *)p = (int8_t)v; break;
    case PTL_UINT8_T: *(uint8_t *)p = (uint8_t)v; break;
    case PTL_INT16_T: *(int16_t *)p = (int16_t)v; break;
    case PTL_UINT16_T: *(uint16_t *)p = (uint16_t)v; break;
    case PTL_INT32_T: *(int32_t *)p = (int32_t)v; break;
    case PTL_UINT32_T: *(uint32_t *)p = (uint32_t)v; break;
    case PTL_INT64_T: *(int64_t *)p = (int64_t)v; break;
    case PTL_UINT64_T: *(uint64_t *)p = (uint64_t)v; break;
    case PTL_FLOAT: *(float *)p = (float)v; break;
    case PTL_DOUBLE: *(double *)p = (double)v; break;
    case PTL_LONG_DOUBLE: *(long double *)p = (long double)v; break;
    case PTL_FLOAT_COMPLEX: *(float complex *)p = (float)v; break;
    case PTL_DOUBLE_COMPLEX: *(double complex *)p = (double)v; break;
    case PTL_LONG_DOUBLE_COMPLEX: *(long double complex *)p = (long double)v; break;
    }
}

static long get_val(ptl_datatype_t dt, const void *p)
{
    switch (dt) {
    case PTL_INT8_T: return *(const int8_t *)p;
    case PTL_UINT8_T: return *(const uint8_t *)p;
    case PTL_INT16_T: return *(const int16_t *)p;
    case PTL_UINT16_T: return *(const uint16_t *)p;
    case PTL_INT32_T: return *(const int32_t *)p;
    case PTL_UINT32_T: return *(const uint32_t *)p;
    case PTL_INT64_T: return (long)*(const int64_t *)p;
    case PTL_UINT64_T: return (long)*(const uint64_t *)p;
    case PTL_FLOAT: return (long)*(const float *)p;
    case PTL_DOUBLE: return (long)*(const double *)p;
    case PTL_LONG_DOUBLE: return (long)*(const long double *)p;
    case PTL_FLOAT_COMPLEX: return (long)crealf(*(const float complex *)p);
    case PTL_DOUBLE_COMPLEX: return (long)creal(*(const double complex *)p);
    case PTL_LONG_DOUBLE_COMPLEX: return (long)creall(*(const long double complex *)p);
    }
    return -1;
}

static size_t type_size(ptl_datatype_t dt)
{
    static const size_t sz[] = { 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16, sizeof(long double),
                                 sizeof(long double complex) };
    return sz[dt];
}

static int is_float(ptl_datatype_t dt)
{
    return dt >= PTL_FLOAT;
}

static int is_complex(ptl_datatype_t dt)
{
    return dt == PTL_FLOAT_COMPLEX || dt == PTL_DOUBLE_COMPLEX || dt == PTL_LONG_DOUBLE_COMPLEX;
}

/* target 6, operand 3 */
static int op_result(ptl_op_t op, long *r)
{
    switch (op) {
    case PTL_SUM: *r = 9; return 1;
    case PTL_PROD: *r = 18; return 1;
    case PTL_MIN: *r = 3; return 1;
    case PTL_MAX: *r = 6; return 1;
    case PTL_BAND: *r = 2; return 1;
    case PTL_BOR: *r = 7; return 1;
    case PTL_BXOR: *r = 5; return 1;
    case PTL_LAND: *r = 1; return 1;
    case PTL_LOR: *r = 1; return 1;
    case PTL_LXOR: *r = 0; return 1;
    default: return 0;
    }
}

static int op_valid(ptl_op_t op, ptl_datatype_t dt)
{
    if (op >= PTL_LOR && op <= PTL_BXOR)
        return !is_float(dt);
    if (op == PTL_MIN || op == PTL_MAX)
        return !is_complex(dt);
    return 1;
}

#define SLOT 32 /* one long double complex per (op, type) */

/* Every op x type with PtlAtomic (OC ack), then fetch-add, swap, cswap, mswap. */
static void test_atomics(sos_t *s)
{
    int right = (s->me + 1) % s->npes;
    unsigned char *area = s->heap_base + 2 * 1024 * 1024;
    unsigned char src[SLOT], dst[SLOT];
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++)
        for (int op = 0; op <= PTL_BXOR; op++)
            set_val((ptl_datatype_t)dt, area + (size_t)(dt * PTL_OP_LAST + op) * SLOT, 6);
    barrier(s);
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++) {
        for (int op = 0; op <= PTL_BXOR; op++) {
            if (!op_valid((ptl_op_t)op, (ptl_datatype_t)dt))
                continue;
            memset(src, 0, sizeof(src));
            set_val((ptl_datatype_t)dt, src, 3);
            atomic_small(s, area + (size_t)(dt * PTL_OP_LAST + op) * SLOT, src,
                         type_size((ptl_datatype_t)dt), right, (ptl_op_t)op, (ptl_datatype_t)dt);
            memset(src, 0x5A, sizeof(src)); /* volatile MD: reusable at once */
        }
    }
    barrier(s);
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++) {
        for (int op = 0; op <= PTL_BXOR; op++) {
            long want, got;
            if (!op_valid((ptl_op_t)op, (ptl_datatype_t)dt) || !op_result((ptl_op_t)op, &want))
                continue;
            got = get_val((ptl_datatype_t)dt, area + (size_t)(dt * PTL_OP_LAST + op) * SLOT);
            if (got != want)
                fprintf(stderr, "atomic op %d type %d: %ld, want %ld\n", op, dt, got, want);
            XP_CHECK_EQ(got, want);
        }
    }
    barrier(s);

    /* fetching kinds on every type: fetch-sum, swap, cswap; mswap on ints */
    unsigned char *fa = s->heap_base + 2 * 1024 * 1024 + 65536;
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++)
        for (int k = 0; k < 4; k++)
            set_val((ptl_datatype_t)dt, fa + (size_t)(dt * 4 + k) * SLOT, 6);
    barrier(s);
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++) {
        ptl_datatype_t t = (ptl_datatype_t)dt;
        size_t sz = type_size(t);
        unsigned char operand[SLOT];
        memset(src, 0, sizeof(src));
        memset(dst, 0, sizeof(dst));
        set_val(t, src, 3);
        fetch_atomic(s, fa + (size_t)(dt * 4) * SLOT, src, dst, sz, right, PTL_SUM, t);
        get_wait(s);
        XP_CHECK_EQ(get_val(t, dst), 6);
        swap_op(s, fa + (size_t)(dt * 4 + 1) * SLOT, src, dst, NULL, sz, right, PTL_SWAP, t);
        get_wait(s);
        XP_CHECK_EQ(get_val(t, dst), 6);
        memset(operand, 0, sizeof(operand));
        set_val(t, operand, 6);
        swap_op(s, fa + (size_t)(dt * 4 + 2) * SLOT, src, dst, operand, sz, right, PTL_CSWAP, t);
        get_wait(s);
        XP_CHECK_EQ(get_val(t, dst), 6);
        if (!is_float(t)) {
            set_val(t, operand, 1); /* mask: only bit 0 comes from src (3) */
            swap_op(s, fa + (size_t)(dt * 4 + 3) * SLOT, src, dst, operand, sz, right, PTL_MSWAP,
                    t);
            get_wait(s);
            XP_CHECK_EQ(get_val(t, dst), 6);
        }
    }
    barrier(s);
    for (int dt = 0; dt < PTL_DATATYPE_LAST; dt++) {
        ptl_datatype_t t = (ptl_datatype_t)dt;
        XP_CHECK_EQ(get_val(t, fa + (size_t)(dt * 4) * SLOT), 9);
        XP_CHECK_EQ(get_val(t, fa + (size_t)(dt * 4 + 1) * SLOT), 3);
        XP_CHECK_EQ(get_val(t, fa + (size_t)(dt * 4 + 2) * SLOT), 3);
        if (!is_float(t))
            XP_CHECK_EQ(get_val(t, fa + (size_t)(dt * 4 + 3) * SLOT), 7);
    }
    barrier(s);

    /* a long atomic: split at max_atomic_size, SEND events through the EQ */
    size_t n = 4 * s->limits.max_atomic_size + 24;
    n -= n % 8;
    int64_t *lsrc = malloc(n), *ltgt = (int64_t *)(s->heap_base + 2 * 1024 * 1024 + 131072);
    long completion = 0;
    XP_REQUIRE(lsrc);
    for (size_t i = 0; i < n / 8; i++) {
        lsrc[i] = (int64_t)i;
        ltgt[i] = 1000;
    }
    barrier(s);
    atomic_long(s, ltgt, lsrc, n, right, PTL_SUM, PTL_INT64_T, &completion);
    put_wait(s, &completion);
    barrier(s);
    for (size_t i = 0; i < n / 8; i++)
        if (ltgt[i] != 1000 + (int64_t)i) {
            XP_CHECK_EQ(ltgt[i], 1000 + (int64_t)i);
            break;
        }
    free(lsrc);
    barrier(s);
}

/* shmemx counters: CT + a PT at the first free index + an LE with CT_COMM. */
static void test_counters(sos_t *s)
{
    ptl_handle_ct_t ct;
    ptl_pt_index_t pt;
    ptl_handle_le_t le_h;
    ptl_ct_event_t ev;
    int right = (s->me + 1) % s->npes;
    XP_REQUIRE(PtlCTAlloc(s->ni, &ct) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, s->eq, 0, &pt) == PTL_OK);
    XP_CHECK_EQ(pt, 0);
    ptl_le_t le = { .start = s->data_base, .length = SEG_LEN, .ct_handle = ct,
                    .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_LINK_DISABLE |
                               PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_CT_COMM };
    XP_REQUIRE(PtlLEAppend(s->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &le_h) == PTL_OK);
    barrier(s);
    long v = 42;
    for (int i = 0; i < 5; i++) {
        XP_REQUIRE(PtlPut(s->put_volatile_md, (ptl_size_t)(uintptr_t)&v, sizeof(v),
                          PTL_OC_ACK_REQ, peer_of(right), pt, 0, 128, NULL, 0) == PTL_OK);
        s->pending_put++;
    }
    XP_REQUIRE(PtlCTWait(ct, 5, &ev) == PTL_OK);
    XP_CHECK(ev.failure == 0 && ev.success >= 5);
    XP_REQUIRE(PtlCTGet(ct, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, 5);
    ptl_ct_event_t zero = { 0, 0 };
    XP_REQUIRE(PtlCTSet(ct, zero) == PTL_OK);
    XP_REQUIRE(PtlCTGet(ct, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.success, 0);
    barrier(s);
    XP_CHECK_EQ(PtlCTFree(ct), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(le_h), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(s->ni, pt), PTL_OK);
    /* received-counter: the target CT counted every message that landed */
    XP_REQUIRE(PtlCTGet(s->target_ct, &ev) == PTL_OK);
    XP_CHECK_EQ(ev.failure, 0);
    XP_CHECK(ev.success > 0);
}

/* Remote virtual addressing: one LE over the whole address space (start
 * NULL, length PTL_SIZE_MAX) and the target's virtual address as offset. SOS
 * keeps going without PTL_TARGET_BIND_INACCESSIBLE, so this must work. */
static void test_rva(sos_t *s)
{
    enum { RVA_PT = 12 };
    ptl_pt_index_t pt;
    ptl_handle_le_t le_h;
    int right = (s->me + 1) % s->npes, left = (s->me + s->npes - 1) % s->npes;
    unsigned char src[256], dst[256];
    unsigned char *mine = s->heap_base + 3 * 1024 * 1024 + 512 * 1024;
    XP_REQUIRE(PtlPTAlloc(s->ni, 0, s->eq, RVA_PT, &pt) == PTL_OK);
    ptl_le_t le = { .start = NULL, .length = PTL_SIZE_MAX, .ct_handle = s->target_ct,
                    .uid = PTL_UID_ANY,
                    .options = PTL_LE_OP_PUT | PTL_LE_OP_GET | PTL_LE_EVENT_LINK_DISABLE |
                               PTL_LE_EVENT_SUCCESS_DISABLE | PTL_LE_EVENT_CT_COMM };
    XP_REQUIRE(PtlLEAppend(s->ni, pt, &le, PTL_PRIORITY_LIST, NULL, &le_h) == PTL_OK);
    barrier(s);
    ptl_size_t roff = s->right_heap_base + (ptl_size_t)(mine - s->heap_base);
    for (int i = 0; i < 256; i++)
        src[i] = pat((size_t)i, s->me + 7);
    XP_REQUIRE(PtlPut(s->put_volatile_md, (ptl_size_t)(uintptr_t)src, sizeof(src),
                      PTL_OC_ACK_REQ, peer_of(right), pt, 0, roff, NULL, 0) == PTL_OK);
    s->pending_put++;
    barrier(s);
    size_t bad = 0;
    for (int i = 0; i < 256; i++)
        bad += mine[i] != pat((size_t)i, left + 7);
    XP_CHECK_EQ(bad, 0);
    memset(dst, 0, sizeof(dst));
    XP_REQUIRE(PtlGet(s->get_md, (ptl_size_t)(uintptr_t)dst, sizeof(dst), peer_of(right), pt, 0,
                      roff, NULL) == PTL_OK);
    s->pending_get++;
    get_wait(s);
    XP_CHECK_EQ(memcmp(dst, src, sizeof(dst)), 0);
    barrier(s);
    XP_CHECK_EQ(PtlLEUnlink(le_h), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(s->ni, pt), PTL_OK);
}

static void sos_fini(sos_t *s)
{
    ptl_ct_event_t ct;
    ptl_event_t ev;
    XP_REQUIRE(PtlAtomicSync() == PTL_OK);
    XP_REQUIRE(PtlCTWait(s->put_ct, s->pending_put, &ct) == PTL_OK);
    XP_CHECK_EQ(s->pending_put, ct.success + ct.failure);
    XP_REQUIRE(PtlCTWait(s->get_ct, s->pending_get, &ct) == PTL_OK);
    XP_CHECK_EQ(s->pending_get, ct.success + ct.failure);
    /* bounce-buffer SENDs not drained yet are the only events left */
    while (PtlEQGet(s->eq, &ev) == PTL_OK) {
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        if (ev.type == PTL_EVENT_SEND && ev.user_ptr &&
            ((frag_t *)ev.user_ptr)->type == FRAG_BOUNCE)
            free(ev.user_ptr);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(s->get_md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(s->put_event_md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(s->put_cntr_md), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(s->put_volatile_md), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(s->get_ct), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(s->put_ct), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(s->heap_le), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(s->data_le), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(s->target_ct), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(s->ni, s->heap_pt), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(s->ni, s->data_pt), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(s->eq), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(s->ni), PTL_OK);
    PtlFini();
}

int main(void)
{
    sos_t s;
    memset(&s, 0, sizeof(s));
    s.data_base = aligned_alloc(64, SEG_LEN);
    s.heap_base = aligned_alloc(64, SEG_LEN);
    XP_REQUIRE(s.data_base && s.heap_base);
    memset(s.data_base, 0, SEG_LEN);
    memset(s.heap_base, 0, SEG_LEN);
    sos_init(&s);
    if (s.npes < 2)
        XP_TEST_SKIP("needs 2 or more ranks");
    sos_startup(&s);
    XP_REQUIRE(xp_barrier() == XP_OK);
    test_put_get(&s);
    test_atomics(&s);
    test_counters(&s);
    test_rva(&s);
    XP_CHECK(s.sends_seen > 0); /* the event MD's SENDs did come through the EQ */
    sos_fini(&s);
    free(s.data_base);
    free(s.heap_base);
    return xp_test_result();
}
