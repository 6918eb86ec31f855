/*
 * In-place sends (transport/inplace.h) under xprun -n 2: rank 0 sends rank 1
 * numbered packets of 0..300 bytes, written in place when the route lets
 * it and sent the ordinary way otherwise; rank 1 checks every byte and the
 * order. Also: the first packet (lane not announced yet) and another thread
 * get NULL and their ordinary sends keep their place in the order; a full
 * lane gets NULL while the receiver does not poll; a route without an
 * in-place lane (to ourselves) gets NULL.
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
    uint32_t mark, pad; /* mark: the receiver pauses after it */
} pkt_hdr_t;

typedef struct rx {
    uint32_t next;
    long bad;
    int pause;
} rx_t;

static unsigned char byte_of(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 13 + i * 7 + 1);
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
    rx->pause |= ok && h.mark;
    rx->next++;
}

static uint32_t seq, mark;

/* Packets before the fill phase: 1 + 2000 + 20 * (1 + 2 + 1). */
#define PHASE1 2081u

/* Packet number seq of `len` bytes in place: 0 (nothing sent, seq not
 * used) when the route says no. */
static int try_inplace(size_t len)
{
    const xp_tl_route_t *r = xp_tl_route(1);
    xp_tl_cell_t c;
    void *p = xp_tl_route_reserve(r, len, &c);
    if (!p)
        return 0;
    pkt_hdr_t h = {seq++, (uint32_t)len, mark, 0};
    unsigned char *d = p;
    /* Payload first, header last, as the engine's callers write. */
    for (size_t i = sizeof h; i < len; i++)
        d[i] = byte_of(h.seq, i);
    memcpy(d, &h, sizeof h);
    xp_tl_route_commit(r, &c);
    return 1;
}

/* Packet number seq of `len` bytes: in place (1) when allowed and the
 * route lets us, else with xp_tl_send (0). */
static int send_one(size_t len, int allow_inplace)
{
    unsigned char buf[512];
    if (allow_inplace && try_inplace(len))
        return 1;
    pkt_hdr_t h = {seq++, (uint32_t)len, mark, 0};
    for (size_t i = sizeof h; i < len; i++)
        buf[i] = byte_of(h.seq, i);
    memcpy(buf, &h, sizeof h);
    xp_status_t st;
    uint64_t deadline = xp_time_ns() + 10000000000ull;
    while ((st = xp_tl_send(1, buf, len, NULL, 0)) == XP_ERR_AGAIN) {
        xp_tl_progress();
        XP_REQUIRE(xp_time_ns() < deadline);
    }
    XP_CHECK_EQ(st, XP_OK);
    return 0;
}

static void *other_thread(void *arg)
{
    (void)arg;
    xp_tl_cell_t c;
    /* Not the lane's owner: never in place. */
    XP_CHECK(xp_tl_route_reserve(xp_tl_route(1), 16, &c) == NULL);
    send_one(32, 0);
    send_one(16, 1);
    return NULL;
}

static void sender(void)
{
    xp_tl_cell_t c;
    /* Our own rank's route has no in-place lane. */
    const xp_tl_route_t *self = xp_tl_route(0);
    XP_REQUIRE(self != NULL);
    XP_CHECK(xp_tl_route_reserve(self, 16, &c) == NULL);
    /* The lane is announced by the first ordinary send. */
    XP_CHECK_EQ(send_one(16, 1), 0);
    long inplace = 0;
    for (int i = 0; i < 2000; i++)
        inplace += send_one(sizeof(pkt_hdr_t) + (size_t)(i * 7) % 301, 1);
    XP_CHECK(inplace > 1000);
    /* Another thread's packets (through the inbox) come between ours; the
     * receiver pauses after our first, so that they wait in its inbox
     * while our next one is published in the lane. */
    for (int k = 0; k < 20; k++) {
        pthread_t t;
        mark = 1;
        inplace += send_one(40, 1);
        mark = 0;
        XP_REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
        pthread_join(t, NULL);
        send_one(48, 1);
    }
    XP_CHECK_EQ(seq, PHASE1);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* Rank 1 does not poll until the next barrier: fill the lane (two
     * cells a packet) until the reserve says no (how soon depends on our
     * cached view of its head; never more than the lane holds). */
    long filled = 0;
    while (try_inplace(sizeof(pkt_hdr_t) + 56))
        XP_REQUIRE(++filled < 1000000);
    /* (A smaller packet may still fit: a last cell before the wrap.) */
    XP_CHECK(xp_tl_route_reserve(xp_tl_route(1), sizeof(pkt_hdr_t) + 56, &c) == NULL);
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* The reserve judges room by our cached view of the head, which the
     * ordinary send refreshes: one of those (waiting for rank 1 to take
     * the lane's packets), then in place again. */
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
        XP_REQUIRE(xp_kv_put("inplace.total", &total, sizeof total) == XP_OK);
        XP_REQUIRE(xp_kv_fence() == XP_OK);
    } else {
        uint64_t deadline = xp_time_ns() + 10000000000ull;
        while (rx.next < PHASE1) {
            if (rx.pause) {
                usleep(2000);
                rx.pause = 0;
            }
            xp_tl_progress();
            XP_REQUIRE(xp_time_ns() < deadline);
        }
        /* No polling while rank 0 fills the lane. */
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(xp_barrier() == XP_OK);
        XP_REQUIRE(xp_kv_fence() == XP_OK);
        uint32_t total = 0;
        size_t len = sizeof total;
        XP_REQUIRE(xp_kv_get(0, "inplace.total", &total, &len) == XP_OK);
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
