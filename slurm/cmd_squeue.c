/*
 * cmd_squeue.c: `squeue` (also `gsched squeue`): the jobs gschedd holds, laid out as
 * Slurm's squeue lays them out, so that scripts which parse squeue keep working:
 *
 *                  JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
 *                     42       gpu    train    alice  R       1:05      2 n[1-2]
 *             50_[1-3,5]     debug    sweep    alice PD       0:00      1 (JobArrayTaskLimit)
 *
 * Options as Slurm's: -o/--format (% letters), -O/--Format (field names), -u, -j (123,
 * 123_4, 42+1), -t, -p, -n, -A, -q, --me, -h, -l, -r (one line per array element: no
 * folding), --start (pending jobs by expected start: Slurm's "%.18i %.9P %.9j %.8u %.2t
 * %.19S %.6D %20Y %R", soonest first, those without one after; SCHEDNODES the nodes the
 * job's backfill reservation holds, "(null)" without one),
 * $SQUEUE_FORMAT / $SQUEUE_FORMAT2, and gsched's --socket. %W / -O Licenses: the job's
 * licenses as sbatch -L takes them, "(null)" without any. %E / -O Dependency: a pending
 * job's dependencies not met yet, "afterok:41(unfulfilled)" or "(failed)" when one never
 * can be, "(null)" when none are left. Slurm's other letters but %X and %s: what gsched
 * does not have reads as Slurm prints it unasked (%d 0, %w (null), %z *:*:*). A
 * heterogeneous job
 * shows a line per component, "42+0", "42+1" (%i and %A alike; -O HetJobID, HetJobOffset),
 * each with its own nodes, CPUs and tasks (slurm_het.h); -j 42+1 shows component 1's line
 * alone, and none for a job without that component. Without -t only jobs that have
 * not ended show, unless -j names jobs (then all states, as Slurm). A suspended job
 * (scontrol suspend; RUNNING on the wire with JobInfo.suspended) shows as S / SUSPENDED,
 * its TIME stopped where it was suspended and TIME_LEFT with it; -t S (SUSPENDED) selects
 * those, -t R the running jobs that are not. Jobs are sorted as Slurm's default "P,t,-p":
 * partition, state (pending, running, suspended, ended), then priority, highest first.
 * Every failure exits 1, as in Slurm.
 */
#include "slurm/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/job_print.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/sort.h"
#include "common/units.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"
#include "slurm/slurm_het.h"
#include "slurm/squeue_steps.h"

#define CMD "squeue"

enum field {
    F_ID,
    F_JOBID,
    F_ARRAY_JOB,
    F_ARRAY_TASK,
    F_NAME,
    F_USER,
    F_UID,
    F_ST,
    F_STATE,
    F_TIME,
    F_LIMIT,
    F_LEFT,
    F_NODES,
    F_CPUS,
    F_TASKS,
    F_REASONLIST,
    F_NODELIST,
    F_REASON,
    F_PARTITION,
    F_ACCOUNT,
    F_QOS,
    F_TRES,
    F_SUBMIT,
    F_START,
    F_END,
    F_PRIORITY,
    F_WORKDIR,
    F_MEM,
    F_STDOUT,
    F_STDERR,
    F_HET_JOB_ID,
    F_HET_OFFSET,
    F_SCHEDNODES,
    F_LICENSES,
    F_DEPENDENCY,
    F_BATCH_HOST,
    F_MIN_CPUS,
    F_MIN_TMP,
    F_FEATURES,
    F_GROUP,
    F_GID,
    F_OVERSUBSCRIBE,
    F_SOCKETS,
    F_CORES,
    F_THREADS,
    F_COMMENT,
    F_REQ_NODES,
    F_COMMAND,
    F_CONTIGUOUS,
    F_PRIORITY_NORM,
    F_RESERVATION,
    F_WCKEY,
    F_EXC_NODES,
    F_NICE,
    F_SCT,
};

