/*
 * xportals/status.h - the one status type of every xp_ function.
 *
 * Codes, names and messages come from one list (XP_STATUS_LIST), so they can
 * never drift apart. XP_OK is 0; every error is negative. New codes are
 * appended with the next free number: values are part of the ABI.
 */
#ifndef XPORTALS_STATUS_H
#define XPORTALS_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define XP_EXPORT __attribute__((visibility("default")))

/* X(NAME, value, "message") */
#define XP_STATUS_LIST(X)                                                       \
    X(OK,              0,   "success")                                          \
    X(ERR_INVALID,    -1,   "invalid argument")                                 \
    X(ERR_NO_MEMORY,  -2,   "out of memory")                                    \
    X(ERR_NO_RESOURCE,-3,   "resource exhausted")                               \
    X(ERR_NOT_FOUND,  -4,   "not found")                                        \
    X(ERR_EXISTS,     -5,   "already exists")                                   \
    X(ERR_IO,         -6,   "input/output error")                               \
    X(ERR_TIMEOUT,    -7,   "timed out")                                        \
    X(ERR_BUSY,       -8,   "resource busy")                                    \
    X(ERR_UNSUPPORTED,-9,   "operation not supported")                          \
    X(ERR_NOT_INIT,   -10,  "library not initialized")                          \
    X(ERR_PROTOCOL,   -11,  "protocol error")                                   \
    X(ERR_OVERFLOW,   -12,  "size or count overflow")                           \
    X(ERR_TRUNCATED,  -13,  "message truncated")                                \
    X(ERR_AGAIN,      -14,  "try again")                                        \
    X(ERR_PEER_DEAD,  -15,  "peer process is gone")                             \
    X(ERR_CANCELED,   -16,  "operation canceled")                               \
    X(ERR_PERMISSION, -17,  "permission denied")                                \
    X(ERR_CONFIG,     -18,  "invalid configuration")                            \
    X(ERR_INTERNAL,   -19,  "internal error")                                   \
    X(ERR_ABORTED,    -20,  "aborted by the application")

typedef enum {
#define XP_STATUS_ENUM_(name, value, msg) XP_##name = value,
    XP_STATUS_LIST(XP_STATUS_ENUM_)
#undef XP_STATUS_ENUM_
} xp_status_t;

/* "XP_ERR_TIMEOUT" for XP_ERR_TIMEOUT; "XP_UNKNOWN_STATUS" for other values. */
XP_EXPORT const char *xp_status_name(xp_status_t status);
/* A human-readable message ("timed out"). */
XP_EXPORT const char *xp_status_string(xp_status_t status);

#ifdef __cplusplus
}
#endif
#endif
