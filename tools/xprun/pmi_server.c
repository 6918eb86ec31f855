/*
 * The PMI-1 server side of xprun: one key-value space for the job, one
 * barrier, and the answers MPICH's simple PMI client parses (see
 * src/runtime/pmi_wire.h for the line format).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/pmi_wire.h"
#include "xprun.h"

/* ------------------------------------------------------------ key-value space */

#define KVS_BUCKETS 4096

typedef struct kv_pair {
    struct kv_pair *next;
    char *value;
    char key[];
} kv_pair_t;

struct xprun_kvs {
    kv_pair_t *bucket[KVS_BUCKETS];
};

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % KVS_BUCKETS;
}

xprun_kvs_t *xprun_kvs_new(void)
{
    return calloc(1, sizeof(xprun_kvs_t));
}

void xprun_kvs_free(xprun_kvs_t *kvs)
{
    for (int b = 0; kvs && b < KVS_BUCKETS; b++) {
        while (kvs->bucket[b]) {
            kv_pair_t *e = kvs->bucket[b];
            kvs->bucket[b] = e->next;
            free(e->value);
            free(e);
        }
    }
    free(kvs);
}

/* A later put of the same key replaces the value. */
int xprun_kvs_put(xprun_kvs_t *kvs, const char *key, const char *value)
{
    char *v = strdup(value);
    if (!v)
        return -1;
    kv_pair_t **head = &kvs->bucket[hash(key)];
    for (kv_pair_t *e = *head; e; e = e->next) {
        if (!strcmp(e->key, key)) {
            free(e->value);
            e->value = v;
            return 0;
        }
    }
    kv_pair_t *e = malloc(sizeof *e + strlen(key) + 1);
    if (!e) {
        free(v);
        return -1;
    }
    strcpy(e->key, key);
    e->value = v;
    e->next = *head;
    *head = e;
    return 0;
}

const char *xprun_kvs_get(const xprun_kvs_t *kvs, const char *key)
{
    for (kv_pair_t *e = kvs->bucket[hash(key)]; e; e = e->next)
        if (!strcmp(e->key, key))
            return e->value;
    return NULL;
}

/* ------------------------------------------------------------ replies */

