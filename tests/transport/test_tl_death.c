/*
 * A peer that dies: rank 1 exits abruptly (no finalize, no transport
 * shutdown) right after initialisation; rank 0 keeps sending to it and must
 * get XP_ERR_PEER_DEAD once the ring is full, never hang; RMA to it fails the
 * same way. Run under xprun -n 2.
 */
#include <stdlib.h>
#include <unistd.h>

#include "transport/inplace.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "xp_test.h"
#include "xportals/xp.h"

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_REQUIRE(xp_size() == 2);
    XP_REQUIRE(xp_tl_init(on_packet, NULL) == XP_OK);
    static char buf[1000], remote_probe[64];
    uint64_t addr = (uintptr_t)remote_probe;
    XP_REQUIRE(xp_kv_put("death.addr", &addr, sizeof addr) == XP_OK);
    /* (announces rank 0's send_excl lane, so that it can be filled in place) */
    if (xp_rank() == 0)
        XP_CHECK_EQ(xp_tl_send_excl(1, buf, 8, NULL, 0), XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    if (xp_rank() == 1)
        _exit(0); /* gone without a word */
    size_t len = sizeof addr;
    XP_REQUIRE(xp_kv_get(1, "death.addr", &addr, &len) == XP_OK);
    uint64_t deadline = xp_time_ns() + 10000000000ull;
    xp_status_t st;
    long sent = 0;
    while ((st = xp_tl_send(1, buf, sizeof buf, NULL, 0)) == XP_OK || st == XP_ERR_AGAIN) {
        sent += st == XP_OK;
        xp_tl_progress();
        if (st == XP_ERR_AGAIN)
            usleep(100);
        XP_REQUIRE(xp_time_ns() < deadline);
    }
    XP_CHECK_EQ(st, XP_ERR_PEER_DEAD);
    XP_CHECK(sent > 0);
    XP_CHECK_EQ(xp_tl_send(1, buf, 8, NULL, 0), XP_ERR_PEER_DEAD);
    /* No in-place send to a dead peer either (the ordinary send says why). */
    xp_tl_cell_t cell;
    XP_CHECK(xp_tl_route_reserve(xp_tl_route(1), 8, &cell) == NULL);
    XP_CHECK(xp_tl_route_reserve_excl(xp_tl_route(1), 8, &cell) == NULL);
    struct iovec l = {buf, 8}, r = {(void *)(uintptr_t)addr, 8};
    XP_CHECK_EQ(xp_tl_readv(1, &l, 1, &r, 1), XP_ERR_PEER_DEAD);
    /* Sending to myself still works. */
    XP_CHECK_EQ(xp_tl_send(0, buf, 8, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_tl_progress(), 1);
    xp_tl_fini();
    return xp_test_result(); /* no xp_finalize: its peer is gone */
}
