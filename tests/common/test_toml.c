/*
 * test_toml.c: the TOML 1.0 parser through common/toml.h: every kind of value with its
 * getter, document order, line:col of values and keys, the redefinition rules, encoding
 * checks, error places and messages, the nesting limit, and a table of 100k keys.
 *
 * Every document is copied into a heap block of exactly its length (no NUL after it) that is
 * freed right after parsing, so AddressSanitizer catches both reads past the end and a tree
 * that still points into the caller's text. The mutation test lives in test_toml_fuzz.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/toml.h"

static int parse_len(const char *text, size_t len, struct gs_toml_doc **ret_doc,
                     struct gs_error *err)
{
    char *copy = malloc(len > 0 ? len : 1);
    int rc;

    cr_assert_not_null(copy);
    memcpy(copy, text, len);
    rc = gs_toml_parse(copy, len, ret_doc, err);
    free(copy);
    return rc;
}

static struct gs_toml_doc *parse_ok(const char *text)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    int rc = parse_len(text, strlen(text), &doc, &err);

    cr_assert_eq(rc, 0, "rejected at %d:%d: %s\n--\n%s", err.line, err.col, err.msg, text);
    cr_assert_not_null(doc);
    cr_assert_eq(err.code, 0);
    return doc;
}

/* Asserts that text is rejected at line:col with a message containing fragment. */
static void parse_fails_at(const char *text, int line, int col, const char *fragment)
{
    struct gs_toml_doc *doc = (struct gs_toml_doc *)&doc;
    struct gs_error err;
    int rc = parse_len(text, strlen(text), &doc, &err);

    cr_assert_eq(rc, -EINVAL, "rc=%d for\n--\n%s", rc, text);
    cr_assert_eq(doc, (struct gs_toml_doc *)&doc, "ret_doc written on failure");
    cr_assert_eq(err.code, -EINVAL);
    cr_assert_str_neq(err.msg, "");
    cr_assert(strstr(err.msg, fragment) != NULL, "message '%s' lacks '%s'", err.msg, fragment);
    cr_assert_eq(err.line, line, "line %d, want %d (%s)", err.line, line, err.msg);
    cr_assert_eq(err.col, col, "col %d, want %d (%s)", err.col, col, err.msg);
}

/* Asserts only that text is rejected (for lists of similar cases). */
static void parse_fails(const char *text)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    int rc = parse_len(text, strlen(text), &doc, &err);

    cr_assert_eq(rc, -EINVAL, "accepted (rc=%d):\n--\n%s", rc, text);
    cr_assert_gt(err.line, 0, "no place for '%s'", err.msg);
    cr_assert_str_neq(err.msg, "");
}

static const char *str_at(const struct gs_toml_value *root, const char *path)
{
    const char *s = NULL;
    size_t len;

    cr_assert_eq(gs_toml_as_string(gs_toml_get_path(root, path), &s, &len), 0, "%s", path);
    cr_assert_eq(strlen(s), len, "%s holds a NUL", path);
    return s;
}

static int64_t int_at(const struct gs_toml_value *root, const char *path)
{
    int64_t i = 0;

    cr_assert_eq(gs_toml_as_int(gs_toml_get_path(root, path), &i), 0, "%s", path);
    return i;
}

static double float_at(const struct gs_toml_value *root, const char *path)
{
    const struct gs_toml_value *v = gs_toml_get_path(root, path);
    double d = 0;

    cr_assert_eq(gs_toml_type(v), GS_TOML_FLOAT, "%s", path);
    cr_assert_eq(gs_toml_as_float(v, &d), 0, "%s", path);
    return d;
}

static struct gs_toml_datetime dt_at(const struct gs_toml_value *root, const char *path,
                                     enum gs_toml_type type)
{
    const struct gs_toml_value *v = gs_toml_get_path(root, path);
    struct gs_toml_datetime dt;

    cr_assert_eq(gs_toml_type(v), type, "%s is %s", path, gs_toml_type_name(gs_toml_type(v)));
    cr_assert_eq(gs_toml_as_datetime(v, &dt), 0);
    return dt;
}

/* ---- values ---- */

Test(toml, parses_bare_quoted_and_dotted_keys)
{
    struct gs_toml_doc *doc = parse_ok("bare_key-1 = 1\n"
                                       "\"quoted key\" = 2\n"
                                       "'literal.key' = 3\n"
                                       "1234 = 4\n"
                                       "site . \"google.com\" = true\n"
                                       "a.b.c = 5\n"
                                       "\"\" = 6\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *site = gs_toml_get(root, "site");
    bool b = false;

    cr_assert_eq(int_at(root, "bare_key-1"), 1);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(root, "quoted key"), &(int64_t){0}), 0);
    cr_assert_not_null(gs_toml_get(root, "literal.key"));
    cr_assert_null(gs_toml_get_path(root, "literal.key"));
    cr_assert_eq(int_at(root, "1234"), 4);
    cr_assert_eq(gs_toml_type(site), GS_TOML_TABLE);
    cr_assert_eq(gs_toml_as_bool(gs_toml_get(site, "google.com"), &b), 0);
    cr_assert(b);
    cr_assert_eq(int_at(root, "a.b.c"), 5);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(root, ""), &(int64_t){0}), 0);
    gs_toml_free(doc);
}

Test(toml, decodes_every_escape_in_basic_strings)
{
    struct gs_toml_doc *doc = parse_ok("s = \"b\\b t\\t n\\n f\\f r\\r q\\\" bs\\\\ "
                                       "e\\u00E9 g\\U0001F600 z\\u0000end\"\n");
    const char *s;
    size_t len;
    const char want[] = "b\b t\t n\n f\f r\r q\" bs\\ e\xC3\xA9 g\xF0\x9F\x98\x80 z\0end";

    cr_assert_eq(gs_toml_as_string(gs_toml_get(gs_toml_root(doc), "s"), &s, &len), 0);
    cr_assert_eq(len, sizeof(want) - 1);
    cr_assert_eq(memcmp(s, want, len), 0);
    cr_assert_eq(s[len], '\0');
    gs_toml_free(doc);
}

