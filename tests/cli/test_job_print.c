/*
 * test_job_print.c: how the job commands show jobs: state names and codes (a suspended
 * job's too), elapsed times with suspensions left out, node and GPU lists, status and end
 * lines, the exit status of a waited-for job, the JSON of the job messages, and aligned
 * tables.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/table.h"

#define PENDING GS__JOB_STATE__JOB_STATE_PENDING
#define RUNNING GS__JOB_STATE__JOB_STATE_RUNNING
#define COMPLETED GS__JOB_STATE__JOB_STATE_COMPLETED
#define FAILED GS__JOB_STATE__JOB_STATE_FAILED

Test(job_print, names_every_state_and_its_squeue_code)
{
    static const struct {
        Gs__JobState state;
        const char *name, *code;
    } want[] = {
        {PENDING, "PENDING", "PD"},
        {RUNNING, "RUNNING", "R"},
        {COMPLETED, "COMPLETED", "CD"},
        {FAILED, "FAILED", "F"},
        {GS__JOB_STATE__JOB_STATE_CANCELLED, "CANCELLED", "CA"},
        {GS__JOB_STATE__JOB_STATE_TIMEOUT, "TIMEOUT", "TO"},
        {GS__JOB_STATE__JOB_STATE_NODE_FAIL, "NODE_FAIL", "NF"},
        {GS__JOB_STATE__JOB_STATE_REQUEUED, "REQUEUED", "RQ"},
    };

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        cr_assert_str_eq(cli_job_state_name(want[i].state), want[i].name);
        cr_assert_str_eq(cli_job_state_code(want[i].state), want[i].code);
    }
    cr_assert_str_eq(cli_job_state_name(GS__JOB_STATE__JOB_STATE_UNSPECIFIED), "UNSPECIFIED");
    cr_assert_str_eq(cli_job_state_name((Gs__JobState)99), "UNKNOWN");
    cr_assert_str_eq(cli_job_state_code((Gs__JobState)99), "?");
}

Test(job_print, parses_states_by_name_or_code_in_any_case)
{
    Gs__JobState s = GS__JOB_STATE__JOB_STATE_UNSPECIFIED;

    cr_assert_eq(cli_job_state_parse("running", &s), 0);
    cr_assert_eq(s, RUNNING);
    cr_assert_eq(cli_job_state_parse("pd", &s), 0);
    cr_assert_eq(s, PENDING);
    cr_assert_eq(cli_job_state_parse("NODE_FAIL", &s), 0);
    cr_assert_eq(s, GS__JOB_STATE__JOB_STATE_NODE_FAIL);
    cr_assert_eq(cli_job_state_parse("done", &s), -EINVAL);
    cr_assert_eq(s, GS__JOB_STATE__JOB_STATE_NODE_FAIL, "output written on failure");
}

Test(job_print, requeued_is_not_final_but_every_end_state_is)
{
    cr_assert(cli_job_state_final(COMPLETED));
    cr_assert(cli_job_state_final(FAILED));
    cr_assert(cli_job_state_final(GS__JOB_STATE__JOB_STATE_CANCELLED));
    cr_assert(cli_job_state_final(GS__JOB_STATE__JOB_STATE_TIMEOUT));
    cr_assert(cli_job_state_final(GS__JOB_STATE__JOB_STATE_NODE_FAIL));
    cr_assert_not(cli_job_state_final(GS__JOB_STATE__JOB_STATE_REQUEUED));
    cr_assert_not(cli_job_state_final(PENDING));
    cr_assert_not(cli_job_state_final(RUNNING));
}

static Gs__JobStateChange change(Gs__JobState state, uint64_t start_ms, uint64_t end_ms)
{
    Gs__JobStateChange c = GS__JOB_STATE_CHANGE__INIT;

    c.job_id = 42;
    c.state = state;
    c.start_time_ms = start_ms;
    c.end_time_ms = end_ms;
    return c;
}

Test(job_print, elapsed_is_zero_pending_now_minus_start_running_end_minus_start_ended)
{
    Gs__JobStateChange c[] = {change(PENDING, 1000, 0), change(PENDING, 1000, 5000),
                              change(RUNNING, 1000, 0), change(RUNNING, 0, 0),
                              change(RUNNING, 9000, 0), change(COMPLETED, 1000, 61000),
                              change(FAILED, 1000, 0)};

    cr_assert_eq(cli_change_run_s(&c[0], 99000), 0);
    cr_assert_eq(cli_change_run_s(&c[1], 99000), 0, "earlier attempt ignored");
    cr_assert_eq(cli_change_run_s(&c[2], 4999), 3);
    cr_assert_eq(cli_change_run_s(&c[3], 4999), 0, "start unknown");
    cr_assert_eq(cli_change_run_s(&c[4], 4000), 0, "clock behind start");
    cr_assert_eq(cli_change_run_s(&c[5], 999999), 60);
    cr_assert_eq(cli_change_run_s(&c[6], 999999), 0, "ended, end unknown");
}

Test(job_print, suspended_running_job_shows_as_suspended_and_s)
{
    Gs__JobInfo job = GS__JOB_INFO__INIT;

    job.state = RUNNING;
    cr_assert_not(cli_job_suspended(&job));
    cr_assert_str_eq(cli_job_shown_name(&job), "RUNNING");
    cr_assert_str_eq(cli_job_shown_code(&job), "R");
    job.suspended = true;
    cr_assert(cli_job_suspended(&job));
    cr_assert_str_eq(cli_job_shown_name(&job), "SUSPENDED");
    cr_assert_str_eq(cli_job_shown_code(&job), "S");
    /* Only a running job is suspended: one that ended while it was shows how it ended. */
    job.state = GS__JOB_STATE__JOB_STATE_CANCELLED;
    cr_assert_not(cli_job_suspended(&job));
    cr_assert_str_eq(cli_job_shown_name(&job), "CANCELLED");
    cr_assert_str_eq(cli_job_shown_code(&job), "CA");
}

