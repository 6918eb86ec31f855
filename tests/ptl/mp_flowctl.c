/*
 * mp_flowctl - PTL_PT_FLOWCTRL disable and recovery, nothing lost.
 *
 * Rank 0 receives on a flow-controlled PT whose only entries are two small
 * overflow buffers (MANAGE_LOCAL + min_free, re-posted on AUTO_FREE) and a
 * small EQ, and it is slow on purpose: both resources run out, the PT is
 * disabled, rank 0 gets PTL_EVENT_PT_DISABLED and every message refused
 * meanwhile is acknowledged to its sender with PTL_NI_PT_DISABLED. Recovery
 * as Open MPI's mtl does it: drain the EQ, re-post the buffers,
 * PtlPTEnable, tell the senders (a "resume" put carrying the epoch); they
 * resend exactly the refused messages. Checked: every (sender, seq) arrives
 * exactly once with the right bytes, every message is acknowledged OK once,
 * and the PT really was disabled at least once.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define DATA_PT 3
#define CTRL_PT 4
#define NMSG 1500
#define MSG 200
#define WINDOW 48
#define NBUF 2
#define BUFLEN (4 * MSG)
#define RESUME_BITS 0x5E5E

static ptl_handle_ni_t ni;

static unsigned char pattern(int sender, int seq, size_t i)
{
    return (unsigned char)(sender * 31 + seq * 7 + i * 3);
}

static size_t msg_len(int seq)
{
    return (size_t)(MSG - (seq % 17)); /* varied sizes, none above MSG */
}

/* ------------------------------------------------------------ receiver */

typedef struct rbuf {
    unsigned char mem[BUFLEN];
    ptl_handle_me_t h;
} rbuf_t;

static void post_buffer(rbuf_t *b)
{
    ptl_me_t me;
    memset(&me, 0, sizeof(me));
    me.start = b->mem;
    me.length = BUFLEN;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.min_free = MSG;
    me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_UNEXPECTED_HDR_DISABLE |
                 PTL_ME_EVENT_LINK_DISABLE;
    me.match_id.rank = PTL_RANK_ANY;
    me.ignore_bits = ~UINT64_C(0);
    XP_REQUIRE(PtlMEAppend(ni, DATA_PT, &me, PTL_OVERFLOW_LIST, b, &b->h) == PTL_OK);
}

