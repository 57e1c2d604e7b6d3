/*
 * sbatch_spec.c: turning the options sbatch read (struct gs_sbatch, slurm/sbatch.c) into
 * the job gsched schedules (struct gs_jobspec); sbatch_spec.h documents the mapping, and
 * sbatch_show.c the --test-only view of its result. `gsched sbatch` (slurm/cmd_sbatch.c)
 * calls this between parsing and sending, so the rules live here, pure and unit-tested,
 * rather than in the CLI.
 *
 * The conversion goes in dependency order: nodes and tasks first (GPUs per task need tasks
 * per node), then GPUs (CPUs per GPU and memory per GPU need them), then CPUs and memory,
 * then the rest. Like the parser it collects every problem before giving up, so that a user
 * fixes a script in one go.
 */
#include "slurm/sbatch_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "common/buf.h"
#include "common/gpu_bind.h"
#include "common/jobspec_license.h"
#include "common/path.h"
#include "common/units.h"
#include "common/rlimit_names.h"
#include "slurm/sbatch_internal.h"

/* How the options are spelled in messages. */
static const char *const opt_names[GS_SBATCH_OPT_COUNT] = {
    [GS_SBATCH_OPT_JOB_NAME] = "--job-name",
    [GS_SBATCH_OPT_NODES] = "--nodes",
    [GS_SBATCH_OPT_NTASKS] = "--ntasks",
    [GS_SBATCH_OPT_NTASKS_PER_NODE] = "--ntasks-per-node",
    [GS_SBATCH_OPT_CPUS_PER_TASK] = "--cpus-per-task",
    [GS_SBATCH_OPT_CPUS_PER_GPU] = "--cpus-per-gpu",
    [GS_SBATCH_OPT_GRES] = "--gres",
    [GS_SBATCH_OPT_GPUS] = "--gpus",
    [GS_SBATCH_OPT_GPUS_PER_NODE] = "--gpus-per-node",
    [GS_SBATCH_OPT_GPUS_PER_TASK] = "--gpus-per-task",
    [GS_SBATCH_OPT_GPU_BIND] = "--gpu-bind",
    [GS_SBATCH_OPT_MEM] = "--mem",
    [GS_SBATCH_OPT_MEM_PER_CPU] = "--mem-per-cpu",
    [GS_SBATCH_OPT_MEM_PER_GPU] = "--mem-per-gpu",
    [GS_SBATCH_OPT_TIME] = "--time",
    [GS_SBATCH_OPT_TIME_MIN] = "--time-min",
    [GS_SBATCH_OPT_PARTITION] = "--partition",
    [GS_SBATCH_OPT_ACCOUNT] = "--account",
    [GS_SBATCH_OPT_QOS] = "--qos",
    [GS_SBATCH_OPT_CONSTRAINT] = "--constraint",
    [GS_SBATCH_OPT_NODELIST] = "--nodelist",
    [GS_SBATCH_OPT_EXCLUDE] = "--exclude",
    [GS_SBATCH_OPT_EXCLUSIVE] = "--exclusive",
    [GS_SBATCH_OPT_OUTPUT] = "--output",
    [GS_SBATCH_OPT_ERROR] = "--error",
    [GS_SBATCH_OPT_CHDIR] = "--chdir",
    [GS_SBATCH_OPT_ARRAY] = "--array",
    [GS_SBATCH_OPT_DEPENDENCY] = "--dependency",
    [GS_SBATCH_OPT_REQUEUE] = "--requeue",
    [GS_SBATCH_OPT_SIGNAL] = "--signal",
    [GS_SBATCH_OPT_EXPORT] = "--export",
    [GS_SBATCH_OPT_RESERVATION] = "--reservation",
    [GS_SBATCH_OPT_LICENSES] = "--licenses",
    [GS_SBATCH_OPT_GRES_FLAGS] = "--gres-flags",
    [GS_SBATCH_OPT_COMMENT] = "--comment",
    [GS_SBATCH_OPT_HOLD] = "--hold",
    [GS_SBATCH_OPT_TEST_ONLY] = "--test-only",
    [GS_SBATCH_OPT_WRAP] = "--wrap",
    [GS_SBATCH_OPT_PARSABLE] = "--parsable",
    [GS_SBATCH_OPT_NICE] = "--nice",
    [GS_SBATCH_OPT_BEGIN] = "--begin",
    [GS_SBATCH_OPT_DEADLINE] = "--deadline",
    [GS_SBATCH_OPT_OPEN_MODE] = "--open-mode",
    [GS_SBATCH_OPT_MAIL_TYPE] = "--mail-type",
    [GS_SBATCH_OPT_MAIL_USER] = "--mail-user",
    [GS_SBATCH_OPT_KILL_ON_INVALID_DEP] = "--kill-on-invalid-dep",
    [GS_SBATCH_OPT_NTASKS_PER_GPU] = "--ntasks-per-gpu",
    [GS_SBATCH_OPT_PRIORITY] = "--priority",
    [GS_SBATCH_OPT_WAIT] = "--wait",
    [GS_SBATCH_OPT_DISTRIBUTION] = "--distribution",
    [GS_SBATCH_OPT_TMP] = "--tmp",
    [GS_SBATCH_OPT_MINCPUS] = "--mincpus",
    [GS_SBATCH_OPT_OVERCOMMIT] = "--overcommit",
    [GS_SBATCH_OPT_MEM_BIND] = "--mem-bind",
    [GS_SBATCH_OPT_WCKEY] = "--wckey",
    [GS_SBATCH_OPT_INPUT] = "--input",
    [GS_SBATCH_OPT_QUIET] = "--quiet",
    [GS_SBATCH_OPT_VERBOSE] = "--verbose",
    [GS_SBATCH_OPT_WAIT_ALL_NODES] = "--wait-all-nodes",
    [GS_SBATCH_OPT_PROPAGATE] = "--propagate",
    [GS_SBATCH_OPT_USE_MIN_NODES] = "--use-min-nodes",
    [GS_SBATCH_OPT_PREFER] = "--prefer",
    [GS_SBATCH_OPT_CLUSTERS] = "--clusters",
    [GS_SBATCH_OPT_NTASKS_PER_CORE] = "--ntasks-per-core",
    [GS_SBATCH_OPT_NO_KILL] = "--no-kill",
    [GS_SBATCH_OPT_THREADS_PER_CORE] = "--threads-per-core",
    [GS_SBATCH_OPT_SWITCHES] = "--switches",
};

