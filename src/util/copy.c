/*
 * util/copy.c - xp_copy's vector loop (see copy.h for why it exists).
 */
#include "util/copy.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

typedef char xp_v32 __attribute__((vector_size(32)));

/* Unaligned 32-byte load and store (vmovdqu), aliasing anything. */
#define LOAD32(p) ({ xp_v32 v_; __builtin_memcpy(&v_, (p), 32); v_; })
#define STORE32(p, v) do { xp_v32 w_ = (v); __builtin_memcpy((p), &w_, 32); } while (0)

/* n >= 128: the first and last 64 bytes are loaded first and stored last
 * (unaligned); in between, loads from wherever the source lies and stores
 * to 32-byte aligned addresses, four words per turn. The stores overlap
 * where the head and tail meet the aligned part; they write the same
 * bytes. */
__attribute__((target("avx2"))) static void copy_avx2(unsigned char *d, const unsigned char *s,
                                                      size_t n)
{
    unsigned char *end = d + n;
    xp_v32 h0 = LOAD32(s), h1 = LOAD32(s + 32);
    xp_v32 t0 = LOAD32(s + n - 64), t1 = LOAD32(s + n - 32);
    size_t skip = 32 - ((uintptr_t)d & 31);
    unsigned char *a = d + skip;
    const unsigned char *b = s + skip;
    for (; a + 128 <= end; a += 128, b += 128) {
        xp_v32 w0 = LOAD32(b), w1 = LOAD32(b + 32), w2 = LOAD32(b + 64), w3 = LOAD32(b + 96);
        __builtin_memcpy(__builtin_assume_aligned(a, 32), &w0, 32);
        __builtin_memcpy(__builtin_assume_aligned(a + 32, 32), &w1, 32);
        __builtin_memcpy(__builtin_assume_aligned(a + 64, 32), &w2, 32);
        __builtin_memcpy(__builtin_assume_aligned(a + 96, 32), &w3, 32);
    }
    for (; a + 32 <= end; a += 32, b += 32)
        STORE32(a, LOAD32(b));
    STORE32(d, h0);
    STORE32(d + 32, h1);
    STORE32(end - 64, t0);
    STORE32(end - 32, t1);
}

void xp_copy_loop(void *dst, const void *src, size_t n)
{
    /* (A CPU with the slow `rep movsb` has AVX2; one without it keeps
     * glibc's copy.) */
    if (__builtin_expect(n >= 128, 1) && __builtin_cpu_supports("avx2"))
        copy_avx2(dst, src, n);
    else
        memcpy(dst, src, n);
}

#else

void xp_copy_loop(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

#endif
