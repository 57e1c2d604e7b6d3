/*
 * sched_query.c: what the CLI reads from gschedd: the queue, one job's details and history,
 * waiting for jobs to start or end, and task output.
 *
 * Queue and show are answered at once from memory. A job gschedd has forgotten
 * (scheduler.min_job_age, sched_purge.c) is read back from the store for show, and for a
 * queue that asks for finished jobs (sacct, queue --all, squeue -j): the answer then goes
 * once the read is done. A queue of active jobs alone (squeue) never reads the store. A
 * wait holds its CLI connection until
 * every job it names has reached the wanted point (sched_query_job_changed is called on each
 * state change) or its timeout fires. Logs live on the node that ran the task: the request
 * is passed on to that node's worker with the file's path filled in, and the worker's answer
 * comes back through here to the CLI.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jobspec_license.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/jobspec.h"
#include "scheduler/sched_internal.h"
#include "common/sort.h"

#define LOGS_MAX_BYTES (1u << 20)

/* A JobInfo and what it borrows or owns. */
struct info {
    Gs__JobInfo info;
    Gs__UserIdentity user;
    Gs__Resources res;
    struct sched_alloc_msg alloc;
    struct gs_proto_jobspec_view view;
    bool has_view;
    struct gs_buf stdout_path, stderr_path, licenses, deps, command;
    struct sched_usage_msg usage;
    Gs__PriorityFactors factors;
    Gs__StepInfo *steps; /* QueueRequest.with_steps: strings borrowed from the job */
    Gs__StepInfo **step_ptrs;
    uint32_t *het; /* a heterogeneous job's het_nodes, het_ntasks, het_ncpus: one allocation */
};

static int log_path(const struct sched_job *job, uint32_t rank, const char *node,
                    Gs__LogStream stream, struct gs_buf *out);

/* Cores nodes first..first + n - 1 of the job's allocation hold. */
static uint32_t alloc_cpus(const struct sched_job *job, uint32_t first, uint32_t n)
{
    uint32_t cores = 0;

    for (uint32_t i = first; i < first + n && i < job->alloc.nnodes; i++)
        cores += sched_node_alloc_cores(&job->alloc.nodes[i]);
    return cores;
}

/* Cores one component (the view of it, or the job's only one) asks for. */
static uint32_t asked_cpus(const struct gs_jobspec *c)
{
    return gs_jobspec_cores_per_node(c) * c->nodes;
}

/* Cores the job holds (running) or asks for (else): Slurm's NumCPUs. */
static uint32_t job_cpus(const struct sched_job *job)
{
    uint32_t n = 0;

    if (job->state == SCHED_JOB_RUNNING)
        return alloc_cpus(job, 0, job->alloc.nnodes);
    for (uint32_t k = 0; k <= job->spec->nhet; k++) { /* each component of a heterogeneous job */
        struct gs_jobspec c;

        gs_jobspec_het_view(job->spec, k, &c);
        n += asked_cpus(&c);
    }
    return n;
}

/* The files a batch job's output goes to, for squeue/scontrol (node unknown until it runs). */
static void fill_paths(struct sched_ctx *s, const struct sched_job *job, struct info *in)
{
    const char *node = job->alloc.nnodes > 0
                           ? sched_cluster_node_name(s->cluster, job->alloc.nodes[0].node)
                           : NULL;
    const char *first = node;

    if (first == NULL && job->tasks != NULL)
        first = sched_cluster_node_name(s->cluster, job->tasks[0].cluster_node);
    if (log_path(job, 0, first != NULL ? first : "", GS__LOG_STREAM__LOG_STREAM_STDOUT,
                 &in->stdout_path) == 0 &&
        in->stdout_path.data != NULL)
        in->info.stdout_path = in->stdout_path.data;
    if (job->spec->stderr_pattern != NULL &&
        log_path(job, 0, first != NULL ? first : "", GS__LOG_STREAM__LOG_STREAM_STDERR,
                 &in->stderr_path) == 0 &&
        in->stderr_path.data != NULL)
        in->info.stderr_path = in->stderr_path.data;
}

/* Where an ended job ran, from the nodes it held, with its tasks counted on each. */
static int ran_on_nodes(struct sched_ctx *s, const struct sched_job *job, struct sched_alloc_msg *m)
{
    m->n = 0;
    m->nodes = calloc(job->nran_on + 1, sizeof(*m->nodes));
    m->ptrs = calloc(job->nran_on + 1, sizeof(*m->ptrs));
    if (m->nodes == NULL || m->ptrs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < job->nran_on; i++) {
        uint32_t cn = job->ran_on[i];
        Gs__NodeAllocation *na = &m->nodes[m->n];

        if (cn >= s->nnodes)
            continue;
        gs__node_allocation__init(na);
        na->node_name = s->nodes[cn]->name;
        na->address = (char *)sched_node_address(s->nodes[cn]);
        for (uint32_t r = 0; r < job->ntasks; r++) {
            if (job->tasks[r].cluster_node != cn)
                continue;
            if (na->ntasks++ == 0)
                na->first_rank = r;
        }
        m->ptrs[m->n++] = na;
    }
    return 0;
}

/* Where an ended job ran, from its tasks (which GPUs is no longer known). */
static int ended_nodes(struct sched_ctx *s, const struct sched_job *job, struct sched_alloc_msg *m)
{
    if (job->nran_on > 0)
        return ran_on_nodes(s, job, m);
    m->n = 0;
    m->nodes = calloc(job->ntasks + 1, sizeof(*m->nodes));
    m->ptrs = calloc(job->ntasks + 1, sizeof(*m->ptrs));
    if (m->nodes == NULL || m->ptrs == NULL)
        return -ENOMEM;
    for (uint32_t r = 0; r < job->ntasks; r++) {
        uint32_t cn = job->tasks[r].cluster_node;
        Gs__NodeAllocation *na = m->n > 0 ? &m->nodes[m->n - 1] : NULL;

        if (cn >= s->nnodes)
            continue;
        if (na != NULL && strcmp(na->node_name, s->nodes[cn]->name) == 0) {
            na->ntasks++;
            continue;
        }
        na = &m->nodes[m->n];
        gs__node_allocation__init(na);
        na->node_name = s->nodes[cn]->name;
        na->address = (char *)sched_node_address(s->nodes[cn]);
        na->first_rank = r;
        na->ntasks = 1;
        m->ptrs[m->n++] = na;
    }
    return 0;
}

