/*
 * test_hostlist.c: Slurm hostlist expressions expand to the names Slurm gives (ranges,
 * zero-padded widths, suffixes after the bracket), bad ones name their column, and
 * compression folds runs back into brackets.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"

static void expands_to(const char *expr, const char *want)
{
    struct gs_buf joined = GS_BUF_INIT;
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    gs_error_clear(&err);
    cr_assert_eq(gs_hostlist_expand(expr, &names, &n, &err), 0, "%s: %s", expr, err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(gs_buf_printf(&joined, "%s%s", i ? " " : "", names[i]), 0);
    cr_assert_null(names[n]);
    cr_assert_str_eq(joined.data != NULL ? joined.data : "", want, "%s", expr);
    gs_hostlist_free(names);
    gs_buf_release(&joined);
}

static void refused(const char *expr, int col, const char *want)
{
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    gs_error_clear(&err);
    cr_assert_eq(gs_hostlist_expand(expr, &names, &n, &err), -EINVAL, "%s", expr);
    cr_assert_eq(err.col, col, "%s: column %d, not %d (%s)", expr, err.col, col, err.msg);
    cr_assert_not_null(strstr(err.msg, want), "%s: %s", expr, err.msg);
}

static void compresses_to(const char *const *names, size_t n, const char *want)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_hostlist_compress(names, n, &out), 0);
    cr_assert_str_eq(out.data, want);
    gs_buf_release(&out);
}

Test(hostlist, expands_ranges_lists_and_plain_names)
{
    expands_to("node[1-3,7]", "node1 node2 node3 node7");
    expands_to("gpu[08-10],login", "gpu08 gpu09 gpu10 login");
    expands_to("rack[1-2]-gpu", "rack1-gpu rack2-gpu");
    expands_to("a,b[2],c", "a b2 c");
    expands_to("", "");
}

Test(hostlist, bad_expressions_name_their_column)
{
    refused("node[3-1]", 6, "goes down");
    refused("node[1-]", 6, "N-M");
    refused("node[1,x]", 8, "number");
    refused("node[1", 5, "without ']'");
    refused("a,,b", 3, "empty name");
    refused("n[1][2]", 1, "one bracket");
    refused("n[0-200000]", 3, "more than");
}

/* Found by tests/fuzz/fuzz_hostlist: names with a ']' came out, which compress then wrote
 * back as an expression expand refused. */
Test(hostlist, rejects_a_stray_closing_bracket_beside_the_range)
{
    refused("n[1-2]x]", 1, "']' without '['");
    refused("a,n[01]]", 3, "']' without '['");
    refused("8][0]", 1, "']' without '['");
}

/* Found by tests/fuzz/fuzz_hostlist: names whose prefixes all differ ("n0x2", "n1x2", ...)
 * took time quadratic in their number, near a minute for 37000 of them. */
Test(hostlist, compress_takes_many_distinct_prefixes_in_stride, .timeout = 30)
{
    enum { NAMES = 100000 };
    char **names = calloc(NAMES, sizeof(*names));
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_not_null(names);
    for (size_t i = 0; i < NAMES; i++) {
        names[i] = malloc(24);
        cr_assert_not_null(names[i]);
        snprintf(names[i], 24, "n%zux2", i);
    }
    cr_assert_eq(gs_hostlist_compress((const char *const *)names, NAMES, &out), 0);
    cr_assert_eq(strncmp(out.data, "n0x2,n1x2,n2x2,", 15), 0, "%.40s", out.data);
    for (size_t i = 0; i < NAMES; i++)
        free(names[i]);
    free(names);
    gs_buf_release(&out);
}

/* Found by tests/fuzz/fuzz_hostlist: 0 joined 111 and 011 and came out as 000. */
Test(hostlist, compress_pads_only_numbers_of_the_padded_width)
{
    const char *a[] = {"111", "011", "0"};
    const char *b[] = {"n111", "n2", "n011"};

    compresses_to(a, 3, "[011,111],0");
    compresses_to(b, 3, "n[2,111],n011");
}