Test(toml, keeps_literal_strings_verbatim)
{
    struct gs_toml_doc *doc = parse_ok("path = 'C:\\Users\\nodejs\\templates'\n"
                                       "re = '<\\i\\c*\\s*>'\n"
                                       "ml = '''\nI [dw]on't need \\d{2} apples\n'''\n"
                                       "q = ''''That,' she said'''''\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_str_eq(str_at(root, "path"), "C:\\Users\\nodejs\\templates");
    cr_assert_str_eq(str_at(root, "re"), "<\\i\\c*\\s*>");
    cr_assert_str_eq(str_at(root, "ml"), "I [dw]on't need \\d{2} apples\n");
    cr_assert_str_eq(str_at(root, "q"), "'That,' she said''");
    gs_toml_free(doc);
}

Test(toml, trims_first_newline_and_line_ending_backslashes_in_multiline_strings)
{
    struct gs_toml_doc *doc = parse_ok("a = \"\"\"\nRoses\nViolets\"\"\"\n"
                                       "b = \"\"\"The quick \\\n\n   brown \\   \n  fox.\"\"\"\n"
                                       "c = \"\"\"Here are two quotes: \"\". \"\"\"\n"
                                       "d = \"\"\"\"\"quoted\"\"\"\"\"\n"
                                       "e = \"\"\"crlf\r\nline\"\"\"\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_str_eq(str_at(root, "a"), "Roses\nViolets");
    cr_assert_str_eq(str_at(root, "b"), "The quick brown fox.");
    cr_assert_str_eq(str_at(root, "c"), "Here are two quotes: \"\". ");
    cr_assert_str_eq(str_at(root, "d"), "\"\"quoted\"\"");
    cr_assert_str_eq(str_at(root, "e"), "crlf\nline");
    gs_toml_free(doc);
}

Test(toml, strings_and_keys_may_hold_nul)
{
    struct gs_toml_doc *doc = parse_ok("\"k\\u0000ey\" = \"a\\u0000b\"\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *v = gs_toml_getn(root, "k\0ey", 4);
    const char *s, *key;
    size_t len = 0;

    cr_assert_not_null(v);
    cr_assert_null(gs_toml_get(root, "k"));
    cr_assert_eq(gs_toml_as_string(v, &s, &len), 0);
    cr_assert_eq(len, 3);
    cr_assert_eq(memcmp(s, "a\0b", 3), 0);
    key = gs_toml_key_at(root, 0, &len);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(key, "k\0ey", 4), 0);
    gs_toml_free(doc);
}

Test(toml, parses_integers_in_every_base)
{
    struct gs_toml_doc *doc = parse_ok("a = 99\nb = +17\nc = -0\nd = 1_000_000\n"
                                       "e = 0xDEAD_beef\nf = 0o755\ng = 0b1101_0110\n"
                                       "max = 9223372036854775807\nmin = -9223372036854775808\n"
                                       "hmax = 0x7FFFFFFFFFFFFFFF\nz = 0\nhz = 0x0001\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_eq(int_at(root, "a"), 99);
    cr_assert_eq(int_at(root, "b"), 17);
    cr_assert_eq(int_at(root, "c"), 0);
    cr_assert_eq(int_at(root, "d"), 1000000);
    cr_assert_eq(int_at(root, "e"), 0xDEADBEEF);
    cr_assert_eq(int_at(root, "f"), 0755);
    cr_assert_eq(int_at(root, "g"), 0xD6);
    cr_assert_eq(int_at(root, "max"), INT64_MAX);
    cr_assert_eq(int_at(root, "min"), INT64_MIN);
    cr_assert_eq(int_at(root, "hmax"), INT64_MAX);
    cr_assert_eq(int_at(root, "z"), 0);
    cr_assert_eq(int_at(root, "hz"), 1);
    gs_toml_free(doc);
}

Test(toml, rejects_integer_overflow)
{
    parse_fails_at("a = 9223372036854775808\n", 1, 5, "does not fit in 64 bits");
    parse_fails_at("a = -9223372036854775809\n", 1, 5, "does not fit in 64 bits");
    parse_fails_at("a = 0x8000000000000000\n", 1, 5, "does not fit in 64 bits");
    parse_fails_at("a = 0b"
                   "1111111111111111111111111111111111111111111111111111111111111111\n",
                   1, 5, "does not fit");
    parse_fails("a = 99999999999999999999999999\n");
}

Test(toml, rejects_leading_zeros_signs_and_misplaced_underscores)
{
    parse_fails_at("a = 012\n", 1, 5, "leading zeros");
    parse_fails_at("a = -012\n", 1, 5, "leading zeros");
    parse_fails_at("a = 1__2\n", 1, 5, "underscores");
    parse_fails_at("a = 12_\n", 1, 5, "underscores");
    parse_fails_at("a = +0x10\n", 1, 5, "cannot have a sign");
    parse_fails("a = _12\n");
    parse_fails("a = 0x_1\n");
    parse_fails("a = 0X10\n");
    parse_fails("a = 0b102\n");
    parse_fails("a = 0o8\n");
    parse_fails("a = 0x\n");
    parse_fails("a = 1_.5\n");
    parse_fails("a = 1._5\n");
    parse_fails("a = 00.5\n");
    parse_fails("a = 1e_5\n");
    parse_fails("a = 1e5_\n");
    parse_fails("a = ++1\n");
}

Test(toml, parses_floats_with_exponents_and_specials)
{
    struct gs_toml_doc *doc = parse_ok("a = 1.0\nb = -3.1415\nc = 5e+22\nd = 1e06\ne = -2E-2\n"
                                       "f = 6.626e-34\ng = 224_617.445_991\nh = -0.0\n"
                                       "i = inf\nj = +inf\nk = -inf\nl = nan\nm = -nan\n"
                                       "n = 0.1\no = 1.7976931348623157e308\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_eq(float_at(root, "a"), 1.0);
    cr_assert_eq(float_at(root, "b"), -3.1415);
    cr_assert_eq(float_at(root, "c"), 5e22);
    cr_assert_eq(float_at(root, "d"), 1e6);
    cr_assert_eq(float_at(root, "e"), -2e-2);
    cr_assert_eq(float_at(root, "f"), 6.626e-34);
    cr_assert_eq(float_at(root, "g"), 224617.445991);
    cr_assert(signbit(float_at(root, "h")));
    cr_assert(isinf(float_at(root, "i")) && float_at(root, "i") > 0);
    cr_assert(isinf(float_at(root, "j")) && float_at(root, "j") > 0);
    cr_assert(isinf(float_at(root, "k")) && float_at(root, "k") < 0);
    cr_assert(isnan(float_at(root, "l")));
    cr_assert(isnan(float_at(root, "m")));
    cr_assert_eq(float_at(root, "n"), 0.1);
    cr_assert_eq(float_at(root, "o"), 1.7976931348623157e308);
    gs_toml_free(doc);
}

Test(toml, rejects_malformed_floats)
{
    parse_fails_at("a = 1.\n", 1, 5, "digits after its decimal point");
    parse_fails_at("a = 1e\n", 1, 5, "exponent");
    parse_fails_at("a = 1e400\n", 1, 5, "out of range");
    parse_fails(("a = .5\n"));
    parse_fails("a = 1.5.2\n");
    parse_fails("a = 1.e5\n");
    parse_fails("a = Inf\n");
    parse_fails("a = NaN\n");
    parse_fails("a = in\n");
    parse_fails("a = inf_\n");
    parse_fails("a = 1,5\n");
}

Test(toml, parses_booleans_and_rejects_near_misses)
{
    struct gs_toml_doc *doc = parse_ok("t = true\nf = false\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    bool b = false;

    cr_assert_eq(gs_toml_as_bool(gs_toml_get(root, "t"), &b), 0);
    cr_assert(b);
    cr_assert_eq(gs_toml_as_bool(gs_toml_get(root, "f"), &b), 0);
    cr_assert(!b);
    gs_toml_free(doc);
    parse_fails_at("a = True\n", 1, 5, "invalid value 'True'");
    parse_fails_at("a = truex\n", 1, 5, "invalid value 'truex'");
    parse_fails("a = fals\n");
    parse_fails("a = t\n");
}

Test(toml, parses_offset_date_times)
{
    struct gs_toml_doc *doc = parse_ok("a = 1979-05-27T07:32:00Z\n"
                                       "b = 1979-05-27T00:32:00.999999-07:00\n"
                                       "c = 1979-05-27 07:32:00.1234567891+05:30\n"
                                       "d = 1979-05-27t07:32:00z\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    struct gs_toml_datetime dt = dt_at(root, "a", GS_TOML_DATETIME);

    cr_assert(dt.has_date && dt.has_time && dt.has_offset);
    cr_assert_eq(dt.year, 1979);
    cr_assert_eq(dt.month, 5);
    cr_assert_eq(dt.day, 27);
    cr_assert_eq(dt.hour, 7);
    cr_assert_eq(dt.minute, 32);
    cr_assert_eq(dt.second, 0);
    cr_assert_eq(dt.nanosecond, 0);
    cr_assert_eq(dt.offset_minutes, 0);
    dt = dt_at(root, "b", GS_TOML_DATETIME);
    cr_assert_eq(dt.nanosecond, 999999000);
    cr_assert_eq(dt.offset_minutes, -7 * 60);
    dt = dt_at(root, "c", GS_TOML_DATETIME);
    cr_assert_eq(dt.nanosecond, 123456789, "extra digits truncate");
    cr_assert_eq(dt.offset_minutes, 5 * 60 + 30);
    dt = dt_at(root, "d", GS_TOML_DATETIME);
    cr_assert_eq(dt.hour, 7);
    gs_toml_free(doc);
}

Test(toml, parses_local_date_times_dates_and_times)
{
    struct gs_toml_doc *doc = parse_ok("ldt = 1979-05-27T07:32:00.5\n"
                                       "ld = 1979-05-27\n"
                                       "lt = 00:32:00.999\n"
                                       "leap = 23:59:60\n"
                                       "arr = [1979-05-27, 07:32:00]\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    struct gs_toml_datetime dt = dt_at(root, "ldt", GS_TOML_DATETIME_LOCAL);

    cr_assert(dt.has_date && dt.has_time && !dt.has_offset);
    cr_assert_eq(dt.nanosecond, 500000000);
    dt = dt_at(root, "ld", GS_TOML_DATE_LOCAL);
    cr_assert(dt.has_date && !dt.has_time && !dt.has_offset);
    cr_assert_eq(dt.day, 27);
    cr_assert_eq(dt.hour, 0);
    dt = dt_at(root, "lt", GS_TOML_TIME_LOCAL);
    cr_assert(!dt.has_date && dt.has_time && !dt.has_offset);
    cr_assert_eq(dt.nanosecond, 999000000);
    cr_assert_eq(dt.year, 0);
    dt = dt_at(root, "leap", GS_TOML_TIME_LOCAL);
    cr_assert_eq(dt.second, 60);
    cr_assert_eq(gs_toml_type(gs_toml_at(gs_toml_get(root, "arr"), 0)), GS_TOML_DATE_LOCAL);
    cr_assert_eq(gs_toml_type(gs_toml_at(gs_toml_get(root, "arr"), 1)), GS_TOML_TIME_LOCAL);
    gs_toml_free(doc);
}

Test(toml, accepts_february_29_only_in_leap_years)
{
    gs_toml_free(parse_ok("a = 2000-02-29\nb = 2024-02-29\nc = 1900-02-28\n"));
    parse_fails_at("a = 1900-02-29\n", 1, 5, "has no day 29");
    parse_fails_at("a = 2023-02-29T00:00:00Z\n", 1, 5, "has no day 29");
    parse_fails("a = 2024-02-30\n");
    parse_fails("a = 2024-04-31\n");
}

Test(toml, rejects_out_of_range_and_malformed_date_times)
{
    parse_fails_at("a = 2024-13-01\n", 1, 5, "month 13");
    parse_fails_at("a = 2024-00-01\n", 1, 5, "month 00");
    parse_fails_at("a = 2024-01-00\n", 1, 5, "no day 00");
    parse_fails_at("a = 24:00:00\n", 1, 5, "out of range");
    parse_fails_at("a = 23:60:00\n", 1, 5, "out of range");
    parse_fails_at("a = 23:59:61\n", 1, 5, "out of range");
    parse_fails_at("a = 2024-01-01T00:00:00+24:00\n", 1, 5, "offset");
    parse_fails_at("a = 2024-01-01T00:00:00+05:60\n", 1, 5, "offset");
    parse_fails_at("a = 07:32\n", 1, 5, "expected HH:MM:SS");
    parse_fails("a = 1979-05-27T07:32\n");
    parse_fails("a = 1979-05-27T\n");
    parse_fails("a = 1979-5-27\n");
    parse_fails("a = 1979-05-27T07:32:00.\n");
    parse_fails("a = 1979-05-27T07:32:00+07\n");
    parse_fails("a = 1979-05-27T07:32:00Zx\n");
    parse_fails("a = 10000-01-01\n");
    parse_fails("a = 07:32:00Z\n");
}

Test(toml, parses_arrays_with_mixed_types_comments_and_trailing_comma)
{
    struct gs_toml_doc *doc = parse_ok("a = [\n  1, # one\n  'two',\n  [3.0, {x = 4}],\n\n"
                                       "  # only a comment\n  true,\n]\n"
                                       "empty = [ ]\nnested = [[], [[]]]\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *a = gs_toml_get(root, "a");
    const struct gs_toml_value *inner = gs_toml_at(a, 2);
    int64_t x = 0;

    cr_assert_eq(gs_toml_type(a), GS_TOML_ARRAY);
    cr_assert_eq(gs_toml_count(a), 4);
    cr_assert_eq(gs_toml_type(gs_toml_at(a, 0)), GS_TOML_INTEGER);
    cr_assert_eq(gs_toml_type(gs_toml_at(a, 1)), GS_TOML_STRING);
    cr_assert_eq(gs_toml_type(gs_toml_at(a, 3)), GS_TOML_BOOL);
    cr_assert_null(gs_toml_at(a, 4));
    cr_assert_eq(gs_toml_count(inner), 2);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(gs_toml_at(inner, 1), "x"), &x), 0);
    cr_assert_eq(x, 4);
    cr_assert_eq(gs_toml_count(gs_toml_get(root, "empty")), 0);
    cr_assert_eq(gs_toml_count(gs_toml_at(gs_toml_get(root, "nested"), 1)), 1);
    gs_toml_free(doc);
}

Test(toml, rejects_malformed_arrays)
{
    parse_fails_at("a = [1 2]\n", 1, 8, "expected ',' or ']'");
    parse_fails_at("a = [1,,2]\n", 1, 8, "expected a value");
    parse_fails_at("a = [,]\n", 1, 6, "expected a value");
    parse_fails_at("a = [1, 2\n", 1, 5, "unterminated array");
}

Test(toml, parses_inline_tables_with_dotted_keys)
{
    struct gs_toml_doc *doc = parse_ok("name = { first = \"Tom\", last = \"Preston-Werner\" }\n"
                                       "point = {x=1,y=2}\nempty = {}\n"
                                       "animal = { type.name = \"pug\", type.legs = 4 }\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_str_eq(str_at(root, "name.first"), "Tom");
    cr_assert_str_eq(str_at(root, "name.last"), "Preston-Werner");
    cr_assert_eq(int_at(root, "point.y"), 2);
    cr_assert_eq(gs_toml_type(gs_toml_get(root, "empty")), GS_TOML_TABLE);
    cr_assert_eq(gs_toml_count(gs_toml_get(root, "empty")), 0);
    cr_assert_str_eq(str_at(root, "animal.type.name"), "pug");
    cr_assert_eq(int_at(root, "animal.type.legs"), 4);
    gs_toml_free(doc);
}

Test(toml, rejects_newline_trailing_comma_and_duplicates_in_inline_tables)
{
    parse_fails_at("a = {x = 1,\n y = 2}\n", 1, 12, "newline not allowed in inline table");
    parse_fails_at("a = {x = 1, }\n", 1, 13, "trailing comma");
    parse_fails_at("a = {x = 1, x = 2}\n", 1, 13, "duplicate key 'x' (first defined at 1:6)");
    parse_fails_at("a = {x = 1\n", 1, 11, "newline not allowed");
    parse_fails_at("a = {x = 1", 1, 5, "unterminated inline table");
    parse_fails_at("a = {x = 1 y = 2}\n", 1, 12, "expected ',' or '}'");
    parse_fails_at("a = {b = 1, b.c = 2}\n", 1, 13, "already defined as an integer");
    parse_fails("a = {,}\n");
}

Test(toml, parses_tables_and_arrays_of_tables)
{
    struct gs_toml_doc *doc = parse_ok("title = 'x'\n"
                                       "[owner]\nname = \"Tom\"\n"
                                       "[a.b.c]\nd = 1\n"
                                       "[a]\ne = 2\n"
                                       "[[fruit]]\nname = 'apple'\n"
                                       "[fruit.physical]\ncolor = 'red'\n"
                                       "[[fruit.variety]]\nname = 'red delicious'\n"
                                       "[[fruit.variety]]\nname = 'granny smith'\n"
                                       "[[fruit]]\nname = 'banana'\n"
                                       "[[fruit.variety]]\nname = 'plantain'\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *fruit = gs_toml_get(root, "fruit");
    const struct gs_toml_value *apple = gs_toml_at(fruit, 0);

    cr_assert_str_eq(str_at(root, "owner.name"), "Tom");
    cr_assert_eq(int_at(root, "a.b.c.d"), 1);
    cr_assert_eq(int_at(root, "a.e"), 2);
    cr_assert_eq(gs_toml_type(fruit), GS_TOML_ARRAY);
    cr_assert_eq(gs_toml_count(fruit), 2);
    cr_assert_str_eq(str_at(apple, "name"), "apple");
    cr_assert_str_eq(str_at(apple, "physical.color"), "red");
    cr_assert_eq(gs_toml_count(gs_toml_get(apple, "variety")), 2);
    cr_assert_str_eq(str_at(gs_toml_at(gs_toml_get(apple, "variety"), 1), "name"), "granny smith");
    cr_assert_str_eq(str_at(gs_toml_at(fruit, 1), "name"), "banana");
    cr_assert_eq(gs_toml_count(gs_toml_get(gs_toml_at(fruit, 1), "variety")), 1);
    gs_toml_free(doc);
}

Test(toml, header_may_add_subtables_to_a_table_made_by_dotted_keys)
{
    struct gs_toml_doc *doc = parse_ok("[fruit]\napple.color = 'red'\napple.taste.sweet = true\n"
                                       "[fruit.apple.texture]\nsmooth = true\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    bool b = false;

    cr_assert_eq(gs_toml_as_bool(gs_toml_get_path(root, "fruit.apple.texture.smooth"), &b), 0);
    cr_assert(b);
    cr_assert_str_eq(str_at(root, "fruit.apple.color"), "red");
    gs_toml_free(doc);
}

Test(toml, parses_empty_documents_comments_crlf_and_bom)
{
    struct gs_toml_doc *doc = parse_ok("");

    cr_assert_eq(gs_toml_type(gs_toml_root(doc)), GS_TOML_TABLE);
    cr_assert_eq(gs_toml_count(gs_toml_root(doc)), 0);
    gs_toml_free(doc);
    gs_toml_free(parse_ok("# only a comment"));
    gs_toml_free(parse_ok("\n\n \t\n"));
    doc = parse_ok("\xEF\xBB\xBF"
                   "a = 1 # c\r\n[t] # c\r\nb = 2\r\n# end\r\n");
    cr_assert_eq(int_at(gs_toml_root(doc), "a"), 1);
    cr_assert_eq(int_at(gs_toml_root(doc), "t.b"), 2);
    gs_toml_free(doc);
}

Test(toml, text_need_not_be_nul_terminated)
{
    const char text[] = "a = 12345";
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    cr_assert_eq(parse_len(text, 5, &doc, &err), 0);
    cr_assert_eq(int_at(gs_toml_root(doc), "a"), 1);
    gs_toml_free(doc);
}

/* ---- order and positions ---- */

Test(toml, iterates_tables_in_document_order)
{
    struct gs_toml_doc *doc = parse_ok("zeta = 1\nalpha = 2\nmid.x = 3\n[later]\n[early]\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const char *want[] = {"zeta", "alpha", "mid", "later", "early"};

    cr_assert_eq(gs_toml_count(root), 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_str_eq(gs_toml_key_at(root, i, NULL), want[i]);
    cr_assert_null(gs_toml_key_at(root, 5, NULL));
    cr_assert_eq(int_at(root, "alpha"), 2);
    cr_assert_eq(gs_toml_at(root, 1), gs_toml_get(root, "alpha"));
    gs_toml_free(doc);
}

Test(toml, reports_line_and_column_of_values_and_keys)
{
    struct gs_toml_doc *doc = parse_ok("# job\n"
                                       "name = \"train\"\n"
                                       "\n"
                                       "[resources]\n"
                                       "  gpus_per_node   = 8\n"
                                       "  \"é\" = [1, 2]\n"
                                       "  k = 1\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *res = gs_toml_get(root, "resources");
    const struct gs_toml_value *arr = gs_toml_get(res, "é");

    cr_assert_eq(gs_toml_line(gs_toml_get(root, "name")), 2);
    cr_assert_eq(gs_toml_col(gs_toml_get(root, "name")), 8);
    cr_assert_eq(gs_toml_key_line(root, 0), 2);
    cr_assert_eq(gs_toml_key_col(root, 0), 1);
    cr_assert_eq(gs_toml_line(res), 4);
    cr_assert_eq(gs_toml_col(res), 1);
    cr_assert_eq(gs_toml_key_col(root, 1), 2);
    cr_assert_eq(gs_toml_line(gs_toml_get(res, "gpus_per_node")), 5);
    cr_assert_eq(gs_toml_col(gs_toml_get(res, "gpus_per_node")), 21);
    cr_assert_eq(gs_toml_key_line(res, 0), 5);
    cr_assert_eq(gs_toml_key_col(res, 0), 3);
    /* columns count characters: "é" is one column though two bytes */
    cr_assert_eq(gs_toml_col(arr), 9);
    cr_assert_eq(gs_toml_col(gs_toml_at(arr, 1)), 13);
    cr_assert_eq(gs_toml_key_col(res, 2), 3);
    cr_assert_eq(gs_toml_key_line(res, 3), 0, "out of range");
    cr_assert_eq(gs_toml_line(NULL), 0);
    gs_toml_free(doc);
}

Test(toml, positions_of_implicit_and_array_of_tables)
{
    struct gs_toml_doc *doc = parse_ok("a.b = 1\n[x.y]\n[[z]]\n[[z]]\n[x]\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const struct gs_toml_value *z = gs_toml_get(root, "z");

    cr_assert_eq(gs_toml_line(gs_toml_get(root, "a")), 1);
    cr_assert_eq(gs_toml_col(gs_toml_get(root, "a")), 1);
    cr_assert_eq(gs_toml_line(gs_toml_get_path(root, "x.y")), 2);
    cr_assert_eq(gs_toml_line(z), 3);
    cr_assert_eq(gs_toml_line(gs_toml_at(z, 1)), 4);
    /* x was implicit until [x] defined it on line 5; its key stays where it was first named */
    cr_assert_eq(gs_toml_line(gs_toml_get(root, "x")), 5);
    cr_assert_eq(gs_toml_key_line(root, 1), 2);
    cr_assert_eq(gs_toml_key_col(root, 1), 2);
    gs_toml_free(doc);
}

/* ---- lookups and getters ---- */

Test(toml, get_path_follows_dotted_bare_keys)
{
    struct gs_toml_doc *doc =
        parse_ok("[resources]\ngpus_per_node = 8\n[resources.mem]\nsize = 1\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_eq(int_at(root, "resources.gpus_per_node"), 8);
    cr_assert_eq(int_at(root, "resources.mem.size"), 1);
    cr_assert_null(gs_toml_get_path(root, "resources.missing"));
    cr_assert_null(gs_toml_get_path(root, "resources.gpus_per_node.x"));
    cr_assert_null(gs_toml_get_path(root, "resources..mem"));
    cr_assert_null(gs_toml_get_path(root, "resources."));
    cr_assert_null(gs_toml_get_path(root, ""));
    cr_assert_null(gs_toml_get_path(NULL, "a"));
    cr_assert_null(gs_toml_get_path(root, NULL));
    cr_assert_null(gs_toml_get(gs_toml_get_path(root, "resources.gpus_per_node"), "x"));
    gs_toml_free(doc);
}

Test(toml, getters_reject_wrong_type_without_writing_output)
{
    struct gs_toml_doc *doc = parse_ok("s = 'x'\ni = 1\nf = 1.5\nb = true\nd = 2024-01-01\n");
    const struct gs_toml_value *root = gs_toml_root(doc);
    const char *s = "untouched";
    size_t len = 77;
    int64_t i = 77;
    double f = 77;
    bool b = false;
    struct gs_toml_datetime dt = {.year = 77};

    cr_assert_eq(gs_toml_as_string(gs_toml_get(root, "i"), &s, &len), -EINVAL);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(root, "f"), &i), -EINVAL);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(root, "s"), &i), -EINVAL);
    cr_assert_eq(gs_toml_as_float(gs_toml_get(root, "b"), &f), -EINVAL);
    cr_assert_eq(gs_toml_as_bool(gs_toml_get(root, "i"), &b), -EINVAL);
    cr_assert_eq(gs_toml_as_datetime(gs_toml_get(root, "s"), &dt), -EINVAL);
    cr_assert_eq(gs_toml_as_int(root, &i), -EINVAL);
    cr_assert_eq(gs_toml_as_int(gs_toml_get(root, "missing"), &i), -ENOENT);
    cr_assert_eq(gs_toml_as_string(NULL, &s, &len), -ENOENT);
    cr_assert_str_eq(s, "untouched");
    cr_assert_eq(len, 77);
    cr_assert_eq(i, 77);
    cr_assert_eq(f, 77);
    cr_assert(!b);
    cr_assert_eq(dt.year, 77);
    gs_toml_free(doc);
}

Test(toml, as_float_accepts_integers)
{
    struct gs_toml_doc *doc = parse_ok("i = -3\n");
    double f = 0;

    cr_assert_eq(gs_toml_as_float(gs_toml_get(gs_toml_root(doc), "i"), &f), 0);
    cr_assert_eq(f, -3.0);
    gs_toml_free(doc);
}

Test(toml, names_every_type_and_counts_only_containers)
{
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_TABLE), "table");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_ARRAY), "array");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_STRING), "string");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_INTEGER), "integer");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_FLOAT), "float");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_BOOL), "boolean");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_DATETIME), "offset date-time");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_DATETIME_LOCAL), "local date-time");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_DATE_LOCAL), "local date");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_TIME_LOCAL), "local time");
    cr_assert_str_eq(gs_toml_type_name(GS_TOML_NONE), "none");
    cr_assert_eq(gs_toml_type(NULL), GS_TOML_NONE);
    cr_assert_eq(gs_toml_count(NULL), 0);
    cr_assert_null(gs_toml_at(NULL, 0));
    cr_assert_null(gs_toml_root(NULL));
    gs_toml_free(NULL);
}

