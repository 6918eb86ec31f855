/*
 * util/log.h - leveled logging to stderr.
 *
 * The level comes from XP_LOG_LEVEL (error, warn, info, debug, trace). Log an
 * error once, where it is first detected; xp_log_errno() appends the system's
 * error text for a failed system call. Lines read
 *   [xp 12345 r3] ERROR ptl/ni.c:88: PtlNIInit: no such interface
 */
#ifndef XP_UTIL_LOG_H
#define XP_UTIL_LOG_H

#include <stdarg.h>

typedef enum {
    XP_LOG_ERROR = 0,
    XP_LOG_WARN  = 1,
    XP_LOG_INFO  = 2,
    XP_LOG_DEBUG = 3,
    XP_LOG_TRACE = 4,
} xp_log_level_t;

int  xp_log_enabled(xp_log_level_t level);
void xp_log_at(xp_log_level_t level, const char *file, int line, int errnum,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Tag every later line with this rank (set by the runtime once it knows). */
void xp_log_set_rank(int rank);
const char *xp_log_level_name(xp_log_level_t level);

#define xp_log(level, ...)                                                     \
    do {                                                                       \
        if (xp_log_enabled(level))                                             \
            xp_log_at(level, __FILE__, __LINE__, 0, __VA_ARGS__);              \
    } while (0)
/* Like xp_log, with ": <strerror(errno)>" appended (errno read at the call). */
#define xp_log_errno(level, ...)                                               \
    do {                                                                       \
        int xp_saved_errno_ = errno;                                           \
        if (xp_log_enabled(level))                                             \
            xp_log_at(level, __FILE__, __LINE__, xp_saved_errno_, __VA_ARGS__);\
    } while (0)

#define xp_error(...) xp_log(XP_LOG_ERROR, __VA_ARGS__)
#define xp_warn(...)  xp_log(XP_LOG_WARN, __VA_ARGS__)
#define xp_info(...)  xp_log(XP_LOG_INFO, __VA_ARGS__)
#define xp_debug(...) xp_log(XP_LOG_DEBUG, __VA_ARGS__)
#define xp_trace(...) xp_log(XP_LOG_TRACE, __VA_ARGS__)

#endif
