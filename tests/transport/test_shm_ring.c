/*
 * The shm packet ring under contention: several forked producers (two threads
 * each) push numbered packets of varying size into one MAP_SHARED ring while
 * the parent consumes. No loss, no duplicate, per-producer-thread order, data
 * intact. Also: full ring -> XP_ERR_AGAIN, oversize -> XP_ERR_OVERFLOW; the
 * single-producer push of pair lanes (a thread pushing, the main thread
 * consuming, in a ring initialised in zeroed memory) and gated polls.
 * The cell header: 56 bytes in one cell with the short header word, long
 * headers (a sender of 16 bits or more, a negative one, a packet of 64 KiB
 * or more) intact, positions whose low 32 bits wrap.
 * Under ThreadSanitizer the producers are threads of this process, with
 * fewer messages: TSan cannot see the ring's synchronisation between forked
 * processes (it reports the consumer's reads of cells written in another
 * process as races) and is too slow for the full count.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "transport/inplace.h"
#include "transport/shm_ring.h"
#include "util/clock.h"
#include "xp_test.h"

#define NPROC 4
#define NTHREAD 2
#if XP_TEST_TSAN
#define NMSG 2000
#else
#define NMSG 20000
#endif
#define NCELLS 1024u
/* The consumer gives up (and says how far each producer got) after this;
 * a producer after a little longer, so that no forked one outlives the test. */
#define CONSUMER_DEADLINE_NS (30ull * 1000000000ull)
#define PRODUCER_DEADLINE_NS (40ull * 1000000000ull)

typedef struct msg_hdr {
    uint32_t producer; /* proc * NTHREAD + thread */
    uint32_t seq;
    uint32_t len;      /* payload bytes after the header */
} msg_hdr_t;

typedef struct prod_arg {
    xp_shm_ring_t *ring;
    uint64_t *cached_head; /* shared by the threads of one process */
    uint32_t id;
} prod_arg_t;

static unsigned char pattern(uint32_t id, uint32_t seq, uint32_t i)
{
    return (unsigned char)(id * 31 + seq * 7 + i);
}

static uint32_t msg_len(uint32_t id, uint32_t seq)
{
    uint32_t r = (id * 2654435761u) ^ (seq * 40503u);
    /* Mostly small, some medium (multi-cell), a few near the maximum. */
    if (r % 97 == 0)
        return (uint32_t)((NCELLS / 2) * XP_SHM_CELL - XP_SHM_CELL_HDR - sizeof(msg_hdr_t));
    return r % 16 == 0 ? r % 3000 : r % 100;
}

/* Spin while waiting for the other side, then sleep a little: with 9
 * threads on 2 CPUs the thread waited for (a producer preempted between its
 * reservation and its commit, or the consumer) is often not running, and
 * spinning only keeps it off the CPU (a run took 2-22 s at load 25 instead
 * of 0.2-0.8 s with this). */
static void backoff(unsigned *spins)
{
    if (++*spins < 1000) {
        xp_cpu_relax();
        return;
    }
    nanosleep(&(struct timespec){0, 50000}, NULL);
}

static void *producer(void *p)
{
    prod_arg_t *a = p;
    unsigned char buf[NCELLS / 2 * XP_SHM_CELL];
    uint64_t deadline = xp_time_ns() + PRODUCER_DEADLINE_NS;
    for (uint32_t s = 0; s < NMSG; s++) {
        msg_hdr_t h = {a->id, s, msg_len(a->id, s)};
        unsigned spins = 0;
        for (uint32_t i = 0; i < h.len; i++)
            buf[i] = pattern(a->id, s, i);
        xp_status_t st;
        while ((st = xp_shm_ring_push(a->ring, a->cached_head, (int)a->id, &h, sizeof h, buf, h.len)) ==
               XP_ERR_AGAIN) {
            if (xp_time_ns() > deadline) {
                fprintf(stderr, "producer %u: ring full for too long at message %u\n", a->id, s);
                abort();
            }
            backoff(&spins);
        }
        if (st != XP_OK)
            abort();
    }
    return NULL;
}