static const struct slurm_field fields[] = {
    [F_ID] = {'i', "JobArrayID", "JOBID"},
    [F_JOBID] = {'A', "JobID", "JOBID"},
    [F_ARRAY_JOB] = {'F', "ArrayJobID", "ARRAY_JOB_ID"},
    [F_ARRAY_TASK] = {'K', "ArrayTaskID", "ARRAY_TASK_ID"},
    [F_NAME] = {'j', "Name", "NAME"},
    [F_USER] = {'u', "UserName", "USER"},
    [F_UID] = {'U', "UserID", "UID"},
    [F_ST] = {'t', "StateCompact", "ST"},
    [F_STATE] = {'T', "State", "STATE"},
    [F_TIME] = {'M', "TimeUsed", "TIME"},
    [F_LIMIT] = {'l', "TimeLimit", "TIME_LIMIT"},
    [F_LEFT] = {'L', "TimeLeft", "TIME_LEFT"},
    [F_NODES] = {'D', "NumNodes", "NODES"},
    [F_CPUS] = {'C', "NumCPUs", "CPUS"},
    [F_TASKS] = {0, "NumTasks", "TASKS"},
    [F_REASONLIST] = {'R', "ReasonList", "NODELIST(REASON)"},
    [F_NODELIST] = {'N', "NodeList", "NODELIST"},
    [F_REASON] = {'r', "Reason", "REASON"},
    [F_PARTITION] = {'P', "Partition", "PARTITION"},
    [F_ACCOUNT] = {'a', "Account", "ACCOUNT"},
    [F_QOS] = {'q', "QOS", "QOS"},
    [F_TRES] = {'b', "tres-per-node", "TRES_PER_NODE"},
    [F_SUBMIT] = {'V', "SubmitTime", "SUBMIT_TIME"},
    [F_START] = {'S', "StartTime", "START_TIME"},
    [F_END] = {'e', "EndTime", "END_TIME"},
    [F_PRIORITY] = {'Q', "PriorityLong", "PRIORITY"},
    [F_WORKDIR] = {'Z', "WorkDir", "WORK_DIR"},
    [F_MEM] = {'m', "MinMemory", "MIN_MEMORY"},
    [F_STDOUT] = {0, "STDOUT", "STDOUT"},
    [F_STDERR] = {0, "STDERR", "STDERR"},
    [F_HET_JOB_ID] = {0, "HetJobID", "HET_JOB_ID"},
    [F_HET_OFFSET] = {0, "HetJobOffset", "HET_JOB_OFFSET"},
    [F_SCHEDNODES] = {'Y', "SchedNodes", "SCHEDNODES"},
    [F_LICENSES] = {'W', "Licenses", "LICENSES"},
    [F_DEPENDENCY] = {'E', "Dependency", "DEPENDENCY"},
    [F_BATCH_HOST] = {'B', "BatchHost", "EXEC_HOST"},
    [F_MIN_CPUS] = {'c', "MinCpus", "MIN_CPUS"},
    [F_MIN_TMP] = {'d', "MinTmpDisk", "MIN_TMP_DISK"},
    [F_FEATURES] = {'f', "Feature", "FEATURES"},
    [F_GROUP] = {'g', "GroupName", "GROUP"},
    [F_GID] = {'G', "GroupID", "GROUP"},
    [F_OVERSUBSCRIBE] = {'h', "OverSubscribe", "OVER_SUBSCRIBE"},
    [F_SOCKETS] = {'H', "SocketsPerNode", "S"},
    [F_CORES] = {'I', "CoresPerSocket", "C"},
    [F_THREADS] = {'J', "ThreadsPerCore", "T"},
    [F_COMMENT] = {'k', "Comment", "COMMENT"},
    [F_REQ_NODES] = {'n', "ReqNodes", "REQ_NODES"},
    [F_COMMAND] = {'o', "Command", "COMMAND"},
    [F_CONTIGUOUS] = {'O', "Contiguous", "CONTIGUOUS"},
    [F_PRIORITY_NORM] = {'p', "Priority", "PRIORITY"},
    [F_RESERVATION] = {'v', "Reservation", "RESERVATION"},
    [F_WCKEY] = {'w', "WCKey", "WCKEY"},
    [F_EXC_NODES] = {'x', "ExcNodes", "EXC_NODES"},
    [F_NICE] = {'y', "Nice", "NICE"},
    [F_SCT] = {'z', "SCT", "S:C:T"},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static const char default_format[] = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
static const char long_format[] = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
static const char start_format[] = "%.18i %.9P %.9j %.8u %.2t  %.19S %.6D %20Y %R";

struct squeue_args {
    struct slurm_filter filter;
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    const char *format;      /* -o */
    const char *long_fields; /* -O */
    const char *socket_opt;
    const char *steps_list; /* -s/--steps=LIST */
    bool noheader, array, long_out, jobs_given, start, steps;
    char me[64];
};

/* What a value callback needs: the row and the clock. */
struct line_ctx {
    const struct slurm_row *row;
    uint64_t now_ms;
};

static int parse_jobs(struct squeue_args *q, const char *list)
{
    q->jobs_given = true;
    return slurm_jobs_option(CMD, list, q->refs, &q->filter.nrefs);
}

static void usage(FILE *f)
{
    fputs("Usage: squeue [-A account] [-j jobs] [-n name] [-o format] [-O fields] [-p partitions]\n"
          "              [-q qos] [-t states] [-u users] [--me] [-h] [-l] [-r] [--start]\n"
          "              [-s | --steps[=STEPS]] [--socket PATH]\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct squeue_args *q)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, 'A'},
        {"all", no_argument, NULL, 'a'},
        {"array", no_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'o'},
        {"Format", required_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'H'},
        {"jobs", required_argument, NULL, 'j'},
        {"long", no_argument, NULL, 'l'},
        {"me", no_argument, NULL, 'm'},
        {"name", required_argument, NULL, 'n'},
        {"noheader", no_argument, NULL, 'h'},
        {"partition", required_argument, NULL, 'p'},
        {"qos", required_argument, NULL, 'q'},
        {"states", required_argument, NULL, 't'},
        {"user", required_argument, NULL, 'u'},
        {"usage", no_argument, NULL, 'U'},
        {"socket", required_argument, NULL, 'K'},
        {"start", no_argument, NULL, 'S'},
        {"steps", optional_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    int c, status = -1;

    opterr = 0;
    optind = 1;
    while (status < 0 &&
           (c = getopt_long(argc, argv, ":A:aho:O:j:ln:p:q:rs::t:u:", opts, NULL)) != -1) {
        switch (c) {
        case 'A':
            q->filter.accounts = optarg;
            break;
        case 'a':
            break; /* every partition: gsched hides none */
        case 'h':
            q->noheader = true;
            break;
        case 'o':
            q->format = optarg;
            break;
        case 'O':
            q->long_fields = optarg;
            break;
        case 'j':
            status = parse_jobs(q, optarg) == 0 ? -1 : 1;
            break;
        case 'l':
            q->long_out = true;
            break;
        case 'm':
            q->filter.users = slurm_my_name(q->me, sizeof(q->me));
            break;
        case 'n':
            q->filter.names = optarg;
            break;
        case 'p':
            q->filter.partitions = optarg;
            break;
        case 'q':
            q->filter.qos = optarg;
            break;
        case 'r':
            q->array = true;
            break;
        case 't':
            status = slurm_states_option(CMD, "job state", optarg, &q->filter.states) == 0 ? -1 : 1;
            break;
        case 'u':
            q->filter.users = optarg;
            break;
        case 'K':
            q->socket_opt = optarg;
            break;
        case 's':
            q->steps = true;
            q->steps_list = optarg;
            break;
        case 'S':
            q->start = true;
            break;
        case 'H':
        case 'U':
            usage(stdout);
            status = 0;
            break;
        default:
            status = slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    /* Slurm takes a lone operand as the job list too (squeue 123). */
    for (; status < 0 && optind < argc; optind++)
        status = parse_jobs(q, argv[optind]) == 0 ? -1 : 1;
    return status;
}

static uint64_t limit_of(const Gs__JobInfo *job)
{
    return job->resources != NULL ? job->resources->time_limit_s : 0;
}

static const char *or_na(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : "N/A";
}

static int value(void *vctx, int field, struct gs_buf *out)
{
    const struct line_ctx *ctx = vctx;
    const Gs__JobInfo *job = ctx->row->job;
    const Gs__Resources *res = job->resources;
    uint64_t limit = limit_of(job), elapsed = slurm_job_elapsed_s(job, ctx->now_ms);
    char buf[128];

    switch ((enum field)field) {
    case F_ID:
        return slurm_row_id(out, ctx->row);
    case F_JOBID:
        /* Slurm's %A is unique per component; gsched's one id is, with the offset. */
        if (ctx->row->het != NULL)
            return slurm_row_id(out, ctx->row);
        return gs_buf_printf(out, "%llu", (unsigned long long)job->job_id);
    case F_HET_JOB_ID:
        if (ctx->row->het == NULL)
            return gs_buf_append_str(out, "N/A");
        return gs_buf_printf(out, "%llu", (unsigned long long)job->job_id);
    case F_HET_OFFSET:
        if (ctx->row->het == NULL)
            return gs_buf_append_str(out, "N/A");
        return gs_buf_printf(out, "%u", ctx->row->het->offset);
    case F_ARRAY_JOB:
        return gs_buf_printf(
            out, "%llu",
            (unsigned long long)(job->array_job_id != 0 ? job->array_job_id : job->job_id));
    case F_ARRAY_TASK:
        if (ctx->row->ntasks > 0) {
            int rc = slurm_fmt_ranges(out, ctx->row->tasks, ctx->row->ntasks);
            return rc;
        }
        if (job->array_job_id == 0)
            return gs_buf_append_str(out, "N/A");
        return gs_buf_printf(out, "%u", job->array_task_id);
    case F_NAME:
        return gs_buf_append_str(out, job->name != NULL ? job->name : "");
    case F_USER:
        return gs_buf_append_str(out, slurm_user_name(job, buf, sizeof(buf)));
    case F_UID:
        return gs_buf_printf(out, "%u", job->user != NULL ? job->user->uid : 0);
    case F_ST:
        return gs_buf_append_str(out, slurm_job_state_code(job));
    case F_STATE:
        return gs_buf_append_str(out, slurm_job_state_name(job));
    case F_TIME:
        return gs_buf_append_str(out, slurm_fmt_secs(elapsed, buf, sizeof(buf)));
    case F_LIMIT:
        return gs_buf_append_str(out, slurm_fmt_limit(limit, false, "UNLIMITED", buf, sizeof(buf)));
    case F_LEFT:
        if (limit == 0)
            return gs_buf_append_str(out, "UNLIMITED");
        return gs_buf_append_str(
            out, slurm_fmt_secs(limit > elapsed ? limit - elapsed : 0, buf, sizeof(buf)));
    case F_NODES:
        return gs_buf_printf(out, "%u", slurm_job_nodes(job));
    case F_CPUS:
        return gs_buf_printf(out, "%u", job->ncpus);
    case F_TASKS:
        return gs_buf_printf(out, "%u", job->ntasks);
    case F_REASONLIST:
        return slurm_nodelist_reason(out, job);
    case F_NODELIST:
        return slurm_alloc_hostlist(out, job->allocation, job->n_allocation);
    case F_REASON:
        return gs_buf_append_str(out, slurm_reason(job, buf, sizeof(buf)));
    case F_PARTITION:
        return gs_buf_append_str(out, job->partition != NULL ? job->partition : "");
    case F_ACCOUNT:
        return gs_buf_append_str(out, job->account != NULL && job->account[0] != '\0' ? job->account
                                                                                      : "(null)");
    case F_QOS:
        return gs_buf_append_str(out, or_na(job->qos));
    case F_TRES:
        if (res == NULL || res->gpus_per_node == 0)
            return gs_buf_append_str(out, "N/A");
        return gs_buf_printf(out, "gres/gpu:%u", res->gpus_per_node);
    case F_SUBMIT:
        return gs_buf_append_str(out, slurm_fmt_date(job->submit_time_ms, "N/A", buf, sizeof(buf)));
    case F_START: {
        uint64_t start = job->state == GS__JOB_STATE__JOB_STATE_PENDING ? job->expected_start_ms
                                                                        : job->start_time_ms;
        return gs_buf_append_str(out, slurm_fmt_date(start, "N/A", buf, sizeof(buf)));
    }
    case F_SCHEDNODES:
        return gs_buf_append_str(out, slurm_or_null(job->sched_nodes));
    case F_LICENSES:
        return gs_buf_append_str(out, slurm_or_null(job->licenses));
    case F_DEPENDENCY:
        return gs_buf_append_str(out, slurm_or_null(job->dependency));
    case F_BATCH_HOST: /* the first node, where a batch script runs */
        return gs_buf_append_str(out,
                                 job->n_allocation > 0 ? job->allocation[0]->node_name : "n/a");
    case F_MIN_CPUS: { /* per task, or per GPU; --mincpus when more */
        uint32_t min = res == NULL || res->cpus_case == GS__RESOURCES__CPUS__NOT_SET ? 1
                       : res->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_TASK ? res->cpus_per_task
                                                                             : res->cpus_per_gpu;

        if (res != NULL && res->min_cpus_per_node > min)
            min = res->min_cpus_per_node;
        return gs_buf_printf(out, "%u", min);
    }
    case F_MIN_TMP:
        if (res != NULL && res->tmp_per_node_mib > 0)
            return gs_buf_append_str(
                out, gs_format_size(res->tmp_per_node_mib * GS_MIB, buf, sizeof(buf)));
        return gs_buf_append_str(out, "0");
    case F_CONTIGUOUS:
        return gs_buf_append_str(out, "0");
    case F_FEATURES:
        return gs_buf_append_str(out, slurm_or_null(res != NULL ? res->constraint : NULL));
    case F_GROUP:
        return gs_buf_append_str(
            out, slurm_group_name(job->user != NULL ? job->user->gid : 0, buf, sizeof(buf)));
    case F_GID:
        return gs_buf_printf(out, "%u", job->user != NULL ? job->user->gid : 0);
    case F_OVERSUBSCRIBE: /* GPUs are never shared; an exclusive job shares no node either */
        return gs_buf_append_str(out, res != NULL && res->exclusive ? "NO" : "OK");
    case F_SOCKETS:
    case F_CORES:
    case F_THREADS:
        return gs_buf_append_str(out, "*");
    case F_SCT:
        return gs_buf_append_str(out, "*:*:*");
    case F_COMMENT:
        return gs_buf_append_str(out, slurm_or_null(job->comment));
    case F_REQ_NODES:
        return res != NULL && res->n_nodelist > 0
                   ? gs_hostlist_compress((const char *const *)res->nodelist, res->n_nodelist, out)
                   : 0;
    case F_EXC_NODES:
        return res != NULL && res->n_exclude > 0
                   ? gs_hostlist_compress((const char *const *)res->exclude, res->n_exclude, out)
                   : 0;
    case F_COMMAND:
        return gs_buf_append_str(out, slurm_or_null(job->command));
    case F_PRIORITY_NORM: /* Slurm's: the priority as a share of 2^32 */
        return gs_buf_printf(out, "%.14f", (double)job->priority / 4294967296.0);
    case F_RESERVATION:
        return gs_buf_append_str(out, slurm_or_null(job->reservation));
    case F_WCKEY:
        return gs_buf_append_str(out, slurm_or_null(job->wckey));
    case F_NICE:
        return gs_buf_printf(out, "%d", job->nice);
    case F_END:
        return gs_buf_append_str(out,
                                 slurm_fmt_date(slurm_job_end_ms(job), "N/A", buf, sizeof(buf)));
    case F_PRIORITY:
        return gs_buf_printf(out, "%d", job->priority);
    case F_WORKDIR:
        return gs_buf_append_str(out, or_na(job->workdir));
    case F_MEM:
        return slurm_job_mem(out, job);
    case F_STDOUT:
        return gs_buf_append_str(out, or_na(job->stdout_path));
    case F_STDERR:
        return gs_buf_append_str(
            out,
            or_na(job->stderr_path && job->stderr_path[0] ? job->stderr_path : job->stdout_path));
    }
    return 0;
}

/*
 * Slurm's job state order, for the default sort: pending before running before suspended
 * before ended.
 */
static int state_rank(const Gs__JobInfo *job)
{
    switch (job->state) {
    case GS__JOB_STATE__JOB_STATE_PENDING:
    case GS__JOB_STATE__JOB_STATE_REQUEUED:
        return 0;
    case GS__JOB_STATE__JOB_STATE_RUNNING:
        return cli_job_suspended(job) ? 2 : 1;
    case GS__JOB_STATE__JOB_STATE_COMPLETED:
        return 3;
    case GS__JOB_STATE__JOB_STATE_CANCELLED:
        return 4;
    case GS__JOB_STATE__JOB_STATE_FAILED:
        return 5;
    case GS__JOB_STATE__JOB_STATE_TIMEOUT:
        return 6;
    default:
        return 7;
    }
}

struct sort_item {
    Gs__JobInfo *job;
    size_t index; /* gschedd's order breaks ties, so the sort is stable */
};

static int by_slurm_order(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    int c = strcmp(x->job->partition != NULL ? x->job->partition : "",
                   y->job->partition != NULL ? y->job->partition : "");

    if (c != 0)
        return c;
    c = state_rank(x->job) - state_rank(y->job);
    if (c != 0)
        return c;
    if (x->job->priority != y->job->priority)
        return x->job->priority > y->job->priority ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* --start: the soonest expected start first, jobs without one after, else Slurm's order. */
static int by_start(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    uint64_t s = x->job->expected_start_ms - 1, t = y->job->expected_start_ms - 1; /* 0 last */

    if (s != t)
        return s < t ? -1 : 1;
    return by_slurm_order(a, b);
}

static int print_jobs(const struct squeue_args *q, const struct slurm_format *fmt,
                      const Gs__QueueReply *r)
{
    struct sort_item *items = calloc(r->n_jobs + 1, sizeof(*items));
    Gs__JobInfo **jobs = calloc(r->n_jobs + 1, sizeof(*jobs));
    struct slurm_row *rows = NULL;
    struct gs_buf out = GS_BUF_INIT;
    struct line_ctx ctx = {.now_ms = gs_clock_wall_ms()};
    size_t n = 0, nrows = 0;
    int rc = -1, status;

    if (items == NULL || jobs == NULL)
        goto out;
    for (size_t i = 0; i < r->n_jobs; i++) {
        if (slurm_filter_match(&q->filter, r->jobs[i]))
            items[n++] = (struct sort_item){r->jobs[i], i};
    }
    gs_sort(items, n, sizeof(*items), q->start ? by_start : by_slurm_order);
    for (size_t i = 0; i < n; i++)
        jobs[i] = items[i].job;
    if (slurm_rows_build(jobs, n, !q->array, &rows, &nrows) < 0)
        goto out;
    rc = q->noheader ? 0 : slurm_format_line(fmt, fields, NULL, NULL, &out);
    for (size_t i = 0; rc == 0 && i < nrows; i++) {
        /* -j 42+1: the job passed as a whole above, its other components' lines stay out. */
        if (!slurm_filter_match_part(&q->filter, rows[i].het))
            continue;
        ctx.row = &rows[i];
        rc = slurm_format_line(fmt, fields, value, &ctx, &out);
    }
out:
    status = slurm_print(CMD, rc, &out);
    slurm_rows_free(rows, nrows);
    gs_buf_release(&out);
    free(items);
    free(jobs);
    return status;
}

int cli_cmd_squeue(int argc, char **argv)
{
    struct squeue_args q = {0};
    struct slurm_format fmt = {0};
    Gs__Envelope *reply = NULL;
    const char *env_fmt = getenv("SQUEUE_FORMAT"), *env_fmt2 = getenv("SQUEUE_FORMAT2");
    /* A suspended job has not ended: the default listing shows it, -t S asks no more. */
    const uint32_t active = 1u << GS__JOB_STATE__JOB_STATE_PENDING |
                            1u << GS__JOB_STATE__JOB_STATE_RUNNING |
                            1u << GS__JOB_STATE__JOB_STATE_REQUEUED | SLURM_STATE_SUSPENDED;
    int status = parse_args(argc, argv, &q);

    if (status >= 0)
        goto out;
    q.filter.refs = q.refs;
    if (q.steps) {
        struct squeue_steps_opts o = {q.socket_opt, &q.filter,     q.steps_list,
                                      q.format,     q.long_fields, q.noheader};

        status = squeue_steps(&o);
        goto out;
    }
    /* The command line wins over the environment, -o over -O, as in Slurm. */
    if (q.format == NULL && q.long_fields == NULL) {
        q.format = env_fmt != NULL && env_fmt[0] != '\0' ? env_fmt : NULL;
        q.long_fields =
            q.format == NULL && env_fmt2 != NULL && env_fmt2[0] != '\0' ? env_fmt2 : NULL;
    }
    status = slurm_format_choose(CMD, q.format, q.long_fields,
                                 q.start      ? start_format
                                 : q.long_out ? long_format
                                              : default_format,
                                 fields, NFIELDS, &fmt);
    if (status != 0)
        goto out;
    if (q.filter.states == 0 && q.start)
        q.filter.states = 1u << GS__JOB_STATE__JOB_STATE_PENDING;
    if (q.filter.states == 0 && !q.jobs_given)
        q.filter.states = active;
    /* Ended jobs only when asked for: by id, or by a state that is not an active one. */
    status = slurm_fetch_jobs(q.socket_opt, q.refs, q.filter.nrefs,
                              q.jobs_given || (q.filter.states & ~active) != 0, &reply);
    if (status == 0)
        status = print_jobs(&q, &fmt, reply->queue_reply);
out:
    gs_proto_envelope_free(reply);
    slurm_format_release(&fmt);
    return status;
}
