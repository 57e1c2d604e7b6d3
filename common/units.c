/*
 * units.c: parsing and printing of durations and sizes (forms documented in units.h).
 * All arithmetic is checked: a value that does not fit in 64 bits is -ERANGE, never wrapped.
 * Fractions ("1.5h", "0.5G") are computed in integer nanoseconds / long double bytes so that
 * exact inputs give exact results.
 */
#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NS_PER_SEC UINT64_C(1000000000)

/* A view of the text with surrounding whitespace removed. */
struct span {
    const char *p;
    const char *end;
};

static int trim(const char *text, struct span *ret)
{
    const char *p = text, *end;

    if (text == NULL)
        return -EINVAL;
    while (isspace((unsigned char)*p))
        p++;
    end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    if (end == p)
        return -EINVAL;
    ret->p = p;
    ret->end = end;
    return 0;
}

static int mul_add(uint64_t *acc, uint64_t mul, uint64_t add)
{
    if (mul != 0 && *acc > (UINT64_MAX - add) / mul)
        return -ERANGE;
    *acc = *acc * mul + add;
    return 0;
}

/* Reads one or more decimal digits at *p into *ret. */
static int read_uint(const char **p, const char *end, uint64_t *ret)
{
    uint64_t v = 0;
    const char *s = *p;

    if (s >= end || !isdigit((unsigned char)*s))
        return -EINVAL;
    for (; s < end && isdigit((unsigned char)*s); s++) {
        if (mul_add(&v, 10, (uint64_t)(*s - '0')) < 0)
            return -ERANGE;
    }
    *p = s;
    *ret = v;
    return 0;
}

static bool span_equals(const struct span *s, const char *word)
{
    size_t n = (size_t)(s->end - s->p);

    return n == strlen(word) && strncasecmp(s->p, word, n) == 0;
}

/* Slurm forms: [D-]fields where fields are M | M:S | H:M:S, or after "D-": H | H:M | H:M:S. */
static int parse_clock_form(struct span s, uint64_t *ret_seconds)
{
    static const uint64_t plain_units[3][3] = {{60}, {60, 1}, {3600, 60, 1}};
    uint64_t fields[3], days = 0, total = 0;
    const char *p = s.p;
    bool has_days = false;
    int n = 0, rc;

    if (memchr(s.p, '-', (size_t)(s.end - s.p)) != NULL) {
        rc = read_uint(&p, s.end, &days);
        if (rc < 0 || p >= s.end || *p != '-')
            return rc < 0 ? rc : -EINVAL;
        p++;
        has_days = true;
    }
    for (;;) {
        rc = read_uint(&p, s.end, &fields[n++]);
        if (rc < 0)
            return rc;
        if (p == s.end)
            break;
        if (*p != ':' || n == 3)
            return -EINVAL;
        p++;
    }
    for (int i = 1; i < n; i++) {
        if (fields[i] >= 60)
            return -EINVAL;
    }
    if (has_days) {
        if (fields[0] >= 24)
            return -EINVAL;
        total = days;
        if (mul_add(&total, 86400, 0) < 0)
            return -ERANGE;
    }
    for (int i = 0; i < n; i++) {
        uint64_t part = fields[i];
        uint64_t unit = has_days ? plain_units[2][i] : plain_units[n - 1][i];

        if (mul_add(&part, unit, 0) < 0 || part > UINT64_MAX - total)
            return -ERANGE;
        total += part;
    }
    *ret_seconds = total;
    return 0;
}

/* Reads "12" or "1.25" as a fixed-point value in units of 1e-9. */
static int read_fixed_nano(const char **p, const char *end, uint64_t *ret_whole, uint64_t *ret_nano)
{
    uint64_t whole, nano = 0, scale = NS_PER_SEC / 10;
    const char *s = *p;
    int rc = read_uint(&s, end, &whole);

    if (rc < 0)
        return rc;
    if (s < end && *s == '.') {
        s++;
        if (s >= end || !isdigit((unsigned char)*s))
            return -EINVAL;
        for (; s < end && isdigit((unsigned char)*s); s++, scale /= 10)
            nano += (uint64_t)(*s - '0') * scale;
    }
    *p = s;
    *ret_whole = whole;
    *ret_nano = nano;
    return 0;
}

static uint64_t duration_unit(char c)
{
    switch (tolower((unsigned char)c)) {
    case 's':
        return 1;
    case 'm':
        return 60;
    case 'h':
        return 3600;
    case 'd':
        return 86400;
    case 'w':
        return 7 * 86400;
    default:
        return 0;
    }
}

