/* The shared-memory MPSC packet ring (see shm_ring.h for the protocol). */
#include <string.h>

#include "transport/shm_ring.h"
#include "util/copy.h"
#include "util/log.h"

#define SKIP_LEN XP_SHM_SKIP_LEN

size_t xp_shm_ring_bytes(uint32_t ncells)
{
    return sizeof(xp_shm_ring_t) + (size_t)ncells * sizeof(xp_shm_cell_t);
}

void xp_shm_ring_init(xp_shm_ring_t *ring, uint32_t ncells)
{
    ring->ncells = ncells;
    ring->tail = 0;
    ring->head = 0;
    for (uint32_t i = 0; i < ncells; i++)
        ring->cells[i].word = xp_shm_free_word(i);
    xp_store_release(&ring->magic, XP_SHM_RING_MAGIC);
}

int xp_shm_ring_valid(const xp_shm_ring_t *ring, size_t mapped_bytes)
{
    uint32_t n = xp_load_acquire(&ring->ncells);
    return xp_load_acquire(&ring->magic) == XP_SHM_RING_MAGIC && n >= 16 && !(n & (n - 1)) &&
           xp_shm_ring_bytes(n) <= mapped_bytes;
}

size_t xp_shm_ring_max_packet(const xp_shm_ring_t *ring)
{
    return (size_t)(ring->ncells / 2) * XP_SHM_CELL - XP_SHM_CELL_HDR;
}

void xp_shm_ring_init_zeroed(xp_shm_ring_t *ring, uint32_t ncells)
{
    ring->ncells = ncells;
    ring->tail = ncells;
    ring->head = ncells;
    xp_store_release(&ring->magic, XP_SHM_RING_MAGIC);
}

/* Room for n cells at position t, reloading the consumer's head only when
 * the cached copy says the ring is full. */
static int has_room(xp_shm_ring_t *ring, uint64_t *cached_head, uint64_t t, uint32_t n)
{
    uint64_t h = xp_load_acquire(cached_head);
    if ((int64_t)(t + n - h) <= (int64_t)ring->ncells)
        return 1;
    h = xp_load_acquire(&ring->head);
    xp_store_release(cached_head, h);
    return (int64_t)(t + n - h) <= (int64_t)ring->ncells;
}

/* Claim `n` cells at position t if they are free; updates *t on a lost race.
 * Returns 1 claimed, 0 lost the race (retry), -1 full. With `single` (one
 * producer) the claim is a plain store. */
static int claim(xp_shm_ring_t *ring, uint64_t *cached_head, uint64_t *t, uint32_t n, int single)
{
    if (!has_room(ring, cached_head, *t, n)) {
        /* Full only if our view of tail is current. */
        uint64_t now = xp_load_relaxed(&ring->tail);
        if (single || now == *t)
            return -1;
        *t = now;
        return 0;
    }
    if (single) {
        xp_store_release(&ring->tail, *t + n);
        return 1;
    }
    return xp_cas(&ring->tail, t, *t + n) ? 1 : 0;
}

/* Write the packet at position t into c and publish it. */
static void fill(xp_shm_cell_t *c, uint64_t t, size_t len, int src, const void *hdr,
                 size_t hdr_len, const void *data, size_t data_len)
{
    uint64_t word;
    unsigned char *p = xp_shm_cell_open(c, t, len, src, &word);
    if (hdr_len)
        memcpy(p, hdr, hdr_len);
    if (data_len)
        xp_copy(p + hdr_len, data, data_len);
    xp_shm_cell_publish(c, word);
}

static xp_status_t push(xp_shm_ring_t *ring, uint64_t *cached_head, int src, const void *hdr,
                        size_t hdr_len, const void *data, size_t data_len, int single,
                        uint64_t *end)
{
    size_t len = hdr_len + data_len;
    if (len > xp_shm_ring_max_packet(ring))
        return XP_ERR_OVERFLOW;
    uint32_t need = (uint32_t)xp_shm_cells_for(len, src), mask = ring->ncells - 1;
    uint64_t t = xp_load_relaxed(&ring->tail);
    for (;;) {
        uint32_t idx = (uint32_t)(t & mask);
        uint32_t n = idx + need > ring->ncells ? ring->ncells - idx : need;
        int got = claim(ring, cached_head, &t, n, single);
        if (got < 0)
            return XP_ERR_AGAIN;
        if (!got)
            continue;
        xp_shm_cell_t *c = &ring->cells[idx];
        if (n == need) {
            fill(c, t, len, src, hdr, hdr_len, data, data_len);
            if (end)
                *end = t + n;
            return XP_OK;
        }
        /* Would wrap: pad to the end of the array, then claim again at 0. */
        fill(c, t, SKIP_LEN, (int)n, NULL, 0, NULL, 0);
        t = xp_load_relaxed(&ring->tail);
    }
}

xp_status_t xp_shm_ring_push(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                             const void *hdr, size_t hdr_len, const void *data, size_t data_len)
{
    return push(ring, cached_head, src, hdr, hdr_len, data, data_len, 0, NULL);
}

xp_status_t xp_shm_ring_push_end(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                                 const void *hdr, size_t hdr_len, const void *data,
                                 size_t data_len, uint64_t *end)
{
    return push(ring, cached_head, src, hdr, hdr_len, data, data_len, 0, end);
}

xp_status_t xp_shm_ring_push_single_slow(xp_shm_ring_t *ring, uint64_t *cached_head, int src,
                                         const void *hdr, size_t hdr_len, const void *data,
                                         size_t data_len)
{
    return push(ring, cached_head, src, hdr, hdr_len, data, data_len, 1, NULL);
}

int xp_shm_ring_corrupt(const xp_shm_ring_t *ring, uint64_t h)
{
    xp_error("shm ring %p: corrupt packet at position %llu (header word %#llx)",
             (const void *)ring, (unsigned long long)h,
             (unsigned long long)ring->cells[h & (ring->ncells - 1)].word);
    return -1;
}

static int poll_ring(xp_shm_ring_t *ring, int budget, xp_tl_recv_fn fn, void *arg,
                     xp_shm_ring_t *gate)
{
    int delivered = 0, got;
    while (delivered < budget) {
        got = xp_shm_ring_take_gated(ring, fn, arg, gate);
        if (got < 0)
            return -1;
        if (got != 1)
            break;
        delivered++;
    }
    return delivered;
}

int xp_shm_ring_poll(xp_shm_ring_t *ring, int budget, xp_tl_recv_fn fn, void *arg)
{
    return poll_ring(ring, budget, fn, arg, NULL);
}

int xp_shm_ring_poll_gated(xp_shm_ring_t *ring, int budget, xp_tl_recv_fn fn, void *arg,
                           xp_shm_ring_t *gate)
{
    return poll_ring(ring, budget, fn, arg, gate);
}