Test(job_print, parses_suspended_as_running_and_suspended_in_any_case)
{
    Gs__JobState s = GS__JOB_STATE__JOB_STATE_UNSPECIFIED;
    bool suspended = false;

    cr_assert_eq(cli_job_shown_parse("S", &s, &suspended), 0);
    cr_assert(s == RUNNING && suspended);
    cr_assert_eq(cli_job_shown_parse("suspended", &s, &suspended), 0);
    cr_assert(s == RUNNING && suspended);
    cr_assert_eq(cli_job_shown_parse("r", &s, &suspended), 0);
    cr_assert(s == RUNNING && !suspended, "RUNNING is the running jobs not suspended");
    cr_assert_eq(cli_job_shown_parse("PD", &s, &suspended), 0);
    cr_assert(s == PENDING && !suspended);
    cr_assert_eq(cli_job_shown_parse("SUSP", &s, &suspended), -EINVAL);
    cr_assert(s == PENDING && !suspended, "output written on failure");
    cr_assert_eq(cli_job_state_parse("S", &s), -EINVAL, "not a state on the wire");
}

Test(job_print, run_time_leaves_out_suspensions_and_stops_while_suspended)
{
    Gs__JobInfo job = GS__JOB_INFO__INIT;

    /* Started at 10 s, suspended 5 s before, suspended again at 40 s: 25 s run, whenever. */
    job.state = RUNNING;
    job.start_time_ms = 10000;
    job.suspended_ms = 5000;
    job.suspended = true;
    job.suspend_time_ms = 40000;
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 41000), 25);
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 999000), 25, "stands still while suspended");
    cr_assert_eq(cli_job_suspended_s(&job, 41000), 6, "the stretch under way counts");
    cr_assert_eq(cli_job_suspended_s(&job, 70000), 35);
    /* Resumed at 70 s (35 s suspended in all): 25 s again then, counting on from there. */
    job.suspended = false;
    job.suspend_time_ms = 0;
    job.suspended_ms = 35000;
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 70000), 25);
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 80000), 35);
    cr_assert_eq(cli_job_suspended_s(&job, 999000), 35, "resumed: what it was suspended");
    job.state = COMPLETED;
    job.end_time_ms = 100000;
    cr_assert_eq(cli_job_run_s(&job, COMPLETED, 999000), 55, "ended: to its end");
    job.end_time_ms = 0;
    cr_assert_eq(cli_job_run_s(&job, COMPLETED, 90000), 0, "ended, end unknown");
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 90000), 45, "as RUNNING: to now");
    cr_assert_eq(cli_job_run_s(&job, PENDING, 90000), 0, "pending again");
    job.suspended_ms = 90000;
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 90000), 0, "suspended longer than the span");
    job.start_time_ms = 0;
    cr_assert_eq(cli_job_run_s(&job, RUNNING, 90000), 0, "not started");
}

