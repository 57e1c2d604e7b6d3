/*
 * job_json.c: JSON writers for the job messages (see job_json.h). Every field of each
 * message is written, including zero values, so that programs never have to know proto3's
 * "absent means default" rule.
 */
#include "cli/job_json.h"

#include <errno.h>

#include "cli/job_print.h"
#include "cli/usage_print.h"
#include "common/jobspec_mail.h"

static void json_u32_array(struct gs_json *j, const char *key, const uint32_t *v, size_t n)
{
    gs_json_key(j, key);
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++)
        gs_json_uint(j, v[i]);
    gs_json_array_end(j);
}

/* The dataset it reads ([data]), or null. */
static void json_data(struct gs_json *j, const Gs__JobData *d)
{
    gs_json_key(j, "data");
    if (d == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_string(j, "dataset", d->dataset);
    gs_json_kv_string(j, "source", d->source);
    gs_json_kv_string(j, "stage",
                      d->stage == GS__DATA_STAGE__DATA_STAGE_STREAM ? "stream" : "before");
    gs_json_kv_uint(j, "shards", d->shards);
    gs_json_kv_uint(j, "bytes", d->bytes);
    gs_json_key(j, "tolerance");
    gs_json_double(j, d->tolerance);
    gs_json_kv_uint(j, "seed", d->seed);
    gs_json_key(j, "locality_wait_s"); /* null: the scheduler's */
    if (d->locality_wait_set)
        gs_json_uint(j, d->locality_wait_s);
    else
        gs_json_null(j);
    gs_json_object_end(j);
}

static void json_user(struct gs_json *j, const Gs__UserIdentity *u)
{
    gs_json_key(j, "user");
    if (u == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "uid", u->uid);
    gs_json_kv_uint(j, "gid", u->gid);
    gs_json_kv_string(j, "username", u->username);
    json_u32_array(j, "groups", u->groups, u->n_groups);
    gs_json_object_end(j);
}

static void json_strings(struct gs_json *j, const char *key, char *const *v, size_t n)
{
    gs_json_key(j, key);
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++)
        gs_json_string(j, v[i]);
    gs_json_array_end(j);
}

static void json_resources(struct gs_json *j, const Gs__Resources *r)
{
    gs_json_key(j, "resources");
    if (r == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "nodes", r->nodes);
    gs_json_kv_uint(j, "gpus_per_node", r->gpus_per_node);
    /* A oneof: only the member that is set, as the proto's JSON mapping does. */
    if (r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_GPU)
        gs_json_kv_uint(j, "cpus_per_gpu", r->cpus_per_gpu);
    else if (r->cpus_case == GS__RESOURCES__CPUS_CPUS_PER_TASK)
        gs_json_kv_uint(j, "cpus_per_task", r->cpus_per_task);
    gs_json_kv_uint(j, "mem_per_node_mib", r->mem_per_node_mib);
    if (r->tmp_per_node_mib > 0)
        gs_json_kv_uint(j, "tmp_per_node_mib", r->tmp_per_node_mib);
    if (r->min_cpus_per_node > 0)
        gs_json_kv_uint(j, "min_cpus_per_node", r->min_cpus_per_node);
    if (r->overcommit)
        gs_json_kv_bool(j, "overcommit", true);
    gs_json_kv_uint(j, "time_limit_s", r->time_limit_s);
    gs_json_kv_bool(j, "exclusive", r->exclusive);
    gs_json_kv_string(j, "constraint", r->constraint);
    if (r->prefer != NULL && r->prefer[0] != '\0')
        gs_json_kv_string(j, "prefer", r->prefer);
    gs_json_kv_uint(j, "ntasks", r->ntasks);
    gs_json_kv_string(j, "partition", r->partition);
    json_strings(j, "nodelist", r->nodelist, r->n_nodelist);
    json_strings(j, "exclude", r->exclude, r->n_exclude);
    gs_json_kv_uint(j, "time_min_s", r->time_min_s);
    gs_json_kv_uint(j, "gpus_per_task", r->gpus_per_task);
    gs_json_object_end(j);
}

/* "mail_type": "END,FAIL" ("NONE"), "mail_user": the address ("": the job's user). */
static void json_mail(struct gs_json *j, const Gs__JobSpec *s)
{
    struct gs_buf types = GS_BUF_INIT;

    gs_mail_types_format(s->mail_types, &types);
    gs_json_kv_string(j, "mail_type", types.data != NULL ? types.data : "NONE");
    gs_json_kv_string(j, "mail_user", s->mail_user);
    gs_buf_release(&types);
}

