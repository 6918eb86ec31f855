/* The packet-handler fuzzing environment; see ptl_packet_env.h. */
#include <portals4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptl_packet_env.h"
#include "ptl/progress.h"

#define GUARD 256            /* bytes on each side of every target buffer */
#define BUF 4096
#define NBUF 12
#define SCRATCH (64 * 1024)  /* where RMA segments are redirected */
#define NENT 10
#define GUARD_BYTE 0xcd

enum { PT_MAIN = 0, PT_FLOW = 1, PT_NOEQ = 2 };

typedef struct ent {
    int matching;            /* ME on the matching NI, else LE on the other */
    ptl_pt_index_t pt;
    ptl_list_t list;
    ptl_me_t me;
    ptl_handle_me_t h;
} ent_t;

typedef struct env {
    ptl_handle_ni_t ni_m, ni_n;
    ptl_handle_eq_t eq[4];
    int neq;
    ptl_handle_ct_t ct;
    ptl_handle_md_t md_m, md_n;
    unsigned char *arena;    /* NBUF buffers, each between two guards */
    unsigned char *scratch;
    ptl_iovec_t iov[3];
    ent_t ent[NENT];
    int nent;
    int slot_m;
} env_t;

/* The one environment of this process (a test or a fuzzer binary). */
static env_t the_env;

static void must(int rc, const char *what)
{
    if (rc != PTL_OK) {
        fprintf(stderr, "fuzz env: %s failed (%d)\n", what, rc);
        exit(1);
    }
}

static unsigned char *buf_at(int i)
{
    return the_env.arena + GUARD + (size_t)i * (BUF + GUARD);
}

unsigned char *xp_fuzz_ptl_target_buf(void)
{
    return buf_at(0);
}

ptl_handle_md_t xp_fuzz_ptl_md(void)
{
    return the_env.md_m;
}

size_t xp_fuzz_ptl_hdr_decode(const unsigned char *in, size_t len, xp_pkt_t *h)
{
#ifdef XP_PKT_WIRE_FIXED
    return xp_pkt_decode(in, len, h);
#else
    if (len < sizeof(*h))
        return 0;
    memcpy(h, in, sizeof(*h));
    return sizeof(*h);
#endif
}

size_t xp_fuzz_ptl_hdr_encode(const xp_pkt_t *h, unsigned char *out)
{
#ifdef XP_PKT_WIRE_FIXED
    return xp_pkt_encode(h, out);
#else
    memcpy(out, h, sizeof(*h));
    return sizeof(*h);
#endif
}

static void add_ent(int matching, ptl_pt_index_t pt, ptl_list_t list, void *start, ptl_size_t len,
                    unsigned options, uint64_t bits, uint64_t ignore, ptl_uid_t uid,
                    ptl_size_t min_free)
{
    ent_t *e = &the_env.ent[the_env.nent++];
    memset(e, 0, sizeof(*e));
    e->matching = matching;
    e->pt = pt;
    e->list = list;
    e->me.start = start;
    e->me.length = len;
    e->me.ct_handle = (options & PTL_ME_EVENT_CT_COMM) ? the_env.ct : PTL_CT_NONE;
    e->me.uid = uid;
    e->me.options = options;
    e->me.match_id.rank = PTL_RANK_ANY;
    e->me.match_bits = bits;
    e->me.ignore_bits = ignore;
    e->me.min_free = min_free;
    e->h = PTL_INVALID_HANDLE;
}

static void append(ent_t *e)
{
    int rc;
    if (e->matching) {
        rc = PtlMEAppend(the_env.ni_m, e->pt, &e->me, e->list, e, &e->h);
    } else {
        ptl_le_t le = { .start = e->me.start, .length = e->me.length,
                        .ct_handle = e->me.ct_handle, .uid = e->me.uid,
                        .options = e->me.options };
        rc = PtlLEAppend(the_env.ni_n, e->pt, &le, e->list, e, &e->h);
    }
    must(rc, "append");
}

static void entries(void)
{
    const unsigned rw = PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE;
    const uint64_t all = ~0ull;
    env_t *v = &the_env;
    v->iov[0] = (ptl_iovec_t){ buf_at(2), 100 };
    v->iov[1] = (ptl_iovec_t){ buf_at(3), 1 };
    v->iov[2] = (ptl_iovec_t){ buf_at(4), BUF };
    /* Templates pick entries 0..5 by index: keep their match bits = index + 1. */
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, buf_at(0), BUF,
            rw | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_CT_BYTES, 1, 0, PTL_UID_ANY, 0);
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, v->iov, 3, rw | PTL_IOVEC, 2, 0, PTL_UID_ANY, 0);
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, buf_at(1), 64, rw | PTL_ME_USE_ONCE, 3, 0,
            PTL_UID_ANY, 0);
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, buf_at(5), 64, rw | PTL_ME_NO_TRUNCATE, 4, 0,
            PTL_UID_ANY, 0);
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, buf_at(6), BUF, rw, 5, 0, 12345, 0);
    add_ent(1, PT_MAIN, PTL_PRIORITY_LIST, buf_at(7), BUF, rw | PTL_ME_MANAGE_LOCAL, 6, 0,
            PTL_UID_ANY, 256);
    add_ent(1, PT_MAIN, PTL_OVERFLOW_LIST, buf_at(8), BUF,
            rw | PTL_ME_MANAGE_LOCAL | PTL_ME_MAY_ALIGN, 0, all, PTL_UID_ANY, 64);
    add_ent(1, PT_FLOW, PTL_PRIORITY_LIST, buf_at(9), BUF, rw, 1, 0, PTL_UID_ANY, 0);
    add_ent(1, PT_NOEQ, PTL_PRIORITY_LIST, buf_at(10), BUF, PTL_ME_OP_PUT, 0, all, PTL_UID_ANY, 0);
    add_ent(0, PT_MAIN, PTL_PRIORITY_LIST, buf_at(11), BUF, rw, 0, 0, PTL_UID_ANY, 0);
}

