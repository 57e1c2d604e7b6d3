/*
 * sched_submit.c: a SubmitRequest from the CLI, admitted or refused before anything is
 * stored. The spec is checked against the cluster (a request no node could ever hold is
 * refused naming the job-file field, which the CLI turns into file:line:col), the submit
 * limit and the client's retry key; an array becomes one job per element. The jobs join
 * the table, and the CLI hears its job id, only once their rows are on disk.
 */
#define _GNU_SOURCE /* getpwuid_r */

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/features.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "proto/jobspec.h"
#include "scheduler/license.h"
#include "scheduler/planner.h"
#include "scheduler/sched_internal.h"

struct submit_op {
    struct sched_cli *cli;
    uint64_t request_id;
    struct sched_job *drafts; /* what is being stored; specs owned until they join the table */
    size_t ndrafts;           /* more than one for an array: one job per element */
};

/*
 * sbatch --test-only: the job is not stored; the answer says when and where it would start
 * if it were (sched_engine_will_run; an array's first element). Takes spec. Out of memory
 * costs the estimate, not the answer.
 */
static void test_only_reply(struct sched_ctx *s, struct sched_cli *c, uint64_t request_id,
                            struct gs_jobspec *spec, const char *user)
{
    uint32_t array_size = (uint32_t)spec->array.ntask_ids;
    struct sched_job *draft = sched_job_detached_new(s->next_job_id, spec, gs_clock_wall_ms());
    struct sched_will_run w = {0};
    struct gs_buf nodes = GS_BUF_INIT;
    const char **names = NULL;

    sched_cli_hold(c);
    if (draft == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", true);
        return;
    }
    draft->uid = c->uid;
    draft->gid = c->gid;
    snprintf(draft->user, sizeof(draft->user), "%s", user);
    if (sched_engine_will_run(s, draft, &w) < 0)
        snprintf(w.reason, sizeof(w.reason), "no estimate: the scheduler is out of memory");
    if (w.nnodes > 0 && (names = calloc(w.nnodes, sizeof(*names))) != NULL) {
        for (uint32_t k = 0; k < w.nnodes; k++)
            names[k] = sched_cluster_node_name(s->cluster, w.nodes[k]);
        if (gs_hostlist_compress(names, w.nnodes, &nodes) < 0)
            gs_buf_release(&nodes);
    }
    GS_LOG(GS_LOG_DEBUG, "uid=%u start_ms=%llu nodes=%s reason=\"%s\" test-only estimate",
           (unsigned)c->uid, (unsigned long long)w.start_ms, nodes.data != NULL ? nodes.data : "",
           w.reason);
    sched_cli_test_reply(c, request_id, array_size, draft->spec->partition, &w,
                         nodes.data != NULL ? nodes.data : "");
    free(names);
    gs_buf_release(&nodes);
    sched_will_run_release(&w);
    sched_job_detached_free(draft);
}

static void submit_op_free(struct submit_op *op)
{
    for (size_t i = 0; op != NULL && i < op->ndrafts; i++) {
        gs_jobspec_free(op->drafts[i].spec);
        free(op->drafts[i].submit_key);
    }
    if (op != NULL)
        free(op->drafts);
    free(op);
}

