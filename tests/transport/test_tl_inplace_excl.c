/*
 * In-place sends on the send_excl lane (transport/inplace.h's _excl
 * functions: the engine writes REPLYs straight into the answer lane) under
 * xprun -n 2: rank 0 sends rank 1 numbered packets of 16..316 bytes with
 * xp_tl_send_excl or in place, from one thread at a time (the callers'
 * serialisation the _excl functions need); rank 1 checks every byte and
 * the order. Also: a route without the lane (to ourselves) and a lane not
 * announced yet (before the first xp_tl_send_excl) get NULL; another thread
 * (after the first one stopped) writes in place too; a full lane gets NULL
 * while the receiver does not poll, and after an ordinary send (which
 * waits for room and refreshes the cached head) in place works again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "transport/inplace.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "xp_test.h"
#include "xportals/xp.h"

typedef struct pkt_hdr {
    uint32_t seq, len;
} pkt_hdr_t;

typedef struct rx {
    uint32_t next;
    long bad;
} rx_t;

static unsigned char byte_of(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 11 + i * 5 + 3);
}

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    rx_t *rx = arg;
    pkt_hdr_t h;
    int ok = src == 0 && len >= sizeof h;
    if (ok) {
        memcpy(&h, pkt, sizeof h);
        ok = h.seq == rx->next && h.len == len;
        for (size_t i = sizeof h; ok && i < len; i++)
            ok = ((const unsigned char *)pkt)[i] == byte_of(h.seq, i);
    }
    if (!ok && rx->bad++ < 5)
        fprintf(stderr, "bad packet %u (len %zu, want %u)\n", ok ? h.seq : 0, len, rx->next);
    rx->next++;
}

static uint32_t seq;

/* Packets before the fill phase: 1 + 2000 + 100. */
#define PHASE1 2101u

static int try_inplace(size_t len)
{
    const xp_tl_route_t *r = xp_tl_route(1);
    xp_tl_cell_t c;
    unsigned char *d = xp_tl_route_reserve_excl(r, len, &c);
    if (!d)
        return 0;
    pkt_hdr_t h = {seq++, (uint32_t)len};
    for (size_t i = sizeof h; i < len; i++)
        d[i] = byte_of(h.seq, i);
    memcpy(d, &h, sizeof h);
    xp_tl_route_commit_excl(r, &c);
    return 1;
}

/* Packet number seq of `len` bytes: in place (1) when allowed and the
 * route lets us, else with xp_tl_send_excl (0). */
static int send_one(size_t len, int allow_inplace)
{
    unsigned char buf[512];
    if (allow_inplace && try_inplace(len))
        return 1;
    pkt_hdr_t h = {seq++, (uint32_t)len};
    for (size_t i = sizeof h; i < len; i++)
        buf[i] = byte_of(h.seq, i);
    memcpy(buf, &h, sizeof h);
    xp_status_t st;
    uint64_t deadline = xp_time_ns() + 10000000000ull;
    while ((st = xp_tl_send_excl(1, buf, len, NULL, 0)) == XP_ERR_AGAIN) {
        xp_tl_progress();
        XP_REQUIRE(xp_time_ns() < deadline);
    }
    XP_CHECK_EQ(st, XP_OK);
    return 0;
}

static void *other_thread(void *arg)
{
    long *inplace = arg;
    for (int i = 0; i < 100; i++)
        *inplace += send_one(sizeof(pkt_hdr_t) + 8 + (size_t)i % 33, 1);
    return NULL;
}

static void sender(void)
{
    xp_tl_cell_t c;
    const xp_tl_route_t *self = xp_tl_route(0), *r = xp_tl_route(1);
    XP_REQUIRE(self != NULL && r != NULL);
    XP_CHECK(xp_tl_route_reserve_excl(self, 16, &c) == NULL);
    /* Not announced yet: the first xp_tl_send_excl does it. */
    XP_CHECK(xp_tl_route_reserve_excl(r, 16, &c) == NULL);
    XP_CHECK_EQ(send_one(16, 1), 0);
    long inplace = 0;
    for (int i = 0; i < 2000; i++)
        inplace += send_one(sizeof(pkt_hdr_t) + (size_t)(i * 7) % 309, 1);
    XP_CHECK(inplace > 1000);
    /* Another thread, one at a time with this one: in place too. */
    long other = 0;
    pthread_t t;
    XP_REQUIRE(pthread_create(&t, NULL, other_thread, &other) == 0);
    pthread_join(t, NULL);
    XP_CHECK(other > 50);
    XP_CHECK_EQ(seq, PHASE1);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* Rank 1 does not poll until the next barrier: fill the lane. */
    long filled = 0;
    while (try_inplace(sizeof(pkt_hdr_t) + 56))
        XP_REQUIRE(++filled < 1000000);
    XP_CHECK(xp_tl_route_reserve_excl(r, sizeof(pkt_hdr_t) + 56, &c) == NULL);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* An ordinary send (waits for room, refreshes the cached head), then
     * in place again. */
    send_one(64, 1);
    XP_CHECK_EQ(send_one(64, 1), 1);
}

int main(int argc, char **argv)
{
    rx_t rx = {0, 0};
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_REQUIRE(xp_size() == 2);
    XP_REQUIRE(xp_tl_init(on_packet, &rx) == XP_OK);
    if (xp_rank() == 0) {
        sender();
        uint32_t total = seq;
        XP_REQUIRE(xp_kv_put("inplace_excl.total", &total, sizeof total) == XP_OK);
        XP_REQUIRE(xp_kv_fence() == XP_OK);
    } else {
        uint64_t deadline = xp_time_ns() + 10000000000ull;
        while (rx.next < PHASE1) {
            xp_tl_progress();
            XP_REQUIRE(xp_time_ns() < deadline);
        }
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(xp_kv_fence() == XP_OK);
        uint32_t total = 0;
        size_t len = sizeof total;
        XP_REQUIRE(xp_kv_get(0, "inplace_excl.total", &total, &len) == XP_OK);
        while (rx.next < total) {
            xp_tl_progress();
            XP_REQUIRE(xp_time_ns() < deadline);
        }
        XP_CHECK_EQ(rx.next, total);
        XP_CHECK_EQ(rx.bad, 0);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    xp_tl_fini();
    XP_REQUIRE(xp_finalize() == XP_OK);
    return xp_test_result();
}