/* Each component's nodes, tasks and CPUs, for squeue's JOB+K rows. */
static int fill_het(const struct sched_job *job, struct info *in)
{
    const struct gs_jobspec *sp = job->spec;
    uint32_t n = sp->nhet + 1;

    if (sp->nhet == 0)
        return 0;
    in->het = calloc(3 * (size_t)n, sizeof(*in->het));
    if (in->het == NULL)
        return -ENOMEM;
    for (uint32_t k = 0; k < n; k++) {
        struct gs_jobspec view;

        gs_jobspec_het_view(sp, k, &view);
        in->het[k] = view.nodes;
        in->het[n + k] = gs_jobspec_ntasks(&view);
        in->het[2 * n + k] = job->state == SCHED_JOB_RUNNING
                                 ? alloc_cpus(job, gs_jobspec_het_first_node(sp, k), view.nodes)
                                 : asked_cpus(&view);
    }
    in->info.n_het_nodes = in->info.n_het_ntasks = in->info.n_het_ncpus = n;
    in->info.het_nodes = in->het;
    in->info.het_ntasks = in->het + n;
    in->info.het_ncpus = in->het + 2 * n;
    return 0;
}

static int info_fill(struct sched_ctx *s, const struct sched_job *job, struct info *in,
                     bool with_spec)
{
    const struct gs_jobspec *sp = job->spec;
    int rc = 0;

    memset(in, 0, sizeof(*in));
    gs__job_info__init(&in->info);
    gs__user_identity__init(&in->user);
    in->user.uid = job->uid;
    in->user.gid = job->gid;
    in->user.username = (char *)job->user;
    gs_proto_jobspec_resources(&in->res, sp);
    in->info.partition = sp->partition != NULL ? sp->partition : "";
    in->info.account = sp->account != NULL ? sp->account : "";
    in->info.qos = sp->qos != NULL ? sp->qos : "";
    in->info.array_job_id = sp->array.array_job_id;
    in->info.array_task_id = sp->array.task_id;
    in->info.ntasks = gs_jobspec_ntasks(sp);
    in->info.ncpus = job_cpus(job);
    in->info.workdir = sp->workdir != NULL ? sp->workdir : "";
    in->info.job_id = job->id;
    in->info.name = sp->name;
    in->info.user = &in->user;
    in->info.state = sched_job_wire_state(job);
    in->info.reason = (char *)job->reason;
    in->info.priority = sched_policy_job_priority(job);
    if (job->state == SCHED_JOB_PENDING) {
        sched_policy_factors(job, &in->factors);
        in->info.priority_factors = &in->factors;
    }
    in->info.held = job->held;
    in->info.resources = &in->res;
    in->info.submit_time_ms = job->submit_ms;
    in->info.start_time_ms = job->start_ms;
    in->info.end_time_ms = job->end_ms;
    in->info.suspended = job->suspended;
    in->info.suspend_time_ms = job->suspended ? job->suspend_at_ms : 0;
    in->info.resume_time_ms = job->resume_ms;
    in->info.suspended_ms = job->suspended_ms;
    in->info.expected_start_ms = job->expected_start_ms;
    if (job->state == SCHED_JOB_PENDING && job->expected_start_ms > 0 && job->sched_nodes != NULL)
        in->info.sched_nodes = job->sched_nodes;
    if (sp->nlicenses > 0) {
        gs_license_list_format(sp->licenses, sp->nlicenses, &in->licenses);
        in->info.licenses = in->licenses.data != NULL ? in->licenses.data : "";
    }
    in->info.comment = sp->comment != NULL ? sp->comment : "";
    in->info.wckey = sp->wckey != NULL ? sp->wckey : "";
    in->info.nice = sp->nice;
    in->info.reservation = sp->reservation != NULL ? sp->reservation : "";
    if (sp->source != NULL && sp->source[0] != '\0') {
        in->info.command = sp->source;
    } else {
        gs_buf_argv_join(&in->command, sp->argv, sp->argc);
        in->info.command = in->command.data != NULL ? in->command.data : "";
    }
    if (job->state == SCHED_JOB_PENDING && (sp->ndeps > 0 || sp->singleton)) {
        rc = sched_job_deps_text(s->jobs, job, &in->deps);
        in->info.dependency = in->deps.data != NULL ? in->deps.data : "";
    }
    in->info.signaled = job->signaled;
    in->info.exit_code = job->exit_code;
    in->info.term_signal = (uint32_t)job->term_signal;
    in->info.restart_count = job->restarts;
    if (rc == 0 && job->state == SCHED_JOB_RUNNING)
        rc = sched_alloc_msg_build(s, job, &in->alloc);
    else if (rc == 0 && job->tasks != NULL)
        rc = ended_nodes(s, job, &in->alloc);
    in->info.n_allocation = in->alloc.n;
    in->info.allocation = in->alloc.ptrs;
    if (rc == 0)
        rc = fill_het(job, in);
    fill_paths(s, job, in);
    if (job->progress != NULL && job->progress->attempt == job->attempt) {
        in->info.tokens_per_s = job->progress->tokens_per_s;
        in->info.mfu = job->progress->mfu;
    }
    if (rc == 0 && job->start_ms > 0) {
        rc = sched_telemetry_job_usage(s, job, &in->usage);
        in->usage.usage.cpus_alloc = in->info.ncpus;
        in->info.usage = &in->usage.usage;
    }
    if (rc == 0)
        rc = gs_buf_error(&in->licenses);
    if (rc == 0)
        rc = gs_buf_error(&in->command);
    if (rc == 0 && with_spec) {
        rc = gs_proto_jobspec_view_init(&in->view, sp);
        in->has_view = rc == 0;
        if (rc == 0)
            in->info.spec = &in->view.spec;
    }
    return rc;
}

static int by_step(const void *a, const void *b)
{
    const Gs__StepInfo *x = *(Gs__StepInfo *const *)a, *y = *(Gs__StepInfo *const *)b;

    return x->step < y->step ? -1 : x->step > y->step;
}

/* One step record as sacct sees it; one its job outlived without an end (a lost node, a
 * batch shell whose exit never came) ends with the job. */
static void step_fill(const struct sched_job *job, const struct sched_step_acct *a,
                      Gs__StepInfo *si)
{
    bool orphan = a->state == SCHED_JOB_RUNNING && job->state != SCHED_JOB_RUNNING;
    enum sched_job_state state = a->state;

    if (orphan)
        state = job->state == SCHED_JOB_NODE_FAIL ? SCHED_JOB_NODE_FAIL : SCHED_JOB_CANCELLED;
    gs__step_info__init(si);
    si->step = a->step;
    si->name = (char *)a->name;
    si->state = (Gs__JobState)state;
    si->signaled = a->signaled;
    si->exit_code = a->exit_code;
    si->term_signal = (uint32_t)a->term_signal;
    si->start_time_ms = a->start_ms;
    si->end_time_ms = orphan ? job->end_ms : a->end_ms;
    si->nnodes = a->nnodes;
    si->ntasks = a->ntasks;
    si->nodelist = a->nodelist;
    si->max_rss_kib = a->max_rss_kib;
    si->max_rss_node = (char *)a->max_rss_node;
    si->max_rss_task = a->max_rss_task;
    si->cpu_time_ms = sched_step_acct_cpu_ms(a);
    si->suspended_ms = a->suspended_ms;
    si->cpus = a->cpus;
    si->gpus = a->gpus;
    si->time_limit_s = a->time_limit_s;
}