Test(toml, rejects_bad_arguments)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    cr_assert_eq(gs_toml_parse("a = 1", 5, NULL, &err), -EINVAL);
    cr_assert_eq(gs_toml_parse(NULL, 1, &doc, &err), -EINVAL);
    cr_assert_null(doc);
    cr_assert_eq(gs_toml_parse(NULL, 0, &doc, NULL), 0);
    cr_assert_eq(gs_toml_count(gs_toml_root(doc)), 0);
    gs_toml_free(doc);
    cr_assert_eq(gs_toml_parse("a = ", 4, &doc, NULL), -EINVAL, "err may be NULL");
}

/* ---- redefinition rules ---- */

Test(toml, rejects_duplicate_key_with_position)
{
    parse_fails_at("name = 'a'\n\nname = 'b'\n", 3, 1,
                   "duplicate key 'name' (first defined at 1:1)");
    parse_fails_at("[t]\n  x.y = 1\n  x.y = 2\n", 3, 5,
                   "duplicate key 'x.y' (first defined at 2:5)");
    parse_fails_at("a = 1\n\"a\" = 2\n", 2, 1, "duplicate key 'a'");
    parse_fails_at("a = 1\n'a' = 2\n", 2, 1, "duplicate key 'a'");
    parse_fails_at("\"a b\" = 1\n'a b' = 2\n", 2, 1, "duplicate key '\"a b\"'");
}

