/*
 * runtime/runtime.h - what the layers above learn from the bootstrap.
 *
 * The public half (rank, size, barrier, key-value exchange) is in
 * include/xportals/xp.h; this header adds what only the library needs.
 */
#ifndef XP_RUNTIME_RUNTIME_H
#define XP_RUNTIME_RUNTIME_H

#include <stdint.h>
#include <sys/types.h>
#include "xportals/xp.h"

/* A short identifier unique to this job on this machine (letters, digits,
 * '-' and '_'; <= 48 chars), e.g. for naming shared-memory segments. A
 * singleton gets "s<pid>". */
const char *xp_runtime_job_id(void);
/* Host name of this process's node, as the ranks compare it. */
const char *xp_runtime_hostname(void);
/* Process id of `rank`: known for the ranks on this node after xp_init,
 * -1 for others (and for ranks out of range). */
pid_t xp_runtime_pid_of(int rank);

#endif
