/*
 * test_report.c: sreport cluster utilization's arithmetic (scheduler/report.c): what nodes
 * report over the time they were known, what allocations count, down time less what jobs
 * still held on a down node, planned down time (a MAINT reservation's, down or not) less
 * what jobs held there, idle as the rest, and the window's edges.
 */
#include <criterion/criterion.h>

#include "scheduler/report.h"

/* An allocation: node, start, end (0: open), cores, GPUs. */
#define AL(node, start, end, cores, gpus)                                                          \
    {                                                                                              \
        node, start, end, cores, gpus, NULL, NULL, 0                                               \
    }

static struct sched_report_usage u[SCHED_REPORT_NTRES];
static uint64_t since;

static void run(struct sched_report_state *st, size_t nst, struct sched_report_alloc *al,
                size_t nal, uint64_t start, uint64_t end)
{
    sched_report_compute(st, nst, al, nal, start, end, u, &since);
}

static void expect_cpu(uint64_t allocated, uint64_t down, uint64_t idle, uint64_t reported)
{
    const struct sched_report_usage *c = &u[SCHED_REPORT_CPU];

    cr_expect_eq(c->allocated, allocated, "allocated %llu, want %llu",
                 (unsigned long long)c->allocated, (unsigned long long)allocated);
    cr_expect_eq(c->down, down, "down %llu, want %llu", (unsigned long long)c->down,
                 (unsigned long long)down);
    cr_expect_eq(c->idle, idle, "idle %llu, want %llu", (unsigned long long)c->idle,
                 (unsigned long long)idle);
    cr_expect_eq(c->reported, reported, "reported %llu, want %llu", (unsigned long long)c->reported,
                 (unsigned long long)reported);
}

Test(report, a_node_up_all_along_is_idle_but_for_its_jobs)
{
    struct sched_report_state st[] = {{"n1", 0, true, false, 4, 1}};
    struct sched_report_alloc al[] = {AL("n1", 10, 60, 2, 1)};

    run(st, 1, NULL, 0, 0, 100);
    expect_cpu(0, 0, 400, 400);
    cr_expect_eq(u[SCHED_REPORT_GPU].reported, 100);
    cr_expect_eq(since, 0);
    run(st, 1, al, 1, 0, 100);
    expect_cpu(100, 0, 300, 400);
    cr_expect_eq(u[SCHED_REPORT_GPU].allocated, 50);
    cr_expect_eq(u[SCHED_REPORT_GPU].idle, 50);
}

Test(report, down_time_less_what_jobs_held_there)
{
    /* Up from 0, drained at 50 (its job runs on to 60), back at 80. */
    struct sched_report_state st[] = {{"n1", 80, true, false, 4, 0},
                                      {"n1", 0, true, false, 4, 0},
                                      {"n1", 50, false, false, 4, 0}};
    struct sched_report_alloc al[] = {AL("n1", 10, 60, 2, 0)};

    run(st, 3, al, 1, 0, 100);
    expect_cpu(100, 4 * 30 - 2 * 10, 400 - 100 - 100, 400);
}

/* Up from 0; in a MAINT reservation from 20 (a job on it to 30), drained inside it at 40,
 * out of the reservation at 60 still drained, back up at 80. */
Test(report, maintenance_is_planned_down_whether_the_node_is_down_or_not)
{
    struct sched_report_state st[] = {{"n1", 0, true, false, 4, 2},
                                      {"n1", 20, true, true, 4, 2},
                                      {"n1", 40, false, true, 4, 2},
                                      {"n1", 60, false, false, 4, 2},
                                      {"n1", 80, true, false, 4, 2}};
    struct sched_report_alloc al[] = {AL("n1", 10, 30, 1, 1)};

    run(st, 5, al, 1, 0, 100);
    /* planned down 4 x 40 (20-60) less 1 x 10 held (20-30); down 4 x 20 (60-80) */
    expect_cpu(20, 80, 400 - 20 - 80 - 150, 400);
    cr_expect_eq(u[SCHED_REPORT_CPU].plnd_down, 150);
    cr_expect_eq(u[SCHED_REPORT_GPU].plnd_down, 2 * 40 - 1 * 10);
    cr_expect_eq(u[SCHED_REPORT_GPU].down, 2 * 20);
    cr_expect_eq(u[SCHED_REPORT_GPU].idle, 200 - 20 - 70 - 40);
    run(st, 5, al, 1, 50, 70); /* the window cuts maintenance too */
    cr_expect_eq(u[SCHED_REPORT_CPU].plnd_down, 4 * 10);
    cr_expect_eq(u[SCHED_REPORT_CPU].down, 4 * 10);
}

Test(report, the_window_cuts_every_interval)
{
    struct sched_report_state st[] = {{"n1", 0, true, false, 4, 0}, {"n1", 50, false, false, 4, 0}};
    struct sched_report_alloc al[] = {AL("n1", 10, 60, 2, 0)};

    run(st, 2, al, 1, 40, 70);
    /* Reported 4 x 30; allocated 2 x 20 (40-60); down 4 x 20 (50-70) less 2 x 10 (50-60). */
    expect_cpu(40, 60, 120 - 40 - 60, 120);
}

Test(report, nothing_before_a_node_was_known)
{
    struct sched_report_state st[] = {{"n1", 30, true, false, 4, 0}};
    struct sched_report_alloc al[] = {AL("n1", 10, 60, 2, 0), AL("n9", 10, 60, 8, 0)};

    run(st, 1, al, 2, 0, 100);
    /* From 30 only; n9 has no history at all, so its job counts nowhere. */
    expect_cpu(2 * 30, 0, 4 * 70 - 60, 4 * 70);
    cr_expect_eq(since, 30);
    cr_expect_str_eq(al[0].node, "n1", "sorted by node");
    cr_expect_eq(al[0].counted, 30, "what counts of it: from n1's first row");
    cr_expect_eq(al[1].counted, 0, "n9's counts nowhere");
}

Test(report, an_open_allocation_runs_to_the_windows_end)
{
    struct sched_report_state st[] = {{"n2", 0, true, false, 8, 2}, {"n1", 5, true, false, 4, 0}};
    struct sched_report_alloc al[] = {AL("n2", 90, 0, 8, 2), AL("n1", 20, 30, 4, 0)};

    run(st, 2, al, 2, 0, 100);
    expect_cpu(8 * 10 + 4 * 10, 0, 8 * 100 + 4 * 95 - 120, 8 * 100 + 4 * 95);
    cr_expect_eq(u[SCHED_REPORT_GPU].allocated, 2 * 10);
    cr_expect_eq(since, 0);
}

Test(report, a_size_change_counts_from_its_row)
{
    struct sched_report_state st[] = {{"n1", 0, true, false, 4, 0}, {"n1", 50, true, false, 8, 0}};

    run(st, 2, NULL, 0, 0, 100);
    expect_cpu(0, 0, 4 * 50 + 8 * 50, 4 * 50 + 8 * 50);
}

Test(report, an_empty_history_reports_nothing)
{
    run(NULL, 0, NULL, 0, 0, 100);
    expect_cpu(0, 0, 0, 0);
    cr_expect_eq(since, 0);
}