Test(toml, rejects_table_defined_twice)
{
    parse_fails_at("[a]\nb = 1\n\n[a]\nc = 2\n", 4, 2, "table 'a' already defined at 1:1");
    parse_fails_at("[a.b]\n[a]\n[a]\n", 3, 2, "table 'a' already defined at 2:1");
    parse_fails_at("[a]\n[a.b]\n[a.b]\n", 3, 4, "table 'a.b' already defined at 2:1");
    parse_fails_at("[fruit]\ntype = 'apple'\n[fruit.type]\n", 3, 8,
                   "key 'fruit.type' is already defined as a string at 2:8");
}

Test(toml, rejects_header_for_table_made_by_dotted_keys)
{
    parse_fails_at("[fruit]\napple.color = 'red'\n\n[fruit.apple]\n", 4, 8,
                   "table 'fruit.apple' already defined by dotted keys at 2:1");
    parse_fails("[t1]\nt2.t3.v = 0\n[t1.t2.t3]\n");
    parse_fails("[fruit]\napple.color = 'red'\n[[fruit.apple]]\n");
}

Test(toml, rejects_dotted_keys_into_table_defined_by_header)
{
    parse_fails_at("[a.b.c]\nz = 9\n[a]\nb.c.t = 'no'\n", 4, 3,
                   "cannot add to table 'b.c' with dotted keys: it was defined at 1:1");
    parse_fails("[a.b.c.d]\nz = 9\n[a]\nb.c.d.k.t = 1\n");
    parse_fails("[[a.b]]\n[a]\nb.y = 2\n");
    parse_fails("a = 1\na.b = 2\n");
}

