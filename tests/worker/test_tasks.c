/*
 * test_tasks.c: the worker's task table on a private libuv loop: exits are reported with
 * their code and reason, cancel sends SIGTERM then SIGKILL after the grace period, time
 * limits end tasks, leftovers of a finished task are killed, and closing leaks nothing.
 * Tasks are keyed (job, step, rank): the same rank runs in two steps at once and each is
 * signalled apart; captured output arrives, in order, before the exit, and what a pipe still
 * holds when the drain time runs out is kept; input reaches a
 * task's stdin (or its pseudo-terminal) and is bounded; the --signal warning
 * comes before the time limit, to the group or to the main process only; a file handed over
 * is removed when the task ends. A new time limit (scontrol update on a running job) moves
 * the timers: past already, the task ends at once; longer, it runs on; 0, without one; from
 * the job's start when given; the warning moves with it; an ending task keeps its course.
 * A task whose child is stuck before its exec (as on a filesystem that hangs) holds only
 * itself: others start and end meanwhile, it goes on once unstuck, and a cancel ends it; a
 * step that fails before the exec comes with the exit.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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
static char launch_errors[MAX_EXITS][256]; /* each exit's launch_error, "" without one */
static char dir[64];
static char *env[] = {"PATH=/usr/bin:/bin", NULL};

/* Captured output, per (step, stream): its first bytes, how many in all, how often each
 * stream ended, and whether it had by the time of the exit. */
static char output[4][2][256];
static size_t output_len[4][2];
static int eofs[4][2], eofs_at_exit[4][2], chunks;

static void on_exit_cb(struct wrk_tasks *t, const struct wrk_task_exit *ex, void *data)
{
    (void)t;
    (void)data;
    cr_assert_lt(nexits, MAX_EXITS);
    if (ex->step < 4)
        memcpy(eofs_at_exit[ex->step], eofs[ex->step], sizeof(eofs[0]));
    snprintf(launch_errors[nexits], sizeof(launch_errors[0]), "%s",
             ex->launch_error != NULL ? ex->launch_error : "");
    exits[nexits] = *ex;
    exits[nexits++].launch_error = NULL; /* valid only during the callback */
}

static void on_output_cb(struct wrk_tasks *t, const struct wrk_task_id *id, enum wrk_stream stream,
                         const char *bytes, size_t len, bool eof, void *data)
{
    size_t *have;

    (void)t;
    (void)data;
    cr_assert_lt(id->step, 4);
    cr_assert_leq(len, WRK_TASKS_CHUNK);
    have = &output_len[id->step][stream];
    if (eof) {
        cr_assert_eq(len, 0);
        eofs[id->step][stream]++;
        return;
    }
    chunks++;
    if (*have + len < sizeof(output[0][0]))
        memcpy(output[id->step][stream] + *have, bytes, len);
    *have += len;
}

/* The input callback's reports, per step: the last offset and how many came. */
static uint64_t input_offset[4];
static int input_reports[4];

static void on_input_cb(struct wrk_tasks *t, uint64_t job_id, uint32_t step, uint64_t offset,
                        void *data)
{
    (void)t;
    (void)job_id;
    (void)data;
    cr_assert_lt(step, 4);
    cr_assert_gt(offset, input_offset[step], "offsets only grow");
    input_offset[step] = offset;
    input_reports[step]++;
}

static void setup(void)
{
    /* As gsched-workerd (main.c): input for a task that closed its stdin (head -c 3) fails
     * with EPIPE instead of killing the process. */
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/gsched-tasks-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(uv_loop_init(&loop), 0);
    nexits = chunks = 0;
    memset(output, 0, sizeof(output));
    memset(output_len, 0, sizeof(output_len));
    memset(eofs, 0, sizeof(eofs));
    memset(eofs_at_exit, 0, sizeof(eofs_at_exit));
    memset(input_offset, 0, sizeof(input_offset));
    memset(input_reports, 0, sizeof(input_reports));
    tasks = wrk_tasks_new(&loop, 300, on_exit_cb, NULL);
    cr_assert_not_null(tasks);
    wrk_tasks_set_output_cb(tasks, on_output_cb);
    wrk_tasks_set_input_cb(tasks, on_input_cb);
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

static void start_opts(uint64_t job, uint32_t step, uint32_t rank, const char *script,
                       const struct wrk_task_opts *opts)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env, .workdir = dir};
    struct wrk_task_id id = {.job_id = job, .step = step, .rank = rank};
    struct gs_error err;

    cr_assert_eq(wrk_tasks_start(tasks, &id, &spec, opts, &err), 0, "%s", err.msg);
}

