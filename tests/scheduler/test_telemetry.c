/*
 * test_telemetry.c: gschedd's per-GPU telemetry (telemetry.h) and a job's usage (usage.h):
 * the idle flag raised after the window and cleared by work or a new holder, the rings in
 * order and bounded, the minute buckets, and the usage sums, CPU time across restarts and
 * the stored form.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/telemetry.h"
#include "scheduler/usage.h"

static struct sched_tel_figures fig(uint32_t util, uint32_t util_max, uint32_t mem)
{
    struct sched_tel_figures f;

    memset(&f, 0, sizeof(f));
    f.samples = 2;
    f.s.util_pct = (uint8_t)util;
    f.s.util_max_pct = (uint8_t)util_max;
    f.s.mem_used_mib = mem;
    f.s.mem_used_max_mib = mem;
    return f;
}

Test(telemetry, allocated_gpu_is_flagged_after_the_window_and_cleared_by_work)
{
    struct sched_tel *t = sched_tel_new(5, 10000);
    struct sched_tel_node *n = sched_tel_node(t, 3, 2);
    struct sched_tel_figures idle = fig(1, 4, 100), busy = fig(50, 90, 100);

    cr_assert_not_null(n);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 1000), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 10999), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 11000), SCHED_TEL_IDLE_FLAGGED);
    cr_assert(n->gpus[0].flagged);
    cr_assert_eq(n->gpus[0].below_since_ms, 1000);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 13000), SCHED_TEL_IDLE_SAME,
                 "flagged once");
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &busy, 7, 15000), SCHED_TEL_IDLE_CLEARED);
    cr_assert_not(n->gpus[0].flagged);
    cr_assert_eq(n->gpus[0].below_since_ms, 0);
    /* A short spike over the threshold restarts the run. */
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 16000), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 25999), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 7, 26000), SCHED_TEL_IDLE_FLAGGED);
    sched_tel_free(t);
}

Test(telemetry, the_peak_sample_decides_and_free_gpus_are_never_flagged)
{
    struct sched_tel *t = sched_tel_new(5, 0);
    struct sched_tel_node *n = sched_tel_node(t, 0, 1);
    struct sched_tel_figures spiky = fig(1, 40, 0), quiet = fig(0, 0, 0);

    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &spiky, 9, 1000), SCHED_TEL_IDLE_SAME,
                 "a mean under the threshold with a busy sample is not idle");
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &quiet, 0, 2000), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &quiet, 0, 900000), SCHED_TEL_IDLE_SAME);
    cr_assert_not(n->gpus[0].flagged);
    sched_tel_free(t);
}

Test(telemetry, a_new_holder_starts_afresh_and_empty_summaries_change_nothing)
{
    struct sched_tel *t = sched_tel_new(5, 1000);
    struct sched_tel_node *n = sched_tel_node(t, 0, 1);
    struct sched_tel_figures idle = fig(0, 0, 0), none;

    memset(&none, 0, sizeof(none));
    sched_tel_record(t, &n->gpus[0], &idle, 1, 1000);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 1, 2000), SCHED_TEL_IDLE_FLAGGED);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 2, 2500), SCHED_TEL_IDLE_SAME,
                 "job 2's run under the threshold starts now");
    cr_assert_not(n->gpus[0].flagged);
    cr_assert_eq(n->gpus[0].owner, 2);
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &none, 2, 9000), SCHED_TEL_IDLE_SAME);
    cr_assert_eq(n->gpus[0].fine_n, 3, "a summary without samples is not kept");
    cr_assert_eq(sched_tel_record(t, &n->gpus[0], &idle, 2, 9500), SCHED_TEL_IDLE_FLAGGED);
    sched_tel_free(t);
}

Test(telemetry, rings_keep_the_latest_in_order_and_minutes_aggregate)
{
    struct sched_tel *t = sched_tel_new(5, 60000);
    struct sched_tel_node *n = sched_tel_node(t, 1, 1);
    struct sched_tel_sample out[SCHED_TEL_FINE];
    struct sched_tel_bucket b[SCHED_TEL_COARSE];
    size_t k;

    for (uint32_t i = 0; i < 200; i++) {
        struct sched_tel_figures f = fig(i % 100, i % 100, i);

        sched_tel_record(t, &n->gpus[0], &f, 0, 60000 * 10 + (uint64_t)i * 2000);
    }
    k = sched_tel_fine(&n->gpus[0], 0, out, SCHED_TEL_FINE);
    cr_assert_eq(k, SCHED_TEL_FINE);
    cr_assert_eq(out[0].mem_used_mib, 200 - SCHED_TEL_FINE);
    cr_assert_eq(out[k - 1].mem_used_mib, 199);
    for (size_t i = 1; i < k; i++)
        cr_assert_gt(out[i].at_ms, out[i - 1].at_ms);
    k = sched_tel_fine(&n->gpus[0], out[k - 1].at_ms, out, SCHED_TEL_FINE);
    cr_assert_eq(k, 1, "since filters");
    /* 200 summaries 2 s apart from minute 10: 30 per minute, minutes 10-16. */
    k = sched_tel_coarse(&n->gpus[0], 0, b, SCHED_TEL_COARSE);
    cr_assert_eq(k, 7);
    cr_assert_eq(b[0].minute, 10);
    cr_assert_eq(b[0].count, 30);
    cr_assert_eq(b[0].util_sum, 29 * 30 / 2);
    cr_assert_eq(b[0].util_max_pct, 29);
    cr_assert_eq(b[6].count, 20);
    cr_assert_eq(b[6].mem_max_mib, 199);
    cr_assert_null(sched_tel_node_get(t, 0), "node 0 never reported");
    cr_assert_not_null(sched_tel_node_get(t, 1));
    sched_tel_free(t);
}

