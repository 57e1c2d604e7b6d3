/*
 * test_units.c: duration and size parsing in every form users type, and the printed forms
 * parsing back to the same value.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "common/units.h"

static uint64_t dur(const char *text)
{
    uint64_t s = 12345;
    int rc = gs_parse_duration(text, &s);

    cr_assert_eq(rc, 0, "parse_duration(\"%s\") rc=%d", text, rc);
    return s;
}

static void dur_fails(const char *text, int want)
{
    uint64_t s = 777;

    cr_assert_eq(gs_parse_duration(text, &s), want, "parse_duration(\"%s\")", text);
    cr_assert_eq(s, 777, "output written on failure for \"%s\"", text);
}

static uint64_t size(const char *text, uint64_t unit)
{
    uint64_t b = 12345;
    int rc = gs_parse_size(text, unit, &b);

    cr_assert_eq(rc, 0, "parse_size(\"%s\") rc=%d", text, rc);
    return b;
}

static void size_fails(const char *text, int want)
{
    uint64_t b = 777;

    cr_assert_eq(gs_parse_size(text, GS_MIB, &b), want, "parse_size(\"%s\")", text);
    cr_assert_eq(b, 777, "output written on failure for \"%s\"", text);
}

Test(duration, bare_number_means_minutes_as_in_slurm)
{
    cr_assert_eq(dur("90"), 90 * 60);
    cr_assert_eq(dur("0"), 0);
    cr_assert_eq(dur("  5 "), 300);
}

Test(duration, colon_forms_are_min_sec_and_hour_min_sec)
{
    cr_assert_eq(dur("90:30"), 90 * 60 + 30);
    cr_assert_eq(dur("1:30:00"), 5400);
    cr_assert_eq(dur("02:00:00"), 7200);
    cr_assert_eq(dur("100:00:00"), 360000);
}

Test(duration, day_forms_follow_slurm)
{
    cr_assert_eq(dur("2-12:00:00"), 2 * 86400 + 12 * 3600);
    cr_assert_eq(dur("2-12"), 2 * 86400 + 12 * 3600);
    cr_assert_eq(dur("1-00:30"), 86400 + 30 * 60);
    cr_assert_eq(dur("0-0:0:1"), 1);
}

Test(duration, suffixed_forms_combine_and_take_fractions)
{
    cr_assert_eq(dur("45s"), 45);
    cr_assert_eq(dur("90m"), 5400);
    cr_assert_eq(dur("2h"), 7200);
    cr_assert_eq(dur("3d"), 3 * 86400);
    cr_assert_eq(dur("1w"), 7 * 86400);
    cr_assert_eq(dur("1h30m"), 5400);
    cr_assert_eq(dur("1d2h3m4s"), 86400 + 7200 + 180 + 4);
    cr_assert_eq(dur("1.5h"), 5400);
    cr_assert_eq(dur("0.1m"), 6);
    cr_assert_eq(dur("1H30M"), 5400);
}

Test(duration, fractional_seconds_round_to_nearest)
{
    cr_assert_eq(dur("1.4s"), 1);
    cr_assert_eq(dur("1.5s"), 2);
}

Test(duration, infinite_and_unlimited)
{
    cr_assert_eq(dur("infinite"), GS_DURATION_INFINITE);
    cr_assert_eq(dur("UNLIMITED"), GS_DURATION_INFINITE);
}

Test(duration, rejects_malformed_input)
{
    const char *bad[] = {"",    "   ", "abc",   "1:",     ":30",     "1:60",  "1:2:3:4",
                         "1-",  "-5",  "1-24",  "1-2:60", "1:30:60", "5x",    "h",
                         "1.h", "1.",  "1h 2m", "1--2",   "1-2-3",   "1:2-3", "+5"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        dur_fails(bad[i], -EINVAL);
    cr_assert_eq(gs_parse_duration(NULL, &(uint64_t){0}), -EINVAL);
}

Test(duration, rejects_overflow_with_erange)
{
    dur_fails("99999999999999999999", -ERANGE);
    dur_fails("307445734561825861", -ERANGE); /* minutes * 60 overflows */
    dur_fails("999999999999999999w", -ERANGE);
    dur_fails("213503982334602-00:00:00", -ERANGE);
}

