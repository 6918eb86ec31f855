/*
 * test_tl_eager - the node's eager probe (transport/shm_eager.c) under
 * xprun: where XP_SHM_EAGER_MAX is auto and single copies are chosen
 * (XP_SHM_BOUNCE=off), every local rank takes the same verdict for every
 * peer, one of the probed sizes (32 KiB: a whole packet), or 4 KiB
 * where the node is oversubscribed (no probe, unless XP_SHM_EAGER_PROBE=on)
 * or XP_SHM_EAGER_PROBE=off. The setting, where given, wins without a
 * probe. MP_EAGER_ONECPU=1 (after xprun's binding): every
 * rank is pinned to the lowest CPU it may use, so the prober and its echo share one (the probe
 * must still end, in time, with a verdict). MP_EAGER_OFF_RANK=r: rank r
 * alone has XP_SHM_EAGER_PROBE=off. MP_EAGER_FAIL_ALLOC=1: the prober
 * cannot allocate its sources; it must still publish 4 KiB at once. =2:
 * the echo cannot allocate its buffer, answers the first ping with a
 * failure, and the prober gives 4 KiB. MP_EAGER_BLOCKS_RANK=r: rank r alone
 * uses bounce blocks (XP_SHM_BOUNCE=on: a whole packet, as where auto's
 * copy probe chooses blocks in one process); the others still agree. =3 (XP_SHM_BOUNCE=auto): the list of
 * bounce blocks cannot be allocated (xp_shm_bounce_init's or, after the
 * probe, xp_shm_bounce_mid's): no rank may then serve a block, nor crash
 * asking for one. MP_EAGER_LATE_PROBER=1: the prober's allocation takes
 * 200 ms, so its echo gives up waiting for the first ping (50 ms) and the
 * prober's round trip then goes unanswered: 4 KiB on both, in well under
 * the verdict's 2 s deadline.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/shm_internal.h"
#include "transport/shm_seg.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/config.h"
#include "xp_test.h"
#include "xp_test_kv.h"
#include "xportals/xp.h"

/* MP_EAGER_FAIL_ALLOC: this executable's aligned_alloc comes before
 * libc's, also for the transport linked into it, and refuses the prober's
 * one allocation (two sources of XP_SHM_PROBE_MAX bytes; 1) or the echo's
 * (XP_SHM_PROBE_MAX bytes; 2). */
static int fail_probe_alloc, late_prober;

void *aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    if ((fail_probe_alloc == 1 && size == 2 * (size_t)XP_SHM_PROBE_MAX) ||
        (fail_probe_alloc == 2 && size == XP_SHM_PROBE_MAX))
        return NULL;
    if (late_prober && size == 2 * (size_t)XP_SHM_PROBE_MAX)
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    return posix_memalign(&p, align, size) ? NULL : p;
}

/* MP_EAGER_FAIL_ALLOC=3: this executable's calloc refuses the bounce
 * blocks' list. (posix_memalign, which libc and the sanitizers pair with
 * free: gcc would make malloc + memset a call of calloc.) */
void *calloc(size_t n, size_t size)
{
    if ((fail_probe_alloc == 3 && n == XP_SHM_BOUNCE_LIST && size == sizeof(xp_shm_bounce_blk_t)) ||
        (size && n > SIZE_MAX / size))
        return NULL;
    size_t bytes = n * size;
    void *p = NULL;
    if (posix_memalign(&p, 16, bytes ? bytes : 1))
        return NULL;
    return memset(p, 0, bytes);
}

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    (void)arg, (void)src, (void)pkt, (void)len;
}

/* The lowest CPU the system lets us run on (not our affinity mask: xprun
 * binds each rank to its own CPU), the same for every rank. */
static void pin_to_first_cpu(void)
{
    for (int c = 0; c < CPU_SETSIZE; c++) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof set, &set) == 0)
            return;
    }
    XP_REQUIRE(!"no CPU to run on");
}

