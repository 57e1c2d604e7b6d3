/*
 * test_procstat.c: the node and per-session figures the telemetry reads from /proc: CPU
 * ticks and their busy share, memory and load, a process's session, and a child in its
 * own session that spins and holds memory showing up with CPU time and RSS of its own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "telemetry_helpers.h"
#include "worker/procstat.h"

TestSuite(procstat, .timeout = 30);

Test(procstat, reads_the_node_cpu_memory_and_load)
{
    struct wrk_procstat_cpu cpu;
    uint64_t used = 0, total = 0;
    uint32_t load = 0;

    cr_assert_eq(wrk_procstat_read_cpu(&cpu), 0);
    cr_assert_gt(cpu.total, 0);
    cr_assert_leq(cpu.busy, cpu.total);
    cr_assert_eq(wrk_procstat_read_memory(&used, &total), 0);
    cr_assert_gt(total, 0);
    cr_assert_leq(used, total);
    cr_assert_eq(wrk_procstat_read_loadavg(&load), 0);
}

Test(procstat, busy_share_is_of_the_ticks_between_two_readings)
{
    struct wrk_procstat_cpu a = {.busy = 100, .total = 1000}, b = {.busy = 150, .total = 1100};
    struct wrk_procstat_cpu all = {.busy = 200, .total = 1100};

    cr_assert_eq(wrk_procstat_cpu_pct(&a, &b), 50);
    cr_assert_eq(wrk_procstat_cpu_pct(&a, &all), 100);
    cr_assert_eq(wrk_procstat_cpu_pct(&a, &a), 0, "no tick passed");
    cr_assert_eq(wrk_procstat_cpu_pct(&b, &a), 0, "readings out of order");
}

Test(procstat, finds_the_session_of_a_process)
{
    pid_t session = 0;

    cr_assert_eq(wrk_procstat_session_of(getpid(), &session), 0);
    cr_assert_eq(session, getsid(0));
    cr_assert_eq(wrk_procstat_session_of(2147483647, &session), -ENOENT);
}

Test(procstat, counts_cpu_time_and_memory_by_session)
{
    pid_t child = child_start(true, 16);
    time_t deadline = time(NULL) + 20;
    const struct wrk_session_usage *u = NULL;
    struct wrk_session_usage *usage = NULL;
    size_t n = 0;

    for (;;) {
        free(usage);
        cr_assert_eq(wrk_procstat_sessions(&usage, &n), 0);
        for (size_t i = 1; i < n; i++)
            cr_assert_lt(usage[i - 1].session, usage[i].session, "sorted, one entry each");
        u = wrk_procstat_find(usage, n, child);
        if (u != NULL && u->cpu_ms > 0 && u->rss_mib >= 16)
            break;
        cr_assert_lt(time(NULL), deadline, "session %d: cpu_ms=%llu rss_mib=%llu", (int)child,
                     u != NULL ? (unsigned long long)u->cpu_ms : 0ull,
                     u != NULL ? (unsigned long long)u->rss_mib : 0ull);
        poll_pause();
    }
    cr_assert_not_null(wrk_procstat_find(usage, n, getsid(0)), "the test's own session");
    cr_assert_null(wrk_procstat_find(usage, n, 0), "kernel threads are left out");
    free(usage);
    child_stop(child);
}