Test(toml, rejects_extending_inline_tables)
{
    parse_fails_at("a = {}\n[a.b]\n", 2, 2, "cannot extend inline table 'a' (defined at 1:5)");
    parse_fails_at("a = {b = 1}\na.c = 2\n", 2, 1, "cannot extend inline table 'a'");
    parse_fails_at("a = {b = 1}\n[a]\n", 2, 2, "cannot redefine inline table 'a'");
    parse_fails("t = { nest = {} }\n[[t.nest]]\n");
    parse_fails("t = { inner = { dog = 1 }, inner.cat = 2 }\n");
}

Test(toml, rejects_array_of_tables_after_static_array_and_mixing)
{
    parse_fails_at("fruits = []\n[[fruits]]\n", 2, 3,
                   "cannot append to static array 'fruits' (defined at 1:10)");
    parse_fails_at("[t]\n[[t]]\n", 2, 3, "'t' is already a table (defined at 1:1)");
    parse_fails_at("[[t]]\n[t]\n", 2, 2, "'t' is already an array of tables (defined at 1:1)");
    parse_fails("a = [{}]\n[a.b]\n");
    parse_fails("a = true\n[[a]]\n");
    parse_fails("[[albums.songs]]\n[[albums]]\n");
}

Test(toml, allows_implicit_tables_to_be_defined_later)
{
    struct gs_toml_doc *doc = parse_ok("[a.b.c]\nanswer = 42\n[a]\nbetter = 43\n"
                                       "[[x.y]]\n[x]\nz = 1\n"
                                       "[p.q.r]\n[p]\nq.s = 1\n");
    const struct gs_toml_value *root = gs_toml_root(doc);

    cr_assert_eq(int_at(root, "a.b.c.answer"), 42);
    cr_assert_eq(int_at(root, "a.better"), 43);
    cr_assert_eq(int_at(root, "x.z"), 1);
    cr_assert_eq(int_at(root, "p.q.s"), 1);
    gs_toml_free(doc);
}

