/*
 * test_tl_bounce - shm bounce blocks (xp_tl_bounce_alloc / done / cancel)
 * between two processes under xprun.
 *
 * Rank 0 owns the blocks and drives; rank 1 serves its commands: it copies
 * a block out with xp_tl_readv and checks every byte, hands blocks back
 * (xp_tl_bounce_done), or sends bad dones that the owner must ignore.
 * Checked: the allocation limits (length 0, above XP_SHM_BOUNCE_MAX, own and
 * bad ranks), many more round trips than fit under the cap at once (so the
 * owner must reclaim done blocks), the cap itself (a quarter of
 * XP_SHM_HEAP_SIZE, derived from the configuration; read blocks freed past
 * an unread oldest one), the list limit (1024 small blocks), bad done
 * addresses (one of them block-aligned inside a block's data, which the
 * header's cookie tells apart), and cancel. With XP_SHM_BOUNCE_MAX=0
 * (or no heap) every allocation must fail.
 *
 * Pipelined blocks (xp_tl_bounce_fill / xp_tl_bounce_read): the reader
 * copies behind a writer that stages 32 KiB at a time over a poisoned
 * block and must see only the right bytes; a done waits for the writer's
 * last fill (no acknowledgement before it); reads past the block's length
 * or of addresses that are no block fail with XP_ERR_INVALID. --die: the
 * writer exits after its first chunk; the reader's read must fail with
 * XP_ERR_PEER_DEAD within seconds, and its done must return.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xp_test_kv.h"
#include "xportals/xp.h"

#define MIB (1u << 20)
#define ROUNDS 200
#define WINDOW 4       /* blocks in flight in the round trips */
#define MAX_BLOCKS 2048 /* more than the owner's list holds (1024) */
#define LIST_MAX 1024
#define WAIT_S 10

enum { CMD_CHECK = 1, CMD_DONE, CMD_BAD_DONE, CMD_QUIT, CMD_ACK };

typedef struct msg {
    uint32_t kind, seq;
    uint64_t addr, len;
    uint32_t status; /* CMD_ACK: 0 ok, else how many checks failed */
} msg_t;

/* Messages that arrived (the handler runs inside xp_tl_progress). */
#define QLEN 64
typedef struct rx {
    msg_t q[QLEN];
    unsigned head, tail;
    long bad;
} rx_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    rx_t *rx = arg;
    if (len != sizeof(msg_t) || src != 1 - xp_rank() || rx->tail - rx->head >= QLEN) {
        rx->bad++;
        return;
    }
    memcpy(&rx->q[rx->tail++ % QLEN], pkt, sizeof(msg_t));
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void send_msg(int dst, msg_t m)
{
    xp_status_t st;
    double t0 = now_s();
    while ((st = xp_tl_send(dst, &m, sizeof m, NULL, 0)) == XP_ERR_AGAIN) {
        xp_tl_progress();
        XP_REQUIRE(now_s() - t0 < WAIT_S);
    }
    XP_REQUIRE(st == XP_OK);
}

/* The next message, within WAIT_S seconds (a lost message fails, not hangs). */
static msg_t next_msg(rx_t *rx)
{
    double t0 = now_s();
    while (rx->head == rx->tail) {
        xp_tl_progress();
        XP_REQUIRE(now_s() - t0 < WAIT_S);
    }
    XP_REQUIRE(rx->bad == 0);
    return rx->q[rx->head++ % QLEN];
}

/* Rank 0: one command to rank 1, and its acknowledgement. */
static void command(rx_t *rx, uint32_t kind, uint32_t seq, void *buf, uint64_t len)
{
    send_msg(1, (msg_t){kind, seq, (uintptr_t)buf, len, 0});
    msg_t a = next_msg(rx);
    XP_CHECK_EQ(a.kind, CMD_ACK);
    XP_CHECK_EQ(a.seq, seq);
    XP_CHECK_EQ(a.status, 0);
}

static unsigned char byte_of(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 29u + i * 7u + (i >> 11));
}

static void fill(unsigned char *p, size_t n, uint32_t seq)
{
    for (size_t i = 0; i < n; i++)
        p[i] = byte_of(seq, i);
}

/* Heap blocks (a power of two of header + data, at least 256) that one
 * allocation of len takes; the cap is a quarter of the heap. */
static size_t blocks_under_cap(size_t len)
{
    size_t size = 256;
    while (size < 64 + len)
        size *= 2;
    return (size_t)(xp_config()->shm_heap_size / 4 / size);
}

/* ---- rank 1: the reader ---- */