Test(job_print, formats_elapsed_as_hh_mm_ss_with_days_in_front)
{
    char out[32];

    cr_assert_str_eq(cli_format_elapsed(0, out, sizeof(out)), "00:00:00");
    cr_assert_str_eq(cli_format_elapsed(3, out, sizeof(out)), "00:00:03");
    cr_assert_str_eq(cli_format_elapsed(3723, out, sizeof(out)), "01:02:03");
    cr_assert_str_eq(cli_format_elapsed(86399, out, sizeof(out)), "23:59:59");
    cr_assert_str_eq(cli_format_elapsed(86400 + 2 * 3600 + 3 * 60 + 4, out, sizeof(out)),
                     "1-02:03:04");
}

Test(job_print, formats_times_as_local_iso_8601_and_zero_as_unknown)
{
    char out[32];

    setenv("TZ", "UTC", 1);
    tzset();
    cr_assert_str_eq(cli_format_time(1714557600123ull, out, sizeof(out)), "2024-05-01T10:00:00");
    cr_assert_str_eq(cli_format_time(0, out, sizeof(out)), "Unknown");
    setenv("TZ", "UTC-2", 1); /* POSIX TZ: two hours east of UTC */
    tzset();
    cr_assert_str_eq(cli_format_time(1714557600000ull, out, sizeof(out)), "2024-05-01T12:00:00");
}

static char *indices(const uint32_t *v, size_t n)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(cli_format_indices(&out, v, n), 0);
    return gs_buf_detach(&out, NULL);
}

Test(job_print, compresses_runs_of_three_or_more_indices)
{
    static const uint32_t mixed[] = {0, 1, 2, 3, 6, 8, 9, 11, 12, 13};
    static const uint32_t pair[] = {4, 5};
    char *s;

    s = indices(mixed, 10);
    cr_assert_str_eq(s, "0-3,6,8,9,11-13");
    free(s);
    s = indices(pair, 2);
    cr_assert_str_eq(s, "4,5");
    free(s);
    s = indices(NULL, 0);
    cr_assert_str_eq(s, "");
    free(s);
}

Test(job_print, lists_nodes_with_and_without_their_gpus)
{
    uint32_t g1[] = {0, 1, 2, 3}, g2[] = {1, 5};
    Gs__NodeAllocation a = GS__NODE_ALLOCATION__INIT, b = GS__NODE_ALLOCATION__INIT,
                       c = GS__NODE_ALLOCATION__INIT;
    Gs__NodeAllocation *alloc[] = {&a, &b, &c};
    struct gs_buf out = GS_BUF_INIT;

    a.node_name = "n1";
    a.gpus = g1;
    a.n_gpus = 4;
    b.node_name = "n2";
    b.gpus = g2;
    b.n_gpus = 2;
    c.node_name = "cpu7";
    cr_assert_eq(cli_job_nodelist(&out, alloc, 3, false), 0);
    cr_assert_str_eq(out.data, "n1,n2,cpu7");
    gs_buf_reset(&out);
    cr_assert_eq(cli_job_nodelist(&out, alloc, 3, true), 0);
    cr_assert_str_eq(out.data, "n1[0-3],n2[1,5],cpu7");
    gs_buf_release(&out);
}

Test(job_print, quotes_arguments_a_shell_would_split)
{
    char *argv[] = {"python3", "train.py", "--lr=3e-4", "two words", "it's", ""};
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_buf_argv_join(&out, argv, 6), 0);
    cr_assert_str_eq(out.data, "python3 train.py --lr=3e-4 'two words' 'it'\\''s' ''");
    gs_buf_release(&out);
}

