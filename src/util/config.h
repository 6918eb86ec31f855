/*
 * util/config.h - typed access to the XP_* configuration table.
 *
 * The environment is parsed once, on first use. A bad value is reported with
 * the variable, the value and what is accepted, the default is kept, and
 * xp_config_status() returns XP_ERR_CONFIG so that xp_init/PtlInit refuse to
 * start. An unknown XP_* variable draws a warning naming the closest valid one.
 */
#ifndef XP_UTIL_CONFIG_H
#define XP_UTIL_CONFIG_H

#include <stddef.h>
#include "xportals/status.h"

typedef enum { XP_CFG_BOOL, XP_CFG_INT, XP_CFG_SIZE, XP_CFG_ENUM, XP_CFG_STRING } xp_config_type_t;

#define XP_CFG_CTYPE_BOOL   int
#define XP_CFG_CTYPE_INT    long
#define XP_CFG_CTYPE_SIZE   size_t
#define XP_CFG_CTYPE_ENUM   int
#define XP_CFG_CTYPE_STRING const char *

typedef struct xp_config {
#define XP_CONFIG_VAR(field, type, name, def, min, max, choices, help) XP_CFG_CTYPE_##type field;
#include "util/config_vars.h"
#undef XP_CONFIG_VAR
} xp_config_t;

/* Indices of the table rows: XP_CFG_IDX_log_level, ... */
enum {
#define XP_CONFIG_VAR(field, type, name, def, min, max, choices, help) XP_CFG_IDX_##field,
#include "util/config_vars.h"
#undef XP_CONFIG_VAR
    XP_CFG_NUM_VARS
};

typedef struct xp_config_info {
    const char *name;        /* "XP_LOG_LEVEL" */
    xp_config_type_t type;
    const char *def;         /* default, as text */
    long min, max;           /* bounds for INT / SIZE */
    const char *choices;     /* "a|b|c" for ENUM, "" otherwise */
    const char *help;
} xp_config_info_t;

/* The process's configuration (parsed from the environment on first call). */
const xp_config_t *xp_config(void);
/* XP_OK, or XP_ERR_CONFIG if some XP_* variable had a bad value. */
xp_status_t xp_config_status(void);

size_t xp_config_count(void);
const xp_config_info_t *xp_config_info(size_t idx);
/* Current value of row idx formatted as text; *set = 1 if the environment set it. */
void xp_config_value_string(size_t idx, char *buf, size_t len, int *set);

/* Pure parts, exposed for tests and tools. */
/* Parse `text` for row idx into the matching field of cfg. On error writes a
 * message into err (if non-NULL) and leaves cfg untouched. */
xp_status_t xp_config_parse(size_t idx, const char *text, xp_config_t *cfg, char *err, size_t errlen);
/* Fill cfg from an environment array (NULL-terminated "K=V" strings); warns
 * about unknown XP_* names; returns XP_ERR_CONFIG if any value was bad. */
xp_status_t xp_config_load_env(char **envp, xp_config_t *cfg);
/* Row idx alone from the environment into cfg (every other field its
 * default), silently: for a launcher that reads one setting and passes the
 * environment on to programs that read (and check) all of it. XP_OK, or
 * XP_ERR_CONFIG for a bad value (the field keeps its default). */
xp_status_t xp_config_read_one(size_t idx, xp_config_t *cfg);
/* The valid variable name closest to `name` (edit distance), or NULL. */
const char *xp_config_closest(const char *name);
/* Parse "64k", "4M", "1g", "123" into bytes. */
xp_status_t xp_parse_size(const char *text, size_t *out);

#endif