/* JobInfo.steps: the current attempt's records in step order (batch first). */
static int steps_fill(const struct sched_job *job, struct info *in)
{
    uint32_t n = 0;

    in->steps = calloc(job->nsteps + 1, sizeof(*in->steps));
    in->step_ptrs = calloc(job->nsteps + 1, sizeof(*in->step_ptrs));
    if (in->steps == NULL || in->step_ptrs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].attempt != job->attempt)
            continue;
        step_fill(job, &job->steps[i], &in->steps[n]);
        in->step_ptrs[n] = &in->steps[n];
        n++;
    }
    gs_sort(in->step_ptrs, n, sizeof(*in->step_ptrs), by_step);
    in->info.steps = in->step_ptrs;
    in->info.n_steps = n;
    return 0;
}

static void info_release(struct info *in)
{
    free(in->het);
    free(in->steps);
    free(in->step_ptrs);
    sched_telemetry_usage_release(&in->usage);
    sched_alloc_msg_release(&in->alloc);
    gs_buf_release(&in->stdout_path);
    gs_buf_release(&in->stderr_path);
    gs_buf_release(&in->licenses);
    gs_buf_release(&in->deps);
    gs_buf_release(&in->command);
    if (in->has_view)
        gs_proto_jobspec_view_release(&in->view);
}

bool sched_job_selected(const struct sched_job *job, const Gs__JobSelector *sel, bool finished)
{
    if (!finished && sched_job_finished(job))
        return false;
    if (sel == NULL)
        return true;
    if (sel->name != NULL && sel->name[0] != '\0' && strcmp(sel->name, job->spec->name) != 0)
        return false;
    if (sel->user != NULL && sel->user[0] != '\0' && strcmp(sel->user, job->user) != 0)
        return false;
    if (sel->n_states == 0)
        return true;
    for (size_t i = 0; i < sel->n_states; i++) {
        if ((int)sel->states[i] == (int)job->state)
            return true;
    }
    return false;
}

/* Priority order, then submit order, as the planner considers them. */
int sched_expand_ids(struct sched_ctx *s, const uint64_t *ids, size_t n, uint64_t **ret,
                     size_t *ret_n)
{
    size_t cap = n, k = 0;
    uint64_t *out;

    for (size_t i = 0; i < n; i++) {
        const struct sched_job *job = sched_jobs_find(s->jobs, ids[i]);
        if (job != NULL && job->spec->array.array_job_id == job->id)
            cap += job->spec->array.count;
    }
    out = calloc(cap + 1, sizeof(*out));
    if (out == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *job = sched_jobs_find(s->jobs, ids[i]);

        out[k++] = ids[i];
        if (job == NULL || job->spec->array.array_job_id != job->id)
            continue;
        /* An array's elements have the ids after its first one (submitted together). */
        for (uint64_t id = job->id + 1; id < job->id + job->spec->array.count && k < cap; id++) {
            const struct sched_job *e = sched_jobs_find(s->jobs, id);
            if (e != NULL && e->spec->array.array_job_id == job->id)
                out[k++] = id;
        }
    }
    *ret = out;
    *ret_n = k;
    return 0;
}

static int by_priority(const void *a, const void *b)
{
    const struct sched_job *x = *(const struct sched_job *const *)a;
    const struct sched_job *y = *(const struct sched_job *const *)b;

    int32_t px = sched_policy_job_priority(x), py = sched_policy_job_priority(y);

    if (px != py)
        return px > py ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* What another user's job shows of its command: its script's path, never its argv. */
static void hide_command(struct info *in)
{
    static char hidden[] = "";

    if (in->command.len > 0)
        in->info.command = hidden;
}

/*
 * Forgotten jobs one queue request reads back at most (sacct without -j: the most recent):
 * with 200 nodes, sacct -a of 10,000 of them and 4,000 in memory took 0.33 s, and the reply
 * held ~19 MiB until sent (bench/RESULTS.md, "gschedd memory and MinJobAge").
 */
#define QUEUE_STORED_MAX 10000

/* The reply to req from memory, with stored (forgotten jobs read back) among them. */
static void queue_answer(struct sched_cli *c, uint64_t request_id, const Gs__QueueRequest *req,
                         struct sched_job *const *stored, size_t nstored, bool held)
{
    struct sched_ctx *s = c->s;
    size_t count = sched_jobs_count(s->jobs), n = 0;
    const Gs__JobSelector *sel = req->selector;
    struct sched_job **v = calloc(count + nstored + 1, sizeof(*v));
    struct info *infos = NULL;
    Gs__JobInfo **ptrs = NULL;
    Gs__QueueReply reply = GS__QUEUE_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t *ids = NULL;
    size_t nids = 0;

    if (v == NULL)
        goto oom;
    if (sel != NULL && sel->n_job_ids > 0) {
        if (sched_expand_ids(s, sel->job_ids, sel->n_job_ids, &ids, &nids) < 0)
            goto oom;
        for (size_t i = 0; i < nids; i++) {
            struct sched_job *job = sched_jobs_find(s->jobs, ids[i]);
            if (job != NULL && sched_job_selected(job, sel, true) && n < count)
                v[n++] = job;
        }
    } else {
        for (size_t i = 0; i < count; i++) {
            struct sched_job *job = sched_jobs_at(s->jobs, i);
            if (sched_job_selected(job, sel, req->include_finished))
                v[n++] = job;
        }
    }
    for (size_t i = 0; i < nstored; i++) {
        if (sched_job_selected(stored[i], sel, true))
            v[n++] = stored[i];
    }
    gs_sort(v, n, sizeof(*v), by_priority);
    if (req->limit > 0 && n > req->limit)
        n = req->limit;
    infos = calloc(n + 1, sizeof(*infos));
    ptrs = calloc(n + 1, sizeof(*ptrs));
    if (infos == NULL || ptrs == NULL)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        info_fill(s, v[i], &infos[i], false);
        if (c->uid != 0 && c->uid != v[i]->uid)
            hide_command(&infos[i]);
        if (req->with_steps && steps_fill(v[i], &infos[i]) < 0)
            goto oom;
        ptrs[i] = &infos[i].info;
    }
    reply.n_jobs = n;
    reply.jobs = ptrs;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_QUEUE_REPLY;
    env.queue_reply = &reply;
    sched_cli_reply(c, &env, held);
    goto out;
oom:
    sched_cli_error(c, request_id, -ENOMEM, "out of memory", held);
out:
    for (size_t i = 0; infos != NULL && i < n; i++)
        info_release(&infos[i]);
    free(infos);
    free(ptrs);
    free(v);
    free(ids);
}