/* Copy the block out (as the engine's target does) and check every byte. */
static uint32_t serve_check(const msg_t *m)
{
    unsigned char *buf = malloc(m->len);
    XP_REQUIRE(buf);
    /* Two pieces, so that a copy that follows the fill crosses an iovec. */
    size_t half = m->len / 3;
    struct iovec l[2] = {{buf, half}, {buf + half, m->len - half}};
    uint32_t fails = 0;
    xp_status_t st = xp_tl_bounce_read(0, l, 2, m->addr, m->len);
    if (st != XP_OK) {
        fprintf(stderr, "rank 1: read of block %u: %s\n", m->seq, xp_status_string(st));
        fails++;
    }
    /* Past the block's length: refused. */
    if (xp_tl_bounce_read(0, l, 2, m->addr, m->len + 1) != XP_ERR_INVALID)
        fails++;
    for (size_t i = 0; !fails && i < m->len; i++)
        if (buf[i] != byte_of(m->seq, i)) {
            fprintf(stderr, "rank 1: block %u byte %zu is %u, want %u\n", m->seq, i, buf[i],
                    byte_of(m->seq, i));
            fails++;
        }
    free(buf);
    xp_tl_bounce_done(0, m->addr);
    return fails;
}

/* Dones that name no block of rank 0 (or the wrong rank): all ignored. */
static void serve_bad_done(const msg_t *m)
{
    static char not_heap[4096];
    uint64_t a = m->addr, far = 4 * (uint64_t)xp_config()->shm_heap_size;
    /* far keeps a's alignment to heap blocks but leaves the heap. */
    uint64_t bad[] = {0, 1, 63, 64, UINT64_MAX, UINT64_MAX - 63, a + 1, a - 1, a + 64, a - 64,
                      a + 32, a + far, a - far, (uintptr_t)not_heap + 64};
    unsigned char byte;
    struct iovec one = {&byte, 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xp_tl_bounce_done(0, bad[i]);
        XP_CHECK_EQ(xp_tl_bounce_read(0, &one, 1, bad[i], 1), XP_ERR_INVALID);
    }
    /* Block-aligned inside the block's data (the header would be data byte
     * 192): only the header's cookie tells it from a block. */
    xp_tl_bounce_done(0, a + 256);
    xp_tl_bounce_done(1, a);  /* ourselves */
    xp_tl_bounce_done(2, a);  /* no such rank */
    xp_tl_bounce_done(-2, a); /* nor that (-1 means cancel inside the transport) */
}

static void serve(rx_t *rx)
{
    for (;;) {
        msg_t m = next_msg(rx);
        msg_t a = {CMD_ACK, m.seq, 0, 0, 0};
        if (m.kind == CMD_CHECK)
            a.status = serve_check(&m);
        else if (m.kind == CMD_DONE)
            xp_tl_bounce_done(0, m.addr);
        else if (m.kind == CMD_BAD_DONE)
            serve_bad_done(&m);
        else if (m.kind != CMD_QUIT)
            a.status = 1;
        send_msg(0, a);
        if (m.kind == CMD_QUIT)
            return;
    }
}

/* ---- rank 0: the owner ---- */

static void check_limits(size_t max)
{
    int me = xp_rank(), peer = 1 - me;
    XP_CHECK(xp_tl_bounce_alloc(peer, 0) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(peer, max + 1) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(peer, SIZE_MAX) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(me, 1) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(-1, 1) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(2, 1) == NULL);
    XP_CHECK(xp_tl_bounce_alloc(1 << 30, 1) == NULL);
    if (!max)
        return;
    /* The largest length works; given back at once. */
    void *b = xp_tl_bounce_alloc(peer, max);
    XP_CHECK(b != NULL);
    if (b) {
        xp_tl_bounce_fill(peer, b, max);
        xp_tl_bounce_cancel(peer, b);
    }
}

/* The next block for the round trips: a window's oldest ones may still be
 * unread, but never more than the cap holds. */
static unsigned char *alloc_wait(size_t len)
{
    unsigned char *b;
    double t0 = now_s();
    while (!(b = xp_tl_bounce_alloc(1, len))) {
        xp_tl_progress();
        XP_REQUIRE(now_s() - t0 < WAIT_S);
    }
    return b;
}

/* ROUNDS blocks of 1 MiB, or of max where that is less (and a few odd
 * sizes), WINDOW in flight: many times the cap in all (at 1 MiB), so done
 * blocks must be reclaimed. */
