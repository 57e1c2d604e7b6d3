/*
 * mail.c: which mail a job's change makes due, and its subject (see mail.h).
 *
 * A decision compares the state the job's previous decision saw with its state now, so a
 * change seen twice (two notifications of one event) mails once, and the states a restart
 * reloads are taken as seen (sched_persist.c): what happened before the restart is not
 * mailed again. A job that ends not COMPLETED mails "Failed" when it asked for FAIL, else
 * "Ended" when it asked for END: one message, not two.
 */
#include "scheduler/mail.h"

#include <stdio.h>
#include <string.h>

#include "common/jobspec_mail.h"
#include "common/units.h"

static bool failed_state(enum sched_job_state s)
{
    return s != SCHED_JOB_COMPLETED && s != SCHED_JOB_PENDING && s != SCHED_JOB_RUNNING &&
           s != SCHED_JOB_REQUEUED;
}

static bool is_element(const struct sched_job *job)
{
    return job->spec->array.array_job_id != 0;
}

/* Mailed about as a job of its own: not an array's element, or one asking for each. */
static bool on_its_own(const struct sched_job *job)
{
    return !is_element(job) || (job->spec->mail_types & GS_MAIL_ARRAY_TASKS) != 0;
}

/*
 * What the elements of job's array are at, as far as mail goes: whether one other than job
 * has been decided on as started, whether all have ended and been decided on (job itself
 * only ended), whether one ended other than COMPLETED; their exit codes' range, and their
 * end state when they share one (else mixed). A pass starts many elements, and one event
 * can end several, before their changes are announced one by one: what the other elements'
 * decisions saw (mail_seen), not their states, makes one of them the first to start and one
 * the last to end. Elements no longer in the table ended long ago and count as ended.
 */
struct array_view {
    bool other_started, all_ended, any_failed, mixed;
    int32_t min_exit, max_exit;
    enum sched_job_state state;
};

static void view_array(const struct sched_jobs *jobs, const struct sched_job *job,
                       struct array_view *v)
{
    uint64_t first = job->spec->array.array_job_id;

    *v = (struct array_view){
        .all_ended = true, .min_exit = INT32_MAX, .max_exit = INT32_MIN, .state = job->state};
    for (uint64_t id = first; id < first + job->spec->array.count; id++) {
        const struct sched_job *e = sched_jobs_find(jobs, id);

        if (e == NULL || e->spec->array.array_job_id != first)
            continue;
        if (e != job && (e->mail_seen != SCHED_JOB_PENDING || e->restarts > 0))
            v->other_started = true;
        if (!sched_job_finished(e) || (e != job && (e->mail_seen == SCHED_JOB_PENDING ||
                                                    e->mail_seen == SCHED_JOB_RUNNING))) {
            v->all_ended = false;
            continue;
        }
        v->any_failed = v->any_failed || failed_state(e->state);
        v->mixed = v->mixed || e->state != v->state;
        v->min_exit = e->exit_code < v->min_exit ? e->exit_code : v->min_exit;
        v->max_exit = e->exit_code > v->max_exit ? e->exit_code : v->max_exit;
    }
}

static size_t add(struct sched_mail_msg *out, size_t n, enum sched_mail_event ev, bool summary)
{
    out[n] = (struct sched_mail_msg){ev, 0, summary};
    return n + 1;
}

/* The END/FAIL message of a job (or of its whole array) that ended, if it asked for one. */
static size_t ended(const struct sched_jobs *jobs, const struct sched_job *job, uint32_t types,
                    struct sched_mail_msg *out, size_t n)
{
    bool failed = failed_state(job->state), summary = !on_its_own(job);
    struct array_view v;

    if (summary) {
        view_array(jobs, job, &v);
        if (!v.all_ended)
            return n; /* the last element to end says it for all */
        failed = v.any_failed;
    }
    if (failed && (types & GS_MAIL_FAIL) != 0)
        return add(out, n, SCHED_MAIL_FAILED, summary);
    if (types & GS_MAIL_END)
        return add(out, n, SCHED_MAIL_ENDED, summary);
    return n;
}