/* A QueueRequest kept for its answer after a store read (the request itself is gone). */
struct queue_copy {
    Gs__QueueRequest req;
    Gs__JobSelector sel;
    uint64_t *ids;
    Gs__JobState *states;
    char *name, *user;
};

static void queue_copy_free(struct queue_copy *q)
{
    if (q == NULL)
        return;
    free(q->ids);
    free(q->states);
    free(q->name);
    free(q->user);
    free(q);
}

static struct queue_copy *queue_copy_new(const Gs__QueueRequest *req)
{
    const Gs__JobSelector *sel = req->selector;
    struct queue_copy *q = calloc(1, sizeof(*q));
    bool oom = q == NULL;

    if (q == NULL)
        return NULL;
    gs__queue_request__init(&q->req);
    q->req.include_finished = req->include_finished;
    q->req.limit = req->limit;
    q->req.with_steps = req->with_steps;
    if (sel != NULL) {
        gs__job_selector__init(&q->sel);
        q->req.selector = &q->sel;
        q->ids = calloc(sel->n_job_ids + 1, sizeof(*q->ids));
        q->states = calloc(sel->n_states + 1, sizeof(*q->states));
        q->name = strdup(sel->name != NULL ? sel->name : "");
        q->user = strdup(sel->user != NULL ? sel->user : "");
        oom = q->ids == NULL || q->states == NULL || q->name == NULL || q->user == NULL;
        if (!oom) {
            if (sel->n_job_ids > 0) /* (NULL arrays when empty) */
                memcpy(q->ids, sel->job_ids, sel->n_job_ids * sizeof(*q->ids));
            if (sel->n_states > 0)
                memcpy(q->states, sel->states, sel->n_states * sizeof(*q->states));
            q->sel.job_ids = q->ids;
            q->sel.n_job_ids = sel->n_job_ids;
            q->sel.states = q->states;
            q->sel.n_states = sel->n_states;
            q->sel.name = q->name;
            q->sel.user = q->user;
        }
    }
    if (oom) {
        queue_copy_free(q);
        return NULL;
    }
    return q;
}

static void queue_stored(struct sched_cli *c, uint64_t request_id, int status, const char *why,
                         struct sched_job *const *jobs, size_t n, void *arg)
{
    struct queue_copy *q = arg;

    if (status < 0)
        sched_cli_error(c, request_id, status, why, true);
    else
        queue_answer(c, request_id, &q->req, jobs, n, true);
    queue_copy_free(q);
}

/* The selector's states as a mask of bits 1 << state (0: any). */
static uint32_t states_mask(const Gs__JobSelector *sel)
{
    uint32_t mask = 0;

    for (size_t i = 0; sel != NULL && i < sel->n_states; i++) {
        if ((unsigned)sel->states[i] < 32)
            mask |= 1u << (unsigned)sel->states[i];
    }
    return mask;
}

/* Whether every element of the array job is the first of is in memory (or it is none). */
static bool whole_array(struct sched_ctx *s, const struct sched_job *job)
{
    if (job->spec->array.array_job_id != job->id)
        return true;
    for (uint64_t id = job->id + 1; id < job->id + job->spec->array.count; id++) {
        if (sched_jobs_find(s->jobs, id) == NULL)
            return false; /* its elements end, and are forgotten, each in its time */
    }
    return true;
}

/*
 * Whether req needs jobs only the store holds: it asks for finished ones, some jobs were
 * forgotten, and (by id) some id named is one memory no longer has. *q gets the read.
 */
static bool queue_needs_store(struct sched_ctx *s, const Gs__QueueRequest *req, uint64_t **missing,
                              struct sched_stored_query *q)
{
    const Gs__JobSelector *sel = req->selector;
    size_t n = 0;

    *missing = NULL;
    memset(q, 0, sizeof(*q));
    if (!req->include_finished || !s->jobs_in_store_only || s->journal == NULL)
        return false;
    q->states = states_mask(sel);
    q->with_steps = req->with_steps;
    q->max = req->limit > 0 && req->limit < QUEUE_STORED_MAX ? req->limit : QUEUE_STORED_MAX;
    if (sel == NULL || sel->n_job_ids == 0) {
        q->name = sel != NULL ? sel->name : NULL;
        q->user = sel != NULL ? sel->user : NULL;
        return true;
    }
    *missing = calloc(sel->n_job_ids, sizeof(**missing));
    if (*missing == NULL)
        return false; /* answered from memory: the forgotten ones are left out */
    for (size_t i = 0; i < sel->n_job_ids; i++) {
        uint64_t id = sel->job_ids[i];
        const struct sched_job *job = sched_jobs_find(s->jobs, id);

        if (id > 0 && id < s->next_job_id && (job == NULL || !whole_array(s, job)))
            (*missing)[n++] = id;
    }
    q->ids = *missing;
    q->nids = n;
    q->arrays = true;
    q->max = QUEUE_STORED_MAX;
    return n > 0;
}

void sched_query_queue(struct sched_cli *c, uint64_t request_id, const Gs__QueueRequest *req)
{
    struct sched_stored_query q;
    struct queue_copy *copy = NULL;
    uint64_t *missing = NULL;
    int rc = -ENOMEM;

    if (!queue_needs_store(c->s, req, &missing, &q)) {
        free(missing);
        queue_answer(c, request_id, req, NULL, 0, false);
        return;
    }
    copy = queue_copy_new(req);
    if (copy != NULL)
        rc = sched_stored_read(c, request_id, &q, queue_stored, copy);
    free(missing);
    if (rc < 0) {
        queue_copy_free(copy);
        sched_cli_error(c, request_id, rc,
                        rc == -ENOMEM ? "out of memory" : "the state database is closing", false);
    }
}

static Gs__EndReason wire_end(enum sched_task_end how)
{
    switch (how) {
    case SCHED_TASK_CANCELLED:
        return GS__END_REASON__END_REASON_CANCELLED;
    case SCHED_TASK_TIMEOUT:
        return GS__END_REASON__END_REASON_TIMEOUT;
    case SCHED_TASK_LAUNCH_FAILED:
        return GS__END_REASON__END_REASON_LAUNCH_FAILED;
    case SCHED_TASK_OOM:
        return GS__END_REASON__END_REASON_OOM;
    default:
        return GS__END_REASON__END_REASON_NONE;
    }
}

static const char *task_node_name(struct sched_ctx *s, const struct sched_task *t)
{
    return t->cluster_node < s->nnodes ? s->nodes[t->cluster_node]->name : "";
}

