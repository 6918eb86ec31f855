/*
 * tests/ptl/test_offsets.h - where operation k of a batch of large
 * transfers lands (mp_bigcopy, mp_bounce): disjoint ranges at odd offsets,
 * the local one shifted from the remote one, so that an offset mix-up or an
 * overlap shows in the checked bytes.
 */
#ifndef XP_TEST_OFFSETS_H
#define XP_TEST_OFFSETS_H

#include <stddef.h>

/* Remote offset of operation k, given the batch's sizes. */
static inline size_t xp_test_roff(const size_t *sizes, int k)
{
    size_t off = 4096 + 3;
    for (int i = 0; i < k; i++)
        off += sizes[i] + 4096 + 1;
    return off;
}

/* Local offset of operation k. */
static inline size_t xp_test_loff(const size_t *sizes, int k)
{
    return xp_test_roff(sizes, k) + 1000 + (size_t)k;
}

#endif
