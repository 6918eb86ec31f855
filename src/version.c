/* The one translation unit of libportals.so itself; the layers come in as archives. */
#include "xportals/build_config.h"
#include "xportals/xp.h"

XP_EXPORT const char *xp_version(void)
{
    return XP_VERSION_STRING;
}
