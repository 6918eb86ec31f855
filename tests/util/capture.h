/* Capture what a piece of code writes to stderr (pipe + dup2), for log tests. */
#ifndef XP_TEST_CAPTURE_H
#define XP_TEST_CAPTURE_H

#include <fcntl.h>
#include <unistd.h>

#include "xp_test.h"

typedef struct capture {
    int saved_fd;
    int pipe_fd[2];
    char text[16384];
} capture_t;

static inline void capture_begin(capture_t *c)
{
    fflush(stderr);
    XP_REQUIRE(pipe(c->pipe_fd) == 0);
    /* Non-blocking, so a test that writes more than the pipe holds fails
     * instead of hanging. */
    fcntl(c->pipe_fd[1], F_SETFL, O_NONBLOCK);
    c->saved_fd = dup(STDERR_FILENO);
    XP_REQUIRE(c->saved_fd >= 0);
    XP_REQUIRE(dup2(c->pipe_fd[1], STDERR_FILENO) == STDERR_FILENO);
    close(c->pipe_fd[1]);
}

/* Restore stderr; the captured text (NUL-terminated) is in c->text. */
static inline const char *capture_end(capture_t *c)
{
    fflush(stderr);
    dup2(c->saved_fd, STDERR_FILENO);
    close(c->saved_fd);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof c->text - 1 && (r = read(c->pipe_fd[0], c->text + n, sizeof c->text - 1 - n)) > 0)
        n += (size_t)r;
    c->text[n] = '\0';
    close(c->pipe_fd[0]);
    return c->text;
}

#endif
