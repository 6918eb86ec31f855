/* PMI-1 wire format: tokenizing one line. See pmi_wire.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pmi_wire.h"

xp_status_t xp_pmi_parse(char *line, xp_pmi_msg_t *msg)
{
    size_t n = strlen(line);
    if (n && line[n - 1] == '\n')
        line[--n] = '\0';
    msg->ntokens = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (msg->ntokens == XP_PMI_MAX_TOKENS)
            return XP_ERR_PROTOCOL;
        char *eq = strchr(tok, '=');
        msg->key[msg->ntokens] = tok;
        if (eq) {
            *eq = '\0';
            msg->value[msg->ntokens] = eq + 1;
        } else {
            msg->value[msg->ntokens] = tok + strlen(tok); /* "" */
        }
        msg->ntokens++;
    }
    return msg->ntokens ? XP_OK : XP_ERR_PROTOCOL;
}

const char *xp_pmi_get(const xp_pmi_msg_t *msg, const char *key)
{
    for (int i = 0; i < msg->ntokens; i++)
        if (!strcmp(msg->key[i], key))
            return msg->value[i];
    return NULL;
}

xp_status_t xp_pmi_get_int(const xp_pmi_msg_t *msg, const char *key, int *out)
{
    const char *v = xp_pmi_get(msg, key);
    if (!v || !*v)
        return XP_ERR_PROTOCOL;
    char *end;
    long l = strtol(v, &end, 10);
    if (*end || l < INT_MIN || l > INT_MAX)
        return XP_ERR_PROTOCOL;
    *out = (int)l;
    return XP_OK;
}

int xp_pmi_token_ok(const char *s, int is_key)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c >= 127 || (is_key && c == '='))
            return 0;
    }
    return 1;
}

#define MAPPING_MAX_BLOCKS 64

/* Read "(a,b,c)" at *s; advances *s past it. */
static int read_block(const char **s, long out[3])
{
    const char *p = *s;
    if (*p++ != '(')
        return -1;
    for (int i = 0; i < 3; i++) {
        char *end;
        out[i] = strtol(p, &end, 10);
        if (end == p || out[i] < 0 || out[i] > INT_MAX / 2 || *end != (i < 2 ? ',' : ')'))
            return -1;
        p = end + 1;
    }
    *s = p;
    return 0;
}

xp_status_t xp_pmi_parse_mapping(const char *text, int size, int *node_of, int *num_nodes)
{
    long blocks[MAPPING_MAX_BLOCKS][3];
    int nblocks = 0;
    const char *p = text;
    if (!text || strncmp(p, "(vector", 7) || size < 1)
        return XP_ERR_PROTOCOL;
    p += 7;
    while (*p == ',') {
        p++;
        if (nblocks == MAPPING_MAX_BLOCKS || read_block(&p, blocks[nblocks]) < 0)
            return XP_ERR_PROTOCOL;
        nblocks++;
    }
    if (strcmp(p, ")") || nblocks == 0)
        return XP_ERR_PROTOCOL;
    int rank = 0, max_node = -1;
    while (rank < size) {
        int before = rank;
        for (int b = 0; b < nblocks && rank < size; b++)
            for (long n = 0; n < blocks[b][1] && blocks[b][2] > 0 && rank < size; n++)
                for (long k = 0; k < blocks[b][2] && rank < size; k++) {
                    int node = (int)(blocks[b][0] + n);
                    node_of[rank++] = node;
                    if (node > max_node)
                        max_node = node;
                }
        if (rank == before)
            return XP_ERR_PROTOCOL; /* no block holds a rank */
    }
    /* Dense: every id up to the largest is used (so there are <= size). */
    if (max_node >= size)
        return XP_ERR_PROTOCOL;
    unsigned char *used = calloc((size_t)max_node + 1, 1);
    if (!used)
        return XP_ERR_NO_MEMORY;
    int distinct = 0;
    for (int r = 0; r < size; r++)
        if (!used[node_of[r]]) {
            used[node_of[r]] = 1;
            distinct++;
        }
    free(used);
    if (distinct != max_node + 1)
        return XP_ERR_PROTOCOL;
    *num_nodes = max_node + 1;
    return XP_OK;
}
