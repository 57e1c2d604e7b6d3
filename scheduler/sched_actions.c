/*
 * sched_actions.c: what users do to their jobs: cancel (or signal), hold, release and
 * requeue, for the jobs a selector names (ids, or filters over the caller's jobs; root's
 * over everyone's), root's suspend and resume, and the idle policy's cancel or requeue.
 * Each job's result is collected; the changes are stored together and sched_cli.c answers
 * once they are.
 *
 * A suspended job's tasks are stopped (SIGSTOP to each process group, every step, every
 * node) and it keeps its allocation: stopped processes still hold their memory, GPU memory
 * included, so nothing else could use its GPUs anyway (Slurm hands a suspended job's CPUs to
 * other jobs). Its workers drop its time limit while it is stopped and get it back, the
 * suspended time left out, when it resumes (sched_job_limit_send). Workers are told only
 * once the change is on disk, and then what the job's record says at that moment, so two
 * requests in a row leave the tasks as the last one asked.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

struct action_op {
    struct sched_cli *cli;
    uint64_t request_id;
    Gs__Envelope__BodyCase what;
    struct sched_action_result *results;
    size_t n;
};

/*
 * scontrol requeue: a running job's tasks are ended and it queues again when they have; an
 * ended one queues again at once (Slurm requeues finished batch jobs too).
 */
static int requeue(struct sched_ctx *s, struct sched_cli *c, bool hold, struct sched_job *job,
                   struct sched_change *ch, char *msg, size_t size)
{
    uint64_t now = gs_clock_wall_ms();
    char detail[160];
    int rc;

    snprintf(detail, sizeof(detail), "requeued%s by %s", hold ? " held" : "",
             c->uid == 0 ? "root" : job->user);
    rc = sched_job_requeue(job, hold, detail);
    if (rc < 0) {
        snprintf(msg, size, "job %llu is pending: only running or ended jobs can be requeued",
                 (unsigned long long)job->id);
        return rc;
    }
    if (rc == 0) {
        sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
        snprintf(msg, size, "requeueing: its tasks are being ended");
        return 0;
    }
    s->plan_from = 0; /* an ended job is in the queue again */
    sched_job_note(job, now, SCHED_JOB_PENDING, detail);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", "REQUEUED", detail);
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
    return 0;
}

static bool all_started(const struct sched_job *job)
{
    for (uint32_t r = 0; r < job->ntasks; r++) {
        if (!job->tasks[r].started && !job->tasks[r].ended)
            return false;
    }
    return true;
}

/* scontrol suspend or resume of one job, root's (checked by the caller): the record only;
 * its tasks are told once it is stored (apply_suspension). */
static int suspend(struct sched_ctx *s, bool resume, struct sched_job *job, struct sched_change *ch,
                   char *msg, size_t size)
{
    uint64_t now = gs_clock_wall_ms();
    const char *detail = resume ? "resumed by root" : "suspended by root";
    int rc;

    if (!resume && job->state == SCHED_JOB_RUNNING && !all_started(job)) {
        snprintf(msg, size, "job %llu is still starting its tasks: suspend it once they run",
                 (unsigned long long)job->id);
        return -EAGAIN;
    }
    rc = sched_job_limit_reachable(s, job, resume ? "resume" : "suspend", msg, size);
    if (rc < 0)
        return rc;
    rc = sched_job_suspend(job, resume, now);
    if (rc == -EALREADY)
        snprintf(msg, size, "job %llu is %s suspended", (unsigned long long)job->id,
                 resume ? "not" : "already");
    else if (rc < 0 && job->state == SCHED_JOB_RUNNING)
        snprintf(msg, size, "job %llu is ending", (unsigned long long)job->id);
    else if (rc < 0)
        snprintf(msg, size, "job %llu is %s: only running jobs can be %s",
                 (unsigned long long)job->id, sched_job_state_name(job->state),
                 resume ? "resumed" : "suspended");
    if (rc < 0)
        return rc;
    sched_job_note(job, now, job->state, detail);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", resume ? "RESUMED" : "SUSPENDED", detail);
    sched_query_job_changed(s, job);
    sched_engine_wake(s); /* its end moves: backfill plans again */
    return 0;
}

/* Stops or continues job's tasks as its record says now, with the time limit that goes
 * with it (none while stopped). */
static void apply_suspension(struct sched_ctx *s, const struct sched_job *job)
{
    GS_LOG(GS_LOG_INFO, "job=%llu suspended=%d tasks %s", (unsigned long long)job->id,
           (int)job->suspended, job->suspended ? "stopped" : "continued");
    if (job->suspended) {
        sched_signal_job(s, job, UINT32_MAX, SIGSTOP, GS__END_REASON__END_REASON_NONE,
                         "scontrol suspend");
        sched_job_limit_send(s, job, NULL);
        return;
    }
    sched_job_limit_send(s, job, NULL);
    sched_signal_job(s, job, UINT32_MAX, SIGCONT, GS__END_REASON__END_REASON_NONE,
                     "scontrol resume");
    sched_steps_job_resumed(s, job->id);
}

