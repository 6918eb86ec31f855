/* util/buddy: random alloc/free without overlap, full coalescing, exhaustion. */
#include <stdint.h>

#include "util/buddy.h"
#include "xp_test.h"

#define REGION (1u << 20)
#define MINB 64
#define MAXLIVE 2000

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Owner of each min block of the region (0 = free), to detect overlap. */
static uint32_t owner[REGION / MINB];

typedef struct live {
    uint64_t off;
    size_t len;
} live_t;

static int mark(uint64_t base, uint64_t off, size_t len, uint32_t id)
{
    int ok = 1;
    for (size_t i = (off - base) / MINB; i < (off - base + len) / MINB; i++) {
        if (id && owner[i])
            ok = 0;
        owner[i] = id;
    }
    return ok;
}

static void test_random(void)
{
    const uint64_t base = 1ull << 40; /* offsets need not start at 0 */
    xp_buddy_t b;
    XP_REQUIRE(xp_buddy_init(&b, base, REGION, MINB) == XP_OK);
    static live_t live[MAXLIVE];
    size_t nlive = 0, fails = 0;
    for (int round = 0; round < 50000; round++) {
        if (nlive < MAXLIVE && (nlive == 0 || rnd() % 100 < 55)) {
            /* Sizes 1 B .. 16 KiB, skewed small. */
            size_t len = 1 + rnd() % (rnd() % 8 == 0 ? 16384 : 512);
            uint64_t off;
            xp_status_t st = xp_buddy_alloc(&b, len, &off);
            if (st == XP_ERR_NO_RESOURCE) {
                fails++;
                continue;
            }
            XP_REQUIRE(st == XP_OK);
            size_t blk = xp_buddy_block_size(&b, off);
            XP_CHECK(blk >= len && blk < 2 * len + MINB);
            XP_CHECK_EQ((off - base) % blk, 0);
            XP_REQUIRE(off >= base && off + blk <= base + REGION);
            XP_CHECK(mark(base, off, blk, (uint32_t)round + 1));
            live[nlive++] = (live_t){off, blk};
        } else {
            size_t i = rnd() % nlive;
            mark(base, live[i].off, live[i].len, 0);
            XP_CHECK_EQ(xp_buddy_free(&b, live[i].off), XP_OK);
            live[i] = live[--nlive];
        }
        if (round % 5000 == 0) {
            size_t used = 0;
            for (size_t i = 0; i < nlive; i++)
                used += live[i].len;
            xp_buddy_stats_t s;
            xp_buddy_stats(&b, &s);
            XP_CHECK_EQ(s.free_bytes, REGION - used);
            XP_CHECK_EQ(s.nallocs, nlive);
            XP_CHECK(s.largest_free <= s.free_bytes);
        }
    }
    fprintf(stderr, "buddy: %zu allocations failed for lack of space\n", fails);
    while (nlive) {
        nlive--;
        XP_CHECK_EQ(xp_buddy_free(&b, live[nlive].off), XP_OK);
    }
    /* Everything merged back into one block. */
    xp_buddy_stats_t s;
    xp_buddy_stats(&b, &s);
    XP_CHECK_EQ(s.free_bytes, REGION);
    XP_CHECK_EQ(s.largest_free, REGION);
    XP_CHECK_EQ(s.nallocs, 0);
    uint64_t off;
    XP_CHECK_EQ(xp_buddy_alloc(&b, REGION, &off), XP_OK);
    XP_CHECK_EQ(off, base);
    XP_CHECK_EQ(xp_buddy_free(&b, off), XP_OK);
    xp_buddy_destroy(&b);
}

