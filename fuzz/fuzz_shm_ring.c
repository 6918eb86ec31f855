/* libFuzzer harness: the shm ring consumer on arbitrary cell contents. The
 * input is the cell array of a 64-cell ring (missing bytes are free cells)
 * plus 8 bytes of start position; every published record is delivered or
 * reported corrupt, never read outside the cells. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm_ring.h"

#define NCELLS 64u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink {
    const xp_shm_ring_t *ring;
    size_t bytes;
    unsigned char copy[NCELLS * XP_SHM_CELL];
} sink_t;

static void on_packet(void *arg, int src, const void *pkt, size_t len)
{
    sink_t *s = arg;
    const unsigned char *lo = (const unsigned char *)s->ring->cells;
    const unsigned char *hi = (const unsigned char *)s->ring + s->bytes;
    const unsigned char *p = pkt;
    (void)src;
    if (p < lo || p > hi || len > (size_t)(hi - p) || len > xp_shm_ring_max_packet(s->ring))
        abort();
    memcpy(s->copy, pkt, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static xp_shm_ring_t *ring;
    static sink_t sink;
    size_t bytes = xp_shm_ring_bytes(NCELLS);
    if (!ring) {
        ring = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        if (!ring)
            return 0;
    }
    uint64_t start = 0;
    if (size >= 8) {
        memcpy(&start, data, 8);
        data += 8;
        size -= 8;
    }
    xp_shm_ring_init(ring, NCELLS);
    size_t n = size < NCELLS * sizeof(xp_shm_cell_t) ? size : NCELLS * sizeof(xp_shm_cell_t);
    memcpy(ring->cells, data, n);
    /* Make the records "published" at the consumer's position often enough. */
    ring->head = start;
    ring->tail = start + NCELLS;
    for (uint32_t i = 0; i < NCELLS; i++) {
        xp_shm_cell_t *c = &ring->cells[(start + i) & (NCELLS - 1)];
        if ((c->word & 0xff) == 0x5a)
            c->word = (c->word & ~(uint64_t)UINT32_MAX) | (uint32_t)(start + i);
    }
    sink.ring = ring;
    sink.bytes = bytes;
    for (int round = 0; round < 4; round++)
        if (xp_shm_ring_poll(ring, 64, on_packet, &sink) <= 0)
            break;
    return 0;
}
