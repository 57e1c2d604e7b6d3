/*
 * cmd_queue.c: `gsched queue [--all] [--user U] [--name N] [--state S[,S]] [--array]
 * [--json] [--socket PATH] [JOB...]`: the jobs gschedd holds, in its order (priority, then
 * submission), as squeue lays them out:
 *
 *     JOBID  NAME   USER   ST  TIME  NODES  GPUS  NODELIST(REASON)
 *     42     train  alice  R   1:02  2      8     n1,n2
 *     43     eval   alice  PD  0:00  1      1     (Resources)
 *     44     sweep  bob    R   9:40  1      2     n3 (GPUIdle:n3:1)
 *
 * (a running job with GPUs gschedd flags idle names them after its nodes), or a JSON array
 * of JobInfo objects. Finished jobs are listed only with --all. Array
 * elements show as ARRAYID_TASK; pending ones of one array waiting for the same reason fold
 * into one line, "123_[4-15]", as squeue folds them (--array / -r: one line each).
 *
 * A suspended job (RUNNING on the wire with JobInfo.suspended) shows as S, its TIME stopped
 * where it was suspended. --state S (SUSPENDED) asks gschedd for the running jobs and keeps
 * the suspended ones; --state R keeps the running ones that are not.
 */
#include "cli/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/job_json.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "cli/table.h"
#include "common/clock.h"
#include "common/units.h"
#include "slurm/slurm_fmt.h"

#define MAX_STATES 16

struct queue_args {
    Gs__QueueRequest req;
    Gs__JobSelector sel;
    Gs__JobState states[MAX_STATES];
    struct cli_job_ids jobs;
    const char *socket_opt;
    bool json;
    bool unfold;    /* --array: one line per array element */
    bool running;   /* --state named RUNNING: running jobs not suspended */
    bool suspended; /* --state named SUSPENDED: suspended jobs, asked for as RUNNING */
};

static const struct cli_opt queue_opts[] = {
    {"--all", "-a", false, 'a'},   {"--user", "-u", true, 'u'},  {"--name", "-n", true, 'n'},
    {"--state", "-t", true, 't'},  {"--json", NULL, false, 'j'}, {"--socket", NULL, true, 's'},
    {"--array", "-r", false, 'r'}, {NULL, NULL, false, 0},
};

/*
 * "R,PD" or "running,pending" into the selector; "S" / "SUSPENDED" as RUNNING, which is
 * what gschedd knows such a job as. Returns 0 or the usage error's status.
 */
