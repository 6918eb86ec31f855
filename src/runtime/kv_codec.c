/* Encoding of binary key-value pairs for text launchers; see kv_codec.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/kv_codec.h"
#include "xportals/xp.h"
#include "util/hash.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int letter_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

size_t xp_kv_encoded_len(size_t n)
{
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

void xp_kv_encode(const void *data, size_t n, char *out)
{
    const uint8_t *p = data;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16;
        size_t take = n - i < 3 ? n - i : 3;
        if (take > 1)
            w |= (uint32_t)p[i + 1] << 8;
        if (take > 2)
            w |= p[i + 2];
        for (size_t k = 0; k < take + 1; k++)
            out[o++] = alphabet[(w >> (18 - 6 * k)) & 63];
    }
    out[o] = '\0';
}

xp_status_t xp_kv_decode(const char *text, size_t textlen, void *out, size_t cap, size_t *len)
{
    if (textlen % 4 == 1)
        return XP_ERR_PROTOCOL;
    size_t n = textlen / 4 * 3 + (textlen % 4 ? textlen % 4 - 1 : 0);
    if (n > cap)
        return XP_ERR_TRUNCATED;
    uint8_t *p = out;
    size_t o = 0;
    for (size_t i = 0; i < textlen; i += 4) {
        size_t take = textlen - i < 4 ? textlen - i : 4;
        uint32_t w = 0;
        for (size_t k = 0; k < 4; k++) {
            int v = k < take ? letter_value(text[i + k]) : 0;
            if (v < 0)
                return XP_ERR_PROTOCOL;
            w = w << 6 | (uint32_t)v;
        }
        for (size_t k = 0; k + 1 < take; k++)
            p[o++] = (uint8_t)(w >> (16 - 8 * k));
    }
    *len = n;
    return XP_OK;
}

void xp_kv_wire_key(int rank, const char *key, size_t maxlen, char *out)
{
    int n = snprintf(out, maxlen + 1, "%d/%s", rank, key);
    if (n < 0 || (size_t)n > maxlen)
        snprintf(out, maxlen + 1, "%d/#%016llx", rank, (unsigned long long)xp_hash_string(key));
}

int xp_kv_key_ok(const char *key)
{
    if (!key || !*key || strlen(key) > XP_KV_MAX_KEY)
        return 0;
    for (; *key; key++) {
        unsigned char c = (unsigned char)*key;
        if (c <= ' ' || c >= 127 || c == '=')
            return 0;
    }
    return 1;
}