static void start_sh(uint64_t job, uint32_t rank, const char *script, uint64_t limit_ms)
{
    struct wrk_task_opts opts = {.time_limit_ms = limit_ms};

    start_opts(job, 0, rank, script, &opts);
}

/* Every task of job, whatever its step. */
static const struct wrk_task_match *whole_job(uint64_t job)
{
    static struct wrk_task_match m;

    m = (struct wrk_task_match){.job_id = job, .all_steps = true};
    return &m;
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
    struct wrk_task_id id = {.job_id = 1, .step = 0, .rank = 0};
    struct gs_error err;

    start_sh(1, 0, "sleep 100", 0);
    cr_assert_eq(wrk_tasks_start(tasks, &id, &spec, NULL, &err), -EEXIST);
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(1), WRK_END_CANCELLED), 1);
    run_until_exits(1);
}

Test(tasks, cancel_sends_sigterm_first)
{
    start_sh(2, 0, "sleep 100", 0);
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(2), WRK_END_CANCELLED), 1);
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
    wrk_tasks_kill(tasks, whole_job(3), WRK_END_CANCELLED);
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
    cr_assert_eq(wrk_tasks_signal(tasks, whole_job(6), SIGUSR1, false), 1);
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

Test(tasks, same_rank_runs_in_two_steps_and_each_is_ended_apart)
{
    struct wrk_task_match step2 = {.job_id = 11, .step = 2};
    struct wrk_task_id batch = {.job_id = 11, .step = 0, .rank = 0},
                       in_step = {.job_id = 11, .step = 2, .rank = 0};

    start_opts(11, 0, 0, "sleep 100", NULL);
    start_opts(11, 2, 0, "sleep 100", NULL);
    cr_assert_eq(wrk_tasks_count(tasks, 11), 2);
    cr_assert_neq(wrk_tasks_pid(tasks, &batch), wrk_tasks_pid(tasks, &in_step));
    cr_assert_eq(wrk_tasks_kill(tasks, &step2, WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert_eq(exits[0].step, 2);
    cr_assert_eq(exits[0].rank, 0);
    cr_assert_eq(exits[0].reason, WRK_END_CANCELLED);
    cr_assert_neq(wrk_tasks_pid(tasks, &batch), 0, "the batch shell of the same job runs on");
    cr_assert_eq(wrk_tasks_pid(tasks, &in_step), 0);
}

Test(tasks, ranks_of_a_match_pick_tasks_within_the_step)
{
    uint32_t one[] = {1};
    struct wrk_task_match m = {.job_id = 12, .step = 1, .ranks = one, .nranks = 1};

    start_opts(12, 1, 0, "sleep 100", NULL);
    start_opts(12, 1, 1, "sleep 100", NULL);
    cr_assert_eq(wrk_tasks_kill(tasks, &m, WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert_eq(exits[0].rank, 1);
    cr_assert_eq(wrk_tasks_count(tasks, 12), 1);
}

Test(tasks, captured_output_comes_in_order_and_ends_before_the_exit)
{
    struct wrk_task_opts opts = {.capture = true};

    start_opts(13, 1, 0, "echo out1; echo err1 >&2; echo out2; exit 3", &opts);
    run_until_exits(1);
    cr_assert_eq(exits[0].exit_code, 3);
    cr_assert_str_eq(output[1][WRK_STREAM_STDOUT], "out1\nout2\n");
    cr_assert_str_eq(output[1][WRK_STREAM_STDERR], "err1\n");
    cr_assert_eq(eofs_at_exit[1][WRK_STREAM_STDOUT], 1, "stdout ended before the exit");
    cr_assert_eq(eofs_at_exit[1][WRK_STREAM_STDERR], 1, "stderr ended before the exit");
}

Test(tasks, input_reaches_stdin_and_its_end_closes_it)
{
    struct wrk_task_opts opts = {.capture = true, .input = true};
    struct wrk_task_id id = {.job_id = 21, .step = 1, .rank = 0};
    struct wrk_task_id other = {.job_id = 21, .step = 1, .rank = 1};

    start_opts(21, 1, 0, "cat; echo done", &opts);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "abc\n", 4, 0, false), 0);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "de", 2, 0, true), 0);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "f", 1, 0, false), -ENOENT, "after its end");
    cr_assert_eq(wrk_tasks_input(tasks, &other, "x", 1, 0, false), -ENOENT, "no such task");
    run_until_exits(1);
    cr_assert_eq(exits[0].exit_code, 0);
    cr_assert_str_eq(output[1][WRK_STREAM_STDOUT], "abc\ndedone\n", "cat's, then the echo");
}

