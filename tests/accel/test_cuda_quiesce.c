/* The CUDA agent's pause rule, without a GPU: the loader runs against a
 * stand-in plugin (fake_cuda/) that counts CUDA memory calls made while a
 * queue's persistent kernel "runs". Two agents, three queues, signals made
 * and freed, the application's nested xp_accel_cuda_pause/resume, a queue
 * destroyed while others run, everything destroyed: no such call may happen
 * while a kernel runs, every pause meets a running kernel and every resume a
 * paused one, and kernels run again after each bracket. */
#include <dlfcn.h>
#include <stdlib.h>

#include "fake_cuda/fake_cuda.h"
#include "xp_test.h"
#include "xportals/accel.h"

static void (*stats_fn)(fake_stats_t *);

static fake_stats_t stats(void)
{
    fake_stats_t s;
    stats_fn(&s);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        XP_TEST_SKIP("usage: test_cuda_quiesce FAKE_PLUGIN_DIR");
    setenv("XP_ACCEL_PLUGIN_DIR", argv[1], 1);
    XP_REQUIRE(xp_accel_cuda_available());
    char path[4096];
    snprintf(path, sizeof(path), "%s/libxpaccel_cuda.so", argv[1]);
    void *dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    XP_REQUIRE(dl != NULL);
    stats_fn = (void (*)(fake_stats_t *))dlsym(dl, "fake_cuda_stats");
    XP_REQUIRE(stats_fn != NULL);

    xp_agent_params_t p = {.kind = XP_AGENT_CUDA};
    xp_agent_t *a1, *a2;
    xp_queue_t *q1, *q2, *q3;
    XP_REQUIRE(xp_agent_create(&p, &a1) == XP_OK && xp_agent_create(&p, &a2) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(a1, 16, &q1) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(a1, 16, &q2) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(a2, 16, &q3) == XP_OK);
    XP_CHECK_EQ(stats().running, 3);

    xp_signal_t *s[4];
    for (int i = 0; i < 4; i++)
        XP_CHECK_EQ(xp_agent_signal_create(i % 2 ? a2 : a1, i, &s[i]), XP_OK);
    XP_CHECK_EQ(xp_signal_load(s[3]), 3);
    XP_CHECK_EQ(stats().running, 3);

    xp_accel_cuda_pause();
    xp_accel_cuda_pause();
    XP_CHECK_EQ(stats().running, 0);
    xp_signal_t *inner;
    XP_CHECK_EQ(xp_agent_signal_create(a1, 0, &inner), XP_OK); /* inside the bracket */
    xp_agent_signal_destroy(a1, inner);
    xp_accel_cuda_resume();
    XP_CHECK_EQ(stats().running, 0);
    xp_accel_cuda_resume();
    XP_CHECK_EQ(stats().running, 3);

    xp_queue_destroy(q2); /* stopped while q1 and q3 are paused */
    XP_CHECK_EQ(stats().running, 2);
    for (int i = 0; i < 4; i++)
        xp_agent_signal_destroy(i % 2 ? a2 : a1, s[i]);
    xp_agent_destroy(a1);
    XP_CHECK_EQ(stats().running, 1);
    xp_agent_destroy(a2);
    (void)q1;
    (void)q3;

    fake_stats_t st = stats();
    XP_CHECK_EQ(st.running, 0);
    XP_CHECK_EQ(st.violations, 0);
    XP_CHECK_EQ(st.bad_state, 0);
    XP_CHECK_EQ(st.starts, 3);
    XP_CHECK_EQ(st.stops, 3);
    XP_CHECK(st.pauses > 0);
    /* every paused kernel was relaunched, or stopped (each of the 3 was
     * paused with the others before its stop) */
    XP_CHECK_EQ(st.pauses, st.resumes + 3);
    return xp_test_result();
}