typedef struct consumer {
    uint32_t next[NPROC * NTHREAD];
    long received, errors;
} consumer_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    consumer_t *c = arg;
    msg_hdr_t h;
    memcpy(&h, pkt, sizeof h);
    const unsigned char *d = (const unsigned char *)pkt + sizeof h;
    if (h.producer >= NPROC * NTHREAD || (int)h.producer != src || len != sizeof h + h.len ||
        h.seq != c->next[h.producer] || h.len != msg_len(h.producer, h.seq)) {
        if (c->errors++ < 5)
            fprintf(stderr, "bad packet from %u: seq %u (want %u) len %zu\n", h.producer, h.seq,
                    h.producer < NPROC * NTHREAD ? c->next[h.producer] : 0, len);
        return;
    }
    for (uint32_t i = 0; i < h.len; i++)
        if (d[i] != pattern(h.producer, h.seq, i)) {
            c->errors++;
            break;
        }
    c->next[h.producer]++;
    c->received++;
}

static void run_producer_process(xp_shm_ring_t *ring, uint32_t proc)
{
    uint64_t cached = 0;
    pthread_t t[NTHREAD];
    prod_arg_t a[NTHREAD];
    for (uint32_t i = 0; i < NTHREAD; i++) {
        a[i] = (prod_arg_t){ring, &cached, proc * NTHREAD + i};
        pthread_create(&t[i], NULL, producer, &a[i]);
    }
    for (int i = 0; i < NTHREAD; i++)
        pthread_join(t[i], NULL);
    _exit(0);
}

/* The TSan variant: the producer "processes" are groups of threads here,
 * each group sharing one cached head as a process's threads do. */
static void start_producer_threads(xp_shm_ring_t *ring, uint64_t cached[NPROC],
                                   pthread_t t[NPROC * NTHREAD], prod_arg_t a[NPROC * NTHREAD])
{
    for (uint32_t i = 0; i < NPROC * NTHREAD; i++) {
        a[i] = (prod_arg_t){ring, &cached[i / NTHREAD], i};
        XP_REQUIRE(pthread_create(&t[i], NULL, producer, &a[i]) == 0);
    }
}

