/*
 * sbatch_begin.c: the TIME of `sbatch --begin` (slurm/sbatch.h), read as Slurm reads it,
 * at a given now so that the reading is the same in a test as at submit: relative forms
 * (now+N with a unit), a time of day (today, or tomorrow once passed), a date with an
 * optional time, and Slurm's words (midnight, noon, teatime, today, tomorrow). Local time,
 * as the user typed it; the result is an absolute wall-clock time in ms.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "slurm/sbatch.h"

/* now+N[unit]: seconds to add, or -1. */
static long long relative_s(const char *p)
{
    static const struct {
        const char *name;
        long long s;
    } units[] = {{"seconds", 1},  {"second", 1},  {"sec", 1},        {"s", 1},
                 {"minutes", 60}, {"minute", 60}, {"min", 60},       {"m", 60},
                 {"hours", 3600}, {"hour", 3600}, {"h", 3600},       {"days", 86400},
                 {"day", 86400},  {"d", 86400},   {"weeks", 604800}, {"week", 604800},
                 {"w", 604800}};
    char *end;
    long long n;

    if (!isdigit((unsigned char)*p))
        return -1;
    errno = 0;
    n = strtoll(p, &end, 10);
    if (errno != 0 || n < 0 || n > 100LL * 365 * 86400)
        return -1;
    if (*end == '\0')
        return n;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].name) == 0)
            return n * units[i].s <= 100LL * 365 * 86400 ? n * units[i].s : -1;
    }
    return -1;
}

/* "HH:MM[:SS]" into tm's time of day; 0 or -1. */
static int time_of_day(const char *p, struct tm *tm)
{
    int h, m, sec = 0, n = 0, n2 = 0;

    if (!isdigit((unsigned char)p[0]) || sscanf(p, "%2d:%2d%n", &h, &m, &n) != 2)
        return -1;
    if (p[n] == ':') {
        if (!isdigit((unsigned char)p[n + 1]) || sscanf(p + n, ":%2d%n", &sec, &n2) != 1)
            return -1;
        n += n2;
    }
    if (p[n] != '\0' || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59)
        return -1;
    tm->tm_hour = h;
    tm->tm_min = m;
    tm->tm_sec = sec;
    return 0;
}

int gs_sbatch_parse_begin(const char *text, uint64_t now_ms, uint64_t *ret_ms, struct gs_error *err)
{
    time_t now = (time_t)(now_ms / 1000), t;
    struct tm tm;
    long long rel;
    int y, mo, d, used = 0;
    bool tod = false; /* a time of day alone: tomorrow once passed */

    if (text == NULL || localtime_r(&now, &tm) == NULL)
        goto bad;
    tm.tm_isdst = -1;
    if (strcasecmp(text, "now") == 0) {
        *ret_ms = now_ms;
        return 0;
    }
    if (strncasecmp(text, "now+", 4) == 0) {
        if ((rel = relative_s(text + 4)) < 0)
            goto bad;
        *ret_ms = now_ms + (uint64_t)rel * 1000;
        return 0;
    }
    if (strcasecmp(text, "today") == 0 || strcasecmp(text, "midnight") == 0 ||
        strcasecmp(text, "tomorrow") == 0) {
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday += strcasecmp(text, "today") != 0; /* midnight: the next one */
    } else if (strcasecmp(text, "noon") == 0 || strcasecmp(text, "teatime") == 0) {
        tm.tm_hour = strcasecmp(text, "noon") == 0 ? 12 : 16;
        tm.tm_min = tm.tm_sec = 0;
        tod = true;
    } else if (sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3 && used == 10) {
        if (mo < 1 || mo > 12 || d < 1 || d > 31)
            goto bad;
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        if (text[10] != '\0' && (text[10] != 'T' || time_of_day(text + 11, &tm) < 0))
            goto bad;
    } else if (time_of_day(text, &tm) == 0) {
        tod = true;
    } else {
        goto bad;
    }
    t = mktime(&tm);
    if (t == (time_t)-1)
        goto bad;
    if (tod && t < now) {
        tm.tm_mday++;
        tm.tm_isdst = -1;
        t = mktime(&tm);
    }
    *ret_ms = t < 0 ? 0 : (uint64_t)t * 1000;
    return 0;
bad:
    return gs_error_set(err, -EINVAL, 0, 0,
                        "'%s' is not a time (now, now+N[minutes|hours|days], HH:MM[:SS], "
                        "YYYY-MM-DD[THH:MM[:SS]], midnight, noon, teatime, tomorrow)",
                        text != NULL ? text : "");
}
