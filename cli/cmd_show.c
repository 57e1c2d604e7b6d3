/*
 * cmd_show.c: `gsched show JOB [--json] [--socket PATH]`: one job in full, as `scontrol show
 * job` lays it out (Key=Value, a few per line, continuation lines indented), then its state
 * history and how each task ended:
 *
 *     JobId=42 Name=train
 *        User=alice(1000) Group=1000 Priority=0 Held=no
 *        State=RUNNING Reason=None ExitCode=0:0 Restarts=0
 *        ...
 *     History:
 *        2024-05-01T10:00:00 PENDING submitted
 *     Tasks:
 *        Rank=0 Node=n1 ExitCode=0:0 EndReason=NONE Attempt=0
 *
 * A suspended job's State is SUSPENDED, its Elapsed (the time it ran, suspensions left out)
 * stopped at its SuspendTime.
 *
 * A job whose tasks report their progress (gsched-train does) gets one line for the latest
 * report before its history (wrapped here), the numbers the report left at 0 (unknown) left
 * out, and its free text, if any, indented on the next:
 *
 *     Progress: step 120/300 (40%) loss 2.314 eval 2.401 tokens/s 8200 ranks 2 comm 31 ms
 *     exposed 6 ms overlap 0.81 (3 s ago)
 *
 * --json prints the whole ShowReply: {"job":{...},"history":[...],"task_exits":[...],
 * "progress":{...} or null}.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "cli/usage_print.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/units.h"

static const char *or_none(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "None";
}

/*
 * The put_ functions write straight through: out keeps its first failure, which show_text
 * returns once at the end (gs_buf_error).
 */
static void put_identity(struct gs_buf *out, const Gs__JobInfo *job)
{
    const Gs__UserIdentity *u = job->user;

    if (u == NULL)
        gs_buf_printf(out, "   User=Unknown Priority=%d Held=%s\n", job->priority,
                      job->held ? "yes" : "no");
    else
        gs_buf_printf(out, "   User=%s(%u) Group=%u Priority=%d Held=%s\n", or_none(u->username),
                      u->uid, u->gid, job->priority, job->held ? "yes" : "no");
}

static void put_state(struct gs_buf *out, const Gs__JobInfo *job)
{
    gs_buf_printf(out, "   State=%s Reason=%s ExitCode=%d:%u Restarts=%u\n",
                  cli_job_shown_name(job), or_none(job->reason), job->signaled ? 0 : job->exit_code,
                  job->signaled ? job->term_signal : 0, job->restart_count);
}

static void put_times(struct gs_buf *out, const Gs__JobInfo *job, uint64_t now_ms)
{
    uint64_t limit = job->resources != NULL ? job->resources->time_limit_s : 0;
    char submit[32], start[32], end[32], elapsed[32], tl[32];

    gs_buf_printf(out, "   SubmitTime=%s StartTime=%s EndTime=%s\n",
                  cli_format_time(job->submit_time_ms, submit, sizeof(submit)),
                  cli_format_time(job->start_time_ms, start, sizeof(start)),
                  cli_format_time(job->end_time_ms, end, sizeof(end)));
    /* Elapsed leaves out the time suspended, which does not count against the limit. */
    cli_format_elapsed(cli_job_run_s(job, job->state, now_ms), elapsed, sizeof(elapsed));
    gs_format_duration(limit > 0 ? limit : GS_DURATION_INFINITE, tl, sizeof(tl));
    gs_buf_printf(out, "   Elapsed=%s TimeLimit=%s", elapsed, tl);
    if (cli_job_suspended(job))
        gs_buf_printf(out, " SuspendTime=%s",
                      cli_format_time(job->suspend_time_ms, start, sizeof(start)));
    if (job->state == GS__JOB_STATE__JOB_STATE_PENDING && job->expected_start_ms > 0)
        gs_buf_printf(out, " ExpectedStart=%s",
                      cli_format_time(job->expected_start_ms, start, sizeof(start)));
    if (job->state == GS__JOB_STATE__JOB_STATE_PENDING && job->sched_nodes != NULL &&
        job->sched_nodes[0] != '\0')
        gs_buf_printf(out, " On=%s", job->sched_nodes);
    gs_buf_putc(out, '\n');
}

