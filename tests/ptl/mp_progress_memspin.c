/*
 * mp_progress_memspin - the OpenSHMEM pattern "put, then spin on a flag in
 * memory" (shmem_put + shmem_wait_until): both ranks wait for the peer's put
 * by reading their own memory, with no library call, so only the progress
 * thread handles the puts. It shares its CPU with the spinning application
 * thread (xprun binds a rank's threads to one), and must give that CPU back
 * as soon as it has handled the packet: a progress thread that spun
 * XP_SPIN_COUNT looks before each sleep used ~140 us of CPU per message on
 * the dev VM (77-87 us per one-way message, p99 2 ms), against ~5-10.
 *
 * Checks: every round trip completes with the value sent, and the CPU time
 * of rank 1's threads other than the main thread (the progress thread) stays
 * under BOUND_US per message: the median of 10 chunks of 200 round trips, in
 * the best of 3 such passes. CPU time, not wall time, a median and the best
 * pass, so a loaded machine does not fail it: the spin this guards against
 * costs every pass, a neighbour's load only some. A sleep and wake-up costs
 * the thread 22-33 us of CPU per message on the AMD EPYC dev VM (8-11 on the
 * Intel VM, 32-44 on the Zen 3 VM of round 35, 37-49 there under ASan, and
 * one ASan run under -j2 read 61.8 on a Zen 5 VM), while the spin costs
 * ~100-114 us on the dev VM (98.5 on the Intel VM, 150-173 on the Zen 3 VM,
 * 176-258 there under ASan). Beside the ASan suite under -j2 there, single
 * passes read 43-80 us and the best of 3 43-57. Thread progress only;
 * skipped where the progress thread may have a CPU of its own (more than one
 * CPU in this rank's mask and two per local rank: there it spins, progress.c)
 * and under TSan (its handler costs alone approach the bound). On a node with
 * fewer CPUs than ranks it spins ~1-2 us after each packet (progress.c), still
 * far under the bound.
 */

#include <portals4.h>
#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress_pair.h"

#define PT 6
#define ROUNDS 2000
#define CHUNKS 10
#define BOUND_US 75.0
#define PASSES 3

/* CPU seconds used so far by the threads of this process other than the
 * caller: Linux thread CPU clocks (the clockid glibc's
 * pthread_getcpuclockid makes from a thread id). */
static double other_threads_cpu_s(void)
{
    double sum = 0;
    pid_t self = (pid_t)gettid();
    DIR *d = opendir("/proc/self/task");
    XP_REQUIRE(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u); /* per thread, SCHED */
        struct timespec ts;
        if (clock_gettime(clk, &ts) == 0)
            sum += (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    closedir(d);
    return sum;
}

static int spare_cpu_likely(void)
{
    cpu_set_t set;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2 &&
           (long)xp_local_size() * 2 <= ncpu;
}

/* ROUNDS round trips from *i on (both ranks): returns, on rank 1, the
 * median over CHUNKS chunks of the other threads' CPU time per message. Each
 * rank checks its flag right after its wait: once it has put its answer,
 * the peer's next put may land at once. */
static double ping_pong(ptl_handle_md_t mdh, ptl_process_t peer, ptl_pt_index_t pt, int me,
                        volatile uint64_t *flag, uint64_t *src, uint64_t *i)
{
    uint64_t per_msg_ns[CHUNKS];
    for (int c = 0; c < CHUNKS; c++) {
        double cpu0 = other_threads_cpu_s();
        for (uint64_t end = *i + ROUNDS / CHUNKS; *i < end; (*i)++) {
            if (me == 1) {
                while (*flag < *i) /* rank 0's put of i */
                    ;
                XP_CHECK_EQ(*flag, *i);
            }
            *src = *i;
            XP_REQUIRE(PtlPut(mdh, 0, sizeof *src, PTL_NO_ACK_REQ, peer, pt, 0, 0, NULL, 0) ==
                       PTL_OK);
            if (me == 0) {
                while (*flag < *i) /* rank 1's answer */
                    ;
                XP_CHECK_EQ(*flag, *i);
            }
        }
        per_msg_ns[c] = (uint64_t)((other_threads_cpu_s() - cpu0) * 1e9 / (ROUNDS / CHUNKS));
    }
    return xp_test_median_u64(per_msg_ns, CHUNKS) / 1e3; /* (sorts) */
}

int main(void)
{
    if (XP_TEST_TSAN)
        XP_TEST_SKIP("the CPU bound is not meaningful under TSan");
    int me = xp_test_progress_pair_init();
    if (spare_cpu_likely())
        XP_TEST_SKIP("the progress thread may have a CPU of its own here (it spins then)");
    ptl_pt_index_t pt;
    ptl_handle_ni_t ni = xp_test_pair_ni(PT, &pt);
    static volatile uint64_t flag;
    static uint64_t src;
    ptl_le_t le = {.start = (void *)&flag, .length = sizeof flag, .ct_handle = PTL_CT_NONE,
                   .uid = PTL_UID_ANY, .options = PTL_LE_OP_PUT};
    ptl_handle_le_t leh;
    XP_REQUIRE(PtlLEAppend(ni, pt, &le, PTL_PRIORITY_LIST, NULL, &leh) == PTL_OK);
    /* VOLATILE: src is rewritten as soon as each PtlPut returns. */
    ptl_md_t md = {.start = &src, .length = sizeof src, .options = PTL_MD_VOLATILE,
                   .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t mdh;
    XP_REQUIRE(PtlMDBind(ni, &md, &mdh) == PTL_OK);
    XP_REQUIRE(xp_barrier() == XP_OK);

    ptl_process_t peer = {.rank = (ptl_rank_t)(1 - me)};
    double best = 1e30;
    for (uint64_t pass = 0, i = 1; pass < PASSES; pass++) {
        double median = ping_pong(mdh, peer, pt, me, &flag, &src, &i);
        if (me == 1)
            printf("rank 1: pass %d: progress thread CPU per message, median of %d chunks "
                   "%.2f us (bound %.0f)\n", (int)pass, CHUNKS, median, BOUND_US);
        best = median < best ? median : best;
    }
    if (me == 1)
        XP_CHECK(best < BOUND_US);
    XP_REQUIRE(xp_barrier() == XP_OK);
    XP_CHECK_EQ(PtlMDRelease(mdh), PTL_OK);
    XP_CHECK_EQ(PtlLEUnlink(leh), PTL_OK);
    XP_CHECK_EQ(PtlPTFree(ni, pt), PTL_OK);
    XP_CHECK_EQ(PtlNIFini(ni), PTL_OK);
    PtlFini();
    return xp_test_result();
}