Test(job_print, exit_status_follows_the_job)
{
    cr_assert_eq(cli_job_exit_status(COMPLETED, false, 0, 0), 0);
    cr_assert_eq(cli_job_exit_status(FAILED, false, 3, 0), 3);
    cr_assert_eq(cli_job_exit_status(FAILED, true, 0, 9), 137);
    cr_assert_eq(cli_job_exit_status(GS__JOB_STATE__JOB_STATE_CANCELLED, false, 0, 0), 1);
    cr_assert_eq(cli_job_exit_status(FAILED, false, 256, 0), 1, "256 would exit as 0");
    cr_assert_eq(cli_job_exit_status(FAILED, false, -1, 0), 1);
    cr_assert_eq(cli_job_exit_status(GS__JOB_STATE__JOB_STATE_TIMEOUT, true, 0, 15), 143);
}

Test(job_print, status_line_shows_nodes_when_running_and_reason_when_waiting)
{
    Gs__JobStateChange run = change(RUNNING, 10000, 0), wait = change(PENDING, 0, 0);
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(cli_job_status_line(&out, &run, "node1,node2", 13500), 0);
    cr_assert_str_eq(out.data, "job 42 RUNNING 00:00:03 node1,node2");
    gs_buf_reset(&out);
    wait.reason = "Resources";
    cr_assert_eq(cli_job_status_line(&out, &wait, NULL, 13500), 0);
    cr_assert_str_eq(out.data, "job 42 PENDING 00:00:00 (Resources)");
    gs_buf_reset(&out);
    cr_assert_eq(cli_job_status_line(&out, &run, "", 13500), 0);
    cr_assert_str_eq(out.data, "job 42 RUNNING 00:00:03", "no nodes, no reason: nothing after");
    gs_buf_release(&out);
}

Test(job_print, status_line_of_a_suspended_job_stops_its_time)
{
    Gs__JobStateChange c = change(RUNNING, 10000, 0);
    struct gs_buf out = GS_BUF_INIT;

    /* Ran 10 s, suspended 20 s, ran 5 s, suspended again at 45 s; now 100 s. */
    c.suspended = true;
    c.suspend_time_ms = 45000;
    c.suspended_ms = 20000;
    cr_assert_eq(cli_job_status_line(&out, &c, "node1", 100000), 0);
    cr_assert_str_eq(out.data, "job 42 SUSPENDED 00:00:15 node1");
    gs_buf_reset(&out);
    c.suspended = false; /* resumed at 100 s: 15 s then, 20 s by 105 s */
    c.suspend_time_ms = 0;
    c.suspended_ms = 75000;
    cr_assert_eq(cli_job_status_line(&out, &c, "node1", 105000), 0);
    cr_assert_str_eq(out.data, "job 42 RUNNING 00:00:20 node1");
    gs_buf_reset(&out);
    c.state = COMPLETED; /* ended at 110 s: 25 s run */
    c.end_time_ms = 110000;
    cr_assert_eq(cli_job_end_line(&out, &c, 200000), 0);
    cr_assert_str_eq(out.data, "job 42 COMPLETED exit=0 elapsed=00:00:25");
    gs_buf_reset(&out);
    c.suspended = true; /* a flag on an ended job is not a suspension */
    cr_assert_str_eq(cli_change_shown_name(&c), "COMPLETED");
    gs_buf_release(&out);
}

Test(job_print, end_line_gives_exit_or_signal_elapsed_and_why)
{
    Gs__JobStateChange ok = change(COMPLETED, 1000, 4000), killed = change(FAILED, 1000, 4000);
    struct gs_buf out = GS_BUF_INIT;

    ok.reason = "all tasks exited 0";
    cr_assert_eq(cli_job_end_line(&out, &ok, 0), 0);
    cr_assert_str_eq(out.data, "job 42 COMPLETED exit=0 elapsed=00:00:03");
    gs_buf_reset(&out);
    killed.signaled = true;
    killed.term_signal = 9;
    killed.reason = "rank 1 killed by signal 9";
    cr_assert_eq(cli_job_end_line(&out, &killed, 0), 0);
    cr_assert_str_eq(out.data,
                     "job 42 FAILED signal=9 elapsed=00:00:03 (rank 1 killed by signal 9)");
    gs_buf_release(&out);
}

