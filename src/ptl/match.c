/*
 * ptl/match.c - priority / overflow lists and unexpected headers with
 * hashing on the source (see match.h for the model).
 *
 * Why the order is exactly the specification's:
 *  1. Every append takes the next value of one increasing counter, and is
 *     pushed at the BACK of exactly one tier list, so each tier list (a hash
 *     slot or the wildcard list) is sorted by sequence number.
 *  2. All entries of a tier that can match a given header sit in the same
 *     list: by_key entries matching (s, b) all have key (s, b), so they share
 *     a slot; by_source entries matching s all have source s, so they share a
 *     slot; wildcard entries are in the one wildcard list. Growing a hash
 *     moves the old slots in order, appending to the new slots, so entries
 *     that shared a slot keep their relative order.
 *  3. So a scan of that one list, skipping non-matching and rejected
 *     entries, returns the tier's lowest-sequence acceptable match, and the
 *     lowest sequence number among the tier winners is the list's earliest
 *     acceptable match - what a linear scan of the whole list would return.
 * Unexpected headers use the same argument with arrival numbers: a search
 * for a fixed-source spec looks in one slot holding every header of that key
 * (or source) in arrival order; otherwise it scans the arrival list.
 */
#include "ptl/match.h"

#include <stdlib.h>

#include "util/log.h"

enum { TIER_KEY = 0, TIER_SOURCE = 1, TIER_WILDCARD = 2 };

#define HASH_INIT_SLOTS 64

/* ------------------------------------------------------------ hashing */

static inline uint64_t key_hash(uint64_t source, uint64_t match_bits)
{
    return xp_match_key_hash(source, match_bits);
}

static inline uint64_t source_hash(uint64_t source)
{
    return xp_match_mix64(source);
}

static xp_status_t hash_init(xp_match_hash_t *h)
{
    h->slots = malloc(HASH_INIT_SLOTS * sizeof(*h->slots));
    if (!h->slots) {
        xp_error("match: cannot allocate %d hash slots", HASH_INIT_SLOTS);
        return XP_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < HASH_INIT_SLOTS; i++)
        xp_list_init(&h->slots[i]);
    h->mask = HASH_INIT_SLOTS - 1;
    h->count = 0;
    return XP_OK;
}

static void hash_fini(xp_match_hash_t *h)
{
    free(h->slots);
    h->slots = NULL;
}

/* Relinks every node of the old slots, slot by slot and in order, so nodes
 * that shared a slot keep their relative order (point 2 above). `hash_of`
 * recomputes a node's hash from its link. */
static void hash_grow(xp_match_hash_t *h, uint64_t (*hash_of)(xp_list_t *))
{
    size_t old_n = h->mask + 1, new_n = old_n * 2;
    xp_list_t *slots = malloc(new_n * sizeof(*slots));
    if (!slots)
        return; /* keep the longer chains: slower, still correct */
    for (size_t i = 0; i < new_n; i++)
        xp_list_init(&slots[i]);
    for (size_t i = 0; i < old_n; i++) {
        xp_list_t *n;
        while ((n = xp_list_pop_front(&h->slots[i])) != NULL)
            xp_list_push_back(&slots[hash_of(n) & (new_n - 1)], n);
    }
    free(h->slots);
    h->slots = slots;
    h->mask = new_n - 1;
}

static void hash_insert(xp_match_hash_t *h, uint64_t hash, xp_list_t *n,
                        uint64_t (*hash_of)(xp_list_t *))
{
    xp_list_push_back(&h->slots[hash & h->mask], n);
    if (++h->count > h->mask + 1)
        hash_grow(h, hash_of);
}

static inline xp_list_t *hash_slot(const xp_match_hash_t *h, uint64_t hash)
{
    return &h->slots[hash & h->mask];
}

static uint64_t entry_key_hash(xp_list_t *n)
{
    xp_match_entry_t *e = xp_container_of(n, xp_match_entry_t, link);
    return key_hash(e->spec.source, e->spec.match_bits);
}

static uint64_t entry_source_hash(xp_list_t *n)
{
    return source_hash(xp_container_of(n, xp_match_entry_t, link)->spec.source);
}

static uint64_t header_key_hash(xp_list_t *n)
{
    xp_match_header_t *h = xp_container_of(n, xp_match_header_t, by_key);
    return key_hash(h->source, h->match_bits);
}

static uint64_t header_source_hash(xp_list_t *n)
{
    return source_hash(xp_container_of(n, xp_match_header_t, by_source)->source);
}

/* ------------------------------------------------------------ tables */

