/*
 * test_mail.c: which mail a job's change makes due and its subject (scheduler/mail.h): one
 * message per change however often it is announced, FAIL over END for a job that failed,
 * an array as one job unless ARRAY_TASKS, the shares of a time limit once each.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/jobspec_mail.h"
#include "common/units.h"
#include "scheduler/mail.h"

static struct sched_cluster *cluster;
static struct sched_jobs *jobs;

static void setup(void)
{
    cluster = sched_cluster_new();
    jobs = sched_jobs_new(cluster);
    cr_assert_not_null(jobs);
}

static void teardown(void)
{
    sched_jobs_free(jobs);
    sched_cluster_free(cluster);
}

TestSuite(mail, .init = setup, .fini = teardown);

static struct sched_job *add(uint64_t id, uint32_t types, const char *name)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->mail_types = types;
    spec->name = strdup(name);
    spec->time_limit_s = 100;
    job = sched_jobs_add(jobs, id, spec, 1000);
    cr_assert_not_null(job);
    return job;
}

/* The subject of the one message due as job goes to state. */
static void one_due(struct sched_job *job, enum sched_job_state state, uint64_t now_ms,
                    const char *want)
{
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];
    enum sched_job_state before = job->mail_seen;
    struct gs_buf s = GS_BUF_INIT;
    const char *type;
    size_t n;

    job->state = state;
    job->mail_seen = state;
    n = sched_mail_due(jobs, job, before, msgs);
    cr_assert_eq(n, 1, "%zu messages as job %llu goes to %s", n, (unsigned long long)job->id,
                 sched_job_state_name(state));
    sched_mail_subject(jobs, job, &msgs[0], now_ms, &s, &type);
    cr_assert_str_eq(s.data, want);
    gs_buf_release(&s);
}

static size_t due(struct sched_job *job, enum sched_job_state state)
{
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];
    enum sched_job_state before = job->mail_seen;

    job->state = state;
    job->mail_seen = state;
    return sched_mail_due(jobs, job, before, msgs);
}

Test(mail, begin_and_end_once_each)
{
    struct sched_job *job = add(7, GS_MAIL_BEGIN | GS_MAIL_END, "train\nx");

    job->start_ms = 66000;
    one_due(job, SCHED_JOB_RUNNING, 70000,
            "Slurm Job_id=7 Name=train?x Began, Queued time 00:01:05");
    cr_assert_eq(due(job, SCHED_JOB_RUNNING), 0, "the same change announced again");
    job->end_ms = job->start_ms + 90061000;
    job->exit_code = 0;
    one_due(job, SCHED_JOB_COMPLETED, 0,
            "Slurm Job_id=7 Name=train?x Ended, Run time 1-01:01:01, COMPLETED, ExitCode 0");
    cr_assert_eq(due(job, SCHED_JOB_COMPLETED), 0);
}

Test(mail, a_failed_job_mails_failed_with_fail_else_ended_and_none_without_either)
{
    struct sched_job *a = add(1, GS_MAIL_END | GS_MAIL_FAIL, "a"), *b = add(2, GS_MAIL_END, "b");
    struct sched_job *c = add(3, GS_MAIL_FAIL, "c"), *d = add(4, GS_MAIL_BEGIN, "d");

    a->exit_code = b->exit_code = 2;
    cr_assert_eq(due(a, SCHED_JOB_RUNNING), 0, "no BEGIN asked for");
    one_due(a, SCHED_JOB_FAILED, 0,
            "Slurm Job_id=1 Name=a Failed, Run time 00:00:00, FAILED, ExitCode 2");
    one_due(b, SCHED_JOB_CANCELLED, 0,
            "Slurm Job_id=2 Name=b Ended, Run time 00:00:00, CANCELLED, ExitCode 2");
    cr_assert_eq(due(c, SCHED_JOB_COMPLETED), 0, "FAIL alone: nothing for a success");
    cr_assert_eq(due(d, SCHED_JOB_FAILED), 0);
}

