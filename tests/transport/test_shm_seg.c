/*
 * Segments between two fork()ed processes, without the runtime: attach by
 * name, unlink once attached (nothing left in /dev/shm), echo packets of every
 * size 0..max through each other's rings with data checks, process_vm_readv/
 * writev of 0 B .. 16 MiB with several iovecs, the copy probe of
 * XP_SHM_BOUNCE=auto, and a dead peer (killed, not reaped: a zombie)
 * detected by xp_pid_alive.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/shm_seg.h"
#include "xp_test.h"

#define BIG (16u << 20)
#define MAXPKT (32u * 1024u)

typedef struct rx {
    size_t len;
    int src;
    unsigned char buf[MAXPKT + 64];
} rx_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    rx_t *rx = arg;
    rx->len = len;
    rx->src = src;
    memcpy(rx->buf, pkt, len);
}

static void wait_one(xp_shm_ring_t *ring, rx_t *rx)
{
    while (xp_shm_ring_poll(ring, 1, on_packet, rx) == 0)
        xp_cpu_relax();
}

static void push(xp_shm_seg_t *to, uint64_t *cached, int src, const void *p, size_t len)
{
    xp_status_t st;
    while ((st = xp_shm_ring_push(&to->hdr->ring, cached, src, p, len, NULL, 0)) == XP_ERR_AGAIN)
        xp_cpu_relax();
    XP_REQUIRE(st == XP_OK);
    xp_shm_doorbell_ring(&to->hdr->doorbell);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 131 + (i >> 12));
}

/* Child: attach both segments, echo every packet back until a 1-byte 'q'. */
static int child(const char *name_parent, const char *name_child)
{
    xp_shm_seg_t parent, self;
    if (xp_shm_seg_attach(name_parent, &parent) || xp_shm_seg_attach(name_child, &self))
        return 2;
    unsigned char *big = malloc(BIG);
    if (!big)
        return 3;
    fill(big, BIG, 9);
    uint64_t cached = 0;
    uint64_t addr = (uintptr_t)big;
    push(&parent, &cached, 1, &addr, sizeof addr); /* "attached" + where big is */
    static rx_t rx;
    for (;;) {
        wait_one(&self.hdr->ring, &rx);
        if (rx.len == 1 && rx.buf[0] == 'q')
            break;
        push(&parent, &cached, 1, rx.buf, rx.len);
    }
    /* Let the parent check `big` after writev, then sleep until killed. */
    push(&parent, &cached, 1, "k", 1);
    pause();
    return 0;
}

static void check_cma(pid_t pid, unsigned char *remote)
{
    unsigned char *local = malloc(BIG), *want = malloc(BIG);
    XP_REQUIRE(local && want);
    fill(want, BIG, 9);
    size_t sizes[] = {0, 1, 4095, 4096, 65537, (1u << 20) + 3, BIG};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k], cut = n / 3;
        memset(local, 0, n);
        struct iovec l[3] = {{local, cut}, {local + cut, 0}, {local + cut, n - cut}};
        struct iovec r = {remote, n};
        XP_CHECK_EQ(xp_cma_copy(pid, 0, l, 3, &r, 1), XP_OK);
        XP_CHECK(!memcmp(local, want, n));
    }
    /* Many small remote pieces (more than one batch) written back reversed. */
    enum { PIECES = 300, PIECE = 1000 };
    struct iovec r[PIECES], l = {local, PIECES * PIECE};
    fill(local, PIECES * PIECE, 77);
    for (int i = 0; i < PIECES; i++)
        r[i] = (struct iovec){remote + (size_t)(PIECES - 1 - i) * PIECE, PIECE};
    XP_CHECK_EQ(xp_cma_copy(pid, 1, &l, 1, r, PIECES), XP_OK);
    memset(want, 0, PIECES * PIECE);
    XP_CHECK_EQ(xp_cma_copy(pid, 0, &(struct iovec){want, PIECES * PIECE}, 1, r, PIECES), XP_OK);
    XP_CHECK(!memcmp(want, local, PIECES * PIECE));
    struct iovec bad = {(void *)16, 100}, ok = {local, 100};
    XP_CHECK_EQ(xp_cma_copy(pid, 0, &ok, 1, &bad, 1), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_cma_copy(pid, 0, &ok, 1, &(struct iovec){remote, 99}, 1), XP_ERR_INVALID);
    free(local);
    free(want);
}