static xp_status_t list_init(xp_match_list_t *l)
{
    xp_status_t st = hash_init(&l->by_key);
    if (st != XP_OK)
        return st;
    st = hash_init(&l->by_source);
    if (st != XP_OK) {
        hash_fini(&l->by_key);
        return st;
    }
    xp_list_init(&l->wildcard);
    xp_list_init(&l->all);
    l->nwildcard = 0;
    l->count = 0;
    l->hot = NULL;
    return XP_OK;
}

static void list_fini(xp_match_list_t *l)
{
    hash_fini(&l->by_key);
    hash_fini(&l->by_source);
}

xp_status_t xp_match_table_init(xp_match_table_t *t)
{
    xp_status_t st;

    st = list_init(&t->lists[XP_MATCH_PRIORITY]);
    if (st != XP_OK)
        return st;
    st = list_init(&t->lists[XP_MATCH_OVERFLOW]);
    if (st != XP_OK)
        goto err_fini_priority;
    st = hash_init(&t->uh_by_key);
    if (st != XP_OK)
        goto err_fini_overflow;
    st = hash_init(&t->uh_by_source);
    if (st != XP_OK)
        goto err_fini_uh_by_key;
    xp_list_init(&t->uh_arrival);
    t->uh_count = 0;
    t->next_seq = 1;
    return XP_OK;

err_fini_uh_by_key:
    hash_fini(&t->uh_by_key);
err_fini_overflow:
    list_fini(&t->lists[XP_MATCH_OVERFLOW]);
err_fini_priority:
    list_fini(&t->lists[XP_MATCH_PRIORITY]);
    return st;
}

void xp_match_table_fini(xp_match_table_t *t)
{
    list_fini(&t->lists[XP_MATCH_PRIORITY]);
    list_fini(&t->lists[XP_MATCH_OVERFLOW]);
    hash_fini(&t->uh_by_key);
    hash_fini(&t->uh_by_source);
}

/* ------------------------------------------------------------ entries */

void xp_match_entry_init(xp_match_entry_t *e, const xp_match_spec_t *spec, void *user)
{
    e->spec = *spec;
    e->user = user;
    e->seq = 0;
    xp_list_init(&e->link);
    xp_list_init(&e->all);
    e->list = XP_MATCH_PRIORITY;
    e->tier = TIER_WILDCARD;
    e->linked = 0;
}

static inline int spec_tier(const xp_match_spec_t *s)
{
    if (s->source_mask != XP_MATCH_SOURCE_FIXED)
        return TIER_WILDCARD;
    return s->ignore_bits == 0 ? TIER_KEY : TIER_SOURCE;
}

void xp_match_append(xp_match_table_t *t, xp_match_list_id_t list, xp_match_entry_t *e)
{
    xp_match_list_t *l = &t->lists[list];

    e->seq = t->next_seq++;
    e->list = (uint8_t)list;
    e->tier = (uint8_t)spec_tier(&e->spec);
    e->linked = 1;
    xp_list_push_back(&l->all, &e->all);
    l->count++;
    switch (e->tier) {
    case TIER_KEY:
        hash_insert(&l->by_key, key_hash(e->spec.source, e->spec.match_bits), &e->link,
                    entry_key_hash);
        break;
    case TIER_SOURCE:
        hash_insert(&l->by_source, source_hash(e->spec.source), &e->link, entry_source_hash);
        break;
    default:
        xp_list_push_back(&l->wildcard, &e->link);
        l->nwildcard++;
        break;
    }
}

void xp_match_remove(xp_match_table_t *t, xp_match_entry_t *e)
{
    xp_match_list_t *l;

    if (!e->linked)
        return;
    l = &t->lists[e->list];
    if (l->hot == e)
        l->hot = NULL;
    xp_list_del(&e->link);
    xp_list_del(&e->all);
    l->count--;
    if (e->tier == TIER_KEY)
        l->by_key.count--;
    else if (e->tier == TIER_SOURCE)
        l->by_source.count--;
    else
        l->nwildcard--;
    e->linked = 0;
}

/* First entry of one tier list that matches and is accepted (point 3). */
static xp_match_entry_t *scan_entries(xp_list_t *head, uint64_t source, uint64_t match_bits,
                                      xp_match_accept_t accept, void *arg)
{
    for (xp_list_t *n = head->next; n != head; n = n->next) {
        xp_match_entry_t *e = xp_container_of(n, xp_match_entry_t, link);
        if (xp_match_spec_matches(&e->spec, source, match_bits) && (!accept || accept(e, arg)))
            return e;
    }
    return NULL;
}

static inline xp_match_entry_t *earlier(xp_match_entry_t *a, xp_match_entry_t *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return a->seq < b->seq ? a : b;
}