/* ---- syntax, encoding ---- */

Test(toml, rejects_missing_equals_and_garbage_after_values)
{
    parse_fails_at("key value\n", 1, 5, "expected '=' after key 'key'");
    parse_fails_at("key\n", 1, 4, "expected '=' after key 'key', found newline");
    parse_fails_at("a = 1 b = 2\n", 1, 7, "expected newline after value");
    parse_fails_at("[t] x = 1\n", 1, 5, "expected newline after table header");
    parse_fails_at("a = \n", 1, 5, "expected a value, found newline");
    parse_fails_at("= 1\n", 1, 1, "expected a key");
    parse_fails_at("a = bare\n", 1, 5, "invalid value 'bare'");
    parse_fails_at("[a\n", 1, 3, "expected ']' to close the table header");
    parse_fails_at("[[a]\n", 1, 4, "expected ']]'");
    parse_fails_at("[]\n", 1, 2, "expected a key");
    parse_fails_at("[a.]\n", 1, 4, "expected a key");
    parse_fails("a.. b = 1\n");
    parse_fails("[ [a]]\n");
}

Test(toml, rejects_unterminated_and_multiline_key_strings)
{
    parse_fails_at("a = \"abc\n", 1, 5, "unterminated string");
    parse_fails_at("a = 'abc", 1, 5, "unterminated string");
    parse_fails_at("x = 1\na = \"\"\"abc\n\n", 2, 5, "unterminated multi-line string");
    parse_fails_at("a = '''abc''''''\n", 1, 16, "too many quotes");
    parse_fails_at("\"\"\"k\"\"\" = 1\n", 1, 1, "multi-line strings cannot be used as keys");
}