static void test_exhaustion_and_errors(void)
{
    xp_buddy_t b;
    uint64_t off, offs[64];
    XP_REQUIRE(xp_buddy_init(&b, 0, 64 * 64, 64) == XP_OK);
    for (int i = 0; i < 64; i++)
        XP_REQUIRE(xp_buddy_alloc(&b, 1, &offs[i]) == XP_OK);
    off = 12345;
    XP_CHECK_EQ(xp_buddy_alloc(&b, 1, &off), XP_ERR_NO_RESOURCE);
    XP_CHECK_EQ(off, 12345); /* untouched on failure */
    XP_CHECK_EQ(xp_buddy_alloc(&b, 0, &off), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_buddy_alloc(&b, 64 * 64 + 1, &off), XP_ERR_NO_RESOURCE);
    XP_CHECK_EQ(xp_buddy_alloc(&b, SIZE_MAX, &off), XP_ERR_NO_RESOURCE);
    /* Free every other block: 2 KiB free but no 128-byte block. */
    for (int i = 0; i < 64; i += 2)
        XP_CHECK_EQ(xp_buddy_free(&b, offs[i]), XP_OK);
    xp_buddy_stats_t s;
    xp_buddy_stats(&b, &s);
    XP_CHECK_EQ(s.free_bytes, 32 * 64);
    XP_CHECK_EQ(s.largest_free, 64);
    XP_CHECK_EQ(xp_buddy_alloc(&b, 65, &off), XP_ERR_NO_RESOURCE);
    /* Bad frees are errors, not corruption. */
    fprintf(stderr, "(the next 5 errors are expected)\n");
    XP_CHECK_EQ(xp_buddy_free(&b, offs[0]), XP_ERR_INVALID);      /* double free */
    XP_CHECK_EQ(xp_buddy_free(&b, offs[1] + 8), XP_ERR_INVALID);  /* inside a block */
    XP_CHECK_EQ(xp_buddy_free(&b, 64 * 64), XP_ERR_INVALID);      /* past the end */
    XP_CHECK_EQ(xp_buddy_free(&b, offs[1] + 64), XP_ERR_INVALID); /* a free neighbour */
    for (int i = 1; i < 64; i += 2)
        XP_CHECK_EQ(xp_buddy_free(&b, offs[i]), XP_OK);
    xp_buddy_stats(&b, &s);
    XP_CHECK_EQ(s.largest_free, 64 * 64);
    /* A free inside a bigger allocation is refused too. */
    XP_REQUIRE(xp_buddy_alloc(&b, 1000, &off) == XP_OK);
    XP_CHECK_EQ(xp_buddy_block_size(&b, off), 1024);
    XP_CHECK_EQ(xp_buddy_block_size(&b, off + 512), 0);
    XP_CHECK_EQ(xp_buddy_free(&b, off + 512), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_buddy_free(&b, off), XP_OK);
    xp_buddy_destroy(&b);

    XP_CHECK_EQ(xp_buddy_init(&b, 0, 1000, 64), XP_ERR_INVALID); /* not a multiple */
    XP_CHECK_EQ(xp_buddy_init(&b, 0, 4096, 48), XP_ERR_INVALID); /* not a power of two */
    XP_CHECK_EQ(xp_buddy_init(&b, 0, 0, 64), XP_ERR_INVALID);
}

static void test_odd_size(void)
{
    /* 5 blocks: the tree spans 8, the last 3 are never handed out. */
    xp_buddy_t b;
    uint64_t off, got[5];
    XP_REQUIRE(xp_buddy_init(&b, 100, 5 * 64, 64) == XP_OK);
    xp_buddy_stats_t s;
    xp_buddy_stats(&b, &s);
    XP_CHECK_EQ(s.free_bytes, 5 * 64);
    XP_CHECK_EQ(s.largest_free, 256);
    XP_CHECK_EQ(xp_buddy_alloc(&b, 512, &off), XP_ERR_NO_RESOURCE);
    XP_REQUIRE(xp_buddy_alloc(&b, 256, &got[0]) == XP_OK);
    XP_CHECK_EQ(got[0], 100);
    XP_REQUIRE(xp_buddy_alloc(&b, 64, &got[1]) == XP_OK);
    XP_CHECK_EQ(got[1], 100 + 256);
    XP_CHECK_EQ(xp_buddy_alloc(&b, 64, &off), XP_ERR_NO_RESOURCE);
    XP_CHECK_EQ(xp_buddy_free(&b, got[0]), XP_OK);
    XP_CHECK_EQ(xp_buddy_free(&b, got[1]), XP_OK);
    xp_buddy_stats(&b, &s);
    XP_CHECK_EQ(s.free_bytes, 5 * 64);
    xp_buddy_destroy(&b);
}

/* The tree a fresh allocator starts with, built node by node from the
 * definition in buddy.c (a wholly free node holds order + 1, a parent the
 * larger child's value otherwise), against the level-wise init. */
static void test_init_tree(void)
{
    static const size_t counts[] = { 1, 2, 3, 5, 7, 8, 9, 31, 33, 64, 100, 1000, 4097, 65535 };
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        xp_buddy_t b;
        size_t blocks = counts[c];
        XP_REQUIRE(xp_buddy_init(&b, 0, blocks * 64, 64) == XP_OK);
        uint8_t *want = calloc(2 * b.nleaves, 1);
        XP_REQUIRE(want);
        for (size_t i = 0; i < b.nleaves; i++)
            want[b.nleaves + i] = i < blocks;
        for (size_t i = b.nleaves - 1; i >= 1; i--) {
            uint8_t l = want[2 * i], r = want[2 * i + 1];
            unsigned whole = b.levels - (unsigned)(63 - __builtin_clzll(2 * i));
            want[i] = l == whole && r == whole ? (uint8_t)(whole + 1) : l > r ? l : r;
        }
        int same = 1;
        for (size_t i = 1; i < 2 * b.nleaves; i++)
            same &= b.tree[i] == want[i];
        XP_CHECK(same);
        free(want);
        /* And every block can be handed out once. */
        uint64_t off;
        size_t n = 0;
        while (xp_buddy_alloc(&b, 64, &off) == XP_OK)
            n++;
        XP_CHECK_EQ(n, blocks);
        xp_buddy_destroy(&b);
    }
}

int main(void)
{
    test_init_tree();
    test_random();
    test_exhaustion_and_errors();
    test_odd_size();
    return xp_test_result();
}