void sched_action_resend_suspension(const struct sched_job *job, struct sched_node *n)
{
    Gs__SignalTasks sig;
    Gs__Envelope env;

    /* Only a job suspended in this attempt: a STOP the user sent (scancel -s STOP) to one
     * never suspended stays theirs. */
    if (job->state != SCHED_JOB_RUNNING || (!job->suspended && job->suspended_ms == 0))
        return;
    sched_signal_tasks_msg(&sig, &env, job->id, job->suspended ? SIGSTOP : SIGCONT,
                           GS__END_REASON__END_REASON_NONE,
                           job->suspended ? "scontrol suspend" : "scontrol resume");
    sig.all_steps = true;
    sched_node_send(n, &env);
}

void sched_action_idle_end(struct sched_ctx *s, struct sched_job *job, bool requeue,
                           const char *why)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;

    if (job->state != SCHED_JOB_RUNNING || job->cancel_requested || job->requeue_requested)
        return;
    if (requeue) {
        if (sched_job_requeue(job, false, why) < 0)
            return;
    } else {
        snprintf(job->reason, sizeof(job->reason), "%s", why);
        sched_job_cancel(job, now);
    }
    sched_job_note(job, now, job->state, why);
    sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, why);
    ch = sched_change_new(s);
    if (ch == NULL)
        return;
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(job->state), why);
    sched_change_commit(s, ch, NULL, NULL);
}

/* One job's action (flag: RequeueRequest.hold or SuspendRequest.resume); returns 0 or a
 * negative errno with msg saying why. */
static int act(struct sched_ctx *s, struct sched_cli *c, Gs__Envelope__BodyCase what,
               const Gs__CancelRequest *cancel, bool flag, struct sched_job *job,
               struct sched_change *ch, char *msg, size_t size)
{
    uint64_t now = gs_clock_wall_ms();
    char detail[160];

    if (what == GS__ENVELOPE__BODY_SUSPEND_REQUEST && c->uid != 0) {
        snprintf(msg, size, "job %llu: permission denied (only root may suspend or resume jobs)",
                 (unsigned long long)job->id);
        return -EPERM;
    }
    if (c->uid != 0 && c->uid != job->uid) {
        snprintf(msg, size, "job %llu: permission denied (it belongs to %s)",
                 (unsigned long long)job->id, job->user);
        return -EPERM;
    }
    if (what == GS__ENVELOPE__BODY_SUSPEND_REQUEST)
        return suspend(s, flag, job, ch, msg, size);
    if (what == GS__ENVELOPE__BODY_REQUEUE_REQUEST)
        return requeue(s, c, flag, job, ch, msg, size);
    if (sched_job_finished(job)) {
        snprintf(msg, size, "job %llu has already ended (%s)", (unsigned long long)job->id,
                 sched_job_state_name(job->state));
        return -EALREADY;
    }
    if (what == GS__ENVELOPE__BODY_CANCEL_REQUEST && cancel->signal != 0) {
        if (job->state != SCHED_JOB_RUNNING) {
            snprintf(msg, size, "job %llu is not running", (unsigned long long)job->id);
            return -EINVAL;
        }
        if (cancel->batch_only && !gs_jobspec_runs_leader(job->spec)) {
            snprintf(msg, size, "job %llu has no batch step", (unsigned long long)job->id);
            return -EINVAL;
        }
        if (cancel->batch_only)
            sched_signal_batch(s, job, cancel->signal);
        else
            sched_signal_job(s, job, UINT32_MAX, cancel->signal, GS__END_REASON__END_REASON_NONE,
                             "signal from gsched cancel");
        snprintf(msg, size, "signal %u sent", cancel->signal);
        return 0;
    }
    if (what == GS__ENVELOPE__BODY_CANCEL_REQUEST) {
        snprintf(detail, sizeof(detail), "cancelled by %s%s%s", c->uid == 0 ? "root" : job->user,
                 cancel->reason && cancel->reason[0] ? ": " : "",
                 cancel->reason ? cancel->reason : "");
        snprintf(job->reason, sizeof(job->reason), "%s", detail);
        if (sched_job_cancel(job, now)) {
            sched_job_note(job, now, job->state, detail);
            sched_change_event(ch, now, job->id, "", "CANCELLED", detail);
            sched_query_job_changed(s, job);
            sched_engine_wake(s); /* its dependents may now be decided */
        } else {
            sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
            snprintf(msg, size, "cancelling: its tasks are being ended");
            sched_alloc_cancelled(s, job); /* an allocation has no task of its own to end */
        }
        sched_change_job(ch, job);
        return 0;
    }
    if (job->state != SCHED_JOB_PENDING) {
        snprintf(msg, size, "job %llu is %s: only pending jobs can be %s",
                 (unsigned long long)job->id, sched_job_state_name(job->state),
                 what == GS__ENVELOPE__BODY_HOLD_REQUEST ? "held" : "released");
        return -EINVAL;
    }
    if ((what == GS__ENVELOPE__BODY_HOLD_REQUEST) == job->held) {
        snprintf(msg, size, "job %llu is %s held", (unsigned long long)job->id,
                 job->held ? "already" : "not");
        return -EALREADY;
    }
    job->held = what == GS__ENVELOPE__BODY_HOLD_REQUEST;
    snprintf(job->reason, sizeof(job->reason), "%s", job->held ? "Held" : "");
    job->expected_start_ms = 0;
    snprintf(detail, sizeof(detail), "%s by %s", job->held ? "held" : "released",
             c->uid == 0 ? "root" : job->user);
    sched_job_note(job, now, job->state, detail);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", "PENDING", detail);
    if (!job->held)
        sched_engine_wake(s);
    return 0;
}

