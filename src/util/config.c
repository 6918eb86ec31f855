/* The XP_* configuration table: parsing, validation, closest-name hints. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "util/context.h"
#include "util/log.h"

extern char **environ;

static const xp_config_info_t table[XP_CFG_NUM_VARS] = {
#define XP_CONFIG_VAR(field, type, name, def, min, max, choices, help) \
    {name, XP_CFG_##type, def, min, max, choices, help},
#include "util/config_vars.h"
#undef XP_CONFIG_VAR
};

/* Where each row's value lives inside xp_config_t. */
static const size_t field_offset[XP_CFG_NUM_VARS] = {
#define XP_CONFIG_VAR(field, type, name, def, min, max, choices, help) offsetof(xp_config_t, field),
#include "util/config_vars.h"
#undef XP_CONFIG_VAR
};

size_t xp_config_count(void)
{
    return XP_CFG_NUM_VARS;
}

const xp_config_info_t *xp_config_info(size_t idx)
{
    return idx < XP_CFG_NUM_VARS ? &table[idx] : NULL;
}

/* Base for strtol/strtoull, or -1. Those accept leading blanks, a minus sign
 * on unsigned numbers (wrapping around) and octal for a leading 0; settings
 * accept only decimal or 0x hexadecimal ("010" is ten). */
static int number_base(const char *t, int allow_minus)
{
    if (allow_minus && *t == '-')
        t++;
    if (!isdigit((unsigned char)*t))
        return -1;
    return t[0] == '0' && (t[1] == 'x' || t[1] == 'X') ? 16 : 10;
}

xp_status_t xp_parse_size(const char *text, size_t *out)
{
    char *end;
    int base = text ? number_base(text, 0) : -1;
    if (base < 0)
        return XP_ERR_INVALID;
    errno = 0;
    unsigned long long v = strtoull(text, &end, base);
    if (errno || end == text)
        return XP_ERR_INVALID;
    unsigned shift = 0;
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    case 't': shift = 40; end++; break;
    default: return XP_ERR_INVALID;
    }
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    if (*end)
        return XP_ERR_INVALID;
    if (shift && v > (ULLONG_MAX >> shift))
        return XP_ERR_OVERFLOW;
    v <<= shift;
    if (v > SIZE_MAX)
        return XP_ERR_OVERFLOW;
    *out = (size_t)v;
    return XP_OK;
}

static int parse_bool(const char *t, int *out)
{
    static const char *const yes[] = {"1", "y", "yes", "true", "on"};
    static const char *const no[] = {"0", "n", "no", "false", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcasecmp(t, yes[i]))
            return *out = 1, 0;
        if (!strcasecmp(t, no[i]))
            return *out = 0, 0;
    }
    return -1;
}

/* Index of `t` among "a|b|c" choices, or -1. */
static int parse_choice(const char *choices, const char *t)
{
    int idx = 0;
    size_t tlen = strlen(t);
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == tlen && !strncasecmp(p, t, len))
            return idx;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

xp_status_t xp_config_parse(size_t idx, const char *text, xp_config_t *cfg, char *err, size_t errlen)
{
    const xp_config_info_t *ci = xp_config_info(idx);
    char dummy[256]; /* (a 1-byte one made gcc 12 warn of certain truncation once inlined) */
    if (!err)
        err = dummy, errlen = sizeof dummy;
    if (!ci || !text || !cfg)
        return XP_ERR_INVALID;
    void *field = (char *)cfg + field_offset[idx];

    switch (ci->type) {
    case XP_CFG_BOOL: {
        int b;
        if (parse_bool(text, &b)) {
            snprintf(err, errlen, "%s=%s: expected a boolean (1/0, yes/no, on/off, true/false)",
                     ci->name, text);
            return XP_ERR_CONFIG;
        }
        *(int *)field = b;
        return XP_OK;
    }
    case XP_CFG_INT: {
        char *end;
        int base = number_base(text, 1);
        errno = 0;
        long v = base < 0 ? 0 : strtol(text, &end, base);
        if (base < 0 || errno || end == text || *end) {
            snprintf(err, errlen, "%s=%s: expected an integer", ci->name, text);
            return XP_ERR_CONFIG;
        }
        if (v < ci->min || v > ci->max) {
            snprintf(err, errlen, "%s=%s: out of range [%ld, %ld]", ci->name, text, ci->min, ci->max);
            return XP_ERR_CONFIG;
        }
        *(long *)field = v;
        return XP_OK;
    }
    case XP_CFG_SIZE: {
        size_t v;
        if (xp_parse_size(text, &v) != XP_OK) {
            snprintf(err, errlen, "%s=%s: expected a size such as 4096, 64k, 16m or 1g", ci->name, text);
            return XP_ERR_CONFIG;
        }
        if (v < (size_t)ci->min || v > (size_t)ci->max) {
            snprintf(err, errlen, "%s=%s: out of range [%ld, %ld] bytes", ci->name, text, ci->min,
                     ci->max);
            return XP_ERR_CONFIG;
        }
        *(size_t *)field = v;
        return XP_OK;
    }
    case XP_CFG_ENUM: {
        int c = parse_choice(ci->choices, text);
        if (c < 0) {
            snprintf(err, errlen, "%s=%s: expected one of %s", ci->name, text, ci->choices);
            return XP_ERR_CONFIG;
        }
        *(int *)field = c;
        return XP_OK;
    }
    case XP_CFG_STRING:
        *(const char **)field = text;
        return XP_OK;
    }
    return XP_ERR_INVALID;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[128];
    if (lb >= sizeof row / sizeof row[0])
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *xp_config_closest(const char *name)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    if (!name)
        return NULL;
    for (size_t i = 0; i < XP_CFG_NUM_VARS; i++) {
        size_t d = edit_distance(name, table[i].name);
        if (d < best_d)
            best_d = d, best = table[i].name;
    }
    /* A name far from every valid one gets no suggestion. */
    return best_d <= strlen(name) / 2 ? best : NULL;
}

