/*
 * xprun -n N [options] prog [args]: start N processes on this machine and
 * serve them the PMI-1 wire protocol. See usage() and xprun.h.
 *
 * One poll() loop watches a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP), the
 * PMI socket of every rank and, with --tag-output, their output pipes. The
 * first failure (a rank exiting non-zero or killed, an abort, the timeout, a
 * signal) is reported once, and the job is stopped: SIGTERM to every rank's
 * process group, SIGKILL half a second later.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xportals/build_config.h"
#include "xprun.h"

#define KILL_GRACE_NS 500000000ull  /* SIGTERM, then SIGKILL this much later */
#define DRAIN_NS 200000000ull       /* output still read after the last exit */

uint64_t xprun_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ options */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: xprun -n N [options] program [args...]\n"
            "Start N processes of program on this machine and serve them PMI-1.\n"
            "  -n, -np N            number of processes (1..4096)\n"
            "  -x VAR[=value]       set VAR in the processes' environment (repeatable)\n"
            "  --timeout S          kill the job after S seconds (exit code 124)\n"
            "  --tag-output         prefix every output line with \"[rank] \"\n"
            "  --bind-to none|core  bind rank i to the i-th allowed core (default core)\n"
            "  -v, --verbose        print the PMI traffic on stderr\n"
            "  --pmi-vallen-max L   value length announced to the processes (default %d)\n"
            "  -h, --help           this text\n"
            "The processes get PMI_FD, PMI_RANK, PMI_SIZE, XPRUN_RANK and XPRUN_JOBID.\n"
            "If one exits non-zero or is killed, the others are stopped within a second.\n",
            XPRUN_VALLEN_MAX);
}

