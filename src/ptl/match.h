/*
 * ptl/match.h - the Portals matching engine as a pure data structure.
 *
 * No I/O and no Portals objects here: the engine embeds xp_match_entry_t in
 * its LE/ME objects and xp_match_header_t in its unexpected-header objects,
 * and gets them back with xp_container_of() (or the `user` pointer).
 *
 * One xp_match_table_t per portal table entry holds
 *   - two entry lists, XP_MATCH_PRIORITY and XP_MATCH_OVERFLOW, and
 *   - the unexpected headers, in arrival order.
 *
 * Matching rule (Portals 4): an incoming header (source, bits) matches an
 * entry when
 *     ((bits ^ e->spec.match_bits) & ~e->spec.ignore_bits) == 0  and
 *     ((source ^ e->spec.source) & e->spec.source_mask) == 0
 * and the winner is the EARLIEST appended matching entry of the list
 * (the engine searches the priority list, then the overflow list).
 *
 * Speed (the offload paper's hashing on the source): every entry lives in
 * exactly one of three "tiers" of its list:
 *   by_key    fixed source, ignore_bits == 0   hash on (source, match_bits)
 *   by_source fixed source, some ignore bits   hash on source
 *   wildcard  any other source mask            one list
 * Each tier keeps its candidates for a given header in append order, so the
 * first acceptable match of each tier is that tier's earliest; the entry
 * with the lowest append sequence number among the (at most three) tier
 * winners is the earliest of the whole list - exactly the specification's
 * order. Empty tiers cost nothing, so a non-matching NI (every LE is
 * "match anything": xp_match_spec_any()) finds the first entry in O(1).
 *
 * Unexpected headers are hashed the same way (by key, by source, plus the
 * arrival list), so a new entry finds the earliest header it matches with
 * one hash walk when its source is fixed.
 *
 * Not thread-safe: the engine serialises access per table (PT lock).
 */
#ifndef XP_PTL_MATCH_H
#define XP_PTL_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "util/list.h"
#include "xportals/status.h"

/* Source masks. A source is a 64-bit canonical id computed by the engine:
 * logical NI: the rank; physical NI: nid << 32 | pid. */
#define XP_MATCH_SOURCE_FIXED   UINT64_MAX                  /* this source only */
#define XP_MATCH_SOURCE_ANY     UINT64_C(0)                 /* any source */
#define XP_MATCH_SOURCE_NID     UINT64_C(0xFFFFFFFF00000000) /* nid fixed, any pid */
#define XP_MATCH_SOURCE_PID     UINT64_C(0x00000000FFFFFFFF) /* pid fixed, any nid */

typedef enum {
    XP_MATCH_PRIORITY = 0,
    XP_MATCH_OVERFLOW = 1,
    XP_MATCH_NLISTS   = 2,
} xp_match_list_id_t;

/* What an entry (or a search) matches. */
typedef struct xp_match_spec {
    uint64_t match_bits;
    uint64_t ignore_bits;
    uint64_t source;
    uint64_t source_mask; /* bits of the source that must be equal */
} xp_match_spec_t;

/* An LE/ME's matching part. Fields other than spec and user are private. */
typedef struct xp_match_entry {
    xp_match_spec_t spec;
    void           *user;   /* free for the engine */
    uint64_t        seq;    /* append order, assigned by xp_match_append */
    xp_list_t       link;   /* in its tier (hash slot or wildcard list) */
    xp_list_t       all;    /* in its list, append order */
    uint8_t         list;   /* xp_match_list_id_t */
    uint8_t         tier;
    uint8_t         linked;
} xp_match_entry_t;

/* An unexpected header. Fields other than source, match_bits, user are private. */
typedef struct xp_match_header {
    uint64_t  source;
    uint64_t  match_bits;
    void     *user;         /* free for the engine (payload, event data...) */
    uint64_t  seq;          /* arrival order */
    xp_list_t arrival;      /* all headers, arrival order */
    xp_list_t by_key;       /* hash slot on (source, match_bits) */
    xp_list_t by_source;    /* hash slot on source */
    uint8_t   linked;
} xp_match_header_t;

/* Private: a chained hash whose slot lists keep insertion order. */
typedef struct xp_match_hash {
    xp_list_t *slots;
    size_t     mask;        /* number of slots - 1 */
    size_t     count;
} xp_match_hash_t;