void xp_fuzz_ptl_setup(void)
{
    env_t *v = &the_env;
    ptl_pt_index_t got;
    /* A test harness may set the library's configuration before PtlInit. */
    setenv("XP_BOOTSTRAP", "singleton", 1);
    setenv("XP_PROGRESS", "inline", 1);
    memset(v, 0, sizeof(*v));
    v->arena = malloc(GUARD + (size_t)NBUF * (BUF + GUARD));
    v->scratch = calloc(1, SCRATCH);
    if (!v->arena || !v->scratch)
        exit(1);
    memset(v->arena, GUARD_BYTE, GUARD + (size_t)NBUF * (BUF + GUARD));
    must(PtlInit(), "PtlInit");
    must(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL,
                   &v->ni_m), "PtlNIInit matching");
    must(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                   NULL, &v->ni_n), "PtlNIInit non-matching");
    v->slot_m = (int)xp_handle_ni_of(v->ni_m);
    must(PtlEQAlloc(v->ni_m, 256, &v->eq[0]), "EQ");
    must(PtlEQAlloc(v->ni_m, 8, &v->eq[1]), "EQ small");
    must(PtlEQAlloc(v->ni_n, 256, &v->eq[2]), "EQ n");
    must(PtlEQAlloc(v->ni_m, 256, &v->eq[3]), "EQ md");
    v->neq = 4;
    must(PtlCTAlloc(v->ni_m, &v->ct), "CT");
    must(PtlPTAlloc(v->ni_m, 0, v->eq[0], PT_MAIN, &got), "PT main");
    must(PtlPTAlloc(v->ni_m, PTL_PT_FLOWCTRL, v->eq[1], PT_FLOW, &got), "PT flow");
    must(PtlPTAlloc(v->ni_m, 0, PTL_EQ_NONE, PT_NOEQ, &got), "PT no EQ");
    must(PtlPTAlloc(v->ni_n, 0, v->eq[2], PT_MAIN, &got), "PT n");
    ptl_md_t md = { .start = v->scratch, .length = SCRATCH, .eq_handle = v->eq[3],
                    .ct_handle = v->ct,
                    .options = PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY };
    must(PtlMDBind(v->ni_m, &md, &v->md_m), "MD m");
    md.eq_handle = v->eq[2];
    md.ct_handle = PTL_CT_NONE;
    md.options = 0;
    must(PtlMDBind(v->ni_n, &md, &v->md_n), "MD n");
    entries();
    for (int i = 0; i < v->nent; i++)
        append(&v->ent[i]);
}

void xp_fuzz_ptl_teardown(void)
{
    PtlFini();
    free(the_env.arena);
    free(the_env.scratch);
    memset(&the_env, 0, sizeof(the_env));
}

void xp_fuzz_ptl_settle(void)
{
    env_t *v = &the_env;
    ptl_event_t ev;
    for (int i = 0; i < 64 && xp_ptl_progress() > 0; i++)
        ;
    for (int q = 0; q < v->neq; q++) {
        int rc;
        while ((rc = PtlEQGet(v->eq[q], &ev)) == PTL_OK || rc == PTL_EQ_DROPPED)
            ;
    }
    PtlPTEnable(v->ni_m, PT_MAIN);
    PtlPTEnable(v->ni_m, PT_FLOW);
    PtlPTEnable(v->ni_m, PT_NOEQ);
    PtlPTEnable(v->ni_n, PT_MAIN);
}

void xp_fuzz_ptl_refill(void)
{
    env_t *v = &the_env;
    ptl_me_t any = { .match_id.rank = PTL_RANK_ANY, .ignore_bits = ~0ull, .uid = PTL_UID_ANY,
                     .options = PTL_ME_OP_PUT | PTL_ME_OP_GET };
    xp_fuzz_ptl_settle();
    for (int i = 0; i < v->nent; i++) {
        ent_t *e = &v->ent[i];
        /* Consumed entries answer PTL_ARG_INVALID here: that is fine. */
        if (e->matching)
            PtlMEUnlink(e->h);
        else
            PtlLEUnlink(e->h);
    }
    for (ptl_pt_index_t pt = PT_MAIN; pt <= PT_NOEQ; pt++)
        PtlMESearch(v->ni_m, pt, &any, PTL_SEARCH_DELETE, NULL);
    xp_fuzz_ptl_settle();
    for (int i = 0; i < v->nent; i++)
        append(&v->ent[i]);
}