/*
 * The state of one conversion. sb and spec are the whole request and job, except while a
 * heterogeneous job's further component k is mapped (map_het): then sb is that
 * component's options and spec a scratch job holding its shape.
 */
struct conv {
    const struct gs_sbatch *job; /* the whole request, for names in messages */
    const struct gs_sbatch *sb;
    uint32_t comp; /* the component being mapped; 0 also for an ordinary job */
    const struct gs_sbatch_env *env;
    struct gs_jobspec *spec;
    struct gs_buf *errors, *warnings;
    struct gs_buf ignored; /* ", "-separated options accepted and not acted on */
    int nerrors;
    int rc; /* -ENOMEM once an allocation failed */
};

static bool is_set(const struct gs_sbatch *sb, enum gs_sbatch_opt id)
{
    return sb->set_by[id] != GS_SBATCH_UNSET;
}

/* Where an option was given: the script's name or "command line". */
static const char *where(const struct conv *c, enum gs_sbatch_opt id)
{
    if (c->sb->set_by[id] == GS_SBATCH_FROM_CLI)
        return "command line";
    return c->job->script_name != NULL ? c->job->script_name : "script";
}

__attribute__((format(printf, 4, 0))) static void
vsay(struct conv *c, struct gs_buf *to, const char *prefix, const char *fmt, va_list ap)
{
    int rc = 0;

    if (to == NULL)
        return;
    if (prefix != NULL)
        rc = gs_buf_printf(to, "%s: ", prefix);
    if (rc == 0)
        rc = gs_buf_vprintf(to, fmt, ap);
    if (rc == 0)
        rc = gs_buf_putc(to, '\n');
    if (rc < 0)
        c->rc = rc;
}

/* A problem with option id, to errors or warnings: "run.sh: --gpus: message", and in a
 * heterogeneous job's later component "run.sh: het component 1: --gpus: message". */
__attribute__((format(printf, 4, 0))) static void
vsay_opt(struct conv *c, struct gs_buf *to, enum gs_sbatch_opt id, const char *fmt, va_list ap)
{
    char prefix[512], comp[32] = "";

    if (c->comp > 0)
        snprintf(comp, sizeof(comp), "het component %u: ", c->comp);
    snprintf(prefix, sizeof(prefix), "%s: %s%s", where(c, id), comp, opt_names[id]);
    vsay(c, to, prefix, fmt, ap);
}