/* Runs write on a fresh writer and returns the JSON text (the caller frees it). */
static char *json_of(void (*write)(struct gs_json *, const void *), const void *msg)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;

    gs_json_init(&j, &out);
    write(&j, msg);
    cr_assert_eq(gs_json_finish(&j), 0);
    return gs_buf_detach(&out, NULL);
}

static void write_change(struct gs_json *j, const void *m)
{
    cli_json_state_change(j, m);
}

static void write_exit(struct gs_json *j, const void *m)
{
    cli_json_task_exit(j, m);
}

static void write_info(struct gs_json *j, const void *m)
{
    cli_json_job_info(j, m);
}

static void write_result(struct gs_json *j, const void *m)
{
    cli_json_action_result(j, m);
}

Test(job_json, state_change_has_every_field_with_states_as_names)
{
    Gs__JobStateChange c = change(FAILED, 1000, 4000);
    char *s;

    c.previous = RUNNING;
    c.reason = "rank 0 exited 3";
    c.exit_code = 3;
    c.changed_at_ms = 4001;
    c.submit_time_ms = 500;
    c.restart_count = 1;
    s = json_of(write_change, &c);
    cr_assert_str_eq(s, "{\"job_id\":42,\"state\":\"FAILED\",\"previous\":\"RUNNING\","
                        "\"reason\":\"rank 0 exited 3\",\"signaled\":false,\"exit_code\":3,"
                        "\"term_signal\":0,\"changed_at_ms\":4001,\"submit_time_ms\":500,"
                        "\"start_time_ms\":1000,\"end_time_ms\":4000,\"restart_count\":1,"
                        "\"suspended\":false,\"suspend_time_ms\":0,\"suspended_ms\":0}");
    free(s);
}

Test(job_json, task_exit_names_its_end_reason)
{
    Gs__TaskExit t = GS__TASK_EXIT__INIT;
    char *s;

    t.job_id = 7;
    t.rank = 2;
    t.node_name = "n3";
    t.end_reason = GS__END_REASON__END_REASON_LAUNCH_FAILED;
    t.launch_error = "exec python3: No such file or directory";
    t.attempt = 1;
    s = json_of(write_exit, &t);
    cr_assert_str_eq(s, "{\"job_id\":7,\"rank\":2,\"node_name\":\"n3\",\"signaled\":false,"
                        "\"exit_code\":0,\"term_signal\":0,\"end_reason\":\"LAUNCH_FAILED\","
                        "\"start_time_ms\":0,\"end_time_ms\":0,\"attempt\":1,"
                        "\"launch_error\":\"exec python3: No such file or directory\"}");
    free(s);
}