/* The job's latest progress report as ShowReply carries it (kept after the job ended). */
static void fill_progress(const struct sched_job *job, Gs__JobProgressReport *m)
{
    const struct sched_job_progress *p = job->progress;

    gs__job_progress_report__init(m);
    m->job_id = job->id;
    m->step = p->step;
    m->steps = p->steps;
    m->loss = p->loss;
    m->tokens_per_s = p->tokens_per_s;
    m->ranks = p->ranks;
    m->comm_ms = p->comm_ms;
    m->comm_exposed_ms = p->comm_exposed_ms;
    m->overlap = p->overlap;
    m->eval_loss = p->eval_loss;
    m->eval_step = p->eval_step;
    m->lr = p->lr;
    m->mfu = p->mfu;
    m->data_ms = p->data_ms;
    m->text = (char *)p->text;
    m->received_ms = p->received_ms;
    m->attempt = p->attempt;
}

/*
 * Another user's job, as Slurm's PrivateData shows it: what it asked for and where it ran,
 * but not its environment (secrets live there), script or command arguments.
 */
static void hide_private(struct info *in)
{
    static char hidden[] = "";

    hide_command(in);
    if (!in->has_view)
        return;
    in->view.run.n_env = 0;
    in->view.run.env = NULL;
    in->view.run.n_argv = 0;
    in->view.run.argv = NULL;
    in->view.run.script = hidden;
}

/* The ShowReply for job (in memory, or read back from the store). */
static void show_answer(struct sched_cli *c, uint64_t request_id, const struct sched_job *job,
                        bool held)
{
    struct sched_ctx *s = c->s;
    Gs__ShowReply reply = GS__SHOW_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobStateChange *hist = NULL, **hptrs = NULL;
    Gs__TaskExit *exits = NULL, **eptrs = NULL;
    Gs__JobProgressReport progress;
    struct info in;
    size_t ne = 0;

    hist = calloc(job->nhistory + 1, sizeof(*hist));
    hptrs = calloc(job->nhistory + 1, sizeof(*hptrs));
    exits = calloc(job->ntasks + 1, sizeof(*exits));
    eptrs = calloc(job->ntasks + 1, sizeof(*eptrs));
    if (hist == NULL || hptrs == NULL || exits == NULL || eptrs == NULL ||
        info_fill(s, job, &in, true) < 0) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", held);
        goto out_free;
    }
    if (c->uid != 0 && c->uid != job->uid)
        hide_private(&in);
    for (size_t i = 0; i < job->nhistory; i++) {
        gs__job_state_change__init(&hist[i]);
        hist[i].job_id = job->id;
        hist[i].state = (Gs__JobState)job->history[i].state;
        hist[i].reason = job->history[i].detail;
        hist[i].changed_at_ms = job->history[i].at_ms;
        if (i > 0)
            hist[i].previous = (Gs__JobState)job->history[i - 1].state;
        hptrs[i] = &hist[i];
    }
    for (uint32_t r = 0; job->tasks != NULL && r < job->ntasks; r++) {
        const struct sched_task *t = &job->tasks[r];
        Gs__TaskExit *e = &exits[ne];

        if (!t->ended)
            continue;
        gs__task_exit__init(e);
        e->job_id = job->id;
        e->rank = r;
        e->node_name = (char *)task_node_name(s, t);
        e->signaled = t->term_signal != 0;
        e->exit_code = t->exit_code;
        e->term_signal = (uint32_t)t->term_signal;
        e->end_reason = wire_end(t->how);
        e->start_time_ms = t->start_ms;
        e->end_time_ms = t->end_ms;
        e->attempt = job->attempt;
        e->launch_error = t->launch_error != NULL ? t->launch_error : "";
        eptrs[ne++] = e;
    }
    reply.job = &in.info;
    reply.n_history = job->nhistory;
    reply.history = hptrs;
    reply.n_task_exits = ne;
    reply.task_exits = eptrs;
    if (job->progress != NULL) {
        fill_progress(job, &progress);
        reply.progress = &progress;
    }
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SHOW_REPLY;
    env.show_reply = &reply;
    sched_cli_reply(c, &env, held);
    info_release(&in);
out_free:
    free(hist);
    free(hptrs);
    free(exits);
    free(eptrs);
}

static void show_not_found(struct sched_cli *c, uint64_t request_id, uint64_t job_id, bool held)
{
    char msg[80];

    snprintf(msg, sizeof(msg), "job %llu: no such job", (unsigned long long)job_id);
    sched_cli_error(c, request_id, -ENOENT, msg, held);
}

static void show_stored(struct sched_cli *c, uint64_t request_id, int status, const char *why,
                        struct sched_job *const *jobs, size_t n, void *arg)
{
    uint64_t job_id = (uint64_t)(uintptr_t)arg;
    struct sched_job *job = sched_jobs_find(c->s->jobs, job_id);

    if (status < 0)
        sched_cli_error(c, request_id, status, why, true);
    else if (job != NULL || n > 0)
        show_answer(c, request_id, job != NULL ? job : jobs[0], true);
    else
        show_not_found(c, request_id, job_id, true);
}

void sched_query_show(struct sched_cli *c, uint64_t request_id, const Gs__ShowRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct sched_stored_query q = {.ids = &req->job_id, .nids = 1, .max = 1, .with_history = true};
    int rc;

    if (job != NULL) {
        show_answer(c, request_id, job, false);
        return;
    }
    /* Forgotten (an id given out before, not in memory): from the store. */
    if (!s->jobs_in_store_only || req->job_id == 0 || req->job_id >= s->next_job_id) {
        show_not_found(c, request_id, req->job_id, false);
        return;
    }
    rc = sched_stored_read(c, request_id, &q, show_stored, (void *)(uintptr_t)req->job_id);
    if (rc < 0)
        sched_cli_error(c, request_id, rc,
                        rc == -ENOMEM ? "out of memory" : "the state database is closing", false);
}

/* --- wait -------------------------------------------------------------------------------- */

static bool reached(const struct sched_job *job, bool until_start)
{
    return sched_job_finished(job) || (until_start && job->state == SCHED_JOB_RUNNING);
}

static void fill_change(const struct sched_job *job, Gs__JobStateChange *ch)
{
    gs__job_state_change__init(ch);
    ch->job_id = job->id;
    ch->state = sched_job_wire_state(job);
    ch->reason = (char *)job->reason;
    ch->signaled = job->signaled;
    ch->exit_code = job->exit_code;
    ch->term_signal = (uint32_t)job->term_signal;
    ch->submit_time_ms = job->submit_ms;
    ch->start_time_ms = job->start_ms;
    ch->end_time_ms = job->end_ms;
    ch->restart_count = job->restarts;
    ch->suspended = job->suspended;
    ch->suspend_time_ms = job->suspended ? job->suspend_at_ms : 0;
    ch->suspended_ms = job->suspended_ms;
    if (job->nhistory > 0) {
        ch->changed_at_ms = job->history[job->nhistory - 1].at_ms;
        if (job->nhistory > 1)
            ch->previous = (Gs__JobState)job->history[job->nhistory - 2].state;
    }
}

