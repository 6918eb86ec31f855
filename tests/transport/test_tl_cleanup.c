/*
 * Nothing is left in /dev/shm: runs `xprun -n 2 <this program> --rank-mode
 * normal|kill` and checks, after the job, that no segment of its job remains.
 * In the job itself, rank 0 checks right after xp_tl_init that the segments
 * are already unlinked (so even SIGKILL cannot leak them) and prints the job
 * id; in "kill" mode rank 1 then SIGKILLs itself (xprun stops the job).
 * Usage: test_tl_cleanup <path to xprun>
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "transport/transport.h"
#include "xp_test.h"
#include "xportals/xp.h"

static int leftovers(const char *job)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "xp-%s-", job);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            fprintf(stderr, "leftover: /dev/shm/%s\n", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
}

static int rank_main(int argc, char **argv, int kill_mode)
{
    XP_REQUIRE(xp_init(&argc, &argv) == XP_OK);
    XP_REQUIRE(xp_tl_init(on_packet, NULL) == XP_OK);
    /* Each rank unlinks its own segment before xp_tl_init returns; a barrier
     * makes sure every rank got that far before rank 0 looks. */
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (xp_rank() == 0) {
        XP_CHECK_EQ(leftovers(xp_runtime_job_id()), 0);
        printf("job=%s\n", xp_runtime_job_id());
        fflush(stdout);
    }
    XP_REQUIRE(xp_barrier() == XP_OK);
    if (kill_mode && xp_rank() == 1)
        raise(SIGKILL);
    if (kill_mode)
        pause(); /* xprun stops us */
    xp_tl_fini();
    xp_finalize();
    return xp_test_result();
}

/* Run the job; returns xprun's exit status, job id in job. */
static int run_job(const char *xprun, const char *self, const char *mode, char *job, size_t joblen)
{
    int fds[2];
    XP_REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(xprun, xprun, "-n", "2", "--timeout", "20", self, "--rank-mode", mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char out[512] = "";
    size_t got = 0;
    ssize_t n;
    while ((n = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    job[0] = '\0';
    char *j = strstr(out, "job=");
    if (j && sscanf(j, "job=%127s", job) != 1)
        job[0] = '\0';
    (void)joblen;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "--rank-mode"))
        return rank_main(argc, argv, !strcmp(argv[2], "kill"));
    if (argc < 2)
        XP_TEST_SKIP("usage: %s <xprun>", argv[0]);
    char job[128];
    XP_CHECK_EQ(run_job(argv[1], argv[0], "normal", job, sizeof job), 0);
    XP_CHECK(job[0]);
    XP_CHECK_EQ(leftovers(job), 0);
    XP_CHECK(run_job(argv[1], argv[0], "kill", job, sizeof job) != 0);
    XP_CHECK(job[0]);
    XP_CHECK_EQ(leftovers(job), 0);
    return xp_test_result();
}
