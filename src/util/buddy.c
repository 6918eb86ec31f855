/* Buddy allocator over offsets, metadata in a one-byte-per-node tree; see buddy.h. */
#include <stdlib.h>
#include <string.h>

#include "util/buddy.h"
#include "util/log.h"

/*
 * Node i (1-based heap order: children 2i and 2i+1) at depth d covers a block
 * of order (levels - 1 - d), i.e. min_block << order bytes. tree[i] is 0 when
 * nothing below i is free, order + 1 when i's whole block is free, and the
 * largest value among its children otherwise. An allocated node is set to 0;
 * nodes below it keep their "whole block free" values, which is what lets
 * free() find the allocated node: the first 0 on the way up from the leaf.
 */

static unsigned ilog2(size_t x)
{
    return (unsigned)(63 - __builtin_clzll((unsigned long long)x));
}

static unsigned depth_of(size_t node)
{
    return ilog2(node);
}

static unsigned order_of(const xp_buddy_t *b, size_t node)
{
    return b->levels - 1 - depth_of(node);
}

/* The value a parent gets from its children (children of order `child_order`). */
static uint8_t merge(uint8_t left, uint8_t right, unsigned child_order)
{
    uint8_t whole = (uint8_t)(child_order + 1);
    if (left == whole && right == whole)
        return (uint8_t)(whole + 1);
    return left > right ? left : right;
}

static void update_ancestors(xp_buddy_t *b, size_t node)
{
    while (node > 1) {
        size_t parent = node / 2;
        uint8_t v = merge(b->tree[2 * parent], b->tree[2 * parent + 1], order_of(b, node));
        if (b->tree[parent] == v)
            break; /* nothing above changes either */
        b->tree[parent] = v;
        node = parent;
    }
}

/* The tree of a fresh allocator over `blocks` leading leaves, level by
 * level: at each depth the nodes whose block lies inside the region are
 * wholly free, at most one straddles its end (merged from its children) and
 * the rest are never free. A node-by-node merge over a large shared heap
 * cost about 21 million instructions in every PtlInit; this is a few
 * memsets. */
static void fill_tree(xp_buddy_t *b, size_t blocks)
{
    uint8_t *tree = b->tree;
    for (unsigned d = b->levels; d-- > 0;) {
        size_t first = (size_t)1 << d;
        size_t span = b->nleaves >> d; /* leaves under one node */
        size_t whole = blocks / span;
        memset(tree + first, (int)(b->levels - d), whole); /* order + 1 */
        size_t rest = first - whole;
        if (rest && blocks % span) {
            size_t n = first + whole;
            tree[n] = merge(tree[2 * n], tree[2 * n + 1], order_of(b, 2 * n));
            whole++;
            rest--;
        }
        memset(tree + first + whole, 0, rest);
    }
    tree[0] = 0;
}

xp_status_t xp_buddy_init(xp_buddy_t *b, uint64_t base, size_t size, size_t min_block)
{
    if (!b || min_block < 8 || (min_block & (min_block - 1)) || !size || size % min_block)
        return XP_ERR_INVALID;
    size_t blocks = size / min_block;
    size_t nleaves = 1;
    unsigned levels = 1;
    while (nleaves < blocks) {
        nleaves *= 2;
        levels++;
    }
    if (levels > 250)
        return XP_ERR_INVALID;
    uint8_t *tree = malloc(2 * nleaves);
    if (!tree) {
        xp_error("buddy: cannot allocate %zu bytes of metadata", 2 * nleaves);
        return XP_ERR_NO_MEMORY;
    }
    memset(b, 0, sizeof *b);
    b->base = base;
    b->size = size;
    b->min_block = min_block;
    b->min_shift = ilog2(min_block);
    b->levels = levels;
    b->nleaves = nleaves;
    b->tree = tree;
    fill_tree(b, blocks);
    b->free_bytes = size;
    return XP_OK;
}

void xp_buddy_destroy(xp_buddy_t *b)
{
    if (!b)
        return;
    free(b->tree);
    memset(b, 0, sizeof *b);
}

xp_status_t xp_buddy_alloc(xp_buddy_t *b, size_t size, uint64_t *offset_out)
{
    if (!size || !offset_out)
        return XP_ERR_INVALID;
    if (size > ((size_t)b->nleaves << b->min_shift))
        return XP_ERR_NO_RESOURCE;
    unsigned want = 0;
    while (((size_t)b->min_block << want) < size)
        want++;
    if (b->tree[1] < want + 1)
        return XP_ERR_NO_RESOURCE;
    size_t node = 1;
    for (unsigned order = b->levels - 1; order > want; order--) {
        uint8_t l = b->tree[2 * node], r = b->tree[2 * node + 1];
        /* Best fit between the two halves keeps big blocks whole. */
        if (l >= want + 1 && (r < want + 1 || l <= r))
            node = 2 * node;
        else
            node = 2 * node + 1;
    }
    b->tree[node] = 0;
    update_ancestors(b, node);
    size_t index = node - ((size_t)1 << depth_of(node));
    size_t block = (size_t)b->min_block << want;
    b->free_bytes -= block;
    b->nallocs++;
    *offset_out = b->base + (uint64_t)index * block;
    return XP_OK;
}

/* The allocated node whose block starts at offset, or 0. */
static size_t find_allocated(const xp_buddy_t *b, uint64_t offset)
{
    if (offset < b->base || offset - b->base >= b->size)
        return 0;
    uint64_t rel = offset - b->base;
    if (rel & (b->min_block - 1))
        return 0;
    size_t node = b->nleaves + (size_t)(rel >> b->min_shift);
    while (node && b->tree[node])
        node /= 2;
    if (!node)
        return 0;
    /* The block must start exactly at offset, not merely contain it. */
    size_t index = node - ((size_t)1 << depth_of(node));
    if (((uint64_t)index << (b->min_shift + order_of(b, node))) != rel)
        return 0;
    return node;
}

xp_status_t xp_buddy_free(xp_buddy_t *b, uint64_t offset)
{
    size_t node = find_allocated(b, offset);
    if (!node) {
        xp_error("buddy: free of offset %llu, which is not the start of an allocated block",
                 (unsigned long long)offset);
        return XP_ERR_INVALID;
    }
    unsigned order = order_of(b, node);
    b->tree[node] = (uint8_t)(order + 1);
    update_ancestors(b, node);
    b->free_bytes += (size_t)b->min_block << order;
    b->nallocs--;
    return XP_OK;
}

size_t xp_buddy_block_size(const xp_buddy_t *b, uint64_t offset)
{
    size_t node = find_allocated(b, offset);
    return node ? (size_t)b->min_block << order_of(b, node) : 0;
}

void xp_buddy_stats(const xp_buddy_t *b, xp_buddy_stats_t *stats)
{
    stats->size = b->size;
    stats->free_bytes = b->free_bytes;
    stats->largest_free = b->tree[1] ? (size_t)b->min_block << (b->tree[1] - 1) : 0;
    stats->nallocs = b->nallocs;
}