Test(job_json, job_info_nests_user_resources_and_allocation_without_spec)
{
    uint32_t gpus[] = {0, 1}, cores[] = {0, 1, 2, 3};
    Gs__UserIdentity u = GS__USER_IDENTITY__INIT;
    Gs__Resources r = GS__RESOURCES__INIT;
    Gs__NodeAllocation a = GS__NODE_ALLOCATION__INIT, *alloc[] = {&a};
    Gs__JobInfo job = GS__JOB_INFO__INIT;
    char *s;

    u.uid = 1000;
    u.gid = 100;
    u.username = "alice";
    r.nodes = 1;
    r.gpus_per_node = 2;
    r.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_GPU;
    r.cpus_per_gpu = 2;
    a.node_name = "n1";
    a.address = "10.0.0.1";
    a.gpus = gpus;
    a.n_gpus = 2;
    a.cores = cores;
    a.n_cores = 4;
    a.ntasks = 2;
    job.job_id = 42;
    job.name = "train";
    job.user = &u;
    job.state = RUNNING;
    job.resources = &r;
    job.allocation = alloc;
    job.n_allocation = 1;
    s = json_of(write_info, &job);
    cr_assert_str_eq(
        s, "{\"job_id\":42,\"name\":\"train\",\"user\":{\"uid\":1000,\"gid\":100,"
           "\"username\":\"alice\",\"groups\":[]},\"state\":\"RUNNING\",\"reason\":\"\","
           "\"priority\":0,\"held\":false,\"resources\":{\"nodes\":1,\"gpus_per_node\":2,"
           "\"cpus_per_gpu\":2,\"mem_per_node_mib\":0,\"time_limit_s\":0,\"exclusive\":false,"
           "\"constraint\":\"\",\"ntasks\":0,\"partition\":\"\",\"nodelist\":[],\"exclude\":[],"
           "\"time_min_s\":0,\"gpus_per_task\":0},\"submit_time_ms\":0,\"start_time_ms\":0,"
           "\"end_time_ms\":0,\"suspended\":false,\"suspend_time_ms\":0,\"suspended_ms\":0,"
           "\"resume_time_ms\":0,"
           "\"expected_start_ms\":0,\"sched_nodes\":\"\","
           "\"dependency\":\"\",\"signaled\":false,"
           "\"exit_code\":0,"
           "\"term_signal\":0,\"restart_count\":0,\"partition\":\"\",\"account\":\"\",\"qos\":"
           "\"\",\"reservation\":null,\"comment\":\"\",\"command\":\"\",\"nice\":0,"
           "\"licenses\":null,\"array_job_id\":0,\"array_task_id\":0,"
           "\"ntasks\":0,"
           "\"ncpus\":0,\"workdir\":"
           "\"\",\"stdout_path\":\"\",\"stderr_path\":\"\",\"allocation\":[{\"node_name\":\"n1\","
           "\"address\":\"10.0.0.1\","
           "\"gpus\":[0,1],\"cores\":[0,1,2,3],\"mem_mib\":0,\"first_rank\":0,\"ntasks\":2,\"gpu_"
           "link\":\"\",\"gpu_score\":0}],\"tokens_per_s\":0,\"mfu\":0,\"usage\":null}");
    free(s);
}

Test(job_json, job_info_from_show_carries_the_spec_and_absent_parts_are_null)
{
    char *argv[] = {"python3", "train.py"};
    Gs__RunSpec__EnvEntry e = GS__RUN_SPEC__ENV_ENTRY__INIT, *env[] = {&e};
    Gs__Dependency d = GS__DEPENDENCY__INIT, *deps[] = {&d};
    Gs__RunSpec run = GS__RUN_SPEC__INIT;
    Gs__JobSpec spec = GS__JOB_SPEC__INIT;
    Gs__JobInfo job = GS__JOB_INFO__INIT;
    char *s;

    e.key = "OMP_NUM_THREADS";
    e.value = "4";
    d.type = GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTEROK;
    d.job_id = 41;
    run.argv = argv;
    run.n_argv = 2;
    run.workdir = "/home/alice";
    run.env = env;
    run.n_env = 1;
    spec.name = "train";
    spec.depends_on = deps;
    spec.n_depends_on = 1;
    spec.run = &run;
    job.job_id = 42;
    job.spec = &spec;
    s = json_of(write_info, &job);
    cr_assert(strstr(s, "\"user\":null,\"state\":\"UNSPECIFIED\"") != NULL, "%s", s);
    cr_assert(strstr(s, "\"resources\":null,") != NULL, "%s", s);
    cr_assert(
        strstr(s, "\"spec\":{\"name\":\"train\",\"user\":null,\"priority\":0,"
                  "\"nice\":0,\"hold\":false,\"depends_on\":[{\"type\":\"AFTEROK\",\"job_id\":41}],"
                  "\"resources\":null,\"run\":{\"argv\":[\"python3\",\"train.py\"],"
                  "\"script\":\"\",\"tasks_per_node\":0,\"tasks_per_gpu\":false,"
                  "\"workdir\":\"/home/alice\",\"stdout_pattern\":\"\","
                  "\"stderr_pattern\":\"\",\"truncate_output\":false,\"batch\":false,"
                  "\"slurm\":false,"
                  "\"submit_dir\":\"\",\"submit_host\":\"\",\"warn_signal\":0,"
                  "\"warn_before_s\":0,\"warn_batch_only\":false,\"launcher\":\"NONE\","
                  "\"env\":{\"OMP_NUM_THREADS\":\"4\"}},"
                  "\"max_restarts\":0,\"account\":\"\",\"qos\":\"\",\"reservation\":\"\","
                  "\"licenses\":{},\"mail_type\":\"NONE\",\"mail_user\":\"\",\"comment\":\"\","
                  "\"source\":\"\",\"data\":null,\"depends_any\":false,\"singleton\":false,"
                  "\"kill_on_invalid_dep\":\"default\",\"array\":null}}") != NULL,
        "%s", s);
    free(s);
}