int main(int argc, char **argv)
{
    const char *one = getenv("MP_EAGER_ONECPU");
    if (one && atoi(one))
        pin_to_first_cpu();
    /* MP_EAGER_OFF_RANK=r: rank r alone runs with XP_SHM_EAGER_PROBE=off
     * (set before the configuration is read; the rank from xprun's PMI
     * environment): the others must neither wait long nor disagree. */
    const char *off = getenv("MP_EAGER_OFF_RANK"), *pmi_rank = getenv("PMI_RANK");
    const char *fail = getenv("MP_EAGER_FAIL_ALLOC");
    const char *late = getenv("MP_EAGER_LATE_PROBER");
    fail_probe_alloc = fail ? atoi(fail) : 0;
    late_prober = late && atoi(late);
    int no_list = fail_probe_alloc == 3;
    int mixed = (off && pmi_rank) || fail_probe_alloc == 1 || fail_probe_alloc == 2 || late_prober;
    if (off && pmi_rank && !strcmp(off, pmi_rank))
        setenv("XP_SHM_EAGER_PROBE", "off", 1);
    /* MP_EAGER_BLOCKS_RANK=r: rank r alone stages in bounce blocks, as
     * when auto's copy probe chooses them in one process only. */
    const char *blocks = getenv("MP_EAGER_BLOCKS_RANK");
    if (blocks && pmi_rank && !strcmp(blocks, pmi_rank))
        setenv("XP_SHM_BOUNCE", "on", 1);
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    uint64_t t0 = xp_time_ns();
    XP_REQUIRE(xp_tl_init(on_packet, NULL) == XP_OK);
    double open_ms = (double)(xp_time_ns() - t0) / 1e6;
    size_t set = xp_config()->shm_eager_max, verdict = 0;
    int peers = 0;
    for (int r = 0; r < xp_size(); r++) {
        const xp_tl_route_t *rt = xp_tl_route(r);
        if (r == xp_rank() || !rt || !(xp_tl_caps(r) & XP_TL_CAP_RMA))
            continue;
        size_t e = rt->eager_max;
        if (!verdict)
            verdict = e;
        XP_CHECK_EQ(e, verdict); /* one verdict for every peer */
        if (e == SIZE_MAX) {
            /* Bounce blocks here: XP_SHM_BOUNCE=on, or auto and this
             * process's copy probe chose them (each process times its own,
             * so ranks can differ): a whole packet, whatever the node's
             * verdict (which is for single copies). */
            XP_CHECK(xp_config()->shm_bounce != XP_SHM_BOUNCE_OFF);
            XP_CHECK_EQ(xp_config()->shm_eager_max, (size_t)0);
            if (!no_list)
                XP_CHECK(xp_tl_bounce_max(r) > 0);
        }
        if (no_list) { /* blocks off; puts by whatever the probe chose */
            XP_CHECK_EQ(xp_tl_bounce_max(r), (size_t)0);
            XP_CHECK(xp_tl_bounce_alloc(r, 65536) == NULL);
        } else if (set)
            XP_CHECK_EQ(e, set);
        else if (mixed) /* the prober publishes 4 KiB, or times out its echo */
            XP_CHECK_EQ(e, (size_t)XP_SHM_AUTO_EAGER_MAX);
        else if (xp_config()->shm_eager_probe == XP_SHM_PROBE_OFF ||
                 (xp_config()->shm_eager_probe == XP_SHM_PROBE_AUTO && xp_tl_oversubscribed()))
            XP_CHECK_EQ(e, (size_t)XP_SHM_AUTO_EAGER_MAX);
        else if (e != SIZE_MAX)
            XP_CHECK(e == 4096 || e == 8192 || e == 16384 || e == 32768);
        peers++;
    }
    fprintf(stderr, "rank %d: eager limit %zu for %d peers (transport open %.1f ms)\n",
            xp_rank(), verdict, peers, open_ms);
    if (mixed)
        XP_CHECK(open_ms < 1000); /* not the verdict's 2 s deadline */
    if (late_prober) /* the prober's 200 ms, then its unanswered ping's 50 */
        XP_CHECK(open_ms >= 200);
    /* The same verdict on every rank of the node that took one (xprun: one
     * node); 0: none (no peer, or bounce blocks chosen here). */
    size_t took = peers && verdict != SIZE_MAX ? verdict : 0;
    for (int from = 0; from < xp_size(); from++) {
        char key[32];
        snprintf(key, sizeof key, "eager.verdict.%d", from);
        size_t theirs = xp_test_rank_size(from, key, took);
        if (took && theirs)
            XP_CHECK_EQ(theirs, took);
    }
    xp_tl_fini();
    xp_finalize();
    return xp_test_result();
}