Test(mail, requeue_and_time_limit)
{
    struct sched_job *job = add(5, GS_MAIL_REQUEUE | GS_MAIL_TIME_LIMIT | GS_MAIL_END, "r");
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];

    job->start_ms = 1000;
    cr_assert_eq(due(job, SCHED_JOB_RUNNING), 0);
    one_due(job, SCHED_JOB_PENDING, 31000, "Slurm Job_id=5 Name=r Requeued, Run time 00:00:30");
    cr_assert_eq(due(job, SCHED_JOB_RUNNING), 0);
    job->state = SCHED_JOB_TIMEOUT;
    cr_assert_eq(sched_mail_due(jobs, job, SCHED_JOB_RUNNING, msgs), 2);
    cr_assert_eq(msgs[0].event, SCHED_MAIL_TIME_LIMIT);
    cr_assert_eq(msgs[1].event, SCHED_MAIL_ENDED);
}

Test(mail, an_array_begins_with_its_first_element_and_ends_with_its_last)
{
    struct sched_job *e[3];

    for (int i = 0; i < 3; i++) {
        e[i] = add(10 + (uint64_t)i, GS_MAIL_BEGIN | GS_MAIL_END | GS_MAIL_FAIL, "arr");
        e[i]->spec->array.array_job_id = 10;
        e[i]->spec->array.task_id = (uint32_t)i + 1;
        e[i]->spec->array.count = 3;
    }
    e[1]->start_ms = 2000;
    one_due(e[1], SCHED_JOB_RUNNING, 2000,
            "Slurm Array Summary Job_id=10_* (10) Name=arr Began, Queued time 00:00:01");
    e[0]->start_ms = 3000;
    cr_assert_eq(due(e[0], SCHED_JOB_RUNNING), 0, "another element began first");
    e[0]->exit_code = 0;
    cr_assert_eq(due(e[0], SCHED_JOB_COMPLETED), 0, "others still run");
    e[2]->exit_code = 4;
    cr_assert_eq(due(e[2], SCHED_JOB_FAILED), 0);
    e[1]->exit_code = 1;
    one_due(e[1], SCHED_JOB_COMPLETED, 0,
            "Slurm Array Summary Job_id=10_* (10) Name=arr Failed, Mixed, ExitCode [0-4]");
}

Test(mail, array_tasks_mails_each_element)
{
    struct sched_job *a = add(20, GS_MAIL_END | GS_MAIL_ARRAY_TASKS, "each");

    a->spec->array.array_job_id = 20;
    a->spec->array.task_id = 5;
    a->spec->array.count = 2;
    one_due(a, SCHED_JOB_COMPLETED, 0,
            "Slurm Array Task Job_id=20_5 (20) Name=each Ended, Run time 00:00:00, COMPLETED, "
            "ExitCode 0");
}

Test(mail, a_dependency_never_met_once)
{
    struct sched_job *job = add(50, GS_MAIL_INVALID_DEPEND, "dep");
    struct sched_mail_msg msg = {SCHED_MAIL_INVALID_DEPEND, 0, false};
    struct gs_buf s = GS_BUF_INIT;
    const char *type;

    snprintf(job->reason, sizeof(job->reason), "Dependency");
    cr_assert_not(sched_mail_invalid_depend(job), "it may yet be met");
    snprintf(job->reason, sizeof(job->reason), "DependencyNeverSatisfied");
    cr_assert(sched_mail_invalid_depend(job));
    sched_mail_subject(jobs, job, &msg, 0, &s, &type);
    cr_assert_str_eq(s.data, "Slurm Job_id=50 Name=dep Failed, Invalid dependency");
    cr_assert_str_eq(type, "Invalid_depend");
    gs_buf_release(&s);
    job->mail_sent |= GS_MAIL_INVALID_DEPEND;
    cr_assert_not(sched_mail_invalid_depend(job), "once");
}

/* kill_invalid_depend cancels the job in the pass that finds it out: its cancellation
 * says so (once), beside the END/FAIL message it asked for. */
