/*
 * test_planfile.c: the job's data plan file (sharding/planfile.h): holds range lists both
 * ways, a plan written and read back unchanged in a canonical form, strict reading with
 * errors at their line:col (inside a holds string too), the planner's input over a
 * manifest's train shards, and the dataset id.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "sharding/planfile.h"

static char dir[4096], path[4200];
static struct gs_error err;

static void setup(void)
{
    ds_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/plan.toml", dir);
}

static void teardown(void)
{
    ds_rmdir(dir);
}

TestSuite(planfile, .init = setup, .fini = teardown);

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");

    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, true);
    cr_assert_eq(fclose(f), 0);
}

static char *ranges(const uint32_t *idx, size_t n)
{
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(shard_planfile_format_ranges(idx, n, &b), 0);
    cr_assert_eq(gs_buf_putc(&b, '\0'), 0);
    return gs_buf_detach(&b, NULL);
}

Test(planfile, ranges_are_formatted_merged_and_ascending)
{
    uint32_t idx[] = {0, 1, 2, 3, 5, 7, 8, 100};
    uint32_t bad[] = {3, 2};
    struct gs_buf b = GS_BUF_INIT;
    char *s = ranges(idx, 8);

    cr_expect_str_eq(s, "0-3,5,7-8,100");
    free(s);
    s = ranges(NULL, 0);
    cr_expect_str_eq(s, "");
    free(s);
    cr_expect_eq(shard_planfile_format_ranges(bad, 2, &b), -EINVAL);
    cr_expect_eq(shard_planfile_format_ranges(idx, 1, &b) == 0 && b.len == 1, true);
    gs_buf_release(&b);
}

Test(planfile, ranges_parse_what_they_format)
{
    const uint32_t want[] = {0, 1, 2, 3, 5, 9, 10, 11};
    uint32_t *idx = NULL;
    size_t n = 99;

    cr_assert_eq(shard_planfile_parse_ranges(" 0-2, 3 ,5-5,9 - 11 ", &idx, &n, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(n, 8);
    cr_expect_eq(memcmp(idx, want, sizeof(want)), 0);
    free(idx);
    cr_assert_eq(shard_planfile_parse_ranges("", &idx, &n, &err), 0);
    cr_expect_eq(n, 0);
    cr_expect_null(idx);
    cr_assert_eq(shard_planfile_parse_ranges("0-3,5,7-8,100", &idx, &n, &err), 0);
    cr_expect_eq(n, 8);
    free(idx);
}

/* text must fail at 1-based column col with a message holding what. */
static void expect_range_error(const char *text, int col, const char *what)
{
    uint32_t *idx = (uint32_t *)&err; /* never written on failure */
    size_t n = 42;

    gs_error_clear(&err);
    cr_assert_eq(shard_planfile_parse_ranges(text, &idx, &n, &err), -EINVAL, "'%s'", text);
    cr_expect_eq(err.col, col, "'%s': col %d, want %d (%s)", text, err.col, col, err.msg);
    cr_expect_not_null(strstr(err.msg, what), "'%s': %s", text, err.msg);
    cr_expect_eq(n, 42, "outputs untouched");
}

Test(planfile, range_errors_point_at_the_character)
{
    expect_range_error("0-3,2", 5, "not ascending: 2 after 3");
    expect_range_error("0-3,3-4", 5, "not ascending");
    expect_range_error("5-3", 1, "range 5-3 is backwards");
    expect_range_error("1,,2", 3, "expected a shard index");
    expect_range_error("1,x", 3, "not 'x'");
    expect_range_error("1 2", 3, "expected ','");
    expect_range_error("1,", 3, "after ','");
    expect_range_error("-1", 1, "expected a shard index");
    expect_range_error("3,99999999", 3, "not below");
    expect_range_error("0-", 3, "at the end");
}

static const char *const good_plan = "# a plan\n"
                                     "format = 1\n"
                                     "dataset = \"0123456789abcdef0123456789abcdef\"\n"
                                     "seed = 7\n"
                                     "tolerance = 0.05\n"
                                     "ranks = [0, 0, 1, 1]\n"
                                     "\n"
                                     "[[node]]\n"
                                     "name = \"n1\"\n"
                                     "holds = \"0-99,150,160-170\"\n"
                                     "[[node]]\n"
                                     "name = \"n2\"\n"
                                     "holds = \"\"\n";