/* Private: one entry list (priority or overflow). */
typedef struct xp_match_list {
    xp_match_hash_t by_key;
    xp_match_hash_t by_source;
    xp_list_t       wildcard;
    size_t          nwildcard;
    xp_list_t       all;
    size_t          count;
    /* The by_key entry xp_match_find_any returned last: the earliest of its
     * key until it is removed (later appends of that key come after it). */
    xp_match_entry_t *hot;
} xp_match_list_t;

typedef struct xp_match_table {
    xp_match_list_t lists[XP_MATCH_NLISTS];
    xp_match_hash_t uh_by_key;
    xp_match_hash_t uh_by_source;
    xp_list_t       uh_arrival;
    size_t          uh_count;
    uint64_t        next_seq;
} xp_match_table_t;

/* Extra acceptance check per candidate (e.g. PTL_ME_NO_TRUNCATE with too
 * little room left): return nonzero to accept. A rejected candidate is
 * skipped and the search goes on in order. */
typedef int (*xp_match_accept_t)(xp_match_entry_t *e, void *arg);
typedef int (*xp_match_uh_accept_t)(xp_match_header_t *h, void *arg);

/* ------------------------------------------------------------ specs */

/* The Portals match predicate (a pure function). */
static inline int xp_match_spec_matches(const xp_match_spec_t *s, uint64_t source,
                                        uint64_t match_bits)
{
    return ((match_bits ^ s->match_bits) & ~s->ignore_bits) == 0 &&
           ((source ^ s->source) & s->source_mask) == 0;
}

/* Matches every header (non-matching LEs, PtlLESearch). */
static inline xp_match_spec_t xp_match_spec_any(void)
{
    xp_match_spec_t s = { 0, UINT64_MAX, 0, XP_MATCH_SOURCE_ANY };
    return s;
}

/* Logical NI: rank, or any rank. */
static inline xp_match_spec_t xp_match_spec_logical(uint64_t match_bits, uint64_t ignore_bits,
                                                    uint32_t rank, int rank_any)
{
    xp_match_spec_t s = { match_bits, ignore_bits, rank_any ? 0 : rank,
                          rank_any ? XP_MATCH_SOURCE_ANY : XP_MATCH_SOURCE_FIXED };
    return s;
}

/* Physical NI: nid and pid, each possibly "any". */
static inline xp_match_spec_t xp_match_spec_physical(uint64_t match_bits, uint64_t ignore_bits,
                                                     uint32_t nid, int nid_any,
                                                     uint32_t pid, int pid_any)
{
    uint64_t mask = (nid_any ? 0 : XP_MATCH_SOURCE_NID) | (pid_any ? 0 : XP_MATCH_SOURCE_PID);
    xp_match_spec_t s = { match_bits, ignore_bits,
                          ((uint64_t)nid << 32 | pid) & mask, mask };
    return s;
}

static inline uint64_t xp_match_source_physical(uint32_t nid, uint32_t pid)
{
    return (uint64_t)nid << 32 | pid;
}

/* ------------------------------------------------------------ tables */

/* XP_ERR_NO_MEMORY when the first hash slots cannot be allocated. */
xp_status_t xp_match_table_init(xp_match_table_t *t);
/* Frees the table's own memory. Entries and headers still linked are simply
 * forgotten (they belong to the engine). */
void xp_match_table_fini(xp_match_table_t *t);

/* ------------------------------------------------------------ entries */

/* Set spec and user; the entry is not linked yet. */
void xp_match_entry_init(xp_match_entry_t *e, const xp_match_spec_t *spec, void *user);

/* Append e at the end of list `list`; assigns e->seq. Never fails (if a hash
 * cannot grow it keeps longer chains). e must be initialised and unlinked. */
void xp_match_append(xp_match_table_t *t, xp_match_list_id_t list, xp_match_entry_t *e);

/* Unlink e from its list in O(1). No-op if e is not linked. */
void xp_match_remove(xp_match_table_t *t, xp_match_entry_t *e);

static inline int xp_match_entry_linked(const xp_match_entry_t *e)
{
    return e->linked;
}

/* The earliest appended entry of `list` that matches (source, match_bits)
 * and that accept (if not NULL) accepts; NULL if none. */
xp_match_entry_t *xp_match_find(xp_match_table_t *t, xp_match_list_id_t list, uint64_t source,
                                uint64_t match_bits, xp_match_accept_t accept, void *arg);

