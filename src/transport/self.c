/*
 * transport/self.c - loopback: packets to this process's own rank.
 *
 * A mutex-protected FIFO of copied packets, delivered on poll; nodes are
 * recycled through a small free list so steady traffic does not malloc.
 * RMA is a memcpy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm_seg.h"
#include "transport/tl_list.h"
#include "util/copy.h"
#include "util/log.h"
#include "xportals/xp.h"

#define SELF_MAX_PACKET (64u * 1024u)
#define SELF_MIN_NODE 256u
#define SELF_CACHE_MAX 64       /* free nodes kept */
#define SELF_CACHE_NODE 4096u   /* larger nodes are freed, not kept */

typedef struct self_pkt {
    struct self_pkt *next;
    size_t len, cap;
    unsigned char data[];
} self_pkt_t;

typedef struct self_tl {
    const xp_tl_params_t *params;
    int rank;
    pthread_mutex_t lock;   /* queue and free list */
    self_pkt_t *head, **tailp;
    self_pkt_t *free;
    int nfree;
    int queued;             /* read without the lock by pending() */
    int polling;            /* one poller at a time (keeps delivery in order) */
} self_tl_t;

static xp_status_t self_open(const xp_tl_params_t *params, xp_tl_t **tl_out)
{
    self_tl_t *s = calloc(1, sizeof *s);
    if (!s)
        return XP_ERR_NO_MEMORY;
    s->params = params;
    s->rank = xp_rank();
    pthread_mutex_init(&s->lock, NULL);
    s->tailp = &s->head;
    *tl_out = (xp_tl_t *)s;
    return XP_OK;
}

static void free_list(self_pkt_t *p)
{
    while (p) {
        self_pkt_t *next = p->next;
        free(p);
        p = next;
    }
}

static void self_close(xp_tl_t *tl)
{
    self_tl_t *s = (self_tl_t *)tl;
    free_list(s->head);
    free_list(s->free);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int self_reaches(xp_tl_t *tl, int rank)
{
    return rank == ((self_tl_t *)tl)->rank;
}

/* A node of at least len bytes: recycled if one is big enough. Lock held. */
static self_pkt_t *node_get(self_tl_t *s, size_t len)
{
    if (s->free && s->free->cap >= len) {
        self_pkt_t *p = s->free;
        s->free = p->next;
        s->nfree--;
        return p;
    }
    size_t cap = len < SELF_MIN_NODE ? SELF_MIN_NODE : len;
    self_pkt_t *p = malloc(sizeof *p + cap);
    if (p)
        p->cap = cap;
    return p;
}

static void node_put(self_tl_t *s, self_pkt_t *p)
{
    if (s->nfree >= SELF_CACHE_MAX || p->cap > SELF_CACHE_NODE) {
        free(p);
        return;
    }
    p->next = s->free;
    s->free = p;
    s->nfree++;
}

static xp_status_t self_send(xp_tl_t *tl, int rank, const void *hdr, size_t hdr_len,
                             const void *data, size_t data_len)
{
    self_tl_t *s = (self_tl_t *)tl;
    size_t len = hdr_len + data_len;
    if (len > SELF_MAX_PACKET)
        return XP_ERR_OVERFLOW;
    pthread_mutex_lock(&s->lock);
    self_pkt_t *p = node_get(s, len);
    if (!p) {
        pthread_mutex_unlock(&s->lock);
        return XP_ERR_NO_MEMORY;
    }
    p->len = len;
    if (hdr_len)
        memcpy(p->data, hdr, hdr_len);
    if (data_len)
        xp_copy(p->data + hdr_len, data, data_len);
    p->next = NULL;
    *s->tailp = p;
    s->tailp = &p->next;
    xp_store_release(&s->queued, s->queued + 1);
    pthread_mutex_unlock(&s->lock);
    if (s->params->doorbell)
        xp_shm_doorbell_ring(s->params->doorbell);
    return XP_OK;
}

static self_pkt_t *dequeue(self_tl_t *s)
{
    pthread_mutex_lock(&s->lock);
    self_pkt_t *p = s->head;
    if (p) {
        s->head = p->next;
        if (!s->head)
            s->tailp = &s->head;
        xp_store_release(&s->queued, s->queued - 1);
    }
    pthread_mutex_unlock(&s->lock);
    return p;
}

/* self_poll once something is queued and we are the poller; out of line,
 * so that the engine's every poll, which finds nothing here, costs a load. */
static __attribute__((noinline)) int self_drain(self_tl_t *s, int budget)
{
    int n = 0;
    self_pkt_t *p;
    while (n < budget && (p = dequeue(s))) {
        s->params->recv(s->params->recv_arg, s->rank, p->data, p->len);
        n++;
        pthread_mutex_lock(&s->lock);
        node_put(s, p);
        pthread_mutex_unlock(&s->lock);
    }
    __atomic_store_n(&s->polling, 0, __ATOMIC_RELEASE);
    return n;
}

static int self_poll(xp_tl_t *tl, int budget)
{
    self_tl_t *s = (self_tl_t *)tl;
    if (!xp_load_acquire(&s->queued) || __atomic_exchange_n(&s->polling, 1, __ATOMIC_ACQUIRE))
        return 0;
    return self_drain(s, budget);
}

static int self_pending(xp_tl_t *tl)
{
    return xp_load_acquire(&((self_tl_t *)tl)->queued) != 0;
}

static xp_status_t self_readv(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                              const struct iovec *remote, int nremote)
{
    return xp_iov_copy(local, nlocal, remote, nremote);
}

static xp_status_t self_writev(xp_tl_t *tl, int rank, const struct iovec *local, int nlocal,
                               const struct iovec *remote, int nremote)
{
    return xp_iov_copy(remote, nremote, local, nlocal);
}

const xp_tl_ops_t xp_tl_self_ops = {
    .size = sizeof(xp_tl_ops_t),
    .name = "self",
    .caps = XP_TL_CAP_RMA | XP_TL_CAP_SAME_NODE | XP_TL_CAP_LOOPBACK,
    .max_packet = SELF_MAX_PACKET,
    .open = self_open,
    .close = self_close,
    .reaches = self_reaches,
    .send = self_send,
    .poll = self_poll,
    .readv = self_readv,
    .writev = self_writev,
    .pending = self_pending,
};
