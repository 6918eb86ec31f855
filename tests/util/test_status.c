/* xp_status_t: every code has its name and message; values are unique. */
#include "xportals/status.h"
#include "xp_test.h"

typedef struct row {
    xp_status_t code;
    const char *name;
    const char *msg;
} row_t;

static const row_t rows[] = {
#define ROW_(name, value, msg) {XP_##name, "XP_" #name, msg},
    XP_STATUS_LIST(ROW_)
#undef ROW_
};

int main(void)
{
    size_t n = sizeof rows / sizeof rows[0];
    XP_CHECK(n >= 20);
    XP_CHECK_EQ(XP_OK, 0);
    for (size_t i = 0; i < n; i++) {
        XP_CHECK_STR(xp_status_name(rows[i].code), rows[i].name);
        XP_CHECK_STR(xp_status_string(rows[i].code), rows[i].msg);
        XP_CHECK(rows[i].msg[0] != '\0');
        if (i > 0)
            XP_CHECK_INT(rows[i].code, <, 0);
        /* Appended with the next free number: values are the ABI. */
        XP_CHECK_EQ(rows[i].code, -(long long)i);
        for (size_t j = 0; j < i; j++)
            XP_CHECK(rows[i].code != rows[j].code);
    }
    XP_CHECK_STR(xp_status_name((xp_status_t)12345), "XP_UNKNOWN_STATUS");
    XP_CHECK_STR(xp_status_string((xp_status_t)-9999), "unknown status");
    XP_CHECK_STR(xp_status_name(XP_ERR_CONFIG), "XP_ERR_CONFIG");
    XP_CHECK_STR(xp_status_string(XP_ERR_TIMEOUT), "timed out");
    return xp_test_result();
}