Test(duration, formats_like_squeue_and_parses_back)
{
    char out[32];
    const uint64_t values[] = {0, 59, 60, 3599, 3600, 86399, 86400, 2 * 86400 + 12 * 3600 + 5};
    const char *want[] = {"0:00",    "0:59",     "1:00",       "59:59",
                          "1:00:00", "23:59:59", "1-00:00:00", "2-12:00:05"};

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        cr_assert_str_eq(gs_format_duration(values[i], out, sizeof(out)), want[i]);
        cr_assert_eq(dur(out), values[i], "\"%s\" does not parse back", out);
    }
    cr_assert_str_eq(gs_format_duration(GS_DURATION_INFINITE, out, sizeof(out)), "UNLIMITED");
}

Test(size, units_are_binary_with_or_without_i_and_b)
{
    cr_assert_eq(size("64G", 1), 64 * GS_GIB);
    cr_assert_eq(size("64GB", 1), 64 * GS_GIB);
    cr_assert_eq(size("64GiB", 1), 64 * GS_GIB);
    cr_assert_eq(size("64g", 1), 64 * GS_GIB);
    cr_assert_eq(size("512MiB", 1), 512 * GS_MIB);
    cr_assert_eq(size("512M", 1), 512 * GS_MIB);
    cr_assert_eq(size("4k", 1), 4096);
    cr_assert_eq(size("2T", 1), 2 * GS_TIB);
    cr_assert_eq(size("1P", 1), GS_TIB * 1024);
    cr_assert_eq(size("1E", 1), GS_TIB * 1024 * 1024);
    cr_assert_eq(size("17B", GS_MIB), 17);
    cr_assert_eq(size("17b", GS_MIB), 17);
}

Test(size, bare_number_uses_callers_default_unit)
{
    cr_assert_eq(size("4096", GS_MIB), 4096 * GS_MIB);
    cr_assert_eq(size("4096", 1), 4096);
    cr_assert_eq(size(" 0 ", GS_MIB), 0);
}

Test(size, fractions_are_exact_where_representable)
{
    cr_assert_eq(size("1.5T", 1), GS_TIB + GS_TIB / 2);
    cr_assert_eq(size("0.5G", 1), GS_GIB / 2);
    cr_assert_eq(size("1.25K", 1), 1280);
    cr_assert_eq(size("0.3K", 1), 307); /* 307.2 bytes: truncated */
}

Test(size, rejects_malformed_input)
{
    const char *bad[] = {"", "G", "-1G", "1X", "1Gi", "1GBB", "1 G", "1.G", ".5G", "1KiBx", "0x10"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        size_fails(bad[i], -EINVAL);
    cr_assert_eq(gs_parse_size("1G", 0, &(uint64_t){0}), -EINVAL);
}

Test(size, rejects_overflow_with_erange)
{
    size_fails("16E", -ERANGE);
    size_fails("18446744073709551616", -ERANGE);
    size_fails("17179869184G", -ERANGE);
    cr_assert_eq(size("15E", 1), 15 * (GS_TIB * 1024 * 1024));
}

Test(size, formats_with_largest_exact_unit_and_parses_back)
{
    char out[32];
    const uint64_t values[] = {0, 17, 1024, 1536, 64 * GS_GIB, 1536 * GS_KIB, 3 * GS_TIB};
    const char *want[] = {"0B", "17B", "1K", "1536B", "64G", "1536K", "3T"};

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        cr_assert_str_eq(gs_format_size(values[i], out, sizeof(out)), want[i]);
        cr_assert_eq(size(out, GS_MIB), values[i], "\"%s\" does not parse back", out);
    }
}
