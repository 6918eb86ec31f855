/* Starting one rank: its PMI socket, output pipes, process group, affinity
 * and environment. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/config.h"
#include "xprun.h"

/* The i-th CPU (mod count) among those xprun may run on. */
static int pick_cpu(int i)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) < 0)
        return -1;
    int count = CPU_COUNT(&set);
    if (count <= 0)
        return -1;
    int want = i % count;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set) && want-- == 0)
            return cpu;
    return -1;
}

static void set_env_int(const char *name, int value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", value);
    setenv(name, buf, 1);
}

#define TUNE_HUGETLB "glibc.malloc.hugetlb="
#define TUNE_MMAP "glibc.malloc.mmap_threshold="
/* glibc's own ceiling for the mmap threshold it raises as large blocks are
 * freed (64-bit): buffers up to this size come from the main heap. */
#define TUNE_MMAP_VALUE "33554432"

/* Where the value of tunable `name` (with its '=') starts in a
 * GLIBC_TUNABLES string, or NULL when the string does not set it. */
static const char *tunable_value(const char *cur, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = cur; p && (p = strstr(p, name)) != NULL; p += n)
        if (p == cur || p[-1] == ':')
            return p + n;
    return NULL;
}

/* GLIBC_TUNABLES for a rank: `cur` (NULL: unset) with glibc.malloc.hugetlb=1
 * and glibc.malloc.mmap_threshold=32 MiB added, written into out; NULL when
 * it stays as it is. Large malloc buffers then sit in 2 MiB pages where the
 * kernel's THP mode is madvise: a single-copy transfer (process_vm_readv/
 * writev) pins one page per 2 MiB instead of 512, which on the AMD VM of
 * round 27 doubled one process's copy rate (12 -> 26 GB/s). The threshold
 * matters because glibc advises only blocks of 2 MiB or more, and a block
 * mapped on its own holds few whole aligned 2 MiB ranges (none below 2
 * MiB); from the heap, which glibc grows in 2 MiB steps and advises as a
 * whole, a 1 MiB buffer lies in huge pages too. A hugetlb setting of the
 * user's is kept, and then the threshold is added only to hugetlb=1; a
 * threshold of the user's is kept. */
static const char *xprun_tunables(const char *cur, char *out, size_t len)
{
    const char *h = tunable_value(cur, TUNE_HUGETLB);
    int add_h = !h;
    int add_m = !tunable_value(cur, TUNE_MMAP) && (!h || (h[0] == '1' && (!h[1] || h[1] == ':')));
    if (!add_h && !add_m)
        return NULL;
    int n = snprintf(out, len, "%s%s%s%s%s", cur ? cur : "", cur && *cur ? ":" : "",
                     add_h ? TUNE_HUGETLB "1" : "", add_h && add_m ? ":" : "",
                     add_m ? TUNE_MMAP TUNE_MMAP_VALUE : "");
    return n > 0 && (size_t)n < len ? out : NULL;
}

/* XP_MALLOC_HUGEPAGES, read in the child so that -x settings count (alone:
 * the rank's library reports the environment's other XP_* variables). */
static void malloc_hugepages(void)
{
    char buf[4096];
    xp_config_t cfg;
    xp_config_read_one(XP_CFG_IDX_malloc_hugepages, &cfg);
    if (!cfg.malloc_hugepages)
        return;
    const char *v = xprun_tunables(getenv("GLIBC_TUNABLES"), buf, sizeof buf);
    if (v)
        setenv("GLIBC_TUNABLES", v, 1);
}

/* In the child, after fork: never returns. */
static void child_exec(xprun_job_t *job, int rank, int pmi_fd, int out_fd, int err_fd,
                       pid_t parent, int cpu)
{
    const xprun_options_t *opt = job->opt;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    /* Die with xprun, even if it is SIGKILLed; it may already be gone. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            fprintf(stderr, "xprun: rank %d: cannot bind to core %d: %s\n", rank, cpu,
                    strerror(errno));
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        close(devnull);
    }
    if (out_fd >= 0)
        dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0)
        dup2(err_fd, STDERR_FILENO);
    fcntl(pmi_fd, F_SETFD, 0); /* the one descriptor the program inherits */
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
    set_env_int("PMI_FD", pmi_fd);
    set_env_int("PMI_RANK", rank);
    set_env_int("PMI_SIZE", job->n);
    /* What Hydra also sets for programs that want their place on the node. */
    set_env_int("MPI_LOCALRANKID", rank);
    set_env_int("MPI_LOCALNRANKS", job->n);
    set_env_int("XPRUN_RANK", rank);
    setenv("XPRUN_JOBID", job->kvsname, 1);
    for (int i = 0; i < opt->nenv; i++) {
        char *eq = strchr(opt->env[i], '=');
        if (eq) {
            *eq = '\0';
            setenv(opt->env[i], eq + 1, 1);
        }
    }
    malloc_hugepages();
    execvp(opt->argv[0], opt->argv);
    fprintf(stderr, "xprun: rank %d: cannot execute %s: %s\n", rank, opt->argv[0],
            strerror(errno));
    _exit(127);
}

static int make_pipe(int fds[2], int wanted)
{
    fds[0] = fds[1] = -1;
    if (!wanted)
        return 0;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "xprun: pipe: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int xprun_spawn(xprun_job_t *job, int rank)
{
    xprun_proc_t *p = &job->procs[rank];
    int sv[2], outp[2], errp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "xprun: socketpair: %s\n", strerror(errno));
        return -1;
    }
    if (make_pipe(outp, job->opt->tag_output) < 0 || make_pipe(errp, job->opt->tag_output) < 0) {
        close_pair(sv);
        close_pair(outp);
        return -1;
    }
    int cpu = job->opt->bind_core ? pick_cpu(rank) : -1;
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "xprun: fork: %s\n", strerror(errno));
        close_pair(sv);
        close_pair(outp);
        close_pair(errp);
        return -1;
    }
    if (pid == 0)
        child_exec(job, rank, sv[1], outp[1], errp[1], parent, cpu);
    setpgid(pid, pid); /* also here, so kill(-pid) works before the child runs */
    close(sv[1]);
    p->rank = rank;
    p->pid = pid;
    p->state = PROC_RUNNING;
    p->pmi_fd = sv[0];
    fcntl(p->pmi_fd, F_SETFL, O_NONBLOCK);
    p->out.fd = outp[0];
    p->out.out = STDOUT_FILENO;
    p->err.fd = errp[0];
    p->err.out = STDERR_FILENO;
    if (outp[1] >= 0)
        close(outp[1]);
    if (errp[1] >= 0)
        close(errp[1]);
    job->running++;
    return 0;
}