static void action_stored(struct sched_ctx *s, int status, void *arg)
{
    struct action_op *op = arg;

    for (size_t i = 0;
         status == 0 && !s->stopping && op->what == GS__ENVELOPE__BODY_SUSPEND_REQUEST && i < op->n;
         i++) {
        struct sched_job *job = sched_jobs_find(s->jobs, op->results[i].job_id);

        if (op->results[i].code == 0 && job != NULL && job->state == SCHED_JOB_RUNNING)
            apply_suspension(s, job);
    }
    if (status < 0)
        sched_cli_error(op->cli, op->request_id, status, "the change could not be stored", true);
    else
        sched_cli_action_reply(op->cli, op->request_id, op->what, op->results, op->n);
    free(op->results);
    free(op);
}

static void add_result(struct action_op *op, uint64_t job_id, int code, const char *msg,
                       Gs__JobState state, size_t cap)
{
    struct sched_action_result *r;

    if (op->n >= cap)
        return; /* out of memory: answered with fewer results */
    r = &op->results[op->n++];
    r->job_id = job_id;
    r->code = code;
    r->state = state;
    snprintf(r->message, sizeof(r->message), "%s", msg);
}

void sched_action(struct sched_cli *c, const Gs__Envelope *env)
{
    struct sched_ctx *s = c->s;
    const Gs__JobSelector *sel = NULL;
    const Gs__CancelRequest *cancel = NULL;
    bool flag = false; /* RequeueRequest.hold, SuspendRequest.resume */
    uint64_t *ids = NULL;
    size_t nids = 0;
    struct action_op *op = calloc(1, sizeof(*op));
    size_t count = sched_jobs_count(s->jobs), cap;
    struct sched_change *ch = sched_change_new(s);
    char msg[160];

    if (env->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST) {
        cancel = env->cancel_request;
        sel = cancel->selector;
    } else if (env->body_case == GS__ENVELOPE__BODY_REQUEUE_REQUEST) {
        sel = env->requeue_request->selector;
        flag = env->requeue_request->hold;
    } else if (env->body_case == GS__ENVELOPE__BODY_HOLD_REQUEST) {
        sel = env->hold_request->selector;
    } else if (env->body_case == GS__ENVELOPE__BODY_SUSPEND_REQUEST) {
        sel = env->suspend_request->selector;
        flag = env->suspend_request->resume;
    } else {
        sel = env->release_request->selector;
    }
    if (op == NULL || ch == NULL || sel == NULL) {
        sched_cli_error(c, env->request_id, op == NULL || ch == NULL ? -ENOMEM : -EINVAL,
                        op == NULL || ch == NULL ? "out of memory" : "no jobs selected", false);
        free(op);
        sched_change_commit(s, ch, NULL, NULL);
        return;
    }
    if (sel->n_job_ids > 0 && sched_expand_ids(s, sel->job_ids, sel->n_job_ids, &ids, &nids) < 0)
        nids = 0; /* out of memory: answered with no results */
    cap = sel->n_job_ids > 0 ? nids : count;
    op->cli = c;
    op->request_id = env->request_id;
    op->what = env->body_case;
    op->results = calloc(cap + 1, sizeof(*op->results));
    if (op->results == NULL)
        cap = 0;
    for (size_t i = 0; i < (sel->n_job_ids > 0 ? nids : count); i++) {
        struct sched_job *job =
            sel->n_job_ids > 0 ? sched_jobs_find(s->jobs, ids[i]) : sched_jobs_at(s->jobs, i);
        int rc;

        if (sel->n_job_ids == 0 &&
            (!sched_job_selected(job, sel, false) || (c->uid != 0 && c->uid != job->uid)))
            continue;
        msg[0] = '\0';
        if (job == NULL) {
            snprintf(msg, sizeof(msg), "job %llu: no such job", (unsigned long long)ids[i]);
            add_result(op, ids[i], -ENOENT, msg, GS__JOB_STATE__JOB_STATE_UNSPECIFIED, cap);
            continue;
        }
        rc = act(s, c, env->body_case, cancel, flag, job, ch, msg, sizeof(msg));
        add_result(op, job->id, rc, msg, sched_job_wire_state(job), cap);
    }
    free(ids);
    sched_cli_hold(c);
    sched_change_commit(s, ch, action_stored, op);
}
