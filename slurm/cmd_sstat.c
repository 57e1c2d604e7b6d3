/*
 * cmd_sstat.c: `sstat` (also `gsched sstat`): the use of running job steps, as Slurm's
 * sstat shows it:
 *
 *     JobID         MaxRSS MaxRSSNode MaxRSSTask     AveCPU   NTasks
 *     ------------ ---------- ---------- ---------- ---------- --------
 *     42.0             51324K      node1          0   00:00:02        1
 *
 * The figures are gschedd's step records (StepInfo), which follow the workers' heartbeats:
 * the highest RSS any task of the step reached so far (with its node and rank) and the CPU
 * time of its tasks (AveCPU: per task). No round trip to the nodes: a figure is as old as the
 * last heartbeat (worker.telemetry_interval).
 *
 * -j JOB[.STEP],... is required. A job without a step names its lowest-numbered running srun
 * step, or with -a/--allsteps every running step (the batch shell's too), as in Slurm;
 * JOB+K (a heterogeneous job's component K) only the steps running on K's nodes. A job
 * that is not running (finished, pending, unknown) or has no such step running gives
 * "sstat: error: couldn't get steps for job N" and exit 1 after the other lines. Columns as
 * sacct's: --format/-o NAMES (JobID, MaxRSS, MaxRSSNode, MaxRSSTask, AveCPU, NTasks,
 * NodeList, TotalCPU, any case, each with an optional %WIDTH), -p/-P, -n; --socket.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm/acct_cols.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"
#include "slurm/slurm_het.h"
#include "slurm/step_fmt.h"

#define CMD "sstat"

enum field {
    F_JOBID,
    F_MAXRSS,
    F_MAXRSSNODE,
    F_MAXRSSTASK,
    F_AVECPU,
    F_NTASKS,
    F_NODELIST,
    F_TOTALCPU,
    F_COUNT
};

static const struct slurm_col_def fields[F_COUNT] = {
    [F_JOBID] = {"JobID", -12},          [F_MAXRSS] = {"MaxRSS", 10},
    [F_MAXRSSNODE] = {"MaxRSSNode", 10}, [F_MAXRSSTASK] = {"MaxRSSTask", 10},
    [F_AVECPU] = {"AveCPU", 10},         [F_NTASKS] = {"NTasks", 8},
    [F_NODELIST] = {"Nodelist", 20},     [F_TOTALCPU] = {"TotalCPU", 10},
};

struct sstat_args {
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    uint32_t steps[SLURM_MAX_REFS];
    size_t nrefs;
    struct slurm_cols cols; /* its defs are fields */
    const char *socket_opt;
    bool noheader, all_steps;
};

static int parse_jobs(struct sstat_args *s, const char *list)
{
    char bad[64];
    int rc =
        slurm_step_list_parse(list, s->refs, s->steps, SLURM_MAX_REFS, &s->nrefs, bad, sizeof(bad));

    if (rc == -E2BIG)
        return slurm_error(CMD, "at most %d job ids", SLURM_MAX_REFS);
    if (rc < 0)
        return slurm_error(CMD, "Invalid job id: %s", bad);
    return 0;
}

