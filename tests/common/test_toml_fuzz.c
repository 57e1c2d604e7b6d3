/*
 * test_toml_fuzz.c: robustness of the TOML parser on broken input. Every prefix of a rich
 * document and thousands of deterministic mutations of it (byte replacements, deletions,
 * insertions, duplicated spans) are parsed; the only claims are that parsing returns 0 or a
 * negative errno with the error filled in, that an accepted tree is consistent when walked
 * through the public getters, and that freeing works. Run under ASan/UBSan this is what
 * catches reads past the end of the input, leaks on error paths and arithmetic overflow.
 *
 * Each input is copied into a heap block of exactly its length, so a read one byte past the
 * end is an ASan error. The PRNG is seeded with constants: failures reproduce.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/toml.h"

static const char rich_doc[] =
    "\xEF\xBB\xBF# gsched job file\n"
    "title = \"train \\\"resnet\\\" \\u00e9\\U0001F600\\t\"\n"
    "'literal key' = 'C:\\path'\n"
    "\"quoted.key\" = 1_000\n"
    "site.\"google.com\".enabled = true\n"
    "hex = 0xDEAD_BEEF\noct = 0o755\nbin = 0b1101\nneg = -9223372036854775808\n"
    "floats = [1.5, -0.0, 6.02e+23, 1e-7, inf, -inf, nan, +nan, 3_141.592_6]\n"
    "when = 1979-05-27T07:32:00.999999-07:00\n"
    "local = 1979-05-27 07:32:00\n"
    "day = 2024-02-29\n"
    "at = 23:59:60.5\n"
    "ml = \"\"\"\nRoses \\\n   are \"\"red\"\"\r\n\"\"\"\n"
    "raw = '''\nno \\escapes '' here'''\n"
    "mixed = [ 1, 'two', [3, [4]], { five = 5 }, # comment\n  2024-01-01, ]\n"
    "point = { x = 1, y.z = 2, s = \"\\n\" }\n"
    "\n"
    "[resources]\n"
    "gpus_per_node = 8\n"
    "mem.size = '64G'\n"
    "\n"
    "[resources.limits]  # trailing comment\n"
    "wall = \"12:00:00\"\n"
    "\n"
    "[[tasks]]\n"
    "name = \"prep\"\n"
    "[tasks.env]\n"
    "PATH = '/usr/bin'\n"
    "[[tasks.steps]]\n"
    "cmd = [\"a\", \"b\"]\n"
    "[[tasks]]\n"
    "name = \"run\"\n"
    "\n"
    "[a.b.c]\n"
    "[a]\n"
    "d = 1\n";

/* xorshift64*, fixed seed */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717u;
}

static size_t rng_below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rng() % n);
}

/* Walks an accepted tree and checks that every getter agrees with the value's type. */
static void check_value(const struct gs_toml_value *v, int depth)
{
    enum gs_toml_type type = gs_toml_type(v);
    struct gs_toml_datetime dt;
    const char *s;
    size_t len;
    int64_t i;
    double d;
    bool b;

    cr_assert_not_null(v);
    cr_assert_leq(depth, GS_TOML_MAX_DEPTH + 1);
    cr_assert_geq(gs_toml_line(v), 1);
    cr_assert_geq(gs_toml_col(v), 1);
    cr_assert_eq(gs_toml_as_string(v, &s, &len) == 0, type == GS_TOML_STRING);
    cr_assert_eq(gs_toml_as_int(v, &i) == 0, type == GS_TOML_INTEGER);
    cr_assert_eq(gs_toml_as_float(v, &d) == 0, type == GS_TOML_FLOAT || type == GS_TOML_INTEGER);
    cr_assert_eq(gs_toml_as_bool(v, &b) == 0, type == GS_TOML_BOOL);
    cr_assert_eq(gs_toml_as_datetime(v, &dt) == 0, type >= GS_TOML_DATETIME);
    for (size_t k = 0; k < gs_toml_count(v); k++) {
        if (type == GS_TOML_TABLE) {
            const char *key = gs_toml_key_at(v, k, &len);

            cr_assert_not_null(key);
            cr_assert_eq(gs_toml_getn(v, key, len), gs_toml_at(v, k));
            cr_assert_geq(gs_toml_key_line(v, k), 1);
        }
        check_value(gs_toml_at(v, k), depth + 1);
    }
}

