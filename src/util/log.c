/* Leveled logging; see log.h. One write(2) per line so ranks do not interleave. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"
#include "util/context.h"
#include "util/log.h"

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

const char *xp_log_level_name(xp_log_level_t level)
{
    if ((unsigned)level > XP_LOG_TRACE)
        return "?";
    return level_names[level];
}

int xp_log_enabled(xp_log_level_t level)
{
    int cur = __atomic_load_n(&xp_ctx.log_level, __ATOMIC_RELAXED);
    if (cur < 0) {
        (void)xp_config(); /* sets log_level */
        cur = __atomic_load_n(&xp_ctx.log_level, __ATOMIC_RELAXED);
    }
    return (int)level <= cur;
}

void xp_log_set_rank(int rank)
{
    __atomic_store_n(&xp_ctx.log_rank, rank, __ATOMIC_RELAXED);
}

void xp_log_at(xp_log_level_t level, const char *file, int line, int errnum, const char *fmt, ...)
{
    char buf[1024];
    size_t n = 0;
    int rank = __atomic_load_n(&xp_ctx.log_rank, __ATOMIC_RELAXED);
    const char *base = strstr(file, "src/");
    base = base ? base + 4 : file;

    if (rank >= 0)
        n = (size_t)snprintf(buf, sizeof buf, "[xp %d r%d] %s %s:%d: ", (int)getpid(), rank,
                             xp_log_level_name(level), base, line);
    else
        n = (size_t)snprintf(buf, sizeof buf, "[xp %d] %s %s:%d: ", (int)getpid(),
                             xp_log_level_name(level), base, line);
    if (n < sizeof buf) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
        va_end(ap);
        if (m > 0)
            n += (size_t)m;
    }
    if (errnum && n < sizeof buf) {
        char ebuf[128];
        int m = snprintf(buf + n, sizeof buf - n, ": %s", strerror_r(errnum, ebuf, sizeof ebuf));
        if (m > 0)
            n += (size_t)m;
    }
    if (n >= sizeof buf - 1)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, n);
    (void)w;
}
