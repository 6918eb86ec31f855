/* util/log: level filter, line format, errno text, rank tag. */
#include <errno.h>
#include <stdlib.h>

#include "capture.h"
#include "util/context.h"
#include "util/log.h"

static void test_env_level(void)
{
    capture_t cap;
    capture_begin(&cap);
    xp_debug("debug line %d", 1);
    xp_info("info line %d", 2);
    xp_warn("warn line %d", 3);
    xp_error("error line %d", 4);
    const char *out = capture_end(&cap);
    XP_CHECK(strstr(out, "debug line 1") == NULL); /* XP_LOG_LEVEL=info */
    XP_CHECK(strstr(out, "INFO") && strstr(out, "info line 2"));
    XP_CHECK(strstr(out, "WARN") && strstr(out, "warn line 3"));
    XP_CHECK(strstr(out, "ERROR") && strstr(out, "error line 4"));
    /* Prefix: [xp <pid>] LEVEL file:line: */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "[xp %d] INFO ", (int)getpid());
    XP_CHECK(strstr(out, prefix) != NULL);
    XP_CHECK(strstr(out, "test_log.c:") != NULL);
    XP_CHECK_EQ(xp_log_enabled(XP_LOG_INFO), 1);
    XP_CHECK_EQ(xp_log_enabled(XP_LOG_DEBUG), 0);
}

static void test_filter(void)
{
    capture_t cap;
    int saved = xp_ctx.log_level;
    xp_ctx.log_level = XP_LOG_ERROR;
    capture_begin(&cap);
    xp_warn("hidden warning");
    xp_error("shown error");
    const char *out = capture_end(&cap);
    XP_CHECK(strstr(out, "hidden warning") == NULL);
    XP_CHECK(strstr(out, "shown error") != NULL);

    xp_ctx.log_level = XP_LOG_TRACE;
    capture_begin(&cap);
    xp_trace("trace %s", "shown");
    out = capture_end(&cap);
    XP_CHECK(strstr(out, "TRACE") && strstr(out, "trace shown"));
    xp_ctx.log_level = saved;
}

static void test_errno(void)
{
    capture_t cap;
    capture_begin(&cap);
    errno = ENOENT;
    xp_log_errno(XP_LOG_ERROR, "open(%s)", "/no/such/file");
    errno = 0;
    xp_log_errno(XP_LOG_DEBUG, "filtered"); /* below the level: nothing */
    const char *out = capture_end(&cap);
    char want[256];
    snprintf(want, sizeof want, "open(/no/such/file): %s\n", strerror(ENOENT));
    XP_CHECK(strstr(out, want) != NULL);
    XP_CHECK(strstr(out, "filtered") == NULL);
    if (!strstr(out, want))
        fprintf(stderr, "captured: %s\n", out);
}

static void test_rank_and_long_lines(void)
{
    capture_t cap;
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    xp_log_set_rank(3);
    capture_begin(&cap);
    xp_warn("ranked");
    errno = EPERM;
    xp_log_errno(XP_LOG_WARN, "%s", big); /* longer than a line: cut, still one line */
    const char *out = capture_end(&cap);
    xp_log_set_rank(-1);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "[xp %d r3] WARN ", (int)getpid());
    XP_CHECK(strstr(out, prefix) != NULL);
    size_t lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    XP_CHECK_EQ(lines, 2);
    XP_CHECK(out[strlen(out) - 1] == '\n');
    XP_CHECK_STR(xp_log_level_name(XP_LOG_DEBUG), "DEBUG");
    XP_CHECK_STR(xp_log_level_name((xp_log_level_t)42), "?");
}

int main(void)
{
    setenv("XP_LOG_LEVEL", "info", 1); /* read on the first log call */
    test_env_level();
    test_filter();
    test_errno();
    test_rank_and_long_lines();
    return xp_test_result();
}