/* xp_iov_copy_in: pieces at every offset across uneven iovecs (an empty
 * one too) land where they belong; a piece past the end is refused. */
static void check_iov_copy_in(void)
{
    enum { N = 1000 };
    unsigned char src[N], dst[N];
    fill(src, N, 5);
    memset(dst, 0, N);
    struct iovec d[4] = {{dst, 7}, {dst + 7, 0}, {dst + 7, 500}, {dst + 507, N - 507}};
    for (size_t off = 0; off < N; off += 33) {
        size_t n = off + 33 <= N ? 33 : N - off;
        XP_CHECK_EQ(xp_iov_copy_in(d, 4, off, src + off, n), XP_OK);
    }
    XP_CHECK(!memcmp(dst, src, N));
    XP_CHECK_EQ(xp_iov_copy_in(d, 4, N - 1, src, 2), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_iov_copy_in(d, 4, N + 1, src, 0), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_iov_copy_in(d, 4, N, src, 0), XP_OK);
    XP_CHECK(!memcmp(dst, src, N)); /* the refused copies wrote nothing */
}

/* The copy probe behind XP_SHM_BOUNCE=auto, and its rule: bounce blocks
 * where the pinned copy costs over XP_SHM_BOUNCE_RATIO memcpys or is not
 * allowed; the probe measures both copies of real bytes (positive times),
 * or reports the pinned one not allowed, and a zero length measures nothing. */
static void check_copy_probe(void)
{
    const double r = XP_SHM_BOUNCE_RATIO;
    XP_CHECK(xp_shm_bounce_pays(&(xp_shm_copy_probe_t){ .cma_ok = 0 }));
    XP_CHECK(xp_shm_bounce_pays(&(xp_shm_copy_probe_t){ 1000, 1000 * r + 1, 1 }));
    XP_CHECK(!xp_shm_bounce_pays(&(xp_shm_copy_probe_t){ 1000, 1000 * r, 1 }));
    XP_CHECK(!xp_shm_bounce_pays(&(xp_shm_copy_probe_t){ 1000, 2000, 1 }));
    XP_CHECK(r > 2.0); /* a bounce is two memcpys: never chosen below that */
    xp_shm_copy_probe_t p;
    xp_shm_copy_probe(64 << 10, &p);
    if (p.cma_ok) {
        XP_CHECK(p.copy_ns > 0 && p.copy_ns < 1e8);
        XP_CHECK(p.cma_ns > 0 && p.cma_ns < 1e8);
    } else {
        fprintf(stderr, "process_vm_readv not allowed here: bounce blocks always pay\n");
        XP_CHECK(p.copy_ns == 0 && p.cma_ns == 0 && xp_shm_bounce_pays(&p));
    }
    fprintf(stderr, "copy probe, 64 KiB: memcpy %.0f ns, process_vm_readv %.0f ns: blocks %s\n",
            p.copy_ns, p.cma_ns, xp_shm_bounce_pays(&p) ? "pay" : "do not pay");
    XP_CHECK_EQ(p.len, 64u << 10);
    xp_shm_copy_probe(0, &p);
    XP_CHECK(!p.cma_ok && p.copy_ns == 0 && p.cma_ns == 0 && p.len == 0);
}

/* The eager probe's rule (shm_eager.c): the largest probed size up to
 * which every size moved faster through memory than by single copy; 4 KiB
 * when the smallest did not (or nothing was probed). */
static void check_eager_pick(void)
{
    const double single[3] = {2000, 3000, 4000};
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){700, 1300, 2400}, single, 3), 32768u);
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){700, 1300, 4000}, single, 3), 16384u);
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){700, 3100, 2400}, single, 3), 8192u);
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){2000, 1300, 2400}, single, 3), 4096u);
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){2500, 5000, 9000}, single, 3), 4096u);
    XP_CHECK_EQ(xp_shm_eager_pick((double[]){700, 1300}, single, 2), 16384u);
    XP_CHECK_EQ(xp_shm_eager_pick(single, single, 0), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(XP_SHM_PROBE_SIZE0 << 2, XP_SHM_PROBE_MAX); /* the buffer holds the largest */
}