/* Suffixed form: one or more NUMBER UNIT pairs, e.g. "1h30m", "1.5h", "45s". */
static int parse_suffix_form(struct span s, uint64_t *ret_seconds)
{
    uint64_t total_ns = 0;
    const char *p = s.p;

    while (p < s.end) {
        uint64_t whole, nano, unit, part_ns;
        int rc = read_fixed_nano(&p, s.end, &whole, &nano);

        if (rc < 0)
            return rc;
        if (p >= s.end || (unit = duration_unit(*p)) == 0)
            return -EINVAL;
        p++;
        part_ns = whole;
        if (mul_add(&part_ns, unit * NS_PER_SEC, nano * unit) < 0)
            return -ERANGE;
        if (part_ns > UINT64_MAX - total_ns)
            return -ERANGE;
        total_ns += part_ns;
    }
    /* Round to the nearest second: "0.1m" is 6 s, "1.4s" is 1 s. */
    *ret_seconds = total_ns / NS_PER_SEC + (total_ns % NS_PER_SEC >= NS_PER_SEC / 2);
    return 0;
}

int gs_parse_duration(const char *text, uint64_t *ret_seconds)
{
    struct span s;
    uint64_t minutes;
    const char *p;
    int rc = trim(text, &s);

    if (rc < 0)
        return rc;
    if (span_equals(&s, "infinite") || span_equals(&s, "unlimited")) {
        *ret_seconds = GS_DURATION_INFINITE;
        return 0;
    }
    if (memchr(s.p, ':', (size_t)(s.end - s.p)) || memchr(s.p, '-', (size_t)(s.end - s.p)))
        return parse_clock_form(s, ret_seconds);
    p = s.p;
    rc = read_uint(&p, s.end, &minutes);
    if (rc == 0 && p == s.end) {
        if (mul_add(&minutes, 60, 0) < 0)
            return -ERANGE;
        *ret_seconds = minutes;
        return 0;
    }
    return parse_suffix_form(s, ret_seconds);
}

/* Binary unit letter to its multiplier; 0 when not a unit letter. */
static uint64_t size_unit(char c)
{
    static const char letters[] = "kmgtpe";
    const char *at = strchr(letters, tolower((unsigned char)c));

    if (c == '\0' || at == NULL)
        return 0;
    return UINT64_C(1) << (10 * (at - letters + 1));
}

/* Parses the unit suffix "", "B", "K", "KB", "KiB", ... into its multiplier. */
static int parse_size_suffix(const char *p, const char *end, uint64_t default_unit,
                             uint64_t *ret_unit)
{
    size_t n = (size_t)(end - p);
    uint64_t unit;

    if (n == 0) {
        *ret_unit = default_unit;
        return 0;
    }
    if (n == 1 && tolower((unsigned char)*p) == 'b') {
        *ret_unit = 1;
        return 0;
    }
    unit = size_unit(*p);
    if (unit == 0)
        return -EINVAL;
    p++;
    if (p < end && tolower((unsigned char)*p) == 'i') {
        p++;
        if (p >= end)
            return -EINVAL; /* "Ki" without the B */
    }
    if (p < end && tolower((unsigned char)*p) == 'b')
        p++;
    if (p != end)
        return -EINVAL;
    *ret_unit = unit;
    return 0;
}

int gs_parse_size(const char *text, uint64_t default_unit, uint64_t *ret_bytes)
{
    uint64_t whole, nano, unit, bytes;
    long double frac;
    struct span s;
    const char *p;
    int rc;

    if (default_unit == 0)
        return -EINVAL;
    rc = trim(text, &s);
    if (rc < 0)
        return rc;
    p = s.p;
    rc = read_fixed_nano(&p, s.end, &whole, &nano);
    if (rc < 0)
        return rc;
    rc = parse_size_suffix(p, s.end, default_unit, &unit);
    if (rc < 0)
        return rc;
    bytes = whole;
    if (mul_add(&bytes, unit, 0) < 0)
        return -ERANGE;
    /* long double carries 64 mantissa bits: exact for every unit times a 9-digit fraction. */
    frac = (long double)nano * (long double)unit / (long double)NS_PER_SEC;
    if ((long double)(UINT64_MAX - bytes) < frac)
        return -ERANGE;
    *ret_bytes = bytes + (uint64_t)frac;
    return 0;
}

char *gs_format_duration(uint64_t seconds, char *out, size_t size)
{
    uint64_t d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;

    if (seconds == GS_DURATION_INFINITE)
        snprintf(out, size, "UNLIMITED");
    else if (d > 0)
        snprintf(out, size, "%llu-%02llu:%02llu:%02llu", (unsigned long long)d,
                 (unsigned long long)h, (unsigned long long)m, (unsigned long long)s);
    else if (h > 0)
        snprintf(out, size, "%llu:%02llu:%02llu", (unsigned long long)h, (unsigned long long)m,
                 (unsigned long long)s);
    else
        snprintf(out, size, "%llu:%02llu", (unsigned long long)m, (unsigned long long)s);
    return out;
}

char *gs_format_size(uint64_t bytes, char *out, size_t size)
{
    static const char letters[] = "BKMGTPE";
    int i = 0;

    while (i < 6 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        i++;
    }
    snprintf(out, size, "%llu%c", (unsigned long long)bytes, letters[i]);
    return out;
}
