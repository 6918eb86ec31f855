/*
 * xprun_helper MODE PIDFILE [args]: the program test_xprun starts under
 * xprun. Each process appends "pid <pid>" to PIDFILE (and the failing one
 * "fail <monotonic ns>" just before it fails) so the test can check that
 * every process is gone and how fast. Rank comes from XPRUN_RANK.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "xportals/xp.h"

static const char *pidfile;

static void note(const char *what, long long value)
{
    char line[64];
    int n = snprintf(line, sizeof line, "%s %lld\n", what, value);
    int fd = open(pidfile, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n); /* one small write: atomic with O_APPEND */
        (void)w;
        close(fd);
    }
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void fail_now(int code)
{
    note("fail", now_ns());
    exit(code);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- raw PMI */

static int pmi_fd = -1;

/* Send one request and compare the answer's first characters with `want`. */
static int exchange(const char *req, const char *want)
{
    char buf[1100];
    size_t len = 0;
    if (write(pmi_fd, req, strlen(req)) != (ssize_t)strlen(req))
        return 0;
    while (len < sizeof buf - 1) {
        ssize_t n = read(pmi_fd, buf + len, 1);
        if (n <= 0)
            return 0;
        if (buf[len++] == '\n')
            break;
    }
    buf[len] = '\0';
    if (strncmp(buf, want, strlen(want))) {
        fprintf(stderr, "rawpmi: sent %s  expected %s...\n  got %s", req, want, buf);
        return 0;
    }
    return 1;
}

static int raw_pmi(void)
{
    const char *fd = getenv("PMI_FD");
    if (!fd)
        return 1;
    pmi_fd = atoi(fd);
    int ok = 1;
    ok &= exchange("cmd=init pmi_version=2 pmi_subversion=0\n",
                   "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1");
    ok &= exchange("cmd=init pmi_version=1 pmi_subversion=1\n",
                   "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    ok &= exchange("cmd=frobnicate\n", "cmd=frobnicate_result rc=-1");
    ok &= exchange("nocmd=here\n", "cmd=error rc=-1");
    ok &= exchange("\n", "cmd=error rc=-1");
    ok &= exchange("cmd=get_universe_size\n", "cmd=universe_size rc=0 size=1");
    ok &= exchange("cmd=get_appnum\n", "cmd=appnum rc=0 appnum=0");
    char req[512], kvs[300] = "";
    /* get_my_kvsname: read the name out of the answer */
    if (write(pmi_fd, "cmd=get_my_kvsname\n", 19) != 19)
        return 1;
    char buf[400];
    size_t len = 0;
    while (len < sizeof buf - 1 && read(pmi_fd, buf + len, 1) == 1 && buf[len] != '\n')
        len++;
    buf[len] = '\0';
    char *k = strstr(buf, "kvsname=");
    if (!k)
        return 1;
    sscanf(k + 8, "%299s", kvs);
    snprintf(req, sizeof req, "cmd=get kvsname=%s key=nosuchkey\n", kvs);
    ok &= exchange(req, "cmd=get_result rc=-1");
    snprintf(req, sizeof req, "cmd=get kvsname=%s key=PMI_process_mapping\n", kvs);
    ok &= exchange(req, "cmd=get_result rc=0 msg=success value=(vector,(0,1,1))");
    snprintf(req, sizeof req, "cmd=put kvsname=%s key=k1 value=v1\n", kvs);
    ok &= exchange(req, "cmd=put_result rc=0");
    snprintf(req, sizeof req, "cmd=put kvsname=wrong key=k1 value=v1\n");
    ok &= exchange(req, "cmd=put_result rc=-1");
    snprintf(req, sizeof req, "cmd=put kvsname=%s key=%070d value=v\n", kvs, 0);
    ok &= exchange(req, "cmd=put_result rc=-1"); /* key too long */
    snprintf(req, sizeof req, "cmd=get kvsname=%s key=k1\n", kvs);
    ok &= exchange(req, "cmd=get_result rc=0 msg=success value=v1");
    ok &= exchange("cmd=barrier_in\n", "cmd=barrier_out");
    /* A line longer than the server accepts draws an error, not a hang. */
    static char huge[5000];
    memset(huge, 'x', sizeof huge - 2);
    huge[sizeof huge - 2] = '\n';
    ok &= exchange(huge, "cmd=error rc=-1");
    ok &= exchange("cmd=finalize\n", "cmd=finalize_ack");
    return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- modes */

static void print_affinity(int rank)
{
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &set))
            first = c;
    printf("cpus %d %d %d\n", rank, CPU_COUNT(&set), first);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: xprun_helper MODE PIDFILE [args]\n");
        return 2;
    }
    const char *mode = argv[1];
    pidfile = argv[2];
    const char *r = getenv("XPRUN_RANK");
    int rank = r ? atoi(r) : -1;
    note("pid", getpid());

    if (!strcmp(mode, "sleep")) {
        nap_ms(30000);
    } else if (!strcmp(mode, "fail") || !strcmp(mode, "fail-ignore-term")) {
        if (!strcmp(mode, "fail-ignore-term"))
            signal(SIGTERM, SIG_IGN);
        if (rank == 1) {
            nap_ms(300);
            fail_now(3);
        }
        nap_ms(30000);
    } else if (!strcmp(mode, "kill")) {
        if (rank == 2) {
            nap_ms(300);
            note("fail", now_ns());
            raise(SIGKILL);
        }
        nap_ms(30000);
    } else if (!strcmp(mode, "grandchild")) {
        pid_t pid = fork();
        if (pid == 0) {
            note("pid", getpid());
            nap_ms(30000);
            _exit(0);
        }
        if (rank == 1) {
            nap_ms(300);
            fail_now(3);
        }
        nap_ms(30000);
    } else if (!strcmp(mode, "abort")) {
        if (xp_init(&argc, &argv) != XP_OK)
            return 1;
        if (xp_rank() == 0) {
            nap_ms(200);
            note("fail", now_ns());
            xp_abort(5, "helper abort");
        }
        xp_barrier(); /* never completes: rank 0 aborts instead */
        nap_ms(30000);
    } else if (!strcmp(mode, "exit-in-barrier")) {
        if (xp_init(&argc, &argv) != XP_OK)
            return 1;
        if (xp_rank() == 0) {
            note("fail", now_ns());
            return 0; /* exits 0 while the others wait in a barrier */
        }
        xp_barrier();
        nap_ms(30000);
    } else if (!strcmp(mode, "echo")) {
        printf("hello from %d\n", rank);
        fflush(stdout);
        fprintf(stderr, "err from %d\n", rank);
        printf("partial line from %d", rank); /* no newline at the end */
    } else if (!strcmp(mode, "affinity")) {
        print_affinity(rank);
    } else if (!strcmp(mode, "env")) {
        const char *v = argc > 4 ? getenv(argv[3]) : NULL;
        return v && !strcmp(v, argv[4]) ? 0 : 1;
    } else if (!strcmp(mode, "rawpmi")) {
        return raw_pmi();
    } else if (!strcmp(mode, "ok")) {
        return 0;
    } else {
        fprintf(stderr, "xprun_helper: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
