/*
 * squeue_steps.c: `squeue -s`, Slurm's view of the running job steps: a line per step of a
 * running job that is itself running, the batch shell ("42.batch") and each srun
 * ("42.0"), from gschedd's step records (StepInfo, as sacct reads them), sorted by job and
 * step:
 *
 *              STEPID     NAME PARTITION     USER      TIME NODELIST
 *           42.batch    batch       gpu    alice      1:30 n1
 *               42.0  python3       gpu    alice      1:23 n[1-2]
 *
 * A suspended job's steps show with it, their TIME stopped where the job was suspended
 * (slurm_step_elapsed_s), as Slurm's stand still while the job is suspended.
 *
 * --steps=LIST narrows to the steps named ("42.0,43.batch"; a job alone: all of its);
 * -j, -u, -p, -n, -A, -q filter the steps' jobs as for jobs. -o takes Slurm's step letters
 * %i (step id) %j (name) %P %u %U %M (time used) %l (srun -t's limit, else the job's) %N
 * %S (start) %A (tasks); -O their names (StepId, StepName, Partition, UserName, UserID, TimeUsed,
 * TimeLimit, NodeList, StartTime, NumTasks).
 */
#include "slurm/squeue_steps.h"

#include <stdlib.h>

#include "common/clock.h"
#include "common/sort.h"
#include "slurm/slurm_cmd.h"
#include "slurm/step_fmt.h"

#define CMD "squeue"

enum step_field {
    S_ID,
    S_NAME,
    S_PARTITION,
    S_USER,
    S_UID,
    S_TIME,
    S_LIMIT,
    S_NODELIST,
    S_START,
    S_TASKS,
};

static const struct slurm_field step_fields[] = {
    [S_ID] = {'i', "StepId", "STEPID"},
    [S_NAME] = {'j', "StepName", "NAME"},
    [S_PARTITION] = {'P', "Partition", "PARTITION"},
    [S_USER] = {'u', "UserName", "USER"},
    [S_UID] = {'U', "UserID", "UID"},
    [S_TIME] = {'M', "TimeUsed", "TIME"},
    [S_LIMIT] = {'l', "TimeLimit", "TIME_LIMIT"},
    [S_NODELIST] = {'N', "NodeList", "NODELIST"},
    [S_START] = {'S', "StartTime", "START_TIME"},
    [S_TASKS] = {'A', "NumTasks", "TASKS"},
};

#define NSTEP_FIELDS (sizeof(step_fields) / sizeof(step_fields[0]))

/* Slurm's default for -s. */
static const char step_format[] = "%.15i %.8j %.9P %.8u %.9M %N";

struct step_row {
    const Gs__JobInfo *job;
    const Gs__StepInfo *step;
};

struct step_ctx {
    const struct step_row *row;
    uint64_t now_ms;
};

static int by_job_then_step(const void *a, const void *b)
{
    const struct step_row *x = a, *y = b;

    if (x->job->job_id != y->job->job_id)
        return x->job->job_id < y->job->job_id ? -1 : 1;
    return x->step->step < y->step->step ? -1 : x->step->step > y->step->step;
}