Test(toml, rejects_invalid_escapes_and_surrogates)
{
    parse_fails_at("a = \"x\\qy\"\n", 1, 7, "invalid escape sequence '\\q'");
    parse_fails_at("a = \"\\uD800\"\n", 1, 6, "surrogate");
    parse_fails_at("a = \"\\uDFFF\"\n", 1, 6, "surrogate");
    parse_fails_at("a = \"\\U00110000\"\n", 1, 6, "beyond U+10FFFF");
    parse_fails_at("a = \"\\u12\"\n", 1, 6, "needs 4 hex digits");
    parse_fails_at("a = \"\\U1234567\"\n", 1, 6, "needs 8 hex digits");
    parse_fails("a = \"\\x41\"\n");
    parse_fails("a = \"\\e\"\n");
    parse_fails("a = \"\"\"\\ x\"\"\"\n");
    parse_fails("a = \"\\");
    gs_toml_free(parse_ok("a = \"\\U0010FFFF\\uE000\\uD7FF\"\n"));
}

Test(toml, rejects_invalid_utf8_and_control_characters_with_position)
{
    parse_fails_at("a = 1\nb = \"\xFF\"\n", 2, 6, "invalid utf-8 byte 0xff");
    parse_fails_at("a = \"\xC0\xAF\"\n", 1, 6, "invalid utf-8");         /* overlong '/' */
    parse_fails_at("a = \"\xED\xA0\x80\"\n", 1, 6, "invalid utf-8");     /* surrogate */
    parse_fails_at("a = \"\xF4\x90\x80\x80\"\n", 1, 6, "invalid utf-8"); /* > U+10FFFF */
    parse_fails_at("a = \"\xE2\x82\"", 1, 6, "invalid utf-8");           /* truncated */
    parse_fails_at("# x\x01y\n", 1, 4, "control character U+0001");
    parse_fails_at("a = 'x\x7Fy'\n", 1, 7, "control character U+007F");
    parse_fails_at("a = \"\"\"x\x1Fy\"\"\"\n", 1, 9, "control character U+001F");
    parse_fails_at("a = 1\rb = 2\n", 1, 6, "carriage return not followed by line feed");
    parse_fails_at("a = 1\r", 1, 6, "carriage return");
    parse_fails_at("a = 'x\ty\x0C'\n", 1, 9, "control character U+000C");
    gs_toml_free(parse_ok("a = 'tab\tok'\t# comment\twith tab\n"));
}

Test(toml, rejects_nul_byte_in_input)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    cr_assert_eq(parse_len("a = 1\0b = 2\n", 12, &doc, &err), -EINVAL);
    cr_assert_eq(err.line, 1);
    cr_assert_eq(err.col, 6);
    cr_assert(strstr(err.msg, "U+0000") != NULL, "%s", err.msg);
}