/* Input sent again (srun after reattaching) with where it ends: what a task has is left out. */
Test(tasks, input_sent_again_reaches_a_task_once)
{
    struct wrk_task_opts opts = {.capture = true, .input = true};
    struct wrk_task_id id = {.job_id = 25, .step = 1, .rank = 0};
    int fed;

    start_opts(25, 1, 0, "cat", &opts);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "abc", 3, 3, false), 0);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "def", 3, 6, false), 0);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "abc", 3, 3, false), 0, "all of it had");
    cr_assert_eq(wrk_tasks_input_step(tasks, 25, 1, "efgh", 4, 8, false, &fed), 0, "part had");
    cr_assert_eq(fed, 1);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "ij", 2, 10, false), 0);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "x\n", 2, 0, false), 0, "no end said: taken whole");
    cr_assert_eq(wrk_tasks_input(tasks, &id, "", 0, 12, true), 0);
    run_until_exits(1);
    cr_assert_str_eq(output[1][WRK_STREAM_STDOUT], "abcdefghijx\n");
}

Test(tasks, input_beyond_what_is_held_unread_is_refused)
{
    struct wrk_task_opts opts = {.capture = true, .input = true};
    struct wrk_task_id id = {.job_id = 22, .step = 1, .rank = 0};
    char *big = calloc(WRK_TASKS_INPUT_MAX + 1, 1);

    cr_assert_not_null(big);
    start_opts(22, 1, 0, "sleep 30", &opts);
    cr_assert_eq(wrk_tasks_input(tasks, &id, big, WRK_TASKS_INPUT_MAX + 1, 0, false), -ENOBUFS);
    cr_assert_eq(wrk_tasks_input(tasks, &id, big, 10, 0, false), 0);
    free(big);
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(22), WRK_END_CANCELLED), 1);
    run_until_exits(1);
}

/* srun --input=all: every reading task of the step gets the bytes; the step's offset is
 * the slowest reader's, and once none reads any more it is UINT64_MAX. */
Test(tasks, input_to_a_whole_step_reports_how_far_it_got)
{
    struct wrk_task_opts opts = {.capture = true, .input = true};
    struct wrk_task_opts plain = {.capture = true};
    int fed;

    start_opts(23, 1, 0, "cat", &opts);
    start_opts(23, 1, 1, "head -c 3 >/dev/null; echo took3 >&2", &opts);
    start_opts(23, 1, 2, "cat", &plain); /* stdin /dev/null: prints nothing */
    start_opts(23, 2, 0, "cat", &opts);  /* another step: never fed */
    cr_assert_eq(wrk_tasks_input_step(tasks, 23, 1, "abcdef", 6, 0, false, &fed), 0);
    cr_assert_eq(fed, 2, "the two reading tasks of step 1");
    cr_assert_eq(wrk_tasks_input_step(tasks, 23, 1, "g\n", 2, 0, true, &fed), 0);
    run_until_exits(3);
    cr_assert_str_eq(output[1][WRK_STREAM_STDOUT], "abcdefg\n", "rank 0's alone");
    cr_assert_str_eq(output[1][WRK_STREAM_STDERR], "took3\n");
    cr_assert_eq(input_offset[1], UINT64_MAX, "every reader of step 1 is done");
    cr_assert_eq(input_reports[2], 0, "step 2 heard of nothing");
    cr_assert_eq(wrk_tasks_input_step(tasks, 23, 1, "x", 1, 0, false, &fed), 0);
    cr_assert_eq(fed, 0, "nobody reads any more");
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(23), WRK_END_CANCELLED), 1);
    run_until_exits(4);
}

/* Input a task cannot hold is lost to it, and counted as past: its step's offset moves on. */
Test(tasks, input_lost_to_a_full_task_still_counts)
{
    struct wrk_task_opts opts = {.capture = true, .input = true};
    char *big = calloc(WRK_TASKS_INPUT_MAX + 1, 1);
    int fed;

    cr_assert_not_null(big);
    start_opts(24, 3, 0, "sleep 30", &opts);
    cr_assert_eq(wrk_tasks_input_step(tasks, 24, 3, big, WRK_TASKS_INPUT_MAX + 1, 0, false, &fed),
                 -ENOBUFS);
    cr_assert_eq(input_offset[3], WRK_TASKS_INPUT_MAX + 1);
    free(big);
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(24), WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert_eq(input_offset[3], UINT64_MAX, "its end closed its input");
}

