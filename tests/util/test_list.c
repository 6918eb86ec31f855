/* util/list: intrusive doubly linked lists. */
#include "util/list.h"
#include "xp_test.h"

typedef struct item {
    int value;
    xp_list_t link;
} item_t;

static int values_are(xp_list_t *head, const int *want, size_t n)
{
    item_t *it;
    size_t i = 0;
    xp_list_for_each_entry(it, head, item_t, link) {
        if (i >= n || it->value != want[i])
            return 0;
        i++;
    }
    return i == n && xp_list_length(head) == n;
}

int main(void)
{
    item_t items[6];
    xp_list_t head;
    xp_list_init(&head);
    XP_CHECK(xp_list_empty(&head));
    XP_CHECK(xp_list_first_entry(&head, item_t, link) == NULL);
    XP_CHECK(xp_list_pop_front(&head) == NULL);
    for (int i = 0; i < 6; i++)
        items[i].value = i;

    xp_list_push_back(&head, &items[1].link);
    xp_list_push_back(&head, &items[2].link);
    xp_list_push_front(&head, &items[0].link);
    xp_list_insert_before(&items[2].link, &items[3].link); /* 0 1 3 2 */
    xp_list_insert_before(&head, &items[4].link);          /* at the end */
    XP_CHECK(values_are(&head, (int[]){0, 1, 3, 2, 4}, 5));
    XP_CHECK(xp_list_first_entry(&head, item_t, link) == &items[0]);

    xp_list_del(&items[3].link);
    XP_CHECK(values_are(&head, (int[]){0, 1, 2, 4}, 4));
    /* A deleted node points at itself: deleting it again is harmless. */
    xp_list_del(&items[3].link);
    XP_CHECK_EQ(xp_list_length(&head), 4);

    xp_list_t *n = xp_list_pop_front(&head);
    XP_CHECK(n == &items[0].link);
    XP_CHECK(xp_container_of(n, item_t, link)->value == 0);

    /* Removing while iterating with the safe variant. */
    xp_list_t *pos, *tmp;
    xp_list_for_each_safe(pos, tmp, &head) {
        if (xp_container_of(pos, item_t, link)->value % 2 == 0)
            xp_list_del(pos);
    }
    XP_CHECK(values_are(&head, (int[]){1}, 1));
    size_t count = 0;
    xp_list_for_each(pos, &head)
        count++;
    XP_CHECK_EQ(count, 1);
    xp_list_del(&items[1].link);
    XP_CHECK(xp_list_empty(&head));
    return xp_test_result();
}