static void test_contention(void)
{
    size_t bytes = xp_shm_ring_bytes(NCELLS);
    xp_shm_ring_t *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    XP_REQUIRE(ring != MAP_FAILED);
    xp_shm_ring_init(ring, NCELLS);
    XP_CHECK(xp_shm_ring_valid(ring, bytes));
    pid_t pids[NPROC];
    uint64_t cached[NPROC] = {0};
    pthread_t threads[NPROC * NTHREAD];
    prod_arg_t args[NPROC * NTHREAD];
    if (XP_TEST_TSAN)
        start_producer_threads(ring, cached, threads, args);
    for (uint32_t p = 0; p < NPROC && !XP_TEST_TSAN; p++) {
        pids[p] = fork();
        XP_REQUIRE(pids[p] >= 0);
        if (pids[p] == 0)
            run_producer_process(ring, p);
    }
    static consumer_t c;
    long want = (long)NPROC * NTHREAD * NMSG;
    uint64_t deadline = xp_time_ns() + CONSUMER_DEADLINE_NS;
    unsigned spins = 0;
    while (c.received < want && c.errors == 0) {
        int n = xp_shm_ring_poll(ring, 32, on_packet, &c);
        XP_REQUIRE(n >= 0);
        if (n) {
            spins = 0;
            continue;
        }
        if (xp_time_ns() > deadline) {
            fprintf(stderr, "consumer: %ld of %ld packets after 30 s; next seq per producer:",
                    c.received, want);
            for (int i = 0; i < NPROC * NTHREAD; i++)
                fprintf(stderr, " %u", c.next[i]);
            fprintf(stderr, "\n");
            for (int p = 0; p < NPROC && !XP_TEST_TSAN; p++)
                kill(pids[p], SIGKILL);
            XP_REQUIRE(c.received == want);
        }
        backoff(&spins);
    }
    for (int i = 0; i < NPROC * NTHREAD && XP_TEST_TSAN; i++)
        pthread_join(threads[i], NULL);
    for (int p = 0; p < NPROC && !XP_TEST_TSAN; p++) {
        int status;
        waitpid(pids[p], &status, 0);
        XP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    XP_CHECK_EQ(c.errors, 0);
    XP_CHECK_EQ(c.received, want);
    XP_CHECK(!xp_shm_ring_pending(ring));
    XP_CHECK_EQ(xp_shm_ring_poll(ring, 32, on_packet, &c), 0);
    munmap(ring, bytes);
}

static void count_packet(void *arg, int src, const void *pkt, size_t len)
{
    (*(long *)arg)++;
}

static void test_full_and_overflow(void)
{
    size_t bytes = xp_shm_ring_bytes(16);
    xp_shm_ring_t *ring = aligned_alloc(64, bytes);
    XP_REQUIRE(ring);
    xp_shm_ring_init(ring, 16);
    uint64_t cached = 0;
    char big[1024] = {0};
    size_t max = xp_shm_ring_max_packet(ring);
    XP_CHECK_EQ(max, 8 * XP_SHM_CELL - XP_SHM_CELL_HDR);
    XP_CHECK_EQ(xp_shm_ring_push(ring, &cached, 0, big, max + 1, NULL, 0), XP_ERR_OVERFLOW);
    int pushed = 0;
    while (xp_shm_ring_push(ring, &cached, 0, big, 10, NULL, 0) == XP_OK)
        pushed++;
    XP_CHECK_EQ(pushed, 16);
    XP_CHECK_EQ(xp_shm_ring_push(ring, &cached, 0, big, 0, NULL, 0), XP_ERR_AGAIN);
    long got = 0;
    XP_CHECK_EQ(xp_shm_ring_poll(ring, 100, count_packet, &got), 16);
    /* Wrap with a maximum-size packet at an odd position: padding then packet. */
    XP_CHECK_EQ(xp_shm_ring_push(ring, &cached, 0, big, 10, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_push(ring, &cached, 0, big, max, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_push(ring, &cached, 0, big, max, NULL, 0), XP_ERR_AGAIN);
    XP_CHECK_EQ(xp_shm_ring_poll(ring, 100, count_packet, &got), 2);
    XP_CHECK_EQ(got, 18);
    free(ring);
}

/* ---- single-producer pushes (pair lanes) and gated polls ---- */

typedef struct spsc {
    xp_shm_ring_t *ring;
    uint64_t cached;
    uint32_t next, bad; /* consumer: next expected sequence number, mismatches */
} spsc_t;

static uint32_t spsc_len(uint32_t seq)
{
    uint32_t r = seq * 2654435761u;
    return r % 23 == 0 ? 900 : r % 60; /* multi-cell now and then */
}

static void spsc_check(void *arg, int src, const void *pkt, size_t len)
{
    spsc_t *q = arg;
    uint32_t seq;
    if (len < sizeof seq || src != 7) {
        q->bad++;
        return;
    }
    memcpy(&seq, pkt, sizeof seq);
    int ok = seq == q->next && len == sizeof seq + spsc_len(seq);
    for (size_t i = sizeof seq; ok && i < len; i++)
        ok = ((const unsigned char *)pkt)[i] == pattern(7, seq, (uint32_t)i);
    q->bad += !ok;
    q->next = seq + 1;
}

static void *spsc_producer(void *arg)
{
    spsc_t *q = arg;
    unsigned char buf[1024];
    unsigned spins = 0;
    for (uint32_t seq = 0; seq < NMSG; seq++) {
        uint32_t len = spsc_len(seq);
        memcpy(buf, &seq, sizeof seq);
        for (uint32_t i = 0; i < len; i++)
            buf[sizeof seq + i] = pattern(7, seq, (uint32_t)(sizeof seq + i));
        /* header and data as two pieces, as the engine sends them */
        while (xp_shm_ring_push_single(q->ring, &q->cached, 7, buf, sizeof seq, buf + sizeof seq,
                                       len) == XP_ERR_AGAIN)
            backoff(&spins);
    }
    return NULL;
}

/* One producer thread with push_single into a ring initialised in zeroed
 * memory (positions start at ncells), the consumer here: order and data,
 * through many wraps; then full, oversize and an empty poll. */
static void test_single_producer(void)
{
    uint32_t n = 64;
    size_t bytes = xp_shm_ring_bytes(n);
    spsc_t q = {calloc(1, bytes), 0, 0, 0};
    XP_REQUIRE(q.ring);
    xp_shm_ring_init_zeroed(q.ring, n);
    XP_CHECK(xp_shm_ring_valid(q.ring, bytes));
    XP_CHECK_EQ(xp_shm_ring_pending(q.ring), 0);
    pthread_t t;
    XP_REQUIRE(pthread_create(&t, NULL, spsc_producer, &q) == 0);
    uint64_t deadline = xp_time_ns() + CONSUMER_DEADLINE_NS;
    unsigned spins = 0;
    while (q.next < NMSG && xp_time_ns() < deadline) {
        int got = xp_shm_ring_poll(q.ring, 16, spsc_check, &q);
        XP_CHECK(got >= 0);
        if (got <= 0)
            backoff(&spins);
    }
    pthread_join(t, NULL);
    XP_CHECK_EQ(q.next, NMSG);
    XP_CHECK_EQ(q.bad, 0);
    char big[2048] = {0};
    size_t max = xp_shm_ring_max_packet(q.ring);
    XP_CHECK_EQ(xp_shm_ring_push_single(q.ring, &q.cached, 7, big, max + 1, NULL, 0),
                XP_ERR_OVERFLOW);
    int pushed = 0;
    while (xp_shm_ring_push_single(q.ring, &q.cached, 7, big, 40, NULL, 0) == XP_OK)
        pushed++;
    XP_CHECK_EQ(pushed, (int)n);
    long got = 0;
    XP_CHECK_EQ(xp_shm_ring_poll(q.ring, 1000, count_packet, &got), (int)n);
    XP_CHECK_EQ(xp_shm_ring_poll(q.ring, 1000, count_packet, &got), 0);
    free(q.ring);
}

typedef struct order {
    char seen[8];
    int n;
} order_t;

static void record(void *arg, int src, const void *pkt, size_t len)
{
    order_t *o = arg;
    if (o->n < (int)sizeof o->seen && len == 1)
        o->seen[o->n++] = *(const char *)pkt;
}

/* xp_shm_ring_poll_gated stops before a packet while the gate has one. */
static void test_gated_poll(void)
{
    size_t bytes = xp_shm_ring_bytes(16);
    xp_shm_ring_t *r = calloc(1, bytes), *gate = calloc(1, bytes);
    XP_REQUIRE(r && gate);
    xp_shm_ring_init_zeroed(r, 16);
    xp_shm_ring_init_zeroed(gate, 16);
    uint64_t cr = 0, cg = 0;
    order_t o = {{0}, 0};
    XP_CHECK_EQ(xp_shm_ring_push_single(r, &cr, 1, "a", 1, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_push_single(r, &cr, 1, "b", 1, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_poll_gated(r, 10, record, &o, gate), 2); /* gate empty */
    XP_CHECK_EQ(xp_shm_ring_push_single(r, &cr, 1, "c", 1, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_push_single(gate, &cg, 1, "X", 1, NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_shm_ring_poll_gated(r, 10, record, &o, gate), 0); /* stops at once */
    XP_CHECK_EQ(xp_shm_ring_poll(gate, 10, record, &o), 1);
    XP_CHECK_EQ(xp_shm_ring_poll_gated(r, 10, record, &o, gate), 1);
    XP_CHECK_EQ(o.n, 4);
    XP_CHECK(memcmp(o.seen, "abXc", 4) == 0);
    free(r);
    free(gate);
}

/* Whether a sender asks for the cell ahead (xp_tl_inplace_ahead): always
 * without the peer's heads; with them, not on the first send after a head
 * moved (a packet of the peer's taken since the last send), and again on
 * the sends after it. A push without the prefetch delivers the same. */
static void test_ahead(void)
{
    xp_tl_inplace_t ip;
    memset(&ip, 0, sizeof ip);
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 1);
    uint64_t h0 = 16, h1 = 16;
    ip.rx_head[0] = &h0;
    ip.rx_head[1] = &h1;
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 0); /* first look: 32 is news */
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 1); /* a stream: nothing taken */
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 1);
    h1++; /* an answer of the peer's taken */
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 0);
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 1);
    h0 += 3;
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 0);
    XP_CHECK_EQ(xp_tl_inplace_ahead(&ip), 1);

    size_t bytes = xp_shm_ring_bytes(16);
    xp_shm_ring_t *r = calloc(1, bytes);
    XP_REQUIRE(r);
    xp_shm_ring_init_zeroed(r, 16);
    uint64_t cr = r->head; /* (the try fails on a stale cached head) */
    order_t o = {{0}, 0};
    XP_CHECK_EQ(xp_shm_ring_try_push_single_ahead(r, &cr, 0, 1, "p", 1, NULL, 0), 1);
    XP_CHECK_EQ(xp_shm_ring_try_push_single_ahead(r, &cr, 1, 1, "q", 1, NULL, 0), 1);
    XP_CHECK_EQ(xp_shm_ring_poll(r, 10, record, &o), 2);
    XP_CHECK_EQ(o.n, 2);
    XP_CHECK(memcmp(o.seen, "pq", 2) == 0);
    free(r);
}

