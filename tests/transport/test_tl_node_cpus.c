/*
 * test_tl_node_cpus - the CPUs the node's ranks share (xp_tl_node_cpus) are
 * the union of the local ranks' affinity masks, as each rank reads its own
 * after the launcher bound it, or XP_NODE_CPUS where set; and the node is
 * oversubscribed (xp_tl_oversubscribed) exactly when it runs more ranks.
 *
 * Each rank publishes its mask through the runtime's key-value store and
 * computes the union itself. Run bound (xprun: one CPU each, round the CPUs
 * of its mask), unbound (--bind-to none: every rank has xprun's mask),
 * under taskset -c 0 (all on CPU 0: 1 CPU, so 2 ranks oversubscribe it),
 * and with XP_NODE_CPUS=7.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/config.h"
#include "xp_test.h"
#include "xportals/xp.h"

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    (void)arg, (void)src, (void)pkt, (void)len;
}

/* This process's mask as XP_SHM_CPU_WORDS words. */
static void own_mask(uint64_t *w)
{
    cpu_set_t set;
    XP_REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
    for (int c = 0; c < XP_SHM_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            w[c / 64] |= 1ull << (c % 64);
}

int main(int argc, char **argv)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    uint64_t mine[XP_SHM_CPU_WORDS] = {0}, all[XP_SHM_CPU_WORDS] = {0};
    own_mask(mine);
    XP_REQUIRE(xp_kv_put("test_cpus", mine, sizeof mine) == XP_OK);
    XP_REQUIRE(xp_kv_fence() == XP_OK);
    for (int r = 0; r < xp_size(); r++) { /* (xprun: one node) */
        uint64_t theirs[XP_SHM_CPU_WORDS];
        size_t len = sizeof theirs;
        XP_REQUIRE(xp_kv_get(r, "test_cpus", theirs, &len) == XP_OK && len == sizeof theirs);
        for (int w = 0; w < XP_SHM_CPU_WORDS; w++)
            all[w] |= theirs[w];
    }
    long want = 0;
    for (int w = 0; w < XP_SHM_CPU_WORDS; w++)
        want += __builtin_popcountll(all[w]);
    if (xp_config()->node_cpus > 0)
        want = xp_config()->node_cpus;

    XP_REQUIRE(xp_tl_init(on_packet, NULL) == XP_OK);
    long got = xp_tl_node_cpus();
    printf("rank %d: %d local ranks, node CPUs %ld (expected %ld), oversubscribed %d\n",
           xp_rank(), xp_local_size(), got, want, xp_tl_oversubscribed());
    XP_CHECK_EQ(got, want);
    XP_CHECK_EQ(xp_tl_oversubscribed(), xp_local_size() > want);
    /* XP_NODE_CPUS wins over what a transport saw, which wins over online. */
    long set = xp_config()->node_cpus;
    XP_CHECK_EQ(xp_tl_node_cpus_seen(3), set > 0 ? set : 3);
    XP_CHECK_EQ(xp_tl_node_cpus_seen(0), set > 0 ? set : sysconf(_SC_NPROCESSORS_ONLN));

    XP_REQUIRE(xp_barrier() == XP_OK);
    xp_tl_fini();
    xp_finalize();
    return xp_test_result();
}