static void submit_stored(struct sched_ctx *s, int status, void *arg)
{
    struct submit_op *op = arg;
    struct sched_job *job;
    char msg[160];

    if (status < 0) {
        sched_keys_unclaim(s, &op->drafts[0]);
        snprintf(msg, sizeof(msg), "job not stored: %s", gs_strerror(status));
        sched_cli_error(op->cli, op->request_id, status, msg, true);
        goto out;
    }
    for (size_t i = 0; i < op->ndrafts; i++) {
        struct sched_job *d = &op->drafts[i];

        job = sched_jobs_add(s->jobs, d->id, d->spec, d->submit_ms);
        d->spec = NULL; /* the table's now, also on failure */
        if (job == NULL) {
            sched_cli_error(op->cli, op->request_id, -ENOMEM, "out of memory", true);
            goto out;
        }
        s->stats.jobs_submitted++;
        job->submit_key = d->submit_key; /* the job's now */
        d->submit_key = NULL;
        job->uid = d->uid;
        job->gid = d->gid;
        memcpy(job->user, d->user, sizeof(job->user));
        sched_policy_job_added(s, job);
        sched_job_note(job, d->submit_ms, SCHED_JOB_PENDING,
                       job->held ? "submitted held" : "submitted");
        GS_LOG(GS_LOG_INFO, "job=%llu uid=%u name=%s job submitted", (unsigned long long)job->id,
               job->uid, job->spec->name);
    }
    job = sched_jobs_find(s->jobs, op->drafts[0].id);
    sched_cli_submit_reply(
        op->cli, op->request_id, op->drafts[0].id,
        op->ndrafts > 1 || job->spec->array.array_job_id != 0 ? (uint32_t)op->ndrafts : 0,
        job->spec->partition);
    sched_engine_wake(s);
out:
    submit_op_free(op);
}

/* A copy of spec through the wire form, which every field already round-trips. */
static int spec_copy(const struct gs_jobspec *spec, struct gs_jobspec **ret)
{
    struct gs_proto_jobspec_view view;
    struct gs_error err;
    int rc = gs_proto_jobspec_view_init(&view, spec);

    if (rc < 0)
        return rc;
    rc = gs_proto_jobspec_from_pb(&view.spec, ret, &err);
    gs_proto_jobspec_view_release(&view);
    return rc;
}

/*
 * One spec per array element: array_job_id the first element's id, its own task id, the
 * summary Slurm exports (count, min, max, and the step when the ids are evenly spaced).
 */
static int array_specs(const struct gs_jobspec *spec, uint64_t first_id, struct sched_job *drafts)
{
    const struct gs_job_array *a = &spec->array;
    uint32_t step = a->ntask_ids > 1 ? a->task_ids[1] - a->task_ids[0] : 1;

    for (size_t i = 2; i < a->ntask_ids; i++) {
        if (a->task_ids[i] - a->task_ids[i - 1] != step)
            step = 1;
    }
    for (size_t i = 0; i < a->ntask_ids; i++) {
        struct gs_jobspec *e;
        int rc = spec_copy(spec, &e);

        if (rc < 0)
            return rc;
        free(e->array.task_ids);
        e->array.task_ids = NULL;
        e->array.ntask_ids = 0;
        e->array.array_job_id = first_id;
        e->array.task_id = a->task_ids[i];
        e->array.count = (uint32_t)a->ntask_ids;
        e->array.min = a->task_ids[0];
        e->array.max = a->task_ids[a->ntask_ids - 1];
        e->array.step = step;
        drafts[i].spec = e;
    }
    return 0;
}

void sched_user_name(uid_t uid, char *out, size_t size)
{
    struct passwd pw, *found = NULL;
    char buf[4096];

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(out, size, "%s", found->pw_name);
    else
        snprintf(out, size, "%u", (unsigned)uid);
}

static bool could_fit(struct sched_ctx *s, const struct sched_req *req)
{
    char unused[8];

    return sched_cluster_could_ever_fit(s->cluster, req, unused, sizeof(unused));
}

/* The largest GPU count, core count and memory any node has. */
static void largest_node(struct sched_ctx *s, uint32_t *gpus, uint32_t *cores, uint64_t *mem)
{
    *gpus = *cores = 0;
    *mem = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        uint32_t ng = (uint32_t)s->nodes[i]->topology->n_gpus;
        uint32_t nc = s->nodes[i]->topology->cores;

        *gpus = ng > *gpus ? ng : *gpus;
        *cores = nc > *cores ? nc : *cores;
        *mem = s->nodes[i]->topology->memory_mib > *mem ? s->nodes[i]->topology->memory_mib : *mem;
    }
}

/*
 * Why req is impossible, naming the job-file field it is about so that `gsched submit` can
 * point at its line: each per-node need alone on one node, then the node count.
 */
