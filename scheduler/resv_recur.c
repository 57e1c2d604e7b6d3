/*
 * resv_recur.c: a repeating reservation's windows (resv_recur.h). Calendar days go through
 * localtime_r and mktime with tm_isdst = -1, so "the same local time tomorrow" is what the
 * C library's time zone rules say it is, DST changes included.
 */
#include "scheduler/resv_recur.h"

#include <stdbool.h>
#include <time.h>

#define HOUR_MS SCHED_RESV_HOUR_MS
#define DAY_MS SCHED_RESV_DAY_MS

const char *sched_resv_recur_name(uint32_t flag)
{
    switch (flag) {
    case GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY:
        return "HOURLY";
    case GS__RESERVATION_FLAG__RESERVATION_FLAG_DAILY:
        return "DAILY";
    case GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY:
        return "WEEKDAY";
    case GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKEND:
        return "WEEKEND";
    case GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY:
        return "WEEKLY";
    default:
        return "";
    }
}

/* The longest window of a reservation repeating by flag. */
uint64_t sched_resv_recur_period_ms(uint32_t flag)
{
    return flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY   ? HOUR_MS
           : flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY ? 7 * DAY_MS
                                                                   : DAY_MS;
}

/* start_ms plus days calendar days, at the same local time of day. */
static uint64_t add_days(uint64_t start_ms, long days)
{
    time_t t = (time_t)(start_ms / 1000);
    struct tm tm;

    if (localtime_r(&t, &tm) == NULL)
        return start_ms + (uint64_t)days * DAY_MS;
    tm.tm_mday += (int)days;
    tm.tm_isdst = -1; /* mktime decides, so the local hour stays across a DST change */
    t = mktime(&tm);
    return (uint64_t)t * 1000 + start_ms % 1000;
}

static bool on_weekend(uint64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    return localtime_r(&t, &tm) != NULL && (tm.tm_wday == 0 || tm.tm_wday == 6);
}

/* The start of the window after the one that starts at start_ms. */
uint64_t sched_resv_recur_next(uint32_t flag, uint64_t start_ms)
{
    uint64_t next;

    if (flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY)
        return start_ms + HOUR_MS;
    if (flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKLY)
        return add_days(start_ms, 7);
    next = add_days(start_ms, 1);
    while ((flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKDAY && on_weekend(next)) ||
           (flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_WEEKEND && !on_weekend(next)))
        next = add_days(next, 1);
    return next;
}

void sched_resv_recur_roll(uint32_t flag, uint64_t *start_ms, uint64_t *end_ms, uint64_t now)
{
    uint64_t start = *start_ms, len = *end_ms - *start_ms;

    if (flag == GS__RESERVATION_FLAG__RESERVATION_FLAG_HOURLY && start + len <= now)
        start += ((now - start - len) / HOUR_MS + 1) * HOUR_MS;
    else if (start + len + 14 * DAY_MS < now) /* long down: whole weeks first, same weekday */
        start = add_days(start, (long)((now - start - len) / (7 * DAY_MS) - 1) * 7);
    while (start + len <= now)
        start = sched_resv_recur_next(flag, start);
    *start_ms = start;
    *end_ms = start + len;
}