static void run_for(uint64_t ms);

/* srun's output window: a held step's tasks are not read, so they block on their pipes
 * rather than finish; let go, all of their output comes and then their exits. */
Test(tasks, held_output_blocks_the_step_until_let_go)
{
    struct wrk_task_opts opts = {.capture = true};
    size_t have;

    start_opts(25, 2, 0, "head -c 1048576 /dev/zero", &opts);
    start_opts(25, 3, 0, "echo other step", &opts);
    cr_assert_eq(wrk_tasks_pause_output(tasks, 25, 2, true), 2, "stdout and stderr");
    run_until_exits(1);
    cr_assert_eq(exits[0].step, 3, "the other step is not held");
    run_for(300);
    cr_assert_eq(nexits, 1, "the held task cannot write its megabyte");
    have = output_len[2][WRK_STREAM_STDOUT];
    cr_assert_lt(have, 1048576);
    cr_assert_eq(wrk_tasks_pause_output(tasks, 25, 2, false), 2);
    run_until_exits(2);
    cr_assert_eq(output_len[2][WRK_STREAM_STDOUT], 1048576, "all of it, nothing lost");
    cr_assert_eq(exits[1].exit_code, 0);
}

Test(tasks, pty_task_has_a_terminal_of_the_given_size)
{
    struct wrk_task_opts opts = {.capture = true, .pty = true, .pty_rows = 24, .pty_cols = 91};
    struct wrk_task_id id = {.job_id = 23, .step = 1, .rank = 0};

    start_opts(23, 1, 0, "test -t 0 && test -t 1 && test -t 2 && stty size; read x; echo got $x",
               &opts);
    cr_assert_eq(wrk_tasks_input(tasks, &id, "hi\n", 3, 0, true), 0, "a terminal stays open");
    run_until_exits(1);
    cr_assert_eq(exits[0].exit_code, 0);
    cr_assert_not_null(strstr(output[1][WRK_STREAM_STDOUT], "24 91"), "%s",
                       output[1][WRK_STREAM_STDOUT]);
    cr_assert_not_null(strstr(output[1][WRK_STREAM_STDOUT], "got hi"), "%s",
                       output[1][WRK_STREAM_STDOUT]);
}

Test(tasks, large_output_is_cut_into_chunks)
{
    struct wrk_task_opts opts = {.capture = true};

    /* The callback asserts each chunk is at most WRK_TASKS_CHUNK. */
    start_opts(14, 3, 0, "exec 2>&-; head -c 200000 /dev/zero | tr '\\0' y", &opts);
    run_until_exits(1);
    cr_assert_eq(output_len[3][WRK_STREAM_STDOUT], 200000, "every byte arrived");
    cr_assert_geq(chunks, 4, "200000 bytes need at least four chunks");
    cr_assert_eq(eofs_at_exit[3][WRK_STREAM_STDERR], 1, "a stream closed early ends early");
}

Test(tasks, output_held_open_by_an_escaped_process_is_cut)
{
    struct wrk_task_opts opts = {.capture = true};
    uint64_t t0 = gs_clock_mono_ms();

    /* setsid puts the sleeper outside the task's group, with the task's stdout. */
    start_opts(15, 1, 0, "echo before; setsid sleep 30 & echo $! > escaped.pid; exit 0", &opts);
    run_until_exits(1);
    cr_assert_str_eq(output[1][WRK_STREAM_STDOUT], "before\n");
    cr_assert_eq(eofs_at_exit[1][WRK_STREAM_STDOUT], 1);
    cr_assert_lt(gs_clock_mono_ms() - t0, 5000, "the drain is bounded");
    {
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "kill $(cat '%s/escaped.pid') 2>/dev/null", dir);
        cr_assert_eq(system(cmd), 0, "the escaped sleeper was still there to end");
    }
}

/* Reads the pid a task wrote to name in its directory. */
static pid_t read_pid(const char *name)
{
    char path[128];
    FILE *f;
    int pid = 0;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    wait_for_file(name);
    f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%d", &pid), 1, "no pid in %s", name);
    fclose(f);
    return (pid_t)pid;
}

