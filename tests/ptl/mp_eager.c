/*
 * mp_eager - the shm route's eager limit (XP_SHM_EAGER_MAX): puts and gets
 * up to it go inline in packets, larger ones (that would still fit a
 * packet) by single copy or bounce block. 2 ranks.
 *
 * Rank 0 puts, with an acknowledgement, sizes around the limit and around
 * a packet from a contiguous MD and from an iovec MD, and gets the same
 * sizes back. The engine's SEND event tells the path (the spec leaves its
 * mlength open): 0 for an inline or bounce put, the length for a single
 * copy (posted from the ACK). Where XP_SHM_BOUNCE is off, so is every put
 * above the limit a single copy; where it is auto the test checks the path
 * only when this process chose no bounce blocks. The limit itself: the
 * setting, else where single copies were chosen (XP_SHM_BOUNCE=off) the
 * node's eager probe's verdict (4, 8 or 16 KiB or a whole packet;
 * mp_eager_probe.c checks it further), a whole packet where bounce blocks
 * were (on). Every byte lands (checked
 * at the target) and comes back (checked at the initiator), with the bytes
 * around untouched; a put of 0 bytes too. The sizes follow rank 0's limit
 * (the ranks may choose differently; _bounce0 and _bounce1 make them). A
 * PTL_MD_VOLATILE MD's puts up to
 * max_volatile_size go inline whatever the limit: its buffer is overwritten
 * as soon as PtlPut returns, and the target must see what it held then.
 */
#include <portals4.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptl/engine.h"
#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/config.h"
#include "test_events.h"
#include "xp_test.h"
#include "xp_test_kv.h"
#include "xportals/xp.h"

#define PT 4
#define BUF (256u << 10)
#define SLOT (80u << 10) /* room per size at the target */
#define NSEG 3

static size_t sizes[16];
static int nsizes;

static unsigned char byte_of(size_t k, size_t i)
{
    return (unsigned char)(i * 29u + k * 7u + 1u);
}

/* Sizes around the limit, around one packet, and a few beyond. */
static void pick_sizes(size_t eager, size_t inl)
{
    const size_t want[] = {0, 1, eager - 1, eager, eager + 1, 2 * eager + 3, inl - 1, inl,
                           inl + 1, 64u << 10};
    nsizes = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int dup = want[i] > SLOT;
        for (int j = 0; j < nsizes; j++)
            dup |= sizes[j] == want[i];
        if (!dup)
            sizes[nsizes++] = want[i];
    }
}

/* buf[0, n) is size k's pattern; the bytes just around it are zero. */
static void check_bytes(const unsigned char *buf, size_t n, size_t k, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != byte_of(k, i)) {
            fprintf(stderr, "%s of %zu bytes: byte %zu is %u\n", what, n, i, buf[i]);
            XP_CHECK(0);
            return;
        }
    XP_CHECK_EQ(buf[-1], 0);
    XP_CHECK_EQ(buf[n], 0);
}

/* Whether this process's put of n bytes must be a single copy (1), inline
 * (0), or either (-1: bounce blocks may take it). */
static int single_copy(size_t n, size_t eager)
{
    if (n <= eager)
        return 0;
    return xp_tl_bounce_max(1) == 0 ? 1 : -1;
}

/* How put_all's MD lies: contiguous, an iovec, or contiguous and
 * PTL_MD_VOLATILE (its buffer is overwritten as soon as PtlPut returns:
 * up to max_volatile_size the put must carry the bytes it had then). */
enum { MD_PLAIN, MD_IOV, MD_VOLATILE };