static const char *or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "(null)";
}

/*
 * Partition, account, QOS, reservation and array element, for jobs that have them. The
 * reservation is only in the spec, which ShowReply carries; "(null)" as scontrol prints.
 */
static void put_slurm(struct gs_buf *out, const Gs__JobInfo *job)
{
    const char *reservation = job->spec != NULL ? job->spec->reservation : NULL;

    if ((job->partition != NULL && job->partition[0] != '\0') ||
        (reservation != NULL && reservation[0] != '\0'))
        gs_buf_printf(out, "   Partition=%s Account=%s QOS=%s Reservation=%s\n",
                      or_null(job->partition), or_null(job->account), or_null(job->qos),
                      or_null(reservation));
    if (job->spec != NULL && job->spec->n_licenses > 0) {
        gs_buf_append_str(out, "   Licenses=");
        cli_job_licenses(out, job->spec);
        gs_buf_append_str(out, "\n");
    }
    if (job->array_job_id != 0)
        gs_buf_printf(out, "   ArrayJobId=%llu ArrayTaskId=%u\n",
                      (unsigned long long)job->array_job_id, job->array_task_id);
    if (job->spec != NULL && job->spec->data != NULL) {
        const Gs__JobData *d = job->spec->data;

        gs_buf_printf(out, "   Dataset=%s Source=%s Shards=%u Bytes=%llu Stage=%s\n", d->dataset,
                      d->source, d->shards, (unsigned long long)d->bytes,
                      d->stage == GS__DATA_STAGE__DATA_STAGE_STREAM ? "stream" : "before");
    }
}

static void put_resources(struct gs_buf *out, const Gs__JobInfo *job)
{
    const Gs__Resources *r = job->resources;

    gs_buf_printf(out, "   Nodes=%u GpusPerNode=%u", r != NULL ? r->nodes : 0,
                  r != NULL ? r->gpus_per_node : 0);
    if (r != NULL && r->mem_per_node_mib > 0)
        gs_buf_printf(out, " MemPerNode=%lluM", (unsigned long long)r->mem_per_node_mib);
    if (r != NULL && r->tmp_per_node_mib > 0)
        gs_buf_printf(out, " TmpPerNode=%lluM", (unsigned long long)r->tmp_per_node_mib);
    if (r != NULL && r->constraint != NULL && r->constraint[0] != '\0')
        gs_buf_printf(out, " Constraint=%s", r->constraint);
    if (r != NULL && r->exclusive)
        gs_buf_append_str(out, " Exclusive=yes");
    gs_buf_append_str(out, " NodeList=");
    if (job->n_allocation > 0)
        cli_job_nodelist(out, job->allocation, job->n_allocation, true);
    else
        gs_buf_append_str(out, "None");
    /* How each node's GPUs are linked, as the placement judged them. */
    for (size_t i = 0, shown = 0; i < job->n_allocation; i++) {
        const Gs__NodeAllocation *a = job->allocation[i];

        if (a->gpu_link != NULL && a->gpu_link[0] != '\0')
            gs_buf_printf(out, "%s%s:%s(score=%llu)", shown++ == 0 ? " GpuLinks=" : ",",
                          a->node_name, a->gpu_link, (unsigned long long)a->gpu_score);
    }
    gs_buf_putc(out, '\n');
}

/* What runs and where: only in the spec, which ShowReply carries. */
static void put_run(struct gs_buf *out, const Gs__JobSpec *spec)
{
    const Gs__RunSpec *run = spec != NULL ? spec->run : NULL;

    if (run == NULL)
        return;
    gs_buf_append_str(out, "   Command=");
    if (run->n_argv > 0)
        gs_buf_argv_join(out, run->argv, run->n_argv);
    else
        gs_buf_append_str(out, "(script)");
    gs_buf_printf(out, "\n   WorkDir=%s\n   StdOut=%s", or_none(run->workdir),
                  or_none(run->stdout_pattern));
    if (run->stderr_pattern != NULL && run->stderr_pattern[0] != '\0')
        gs_buf_printf(out, " StdErr=%s", run->stderr_pattern);
    /* As the job file says it ([run] launcher); the default says nothing. */
    if (run->launcher == GS__LAUNCHER__LAUNCHER_MPI)
        gs_buf_append_str(out, " Launcher=mpi");
    else if (run->launcher == GS__LAUNCHER__LAUNCHER_TORCHRUN)
        gs_buf_append_str(out, " Launcher=torchrun");
    else if (run->launcher != GS__LAUNCHER__LAUNCHER_NONE)
        gs_buf_printf(out, " Launcher=%d", (int)run->launcher);
    gs_buf_putc(out, '\n');
}