static void set_defaults(xp_config_t *cfg)
{
    for (size_t i = 0; i < XP_CFG_NUM_VARS; i++) {
        xp_status_t st = xp_config_parse(i, table[i].def, cfg, NULL, 0);
        (void)st; /* defaults are checked by the config unit test */
    }
}

static int lookup_row(const char *name, size_t len)
{
    for (size_t i = 0; i < XP_CFG_NUM_VARS; i++)
        if (strlen(table[i].name) == len && !strncmp(table[i].name, name, len))
            return (int)i;
    return -1;
}

/* Variables with the XP_ prefix that belong to others (launchers, tests). */
static int is_foreign(const char *name, size_t len)
{
    static const char *const foreign[] = {"XP_TEST_", "XPRUN_"};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        if (len >= strlen(foreign[i]) && !strncmp(name, foreign[i], strlen(foreign[i])))
            return 1;
    return 0;
}

static xp_status_t load_env(char **envp, xp_config_t *cfg, unsigned char *set)
{
    xp_status_t result = XP_OK;
    set_defaults(cfg);
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, "XP_", 3))
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - *e);
        int row = lookup_row(*e, len);
        if (row < 0) {
            if (is_foreign(*e, len))
                continue;
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), *e);
            const char *hint = xp_config_closest(name);
            if (hint)
                xp_warn("unknown variable %s (did you mean %s?)", name, hint);
            else
                xp_warn("unknown variable %s (xpinfo -c lists the valid ones)", name);
            continue;
        }
        char err[256];
        if (xp_config_parse((size_t)row, eq + 1, cfg, err, sizeof err) != XP_OK) {
            xp_error("%s; keeping the default %s", err, table[row].def);
            result = XP_ERR_CONFIG;
        } else if (set) {
            set[row] = 1;
        }
    }
    return result;
}

xp_status_t xp_config_load_env(char **envp, xp_config_t *cfg)
{
    if (!cfg)
        return XP_ERR_INVALID;
    return load_env(envp, cfg, NULL);
}

xp_status_t xp_config_read_one(size_t idx, xp_config_t *cfg)
{
    if (!cfg || idx >= XP_CFG_NUM_VARS)
        return XP_ERR_INVALID;
    set_defaults(cfg);
    const char *text = getenv(table[idx].name);
    char err[256]; /* (the rank reports it) */
    return text ? xp_config_parse(idx, text, cfg, err, sizeof err) : XP_OK;
}

static void load_once(void)
{
    /* Messages printed while loading use the default level (no recursion). */
    __atomic_store_n(&xp_ctx.log_level, XP_LOG_WARN, __ATOMIC_RELAXED);
    xp_ctx.config_status = load_env(environ, &xp_ctx.config, xp_ctx.config_set);
    __atomic_store_n(&xp_ctx.log_level, xp_ctx.config.log_level, __ATOMIC_RELAXED);
}

const xp_config_t *xp_config(void)
{
    pthread_once(&xp_ctx.config_once, load_once);
    return &xp_ctx.config;
}

xp_status_t xp_config_status(void)
{
    (void)xp_config();
    return xp_ctx.config_status;
}

void xp_config_value_string(size_t idx, char *buf, size_t len, int *set)
{
    const xp_config_t *cfg = xp_config();
    const xp_config_info_t *ci = xp_config_info(idx);
    if (!ci || !buf || !len)
        return;
    const void *field = (const char *)cfg + field_offset[idx];
    if (set)
        *set = xp_ctx.config_set[idx];
    switch (ci->type) {
    case XP_CFG_BOOL: snprintf(buf, len, "%s", *(const int *)field ? "yes" : "no"); break;
    case XP_CFG_INT: snprintf(buf, len, "%ld", *(const long *)field); break;
    case XP_CFG_SIZE: snprintf(buf, len, "%zu", *(const size_t *)field); break;
    case XP_CFG_STRING: snprintf(buf, len, "%s", *(const char *const *)field); break;
    case XP_CFG_ENUM: {
        int want = *(const int *)field, i = 0;
        const char *p = ci->choices;
        while (i < want && p && (p = strchr(p, '|')))
            p++, i++;
        size_t l = p ? strcspn(p, "|") : 0;
        snprintf(buf, len, "%.*s", (int)l, p ? p : "");
        break;
    }
    }
}