/* A forgotten job's JobStateChange, read back from the store for a wait (it has ended). */
struct sched_wait_stored {
    Gs__JobStateChange change;
    char reason[sizeof(((struct sched_job *)0)->reason)];
};

/* stored is in id order (sched_stored_read's). */
static const Gs__JobStateChange *stored_change(const struct sched_wait_stored *stored, size_t n,
                                               uint64_t id)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (stored[mid].change.job_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && stored[lo].change.job_id == id ? &stored[lo].change : NULL;
}

static void wait_reply(struct sched_ctx *s, struct sched_cli *c, uint64_t request_id,
                       const uint64_t *ids, size_t n, const struct sched_wait_stored *stored,
                       size_t nstored, bool timed_out, bool held)
{
    Gs__JobStateChange *v = calloc(n + 1, sizeof(*v));
    Gs__JobStateChange **ptrs = calloc(n + 1, sizeof(*ptrs));
    Gs__WaitReply reply = GS__WAIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    size_t k = 0;

    if (v == NULL || ptrs == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", held);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct sched_job *job = sched_jobs_find(s->jobs, ids[i]);
        const Gs__JobStateChange *st;

        if (job != NULL) {
            fill_change(job, &v[k]);
        } else if ((st = stored_change(stored, nstored, ids[i])) != NULL) {
            v[k] = *st;
        } else {
            continue;
        }
        ptrs[k] = &v[k];
        k++;
    }
    reply.n_jobs = k;
    reply.jobs = ptrs;
    reply.timed_out = timed_out;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_WAIT_REPLY;
    env.wait_reply = &reply;
    sched_cli_reply(c, &env, held);
out:
    free(v);
    free(ptrs);
}

static void on_waiter_closed(uv_handle_t *handle)
{
    struct sched_waiter *w = handle->data;
    struct sched_ctx *s = w->cli->s;

    sched_cli_unhold(w->cli);
    free(w->job_ids);
    sched_wait_set_release(&w->set);
    free(w->stored);
    free(w);
    sched_release_handle(s);
}

/* Unlinks the waiter; answers it first unless its CLI is gone. */
static void waiter_end(struct sched_ctx *s, struct sched_waiter *w, bool answer, bool timed_out)
{
    for (struct sched_waiter **p = &s->waiters; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    w->cli->waiter = NULL;
    if (answer) {
        sched_cli_hold(w->cli); /* the reply lets go of this one; the timer's close the other */
        wait_reply(s, w->cli, w->request_id, w->job_ids, w->njobs, w->stored, w->nstored, timed_out,
                   true);
    }
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, on_waiter_closed);
}

static void on_wait_timeout(uv_timer_t *timer)
{
    struct sched_waiter *w = timer->data;

    waiter_end(w->cli->s, w, true, true);
}

struct reached_ctx {
    struct sched_ctx *s;
    bool until_start;
};

/* sched_wait_reached_fn: a job not in memory has ended. */
static bool id_reached(uint64_t id, void *data)
{
    struct reached_ctx *r = data;
    const struct sched_job *job = sched_jobs_find(r->s->jobs, id);

    return job == NULL || reached(job, r->until_start);
}

static bool all_reached(struct sched_ctx *s, const uint64_t *ids, size_t n, bool until_start)
{
    struct reached_ctx r = {s, until_start};

    for (size_t i = 0; i < n; i++) {
        if (!id_reached(ids[i], &r))
            return false;
    }
    return true;
}

/*
 * A WaitRequest whose forgotten jobs (if any) have been read back into stored (owned from
 * here on): answered now when every job is there, else a waiter. held: c is held for it.
 */
static void wait_begin(struct sched_cli *c, uint64_t request_id, const Gs__WaitRequest *req,
                       struct sched_wait_stored *stored, size_t nstored, bool held)
{
    struct sched_ctx *s = c->s;
    bool until_start = req->until == GS__WAIT_FOR__WAIT_FOR_START;
    struct sched_waiter *w;
    char msg[80];

    for (size_t i = 0; i < req->n_job_ids; i++) {
        if (sched_jobs_find(s->jobs, req->job_ids[i]) == NULL &&
            stored_change(stored, nstored, req->job_ids[i]) == NULL) {
            snprintf(msg, sizeof(msg), "job %llu: no such job",
                     (unsigned long long)req->job_ids[i]);
            sched_cli_error(c, request_id, -ENOENT, msg, held);
            free(stored);
            return;
        }
    }
    /* (a forgotten job has ended: all_reached counts what memory lacks as there) */
    if (all_reached(s, req->job_ids, req->n_job_ids, until_start) || c->waiter != NULL) {
        wait_reply(s, c, request_id, req->job_ids, req->n_job_ids, stored, nstored, false, held);
        free(stored);
        return;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL || (w->job_ids = calloc(req->n_job_ids, sizeof(uint64_t))) == NULL ||
        sched_wait_set_init(&w->set, req->job_ids, req->n_job_ids, id_reached,
                            &(struct reached_ctx){s, until_start}) < 0) {
        if (w != NULL)
            free(w->job_ids);
        free(w);
        free(stored);
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", held);
        return;
    }
    memcpy(w->job_ids, req->job_ids, req->n_job_ids * sizeof(uint64_t));
    w->njobs = req->n_job_ids;
    w->stored = stored;
    w->nstored = nstored;
    w->cli = c;
    w->request_id = request_id;
    w->until_start = until_start;
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    s->open_handles++; /* until on_waiter_closed */
    sched_cli_hold(c);
    if (held)
        sched_cli_unhold(c); /* the waiter holds it now */
    c->waiter = w;
    w->next = s->waiters;
    s->waiters = w;
    if (req->timeout_ms > 0)
        uv_timer_start(&w->timer, on_wait_timeout, req->timeout_ms, 0);
}

/* A WaitRequest kept while its forgotten jobs are read back. */
struct wait_copy {
    Gs__WaitRequest req;
    uint64_t ids[];
};

static void wait_stored(struct sched_cli *c, uint64_t request_id, int status, const char *why,
                        struct sched_job *const *jobs, size_t n, void *arg)
{
    struct wait_copy *w = arg;
    struct sched_wait_stored *stored = NULL;