/* Found by bench/fuzz.sh (fuzz_hostlist, 7 million inputs): plain names after a range went
 * past the cap, so "[11-100009]x2,3,3" expanded to 100,002 names, which compress wrote back
 * as an expression expand refused. The cap holds for every name now. */
Test(hostlist, the_name_cap_counts_plain_names_too)
{
    char at_cap[64];
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    refused("[11-100009]x2,3,3", 17, "more than 100000");
    refused("n[1-100000],login", 13, "more than");
    snprintf(at_cap, sizeof(at_cap), "n[2-%d],login", GS_HOSTLIST_MAX);
    cr_assert_eq(gs_hostlist_expand(at_cap, &names, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, GS_HOSTLIST_MAX);
    cr_assert_str_eq(names[n - 1], "login");
    gs_hostlist_free(names);
}

Test(hostlist, compress_writes_a_repeated_number_once)
{
    const char *a[] = {"3", "3"};
    const char *b[] = {"n07", "x", "n07", "n07"};

    compresses_to(a, 2, "3");
    compresses_to(b, 4, "n07,x");
}

Test(hostlist, compress_folds_runs)
{
    const char *a[] = {"node3", "node1", "node2", "node7", "login"};
    const char *b[] = {"gpu08", "gpu09", "gpu10"};
    const char *c[] = {"node5"};
    const char *d[] = {"x", "node1", "y"};

    compresses_to(a, 5, "node[1-3,7],login");
    compresses_to(b, 3, "gpu[08-10]");
    compresses_to(c, 1, "node5");
    compresses_to(d, 3, "x,node1,y");
    compresses_to(NULL, 0, "");
}

Test(hostlist, compress_keeps_widths_apart)
{
    const char *a[] = {"node9", "node10", "node11"};
    const char *b[] = {"gpu08", "gpu100"};

    compresses_to(a, 3, "node[9-11]");
    compresses_to(b, 2, "gpu08,gpu100");
}

static void counts_are(const uint32_t *counts, size_t n, const char *want)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_hostlist_counts(counts, n, &out), 0);
    cr_assert_str_eq(out.data != NULL ? out.data : "", want);
    gs_buf_release(&out);
}

Test(hostlist, counts_fold_runs_as_slurm_tasks_per_node)
{
    counts_are((uint32_t[]){2, 2, 2, 1}, 4, "2(x3),1");
    counts_are((uint32_t[]){3, 2, 2}, 3, "3,2(x2)");
    counts_are((uint32_t[]){8}, 1, "8");
    counts_are((uint32_t[]){1, 2, 1}, 3, "1,2,1");
    counts_are(NULL, 0, "");
}

static void parsed_counts_are(const char *text, const uint32_t *want, size_t nwant)
{
    uint32_t *got = NULL;
    size_t n = 0;
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_hostlist_counts_parse(text, &got, &n, &err), 0, "%s: %s", text, err.msg);
    cr_assert_eq(n, nwant, "%s: %zu counts", text, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "%s: count %zu is %u", text, i, got[i]);
    free(got);
}

static void counts_refused_at(const char *text, int col)
{
    uint32_t *got = NULL;
    size_t n = 0;
    struct gs_error err;

    gs_error_clear(&err);
    cr_assert_eq(gs_hostlist_counts_parse(text, &got, &n, &err), -EINVAL, "%s accepted", text);
    cr_expect_eq(err.col, col, "%s: column %d (%s)", text, err.col, err.msg);
    cr_expect_null(got);
}

Test(hostlist, counts_parse_undoes_counts)
{
    parsed_counts_are("2(x3),1", (uint32_t[]){2, 2, 2, 1}, 4);
    parsed_counts_are("3,2(x2)", (uint32_t[]){3, 2, 2}, 3);
    parsed_counts_are("8", (uint32_t[]){8}, 1);
    parsed_counts_are("1,2,1", (uint32_t[]){1, 2, 1}, 3);
    counts_refused_at("", 1);
    counts_refused_at("0", 1);
    counts_refused_at("2,", 3);
    counts_refused_at("2(x", 4);
    counts_refused_at("2(x3", 4);
    counts_refused_at("2x3", 2);
    counts_refused_at("1(x100001)", 4);
    counts_refused_at("99999999999", 1);
}
