/* xpinfo: runs the built tool (path in argv[1]) and checks output and exit codes. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/config.h"
#include "xp_test.h"

extern char **environ;

typedef struct result {
    int code; /* exit status, or -1 if it did not exit normally */
    char out[65536]; /* stdout and stderr together */
} result_t;

static result_t res;

/* Run xpinfo with `arg` (may be NULL) and the extra variables `env` ("K=V", NULL-ended). */
static result_t *run(const char *tool, const char *arg, const char *const *env)
{
    int fd[2];
    XP_REQUIRE(pipe(fd) == 0);
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        for (; env && *env; env++)
            putenv((char *)*env);
        execl(tool, tool, arg, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd[0], res.out + n, sizeof res.out - 1 - n)) > 0)
        n += (size_t)r;
    res.out[n] = '\0';
    close(fd[0]);
    int status;
    XP_REQUIRE(waitpid(pid, &status, 0) == pid);
    res.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return &res;
}

/* Remove XP_* variables inherited from whoever runs the test. */
static void clean_environment(void)
{
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++) {
            if (!strncmp(*e, "XP_", 3) && strncmp(*e, "XP_TEST_", 8)) {
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        XP_TEST_SKIP("usage: test_xpinfo <path to xpinfo>");
    const char *tool = argv[1];
    clean_environment();

    result_t *r = run(tool, NULL, NULL);
    XP_CHECK_EQ(r->code, 0);
    XP_CHECK(strstr(r->out, "Xportals ") && strstr(r->out, "CUDA:") && strstr(r->out, "PMIx:"));
    XP_CHECK(strstr(r->out, "transports:") != NULL);

    r = run(tool, "-c", (const char *const[]){"XP_SPIN_COUNT=77", NULL});
    XP_CHECK_EQ(r->code, 0);
    for (size_t i = 0; i < xp_config_count(); i++) {
        char line[256];
        snprintf(line, sizeof line, "  %s=", xp_config_info(i)->name);
        if (!strstr(r->out, line))
            fprintf(stderr, "xpinfo -c does not list %s\n", xp_config_info(i)->name);
        XP_CHECK(strstr(r->out, line) != NULL);
    }
    XP_CHECK(strstr(r->out, "XP_SPIN_COUNT=77   [set]") != NULL);
    XP_CHECK(strstr(r->out, "XP_LOG_LEVEL=warn\n") != NULL); /* default, not set */
    XP_CHECK(strstr(r->out, "accepts: error|warn|info|debug|trace") != NULL);

    r = run(tool, "-c", (const char *const[]){"XP_SPIN_COUNT=lots", NULL});
    XP_CHECK(r->code != 0);
    XP_CHECK(strstr(r->out, "XP_SPIN_COUNT=lots: expected an integer") != NULL);
    XP_CHECK(strstr(r->out, "invalid values") != NULL);

    r = run(tool, NULL, (const char *const[]){"XP_LOG_LEVEL=loud", NULL});
    XP_CHECK(r->code != 0);
    XP_CHECK(strstr(r->out, "XP_LOG_LEVEL=loud: expected one of") != NULL);

    r = run(tool, NULL, (const char *const[]){"XP_LOG_LEVLE=debug", NULL});
    XP_CHECK_EQ(r->code, 0); /* an unknown name is a warning, not an error */
    XP_CHECK(strstr(r->out, "did you mean XP_LOG_LEVEL?") != NULL);

    r = run(tool, "-h", NULL);
    XP_CHECK_EQ(r->code, 0);
    XP_CHECK(strstr(r->out, "usage: xpinfo") != NULL);

    r = run(tool, "--no-such-option", NULL);
    XP_CHECK_EQ(r->code, 2);
    XP_CHECK(strstr(r->out, "usage: xpinfo") != NULL);

    r = run(tool, "stray", NULL);
    XP_CHECK_EQ(r->code, 2);
    if (xp_test_failures_)
        fprintf(stderr, "last output:\n%s\n", r->out);
    return xp_test_result();
}