xp_match_entry_t *xp_match_find(xp_match_table_t *t, xp_match_list_id_t list, uint64_t source,
                                uint64_t match_bits, xp_match_accept_t accept, void *arg)
{
    xp_match_list_t *l = &t->lists[list];
    xp_match_entry_t *best = NULL;

    /* A tier can only hold a better candidate if it is not empty; the
     * common single-tier cases (all LEs wildcard, all MEs exact) pay for one
     * scan only. */
    if (l->nwildcard)
        best = scan_entries(&l->wildcard, source, match_bits, accept, arg);
    if (l->by_key.count) {
        xp_list_t *slot = hash_slot(&l->by_key, key_hash(source, match_bits));
        best = earlier(best, scan_entries(slot, source, match_bits, accept, arg));
    }
    if (l->by_source.count) {
        xp_list_t *slot = hash_slot(&l->by_source, source_hash(source));
        best = earlier(best, scan_entries(slot, source, match_bits, accept, arg));
    }
    return best;
}

xp_match_entry_t *xp_match_next(xp_match_table_t *t, xp_match_entry_t *e)
{
    if (!e->linked || e->all.next == &t->lists[e->list].all)
        return NULL;
    return xp_container_of(e->all.next, xp_match_entry_t, all);
}

size_t xp_match_count(const xp_match_table_t *t, xp_match_list_id_t list)
{
    return t->lists[list].count;
}

/* ------------------------------------------------------------ unexpected headers */

void xp_match_uh_insert(xp_match_table_t *t, xp_match_header_t *h, uint64_t source,
                        uint64_t match_bits)
{
    h->source = source;
    h->match_bits = match_bits;
    h->seq = t->next_seq++;
    h->linked = 1;
    xp_list_push_back(&t->uh_arrival, &h->arrival);
    t->uh_count++;
    hash_insert(&t->uh_by_key, key_hash(source, match_bits), &h->by_key, header_key_hash);
    hash_insert(&t->uh_by_source, source_hash(source), &h->by_source, header_source_hash);
}

void xp_match_uh_remove(xp_match_table_t *t, xp_match_header_t *h)
{
    if (!h->linked)
        return;
    xp_list_del(&h->arrival);
    xp_list_del(&h->by_key);
    xp_list_del(&h->by_source);
    t->uh_count--;
    t->uh_by_key.count--;
    t->uh_by_source.count--;
    h->linked = 0;
}

/* Walk one list of headers from `start` (exclusive) to `head`; `off` is the
 * offset of that list's link inside xp_match_header_t. */
static xp_match_header_t *scan_headers(xp_list_t *head, xp_list_t *start, size_t off,
                                       const xp_match_spec_t *spec,
                                       xp_match_uh_accept_t accept, void *arg)
{
    for (xp_list_t *n = start->next; n != head; n = n->next) {
        xp_match_header_t *h = (xp_match_header_t *)((char *)n - off);
        if (xp_match_spec_matches(spec, h->source, h->match_bits) && (!accept || accept(h, arg)))
            return h;
    }
    return NULL;
}

xp_match_header_t *xp_match_uh_find(xp_match_table_t *t, const xp_match_spec_t *spec,
                                    xp_match_header_t *after, xp_match_uh_accept_t accept,
                                    void *arg)
{
    xp_list_t *head, *start;
    size_t off;

    /* `after` must be linked and matched by spec: then it sits in the very
     * list the walk below uses (point 2), and the walk ends at its head. */
    if (after && (!after->linked || !xp_match_spec_matches(spec, after->source, after->match_bits)))
        return NULL;
    switch (spec_tier(spec)) {
    case TIER_KEY:
        head = hash_slot(&t->uh_by_key, key_hash(spec->source, spec->match_bits));
        off = offsetof(xp_match_header_t, by_key);
        break;
    case TIER_SOURCE:
        head = hash_slot(&t->uh_by_source, source_hash(spec->source));
        off = offsetof(xp_match_header_t, by_source);
        break;
    default:
        head = &t->uh_arrival;
        off = offsetof(xp_match_header_t, arrival);
        break;
    }
    start = after ? (xp_list_t *)((char *)after + off) : head;
    return scan_headers(head, start, off, spec, accept, arg);
}

xp_match_header_t *xp_match_uh_first(xp_match_table_t *t)
{
    return xp_list_first_entry(&t->uh_arrival, xp_match_header_t, arrival);
}

xp_match_header_t *xp_match_uh_next(xp_match_table_t *t, xp_match_header_t *h)
{
    if (!h->linked || h->arrival.next == &t->uh_arrival)
        return NULL;
    return xp_container_of(h->arrival.next, xp_match_header_t, arrival);
}

size_t xp_match_uh_count(const xp_match_table_t *t)
{
    return t->uh_count;
}
