/*
 * Multi-process test of the runtime under a launcher (xprun): identity,
 * binary key-value exchange up to XP_KV_MAX_VALUE with keys up to
 * XP_KV_MAX_KEY characters, bad arguments, barriers, reference counting.
 */
#include <stdint.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "xp_test.h"
#include "xportals/xp.h"

/* Deterministic bytes that differ per rank, key and position. */
static void fill(unsigned char *buf, size_t n, int rank, int salt)
{
    uint32_t x = (uint32_t)rank * 2654435761u + (uint32_t)salt * 40503u + 7u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (unsigned char)(x >> 24);
    }
}

static void long_key(char *key, int salt)
{
    memset(key, 'a' + salt % 26, XP_KV_MAX_KEY);
    key[XP_KV_MAX_KEY] = '\0';
}

static void check_identity(void)
{
    int rank = xp_rank(), size = xp_size();
    XP_REQUIRE(rank >= 0 && rank < size);
    XP_CHECK_STR(xp_bootstrap_name(), "pmi1");
    XP_CHECK_EQ(xp_num_nodes(), 1);
    XP_CHECK_EQ(xp_node_id(), 0);
    XP_CHECK_EQ(xp_local_size(), size);
    XP_CHECK_EQ(xp_local_rank(), rank);
    XP_CHECK_EQ(xp_node_of(size - 1), 0);
    XP_CHECK_EQ(xp_node_of(size), -1);
    XP_CHECK_EQ(xp_node_of(-1), -1);
    XP_CHECK_EQ(xp_runtime_pid_of(rank), getpid());
    XP_CHECK_EQ(xp_runtime_pid_of(size), -1);
    XP_CHECK(strlen(xp_runtime_job_id()) > 0 && strlen(xp_runtime_job_id()) <= 48);
    XP_CHECK(strlen(xp_runtime_hostname()) > 0);
}

static void check_bad_arguments(void)
{
    unsigned char big[XP_KV_MAX_VALUE + 1] = {0};
    char buf[8];
    size_t len = sizeof buf;
    XP_CHECK_EQ(xp_kv_put("x", big, sizeof big), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_put("has space", "v", 1), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_put("has=eq", "v", 1), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_put(NULL, "v", 1), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_put("", "v", 1), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_put("nullvalue", NULL, 3), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_get(xp_size(), "x", buf, &len), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_get(-1, "x", buf, &len), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_get(0, "x", buf, NULL), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_kv_get(0, "never-put", buf, &len), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(len, sizeof buf);
}

static void exchange(int round)
{
    int rank = xp_rank(), size = xp_size();
    unsigned char big[XP_KV_MAX_VALUE], got[XP_KV_MAX_VALUE];
    char key[XP_KV_MAX_KEY + 1];
    fill(big, sizeof big, rank, round);
    long_key(key, round);
    XP_CHECK_EQ(xp_kv_put(key, big, sizeof big), XP_OK);
    char small[32];
    snprintf(small, sizeof small, "r%d-round%d", rank, round);
    char skey[24]; /* "small" and any int */
    snprintf(skey, sizeof skey, "small%d", round);
    XP_CHECK_EQ(xp_kv_put(skey, small, strlen(small) + 1), XP_OK);
    XP_CHECK_EQ(xp_kv_put(round ? "empty1" : "empty0", NULL, 0), XP_OK);
    XP_CHECK_EQ(xp_kv_fence(), XP_OK);
    for (int r = 0; r < size; r++) {
        unsigned char want[XP_KV_MAX_VALUE];
        size_t len = sizeof got;
        fill(want, sizeof want, r, round);
        XP_CHECK_EQ(xp_kv_get(r, key, got, &len), XP_OK);
        XP_CHECK_EQ(len, sizeof got);
        XP_CHECK(memcmp(want, got, sizeof got) == 0);
        char s[32], expect[32];
        len = sizeof s;
        snprintf(expect, sizeof expect, "r%d-round%d", r, round);
        XP_CHECK_EQ(xp_kv_get(r, skey, s, &len), XP_OK);
        XP_CHECK_EQ(len, strlen(expect) + 1);
        XP_CHECK_STR(s, expect);
        len = 4;
        XP_CHECK_EQ(xp_kv_get(r, skey, s, &len), XP_ERR_TRUNCATED);
        XP_CHECK_EQ(len, 4);
        len = sizeof s;
        XP_CHECK_EQ(xp_kv_get(r, round ? "empty1" : "empty0", s, &len), XP_OK);
        XP_CHECK_EQ(len, 0);
    }
    XP_CHECK_EQ(xp_barrier(), XP_OK);
}

int main(int argc, char **argv)
{
    XP_CHECK_EQ(xp_rank(), -1);
    XP_CHECK_EQ(xp_size(), 0);
    XP_CHECK_EQ(xp_barrier(), XP_ERR_NOT_INIT);
    XP_CHECK_EQ(xp_kv_put("k", "v", 1), XP_ERR_NOT_INIT);
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_REQUIRE(xp_init(NULL, NULL) == XP_OK); /* reference counted */
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    XP_CHECK(xp_initialized());
    check_identity();
    check_bad_arguments();
    for (int round = 0; round < 2; round++)
        exchange(round);
    /* Everybody agrees on the job id. */
    const char *id = xp_runtime_job_id();
    XP_CHECK_EQ(xp_kv_put("jobid", id, strlen(id) + 1), XP_OK);
    XP_CHECK_EQ(xp_kv_fence(), XP_OK);
    char other[64];
    size_t len = sizeof other;
    XP_CHECK_EQ(xp_kv_get(0, "jobid", other, &len), XP_OK);
    XP_CHECK_STR(other, id);
    for (int i = 0; i < 20; i++)
        XP_CHECK_EQ(xp_barrier(), XP_OK);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    XP_CHECK(!xp_initialized());
    XP_CHECK_EQ(xp_finalize(), XP_ERR_NOT_INIT);
    return xp_test_result();
}
