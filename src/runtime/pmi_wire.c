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
