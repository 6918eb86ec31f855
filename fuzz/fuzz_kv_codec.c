/* libFuzzer harness: the launcher value decoder. The first byte picks the
 * output capacity relative to the decoded size; the output is an exact-size
 * heap block, so a write past `cap` is an ASan error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kv_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t textlen = size - 1;
    size_t want = textlen / 4 * 3 + (textlen % 4 ? textlen % 4 - 1 : 0);
    size_t cap = data[0] & 0x80 ? want : (want > (size_t)(data[0] & 3) ? want - (data[0] & 3) : 0);
    char *text = malloc(textlen ? textlen : 1);
    unsigned char *out = malloc(cap ? cap : 1);
    if (text && out) {
        memcpy(text, data + 1, textlen);
        size_t len = 0;
        if (xp_kv_decode(text, textlen, out, cap, &len) == XP_OK && len > cap)
            abort();
        /* Round trip of the same bytes. */
        char *enc = malloc(xp_kv_encoded_len(textlen) + 1);
        unsigned char *back = malloc(textlen ? textlen : 1);
        if (enc && back) {
            xp_kv_encode(text, textlen, enc);
            if (xp_kv_decode(enc, strlen(enc), back, textlen, &len) != XP_OK || len != textlen ||
                (textlen && memcmp(back, text, textlen)))
                abort();
        }
        free(back);
        free(enc);
    }
    free(out);
    free(text);
    return 0;
}