    if (status == 0 && (stored = calloc(n + 1, sizeof(*stored))) == NULL) {
        status = -ENOMEM;
        why = "out of memory";
    }
    if (status < 0) {
        sched_cli_error(c, request_id, status, why, true);
        free(w);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fill_change(jobs[i], &stored[i].change);
        snprintf(stored[i].reason, sizeof(stored[i].reason), "%s", jobs[i]->reason);
        stored[i].change.reason = stored[i].reason;
    }
    wait_begin(c, request_id, &w->req, stored, n, true);
    free(w);
}

void sched_query_wait(struct sched_cli *c, uint64_t request_id, const Gs__WaitRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_stored_query q = {.with_history = true};
    struct wait_copy *w = NULL;
    size_t n = req->n_job_ids, nmissing = 0;
    int rc = -ENOMEM;

    if (n == 0) {
        sched_cli_error(c, request_id, -EINVAL, "wait for which jobs?", false);
        return;
    }
    /* Ids handed out but no longer in memory: forgotten, so ended; read back for the reply. */
    for (size_t i = 0; s->jobs_in_store_only && i < n; i++) {
        uint64_t id = req->job_ids[i];

        nmissing += id > 0 && id < s->next_job_id && sched_jobs_find(s->jobs, id) == NULL;
    }
    if (nmissing == 0) {
        wait_begin(c, request_id, req, NULL, 0, false);
        return;
    }
    w = calloc(1, sizeof(*w) + 2 * n * sizeof(uint64_t));
    if (w != NULL) {
        uint64_t *missing = w->ids + n;

        memcpy(w->ids, req->job_ids, n * sizeof(uint64_t));
        w->req = *req;
        w->req.job_ids = w->ids;
        nmissing = 0;
        for (size_t i = 0; i < n; i++) {
            if (sched_jobs_find(s->jobs, w->ids[i]) == NULL)
                missing[nmissing++] = w->ids[i];
        }
        q.ids = missing;
        q.nids = nmissing;
        q.max = (uint32_t)(nmissing < UINT32_MAX ? nmissing : UINT32_MAX);
        rc = sched_stored_read(c, request_id, &q, wait_stored, w);
    }
    if (rc < 0) {
        free(w);
        sched_cli_error(c, request_id, rc,
                        rc == -ENOMEM ? "out of memory" : "the state database is closing", false);
    }
}

void sched_query_job_changed(struct sched_ctx *s, struct sched_job *job)
{
    struct sched_waiter *w = s->waiters, *next;

    sched_diag_job_changed(s, job, job->mail_seen); /* mail_seen: the last one announced */
    sched_mail_job_changed(s, job);
    if (job->state != SCHED_JOB_RUNNING) { /* ended, requeued: its srun steps are over */
        sched_steps_job_ended(s, job->id);
        sched_kv_job_changed(s, job);    /* and its key/value store is gone */
        sched_alloc_job_changed(s, job); /* salloc hears its allocation was revoked */
    }

    for (; w != NULL; w = next) {
        struct reached_ctx r = {s, w->until_start};

        next = w->next; /* a waiter is never left done: it ends */
        if (sched_wait_set_changed(&w->set, job->id, reached(job, w->until_start), id_reached, &r))
            waiter_end(s, w, true, false);
    }
}

void sched_query_cli_gone(struct sched_cli *c)
{
    if (c->waiter != NULL)
        waiter_end(c->s, c->waiter, false, false);
}

/* --- logs -------------------------------------------------------------------------------- */

static int log_path(const struct sched_job *job, uint32_t rank, const char *node,
                    Gs__LogStream stream, struct gs_buf *out)
{
    const struct gs_jobspec *sp = job->spec;
    const char *pattern =
        sp->stdout_pattern != NULL ? sp->stdout_pattern : GS_JOBSPEC_DEFAULT_STDOUT;
    struct gs_pattern_vars vars;
    const char *wd = sp->workdir;

    gs_jobspec_pattern_vars(sp, job->id, rank, node, sched_job_rank_node(job, rank), job->user,
                            &vars);

    if (stream == GS__LOG_STREAM__LOG_STREAM_STDERR && sp->stderr_pattern != NULL)
        pattern = sp->stderr_pattern;
    if (pattern[0] != '/') {
        if (wd == NULL || wd[0] != '/')
            return -ENOENT; /* relative to a directory nobody recorded */
        if (gs_buf_printf(out, "%s/", wd) < 0)
            return -ENOMEM;
    }
    return gs_jobspec_expand_pattern(pattern, &vars, out);
}

/*
 * The logs of job's task, forwarded to the worker of its node (it reads the file as the
 * job's user). held: c is held already (a forgotten job read back from the store), and
 * every answer lets go of it; else a forward takes a hold of its own.
 */
static void logs_answer(struct sched_cli *c, uint64_t request_id, const Gs__LogsRequest *req,
                        const struct sched_job *job, bool held)
{
    struct sched_ctx *s = c->s;
    Gs__LogsRequest fwd = *req;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct gs_buf path = GS_BUF_INIT;
    struct sched_forward *f = NULL;
    const struct sched_task *t;
    struct sched_node *n;
    char msg[200];
    int rc;

    if (c->uid != 0 && c->uid != job->uid) {
        snprintf(msg, sizeof(msg), "job %llu: permission denied (it belongs to %s)",
                 (unsigned long long)job->id, job->user);
        sched_cli_error(c, request_id, -EPERM, msg, held);
        return;
    }
    if (job->tasks == NULL || req->rank >= job->ntasks) {
        if (job->tasks == NULL)
            snprintf(msg, sizeof(msg), "job %llu has no output yet: it has not started",
                     (unsigned long long)job->id);
        else
            snprintf(msg, sizeof(msg), "job %llu has no task %u (it has %u)",
                     (unsigned long long)job->id, req->rank, job->ntasks);
        sched_cli_error(c, request_id, job->tasks == NULL ? -EAGAIN : -ENOENT, msg, held);
        return;
    }
    t = &job->tasks[req->rank];
    n = t->cluster_node < s->nnodes ? s->nodes[t->cluster_node] : NULL;
    if (n == NULL || n->conn == NULL) {
        snprintf(msg, sizeof(msg), "job %llu task %u ran on %s, whose worker is not connected",
                 (unsigned long long)job->id, req->rank, n != NULL ? n->name : "an unknown node");
        sched_cli_error(c, request_id, -EHOSTDOWN, msg, held);
        return;
    }
    rc = log_path(job, req->rank, n->name, req->stream, &path);
    f = rc == 0 ? calloc(1, sizeof(*f)) : NULL;
    if (f == NULL) {
        sched_cli_error(c, request_id, rc < 0 ? rc : -ENOMEM,
                        rc == -ENOENT ? "the job's output path is relative to an unknown directory"
                                      : "out of memory",
                        held);
        goto out;
    }
    f->cli = c;
    f->cli_request_id = request_id;
    f->worker_request_id = ++s->next_request_id;
    f->worker = n->conn;
    f->task_finished = t->ended || sched_job_finished(job);
    fwd.node_name = n->name;
    fwd.path = path.data;
    fwd.owner_uid = job->uid; /* the worker reads as this user, and only this user's file */
    fwd.owner_gid = job->gid;
    fwd.max_bytes = req->max_bytes == 0 || req->max_bytes > LOGS_MAX_BYTES ? 0 : req->max_bytes;
    env.request_id = f->worker_request_id;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REQUEST;
    env.logs_request = &fwd;
    if (!sched_node_send(n, &env)) {
        sched_cli_error(c, request_id, -EHOSTDOWN, "the node's worker is not connected", held);
        free(f);
        goto out;
    }
    if (!held)
        sched_cli_hold(c);
    f->next = s->forwards;
    s->forwards = f;
out:
    gs_buf_release(&path);
}