static struct shard_planfile *read_ok(const char *text)
{
    struct shard_planfile *pf = NULL;

    write_file(path, text);
    cr_assert_eq(shard_planfile_read(path, &pf, &err), 0, "%s", err.msg);
    return pf;
}

Test(planfile, reads_every_field)
{
    struct shard_planfile *pf = read_ok(good_plan);

    cr_expect_str_eq(pf->dataset, "0123456789abcdef0123456789abcdef");
    cr_expect_eq(pf->seed, 7);
    cr_expect_eq(pf->tolerance, 0.05);
    cr_assert_eq(pf->nranks, 4);
    cr_expect_eq(pf->rank_node[0], 0);
    cr_expect_eq(pf->rank_node[3], 1);
    cr_assert_eq(pf->nnodes, 2);
    cr_expect_str_eq(pf->nodes[0].name, "n1");
    cr_assert_eq(pf->nodes[0].nholds, 100 + 1 + 11);
    cr_expect_eq(pf->nodes[0].holds[99], 99);
    cr_expect_eq(pf->nodes[0].holds[100], 150);
    cr_expect_eq(pf->nodes[0].holds[111], 170);
    cr_expect_str_eq(pf->nodes[1].name, "n2");
    cr_expect_eq(pf->nodes[1].nholds, 0);
    shard_planfile_free(pf);
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_not_null(f);
    cr_assert_eq(gs_buf_read_stream(&b, f), 0);
    fclose(f);
    cr_assert_eq(gs_buf_putc(&b, '\0'), 0);
    return gs_buf_detach(&b, NULL);
}

Test(planfile, a_written_plan_reads_back_the_same_and_formats_alike)
{
    uint32_t rank_node[] = {1, 0, 2};
    uint32_t h0[] = {0, 1, 2, 7}, h2[] = {3, 4, 5, 6, 9};
    struct shard_planfile_node nodes[] = {
        {"alpha", 4, h0}, {"beta \"quoted\" \\", 0, NULL}, {"gamma", 5, h2}};
    struct shard_planfile pf = {.dataset = "ffeeddccbbaa99887766554433221100",
                                .seed = UINT64_C(9223372036854775807),
                                .tolerance = 0.1,
                                .nranks = 3,
                                .rank_node = rank_node,
                                .nnodes = 3,
                                .nodes = nodes};
    struct shard_planfile *back = NULL;
    char path2[4300], *a, *b;

    cr_assert_eq(shard_planfile_write(path, &pf, &err), 0, "%s", err.msg);
    cr_assert_eq(shard_planfile_read(path, &back, &err), 0, "%s", err.msg);
    cr_expect_str_eq(back->dataset, pf.dataset);
    cr_expect_eq(back->seed, pf.seed);
    cr_expect_eq(back->tolerance, 0.1, "exactly");
    cr_assert_eq(back->nranks, 3);
    cr_expect_eq(memcmp(back->rank_node, rank_node, sizeof(rank_node)), 0);
    cr_assert_eq(back->nnodes, 3);
    for (int n = 0; n < 3; n++) {
        cr_expect_str_eq(back->nodes[n].name, nodes[n].name);
        cr_assert_eq(back->nodes[n].nholds, nodes[n].nholds);
        if (nodes[n].nholds > 0)
            cr_expect_eq(
                memcmp(back->nodes[n].holds, nodes[n].holds, nodes[n].nholds * sizeof(uint32_t)),
                0);
    }
    /* Canonical: the plan read back writes the same bytes. */
    snprintf(path2, sizeof(path2), "%s/again.toml", dir);
    cr_assert_eq(shard_planfile_write(path2, back, &err), 0, "%s", err.msg);
    a = slurp(path);
    b = slurp(path2);
    cr_expect_str_eq(a, b);
    cr_expect_not_null(strstr(a, "tolerance = 0.1\n"), "%s", a);
    cr_expect_not_null(strstr(a, "holds = \"0-2,7\"\n"), "%s", a);
    cr_expect_not_null(strstr(a, "holds = \"3-6,9\"\n"), "%s", a);
    cr_expect_not_null(strstr(a, "ranks = [1, 0, 2]\n"), "%s", a);
    free(a);
    free(b);
    shard_planfile_free(back);
}

