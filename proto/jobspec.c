/*
 * jobspec.c: gs_jobspec <-> gs.JobSpec (see jobspec.h). Sending borrows; receiving copies
 * and checks every field, because the scheduler stores and runs what arrives.
 */
#include "proto/jobspec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rlimit_names.h"
#include "common/units.h"

static char *or_empty(const char *s)
{
    return (char *)(s != NULL ? s : "");
}

static int view_env(struct gs_proto_jobspec_view *v, const struct gs_jobspec *spec)
{
    size_t n = spec->nenv;

    v->env = calloc(n + 1, sizeof(*v->env));
    v->env_ptrs = calloc(n + 1, sizeof(*v->env_ptrs));
    v->env_keys = calloc(n + 1, sizeof(*v->env_keys));
    if (v->env == NULL || v->env_ptrs == NULL || v->env_keys == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(spec->env[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - spec->env[i]) : strlen(spec->env[i]);

        v->env_keys[i] = strndup(spec->env[i], klen);
        if (v->env_keys[i] == NULL)
            return -ENOMEM;
        gs__run_spec__env_entry__init(&v->env[i]);
        v->env[i].key = v->env_keys[i];
        v->env[i].value = or_empty(eq != NULL ? eq + 1 : NULL);
        v->env_ptrs[i] = &v->env[i];
    }
    v->run.n_env = n;
    v->run.env = v->env_ptrs;
    return 0;
}

static int view_deps(struct gs_proto_jobspec_view *v, const struct gs_jobspec *spec)
{
    v->deps = calloc(spec->ndeps + 1, sizeof(*v->deps));
    v->dep_ptrs = calloc(spec->ndeps + 1, sizeof(*v->dep_ptrs));
    if (v->deps == NULL || v->dep_ptrs == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < spec->ndeps; i++) {
        gs__dependency__init(&v->deps[i]);
        v->deps[i].type = (Gs__DependencyType)(spec->deps[i].type + 1);
        v->deps[i].job_id = spec->deps[i].job_id;
        v->deps[i].delay_min = spec->deps[i].delay_min;
        v->deps[i].target = (Gs__DependencyTarget)spec->deps[i].target;
        v->deps[i].task_id = spec->deps[i].task_id;
        v->dep_ptrs[i] = &v->deps[i];
    }
    v->spec.n_depends_on = spec->ndeps;
    v->spec.depends_on = v->dep_ptrs;
    return 0;
}

void gs_proto_jobspec_resources(Gs__Resources *r, const struct gs_jobspec *spec)
{
    gs__resources__init(r);
    r->nodes = spec->nodes;
    r->gpus_per_node = spec->gpus_per_node;
    if (spec->cpus_per_gpu > 0) {
        r->cpus_case = GS__RESOURCES__CPUS_CPUS_PER_GPU;
        r->cpus_per_gpu = spec->cpus_per_gpu;
    } else if (spec->cpus_per_task > 0) {
        r->cpus_case = GS__RESOURCES__CPUS_CPUS_PER_TASK;
        r->cpus_per_task = spec->cpus_per_task;
    }
    r->mem_per_node_mib = spec->mem_per_node_mib;
    r->tmp_per_node_mib = spec->tmp_per_node_mib;
    r->min_cpus_per_node = spec->min_cpus_per_node;
    r->overcommit = spec->overcommit;
    r->time_limit_s = spec->time_limit_s == GS_DURATION_INFINITE ? 0 : spec->time_limit_s;
    r->exclusive = spec->exclusive;
    r->constraint = or_empty(spec->constraint);
    r->prefer = or_empty(spec->prefer);
    r->ntasks = spec->ntasks;
    r->partition = or_empty(spec->partition);
    r->n_nodelist = spec->nodelist != NULL ? spec->nnodelist : 0;
    r->nodelist = spec->nodelist;
    r->n_exclude = spec->exclude != NULL ? spec->nexclude : 0;
    r->exclude = spec->exclude;
    r->time_min_s = spec->time_min_s;
    r->gpus_per_task = spec->gpus_per_task;
}

static int view_het(struct gs_proto_jobspec_view *v, const struct gs_jobspec *spec)
{
    if (spec->nhet == 0)
        return 0;
    v->het = calloc(spec->nhet, sizeof(*v->het));
    v->het_ptrs = calloc(spec->nhet, sizeof(*v->het_ptrs));
    if (v->het == NULL || v->het_ptrs == NULL)
        return -ENOMEM;
    for (uint32_t k = 0; k < spec->nhet; k++) {
        const struct gs_het_component *c = &spec->het[k];
        Gs__HetComponent *h = &v->het[k];

        gs__het_component__init(h);
        h->nodes = c->nodes;
        h->gpus_per_node = c->gpus_per_node;
        if (c->cpus_per_gpu > 0) {
            h->cpus_case = GS__HET_COMPONENT__CPUS_CPUS_PER_GPU;
            h->cpus_per_gpu = c->cpus_per_gpu;
        } else if (c->cpus_per_task > 0) {
            h->cpus_case = GS__HET_COMPONENT__CPUS_CPUS_PER_TASK;
            h->cpus_per_task = c->cpus_per_task;
        }
        h->mem_per_node_mib = c->mem_per_node_mib;
        h->constraint = or_empty(c->constraint);
        h->tasks_per_node = c->tasks_per_node;
        h->tasks_per_gpu = c->tasks_per_gpu;
        h->ntasks = c->ntasks;
        h->gpus_per_task = c->gpus_per_task;
        v->het_ptrs[k] = h;
    }
    v->spec.n_het = spec->nhet;
    v->spec.het = v->het_ptrs;
    return 0;
}

static int view_licenses(struct gs_proto_jobspec_view *v, const struct gs_jobspec *spec)
{
    if (spec->nlicenses == 0)
        return 0;
    v->licenses = calloc(spec->nlicenses, sizeof(*v->licenses));
    v->license_ptrs = calloc(spec->nlicenses, sizeof(*v->license_ptrs));
    if (v->licenses == NULL || v->license_ptrs == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < spec->nlicenses; i++) {
        gs__job_license__init(&v->licenses[i]);
        v->licenses[i].name = spec->licenses[i].name;
        v->licenses[i].count = spec->licenses[i].count;
        v->license_ptrs[i] = &v->licenses[i];
    }
    v->spec.n_licenses = spec->nlicenses;
    v->spec.licenses = v->license_ptrs;
    return 0;
}

int gs_proto_jobspec_rlimits(const struct gs_jobspec *spec, Gs__RunSpec *run, Gs__Rlimit **items,
                             Gs__Rlimit ***ptrs)
{
    *items = NULL;
    *ptrs = NULL;
    if (spec->nrlimits == 0)
        return 0;
    *items = calloc(spec->nrlimits, sizeof(**items));
    *ptrs = calloc(spec->nrlimits, sizeof(**ptrs));
    if (*items == NULL || *ptrs == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < spec->nrlimits; i++) {
        gs__rlimit__init(&(*items)[i]);
        (*items)[i].name = (char *)spec->rlimits[i].name;
        (*items)[i].soft = spec->rlimits[i].soft;
        (*ptrs)[i] = &(*items)[i];
    }
    run->n_rlimits = spec->nrlimits;
    run->rlimits = *ptrs;
    return 0;
}

static void view_run(Gs__RunSpec *run, const struct gs_jobspec *spec)
{
    gs__run_spec__init(run);
    run->n_argv = spec->argv != NULL ? spec->argc : 0;
    run->argv = spec->argv;
    run->script = or_empty(spec->script);
    run->tasks_per_node = spec->tasks_per_node;
    run->tasks_per_gpu = spec->tasks_per_gpu;
    run->workdir = or_empty(spec->workdir);
    run->stdout_pattern = or_empty(spec->stdout_pattern);
    run->stderr_pattern = or_empty(spec->stderr_pattern);
    run->stdin_pattern = or_empty(spec->stdin_pattern);
    run->threads_per_core = spec->threads_per_core;
    run->truncate_output = spec->truncate_output;
    run->batch = spec->batch;
    run->launcher = spec->launcher == GS_LAUNCHER_MPI        ? GS__LAUNCHER__LAUNCHER_MPI
                    : spec->launcher == GS_LAUNCHER_TORCHRUN ? GS__LAUNCHER__LAUNCHER_TORCHRUN
                                                             : GS__LAUNCHER__LAUNCHER_NONE;
    run->slurm = spec->slurm;
    run->allocation = spec->allocation;
    run->submit_dir = or_empty(spec->submit_dir);
    run->submit_host = or_empty(spec->submit_host);
    run->warn_signal = spec->warn_signal;
    run->warn_before_s = spec->warn_before_s;
    run->warn_batch_only = spec->warn_batch_only;
}

static bool is_array(const struct gs_job_array *a)
{
    return a->ntask_ids > 0 || a->array_job_id != 0;
}

static void view_array(Gs__ArraySpec *pb, const struct gs_job_array *a)
{
    gs__array_spec__init(pb);
    pb->n_task_ids = a->ntask_ids;
    pb->task_ids = a->task_ids;
    pb->throttle = a->throttle;
    pb->array_job_id = a->array_job_id;
    pb->task_id = a->task_id;
    pb->task_count = a->count;
    pb->task_min = a->min;
    pb->task_max = a->max;
    pb->task_step = a->step;
}

static void view_data(Gs__JobData *pb, const struct gs_jobdata *d)
{
    gs__job_data__init(pb);
    pb->dataset = (char *)d->id;
    pb->source = or_empty(d->source);
    pb->stage = d->stage == GS_DATA_STAGE_STREAM ? GS__DATA_STAGE__DATA_STAGE_STREAM
                                                 : GS__DATA_STAGE__DATA_STAGE_BEFORE;
    pb->shards = d->shards;
    pb->bytes = d->bytes;
    pb->tolerance = d->tolerance;
    pb->seed = d->seed;
    pb->locality_wait_set = d->locality_wait_set;
    pb->locality_wait_s = d->locality_wait_s;
}

int gs_proto_jobspec_view_init(struct gs_proto_jobspec_view *v, const struct gs_jobspec *spec)
{
    int rc;

    memset(v, 0, sizeof(*v));
    gs__job_spec__init(&v->spec);
    v->spec.name = or_empty(spec->name);
    v->spec.priority = spec->priority;
    v->spec.nice = spec->nice;
    v->spec.begin_time_ms = spec->begin_ms;
    v->spec.deadline_ms = spec->deadline_ms;
    v->spec.hold = spec->hold;
    v->spec.max_restarts = spec->max_restarts;
    v->spec.gpu_affinity = (Gs__GpuAffinity)spec->gpu_affinity;
    v->spec.switches = spec->switches;
    v->spec.switch_wait_set = spec->switch_wait_set;
    v->spec.switch_wait_s = spec->switch_wait_s;
    v->spec.account = or_empty(spec->account);
    v->spec.qos = or_empty(spec->qos);
    v->spec.comment = or_empty(spec->comment);
    v->spec.wckey = or_empty(spec->wckey);
    v->spec.clusters = or_empty(spec->clusters);
    v->spec.reservation = or_empty(spec->reservation);
    v->spec.source = or_empty(spec->source);
    v->spec.mail_types = spec->mail_types;
    v->spec.mail_user = or_empty(spec->mail_user);
    v->spec.depends_any = spec->depends_any;
    v->spec.singleton = spec->singleton;
    v->spec.kill_on_invalid_dep = (uint32_t)spec->kill_invalid_dep;
    v->spec.no_kill = spec->no_kill;
    if (is_array(&spec->array)) {
        view_array(&v->array, &spec->array);
        v->spec.array = &v->array;
    }
    if (spec->data.id[0] != '\0') {
        view_data(&v->data, &spec->data);
        v->spec.data = &v->data;
    }
    gs_proto_jobspec_resources(&v->resources, spec);
    view_run(&v->run, spec);
    v->spec.resources = &v->resources;
    v->spec.run = &v->run;
    rc = view_deps(v, spec);
    if (rc == 0)
        rc = view_env(v, spec);
    if (rc == 0)
        rc = view_het(v, spec);
    if (rc == 0)
        rc = view_licenses(v, spec);
    if (rc == 0)
        rc = gs_proto_jobspec_rlimits(spec, &v->run, &v->rlimits, &v->rlimit_ptrs);
    if (rc < 0)
        gs_proto_jobspec_view_release(v);
    return rc;
}

void gs_proto_jobspec_view_release(struct gs_proto_jobspec_view *v)
{
    for (size_t i = 0; v->env_keys != NULL && v->env_keys[i] != NULL; i++)
        free(v->env_keys[i]);
    free(v->env_keys);
    free(v->env);
    free(v->env_ptrs);
    free(v->deps);
    free(v->dep_ptrs);
    free(v->het);
    free(v->het_ptrs);
    free(v->licenses);
    free(v->license_ptrs);
    free(v->rlimits);
    free(v->rlimit_ptrs);
    memset(v, 0, sizeof(*v));
}

/* Optional strings: "" on the wire is "not set" here. */
static int copy_opt(const char *s, char **out)
{
    if (s == NULL || s[0] == '\0')
        return 0;
    *out = strdup(s);
    return *out != NULL ? 0 : -ENOMEM;
}

static int copy_argv(const Gs__RunSpec *run, struct gs_jobspec *spec)
{
    if (run->n_argv == 0)
        return 0;
    spec->argv = calloc(run->n_argv + 1, sizeof(char *));
    if (spec->argv == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < run->n_argv; i++) {
        spec->argv[i] = strdup(or_empty(run->argv[i]));
        if (spec->argv[i] == NULL)
            return -ENOMEM;
    }
    spec->argc = run->n_argv;
    return 0;
}

static int copy_env(const Gs__RunSpec *run, struct gs_jobspec *spec)
{
    spec->env = calloc(run->n_env + 1, sizeof(char *));
    if (spec->env == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < run->n_env; i++) {
        const char *k = or_empty(run->env[i]->key), *v = or_empty(run->env[i]->value);
        size_t len = strlen(k) + strlen(v) + 2;

        spec->env[i] = malloc(len);
        if (spec->env[i] == NULL)
            return -ENOMEM;
        memcpy(spec->env[i], k, strlen(k));
        spec->env[i][strlen(k)] = '=';
        memcpy(spec->env[i] + strlen(k) + 1, v, strlen(v) + 1);
        spec->nenv = i + 1;
    }
    return 0;
}

static int copy_deps(const Gs__JobSpec *pb, struct gs_jobspec *spec, struct gs_error *err)
{
    spec->deps = calloc(pb->n_depends_on + 1, sizeof(*spec->deps));
    if (spec->deps == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < pb->n_depends_on; i++) {
        int64_t type = (int64_t)pb->depends_on[i]->type - 1; /* the wire's: any int32 */

        if (type < GS_DEP_AFTER || type > GS_DEP_AFTERCORR)
            return gs_error_set(err, -EINVAL, 0, 0, "depends_on[%zu] has no valid type", i);
        if ((unsigned)pb->depends_on[i]->target > GS_DEP_ARRAY)
            return gs_error_set(err, -EINVAL, 0, 0, "depends_on[%zu] has no valid target", i);
        spec->deps[i].type = (enum gs_dep_type)type;
        spec->deps[i].job_id = pb->depends_on[i]->job_id;
        spec->deps[i].delay_min = pb->depends_on[i]->delay_min;
        spec->deps[i].target = (enum gs_dep_target)pb->depends_on[i]->target;
        spec->deps[i].task_id = pb->depends_on[i]->task_id;
        spec->ndeps = i + 1;
    }
    return 0;
}

static void copy_resources(const Gs__Resources *r, struct gs_jobspec *spec)
{
    spec->nodes = r->nodes;
    spec->gpus_per_node = r->gpus_per_node;
    spec->cpus_per_gpu = r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_GPU ? r->cpus_per_gpu : 0;
    spec->cpus_per_task = r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_TASK ? r->cpus_per_task
                          : r->cpus_case == GS__RESOURCES__CPUS__NOT_SET    ? 1
                                                                            : 0;
    spec->mem_per_node_mib = r->mem_per_node_mib;
    spec->tmp_per_node_mib = r->tmp_per_node_mib;
    spec->min_cpus_per_node = r->min_cpus_per_node;
    spec->overcommit = r->overcommit;
    spec->time_limit_s = r->time_limit_s == 0 ? GS_DURATION_INFINITE : r->time_limit_s;
    spec->exclusive = r->exclusive;
    spec->ntasks = r->ntasks;
    spec->time_min_s = r->time_min_s;
    spec->gpus_per_task = r->gpus_per_task;
}

static int copy_strv(char **in, size_t n, char ***out, size_t *ret_n)
{
    if (n == 0)
        return 0;
    *out = calloc(n + 1, sizeof(char *));
    if (*out == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        (*out)[i] = strdup(or_empty(in[i]));
        if ((*out)[i] == NULL)
            return -ENOMEM;
        *ret_n = i + 1;
    }
    return 0;
}

static int copy_array(const Gs__ArraySpec *pb, struct gs_job_array *a)
{
    if (pb == NULL)
        return 0;
    a->throttle = pb->throttle;
    a->array_job_id = pb->array_job_id;
    a->task_id = pb->task_id;
    a->count = pb->task_count;
    a->min = pb->task_min;
    a->max = pb->task_max;
    a->step = pb->task_step;
    if (pb->n_task_ids == 0)
        return 0;
    a->task_ids = malloc(pb->n_task_ids * sizeof(*a->task_ids));
    if (a->task_ids == NULL)
        return -ENOMEM;
    memcpy(a->task_ids, pb->task_ids, pb->n_task_ids * sizeof(*a->task_ids));
    a->ntask_ids = pb->n_task_ids;
    return 0;
}

/* [data], as the CLI resolved it. A dataset id that is not 32 hex digits fails the check. */
static int copy_data(const Gs__JobData *pb, struct gs_jobdata *d)
{
    if (pb == NULL || pb->dataset == NULL || pb->dataset[0] == '\0')
        return 0;
    snprintf(d->id, sizeof(d->id), "%s", pb->dataset);
    if (strlen(pb->dataset) >= sizeof(d->id))
        d->id[0] = 'x'; /* too long: not an id, which gs_jobdata_check says */
    d->stage = (enum gs_data_stage)pb->stage;
    d->shards = pb->shards;
    d->bytes = pb->bytes;
    d->tolerance = pb->tolerance;
    d->seed = pb->seed;
    d->locality_wait_set = pb->locality_wait_set;
    d->locality_wait_s = pb->locality_wait_s;
    return copy_opt(pb->source, &d->source);
}

/* A heterogeneous job's further components; gs_jobspec_check judges them. */
static int copy_het(const Gs__JobSpec *pb, struct gs_jobspec *spec, struct gs_error *err)
{
    if (pb->n_het == 0)
        return 0;
    if (pb->n_het >= GS_JOBSPEC_HET_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "a heterogeneous job has at most %d components",
                            GS_JOBSPEC_HET_MAX);
    spec->het = calloc(pb->n_het, sizeof(*spec->het));
    if (spec->het == NULL)
        return -ENOMEM;
    spec->nhet = (uint32_t)pb->n_het;
    for (size_t k = 0; k < pb->n_het; k++) {
        const Gs__HetComponent *h = pb->het[k];
        struct gs_het_component *c = &spec->het[k];

        c->nodes = h->nodes;
        c->gpus_per_node = h->gpus_per_node;
        c->cpus_per_gpu =
            h->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_GPU ? h->cpus_per_gpu : 0;
        c->cpus_per_task = h->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_TASK ? h->cpus_per_task
                           : h->cpus_case == GS__HET_COMPONENT__CPUS__NOT_SET    ? 1
                                                                                 : 0;
        c->mem_per_node_mib = h->mem_per_node_mib;
        c->tasks_per_node = h->tasks_per_node;
        c->tasks_per_gpu = h->tasks_per_gpu;
        c->ntasks = h->ntasks;
        c->gpus_per_task = h->gpus_per_task;
        if (copy_opt(h->constraint, &c->constraint) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Checked with the rest of the spec (gs_jobspec_check). */
static int copy_licenses(const Gs__JobSpec *pb, struct gs_jobspec *spec)
{
    if (pb->n_licenses == 0)
        return 0;
    spec->licenses = calloc(pb->n_licenses, sizeof(*spec->licenses));
    if (spec->licenses == NULL)
        return -ENOMEM;
    spec->nlicenses = pb->n_licenses;
    for (size_t i = 0; i < pb->n_licenses; i++) {
        spec->licenses[i].name = strdup(pb->licenses[i]->name);
        spec->licenses[i].count = pb->licenses[i]->count;
        if (spec->licenses[i].name == NULL)
            return -ENOMEM;
    }
    return 0;
}

/* Slurm's names only (common/rlimit_names.h). */
static int copy_rlimits(const Gs__RunSpec *run, struct gs_jobspec *spec, struct gs_error *err)
{
    if (run->n_rlimits == 0)
        return 0;
    if (run->n_rlimits > GS_RLIMIT_COUNT)
        return gs_error_set(err, -EINVAL, 0, 0, "run.rlimits: more than %d limits",
                            GS_RLIMIT_COUNT);
    spec->rlimits = calloc(run->n_rlimits, sizeof(*spec->rlimits));
    if (spec->rlimits == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < run->n_rlimits; i++) {
        const char *name = run->rlimits[i]->name;

        if (gs_rlimit_resource(name) < 0 || strlen(name) >= sizeof(spec->rlimits[i].name))
            return gs_error_set(err, -EINVAL, 0, 0, "run.rlimits: '%.20s' is no limit's name",
                                name);
        snprintf(spec->rlimits[i].name, sizeof(spec->rlimits[i].name), "%s", name);
        spec->rlimits[i].soft = run->rlimits[i]->soft;
        spec->nrlimits++;
    }
    return 0;
}

/* The fields sbatch jobs have (partition to comment, reservation: job files' too). */
static int copy_slurm(const Gs__JobSpec *pb, struct gs_jobspec *spec)
{
    const Gs__Resources *r = pb->resources;
    const Gs__RunSpec *run = pb->run;
    int rc;

    spec->batch = run->batch;
    /* The numbers are the same; one this side does not know fails gs_jobspec_check. */
    spec->launcher = (enum gs_launcher)run->launcher;
    spec->slurm = run->slurm;
    spec->allocation = run->allocation;
    spec->warn_signal = run->warn_signal;
    spec->warn_before_s = run->warn_before_s;
    spec->warn_batch_only = run->warn_batch_only;
    spec->depends_any = pb->depends_any;
    spec->singleton = pb->singleton;
    spec->kill_invalid_dep = (enum gs_kill_invalid_dep)pb->kill_on_invalid_dep;
    spec->no_kill = pb->no_kill;
    spec->mail_types = pb->mail_types;
    rc = copy_opt(r->partition, &spec->partition);
    if (rc == 0)
        rc = copy_opt(pb->mail_user, &spec->mail_user);
    if (rc == 0)
        rc = copy_opt(pb->account, &spec->account);
    if (rc == 0)
        rc = copy_opt(pb->qos, &spec->qos);
    if (rc == 0)
        rc = copy_opt(pb->comment, &spec->comment);
    if (rc == 0)
        rc = copy_opt(pb->wckey, &spec->wckey);
    if (rc == 0)
        rc = copy_opt(pb->clusters, &spec->clusters);
    if (rc == 0)
        rc = copy_opt(pb->reservation, &spec->reservation);
    if (rc == 0)
        rc = copy_opt(pb->source, &spec->source);
    if (rc == 0)
        rc = copy_opt(run->submit_dir, &spec->submit_dir);
    if (rc == 0)
        rc = copy_opt(run->submit_host, &spec->submit_host);
    if (rc == 0)
        rc = copy_strv(r->nodelist, r->n_nodelist, &spec->nodelist, &spec->nnodelist);
    if (rc == 0)
        rc = copy_strv(r->exclude, r->n_exclude, &spec->exclude, &spec->nexclude);
    if (rc == 0)
        rc = copy_array(pb->array, &spec->array);
    if (rc == 0)
        rc = copy_data(pb->data, &spec->data);
    return rc;
}

static int copy_all(const Gs__JobSpec *pb, struct gs_jobspec *spec, struct gs_error *err)
{
    const Gs__RunSpec *run = pb->run;
    int rc;

    if (pb->resources == NULL || run == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "job spec lacks %s",
                            pb->resources == NULL ? "resources" : "run");
    spec->priority = pb->priority;
    spec->nice = pb->nice;
    spec->begin_ms = pb->begin_time_ms;
    spec->deadline_ms = pb->deadline_ms;
    spec->hold = pb->hold;
    spec->max_restarts = pb->max_restarts;
    spec->gpu_affinity = (enum gs_gpu_affinity)pb->gpu_affinity;
    spec->switches = pb->switches;
    spec->switch_wait_set = pb->switch_wait_set;
    spec->switch_wait_s = pb->switch_wait_s;
    copy_resources(pb->resources, spec);
    spec->tasks_per_node = run->tasks_per_node;
    spec->tasks_per_gpu = run->tasks_per_gpu;
    spec->truncate_output = run->truncate_output;
    rc = copy_opt(pb->name, &spec->name);
    if (rc == 0)
        rc = copy_opt(pb->resources->constraint, &spec->constraint);
    if (rc == 0)
        rc = copy_opt(pb->resources->prefer, &spec->prefer);
    if (rc == 0)
        rc = copy_opt(run->script, &spec->script);
    if (rc == 0)
        rc = copy_opt(run->workdir, &spec->workdir);
    if (rc == 0)
        rc = copy_opt(run->stdout_pattern, &spec->stdout_pattern);
    if (rc == 0)
        rc = copy_opt(run->stderr_pattern, &spec->stderr_pattern);
    if (rc == 0)
        rc = copy_opt(run->stdin_pattern, &spec->stdin_pattern);
    spec->threads_per_core = run->threads_per_core;
    if (rc == 0)
        rc = copy_argv(run, spec);
    if (rc == 0)
        rc = copy_env(run, spec);
    if (rc == 0)
        rc = copy_deps(pb, spec, err);
    if (rc == 0)
        rc = copy_slurm(pb, spec);
    if (rc == 0)
        rc = copy_het(pb, spec, err);
    if (rc == 0)
        rc = copy_licenses(pb, spec);
    if (rc == 0)
        rc = copy_rlimits(run, spec, err);
    if (rc == -ENOMEM)
        gs_error_set(err, rc, 0, 0, "out of memory");
    return rc;
}

int gs_proto_jobspec_from_pb(const Gs__JobSpec *pb, struct gs_jobspec **ret_spec,
                             struct gs_error *err)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    int rc;

    if (spec == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    /* gs_jobspec_new() sets defaults; the wire says everything explicitly. */
    spec->nodes = 0;
    spec->tasks_per_node = 0;
    rc = copy_all(pb, spec, err);
    if (rc == 0)
        rc = gs_jobspec_check(spec, err);
    if (rc < 0) {
        gs_jobspec_free(spec);
        return rc;
    }
    *ret_spec = spec;
    return 0;
}