Test(toml, error_column_counts_characters_not_bytes)
{
    parse_fails_at("\"日本語\" = 1 x\n", 1, 11, "expected newline");
    parse_fails_at("s = \"ü\" \"\n", 1, 9, "expected newline after value, found '\"'");
}

/* ---- limits ---- */

static void nest(struct gs_buf *b, const char *prefix, int levels, const char *open,
                 const char *inner, const char *close)
{
    gs_buf_reset(b);
    cr_assert_eq(gs_buf_append_str(b, prefix), 0);
    for (int i = 0; i < levels; i++)
        cr_assert_eq(gs_buf_append_str(b, open), 0);
    cr_assert_eq(gs_buf_append_str(b, inner), 0);
    for (int i = 0; i < levels; i++)
        cr_assert_eq(gs_buf_append_str(b, close), 0);
    cr_assert_eq(gs_buf_putc(b, '\n'), 0);
}

Test(toml, enforces_nesting_limit_on_arrays_and_inline_tables)
{
    struct gs_buf b = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    /* the outermost array is one level below the root, the innermost at the limit */
    nest(&b, "a = ", GS_TOML_MAX_DEPTH, "[", "", "]");
    gs_toml_free(parse_ok(b.data));
    nest(&b, "a = ", GS_TOML_MAX_DEPTH + 1, "[", "", "]");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert(strstr(err.msg, "nesting too deep") != NULL, "%s", err.msg);
    cr_assert_eq(err.col, 5 + GS_TOML_MAX_DEPTH);
    /* tables at levels 1..127 and the integer at 128 fit; one more level does not */
    nest(&b, "a = ", GS_TOML_MAX_DEPTH - 1, "{b=", "1", "}");
    gs_toml_free(parse_ok(b.data));
    nest(&b, "a = ", GS_TOML_MAX_DEPTH, "{b=", "1", "}");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert(strstr(err.msg, "nesting too deep") != NULL, "%s", err.msg);
    nest(&b, "a = ", 100000, "[", "", "]");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    nest(&b, "a = ", 100000, "{b=", "1", "}");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    gs_buf_release(&b);
}

Test(toml, enforces_nesting_limit_on_headers_and_dotted_keys)
{
    struct gs_buf b = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    gs_buf_append_str(&b, "[a");
    for (int i = 1; i < GS_TOML_MAX_DEPTH; i++)
        gs_buf_append_str(&b, ".a");
    gs_buf_append_str(&b, "]\n");
    gs_toml_free(parse_ok(b.data));
    gs_buf_truncate(&b, b.len - 2);
    gs_buf_append_str(&b, ".a]\n");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert(strstr(err.msg, "too many parts") != NULL, "%s", err.msg);
    gs_buf_reset(&b);
    for (int i = 0; i < 100000; i++)
        gs_buf_append_str(&b, "a.");
    gs_buf_append_str(&b, "a = 1\n");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    gs_buf_release(&b);
}

Test(toml, handles_100k_keys_in_one_table)
{
    enum { NKEYS = 100000 };
    struct gs_buf b = GS_BUF_INIT;
    struct gs_toml_doc *doc;
    const struct gs_toml_value *root;
    struct gs_error err;
    char key[32];

    /* Linear lookups would make this 5e9 key comparisons; with the index it is instant. */
    for (int i = 0; i < NKEYS; i++)
        cr_assert_eq(gs_buf_printf(&b, "key_%d = %d\n", i, i), 0);
    doc = NULL;
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), 0, "%s", err.msg);
    root = gs_toml_root(doc);
    cr_assert_eq(gs_toml_count(root), NKEYS);
    for (int i = 0; i < NKEYS; i += 997) {
        snprintf(key, sizeof(key), "key_%d", i);
        cr_assert_eq(int_at(root, key), i);
        cr_assert_str_eq(gs_toml_key_at(root, (size_t)i, NULL), key);
        cr_assert_eq(gs_toml_key_line(root, (size_t)i), i + 1);
    }
    cr_assert_null(gs_toml_get(root, "key_100000"));
    gs_toml_free(doc);
    /* a duplicate far down is still found */
    cr_assert_eq(gs_buf_append_str(&b, "key_123 = 0\n"), 0);
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert_eq(err.line, NKEYS + 1);
    cr_assert(strstr(err.msg, "first defined at 124:1") != NULL, "%s", err.msg);
    gs_buf_release(&b);
}

Test(toml, handles_many_tables_and_long_lines)
{
    struct gs_buf b = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    for (int i = 0; i < 20000; i++)
        gs_buf_printf(&b, "[t%d]\nx = %d\n[[arr]]\ny = %d\n", i, i, i);
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_toml_count(gs_toml_root(doc)), 20001);
    cr_assert_eq(gs_toml_count(gs_toml_get(gs_toml_root(doc), "arr")), 20000);
    gs_toml_free(doc);
    gs_buf_reset(&b);
    gs_buf_append_str(&b, "a = [");
    for (int i = 0; i < 100000; i++)
        gs_buf_append_str(&b, "1, ");
    gs_buf_append_str(&b, "x]\n");
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert_eq(err.col, 6 + 3 * 100000);
    gs_buf_release(&b);
}

Test(toml, error_messages_cut_long_keys_at_a_character_boundary)
{
    struct gs_buf b = GS_BUF_INIT;
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    const char *cut;

    for (int line = 0; line < 2; line++) {
        gs_buf_putc(&b, '"');
        for (int i = 0; i < 200; i++)
            gs_buf_append_str(&b, "\xC3\xA9");
        gs_buf_append_str(&b, "\" = 1\n");
    }
    cr_assert_eq(parse_len(b.data, b.len, &doc, &err), -EINVAL);
    cr_assert_eq(err.line, 2);
    cut = strstr(err.msg, "...");
    cr_assert_not_null(cut, "%s", err.msg);
    cr_assert_neq((unsigned char)cut[-1], 0xC3, "cut inside a character");
    cr_assert(strstr(err.msg, "(first defined at 1:1)") != NULL, "%s", err.msg);
    gs_buf_release(&b);
}
