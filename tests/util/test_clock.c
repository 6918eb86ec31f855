/* util/clock: monotonic, advances with real time, deadlines. */
#include <stdint.h>
#include <time.h>

#include "util/clock.h"
#include "xp_test.h"

int main(void)
{
    uint64_t prev = xp_time_ns();
    int backwards = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t now = xp_time_ns();
        backwards += now < prev;
        prev = now;
    }
    XP_CHECK_EQ(backwards, 0);

    uint64_t t0 = xp_time_ns();
    double s0 = xp_time_sec();
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    uint64_t t1 = xp_time_ns();
    XP_CHECK_INT(t1 - t0, >=, 20000000);
    XP_CHECK_INT(t1 - t0, <, 2000000000); /* generous: the machine may be busy */
    XP_CHECK(xp_time_sec() - s0 >= 0.02);

    XP_CHECK(xp_deadline_ns(-1) == UINT64_MAX);
    uint64_t d = xp_deadline_ns(5);
    uint64_t now = xp_time_ns();
    XP_CHECK(d > now && d <= now + 5000000);
    XP_CHECK(xp_deadline_ns(0) <= xp_time_ns());
    return xp_test_result();
}