static void receiver(int n)
{
    ptl_handle_eq_t eq;
    ptl_pt_index_t pti;
    ptl_handle_md_t md;
    static rbuf_t bufs[NBUF];
    static unsigned char seen[8][NMSG];
    int total = (n - 1) * NMSG, got = 0, disables = 0, bad = 0, dups = 0, eq_drops = 0;
    uint64_t epoch = 0;
    char zero = 0;

    XP_REQUIRE(PtlEQAlloc(ni, 16, &eq) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, PTL_PT_FLOWCTRL, eq, DATA_PT, &pti) == PTL_OK);
    ptl_md_t mdd = { .start = &zero, .length = 1, .eq_handle = PTL_EQ_NONE,
                     .ct_handle = PTL_CT_NONE, .options = 0 };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    for (int i = 0; i < NBUF; i++)
        post_buffer(&bufs[i]);
    XP_REQUIRE(xp_barrier() == XP_OK);

    int disabled = 0;
    while (got < total) {
        ptl_event_t ev;
        int rc = PtlEQGet(eq, &ev);
        if (rc == PTL_EQ_EMPTY) {
            if (disabled) {
                /* Drained: resources back, enable, tell everyone. */
                XP_REQUIRE(PtlPTEnable(ni, DATA_PT) == PTL_OK);
                disabled = 0;
                epoch++;
                for (int r = 1; r < n; r++) {
                    ptl_process_t p = { .rank = (ptl_rank_t)r };
                    XP_REQUIRE(PtlPut(md, 0, 0, PTL_NO_ACK_REQ, p, CTRL_PT, RESUME_BITS, 0, NULL,
                                      epoch) == PTL_OK);
                }
            }
            continue;
        }
        if (rc == PTL_EQ_DROPPED)
            eq_drops++;
        XP_REQUIRE(rc == PTL_OK || rc == PTL_EQ_DROPPED);
        switch (ev.type) {
        case PTL_EVENT_PUT: {
            int s = (int)(ev.match_bits >> 32), q = (int)(ev.match_bits & 0xFFFFFFFF);
            XP_REQUIRE(s > 0 && s < n && q >= 0 && q < NMSG);
            XP_CHECK_EQ(ev.ptl_list, PTL_OVERFLOW_LIST);
            XP_CHECK_EQ(ev.mlength, msg_len(q));
            for (size_t i = 0; i < ev.mlength; i++)
                if (((unsigned char *)ev.start)[i] != pattern(s, q, i)) {
                    bad++;
                    break;
                }
            if (seen[s][q])
                dups++;
            seen[s][q] = 1;
            got++;
            if (got % 64 == 0)
                usleep(200); /* a slow receiver: let the resources run out */
            break;
        }
        case PTL_EVENT_AUTO_UNLINK:
            break;
        case PTL_EVENT_AUTO_FREE:
            post_buffer(ev.user_ptr);
            break;
        case PTL_EVENT_PT_DISABLED:
            XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_PT_DISABLED);
            disabled = 1;
            disables++;
            break;
        default:
            fprintf(stderr, "receiver: unexpected event %d\n", ev.type);
            xp_test_failures_++;
            break;
        }
    }
    XP_CHECK_EQ(bad, 0);
    XP_CHECK_EQ(dups, 0);
    XP_CHECK_EQ(eq_drops, 0);
    XP_CHECK(disables > 0);
    for (int s = 1; s < n; s++)
        for (int q = 0; q < NMSG; q++)
            if (!seen[s][q]) {
                fprintf(stderr, "message %d from %d lost\n", q, s);
                xp_test_failures_++;
            }
    printf("receiver: %d messages, PT disabled %d times, %llu epochs\n", got, disables,
           (unsigned long long)epoch);
    XP_REQUIRE(xp_barrier() == XP_OK);
    for (int i = 0; i < NBUF; i++)
        PtlMEUnlink(bufs[i].h); /* some are unlinked already: ARG_INVALID is fine */
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, DATA_PT), PTL_OK);
    XP_CHECK_EQ(PtlEQFree(eq), PTL_OK);
}

/* ------------------------------------------------------------ senders */

