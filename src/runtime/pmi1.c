/*
 * PMI-1 client: the text protocol of MPICH's "simple PMI", spoken over the
 * socket a launcher hands us in PMI_FD (xprun, Hydra, Slurm's pmi2 plugin)
 * or at PMI_PORT ("host:port").
 *
 * Binary values are encoded (kv_codec.h) and split over several launcher
 * keys when the launcher's vallen_max or the 1024-byte line limit of MPICH
 * clients is too small: the first key holds "<nchunks>,<data>", the others
 * "<key>~<i>" hold the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/boot.h"
#include "runtime/kv_codec.h"
#include "runtime/pmi_wire.h"
#include "util/clock.h"
#include "util/context.h"
#include "util/log.h"

#define KVSNAME_MAX 256
#define CHUNK_SUFFIX_MAX 4 /* "~NNN" */
#define ENCODED_MAX ((XP_KV_MAX_VALUE + 2) / 3 * 4 + 1)

typedef struct pmi1 {
    pthread_mutex_t lock; /* one request/answer at a time */
    int fd;
    int own_fd; /* 1: we connected to PMI_PORT; 0: inherited PMI_FD */
    dev_t fd_dev; /* identity of the inherited socket, to finalize at exit */
    ino_t fd_ino;
    int rank;
    int timeout_ms;
    char kvsname[KVSNAME_MAX];
    size_t key_max;   /* characters of a wire key, suffix included */
    size_t chunk_max; /* encoded characters per launcher value */
    char rbuf[4 * XP_PMI_MAXLINE];
    size_t rlen;
} pmi1_t;

/* ------------------------------------------------------------ line I/O */

static xp_status_t write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            xp_log_errno(XP_LOG_ERROR, "PMI: write to the launcher failed");
            return XP_ERR_IO;
        }
        buf += n;
        len -= (size_t)n;
    }
    return XP_OK;
}

/* Longest sleep in the progress hook between two looks at the launcher's
 * socket: what a barrier may take longer with XP_PROGRESS=inline. */
#define HOOK_SLICE_NS 500000ull

/* How long a wait for the launcher first spins, alternating looks at its
 * socket with the Portals poll hook (context.h): a barrier here takes ~50-100
 * us, and a peer's request that arrives meanwhile (the ACK of a put made just
 * before the barrier) is answered now rather than when the progress thread
 * wakes up. */
#define SPIN_NS 200000ull

/* Read one line (without '\n') into line; timeout_ms < 0 waits forever.
 * With a progress hook (XP_PROGRESS=inline, context.h) the wait alternates
 * a non-blocking look at the socket with the hook, which handles Portals
 * packets and sleeps on their doorbell for at most HOOK_SLICE_NS; with only
 * the poll hook (a progress thread), the same with the poll hook for the
 * first SPIN_NS, then a plain poll() on the socket. */
static xp_status_t read_line(pmi1_t *p, char *line, size_t cap, int timeout_ms)
{
    uint64_t deadline = xp_deadline_ns(timeout_ms);
    uint64_t spin_end = xp_time_ns() + SPIN_NS;
    for (;;) {
        char *nl = memchr(p->rbuf, '\n', p->rlen);
        if (nl) {
            size_t n = (size_t)(nl - p->rbuf);
            if (n >= cap) {
                xp_error("PMI: answer of %zu bytes is too long", n);
                return XP_ERR_PROTOCOL;
            }
            memcpy(line, p->rbuf, n);
            line[n] = '\0';
            memmove(p->rbuf, nl + 1, p->rlen - n - 1);
            p->rlen -= n + 1;
            return XP_OK;
        }
        if (p->rlen == sizeof p->rbuf) {
            xp_error("PMI: answer line longer than %zu bytes", sizeof p->rbuf);
            return XP_ERR_PROTOCOL;
        }
        int wait = -1;
        if (deadline != UINT64_MAX) {
            uint64_t now = xp_time_ns();
            if (now >= deadline) {
                xp_error("PMI: no answer from the launcher within %d s", timeout_ms / 1000);
                return XP_ERR_TIMEOUT;
            }
            wait = (int)((deadline - now) / 1000000) + 1;
        }
        xp_wait_hook_fn hook = __atomic_load_n(&xp_ctx.runtime_wait_hook, __ATOMIC_ACQUIRE);
        int (*spin)(void) = hook ? NULL : __atomic_load_n(&xp_ctx.runtime_poll_hook, __ATOMIC_ACQUIRE);
        if (spin && xp_time_ns() >= spin_end)
            spin = NULL;
        struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
        int r = poll(&pfd, 1, hook || spin ? 0 : wait);
        if (r < 0 && errno != EINTR) {
            xp_log_errno(XP_LOG_ERROR, "PMI: poll");
            return XP_ERR_IO;
        }
        if (r == 0 && hook)
            hook(HOOK_SLICE_NS, NULL, NULL);
        if (r == 0 && spin)
            spin();
        if (r <= 0)
            continue;
        ssize_t n = read(p->fd, p->rbuf + p->rlen, sizeof p->rbuf - p->rlen);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            xp_log_errno(XP_LOG_ERROR, "PMI: read from the launcher");
            return XP_ERR_IO;
        }
        if (n == 0) {
            xp_error("PMI: the launcher closed the connection");
            return XP_ERR_PEER_DEAD;
        }
        p->rlen += (size_t)n;
    }
}