__attribute__((format(printf, 3, 4))) static void fail(struct conv *c, enum gs_sbatch_opt id,
                                                       const char *fmt, ...)
{
    va_list ap;

    c->nerrors++;
    va_start(ap, fmt);
    vsay_opt(c, c->errors, id, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void warn(struct conv *c, enum gs_sbatch_opt id,
                                                       const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay_opt(c, c->warnings, id, fmt, ap);
    va_end(ap);
}

/* Records an option that is accepted without effect, for the one warning at the end. */
static void ignored(struct conv *c, const char *what)
{
    int rc = gs_buf_printf(&c->ignored, "%s%s", c->ignored.len > 0 ? ", " : "", what);

    if (rc < 0)
        c->rc = rc;
}

static char *dup_or_fail(struct conv *c, const char *s)
{
    char *copy = s != NULL ? strdup(s) : NULL;

    if (s != NULL && copy == NULL)
        c->rc = -ENOMEM;
    return copy;
}

static char **strv_dup(struct conv *c, char *const *v, size_t n)
{
    char **copy = calloc(n + 1, sizeof(*copy));

    if (copy == NULL) {
        c->rc = -ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        copy[i] = dup_or_fail(c, v[i]);
        if (copy[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                free(copy[k]);
            free(copy);
            return NULL;
        }
    }
    return copy;
}

static uint32_t div_up(uint32_t a, uint32_t b)
{
    return b > 0 ? a / b + (a % b != 0) : a;
}

/* ---- nodes and tasks ---- */

static void map_tasks(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;
    bool nodes = is_set(sb, GS_SBATCH_OPT_NODES), ntasks = is_set(sb, GS_SBATCH_OPT_NTASKS);
    bool per_node = is_set(sb, GS_SBATCH_OPT_NTASKS_PER_NODE);

    if (nodes) {
        s->nodes = sb->nodes_min;
        if (sb->nodes_max != sb->nodes_min)
            warn(c, GS_SBATCH_OPT_NODES, "%u-%u: gsched allocates a fixed count; the job gets %u",
                 sb->nodes_min, sb->nodes_max, sb->nodes_min);
    } else if (ntasks && per_node) {
        s->nodes = div_up(sb->ntasks, sb->ntasks_per_node);
    } else {
        s->nodes = 1;
    }
    /* -w names the nodes: without -N the job has as many, as Slurm gives it. */
    if (!nodes && sb->nodelist_n > s->nodes)
        s->nodes = (uint32_t)sb->nodelist_n;
    if (nodes && sb->nodelist_n > s->nodes)
        fail(c, GS_SBATCH_OPT_NODELIST, "names %zu nodes but --nodes asks for %u", sb->nodelist_n,
             s->nodes);
    if (ntasks && sb->ntasks < s->nodes) {
        /* Slurm: "can't run N processes on M nodes, setting nnodes to N". */
        warn(c, GS_SBATCH_OPT_NTASKS, "%u tasks cannot use %u nodes; the job gets %u", sb->ntasks,
             s->nodes, sb->ntasks);
        s->nodes = sb->ntasks;
    }
    if (per_node)
        s->tasks_per_node = sb->ntasks_per_node;
    else if (ntasks)
        s->tasks_per_node = div_up(sb->ntasks, s->nodes);
    else
        s->tasks_per_node = 1;
    if (s->tasks_per_node > GS_JOBSPEC_CPUS_MAX)
        fail(c, ntasks ? GS_SBATCH_OPT_NTASKS : GS_SBATCH_OPT_NTASKS_PER_NODE,
             "%u tasks on one node is more than the %d gsched allows", s->tasks_per_node,
             GS_JOBSPEC_CPUS_MAX);
    if (ntasks && per_node && (uint64_t)sb->ntasks > (uint64_t)s->nodes * sb->ntasks_per_node)
        fail(c, GS_SBATCH_OPT_NTASKS, "%u tasks do not fit %u nodes of --ntasks-per-node=%u",
             sb->ntasks, s->nodes, sb->ntasks_per_node);
    /* 0 says "nodes x tasks_per_node"; only an uneven spread needs the count. */
    if (ntasks && (uint64_t)sb->ntasks != (uint64_t)s->nodes * s->tasks_per_node)
        s->ntasks = sb->ntasks;
}

/* ---- GPUs ---- */

/* One option's say on the GPUs per node. */
struct gpu_ask {
    enum gs_sbatch_opt id;
    const struct gs_sbatch_gpus *g;
    uint32_t per_node;
};

/* The GPU options given, each as GPUs per node, into asks; how many. Wrong ones fail. */
static size_t gpu_asks(struct conv *c, struct gpu_ask *asks)
{
    const struct gs_sbatch *sb = c->sb;
    uint32_t nodes = c->spec->nodes, tpn = c->spec->tasks_per_node;
    size_t n = 0;

    if (is_set(sb, GS_SBATCH_OPT_GRES) && sb->gres.count > 0)
        asks[n++] = (struct gpu_ask){GS_SBATCH_OPT_GRES, &sb->gres, sb->gres.count};
    if (is_set(sb, GS_SBATCH_OPT_GPUS_PER_NODE))
        asks[n++] = (struct gpu_ask){GS_SBATCH_OPT_GPUS_PER_NODE, &sb->gpus_per_node,
                                     sb->gpus_per_node.count};
    if (is_set(sb, GS_SBATCH_OPT_GPUS)) {
        if (sb->gpus.count % nodes != 0)
            fail(c, GS_SBATCH_OPT_GPUS, "%u GPUs do not divide evenly over %u nodes",
                 sb->gpus.count, nodes);
        else
            asks[n++] = (struct gpu_ask){GS_SBATCH_OPT_GPUS, &sb->gpus, sb->gpus.count / nodes};
    }
    if (is_set(sb, GS_SBATCH_OPT_GPUS_PER_TASK)) {
        uint64_t per_node = (uint64_t)sb->gpus_per_task.count * tpn;

        if (per_node > GS_JOBSPEC_GPUS_MAX)
            fail(c, GS_SBATCH_OPT_GPUS_PER_TASK,
                 "%u GPUs x %u tasks per node is more than %d GPUs per node",
                 sb->gpus_per_task.count, tpn, GS_JOBSPEC_GPUS_MAX);
        else
            asks[n++] = (struct gpu_ask){GS_SBATCH_OPT_GPUS_PER_TASK, &sb->gpus_per_task,
                                         (uint32_t)per_node};
    }
    return n;
}

/*
 * The job's node constraint becomes expr, and the GPU type already there too: "expr&type",
 * which features.h reads left to right, so "a|b&h100" is "(a|b)&h100".
 */
static void and_constraint(struct conv *c, const char *expr)
{
    struct gs_buf both = GS_BUF_INIT;
    char *type = c->spec->constraint;

    if (type == NULL) {
        c->spec->constraint = dup_or_fail(c, expr);
        return;
    }
    if (gs_buf_printf(&both, "%s&%s", expr, type) < 0) {
        c->rc = -ENOMEM;
        return;
    }
    free(type);
    c->spec->constraint = gs_buf_detach(&both, NULL);
    if (c->spec->constraint == NULL)
        c->rc = -ENOMEM;
}

/*
 * The options of the most important source decide (the command line's replace the
 * script's); among them --gres, --gpus-per-node and --gpus must agree, and --gpus-per-task
 * must fit what they give.
 */
static void map_gpus(struct conv *c)
{
    struct gpu_ask asks[4];
    size_t n = gpu_asks(c, asks);
    enum gs_sbatch_source top = GS_SBATCH_UNSET;
    const struct gpu_ask *first = NULL, *per_task = NULL;
    const char *type = "";
    enum gs_sbatch_opt type_from = GS_SBATCH_OPT_GRES;

    for (size_t i = 0; i < n; i++)
        if (c->sb->set_by[asks[i].id] > top)
            top = c->sb->set_by[asks[i].id];
    for (size_t i = 0; i < n; i++) {
        const struct gpu_ask *a = &asks[i];

        if (c->sb->set_by[a->id] != top)
            continue;
        if (a->g->type[0] != '\0' && type[0] != '\0' && strcmp(type, a->g->type) != 0)
            fail(c, a->id, "GPU type '%s' differs from %s's '%s'", a->g->type, opt_names[type_from],
                 type);
        else if (a->g->type[0] != '\0' && type[0] == '\0') {
            type = a->g->type;
            type_from = a->id;
        }
        if (a->id == GS_SBATCH_OPT_GPUS_PER_TASK) {
            per_task = a;
            continue;
        }
        if (first != NULL && first->per_node != a->per_node)
            fail(c, a->id, "asks for %u GPUs per node, %s for %u", a->per_node,
                 opt_names[first->id], first->per_node);
        else if (first == NULL)
            first = a;
    }
    if (per_task != NULL && first != NULL && per_task->per_node > first->per_node)
        fail(c, GS_SBATCH_OPT_GPUS_PER_TASK, "%u tasks per node need %u GPUs, %s gives %u",
             c->spec->tasks_per_node, per_task->per_node, opt_names[first->id], first->per_node);
    c->spec->gpus_per_node = first != NULL      ? first->per_node
                             : per_task != NULL ? per_task->per_node
                                                : 0;
    c->spec->gpus_per_task = per_task != NULL ? per_task->g->count : 0;
    if (type[0] != '\0') /* a node feature, ANDed with --constraint's by map_shape */
        c->spec->constraint = dup_or_fail(c, type);
}

/*
 * --ntasks-per-gpu=K, as Slurm reads it: K tasks for each GPU. With GPUs asked for, each
 * node runs K per GPU it gets (--ntasks, if given too, at most that many in all); with
 * --ntasks alone the GPUs follow from it, ntasks / K of them spread over the nodes (-N's;
 * one without). Not with --ntasks-per-node or --gpus-per-task. Each task is bound to its
 * GPU by map_env (single:K).
 */
static void map_tasks_per_gpu(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;
    enum gs_sbatch_opt id = GS_SBATCH_OPT_NTASKS_PER_GPU;
    uint64_t per_node;

    if (!is_set(sb, id))
        return;
    if (is_set(sb, GS_SBATCH_OPT_NTASKS_PER_NODE) || is_set(sb, GS_SBATCH_OPT_GPUS_PER_TASK)) {
        fail(c, id, "cannot be used with %s",
             is_set(sb, GS_SBATCH_OPT_NTASKS_PER_NODE) ? "--ntasks-per-node" : "--gpus-per-task");
        return;
    }
    if (s->gpus_per_node == 0 && !is_set(sb, GS_SBATCH_OPT_NTASKS)) {
        fail(c, id, "needs GPUs (--gpus, --gpus-per-node, --gres=gpu:N) or --ntasks");
        return;
    }
    if (s->gpus_per_node == 0)
        s->gpus_per_node = div_up(div_up(sb->ntasks, sb->ntasks_per_gpu), s->nodes);
    per_node = (uint64_t)sb->ntasks_per_gpu * s->gpus_per_node;
    if (s->gpus_per_node > GS_JOBSPEC_GPUS_MAX || per_node > GS_JOBSPEC_CPUS_MAX) {
        fail(c, id, "%u tasks on each of %u GPUs per node is more than gsched allows",
             sb->ntasks_per_gpu, s->gpus_per_node);
        return;
    }
    s->tasks_per_node = (uint32_t)per_node;
    s->ntasks = 0;
    if (is_set(sb, GS_SBATCH_OPT_NTASKS) && sb->ntasks > s->nodes * per_node)
        fail(c, GS_SBATCH_OPT_NTASKS, "%u tasks do not fit %u nodes of %u GPUs at %u per GPU",
             sb->ntasks, s->nodes, s->gpus_per_node, sb->ntasks_per_gpu);
    else if (is_set(sb, GS_SBATCH_OPT_NTASKS) && sb->ntasks != s->nodes * per_node)
        s->ntasks = sb->ntasks;
}

/* ---- CPUs and memory ---- */

static void map_cpus(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;

    if (is_set(sb, GS_SBATCH_OPT_CPUS_PER_GPU) && s->gpus_per_node == 0) {
        fail(c, GS_SBATCH_OPT_CPUS_PER_GPU, "the job asks for no GPUs");
        s->cpus_per_task = 1;
    } else if (is_set(sb, GS_SBATCH_OPT_CPUS_PER_GPU)) {
        s->cpus_per_gpu = sb->cpus_per_gpu;
    } else {
        s->cpus_per_task = is_set(sb, GS_SBATCH_OPT_CPUS_PER_TASK) ? sb->cpus_per_task : 1;
    }
    if (is_set(sb, GS_SBATCH_OPT_MINCPUS))
        s->min_cpus_per_node = sb->mincpus;
    s->threads_per_core = sb->threads_per_core;
    s->overcommit = is_set(sb, GS_SBATCH_OPT_OVERCOMMIT);
}

static void mem_times(struct conv *c, enum gs_sbatch_opt id, uint64_t each, uint64_t count,
                      const char *what)
{
    if (count == 0) {
        fail(c, id, "the job asks for no %s", what);
        return;
    }
    if (each > UINT64_MAX / GS_MIB / count) {
        fail(c, id, "%llu MiB x %llu %s is too much memory", (unsigned long long)each,
             (unsigned long long)count, what);
        return;
    }
    c->spec->mem_per_node_mib = each * count;
}

static void map_mem(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;
    uint64_t cpus = gs_jobspec_cores_per_node(s);

    if (is_set(sb, GS_SBATCH_OPT_MEM) && sb->mem_mib == 0)
        warn(c, GS_SBATCH_OPT_MEM,
             "0 (all of a node's memory) is not reserved; the job makes no memory request");
    else if (is_set(sb, GS_SBATCH_OPT_MEM))
        s->mem_per_node_mib = sb->mem_mib;
    else if (is_set(sb, GS_SBATCH_OPT_MEM_PER_CPU))
        mem_times(c, GS_SBATCH_OPT_MEM_PER_CPU, sb->mem_per_cpu_mib, cpus, "CPUs");
    else if (is_set(sb, GS_SBATCH_OPT_MEM_PER_GPU))
        mem_times(c, GS_SBATCH_OPT_MEM_PER_GPU, sb->mem_per_gpu_mib, s->gpus_per_node, "GPUs");
}

/* ---- a component's shape: the same rules for each component of a heterogeneous job ---- */

/* Nodes, tasks, GPUs, CPUs, memory and constraint of c->sb into c->spec, in dependency order. */
static void map_shape(struct conv *c)
{
    map_tasks(c);
    map_gpus(c);
    map_tasks_per_gpu(c);
    map_cpus(c);
    map_mem(c);
    if (is_set(c->sb, GS_SBATCH_OPT_CONSTRAINT))
        and_constraint(c, c->sb->constraint);
}

/*
 * Each further component (sb->het) mapped by map_shape as if it were a job of its own,
 * into a scratch spec whose shape moves to spec->het; component 0 is the spec itself.
 */
static void map_het(struct conv *c)
{
    const struct gs_sbatch *job = c->sb;
    struct gs_jobspec *spec = c->spec;

    if (job->nhet == 0)
        return;
    spec->het = calloc(job->nhet, sizeof(*spec->het));
    if (spec->het == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    spec->nhet = (uint32_t)job->nhet;
    for (uint32_t k = 1; k <= spec->nhet; k++) {
        struct gs_jobspec shape = {0};

        c->sb = &job->het[k - 1];
        c->spec = &shape;
        c->comp = k;
        map_shape(c);
        spec->het[k - 1] = (struct gs_het_component){
            .nodes = shape.nodes,
            .gpus_per_node = shape.gpus_per_node,
            .cpus_per_gpu = shape.cpus_per_gpu,
            .cpus_per_task = shape.cpus_per_task,
            .mem_per_node_mib = shape.mem_per_node_mib,
            .constraint = shape.constraint, /* moved: the spec frees it */
            .tasks_per_node = shape.tasks_per_node,
            .tasks_per_gpu = shape.tasks_per_gpu,
            .ntasks = shape.ntasks,
            .gpus_per_task = shape.gpus_per_task,
        };
    }
    c->sb = job;
    c->spec = spec;
    c->comp = 0;
}

/* ---- paths ---- */

static void map_paths(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;
    struct gs_buf dir = GS_BUF_INIT;
    const char *out = GS_SBATCH_DEFAULT_OUTPUT;

    if (is_set(sb, GS_SBATCH_OPT_OUTPUT))
        out = sb->output;
    else if (is_set(sb, GS_SBATCH_OPT_ARRAY))
        out = GS_SBATCH_DEFAULT_ARRAY_OUTPUT;
    s->stdout_pattern = dup_or_fail(c, out);
    s->truncate_output = !sb->open_append;
    s->kill_invalid_dep = sb->kill_invalid_dep;
    if (is_set(sb, GS_SBATCH_OPT_ERROR))
        s->stderr_pattern = dup_or_fail(c, sb->error);
    /* "none" is Slurm's /dev/null, as without the option */
    if (is_set(sb, GS_SBATCH_OPT_INPUT) && strcmp(sb->input, "none") != 0)
        s->stdin_pattern = dup_or_fail(c, sb->input);
    if (gs_path_absolute(c->env->cwd, is_set(sb, GS_SBATCH_OPT_CHDIR) ? sb->chdir : ".", &dir) < 0)
        c->rc = -ENOMEM;
    else
        s->workdir = gs_buf_detach(&dir, NULL);
    if (s->workdir == NULL)
        c->rc = -ENOMEM;
    s->submit_dir = dup_or_fail(c, c->env->cwd);
    s->submit_host = dup_or_fail(c, c->env->hostname != NULL ? c->env->hostname : "");
    gs_buf_release(&dir);
}

/* ---- the job: name, script, array, dependencies, signals ---- */

static void map_name(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    const char *name = sb->script_name != NULL ? sb->script_name : GS_SBATCH_STDIN_NAME;
    const char *slash = strrchr(name, '/');
    char base[GS_JOBSPEC_NAME_MAX + 1];

    if (is_set(sb, GS_SBATCH_OPT_JOB_NAME)) {
        c->spec->name = dup_or_fail(c, sb->job_name);
        return;
    }
    if (sb->wrap != NULL)
        name = GS_SBATCH_WRAP_NAME;
    else if (c->env->script_on_stdin)
        name = GS_SBATCH_STDIN_NAME;
    else if (slash != NULL)
        name = slash + 1;
    snprintf(base, sizeof(base), "%s", name);
    if (!gs_jobspec_name_ok(base)) {
        fail(c, GS_SBATCH_OPT_JOB_NAME, "the script's name '%s' is no job name; give --job-name",
             name);
        return;
    }
    c->spec->name = dup_or_fail(c, base);
}

static void map_script(struct conv *c, const char *script_text, char *const *args)
{
    struct gs_jobspec *s = c->spec;
    struct gs_buf wrapped = GS_BUF_INIT;
    size_t n = 0;

    if (c->sb->wrap != NULL) {
        /* sbatch --wrap: the command under sh, as Slurm writes the script. */
        if (gs_buf_printf(&wrapped, "#!/bin/sh\n%s\n", c->sb->wrap) < 0 ||
            (s->script = gs_buf_detach(&wrapped, NULL)) == NULL)
            c->rc = -ENOMEM;
    } else {
        s->script = dup_or_fail(c, script_text != NULL ? script_text : "");
    }
    gs_buf_release(&wrapped);
    while (args != NULL && args[n] != NULL)
        n++;
    if (n > 0 && (s->argv = strv_dup(c, args, n)) != NULL)
        s->argc = n;
}

static void map_array(struct conv *c)
{
    const struct gs_sbatch_array *a = &c->sb->array;
    struct gs_job_array *out = &c->spec->array;

    if (!is_set(c->sb, GS_SBATCH_OPT_ARRAY) || a->n == 0)
        return;
    out->task_ids = malloc(a->n * sizeof(*out->task_ids));
    if (out->task_ids == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    memcpy(out->task_ids, a->ids, a->n * sizeof(*out->task_ids));
    out->ntask_ids = a->n;
    out->throttle = a->throttle;
}

static void map_deps(struct conv *c)
{
    const struct gs_sbatch_deps *d = &c->sb->deps;
    struct gs_jobspec *s = c->spec;

    if (!is_set(c->sb, GS_SBATCH_OPT_DEPENDENCY) || d->n == 0)
        return;
    s->deps = calloc(d->n, sizeof(*s->deps));
    if (s->deps == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < d->n; i++) {
        if (d->terms[i].singleton) {
            s->singleton = true;
            continue;
        }
        s->deps[s->ndeps++] = d->terms[i].dep;
    }
    s->depends_any = d->op == GS_SBATCH_DEP_ANY;
}

static void map_signal(struct conv *c)
{
    const struct gs_sbatch_signal *sig = &c->sb->signal;

    if (!is_set(c->sb, GS_SBATCH_OPT_SIGNAL))
        return;
    c->spec->warn_signal = (uint32_t)sig->signo;
    c->spec->warn_before_s = sig->seconds;
    c->spec->warn_batch_only = sig->batch_only;
    if (sig->reservation_overlap)
        ignored(c, "--signal=R:");
}

/* ---- the environment (--export) ---- */

static size_t name_len(const char *var)
{
    return strcspn(var, "=");
}

static bool same_name(const char *a, const char *b)
{
    size_t n = name_len(a);

    return n == name_len(b) && strncmp(a, b, n) == 0;
}

/* Variables that describe the submitting shell, or an enclosing job's allocation. */
static bool shell_only(const char *var)
{
    static const char *const names[] = {"PWD", "OLDPWD", "SHLVL", "_"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (same_name(var, names[i]))
            return true;
    return strncmp(var, "SLURM_", 6) == 0;
}

static bool named_in_export(const struct gs_sbatch_export *e, const char *var)
{
    for (size_t i = 0; i < e->n; i++)
        if (same_name(e->vars[i], var))
            return true;
    return false;
}

static const char *lookup(char *const *envp, const char *name)
{
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
        if (same_name(envp[i], name) && envp[i][name_len(name)] == '=')
            return envp[i];
    return NULL;
}

static void env_push(struct conv *c, char **v, size_t *n, const char *var)
{
    if ((v[*n] = dup_or_fail(c, var)) != NULL)
        (*n)++;
}

/*
 * --gpu-bind, checked here, reaches the job's srun steps as Slurm's does: SLURM_GPU_BIND
 * in the batch environment, which srun reads when it is not given one itself. Without
 * it --ntasks-per-gpu=K binds as Slurm's does, single:K; SLURM_NTASKS_PER_GPU says K.
 */
static void gpu_bind(struct conv *c, char **v, size_t *n)
{
    struct gs_gpu_bind b;
    struct gs_buf var = GS_BUF_INIT;
    char why[256];
    int rc = 0;

    if (is_set(c->sb, GS_SBATCH_OPT_NTASKS_PER_GPU)) {
        rc = gs_buf_printf(&var, "SLURM_NTASKS_PER_GPU=%u", c->sb->ntasks_per_gpu);
        if (rc == 0)
            env_push(c, v, n, var.data);
        gs_buf_reset(&var);
    }
    if (rc == 0 && is_set(c->sb, GS_SBATCH_OPT_GPU_BIND) && c->sb->gpu_bind != NULL) {
        if (gs_gpu_bind_parse(c->sb->gpu_bind, &b, why, sizeof(why)) < 0)
            fail(c, GS_SBATCH_OPT_GPU_BIND, "%s", why + strlen("--gpu-bind: "));
        else
            rc = gs_buf_printf(&var, "SLURM_GPU_BIND=%s", c->sb->gpu_bind);
    } else if (rc == 0 && is_set(c->sb, GS_SBATCH_OPT_NTASKS_PER_GPU)) {
        rc = gs_buf_printf(&var, "SLURM_GPU_BIND=single:%u", c->sb->ntasks_per_gpu);
    }
    if (rc < 0)
        c->rc = -ENOMEM;
    else if (var.len > 0)
        env_push(c, v, n, var.data);
    gs_buf_release(&var);
}

/* -m and --mem-bind reach the job's srun steps as Slurm's do: SLURM_DISTRIBUTION (and for
 * plane=N SLURM_DIST_PLANESIZE) and SLURM_MEM_BIND in the batch environment; srun reads
 * them when not given the options itself. */
static void step_defaults_env(struct conv *c, char **v, size_t *n)
{
    const char *text = c->sb->distribution;
    struct gs_buf var = GS_BUF_INIT;
    int rc = 0;

    if (is_set(c->sb, GS_SBATCH_OPT_MEM_BIND) && c->sb->mem_bind != NULL) {
        rc = gs_buf_printf(&var, "SLURM_MEM_BIND=%s", c->sb->mem_bind);
        if (rc == 0)
            env_push(c, v, n, var.data);
        gs_buf_reset(&var);
    }
    if (rc < 0 || !is_set(c->sb, GS_SBATCH_OPT_DISTRIBUTION) || text == NULL)
        goto out;
    rc = gs_buf_printf(&var, "SLURM_DISTRIBUTION=%s", text);
    if (rc == 0)
        env_push(c, v, n, var.data);
    gs_buf_reset(&var);
    if (rc == 0 && strncasecmp(text, "plane=", 6) == 0) {
        rc = gs_buf_printf(&var, "SLURM_DIST_PLANESIZE=%.*s", (int)strcspn(text + 6, ":,"),
                           text + 6);
        if (rc == 0)
            env_push(c, v, n, var.data);
    }
out:
    if (rc < 0)
        c->rc = -ENOMEM;
    gs_buf_release(&var);
}

/* --propagate: the submitting shell's soft limits, as sbatch sees them now. */
static void map_rlimits(struct conv *c)
{
    struct gs_jobspec *s = c->spec;

    if (!is_set(c->sb, GS_SBATCH_OPT_PROPAGATE) || c->sb->propagate == 0)
        return;
    s->rlimits = calloc(GS_RLIMIT_COUNT, sizeof(*s->rlimits));
    if (s->rlimits == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < GS_RLIMIT_COUNT; i++) {
        struct rlimit rl;

        if (!(c->sb->propagate & (1u << i)) ||
            getrlimit(gs_rlimit_resource(gs_rlimit_name(i)), &rl) < 0)
            continue;
        snprintf(s->rlimits[s->nrlimits].name, sizeof(s->rlimits[0].name), "%s", gs_rlimit_name(i));
        s->rlimits[s->nrlimits++].soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
    }
}

static void map_env(struct conv *c)
{
    const struct gs_sbatch_export *e = &c->sb->export_env;
    bool all = !is_set(c->sb, GS_SBATCH_OPT_EXPORT) || e->mode == GS_SBATCH_EXPORT_ALL;
    char *const *envp = c->env->envp;
    size_t total = e->n, n = 0;
    char **v;

    for (size_t i = 0; all && envp != NULL && envp[i] != NULL; i++)
        total++;
    total += 5; /* SLURM_GPU_BIND, _NTASKS_PER_GPU, _DISTRIBUTION, _DIST_PLANESIZE, _MEM_BIND */
    v = calloc(total + 1, sizeof(*v));
    if (v == NULL) {
        c->rc = -ENOMEM;
        return;
    }
    for (size_t i = 0; all && envp != NULL && envp[i] != NULL; i++) {
        const char *var = envp[i];

        /* Names a job file could not hold (bash's exported functions) stay out too. */
        if (strchr(var, '=') == NULL || !gs_jobspec_env_name_ok(var, name_len(var)) ||
            shell_only(var) || named_in_export(e, var))
            continue;
        env_push(c, v, &n, var);
    }
    for (size_t i = 0; i < e->n; i++) {
        const char *var = e->vars[i];
        bool later = false;

        for (size_t k = i + 1; k < e->n && !later; k++)
            later = same_name(var, e->vars[k]); /* the last one given wins */
        if (later)
            continue;
        if (strchr(var, '=') == NULL)
            var = lookup(envp, var); /* NAME alone: its value here, if it has one */
        if (var != NULL)
            env_push(c, v, &n, var);
    }
    gpu_bind(c, v, &n);
    step_defaults_env(c, v, &n);
    c->spec->env = v;
    c->spec->nenv = n;
    map_rlimits(c);
}

/* ---- the rest, and the whole ---- */

/* Whether any component's --gres named resources other than GPUs. */
static bool gres_other(const struct gs_sbatch *sb)
{
    bool other = is_set(sb, GS_SBATCH_OPT_GRES) && sb->gres_other;

    for (size_t k = 0; k < sb->nhet && !other; k++)
        other = is_set(&sb->het[k], GS_SBATCH_OPT_GRES) && sb->het[k].gres_other;
    return other;
}

static void map_licenses(struct conv *c, const char *text)
{
    char why[200];
    int rc = gs_license_list_parse(text != NULL ? text : "", &c->spec->licenses,
                                   &c->spec->nlicenses, why, sizeof(why));

    if (rc == -ENOMEM)
        c->rc = rc;
    else if (rc < 0)
        fail(c, GS_SBATCH_OPT_LICENSES, "%s", why);
}

static void map_simple(struct conv *c)
{
    const struct gs_sbatch *sb = c->sb;
    struct gs_jobspec *s = c->spec;

    s->batch = true;
    s->slurm = true;
    /* sbatch -t 0 asks for no limit, as Slurm reads it. */
    if (is_set(sb, GS_SBATCH_OPT_TIME) && sb->time_limit_s != 0)
        s->time_limit_s = sb->time_limit_s;
    if (is_set(sb, GS_SBATCH_OPT_TIME_MIN))
        s->time_min_s = sb->time_min_s == GS_DURATION_INFINITE ? 0 : sb->time_min_s;
    if (is_set(sb, GS_SBATCH_OPT_TMP))
        s->tmp_per_node_mib = sb->tmp_mib;
    if (is_set(sb, GS_SBATCH_OPT_PARTITION))
        s->partition = dup_or_fail(c, sb->partition);
    if (is_set(sb, GS_SBATCH_OPT_ACCOUNT))
        s->account = dup_or_fail(c, sb->account);
    if (is_set(sb, GS_SBATCH_OPT_QOS))
        s->qos = dup_or_fail(c, sb->qos);
    if (is_set(sb, GS_SBATCH_OPT_RESERVATION))
        s->reservation = dup_or_fail(c, sb->reservation);
    if (is_set(sb, GS_SBATCH_OPT_COMMENT))
        s->comment = dup_or_fail(c, sb->comment);
    if (is_set(sb, GS_SBATCH_OPT_PREFER))
        s->prefer = dup_or_fail(c, sb->prefer);
    if (is_set(sb, GS_SBATCH_OPT_CLUSTERS))
        s->clusters = dup_or_fail(c, sb->clusters);
    s->no_kill = sb->no_kill;
    s->switches = sb->switches.count;
    s->switch_wait_set = sb->switches.wait_set;
    s->switch_wait_s = sb->switches.wait_s;
    if (is_set(sb, GS_SBATCH_OPT_NTASKS_PER_CORE) && sb->overcommit)
        fail(c, GS_SBATCH_OPT_NTASKS_PER_CORE,
             "one task a core is not what --overcommit's tasks get (they share one task's)");
    if (is_set(sb, GS_SBATCH_OPT_WCKEY))
        s->wckey = dup_or_fail(c, sb->wckey);
    s->mail_types = sb->mail_types;
    if (is_set(sb, GS_SBATCH_OPT_MAIL_USER))
        s->mail_user = dup_or_fail(c, sb->mail_user);
    if (is_set(sb, GS_SBATCH_OPT_NODELIST) && sb->nodelist_n > 0 &&
        (s->nodelist = strv_dup(c, sb->nodelist_names, sb->nodelist_n)) != NULL)
        s->nnodelist = sb->nodelist_n;
    if (is_set(sb, GS_SBATCH_OPT_EXCLUDE) && sb->exclude_n > 0 &&
        (s->exclude = strv_dup(c, sb->exclude_names, sb->exclude_n)) != NULL)
        s->nexclude = sb->exclude_n;
    s->exclusive = is_set(sb, GS_SBATCH_OPT_EXCLUSIVE) && sb->exclusive;
    s->hold = is_set(sb, GS_SBATCH_OPT_HOLD) && sb->hold;
    if (is_set(sb, GS_SBATCH_OPT_NICE))
        s->nice = sb->nice;
    if (is_set(sb, GS_SBATCH_OPT_PRIORITY))
        s->priority = sb->priority;
    if (is_set(sb, GS_SBATCH_OPT_BEGIN))
        s->begin_ms = sb->begin_ms;
    if (is_set(sb, GS_SBATCH_OPT_DEADLINE))
        s->deadline_ms = sb->deadline_ms;
    if (is_set(sb, GS_SBATCH_OPT_REQUEUE) && sb->requeue)
        s->max_restarts = GS_SBATCH_REQUEUE_RESTARTS;
    if (is_set(sb, GS_SBATCH_OPT_LICENSES))
        map_licenses(c, sb->licenses);
    if (is_set(sb, GS_SBATCH_OPT_GRES_FLAGS))
        ignored(c, "--gres-flags");
    if (gres_other(sb))
        ignored(c, "--gres entries other than gpu");
}

/* The option a gs_jobspec_check message is about, by the field it names. */
static enum gs_sbatch_opt option_of(const char *msg)
{
    static const struct {
        const char *field;
        enum gs_sbatch_opt id;
    } fields[] = {
        {"resources.nodelist", GS_SBATCH_OPT_NODELIST},
        {"resources.exclude", GS_SBATCH_OPT_EXCLUDE},
        {"resources.ntasks", GS_SBATCH_OPT_NTASKS},
        {"resources.nodes", GS_SBATCH_OPT_NODES},
        {"resources.gpus_per_node", GS_SBATCH_OPT_GPUS_PER_NODE},
        {"cpus", GS_SBATCH_OPT_CPUS_PER_TASK},
        {"time_limit", GS_SBATCH_OPT_TIME},
        {"tasks_per_node", GS_SBATCH_OPT_NTASKS_PER_NODE},
        {"run.stdout", GS_SBATCH_OPT_OUTPUT},
        {"run.env", GS_SBATCH_OPT_EXPORT},
        {"depends_on", GS_SBATCH_OPT_DEPENDENCY},
        {"array", GS_SBATCH_OPT_ARRAY},
        {"warn_signal", GS_SBATCH_OPT_SIGNAL},
        {"max_restarts", GS_SBATCH_OPT_REQUEUE},
        {"nice", GS_SBATCH_OPT_NICE},
        {"reservation", GS_SBATCH_OPT_RESERVATION},
        {"licenses", GS_SBATCH_OPT_LICENSES},
    };

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (strstr(msg, fields[i].field) != NULL)
            return fields[i].id;
    return GS_SBATCH_OPT_JOB_NAME;
}

/*
 * The job-file rules, as the scheduler applies them. The script's arguments are hidden
 * from the check: it reads argv as a command to run (a program name first), while a batch
 * job's are only $1...; any strings will do there.
 */
static void check_spec(struct conv *c)
{
    struct gs_jobspec *s = c->spec;
    char **argv = s->argv;
    struct gs_error err;

    gs_error_clear(&err);
    s->argv = NULL;
    if (gs_jobspec_check(s, &err) < 0)
        fail(c, option_of(err.msg), "%s", err.msg);
    s->argv = argv;
}

int gs_sbatch_to_jobspec(const struct gs_sbatch *sb, const char *script_text,
                         char *const *script_args, const struct gs_sbatch_env *env,
                         struct gs_jobspec **ret, struct gs_buf *errors, struct gs_buf *warnings)
{
    struct conv c = {
        .job = sb,
        .sb = sb,
        .env = env,
        .spec = gs_jobspec_new(),
        .errors = errors,
        .warnings = warnings,
        .ignored = GS_BUF_INIT,
    };
    int rc;

    if (c.spec == NULL)
        return -ENOMEM;
    map_shape(&c);
    map_het(&c);
    map_simple(&c);
    map_paths(&c);
    map_name(&c);
    map_script(&c, script_text, script_args);
    map_array(&c);
    map_deps(&c);
    map_signal(&c);
    map_env(&c);
    if (c.rc == 0 && c.nerrors == 0)
        check_spec(&c);
    if (c.rc == 0 && c.ignored.len > 0 && warnings != NULL &&
        gs_buf_printf(warnings, "accepted and not acted on: %s\n", c.ignored.data) < 0)
        c.rc = -ENOMEM;
    rc = c.rc != 0 ? c.rc : c.nerrors > 0 ? -EINVAL : 0;
    gs_buf_release(&c.ignored);
    if (rc < 0) {
        gs_jobspec_free(c.spec);
        return rc;
    }
    *ret = c.spec;
    return 0;
}
