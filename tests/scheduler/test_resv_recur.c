/*
 * test_resv_recur.c: a repeating reservation's windows (scheduler/resv_recur.h) in Berlin's
 * time zone: DAILY keeps 10:00 across both daylight-saving changes (23 and 25 hours apart),
 * WEEKDAY skips from Friday to Monday, WEEKEND from Sunday to Saturday, WEEKLY is a week
 * of local time, HOURLY an hour; a window that ended rolls on to the first that has not,
 * also after a hundred days down (the same as stepping day by day), and one that has not
 * ended stays.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "scheduler/resv_recur.h"

#define HOURLY GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY
#define DAILY GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY
#define WEEKDAY GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY
#define WEEKEND GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKEND
#define WEEKLY GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY
#define H SCHED_RESV_HOUR_MS

static void berlin(void)
{
    setenv("TZ", "Europe/Berlin", 1);
    tzset();
}

TestSuite(resv_recur, .init = berlin);

/* Local wall time in ms. */
static uint64_t at(int y, int mon, int d, int h, int min)
{
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mon - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = min,
                    .tm_isdst = -1};

    return (uint64_t)mktime(&tm) * 1000;
}

Test(resv_recur, daily_keeps_the_local_time_across_dst)
{
    /* 2026-03-29 and 2026-10-25: Berlin's clocks go forward, then back. */
    cr_assert_eq(sched_resv_recur_next(DAILY, at(2026, 3, 28, 10, 0)), at(2026, 3, 29, 10, 0));
    cr_assert_eq(at(2026, 3, 29, 10, 0) - at(2026, 3, 28, 10, 0), 23 * H, "the test's own check");
    cr_assert_eq(sched_resv_recur_next(DAILY, at(2026, 10, 24, 10, 0)), at(2026, 10, 25, 10, 0));
    cr_assert_eq(at(2026, 10, 25, 10, 0) - at(2026, 10, 24, 10, 0), 25 * H);
    cr_assert_eq(sched_resv_recur_next(DAILY, at(2026, 12, 31, 23, 30)), at(2027, 1, 1, 23, 30));
}

Test(resv_recur, weekday_weekend_weekly_and_hourly)
{
    /* 2026-12-04 is a Friday. */
    cr_assert_eq(sched_resv_recur_next(WEEKDAY, at(2026, 12, 4, 9, 0)), at(2026, 12, 7, 9, 0));
    cr_assert_eq(sched_resv_recur_next(WEEKDAY, at(2026, 12, 7, 9, 0)), at(2026, 12, 8, 9, 0));
    cr_assert_eq(sched_resv_recur_next(WEEKEND, at(2026, 12, 5, 9, 0)), at(2026, 12, 6, 9, 0));
    cr_assert_eq(sched_resv_recur_next(WEEKEND, at(2026, 12, 6, 9, 0)), at(2026, 12, 12, 9, 0));
    cr_assert_eq(sched_resv_recur_next(WEEKLY, at(2026, 10, 20, 10, 0)), at(2026, 10, 27, 10, 0));
    cr_assert_eq(at(2026, 10, 27, 10, 0) - at(2026, 10, 20, 10, 0), 7 * 24 * H + H);
    cr_assert_eq(sched_resv_recur_next(HOURLY, at(2026, 3, 29, 1, 30)), at(2026, 3, 29, 1, 30) + H);
    cr_assert_str_eq(sched_resv_recur_name(WEEKDAY), "WEEKDAY");
    cr_assert_str_eq(sched_resv_recur_name(WEEKDAY | DAILY), "");
    cr_assert_eq(sched_resv_recur_period_ms(WEEKLY), 7 * 24 * H);
    cr_assert_eq(sched_resv_recur_period_ms(HOURLY), H);
}

/* What roll must give: stepping window by window until one has not ended. */
static uint64_t stepped(uint32_t flag, uint64_t start, uint64_t len, uint64_t now)
{
    while (start + len <= now)
        start = sched_resv_recur_next(flag, start);
    return start;
}

Test(resv_recur, rolls_to_the_first_window_not_ended)
{
    static const uint32_t flags[] = {HOURLY, DAILY, WEEKDAY, WEEKEND, WEEKLY};
    uint64_t s0 = at(2026, 3, 20, 10, 0), len = H;
    uint64_t nows[] = {s0 + len, s0 + 30 * 24 * H + 2 * H, s0 + 100 * 24 * H + 5 * H + 7,
                       s0 + 200 * 24 * H};

    for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
        for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
            uint64_t start = s0, end = s0 + len;

            sched_resv_recur_roll(flags[f], &start, &end, nows[i]);
            cr_assert_eq(start, stepped(flags[f], s0, len, nows[i]), "flag %u, now %zu", flags[f],
                         i);
            cr_assert_eq(end, start + len);
            cr_assert_gt(end, nows[i]);
        }
    }
    {
        uint64_t start = s0, end = s0 + len;

        sched_resv_recur_roll(DAILY, &start, &end, s0 + len - 1);
        cr_assert_eq(start, s0, "a window that has not ended stays");
        sched_resv_recur_roll(WEEKDAY, &start, &end, at(2026, 6, 13, 12, 0)); /* a Saturday */
        cr_assert_eq(start, at(2026, 6, 15, 10, 0), "on to Monday");
    }
}