typedef struct small_rx {
    unsigned char buf[128];
    size_t len;
    int n;
} small_rx_t;

static void small_packet(void *arg, int src, const void *pkt, size_t len)
{
    small_rx_t *rx = arg;
    rx->n++;
    rx->len = len;
    if (len <= sizeof rx->buf)
        memcpy(rx->buf, pkt, len);
}

/* The single push's inline copies (no library call up to 64 bytes): every
 * header size from 0 to 72 with every payload size from 0 to 24, byte-exact,
 * across the ring's wrap. */
static void test_single_small_sizes(void)
{
    size_t bytes = xp_shm_ring_bytes(16);
    xp_shm_ring_t *r = calloc(1, bytes);
    XP_REQUIRE(r);
    xp_shm_ring_init_zeroed(r, 16);
    uint64_t cached = 0;
    unsigned char hdr[72], data[24], want[96];
    for (size_t hl = 0; hl <= 72; hl++) {
        for (size_t dl = 0; dl <= 24; dl++) {
            for (size_t i = 0; i < hl; i++)
                hdr[i] = (unsigned char)(hl * 31 + dl * 7 + i);
            for (size_t i = 0; i < dl; i++)
                data[i] = (unsigned char)(0x80 + hl + dl * 3 + i);
            memcpy(want, hdr, hl);
            memcpy(want + hl, data, dl);
            small_rx_t rx = {{0}, 0, 0};
            XP_CHECK_EQ(xp_shm_ring_push_single(r, &cached, 3, hl ? hdr : NULL, hl,
                                                dl ? data : NULL, dl),
                        XP_OK);
            XP_CHECK_EQ(xp_shm_ring_poll(r, 4, small_packet, &rx), 1);
            XP_CHECK_EQ(rx.n, 1);
            XP_CHECK_EQ(rx.len, hl + dl);
            XP_CHECK(!memcmp(rx.buf, want, hl + dl));
        }
    }
    free(r);
}

