/*
 * The PMI-1 client against a scripted fake launcher (a thread on the other
 * end of a socket pair, or of a TCP connection for PMI_PORT): a correct
 * server, garbage answers, a closed connection, silence (XP_BOOTSTRAP_TIMEOUT),
 * a refused version, undecodable values, bad PMI_* variables. xp_init must
 * fail cleanly, never crash or hang. An inherited PMI_FD is shared with other
 * PMI clients of the process (MPI, OpenSHMEM): xp_finalize leaves it open and
 * unfinalized, and the library finalizes it at exit only if it is still open.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xp_test.h"
#include "xportals/xp.h"

typedef enum { SRV_OK, SRV_GARBAGE, SRV_CLOSE, SRV_SILENT, SRV_REFUSE, SRV_BADVALUE } mode_t_;

typedef struct server {
    int fd;
    int listen_fd; /* >= 0: accept first and do the initack handshake */
    mode_t_ mode;
    int nkv;
    int finalized; /* a finalize arrived (atomic: read by the main thread) */
    char key[16][80], value[16][1100];
} server_t;

static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0)
            return -1;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return 0;
}

static void say(int fd, const char *line)
{
    ssize_t w = write(fd, line, strlen(line));
    (void)w;
}

static const char *field(const char *line, const char *name, char *out, size_t cap)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", name);
    const char *p = strstr(line, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    size_t n = strcspn(p, " ");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

static void answer_get(server_t *s, const char *line)
{
    char key[80], reply[1200];
    field(line, "key", key, sizeof key);
    if (s->mode == SRV_BADVALUE && !strcmp(key, "0/bad")) {
        say(s->fd, "cmd=get_result rc=0 msg=success value=1,@@@@\n");
        return;
    }
    if (s->mode == SRV_BADVALUE && !strcmp(key, "0/multi")) {
        say(s->fd, "cmd=get_result rc=0 msg=success value=3,AAAA\n"); /* parts 1, 2 missing */
        return;
    }
    if (s->mode == SRV_BADVALUE && !strcmp(key, "0/notours")) {
        say(s->fd, "cmd=get_result rc=0 msg=success value=plain\n");
        return;
    }
    for (int i = 0; i < s->nkv; i++) {
        if (!strcmp(s->key[i], key)) {
            snprintf(reply, sizeof reply, "cmd=get_result rc=0 msg=success value=%s\n", s->value[i]);
            say(s->fd, reply);
            return;
        }
    }
    say(s->fd, "cmd=get_result rc=-1 msg=key_not_found\n");
}

static void *serve(void *arg)
{
    server_t *s = arg;
    char line[1200];
    if (s->listen_fd >= 0) {
        s->fd = accept(s->listen_fd, NULL, NULL);
        if (s->fd < 0 || read_line(s->fd, line, sizeof line) < 0 ||
            strcmp(line, "cmd=initack pmiid=7"))
            return NULL;
        say(s->fd, "cmd=initack\ncmd=set size=1\ncmd=set rank=0\ncmd=set debug=0\n");
    }
    while (read_line(s->fd, line, sizeof line) == 0) {
        if (s->mode == SRV_GARBAGE) {
            say(s->fd, "hello world\n");
        } else if (s->mode == SRV_CLOSE) {
            break;
        } else if (s->mode == SRV_SILENT) {
            continue;
        } else if (!strncmp(line, "cmd=init ", 9)) {
            say(s->fd, s->mode == SRV_REFUSE ? "cmd=response_to_init rc=-1\n"
                                             : "cmd=response_to_init pmi_version=1 rc=0\n");
        } else if (!strcmp(line, "cmd=get_maxes")) {
            say(s->fd, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n");
        } else if (!strcmp(line, "cmd=get_my_kvsname")) {
            say(s->fd, "cmd=my_kvsname kvsname=fake_kvs_1\n");
        } else if (!strncmp(line, "cmd=put ", 8) && s->nkv < 16) {
            field(line, "key", s->key[s->nkv], sizeof s->key[0]);
            field(line, "value", s->value[s->nkv], sizeof s->value[0]);
            s->nkv++;
            say(s->fd, "cmd=put_result rc=0\n");
        } else if (!strncmp(line, "cmd=get ", 8)) {
            answer_get(s, line);
        } else if (!strcmp(line, "cmd=barrier_in")) {
            say(s->fd, "cmd=barrier_out\n");
        } else if (!strcmp(line, "cmd=finalize")) {
            say(s->fd, "cmd=finalize_ack\n");
            __atomic_store_n(&s->finalized, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    close(s->fd);
    return NULL;
}

/* Start a fake launcher on a socket pair; the client end goes to PMI_FD. */
static int start(server_t *s, pthread_t *t, mode_t_ mode, int rank, int size)
{
    int sv[2];
    XP_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    memset(s, 0, sizeof *s);
    s->fd = sv[0];
    s->listen_fd = -1;
    s->mode = mode;
    char buf[16];
    snprintf(buf, sizeof buf, "%d", sv[1]);
    setenv("PMI_FD", buf, 1);
    snprintf(buf, sizeof buf, "%d", rank);
    setenv("PMI_RANK", buf, 1);
    snprintf(buf, sizeof buf, "%d", size);
    setenv("PMI_SIZE", buf, 1);
    XP_REQUIRE(pthread_create(t, NULL, serve, s) == 0);
    return sv[1];
}

/* xp_init must fail with `want`; then the client end is closed and the
 * server thread ends. */
static void expect_init_failure(mode_t_ mode, int rank, int size, xp_status_t want)
{
    server_t s;
    pthread_t t;
    int fd = start(&s, &t, mode, rank, size);
    XP_CHECK_EQ(xp_init(NULL, NULL), want);
    XP_CHECK(!xp_initialized());
    close(fd);
    pthread_join(t, NULL);
}

static void test_good_server(void)
{
    server_t s;
    pthread_t t;
    int fd = start(&s, &t, SRV_OK, 0, 1);
    XP_REQUIRE(xp_init(NULL, NULL) == XP_OK);
    XP_CHECK_STR(xp_bootstrap_name(), "pmi1");
    XP_CHECK_EQ(xp_size(), 1);
    XP_CHECK_EQ(xp_kv_put("k", "value", 6), XP_OK);
    XP_CHECK_EQ(xp_kv_fence(), XP_OK);
    char buf[16];
    size_t len = sizeof buf;
    XP_CHECK_EQ(xp_kv_get(0, "k", buf, &len), XP_OK);
    XP_CHECK_EQ(len, 6);
    XP_CHECK_STR(buf, "value");
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    /* The shared channel stays open and unfinalized, and serves a new init. */
    XP_CHECK(fcntl(fd, F_GETFD) >= 0);
    XP_CHECK_EQ(__atomic_load_n(&s.finalized, __ATOMIC_ACQUIRE), 0);
    XP_REQUIRE(xp_init(NULL, NULL) == XP_OK);
    XP_CHECK_EQ(xp_barrier(), XP_OK);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    close(fd); /* as the program's own PMI client would at its finalize */
    pthread_join(t, NULL);
    XP_CHECK_EQ(s.finalized, 0);
}

/* A child inherits PMI_FD, runs xp_init/xp_finalize and exits: the finalize
 * comes at exit, unless the child closed the descriptor itself first (as
 * MPICH's PMI client does in MPI_Finalize). */
static void test_finalize_at_exit(int child_closes)
{
    int sv[2];
    XP_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t pid = fork();
    XP_REQUIRE(pid >= 0);
    if (pid == 0) {
        char buf[16];
        close(sv[0]);
        snprintf(buf, sizeof buf, "%d", sv[1]);
        setenv("PMI_FD", buf, 1);
        setenv("PMI_RANK", "0", 1);
        setenv("PMI_SIZE", "1", 1);
        if (xp_init(NULL, NULL) != XP_OK || xp_finalize() != XP_OK)
            _exit(3);
        if (child_closes)
            close(sv[1]);
        exit(0);
    }
    close(sv[1]);
    server_t s = {.fd = sv[0], .listen_fd = -1, .mode = SRV_OK};
    pthread_t t;
    XP_REQUIRE(pthread_create(&t, NULL, serve, &s) == 0);
    int status = 0;
    XP_CHECK_EQ(waitpid(pid, &status, 0), pid);
    XP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pthread_join(t, NULL);
    XP_CHECK_EQ(s.finalized, !child_closes);
}

static void test_bad_values(void)
{
    server_t s;
    pthread_t t;
    int fd = start(&s, &t, SRV_BADVALUE, 0, 1);
    XP_REQUIRE(xp_init(NULL, NULL) == XP_OK);
    char buf[64];
    size_t len = sizeof buf;
    XP_CHECK_EQ(xp_kv_get(0, "bad", buf, &len), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_kv_get(0, "multi", buf, &len), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_kv_get(0, "notours", buf, &len), XP_ERR_PROTOCOL);
    XP_CHECK_EQ(xp_kv_get(0, "absent", buf, &len), XP_ERR_NOT_FOUND);
    XP_CHECK_EQ(len, sizeof buf);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    close(fd);
    pthread_join(t, NULL);
}

static void test_pmi_port(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    XP_REQUIRE(lfd >= 0 && bind(lfd, (struct sockaddr *)&addr, sizeof addr) == 0);
    XP_REQUIRE(listen(lfd, 1) == 0 && getsockname(lfd, (struct sockaddr *)&addr, &alen) == 0);
    server_t s = {.listen_fd = lfd, .mode = SRV_OK};
    pthread_t t;
    char port[64];
    snprintf(port, sizeof port, "127.0.0.1:%d", ntohs(addr.sin_port));
    unsetenv("PMI_FD");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    setenv("PMI_PORT", port, 1);
    setenv("PMI_ID", "7", 1);
    XP_REQUIRE(pthread_create(&t, NULL, serve, &s) == 0);
    XP_CHECK_EQ(xp_init(NULL, NULL), XP_OK);
    XP_CHECK_EQ(xp_rank(), 0);
    XP_CHECK_EQ(xp_size(), 1);
    XP_CHECK_EQ(xp_barrier(), XP_OK);
    XP_CHECK_EQ(xp_finalize(), XP_OK);
    pthread_join(t, NULL);
    close(lfd);
    setenv("PMI_PORT", "no-colon-here", 1);
    XP_CHECK_EQ(xp_init(NULL, NULL), XP_ERR_CONFIG);
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
}

int main(void)
{
    /* Before the configuration is first read: silence is detected in 1 s. */
    setenv("XP_BOOTSTRAP_TIMEOUT", "1", 1);
    setenv("XP_LOG_LEVEL", "error", 1);
    test_good_server();
    test_bad_values();
    test_finalize_at_exit(0);
    test_finalize_at_exit(1);
    expect_init_failure(SRV_GARBAGE, 0, 1, XP_ERR_PROTOCOL);
    expect_init_failure(SRV_CLOSE, 0, 1, XP_ERR_PEER_DEAD);
    expect_init_failure(SRV_REFUSE, 0, 1, XP_ERR_PROTOCOL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_init_failure(SRV_SILENT, 0, 1, XP_ERR_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    XP_CHECK(took >= 0.9 && took < 3.0);
    expect_init_failure(SRV_OK, 5, 2, XP_ERR_PROTOCOL); /* rank >= size */
    setenv("PMI_FD", "abc", 1);
    XP_CHECK_EQ(xp_init(NULL, NULL), XP_ERR_CONFIG);
    setenv("PMI_FD", "987", 1); /* not open */
    XP_CHECK_EQ(xp_init(NULL, NULL), XP_ERR_CONFIG);
    test_pmi_port();
    return xp_test_result();
}