Test(mail, a_job_cancelled_for_a_dependency_never_met_says_so)
{
    struct sched_job *job = add(51, GS_MAIL_INVALID_DEPEND | GS_MAIL_FAIL, "dep"),
                     *plain = add(52, GS_MAIL_INVALID_DEPEND, "dep");
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];

    snprintf(job->reason, sizeof(job->reason), "DependencyNeverSatisfied");
    job->state = SCHED_JOB_CANCELLED;
    cr_assert_eq(sched_mail_due(jobs, job, SCHED_JOB_PENDING, msgs), 2);
    cr_assert_eq(msgs[0].event, SCHED_MAIL_INVALID_DEPEND);
    cr_assert_eq(msgs[1].event, SCHED_MAIL_FAILED);
    job->mail_sent |= GS_MAIL_INVALID_DEPEND; /* as sched_mail.c records it */
    cr_assert_eq(sched_mail_due(jobs, job, SCHED_JOB_PENDING, msgs), 1, "mailed already");
    cr_assert_eq(msgs[0].event, SCHED_MAIL_FAILED);
    snprintf(plain->reason, sizeof(plain->reason), "scancel");
    plain->state = SCHED_JOB_CANCELLED;
    cr_assert_eq(sched_mail_due(jobs, plain, SCHED_JOB_PENDING, msgs), 0,
                 "cancelled for another reason");
}

Test(mail, shares_of_the_time_limit_the_highest_reached_once)
{
    struct sched_job *job = add(30, GS_MAIL_TIME_LIMIT_50 | GS_MAIL_TIME_LIMIT_90, "s");
    uint32_t bit;

    job->state = SCHED_JOB_RUNNING;
    job->start_ms = 1000;
    cr_assert_eq(sched_mail_time_share(job, 1000 + 49000, &bit), 0);
    cr_assert_eq(sched_mail_time_share(job, 1000 + 50000, &bit), 50);
    job->mail_sent |= bit;
    cr_assert_eq(sched_mail_time_share(job, 1000 + 85000, &bit), 0, "80 was not asked for");
    cr_assert_eq(sched_mail_time_share(job, 1000 + 95000, &bit), 90);
    job->mail_sent |= bit;
    cr_assert_eq(sched_mail_time_share(job, 1000 + 99000, &bit), 0);
    job->mail_sent = 0;
    cr_assert_eq(sched_mail_time_share(job, 1000 + 99000, &bit), 90, "late: only the highest");
    cr_assert_eq(bit & GS_MAIL_TIME_LIMIT_50, GS_MAIL_TIME_LIMIT_50);
    job->spec->time_limit_s = GS_DURATION_INFINITE;
    cr_assert_eq(sched_mail_time_share(job, 1000 + 99000, &bit), 0, "no limit, no share");
}

/* As gschedd announces them: states first (a pass, one event), then each change in turn. */
static size_t announce(struct sched_job *job)
{
    struct sched_mail_msg msgs[SCHED_MAIL_MAX];
    enum sched_job_state before = job->mail_seen;

    job->mail_seen = job->state;
    return sched_mail_due(jobs, job, before, msgs);
}

Test(mail, elements_started_or_ended_together_are_mailed_about_once)
{
    struct sched_job *e[3];
    size_t sent = 0;

    for (int i = 0; i < 3; i++) {
        e[i] = add(40 + (uint64_t)i, GS_MAIL_BEGIN | GS_MAIL_END, "together");
        e[i]->spec->array.array_job_id = 40;
        e[i]->spec->array.task_id = (uint32_t)i;
        e[i]->spec->array.count = 3;
    }
    for (int i = 0; i < 3; i++)
        e[i]->state = SCHED_JOB_RUNNING; /* one pass started them all */
    for (int i = 0; i < 3; i++)
        sent += announce(e[i]);
    cr_assert_eq(sent, 1, "one BEGIN for the array");
    for (int i = 0; i < 3; i++)
        e[i]->state = SCHED_JOB_COMPLETED;
    sent = 0;
    for (int i = 2; i >= 0; i--)
        sent += announce(e[i]);
    cr_assert_eq(sent, 1, "one END for the array");
}
