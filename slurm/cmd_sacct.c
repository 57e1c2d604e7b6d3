/*
 * cmd_sacct.c: `sacct` (also `gsched sacct`): jobs with the ones that have ended, as
 * Slurm's accounting command shows them:
 *
 *     JobID           JobName  Partition    Account  AllocCPUS      State ExitCode
 *     ------------ ---------- ---------- ---------- ---------- ---------- --------
 *     41                 prep        gpu         ml          4  COMPLETED      0:0
 *
 * Each column has sacct's width (JobID 12 left-justified, most others 10 right-justified)
 * and a blank after it; longer values are cut with a '+' at the end. Options as Slurm's:
 * -j IDS (123, 123_4, 42+1), -u USERS, -a/--allusers, --format/-o FIELDS (names any case, each
 * with an optional %WIDTH), -b/--brief, -p/--parsable ('|' after every field),
 * -P/--parsable2 (between them), -n/--noheader, -X/--allocations, -s STATES,
 * -S/-E TIMES (ISO dates, "now", "today"), --name NAMES, -r PARTITIONS, -A ACCOUNTS, and
 * gsched's --socket and --json (every job's JobInfo, its usage included). The usage
 * columns (TotalCPU, MaxRSS, TRESUsageInAve/Max, GPUUtil, GPUUtilMax, GPUMem, GPUHours,
 * GPUIdle, GPUsUsed) come from gschedd's telemetry and are empty without it. Also CPUTime
 * and CPUTimeRAW (the CPUs held times the time run), TimelimitRaw (minutes), ReqCPUS,
 * ReqNodes, ReqTRES, Group, GID, Comment, Constraints and Reservation, on the job's line.
 *
 * After each job's line come its steps', as in Slurm: JOB.batch (an sbatch job's batch
 * shell) and JOB.0, JOB.1, ... (its sruns), from gschedd's step records (StepInfo), with
 * their own name, state, exit code, times, nodes, tasks and MaxRSS / MaxRSSNode /
 * MaxRSSTask / TotalCPU / AveCPU (wait4's figures once a task ended, the heartbeats' while
 * it runs), and what it was given: AllocCPUS, AllocTRES, CPUTime (gschedd 1.29 on). Columns
 * a step has no figure of (Partition, User, Timelimit, ...) are empty.
 * -X/--allocations leaves the steps out; -j 42.0 or 42.batch selects one step's line alone.
 * A suspended job (RUNNING on the wire, JobInfo.suspended) and its running steps show as
 * SUSPENDED, their Elapsed (and CPUTime) stopped where it was suspended; -s S selects it.
 * A heterogeneous job shows as Slurm's: a line per component ("42+0", "42+1") with its
 * nodes, tasks and CPUs, each followed by the steps that ran on its nodes ("42+0.batch",
 * "42+1.0"; a step on several components under each, with its nodes there; slurm_het.h).
 * -j 42+1 shows component 1's line and its steps' alone (42+1.0: that step's line under
 * it); a job without that component, an ordinary one included, shows nothing. --json
 * prints whole jobs: JobInfo knows no components.
 * As in Slurm, only the caller's own jobs show unless -a, -u or -j says otherwise (root sees
 * everyone's), and without -j only jobs active since midnight (-S) show. Every failure exits
 * 1, as in Slurm.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/job_json.h"
#include "cli/job_print.h"
#include "common/clock.h"
#include "common/sort.h"
#include "slurm/acct_cols.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"
#include "slurm/slurm_het.h"
#include "slurm/step_fmt.h"

#define CMD "sacct"

enum field {
    F_JOBID,
    F_JOBIDRAW,
    F_JOBNAME,
    F_PARTITION,
    F_ACCOUNT,
    F_ALLOCCPUS,
    F_NCPUS,
    F_STATE,
    F_EXITCODE,
    F_ELAPSED,
    F_ELAPSEDRAW,
    F_START,
    F_END,
    F_SUBMIT,
    F_NODELIST,
    F_NNODES,
    F_NTASKS,
    F_USER,
    F_UID,
    F_TIMELIMIT,
    F_REASON,
    F_QOS,
    F_PRIORITY,
    F_WORKDIR,
    F_REQMEM,
    F_ALLOCTRES,
    F_ALLOCNODES,
    F_TOTALCPU,
    F_MAXRSS,
    F_TRESUSAGEINAVE,
    F_TRESUSAGEINMAX,
    F_GPUUTIL,
    F_GPUUTILMAX,
    F_GPUMEM,
    F_GPUHOURS,
    F_GPUIDLE,
    F_GPUSUSED,
    F_MAXRSSNODE,
    F_MAXRSSTASK,
    F_AVECPU,
    F_CPUTIME,
    F_CPUTIMERAW,
    F_TIMELIMITRAW,
    F_REQCPUS,
    F_REQNODES,
    F_REQTRES,
    F_GROUP,
    F_GID,
    F_COMMENT,
    F_CONSTRAINTS,
    F_RESERVATION,
    F_WCKEY,
    F_SUSPENDED,
    F_COUNT
};

static const struct slurm_col_def fields[F_COUNT] = {
    [F_JOBID] = {"JobID", -12},
    [F_JOBIDRAW] = {"JobIDRaw", -12},
    [F_JOBNAME] = {"JobName", 10},
    [F_PARTITION] = {"Partition", 10},
    [F_ACCOUNT] = {"Account", 10},
    [F_ALLOCCPUS] = {"AllocCPUS", 10},
    [F_NCPUS] = {"NCPUS", 10},
    [F_STATE] = {"State", 10},
    [F_EXITCODE] = {"ExitCode", 8},
    [F_ELAPSED] = {"Elapsed", 10},
    [F_ELAPSEDRAW] = {"ElapsedRaw", 10},
    [F_START] = {"Start", 19},
    [F_END] = {"End", 19},
    [F_SUBMIT] = {"Submit", 19},
    [F_NODELIST] = {"NodeList", 15},
    [F_NNODES] = {"NNodes", 8},
    [F_NTASKS] = {"NTasks", 8},
    [F_USER] = {"User", 9},
    [F_UID] = {"UID", 6},
    [F_TIMELIMIT] = {"Timelimit", 10},
    [F_REASON] = {"Reason", 22},
    [F_QOS] = {"QOS", 10},
    [F_PRIORITY] = {"Priority", 10},
    [F_WORKDIR] = {"WorkDir", 20},
    [F_REQMEM] = {"ReqMem", 10},
    [F_ALLOCTRES] = {"AllocTRES", 10},
    [F_ALLOCNODES] = {"AllocNodes", 10},
    [F_TOTALCPU] = {"TotalCPU", 10},
    [F_MAXRSS] = {"MaxRSS", 10},
    [F_TRESUSAGEINAVE] = {"TRESUsageInAve", -30},
    [F_TRESUSAGEINMAX] = {"TRESUsageInMax", -30},
    [F_GPUUTIL] = {"GPUUtil", 8},
    [F_GPUUTILMAX] = {"GPUUtilMax", 10},
    [F_GPUMEM] = {"GPUMem", 10},
    [F_GPUHOURS] = {"GPUHours", 10},
    [F_GPUIDLE] = {"GPUIdle", 8},
    [F_GPUSUSED] = {"GPUsUsed", 8},
    [F_MAXRSSNODE] = {"MaxRSSNode", 10},
    [F_MAXRSSTASK] = {"MaxRSSTask", 10},
    [F_AVECPU] = {"AveCPU", 10},
    [F_CPUTIME] = {"CPUTime", 10},
    [F_CPUTIMERAW] = {"CPUTimeRAW", 10},
    [F_TIMELIMITRAW] = {"TimelimitRaw", 12},
    [F_REQCPUS] = {"ReqCPUS", 8},
    [F_REQNODES] = {"ReqNodes", 8},
    [F_REQTRES] = {"ReqTRES", 10},
    [F_GROUP] = {"Group", 9},
    [F_GID] = {"GID", 6},
    [F_COMMENT] = {"Comment", 15},
    [F_CONSTRAINTS] = {"Constraints", 19},
    [F_RESERVATION] = {"Reservation", 10},
    [F_WCKEY] = {"WCKey", 10},
    [F_SUSPENDED] = {"Suspended", 10},
};

struct sacct_args {
    struct slurm_filter filter;
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    uint32_t steps[SLURM_MAX_REFS]; /* per ref: its .STEP, SLURM_STEP_ANY when none */
    struct slurm_cols cols;         /* its defs are fields */
    const char *socket_opt;
    bool noheader, all_users, jobs_given, have_start, json, allocations;
    uint64_t start_ms, end_ms; /* end 0: now */
    char me[64];
};