static int parse_int(const char *text, int min, int max, const char *what, int *out)
{
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno || v < min || v > max) {
        fprintf(stderr, "xprun: %s must be an integer in %d..%d, not \"%s\"\n", what, min, max,
                text ? text : "");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* 0 on success, 1 if help was printed, -1 on a usage error. */
static int parse_options(int argc, char **argv, xprun_options_t *opt)
{
    enum { OPT_TIMEOUT = 256, OPT_TAG, OPT_BIND, OPT_VALLEN };
    static const struct option longopts[] = {
        {"np", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"tag-output", no_argument, NULL, OPT_TAG},
        {"bind-to", required_argument, NULL, OPT_BIND},
        {"verbose", no_argument, NULL, 'v'},
        {"pmi-vallen-max", required_argument, NULL, OPT_VALLEN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (xprun_options_t){.np = -1, .bind_core = 1, .vallen_max = XPRUN_VALLEN_MAX};
    opt->env = calloc((size_t)argc + 1, sizeof *opt->env);
    if (!opt->env)
        return -1;
    int c;
    /* "+": stop at the program name; "-np" is accepted as a long option. */
    while ((c = getopt_long_only(argc, argv, "+n:x:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_int(optarg, 1, 4096, "-n", &opt->np) < 0)
                return -1;
            break;
        case 'x':
            if (!*optarg || *optarg == '=') {
                fprintf(stderr, "xprun: -x needs VAR or VAR=value\n");
                return -1;
            }
            opt->env[opt->nenv++] = optarg;
            break;
        case OPT_TIMEOUT:
            if (parse_int(optarg, 1, 1000000, "--timeout", &opt->timeout_s) < 0)
                return -1;
            break;
        case OPT_TAG:
            opt->tag_output = 1;
            break;
        case OPT_BIND:
            if (strcmp(optarg, "none") && strcmp(optarg, "core")) {
                fprintf(stderr, "xprun: --bind-to takes none or core, not \"%s\"\n", optarg);
                return -1;
            }
            opt->bind_core = !strcmp(optarg, "core");
            break;
        case 'v':
            opt->verbose = 1;
            break;
        case OPT_VALLEN:
            if (parse_int(optarg, 64, XPRUN_VALLEN_MAX, "--pmi-vallen-max", &opt->vallen_max) < 0)
                return -1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (opt->np < 0 || optind >= argc) {
        fprintf(stderr, "xprun: %s\n", opt->np < 0 ? "-n N is required" : "no program given");
        usage(stderr);
        return -1;
    }
    opt->argv = argv + optind;
    return 0;
}

/* ------------------------------------------------------------ failure */

static void signal_all(xprun_job_t *job, int sig)
{
    for (int r = 0; r < job->n; r++) {
        xprun_proc_t *p = &job->procs[r];
        if (p->pid <= 0)
            continue;
        /* The group also holds what the rank started; an exited rank's
         * group may still hold its children. */
        kill(-p->pid, sig);
        if (p->state == PROC_RUNNING)
            kill(p->pid, sig);
    }
}

static void start_killing(xprun_job_t *job)
{
    if (job->killing)
        return;
    job->killing = 1;
    signal_all(job, SIGTERM);
    job->kill_at_ns = xprun_now_ns() + KILL_GRACE_NS;
}

void xprun_fail(xprun_job_t *job, int exit_code, const char *fmt, ...)
{
    if (!job->failed) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        int others = job->running;
        fprintf(stderr, "xprun: %s; stopping the job (%d process%s still running)\n", msg,
                others, others == 1 ? "" : "es");
        job->failed = 1;
        job->exit_code = exit_code ? exit_code : 1;
    }
    start_killing(job);
}

/* ------------------------------------------------------------ children */

static xprun_proc_t *proc_of_pid(xprun_job_t *job, pid_t pid)
{
    for (int r = 0; r < job->n; r++)
        if (job->procs[r].pid == pid)
            return &job->procs[r];
    return NULL;
}

static void reap(xprun_job_t *job)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        xprun_proc_t *p = proc_of_pid(job, pid);
        if (!p || p->state == PROC_EXITED)
            continue;
        p->state = PROC_EXITED;
        p->status = status;
        job->running--;
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            xprun_fail(job, WEXITSTATUS(status), "rank %d (pid %d) exited with status %d",
                       p->rank, (int)pid, WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            xprun_fail(job, 128 + WTERMSIG(status), "rank %d (pid %d) was killed by signal %d (%s)",
                       p->rank, (int)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            xprun_pmi_check_barrier(job);
    }
}

static void on_signal(xprun_job_t *job, int sigfd)
{
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue; /* reap() runs after every wake-up */
        if (job->failed && job->killing) {
            /* A second interrupt: no more patience. */
            signal_all(job, SIGKILL);
            job->killing = 2;
            continue;
        }
        xprun_fail(job, 128 + sig, "received signal %d (%s), forwarded to every rank", sig,
                   strsignal(sig));
        if (sig != SIGTERM) /* start_killing sent SIGTERM already */
            signal_all(job, sig);
    }
}

/* ------------------------------------------------------------ output */

static void emit(int out, int rank, int tag, const char *data, size_t len)
{
    char prefix[24];
    int plen = tag ? snprintf(prefix, sizeof prefix, "[%d] ", rank) : 0;
    struct iovec iov[2] = {{prefix, (size_t)plen}, {(void *)data, len}};
    ssize_t w = writev(out, iov, 2); /* one call, so ranks' lines do not mix */
    (void)w;
}

/* Forward complete lines, each with its rank prefix. */
static void stream_readable(xprun_proc_t *p, xprun_stream_t *s, int final)
{
    ssize_t n = final ? 0 : read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n > 0)
        s->len += (size_t)n;
    size_t start = 0;
    char *nl;
    while ((nl = memchr(s->buf + start, '\n', s->len - start))) {
        size_t end = (size_t)(nl - s->buf) + 1;
        emit(s->out, p->rank, !s->mid_line, s->buf + start, end - start);
        s->mid_line = 0;
        start = end;
    }
    s->len -= start;
    memmove(s->buf, s->buf + start, s->len);
    /* A full buffer without a newline, or the end: pass on what we have. */
    if (s->len && (s->len == sizeof s->buf || n <= 0)) {
        emit(s->out, p->rank, !s->mid_line, s->buf, s->len);
        if (n <= 0)
            emit(s->out, p->rank, 0, "\n", 1);
        s->mid_line = n > 0;
        s->len = 0;
    }
    if (n <= 0) {
        close(s->fd);
        s->fd = -1;
    }
}

/* ------------------------------------------------------------ main loop */

enum { SLOT_PMI, SLOT_OUT, SLOT_ERR, SLOTS_PER_RANK };

static int poll_timeout_ms(const xprun_job_t *job, uint64_t extra_deadline)
{
    uint64_t next = job->deadline_ns;
    if (job->killing == 1 && job->kill_at_ns < next)
        next = job->kill_at_ns;
    if (extra_deadline < next)
        next = extra_deadline;
    if (next == UINT64_MAX)
        return -1;
    uint64_t now = xprun_now_ns();
    return next <= now ? 0 : (int)((next - now) / 1000000 + 1);
}

static int open_streams(const xprun_job_t *job)
{
    for (int r = 0; r < job->n; r++)
        if (job->procs[r].out.fd >= 0 || job->procs[r].err.fd >= 0)
            return 1;
    return 0;
}

static void run_loop(xprun_job_t *job, int sigfd)
{
    size_t nfds = 1 + (size_t)job->n * SLOTS_PER_RANK;
    struct pollfd *pfd = calloc(nfds, sizeof *pfd);
    uint64_t drain_end = UINT64_MAX;
    if (!pfd) {
        xprun_fail(job, 1, "out of memory");
        return;
    }
    while (job->running > 0 || (open_streams(job) && xprun_now_ns() < drain_end)) {
        pfd[0] = (struct pollfd){.fd = sigfd, .events = POLLIN};
        for (int r = 0; r < job->n; r++) {
            xprun_proc_t *p = &job->procs[r];
            int fds[SLOTS_PER_RANK] = {p->pmi_fd, p->out.fd, p->err.fd};
            for (int k = 0; k < SLOTS_PER_RANK; k++)
                pfd[1 + r * SLOTS_PER_RANK + k] = (struct pollfd){.fd = fds[k], .events = POLLIN};
        }
        int ready = poll(pfd, nfds, poll_timeout_ms(job, drain_end));
        if (ready < 0 && errno != EINTR) {
            xprun_fail(job, 1, "poll: %s", strerror(errno));
            signal_all(job, SIGKILL);
            break;
        }
        if (ready > 0 && pfd[0].revents)
            on_signal(job, sigfd);
        for (int r = 0; ready > 0 && r < job->n; r++) {
            xprun_proc_t *p = &job->procs[r];
            struct pollfd *q = &pfd[1 + r * SLOTS_PER_RANK];
            if (q[SLOT_PMI].revents && p->pmi_fd >= 0)
                xprun_pmi_readable(job, p);
            if (q[SLOT_OUT].revents && p->out.fd >= 0)
                stream_readable(p, &p->out, 0);
            if (q[SLOT_ERR].revents && p->err.fd >= 0)
                stream_readable(p, &p->err, 0);
        }
        reap(job);
        uint64_t now = xprun_now_ns();
        if (now >= job->deadline_ns && !job->failed)
            xprun_fail(job, 124, "timeout: the job ran longer than %d s", job->opt->timeout_s);
        if (job->killing == 1 && now >= job->kill_at_ns) {
            signal_all(job, SIGKILL);
            job->killing = 2;
        }
        if (job->running == 0 && drain_end == UINT64_MAX)
            drain_end = now + DRAIN_NS;
    }
    /* Output a process's descendants still hold is cut off here. */
    for (int r = 0; r < job->n; r++) {
        xprun_proc_t *p = &job->procs[r];
        if (p->out.fd >= 0)
            stream_readable(p, &p->out, 1);
        if (p->err.fd >= 0)
            stream_readable(p, &p->err, 1);
    }
    free(pfd);
}

static int setup_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int main(int argc, char **argv)
{
    xprun_options_t opt;
    int rc = parse_options(argc, argv, &opt);
    if (rc) {
        free(opt.env);
        return rc > 0 ? 0 : 2;
    }
    int sigfd = setup_signals();
    if (sigfd < 0) {
        fprintf(stderr, "xprun: signalfd: %s\n", strerror(errno));
        return 1;
    }
    xprun_job_t job = {.opt = &opt, .n = opt.np, .deadline_ns = UINT64_MAX};
    job.procs = calloc((size_t)job.n, sizeof *job.procs);
    job.kvs = xprun_kvs_new();
    if (!job.procs || !job.kvs) {
        fprintf(stderr, "xprun: out of memory\n");
        return 1;
    }
    /* Unique on this machine: our pid, plus the time against pid reuse. */
    snprintf(job.kvsname, sizeof job.kvsname, "xprun_%d_%llx", (int)getpid(),
             (unsigned long long)(xprun_now_ns() / 1000000 % 0xffffff));
    char mapping[64];
    snprintf(mapping, sizeof mapping, "(vector,(0,1,%d))", job.n);
    xprun_kvs_put(job.kvs, "PMI_process_mapping", mapping);
    if (opt.timeout_s)
        job.deadline_ns = xprun_now_ns() + (uint64_t)opt.timeout_s * 1000000000ull;
    for (int r = 0; r < job.n; r++) {
        job.procs[r].pid = 0;
        job.procs[r].pmi_fd = job.procs[r].out.fd = job.procs[r].err.fd = -1;
    }
    for (int r = 0; r < job.n && !job.failed; r++)
        if (xprun_spawn(&job, r) < 0)
            xprun_fail(&job, 1, "could not start rank %d", r);
    run_loop(&job, sigfd);
    for (int r = 0; r < job.n; r++)
        if (job.procs[r].pmi_fd >= 0)
            close(job.procs[r].pmi_fd);
    xprun_kvs_free(job.kvs);
    free(job.procs);
    free(opt.env);
    return job.failed ? job.exit_code : 0;
}