static void sender(int me)
{
    ptl_handle_eq_t eqs[2]; /* 0: acks, 1: resume */
    ptl_pt_index_t pti;
    ptl_handle_md_t md;
    ptl_handle_me_t ctrl;
    ptl_handle_ct_t resumes; /* resume puts delivered: the latest epoch */
    static unsigned char data[NMSG][MSG];
    static int state[NMSG];        /* 0 unsent, 1 in flight, 2 refused, 3 acked */
    static uint64_t sent_epoch[NMSG];
    uint64_t epoch = 0;
    int next = 0, inflight = 0, acked = 0, refusals = 0;
    unsigned char ctrl_buf[1];
    ptl_process_t target = { .rank = 0 };

    for (int q = 0; q < NMSG; q++)
        for (size_t i = 0; i < MSG; i++)
            data[q][i] = pattern(me, q, i);
    XP_REQUIRE(PtlEQAlloc(ni, 4 * WINDOW, &eqs[0]) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eqs[1]) == PTL_OK);
    XP_REQUIRE(PtlPTAlloc(ni, 0, eqs[1], CTRL_PT, &pti) == PTL_OK);
    XP_REQUIRE(PtlCTAlloc(ni, &resumes) == PTL_OK);
    ptl_me_t me_c;
    memset(&me_c, 0, sizeof(me_c));
    me_c.start = ctrl_buf;
    me_c.length = 0;
    me_c.ct_handle = resumes;
    me_c.uid = PTL_UID_ANY;
    me_c.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_CT_COMM;
    me_c.match_id.rank = 0;
    me_c.match_bits = RESUME_BITS;
    XP_REQUIRE(PtlMEAppend(ni, CTRL_PT, &me_c, PTL_PRIORITY_LIST, NULL, &ctrl) == PTL_OK);
    ptl_md_t mdd = { .start = data, .length = sizeof data, .eq_handle = eqs[0],
                     .ct_handle = PTL_CT_NONE, .options = PTL_MD_EVENT_SEND_DISABLE };
    XP_REQUIRE(PtlMDBind(ni, &mdd, &md) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    int resend_from = 0; /* refused messages are resent lowest first */
    while (acked < NMSG) {
        /* Fill the window: refused messages first (once resumed), then new ones. */
        while (inflight < WINDOW) {
            int q = -1;
            for (int k = resend_from; k < next; k++)
                if (state[k] == 2 && sent_epoch[k] < epoch) {
                    q = k;
                    break;
                }
            if (q < 0 && next < NMSG)
                q = next++;
            if (q < 0)
                break;
            state[q] = 1;
            sent_epoch[q] = epoch;
            inflight++;
            ptl_match_bits_t bits = (ptl_match_bits_t)me << 32 | (ptl_match_bits_t)q;
            XP_REQUIRE(PtlPut(md, (ptl_size_t)q * MSG, msg_len(q), PTL_ACK_REQ, target, DATA_PT,
                              bits, 0, (void *)(uintptr_t)q, 0) == PTL_OK);
        }
        ptl_event_t ev;
        unsigned int which;
        int rc = PtlEQPoll(eqs, 2, 10000, &ev, &which);
        /* The resume EQ may overflow: while this rank is not scheduled the
         * receiver can go through more than 64 epochs (379 in a plain np4
         * run). Lost resume events are harmless: the receiver sends one
         * resume per epoch, so the counter of delivered resumes is the
         * latest epoch, and an event still queued behind the lost ones
         * makes us read it. */
        XP_REQUIRE(rc == PTL_OK || (rc == PTL_EQ_DROPPED && which == 1));
        if (which == 1) {
            ptl_ct_event_t delivered;
            XP_CHECK_EQ(ev.type, PTL_EVENT_PUT);
            XP_REQUIRE(PtlCTGet(resumes, &delivered) == PTL_OK);
            if (ev.hdr_data > epoch)
                epoch = ev.hdr_data;
            if (delivered.success > epoch)
                epoch = delivered.success;
            continue;
        }
        XP_REQUIRE(ev.type == PTL_EVENT_ACK);
        int q = (int)(uintptr_t)ev.user_ptr;
        XP_REQUIRE(q >= 0 && q < NMSG && state[q] == 1);
        inflight--;
        if (ev.ni_fail_type == PTL_NI_OK) {
            XP_CHECK_EQ(ev.mlength, msg_len(q));
            state[q] = 3;
            acked++;
        } else {
            XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_PT_DISABLED);
            XP_CHECK_EQ(ev.mlength, 0);
            state[q] = 2;
            refusals++;
        }
        while (resend_from < next && state[resend_from] == 3)
            resend_from++;
    }
    printf("sender %d: %d acked, %d refusals, last epoch %llu\n", me, acked, refusals,
           (unsigned long long)epoch);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMEUnlink(ctrl), PTL_OK);
    XP_CHECK_EQ(PtlCTFree(resumes), PTL_OK);
    XP_CHECK_EQ(PtlMDRelease(md), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, CTRL_PT), PTL_OK);
}

int main(void)
{
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    int n = xp_size(), me = xp_rank();
    if (n < 2 || n > 8)
        XP_TEST_SKIP("needs 2..8 ranks");
    if (me == 0)
        receiver(n);
    else
        sender(me);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
