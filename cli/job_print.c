/*
 * job_print.c: the text pieces every job command prints (see job_print.h). Names and codes
 * follow Slurm's squeue/scontrol, which most users of a GPU cluster already read fluently;
 * the state names are the proto's, so text and --json agree. The Slurm views (slurm_fmt.c)
 * take their state names and codes, long elapsed times, dates and ranges from here too.
 */
#include "cli/job_print.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const struct {
    Gs__JobState state;
    const char *name;
    const char *code;
} states[] = {
    {GS__JOB_STATE__JOB_STATE_PENDING, "PENDING", "PD"},
    {GS__JOB_STATE__JOB_STATE_RUNNING, "RUNNING", "R"},
    {GS__JOB_STATE__JOB_STATE_COMPLETED, "COMPLETED", "CD"},
    {GS__JOB_STATE__JOB_STATE_FAILED, "FAILED", "F"},
    {GS__JOB_STATE__JOB_STATE_CANCELLED, "CANCELLED", "CA"},
    {GS__JOB_STATE__JOB_STATE_TIMEOUT, "TIMEOUT", "TO"},
    {GS__JOB_STATE__JOB_STATE_NODE_FAIL, "NODE_FAIL", "NF"},
    {GS__JOB_STATE__JOB_STATE_REQUEUED, "REQUEUED", "RQ"},
    {GS__JOB_STATE__JOB_STATE_OUT_OF_MEMORY, "OUT_OF_MEMORY", "OOM"},
};

#define NSTATES (sizeof(states) / sizeof(states[0]))

const char *cli_job_state_name(Gs__JobState state)
{
    for (size_t i = 0; i < NSTATES; i++) {
        if (states[i].state == state)
            return states[i].name;
    }
    return state == GS__JOB_STATE__JOB_STATE_UNSPECIFIED ? "UNSPECIFIED" : "UNKNOWN";
}

const char *cli_job_state_code(Gs__JobState state)
{
    for (size_t i = 0; i < NSTATES; i++) {
        if (states[i].state == state)
            return states[i].code;
    }
    return "?";
}

int cli_job_state_parse(const char *text, Gs__JobState *ret_state)
{
    for (size_t i = 0; i < NSTATES; i++) {
        if (strcasecmp(text, states[i].name) == 0 || strcasecmp(text, states[i].code) == 0) {
            *ret_state = states[i].state;
            return 0;
        }
    }
    return -EINVAL;
}

bool cli_job_suspended(const Gs__JobInfo *job)
{
    /* Only a running job can be: a job that ends while suspended is no longer one. */
    return job->suspended && job->state == GS__JOB_STATE__JOB_STATE_RUNNING;
}

const char *cli_job_shown_name(const Gs__JobInfo *job)
{
    return cli_job_suspended(job) ? "SUSPENDED" : cli_job_state_name(job->state);
}

const char *cli_job_shown_code(const Gs__JobInfo *job)
{
    return cli_job_suspended(job) ? "S" : cli_job_state_code(job->state);
}

int cli_job_shown_parse(const char *text, Gs__JobState *ret_state, bool *ret_suspended)
{
    Gs__JobState state;

    if (strcasecmp(text, "SUSPENDED") == 0 || strcasecmp(text, "S") == 0) {
        *ret_state = GS__JOB_STATE__JOB_STATE_RUNNING;
        *ret_suspended = true;
        return 0;
    }
    if (cli_job_state_parse(text, &state) < 0)
        return -EINVAL;
    *ret_state = state;
    *ret_suspended = false;
    return 0;
}

bool cli_job_state_final(Gs__JobState state)
{
    /* REQUEUED is not final: the job is about to be pending again. */
    return state == GS__JOB_STATE__JOB_STATE_COMPLETED ||
           state == GS__JOB_STATE__JOB_STATE_FAILED ||
           state == GS__JOB_STATE__JOB_STATE_CANCELLED ||
           state == GS__JOB_STATE__JOB_STATE_TIMEOUT ||
           state == GS__JOB_STATE__JOB_STATE_NODE_FAIL ||
           state == GS__JOB_STATE__JOB_STATE_OUT_OF_MEMORY;
}