/* The verdict word a rank reads: a published size the prober gives, else 4 KiB. */
static void check_eager_verdict(void)
{
    const uint64_t done = XP_SHM_VERDICT_DONE;
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 4096), 4096u);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 8192), 8192u);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 16384), 16384u);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | XP_SHM_PROBE_MAX), (size_t)XP_SHM_PROBE_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(32768), (size_t)XP_SHM_AUTO_EAGER_MAX); /* unpublished */
    XP_CHECK_EQ(xp_shm_eager_verdict(0), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(done), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 12288), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 2048), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 65536), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(done | 1ull << 32 | 8192), (size_t)XP_SHM_AUTO_EAGER_MAX);
    XP_CHECK_EQ(xp_shm_eager_verdict(UINT64_MAX), (size_t)XP_SHM_AUTO_EAGER_MAX);
}

static int dev_shm_has(const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    return access(path, F_OK) == 0;
}

int main(void)
{
    char na[64], nb[64];
    snprintf(na, sizeof na, "/xp-test-%d-0", (int)getpid());
    snprintf(nb, sizeof nb, "/xp-test-%d-1", (int)getpid());
    xp_shm_seg_t a, b;
    XP_REQUIRE(xp_shm_seg_create(na, 2048, &a) == XP_OK);
    XP_REQUIRE(xp_shm_seg_create(nb, 2048, &b) == XP_OK);
    XP_CHECK_EQ(xp_shm_seg_create("bad-name-without-slash/x", 2048, &a), XP_ERR_IO);
    XP_CHECK_EQ(xp_shm_seg_create(na, 1000, &a), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_shm_seg_attach("/xp-test-no-such-segment", &a), XP_ERR_NOT_FOUND);
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(child(na, nb));
    static rx_t rx;
    wait_one(&a.hdr->ring, &rx);
    XP_REQUIRE(rx.len == sizeof(uint64_t));
    uint64_t remote_big;
    memcpy(&remote_big, rx.buf, sizeof remote_big);
    xp_shm_seg_unlink(&a);
    xp_shm_seg_unlink(&b);
    XP_CHECK(!dev_shm_has(na) && !dev_shm_has(nb));

    /* Echo every size (the maximum of this ring, too). */
    static unsigned char msg[MAXPKT];
    uint64_t cached = 0;
    size_t max = xp_shm_ring_max_packet(&b.hdr->ring);
    XP_CHECK(max >= MAXPKT);
    for (size_t n = 2; n <= MAXPKT; n = n < 200 ? n + 1 : n * 3 / 2 + 1) {
        fill(msg, n, (unsigned)n);
        push(&b, &cached, 0, msg, n);
        wait_one(&a.hdr->ring, &rx);
        XP_CHECK_EQ(rx.len, n);
        XP_CHECK_EQ(rx.src, 1);
        XP_CHECK(!memcmp(rx.buf, msg, n));
    }
    push(&b, &cached, 0, msg, MAXPKT);
    wait_one(&a.hdr->ring, &rx);
    XP_CHECK(rx.len == MAXPKT && !memcmp(rx.buf, msg, MAXPKT));

    check_cma(pid, (unsigned char *)(uintptr_t)remote_big);
    check_iov_copy_in();
    check_copy_probe();
    check_eager_pick();
    check_eager_verdict();
    push(&b, &cached, 0, "q", 1);
    wait_one(&a.hdr->ring, &rx);
    XP_CHECK(rx.len == 1 && rx.buf[0] == 'k');

    /* Death: kill the child, do not reap it yet (a zombie), fill its ring. */
    XP_CHECK(xp_pid_alive(pid));
    kill(pid, SIGKILL);
    while (xp_pid_alive(pid))
        usleep(1000);
    int pushed = 0;
    while (xp_shm_ring_push(&b.hdr->ring, &cached, 0, msg, 100, NULL, 0) == XP_OK)
        pushed++;
    XP_CHECK(pushed > 0);
    int status;
    waitpid(pid, &status, 0);
    XP_CHECK(WIFSIGNALED(status));
    XP_CHECK(!xp_pid_alive(pid));
    XP_CHECK(!xp_pid_alive(0) && !xp_pid_alive(-5));
    struct iovec v = {msg, 10};
    XP_CHECK_EQ(xp_cma_copy(pid, 0, &v, 1, &v, 1), XP_ERR_PEER_DEAD);
    xp_shm_seg_close(&a);
    xp_shm_seg_close(&b);
    return xp_test_result();
}