static void unfit_reason(struct sched_ctx *s, const struct gs_jobspec *spec,
                         const struct sched_req *req, const char *fallback, char *why, size_t size)
{
    struct sched_req one = *req, t;
    uint32_t gpus, cores;
    uint64_t mem;

    largest_node(s, &gpus, &cores, &mem);
    one.nodes = 1;
    t = (struct sched_req){.nodes = 1, .gpus_per_node = req->gpus_per_node, .cores_per_node = 1};
    if (!could_fit(s, &t)) {
        snprintf(why, size, "resources.gpus_per_node: no node has %u GPUs (the most is %u)",
                 req->gpus_per_node, gpus);
        return;
    }
    t = (struct sched_req){.nodes = 1, .cores_per_node = 1, .constraint = req->constraint};
    if (!could_fit(s, &t)) {
        snprintf(why, size,
                 gs_features_single(req->constraint)
                     ? "resources.constraint: no node has the feature '%s'"
                     : "resources.constraint: no node has the features '%s' asks for",
                 req->constraint);
        return;
    }
    t = (struct sched_req){.nodes = 1, .cores_per_node = req->cores_per_node};
    if (!could_fit(s, &t)) {
        snprintf(why, size, "%s: the job needs %u cores per node; no node has more than %u",
                 spec->min_cpus_per_node == req->cores_per_node ? "resources.min_cpus_per_node"
                 : spec->cpus_per_gpu > 0                       ? "resources.cpus_per_gpu"
                 : spec->cpus_per_task > 1                      ? "resources.cpus_per_task"
                                                                : "run.tasks_per_node",
                 req->cores_per_node, cores);
        return;
    }
    t = (struct sched_req){
        .nodes = 1, .cores_per_node = 1, .mem_per_node_mib = req->mem_per_node_mib};
    if (!could_fit(s, &t)) {
        snprintf(why, size, "resources.mem_per_node: no node has %llu MiB (the most is %llu)",
                 (unsigned long long)req->mem_per_node_mib, (unsigned long long)mem);
        return;
    }
    if (could_fit(s, &one)) {
        snprintf(why, size, "resources.nodes: %s", fallback);
        return;
    }
    snprintf(why, size, "resources: %s", fallback);
}

/* sbatch -M: one of the clusters it names must be this one. */
static int clusters_admit(const struct sched_ctx *s, const struct gs_jobspec *spec, char *why,
                          size_t size)
{
    const char *mine = s->cfg->cluster_name != NULL ? s->cfg->cluster_name : "gsched";

    if (spec->clusters == NULL || spec->clusters[0] == '\0')
        return 0;
    for (const char *p = spec->clusters; *p != '\0';) {
        size_t len = strcspn(p, ",");

        if (len == strlen(mine) && strncmp(p, mine, len) == 0)
            return 0;
        p += len + (p[len] == ',');
    }
    snprintf(why, size, "clusters: no cluster '%.60s' here (this one is '%.60s')", spec->clusters,
             mine);
    return -EINVAL;
}

/* sbatch --tmp more than any node's TmpDisk: said as such, before the masks leave no node. */
static int tmp_admit(struct sched_ctx *s, const struct gs_jobspec *spec, char *why, size_t size)
{
    uint64_t most = 0;

    if (spec->tmp_per_node_mib == 0)
        return 0;
    for (size_t i = 0; i < s->nnodes; i++)
        if (s->nodes[i]->topology->tmp_disk_mib > most)
            most = s->nodes[i]->topology->tmp_disk_mib;
    if (most >= spec->tmp_per_node_mib)
        return 0;
    snprintf(why, size,
             "resources.tmp_per_node: no node has %llu MiB of temporary disk (TmpDisk, the "
             "size of its worker.tmp_fs; the most is %llu)",
             (unsigned long long)spec->tmp_per_node_mib, (unsigned long long)most);
    return -EINVAL;
}

/*
 * Cluster-dependent checks a job file cannot make by itself. The reason starts with the
 * job-file field it is about ("resources.gpus_per_node: ..."), which the CLI turns into
 * the field's file:line:col.
 */