/* "licenses": {"matlab": 2, ...}, empty without any; null without a spec. */
static void json_licenses(struct gs_json *j, const Gs__JobSpec *s)
{
    gs_json_key(j, "licenses");
    if (s == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    for (size_t i = 0; i < s->n_licenses; i++)
        gs_json_kv_uint(j, s->licenses[i]->name, s->licenses[i]->count);
    gs_json_object_end(j);
}

static void json_allocation(struct gs_json *j, Gs__NodeAllocation *const *alloc, size_t n)
{
    gs_json_key(j, "allocation");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        const Gs__NodeAllocation *a = alloc[i];

        gs_json_object_begin(j);
        gs_json_kv_string(j, "node_name", a->node_name);
        gs_json_kv_string(j, "address", a->address);
        json_u32_array(j, "gpus", a->gpus, a->n_gpus);
        json_u32_array(j, "cores", a->cores, a->n_cores);
        gs_json_kv_uint(j, "mem_mib", a->mem_mib);
        gs_json_kv_uint(j, "first_rank", a->first_rank);
        gs_json_kv_uint(j, "ntasks", a->ntasks);
        gs_json_kv_string(j, "gpu_link", a->gpu_link);
        gs_json_kv_uint(j, "gpu_score", a->gpu_score);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

static const char *dependency_type_name(Gs__DependencyType t)
{
    switch (t) {
    case GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTER:
        return "AFTER";
    case GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTEROK:
        return "AFTEROK";
    case GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTERNOTOK:
        return "AFTERNOTOK";
    case GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTERANY:
        return "AFTERANY";
    case GS__DEPENDENCY_TYPE__DEPENDENCY_TYPE_AFTERCORR:
        return "AFTERCORR";
    default:
        return "UNSPECIFIED";
    }
}

static void json_deps(struct gs_json *j, Gs__Dependency *const *deps, size_t n)
{
    gs_json_key(j, "depends_on");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        gs_json_object_begin(j);
        gs_json_kv_string(j, "type", dependency_type_name(deps[i]->type));
        gs_json_kv_uint(j, "job_id", deps[i]->job_id);
        if (deps[i]->target == GS__DEPENDENCY_TARGET__DEPENDENCY_TARGET_TASK)
            gs_json_kv_uint(j, "task_id", deps[i]->task_id);
        else if (deps[i]->target == GS__DEPENDENCY_TARGET__DEPENDENCY_TARGET_ARRAY)
            gs_json_kv_string(j, "task_id", "*");
        if (deps[i]->delay_min > 0)
            gs_json_kv_uint(j, "delay_min", deps[i]->delay_min);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

static const char *launcher_name(Gs__Launcher l)
{
    switch (l) {
    case GS__LAUNCHER__LAUNCHER_NONE:
        return "NONE";
    case GS__LAUNCHER__LAUNCHER_MPI:
        return "MPI";
    case GS__LAUNCHER__LAUNCHER_TORCHRUN:
        return "TORCHRUN";
    default:
        return "UNKNOWN";
    }
}

static void json_run(struct gs_json *j, const Gs__RunSpec *r)
{
    gs_json_key(j, "run");
    if (r == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    json_strings(j, "argv", r->argv, r->n_argv);
    gs_json_kv_string(j, "script", r->script);
    gs_json_kv_uint(j, "tasks_per_node", r->tasks_per_node);
    gs_json_kv_bool(j, "tasks_per_gpu", r->tasks_per_gpu);
    gs_json_kv_string(j, "workdir", r->workdir);
    gs_json_kv_string(j, "stdout_pattern", r->stdout_pattern);
    gs_json_kv_string(j, "stderr_pattern", r->stderr_pattern);
    gs_json_kv_bool(j, "truncate_output", r->truncate_output);
    gs_json_kv_bool(j, "batch", r->batch);
    gs_json_kv_bool(j, "slurm", r->slurm);
    gs_json_kv_string(j, "submit_dir", r->submit_dir);
    gs_json_kv_string(j, "submit_host", r->submit_host);
    gs_json_kv_uint(j, "warn_signal", r->warn_signal);
    gs_json_kv_uint(j, "warn_before_s", r->warn_before_s);
    gs_json_kv_bool(j, "warn_batch_only", r->warn_batch_only);
    gs_json_kv_string(j, "launcher", launcher_name(r->launcher));
    gs_json_key(j, "env");
    gs_json_object_begin(j);
    for (size_t i = 0; i < r->n_env; i++)
        gs_json_kv_string(j, r->env[i]->key, r->env[i]->value);
    gs_json_object_end(j);
    gs_json_object_end(j);
}

/* A heterogeneous job's further components, as HetComponent has them (the oneof as above). */
static void json_het(struct gs_json *j, Gs__HetComponent *const *het, size_t n)
{
    gs_json_key(j, "het");
    gs_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        const Gs__HetComponent *c = het[i];

        gs_json_object_begin(j);
        gs_json_kv_uint(j, "nodes", c->nodes);
        gs_json_kv_uint(j, "gpus_per_node", c->gpus_per_node);
        if (c->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_GPU)
            gs_json_kv_uint(j, "cpus_per_gpu", c->cpus_per_gpu);
        else if (c->cpus_case == GS__HET_COMPONENT__CPUS_CPUS_PER_TASK)
            gs_json_kv_uint(j, "cpus_per_task", c->cpus_per_task);
        gs_json_kv_uint(j, "mem_per_node_mib", c->mem_per_node_mib);
        gs_json_kv_string(j, "constraint", c->constraint);
        gs_json_kv_uint(j, "tasks_per_node", c->tasks_per_node);
        gs_json_kv_bool(j, "tasks_per_gpu", c->tasks_per_gpu);
        gs_json_kv_uint(j, "ntasks", c->ntasks);
        gs_json_kv_uint(j, "gpus_per_task", c->gpus_per_task);
        gs_json_object_end(j);
    }
    gs_json_array_end(j);
}

void cli_json_job_spec(struct gs_json *j, const Gs__JobSpec *s)
{
    if (s == NULL) {
        gs_json_null(j);
        return;
    }
    gs_json_object_begin(j);
    gs_json_kv_string(j, "name", s->name);
    json_user(j, s->user);
    gs_json_kv_int(j, "priority", s->priority);
    gs_json_kv_int(j, "nice", s->nice);
    gs_json_kv_bool(j, "hold", s->hold);
    json_deps(j, s->depends_on, s->n_depends_on);
    json_resources(j, s->resources);
    json_run(j, s->run);
    gs_json_kv_uint(j, "max_restarts", s->max_restarts);
    gs_json_kv_string(j, "account", s->account);
    gs_json_kv_string(j, "qos", s->qos);
    gs_json_kv_string(j, "reservation", s->reservation);
    json_licenses(j, s);
    json_mail(j, s);
    gs_json_kv_string(j, "comment", s->comment);
    if (s->wckey != NULL && s->wckey[0] != '\0')
        gs_json_kv_string(j, "wckey", s->wckey);
    if (s->begin_time_ms > 0)
        gs_json_kv_uint(j, "begin_time_ms", s->begin_time_ms);
    if (s->switches > 0) /* --switches=N[@TIME], only when asked */
        gs_json_kv_uint(j, "switches", s->switches);
    if (s->switch_wait_set)
        gs_json_kv_uint(j, "switch_wait_s", s->switch_wait_s);
    gs_json_kv_string(j, "source", s->source);
    json_data(j, s->data);
    gs_json_kv_bool(j, "depends_any", s->depends_any);
    gs_json_kv_bool(j, "singleton", s->singleton);
    gs_json_kv_string(j, "kill_on_invalid_dep",
                      s->kill_on_invalid_dep == GS_KILL_INVALID_DEP_YES  ? "yes"
                      : s->kill_on_invalid_dep == GS_KILL_INVALID_DEP_NO ? "no"
                                                                         : "default");
    gs_json_key(j, "array");
    if (s->array == NULL) {
        gs_json_null(j);
    } else {
        gs_json_object_begin(j);
        json_u32_array(j, "task_ids", s->array->task_ids, s->array->n_task_ids);
        gs_json_kv_uint(j, "throttle", s->array->throttle);
        gs_json_kv_uint(j, "array_job_id", s->array->array_job_id);
        gs_json_kv_uint(j, "task_id", s->array->task_id);
        gs_json_kv_uint(j, "task_count", s->array->task_count);
        gs_json_kv_uint(j, "task_min", s->array->task_min);
        gs_json_kv_uint(j, "task_max", s->array->task_max);
        gs_json_kv_uint(j, "task_step", s->array->task_step);
        gs_json_object_end(j);
    }
    /* Only a heterogeneous job has the key: an ordinary job's JSON stays as it was. */
    if (s->n_het > 0)
        json_het(j, s->het, s->n_het);
    gs_json_object_end(j);
}

/* A step record (sacct --json): Slurm's step id ("batch", "0") and its figures. */
static void json_step(struct gs_json *j, const Gs__StepInfo *st)
{
    char id[16] = "batch";

    if (st->step > 0)
        snprintf(id, sizeof(id), "%u", st->step - 1);
    gs_json_object_begin(j);
    gs_json_kv_string(j, "step_id", id);
    gs_json_kv_string(j, "name", st->name);
    gs_json_kv_string(j, "state", cli_job_state_name(st->state));
    gs_json_kv_bool(j, "signaled", st->signaled);
    gs_json_kv_int(j, "exit_code", st->exit_code);
    gs_json_kv_uint(j, "term_signal", st->term_signal);
    gs_json_kv_uint(j, "start_time_ms", st->start_time_ms);
    gs_json_kv_uint(j, "end_time_ms", st->end_time_ms);
    gs_json_kv_uint(j, "nnodes", st->nnodes);
    gs_json_kv_uint(j, "ntasks", st->ntasks);
    gs_json_kv_string(j, "nodelist", st->nodelist);
    gs_json_kv_uint(j, "max_rss_kib", st->max_rss_kib);
    gs_json_kv_string(j, "max_rss_node", st->max_rss_node);
    gs_json_kv_uint(j, "max_rss_task", st->max_rss_task);
    gs_json_kv_uint(j, "cpu_time_ms", st->cpu_time_ms);
    gs_json_object_end(j);
}

void cli_json_job_info(struct gs_json *j, const Gs__JobInfo *job)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "job_id", job->job_id);
    gs_json_kv_string(j, "name", job->name);
    json_user(j, job->user);
    gs_json_kv_string(j, "state", cli_job_state_name(job->state));
    gs_json_kv_string(j, "reason", job->reason);
    gs_json_kv_int(j, "priority", job->priority);
    gs_json_kv_bool(j, "held", job->held);
    json_resources(j, job->resources);
    gs_json_kv_uint(j, "submit_time_ms", job->submit_time_ms);
    gs_json_kv_uint(j, "start_time_ms", job->start_time_ms);
    gs_json_kv_uint(j, "end_time_ms", job->end_time_ms);
    /* A suspended job's "state" stays the wire's RUNNING: "suspended" says it (1.26). */
    gs_json_kv_bool(j, "suspended", job->suspended);
    gs_json_kv_uint(j, "suspend_time_ms", job->suspend_time_ms);
    gs_json_kv_uint(j, "suspended_ms", job->suspended_ms);
    gs_json_kv_uint(j, "resume_time_ms", job->resume_time_ms);
    gs_json_kv_uint(j, "expected_start_ms", job->expected_start_ms);
    gs_json_kv_string(j, "sched_nodes", job->sched_nodes != NULL ? job->sched_nodes : "");
    gs_json_kv_string(j, "dependency", job->dependency != NULL ? job->dependency : "");
    gs_json_kv_bool(j, "signaled", job->signaled);
    gs_json_kv_int(j, "exit_code", job->exit_code);
    gs_json_kv_uint(j, "term_signal", job->term_signal);
    gs_json_kv_uint(j, "restart_count", job->restart_count);
    gs_json_kv_string(j, "partition", job->partition);
    gs_json_kv_string(j, "account", job->account);
    gs_json_kv_string(j, "qos", job->qos);
    /* The reservation: JobInfo's (1.22), else the spec's; null where neither says. */
    gs_json_kv_string(j, "reservation",
                      job->reservation != NULL && job->reservation[0] != '\0' ? job->reservation
                      : job->spec != NULL ? job->spec->reservation
                                          : NULL);
    gs_json_kv_string(j, "comment", job->comment);
    gs_json_kv_string(j, "command", job->command);
    gs_json_kv_int(j, "nice", job->nice);
    json_licenses(j, job->spec);
    gs_json_kv_uint(j, "array_job_id", job->array_job_id);
    gs_json_kv_uint(j, "array_task_id", job->array_task_id);
    gs_json_kv_uint(j, "ntasks", job->ntasks);
    gs_json_kv_uint(j, "ncpus", job->ncpus);
    gs_json_kv_string(j, "workdir", job->workdir);
    gs_json_kv_string(j, "stdout_path", job->stdout_path);
    gs_json_kv_string(j, "stderr_path", job->stderr_path);
    json_allocation(j, job->allocation, job->n_allocation);
    /* A heterogeneous job's components (component 0 first; allocation in that order). */
    if (job->n_het_nodes > 0) {
        json_u32_array(j, "het_nodes", job->het_nodes, job->n_het_nodes);
        json_u32_array(j, "het_ntasks", job->het_ntasks, job->n_het_ntasks);
    }
    gs_json_key(j, "tokens_per_s");
    gs_json_double(j, job->tokens_per_s);
    gs_json_key(j, "mfu");
    gs_json_double(j, job->mfu);
    cli_usage_json(j, job->usage);
    /* Only sacct asks for the steps (QueueRequest.with_steps); others leave them out. */
    if (job->n_steps > 0) {
        gs_json_key(j, "steps");
        gs_json_array_begin(j);
        for (size_t i = 0; i < job->n_steps; i++)
            json_step(j, job->steps[i]);
        gs_json_array_end(j);
    }
    /* Only ShowReply carries the spec; queue listings leave it out rather than null. */
    if (job->spec != NULL) {
        gs_json_key(j, "spec");
        cli_json_job_spec(j, job->spec);
    }
    gs_json_object_end(j);
}

void cli_json_state_change(struct gs_json *j, const Gs__JobStateChange *c)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "job_id", c->job_id);
    gs_json_kv_string(j, "state", cli_job_state_name(c->state));
    gs_json_kv_string(j, "previous", cli_job_state_name(c->previous));
    gs_json_kv_string(j, "reason", c->reason);
    gs_json_kv_bool(j, "signaled", c->signaled);
    gs_json_kv_int(j, "exit_code", c->exit_code);
    gs_json_kv_uint(j, "term_signal", c->term_signal);
    gs_json_kv_uint(j, "changed_at_ms", c->changed_at_ms);
    gs_json_kv_uint(j, "submit_time_ms", c->submit_time_ms);
    gs_json_kv_uint(j, "start_time_ms", c->start_time_ms);
    gs_json_kv_uint(j, "end_time_ms", c->end_time_ms);
    gs_json_kv_uint(j, "restart_count", c->restart_count);
    /* As a JobInfo's: "state" stays the wire's RUNNING (1.26). */
    gs_json_kv_bool(j, "suspended", c->suspended);
    gs_json_kv_uint(j, "suspend_time_ms", c->suspend_time_ms);
    gs_json_kv_uint(j, "suspended_ms", c->suspended_ms);
    gs_json_object_end(j);
}