size_t sched_mail_due(const struct sched_jobs *jobs, const struct sched_job *job,
                      enum sched_job_state before, struct sched_mail_msg out[SCHED_MAIL_MAX])
{
    uint32_t types = job->spec->mail_types;
    bool was_over = sched_job_finished_state(before);
    size_t n = 0;

    if (types == 0 || before == job->state)
        return 0;
    if (job->state == SCHED_JOB_RUNNING && (types & GS_MAIL_BEGIN) != 0) {
        struct array_view v = {0};

        if (!on_its_own(job))
            view_array(jobs, job, &v);
        if (!v.other_started)
            n = add(out, n, SCHED_MAIL_BEGAN, !on_its_own(job));
    }
    if (job->state == SCHED_JOB_PENDING && before == SCHED_JOB_RUNNING &&
        (types & GS_MAIL_REQUEUE) != 0)
        n = add(out, n, SCHED_MAIL_REQUEUED, false);
    /* Cancelled for it (kill_invalid_depend) in the pass that found it out, before the
     * cron could see it waiting */
    if (job->state == SCHED_JOB_CANCELLED && before == SCHED_JOB_PENDING &&
        (types & ~job->mail_sent & GS_MAIL_INVALID_DEPEND) != 0 &&
        strcmp(job->reason, "DependencyNeverSatisfied") == 0)
        n = add(out, n, SCHED_MAIL_INVALID_DEPEND, false);
    if (sched_job_finished(job) && !was_over) {
        if (job->state == SCHED_JOB_TIMEOUT && (types & GS_MAIL_TIME_LIMIT) != 0)
            n = add(out, n, SCHED_MAIL_TIME_LIMIT, false);
        n = ended(jobs, job, types, out, n);
    }
    return n;
}

uint32_t sched_mail_time_share(const struct sched_job *job, uint64_t now_ms, uint32_t *ret_bit)
{
    static const struct {
        uint32_t pct, bit, with;
    } shares[] = {
        {90, GS_MAIL_TIME_LIMIT_90, GS_MAIL_TIME_LIMIT_80 | GS_MAIL_TIME_LIMIT_50},
        {80, GS_MAIL_TIME_LIMIT_80, GS_MAIL_TIME_LIMIT_50},
        {50, GS_MAIL_TIME_LIMIT_50, 0},
    };
    uint64_t limit_s = job->spec->time_limit_s;
    uint32_t want = job->spec->mail_types & ~job->mail_sent;

    *ret_bit = 0;
    if (job->state != SCHED_JOB_RUNNING || job->start_ms == 0 || now_ms < job->start_ms ||
        limit_s == 0 || limit_s == GS_DURATION_INFINITE || limit_s > UINT64_MAX / 100000)
        return 0;
    for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
        if ((want & shares[i].bit) == 0 ||
            sched_job_run_ms(job, now_ms) * 100 < shares[i].pct * limit_s * 1000)
            continue;
        *ret_bit = shares[i].bit | shares[i].with;
        return shares[i].pct;
    }
    return 0;
}

bool sched_mail_invalid_depend(const struct sched_job *job)
{
    return job->state == SCHED_JOB_PENDING &&
           (job->spec->mail_types & ~job->mail_sent & GS_MAIL_INVALID_DEPEND) != 0 &&
           strcmp(job->reason, "DependencyNeverSatisfied") == 0;
}

/* Slurm's mail durations: HH:MM:SS, or D-HH:MM:SS past a day. */
static void put_time(struct gs_buf *out, uint64_t ms)
{
    uint64_t s = ms / 1000;

    if (s >= 86400)
        gs_buf_printf(out, "%llu-", (unsigned long long)(s / 86400));
    gs_buf_printf(out, "%02u:%02u:%02u", (unsigned)(s % 86400 / 3600), (unsigned)(s % 3600 / 60),
                  (unsigned)(s % 60));
}

