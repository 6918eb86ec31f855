/*
 * mp_fini_drain - a put made just before PtlNIFini (or PtlFini) still lands
 * whole, when its data moves by single copy (read by the target from the
 * initiator's buffer after PtlPut returned). 2 ranks.
 *
 * Rank 0 puts sizes above the eager limit (XP_SHM_BOUNCE=off: single
 * copies above 4 KiB) and one inline size, with no acknowledgement, no
 * event and no counter on its MD, so nothing tells it when the target has
 * read; then it finalizes its NI (--pflini: PtlFini without PtlNIFini) and
 * overwrites the buffer at once, as it may once the library has let go of
 * it. Rank 1 reads them only after 100 ms (with inline progress nothing
 * reads them before), counts them on its LE's counter and checks every
 * byte.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

#define PT 5
#define SLOT (64u << 10)
#define WAIT_MS 10000

static const size_t sizes[] = {100, 4097, 16384, 32000, 65536 - 8};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static unsigned char byte_of(size_t k, size_t i)
{
    return (unsigned char)(i * 13u + k * 101u + 5u);
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    int pt_fini = argc > 1 && !strcmp(argv[1], "--ptlfini");
    ptl_handle_ni_t ni;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, NULL, &ni) == PTL_OK);
    unsigned char *buf = calloc(NSIZES, SLOT);
    XP_REQUIRE(buf != NULL);
    ptl_handle_ct_t ct = PTL_INVALID_HANDLE;
    if (xp_rank() == 1) {
        ptl_pt_index_t got;
        ptl_handle_le_t le;
        XP_REQUIRE(PtlCTAlloc(ni, &ct) == PTL_OK);
        XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &got) == PTL_OK);
        ptl_le_t e = {.start = buf, .length = (ptl_size_t)NSIZES * SLOT, .ct_handle = ct,
                      .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT | PTL_LE_EVENT_CT_COMM};
        XP_REQUIRE(PtlLEAppend(ni, PT, &e, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (xp_rank() == 0) {
        ptl_md_t md = {.start = buf, .length = (ptl_size_t)NSIZES * SLOT,
                       .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
        ptl_handle_md_t h;
        ptl_process_t peer = {.rank = 1};
        XP_REQUIRE(PtlMDBind(ni, &md, &h) == PTL_OK);
        for (int k = 0; k < NSIZES; k++) {
            for (size_t i = 0; i < sizes[k]; i++)
                buf[(size_t)k * SLOT + i] = byte_of((size_t)k, i);
            XP_CHECK_EQ(PtlPut(h, (ptl_size_t)k * SLOT, sizes[k], PTL_NO_ACK_REQ, peer, PT, 0,
                               (ptl_size_t)k * SLOT, NULL, 0),
                        PTL_OK);
        }
        if (pt_fini) {
            PtlFini();
        } else {
            XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
        }
        memset(buf, 0xee, (size_t)NSIZES * SLOT); /* the library let go of it */
    } else {
        ptl_ct_event_t v;
        unsigned which;
        ptl_size_t want = NSIZES;
        /* Late: with inline progress nothing reads the puts meanwhile, so
         * rank 0 finalizes before they are read (the thread mode's
         * progress thread may read them at once). */
        usleep(100000);
        XP_CHECK_EQ(PtlCTPoll(&ct, &want, 1, WAIT_MS, &v, &which), PTL_OK);
        XP_CHECK_EQ(v.success, NSIZES);
        XP_CHECK_EQ(v.failure, 0);
        for (int k = 0; k < NSIZES; k++)
            for (size_t i = 0; i < sizes[k]; i++)
                if (buf[(size_t)k * SLOT + i] != byte_of((size_t)k, i)) {
                    fprintf(stderr, "put %d (%zu bytes): byte %zu is %u\n", k, sizes[k], i,
                            buf[(size_t)k * SLOT + i]);
                    XP_CHECK(0);
                    break;
                }
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (xp_rank() == 1 || !pt_fini) {
        if (xp_rank() == 1)
            PtlNIFini(ni);
        PtlFini();
    }
    free(buf);
    return xp_test_result();
}