Test(planfile, a_whole_tolerance_is_written_as_a_float)
{
    uint32_t rank_node[] = {0};
    struct shard_planfile_node nodes[] = {{"n", 0, NULL}};
    struct shard_planfile pf = {.dataset = "0123456789abcdef0123456789abcdef",
                                .nranks = 1,
                                .rank_node = rank_node,
                                .nnodes = 1,
                                .nodes = nodes};
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_eq(shard_planfile_format(&pf, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(gs_buf_putc(&b, '\0'), 0);
    cr_expect_not_null(strstr(b.data, "tolerance = 0.0\n"), "%s", b.data);
    gs_buf_release(&b);
}

Test(planfile, refuses_to_write_a_plan_it_would_not_read)
{
    uint32_t rank_node[] = {0, 2};
    uint32_t unsorted[] = {4, 1};
    struct shard_planfile_node nodes[] = {{"n1", 0, NULL}, {"n2", 0, NULL}};
    struct shard_planfile pf = {.dataset = "0123456789abcdef0123456789abcdef",
                                .nranks = 2,
                                .rank_node = rank_node,
                                .nnodes = 2,
                                .nodes = nodes};

    cr_expect_eq(shard_planfile_write(path, &pf, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "rank 1 on node 2 of 2"), "%s", err.msg);
    cr_expect_neq(access(path, F_OK), 0, "nothing written");
    rank_node[1] = 1;
    nodes[1] = (struct shard_planfile_node){"n2", 2, unsorted};
    cr_expect_eq(shard_planfile_write(path, &pf, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "node n2: holds must be strictly ascending"), "%s", err.msg);
    nodes[1] = (struct shard_planfile_node){"n1", 0, NULL};
    cr_expect_eq(shard_planfile_write(path, &pf, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "listed twice"), "%s", err.msg);
    nodes[1].name = "n2";
    memcpy(pf.dataset, "0123456789ABCDEF", 16);
    cr_expect_eq(shard_planfile_write(path, &pf, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "lowercase hex"), "%s", err.msg);
}

/* The plan text must be refused with "PATH:want". */
static void expect_read_error(const char *text, const char *want)
{
    struct shard_planfile *pf = (struct shard_planfile *)&err; /* untouched on failure */
    char full[4400];

    write_file(path, text);
    gs_error_clear(&err);
    cr_assert_eq(shard_planfile_read(path, &pf, &err), -EINVAL, "accepted: %s", text);
    snprintf(full, sizeof(full), "%s:%s", path, want);
    cr_expect_not_null(strstr(err.msg, full), "want '%s', got '%s'", full, err.msg);
}

/* good_plan with the line starting `from` replaced by `to` (to may hold several lines). */
static char *edit(const char *from, const char *to)
{
    const char *at = strstr(good_plan, from), *eol;
    struct gs_buf b = GS_BUF_INIT;

    cr_assert_not_null(at, "%s", from);
    eol = strchr(at, '\n') + 1;
    cr_assert_eq(gs_buf_append(&b, good_plan, (size_t)(at - good_plan)), 0);
    cr_assert_eq(gs_buf_append_str(&b, to), 0);
    cr_assert_eq(gs_buf_append_str(&b, eol), 0);
    cr_assert_eq(gs_buf_putc(&b, '\0'), 0);
    return gs_buf_detach(&b, NULL);
}

static void expect_edit_error(const char *from, const char *to, const char *want)
{
    char *text = edit(from, to);

    expect_read_error(text, want);
    free(text);
}

Test(planfile, reading_is_strict_and_names_the_place)
{
    expect_edit_error("seed", "seed = 7\nbogus = 1\n", "5:1: unknown key 'bogus'");
    expect_edit_error("seed", "", " no 'seed' key");
    expect_edit_error("format", "format = 2\n", "2:10: format must be 1");
    expect_edit_error("dataset", "dataset = \"0123456789ABCDEF0123456789abcdef\"\n",
                      "3:11: dataset must be 32 lowercase hex digits");
    expect_edit_error("seed", "seed = -1\n", "4:8: seed must be a non-negative integer");
    expect_edit_error("tolerance", "tolerance = -0.5\n", "5:13: tolerance must be");
    expect_edit_error("tolerance", "tolerance = \"wide\"\n", "5:13: tolerance must be");
    expect_edit_error("ranks", "ranks = [0, 2]\n", "6:13: rank 1: its node must be");
    expect_edit_error("ranks", "ranks = []\n", "6:9: ranks must be an array of 1");
    expect_edit_error("ranks", "ranks = 3\n", "6:9: ranks must be an array");
    expect_edit_error("holds = \"0-99", "holds = \"0-99,98\"\n", "10:15: holds: not ascending");
    expect_edit_error("holds = \"0-99", "holds = \"0-99,100x\"\n", "10:18: holds: expected ','");
    expect_edit_error("holds = \"0-99", "holds = [1, 2]\n", "10:9: holds must be a string");
    expect_edit_error("holds = \"0-99", "holds = \"\"\nsize = 3\n", "11:1: unknown key 'size'");
    expect_edit_error("name = \"n2\"", "name = \"n1\"\n", "12:8: node 'n1' is listed twice");
    expect_edit_error("name = \"n2\"", "", "11:1: node lacks 'name'");
    expect_edit_error("name = \"n1\"", "name = \"\"\n", "9:8: name must be a non-empty");
    expect_edit_error("format", "format = 1\nformat = 1\n", "3:1: duplicate key");
    expect_read_error("format = 1\ndataset = \"0123456789abcdef0123456789abcdef\"\nseed = 1\n"
                      "tolerance = 0.1\nranks = [0]\n",
                      " no [[node]]");
}

Test(planfile, a_missing_file_is_an_error_naming_it)
{
    struct shard_planfile *pf = NULL;

    cr_expect_eq(shard_planfile_read(path, &pf, &err), -ENOENT);
    cr_expect_not_null(strstr(err.msg, path), "%s", err.msg);
    cr_expect_null(pf);
}

Test(planfile, input_covers_the_train_shards_with_their_holders)
{
    struct shard_manifest *m;
    struct shard_planfile *pf;
    struct shard_planfile_input pi;
    const struct shard_plan_input *in;

    /* Train shards 0-2, val shard 3; 85 u32 tokens each. */
    ds_make(dir, 3, 1, 85);
    m = ds_load(dir);
    pf = read_ok("format = 1\ndataset = \"0123456789abcdef0123456789abcdef\"\nseed = 9\n"
                 "tolerance = 0.25\nranks = [1, 0, 1]\n"
                 "[[node]]\nname = \"a\"\nholds = \"0,3\"\n"
                 "[[node]]\nname = \"b\"\nholds = \"0-1\"\n");
    cr_assert_eq(shard_planfile_input(pf, m, &pi, &err), 0, "%s", err.msg);
    in = &pi.in;
    cr_assert_eq(in->nshards, 3, "val left out");
    for (uint32_t i = 0; i < 3; i++) {
        cr_expect_eq(pi.manifest_index[i], i);
        cr_expect_eq(in->shards[i].tokens, 85);
        cr_expect_eq(in->shards[i].bytes, 64 + 85 * 4);
    }
    cr_expect_eq(in->holder_off[0], 0);
    cr_assert_eq(in->holder_off[1], 2);
    cr_expect_eq(in->holders[0], 0);
    cr_expect_eq(in->holders[1], 1);
    cr_assert_eq(in->holder_off[2], 3);
    cr_expect_eq(in->holders[2], 1);
    cr_expect_eq(in->holder_off[3], 3, "shard 2: held by none");
    cr_expect_eq(in->nnodes, 2);
    cr_expect_eq(in->nranks, 3);
    cr_expect_eq(in->rank_node[0], 1);
    cr_expect_eq(in->seed, 9);
    cr_expect_eq(in->epoch, 0);
    cr_expect_eq(in->tolerance, 0.25);
    shard_planfile_input_release(&pi);
    shard_planfile_free(pf);
    shard_manifest_free(m);
}

Test(planfile, input_refuses_an_index_past_the_manifest)
{
    struct shard_manifest *m;
    struct shard_planfile *pf;
    struct shard_planfile_input pi = {0};

    ds_make(dir, 3, 1, 85);
    m = ds_load(dir);
    pf = read_ok("format = 1\ndataset = \"0123456789abcdef0123456789abcdef\"\nseed = 9\n"
                 "tolerance = 0.25\nranks = [0]\n"
                 "[[node]]\nname = \"a\"\nholds = \"0-4\"\n");
    cr_expect_eq(shard_planfile_input(pf, m, &pi, &err), -EINVAL);
    cr_expect_not_null(strstr(err.msg, "node a holds shard 4"), "%s", err.msg);
    cr_expect_not_null(strstr(err.msg, "lists 4 shards"), "%s", err.msg);
    cr_expect_null(pi.shards, "nothing filled");
    shard_planfile_free(pf);
    shard_manifest_free(m);
}