static int admit(struct sched_ctx *s, struct gs_jobspec *spec, char *why, size_t size)
{
    int rc;

    for (size_t i = 0; i < spec->ndeps; i++) {
        char dep[100];

        if (sched_jobs_dep_check(s->jobs, &spec->deps[i], dep, sizeof(dep)) < 0) {
            snprintf(why, size, "depends_on: %s", dep);
            return -EINVAL;
        }
    }
    if (sched_cluster_nnodes(s->cluster) == 0) {
        snprintf(why, size, "the cluster has no nodes yet (start a gsched-workerd)");
        return -EAGAIN;
    }
    if (spec->array.ntask_ids > 0 &&
        spec->array.task_ids[spec->array.ntask_ids - 1] >= SCHED_MAX_ARRAY_SIZE) {
        snprintf(why, size, "array: task ids must be below %u (MaxArraySize)",
                 SCHED_MAX_ARRAY_SIZE);
        return -EINVAL;
    }
    rc = sched_slurm_admit(s, spec, why, size);
    if (rc == 0)
        rc = sched_license_admit(s->cfg, spec, why, size);
    if (rc == 0)
        rc = tmp_admit(s, spec, why, size);
    if (rc == 0)
        rc = clusters_admit(s, spec, why, size);
    if (rc < 0)
        return rc;
    return sched_submit_shape_check(s, spec, why, size);
}

int sched_submit_shape_check(struct sched_ctx *s, const struct gs_jobspec *spec, char *why,
                             size_t size)
{
    struct sched_req req;
    struct sched_node_masks masks = {0};
    struct gs_jobspec shape = *spec; /* borrowed fields; --prefer changes where, not whether */
    char fit[200];
    int rc;

    shape.prefer = NULL;
    rc = sched_node_masks_build(s, &shape, &masks);

    if (rc < 0) {
        snprintf(why, size, "out of memory");
        return rc;
    }
    if (sched_job_req_masked(spec, &masks, &req) < 0) {
        snprintf(why, size, "out of memory");
        sched_node_masks_release(&masks);
        return -ENOMEM;
    }
    if (req.nhet > 0 && !sched_cluster_could_ever_fit(s->cluster, &req, fit, sizeof(fit))) {
        snprintf(why, size, "resources: %s", fit); /* names the component */
        rc = -EINVAL;
    } else if (!sched_cluster_could_ever_fit(s->cluster, &req, fit, sizeof(fit))) {
        struct sched_req any = req;

        any.allowed = any.required = NULL;
        any.nrequired = 0;
        if (req.allowed != NULL && could_fit(s, &any))
            snprintf(why, size, "resources: %s", fit); /* its partition or node lists */
        else if (!sched_cluster_could_ever_fit(s->cluster, &any, fit, sizeof(fit)))
            unfit_reason(s, spec, &any, fit, why, size); /* fit now says it without masks */
        else
            unfit_reason(s, spec, &req, fit, why, size);
        rc = -EINVAL;
    }
    sched_node_masks_release(&masks);
    return rc;
}

/* Whether n more jobs would take uid past scheduler.max_submit_jobs jobs pending or running
 * (Slurm's MaxSubmitJobs), saying so in why. Everyone's, root's too. */
static bool over_submit_limit(struct sched_ctx *s, uid_t uid, size_t n, char *why, size_t size)
{
    size_t count = sched_jobs_count(s->jobs), mine = 0;
    uint32_t max = s->cfg->max_submit_jobs;

    if (max == 0)
        return false;
    for (size_t i = s->plan_from; i < count; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        mine += job->uid == (uint32_t)uid && !sched_job_finished(job);
    }
    if (mine + n <= max)
        return false;
    snprintf(
        why, size,
        "uid %u has %zu jobs pending or running; %zu more would pass scheduler.max_submit_jobs "
        "(%u)",
        (unsigned)uid, mine, n, max);
    return true;
}