static void reply(xprun_job_t *job, xprun_proc_t *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reply(xprun_job_t *job, xprun_proc_t *p, const char *fmt, ...)
{
    char line[XPRUN_LINE_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || p->pmi_fd < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (job->opt->verbose)
        fprintf(stderr, "xprun: -> %d: %.*s", p->rank, n, line);
    for (int off = 0; off < n;) {
        ssize_t w = send(p->pmi_fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            /* Only a client that sends without reading fills the buffer. */
            struct pollfd pfd = {.fd = p->pmi_fd, .events = POLLOUT};
            if (poll(&pfd, 1, 1000) > 0)
                continue;
            fprintf(stderr, "xprun: rank %d does not read its PMI answers\n", p->rank);
            return;
        }
        if (w < 0)
            return; /* the process is gone; its exit status will tell */
        off += (int)w;
    }
}

/* ------------------------------------------------------------ commands */

static void cmd_init(xprun_job_t *job, xprun_proc_t *p, const xp_pmi_msg_t *m)
{
    int ver = 0, sub = 0;
    int ok = xp_pmi_get_int(m, "pmi_version", &ver) == XP_OK &&
             xp_pmi_get_int(m, "pmi_subversion", &sub) == XP_OK && ver == 1 && sub <= 1;
    if (!ok)
        fprintf(stderr, "xprun: rank %d asked for an unsupported PMI version (xprun speaks 1.1)\n",
                p->rank);
    reply(job, p, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=%d", ok ? 0 : -1);
}

static void cmd_put(xprun_job_t *job, xprun_proc_t *p, const xp_pmi_msg_t *m)
{
    const char *kvs = xp_pmi_get(m, "kvsname"), *key = xp_pmi_get(m, "key"),
               *val = xp_pmi_get(m, "value");
    const char *why = NULL;
    if (!kvs || strcmp(kvs, job->kvsname))
        why = "unknown_kvsname";
    else if (!key || !*key || strlen(key) >= XPRUN_KEYLEN_MAX)
        why = "bad_key_length";
    else if (!val || strlen(val) >= (size_t)job->opt->vallen_max)
        why = "bad_value_length";
    else if (xprun_kvs_put(job->kvs, key, val) < 0)
        why = "out_of_memory";
    if (why)
        reply(job, p, "cmd=put_result rc=-1 msg=%s", why);
    else
        reply(job, p, "cmd=put_result rc=0 msg=success");
}

static void cmd_get(xprun_job_t *job, xprun_proc_t *p, const xp_pmi_msg_t *m)
{
    const char *kvs = xp_pmi_get(m, "kvsname"), *key = xp_pmi_get(m, "key");
    const char *val = key && kvs && !strcmp(kvs, job->kvsname) ? xprun_kvs_get(job->kvs, key) : NULL;
    if (val)
        reply(job, p, "cmd=get_result rc=0 msg=success value=%s", val);
    else
        reply(job, p, "cmd=get_result rc=-1 msg=key_%s_not_found", key && *key ? key : "(none)");
}

static void cmd_barrier_in(xprun_job_t *job, xprun_proc_t *p)
{
    if (!p->in_barrier) {
        p->in_barrier = 1;
        job->barrier_count++;
    }
    if (job->barrier_count < job->n) {
        xprun_pmi_check_barrier(job);
        return;
    }
    job->barrier_count = 0;
    for (int r = 0; r < job->n; r++) {
        job->procs[r].in_barrier = 0;
        reply(job, &job->procs[r], "cmd=barrier_out rc=0");
    }
}

static void cmd_abort(xprun_job_t *job, xprun_proc_t *p, const xp_pmi_msg_t *m)
{
    int code = 1;
    if (xp_pmi_get_int(m, "exitcode", &code) != XP_OK || code == 0)
        code = 1;
    const char *msg = xp_pmi_get(m, "msg");
    xprun_fail(job, code & 0xff ? code & 0xff : 1, "rank %d (pid %d) called abort with exit code %d%s%s",
               p->rank, (int)p->pid, code, msg ? ": " : "", msg ? msg : "");
}

static void handle_line(xprun_job_t *job, xprun_proc_t *p, char *line)
{
    if (job->opt->verbose)
        fprintf(stderr, "xprun: <- %d: %s\n", p->rank, line);
    xp_pmi_msg_t m;
    const char *cmd = NULL;
    if (xp_pmi_parse(line, &m) != XP_OK || !(cmd = xp_pmi_get(&m, "cmd"))) {
        reply(job, p, "cmd=error rc=-1 msg=expected_cmd");
        return;
    }
    if (!strcmp(cmd, "init"))
        cmd_init(job, p, &m);
    else if (!strcmp(cmd, "get_maxes"))
        reply(job, p, "cmd=maxes rc=0 kvsname_max=%d keylen_max=%d vallen_max=%d",
              XPRUN_KVSNAME_MAX, XPRUN_KEYLEN_MAX, job->opt->vallen_max);
    else if (!strcmp(cmd, "get_appnum"))
        reply(job, p, "cmd=appnum rc=0 appnum=0");
    else if (!strcmp(cmd, "get_my_kvsname"))
        reply(job, p, "cmd=my_kvsname rc=0 kvsname=%s", job->kvsname);
    else if (!strcmp(cmd, "get_universe_size"))
        reply(job, p, "cmd=universe_size rc=0 size=%d", job->n);
    else if (!strcmp(cmd, "put"))
        cmd_put(job, p, &m);
    else if (!strcmp(cmd, "get"))
        cmd_get(job, p, &m);
    else if (!strcmp(cmd, "barrier_in"))
        cmd_barrier_in(job, p);
    else if (!strcmp(cmd, "finalize")) {
        p->finalized = 1;
        reply(job, p, "cmd=finalize_ack rc=0");
    } else if (!strcmp(cmd, "abort"))
        cmd_abort(job, p, &m);
    else {
        fprintf(stderr, "xprun: rank %d sent an unsupported PMI command \"%s\"\n", p->rank, cmd);
        reply(job, p, "cmd=%s_result rc=-1 msg=unsupported_command", cmd);
    }
}

static void close_pmi(xprun_proc_t *p)
{
    close(p->pmi_fd);
    p->pmi_fd = -1;
}

void xprun_pmi_readable(xprun_job_t *job, xprun_proc_t *p)
{
    ssize_t n = read(p->pmi_fd, p->rbuf + p->rlen, sizeof p->rbuf - p->rlen - 1);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) { /* EOF or error: the process closed PMI (its exit status decides) */
        close_pmi(p);
        return;
    }
    p->rlen += (size_t)n;
    char *start = p->rbuf, *nl;
    while (p->pmi_fd >= 0 && (nl = memchr(start, '\n', p->rlen - (size_t)(start - p->rbuf)))) {
        *nl = '\0';
        if (p->skip_line)
            p->skip_line = 0; /* the end of the over-long line */
        else
            handle_line(job, p, start);
        start = nl + 1;
    }
    p->rlen -= (size_t)(start - p->rbuf);
    memmove(p->rbuf, start, p->rlen);
    if (p->rlen == sizeof p->rbuf - 1) {
        if (!p->skip_line) {
            fprintf(stderr, "xprun: rank %d sent a PMI line longer than %d bytes\n", p->rank,
                    XPRUN_LINE_MAX);
            reply(job, p, "cmd=error rc=-1 msg=line_too_long");
        }
        p->skip_line = 1;
        p->rlen = 0;
    }
}

void xprun_pmi_check_barrier(xprun_job_t *job)
{
    if (job->barrier_count == 0 || job->failed)
        return;
    for (int r = 0; r < job->n; r++) {
        xprun_proc_t *p = &job->procs[r];
        if (p->state == PROC_EXITED && !p->in_barrier) {
            xprun_fail(job, 1, "rank %d (pid %d) exited while %d rank(s) wait for it in a barrier",
                       r, (int)p->pid, job->barrier_count);
            return;
        }
    }
}
