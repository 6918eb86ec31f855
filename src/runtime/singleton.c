/*
 * Singleton bootstrap: a process started by hand is rank 0 of 1. Its
 * key-value store is a small local list, so code that publishes and looks up
 * addresses runs unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/boot.h"
#include "util/log.h"

typedef struct kv_entry {
    struct kv_entry *next;
    char key[XP_KV_MAX_KEY + 1];
    size_t len;
    unsigned char value[XP_KV_MAX_VALUE];
} kv_entry_t;

typedef struct singleton {
    kv_entry_t *head;
} singleton_t;

static kv_entry_t *find(singleton_t *s, const char *key)
{
    for (kv_entry_t *e = s->head; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

static xp_status_t singleton_init(int timeout_s, void **state, xp_boot_info_t *info)
{
    singleton_t *s = calloc(1, sizeof *s);
    if (!s)
        return XP_ERR_NO_MEMORY;
    info->rank = 0;
    info->size = 1;
    snprintf(info->job_id, sizeof info->job_id, "s%d", (int)getpid());
    *state = s;
    return XP_OK;
}

static xp_status_t singleton_put(void *state, const char *key, const void *value, size_t len)
{
    singleton_t *s = state;
    kv_entry_t *e = find(s, key);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e)
            return XP_ERR_NO_MEMORY;
        snprintf(e->key, sizeof e->key, "%s", key);
        e->next = s->head;
        s->head = e;
    }
    if (len)
        memcpy(e->value, value, len);
    e->len = len;
    return XP_OK;
}

static xp_status_t singleton_nop(void *state)
{
    return XP_OK;
}

static xp_status_t singleton_get(void *state, int rank, const char *key, void *value, size_t *len)
{
    kv_entry_t *e = find(state, key);
    if (rank != 0 || !e)
        return XP_ERR_NOT_FOUND;
    if (e->len > *len)
        return XP_ERR_TRUNCATED;
    if (e->len)
        memcpy(value, e->value, e->len);
    *len = e->len;
    return XP_OK;
}

static void singleton_abort(void *state, int code, const char *msg)
{
}

static void singleton_finalize(void *state)
{
    singleton_t *s = state;
    while (s->head) {
        kv_entry_t *e = s->head;
        s->head = e->next;
        free(e);
    }
    free(s);
}

const xp_boot_ops_t xp_boot_singleton = {
    .name = "singleton",
    .init = singleton_init,
    .put = singleton_put,
    .fence = singleton_nop,
    .get = singleton_get,
    .barrier = singleton_nop,
    .abort = singleton_abort,
    .finalize = singleton_finalize,
};
