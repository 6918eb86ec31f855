/*
 * A program started without a launcher is rank 0 of 1 and its key-value
 * store still works. With the argument "config-error" (and a bad XP_* value
 * in the environment) xp_init must refuse to start.
 */
#include <unistd.h>

#include "runtime/runtime.h"
#include "xp_test.h"
#include "xportals/xp.h"

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "config-error")) {
        XP_CHECK_EQ(xp_init(&argc, &argv), XP_ERR_CONFIG);
        XP_CHECK(!xp_initialized());
        return xp_test_result();
    }
    if (getenv("PMI_FD") || getenv("PMI_PORT") || getenv("PMIX_RANK"))
        XP_TEST_SKIP("started by a launcher; this test wants to run alone");
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_CHECK_STR(xp_bootstrap_name(), "singleton");
    XP_CHECK_EQ(xp_rank(), 0);
    XP_CHECK_EQ(xp_size(), 1);
    XP_CHECK_EQ(xp_local_rank(), 0);
    XP_CHECK_EQ(xp_local_size(), 1);
    XP_CHECK_EQ(xp_num_nodes(), 1);
    XP_CHECK_EQ(xp_node_of(0), 0);
    XP_CHECK_EQ(xp_runtime_pid_of(0), getpid());
    char want[32];
    snprintf(want, sizeof want, "s%d", (int)getpid());
    XP_CHECK_STR(xp_runtime_job_id(), want);

    unsigned char v[XP_KV_MAX_VALUE], got[XP_KV_MAX_VALUE];
    for (size_t i = 0; i < sizeof v; i++)
        v[i] = (unsigned char)(i * 7);
    XP_CHECK_EQ(xp_kv_put("big", v, sizeof v), XP_OK);
    XP_CHECK_EQ(xp_kv_put("big", v, 10), XP_OK); /* a later put replaces */
    XP_CHECK_EQ(xp_kv_fence(), XP_OK);
    size_t len = sizeof got;
    XP_CHECK_EQ(xp_kv_get(0, "big", got, &len), XP_OK);
    XP_CHECK_EQ(len, 10);
    XP_CHECK(memcmp(v, got, 10) == 0);
    len = sizeof got;
    XP_CHECK_EQ(xp_kv_get(0, "missing", got, &len), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(xp_kv_get(1, "big", got, &len), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_barrier(), XP_OK);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    /* And again: init after finalize starts afresh. */
    XP_CHECK_EQ(xp_init(NULL, NULL), XP_OK);
    XP_CHECK_EQ(xp_size(), 1);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    return xp_test_result();
}
