/*
 * util/copy: xp_copy copies exactly n bytes for every size around its loop's
 * bounds and every relative alignment of source and destination, writing
 * nothing before or after the destination.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/copy.h"
#include "xp_test.h"

#define GUARD 64

static unsigned char byte_at(size_t i, unsigned seed)
{
    return (unsigned char)(i * 131u + (i >> 8) * 7u + seed);
}

/* Copy n bytes from src + soff to dst + doff and check them and the guards. */
static int copy_one(unsigned char *src, unsigned char *dst, size_t n, size_t soff, size_t doff,
                    unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        src[soff + i] = byte_at(i, seed);
    memset(dst, 0xa5, doff + n + GUARD);
    xp_copy(dst + doff, src + soff, n);
    for (size_t i = 0; i < doff; i++)
        if (dst[i] != 0xa5)
            return 0;
    for (size_t i = 0; i < n; i++)
        if (dst[doff + i] != byte_at(i, seed))
            return 0;
    for (size_t i = 0; i < GUARD; i++)
        if (dst[doff + n + i] != 0xa5)
            return 0;
    return 1;
}

/* Every relative alignment at sizes around both bounds and in between. */
static void test_sizes_alignments(void)
{
    static const size_t sizes[] = {0, 1, 127, 128, XP_COPY_LOOP_MIN - 1, XP_COPY_LOOP_MIN,
                                   XP_COPY_LOOP_MIN + 1, 2112, 4095, 4096, 4097, 65536 + 33,
                                   XP_COPY_LOOP_MAX - 1, XP_COPY_LOOP_MAX, XP_COPY_LOOP_MAX + 1};
    size_t cap = XP_COPY_LOOP_MAX + 2 * GUARD + 128;
    unsigned char *src = aligned_alloc(64, cap), *dst = aligned_alloc(64, cap);
    XP_REQUIRE(src && dst);
    unsigned seed = 1;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        /* Up to 8 KiB all 64 x 64 offsets, above every 7th of each. */
        size_t step = n > 8192 ? 7 : 1;
        for (size_t soff = 0; soff < 64; soff += step)
            for (size_t doff = 0; doff < 64; doff += step, seed++)
                if (!copy_one(src, dst, n, soff, doff, seed)) {
                    fprintf(stderr, "xp_copy of %zu bytes, src +%zu, dst +%zu: wrong\n", n,
                            soff, doff);
                    XP_CHECK(0);
                    goto out;
                }
    }
out:
    free(src);
    free(dst);
}

int main(void)
{
    test_sizes_alignments();
    return xp_test_result();
}
