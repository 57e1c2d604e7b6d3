/*
 * test_metrics.c: per-step records as JSON lines and human lines, eval records, and the
 * loss.svg chart (both series drawn, a NaN loss left out rather than breaking the chart).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer/metrics.h"

static char dir[] = "/tmp/metrics-test-XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[96];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(metrics, .init = setup, .fini = teardown);

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = calloc(1, 1 << 20);

    cr_assert_not_null(f, "%s", path);
    cr_assert_gt(fread(s, 1, (1 << 20) - 1, f), 0);
    fclose(f);
    return s;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;

    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

Test(metrics, records_lines_and_plot)
{
    char jsonl[96], svg[96], human[96];
    struct trn_metrics *m;
    FILE *out;
    char *s;

    snprintf(jsonl, sizeof(jsonl), "%s/metrics.jsonl", dir);
    snprintf(svg, sizeof(svg), "%s/loss.svg", dir);
    snprintf(human, sizeof(human), "%s/out.txt", dir);
    out = fopen(human, "w");
    cr_assert_eq(trn_metrics_new(jsonl, out, 2, &m), 0);
    for (uint64_t i = 0; i < 5; i++) {
        struct trn_step_record r = {
            .step = i,
            .steps = 5,
            .loss = i == 3 ? NAN : 5.0 - (double)i,
            .lr = 1e-3,
            .grad_norm = 0.5,
            .tokens = 2048,
            .step_ms = 100,
            .data_ms = 1,
            .fwd_ms = 30,
            .bwd_ms = 60,
            .optim_ms = 9,
            .flops = 1e10,
            .peak_flops = 2e11,
            .peak_mem_bytes = 1u << 30,
        };

        cr_assert_eq(trn_metrics_step(m, &r), 0);
    }
    cr_assert_eq(trn_metrics_eval(m, 4, 3.25), 0);
    cr_assert_eq(trn_metrics_plot(m, svg), 0);
    trn_metrics_free(m);
    fclose(out);

    s = slurp(jsonl);
    cr_assert_eq(count(s, "\n"), 6);
    cr_assert(strstr(s, "{\"kind\":\"train\",\"step\":0,\"loss\":5,") == s, "%s", s);
    cr_assert(strstr(s, "\"tokens_per_s\":20480,") != NULL, "%s", s);
    cr_assert(strstr(s, "\"mfu\":0.5,") != NULL, "1e10 FLOP in 0.1 s of 2e11/s: %s", s);
    cr_assert(strstr(s, "\"step\":3,\"loss\":null,") != NULL, "NaN is null: %s", s);
    cr_assert(strstr(s, "{\"kind\":\"eval\",\"step\":4,\"loss\":3.25}") != NULL, "%s", s);
    free(s);

    s = slurp(human);
    cr_assert_eq(count(s, "/5 | loss"), 3, "steps 1, 3 and the last: %s", s);
    cr_assert(strstr(s, "step      1/5 | loss 5.0000 | lr 1.00e-03 | norm 0.50 | 20,480 tok/s | "
                        "100 ms (data 1 fwd 30 bwd 60 opt 9 ckpt 0) | MFU 50.0% | mem 1.00 GiB") !=
                  NULL,
              "%s", s);
    cr_assert(strstr(s, "eval at step 5: loss 3.2500") != NULL, "%s", s);
    free(s);

    s = slurp(svg);
    cr_assert(strncmp(s, "<svg ", 5) == 0);
    cr_assert_eq(count(s, "<polyline"), 2, "train and eval");
    cr_assert(strstr(s, ">train</text>") != NULL && strstr(s, ">eval</text>") != NULL);
    cr_assert(strstr(s, "nan") == NULL && strstr(s, "inf") == NULL, "%s", s);
    cr_assert(strstr(s, "</svg>") != NULL);
    free(s);
}

/* The all-reduce's figures appear whenever gradients are all-reduced, also with one rank
 * (ddp.always), and never without data parallelism. */
Test(metrics, comm_figures_follow_data_parallelism_not_the_rank_count)
{
    char jsonl[96];
    struct trn_metrics *m;
    char *s;

    snprintf(jsonl, sizeof(jsonl), "%s/metrics.jsonl", dir);
    cr_assert_eq(trn_metrics_new(jsonl, NULL, 1, &m), 0);
    for (uint64_t i = 0; i < 2; i++) {
        struct trn_step_record r = {.step = i,
                                    .steps = 2,
                                    .loss = 1.0,
                                    .tokens = 100,
                                    .step_ms = 10,
                                    .ranks = 1,
                                    .data_parallel = i == 1,
                                    .comm_ms = 4,
                                    .exposed_ms = 1};

        cr_assert_eq(trn_metrics_step(m, &r), 0);
    }
    trn_metrics_free(m);
    s = slurp(jsonl);
    cr_assert_eq(count(s, "\"overlap\""), 1, "%s", s);
    cr_assert(strstr(s, "\"step\":0,") < strstr(s, "\"overlap\":0.75"), "%s", s);
    cr_assert(strstr(s, "\"comm_ms\":4,\"comm_exposed_ms\":1,\"overlap\":0.75") != NULL, "%s", s);
    free(s);
}

Test(metrics, an_unwritable_file_is_an_error)
{
    struct trn_metrics *m;

    cr_assert_lt(trn_metrics_new("/nonexistent/dir/m.jsonl", NULL, 1, &m), 0);
}
