/*
 * test_fuzz_kv_codec - the launcher value decoder on arbitrary text: random
 * bytes, mutated valid encodings, every length modulo 4, capacities around
 * the exact size. Nothing may crash or write past `cap` (the output buffer
 * is a heap block of exactly cap bytes, so ASan sees any overrun); a
 * success returns the documented length, a rejection is XP_ERR_PROTOCOL or
 * XP_ERR_TRUNCATED and leaves *len alone. Also: encode/decode round trips
 * and wire keys that always fit their maximum length. Deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kv_codec.h"
#include "xp_fuzz.h"
#include "xp_test.h"
#include "xportals/xp.h"


static int in_alphabet(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Bytes a decoder of textlen characters must produce, or -1 if impossible. */
static long expected_len(size_t textlen)
{
    if (textlen % 4 == 1)
        return -1;
    return (long)(textlen / 4 * 3 + (textlen % 4 ? textlen % 4 - 1 : 0));
}

static void check_decode(const char *text, size_t textlen, size_t cap)
{
    /* The text itself without a terminator: the decoder is length-driven. */
    char *t = malloc(textlen ? textlen : 1);
    unsigned char *out = malloc(cap ? cap : 1);
    XP_REQUIRE(t && out);
    memcpy(t, text, textlen);
    size_t len = 0xdeadbeef;
    xp_status_t st = xp_kv_decode(t, textlen, out, cap, &len);
    long want = expected_len(textlen);
    int all_valid = 1;
    for (size_t i = 0; i < textlen; i++)
        all_valid &= in_alphabet(t[i]);
    if (st == XP_OK) {
        XP_CHECK(want >= 0 && all_valid);
        XP_CHECK_EQ(len, want);
        XP_CHECK(len <= cap);
    } else {
        XP_CHECK(st == XP_ERR_PROTOCOL || st == XP_ERR_TRUNCATED);
        XP_CHECK_EQ(len, 0xdeadbeef);
        if (st == XP_ERR_TRUNCATED)
            XP_CHECK(want > (long)cap);
        if (st == XP_ERR_PROTOCOL)
            XP_CHECK(want < 0 || !all_valid);
    }
    free(out);
    free(t);
}

static void round_trip(xp_rng_t *r)
{
    size_t n = xp_rng_below(r, 300);
    unsigned char *data = malloc(n ? n : 1), *back = malloc(n ? n : 1);
    size_t elen = xp_kv_encoded_len(n);
    char *text = malloc(elen + 1);
    XP_REQUIRE(data && back && text);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)xp_rng_next(r);
    xp_kv_encode(data, n, text);
    XP_CHECK_EQ(strlen(text), elen);
    size_t len = 0;
    XP_CHECK_EQ(xp_kv_decode(text, elen, back, n, &len), XP_OK);
    XP_CHECK_EQ(len, n);
    XP_CHECK(n == 0 || memcmp(data, back, n) == 0);
    if (n)
        XP_CHECK_EQ(xp_kv_decode(text, elen, back, n - 1, &len), XP_ERR_TRUNCATED);
    free(text);
    free(back);
    free(data);
}

static void wire_key(xp_rng_t *r)
{
    char key[XP_KV_MAX_KEY * 2 + 2];
    size_t kl = xp_rng_below(r, sizeof(key) - 1);
    for (size_t i = 0; i < kl; i++)
        key[i] = (char)(33 + xp_rng_below(r, 94));
    key[kl] = '\0';
    size_t maxlen = 32 + xp_rng_below(r, 100);
    char *out = malloc(maxlen + 1);
    XP_REQUIRE(out);
    int rank = xp_rng_below(r, 4) ? (int)xp_rng_below(r, 100000) : (int)(xp_rng_next(r) & 0x7fffffff);
    xp_kv_wire_key(rank, key, maxlen, out);
    XP_CHECK(strlen(out) <= maxlen);
    (void)xp_kv_key_ok(key);
    free(out);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100000;
    xp_rng_t r = { 0xc0dec0deu };
    char text[1200];
    /* Every short length, every capacity around the exact size. */
    for (size_t tl = 0; tl < 40; tl++) {
        memset(text, 'Q', tl);
        for (size_t cap = 0; cap < 35; cap++)
            check_decode(text, tl, cap);
    }
    for (int i = 0; i < rounds; i++) {
        size_t tl;
        if (xp_rng_below(&r, 2)) {
            /* valid encoding of random bytes, then a few mutations */
            unsigned char data[800];
            size_t n = xp_rng_below(&r, sizeof(data));
            for (size_t k = 0; k < n; k++)
                data[k] = (unsigned char)xp_rng_next(&r);
            xp_kv_encode(data, n, text);
            tl = strlen(text);
            int edits = (int)xp_rng_below(&r, 3);
            for (int e = 0; e < edits && tl; e++)
                text[xp_rng_below(&r, tl)] = (char)xp_rng_next(&r);
            if (xp_rng_below(&r, 4) == 0)
                tl = xp_rng_below(&r, tl + 1);
        } else {
            tl = xp_rng_below(&r, sizeof(text));
            for (size_t k = 0; k < tl; k++)
                text[k] = (char)xp_rng_next(&r);
        }
        long want = expected_len(tl);
        size_t cap = want < 0 ? xp_rng_below(&r, 1000) : (size_t)want;
        if (want >= 0 && xp_rng_below(&r, 3) == 0)
            cap = (size_t)want > 2 ? (size_t)want - 1 - xp_rng_below(&r, 2) : 0;
        check_decode(text, tl, cap);
        if (i % 8 == 0) {
            round_trip(&r);
            wire_key(&r);
        }
    }
    printf("%d rounds\n", rounds);
    return xp_test_result();
}