static void put_all(ptl_handle_ni_t ni, ptl_handle_eq_t eq, unsigned char *src, int kind,
                    size_t eager, size_t volatile_max)
{
    int iov = kind == MD_IOV;
    ptl_iovec_t v[NSEG] = {{src, 5}, {src + 5, 4000}, {src + 4005, BUF - 4005}};
    ptl_md_t md = {.start = iov ? (void *)v : src, .length = iov ? NSEG : BUF,
                   .options = iov ? PTL_IOVEC : kind == MD_VOLATILE ? PTL_MD_VOLATILE : 0,
                   .eq_handle = eq, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t h;
    ptl_process_t peer = {.rank = 1};
    XP_REQUIRE(PtlMDBind(ni, &md, &h) == PTL_OK);
    for (int k = 0; k < nsizes; k++) {
        for (size_t i = 0; i < sizes[k]; i++)
            src[i] = byte_of((size_t)k, i);
        XP_CHECK_EQ(PtlPut(h, 0, sizes[k], PTL_ACK_REQ, peer, PT, 0, (ptl_size_t)k * SLOT,
                           (void *)(uintptr_t)(k + 1), 0),
                    PTL_OK);
        int vol = kind == MD_VOLATILE && sizes[k] <= volatile_max;
        if (vol)
            memset(src, 0xee, sizes[k]); /* at once: the put has its bytes */
        ptl_event_t ev = xp_test_next_event(eq, "SEND");
        XP_CHECK_EQ(ev.type, PTL_EVENT_SEND);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        int want = vol ? 0 : single_copy(sizes[k], eager);
        if (want >= 0 && ev.mlength != (want ? sizes[k] : 0)) {
            fprintf(stderr, "put of %zu bytes (eager %zu, MD kind %d): SEND mlength %llu\n",
                    sizes[k], eager, kind, (unsigned long long)ev.mlength);
            XP_CHECK(0);
        }
        ev = xp_test_next_event(eq, "ACK");
        XP_CHECK_EQ(ev.type, PTL_EVENT_ACK);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
    }
    XP_CHECK_EQ(PtlMDRelease(h), PTL_OK);
}

static void get_all(ptl_handle_ni_t ni, ptl_handle_eq_t eq, unsigned char *dst)
{
    ptl_md_t md = {.start = dst, .length = BUF, .eq_handle = eq, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t h;
    ptl_process_t peer = {.rank = 1};
    XP_REQUIRE(PtlMDBind(ni, &md, &h) == PTL_OK);
    for (int k = 0; k < nsizes; k++) {
        memset(dst, 0, BUF);
        XP_CHECK_EQ(PtlGet(h, 1, sizes[k], peer, PT, 0, (ptl_size_t)k * SLOT, NULL), PTL_OK);
        ptl_event_t ev = xp_test_next_event(eq, "REPLY");
        XP_CHECK_EQ(ev.type, PTL_EVENT_REPLY);
        XP_CHECK_EQ(ev.ni_fail_type, PTL_NI_OK);
        XP_CHECK_EQ(ev.mlength, sizes[k]);
        check_bytes(dst + 1, sizes[k], (size_t)k, "get");
    }
    XP_CHECK_EQ(PtlMDRelease(h), PTL_OK);
}

int main(int argc, char **argv)
{
    /* MP_EAGER_BOUNCE_RANK=r: rank r with bounce blocks, the other with
     * single copies - the copy probe's two choices in one job, which it
     * makes now and then under XP_SHM_BOUNCE=auto. Set before the
     * configuration is read; the rank from xprun's PMI environment. */
    const char *mixed = getenv("MP_EAGER_BOUNCE_RANK"), *pmi_rank = getenv("PMI_RANK");
    if (mixed && pmi_rank)
        setenv("XP_SHM_BOUNCE", strcmp(mixed, pmi_rank) == 0 ? "on" : "off", 1);
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    ptl_handle_ni_t ni;
    ptl_handle_eq_t eq;
    ptl_ni_limits_t lim;
    XP_REQUIRE(PtlInit() == PTL_OK);
    XP_REQUIRE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY,
                         NULL, &lim, &ni) == PTL_OK);
    XP_REQUIRE(PtlEQAlloc(ni, 64, &eq) == PTL_OK);
    if (!(xp_tl_caps(1 - xp_rank()) & XP_TL_CAP_RMA))
        XP_TEST_SKIP("no RMA route between the ranks");
    size_t eager = xp_eng_eager_max(1 - xp_rank()), inl = xp_eng_inline_max(1 - xp_rank());
    size_t set = xp_config()->shm_eager_max;
    XP_CHECK(eager <= inl);
    if (set)
        XP_CHECK_EQ(eager, set < inl ? set : inl);
    else if (xp_config()->shm_bounce == XP_SHM_BOUNCE_ON /* no single copies */)
        XP_CHECK_EQ(eager, inl);
    else if (xp_config()->shm_bounce == XP_SHM_BOUNCE_OFF) /* the eager probe's verdict */
        XP_CHECK(eager == 4096 || eager == 8192 || eager == 16384 ||
                 eager == (inl < 32768 ? inl : 32768));
    fprintf(stderr, "rank %d: eager limit %zu, packet payload %zu, bounce blocks up to %zu\n",
            xp_rank(), eager, inl, xp_tl_bounce_max(1 - xp_rank()));
    /* The sizes follow the initiator's (rank 0's) limit: under
     * XP_SHM_BOUNCE=auto each process's copy probe makes its own choice,
     * and the target must check, and make room for, the sizes sent. */
    pick_sizes(xp_test_rank0_size("mp_eager.limit", eager), inl);
    unsigned char *buf = calloc(1, (size_t)nsizes * SLOT + 2);
    XP_REQUIRE(buf != NULL);
    if (xp_rank() == 1) {
        ptl_pt_index_t got;
        ptl_handle_le_t le;
        XP_REQUIRE(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PT, &got) == PTL_OK);
        ptl_le_t e = {.start = buf + 1, .length = (ptl_size_t)nsizes * SLOT,
                      .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                      .options = PTL_LE_OP_PUT | PTL_LE_OP_GET};
        XP_REQUIRE(PtlLEAppend(ni, PT, &e, PTL_PRIORITY_LIST, NULL, &le) == PTL_OK);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (xp_rank() == 0) {
        unsigned char *src = calloc(1, BUF);
        XP_REQUIRE(src != NULL);
        XP_CHECK(lim.max_volatile_size >= eager);
        for (int kind = MD_PLAIN; kind <= MD_VOLATILE; kind++) {
            put_all(ni, eq, src, kind, eager, lim.max_volatile_size);
            XP_REQUIRE(xp_barrier() == XP_OK); /* the target checks, clears */
            XP_REQUIRE(xp_barrier() == XP_OK);
        }
        get_all(ni, eq, src);
        free(src);
    } else {
        static const char *const what[] = {"put", "put from an iovec",
                                           "put from a volatile MD"};
        for (int kind = MD_PLAIN; kind <= MD_VOLATILE; kind++) {
            XP_REQUIRE(xp_barrier() == XP_OK);
            for (int k = 0; k < nsizes; k++) {
                check_bytes(buf + 1 + (size_t)k * SLOT, sizes[k], (size_t)k, what[kind]);
                if (kind < MD_VOLATILE) /* (the last round's bytes are got back) */
                    memset(buf + 1 + (size_t)k * SLOT, 0, sizes[k]);
            }
            XP_REQUIRE(xp_barrier() == XP_OK);
        }
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    free(buf);
    PtlNIFini(ni);
    PtlFini();
    return xp_test_result();
}
