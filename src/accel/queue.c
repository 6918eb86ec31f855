/* User-mode task queues: rings of 64-byte AQL packets shared by many
 * producers (threads or processes) and one consuming agent. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "accel/accel_internal.h"
#include "util/clock.h"
#include "util/log.h"

static int valid_size(uint32_t size)
{
    return size >= 2 && size <= (1u << 24) && (size & (size - 1)) == 0;
}

size_t xp_queue_bytes(uint32_t size)
{
    if (!valid_size(size))
        return 0;
    return sizeof(xp_queue_shm_t) + (size_t)size * sizeof(xp_aql_packet_t);
}

void xp_queue_format(xp_queue_shm_t *shm, size_t bytes, uint32_t size)
{
    memset(shm, 0, sizeof(*shm));
    shm->size = size;
    shm->mask = size - 1;
    shm->bytes = bytes;
    xp_signal_init(&shm->doorbell, 0, 0);
    xp_signal_init(&shm->space, 0, 0);
    for (uint32_t i = 0; i < size; i++) {
        memset(&shm->ring[i], 0, sizeof(shm->ring[i]));
        shm->ring[i].header = xp_aql_header(XP_AQL_TYPE_INVALID, 0);
    }
    /* The magic goes last: an attacher that sees it sees a formatted queue. */
    __atomic_store_n(&shm->magic, XP_QUEUE_MAGIC, __ATOMIC_RELEASE);
}

xp_status_t xp_queue_handle_new(xp_queue_shm_t *shm, size_t bytes, xp_queue_mem_t mem,
                                xp_queue_t **queue_out)
{
    xp_queue_t *q = calloc(1, sizeof(*q));
    if (!q)
        return XP_ERR_NO_MEMORY;
    q->shm = shm;
    q->mask = shm->mask;
    q->mem = mem;
    q->bytes = bytes;
    xp_list_init(&q->agent_link);
    *queue_out = q;
    return XP_OK;
}

xp_status_t xp_queue_create(uint32_t size, xp_queue_t **queue_out)
{
    size_t bytes = xp_queue_bytes(size);
    if (!bytes || !queue_out)
        return XP_ERR_INVALID;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        xp_log_errno(XP_LOG_ERROR, "mmap of a %zu-byte queue", bytes);
        return XP_ERR_NO_MEMORY;
    }
    xp_queue_format(mem, bytes, size);
    xp_status_t st = xp_queue_handle_new(mem, bytes, XP_QUEUE_MEM_MMAP, queue_out);
    if (st != XP_OK)
        munmap(mem, bytes);
    return st;
}

xp_status_t xp_queue_init_at(void *mem, size_t bytes, uint32_t size, xp_queue_t **queue_out)
{
    size_t need = xp_queue_bytes(size);
    if (!mem || !queue_out || !need || bytes < need || ((uintptr_t)mem & 63))
        return XP_ERR_INVALID;
    xp_queue_format(mem, bytes, size);
    return xp_queue_handle_new(mem, bytes, XP_QUEUE_MEM_USER, queue_out);
}

xp_status_t xp_queue_attach(void *mem, size_t bytes, xp_queue_t **queue_out)
{
    xp_queue_shm_t *shm = mem;
    if (!mem || !queue_out || ((uintptr_t)mem & 63) || bytes < sizeof(*shm))
        return XP_ERR_INVALID;
    if (__atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) != XP_QUEUE_MAGIC ||
        !valid_size(shm->size) || bytes < xp_queue_bytes(shm->size))
        return XP_ERR_INVALID;
    return xp_queue_handle_new(shm, bytes, XP_QUEUE_MEM_USER, queue_out);
}

void xp_queue_destroy(xp_queue_t *queue)
{
    if (!queue)
        return;
    if (queue->agent) {
        xp_agent_t *agent = queue->agent;
        pthread_mutex_lock(&agent->lock);
        xp_list_del(&queue->agent_link);
        pthread_mutex_unlock(&agent->lock);
        agent->ops->queue_removed(agent, queue);
    }
    if (queue->mem == XP_QUEUE_MEM_MMAP)
        munmap(queue->shm, queue->bytes);
    else if (queue->mem == XP_QUEUE_MEM_AGENT)
        queue->agent->ops->queue_free(queue->agent, queue->shm, queue->bytes);
    free(queue);
}

uint32_t xp_queue_size(const xp_queue_t *queue)
{
    return queue->shm->size;
}

uint64_t xp_queue_load_read_index(const xp_queue_t *queue)
{
    return __atomic_load_n(&queue->shm->read_index, __ATOMIC_ACQUIRE);
}

uint64_t xp_queue_load_write_index(const xp_queue_t *queue)
{
    return __atomic_load_n(&queue->shm->write_index, __ATOMIC_ACQUIRE);
}