const char *cli_end_reason_name(Gs__EndReason reason)
{
    switch (reason) {
    case GS__END_REASON__END_REASON_NONE:
        return "NONE";
    case GS__END_REASON__END_REASON_CANCELLED:
        return "CANCELLED";
    case GS__END_REASON__END_REASON_TIMEOUT:
        return "TIMEOUT";
    case GS__END_REASON__END_REASON_REQUEUED:
        return "REQUEUED";
    case GS__END_REASON__END_REASON_NODE_SHUTDOWN:
        return "NODE_SHUTDOWN";
    case GS__END_REASON__END_REASON_LAUNCH_FAILED:
        return "LAUNCH_FAILED";
    case GS__END_REASON__END_REASON_LOST:
        return "LOST";
    case GS__END_REASON__END_REASON_OOM:
        return "OUT_OF_MEMORY";
    default:
        return "UNKNOWN";
    }
}

/*
 * The run-time formula both public functions share: from start_ms to when the job stopped
 * running (suspend_ms, the current suspension's start, 0 when not suspended; else end_ms;
 * else now_ms if it runs), less the suspended_ms of its earlier suspensions.
 */
static uint64_t run_s(Gs__JobState state, uint64_t start_ms, uint64_t end_ms, uint64_t suspend_ms,
                      uint64_t suspended_ms, uint64_t now_ms)
{
    uint64_t to_ms;

    /* A pending job shows 0 even when an earlier attempt ran, as squeue does. */
    if (start_ms == 0 || state == GS__JOB_STATE__JOB_STATE_PENDING)
        return 0;
    if (suspend_ms != 0)
        to_ms = suspend_ms;
    else if (end_ms != 0)
        to_ms = end_ms;
    else if (state == GS__JOB_STATE__JOB_STATE_RUNNING)
        to_ms = now_ms;
    else
        return 0;
    /* A clock behind start, or suspensions longer than the span (clocks stepped): 0. */
    if (to_ms <= start_ms || to_ms - start_ms <= suspended_ms)
        return 0;
    return (to_ms - start_ms - suspended_ms) / 1000;
}

uint64_t cli_job_suspended_s(const Gs__JobInfo *job, uint64_t now_ms)
{
    uint64_t ms = job->suspended_ms;

    if (cli_job_suspended(job) && now_ms > job->suspend_time_ms)
        ms += now_ms - job->suspend_time_ms;
    return ms / 1000;
}

uint64_t cli_job_run_s(const Gs__JobInfo *job, Gs__JobState as, uint64_t now_ms)
{
    return run_s(as, job->start_time_ms, job->end_time_ms,
                 job->suspended ? job->suspend_time_ms : 0, job->suspended_ms, now_ms);
}

uint64_t cli_change_run_s(const Gs__JobStateChange *c, uint64_t now_ms)
{
    return run_s(c->state, c->start_time_ms, c->end_time_ms, c->suspended ? c->suspend_time_ms : 0,
                 c->suspended_ms, now_ms);
}

const char *cli_change_shown_name(const Gs__JobStateChange *c)
{
    return c->suspended && c->state == GS__JOB_STATE__JOB_STATE_RUNNING
               ? "SUSPENDED"
               : cli_job_state_name(c->state);
}

char *cli_format_elapsed(uint64_t seconds, char *out, size_t size)
{
    unsigned long long d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60,
                       s = seconds % 60;

    if (d > 0)
        snprintf(out, size, "%llu-%02llu:%02llu:%02llu", d, h, m, s);
    else
        snprintf(out, size, "%02llu:%02llu:%02llu", h, m, s);
    return out;
}

char *cli_format_time(uint64_t ms, char *out, size_t size)
{
    return cli_format_time_or(ms, "Unknown", out, size);
}

char *cli_format_time_or(uint64_t ms, const char *unknown, char *out, size_t size)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms == 0 || localtime_r(&t, &tm) == NULL ||
        strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(out, size, "%s", unknown);
    return out;
}

int cli_format_indices(struct gs_buf *out, const uint32_t *v, size_t n)
{
    /* Two in a row read better as "0,1" than as "0-1". */
    return cli_format_ranges(out, v, n, 3);
}

int cli_format_ranges(struct gs_buf *out, const uint32_t *v, size_t n, size_t min_run)
{
    for (size_t i = 0; i < n;) {
        size_t last = i;

        while (last + 1 < n && v[last + 1] == v[last] + 1)
            last++;
        if (last + 1 < i + min_run)
            last = i;
        if (last > i)
            gs_buf_printf(out, "%s%u-%u", i > 0 ? "," : "", v[i], v[last]);
        else
            gs_buf_printf(out, "%s%u", i > 0 ? "," : "", v[i]);
        i = last + 1;
    }
    return gs_buf_error(out);
}