Test(usage, sums_gpu_time_idle_time_and_gpus_used)
{
    struct sched_job_usage u;

    memset(&u, 0, sizeof(u));
    cr_assert_eq(sched_usage_gpu(&u, 0, 2, 3, 80, 95, 1000, 2000, false), 0);
    cr_assert_eq(sched_usage_gpu(&u, 1, 2, 0, 1, 2, 500, 2000, true), 0);
    cr_assert_eq(sched_usage_gpu(&u, 0, 2, 3, 40, 60, 3000, 2000, false), 0);
    cr_assert_eq(u.gpu_alloc_ms, 6000);
    cr_assert_eq(u.gpu_idle_ms, 2000);
    cr_assert_float_eq(sched_usage_util_mean(&u), (80.0 + 1 + 40) / 3, 1e-9);
    cr_assert_eq(u.util_max_pct, 95);
    cr_assert_eq(u.mem_peak_mib, 3000);
    cr_assert_eq(sched_usage_gpus_used(&u), 1, "the idle GPU never worked");
    sched_usage_release(&u);
}

Test(usage, cpu_time_is_the_latest_per_task_and_survives_a_restart)
{
    struct sched_job_usage u;

    memset(&u, 0, sizeof(u));
    sched_usage_task(&u, 0, 0, 100, 10);
    sched_usage_task(&u, 0, 1, 50, 30);
    sched_usage_task(&u, 0, 0, 400, 20);
    sched_usage_task(&u, 1, 0, 70, 5);
    cr_assert_eq(sched_usage_cpu_ms(&u), 520);
    sched_usage_task(&u, 0, 0, 10, 5); /* a new process for rank 0 */
    cr_assert_eq(sched_usage_cpu_ms(&u), 400 + 10 + 50 + 70);
    cr_assert_eq(u.rss_peak_mib, 30);
    sched_usage_release(&u);
}

/* A worker naming ever new ranks for a job cannot grow its table without bound. */
Test(usage, the_task_table_is_bounded)
{
    struct sched_job_usage u;

    memset(&u, 0, sizeof(u));
    for (uint32_t r = 0; r < SCHED_USAGE_MAX_TASKS; r++)
        cr_assert_eq(sched_usage_task(&u, 0, r, 1, 1), 0);
    cr_assert_eq(sched_usage_task(&u, 1, 0, 1, 99), -E2BIG);
    cr_assert_eq(u.ntasks, SCHED_USAGE_MAX_TASKS);
    cr_assert_eq(u.rss_peak_mib, 99, "its memory peak still counts");
    cr_assert_eq(sched_usage_task(&u, 0, 7, 5, 1), 0, "known pairs still update");
    cr_assert_eq(sched_usage_cpu_ms(&u), SCHED_USAGE_MAX_TASKS + 4);
    sched_usage_release(&u);
}

Test(usage, round_trips_through_its_stored_form)
{
    struct sched_job_usage u, back;
    void *blob;
    size_t len;

    memset(&u, 0, sizeof(u));
    cr_assert_eq(sched_usage_pack(&u, &blob, &len), 0);
    cr_assert_null(blob, "nothing recorded, nothing stored");
    sched_usage_gpu(&u, 0, 1, 0, 60, 70, 800, 4000, false);
    sched_usage_gpu(&u, 0, 1, 1, 0, 0, 10, 4000, true);
    sched_usage_task(&u, 0, 0, 1234, 64);
    u.idle_flags = 2;
    cr_assert_eq(sched_usage_pack(&u, &blob, &len), 0);
    cr_assert_not_null(blob);
    cr_assert_eq(sched_usage_from_packed(&back, blob, len), 0);
    cr_assert_eq(back.gpu_alloc_ms, 8000);
    cr_assert_eq(back.gpu_idle_ms, 4000);
    cr_assert_float_eq(sched_usage_util_mean(&back), 30.0, 1e-9);
    cr_assert_eq(sched_usage_gpus_used(&back), 1);
    cr_assert_eq(sched_usage_cpu_ms(&back), 1234);
    cr_assert_eq(back.mem_peak_mib, 800);
    cr_assert_eq(back.idle_flags, 2);
    cr_assert_eq(sched_usage_from_packed(&back, "\xff\xff\xff", 3), -EINVAL);
    free(blob);
    sched_usage_release(&u);
    sched_usage_release(&back);
}