static void parse_one(const char *text, size_t len)
{
    char *copy = malloc(len > 0 ? len : 1);
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;
    int rc;

    cr_assert_not_null(copy);
    memcpy(copy, text, len);
    rc = gs_toml_parse(copy, len, &doc, &err);
    free(copy);
    if (rc == 0) {
        cr_assert_not_null(doc);
        check_value(gs_toml_root(doc), 0);
        gs_toml_free(doc);
        return;
    }
    cr_assert(rc == -EINVAL || rc == -ENOMEM, "rc=%d", rc);
    cr_assert_null(doc);
    cr_assert_eq(err.code, rc);
    cr_assert_neq(err.msg[0], '\0');
    if (rc == -EINVAL) {
        cr_assert_geq(err.line, 1, "%s", err.msg);
        cr_assert_geq(err.col, 1, "%s", err.msg);
    }
}

Test(toml_fuzz, rich_document_parses)
{
    struct gs_toml_doc *doc = NULL;
    struct gs_error err;

    cr_assert_eq(gs_toml_parse(rich_doc, sizeof(rich_doc) - 1, &doc, &err), 0, "%d:%d: %s",
                 err.line, err.col, err.msg);
    check_value(gs_toml_root(doc), 0);
    gs_toml_free(doc);
}

Test(toml_fuzz, every_prefix_parses_or_fails_cleanly)
{
    for (size_t n = 0; n < sizeof(rich_doc); n++)
        parse_one(rich_doc, n);
}

Test(toml_fuzz, single_byte_replacements_parse_or_fail_cleanly)
{
    static const char interesting[] = "[]{}\"'=.,#\\\n\r\t _-+:0169eExobTZzinfa\x7F\x80\xBF\xC3"
                                      "\xE2\xED\xF0\xF4\xFF";
    char buf[sizeof(rich_doc)];

    rng_state = 0x0123456789ABCDEFu;
    for (int round = 0; round < 16000; round++) {
        size_t at = rng_below(sizeof(rich_doc) - 1);

        memcpy(buf, rich_doc, sizeof(rich_doc) - 1);
        if (round % 4 == 0)
            buf[at] = (char)rng();
        else
            buf[at] = interesting[rng_below(sizeof(interesting) - 1)];
        parse_one(buf, sizeof(rich_doc) - 1);
    }
}

Test(toml_fuzz, deletions_insertions_and_duplications_parse_or_fail_cleanly)
{
    enum { DOC_LEN = sizeof(rich_doc) - 1 };
    char buf[3 * DOC_LEN];

    rng_state = 0xFEDCBA9876543210u;
    for (int round = 0; round < 12000; round++) {
        size_t at = rng_below(DOC_LEN), span = 1 + rng_below(32), len = DOC_LEN;

        if (span > DOC_LEN - at)
            span = DOC_LEN - at;
        memcpy(buf, rich_doc, DOC_LEN);
        if (round % 3 == 0) { /* delete a span */
            memmove(buf + at, buf + at + span, DOC_LEN - at - span);
            len -= span;
        } else if (round % 3 == 1) { /* insert random bytes */
            memmove(buf + at + span, buf + at, DOC_LEN - at);
            for (size_t k = 0; k < span; k++)
                buf[at + k] = (char)rng();
            len += span;
        } else { /* duplicate a span in place */
            memmove(buf + at + span, buf + at, DOC_LEN - at);
            len += span;
        }
        parse_one(buf, len);
    }
}

Test(toml_fuzz, random_garbage_and_repetitions_parse_or_fail_cleanly)
{
    static const char *const units[] = {"[",  "]",   "{",      "}", "a=", "a.b=", "\"",
                                        "'",  "'''", "\"\"\"", ",", "\n", "1",    "[[x]]\n",
                                        "\\", "#",   " ",      "=", "0x", "1e",   "2024-01-01"};
    char buf[2048];

    rng_state = 0x5555AAAA5555AAAAu;
    for (int round = 0; round < 6000; round++) {
        size_t len = 0, target = rng_below(sizeof(buf) - 16);

        while (len < target) {
            const char *u = units[rng_below(sizeof(units) / sizeof(units[0]))];
            size_t n = strlen(u);

            memcpy(buf + len, u, n);
            len += n;
        }
        parse_one(buf, len);
    }
}
