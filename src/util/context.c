#include "util/context.h"

xp_context_t xp_ctx = {
    .config_once = PTHREAD_ONCE_INIT,
    .log_level = -1,
    .log_rank = -1,
};