/* "Slurm Job_id=42 Name=train", the array's or element's form as msg says; the name's
 * control characters (a subject is one line) as '?'. */
static void put_head(const struct sched_job *job, const struct sched_mail_msg *msg,
                     struct gs_buf *out)
{
    const struct gs_job_array *a = &job->spec->array;
    const char *name = job->spec->name != NULL ? job->spec->name : "";

    if (msg->array_summary)
        gs_buf_printf(out, "Slurm Array Summary Job_id=%llu_* (%llu) Name=",
                      (unsigned long long)a->array_job_id, (unsigned long long)a->array_job_id);
    else if (is_element(job))
        gs_buf_printf(out, "Slurm Array Task Job_id=%llu_%u (%llu) Name=",
                      (unsigned long long)a->array_job_id, a->task_id, (unsigned long long)job->id);
    else
        gs_buf_printf(out, "Slurm Job_id=%llu Name=", (unsigned long long)job->id);
    for (const char *p = name; *p != '\0'; p++)
        gs_buf_putc(out, (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
}

/* ", COMPLETED, ExitCode 0", or an array's ", Mixed, ExitCode [0-1]". */
static void put_outcome(const struct sched_jobs *jobs, const struct sched_job *job,
                        const struct sched_mail_msg *msg, struct gs_buf *out)
{
    struct array_view v;

    if (!msg->array_summary) {
        gs_buf_printf(out, ", %s, ExitCode %d", sched_job_state_name(job->state), job->exit_code);
        return;
    }
    view_array(jobs, job, &v);
    gs_buf_printf(out, ", %s, ExitCode [%d", v.mixed ? "Mixed" : sched_job_state_name(v.state),
                  v.min_exit);
    if (v.max_exit != v.min_exit)
        gs_buf_printf(out, "-%d", v.max_exit);
    gs_buf_putc(out, ']');
}

void sched_mail_subject(const struct sched_jobs *jobs, const struct sched_job *job,
                        const struct sched_mail_msg *msg, uint64_t now_ms, struct gs_buf *subject,
                        const char **ret_type)
{
    put_head(job, msg, subject);
    switch (msg->event) {
    case SCHED_MAIL_BEGAN:
        *ret_type = "Began";
        gs_buf_append_str(subject, " Began, Queued time ");
        put_time(subject, job->start_ms > job->submit_ms ? job->start_ms - job->submit_ms : 0);
        return;
    case SCHED_MAIL_ENDED:
    case SCHED_MAIL_FAILED:
        *ret_type = msg->event == SCHED_MAIL_ENDED ? "Ended" : "Failed";
        gs_buf_printf(subject, " %s", *ret_type);
        if (!msg->array_summary) {
            gs_buf_append_str(subject, ", Run time ");
            put_time(subject, sched_job_run_ms(job, now_ms));
        }
        put_outcome(jobs, job, msg, subject);
        return;
    case SCHED_MAIL_REQUEUED:
        *ret_type = "Requeued";
        gs_buf_append_str(subject, " Requeued, Run time ");
        put_time(subject, sched_job_run_ms(job, now_ms));
        return;
    case SCHED_MAIL_TIME_LIMIT:
        *ret_type = "Time_limit";
        gs_buf_append_str(subject, " Reached time limit, Run time ");
        put_time(subject, sched_job_run_ms(job, now_ms));
        return;
    case SCHED_MAIL_INVALID_DEPEND:
        *ret_type = "Invalid_depend";
        gs_buf_append_str(subject, " Failed, Invalid dependency");
        return;
    case SCHED_MAIL_TIME_SHARE:
        *ret_type = msg->pct >= 90   ? "Time_limit_90"
                    : msg->pct >= 80 ? "Time_limit_80"
                                     : "Time_limit_50";
        gs_buf_printf(subject, " Reached %u%% of time limit, Run time ", msg->pct);
        put_time(subject, sched_job_run_ms(job, now_ms));
        return;
    }
}