int cli_job_nodelist(struct gs_buf *out, Gs__NodeAllocation *const *alloc, size_t n, bool with_gpus)
{
    for (size_t i = 0; i < n; i++) {
        const Gs__NodeAllocation *a = alloc[i];

        gs_buf_printf(out, "%s%s", i > 0 ? "," : "", a->node_name);
        if (with_gpus && a->n_gpus > 0) {
            gs_buf_putc(out, '[');
            cli_format_indices(out, a->gpus, a->n_gpus);
            gs_buf_putc(out, ']');
        }
    }
    return gs_buf_error(out);
}

/* Characters a shell takes literally in a word. */
int cli_job_exit_status(Gs__JobState state, bool signaled, int32_t exit_code, uint32_t term_signal)
{
    if (state == GS__JOB_STATE__JOB_STATE_COMPLETED)
        return 0;
    /* exit() keeps only the low 8 bits: 256 would read as success. */
    if (!signaled && exit_code >= 1 && exit_code <= 255)
        return exit_code;
    if (signaled && term_signal >= 1 && term_signal <= 127)
        return 128 + (int)term_signal;
    return 1;
}

int cli_job_status_line(struct gs_buf *out, const Gs__JobStateChange *c, const char *nodelist,
                        uint64_t now_ms)
{
    char elapsed[32];
    int rc;

    cli_format_elapsed(cli_change_run_s(c, now_ms), elapsed, sizeof(elapsed));
    rc = gs_buf_printf(out, "job %llu %s %s", (unsigned long long)c->job_id,
                       cli_change_shown_name(c), elapsed);
    if (rc == 0 && nodelist != NULL && nodelist[0] != '\0')
        rc = gs_buf_printf(out, " %s", nodelist);
    else if (rc == 0 && c->reason != NULL && c->reason[0] != '\0')
        rc = gs_buf_printf(out, " (%s)", c->reason);
    return rc;
}

int cli_job_end_line(struct gs_buf *out, const Gs__JobStateChange *c, uint64_t now_ms)
{
    char elapsed[32];
    int rc;

    cli_format_elapsed(cli_change_run_s(c, now_ms), elapsed, sizeof(elapsed));
    rc = gs_buf_printf(out, "job %llu %s", (unsigned long long)c->job_id,
                       cli_job_state_name(c->state));
    if (rc == 0 && c->signaled)
        rc = gs_buf_printf(out, " signal=%u", c->term_signal);
    else if (rc == 0)
        rc = gs_buf_printf(out, " exit=%d", c->exit_code);
    if (rc == 0)
        rc = gs_buf_printf(out, " elapsed=%s", elapsed);
    if (rc == 0 && c->state != GS__JOB_STATE__JOB_STATE_COMPLETED && c->reason != NULL &&
        c->reason[0] != '\0')
        rc = gs_buf_printf(out, " (%s)", c->reason);
    return rc;
}

/* --- heterogeneous jobs -------------------------------------------------------------------- */

/* Component 0 is the spec's own resources and run, said the way a HetComponent says it. */
static int shape_of_resources(const Gs__JobSpec *spec, struct gs_het_component *ret)
{
    const Gs__Resources *r = spec->resources;
    const Gs__RunSpec *run = spec->run;

    if (r == NULL)
        return -ENOENT;
    *ret = (struct gs_het_component){
        .nodes = r->nodes,
        .gpus_per_node = r->gpus_per_node,
        .cpus_per_gpu = r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_GPU ? r->cpus_per_gpu : 0,
        .cpus_per_task = r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_TASK ? r->cpus_per_task : 0,
        .mem_per_node_mib = r->mem_per_node_mib,
        .constraint = r->constraint,
        .tasks_per_node = run != NULL ? run->tasks_per_node : 0,
        .tasks_per_gpu = run != NULL && run->tasks_per_gpu,
        .ntasks = r->ntasks,
        .gpus_per_task = r->gpus_per_task,
    };
    return 0;
}