static void round_trips(rx_t *rx, size_t max)
{
    uint32_t sent = 0, acked = 0;
    size_t big = max < MIB ? max : MIB;
    while (acked < ROUNDS) {
        while (sent < ROUNDS && sent - acked < WINDOW) {
            size_t len = sent % 10 == 9 ? (size_t)(sent * 977u) % max + 1 : big;
            unsigned char *b = alloc_wait(len);
            fill(b, len, sent);
            xp_tl_bounce_fill(1, b, len); /* staged in full */
            send_msg(1, (msg_t){CMD_CHECK, sent, (uintptr_t)b, len, 0});
            sent++;
        }
        msg_t a = next_msg(rx);
        XP_CHECK_EQ(a.kind, CMD_ACK);
        XP_CHECK_EQ(a.seq, acked);
        XP_CHECK_EQ(a.status, 0);
        acked++;
    }
}

/* Pipelined: the request goes after the first chunk; the rest is staged
 * (over a poisoned block, slowly) while the reader copies. */
#define CHUNK (32u << 10) /* as the engine's */
static void check_pipelined(rx_t *rx)
{
    for (uint32_t seq = 1000; seq < 1004; seq++) {
        size_t len = MIB - (seq - 1000) * 4097; /* odd tails too */
        unsigned char *b = alloc_wait(len);
        memset(b, 0xEE, len);
        fill(b, CHUNK, seq);
        xp_tl_bounce_fill(1, b, CHUNK);
        send_msg(1, (msg_t){CMD_CHECK, seq, (uintptr_t)b, len, 0});
        for (size_t off = CHUNK; off < len; off += CHUNK) {
            size_t n = len - off < CHUNK ? len - off : CHUNK;
            usleep(200);
            /* (fill() numbers bytes from the block's start.) */
            for (size_t i = off; i < off + n; i++)
                b[i] = byte_of(seq, i);
            xp_tl_bounce_fill(1, b, off + n);
        }
        msg_t a = next_msg(rx);
        XP_CHECK_EQ(a.kind, CMD_ACK);
        XP_CHECK_EQ(a.seq, seq);
        XP_CHECK_EQ(a.status, 0);
    }
}

/* Fills that end a few bytes into a line, over bytes already staged: the
 * reader writes a word of each line it has copied out (shm_bounce.c,
 * xp_shm_own_lines), and must not touch the staged bytes past the fill. */
static void check_odd_fills(rx_t *rx, size_t max)
{
    static const size_t ends[] = {68, 4 * 64 + 3, 4096 + 7, 8192 + 1};
    size_t len = max < 3 * CHUNK ? max : 3 * CHUNK;
    unsigned char *b = alloc_wait(len);
    fill(b, len, 2000);
    xp_tl_bounce_fill(1, b, ends[0]);
    send_msg(1, (msg_t){CMD_CHECK, 2000, (uintptr_t)b, len, 0});
    for (size_t k = 1; k < sizeof ends / sizeof ends[0]; k++) {
        usleep(2000); /* the reader copies up to the last fill */
        xp_tl_bounce_fill(1, b, ends[k]);
    }
    usleep(2000);
    xp_tl_bounce_fill(1, b, len);
    msg_t a = next_msg(rx);
    XP_CHECK_EQ(a.kind, CMD_ACK);
    XP_CHECK_EQ(a.seq, 2000);
    XP_CHECK_EQ(a.status, 0);
}

/* The reader's done waits for the last fill: no acknowledgement before it. */
static void check_done_waits(rx_t *rx)
{
    unsigned char *b = alloc_wait(MIB);
    xp_tl_bounce_fill(1, b, MIB - 1);
    send_msg(1, (msg_t){CMD_DONE, 77, (uintptr_t)b, MIB, 0});
    double t0 = now_s();
    while (now_s() - t0 < 0.05) {
        xp_tl_progress();
        XP_CHECK(rx->head == rx->tail);
    }
    xp_tl_bounce_fill(1, b, MIB);
    msg_t a = next_msg(rx);
    XP_CHECK_EQ(a.kind, CMD_ACK);
    XP_CHECK_EQ(a.seq, 77);
}

/* --die: the writer stages one chunk, sends, and exits. */
static void die_writer(void)
{
    unsigned char *b = alloc_wait(MIB);
    fill(b, CHUNK, 5);
    xp_tl_bounce_fill(1, b, CHUNK);
    send_msg(1, (msg_t){CMD_CHECK, 5, (uintptr_t)b, MIB, 0});
    _exit(xp_test_result()); /* no last fill, no finalize */
}

