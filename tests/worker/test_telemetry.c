/*
 * test_telemetry.c: the worker's telemetry on a private libuv loop, with the fake NVML
 * (tests/common/fake_nvml.c) scripted per test. Samples are taken on demand
 * (wrk_telemetry_sample_now, interval 0) so that each sees the script written just before;
 * one test samples on the timer instead. Checked: the per-heartbeat summary (means, maxima,
 * OR, latest figures, Xids) and its reset, every GPU listed with those NVML does not know
 * marked, GPU processes mapped to the job whose task session they are in, a task session's
 * CPU time and RSS, CPU and memory figures without NVML, and a clean close (loop closes
 * with nothing left) even with a sample in flight.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "telemetry_helpers.h"
#include "worker/telemetry.h"

#define NO_LIBRARY "/nonexistent/libnvidia-ml.so.1"

static uv_loop_t loop;
static struct wrk_telemetry *t;
static bool closed;
static pid_t child;

/* A heartbeat with at most one running task. */
struct beat {
    Gs__Heartbeat hb;
    Gs__TaskRef task;
    Gs__TaskRef *tasks[1];
};

static void setup(void)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    closed = false;
    child = 0;
}

static void teardown(void)
{
    if (child > 0)
        child_stop(child);
    script_remove();
}

TestSuite(telemetry, .init = setup, .fini = teardown, .timeout = 60);

static void new_telemetry(int ngpus, const char *library, uint64_t interval_ms)
{
    static const char *const synthetic[] = {"", "", "", ""};
    struct wrk_telemetry_opts opts = {
        .interval_ms = interval_ms, .ngpus = ngpus, .bus_ids = synthetic, .nvml_library = library};

    t = wrk_telemetry_new(&loop, &opts);
    cr_assert_not_null(t);
}

static void on_closed(void *data)
{
    *(bool *)data = true;
}

static void close_telemetry(void)
{
    wrk_telemetry_close(t, on_closed, &closed);
    t = NULL;
    cr_assert_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    cr_assert(closed);
    cr_assert_eq(uv_loop_close(&loop), 0);
}

static void run_until_samples(unsigned n)
{
    uint64_t deadline = gs_clock_mono_ms() + 10000;

    while (wrk_telemetry_samples(t) < n) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "%u samples of %u", wrk_telemetry_samples(t), n);
        uv_run(&loop, UV_RUN_ONCE);
    }
}

static void sample_once(void)
{
    unsigned want = wrk_telemetry_samples(t) + 1;

    cr_assert_eq(wrk_telemetry_sample_now(t), 0);
    run_until_samples(want);
}

/* Fills b's heartbeat, with the task (pid, job) running when pid > 0. */
static void fill(struct beat *b, pid_t pid, uint64_t job)
{
    gs__heartbeat__init(&b->hb);
    if (pid > 0) {
        gs__task_ref__init(&b->task);
        b->task.pid = pid;
        b->task.job_id = job;
        b->tasks[0] = &b->task;
        b->hb.running = b->tasks;
        b->hb.n_running = 1;
    }
    cr_assert_eq(wrk_telemetry_fill(t, &b->hb), 0);
}

Test(telemetry, summarises_the_samples_since_the_last_heartbeat)
{
    struct beat b;
    const Gs__GpuStats *g;

    script_create("count 1\ngpu 0 util=20 mem_util=10 mem_used_mib=1000 mem_total_mib=8000 "
                  "power_w=100 temp_c=50 sm_clock_mhz=1000 throttle=0x1 ecc=0 xid=31\n");
    new_telemetry(1, NULL, 0);
    cr_assert(wrk_telemetry_nvml(t));
    sample_once();
    script_write("count 1\ngpu 0 util=60 mem_util=30 mem_used_mib=3000 mem_total_mib=8000 "
                 "power_w=300 temp_c=70 sm_clock_mhz=1500 throttle=0x4 ecc=2\n");
    sample_once();
    script_write("count 1\ngpu 0 util=40 mem_util=20 mem_used_mib=2000 mem_total_mib=8000 "
                 "temp_c=60 sm_clock_mhz=1200 ecc=2\n");
    sample_once();
    fill(&b, 0, 0);
    cr_assert(b.hb.nvml);
    cr_assert_eq(b.hb.n_gpus, 1);
    g = b.hb.gpus[0];
    cr_assert_eq(g->index, 0);
    cr_assert_eq(g->samples, 3);
    cr_assert_eq(g->utilization_pct, 40);
    cr_assert_eq(g->utilization_max_pct, 60);
    cr_assert_eq(g->memory_util_pct, 20);
    cr_assert_eq(g->power_w, 200, "the mean of the samples that knew it");
    cr_assert_eq(g->memory_used_mib, 2000);
    cr_assert_eq(g->memory_used_max_mib, 3000);
    cr_assert_eq(g->memory_total_mib, 8000);
    cr_assert_eq(g->temperature_c, 60);
    cr_assert_eq(g->sm_clock_mhz, 1200);
    cr_assert_eq(g->throttle_reasons, 0x5);
    cr_assert_eq(g->ecc_uncorrected, 2);
    cr_assert_eq(g->xid_count, 1);
    cr_assert_eq(g->xid_last, 31);

    fill(&b, 0, 0); /* no sample since: the same figures, the Xid not counted again */
    g = b.hb.gpus[0];
    cr_assert_eq(g->samples, 3);
    cr_assert_eq(g->utilization_max_pct, 60);
    cr_assert_eq(g->xid_count, 0);
    cr_assert_eq(g->xid_last, 31);

    sample_once(); /* a new summary of the third script's figures only */
    fill(&b, 0, 0);
    g = b.hb.gpus[0];
    cr_assert_eq(g->samples, 1);
    cr_assert_eq(g->utilization_pct, 40);
    cr_assert_eq(g->utilization_max_pct, 40);
    cr_assert_eq(g->power_w, 0, "unknown");
    cr_assert_eq(g->memory_used_max_mib, 2000);
    cr_assert_eq(g->throttle_reasons, 0);
    cr_assert_eq(g->xid_count, 0);
    cr_assert_eq(g->xid_last, 31, "the latest since the worker started");
    close_telemetry();
}

