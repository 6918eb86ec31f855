/* util/config: the XP_* table, parsers, bounds, suggestions, the process environment. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "util/config.h"
#include "util/context.h"

static size_t row_of(const char *name)
{
    for (size_t i = 0; i < xp_config_count(); i++)
        if (!strcmp(xp_config_info(i)->name, name))
            return i;
    fprintf(stderr, "no row %s\n", name);
    exit(1);
}

static void test_table(void)
{
    xp_config_t cfg;
    char err[256];
    XP_CHECK_EQ(xp_config_count(), XP_CFG_NUM_VARS);
    XP_CHECK(xp_config_info(xp_config_count()) == NULL);
    for (size_t i = 0; i < xp_config_count(); i++) {
        const xp_config_info_t *ci = xp_config_info(i);
        err[0] = '\0';
        XP_CHECK(!strncmp(ci->name, "XP_", 3));
        XP_CHECK(ci->help && ci->help[0]);
        if (xp_config_parse(i, ci->def, &cfg, err, sizeof err) != XP_OK)
            fprintf(stderr, "default of %s does not parse: %s\n", ci->name, err);
        XP_CHECK_EQ(xp_config_parse(i, ci->def, &cfg, err, sizeof err), XP_OK);
        if (ci->type == XP_CFG_INT || ci->type == XP_CFG_SIZE)
            XP_CHECK_INT(ci->min, <=, ci->max);
        if (ci->type == XP_CFG_ENUM)
            XP_CHECK(ci->choices && strchr(ci->choices, '|'));
        for (size_t j = 0; j < i; j++)
            XP_CHECK(strcmp(ci->name, xp_config_info(j)->name) != 0);
    }
}

/* A value of the wrong kind for every row: rejected with the name and value
 * in the message, and the configuration left as it was. */
static void test_bad_values(void)
{
    static const char *const bad[] = {
        [XP_CFG_BOOL] = "maybe", [XP_CFG_INT] = "12abc", [XP_CFG_SIZE] = "12q",
        [XP_CFG_ENUM] = "no-such-choice", [XP_CFG_STRING] = NULL,
    };
    for (size_t i = 0; i < xp_config_count(); i++) {
        const xp_config_info_t *ci = xp_config_info(i);
        xp_config_t cfg, before;
        char err[256] = "";
        if (!bad[ci->type])
            continue;
        memset(&cfg, 0x11, sizeof cfg);
        before = cfg;
        XP_CHECK_EQ(xp_config_parse(i, bad[ci->type], &cfg, err, sizeof err), XP_ERR_CONFIG);
        XP_CHECK(!memcmp(&cfg, &before, sizeof cfg));
        XP_CHECK(strstr(err, ci->name) && strstr(err, bad[ci->type]));
        XP_CHECK(strstr(err, "expected") != NULL);
        /* A NULL error buffer is allowed. */
        XP_CHECK_EQ(xp_config_parse(i, bad[ci->type], &cfg, NULL, 0), XP_ERR_CONFIG);
    }
    xp_config_t cfg;
    XP_CHECK_EQ(xp_config_parse(xp_config_count(), "1", &cfg, NULL, 0), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_config_parse(0, NULL, &cfg, NULL, 0), XP_ERR_INVALID);
}