Test(tasks, output_left_in_a_pipe_when_the_drain_time_runs_out_is_kept)
{
    struct wrk_task_opts opts = {.capture = true};
    char path[128];
    pid_t pid;
    uint64_t reaped_ms, deadline = gs_clock_mono_ms() + 10000;
    int fd;

    /* An escaped process writes the task's last line only after the task was reaped, while
     * the loop is held past the drain time: the timer then comes before the loop polls the
     * pipe, as it does on a loaded node. The line waits in the pipe and must not be lost. */
    start_opts(15, 2, 0,
               "echo $$ > main.pid; setsid sh -c 'touch out; while [ ! -e go ]; do sleep 0.01; "
               "done; echo late; touch said' & while [ ! -e out ]; do sleep 0.01; done",
               &opts);
    pid = read_pid("main.pid");
    while (kill(pid, 0) == 0) {
        cr_assert_lt(gs_clock_mono_ms(), deadline, "the task was never reaped");
        uv_run(&loop, UV_RUN_NOWAIT);
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    reaped_ms = gs_clock_mono_ms();
    cr_assert_eq(nexits, 0, "the escaped process holds the output open");
    snprintf(path, sizeof(path), "%s/go", dir);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    wait_for_file("said");
    while (gs_clock_mono_ms() < reaped_ms + 1500)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    run_until_exits(1);
    cr_assert_str_eq(output[2][WRK_STREAM_STDOUT], "late\n");
    cr_assert_eq(eofs_at_exit[2][WRK_STREAM_STDOUT], 1);
}

Test(tasks, warning_signal_comes_before_the_time_limit)
{
    struct wrk_task_opts opts = {
        .time_limit_ms = 1500, .warn_signal = SIGUSR1, .warn_before_ms = 1200};
    uint64_t t0 = gs_clock_mono_ms();

    start_opts(16, 1, 0, "trap 'touch warned; exit 7' USR1; while :; do sleep 0.02; done", &opts);
    run_until_exits(1);
    cr_assert_lt(gs_clock_mono_ms() - t0, 1400, "the warning came late");
    wait_for_file("warned");
    cr_assert_eq(exits[0].exit_code, 7, "the trap ran");
    cr_assert_eq(exits[0].reason, WRK_END_NONE, "it ended before its limit");
}

Test(tasks, warning_longer_than_the_limit_is_sent_at_once)
{
    struct wrk_task_opts opts = {
        .time_limit_ms = 5000, .warn_signal = SIGUSR1, .warn_before_ms = 60000};

    uint64_t t0 = gs_clock_mono_ms();

    /* The signal may beat the trap: either way the task ends long before its limit. */
    start_opts(17, 1, 0, "trap 'exit 0' USR1; while :; do sleep 0.02; done", &opts);
    run_until_exits(1);
    cr_assert_lt(gs_clock_mono_ms() - t0, 4000, "the warning waited");
    cr_assert_eq(exits[0].reason, WRK_END_NONE, "not ended by its time limit");
    cr_assert(exits[0].exit_code == 0 || (exits[0].signaled && exits[0].term_signal == SIGUSR1),
              "ended by the warning");
}

Test(tasks, warning_to_the_leader_only_spares_its_children)
{
    struct wrk_task_opts opts = {.time_limit_ms = 3000,
                                 .warn_signal = SIGUSR1,
                                 .warn_before_ms = 2900,
                                 .warn_leader_only = true};

    /* The child would write child-warned if the signal reached the whole group. */
    start_opts(18, 0, 0,
               "sh -c \"trap 'touch child-warned' USR1; touch child-up; "
               "while :; do sleep 0.02; done\" & "
               "trap 'touch leader-warned' USR1; "
               "while [ ! -f leader-warned ]; do sleep 0.02; done; sleep 0.3; exit 0",
               &opts);
    run_until_exits(1);
    wait_for_file("leader-warned");
    {
        char path[128];

        snprintf(path, sizeof(path), "%s/child-warned", dir);
        cr_assert_neq(access(path, F_OK), 0, "the signal reached the group");
    }
}

Test(tasks, signal_to_the_leader_only)
{
    struct wrk_task_match m = {.job_id = 19, .step = 0};

    start_opts(19, 0, 0,
               "sh -c \"trap 'touch child-got-it' USR2; touch child-up; "
               "while :; do sleep 0.02; done\" & "
               "trap 'sleep 0.3; exit 9' USR2; touch ready19; while :; do sleep 0.02; done",
               NULL);
    wait_for_file("ready19");
    wait_for_file("child-up");
    cr_assert_eq(wrk_tasks_signal(tasks, &m, SIGUSR2, true), 1);
    run_until_exits(1);
    cr_assert_eq(exits[0].exit_code, 9);
    {
        char path[128];

        snprintf(path, sizeof(path), "%s/child-got-it", dir);
        cr_assert_neq(access(path, F_OK), 0, "the signal reached the group");
    }
}

Test(tasks, handed_over_file_is_removed_with_the_task)
{
    char path[128];
    struct wrk_task_opts opts = {.remove_on_exit = path};
    FILE *f;

    snprintf(path, sizeof(path), "%s/script", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    start_opts(20, 0, 0, "exit 0", &opts);
    run_until_exits(1);
    cr_assert_neq(access(path, F_OK), 0, "the file outlived its task");
}

/* Runs the loop for ms milliseconds (exits may come meanwhile). */
static void run_for(uint64_t ms)
{
    uv_timer_t until;
    bool expired = false;

    uv_timer_init(&loop, &until);
    until.data = &expired;
    uv_update_time(&loop);
    uv_timer_start(&until, on_deadline, ms, 0);
    while (!expired)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&until, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

Test(tasks, new_limit_already_passed_ends_the_task_at_once)
{
    uint64_t t0;

    start_sh(30, 0, "sleep 100", 60000);
    start_opts(30, 2, 0, "sleep 100", &(struct wrk_task_opts){.time_limit_ms = 60000});
    start_sh(31, 0, "sleep 100", 60000); /* another job: untouched */
    run_for(300);
    t0 = gs_clock_mono_ms();
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(30), 100, 0), 2, "both steps changed");
    run_until_exits(2);
    cr_assert_lt(gs_clock_mono_ms() - t0, 1000, "the passed limit waited");
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(exits[i].job_id, 30);
        cr_assert_eq(exits[i].reason, WRK_END_TIMEOUT);
        cr_assert_eq(exits[i].term_signal, SIGTERM);
    }
    cr_assert_eq(wrk_tasks_count(tasks, 31), 1, "the other job still runs");
}

