/*
 * cmd_scontrol.c: `scontrol` (also `gsched scontrol`), the parts of Slurm's scontrol that
 * job scripts and operators use:
 *
 *     scontrol show hostnames [LIST]     a hostlist (default $SLURM_JOB_NODELIST), one per line
 *     scontrol show job [ID]             Slurm's Key=Value block per job (ID: 42, 123, 123_4),
 *                                        per component of a heterogeneous job (42+1: that
 *                                        component's alone)
 *     scontrol show step [ID[.STEP]]     per running job step (scontrol_step.c)
 *     scontrol show partition [NAME]     per partition
 *     scontrol show node [NAME]          per node ("nodes" too)
 *     scontrol hold|release IDS          keep pending jobs from starting / let them start
 *                                        (IDS as show job's; a component, 42+1, is refused)
 *     scontrol requeue|requeuehold IDS   end running jobs and queue them again (held)
 *     scontrol suspend|resume IDS        stop running jobs' tasks / continue them (root);
 *                                        a suspended job keeps its nodes and GPUs
 *     scontrol update NodeName=LIST State=DRAIN Reason=TEXT | State=RESUME
 *                                        take nodes out of service and back (root)
 *     scontrol update JobId=ID Priority=|Nice=|TimeLimit=|Partition=|QOS=|Dependency=|
 *                     Licenses=          change a pending job, or a running
 *                                        job's TimeLimit (scontrol_update.c)
 *     scontrol show reservation [NAME]   Slurm's record per advance reservation ("res" too)
 *     scontrol show licenses [NAME]      per [[license]]: its total, what running jobs hold
 *                                        ("lic", "license" too)
 *     scontrol show config               gschedd's settings, Slurm's names first (Key = Value)
 *     scontrol create reservation KEY=VALUE...    (root) StartTime= EndTime=|Duration=
 *                                        Nodes= Users=|Accounts= [ReservationName=] [Flags=]
 *     scontrol update ReservationName=NAME KEY=VALUE...   (root; scontrol_update.c)
 *     scontrol delete ReservationName=NAME | delete reservation NAME   (root)
 *     scontrol write batch_script ID [FILE|-]   a batch job's script (scontrol_write.c)
 *
 * `-o`/`--oneliner` before the command puts each record on one line, as Slurm's; --socket
 * PATH is gsched's. The hostnames expansion needs no daemon: the way multi-node torchrun
 * scripts pick their rendezvous host
 * (`head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`). Records are
 * separated by a blank line, continuation lines indented by three blanks, as in Slurm.
 * Every failure exits 1 ("scontrol: error: ..."), as in Slurm. Reservations' words are read
 * and their records laid out by scontrol_resv.c; the exchange is scontrol_update.h's.
 */
#include "slurm/commands.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/client.h"
#include "cli/job_print.h"
#include "cli/jobcmd.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/jobspec.h"
#include "common/jobspec_mail.h"
#include "slurm/scontrol_resv.h"
#include "slurm/scontrol_step.h"
#include "slurm/scontrol_update.h"
#include "slurm/scontrol_write.h"
#include "slurm/slurm_cmd.h"
#include "slurm/slurm_fmt.h"
#include "slurm/slurm_het.h"

#define CMD "scontrol"

struct scontrol {
    const char *socket_opt;
    bool oneliner;
};

