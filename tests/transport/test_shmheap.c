/*
 * The shared heap (xportals/shmem.h) under xprun: allocation rules and bad
 * input, then every rank fills heap blocks and malloc blocks of 0 B .. 8 MiB,
 * peers read them with xp_tl_readv and write into them with xp_tl_writev
 * (heap: a plain copy through the peer's mapping; malloc: process_vm_*),
 * partial ranges and the heap's last page included; contents checked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shmheap.h"
#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xportals/shmem.h"
#include "xportals/xp.h"

#define BIG (8u << 20)

typedef struct addrs {
    uint64_t heap, mal, heap_end; /* heap_end: the last 4 KiB of the heap */
} addrs_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    (void)arg, (void)src, (void)pkt, (void)len;
}

static unsigned char byte_of(int rank, size_t i)
{
    return (unsigned char)(rank * 59 + i * 7 + (i >> 11));
}

static void test_alloc_rules(void)
{
    XP_CHECK(xp_shmalloc(0) == NULL);
    XP_CHECK(xp_shmalloc(SIZE_MAX) == NULL);
    xp_shfree(NULL);
    int on_stack;
    xp_shfree(&on_stack); /* reported, ignored */
    XP_CHECK(!xp_shm_contains(&on_stack, sizeof on_stack));
    void *a = xp_shmalloc(1), *b = xp_shmalloc(1000), *c = xp_shmalloc(1 << 20);
    XP_REQUIRE(a && b && c);
    XP_CHECK(((uintptr_t)a & 255) == 0 && ((uintptr_t)b & 255) == 0);
    XP_CHECK(a != b && b != c && a != c);
    XP_CHECK(xp_shm_contains(c, 1 << 20) && xp_shm_contains(b, 1000));
    memset(c, 0x5a, 1 << 20); /* writable */
    xp_shfree(b);
    XP_CHECK(xp_shmalloc(1000) == b); /* the same block comes back */
    xp_shfree(a);
    xp_shfree(b);
    xp_shfree(c);
    /* Exhaustion: NULL, never a crash; everything comes back after frees. */
    size_t heap = xp_shm_heap()->size, got = 0;
    void *blocks[64];
    int n = 0;
    while (n < 64 && (blocks[n] = xp_shmalloc(heap / 8)) != NULL)
        got += heap / 8, n++;
    XP_CHECK(got == heap && xp_shmalloc(heap / 8) == NULL);
    while (n > 0)
        xp_shfree(blocks[--n]);
    void *all = xp_shmalloc(heap);
    XP_CHECK(all != NULL);
    xp_shfree(all);
}

static void fill(void *p, size_t len, int rank)
{
    unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        b[i] = byte_of(rank, i);
}

static int check(const void *p, size_t len, int rank, size_t from)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        if (b[i] != byte_of(rank, from + i))
            return 0;
    return 1;
}

/* Read [off, off+len) of the peer's buffer at raddr (filled by the peer). */
static void read_range(int peer, uint64_t raddr, size_t off, size_t len, unsigned char *tmp)
{
    struct iovec l[2] = {{tmp, len / 2}, {tmp + len / 2, len - len / 2}};
    struct iovec r = {(void *)(uintptr_t)(raddr + off), len};
    XP_CHECK_EQ(xp_tl_readv(peer, l, 2, &r, 1), XP_OK);
    XP_CHECK(check(tmp, len, peer, off));
}

static void test_rma(void)
{
    int me = xp_rank(), np = xp_size();
    unsigned char *heap = xp_shmalloc(BIG), *mal = malloc(BIG), *tmp = malloc(BIG);
    xp_shmheap_t *h = xp_shm_heap();
    XP_REQUIRE(heap && mal && tmp && h);
    unsigned char *end = h->base + h->size - 4096;
    fill(heap, BIG, me);
    fill(mal, BIG, me);
    addrs_t a = {(uintptr_t)heap, (uintptr_t)mal, (uintptr_t)end}, pa;
    XP_REQUIRE(xp_kv_put("test.heap", &a, sizeof a) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    for (int peer = 0; peer < np; peer++) {
        size_t len = sizeof pa;
        XP_REQUIRE(xp_kv_get(peer, "test.heap", &pa, &len) == XP_OK && len == sizeof pa);
        for (size_t s = 0; s <= BIG; s = s ? s * 4 : 1) {
            read_range(peer, pa.heap, 0, s, tmp);
            read_range(peer, pa.mal, 0, s, tmp);
            if (s > 3) {
                read_range(peer, pa.heap, s / 3, s - s / 3, tmp);
                read_range(peer, pa.mal, s / 3, s - s / 3, tmp);
            }
        }
        /* The heap's last page (never allocated: zeros). */
        struct iovec l = {tmp, 4096}, r = {(void *)(uintptr_t)pa.heap_end, 4096};
        memset(tmp, 1, 4096);
        XP_CHECK_EQ(xp_tl_readv(peer, &l, 1, &r, 1), XP_OK);
        XP_CHECK(tmp[0] == 0 && tmp[4095] == 0 && !memcmp(tmp, tmp + 1, 4095));
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    /* Writes: rank r writes its pattern into slice r of the next rank's heap block. */
    int peer = (me + 1) % np, from = (me + np - 1) % np;
    size_t slice = BIG / (size_t)np;
    size_t len = sizeof pa;
    XP_REQUIRE(xp_kv_get(peer, "test.heap", &pa, &len) == XP_OK);
    fill(tmp, slice, me);
    struct iovec l = {tmp, slice}, r = {(void *)(uintptr_t)(pa.heap + (size_t)me * slice), slice};
    XP_CHECK_EQ(xp_tl_writev(peer, &l, 1, &r, 1), XP_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK(check(heap + (size_t)from * slice, slice, from, 0));
    XP_REQUIRE(xp_barrier() == XP_OK);
    xp_shfree(heap);
    free(mal);
    free(tmp);
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_CHECK(xp_shmalloc(64) == NULL); /* no transport yet */
    XP_REQUIRE(xp_tl_init(on_packet, NULL) == XP_OK);
    if (!xp_shm_heap())
        XP_TEST_SKIP("no shared heap (XP_SHM_HEAP_SIZE=0 or no shm transport)");
    test_alloc_rules();
    XP_REQUIRE(xp_barrier() == XP_OK);
    test_rma();
    xp_tl_fini();
    XP_CHECK(xp_shmalloc(64) == NULL); /* gone with the transport */
    XP_REQUIRE(xp_finalize() == XP_OK);
    return xp_test_result();
}
