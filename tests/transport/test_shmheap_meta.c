/*
 * test_shmheap_meta - the heap segment's meta bytes (transport/shmheap.h):
 * XP_SHMHEAP_META bytes behind the allocator's `size`, shared by every
 * mapping and never admitted by a data address check; an attach that finds
 * a segment of another length (e.g. one made without them) is refused.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/shmheap.h"
#include "xp_test.h"

#define SIZE (1u << 20)

int main(void)
{
    char name[64];
    xp_shmheap_t own, peer, bad;
    snprintf(name, sizeof name, "/xp-test-meta-%d", (int)getpid());
    XP_REQUIRE(xp_shmheap_create(name, SIZE, &own) == XP_OK);
    XP_CHECK(own.meta == own.base + SIZE);
    /* The allocator hands out nothing in the meta bytes. */
    void *p = xp_shmheap_alloc(&own, SIZE);
    XP_CHECK(p == own.base);
    XP_CHECK(xp_shmheap_alloc(&own, 1) == NULL);
    XP_CHECK(!xp_shmheap_in((uintptr_t)own.base, own.size, (uintptr_t)own.meta, 1));
    XP_CHECK(xp_shmheap_in((uintptr_t)own.base, own.size, (uintptr_t)own.base + SIZE - 8, 8));
    /* A second mapping sees the owner's meta bytes, and the other way. */
    XP_REQUIRE(xp_shmheap_attach(name, SIZE, &peer) == XP_OK);
    XP_CHECK(peer.meta == peer.base + SIZE);
    memcpy(own.meta, "direct", 7);
    XP_CHECK(memcmp(peer.meta, "direct", 7) == 0);
    peer.meta[XP_SHMHEAP_META - 1] = 0x5a;
    XP_CHECK_EQ(own.meta[XP_SHMHEAP_META - 1], 0x5a);
    /* The size a peer publishes is the allocator's: one that counts the
     * meta bytes in (or a segment without them) does not attach. */
    XP_CHECK_EQ(xp_shmheap_attach(name, SIZE + XP_SHMHEAP_META, &bad), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_shmheap_attach(name, SIZE - XP_SHMHEAP_META, &bad), XP_ERR_PROTOCOL);
    xp_shmheap_close(&peer);
    XP_CHECK(xp_shmheap_free(&own, p) == XP_OK);
    xp_shmheap_close(&own);
    return xp_test_result();
}
