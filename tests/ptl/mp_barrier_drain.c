/*
 * mp_barrier_drain - a put made before xp_barrier() has landed when the
 * barrier returns at the target ("put; barrier; read" on one node).
 *
 * Every rank puts to its right neighbour (no acknowledgement, no counter,
 * no event: nothing else could tell the target the data is there), then
 * both call xp_barrier and the target reads its buffer at once. The runtime
 * barrier handles the Portals packets that are in its rings when it
 * completes (util/context.h, runtime_poll_hook), whatever the progress mode
 * and whether the progress thread is awake. Sizes: inline (8 B, 4 KiB), a
 * bounce block (64 KiB) and a pipelined one (1 MiB) where XP_SHM_BOUNCE is on,
 * single copies where off; 10-100 rounds each, every round a new pattern, so
 * stale bytes from an earlier round fail.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 3
#define MAXLEN (1u << 20)

/* A round's bytes from rank src: 8-byte words, every one different. */
static void pat(unsigned char *buf, size_t len, int round, int src)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = ((uint64_t)round << 48) ^ ((uint64_t)src << 40) ^ (i * 0x9E3779B1u) ^ 0x5A5A;
        memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
    }
}

/* Rounds per size: fewer large ones (seconds under ThreadSanitizer). */
static int rounds_of(size_t len)
{
    return len >= (1u << 20) ? 10 : len >= 65536 ? 30 : 100;
}

int main(void)
{
    static const size_t sizes[] = {8, 4096, 65536, MAXLEN};
    XP_REQUIRE(PtlInit() == PTL_OK);
    int n = xp_size(), me = xp_rank();
    if (n < 2)
        XP_TEST_SKIP("needs 2 ranks or more");
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL,
                         NULL, &ni) == PTL_OK);
    ptl_pt_index_t pt;
    XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &pt) == PTL_OK);
    unsigned char *rbuf = malloc(MAXLEN), *sbuf = malloc(MAXLEN), *want = malloc(MAXLEN);
    XP_REQUIRE(rbuf && sbuf && want);
    memset(rbuf, 0, MAXLEN);
    ptl_le_t le = {.start = rbuf, .length = MAXLEN, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                   .options = PTL_LE_OP_PUT};
    ptl_handle_le_t leh;
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    ptl_md_t md = {.start = sbuf, .length = MAXLEN, .eq_handle = PTL_EQ_NONE,
                   .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t mdh;
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    ptl_process_t right = {.rank = (ptl_rank_t)((me + 1) % n)};
    int left = (me + n - 1) % n;
    XP_REQUIRE(xp_barrier() == XP_OK);
    long bad_rounds = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = sizes[s];
        for (int k = 0; k < rounds_of(len); k++) {
            int round = (int)s * 1000 + k;
            pat(sbuf, len, round, me);
            pat(want, len, round, left);
            XP_CHECK_EQ(PtlPut(mdh, 0, len, PTL_NO_ACK_REQ, right, pt, 0, 0, NULL, 0), PTL_OK);
            XP_REQUIRE(xp_barrier() == XP_OK);
            if (memcmp(rbuf, want, len) != 0 && bad_rounds++ < 5) {
                size_t i = 0;
                while (rbuf[i] == want[i])
                    i++;
                fprintf(stderr, "rank %d: %zu-byte put of round %d: byte %zu is %u, want %u\n",
                        me, len, k, i, rbuf[i], want[i]);
            }
            /* Nobody overwrites a buffer its target has not read yet. */
            XP_REQUIRE(xp_barrier() == XP_OK);
        }
    }
    XP_CHECK_EQ(bad_rounds, 0);
    XP_CHECK_EQ(PtlMDRelease(mdh), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    PtlNIFini(ni);
    PtlFini();
    free(rbuf);
    free(sbuf);
    free(want);
    return xp_test_result();
}