Test(tasks, longer_new_limit_lets_the_task_run_past_its_old_one)
{
    uint64_t t0 = gs_clock_mono_ms();

    start_sh(32, 0, "sleep 100", 300);
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(32), 1200, 0), 1);
    run_for(700);
    cr_assert_eq(nexits, 0, "ended at its old limit");
    run_until_exits(1);
    cr_assert_geq(gs_clock_mono_ms() - t0, 1150, "ended before its new limit");
    cr_assert_eq(exits[0].reason, WRK_END_TIMEOUT);
}

Test(tasks, new_limit_counts_from_the_given_start)
{
    uint64_t t0 = gs_clock_mono_ms();

    /* A step started just now in a job that has run 5 s: 5.3 s leaves it 0.3 s. */
    start_opts(33, 1, 0, "sleep 100", &(struct wrk_task_opts){.time_limit_ms = 60000});
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(33), 5300, gs_clock_wall_ms() - 5000), 1);
    run_until_exits(1);
    cr_assert_lt(gs_clock_mono_ms() - t0, 2000, "counted from the task's own start");
    cr_assert_eq(exits[0].reason, WRK_END_TIMEOUT);
}

Test(tasks, zero_new_limit_removes_it)
{
    start_sh(34, 0, "sleep 100", 200);
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(34), 0, 0), 1);
    run_for(500);
    cr_assert_eq(nexits, 0, "ended at its old limit");
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(34), WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert_eq(exits[0].reason, WRK_END_CANCELLED);
}

Test(tasks, warning_moves_with_the_new_limit)
{
    /* Started unlimited: the warning waits for a limit, then comes 1 s before it. */
    struct wrk_task_opts opts = {.warn_signal = SIGUSR1, .warn_before_ms = 1000};
    uint64_t t0 = gs_clock_mono_ms();

    start_opts(35, 1, 0, "trap 'touch warned; exit 7' USR1; while :; do sleep 0.02; done", &opts);
    run_for(300);
    cr_assert_eq(nexits, 0, "warned without a time limit");
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(35), 1600, 0), 1);
    run_until_exits(1);
    cr_assert_lt(gs_clock_mono_ms() - t0, 1500, "the warning came late");
    wait_for_file("warned");
    cr_assert_eq(exits[0].exit_code, 7, "the trap ran");
    cr_assert_eq(exits[0].reason, WRK_END_NONE, "it ended before its limit");
}