/* Send `req` and read the answer into line/msg; its cmd must be `expect`. */
static xp_status_t request(pmi1_t *p, const char *req, const char *expect, char *line,
                           size_t cap, xp_pmi_msg_t *msg, int timeout_ms)
{
    xp_status_t st = write_all(p->fd, req, strlen(req));
    if (st != XP_OK)
        return st;
    st = read_line(p, line, cap, timeout_ms);
    if (st != XP_OK)
        return st;
    const char *cmd;
    if (xp_pmi_parse(line, msg) != XP_OK || !(cmd = xp_pmi_get(msg, "cmd")) ||
        strcmp(cmd, expect)) {
        xp_error("PMI: expected cmd=%s from the launcher, got \"%s\"", expect, line);
        return XP_ERR_PROTOCOL;
    }
    return XP_OK;
}

/* ------------------------------------------------------------ connecting */

static xp_status_t env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    char *end;
    long l = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || l < 0 || l > 1 << 30) {
        xp_error("PMI: %s is %s%s%s", name, v ? "\"" : "not set", v ? v : "", v ? "\"" : "");
        return XP_ERR_CONFIG;
    }
    *out = (int)l;
    return XP_OK;
}

static xp_status_t connect_port(const char *port, int *fd_out)
{
    char host[256];
    const char *colon = strrchr(port, ':');
    if (!colon || colon == port || (size_t)(colon - port) >= sizeof host) {
        xp_error("PMI: PMI_PORT \"%s\" is not host:port", port);
        return XP_ERR_CONFIG;
    }
    memcpy(host, port, (size_t)(colon - port));
    host[colon - port] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) {
        xp_error("PMI: cannot resolve PMI_PORT %s: %s", port, gai_strerror(rc));
        return XP_ERR_CONFIG;
    }
    int fd = -1;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        xp_log_errno(XP_LOG_ERROR, "PMI: cannot connect to PMI_PORT %s", port);
        return XP_ERR_IO;
    }
    *fd_out = fd;
    return XP_OK;
}

