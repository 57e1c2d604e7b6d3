/*
 * test_tasks.c: the worker's task table on a private libuv loop: exits are reported with
 * their code and reason, cancel sends SIGTERM then SIGKILL after the grace period, time
 * limits end tasks, leftovers of a finished task are killed, and closing leaks nothing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "worker/tasks.h"

#define MAX_EXITS 8

static uv_loop_t loop;
static struct wrk_tasks *tasks;
static struct wrk_task_exit exits[MAX_EXITS];
static int nexits;
static char dir[64];
static char *env[] = {"PATH=/usr/bin:/bin", NULL};

static void on_exit_cb(struct wrk_tasks *t, const struct wrk_task_exit *ex, void *data)
{
    (void)t;
    (void)data;
    cr_assert_lt(nexits, MAX_EXITS);
    exits[nexits++] = *ex;
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-tasks-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(uv_loop_init(&loop), 0);
    nexits = 0;
    tasks = wrk_tasks_new(&loop, 300, on_exit_cb, NULL);
    cr_assert_not_null(tasks);
}

static void teardown(void)
{
    char cmd[128];

    wrk_tasks_close(tasks);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0, "handles leaked");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(tasks, .init = setup, .fini = teardown, .timeout = 30);

static void on_deadline(uv_timer_t *timer)
{
    *(bool *)timer->data = true;
}

/* Runs the loop until want exits were reported; fails after 10 s. */
static void run_until_exits(int want)
{
    uv_timer_t deadline;
    bool expired = false;

    uv_timer_init(&loop, &deadline);
    deadline.data = &expired;
    uv_timer_start(&deadline, on_deadline, 10000, 0);
    while (nexits < want && !expired)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    cr_assert_eq(nexits, want, "timed out waiting for %d exits", want);
}

static void start_sh(uint64_t job, uint32_t rank, const char *script, uint64_t limit_ms)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env, .workdir = dir};
    struct gs_error err;

    cr_assert_eq(wrk_tasks_start(tasks, job, rank, &spec, limit_ms, &err), 0, "%s", err.msg);
}

/* Polls (with a deadline) until path exists: the task says it is ready. */
static void wait_for_file(const char *name)
{
    char path[128];
    uint64_t deadline = gs_clock_mono_ms() + 10000;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    while (access(path, F_OK) != 0) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "task never created %s", name);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
}

Test(tasks, reports_exit_code_of_each_task)
{
    start_sh(7, 0, "exit 0", 0);
    start_sh(7, 1, "exit 5", 0);
    cr_assert_eq(wrk_tasks_count(tasks, 7), 2);
    cr_assert_eq(wrk_tasks_count(tasks, 8), 0);
    run_until_exits(2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(exits[i].job_id, 7);
        cr_assert_not(exits[i].signaled);
        cr_assert_eq(exits[i].exit_code, exits[i].rank == 0 ? 0 : 5);
        cr_assert_eq(exits[i].reason, WRK_END_NONE);
        cr_assert_geq(exits[i].end_ms, exits[i].start_ms);
    }
    cr_assert_eq(wrk_tasks_count(tasks, 0), 0);
}

Test(tasks, refuses_a_second_start_of_the_same_rank)
{
    char *argv[] = {"/bin/true", NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env};
    struct gs_error err;

    start_sh(1, 0, "sleep 100", 0);
    cr_assert_eq(wrk_tasks_start(tasks, 1, 0, &spec, 0, &err), -EEXIST);
    cr_assert_eq(wrk_tasks_kill(tasks, 1, WRK_END_CANCELLED), 1);
    run_until_exits(1);
}

Test(tasks, cancel_sends_sigterm_first)
{
    start_sh(2, 0, "sleep 100", 0);
    cr_assert_eq(wrk_tasks_kill(tasks, 2, WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert(exits[0].signaled);
    cr_assert_eq(exits[0].term_signal, SIGTERM);
    cr_assert_eq(exits[0].reason, WRK_END_CANCELLED);
}

Test(tasks, task_ignoring_sigterm_gets_sigkill_after_grace)
{
    uint64_t t0;

    start_sh(3, 0, "trap '' TERM; touch ready; while :; do sleep 1; done", 0);
    wait_for_file("ready");
    t0 = gs_clock_mono_ms();
    wrk_tasks_kill(tasks, 3, WRK_END_CANCELLED);
    run_until_exits(1);
    cr_assert(exits[0].signaled);
    cr_assert_eq(exits[0].term_signal, SIGKILL);
    cr_assert_geq(gs_clock_mono_ms() - t0, 300, "SIGKILL came before the grace period");
}

Test(tasks, time_limit_ends_task_with_timeout_reason)
{
    start_sh(4, 0, "sleep 100", 150);
    run_until_exits(1);
    cr_assert(exits[0].signaled);
    cr_assert_eq(exits[0].term_signal, SIGTERM);
    cr_assert_eq(exits[0].reason, WRK_END_TIMEOUT);
}

static bool process_gone(pid_t pid)
{
    char path[64], stat[256];
    FILE *f;
    char *close_paren;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return true;
    stat[0] = '\0';
    if (fgets(stat, sizeof(stat), f) == NULL)
        stat[0] = '\0';
    fclose(f);
    close_paren = strrchr(stat, ')');
    return close_paren == NULL || close_paren[2] == 'Z'; /* a zombie waiting for init */
}

Test(tasks, leftovers_of_a_finished_task_are_killed)
{
    char path[128];
    FILE *f;
    int leftover = 0;
    uint64_t deadline;

    start_sh(5, 0, "sleep 100 & echo $! > leftover.pid; exit 0", 0);
    run_until_exits(1);
    snprintf(path, sizeof(path), "%s/leftover.pid", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%d", &leftover), 1);
    fclose(f);
    deadline = gs_clock_mono_ms() + 10000;
    while (!process_gone(leftover) && gs_clock_mono_ms() < deadline)
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    cr_assert(process_gone(leftover), "background process %d of a finished task survived",
              leftover);
}

Test(tasks, signal_reaches_only_the_named_job)
{
    start_sh(6, 0, "trap 'exit 42' USR1; touch ready6; while :; do sleep 1; done", 0);
    start_sh(9, 0, "sleep 100", 0);
    wait_for_file("ready6");
    cr_assert_eq(wrk_tasks_signal(tasks, 6, SIGUSR1), 1);
    run_until_exits(1);
    cr_assert_eq(exits[0].job_id, 6);
    cr_assert_eq(exits[0].exit_code, 42);
    cr_assert_eq(wrk_tasks_count(tasks, 9), 1);
}

Test(tasks, close_kills_running_tasks_and_frees_everything)
{
    start_sh(10, 0, "sleep 100", 0);
    start_sh(10, 1, "sleep 100", 5000);
    cr_assert_eq(wrk_tasks_count(tasks, 0), 2);
    /* teardown closes with both running and asserts the loop closes clean */
}