static void usage(FILE *f)
{
    fputs("Usage: sstat -j job[.step][,...] [-a] [--format fields] [-n] [-p | -P]\n"
          "             [--socket PATH]\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct sstat_args *s)
{
    static const struct option opts[] = {
        {"jobs", required_argument, NULL, 'j'},
        {"allsteps", no_argument, NULL, 'a'},
        {"format", required_argument, NULL, 'o'},
        {"fields", required_argument, NULL, 'o'},
        {"parsable", no_argument, NULL, 'p'},
        {"parsable2", no_argument, NULL, 'P'},
        {"noheader", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {"usage", no_argument, NULL, 'U'},
        {"socket", required_argument, NULL, 'K'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":j:ao:e:pPnh", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (parse_jobs(s, optarg) != 0)
                return 1;
            break;
        case 'a':
            s->all_steps = true;
            break;
        case 'o':
        case 'e':
            if (slurm_cols_parse(&s->cols, CMD, optarg) != 0)
                return 1;
            break;
        case 'p':
            s->cols.parsable = SLURM_PARSABLE_TRAILING;
            break;
        case 'P':
            s->cols.parsable = SLURM_PARSABLE_BETWEEN;
            break;
        case 'n':
            s->noheader = true;
            break;
        case 'K':
            s->socket_opt = optarg;
            break;
        case 'h':
        case 'U':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    /* Slurm takes the jobs as operands too: "sstat 42.0". */
    for (; optind < argc; optind++) {
        if (parse_jobs(s, argv[optind]) != 0)
            return 1;
    }
    if (s->nrefs == 0)
        return slurm_error(CMD, "You didn't give me any jobs to stat.");
    return -1;
}

static int value(const Gs__StepInfo *st, const char *job_id, enum field f, struct gs_buf *out)
{
    char buf[64], step[16];

    switch (f) {
    case F_JOBID:
        return gs_buf_printf(out, "%s.%s", job_id, slurm_step_id(st->step, step, sizeof(step)));
    case F_MAXRSS:
        return gs_buf_append_str(out, slurm_fmt_rss(st->max_rss_kib, buf, sizeof(buf)));
    case F_MAXRSSNODE:
        return gs_buf_append_str(out, st->max_rss_node != NULL ? st->max_rss_node : "");
    case F_MAXRSSTASK:
        return gs_buf_printf(out, "%u", st->max_rss_task);
    case F_AVECPU:
        return gs_buf_append_str(
            out, slurm_fmt_secs_long(st->ntasks > 0 ? st->cpu_time_ms / 1000 / st->ntasks : 0, buf,
                                     sizeof(buf)));
    case F_NTASKS:
        return gs_buf_printf(out, "%u", st->ntasks);
    case F_NODELIST:
        return gs_buf_append_str(out, st->nodelist != NULL ? st->nodelist : "");
    case F_TOTALCPU:
        return gs_buf_append_str(out,
                                 slurm_fmt_secs_long(st->cpu_time_ms / 1000, buf, sizeof(buf)));
    case F_COUNT:
        break;
    }
    return 0;
}

static int put_line(const struct sstat_args *s, const Gs__JobInfo *job, const Gs__StepInfo *st,
                    struct gs_buf *out)
{
    struct gs_buf cell = GS_BUF_INIT;
    char id[64];
    int rc = 0;

    slurm_job_id(job, id, sizeof(id));
    for (size_t k = 0; rc == 0 && k < s->cols.n; k++) {
        gs_buf_reset(&cell);
        rc = value(st, id, (enum field)s->cols.col[k].field, &cell);
        if (rc == 0)
            rc = slurm_cols_put(&s->cols, k, cell.data != NULL ? cell.data : "", out);
    }
    gs_buf_release(&cell);
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

/*
 * Whether step st of job is one ref names: any step for a job's ref, for a component's
 * ("42+1") one that runs on that component's nodes, as sacct lists it under 42+1.
 * 1, 0 or -ENOMEM.
 */
static int step_of_ref(const struct slurm_job_ref *ref, const Gs__JobInfo *job,
                       const Gs__StepInfo *st)
{
    struct gs_buf nodes = GS_BUF_INIT;
    Gs__StepInfo view;
    int rc;

    if (!ref->het)
        return 1;
    rc = slurm_het_step_view(job, ref->het_offset, st, &view, &nodes);
    gs_buf_release(&nodes);
    return rc;
}

/* The running step ref i names in job: with a step, that one; else the lowest srun step
 * (-a: every running step). Returns the lines written. */
static int put_ref(const struct sstat_args *s, size_t i, const Gs__JobInfo *job, struct gs_buf *out,
                   size_t *lines)
{
    const Gs__StepInfo *lowest = NULL;
    int rc = 0;

    for (size_t k = 0; rc == 0 && k < job->n_steps; k++) {
        const Gs__StepInfo *st = job->steps[k];
        int mine;

        if (st->state != GS__JOB_STATE__JOB_STATE_RUNNING)
            continue;
        mine = step_of_ref(&s->refs[i], job, st);
        if (mine < 0)
            return mine;
        if (mine == 0)
            continue; /* it runs on other components */
        if (s->steps[i] == st->step || (s->steps[i] == SLURM_STEP_ANY && s->all_steps)) {
            rc = put_line(s, job, st, out);
            ++*lines;
        } else if (s->steps[i] == SLURM_STEP_ANY && st->step > 0 &&
                   (lowest == NULL || st->step < lowest->step)) {
            lowest = st;
        }
    }
    if (rc == 0 && lowest != NULL && !s->all_steps) {
        rc = put_line(s, job, lowest, out);
        ++*lines;
    }
    return rc;
}

static int print_steps(const struct sstat_args *s, const Gs__QueueReply *r)
{
    struct gs_buf out = GS_BUF_INIT;
    int rc = s->noheader ? 0 : slurm_cols_header(&s->cols, &out), status = 0;

    for (size_t i = 0; rc == 0 && i < s->nrefs; i++) {
        size_t lines = 0;

        for (size_t k = 0; rc == 0 && k < r->n_jobs; k++) {
            const Gs__JobInfo *job = r->jobs[k];

            if (job->state == GS__JOB_STATE__JOB_STATE_RUNNING &&
                slurm_job_ref_match(&s->refs[i], job))
                rc = put_ref(s, i, job, &out, &lines);
        }
        if (rc == 0 && lines == 0) {
            fflush(stdout);
            status = slurm_error(CMD, "couldn't get steps for job %llu",
                                 (unsigned long long)s->refs[i].id);
        }
    }
    rc = slurm_print(CMD, rc, &out);
    gs_buf_release(&out);
    return rc != 0 ? rc : status;
}

int cli_cmd_sstat(int argc, char **argv)
{
    struct sstat_args s = {.cols = {.defs = fields, .ndefs = F_COUNT}};
    Gs__Envelope *reply = NULL;
    int status = parse_args(argc, argv, &s);

    if (status >= 0)
        return status;
    if (s.cols.n == 0 &&
        slurm_cols_parse(&s.cols, CMD, "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveCPU,NTasks") != 0)
        return 1;
    status = slurm_fetch_steps(s.socket_opt, s.refs, s.nrefs, false, &reply);
    if (status == 0)
        status = print_steps(&s, reply->queue_reply);
    gs_proto_envelope_free(reply);
    return status;
}