xp_signal_t *xp_queue_doorbell(xp_queue_t *queue)
{
    return &queue->shm->doorbell;
}

uint64_t xp_queue_add_write_index(xp_queue_t *queue, uint64_t n)
{
    return __atomic_fetch_add(&queue->shm->write_index, n, __ATOMIC_ACQ_REL);
}

xp_aql_packet_t *xp_queue_slot(xp_queue_t *queue, uint64_t index)
{
    return &queue->shm->ring[index & queue->mask];
}

void xp_queue_publish(xp_queue_t *queue, uint64_t index, const xp_aql_packet_t *pkt)
{
    xp_aql_packet_t *slot = xp_queue_slot(queue, index);
    memcpy(slot->bytes + 2, pkt->bytes + 2, XP_AQL_PACKET_SIZE - 2);
    /* The header last, with release order: the consumer that sees a valid
     * type sees the whole body. */
    __atomic_store_n(&slot->header, pkt->header, __ATOMIC_RELEASE);
    xp_signal_store(&queue->shm->doorbell, (int64_t)index);
}

static int valid_packet(const xp_aql_packet_t *pkt)
{
    xp_aql_type_t t = xp_aql_header_type(pkt->header);
    return t == XP_AQL_TYPE_KERNEL_DISPATCH || t == XP_AQL_TYPE_AGENT_DISPATCH ||
           t == XP_AQL_TYPE_BARRIER_AND || t == XP_AQL_TYPE_BARRIER_OR ||
           t == XP_AQL_TYPE_VENDOR;
}

/* Reserve one slot if the ring has room: a conditional atomic add on the
 * write index, so a full queue never leaves a reserved-but-unwritable slot
 * behind (which would stall the consumer if the producer gave up). */
static int try_reserve(xp_queue_shm_t *shm, uint64_t *index_out)
{
    uint64_t w = __atomic_load_n(&shm->write_index, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t r = __atomic_load_n(&shm->read_index, __ATOMIC_ACQUIRE);
        if (w - r >= shm->size)
            return 0;
        if (__atomic_compare_exchange_n(&shm->write_index, &w, w + 1, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *index_out = w;
            return 1;
        }
    }
}

xp_status_t xp_queue_try_push(xp_queue_t *queue, const xp_aql_packet_t *pkt, uint64_t *index_out)
{
    uint64_t idx;
    if (!queue || !pkt || !valid_packet(pkt))
        return XP_ERR_INVALID;
    if (!try_reserve(queue->shm, &idx))
        return XP_ERR_AGAIN;
    xp_queue_publish(queue, idx, pkt);
    if (index_out)
        *index_out = idx;
    return XP_OK;
}

typedef struct {
    xp_queue_shm_t *shm;
} room_arg_t;

static int has_room(void *arg)
{
    xp_queue_shm_t *shm = ((room_arg_t *)arg)->shm;
    return __atomic_load_n(&shm->write_index, __ATOMIC_ACQUIRE) -
               __atomic_load_n(&shm->read_index, __ATOMIC_ACQUIRE) < shm->size;
}

xp_status_t xp_queue_push(xp_queue_t *queue, const xp_aql_packet_t *pkt, uint64_t timeout_ns,
                          uint64_t *index_out)
{
    if (!queue || !pkt || !valid_packet(pkt))
        return XP_ERR_INVALID;
    uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : xp_time_ns() + timeout_ns;
    uint64_t idx;
    room_arg_t arg = {queue->shm};
    while (!try_reserve(queue->shm, &idx)) {
        xp_status_t st = xp_signal_wait_pred(&queue->shm->space, has_room, &arg, deadline);
        if (st != XP_OK)
            return st;
    }
    xp_queue_publish(queue, idx, pkt);
    if (index_out)
        *index_out = idx;
    return XP_OK;
}

xp_aql_packet_t *xp_queue_peek(xp_queue_t *queue)
{
    xp_queue_shm_t *shm = queue->shm;
    xp_aql_packet_t *slot = &shm->ring[shm->read_index & queue->mask];
    if (xp_aql_header_type(__atomic_load_n(&slot->header, __ATOMIC_ACQUIRE)) == XP_AQL_TYPE_INVALID)
        return NULL;
    return slot;
}

void xp_queue_release(xp_queue_t *queue)
{
    xp_queue_shm_t *shm = queue->shm;
    uint64_t r = shm->read_index;
    xp_aql_packet_t *slot = &shm->ring[r & queue->mask];
    __atomic_store_n(&slot->header, xp_aql_header(XP_AQL_TYPE_INVALID, 0), __ATOMIC_RELAXED);
    /* Release: the slot is marked free before producers can see the room. */
    __atomic_store_n(&shm->read_index, r + 1, __ATOMIC_RELEASE);
    xp_signal_store(&shm->space, (int64_t)(r + 1));
}