typedef struct hdr_rx {
    unsigned char buf[80000];
    size_t len;
    int src, n;
} hdr_rx_t;

static void hdr_packet(void *arg, int src, const void *pkt, size_t len)
{
    hdr_rx_t *rx = arg;
    rx->n++;
    rx->len = len;
    rx->src = src;
    if (len <= sizeof rx->buf)
        memcpy(rx->buf, pkt, len);
}

/* Push one packet of len pattern bytes from src, check the cells it took
 * (tail advance, with the padding of a wrap) and that it arrives intact with its sender. */
static void hdr_roundtrip(xp_shm_ring_t *r, uint64_t *cached, int src, size_t len,
                          uint64_t want_cells, int single)
{
    static unsigned char data[80000];
    static hdr_rx_t rx;
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 7 + len + (size_t)src);
    uint64_t t = r->tail, idx = t & (r->ncells - 1);
    if (idx + want_cells > r->ncells) /* padding to the end first */
        want_cells += r->ncells - idx;
    xp_status_t st = single ? xp_shm_ring_push_single(r, cached, src, data, len, NULL, 0)
                            : xp_shm_ring_push(r, cached, src, data, len, NULL, 0);
    XP_CHECK_EQ(st, XP_OK);
    XP_CHECK_EQ(r->tail - t, want_cells);
    rx.n = 0;
    XP_CHECK_EQ(xp_shm_ring_poll(r, 4, hdr_packet, &rx), 1);
    XP_CHECK_EQ(rx.n, 1);
    XP_CHECK_EQ(rx.src, src);
    XP_CHECK_EQ(rx.len, len);
    XP_CHECK(!memcmp(rx.buf, data, len));
}