/* "3 s", "4 min", "2 h": how long ago a report came, coarser as it ages. */
static void format_age(uint64_t then_ms, uint64_t now_ms, char *out, size_t size)
{
    uint64_t s = now_ms > then_ms ? (now_ms - then_ms) / 1000 : 0;

    if (s < 120)
        snprintf(out, size, "%llu s", (unsigned long long)s);
    else if (s < 2 * 3600)
        snprintf(out, size, "%llu min", (unsigned long long)(s / 60));
    else
        snprintf(out, size, "%llu h", (unsigned long long)(s / 3600));
}

/* Decimals for a time in ms: "31 ms", but "0.4 ms" rather than "0 ms" on a small model. */
static int ms_digits(double ms)
{
    return ms < 10 ? 1 : 0;
}

/* The latest progress report on one line (and its free text on the next), if there is one. */
static void put_progress(struct gs_buf *out, const Gs__JobProgressReport *p, uint64_t now_ms)
{
    char age[32];

    if (p == NULL)
        return;
    gs_buf_printf(out, "Progress: step %llu", (unsigned long long)p->step);
    if (p->steps > 0)
        gs_buf_printf(out, "/%llu (%.0f%%)", (unsigned long long)p->steps,
                      100.0 * (double)p->step / (double)p->steps);
    /* 0 is "not reported"; a NaN loss is news and printed as such. */
    if (p->loss != 0)
        gs_buf_printf(out, " loss %.3f", p->loss);
    if (p->eval_loss != 0)
        gs_buf_printf(out, " eval %.3f", p->eval_loss);
    if (p->tokens_per_s > 0)
        gs_buf_printf(out, " tokens/s %.0f", p->tokens_per_s);
    if (p->mfu > 0)
        gs_buf_printf(out, " MFU %.1f%%", 100.0 * p->mfu);
    if (p->data_ms > 0)
        gs_buf_printf(out, " data-wait %.*f ms", ms_digits(p->data_ms), p->data_ms);
    if (p->ranks > 0)
        gs_buf_printf(out, " ranks %u", p->ranks);
    if (p->ranks > 1 && p->comm_ms > 0)
        gs_buf_printf(out, " comm %.*f ms exposed %.*f ms overlap %.2f", ms_digits(p->comm_ms),
                      p->comm_ms, ms_digits(p->comm_exposed_ms), p->comm_exposed_ms, p->overlap);
    format_age(p->received_ms, now_ms, age, sizeof(age));
    gs_buf_printf(out, " (%s ago)\n", age);
    if (p->text != NULL && p->text[0] != '\0')
        gs_buf_printf(out, "   %s\n", p->text);
}

static void put_history(struct gs_buf *out, const Gs__ShowReply *r)
{
    char when[32];

    if (r->n_history > 0)
        gs_buf_append_str(out, "History:\n");
    for (size_t i = 0; i < r->n_history; i++) {
        const Gs__JobStateChange *c = r->history[i];

        gs_buf_printf(out, "   %s %s", cli_format_time(c->changed_at_ms, when, sizeof(when)),
                      cli_job_state_name(c->state));
        if (c->reason != NULL && c->reason[0] != '\0')
            gs_buf_printf(out, " %s", c->reason);
        gs_buf_putc(out, '\n');
    }
}

