/*
 * runtime/kv_codec.h - how binary key-value pairs travel over text launchers.
 *
 * PMI-1 values are printable tokens without spaces or '=', and launchers cap
 * key and value lengths (Hydra: keys < 64, values < 1024). Values are
 * therefore encoded with a 64-letter alphabet (A-Z a-z 0-9 - _, no padding)
 * and keys are prefixed with the publishing rank; a key too long for the
 * launcher is replaced by a hash of itself.
 */
#ifndef XP_RUNTIME_KV_CODEC_H
#define XP_RUNTIME_KV_CODEC_H

#include <stddef.h>
#include "xportals/status.h"

/* Characters needed to encode n bytes (without the terminating NUL). */
size_t xp_kv_encoded_len(size_t n);
/* Encode n bytes into out, which holds xp_kv_encoded_len(n) + 1 chars. */
void xp_kv_encode(const void *data, size_t n, char *out);
/* Decode textlen characters into out (capacity cap); *len = bytes written.
 * XP_ERR_PROTOCOL for a character outside the alphabet or an impossible
 * length, XP_ERR_TRUNCATED if cap is too small. */
xp_status_t xp_kv_decode(const char *text, size_t textlen, void *out, size_t cap, size_t *len);
/* The launcher key under which `rank` publishes `key`: "<rank>/<key>", or
 * "<rank>/#<hash>" when that would be longer than maxlen characters.
 * out must hold maxlen + 1 characters (maxlen >= 32). */
void xp_kv_wire_key(int rank, const char *key, size_t maxlen, char *out);
/* 1 if key is a valid xp_kv key: 1..XP_KV_MAX_KEY printable characters,
 * no space and no '='. */
int xp_kv_key_ok(const char *key);

#endif