static int show_hostnames(int argc, char **argv)
{
    const char *list = argc > 0 ? argv[0] : getenv("SLURM_JOB_NODELIST");
    struct gs_error err;
    char **names = NULL;
    size_t n = 0;

    if (argc > 1)
        return slurm_error(CMD, "show hostnames takes one hostlist, not '%s'", argv[1]);
    if (list == NULL)
        list = getenv("GSCHED_NODELIST");
    if (list == NULL)
        return slurm_error(CMD, "no hostlist given and SLURM_JOB_NODELIST is not set");
    gs_error_clear(&err);
    if (gs_hostlist_expand(list, &names, &n, &err) < 0)
        return slurm_error(CMD, "hostlist '%s', column %d: %s", list, err.col, err.msg);
    for (size_t i = 0; i < n; i++)
        printf("%s\n", names[i]);
    gs_hostlist_free(names);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* --- Key=Value records ------------------------------------------------------------------- */

/*
 * The records are written straight through: out keeps its first failure (gs_buf_error), so
 * a record checks once, at end_record.
 */

/* Starts a continuation line, or a blank in one-line mode. */
static void next_line(const struct scontrol *sc, struct gs_buf *out)
{
    gs_buf_append_str(out, sc->oneliner ? " " : "\n   ");
}

/* Ends a record; 0 or the first failure since out was empty. */
static int end_record(const struct scontrol *sc, struct gs_buf *out)
{
    gs_buf_append_str(out, sc->oneliner ? "\n" : "\n\n");
    return gs_buf_error(out);
}

static void put_user(struct gs_buf *out, const Gs__UserIdentity *u)
{
    struct group *gr;

    if (u == NULL) {
        gs_buf_append_str(out, "UserId=(null) GroupId=(null)");
        return;
    }
    if (u->username != NULL && u->username[0] != '\0')
        gs_buf_printf(out, "UserId=%s(%u)", u->username, u->uid);
    else
        gs_buf_printf(out, "UserId=%u(%u)", u->uid, u->uid);
    gr = getgrgid(u->gid);
    if (gr != NULL)
        gs_buf_printf(out, " GroupId=%s(%u)", gr->gr_name, u->gid);
    else
        gs_buf_printf(out, " GroupId=%u(%u)", u->gid, u->gid);
}

/* What is left of a pending job's dependencies, as gschedd says (JobInfo.dependency). */
static void put_dependency(struct gs_buf *out, const Gs__JobInfo *job)
{
    gs_buf_printf(out, "Dependency=%s", slurm_or_null(job->dependency));
}

/* "KEY=n[1-2]" of names, or "KEY=(null)" without any. */
static void put_names(struct gs_buf *out, const char *key, char **names, size_t n)
{
    gs_buf_printf(out, "%s=", key);
    if (n > 0)
        gs_hostlist_compress((const char *const *)names, n, out);
    else
        gs_buf_append_str(out, "(null)");
}

/* What each node must have, as Slurm's record lists it: CPUs per task (or per GPU), memory,
 * the feature asked for, whether the job shares its nodes. */
static void put_node_needs(const struct scontrol *sc, struct gs_buf *out, const Gs__Resources *r,
                           uint32_t cpt)
{
    uint32_t min_cpus =
        r != NULL && r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_GPU ? r->cpus_per_gpu : cpt;

    if (r != NULL && r->min_cpus_per_node > min_cpus) /* --mincpus */
        min_cpus = r->min_cpus_per_node;
    gs_buf_printf(out, "MinCPUsNode=%u MinMemoryNode=", min_cpus);
    if (r != NULL && r->mem_per_node_mib > 0)
        gs_buf_printf(out, "%lluM", (unsigned long long)r->mem_per_node_mib);
    else
        gs_buf_append_str(out, "0");
    if (r != NULL && r->tmp_per_node_mib > 0)
        gs_buf_printf(out, " MinTmpDiskNode=%lluM", (unsigned long long)r->tmp_per_node_mib);
    else
        gs_buf_append_str(out, " MinTmpDiskNode=0");
    next_line(sc, out);
    gs_buf_printf(out, "Features=%s DelayBoot=00:00:00",
                  slurm_or_null(r != NULL ? r->constraint : NULL));
    next_line(sc, out);
    gs_buf_printf(out, "OverSubscribe=%s Contiguous=0 Network=(null)",
                  r != NULL && r->exclusive ? "NO" : "OK");
}

/* Seconds a resumed job had run when it was last suspended: at its resume, by then (its
 * suspensions, the last one included, left out); 0 when it never resumed. */
static uint64_t pre_suspend_s(const Gs__JobInfo *job)
{
    uint64_t r = job->resume_time_ms;

    if (r == 0 || job->start_time_ms == 0 || r <= job->start_time_ms ||
        r - job->start_time_ms <= job->suspended_ms)
        return 0;
    return (r - job->start_time_ms - job->suspended_ms) / 1000;
}

/*
 * One job's record; part: one component of a heterogeneous job, job its view (slurm_het.h).
 * Slurm gives each component an id of its own (JobId=43 HetJobId=42 HetJobOffset=1);
 * gsched gives the whole job one, so every component's record says JobId=42 and the
 * offset tells them apart.
 */
static int put_job(const struct scontrol *sc, struct gs_buf *out, const Gs__JobInfo *job,
                   const struct slurm_het_part *part, uint64_t now_ms)
{
    const Gs__JobInfo *whole = part != NULL ? part->whole : job;
    const Gs__JobSpec *spec = job->spec;
    const Gs__RunSpec *run = spec != NULL ? spec->run : NULL;
    const Gs__Resources *r = job->resources;
    bool pending = job->state == GS__JOB_STATE__JOB_STATE_PENDING ||
                   job->state == GS__JOB_STATE__JOB_STATE_REQUEUED;
    uint64_t limit = r != NULL ? r->time_limit_s : 0;
    uint64_t start = pending ? job->expected_start_ms : job->start_time_ms;
    uint64_t elapsed = cli_job_run_s(job, job->state, now_ms);
    bool suspended = cli_job_suspended(job);
    const char *so = job->stdout_path != NULL && job->stdout_path[0] != '\0' ? job->stdout_path
                     : run != NULL                                           ? run->stdout_pattern
                                                                             : NULL;
    const char *se =
        job->stderr_path != NULL && job->stderr_path[0] != '\0' ? job->stderr_path : so;
    uint32_t cpt = 1;
    char a[48], b[48], c[48], reason[64];

    if (r != NULL && r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_TASK && r->cpus_per_task > 0)
        cpt = r->cpus_per_task;
    else if (job->ntasks > 0 && job->ncpus % job->ntasks == 0 && job->ncpus > 0)
        cpt = job->ncpus / job->ntasks;

    gs_buf_printf(out, "JobId=%llu", (unsigned long long)job->job_id);
    if (job->array_job_id != 0)
        gs_buf_printf(out, " ArrayJobId=%llu ArrayTaskId=%u", (unsigned long long)job->array_job_id,
                      job->array_task_id);
    if (part != NULL)
        gs_buf_printf(out, " HetJobId=%llu HetJobOffset=%u", (unsigned long long)job->job_id,
                      part->offset);
    gs_buf_printf(out, " JobName=%s", job->name != NULL ? job->name : "");
    next_line(sc, out);
    put_user(out, job->user);
    gs_buf_append_str(out, " MCS_label=N/A");
    next_line(sc, out);
    gs_buf_printf(out, "Priority=%d Nice=%d Account=%s QOS=%s", job->priority,
                  spec != NULL ? spec->nice : 0, slurm_or_null(job->account),
                  slurm_or_null(job->qos));
    next_line(sc, out);
    gs_buf_printf(out, "JobState=%s Reason=%s ", slurm_job_state_name(job),
                  slurm_reason(job, reason, sizeof(reason)));
    put_dependency(out, whole);
    next_line(sc, out);
    gs_buf_printf(out, "Requeue=1 Restarts=%u BatchFlag=%d Reboot=0 ExitCode=%d:%u",
                  job->restart_count, run != NULL && run->batch ? 1 : 0,
                  job->signaled ? 0 : job->exit_code, job->signaled ? job->term_signal : 0);
    next_line(sc, out);
    gs_buf_printf(
        out, "RunTime=%s TimeLimit=%s TimeMin=%s", slurm_fmt_secs_long(elapsed, a, sizeof(a)),
        slurm_fmt_limit(limit, true, "UNLIMITED", b, sizeof(b)),
        r != NULL && r->time_min_s > 0 ? slurm_fmt_secs_long(r->time_min_s, c, sizeof(c)) : "N/A");
    next_line(sc, out);
    gs_buf_printf(out, "SubmitTime=%s EligibleTime=%s",
                  slurm_fmt_date(job->submit_time_ms, "Unknown", a, sizeof(a)),
                  slurm_fmt_date(job->submit_time_ms, "Unknown", b, sizeof(b)));
    next_line(sc, out);
    gs_buf_printf(out, "StartTime=%s EndTime=%s Deadline=N/A",
                  slurm_fmt_date(start, "Unknown", a, sizeof(a)),
                  slurm_fmt_date(slurm_job_end_ms(job), "Unknown", b, sizeof(b)));
    next_line(sc, out);
    /*
     * Slurm's SuspendTime is when the job was last suspended or resumed, and SecsPreSuspend
     * what it had run when last suspended: while it is, its RunTime; once resumed, what it
     * had run at the resume (suspended_ms by then holds the last stretch too).
     */
    gs_buf_printf(out, "SuspendTime=%s SecsPreSuspend=%llu",
                  slurm_fmt_date(suspended ? job->suspend_time_ms : job->resume_time_ms, "None", a,
                                 sizeof(a)),
                  (unsigned long long)(suspended ? elapsed : pre_suspend_s(job)));
    next_line(sc, out);
    gs_buf_printf(out, "Partition=%s", slurm_or_null(job->partition));
    if (spec != NULL && spec->reservation != NULL && spec->reservation[0] != '\0')
        gs_buf_printf(out, " Reservation=%s", spec->reservation); /* only when it has one */
    if (spec != NULL && spec->n_licenses > 0) {
        gs_buf_append_str(out, " Licenses=");
        cli_job_licenses(out, spec);
    }
    next_line(sc, out);
    put_names(out, "ReqNodeList", r != NULL ? r->nodelist : NULL, r != NULL ? r->n_nodelist : 0);
    gs_buf_append_str(out, " ");
    put_names(out, "ExcNodeList", r != NULL ? r->exclude : NULL, r != NULL ? r->n_exclude : 0);
    next_line(sc, out);
    gs_buf_append_str(out, "NodeList=");
    if (job->n_allocation > 0) {
        slurm_alloc_hostlist(out, job->allocation, job->n_allocation);
        /* The batch shell's node, the whole job's first, in every component's record. */
        next_line(sc, out);
        gs_buf_printf(out, "BatchHost=%s", whole->allocation[0]->node_name);
    } else {
        gs_buf_append_str(out, "(null)");
        if (job->sched_nodes != NULL && job->sched_nodes[0] != '\0')
            gs_buf_printf(out, " SchedNodeList=%s", job->sched_nodes);
    }
    next_line(sc, out);
    gs_buf_printf(out, "NumNodes=%u NumCPUs=%u NumTasks=%u CPUs/Task=%u", slurm_job_nodes(job),
                  job->ncpus, job->ntasks, cpt);
    next_line(sc, out);
    gs_buf_append_str(out, "ReqTRES=");
    slurm_job_tres(out, job);
    next_line(sc, out);
    gs_buf_append_str(out, "AllocTRES=");
    if (job->n_allocation > 0)
        slurm_job_tres(out, job);
    next_line(sc, out);
    put_node_needs(sc, out, r, cpt);
    next_line(sc, out);
    if (spec != NULL && spec->switches > 0) { /* --switches=N[@TIME], as Slurm's record says it */
        gs_buf_printf(out, "Switches=%u", spec->switches);
        if (spec->switch_wait_set)
            gs_buf_printf(out, "@%s", slurm_fmt_secs_long(spec->switch_wait_s, a, sizeof(a)));
        next_line(sc, out);
    }
    /* A batch job's Command= is its script's path, as Slurm prints it; --wrap has none. */
    gs_buf_append_str(out, "Command=");
    if (run != NULL && run->batch && spec->source != NULL && spec->source[0] != '\0')
        gs_buf_append_str(out, spec->source);
    else if (run != NULL && !run->batch && run->n_argv > 0)
        gs_buf_argv_join(out, run->argv, run->n_argv);
    else
        gs_buf_append_str(out, "(null)");
    next_line(sc, out);
    gs_buf_printf(out, "WorkDir=%s",
                  slurm_or_null(job->workdir != NULL && job->workdir[0] != '\0' ? job->workdir
                                : run != NULL                                   ? run->workdir
                                                                                : NULL));
    if (job->comment != NULL && job->comment[0] != '\0') { /* only when it has one */
        next_line(sc, out);
        gs_buf_printf(out, "Comment=%s", job->comment);
    }
    next_line(sc, out);
    gs_buf_printf(out, "StdErr=%s", slurm_or_null(se));
    next_line(sc, out);
    gs_buf_append_str(out, "StdIn=/dev/null");
    next_line(sc, out);
    gs_buf_printf(out, "StdOut=%s", slurm_or_null(so));
    if (r != NULL && r->gpus_per_node > 0) {
        next_line(sc, out);
        gs_buf_printf(out, "TresPerNode=gres/gpu:%u", r->gpus_per_node);
    }
    if (spec != NULL && spec->mail_types != 0) { /* mail asked for (sbatch --mail-type) */
        char user[64];

        next_line(sc, out);
        gs_buf_printf(out, "MailUser=%s MailType=",
                      spec->mail_user != NULL && spec->mail_user[0] != '\0'
                          ? spec->mail_user
                          : slurm_user_name(job, user, sizeof(user)));
        gs_mail_types_format(spec->mail_types, out);
    }
    return end_record(sc, out);
}

/* The records built in out, or the line saying there are none ("No jobs in the system"). */
static int show_records(const struct gs_buf *out, size_t shown, const char *what)
{
    if (shown == 0) {
        printf("No %s in the system\n", what);
        return 0;
    }
    return slurm_print(CMD, 0, out);
}

/* What put_record needs besides the job. */
struct record_ctx {
    const struct scontrol *sc;
    struct gs_buf *out;
    uint64_t now_ms;
    const struct slurm_filter *filter; /* the job asked for: "42+1" keeps one component's */
};

/* slurm_het_each's callback: one record, a heterogeneous job's one per component. */
static int put_record(const Gs__JobInfo *job, const struct slurm_het_part *part, void *vctx)
{
    const struct record_ctx *c = vctx;

    if (!slurm_filter_match_part(c->filter, part))
        return 0;
    return put_job(c->sc, c->out, job, part, c->now_ms);
}

/*
 * The job with its spec (ShowReply), else as listed; of a heterogeneous job the components
 * filter names. Returns 0 or < 0.
 */
static int show_one(const struct scontrol *sc, const char *path, const Gs__JobInfo *listed,
                    const struct slurm_filter *filter, uint64_t now_ms, struct gs_buf *out)
{
    Gs__ShowRequest req = GS__SHOW_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    Gs__JobInfo *job;
    int rc;

    req.job_id = listed->job_id;
    env.body_case = GS__ENVELOPE__BODY_SHOW_REQUEST;
    env.show_request = &req;
    if (cli_request_raw(path, &env, &reply) < 0)
        return -EIO;
    job = reply->body_case == GS__ENVELOPE__BODY_SHOW_REPLY && reply->show_reply->job != NULL
              ? reply->show_reply->job
              : NULL;
    rc = slurm_het_each(job != NULL && job->job_id == listed->job_id ? job : listed, put_record,
                        &(struct record_ctx){sc, out, now_ms, filter});
    gs_proto_envelope_free(reply);
    return rc;
}

static int show_jobs(const struct scontrol *sc, int argc, char **argv)
{
    struct slurm_job_ref ref;
    struct slurm_filter filter = {0};
    struct gs_buf out = GS_BUF_INIT;
    Gs__Envelope *reply = NULL;
    uint64_t now = gs_clock_wall_ms();
    size_t shown = 0;
    char path[256];
    int status, rc = 0;

    if (argc > 1)
        return slurm_error(CMD, "show job takes one job id, not '%s'", argv[1]);
    if (argc == 1) {
        if (slurm_job_ref_parse(argv[0], &ref) < 0)
            return slurm_error(CMD, "Invalid job id specified: %s", argv[0]);
        filter.refs = &ref;
        filter.nrefs = 1;
    }
    status = slurm_fetch_jobs(sc->socket_opt, filter.refs, filter.nrefs, true, &reply);
    if (status != 0)
        return status;
    status = 1;
    if (cli_socket_path(sc->socket_opt, path, sizeof(path)) < 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < reply->queue_reply->n_jobs; i++) {
        const Gs__JobInfo *job = reply->queue_reply->jobs[i];

        if (!slurm_filter_match(&filter, job))
            continue;
        rc = show_one(sc, path, job, &filter, now, &out);
        shown++;
    }
    if (rc < 0) {
        slurm_error(CMD, "cannot show the jobs");
        goto out;
    }
    if (shown == 0 && argc == 1) {
        slurm_error(CMD, "Invalid job id specified: %s", argv[0]);
        goto out;
    }
    status = show_records(&out, shown, "jobs");
out:
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}

static int put_partition(const struct scontrol *sc, struct gs_buf *out, const Gs__PartitionInfo *p,
                         const Gs__NodesReply *nodes)
{
    unsigned long long cpus = 0;
    char limit[48];

    for (size_t i = 0; i < p->n_nodes; i++) {
        const Gs__NodeInfo *n = slurm_find_node(nodes, p->nodes[i]);
        cpus += n != NULL ? n->cores_total : 0;
    }
    gs_buf_printf(out, "PartitionName=%s", p->name);
    next_line(sc, out);
    gs_buf_append_str(out, "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL");
    next_line(sc, out);
    gs_buf_printf(out, "AllocNodes=ALL Default=%s QoS=N/A", p->is_default ? "YES" : "NO");
    next_line(sc, out);
    gs_buf_printf(out, "DefaultTime=NONE Hidden=NO MaxNodes=UNLIMITED MaxTime=%s MinNodes=0",
                  slurm_fmt_limit(p->max_time_s, true, "UNLIMITED", limit, sizeof(limit)));
    next_line(sc, out);
    gs_buf_append_str(out, "Nodes=");
    if (p->n_nodes > 0)
        gs_hostlist_compress((const char *const *)p->nodes, p->n_nodes, out);
    else
        gs_buf_append_str(out, "(null)");
    next_line(sc, out);
    gs_buf_printf(out, "State=%s TotalCPUs=%llu TotalNodes=%zu", p->up ? "UP" : "DOWN", cpus,
                  p->n_nodes);
    return end_record(sc, out);
}

static int show_partitions(const struct scontrol *sc, int argc, char **argv)
{
    Gs__Envelope *parts = NULL, *nodes = NULL;
    struct gs_buf out = GS_BUF_INIT;
    size_t shown = 0;
    int status, rc = 0;

    if (argc > 1)
        return slurm_error(CMD, "show partition takes one name, not '%s'", argv[1]);
    status = slurm_fetch_cluster(sc->socket_opt, &parts, &nodes);
    if (status != 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < parts->partitions_reply->n_partitions; i++) {
        const Gs__PartitionInfo *p = parts->partitions_reply->partitions[i];

        if (argc == 1 && strcmp(p->name, argv[0]) != 0)
            continue;
        rc = put_partition(sc, &out, p, nodes->nodes_reply);
        shown++;
    }
    if (rc < 0)
        status = slurm_error(CMD, "out of memory");
    else if (shown == 0 && argc == 1)
        status = slurm_error(CMD, "Partition %s not found", argv[0]);
    else
        status = show_records(&out, shown, "partitions");
out:
    gs_buf_release(&out);
    gs_proto_envelope_free(parts);
    gs_proto_envelope_free(nodes);
    return status;
}

static int put_node(const struct scontrol *sc, struct gs_buf *out, const Gs__NodeInfo *n,
                    const Gs__PartitionsReply *parts)
{
    char state[64];
    uint64_t alloc_mem =
        n->memory_total_mib > n->memory_free_mib ? n->memory_total_mib - n->memory_free_mib : 0;
    uint32_t alloc_cpus = n->cores_total - n->cores_free;
    const Gs__NodeTopology *topo = n->topology;
    size_t inparts = 0;

    gs_buf_printf(out, "NodeName=%s", n->name);
    next_line(sc, out);
    gs_buf_printf(out, "CPUAlloc=%u CPUEfctv=%u CPUTot=%u", alloc_cpus, n->cores_total,
                  n->cores_total);
    next_line(sc, out);
    gs_buf_append_str(out, "AvailableFeatures=");
    for (size_t i = 0; i < n->n_features; i++)
        gs_buf_printf(out, "%s%s", i > 0 ? "," : "", n->features[i]);
    if (n->n_features == 0)
        gs_buf_append_str(out, "(null)");
    next_line(sc, out);
    if (n->gpus_total > 0)
        gs_buf_printf(out, "Gres=gpu:%u", n->gpus_total);
    else
        gs_buf_append_str(out, "Gres=(null)");
    if (topo != NULL && topo->address != NULL && topo->address[0] != '\0') {
        next_line(sc, out);
        gs_buf_printf(out, "NodeAddr=%s NodeHostName=%s", topo->address,
                      slurm_or_null(topo->hostname));
    }
    next_line(sc, out);
    gs_buf_printf(out, "RealMemory=%llu AllocMem=%llu FreeMem=%llu",
                  (unsigned long long)n->memory_total_mib, (unsigned long long)alloc_mem,
                  (unsigned long long)n->memory_free_mib);
    next_line(sc, out);
    gs_buf_printf(out, "State=%s TmpDisk=%llu", slurm_node_state_scontrol(n, state, sizeof(state)),
                  (unsigned long long)n->tmp_disk_mib);
    next_line(sc, out);
    gs_buf_append_str(out, "Partitions=");
    for (size_t i = 0; i < parts->n_partitions; i++) {
        const Gs__PartitionInfo *p = parts->partitions[i];

        for (size_t k = 0; k < p->n_nodes; k++) {
            if (strcmp(p->nodes[k], n->name) == 0)
                gs_buf_printf(out, "%s%s", inparts++ > 0 ? "," : "", p->name);
        }
    }
    if (inparts == 0)
        gs_buf_append_str(out, "(null)");
    next_line(sc, out);
    gs_buf_printf(out, "CfgTRES=cpu=%u,mem=%lluM,billing=%u", n->cores_total,
                  (unsigned long long)n->memory_total_mib, n->cores_total);
    if (n->gpus_total > 0)
        gs_buf_printf(out, ",gres/gpu=%u", n->gpus_total);
    next_line(sc, out);
    gs_buf_append_str(out, "AllocTRES=");
    if (alloc_cpus > 0)
        gs_buf_printf(out, "cpu=%u", alloc_cpus);
    if (alloc_mem > 0)
        gs_buf_printf(out, "%smem=%lluM", alloc_cpus > 0 ? "," : "", (unsigned long long)alloc_mem);
    if (n->gpus_total > n->gpus_free)
        gs_buf_printf(out, "%sgres/gpu=%u", alloc_cpus > 0 || alloc_mem > 0 ? "," : "",
                      n->gpus_total - n->gpus_free);
    if (n->reason != NULL && n->reason[0] != '\0') {
        next_line(sc, out);
        gs_buf_printf(out, "Reason=%s", n->reason);
    }
    return end_record(sc, out);
}

static int show_nodes(const struct scontrol *sc, int argc, char **argv)
{
    Gs__Envelope *parts = NULL, *nodes = NULL;
    struct gs_buf out = GS_BUF_INIT;
    struct gs_error err;
    char **names = NULL;
    size_t nnames = 0, shown = 0;
    int status, rc = 0;

    if (argc > 1)
        return slurm_error(CMD, "show node takes one node name or hostlist, not '%s'", argv[1]);
    gs_error_clear(&err);
    if (argc == 1 && gs_hostlist_expand(argv[0], &names, &nnames, &err) < 0)
        return slurm_error(CMD, "Invalid node name specified: %s", argv[0]);
    status = slurm_fetch_cluster(sc->socket_opt, &parts, &nodes);
    if (status != 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < nodes->nodes_reply->n_nodes; i++) {
        const Gs__NodeInfo *n = nodes->nodes_reply->nodes[i];
        bool wanted = names == NULL;

        for (size_t k = 0; !wanted && k < nnames; k++)
            wanted = strcmp(names[k], n->name) == 0;
        if (!wanted)
            continue;
        rc = put_node(sc, &out, n, parts->partitions_reply);
        shown++;
    }
    if (rc < 0)
        status = slurm_error(CMD, "out of memory");
    else if (shown == 0 && argc == 1)
        status = slurm_error(CMD, "Node %s not found", argv[0]);
    else
        status = show_records(&out, shown, "nodes");
out:
    gs_hostlist_free(names);
    gs_buf_release(&out);
    gs_proto_envelope_free(parts);
    gs_proto_envelope_free(nodes);
    return status;
}

/* --- reservations -------------------------------------------------------------------------- */

static int show_reservations(const struct scontrol *sc, int argc, char **argv)
{
    Gs__ReservationRequest req = GS__RESERVATION_REQUEST__INIT;
    Gs__Reservation which = GS__RESERVATION__INIT;
    Gs__Envelope *reply = NULL;
    struct gs_buf out = GS_BUF_INIT;
    const Gs__ReservationReply *rr;
    size_t shown = 0;
    int status, rc = 0;

    if (argc > 1)
        return slurm_error(CMD, "show reservation takes one name, not '%s'", argv[1]);
    if (argc == 1)
        which.name = argv[0];
    req.action = GS__RESERVATION_ACTION__RESERVATION_ACTION_SHOW;
    req.reservation = &which;
    status = scontrol_resv_call(CMD, sc->socket_opt, &req, argc == 1 ? argv[0] : NULL, &reply);
    if (status != 0)
        goto out;
    rr = reply->reservation_reply;
    for (size_t i = 0; rc == 0 && i < rr->n_reservations; i++) {
        /* gschedd answers a name with that one; checked so that a wider answer is no lie. */
        if (argc == 1 && strcmp(rr->reservations[i]->name, argv[0]) != 0)
            continue;
        rc = scontrol_resv_record(&out, rr->reservations[i], sc->oneliner);
        shown++;
    }
    if (rc < 0)
        status = slurm_error(CMD, "out of memory");
    else if (shown == 0 && argc == 1)
        status = slurm_error(CMD, "Reservation %s not found", argv[0]);
    else
        status = show_records(&out, shown, "reservations");
out:
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}

/* --- licenses ------------------------------------------------------------------------------ */

/* "Configuration data as of 2026-12-07T01:20:00", then "Key = Value" lines, keys padded
 * to Slurm's 23. */
static int show_config(const struct scontrol *sc, int argc)
{
    Gs__ConfigRequest req = GS__CONFIG_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_buf out = GS_BUF_INIT;
    char at[48];
    int status;

    if (argc > 0)
        return slurm_error(CMD, "show config takes no arguments");
    env.body_case = GS__ENVELOPE__BODY_CONFIG_REQUEST;
    env.config_request = &req;
    status =
        slurm_call_as(CMD, sc->socket_opt, &env, GS__ENVELOPE__BODY_CONFIG_REPLY, NULL, &reply);
    if (status != 0)
        return status;
    gs_buf_printf(&out, "Configuration data as of %s\n",
                  slurm_fmt_date(reply->config_reply->now_ms, "Unknown", at, sizeof(at)));
    for (size_t i = 0; i < reply->config_reply->n_entries; i++) {
        const Gs__ConfigEntry *e = reply->config_reply->entries[i];

        gs_buf_printf(&out, "%-23s = %s\n", e->key, e->value);
    }
    status = slurm_print(CMD, 0, &out);
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}

static int show_licenses(const struct scontrol *sc, int argc, char **argv)
{
    Gs__LicensesRequest req = GS__LICENSES_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    struct gs_buf out = GS_BUF_INIT;
    char path[256];
    size_t shown = 0;
    int status = 1, rc = 0;

    if (argc > 1)
        return slurm_error(CMD, "show licenses takes one name, not '%s'", argv[1]);
    env.body_case = GS__ENVELOPE__BODY_LICENSES_REQUEST;
    env.licenses_request = &req;
    if (cli_socket_path(sc->socket_opt, path, sizeof(path)) < 0 ||
        cli_call(path, &env, GS__ENVELOPE__BODY_LICENSES_REPLY, &reply) < 0)
        goto out;
    for (size_t i = 0; rc == 0 && i < reply->licenses_reply->n_licenses; i++) {
        const Gs__LicenseInfo *l = reply->licenses_reply->licenses[i];

        if (argc == 1 && strcmp(l->name, argv[0]) != 0)
            continue;
        gs_buf_printf(&out, "LicenseName=%s", l->name);
        next_line(sc, &out);
        /* Reserved: what active reservations keep and their jobs do not use; Free: what a
         * job outside them could take now. */
        gs_buf_printf(&out, "Total=%u Used=%u Free=%u Reserved=%u Remote=no", l->total, l->used,
                      l->used + l->reserved < l->total ? l->total - l->used - l->reserved : 0,
                      l->reserved);
        rc = end_record(sc, &out);
        shown++;
    }
    if (rc < 0)
        status = slurm_error(CMD, "out of memory");
    else if (shown == 0 && argc == 1)
        status = slurm_error(CMD, "License %s not found", argv[0]);
    else
        status = show_records(&out, shown, "licenses");
out:
    gs_buf_release(&out);
    gs_proto_envelope_free(reply);
    return status;
}

static bool is_resv_word(const char *word)
{
    return strcasecmp(word, "reservation") == 0 || strcasecmp(word, "reservations") == 0 ||
           strcasecmp(word, "res") == 0;
}

/* create reservation KEY=VALUE... (also "create res", or the words right after "create"). */
static int create_reservation(const struct scontrol *sc, int argc, char **argv)
{
    struct scontrol_resv r;
    Gs__Envelope *reply = NULL;
    const Gs__ReservationReply *rr;
    char why[512];
    int status;

    if (argc > 0 && is_resv_word(argv[0])) {
        argc--;
        argv++;
    } else if (argc == 0 || strchr(argv[0], '=') == NULL) {
        return slurm_error(CMD, "invalid entity: %s for keyword: create (reservation)",
                           argc > 0 ? argv[0] : "(none)");
    }
    if (scontrol_resv_parse(&r, GS__RESERVATION_ACTION__RESERVATION_ACTION_CREATE, argc, argv,
                            gs_clock_wall_ms(), why, sizeof(why)) < 0)
        return slurm_error(CMD, "create reservation: %s", why);
    status = scontrol_resv_call(CMD, sc->socket_opt, &r.req, NULL, &reply);
    if (status == 0) {
        /* The reply's name: gschedd makes one up when none was given. */
        rr = reply->reservation_reply;
        printf("Reservation created: %s\n",
               rr->n_reservations > 0 ? rr->reservations[0]->name : slurm_or_null(r.resv.name));
    }
    gs_proto_envelope_free(reply);
    scontrol_resv_release(&r);
    return status;
}

/* delete ReservationName=NAME | delete reservation NAME: silent on success, as Slurm. */
static int delete_reservation(const struct scontrol *sc, int argc, char **argv)
{
    Gs__ReservationRequest req = GS__RESERVATION_REQUEST__INIT;
    Gs__Reservation which = GS__RESERVATION__INIT;
    Gs__Envelope *reply = NULL;
    const char *name = NULL, *eq = argc == 1 ? strchr(argv[0], '=') : NULL;
    int status;

    if (argc == 2 && is_resv_word(argv[0]))
        name = argv[1];
    else if (eq != NULL &&
             ((eq - argv[0] == 15 && strncasecmp(argv[0], "ReservationName", 15) == 0) ||
              (eq - argv[0] == 11 && strncasecmp(argv[0], "Reservation", 11) == 0)))
        name = eq + 1;
    if (name == NULL)
        return slurm_error(CMD, "delete takes ReservationName=NAME or reservation NAME");
    if (name[0] == '\0')
        return slurm_error(CMD, "delete: the reservation's name is empty");
    which.name = (char *)name;
    req.action = GS__RESERVATION_ACTION__RESERVATION_ACTION_DELETE;
    req.reservation = &which;
    status = scontrol_resv_call(CMD, sc->socket_opt, &req, name, &reply);
    gs_proto_envelope_free(reply);
    return status;
}

/* --- hold, release, requeue, suspend, resume ---------------------------------------------- */

enum action { ACT_HOLD, ACT_RELEASE, ACT_REQUEUE, ACT_REQUEUEHOLD, ACT_SUSPEND, ACT_RESUME };

/*
 * The job ids IDS name: plain ids as typed (gschedd expands an array's), array elements
 * ("123_4", "123_[1-3]") looked up in the queue. Caller frees *ret. 0 or exit status.
 */
static int resolve_ids(const struct scontrol *sc, int argc, char **argv, uint64_t **ret,
                       size_t *ret_n)
{
    struct slurm_job_ref refs[SLURM_MAX_REFS];
    struct slurm_filter filter = {.refs = refs};
    char bad[64];
    int status;

    /* Slurm takes "1,2,3" as well as "1 2 3". */
    for (int i = 0; i < argc; i++) {
        if (slurm_job_list_parse(argv[i], refs, SLURM_MAX_REFS, &filter.nrefs, bad, sizeof(bad)) <
            0)
            return slurm_error(CMD, "Invalid job id specified: %s", bad);
    }
    if (filter.nrefs == 0)
        return slurm_error(CMD, "which jobs? (a job id is required)");
    status = slurm_resolve_ids(CMD, sc->socket_opt, &filter, ret, ret_n, NULL);
    if (status == 0 && *ret_n == 0) {
        /* Only element lookups come back empty: the typed ids were none of the queue's. */
        free(*ret);
        *ret = NULL;
        return slurm_error(CMD, "Invalid job id specified");
    }
    return status;
}

/* Whether gschedd's message names job id already ("job 42 is running: ..."). */
static bool names_job(const char *msg, uint64_t id)
{
    char prefix[32];
    int len = snprintf(prefix, sizeof(prefix), "job %llu", (unsigned long long)id);

    return strncmp(msg, prefix, (size_t)len) == 0 && (msg[len] == ' ' || msg[len] == ':');
}

static int job_action(const struct scontrol *sc, enum action act, int argc, char **argv)
{
    Gs__JobSelector sel = GS__JOB_SELECTOR__INIT;
    Gs__HoldRequest hold = GS__HOLD_REQUEST__INIT;
    Gs__ReleaseRequest release = GS__RELEASE_REQUEST__INIT;
    Gs__RequeueRequest requeue = GS__REQUEUE_REQUEST__INIT;
    Gs__SuspendRequest suspend = GS__SUSPEND_REQUEST__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT, *reply = NULL;
    Gs__Envelope__BodyCase want;
    const Gs__JobActionReply *r;
    uint64_t *ids = NULL;
    size_t n = 0;
    int status = resolve_ids(sc, argc, argv, &ids, &n);

    if (status != 0)
        return status;
    sel.job_ids = ids;
    sel.n_job_ids = n;
    switch (act) {
    case ACT_HOLD:
        hold.selector = &sel;
        env.body_case = GS__ENVELOPE__BODY_HOLD_REQUEST;
        env.hold_request = &hold;
        want = GS__ENVELOPE__BODY_HOLD_REPLY;
        break;
    case ACT_RELEASE:
        release.selector = &sel;
        env.body_case = GS__ENVELOPE__BODY_RELEASE_REQUEST;
        env.release_request = &release;
        want = GS__ENVELOPE__BODY_RELEASE_REPLY;
        break;
    case ACT_SUSPEND:
    case ACT_RESUME:
        suspend.selector = &sel;
        suspend.resume = act == ACT_RESUME;
        env.body_case = GS__ENVELOPE__BODY_SUSPEND_REQUEST;
        env.suspend_request = &suspend;
        want = GS__ENVELOPE__BODY_SUSPEND_REPLY;
        break;
    default:
        requeue.selector = &sel;
        requeue.hold = act == ACT_REQUEUEHOLD;
        env.body_case = GS__ENVELOPE__BODY_REQUEUE_REQUEST;
        env.requeue_request = &requeue;
        want = GS__ENVELOPE__BODY_REQUEUE_REPLY;
    }
    status = slurm_call(sc->socket_opt, &env, want, &reply);
    if (status != 0)
        goto out;
    /* The JobActionReply is the same member storage whichever reply case it came as. */
    r = reply->hold_reply;
    status = 0;
    for (size_t i = 0; i < r->n_results; i++) {
        const Gs__JobActionResult *res = r->results[i];

        if (res->code == 0)
            continue;
        if (res->code == -ENOENT)
            slurm_error(CMD, "Invalid job id specified for job %llu",
                        (unsigned long long)res->job_id);
        else if (names_job(slurm_result_message(res), res->job_id))
            slurm_error(CMD, "%s", slurm_result_message(res));
        else
            slurm_error(CMD, "job %llu: %s", (unsigned long long)res->job_id,
                        slurm_result_message(res));
        status = 1;
    }
out:
    gs_proto_envelope_free(reply);
    free(ids);
    return status;
}

/* --- the command --------------------------------------------------------------------------- */

static bool is(const char *word, const char *a, const char *b)
{
    return strcasecmp(word, a) == 0 || (b != NULL && strcasecmp(word, b) == 0);
}

static void usage(FILE *f)
{
    fputs("Usage: scontrol [-o] [--socket PATH] COMMAND\n"
          "  show hostnames [LIST] | show job [ID] | show step [ID[.STEP]]\n"
          "  show partition [NAME] | show node [NAME]\n"
          "  hold IDS | release IDS | requeue IDS | requeuehold IDS\n"
          "  suspend IDS | resume IDS (root)\n"
          "  update NodeName=LIST State=DRAIN Reason=TEXT | update NodeName=LIST State=RESUME\n"
          "  update JobId=ID [Priority=N] [Nice=N] [TimeLimit=TIME] [Partition=NAME] [QOS=NAME]\n"
          "                  [Dependency=LIST] [Licenses=LIST]\n"
          "  write batch_script ID [FILE|-]\n"
          "  show reservation [NAME] | show licenses [NAME] | show config\n"
          "  create reservation [ReservationName=NAME] StartTime=TIME EndTime=TIME|Duration=TIME\n"
          "                     Nodes=LIST Users=a,b|Accounts=x,y [TRES=gres/gpu=N]\n"
          "                     [Flags=DAILY|...,MAINT,IGNORE_JOBS,OVERLAP,FLEX,MAGNETIC,\n"
          "                      REPLACE_DOWN,REPLACE,PURGE_COMP[=T]]\n"
          "  update ReservationName=NAME [StartTime=TIME] [EndTime=TIME|Duration=TIME] "
          "[Nodes=LIST]\n"
          "                     [Users=a,b] [Accounts=x,y] [TRES=gres/gpu=N] [Flags=F]\n"
          "                     [Users+=a] [Users-=b] [Accounts+=x] [Accounts-=y] [Flags-=F]\n"
          "  delete ReservationName=NAME | delete reservation NAME\n",
          f);
}

int cli_cmd_scontrol(int argc, char **argv)
{
    struct scontrol sc = {0};
    int i = 1;

    /* Options come before the command, as Slurm's scontrol reads them. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--oneliner") == 0) {
            sc.oneliner = true;
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            sc.socket_opt = argv[++i];
        } else if (strncmp(argv[i], "--socket=", 9) == 0) {
            sc.socket_opt = argv[i] + 9;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            return slurm_opt_error(CMD, '?', argv[i][1] != '-' ? argv[i][1] : 0, argv[i]);
        }
    }
    argc -= i;
    argv += i;
    if (argc == 0) {
        usage(stderr);
        return 1;
    }
    if (is(argv[0], "show", NULL)) {
        if (argc < 2)
            return slurm_error(CMD, "show what? (hostnames, job, step, partition, node, "
                                    "reservation, licenses, config)");
        if (is(argv[1], "hostnames", "hostname"))
            return show_hostnames(argc - 2, argv + 2);
        if (is(argv[1], "job", "jobs"))
            return show_jobs(&sc, argc - 2, argv + 2);
        if (is(argv[1], "step", "steps"))
            return scontrol_show_steps(sc.socket_opt, sc.oneliner, argc - 2, argv + 2);
        if (is(argv[1], "partition", "partitions"))
            return show_partitions(&sc, argc - 2, argv + 2);
        if (is(argv[1], "node", "nodes"))
            return show_nodes(&sc, argc - 2, argv + 2);
        if (is_resv_word(argv[1]))
            return show_reservations(&sc, argc - 2, argv + 2);
        if (is(argv[1], "licenses", "license") || is(argv[1], "lic", NULL))
            return show_licenses(&sc, argc - 2, argv + 2);
        if (is(argv[1], "config", "configuration"))
            return show_config(&sc, argc - 2);
        return slurm_error(CMD, "invalid entity: %s for keyword: show", argv[1]);
    }
    if (is(argv[0], "hold", "uhold"))
        return job_action(&sc, ACT_HOLD, argc - 1, argv + 1);
    if (is(argv[0], "release", NULL))
        return job_action(&sc, ACT_RELEASE, argc - 1, argv + 1);
    if (is(argv[0], "requeue", NULL))
        return job_action(&sc, ACT_REQUEUE, argc - 1, argv + 1);
    if (is(argv[0], "requeuehold", NULL))
        return job_action(&sc, ACT_REQUEUEHOLD, argc - 1, argv + 1);
    if (is(argv[0], "suspend", NULL))
        return job_action(&sc, ACT_SUSPEND, argc - 1, argv + 1);
    if (is(argv[0], "resume", NULL))
        return job_action(&sc, ACT_RESUME, argc - 1, argv + 1);
    if (is(argv[0], "update", NULL))
        return scontrol_update(sc.socket_opt, argc - 1, argv + 1);
    if (is(argv[0], "create", NULL))
        return create_reservation(&sc, argc - 1, argv + 1);
    if (is(argv[0], "delete", NULL))
        return delete_reservation(&sc, argc - 1, argv + 1);
    if (is(argv[0], "write", NULL))
        return scontrol_write(sc.socket_opt, argc - 1, argv + 1);
    return slurm_error(CMD, "invalid keyword: %s", argv[0]);
}