static int step_value(void *vctx, int field, struct gs_buf *out)
{
    const struct step_ctx *ctx = vctx;
    const Gs__JobInfo *job = ctx->row->job;
    const Gs__StepInfo *st = ctx->row->step;
    uint64_t used = slurm_step_elapsed_s(job, st, ctx->now_ms);
    char buf[128], step[16];

    switch ((enum step_field)field) {
    case S_ID:
        return gs_buf_printf(out, "%llu.%s", (unsigned long long)job->job_id,
                             slurm_step_id(st->step, step, sizeof(step)));
    case S_NAME:
        return gs_buf_append_str(out, st->name != NULL ? st->name : "");
    case S_PARTITION:
        return gs_buf_append_str(out, job->partition != NULL ? job->partition : "");
    case S_USER:
        return gs_buf_append_str(out, slurm_user_name(job, buf, sizeof(buf)));
    case S_UID:
        return gs_buf_printf(out, "%u", job->user != NULL ? job->user->uid : 0);
    case S_TIME:
        return gs_buf_append_str(out, slurm_fmt_secs(used, buf, sizeof(buf)));
    case S_LIMIT: /* srun -t, else the job's, which ends it */
        return gs_buf_append_str(out, slurm_fmt_limit(st->time_limit_s > 0 ? st->time_limit_s
                                                      : job->resources != NULL
                                                          ? job->resources->time_limit_s
                                                          : 0,
                                                      false, "UNLIMITED", buf, sizeof(buf)));
    case S_NODELIST:
        return gs_buf_append_str(out, st->nodelist != NULL ? st->nodelist : "");
    case S_START:
        return gs_buf_append_str(out, slurm_fmt_date(st->start_time_ms, "N/A", buf, sizeof(buf)));
    case S_TASKS:
        return gs_buf_printf(out, "%u", st->ntasks);
    }
    return 0;
}

/* The running steps of the running jobs o selects, sorted, into *ret_rows; 0 or -ENOMEM. */
static int gather(const struct squeue_steps_opts *o, const Gs__QueueReply *r,
                  const struct slurm_job_ref *refs, const uint32_t *steps, size_t nlisted,
                  struct step_row **ret_rows, size_t *ret_n)
{
    struct step_row *rows;
    size_t total = 0, n = 0;

    for (size_t i = 0; i < r->n_jobs; i++)
        total += r->jobs[i]->n_steps;
    rows = calloc(total + 1, sizeof(*rows));
    if (rows == NULL)
        return -1;
    for (size_t i = 0; i < r->n_jobs; i++) {
        const Gs__JobInfo *job = r->jobs[i];

        if (job->state != GS__JOB_STATE__JOB_STATE_RUNNING || !slurm_filter_match(o->filter, job))
            continue;
        for (size_t k = 0; k < job->n_steps; k++) {
            const Gs__StepInfo *st = job->steps[k];

            if (st->state == GS__JOB_STATE__JOB_STATE_RUNNING &&
                slurm_step_selected(refs, steps, nlisted, job, NULL, st->step))
                rows[n++] = (struct step_row){job, st};
        }
    }
    gs_sort(rows, n, sizeof(*rows), by_job_then_step);
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

int squeue_steps(const struct squeue_steps_opts *o)
{
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    uint32_t steps[SLURM_MAX_REFS];
    struct slurm_format fmt = {0};
    struct step_row *rows = NULL;
    struct step_ctx ctx = {.now_ms = gs_clock_wall_ms()};
    struct gs_buf out = GS_BUF_INIT;
    Gs__Envelope *reply = NULL;
    size_t nlisted = 0, nrows = 0;
    char bad[64];
    int status, rc = -1;

    if (o->list != NULL &&
        slurm_step_list_parse(o->list, refs, steps, SLURM_MAX_REFS, &nlisted, bad, sizeof(bad)) < 0)
        return slurm_error(CMD, "Invalid job step id: %s", bad);
    status = slurm_format_choose(CMD, o->format, o->long_fields, step_format, step_fields,
                                 NSTEP_FIELDS, &fmt);
    if (status != 0)
        return status;
    /* The jobs -j names (else every job); their steps come with them. */
    status = slurm_fetch_steps(o->socket_opt, o->filter->refs, o->filter->nrefs, false, &reply);
    if (status != 0)
        goto out;
    if (gather(o, reply->queue_reply, refs, steps, nlisted, &rows, &nrows) == 0)
        rc = o->noheader ? 0 : slurm_format_line(&fmt, step_fields, NULL, NULL, &out);
    for (size_t i = 0; rc == 0 && i < nrows; i++) {
        ctx.row = &rows[i];
        rc = slurm_format_line(&fmt, step_fields, step_value, &ctx, &out);
    }
    status = slurm_print(CMD, rc, &out);
out:
    free(rows);
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    slurm_format_release(&fmt);
    return status;
}
