/* Names and messages of xp_status_t, generated from XP_STATUS_LIST. */
#include "xportals/status.h"

XP_EXPORT const char *xp_status_name(xp_status_t status)
{
    switch (status) {
#define XP_STATUS_NAME_(name, value, msg) case XP_##name: return "XP_" #name;
        XP_STATUS_LIST(XP_STATUS_NAME_)
#undef XP_STATUS_NAME_
    }
    return "XP_UNKNOWN_STATUS";
}

XP_EXPORT const char *xp_status_string(xp_status_t status)
{
    switch (status) {
#define XP_STATUS_MSG_(name, value, msg) case XP_##name: return msg;
        XP_STATUS_LIST(XP_STATUS_MSG_)
#undef XP_STATUS_MSG_
    }
    return "unknown status";
}