int cli_job_het_shape(const Gs__JobSpec *spec, uint32_t k, struct gs_het_component *ret)
{
    const Gs__HetComponent *c;

    if (spec == NULL || k > spec->n_het)
        return -ENOENT;
    if (k == 0)
        return shape_of_resources(spec, ret);
    c = spec->het[k - 1];
    *ret = (struct gs_het_component){
        .nodes = c->nodes,
        .gpus_per_node = c->gpus_per_node,
        .cpus_per_gpu = c->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_GPU ? c->cpus_per_gpu : 0,
        .cpus_per_task =
            c->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_TASK ? c->cpus_per_task : 0,
        .mem_per_node_mib = c->mem_per_node_mib,
        .constraint = c->constraint,
        .tasks_per_node = c->tasks_per_node,
        .tasks_per_gpu = c->tasks_per_gpu,
        .ntasks = c->ntasks,
        .gpus_per_task = c->gpus_per_task,
    };
    return 0;
}

/* The most tasks one of its nodes runs, as gs_jobspec_tasks_per_node counts them. */
static uint32_t het_tasks_per_node(const struct gs_het_component *c)
{
    if (c->tasks_per_gpu)
        return c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    return c->tasks_per_node > 0 ? c->tasks_per_node : 1;
}

uint32_t cli_het_tasks(const struct gs_het_component *c)
{
    return c->ntasks > 0 ? c->ntasks : c->nodes * het_tasks_per_node(c);
}

uint32_t cli_het_cpus(const struct gs_het_component *c)
{
    uint32_t per_node = c->cpus_per_gpu > 0
                            ? c->cpus_per_gpu * c->gpus_per_node
                            : (c->cpus_per_task > 0 ? c->cpus_per_task : 1) * het_tasks_per_node(c);

    return per_node * c->nodes;
}

int cli_het_line(struct gs_buf *out, const struct gs_het_component *c)
{
    gs_buf_printf(out, "Nodes=%u GpusPerNode=%u %s=%u MemPerNode=%lluM Tasks=%u", c->nodes,
                  c->gpus_per_node, c->cpus_per_gpu > 0 ? "CpusPerGpu" : "CpusPerTask",
                  c->cpus_per_gpu > 0    ? c->cpus_per_gpu
                  : c->cpus_per_task > 0 ? c->cpus_per_task
                                         : 1,
                  (unsigned long long)c->mem_per_node_mib, cli_het_tasks(c));
    if (c->constraint != NULL && c->constraint[0] != '\0')
        gs_buf_printf(out, " Constraint=%s", c->constraint);
    return gs_buf_error(out);
}

size_t cli_job_het_alloc(const Gs__JobInfo *job, uint32_t k, size_t *ret_first)
{
    size_t first = 0, n = k < job->n_het_nodes ? job->het_nodes[k] : 0;

    for (uint32_t i = 0; i < k && i < job->n_het_nodes; i++)
        first += job->het_nodes[i];
    /* An allocation shorter than the components say (an ended job's nodes as recorded). */
    if (first > job->n_allocation)
        first = job->n_allocation;
    if (n > job->n_allocation - first)
        n = job->n_allocation - first;
    *ret_first = first;
    return n;
}

int cli_job_het_lines(struct gs_buf *out, const Gs__JobInfo *job)
{
    for (uint32_t k = 0; k < job->n_het_nodes; k++) {
        struct gs_het_component c;
        size_t first, n = cli_job_het_alloc(job, k, &first);

        gs_buf_printf(out, "   HetComponent=%u ", k);
        if (cli_job_het_shape(job->spec, k, &c) == 0)
            cli_het_line(out, &c);
        else
            gs_buf_printf(out, "Nodes=%u Tasks=%u", job->het_nodes[k],
                          k < job->n_het_ntasks ? job->het_ntasks[k] : 0);
        gs_buf_append_str(out, " NodeList=");
        if (n > 0)
            cli_job_nodelist(out, job->allocation + first, n, true);
        else
            gs_buf_append_str(out, "None");
        gs_buf_putc(out, '\n');
    }
    return gs_buf_error(out);
}

void cli_job_licenses(struct gs_buf *out, const Gs__JobSpec *spec)
{
    for (size_t i = 0; spec != NULL && i < spec->n_licenses; i++)
        gs_buf_printf(out, "%s%s:%u", i > 0 ? "," : "", spec->licenses[i]->name,
                      spec->licenses[i]->count);
}