static void test_cell_header(void)
{
    uint32_t ncells = 4096; /* holds a packet of 64 KiB and more */
    size_t bytes = xp_shm_ring_bytes(ncells);
    xp_shm_ring_t *r = calloc(1, bytes);
    XP_REQUIRE(r);
    xp_shm_ring_init_zeroed(r, ncells);
    uint64_t cached = 0;
    for (int single = 0; single < 2; single++) {
        /* The short header leaves 56 bytes in the first cell. */
        hdr_roundtrip(r, &cached, 5, XP_SHM_CELL - XP_SHM_CELL_HDR_SHORT, 1, single);
        hdr_roundtrip(r, &cached, 5, XP_SHM_CELL - XP_SHM_CELL_HDR_SHORT + 1, 2, single);
        hdr_roundtrip(r, &cached, 0xfffe, 56, 1, single);
        /* Long headers: 16 bytes, the same data. */
        hdr_roundtrip(r, &cached, 0xffff, 48, 1, single);
        hdr_roundtrip(r, &cached, 0xffff, 49, 2, single);
        hdr_roundtrip(r, &cached, 1 << 20, 10, 1, single);
        hdr_roundtrip(r, &cached, -2 - 3, 10, 1, single);
        hdr_roundtrip(r, &cached, 1, 0xfffe, (0xfffe + 8 + 63) / 64, single);
        hdr_roundtrip(r, &cached, 1, 0xffff, (0xffff + 16 + 63) / 64, single);
        hdr_roundtrip(r, &cached, 1, 70000, (70000 + 16 + 63) / 64, single);
    }
    free(r);

    /* Positions around 2^32 (the header word holds their low 32 bits):
     * every size from 0 to 200 bytes, so packets of 1..4 cells and padding
     * cross the wrap of the low bits many times. */
    ncells = 16;
    r = calloc(1, xp_shm_ring_bytes(ncells));
    XP_REQUIRE(r);
    xp_shm_ring_init(r, ncells);
    r->head = r->tail = ((uint64_t)1 << 32) - 100;
    cached = r->head;
    for (int round = 0; round < 3; round++)
        for (size_t len = 0; len <= 200; len++)
            hdr_roundtrip(r, &cached, (int)len % 3, len, xp_shm_cells_for(len, 0), round & 1);
    XP_CHECK(r->head > ((uint64_t)1 << 32) + 100);
    free(r);
}

int main(void)
{
    test_cell_header();
    test_single_small_sizes();
    test_full_and_overflow();
    test_single_producer();
    test_gated_poll();
    test_ahead();
    test_contention();
    return xp_test_result();
}