static void put_tasks(struct gs_buf *out, const Gs__ShowReply *r)
{
    if (r->n_task_exits > 0)
        gs_buf_append_str(out, "Tasks:\n");
    for (size_t i = 0; i < r->n_task_exits; i++) {
        const Gs__TaskExit *t = r->task_exits[i];

        gs_buf_printf(out, "   Rank=%u Node=%s ExitCode=%d:%u EndReason=%s Attempt=%u", t->rank,
                      or_none(t->node_name), t->signaled ? 0 : t->exit_code,
                      t->signaled ? t->term_signal : 0, cli_end_reason_name(t->end_reason),
                      t->attempt);
        if (t->launch_error != NULL && t->launch_error[0] != '\0')
            gs_buf_printf(out, " LaunchError=\"%s\"", t->launch_error);
        gs_buf_putc(out, '\n');
    }
}

static int show_text(struct gs_buf *out, const Gs__ShowReply *r)
{
    const Gs__JobInfo *job = r->job;

    if (job == NULL)
        return -EPROTO;
    gs_buf_printf(out, "JobId=%llu Name=%s\n", (unsigned long long)job->job_id, or_none(job->name));
    put_identity(out, job);
    put_slurm(out, job);
    put_state(out, job);
    put_times(out, job, gs_clock_wall_ms());
    put_resources(out, job);
    cli_job_het_lines(out, job);
    put_run(out, job->spec);
    cli_usage_show(out, job->usage);
    put_progress(out, r->progress, gs_clock_wall_ms());
    put_history(out, r);
    put_tasks(out, r);
    return gs_buf_error(out);
}

static void kv_double(struct gs_json *j, const char *key, double v)
{
    gs_json_key(j, key);
    gs_json_double(j, v); /* NaN and infinities as null */
}

/* Every field of the report, as the proto names them; null when there is none. */
static void json_progress(struct gs_json *j, const Gs__JobProgressReport *p)
{
    if (p == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "job_id", p->job_id);
    gs_json_kv_uint(j, "step", p->step);
    gs_json_kv_uint(j, "steps", p->steps);
    kv_double(j, "loss", p->loss);
    kv_double(j, "tokens_per_s", p->tokens_per_s);
    gs_json_kv_uint(j, "ranks", p->ranks);
    kv_double(j, "comm_ms", p->comm_ms);
    kv_double(j, "comm_exposed_ms", p->comm_exposed_ms);
    kv_double(j, "overlap", p->overlap);
    kv_double(j, "eval_loss", p->eval_loss);
    gs_json_kv_uint(j, "eval_step", p->eval_step);
    kv_double(j, "lr", p->lr);
    kv_double(j, "mfu", p->mfu);
    kv_double(j, "data_ms", p->data_ms);
    gs_json_kv_string(j, "text", p->text);
    gs_json_kv_uint(j, "received_ms", p->received_ms);
    gs_json_kv_uint(j, "attempt", p->attempt);
    gs_json_object_end(j);
}

static int show_json(const Gs__ShowReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "job");
    if (r->job != NULL)
        cli_json_job_info(&j, r->job);
    else
        gs_json_null(&j);
    gs_json_key(&j, "history");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < r->n_history; i++)
        cli_json_state_change(&j, r->history[i]);
    gs_json_array_end(&j);
    gs_json_key(&j, "task_exits");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < r->n_task_exits; i++)
        cli_json_task_exit(&j, r->task_exits[i]);
    gs_json_array_end(&j);
    gs_json_key(&j, "progress");
    json_progress(&j, r->progress);
    gs_json_object_end(&j);
    rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

static int print_reply(const Gs__ShowReply *r, bool json)
{
    struct gs_buf out = GS_BUF_INIT;
    int rc;

    if (json)
        return show_json(r);
    rc = show_text(&out, r);
    if (rc == 0 && fwrite(out.data, 1, out.len, stdout) != out.len)
        rc = -EIO;
    gs_buf_release(&out);
    return rc;
}

int cli_cmd_show(int argc, char **argv)
{
    Gs__Envelope *reply = NULL;
    bool json;
    int rc = cli_show_fetch("show", argc, argv, &json, &reply);

    if (rc != 0)
        return rc;
    rc = print_reply(reply->show_reply, json);
    if (rc < 0)
        fprintf(stderr, "gsched show: %s\n",
                rc == -EPROTO ? "gschedd sent no job" : gs_strerror(rc));
    gs_proto_envelope_free(reply);
    return rc < 0 ? 1 : 0;
}
