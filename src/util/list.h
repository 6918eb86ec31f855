/*
 * util/list.h - intrusive doubly linked lists (circular, with a head node).
 *
 *   struct me { xp_list_t link; ... };
 *   xp_list_t head; xp_list_init(&head);
 *   xp_list_push_back(&head, &me->link);
 *   xp_list_for_each_entry(pos, &head, struct me, link) ...
 */
#ifndef XP_UTIL_LIST_H
#define XP_UTIL_LIST_H

#include <stddef.h>

typedef struct xp_list {
    struct xp_list *next, *prev;
} xp_list_t;

#define xp_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void xp_list_init(xp_list_t *head)
{
    head->next = head->prev = head;
}

static inline int xp_list_empty(const xp_list_t *head)
{
    return head->next == head;
}

static inline void xp_list_insert_between(xp_list_t *n, xp_list_t *prev, xp_list_t *next)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

static inline void xp_list_push_back(xp_list_t *head, xp_list_t *n)
{
    xp_list_insert_between(n, head->prev, head);
}

static inline void xp_list_push_front(xp_list_t *head, xp_list_t *n)
{
    xp_list_insert_between(n, head, head->next);
}

/* Insert n just before pos (pos may be the head: then n goes last). */
static inline void xp_list_insert_before(xp_list_t *pos, xp_list_t *n)
{
    xp_list_insert_between(n, pos->prev, pos);
}

static inline void xp_list_del(xp_list_t *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}

static inline xp_list_t *xp_list_pop_front(xp_list_t *head)
{
    xp_list_t *n = head->next;
    if (n == head)
        return NULL;
    xp_list_del(n);
    return n;
}

static inline size_t xp_list_length(const xp_list_t *head)
{
    size_t n = 0;
    for (const xp_list_t *p = head->next; p != head; p = p->next)
        n++;
    return n;
}

#define xp_list_first_entry(head, type, member) \
    (xp_list_empty(head) ? NULL : xp_container_of((head)->next, type, member))

#define xp_list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* Safe against removal of pos inside the loop body. */
#define xp_list_for_each_safe(pos, tmp, head) \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#define xp_list_for_each_entry(pos, head, type, member)                        \
    for ((pos) = xp_container_of((head)->next, type, member);                  \
         &(pos)->member != (head);                                             \
         (pos) = xp_container_of((pos)->member.next, type, member))

#endif