/* -j JOB[.STEP],...: the jobs go to gschedd, the steps choose the lines. */
static int parse_jobs(struct sacct_args *s, const char *list)
{
    char bad[64];
    int rc = slurm_step_list_parse(list, s->refs, s->steps, SLURM_MAX_REFS, &s->filter.nrefs, bad,
                                   sizeof(bad));

    s->jobs_given = true;
    if (rc == -E2BIG)
        return slurm_error(CMD, "at most %d job ids", SLURM_MAX_REFS);
    if (rc < 0)
        return slurm_error(CMD, "Invalid job id: %s", bad);
    return 0;
}

static void usage(FILE *f)
{
    fputs(
        "Usage: sacct [-a] [-j job[.step]] [-u users] [--format fields] [-b] [-n] [-p | -P] [-X]\n"
        "             [-s states] [-S start] [-E end] [--name names] [-r partitions]\n"
        "             [-A accounts] [--json] [--socket PATH]\n",
        f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct sacct_args *s)
{
    static const struct option opts[] = {
        {"allusers", no_argument, NULL, 'a'},
        {"jobs", required_argument, NULL, 'j'},
        {"user", required_argument, NULL, 'u'},
        {"uid", required_argument, NULL, 'u'},
        {"format", required_argument, NULL, 'o'},
        {"brief", no_argument, NULL, 'b'},
        {"parsable", no_argument, NULL, 'p'},
        {"parsable2", no_argument, NULL, 'P'},
        {"noheader", no_argument, NULL, 'n'},
        {"allocations", no_argument, NULL, 'X'},
        {"state", required_argument, NULL, 's'},
        {"starttime", required_argument, NULL, 'S'},
        {"endtime", required_argument, NULL, 'E'},
        {"name", required_argument, NULL, 'N'},
        {"partition", required_argument, NULL, 'r'},
        {"accounts", required_argument, NULL, 'A'},
        {"qos", required_argument, NULL, 'q'},
        {"duplicates", no_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {"usage", no_argument, NULL, 'U'},
        {"socket", required_argument, NULL, 'K'},
        {"json", no_argument, NULL, 'J'},
        {NULL, 0, NULL, 0},
    };
    uint64_t now = gs_clock_wall_ms();
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":aj:u:o:bpPnXs:S:E:r:A:q:Dh", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            s->all_users = true;
            break;
        case 'j':
            if (parse_jobs(s, optarg) != 0)
                return 1;
            break;
        case 'u':
            s->filter.users = optarg;
            break;
        case 'o':
            if (slurm_cols_parse(&s->cols, CMD, optarg) != 0)
                return 1;
            break;
        case 'b':
            if (slurm_cols_parse(&s->cols, CMD, "JobID,State,ExitCode") != 0)
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
        case 'X':
            s->allocations = true;
            break;
        case 'D':
            break; /* one attempt per job is kept: there are no duplicates to show */
        case 's':
            if (slurm_states_option(CMD, "state", optarg, &s->filter.states) != 0)
                return 1;
            break;
        case 'S':
        case 'E':
            if (slurm_parse_date(optarg, now, c == 'S' ? &s->start_ms : &s->end_ms) < 0)
                return slurm_error(CMD, "Invalid time specification (%s): %s",
                                   c == 'S' ? "-S" : "-E", optarg);
            s->have_start |= c == 'S';
            break;
        case 'N':
            s->filter.names = optarg;
            break;
        case 'r':
            s->filter.partitions = optarg;
            break;
        case 'A':
            s->filter.accounts = optarg;
            break;
        case 'q':
            s->filter.qos = optarg;
            break;
        case 'K':
            s->socket_opt = optarg;
            break;
        case 'J':
            s->json = true;
            break;
        case 'h':
        case 'U':
            usage(stdout);
            return 0;
        default:
            return slurm_opt_error(CMD, c, optopt, argv[optind - 1]);
        }
    }
    if (optind < argc)
        return slurm_error(CMD, "unexpected argument '%s'", argv[optind]);
    return -1;
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

/* "CANCELLED by 1000" when gschedd recorded who ("cancelled by uid 1000"), as sacct. */
static int put_state(struct gs_buf *out, const Gs__JobInfo *job)
{
    const char *by = job->reason != NULL ? strstr(job->reason, "by uid ") : NULL;
    unsigned long uid;
    char *end;

    if (job->state == GS__JOB_STATE__JOB_STATE_CANCELLED && by != NULL) {
        uid = strtoul(by + 7, &end, 10);
        if (end != by + 7)
            return gs_buf_printf(out, "CANCELLED by %lu", uid);
    }
    return gs_buf_append_str(out, slurm_job_state_name(job));
}

/* Slurm's TRES usage form: cpu as a time, memory in M, GPU figures as gres. */
static int tres_usage(const Gs__JobUsage *u, bool max, struct gs_buf *out)
{
    char cpu[64];
    int rc;

    slurm_fmt_secs_long(u->cpu_time_ms / 1000, cpu, sizeof(cpu));
    rc = gs_buf_printf(out, "cpu=%s", cpu);
    if (rc == 0 && u->gpu_alloc_ms > 0 && max)
        rc = gs_buf_printf(out, ",gres/gpumem=%lluM,gres/gpuutil=%u",
                           (unsigned long long)u->gpu_mem_peak_mib, u->gpu_util_max_pct);
    else if (rc == 0 && u->gpu_alloc_ms > 0)
        rc = gs_buf_printf(out, ",gres/gpumem=%lluM,gres/gpuutil=%.0f",
                           (unsigned long long)u->gpu_mem_peak_mib, u->gpu_util_mean_pct);
    if (rc == 0)
        rc = gs_buf_printf(out, ",mem=%lluM", (unsigned long long)u->rss_peak_mib);
    return rc;
}

/* The usage columns; empty when no telemetry came (as sacct leaves unknown fields). */
static int usage_value(const Gs__JobUsage *u, enum field f, struct gs_buf *out)
{
    char buf[64];
    bool gpu = u != NULL && u->gpu_alloc_ms > 0;

    if (u == NULL || !u->telemetry)
        return 0;
    switch (f) {
    case F_TOTALCPU:
        return gs_buf_append_str(out, slurm_fmt_secs_long(u->cpu_time_ms / 1000, buf, sizeof(buf)));
    case F_MAXRSS:
        return gs_buf_printf(out, "%lluM", (unsigned long long)u->rss_peak_mib);
    case F_TRESUSAGEINAVE:
    case F_TRESUSAGEINMAX:
        return tres_usage(u, f == F_TRESUSAGEINMAX, out);
    case F_GPUUTIL:
        return gpu ? gs_buf_printf(out, "%.1f%%", u->gpu_util_mean_pct) : 0;
    case F_GPUUTILMAX:
        return gpu ? gs_buf_printf(out, "%u%%", u->gpu_util_max_pct) : 0;
    case F_GPUMEM:
        return gpu ? gs_buf_printf(out, "%lluM", (unsigned long long)u->gpu_mem_peak_mib) : 0;
    case F_GPUHOURS:
        return gpu ? gs_buf_printf(out, "%.3f", (double)u->gpu_alloc_ms / 3.6e6) : 0;
    case F_GPUIDLE:
        return gpu ? gs_buf_printf(out, "%.0f%%",
                                   100.0 * (double)u->gpu_idle_ms / (double)u->gpu_alloc_ms)
                   : 0;
    case F_GPUSUSED:
        return gpu ? gs_buf_printf(out, "%u/%u", u->gpus_used, u->gpus_alloc) : 0;
    default:
        return 0;
    }
}

/* job: the job, or for a heterogeneous job's component (part) the component's view. */
static int value(const Gs__JobInfo *job, const struct slurm_het_part *part, enum field f,
                 uint64_t now_ms, struct gs_buf *out)
{
    uint64_t limit = job->resources != NULL ? job->resources->time_limit_s : 0;
    uint64_t elapsed = slurm_job_elapsed_s(job, now_ms);
    char buf[128];

    switch (f) {
    case F_JOBID:
        return gs_buf_append_str(out, slurm_het_job_id(job, part, buf, sizeof(buf)));
    case F_JOBIDRAW:
        /* gsched's one id for the whole job, where Slurm has one per component. */
        return gs_buf_printf(out, "%llu", (unsigned long long)job->job_id);
    case F_JOBNAME:
        return gs_buf_append_str(out, or_empty(job->name));
    case F_PARTITION:
        return gs_buf_append_str(out, or_empty(job->partition));
    case F_ACCOUNT:
        return gs_buf_append_str(out, or_empty(job->account));
    case F_ALLOCCPUS:
    case F_NCPUS:
        return gs_buf_printf(out, "%u",
                             job->state == GS__JOB_STATE__JOB_STATE_PENDING ? 0 : job->ncpus);
    case F_STATE:
        return put_state(out, job);
    case F_EXITCODE:
        return gs_buf_printf(out, "%d:%u", job->signaled ? 0 : job->exit_code,
                             job->signaled ? job->term_signal : 0);
    case F_ELAPSED:
        return gs_buf_append_str(out, slurm_fmt_secs_long(elapsed, buf, sizeof(buf)));
    case F_ELAPSEDRAW:
        return gs_buf_printf(out, "%llu", (unsigned long long)elapsed);
    case F_SUSPENDED:
        return gs_buf_append_str(
            out, slurm_fmt_secs_long(cli_job_suspended_s(job, now_ms), buf, sizeof(buf)));
    case F_START:
        return gs_buf_append_str(out,
                                 slurm_fmt_date(job->start_time_ms, "Unknown", buf, sizeof(buf)));
    case F_END:
        return gs_buf_append_str(out,
                                 slurm_fmt_date(job->end_time_ms, "Unknown", buf, sizeof(buf)));
    case F_SUBMIT:
        return gs_buf_append_str(out,
                                 slurm_fmt_date(job->submit_time_ms, "Unknown", buf, sizeof(buf)));
    case F_NODELIST:
        if (job->n_allocation == 0)
            return gs_buf_append_str(out, "None assigned");
        return slurm_alloc_hostlist(out, job->allocation, job->n_allocation);
    case F_NNODES:
    case F_ALLOCNODES:
        return gs_buf_printf(out, "%u", slurm_job_nodes(job));
    case F_NTASKS:
        return gs_buf_printf(out, "%u", job->ntasks);
    case F_USER:
        return gs_buf_append_str(out, slurm_user_name(job, buf, sizeof(buf)));
    case F_UID:
        return gs_buf_printf(out, "%u", job->user != NULL ? job->user->uid : 0);
    case F_TIMELIMIT:
        return gs_buf_append_str(out, slurm_fmt_limit(limit, true, "UNLIMITED", buf, sizeof(buf)));
    case F_REASON:
        return gs_buf_append_str(out, slurm_reason(job, buf, sizeof(buf)));
    case F_QOS:
        return gs_buf_append_str(out, or_empty(job->qos));
    case F_PRIORITY:
        return gs_buf_printf(out, "%d", job->priority);
    case F_WORKDIR:
        return gs_buf_append_str(out, or_empty(job->workdir));
    case F_REQMEM:
        return slurm_job_mem(out, job);
    case F_ALLOCTRES:
        /* Nothing is allocated before the job starts. */
        return job->n_allocation > 0 ? slurm_job_tres(out, job) : 0;
    case F_TOTALCPU:
    case F_MAXRSS:
    case F_TRESUSAGEINAVE:
    case F_TRESUSAGEINMAX:
    case F_GPUUTIL:
    case F_GPUUTILMAX:
    case F_GPUMEM:
    case F_GPUHOURS:
    case F_GPUIDLE:
    case F_GPUSUSED:
        return usage_value(job->usage, f, out);
    case F_MAXRSSNODE:
    case F_MAXRSSTASK:
    case F_AVECPU:
        return 0;   /* a step's figures: the job's line has none, as in sacct */
    case F_CPUTIME: /* the CPUs it held for as long as it ran */
    case F_CPUTIMERAW: {
        uint64_t cpu_s = job->state == GS__JOB_STATE__JOB_STATE_PENDING ? 0 : elapsed * job->ncpus;

        return f == F_CPUTIMERAW
                   ? gs_buf_printf(out, "%llu", (unsigned long long)cpu_s)
                   : gs_buf_append_str(out, slurm_fmt_secs_long(cpu_s, buf, sizeof(buf)));
    }
    case F_TIMELIMITRAW: /* minutes */
        return limit == 0 ? gs_buf_append_str(out, "UNLIMITED")
                          : gs_buf_printf(out, "%llu", (unsigned long long)((limit + 59) / 60));
    case F_REQCPUS:
        return gs_buf_printf(out, "%u", job->ncpus);
    case F_REQNODES:
        return gs_buf_printf(
            out, "%u",
            job->resources != NULL && job->resources->nodes > 0 ? job->resources->nodes : 1);
    case F_REQTRES:
        return slurm_job_tres(out, job);
    case F_GROUP:
        return gs_buf_append_str(
            out, slurm_group_name(job->user != NULL ? job->user->gid : 0, buf, sizeof(buf)));
    case F_GID:
        return gs_buf_printf(out, "%u", job->user != NULL ? job->user->gid : 0);
    case F_COMMENT:
        return gs_buf_append_str(out, or_empty(job->comment));
    case F_CONSTRAINTS:
        return gs_buf_append_str(
            out, or_empty(job->resources != NULL ? job->resources->constraint : NULL));
    case F_RESERVATION:
        return gs_buf_append_str(out, or_empty(job->reservation));
    case F_WCKEY:
        return gs_buf_append_str(out, or_empty(job->wckey));
    case F_COUNT:
        break;
    }
    return 0;
}

/* A step's columns; those it has no figure of are empty, as sacct leaves them. */
static int step_value(const Gs__JobInfo *job, const struct slurm_het_part *part,
                      const Gs__StepInfo *st, enum field f, uint64_t now_ms, struct gs_buf *out)
{
    uint64_t elapsed = slurm_step_elapsed_s(job, st, now_ms);
    char buf[128], step[16];

    switch (f) {
    case F_JOBID:
    case F_JOBIDRAW:
        if (f == F_JOBID)
            slurm_het_job_id(job, part, buf, sizeof(buf));
        else
            snprintf(buf, sizeof(buf), "%llu", (unsigned long long)job->job_id);
        return gs_buf_printf(out, "%s.%s", buf, slurm_step_id(st->step, step, sizeof(step)));
    case F_JOBNAME:
        return gs_buf_append_str(out, or_empty(st->name));
    case F_ACCOUNT:
        return gs_buf_append_str(out, or_empty(job->account));
    case F_STATE:
        return gs_buf_append_str(out, slurm_step_state_name(job, st));
    case F_EXITCODE:
        return gs_buf_printf(out, "%d:%u", st->signaled ? 0 : st->exit_code,
                             st->signaled ? st->term_signal : 0);
    case F_ELAPSED:
        return gs_buf_append_str(out, slurm_fmt_secs_long(elapsed, buf, sizeof(buf)));
    case F_ELAPSEDRAW:
        return gs_buf_printf(out, "%llu", (unsigned long long)elapsed);
    case F_START:
    case F_SUBMIT:
        return gs_buf_append_str(out,
                                 slurm_fmt_date(st->start_time_ms, "Unknown", buf, sizeof(buf)));
    case F_END:
        return gs_buf_append_str(out, slurm_fmt_date(st->end_time_ms, "Unknown", buf, sizeof(buf)));
    case F_NODELIST:
        return gs_buf_append_str(out, or_empty(st->nodelist));
    case F_NNODES:
    case F_ALLOCNODES:
        return gs_buf_printf(out, "%u", st->nnodes);
    case F_NTASKS:
        return gs_buf_printf(out, "%u", st->ntasks);
    case F_ALLOCCPUS: /* what gschedd 1.29 says it was given; empty before */
    case F_NCPUS:
        return st->cpus > 0 ? gs_buf_printf(out, "%u", st->cpus) : 0;
    case F_ALLOCTRES:
        return slurm_step_tres(out, st);
    case F_CPUTIME:
    case F_CPUTIMERAW:
        if (st->cpus == 0)
            return 0;
        return f == F_CPUTIMERAW
                   ? gs_buf_printf(out, "%llu", (unsigned long long)elapsed * st->cpus)
                   : gs_buf_append_str(out,
                                       slurm_fmt_secs_long(elapsed * st->cpus, buf, sizeof(buf)));
    case F_UID:
    case F_USER:
        return 0;
    case F_TOTALCPU:
        return gs_buf_append_str(out,
                                 slurm_fmt_secs_long(st->cpu_time_ms / 1000, buf, sizeof(buf)));
    case F_AVECPU:
        return gs_buf_append_str(
            out, slurm_fmt_secs_long(st->ntasks > 0 ? st->cpu_time_ms / 1000 / st->ntasks : 0, buf,
                                     sizeof(buf)));
    case F_MAXRSS:
        return gs_buf_append_str(out, slurm_fmt_rss(st->max_rss_kib, buf, sizeof(buf)));
    case F_MAXRSSNODE:
        return st->max_rss_kib > 0 ? gs_buf_append_str(out, or_empty(st->max_rss_node)) : 0;
    case F_MAXRSSTASK:
        return st->max_rss_kib > 0 ? gs_buf_printf(out, "%u", st->max_rss_task) : 0;
    default:
        return 0;
    }
}

/* One line: the job's own (st NULL) or one of its steps'; part: a component's, "42+1". */
static int put_line(const struct sacct_args *s, const Gs__JobInfo *job,
                    const struct slurm_het_part *part, const Gs__StepInfo *st, uint64_t now,
                    struct gs_buf *cell, struct gs_buf *out)
{
    int rc = 0;

    for (size_t k = 0; rc == 0 && k < s->cols.n; k++) {
        enum field f = (enum field)s->cols.col[k].field;

        gs_buf_reset(cell);
        rc = st != NULL ? step_value(job, part, st, f, now, cell) : value(job, part, f, now, cell);
        if (rc == 0)
            rc = slurm_cols_put(&s->cols, k, cell->data != NULL ? cell->data : "", out);
    }
    return rc == 0 ? gs_buf_putc(out, '\n') : rc;
}

/*
 * Whether step i of job shows under part (NULL: the job is not heterogeneous), and as
 * what: *view, its nodes cut to the component's (nodelist's text in buf). 1, 0 or -ENOMEM.
 */
static int step_under(const Gs__JobInfo *job, const struct slurm_het_part *part, size_t i,
                      Gs__StepInfo *view, struct gs_buf *buf)
{
    if (part == NULL) {
        *view = *job->steps[i];
        return 1;
    }
    return slurm_het_step_view(job, part->offset, job->steps[i], view, buf);
}

/* What put_rows needs besides the row. */
struct rows_ctx {
    const struct sacct_args *s;
    uint64_t now;
    struct gs_buf *cell, *out;
};

/*
 * The job's line, then its steps' unless -X, as -j asks for them; for a component of a
 * heterogeneous job (part, row its view) its line and the steps that ran on its nodes
 * ("42+1.0"), as Slurm's sacct lists them.
 */
static int put_rows(const Gs__JobInfo *row, const struct slurm_het_part *part, void *vctx)
{
    const struct rows_ctx *c = vctx;
    const struct sacct_args *s = c->s;
    const Gs__JobInfo *job = part != NULL ? part->whole : row;
    struct gs_buf nodes = GS_BUF_INIT;
    size_t n = s->filter.nrefs;
    int rc = 0;

    if (slurm_step_job_selected(s->refs, s->steps, n, job, part))
        rc = put_line(s, row, part, NULL, c->now, c->cell, c->out);
    for (size_t i = 0; rc == 0 && !s->allocations && i < job->n_steps; i++) {
        Gs__StepInfo view;

        if (!slurm_step_selected(s->refs, s->steps, n, job, part, job->steps[i]->step))
            continue;
        rc = step_under(job, part, i, &view, &nodes);
        rc = rc == 1 ? put_line(s, row, part, &view, c->now, c->cell, c->out) : rc;
    }
    gs_buf_release(&nodes);
    return rc;
}

/* Whether the job was around in [start, end]: submitted by end and not ended before start. */
static bool in_window(const struct sacct_args *s, const Gs__JobInfo *job, uint64_t now_ms)
{
    uint64_t begin = job->submit_time_ms != 0 ? job->submit_time_ms : job->start_time_ms;
    uint64_t finish = job->end_time_ms != 0 ? job->end_time_ms : now_ms;
    uint64_t end = s->end_ms != 0 ? s->end_ms : now_ms;

    return finish >= s->start_ms && begin <= end;
}

static int by_job_id(const void *a, const void *b)
{
    const Gs__JobInfo *x = *(Gs__JobInfo *const *)a, *y = *(Gs__JobInfo *const *)b;

    return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

/* --json: {"jobs": [JobInfo with its usage, ...]} in job id order. */
static int print_json(Gs__JobInfo *const *jobs, size_t n)
{
    struct gs_buf out = GS_BUF_INIT;
    struct gs_json j;
    int rc;

    gs_json_init(&j, &out);
    gs_json_object_begin(&j);
    gs_json_key(&j, "jobs");
    gs_json_array_begin(&j);
    for (size_t i = 0; i < n; i++)
        cli_json_job_info(&j, jobs[i]);
    gs_json_array_end(&j);
    gs_json_object_end(&j);
    rc = cli_json_write(&j, &out, stdout);
    gs_buf_release(&out);
    return rc;
}

static int print_jobs(const struct sacct_args *s, const Gs__QueueReply *r)
{
    struct gs_buf out = GS_BUF_INIT, cell = GS_BUF_INIT;
    uint64_t now = gs_clock_wall_ms();
    Gs__JobInfo **jobs = calloc(r->n_jobs + 1, sizeof(*jobs));
    size_t n = 0;
    int rc = jobs == NULL ? -ENOMEM : s->noheader ? 0 : slurm_cols_header(&s->cols, &out), status;

    /* Job id order, as sacct lists the accounting records (submission order). */
    for (size_t i = 0; jobs != NULL && i < r->n_jobs; i++) {
        if (slurm_filter_match(&s->filter, r->jobs[i]) && in_window(s, r->jobs[i], now))
            jobs[n++] = r->jobs[i];
    }
    gs_sort(jobs, n, sizeof(*jobs), by_job_id);
    if (s->json) {
        rc = print_json(jobs, n);
        n = 0;
        gs_buf_reset(&out);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct rows_ctx c = {s, now, &cell, &out};

        rc = slurm_het_each(jobs[i], put_rows, &c);
    }
    status = slurm_print(CMD, rc, &out);
    gs_buf_release(&cell);
    gs_buf_release(&out);
    free(jobs);
    return status;
}

int cli_cmd_sacct(int argc, char **argv)
{
    struct sacct_args s = {.cols = {.defs = fields, .ndefs = F_COUNT}};
    Gs__Envelope *reply = NULL;
    const char *env_fmt = getenv("SACCT_FORMAT");
    int status;

    if (env_fmt != NULL && env_fmt[0] != '\0' && slurm_cols_parse(&s.cols, CMD, env_fmt) != 0)
        return 1;
    status = parse_args(argc, argv, &s);
    if (status >= 0)
        return status;
    if (s.cols.n == 0 &&
        slurm_cols_parse(&s.cols, CMD,
                         "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode") != 0)
        return 1;
    s.filter.refs = s.refs;
    if (s.filter.users == NULL && !s.all_users && !s.jobs_given && getuid() != 0)
        s.filter.users = slurm_my_name(s.me, sizeof(s.me));
    if (!s.have_start && !s.jobs_given)
        slurm_parse_date("today", gs_clock_wall_ms(), &s.start_ms);
    status = slurm_fetch_steps(s.socket_opt, s.refs, s.filter.nrefs, true, &reply);
    if (status == 0)
        status = print_jobs(&s, reply->queue_reply);
    gs_proto_envelope_free(reply);
    return status;
}