void cli_json_task_exit(struct gs_json *j, const Gs__TaskExit *t)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "job_id", t->job_id);
    gs_json_kv_uint(j, "rank", t->rank);
    gs_json_kv_string(j, "node_name", t->node_name);
    gs_json_kv_bool(j, "signaled", t->signaled);
    gs_json_kv_int(j, "exit_code", t->exit_code);
    gs_json_kv_uint(j, "term_signal", t->term_signal);
    gs_json_kv_string(j, "end_reason", cli_end_reason_name(t->end_reason));
    gs_json_kv_uint(j, "start_time_ms", t->start_time_ms);
    gs_json_kv_uint(j, "end_time_ms", t->end_time_ms);
    gs_json_kv_uint(j, "attempt", t->attempt);
    gs_json_kv_string(j, "launch_error", t->launch_error);
    gs_json_object_end(j);
}

void cli_json_action_result(struct gs_json *j, const Gs__JobActionResult *r)
{
    gs_json_object_begin(j);
    gs_json_kv_uint(j, "job_id", r->job_id);
    gs_json_kv_int(j, "code", r->code);
    gs_json_kv_string(j, "message", r->message);
    gs_json_kv_string(j, "state", cli_job_state_name(r->state));
    gs_json_object_end(j);
}

int cli_json_write(struct gs_json *j, struct gs_buf *out, FILE *f)
{
    int rc = gs_json_finish(j);

    if (rc == 0)
        rc = gs_buf_putc(out, '\n');
    if (rc == 0 && (fwrite(out->data, 1, out->len, f) != out->len || fflush(f) != 0))
        rc = -EIO;
    gs_buf_reset(out);
    return rc;
}