static void logs_not_found(struct sched_cli *c, uint64_t request_id, uint64_t job_id, bool held)
{
    char msg[80];

    snprintf(msg, sizeof(msg), "job %llu: no such job", (unsigned long long)job_id);
    sched_cli_error(c, request_id, -ENOENT, msg, held);
}

/* A forgotten job read back (scheduler.min_job_age): its logs, as for one in memory. */
static void logs_stored(struct sched_cli *c, uint64_t request_id, int status, const char *why,
                        struct sched_job *const *jobs, size_t n, void *arg)
{
    Gs__LogsRequest *req = arg;
    const struct sched_job *job = sched_jobs_find(c->s->jobs, req->job_id);

    if (status < 0)
        sched_cli_error(c, request_id, status, why, true);
    else if (job != NULL || n > 0)
        logs_answer(c, request_id, req, job != NULL ? job : jobs[0], true);
    else
        logs_not_found(c, request_id, req->job_id, true);
    free(req);
}

void sched_query_logs(struct sched_cli *c, uint64_t request_id, const Gs__LogsRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct sched_stored_query q = {.ids = &req->job_id, .nids = 1, .max = 1};
    Gs__LogsRequest *copy;
    int rc;

    if (job != NULL) {
        logs_answer(c, request_id, req, job, false);
        return;
    }
    /* Forgotten (an id given out before, not in memory): from the store, its tasks too. */
    if (!s->jobs_in_store_only || req->job_id == 0 || req->job_id >= s->next_job_id) {
        logs_not_found(c, request_id, req->job_id, false);
        return;
    }
    if ((copy = malloc(sizeof(*copy))) == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    *copy = *req; /* the request is gone by the read's end; its strings are not used */
    copy->node_name = copy->path = (char *)"";
    rc = sched_stored_read(c, request_id, &q, logs_stored, copy);
    if (rc < 0) {
        free(copy);
        sched_cli_error(c, request_id, rc,
                        rc == -ENOMEM ? "out of memory" : "the state database is closing", false);
    }
}

static struct sched_forward *take_forward(struct sched_ctx *s, struct gs_proto_conn *worker,
                                          uint64_t request_id)
{
    for (struct sched_forward **p = &s->forwards; *p != NULL; p = &(*p)->next) {
        struct sched_forward *f = *p;

        if (f->worker == worker && (request_id == 0 || f->worker_request_id == request_id)) {
            *p = f->next;
            return f;
        }
    }
    return NULL;
}

bool sched_query_worker_reply(struct sched_ctx *s, struct gs_proto_conn *worker,
                              const Gs__Envelope *env)
{
    struct sched_forward *f;
    Gs__Envelope out = *env;
    Gs__LogsReply reply;

    if (env->request_id == 0 || (f = take_forward(s, worker, env->request_id)) == NULL)
        return false;
    out.request_id = f->cli_request_id;
    if (env->body_case == GS__ENVELOPE__BODY_LOGS_REPLY) {
        reply = *env->logs_reply;
        reply.finished = f->task_finished && reply.eof;
        out.logs_reply = &reply;
        sched_cli_reply(f->cli, &out, true);
    } else if (env->body_case == GS__ENVELOPE__BODY_ERROR) {
        sched_cli_reply(f->cli, &out, true);
    } else {
        sched_cli_error(f->cli, f->cli_request_id, -EPROTO, "the worker answered oddly", true);
    }
    free(f);
    return true;
}

void sched_query_worker_gone(struct sched_ctx *s, struct gs_proto_conn *worker)
{
    struct sched_forward *f;

    while ((f = take_forward(s, worker, 0)) != NULL) {
        sched_cli_error(f->cli, f->cli_request_id, -EHOSTDOWN,
                        "the node's worker disconnected before answering", true);
        free(f);
    }
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A partition's nodes: those configured for it, or every node the scheduler knows when it
 * has none listed (the implicit "main", nodes = "ALL").
 */
void sched_query_partitions(struct sched_cli *c, uint64_t request_id)
{
    struct sched_ctx *s = c->s;
    const struct gs_config *cfg = s->cfg;
    size_t np = cfg->npartitions;
    Gs__PartitionInfo *infos = calloc(np + 1, sizeof(*infos));
    Gs__PartitionInfo **ptrs = calloc(np + 1, sizeof(*ptrs));
    char **names = NULL;
    size_t used = 0;
    Gs__PartitionsReply reply = GS__PARTITIONS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    for (size_t i = 0; i < np; i++)
        used += cfg->partitions[i].nodes != NULL ? cfg->partitions[i].nnodes : s->nnodes;
    names = calloc(used + 1, sizeof(*names));
    if (infos == NULL || ptrs == NULL || names == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    used = 0;
    for (size_t i = 0; i < np; i++) {
        const struct gs_config_partition *p = &cfg->partitions[i];
        Gs__PartitionInfo *pi = &infos[i];
        char **first = names + used;

        gs__partition_info__init(pi);
        pi->name = p->name;
        pi->is_default = p->is_default;
        pi->max_time_s = p->max_time_s == GS_DURATION_INFINITE ? 0 : p->max_time_s;
        pi->up = true;
        if (p->nodes != NULL) {
            for (size_t k = 0; k < p->nnodes; k++)
                names[used++] = p->nodes[k];
        } else {
            for (size_t k = 0; k < s->nnodes; k++)
                names[used++] = s->nodes[k]->name;
        }
        pi->nodes = first;
        pi->n_nodes = (size_t)(names + used - first);
        gs_sort(pi->nodes, pi->n_nodes, sizeof(*pi->nodes), by_string);
        ptrs[i] = pi;
    }
    reply.partitions = ptrs;
    reply.n_partitions = np;
    reply.cluster_name = cfg->cluster_name;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_PARTITIONS_REPLY;
    env.partitions_reply = &reply;
    sched_cli_reply(c, &env, false);
out:
    free(names);
    free(ptrs);
    free(infos);
}