static void die_reader(rx_t *rx)
{
    msg_t m = next_msg(rx);
    XP_REQUIRE(m.kind == CMD_CHECK);
    unsigned char *buf = malloc(m.len);
    XP_REQUIRE(buf);
    struct iovec l = {buf, m.len};
    double t0 = now_s();
    XP_CHECK_EQ(xp_tl_bounce_read(0, &l, 1, m.addr, m.len), XP_ERR_PEER_DEAD);
    xp_tl_bounce_done(0, m.addr); /* returns: its writer is gone */
    XP_CHECK(now_s() - t0 < WAIT_S);
    fprintf(stderr, "rank 1: the dead writer's read failed after %.3f s\n", now_s() - t0);
    free(buf);
}

/* Allocate len-byte blocks until refused (at most MAX_BLOCKS); returns how many. */
static size_t alloc_upto(void **blk, size_t len, size_t max)
{
    size_t n = 0;
    while (n < max && (blk[n] = xp_tl_bounce_alloc(1, len)))
        xp_tl_bounce_fill(1, blk[n++], len); /* (the owner frees only staged blocks) */
    return n;
}

static size_t alloc_all(void **blk, size_t len)
{
    return alloc_upto(blk, len, MAX_BLOCKS);
}

/* Every block but the oldest one read: the owner must free past its unread
 * head (the list is kept oldest first). blk[0, n) outstanding, oldest is
 * blk[oldest]; all given back on return. */
static void check_unread_head(rx_t *rx, void **blk, size_t n, size_t oldest)
{
    XP_REQUIRE(n >= 2 && 2 * n <= MAX_BLOCKS);
    for (size_t i = 0; i < n; i++)
        if (i != oldest)
            command(rx, CMD_DONE, (uint32_t)i, blk[i], MIB);
    void **more = blk + n;
    size_t m = alloc_upto(more, MIB, n);
    XP_CHECK_EQ(m, n - 1);
    command(rx, CMD_DONE, (uint32_t)oldest, blk[oldest], MIB);
    for (size_t i = 0; i < m; i++)
        command(rx, CMD_DONE, (uint32_t)(n + i), more[i], MIB);
}

/* A bad done must not write into a block's data either. */
#define HEAD 4096
static void check_head(const unsigned char *b, uint32_t seq)
{
    for (size_t i = 0; i < HEAD; i++)
        if (b[i] != byte_of(seq, i)) {
            fprintf(stderr, "rank 0: block %u byte %zu changed by a bad done\n", seq, i);
            XP_CHECK(0);
            return;
        }
}

/* The cap without dones; bad dones release nothing; good ones do. */
static void check_cap_and_dones(rx_t *rx, void **blk)
{
    size_t want = blocks_under_cap(MIB);
    size_t n = alloc_all(blk, MIB);
    XP_CHECK_EQ(n, want);
    XP_REQUIRE(n > 0);
    XP_CHECK(xp_tl_bounce_alloc(1, MIB) == NULL);
    /* Blocks owned by the list are not released by a done in our own name. */
    xp_tl_bounce_done(0, (uintptr_t)blk[0]);
    for (size_t i = 0; i < n; i++) {
        fill(blk[i], HEAD, (uint32_t)i);
        command(rx, CMD_BAD_DONE, (uint32_t)i, blk[i], MIB);
    }
    XP_CHECK(xp_tl_bounce_alloc(1, MIB) == NULL);
    for (size_t i = 0; i < n; i++)
        check_head(blk[i], (uint32_t)i);
    /* One good done frees exactly one block's room. */
    command(rx, CMD_DONE, 0, blk[0], MIB);
    XP_REQUIRE((blk[0] = xp_tl_bounce_alloc(1, MIB)) != NULL);
    xp_tl_bounce_fill(1, blk[0], MIB);
    XP_CHECK(xp_tl_bounce_alloc(1, MIB) == NULL);
    check_unread_head(rx, blk, n, 1); /* blk[0] is the newest now */
    XP_CHECK_EQ(alloc_all(blk, MIB), want);
    for (size_t i = 0; i < want; i++)
        xp_tl_bounce_cancel(1, blk[i]);
}

/* Cancel gives blocks back without the reader: to the cap, cancel, again;
 * also the list's limit of 1024 outstanding blocks (small ones). */