Test(tasks, ending_task_keeps_its_grace_period)
{
    uint64_t t0 = gs_clock_mono_ms();

    start_sh(36, 0, "trap '' TERM; sleep 100", 0);
    run_for(100); /* the trap is set */
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(36), WRK_END_CANCELLED), 1);
    cr_assert_eq(wrk_tasks_set_limit(tasks, whole_job(36), 60000, 0), 0, "an ending task changed");
    run_until_exits(1);
    cr_assert_eq(exits[0].term_signal, SIGKILL, "killed after its grace period all the same");
    cr_assert_eq(exits[0].reason, WRK_END_CANCELLED);
    cr_assert_lt(gs_clock_mono_ms() - t0, 3000);
}

/* A pipe nobody reads, full: a child writing a byte to its write end waits. Given to a task
 * as a cgroup.procs file, it stops the child there, before its exec, as a chdir on a
 * filesystem that hangs would. Returns the write end (blocking); *rd is the read end. */
static int full_pipe(int *rd)
{
    int p[2];
    char byte = 'x';

    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    while (write(p[1], &byte, 1) == 1)
        ;
    cr_assert_eq(errno, EAGAIN);
    cr_assert_eq(fcntl(p[1], F_SETFL, 0), 0);
    *rd = p[0];
    return p[1];
}

static void start_stuck(uint64_t job, int fd, const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct wrk_launch_spec spec = {
        .argv = argv, .envp = env, .workdir = dir, .cgroup_fds = &fd, .ncgroup_fds = 1};
    struct wrk_task_id id = {.job_id = job, .step = 0, .rank = 0};
    struct gs_error err;

    cr_assert_eq(wrk_tasks_start(tasks, &id, &spec, NULL, &err), 0, "%s", err.msg);
}

Test(tasks, a_task_stuck_before_its_exec_holds_only_itself)
{
    char path[128], buf[1 << 16];
    int rd, wr = full_pipe(&rd);

    snprintf(path, sizeof(path), "%s/started", dir);
    start_stuck(20, wr, "touch started; exit 3");
    start_sh(21, 0, "exit 4", 0);
    run_until_exits(1);
    cr_assert_eq(exits[0].job_id, 21, "the other task ran and ended meanwhile");
    cr_assert_eq(wrk_tasks_count(tasks, 20), 1);
    cr_assert_neq(access(path, F_OK), 0, "the stuck task has not run its program");
    cr_assert_gt(read(rd, buf, sizeof(buf)), 0); /* the filesystem answers */
    run_until_exits(2);
    cr_assert_eq(exits[1].job_id, 20);
    cr_assert_eq(exits[1].exit_code, 3, "it ran its program");
    cr_assert_str_eq(launch_errors[1], "");
    cr_assert_eq(access(path, F_OK), 0);
    close(rd);
    close(wr);
}

Test(tasks, a_task_stuck_before_its_exec_can_be_cancelled)
{
    int rd, wr = full_pipe(&rd);

    start_stuck(22, wr, "exit 0");
    cr_assert_eq(wrk_tasks_kill(tasks, whole_job(22), WRK_END_CANCELLED), 1);
    run_until_exits(1);
    cr_assert(exits[0].signaled);
    cr_assert_eq(exits[0].term_signal, SIGTERM);
    cr_assert_eq(exits[0].reason, WRK_END_CANCELLED);
    cr_assert_str_eq(launch_errors[0], "");
    close(rd);
    close(wr);
}

Test(tasks, a_step_failing_before_the_exec_comes_with_the_exit)
{
    char *argv[] = {"/bin/true", NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env, .workdir = "/nonexistent-gsched"};
    struct wrk_task_id id = {.job_id = 23, .step = 0, .rank = 0};
    struct gs_error err;

    cr_assert_eq(wrk_tasks_start(tasks, &id, &spec, NULL, &err), 0, "forked: %s", err.msg);
    run_until_exits(1);
    cr_assert_not_null(strstr(launch_errors[0], "chdir /nonexistent-gsched: No such file"), "%s",
                       launch_errors[0]);
    cr_assert_eq(wrk_tasks_count(tasks, 23), 0);
}