Test(job_json, suspended_job_stays_running_with_suspended_and_its_times)
{
    Gs__JobInfo job = GS__JOB_INFO__INIT;
    char *s;

    job.job_id = 49;
    job.state = RUNNING;
    job.start_time_ms = 1000;
    job.suspended = true;
    job.suspend_time_ms = 9000;
    job.suspended_ms = 2000;
    s = json_of(write_info, &job);
    cr_assert(strstr(s, "\"state\":\"RUNNING\"") != NULL, "%s", s);
    cr_assert(strstr(s, "\"suspended\":true,\"suspend_time_ms\":9000,\"suspended_ms\":2000,") !=
                  NULL,
              "%s", s);
    free(s);
}

Test(job_json, action_result_keeps_the_errno_and_message)
{
    Gs__JobActionResult r = GS__JOB_ACTION_RESULT__INIT;
    char *s;

    r.job_id = 7;
    r.code = -ENOENT;
    r.message = "no such job";
    s = json_of(write_result, &r);
    cr_assert_str_eq(s, "{\"job_id\":7,\"code\":-2,\"message\":\"no such job\","
                        "\"state\":\"UNSPECIFIED\"}");
    free(s);
}

Test(table, pads_every_column_but_the_last_to_its_widest_cell)
{
    static const char *cells[] = {"JOBID", "NAME", "ST", "7", "a-long-name", "R", "1234", "x"};
    struct cli_table t;
    struct gs_buf out = GS_BUF_INIT;

    cli_table_init(&t, 3);
    for (size_t i = 0; i < 8; i++)
        cr_assert_eq(cli_table_add(&t, cells[i]), 0);
    cr_assert_eq(cli_table_render(&t, &out), 0);
    cr_assert_str_eq(out.data,
                     "JOBID  NAME         ST\n"
                     "7      a-long-name  R\n"
                     "1234   x\n",
                     "short last row, no trailing blanks: [%s]", out.data);
    cli_table_release(&t);
    gs_buf_release(&out);
}

/*
 * A heterogeneous job, 42: component 0 one node with 1 GPU (n1), component 1 two with 4
 * (n2, n3, constraint h100, 8 tasks); with_spec: as ShowReply has it, with its spec.
 */
struct het_show {
    uint32_t gpus[4], het_nodes[2], het_ntasks[2];
    Gs__NodeAllocation a[3], *p[3];
    Gs__Resources res;
    Gs__RunSpec run;
    Gs__HetComponent c, *cs[1];
    Gs__JobSpec spec;
    Gs__JobInfo job;
};