static int parse_states(struct queue_args *q, const char *list)
{
    char name[32];

    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        Gs__JobState state;
        bool suspended;

        snprintf(name, sizeof(name), "%.*s", (int)len, p);
        if (q->sel.n_states == MAX_STATES)
            return cli_usage_error("queue", "at most %d states in --state", MAX_STATES);
        if (cli_job_shown_parse(name, &state, &suspended) < 0)
            return cli_usage_error("queue", "unknown job state '%s' in --state", name);
        if (state == GS__JOB_STATE__JOB_STATE_RUNNING) {
            q->suspended |= suspended;
            q->running |= !suspended;
        }
        q->states[q->sel.n_states++] = state;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

/*
 * Whether job is in a state --state named (none: every job is). gschedd selected by the
 * wire's states; a running job is kept as what it shows as, suspended or not.
 */
static bool state_wanted(const struct queue_args *q, const Gs__JobInfo *job)
{
    if (q->sel.n_states == 0)
        return true;
    if (job->state == GS__JOB_STATE__JOB_STATE_RUNNING)
        return cli_job_suspended(job) ? q->suspended : q->running;
    for (size_t i = 0; i < q->sel.n_states; i++) {
        if (q->states[i] == job->state)
            return true;
    }
    return false;
}

/* Returns 0, or the exit status to leave with. */
static int parse_args(int argc, char **argv, struct queue_args *q)
{
    struct cli_args a;
    int opt = 0, status = 0;

    cli_args_init(&a, argc, argv);
    while (status == 0 && (opt = cli_args_next(&a, queue_opts)) > 0) {
        if (opt == CLI_ARGS_OPERAND)
            status = cli_job_ids_take(&q->jobs, "queue", &a);
        else if (opt == 'a')
            q->req.include_finished = true;
        else if (opt == 'u')
            q->sel.user = (char *)a.value;
        else if (opt == 'n')
            q->sel.name = (char *)a.value;
        else if (opt == 't')
            status = parse_states(q, a.value);
        else if (opt == 'j')
            q->json = true;
        else if (opt == 'r')
            q->unfold = true;
        else if (opt == 's')
            q->socket_opt = a.value;
    }
    if (status == 0 && opt < 0)
        status = cli_args_error("queue", &a);
    return status;
}

/* squeue's last column: where it runs, or why it waits (or why it ended, if nowhere). */
static int where_or_why(struct gs_buf *out, const Gs__JobInfo *job)
{
    bool waiting = job->state == GS__JOB_STATE__JOB_STATE_PENDING ||
                   job->state == GS__JOB_STATE__JOB_STATE_REQUEUED;
    const char *reason = job->reason != NULL && job->reason[0] != '\0' ? job->reason : NULL;

    if (!waiting && job->n_allocation > 0) {
        int rc = cli_job_nodelist(out, job->allocation, job->n_allocation, false);

        /* A running job with GPUs flagged idle says which, as a reason would. */
        for (size_t i = 0; rc == 0 && job->usage != NULL && i < job->usage->n_idle_gpus; i++)
            rc = gs_buf_printf(out, "%s%s", i == 0 ? " (GPUIdle:" : ",", job->usage->idle_gpus[i]);
        if (rc == 0 && job->usage != NULL && job->usage->n_idle_gpus > 0)
            rc = gs_buf_putc(out, ')');
        return rc;
    }
    if (waiting || reason != NULL)
        return gs_buf_printf(out, "(%s)", reason != NULL ? reason : "None");
    return 0;
}

static int add_row(struct cli_table *t, const struct slurm_row *row, uint64_t now_ms)
{
    const Gs__JobInfo *job = row->job;
    const Gs__Resources *res = job->resources;
    uint64_t nodes = job->n_allocation > 0 ? job->n_allocation : res != NULL ? res->nodes : 0;
    uint64_t gpus = nodes * (res != NULL ? res->gpus_per_node : 0);
    struct gs_buf last = GS_BUF_INIT, id = GS_BUF_INIT;
    char user[64], elapsed[32], nnodes[24], ngpus[24];
    const char *cells[8];
    int rc;

    rc = slurm_row_id(&id, row);
    if (job->user != NULL && job->user->username != NULL && job->user->username[0] != '\0')
        snprintf(user, sizeof(user), "%s", job->user->username);
    else
        snprintf(user, sizeof(user), "%u", job->user != NULL ? job->user->uid : 0);
    gs_format_duration(cli_job_run_s(job, job->state, now_ms), elapsed, sizeof(elapsed));
    snprintf(nnodes, sizeof(nnodes), "%llu", (unsigned long long)nodes);
    snprintf(ngpus, sizeof(ngpus), "%llu", (unsigned long long)gpus);
    if (rc == 0)
        rc = where_or_why(&last, job);
    cells[0] = id.data != NULL ? id.data : "";
    cells[1] = job->name;
    cells[2] = user;
    cells[3] = cli_job_shown_code(job);
    cells[4] = elapsed;
    cells[5] = nnodes;
    cells[6] = ngpus;
    cells[7] = last.data != NULL ? last.data : "";
    for (size_t i = 0; rc == 0 && i < 8; i++)
        rc = cli_table_add(t, cells[i]);
    gs_buf_release(&last);
    gs_buf_release(&id);
    return rc;
}

static int print_table(Gs__JobInfo *const *jobs, size_t n, bool fold)
{
    static const char *const header[] = {"JOBID", "NAME",  "USER", "ST",
                                         "TIME",  "NODES", "GPUS", "NODELIST(REASON)"};
    struct cli_table t;
    struct gs_buf out = GS_BUF_INIT;
    uint64_t now = gs_clock_wall_ms();
    struct slurm_row *rows = NULL;
    size_t nrows = 0;
    int rc = slurm_rows_build(jobs, n, fold, &rows, &nrows);

    cli_table_init(&t, 8);
    for (size_t i = 0; rc == 0 && i < 8; i++)
        rc = cli_table_add(&t, header[i]);
    for (size_t i = 0; rc == 0 && i < nrows; i++)
        rc = add_row(&t, &rows[i], now);
    if (rc == 0)
        rc = cli_table_render(&t, &out);
    if (rc == 0 && fwrite(out.data, 1, out.len, stdout) != out.len)
        rc = -EIO;
    cli_table_release(&t);
    gs_buf_release(&out);
    slurm_rows_free(rows, nrows);
    return rc;
}

static int print_json(Gs__JobInfo *const *jobs, size_t n)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_array_begin(&j);
    for (size_t i = 0; i < n; i++)
        cli_json_job_info(&j, jobs[i]);
    gs_json_array_end(&j);
    rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

/* The listing of the jobs r holds that --state wants. Returns 0 or < 0. */
static int print_jobs(const struct queue_args *q, const Gs__QueueReply *r)
{
    Gs__JobInfo **jobs = calloc(r->n_jobs + 1, sizeof(*jobs));
    size_t n = 0;
    int rc;

    if (jobs == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < r->n_jobs; i++) {
        if (state_wanted(q, r->jobs[i]))
            jobs[n++] = r->jobs[i];
    }
    rc = q->json ? print_json(jobs, n) : print_table(jobs, n, !q->unfold);
    free(jobs);
    return rc;
}

int cli_cmd_queue(int argc, char **argv)
{
    struct queue_args q = {.req = GS__QUEUE_REQUEST__INIT, .sel = GS__JOB_SELECTOR__INIT};
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    char path[256];
    int status = parse_args(argc, argv, &q);

    if (status != 0)
        goto out;
    status = 1;
    q.sel.job_ids = q.jobs.ids;
    q.sel.n_job_ids = q.jobs.n;
    q.sel.states = q.states;
    q.req.selector = &q.sel;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REQUEST;
    env.queue_request = &q.req;
    if (cli_socket_path(q.socket_opt, path, sizeof(path)) < 0 ||
        cli_call(path, &env, GS__ENVELOPE__BODY_QUEUE_REPLY, &reply) < 0)
        goto out;
    if (print_jobs(&q, reply->queue_reply) == 0)
        status = 0;
    else
        fprintf(stderr, "gsched queue: cannot write the listing\n");
out:
    gs_proto_envelope_free(reply);
    cli_job_ids_release(&q.jobs);
    return status;
}