static void check_cancel(void **blk)
{
    size_t want = blocks_under_cap(MIB);
    for (int round = 0; round < 3; round++) {
        size_t n = alloc_all(blk, MIB);
        XP_CHECK_EQ(n, want);
        for (size_t i = 0; i < n; i++)
            xp_tl_bounce_cancel(1, blk[i]);
    }
    size_t small = blocks_under_cap(1) < LIST_MAX ? blocks_under_cap(1) : LIST_MAX;
    size_t n = alloc_all(blk, 1);
    XP_CHECK_EQ(n, small);
    /* Cancelling a foreign or bad address is ignored. */
    static char not_heap[64];
    xp_tl_bounce_cancel(1, not_heap);
    xp_tl_bounce_cancel(1, NULL);
    XP_CHECK(xp_tl_bounce_alloc(1, 1) == NULL);
    for (size_t i = 0; i < n; i++)
        xp_tl_bounce_cancel(1, blk[i]);
    XP_CHECK_EQ(alloc_all(blk, 1), small);
    for (size_t i = 0; i < small; i++)
        xp_tl_bounce_cancel(1, blk[i]);
}

static void drive(rx_t *rx, size_t max)
{
    void **blk = calloc(MAX_BLOCKS, sizeof(void *));
    XP_REQUIRE(blk);
    round_trips(rx, max);
    if (max >= 8192 + 64)
        check_odd_fills(rx, max);
    if (max >= MIB) { /* (not auto's mid-size blocks: XP_SHM_MID_BOUNCE_MAX) */
        check_pipelined(rx);
        check_done_waits(rx);
        check_cap_and_dones(rx, blk);
        check_cancel(blk);
    }
    command(rx, CMD_QUIT, 0, NULL, 0);
    fprintf(stderr, "rank 0: %d round trips, cap %zu blocks of 1 MiB, max %zu\n", ROUNDS,
            blocks_under_cap(MIB), max);
    free(blk);
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    if (xp_size() != 2)
        XP_TEST_SKIP("needs exactly 2 ranks");
    static rx_t rx;
    XP_REQUIRE(xp_tl_init(on_packet, &rx) == XP_OK);
    if (!(xp_tl_caps(1 - xp_rank()) & XP_TL_CAP_RMA))
        XP_TEST_SKIP("no RMA route between the ranks");
    /* No heap (XP_SHM_HEAP_SIZE=0) or XP_SHM_BOUNCE=off: no blocks; on:
     * XP_SHM_BOUNCE_MAX; auto: either, by what copies cost here. */
    size_t max = xp_tl_bounce_max(1 - xp_rank());
    size_t on_max = xp_config()->shm_heap_size ? xp_config()->shm_bounce_max : 0;
    if (xp_config()->shm_bounce == XP_SHM_BOUNCE_ON)
        XP_CHECK_EQ(max, on_max);
    else /* auto: blocks by the copy probe, or mid-size ones by the eager probe */
        XP_CHECK(max == 0 || (xp_config()->shm_bounce == XP_SHM_BOUNCE_AUTO &&
                              (max == on_max || max == (on_max < XP_SHM_MID_BOUNCE_MAX
                                                            ? on_max
                                                            : XP_SHM_MID_BOUNCE_MAX))));
    fprintf(stderr, "rank %d: XP_SHM_BOUNCE=%s, bounce blocks up to %zu bytes\n", xp_rank(),
            (const char *[]){ "auto", "on", "off" }[xp_config()->shm_bounce], max);
    check_limits(max);
    if (max) {
        /* Without XP_SHM_BOUNCE_MAX=0 the shm route must offer blocks. */
        void *b = xp_tl_bounce_alloc(1 - xp_rank(), 1);
        XP_CHECK(b != NULL);
        if (b) {
            xp_tl_bounce_fill(1 - xp_rank(), b, 1);
            xp_tl_bounce_cancel(1 - xp_rank(), b);
        }
    } else {
        XP_CHECK(xp_tl_bounce_alloc(1 - xp_rank(), MIB) == NULL);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (argc > 1 && !strcmp(argv[1], "--die")) {
        XP_REQUIRE(max >= MIB);
        if (xp_rank() == 0)
            die_writer();
        die_reader(&rx);
        return xp_test_result(); /* the peer is gone: no barrier */
    }
    /* Rank 0's blocks are the ones driven: under auto each process's copy
     * probe chooses for itself, and rank 1 serves whatever it chose. */
    size_t owner_max = xp_test_rank0_size("tl_bounce.max", max);
    if (owner_max && xp_rank() == 0)
        drive(&rx, max);
    else if (owner_max)
        serve(&rx);
    XP_REQUIRE(xp_barrier() == XP_OK);
    xp_tl_fini();
    xp_finalize();
    return xp_test_result();
}
