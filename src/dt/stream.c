/* Streaming copies for packs and unpacks much larger than the cache.
 *
 * Why: on the development VM (AMD EPYC, 32 MiB L3 per CCX) a 2048 x 16 KiB
 * gather with plain stores ran at ~17-20 GB/s while one 32 MiB memcpy ran at
 * ~20-23 GB/s and a non-temporal copy of the same 32 MiB at ~28-30 GB/s:
 * glibc takes its non-temporal path only above 288 MiB here (it sizes the
 * L3 as 384 MiB), so memcpy pays a read-for-ownership of every destination
 * line; and the hardware prefetcher restarts at every block of a strided
 * source. The stream fixes both: non-temporal stores of whole destination
 * lines, and a software prefetch that runs a fixed distance ahead in the
 * packed stream across block boundaries (8-16 KiB measured best; 4 KiB and
 * 32 KiB were slower).
 *
 * A destination line is written either entirely by non-temporal stores or
 * entirely by plain stores: pieces split at 64-byte destination boundaries,
 * their unaligned heads and tails are plain stores. Mixing both kinds of
 * store in one line made a triangle pack twice slower. */
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dt/dt_internal.h"

#define LINE 64
#define CHUNK 1024  /* destination-aligned unit of queueing and prefetch */
#define AHEAD 8192  /* bytes prefetched ahead of the copy */

/* Plain stores for the unaligned head and tail, streaming stores between. */
static void nt_copy(char *dst, const char *src, size_t n)
{
#ifdef __SSE2__
    size_t head = (LINE - ((uintptr_t)dst & (LINE - 1))) & (LINE - 1);
    if (head >= n) {
        memcpy(dst, src, n);
        return;
    }
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t body = n & ~(size_t)(LINE - 1);
    for (size_t i = 0; i < body; i += LINE) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + body, src + body, n - body);
#else
    memcpy(dst, src, n);
#endif
}

static void pop(dt_stream_t *s)
{
    const dt_piece_t *p = &s->ring[s->head];
    nt_copy(p->dst, p->src, p->len);
    s->queued -= p->len;
    s->head = (s->head + 1) % DT_STREAM_RING;
    s->n--;
}

void xp_dt_stream_push(dt_stream_t *s, char *dst, const char *src, size_t len)
{
    while (len) {
        size_t c = CHUNK - ((uintptr_t)dst & (CHUNK - 1));
        if (c > len)
            c = len;
        for (size_t o = 0; o < c; o += LINE)
            __builtin_prefetch(src + o, 0, 3);
        if (s->n == DT_STREAM_RING)
            pop(s);
        s->ring[(s->head + s->n) % DT_STREAM_RING] = (dt_piece_t){src, dst, c};
        s->n++;
        s->queued += c;
        /* Copy what lies far enough behind the prefetch front. */
        while (s->n && s->queued - s->ring[s->head].len >= AHEAD)
            pop(s);
        dst += c;
        src += c;
        len -= c;
    }
}

void xp_dt_stream_flush(dt_stream_t *s)
{
    while (s->n)
        pop(s);
#ifdef __SSE2__
    /* Streaming stores are weakly ordered: make them visible before the
     * caller publishes the buffer. */
    _mm_sfence();
#endif
}

size_t xp_dt_llc_bytes(void)
{
    /* sysfs, not sysconf: glibc reports the L3 of the whole package here
     * (384 MiB), the cache one core actually shares is the CCX's (32 MiB). */
    size_t bytes = 0;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f) {
        unsigned long v;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1)
            bytes = unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
        fclose(f);
    }
    return bytes ? bytes : (size_t)32 << 20;
}