/* PMI_PORT with PMI_ID: the launcher tells us size and rank after initack. */
static xp_status_t initack(pmi1_t *p, const char *id, xp_boot_info_t *info)
{
    char req[128], line[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    snprintf(req, sizeof req, "cmd=initack pmiid=%s\n", id);
    xp_status_t st = request(p, req, "initack", line, sizeof line, &msg, p->timeout_ms);
    const char *names[] = {"size", "rank", "debug"};
    int *dest[] = {&info->size, &info->rank, NULL};
    for (int i = 0; st == XP_OK && i < 3; i++) {
        int v = 0;
        st = read_line(p, line, sizeof line, p->timeout_ms);
        if (st == XP_OK && (xp_pmi_parse(line, &msg) != XP_OK ||
                            xp_pmi_get_int(&msg, names[i], &v) != XP_OK)) {
            xp_error("PMI: expected cmd=set %s=<n> after initack", names[i]);
            st = XP_ERR_PROTOCOL;
        }
        if (st == XP_OK && dest[i])
            *dest[i] = v;
    }
    return st;
}

static xp_status_t open_channel(pmi1_t *p, xp_boot_info_t *info)
{
    const char *fdtext = getenv("PMI_FD");
    const char *port = getenv("PMI_PORT");
    if (fdtext && *fdtext) {
        int fd;
        xp_status_t st = env_int("PMI_FD", &fd);
        if (st != XP_OK)
            return st;
        if (fcntl(fd, F_GETFD) < 0) {
            xp_log_errno(XP_LOG_ERROR, "PMI: PMI_FD=%d is not an open descriptor", fd);
            return XP_ERR_CONFIG;
        }
        p->fd = fd;
    } else if (port && *port) {
        xp_status_t st = connect_port(port, &p->fd);
        if (st != XP_OK)
            return st;
        p->own_fd = 1;
        const char *id = getenv("PMI_ID");
        if (id && *id)
            return initack(p, id, info);
    } else {
        xp_error("PMI: neither PMI_FD nor PMI_PORT is set");
        return XP_ERR_CONFIG;
    }
    xp_status_t st = env_int("PMI_RANK", &info->rank);
    if (st == XP_OK)
        st = env_int("PMI_SIZE", &info->size);
    return st;
}

/* init handshake, then limits and the name of our key-value space. */
static xp_status_t handshake(pmi1_t *p)
{
    char line[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    int rc = -1, keylen = 0, vallen = 0;
    xp_status_t st = request(p, "cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init",
                             line, sizeof line, &msg, p->timeout_ms);
    if (st != XP_OK)
        return st;
    if (xp_pmi_get_int(&msg, "rc", &rc) != XP_OK || rc != 0) {
        xp_error("PMI: the launcher refused PMI version 1.1 (rc=%d)", rc);
        return XP_ERR_PROTOCOL;
    }
    st = request(p, "cmd=get_maxes\n", "maxes", line, sizeof line, &msg, p->timeout_ms);
    if (st != XP_OK)
        return st;
    if (xp_pmi_get_int(&msg, "keylen_max", &keylen) != XP_OK ||
        xp_pmi_get_int(&msg, "vallen_max", &vallen) != XP_OK) {
        xp_error("PMI: maxes answer lacks keylen_max or vallen_max");
        return XP_ERR_PROTOCOL;
    }
    st = request(p, "cmd=get_my_kvsname\n", "my_kvsname", line, sizeof line, &msg, p->timeout_ms);
    if (st != XP_OK)
        return st;
    const char *kvs = xp_pmi_get(&msg, "kvsname");
    if (!xp_pmi_token_ok(kvs, 1) || strlen(kvs) >= sizeof p->kvsname) {
        xp_error("PMI: bad kvsname from the launcher");
        return XP_ERR_PROTOCOL;
    }
    strcpy(p->kvsname, kvs);
    /* Launchers store keys and values in fixed arrays that include the NUL. */
    p->key_max = keylen - 1 > 120 ? 120 : (size_t)(keylen > 0 ? keylen - 1 : 0);
    size_t line_room = XP_PMI_MAXLINE - 1 - strlen("cmd=put kvsname= key= value=\n") -
                       strlen(p->kvsname) - p->key_max;
    p->chunk_max = vallen - 1 < (int)line_room ? (size_t)(vallen > 0 ? vallen - 1 : 0) : line_room;
    if (p->key_max < 32 + CHUNK_SUFFIX_MAX || p->chunk_max < 16) {
        xp_error("PMI: launcher limits too small (keylen_max=%d vallen_max=%d)", keylen, vallen);
        return XP_ERR_UNSUPPORTED;
    }
    return XP_OK;
}

static xp_status_t pmi1_init(int timeout_s, void **state, xp_boot_info_t *info)
{
    pmi1_t *p = calloc(1, sizeof *p);
    if (!p)
        return XP_ERR_NO_MEMORY;
    pthread_mutex_init(&p->lock, NULL);
    p->fd = -1;
    p->timeout_ms = timeout_s * 1000;
    xp_status_t st = open_channel(p, info);
    if (st == XP_OK)
        st = handshake(p);
    if (st == XP_OK && (info->size < 1 || info->rank >= info->size)) {
        xp_error("PMI: rank %d of size %d is impossible", info->rank, info->size);
        st = XP_ERR_PROTOCOL;
    }
    if (st != XP_OK) {
        if (p->own_fd)
            close(p->fd);
        free(p);
        return st;
    }
    p->rank = info->rank;
    snprintf(info->job_id, sizeof info->job_id, "%s", p->kvsname);
    *state = p;
    return XP_OK;
}

/* ------------------------------------------------------------ key-value */

static void chunk_key(const pmi1_t *p, int rank, const char *key, int chunk, char *out)
{
    xp_kv_wire_key(rank, key, p->key_max - CHUNK_SUFFIX_MAX, out);
    if (chunk > 0)
        sprintf(out + strlen(out), "~%d", chunk);
}

static xp_status_t put_one(pmi1_t *p, const char *wkey, const char *value)
{
    char req[2 * XP_PMI_MAXLINE], line[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    int rc = -1;
    int n = snprintf(req, sizeof req, "cmd=put kvsname=%s key=%s value=%s\n", p->kvsname, wkey,
                     value);
    if (n < 0 || n >= XP_PMI_MAXLINE)
        return XP_ERR_INTERNAL; /* handshake() sized chunks to fit */
    xp_status_t st = request(p, req, "put_result", line, sizeof line, &msg, p->timeout_ms);
    if (st == XP_OK && (xp_pmi_get_int(&msg, "rc", &rc) != XP_OK || rc != 0)) {
        const char *why = xp_pmi_get(&msg, "msg");
        xp_error("PMI: put of %s refused: %s", wkey, why ? why : "(no reason)");
        st = XP_ERR_IO;
    }
    return st;
}

static xp_status_t pmi1_put(void *state, const char *key, const void *value, size_t len)
{
    pmi1_t *p = state;
    char enc[ENCODED_MAX], wkey[128], chunk[XP_PMI_MAXLINE];
    xp_kv_encode(value, len, enc);
    size_t enclen = strlen(enc), head = p->chunk_max - 4; /* "NN," fits in 4 */
    int nchunks = 1 + (enclen > head ? (int)((enclen - head + p->chunk_max - 1) / p->chunk_max) : 0);
    xp_status_t st = XP_OK;
    pthread_mutex_lock(&p->lock);
    size_t off = 0;
    for (int i = 0; i < nchunks && st == XP_OK; i++) {
        size_t room = i ? p->chunk_max : head, take = enclen - off < room ? enclen - off : room;
        int n = i ? 0 : snprintf(chunk, sizeof chunk, "%d,", nchunks);
        memcpy(chunk + n, enc + off, take);
        chunk[n + take] = '\0';
        off += take;
        chunk_key(p, p->rank, key, i, wkey);
        st = put_one(p, wkey, chunk);
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

/* Get one launcher value; XP_ERR_NOT_FOUND if the launcher has none. */
static xp_status_t get_one(pmi1_t *p, const char *wkey, char *line, size_t cap, const char **value)
{
    char req[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    int rc = -1;
    snprintf(req, sizeof req, "cmd=get kvsname=%s key=%s\n", p->kvsname, wkey);
    xp_status_t st = request(p, req, "get_result", line, cap, &msg, p->timeout_ms);
    if (st != XP_OK)
        return st;
    if (xp_pmi_get_int(&msg, "rc", &rc) != XP_OK || rc != 0)
        return XP_ERR_NOT_FOUND;
    *value = xp_pmi_get(&msg, "value");
    if (!*value) {
        xp_error("PMI: get_result for %s has no value", wkey);
        return XP_ERR_PROTOCOL;
    }
    return XP_OK;
}

static xp_status_t get_locked(pmi1_t *p, int rank, const char *key, void *out, size_t *len)
{
    char line[XP_PMI_MAXLINE], wkey[128], enc[ENCODED_MAX];
    const char *v;
    chunk_key(p, rank, key, 0, wkey);
    xp_status_t st = get_one(p, wkey, line, sizeof line, &v);
    if (st != XP_OK)
        return st;
    char *end;
    long nchunks = strtol(v, &end, 10);
    if (*end != ',' || nchunks < 1 || nchunks > ENCODED_MAX) {
        xp_error("PMI: value of %s is not one of ours", wkey);
        return XP_ERR_PROTOCOL;
    }
    size_t enclen = 0;
    v = end + 1;
    for (long i = 0;; ) {
        size_t n = strlen(v);
        if (enclen + n >= sizeof enc) {
            xp_error("PMI: value of %s is longer than XP_KV_MAX_VALUE", wkey);
            return XP_ERR_PROTOCOL;
        }
        memcpy(enc + enclen, v, n);
        enclen += n;
        if (++i == nchunks)
            break;
        chunk_key(p, rank, key, (int)i, wkey);
        st = get_one(p, wkey, line, sizeof line, &v);
        if (st == XP_ERR_NOT_FOUND)
            xp_error("PMI: part %s of a value is missing", wkey);
        if (st != XP_OK)
            return st == XP_ERR_NOT_FOUND ? XP_ERR_PROTOCOL : st;
    }
    st = xp_kv_decode(enc, enclen, out, *len, len);
    if (st == XP_ERR_PROTOCOL)
        xp_error("PMI: value of %d/%s is not decodable", rank, key);
    return st;
}

static xp_status_t pmi1_get(void *state, int rank, const char *key, void *value, size_t *len)
{
    pmi1_t *p = state;
    size_t n = *len;
    pthread_mutex_lock(&p->lock);
    xp_status_t st = get_locked(p, rank, key, value, &n);
    pthread_mutex_unlock(&p->lock);
    if (st == XP_OK)
        *len = n;
    return st;
}

/* Hydra and xprun publish where ranks run as PMI_process_mapping. */
static xp_status_t pmi1_node_map(void *state, int size, int *node_of, int *num_nodes)
{
    pmi1_t *p = state;
    char line[XP_PMI_MAXLINE];
    const char *v;
    pthread_mutex_lock(&p->lock);
    xp_status_t st = get_one(p, "PMI_process_mapping", line, sizeof line, &v);
    if (st == XP_OK)
        st = xp_pmi_parse_mapping(v, size, node_of, num_nodes);
    pthread_mutex_unlock(&p->lock);
    if (st == XP_ERR_PROTOCOL)
        xp_debug("PMI: cannot use PMI_process_mapping \"%s\"", v);
    return st;
}

/* ------------------------------------------------------------ collectives */

static xp_status_t pmi1_barrier(void *state)
{
    pmi1_t *p = state;
    char line[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    pthread_mutex_lock(&p->lock);
    /* No timeout: peers may be busy for long; a dead launcher shows as EOF. */
    xp_status_t st = request(p, "cmd=barrier_in\n", "barrier_out", line, sizeof line, &msg, -1);
    pthread_mutex_unlock(&p->lock);
    return st;
}

static void pmi1_abort(void *state, int code, const char *msg)
{
    pmi1_t *p = state;
    char req[64];
    snprintf(req, sizeof req, "cmd=abort exitcode=%d\n", code);
    (void)write_all(p->fd, req, strlen(req));
}

/* The launcher's finalize handshake (its answer is only waited for). */
static void send_finalize(pmi1_t *p, int timeout_ms)
{
    char line[XP_PMI_MAXLINE];
    xp_pmi_msg_t msg;
    pthread_mutex_lock(&p->lock);
    (void)request(p, "cmd=finalize\n", "finalize_ack", line, sizeof line, &msg, timeout_ms);
    pthread_mutex_unlock(&p->lock);
}

static void pmi1_free(pmi1_t *p)
{
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* At exit: finalize the inherited PMI_FD if it is still the socket we were
 * given. An MPI library or OpenSHMEM's PMI client that shares it finalizes
 * and closes it itself (then the descriptor is gone or reused, and we stay
 * quiet); alone, we owe the launcher the finalize that Hydra waits for
 * before it treats an exit as normal. */
static void finalize_at_exit(void)
{
    pmi1_t *p = xp_ctx.pmi1_exit;
    struct stat sb;
    if (!p || fstat(p->fd, &sb) != 0 || sb.st_dev != p->fd_dev || sb.st_ino != p->fd_ino)
        return;
    xp_ctx_drop_runtime_hooks(); /* Portals may be gone */
    send_finalize(p, 5000);
}

/* PMI_FD is the process's one channel to the launcher, and other PMI clients
 * in the process (an MPI library, OpenSHMEM's own PMI client) speak on it
 * too: finalizing or closing it now would cut them off. So an inherited
 * channel is finalized at exit (finalize_at_exit), and only a connection we
 * opened ourselves (PMI_PORT) is finalized and closed here. */
static void pmi1_finalize(void *state)
{
    pmi1_t *p = state;
    struct stat sb;
    if (!p->own_fd && fstat(p->fd, &sb) == 0) {
        pmi1_t *old = xp_ctx.pmi1_exit;
        p->fd_dev = sb.st_dev;
        p->fd_ino = sb.st_ino;
        p->rlen = 0;
        xp_ctx.pmi1_exit = p; /* xp_finalize is not concurrent with anything */
        if (old)
            pmi1_free(old);
        else
            atexit(finalize_at_exit);
        return;
    }
    if (p->own_fd) {
        send_finalize(p, p->timeout_ms);
        close(p->fd);
    }
    pmi1_free(p);
}

const xp_boot_ops_t xp_boot_pmi1 = {
    .name = "pmi1",
    .init = pmi1_init,
    .put = pmi1_put,
    .fence = pmi1_barrier,
    .get = pmi1_get,
    .barrier = pmi1_barrier,
    .node_map = pmi1_node_map,
    .abort = pmi1_abort,
    .finalize = pmi1_finalize,
};