Test(telemetry, lists_every_gpu_and_marks_those_nvml_does_not_know)
{
    struct beat b;

    script_create("count 2\ngpu 0 util=7 temp_c=33\n");
    new_telemetry(3, NULL, 0);
    cr_assert_eq(wrk_telemetry_nvml_gpus(t), 2);
    sample_once();
    fill(&b, 0, 0);
    cr_assert_eq(b.hb.n_gpus, 3);
    for (uint32_t i = 0; i < 3; i++)
        cr_assert_eq(b.hb.gpus[i]->index, i);
    cr_assert_eq(b.hb.gpus[0]->samples, 1);
    cr_assert_eq(b.hb.gpus[0]->temperature_c, 33);
    cr_assert_eq(b.hb.gpus[1]->samples, 1, "found, with nothing to tell");
    cr_assert_eq(b.hb.gpus[1]->temperature_c, -1);
    cr_assert_eq(b.hb.gpus[1]->n_processes, 0);
    cr_assert_eq(b.hb.gpus[2]->samples, 0, "not found");
    cr_assert_eq(b.hb.gpus[2]->temperature_c, -1);
    close_telemetry();
}

Test(telemetry, maps_gpu_processes_to_the_job_of_their_task_session)
{
    const Gs__GpuStats *g;
    struct beat b;
    char script[256];

    child = child_start(false, 1);
    snprintf(script, sizeof(script), "count 1\ngpu 0 util=5 pids=%d:100,%d:7\n", (int)child,
             (int)getpid());
    script_create(script);
    new_telemetry(1, NULL, 0);
    sample_once();
    fill(&b, child, 42);
    g = b.hb.gpus[0];
    cr_assert_eq(g->n_processes, 2);
    cr_assert_eq(g->processes[0]->pid, (uint32_t)child);
    cr_assert_eq(g->processes[0]->memory_mib, 100);
    cr_assert_eq(g->processes[0]->job_id, 42);
    cr_assert_eq(g->processes[1]->pid, (uint32_t)getpid());
    cr_assert_eq(g->processes[1]->job_id, 0, "not in a task's session");
    close_telemetry();
}

Test(telemetry, reports_a_task_sessions_cpu_time_and_memory)
{
    uint64_t deadline;
    struct beat b;

    child = child_start(true, 16);
    new_telemetry(0, NULL, 0);
    deadline = gs_clock_mono_ms() + 20000;
    for (;;) {
        sample_once();
        fill(&b, child, 7);
        if (b.task.cpu_time_ms > 0 && b.task.rss_mib >= 16)
            break;
        cr_assert_lt(gs_clock_mono_ms(), deadline, "cpu_time_ms=%llu rss_mib=%llu",
                     (unsigned long long)b.task.cpu_time_ms, (unsigned long long)b.task.rss_mib);
        poll_pause();
    }
    cr_assert_eq(b.hb.n_gpus, 0);
    close_telemetry();
}

Test(telemetry, reports_cpu_and_memory_without_nvml)
{
    struct beat b;

    new_telemetry(2, NO_LIBRARY, 0);
    cr_assert_not(wrk_telemetry_nvml(t));
    cr_assert_eq(wrk_telemetry_nvml_gpus(t), 0);
    fill(&b, 0, 0);
    cr_assert_eq(b.hb.memory_total_mib, 0, "nothing before the first sample");
    sample_once();
    sample_once();
    fill(&b, 0, 0);
    cr_assert_not(b.hb.nvml);
    cr_assert_eq(b.hb.n_gpus, 0);
    cr_assert_gt(b.hb.memory_total_mib, 0);
    cr_assert_leq(b.hb.memory_used_mib, b.hb.memory_total_mib);
    cr_assert_leq(b.hb.cpu_util_pct, 100);
    close_telemetry();
}

Test(telemetry, samples_on_its_timer_and_closes_cleanly)
{
    script_create("count 1\ngpu 0 util=50\n");
    new_telemetry(1, NULL, 5);
    run_until_samples(3);
    close_telemetry();
}

Test(telemetry, takes_one_sample_at_a_time_and_closes_with_one_in_flight)
{
    new_telemetry(0, NULL, 0);
    cr_assert_eq(wrk_telemetry_sample_now(t), 0);
    cr_assert_eq(wrk_telemetry_sample_now(t), -EBUSY);
    close_telemetry();
}
