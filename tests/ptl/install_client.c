/*
 * install_client.c - a Portals 4 client built the way clients build against an
 * installed library (`cc -I<prefix>/include x.c -L<prefix>/lib -lportals`, or
 * with `pkg-config --cflags --libs portals4`), then run under
 * <prefix>/bin/xprun -n 2 by install_check.sh. Uses only <portals4.h>.
 *
 * Every rank puts its rank number, tagged with match bits, into the next
 * rank's matching entry and waits for the neighbour's value on a counter.
 * Prints "install_client: ok" on rank 0 when every rank succeeded.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include <portals4.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PT_REQ   5
#define TAG      0x1234abcdull
#define MAX_TRIES 20000

#define CHECK(call)                                                          \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != PTL_OK) {                                                 \
            fprintf(stderr, "install_client: %s -> %d (line %d)\n", #call,   \
                    rc_, __LINE__);                                          \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

int main(void)
{
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_ni_limits_t limits;
    ptl_process_t me, peer;
    ptl_size_t nranks;
    ptl_pt_index_t pt;
    ptl_handle_ct_t recv_ct, send_ct;
    ptl_handle_me_t me_h;
    ptl_handle_md_t md_h;
    ptl_ct_event_t ct;
    uint64_t inbox = UINT64_MAX, outbox;

    CHECK(PtlInit());
    CHECK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                    NULL, &limits, &ni));
    if (PtlHandleIsEqual(ni, PTL_INVALID_HANDLE)) {
        fprintf(stderr, "install_client: NI handle compares equal to PTL_INVALID_HANDLE\n");
        return 1;
    }
    CHECK(PtlGetId(ni, &me));
    CHECK(PtlGetMap(ni, 0, NULL, &nranks));
    if (nranks < 2) {
        fprintf(stderr, "install_client: needs 2 ranks, map has %lu\n", (unsigned long)nranks);
        return 1;
    }
    CHECK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT_REQ, &pt));
    CHECK(PtlCTAlloc(ni, &recv_ct));
    CHECK(PtlCTAlloc(ni, &send_ct));

    ptl_me_t entry = {
        .start = &inbox, .length = sizeof inbox, .ct_handle = recv_ct,
        .uid = PTL_UID_ANY, .options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM,
        .match_id = { .rank = PTL_RANK_ANY }, .match_bits = TAG, .ignore_bits = 0,
        .min_free = 0,
    };
    CHECK(PtlMEAppend(ni, pt, &entry, PTL_PRIORITY_LIST, NULL, &me_h));

    outbox = me.rank;
    ptl_md_t md = { .start = &outbox, .length = sizeof outbox,
                    .options = PTL_MD_EVENT_CT_ACK, .eq_handle = PTL_EQ_NONE,
                    .ct_handle = send_ct };
    CHECK(PtlMDBind(ni, &md, &md_h));

    /* Nothing tells this rank that the neighbour has appended its entry yet:
     * a put that arrives first is dropped and acknowledged as a failure
     * (PTL_NI_DROPPED). Send again until one succeeds, as a client without
     * a barrier must; give up after about 20 s. */
    peer.rank = (me.rank + 1) % (ptl_rank_t)nranks;
    for (int tries = 1;; tries++) {
        CHECK(PtlPut(md_h, 0, sizeof outbox, PTL_ACK_REQ, peer, pt, TAG, 0, NULL, 0));
        CHECK(PtlCTWait(send_ct, 1, &ct)); /* the ACK, successful or not */
        if (ct.success == 1 && ct.failure == 0)
            break;
        if (tries == MAX_TRIES) {
            fprintf(stderr, "install_client: put failed %d times\n", tries);
            return 1;
        }
        CHECK(PtlCTSet(send_ct, (ptl_ct_event_t){0, 0})); /* a failure ends every wait */
        nanosleep(&(struct timespec){0, 1000000}, NULL); /* back off 1 ms */
    }
    CHECK(PtlCTWait(recv_ct, 1, &ct));
    ptl_rank_t from = (me.rank + (ptl_rank_t)nranks - 1) % (ptl_rank_t)nranks;
    if (ct.failure || inbox != from) {
        fprintf(stderr, "install_client: rank %u got %llu, expected %u\n", me.rank,
                (unsigned long long)inbox, from);
        return 1;
    }

    CHECK(PtlMDRelease(md_h));
    CHECK(PtlMEUnlink(me_h));
    CHECK(PtlCTFree(send_ct));
    CHECK(PtlCTFree(recv_ct));
    CHECK(PtlPTFree(ni, pt));
    CHECK(PtlNIFini(ni));
    PtlFini();
    if (me.rank == 0)
        printf("install_client: ok\n");
    return 0;
}