/* Iterate a list in append order (also safe to remove the current entry
 * after fetching the next one). */
static inline xp_match_entry_t *xp_match_first(xp_match_table_t *t, xp_match_list_id_t list)
{
    return xp_list_first_entry(&t->lists[list].all, xp_match_entry_t, all);
}
xp_match_entry_t *xp_match_next(xp_match_table_t *t, xp_match_entry_t *e);
size_t xp_match_count(const xp_match_table_t *t, xp_match_list_id_t list);

/* Private (match.c and the inline lookup below): the hash of an exact
 * (source, match_bits) key, splitmix64's finaliser (good avalanche for
 * small, dense ids and tags). */
static inline uint64_t xp_match_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static inline uint64_t xp_match_key_hash(uint64_t source, uint64_t match_bits)
{
    return xp_match_mix64(source * UINT64_C(0x9e3779b97f4a7c15) ^ match_bits);
}

/* Whether `list` holds only exact-key entries (xp_match_find_exact may
 * search it). */
static inline int xp_match_exact_only(const xp_match_table_t *t, xp_match_list_id_t list)
{
    const xp_match_list_t *l = &t->lists[list];
    return !l->nwildcard && !l->by_source.count;
}

/* xp_match_find_any for a list that holds only exact-key entries
 * (xp_match_exact_only): no call at all. */
static inline xp_match_entry_t *xp_match_find_exact(xp_match_table_t *t,
                                                    xp_match_list_id_t list, uint64_t source,
                                                    uint64_t match_bits)
{
    xp_match_list_t *l = &t->lists[list];
    xp_match_entry_t *e = l->hot;
    /* Exact-key entries: the predicate is two compares. A stream of
     * messages to one key finds its entry without hashing. */
    if (e && e->spec.match_bits == match_bits && e->spec.source == source)
        return e;
    if (!l->by_key.count)
        return NULL;
    xp_list_t *head = &l->by_key.slots[xp_match_key_hash(source, match_bits) & l->by_key.mask];
    for (xp_list_t *n = head->next; n != head; n = n->next) {
        e = xp_container_of(n, xp_match_entry_t, link);
        if (e->spec.match_bits == match_bits && e->spec.source == source) {
            l->hot = e;
            return e;
        }
    }
    return NULL;
}

/* xp_match_find with no accept check, inline for the packet handler: when
 * the list holds only exact-key entries (fixed source, no ignore bits: the
 * usual ME of a tagged protocol), one hash slot walk, no call; otherwise
 * xp_match_find. */
static inline xp_match_entry_t *xp_match_find_any(xp_match_table_t *t, xp_match_list_id_t list,
                                                  uint64_t source, uint64_t match_bits)
{
    xp_match_list_t *l = &t->lists[list];
    if (__builtin_expect(l->nwildcard || l->by_source.count, 0))
        return xp_match_find(t, list, source, match_bits, NULL, NULL);
    return xp_match_find_exact(t, list, source, match_bits);
}

/* ------------------------------------------------------------ unexpected headers */

/* Record h (source, match_bits set here) as the newest unexpected header. */
void xp_match_uh_insert(xp_match_table_t *t, xp_match_header_t *h, uint64_t source,
                        uint64_t match_bits);

/* Unlink h in O(1). No-op if h is not linked. */
void xp_match_uh_remove(xp_match_table_t *t, xp_match_header_t *h);

/* The earliest header (in arrival order) that `spec` matches and accept
 * (if not NULL) accepts, strictly after `after` when after is not NULL
 * (after must still be linked and matched by spec, else NULL).
 * Uses: a priority-list append (first match, consume it), PtlMESearch
 * SEARCH_ONLY (first match) and SEARCH_DELETE (loop with after = previous
 * result; fetch the next one before removing the previous). */
xp_match_header_t *xp_match_uh_find(xp_match_table_t *t, const xp_match_spec_t *spec,
                                    xp_match_header_t *after, xp_match_uh_accept_t accept,
                                    void *arg);

/* All headers in arrival order. */
xp_match_header_t *xp_match_uh_first(xp_match_table_t *t);
xp_match_header_t *xp_match_uh_next(xp_match_table_t *t, xp_match_header_t *h);
size_t xp_match_uh_count(const xp_match_table_t *t);

#endif