static void het_show(struct het_show *h, bool with_spec)
{
    static const char *const names[] = {"n1", "n2", "n3"};

    *h = (struct het_show){.gpus = {0, 1, 2, 3}, .het_nodes = {1, 2}, .het_ntasks = {1, 8}};
    for (int i = 0; i < 3; i++) {
        gs__node_allocation__init(&h->a[i]);
        h->a[i].node_name = (char *)names[i];
        h->a[i].gpus = h->gpus;
        h->a[i].n_gpus = i == 0 ? 1 : 4;
        h->p[i] = &h->a[i];
    }
    gs__resources__init(&h->res);
    h->res.nodes = 1;
    h->res.gpus_per_node = 1;
    h->res.cpus_case = GS__RESOURCES__CPUS_CPUS_PER_TASK;
    h->res.cpus_per_task = 2;
    h->res.mem_per_node_mib = 1024;
    gs__run_spec__init(&h->run);
    h->run.tasks_per_node = 1;
    gs__het_component__init(&h->c);
    h->c.nodes = 2;
    h->c.gpus_per_node = 4;
    h->c.cpus_case = GS__HET_COMPONENT__CPUS_CPUS_PER_GPU;
    h->c.cpus_per_gpu = 8;
    h->c.mem_per_node_mib = 16384;
    h->c.constraint = "h100";
    h->c.ntasks = 8;
    h->cs[0] = &h->c;
    gs__job_spec__init(&h->spec);
    h->spec.resources = &h->res;
    h->spec.run = &h->run;
    h->spec.het = h->cs;
    h->spec.n_het = 1;
    gs__job_info__init(&h->job);
    h->job.job_id = 42;
    h->job.state = RUNNING;
    h->job.allocation = h->p;
    h->job.n_allocation = 3;
    h->job.het_nodes = h->het_nodes;
    h->job.n_het_nodes = 2;
    h->job.het_ntasks = h->het_ntasks;
    h->job.n_het_ntasks = 2;
    h->job.spec = with_spec ? &h->spec : NULL;
}

static void check_het_lines(const Gs__JobInfo *job, const char *want)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(gs_buf_append_str(&out, ""), 0);
    cr_assert_eq(cli_job_het_lines(&out, job), 0);
    cr_assert_str_eq(out.data, want);
    gs_buf_release(&out);
}

Test(job_print, het_job_shows_a_line_per_component_with_its_shape_and_nodes)
{
    struct het_show h;
    Gs__JobInfo plain = GS__JOB_INFO__INIT;

    het_show(&h, true);
    check_het_lines(&h.job,
                    "   HetComponent=0 Nodes=1 GpusPerNode=1 CpusPerTask=2 MemPerNode=1024M "
                    "Tasks=1 NodeList=n1[0]\n"
                    "   HetComponent=1 Nodes=2 GpusPerNode=4 CpusPerGpu=8 "
                    "MemPerNode=16384M Tasks=8 Constraint=h100 NodeList=n2[0-3],n3[0-3]\n");
    /* A queue listing has no spec: nodes and tasks alone. Pending: no nodes yet. */
    het_show(&h, false);
    h.job.n_allocation = 0;
    check_het_lines(&h.job, "   HetComponent=0 Nodes=1 Tasks=1 NodeList=None\n"
                            "   HetComponent=1 Nodes=2 Tasks=8 NodeList=None\n");
    check_het_lines(&plain, "");
}

Test(job_print, het_component_cpus_and_tasks_follow_its_layout)
{
    struct gs_het_component c = {.nodes = 2, .gpus_per_node = 4, .tasks_per_gpu = true};

    cr_assert_eq(cli_het_tasks(&c), 8);
    cr_assert_eq(cli_het_cpus(&c), 8); /* 1 per task */
    c.cpus_per_gpu = 3;
    cr_assert_eq(cli_het_cpus(&c), 24);
    c = (struct gs_het_component){.nodes = 3, .tasks_per_node = 2, .cpus_per_task = 4, .ntasks = 5};
    cr_assert_eq(cli_het_tasks(&c), 5);
    cr_assert_eq(cli_het_cpus(&c), 24); /* 2 tasks on the busiest node x 4, 3 nodes */
}

Test(job_json, het_job_info_has_its_components_nodes_tasks_and_spec_het)
{
    struct het_show h;
    char *s;

    het_show(&h, true);
    s = json_of(write_info, &h.job);
    cr_assert(strstr(s, "}],\"het_nodes\":[1,2],\"het_ntasks\":[1,8],\"tokens_per_s\":0,") != NULL,
              "%s", s);
    cr_assert(strstr(s, "\"array\":null,\"het\":[{\"nodes\":2,\"gpus_per_node\":4,"
                        "\"cpus_per_gpu\":8,\"mem_per_node_mib\":16384,\"constraint\":\"h100\","
                        "\"tasks_per_node\":0,\"tasks_per_gpu\":false,\"ntasks\":8,"
                        "\"gpus_per_task\":0}]}}") != NULL,
              "%s", s);
    free(s);
}
