/* The streaming copy (non-temporal stores, prefetch ahead) used for windows
 * large against the cache: the copier alone on random pieces of every
 * alignment, then pack / unpack windows of large-block types with the
 * threshold lowered to 4 KiB so that small buffers take that path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xp_test.h"
#include "xportals/dt.h"
#include "dt/dt_internal.h"

#define BUF (1u << 20)

static unsigned long long rng = 88172645463325252ull;
static size_t rnd(size_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (size_t)(rng % n) : 0;
}

static void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rnd(256);
}

/* Random pieces, each copied to the next free destination byte (as a pack
 * does) or to a random place: the stream must equal memcpy. */
static void test_pieces(void)
{
    unsigned char *src = malloc(BUF), *got = malloc(BUF), *want = malloc(BUF);
    XP_REQUIRE(src && got && want);
    fill(src, BUF);
    for (int round = 0; round < 200; round++) {
        memset(got, 0, BUF);
        memset(want, 0, BUF);
        dt_stream_t s = {.n = 0};
        size_t d = rnd(128), maxlen = round % 3 == 0 ? 64 : round % 3 == 1 ? 3000 : 40000;
        for (int k = 0; k < 100; k++) {
            size_t len = 1 + rnd(maxlen), so = rnd(BUF - len);
            if (d + len > BUF)
                break;
            xp_dt_stream_push(&s, (char *)got + d, (const char *)src + so, len);
            memcpy(want + d, src + so, len);
            d += len + (round % 2 ? rnd(100) : 0);
        }
        xp_dt_stream_flush(&s);
        XP_CHECK(s.n == 0 && s.queued == 0);
        XP_CHECK(memcmp(got, want, BUF) == 0);
    }
    free(src);
    free(got);
    free(want);
}

/* The packed stream of blocks (disp[i], len[i]) of src, by hand. */
static void ref_pack(const unsigned char *src, size_t nb, const ptrdiff_t *disp, const size_t *len,
                     unsigned char *out)
{
    for (size_t i = 0; i < nb; i++, out += len[i - 1])
        memcpy(out, src + disp[i], len[i]);
}

static void check_type(xp_dt_t t, size_t nb, const ptrdiff_t *disp, const size_t *len)
{
    size_t size = 0;
    XP_REQUIRE(xp_dt_size(t, &size) == XP_OK);
    unsigned char *src = malloc(BUF), *want = malloc(size), *got = malloc(size), *back = malloc(BUF);
    XP_REQUIRE(src && want && got && back);
    fill(src, BUF);
    ref_pack(src, nb, disp, len, want);
    for (int w = 0; w < 20; w++) {
        size_t off = w ? rnd(size) : 0, n = w ? rnd(size - off + 1) : size;
        memset(got, 0, size);
        XP_CHECK_EQ(xp_dt_pack(t, 1, src, got + off, off, n), XP_OK);
        XP_CHECK(memcmp(got + off, want + off, n) == 0);
        /* Unpack the same window into a copy of src with that window wiped. */
        memcpy(back, src, BUF);
        unsigned char *wiped = malloc(BUF);
        XP_REQUIRE(wiped);
        memcpy(wiped, src, BUF);
        size_t p = 0;
        for (size_t i = 0; i < nb; p += len[i], i++)
            for (size_t b = 0; b < len[i]; b++)
                if (p + b >= off && p + b < off + n)
                    wiped[disp[i] + (ptrdiff_t)b] = 0;
        XP_CHECK_EQ(xp_dt_unpack(t, 1, want + off, wiped, off, n), XP_OK);
        XP_CHECK(memcmp(wiped, back, BUF) == 0);
        free(wiped);
    }
    free(src);
    free(want);
    free(got);
    free(back);
}

/* A vector of 1000-byte blocks (unaligned lengths and starts) and a
 * triangle-like indexed type of shrinking blocks. */
static void test_types(void)
{
    enum { NB = 300 };
    ptrdiff_t disp[NB];
    size_t len[NB];
    xp_dt_t v, tri;
    XP_REQUIRE(xp_dt_hvector(NB, 1000, 3001, XP_DT_BYTE, &v) == XP_OK);
    XP_REQUIRE(xp_dt_commit(v) == XP_OK);
    for (size_t i = 0; i < NB; i++) {
        disp[i] = (ptrdiff_t)(i * 3001);
        len[i] = 1000;
    }
    check_type(v, NB, disp, len);
    xp_dt_free(&v);

    size_t bl[NB];
    ptrdiff_t d8[NB];
    for (size_t j = 0; j < NB; j++) {
        bl[j] = NB - j;
        d8[j] = (ptrdiff_t)(j * NB + j);
        disp[j] = d8[j] * 8;
        len[j] = bl[j] * 8;
    }
    XP_REQUIRE(xp_dt_indexed(NB, bl, d8, XP_DT_DOUBLE, &tri) == XP_OK);
    XP_REQUIRE(xp_dt_commit(tri) == XP_OK);
    check_type(tri, NB, disp, len);
    xp_dt_free(&tri);
}

int main(void)
{
    /* Before the configuration is first read: stream every window >= 4 KiB. */
    setenv("XP_DT_STREAM_MIN", "4096", 1);
    test_pieces();
    test_types();
    return xp_test_result();
}