void sched_submit(struct sched_cli *c, uint64_t request_id, const Gs__SubmitRequest *req)
{
    struct sched_ctx *s = c->s;
    struct gs_jobspec *spec = NULL;
    struct submit_op *op = NULL;
    struct sched_change *ch;
    struct gs_error err;
    char why[256], user[sizeof(((struct sched_job *)0)->user)];
    uint64_t now;
    size_t n;
    int rc;

    gs_error_clear(&err);
    if (req->spec == NULL) {
        sched_cli_error(c, request_id, -EINVAL, "submit without a job spec", false);
        return;
    }
    rc = gs_proto_jobspec_from_pb(req->spec, &spec, &err);
    if (rc < 0) {
        sched_cli_error(c, request_id, rc, err.msg, false);
        return;
    }
    /* Where an array element stands is the scheduler's to say (array_specs): a client's
     * array_job_id and count would be believed, by the planning pass's throttle loop too. */
    spec->array.array_job_id = 0;
    spec->array.task_id = spec->array.count = spec->array.min = spec->array.max = 0;
    spec->array.step = 0;
    spec->allocation = c->salloc != NULL; /* only an AllocRequest makes one (sched_alloc.c) */
    if (spec->source == NULL && req->source_file != NULL && req->source_file[0] != '\0') {
        spec->source = strdup(req->source_file); /* kept for show and scontrol's Command= */
        if (spec->source == NULL)
            goto oom;
    }
    sched_user_name(c->uid, user, sizeof(user));
    rc = admit(s, spec, why, sizeof(why));
    if (rc == 0)
        rc = sched_policy_admit(s, (uint32_t)c->uid, user, spec, why, sizeof(why));
    if (rc == 0) /* after the account's default is set */
        rc = sched_resv_admit(s, (uint32_t)c->uid, user, spec, why, sizeof(why));
    if (rc < 0) {
        sched_cli_error(c, request_id, rc, why, false);
        goto out;
    }
    if (req->validate_only) {
        test_only_reply(s, c, request_id, spec, user);
        spec = NULL; /* the draft's, freed there */
        goto out;
    }
    if (sched_keys_check(c, request_id, req) != 0)
        goto out;
    n = spec->array.ntask_ids > 0 ? spec->array.ntask_ids : 1;
    if (over_submit_limit(s, c->uid, n, why, sizeof(why))) {
        sched_cli_error(c, request_id, -EDQUOT, why, false);
        goto out;
    }
    op = calloc(1, sizeof(*op));
    if (op != NULL)
        op->drafts = calloc(n, sizeof(*op->drafts));
    if (op == NULL || op->drafts == NULL)
        goto oom;
    op->ndrafts = n;
    op->cli = c;
    op->request_id = request_id;
    now = gs_clock_wall_ms();
    if (spec->array.ntask_ids > 0) {
        if (array_specs(spec, s->next_job_id, op->drafts) < 0)
            goto oom;
    } else {
        op->drafts[0].spec = spec;
        spec = NULL; /* the op's now */
    }
    ch = sched_change_new(s);
    for (size_t i = 0; i < n; i++) {
        struct sched_job *d = &op->drafts[i];

        d->id = s->next_job_id++;
        d->uid = c->uid;
        d->gid = c->gid;
        memcpy(d->user, user, sizeof(d->user));
        d->state = SCHED_JOB_PENDING;
        d->held = d->spec->hold;
        d->submit_ms = now;
        /* Out of memory here costs the retry protection of this one submit, not the submit. */
        if (i == 0 && sched_keys_claim(s, d, req->client_key) < 0)
            GS_LOG(GS_LOG_WARN, "job=%llu client key not kept (out of memory)",
                   (unsigned long long)d->id);
        sched_change_job(ch, d);
        sched_change_event(ch, now, d->id, "", "PENDING", d->held ? "submitted held" : "submitted");
    }
    sched_cli_hold(c);
    sched_change_commit(s, ch, submit_stored, op);
    goto out;
oom:
    sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
    submit_op_free(op);
out:
    gs_jobspec_free(spec);
}