static void test_int_bounds(void)
{
    size_t row = row_of("XP_BOOTSTRAP_TIMEOUT");
    const xp_config_info_t *ci = xp_config_info(row);
    xp_config_t cfg;
    char err[256], text[32];
    snprintf(text, sizeof text, "%ld", ci->min);
    XP_CHECK_EQ(xp_config_parse(row, text, &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.bootstrap_timeout, ci->min);
    snprintf(text, sizeof text, "%ld", ci->max);
    XP_CHECK_EQ(xp_config_parse(row, text, &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.bootstrap_timeout, ci->max);
    snprintf(text, sizeof text, "%ld", ci->max + 1);
    XP_CHECK_EQ(xp_config_parse(row, text, &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK(strstr(err, "out of range") != NULL);
    snprintf(text, sizeof text, "%ld", ci->min - 1);
    XP_CHECK_EQ(xp_config_parse(row, text, &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "99999999999999999999999", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "0x10", &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.bootstrap_timeout, 16);
    XP_CHECK_EQ(xp_config_parse(row, "010", &cfg, err, sizeof err), XP_OK); /* not octal */
    XP_CHECK_EQ(cfg.bootstrap_timeout, 10);
    XP_CHECK_EQ(xp_config_parse(row, " 5", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "+5", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "-", &cfg, err, sizeof err), XP_ERR_CONFIG);
}

static void test_sizes(void)
{
    static const struct { const char *text; size_t value; } good[] = {
        {"0", 0}, {"4096", 4096}, {"64k", 64 << 10}, {"64K", 64 << 10}, {"4m", 4 << 20},
        {"4MB", 4 << 20}, {"1g", 1ul << 30}, {"2t", 2ul << 40}, {"0x100", 256}, {"1kb", 1024},
        {"010", 10}, {"010k", 10 << 10},
    };
    static const char *const bad[] = {"", "k", "-1", " -1", " 1", "+1", "1.5k", "12q",
                                      "4 k", "1kk", "1kbb", "1b", "0x", "1k "};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 1;
        XP_CHECK_EQ(xp_parse_size(good[i].text, &v), XP_OK);
        XP_CHECK_EQ(v, good[i].value);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 7;
        if (xp_parse_size(bad[i], &v) == XP_OK)
            fprintf(stderr, "size \"%s\" accepted\n", bad[i]);
        XP_CHECK(xp_parse_size(bad[i], &v) != XP_OK);
        XP_CHECK_EQ(v, 7); /* output untouched on error */
    }
    size_t v;
    XP_CHECK_EQ(xp_parse_size("99999999999t", &v), XP_ERR_OVERFLOW);
    XP_CHECK(xp_parse_size(NULL, &v) != XP_OK);
}

static void test_enum(void)
{
    size_t row = row_of("XP_LOG_LEVEL");
    xp_config_t cfg;
    char err[256];
    XP_CHECK_EQ(xp_config_parse(row, "debug", &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.log_level, 3);
    XP_CHECK_EQ(xp_config_parse(row, "ERROR", &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.log_level, 0);
    XP_CHECK_EQ(xp_config_parse(row, "trace", &cfg, err, sizeof err), XP_OK);
    XP_CHECK_EQ(cfg.log_level, 4);
    XP_CHECK_EQ(xp_config_parse(row, "verbose", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK(strstr(err, "error|warn|info|debug|trace") != NULL);
    XP_CHECK_EQ(xp_config_parse(row, "debu", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "debugx", &cfg, err, sizeof err), XP_ERR_CONFIG);
    XP_CHECK_EQ(xp_config_parse(row, "", &cfg, err, sizeof err), XP_ERR_CONFIG);
}

static void test_closest(void)
{
    XP_CHECK_STR(xp_config_closest("XP_LOG_LEVLE"), "XP_LOG_LEVEL");
    XP_CHECK_STR(xp_config_closest("XP_LOGLEVEL"), "XP_LOG_LEVEL");
    XP_CHECK_STR(xp_config_closest("XP_SPINCOUNT"), "XP_SPIN_COUNT");
    XP_CHECK_STR(xp_config_closest("xp_progress"), "XP_PROGRESS");
    XP_CHECK(xp_config_closest("XP_SOMETHING_ELSE_ENTIRELY_123") == NULL);
    XP_CHECK(xp_config_closest(NULL) == NULL);
    /* Longer than the edit-distance buffer: no crash, no suggestion. */
    char longname[300];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    XP_CHECK(xp_config_closest(longname) == NULL);
}

static void test_load_env(void)
{
    char *env[] = {
        "HOME=/root", "XP_LOG_LEVLE=debug", "XP_SPIN_COUNT=123", "XP_LOG_LEVEL=info",
        "XP_TEST_WHATEVER=1", "XP_QWERTYUIOPASDFGHJKL=1", "XP_NOEQUALS", NULL,
    };
    xp_config_t cfg;
    capture_t cap;
    capture_begin(&cap);
    xp_status_t st = xp_config_load_env(env, &cfg);
    const char *out = capture_end(&cap);
    XP_CHECK_EQ(st, XP_OK);
    XP_CHECK_EQ(cfg.spin_count, 123);
    XP_CHECK_EQ(cfg.log_level, 2);
    XP_CHECK(strstr(out, "unknown variable XP_LOG_LEVLE (did you mean XP_LOG_LEVEL?)") != NULL);
    XP_CHECK(strstr(out, "unknown variable XP_QWERTYUIOPASDFGHJKL") != NULL);
    XP_CHECK(strstr(out, "XP_TEST_WHATEVER") == NULL); /* belongs to the tests */
    if (!strstr(out, "did you mean XP_LOG_LEVEL"))
        fprintf(stderr, "captured: %s\n", out);

    char *bad[] = {"XP_SPIN_COUNT=-5", "XP_BOOTSTRAP=pmi3", "XP_NODE_CPUS=-1",
                   "XP_OVERSUB_YIELD_US=2000000", NULL};
    capture_begin(&cap);
    st = xp_config_load_env(bad, &cfg);
    out = capture_end(&cap);
    XP_CHECK_EQ(st, XP_ERR_CONFIG);
    XP_CHECK(strstr(out, "XP_SPIN_COUNT=-5: out of range") != NULL);
    XP_CHECK(strstr(out, "XP_BOOTSTRAP=pmi3: expected one of auto|pmi1|pmix|singleton") != NULL);
    XP_CHECK(strstr(out, "XP_NODE_CPUS=-1: out of range") != NULL);
    XP_CHECK(strstr(out, "XP_OVERSUB_YIELD_US=2000000: out of range") != NULL);
    XP_CHECK_EQ(cfg.spin_count, 2000); /* the default is kept */
    XP_CHECK_EQ(cfg.node_cpus, 0);
    XP_CHECK_EQ(cfg.oversub_yield_us, 500);
    XP_CHECK_EQ(xp_config_load_env(NULL, &cfg), XP_OK);
    XP_CHECK_EQ(xp_config_load_env(env, NULL), XP_ERR_INVALID);
}

/* The process configuration: a bad variable makes xp_config_status fail
 * (checked in a child, since the environment is read once per process).
 * Must run before anything else reads the configuration. */
static void test_process_env(void)
{
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0) {
        setenv("XP_SPIN_COUNT", "lots", 1);
        capture_t cap;
        capture_begin(&cap);
        xp_status_t st = xp_config_status();
        const char *out = capture_end(&cap);
        _exit(st == XP_ERR_CONFIG && strstr(out, "XP_SPIN_COUNT=lots") ? 0 : 1);
    }
    int status;
    XP_REQUIRE(waitpid(pid, &status, 0) == pid);
    XP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    setenv("XP_SPIN_COUNT", "77", 1);
    setenv("XP_BOOTSTRAP", "Singleton", 1);
    unsetenv("XP_PROGRESS");
    XP_CHECK_EQ(xp_config_status(), XP_OK);
    XP_CHECK_EQ(xp_config()->spin_count, 77);
    char buf[64];
    int set = -1;
    xp_config_value_string(XP_CFG_IDX_spin_count, buf, sizeof buf, &set);
    XP_CHECK_STR(buf, "77");
    XP_CHECK_EQ(set, 1);
    xp_config_value_string(XP_CFG_IDX_bootstrap, buf, sizeof buf, &set);
    XP_CHECK_STR(buf, "singleton");
    XP_CHECK_EQ(set, 1);
    xp_config_value_string(XP_CFG_IDX_progress, buf, sizeof buf, &set);
    XP_CHECK_STR(buf, xp_config_info(XP_CFG_IDX_progress)->def);
    XP_CHECK_EQ(set, 0);
    /* Every row formats; a tiny buffer truncates instead of overflowing. */
    for (size_t i = 0; i < xp_config_count(); i++) {
        char small[2] = "zz";
        xp_config_value_string(i, buf, sizeof buf, NULL);
        xp_config_value_string(i, small, sizeof small, NULL);
        XP_CHECK(small[0] == '\0' || small[1] == '\0');
    }
}

/* One row alone, silently (xprun's XP_MALLOC_HUGEPAGES): the others keep
 * their defaults whatever the environment says; nothing is printed about
 * the other variables; a bad value keeps the default. */
static void test_read_one(void)
{
    xp_config_t cfg;
    capture_t cap;
    setenv("XP_MALLOC_HUGEPAGES", "0", 1);
    setenv("XP_SPIN_COUNT", "77", 1);
    setenv("XP_NO_SUCH_THING", "1", 1);
    capture_begin(&cap);
    XP_CHECK_EQ(xp_config_read_one(XP_CFG_IDX_malloc_hugepages, &cfg), XP_OK);
    const char *out = capture_end(&cap);
    XP_CHECK_EQ(cfg.malloc_hugepages, 0);
    XP_CHECK_EQ(cfg.spin_count, 2000);
    XP_CHECK_STR(out, "");
    setenv("XP_MALLOC_HUGEPAGES", "maybe", 1);
    XP_CHECK_EQ(xp_config_read_one(XP_CFG_IDX_malloc_hugepages, &cfg), XP_ERR_CONFIG);
    XP_CHECK_EQ(cfg.malloc_hugepages, 1);
    unsetenv("XP_MALLOC_HUGEPAGES");
    XP_CHECK_EQ(xp_config_read_one(XP_CFG_IDX_malloc_hugepages, &cfg), XP_OK);
    XP_CHECK_EQ(cfg.malloc_hugepages, 1);
    XP_CHECK_EQ(xp_config_read_one(XP_CFG_NUM_VARS, &cfg), XP_ERR_INVALID);
    XP_CHECK_EQ(xp_config_read_one(0, NULL), XP_ERR_INVALID);
    unsetenv("XP_NO_SUCH_THING");
}

int main(void)
{
    unsetenv("XP_LOG_LEVEL");
    unsetenv("XP_SPIN_COUNT");
    /* First: the process configuration is read once, on first use (any log
     * line reads it too). */
    test_process_env();
    test_table();
    test_bad_values();
    test_int_bounds();
    test_sizes();
    test_enum();
    test_closest();
    test_load_env();
    test_read_one();
    return xp_test_result();
}
