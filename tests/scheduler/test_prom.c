/*
 * test_prom.c: the Prometheus text exposition writer (scheduler/prom.h): HELP and TYPE
 * lines, samples with and without labels, label values and HELP text escaped, integral
 * and fractional values, NaN and infinities, and sticky errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "scheduler/prom.h"

static struct gs_buf out;
static struct sched_prom p;

static void setup(void)
{
    gs_buf_init(&out);
    sched_prom_init(&p, &out);
}

static void teardown(void)
{
    gs_buf_release(&out);
}

TestSuite(prom, .init = setup, .fini = teardown);

Test(prom, writes_help_and_type_before_samples)
{
    sched_prom_family(&p, "gsched_node_gpus", "gauge", "GPUs of the node.");
    sched_prom_sample(&p, "gsched_node_gpus", 8, "node", "n1", NULL);
    cr_assert_eq(sched_prom_finish(&p), 0);
    cr_assert_str_eq(out.data, "# HELP gsched_node_gpus GPUs of the node.\n"
                               "# TYPE gsched_node_gpus gauge\n"
                               "gsched_node_gpus{node=\"n1\"} 8\n");
}

Test(prom, writes_no_braces_without_labels)
{
    sched_prom_sample(&p, "gsched_jobs_started_total", 42, NULL);
    cr_assert_str_eq(out.data, "gsched_jobs_started_total 42\n");
}

Test(prom, separates_several_labels_with_commas)
{
    sched_prom_sample(&p, "gsched_gpu_allocated", 1, "node", "n1", "gpu", "3", "job", "42", "user",
                      "alice", NULL);
    cr_assert_str_eq(out.data,
                     "gsched_gpu_allocated{node=\"n1\",gpu=\"3\",job=\"42\",user=\"alice\"} 1\n");
}

Test(prom, escapes_backslash_quote_and_newline_in_label_values)
{
    sched_prom_sample(&p, "m", 1, "v", "a\\b\"c\nd", NULL);
    cr_assert_str_eq(out.data, "m{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

Test(prom, escapes_backslash_and_newline_in_help_but_not_quotes)
{
    sched_prom_family(&p, "m", "counter", "say \"hi\"\\now\nthen");
    cr_assert_str_eq(out.data, "# HELP m say \"hi\"\\\\now\\nthen\n# TYPE m counter\n");
}

Test(prom, writes_an_empty_label_value)
{
    sched_prom_sample(&p, "m", 0, "partition", "", NULL);
    cr_assert_str_eq(out.data, "m{partition=\"\"} 0\n");
}

Test(prom, prints_integers_exactly_and_fractions_with_ten_digits)
{
    sched_prom_sample(&p, "a", -17, NULL);
    sched_prom_sample(&p, "b", 8589934592.0, NULL);
    sched_prom_sample(&p, "c", 0.000125, NULL);
    sched_prom_sample(&p, "d", 2.5, NULL);
    cr_assert_str_eq(out.data, "a -17\nb 8589934592\nc 0.000125\nd 2.5\n");
}

Test(prom, spells_nan_and_infinities_as_prometheus_does)
{
    sched_prom_sample(&p, "a", NAN, NULL);
    sched_prom_sample(&p, "b", INFINITY, NULL);
    sched_prom_sample(&p, "c", -INFINITY, NULL);
    cr_assert_str_eq(out.data, "a NaN\nb +Inf\nc -Inf\n");
}

Test(prom, keeps_the_first_error_and_writes_nothing_after_it)
{
    p.rc = -ENOMEM;
    sched_prom_family(&p, "m", "gauge", "help");
    sched_prom_sample(&p, "m", 1, NULL);
    cr_assert_eq(sched_prom_finish(&p), -ENOMEM);
    cr_assert_eq(out.len, 0);
}
