/*
 * tools/xprun/xprun.h - the launcher's shared state.
 *
 * xprun starts N processes on this machine, serves them the PMI-1 wire
 * protocol over one socket pair each (PMI_FD), forwards their output and
 * signals, and brings the whole job down as soon as one process fails.
 */
#ifndef XPRUN_H
#define XPRUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XPRUN_KEYLEN_MAX 64    /* as Hydra: keys < 64 characters */
#define XPRUN_VALLEN_MAX 1024  /* as Hydra: values < 1024 characters */
#define XPRUN_KVSNAME_MAX 256
#define XPRUN_LINE_MAX 4096    /* longest request we accept */

typedef struct xprun_options {
    int np;
    int timeout_s;   /* 0 = none */
    int tag_output;
    int bind_core;   /* 1: rank i on the i-th allowed core (mod count) */
    int verbose;     /* print PMI traffic */
    int vallen_max;  /* what get_maxes announces (tests make it small) */
    char **env;      /* -x NAME=value / NAME, NULL-terminated */
    int nenv;
    char **argv;     /* program and its arguments */
} xprun_options_t;

/* Line assembly for one forwarded output stream. */
typedef struct xprun_stream {
    int fd;          /* read end of the pipe, -1 once closed */
    int out;         /* where it goes: 1 or 2 */
    int mid_line;    /* the last chunk written did not end a line */
    size_t len;
    char buf[4096];
} xprun_stream_t;

typedef enum { PROC_RUNNING, PROC_EXITED } xprun_proc_state_t;

typedef struct xprun_proc {
    int rank;
    pid_t pid;
    xprun_proc_state_t state;
    int status;       /* from waitpid */
    int pmi_fd;       /* our end of the PMI socket pair, -1 once closed */
    int in_barrier;
    int finalized;
    int skip_line;    /* dropping the rest of an over-long line */
    size_t rlen;
    char rbuf[XPRUN_LINE_MAX];
    xprun_stream_t out, err;
} xprun_proc_t;

typedef struct xprun_kvs xprun_kvs_t;

typedef struct xprun_job {
    const xprun_options_t *opt;
    int n;
    xprun_proc_t *procs;
    int running;          /* processes not yet reaped */
    int barrier_count;
    xprun_kvs_t *kvs;
    char kvsname[64];
    /* failure handling: the first failure decides the exit code */
    int failed;
    int exit_code;
    int killing;          /* 0, 1 = SIGTERM sent, 2 = SIGKILL sent */
    uint64_t kill_at_ns;  /* when to escalate to SIGKILL */
    uint64_t deadline_ns; /* --timeout; UINT64_MAX if none */
} xprun_job_t;

/* launch.c */
int xprun_spawn(xprun_job_t *job, int rank);

/* pmi_server.c */
xprun_kvs_t *xprun_kvs_new(void);
void xprun_kvs_free(xprun_kvs_t *kvs);
int xprun_kvs_put(xprun_kvs_t *kvs, const char *key, const char *value);
const char *xprun_kvs_get(const xprun_kvs_t *kvs, const char *key);
/* Handle readable data on proc's PMI socket. */
void xprun_pmi_readable(xprun_job_t *job, xprun_proc_t *proc);
/* After a process exits: fail the job if others wait for it in a barrier. */
void xprun_pmi_check_barrier(xprun_job_t *job);

/* xprun.c */
/* Record the first failure (message printed now) and start killing the job. */
void xprun_fail(xprun_job_t *job, int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t xprun_now_ns(void);

#endif