int xp_fuzz_ptl_guards_ok(void)
{
    const unsigned char *a = the_env.arena;
    for (size_t i = 0; i < GUARD; i++)
        if (a[i] != GUARD_BYTE)
            return 0;
    for (int b = 0; b < NBUF; b++) {
        const unsigned char *g = buf_at(b) + BUF;
        for (size_t i = 0; i < GUARD; i++)
            if (g[i] != GUARD_BYTE)
                return 0;
    }
    return 1;
}

uint64_t xp_fuzz_ptl_rejections(void)
{
    uint64_t sum = 0;
    ptl_handle_ni_t nis[2] = { the_env.ni_m, the_env.ni_n };
    for (int n = 0; n < 2; n++)
        for (ptl_sr_index_t r = PTL_SR_DROP_COUNT; r < PTL_SR_LAST; r++) {
            ptl_sr_value_t val = 0;
            if (PtlNIStatus(nis[n], r, &val) == PTL_OK)
                sum += (uint64_t)val;
        }
    return sum;
}

size_t xp_fuzz_ptl_template(unsigned pick, xp_pkt_type_t type, uint64_t rlength,
                            const void *payload, size_t payload_len, unsigned char *out,
                            size_t cap)
{
    xp_pkt_t h;
    pick %= 6;
    memset(&h, 0, sizeof(h));
    h.type = (uint8_t)type;
    h.slot = (uint8_t)the_env.slot_m;
    h.ack_req = PTL_ACK_REQ;
    h.pt_index = PT_MAIN;
    h.md_handle = (uint32_t)the_env.md_m;
    h.uid = pick == 4 ? 12345 : 0;
    h.match_bits = pick + 1;
    h.rlength = rlength;
    h.hdr_data = 0x1234;
    h.user_ptr = 0x5678;
    if (type == XP_PKT_ATOMIC || type == XP_PKT_FETCH) {
        h.atomic_op = PTL_SUM;
        h.atomic_type = PTL_UINT64_T;
    } else if (type == XP_PKT_SWAP) {
        h.atomic_op = PTL_SWAP;
        h.atomic_type = PTL_UINT64_T;
    }
    if (type != XP_PKT_PUT && type != XP_PKT_ATOMIC)
        h.ack_req = PTL_NO_ACK_REQ;
    if (cap < 128 + payload_len)
        return 0;
    size_t n = xp_fuzz_ptl_hdr_encode(&h, out);
    if (payload_len)
        memcpy(out + n, payload, payload_len);
    return n + payload_len;
}

/* Point the RMA segments that the payload holds into the scratch buffer. */
static void redirect_segments(unsigned char *pkt, size_t len)
{
    xp_pkt_t h;
    size_t hl = xp_fuzz_ptl_hdr_decode(pkt, len, &h);
    if (!hl || !(h.flags & XP_PKT_F_RMA))
        return;
    for (size_t off = hl; off + sizeof(xp_seg_t) <= len; off += sizeof(xp_seg_t)) {
        xp_seg_t s;
        memcpy(&s, pkt + off, sizeof(s));
        size_t at = (size_t)(s.addr % SCRATCH);
        s.addr = (uint64_t)(uintptr_t)(the_env.scratch + at);
        if (s.len > SCRATCH - at)
            s.len = SCRATCH - at;
        memcpy(pkt + off, &s, sizeof(s));
    }
}

void xp_fuzz_ptl_deliver(int src, const void *pkt, size_t len)
{
    xp_ptl_state_t *st = xp_ptl_state();
    /* The transport calls the handler with the poll lock held. */
    xp_poll_lock(st);
    xp_eng_recv(NULL, src, pkt, len);
    xp_poll_unlock(st);
}

void xp_fuzz_ptl_feed(const uint8_t *data, size_t size)
{
    static const int srcs[8] = { 0, 0, 0, 0, 0, 1, -1, 1 << 30 };
    if (size < 2)
        return;
    int src = srcs[data[0] & 7];
    uint8_t ctl = data[1];
    size_t len = size - 2;
    /* An exact-size heap copy, so ASan sees any read past the packet. */
    unsigned char *pkt = malloc(len ? len : 1);
    if (!pkt)
        return;
    memcpy(pkt, data + 2, len);
    redirect_segments(pkt, len);
    xp_fuzz_ptl_deliver(src, pkt, len);
    free(pkt);
    if (ctl & 1)
        xp_fuzz_ptl_settle();
    if ((ctl & 0x1e) == 0x1e)
        xp_fuzz_ptl_refill();
}
