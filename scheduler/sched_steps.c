/*
 * sched_steps.c: job steps, the `srun` of a running job. A StepLaunchRequest on a CLI
 * connection becomes one LaunchTasks per node of the step (the step's own task layout, and
 * of the job's allocation only the cores and GPUs the step was given); the connection then
 * stays open and carries the step's StepOutput and TaskExit frames from the workers to
 * srun, until every task has exited and gschedd closes it. StepSignal from srun becomes
 * SignalTasks to the step's nodes; srun going away ends the step's tasks.
 *
 * Concurrent steps share the job's allocation as Slurm's do (>= 21.08): each running step
 * holds the cores and GPUs it was given (step_alloc.c does the accounting, one per job with
 * steps) until its last task has exited or the job ends. A step that does not fit beside
 * the running ones waits in its job's queue, first come first served, with StepPending
 * said to srun; every step end retries the queue from its head. One that could never fit
 * in the job is refused at once. --overlap steps hold nothing and never wait; the batch
 * step holds nothing either.
 *
 * Steps live in memory only: their exits are acknowledged to the workers at once and never
 * stored (Slurm does not restart steps either; the job's own tasks are sched_engine.c's).
 * The step number (TaskRef.step, Slurm's step id + 1) is given when a step starts, from a
 * per-job counter kept here until the job ends. A step does not hold its CLI record with
 * sched_cli_hold: the record lives until on_cli_close, which calls sched_steps_cli_gone
 * first, and that clears every pointer to it. A running step whose srun went away stays
 * (cli NULL) until its tasks' exits come, so that what it holds is not given out early.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "scheduler/sched_internal.h"
#include "scheduler/step_alloc.h"

#define STEP_BUSY_REASON "Requested nodes are busy"
#define STEP_NEVER_FITS "Requested node configuration is not available"

/* One node of a step. */
struct step_node {
    uint32_t index;       /* in s->nodes, which is the cluster's index */
    uint32_t alloc_index; /* in the job's alloc.nodes */
    uint32_t first_rank;
    uint32_t ntasks;
    uint64_t launch_request_id; /* of its LaunchTasks, which its reply echoes */
};

struct sched_step {
    struct sched_step *next; /* in s->steps, or in its job's queue while waiting */
    uint64_t job_id;
    uint32_t step; /* TaskRef.step: Slurm's step id + 1; 0 while waiting */
    uint32_t attempt;
    struct sched_cli *cli; /* srun's connection; NULL once it went away */
    uint64_t request_id;   /* srun's StepLaunchRequest, which the reply answers */
    bool waiting;
    Gs__StepLaunchRequest *req; /* while waiting: an owned copy (free_unpacked) */
    uint32_t ntasks;
    uint32_t nexited;
    bool *exited; /* per rank */
    struct step_node *nodes;
    uint32_t nnodes;
    struct sched_step_grant *grants; /* per node of the job; NULL: nothing given yet */
    bool send_failed;                /* said once in the log */
};

/* A running job with steps: its step numbers, what they hold, and those waiting. */
struct sched_step_seq {
    struct sched_step_seq *next;
    uint64_t job_id;
    uint32_t last; /* the last step number given out */
    struct sched_step_alloc *held;
    struct sched_step *waiting; /* first come first */
    bool retrying;              /* retry_waiting() is on the stack */
    bool retry_again;           /* and a step ended meanwhile */
    bool ending;                /* the job ended: nothing starts any more */
};

/* --- bookkeeping ---------------------------------------------------------------------------- */

static struct sched_step *step_find(struct sched_ctx *s, uint64_t job_id, uint32_t step)
{
    for (struct sched_step *st = s->steps; st != NULL; st = st->next) {
        if (st->job_id == job_id && st->step == step)
            return st;
    }
    return NULL;
}

static struct sched_step_seq *job_find(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_step_seq *q = s->step_seqs; q != NULL; q = q->next) {
        if (q->job_id == job_id)
            return q;
    }
    return NULL;
}

/* Where node i of the job keeps its GPUs and cores, from its worker's topology. */
static void set_numa(struct sched_ctx *s, const struct sched_job *job, uint32_t i,
                     struct sched_step_alloc *held)
{
    uint32_t index = job->alloc.nodes[i].node;
    const Gs__NodeTopology *t = index < s->nnodes ? s->nodes[index]->topology : NULL;
    int16_t gpu_numa[SCHED_MAX_GPUS], core_numa[SCHED_MAX_CORES];

    if (t == NULL)
        return;
    for (size_t g = 0; g < SCHED_MAX_GPUS; g++)
        gpu_numa[g] = -1;
    for (size_t c = 0; c < SCHED_MAX_CORES; c++)
        core_numa[c] = -1;
    for (size_t g = 0; g < t->n_gpus; g++) {
        if (t->gpus[g]->index < SCHED_MAX_GPUS && t->gpus[g]->numa_node < INT16_MAX)
            gpu_numa[t->gpus[g]->index] = (int16_t)t->gpus[g]->numa_node;
    }
    for (size_t k = 0; k < t->n_numa_nodes; k++) {
        const Gs__NumaNode *nn = t->numa_nodes[k];

        for (size_t c = 0; nn->os_index < INT16_MAX && c < nn->n_cores; c++) {
            if (nn->cores[c] < SCHED_MAX_CORES)
                core_numa[nn->cores[c]] = (int16_t)nn->os_index;
        }
    }
    sched_step_alloc_set_numa(held, i, gpu_numa, SCHED_MAX_GPUS, core_numa, SCHED_MAX_CORES);
}

/* The job's step record, made with its first step; NULL when out of memory. */
static struct sched_step_seq *job_get(struct sched_ctx *s, const struct sched_job *job)
{
    struct sched_step_seq *q = job_find(s, job->id);

    if (q != NULL)
        return q;
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->held = sched_step_alloc_new(job->alloc.nodes, job->alloc.nnodes);
    if (q->held == NULL) {
        free(q);
        return NULL;
    }
    for (uint32_t i = 0; i < job->alloc.nnodes; i++)
        set_numa(s, job, i, q->held);
    q->job_id = job->id;
    q->next = s->step_seqs;
    s->step_seqs = q;
    return q;
}

static void unlink_step(struct sched_step **head, struct sched_step *st)
{
    for (struct sched_step **p = head; *p != NULL; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            return;
        }
    }
}

/* Unlinks and frees st, giving back what it holds; the caller retries the queue. */
static void step_free(struct sched_ctx *s, struct sched_step *st)
{
    struct sched_step_seq *q = job_find(s, st->job_id);

    if (st->waiting && q != NULL)
        unlink_step(&q->waiting, st);
    else if (!st->waiting)
        unlink_step(&s->steps, st);
    if (st->grants != NULL && q != NULL)
        sched_step_alloc_give_back(q->held, st->grants);
    if (st->cli != NULL)
        st->cli->step = NULL;
    if (st->req != NULL)
        gs__step_launch_request__free_unpacked(st->req, NULL);
    free(st->grants);
    free(st->exited);
    free(st->nodes);
    free(st);
}

static void forget_job(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_step_seq **p = &s->step_seqs; *p != NULL; p = &(*p)->next) {
        if ((*p)->job_id == job_id) {
            struct sched_step_seq *q = *p;

            while (q->waiting != NULL)
                step_free(s, q->waiting);
            *p = q->next;
            sched_step_alloc_free(q->held);
            free(q);
            return;
        }
    }
}

void sched_steps_free(struct sched_ctx *s)
{
    while (s->steps != NULL)
        step_free(s, s->steps);
    while (s->step_seqs != NULL)
        forget_job(s, s->step_seqs->job_id);
}

bool sched_steps_known(struct sched_ctx *s, uint64_t job_id, uint32_t step)
{
    return step_find(s, job_id, step) != NULL;
}

/* --- talking to srun and to workers ------------------------------------------------------------
 */

/* Queues env on srun's connection; output that does not fit is dropped, said once. */
static void to_srun(struct sched_step *st, const Gs__Envelope *env)
{
    int rc;

    if (st->cli == NULL)
        return;
    rc = sched_cli_send(st->cli, env);
    if (rc < 0 && !st->send_failed) {
        st->send_failed = true;
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u rc=%d srun does not keep up; output dropped",
               st->job_id, st->step - 1, rc);
    }
}

/* Every task has exited (or the job ended): gschedd closes srun's connection. */
static void step_finish(struct sched_ctx *s, struct sched_step *st)
{
    struct sched_cli *c = st->cli;

    if (c != NULL)
        sched_cli_close(c); /* what is queued is flushed first */
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u exited=%u/%u step ended", st->job_id, st->step - 1,
           st->nexited, st->ntasks);
    step_free(s, st);
}

static void signal_step(struct sched_ctx *s, const struct sched_step *st, uint32_t signum,
                        const char *reason)
{
    Gs__SignalTasks sig;
    Gs__Envelope env;

    sched_signal_tasks_msg(&sig, &env, st->job_id, signum, GS__END_REASON__END_REASON_CANCELLED,
                           reason);
    sig.step = st->step;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        if (st->nodes[i].index < s->nnodes)
            sched_node_send(s->nodes[st->nodes[i].index], &env);
    }
}

/* Through the node's current connection; step exits are not stored, so at once. */
static void ack_exit(struct sched_node *n, const Gs__TaskExit *ex)
{
    Gs__TaskRef ref;

    sched_task_ref_of(ex, &ref);
    sched_send_exit_ack(n, &ref);
}

static void retry_waiting(struct sched_ctx *s, uint64_t job_id);

/*
 * Records rank's exit, passes it to srun, and ends the step after the last one: what it
 * held goes to the steps waiting in its job.
 */
static void task_done(struct sched_ctx *s, struct sched_step *st, const Gs__TaskExit *ex)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t job_id = st->job_id;

    st->exited[ex->rank] = true;
    st->nexited++;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
    env.task_exit = (Gs__TaskExit *)ex;
    to_srun(st, &env);
    if (st->nexited < st->ntasks)
        return;
    step_finish(s, st);
    retry_waiting(s, job_id);
}

/* An exit made up by gschedd for rank, whose worker cannot say (gone, or never reached). */
static void fake_exit(struct sched_ctx *s, struct sched_step *st, uint32_t rank, const char *node,
                      Gs__EndReason why, const char *error)
{
    Gs__TaskExit ex = GS__TASK_EXIT__INIT;

    ex.job_id = st->job_id;
    ex.rank = rank;
    ex.node_name = (char *)node;
    ex.exit_code = 1;
    ex.end_reason = why;
    ex.end_time_ms = gs_clock_wall_ms();
    ex.attempt = st->attempt;
    ex.launch_error = (char *)error;
    ex.step = st->step;
    task_done(s, st, &ex);
}

/* --- the step's layout ---------------------------------------------------------------------- */

/*
 * Which of the job's nodes the step uses (alloc indices into pick[], in node-rank order)
 * from -w and -N. *named: the nodes were named (-w), so none may be dropped later.
 */
static int pick_nodes(const struct sched_job *job, const struct sched_alloc_msg *m,
                      const Gs__StepLaunchRequest *req, bool *pick, uint32_t *ret_k, char *why,
                      size_t size)
{
    uint32_t k = 0, want = req->nodes;

    if (want > m->n) {
        snprintf(why, size, "job %" PRIu64 " has %zu node%s, the step asks for %u", job->id, m->n,
                 m->n == 1 ? "" : "s", want);
        return -EINVAL;
    }
    for (size_t i = 0; i < req->n_nodelist; i++) {
        size_t at = 0;

        while (at < m->n && strcmp(m->nodes[at].node_name, req->nodelist[i]) != 0)
            at++;
        if (at == m->n) {
            snprintf(why, size, "node '%s' (-w) is not one of job %" PRIu64 "'s nodes",
                     req->nodelist[i], job->id);
            return -EINVAL;
        }
        if (!pick[at])
            k++;
        pick[at] = true;
    }
    if (want > 0 && k > want) {
        snprintf(why, size, "-w names %u nodes but -N asks for %u", k, want);
        return -EINVAL;
    }
    if (want == 0 && k == 0)
        want = (uint32_t)m->n;
    for (size_t i = 0; i < m->n && k < want; i++) { /* -N beyond -w: the next ones in order */
        if (!pick[i]) {
            pick[i] = true;
            k++;
        }
    }
    *ret_k = k;
    return 0;
}

/*
 * The step's nodes and tasks per node: ntasks spread as sbatch spreads them (the first nodes
 * one more), at most ntasks_per_node each; neither given: the job's own layout on those
 * nodes. Fewer tasks than nodes uses only the first nodes, as srun does ("setting nnodes"),
 * unless the nodes were named. Whether the nodes can hold the tasks' CPUs and GPUs is
 * step_take()'s.
 */
static int plan_layout(const struct sched_job *job, const struct sched_alloc_msg *m,
                       const Gs__StepLaunchRequest *req, struct sched_step *st, char *why,
                       size_t size)
{
    bool *pick = calloc(m->n + 1, sizeof(*pick));
    uint32_t k = 0, ntasks = req->ntasks, tpn = req->ntasks_per_node, rank = 0;
    int rc = -ENOMEM;

    st->nodes = calloc(m->n + 1, sizeof(*st->nodes));
    if (pick == NULL || st->nodes == NULL)
        goto out;
    rc = pick_nodes(job, m, req, pick, &k, why, size);
    if (rc < 0)
        goto out;
    rc = -EINVAL;
    if (tpn > 0 && ntasks == 0)
        ntasks = tpn * k;
    if (tpn > 0 && ntasks > tpn * k) {
        snprintf(why, size, "%u tasks do not fit %u node%s at %u per node", ntasks, k,
                 k == 1 ? "" : "s", tpn);
        goto out;
    }
    if (ntasks > 0 && ntasks < k && req->n_nodelist > 0) {
        snprintf(why, size, "%u task%s cannot cover the %u nodes -w names", ntasks,
                 ntasks == 1 ? "" : "s", k);
        goto out;
    }
    for (uint32_t i = 0, used = 0; i < m->n; i++) {
        struct step_node *sn = &st->nodes[st->nnodes];
        uint32_t cnt;

        if (!pick[i])
            continue;
        if (ntasks > 0) {
            uint32_t kk = ntasks < k ? ntasks : k;
            if (used == kk)
                break;
            cnt = ntasks / kk + (used < ntasks % kk ? 1 : 0);
        } else {
            cnt = m->nodes[i].ntasks; /* the job's layout */
            if (cnt == 0 && req->n_nodelist == 0 && req->nodes == 0)
                continue; /* a node the job put no task on; srun -N would name it */
            if (cnt == 0) {
                snprintf(why, size,
                         "node %s has no task in job %" PRIu64 "'s layout: say how many (-n)",
                         m->nodes[i].node_name, job->id);
                goto out;
            }
        }
        used++;
        sn->index = job->alloc.nodes[i].node;
        sn->alloc_index = i;
        sn->first_rank = rank;
        sn->ntasks = cnt;
        rank += cnt;
        st->nnodes++;
    }
    if (rank == 0) {
        snprintf(why, size, "the step would have no tasks");
        goto out;
    }
    st->ntasks = rank;
    st->exited = calloc(rank, sizeof(*st->exited));
    rc = st->exited == NULL ? -ENOMEM : 0;
out:
    free(pick);
    return rc;
}

/* --- what the step takes ------------------------------------------------------------------------
 */

/* GPUs each task is bound to: --gpus-per-task, else the job's unless -G or --gpus-per-node. */
static uint32_t step_gpus_per_task(const struct sched_job *job, const Gs__StepLaunchRequest *req)
{
    if (req->gpus_per_task > 0)
        return req->gpus_per_task;
    if (req->gpus > 0 || req->gpus_per_node > 0)
        return 0; /* the node's share, seen by every task there */
    return job->spec->gpus_per_task;
}

static uint32_t step_cpus_per_task(const struct sched_job *job, const Gs__StepLaunchRequest *req)
{
    return req->cpus_per_task > 0 ? req->cpus_per_task : job->spec->cpus_per_task;
}

/* What the step asks of each of the job's nodes (ask: one per job node, zeroed). */
static void step_asks(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                      const struct sched_step *st, struct sched_step_ask *ask)
{
    uint32_t gpt = step_gpus_per_task(job, req);

    for (uint32_t k = 0; k < st->nnodes; k++) {
        struct sched_step_ask *a = &ask[st->nodes[k].alloc_index];

        a->ntasks = st->nodes[k].ntasks;
        a->cpus_per_task = step_cpus_per_task(job, req);
        a->exact_cores = req->exact || req->exclusive || req->cpus_per_task > 0;
        if (gpt > 0)
            a->gpus = a->ntasks * gpt;
        else if (req->gpus_per_node > 0)
            a->gpus = req->gpus_per_node;
        else if (req->gpus > 0) /* spread as tasks are: the first nodes one more */
            a->gpus = req->gpus / st->nnodes + (k < req->gpus % st->nnodes ? 1 : 0);
        else
            a->all_gpus = true;
    }
}

/*
 * Gives the step its cores and GPUs (st->grants) when they are free and no earlier step of
 * the job waits (behind; --overlap steps never wait). Returns 0, -EBUSY (wait), -ENOSPC with
 * why (never in this job), -ENOMEM.
 */
static int step_take(struct sched_step_seq *q, const struct sched_job *job,
                     const struct sched_alloc_msg *m, const Gs__StepLaunchRequest *req,
                     struct sched_step *st, bool behind, char *why, size_t size)
{
    uint32_t n = job->alloc.nnodes, at = 0;
    struct sched_step_ask *ask = calloc(n + 1, sizeof(*ask));
    struct sched_step_grant *grants = calloc(n + 1, sizeof(*grants));
    int rc = -ENOMEM;

    if (ask == NULL || grants == NULL)
        goto out;
    step_asks(job, req, st, ask);
    rc = sched_step_alloc_take(q->held, ask, req->overlap, grants, &at);
    if (rc == 0 && behind && !req->overlap) { /* it fits, but first come first served */
        sched_step_alloc_give_back(q->held, grants);
        rc = -EBUSY;
    }
    if (rc == -ENOSPC)
        snprintf(why, size, STEP_NEVER_FITS);
    if (rc == -ENOSPC && at < m->n) {
        GS_LOG(GS_LOG_INFO,
               "job=%" PRIu64 " node=%s ntasks=%u cpus_per_task=%u gpus=%s%u job_cores=%zu "
               "job_gpus=%zu step never fits",
               job->id, m->nodes[at].node_name, ask[at].ntasks, ask[at].cpus_per_task,
               ask[at].all_gpus ? "all:" : "", ask[at].gpus, m->nodes[at].n_cores,
               m->nodes[at].n_gpus);
    }
    if (rc == 0) {
        st->grants = grants;
        grants = NULL;
    }
out:
    free(ask);
    free(grants);
    return rc;
}

/* --- launching -------------------------------------------------------------------------------- */

struct step_msg {
    Gs__LaunchTasks lt;
    Gs__UserIdentity user;
    Gs__TaskLimits limits;
    Gs__RunSpec run;
    Gs__NodeAllocation *nodes; /* the step's: the job's with its layout, cores and GPUs */
    Gs__NodeAllocation **node_ptrs;
    uint32_t *slices; /* every node's GPU and core lists */
    Gs__LaunchTasks__EnvEntry *env;
    Gs__LaunchTasks__EnvEntry **env_ptrs;
    Gs__TaskAssignment *tasks;
    Gs__TaskAssignment **task_ptrs;
};

static void step_msg_release(struct step_msg *m)
{
    free(m->nodes);
    free(m->node_ptrs);
    free(m->slices);
    free(m->env);
    free(m->env_ptrs);
    free(m->tasks);
    free(m->task_ptrs);
}

/* Seconds the job has left (at least 1), 0 when it has no time limit. */
static uint64_t time_left_s(const struct sched_job *job)
{
    uint64_t now = gs_clock_wall_ms() / 1000, end;

    if (job->spec->time_limit_s == GS_DURATION_INFINITE)
        return 0;
    end = job->start_ms / 1000 + job->spec->time_limit_s;
    return end > now ? end - now : 1;
}

static size_t bits_count(const uint64_t *words, size_t nwords)
{
    size_t n = 0;

    for (size_t w = 0; w < nwords; w++)
        n += (size_t)__builtin_popcountll(words[w]);
    return n;
}

static size_t bits_list(const uint64_t *words, size_t nwords, uint32_t *out)
{
    size_t n = 0;

    for (size_t w = 0; w < nwords; w++) {
        for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
            out[n++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
    }
    return n;
}

/* Each step node's GPUs and cores: what its grant names, in index order. */
static int step_slices(const struct sched_step *st, struct step_msg *m)
{
    size_t total = 0, at = 0;

    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct sched_step_grant *g = &st->grants[st->nodes[i].alloc_index];

        total += bits_count(&g->gpus, 1) + bits_count(g->cores, SCHED_STEP_CORE_WORDS);
    }
    m->slices = calloc(total + 1, sizeof(*m->slices));
    if (m->slices == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct sched_step_grant *g = &st->grants[st->nodes[i].alloc_index];
        Gs__NodeAllocation *na = &m->nodes[i];

        na->gpus = m->slices + at;
        na->n_gpus = bits_list(&g->gpus, 1, na->gpus);
        at += na->n_gpus;
        na->cores = m->slices + at;
        na->n_cores = bits_list(g->cores, SCHED_STEP_CORE_WORDS, na->cores);
        at += na->n_cores;
    }
    return 0;
}

/* Everything of the LaunchTasks but each node's tasks, borrowing from job, req and alloc. */
static int step_msg_init(struct sched_ctx *s, const struct sched_job *job,
                         const Gs__StepLaunchRequest *req, const struct sched_step *st,
                         const struct sched_alloc_msg *alloc, struct step_msg *m)
{
    uint32_t most = 0;

    m->nodes = calloc(st->nnodes + 1, sizeof(*m->nodes));
    m->node_ptrs = calloc(st->nnodes + 1, sizeof(*m->node_ptrs));
    m->env = calloc(req->n_env + 1, sizeof(*m->env));
    m->env_ptrs = calloc(req->n_env + 1, sizeof(*m->env_ptrs));
    for (uint32_t i = 0; i < st->nnodes; i++)
        most = st->nodes[i].ntasks > most ? st->nodes[i].ntasks : most;
    m->tasks = calloc(most + 1, sizeof(*m->tasks));
    m->task_ptrs = calloc(most + 1, sizeof(*m->task_ptrs));
    if (m->nodes == NULL || m->node_ptrs == NULL || m->env == NULL || m->env_ptrs == NULL ||
        m->tasks == NULL || m->task_ptrs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        m->nodes[i] = alloc->nodes[st->nodes[i].alloc_index]; /* its lists replaced below */
        m->nodes[i].first_rank = st->nodes[i].first_rank;
        m->nodes[i].ntasks = st->nodes[i].ntasks;
        m->node_ptrs[i] = &m->nodes[i];
    }
    if (step_slices(st, m) < 0)
        return -ENOMEM;
    /* srun's whole environment: the batch step's SLURM_* included; the worker adds the
     * step's and each task's variables over it. */
    for (size_t i = 0; i < req->n_env; i++) {
        gs__launch_tasks__env_entry__init(&m->env[i]);
        m->env[i].key = req->env[i]->key;
        m->env[i].value = req->env[i]->value;
        m->env_ptrs[i] = &m->env[i];
    }
    gs__run_spec__init(&m->run);
    m->run.n_argv = req->n_argv;
    m->run.argv = req->argv;
    m->run.slurm = true;
    m->run.workdir = req->workdir[0] != '\0'      ? req->workdir
                     : job->spec->workdir != NULL ? job->spec->workdir
                                                  : "";
    m->run.submit_dir = job->spec->submit_dir != NULL ? job->spec->submit_dir : "";
    m->run.submit_host = job->spec->submit_host != NULL ? job->spec->submit_host : "";
    sched_launch_msg_job(s, job, &m->lt, &m->user, &m->limits);
    m->limits.time_limit_s = time_left_s(job);
    if (req->job_name[0] != '\0')
        m->lt.job_name = req->job_name;
    m->lt.n_allocation = st->nnodes;
    m->lt.allocation = m->node_ptrs;
    m->lt.world_size = st->ntasks;
    m->lt.master_addr = m->nodes[0].address;
    m->lt.run = &m->run;
    m->lt.n_env = req->n_env;
    m->lt.env = m->env_ptrs;
    m->lt.step = st->step;
    return 0;
}

/* Node na's tasks: the step's CPUs and GPUs per task, else the job's (sched_node_tasks). */
static void node_tasks(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                       const Gs__NodeAllocation *na, struct step_msg *m)
{
    sched_node_tasks(na, na->ntasks, step_cpus_per_task(job, req), step_gpus_per_task(job, req),
                     m->tasks, m->task_ptrs, &m->lt);
}

static void send_reply(struct sched_cli *c, uint64_t request_id, const struct sched_step *st,
                       const struct sched_alloc_msg *alloc)
{
    Gs__StepLaunchReply reply = GS__STEP_LAUNCH_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char **names = calloc(st->nnodes + 1, sizeof(*names));
    uint32_t *tpn = calloc(st->nnodes + 1, sizeof(*tpn));

    if (names != NULL && tpn != NULL) {
        for (uint32_t i = 0; i < st->nnodes; i++) {
            names[i] = alloc->nodes[st->nodes[i].alloc_index].node_name;
            tpn[i] = st->nodes[i].ntasks;
        }
        reply.n_nodes = reply.n_tasks_per_node = st->nnodes;
    }
    reply.step_id = st->step - 1;
    reply.ntasks = st->ntasks;
    reply.nodes = names;
    reply.tasks_per_node = tpn;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_STEP_LAUNCH_REPLY;
    env.step_launch_reply = &reply;
    sched_cli_send(c, &env);
    free(names);
    free(tpn);
}

/* Who may start a step in the job, and whether it can have one now; 0 or -errno with why. */
static int check_job(const struct sched_cli *c, const struct sched_job *job, uint64_t job_id,
                     char *why, size_t size)
{
    if (job == NULL) {
        snprintf(why, size, "job %" PRIu64 ": no such job", job_id);
        return -ENOENT;
    }
    if (c->uid != 0 && c->uid != job->uid) {
        snprintf(why, size, "job %" PRIu64 " belongs to %s (uid %u), not to uid %u", job_id,
                 job->user, job->uid, (unsigned)c->uid);
        return -EPERM;
    }
    if (job->state != SCHED_JOB_RUNNING) {
        snprintf(why, size, "job %" PRIu64 " is %s, not running: a step needs a running job",
                 job_id, sched_job_state_name(job->state));
        return -EINVAL;
    }
    return 0;
}

/* Whether every node of the step has its worker connected; -EAGAIN with why if not. */
static int check_workers(struct sched_ctx *s, const struct sched_step *st,
                         const struct sched_alloc_msg *alloc, char *why, size_t size)
{
    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct sched_node *n =
            st->nodes[i].index < s->nnodes ? s->nodes[st->nodes[i].index] : NULL;

        if (n == NULL || n->conn == NULL) {
            snprintf(why, size, "node %s: its worker is not connected",
                     alloc->nodes[st->nodes[i].alloc_index].node_name);
            return -EAGAIN;
        }
    }
    return 0;
}

static void refuse(struct sched_cli *c, uint64_t request_id, uint64_t job_id, int rc,
                   const char *why)
{
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " uid=%u rc=%d why=\"%s\" step refused", job_id,
           (unsigned)c->uid, rc, why);
    sched_cli_error(c, request_id, rc, why, false);
}

/*
 * Starts st, its grants given: numbers it, answers srun, sends each node its LaunchTasks.
 * Out of memory it is refused and freed instead.
 */
static void step_run(struct sched_ctx *s, struct sched_step_seq *q, const struct sched_job *job,
                     const Gs__StepLaunchRequest *req, struct sched_step *st,
                     const struct sched_alloc_msg *alloc)
{
    struct sched_cli *c = st->cli;
    struct step_msg m = {0};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    bool *unsent = NULL;
    int rc;

    st->step = ++q->last;
    st->attempt = job->attempt;
    rc = step_msg_init(s, job, req, st, alloc, &m);
    if (rc == 0 && (unsent = calloc(st->nnodes, sizeof(*unsent))) == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        uint64_t request_id = st->request_id;

        step_free(s, st);
        refuse(c, request_id, job->id, rc, "out of memory");
        goto out;
    }
    c->step = st;
    st->next = s->steps;
    s->steps = st;
    /* The reply goes first: srun must know the step before its first output comes. */
    send_reply(c, st->request_id, st, alloc);
    GS_LOG(GS_LOG_INFO,
           "job=%" PRIu64 " step=%u ntasks=%u nodes=%u gpus=%zu cores=%zu overlap=%d waited=%d "
           "argv0=%s step launched",
           job->id, st->step - 1, st->ntasks, st->nnodes, m.nodes[0].n_gpus, m.nodes[0].n_cores,
           req->overlap, st->req != NULL, req->argv[0]);
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &m.lt;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        node_tasks(job, req, &m.nodes[i], &m);
        env.request_id = st->nodes[i].launch_request_id = ++s->next_request_id;
        unsent[i] = !sched_node_send(s->nodes[st->nodes[i].index], &env);
    }
    /* A launch that could not go out is said as its tasks' exits, after the reply, so that
     * srun reports them as any other; the last one ends (frees) the step, and req with it. */
    for (uint32_t i = 0, nnodes = st->nnodes; i < nnodes; i++) {
        for (uint32_t r = 0; unsent[i] && r < m.nodes[i].ntasks; r++) {
            struct sched_step *left = step_find(s, job->id, m.lt.step);

            if (left == NULL)
                break;
            fake_exit(s, left, m.nodes[i].first_rank + r, m.nodes[i].node_name,
                      GS__END_REASON__END_REASON_LAUNCH_FAILED,
                      "gschedd could not send the launch to its worker");
        }
    }
out:
    free(unsent);
    step_msg_release(&m);
}

/* --- waiting ------------------------------------------------------------------------------------
 */

/* Queues st (laid out, nothing given) behind its job's waiting steps and tells srun. */
static int step_wait(struct sched_step_seq *q, const Gs__StepLaunchRequest *req,
                     struct sched_step *st)
{
    size_t len = gs__step_launch_request__get_packed_size(req);
    uint8_t *packed = malloc(len + 1);
    Gs__StepPending pending = GS__STEP_PENDING__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct sched_step **tail = &q->waiting;
    uint32_t ahead = 0;

    if (packed == NULL)
        return -ENOMEM;
    gs__step_launch_request__pack(req, packed); /* a copy that outlives the request's frame */
    st->req = gs__step_launch_request__unpack(NULL, len, packed);
    free(packed);
    if (st->req == NULL)
        return -ENOMEM;
    for (; *tail != NULL; tail = &(*tail)->next)
        ahead++;
    *tail = st;
    st->next = NULL;
    st->waiting = true;
    st->cli->step = st;
    pending.reason = STEP_BUSY_REASON;
    env.request_id = st->request_id;
    env.body_case = GS__ENVELOPE__BODY_STEP_PENDING;
    env.step_pending = &pending;
    sched_cli_send(st->cli, &env);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " uid=%u ntasks=%u ahead=%u step waits for resources",
           st->job_id, (unsigned)st->cli->uid, st->ntasks, ahead);
    return 0;
}

/* The first waiting step of q: -EBUSY when it still does not fit, else 0 (started, or
 * refused: its job or a worker went away). */
static int start_waiting(struct sched_ctx *s, struct sched_step_seq *q, struct sched_step *st)
{
    struct sched_job *job = sched_jobs_find(s->jobs, st->job_id);
    struct sched_alloc_msg alloc = {0};
    struct sched_cli *c = st->cli;
    uint64_t request_id = st->request_id, job_id = st->job_id;
    char why[320] = "out of memory";
    int rc = check_job(c, job, st->job_id, why, sizeof(why));

    if (rc == 0)
        rc = sched_alloc_msg_build(s, job, &alloc);
    if (rc == 0)
        rc = check_workers(s, st, &alloc, why, sizeof(why));
    if (rc == 0)
        rc = step_take(q, job, &alloc, st->req, st, false, why, sizeof(why));
    if (rc == -EBUSY)
        goto out;
    unlink_step(&q->waiting, st);
    st->waiting = false;
    if (rc == 0) {
        step_run(s, q, job, st->req, st, &alloc);
    } else {
        step_free(s, st);
        refuse(c, request_id, job_id, rc, why);
    }
    rc = 0;
out:
    sched_alloc_msg_release(&alloc);
    return rc;
}

/*
 * A step of the job ended or stopped waiting: its waiting steps start in order while they
 * fit. A step that ends while this runs (a launch that could not go out) asks for one more
 * round instead of starting a second one here.
 */
static void retry_waiting(struct sched_ctx *s, uint64_t job_id)
{
    struct sched_step_seq *q = job_find(s, job_id);

    if (q == NULL || q->ending)
        return;
    if (q->retrying) {
        q->retry_again = true;
        return;
    }
    q->retrying = true;
    do {
        q->retry_again = false;
        while (q->waiting != NULL && start_waiting(s, q, q->waiting) == 0) {
        }
    } while (q->retry_again);
    q->retrying = false;
}

void sched_steps_launch(struct sched_cli *c, uint64_t request_id, const Gs__StepLaunchRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct sched_step *st = calloc(1, sizeof(*st));
    struct sched_alloc_msg alloc = {0};
    struct sched_step_seq *q = NULL;
    char why[320] = "out of memory";
    int rc = st == NULL ? -ENOMEM : check_job(c, job, req->job_id, why, sizeof(why));

    if (rc == 0 && req->n_argv == 0) {
        snprintf(why, sizeof(why), "no command to run");
        rc = -EINVAL;
    }
    if (rc == 0 && (q = job_get(s, job)) == NULL)
        rc = -ENOMEM;
    if (rc == 0)
        rc = sched_alloc_msg_build(s, job, &alloc);
    if (rc == 0)
        rc = plan_layout(job, &alloc, req, st, why, sizeof(why));
    if (rc == 0)
        rc = check_workers(s, st, &alloc, why, sizeof(why));
    if (rc == 0) {
        st->job_id = job->id;
        st->cli = c;
        st->request_id = request_id;
        rc = step_take(q, job, &alloc, req, st, q->waiting != NULL, why, sizeof(why));
    }
    if (rc == -EBUSY)
        rc = step_wait(q, req, st);
    if (rc < 0) {
        refuse(c, request_id, req->job_id, rc, why);
        if (st != NULL)
            step_free(s, st);
    } else if (!st->waiting) {
        step_run(s, q, job, req, st, &alloc);
    }
    sched_alloc_msg_release(&alloc);
}

/* --- what comes back ----------------------------------------------------------------------------
 */

void sched_steps_cli_message(struct sched_cli *c, const Gs__Envelope *env)
{
    struct sched_step *st = c->step;
    char reason[64];

    if (st->waiting) { /* nothing runs yet; srun withdraws by closing */
        GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " body=%s for a waiting step, ignored", st->job_id,
               gs_proto_body_name(env->body_case));
        return;
    }
    if (env->body_case != GS__ENVELOPE__BODY_STEP_SIGNAL) {
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u body=%s on a step's connection, ignored",
               st->job_id, st->step - 1, gs_proto_body_name(env->body_case));
        return;
    }
    snprintf(reason, sizeof(reason), "srun (uid %u) forwarded signal %u", (unsigned)c->uid,
             env->step_signal->signal);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u signal=%u step signalled", st->job_id,
           st->step - 1, env->step_signal->signal);
    signal_step(c->s, st, env->step_signal->signal, reason);
}

void sched_steps_cli_gone(struct sched_cli *c)
{
    struct sched_step *st = c->step;
    struct sched_ctx *s = c->s;

    if (st == NULL)
        return;
    if (st->waiting) { /* its request goes; the next ones may fit now */
        uint64_t job_id = st->job_id;

        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " uid=%u srun gone; waiting step withdrawn", job_id,
               (unsigned)c->uid);
        step_free(s, st);
        if (!s->stopping)
            retry_waiting(s, job_id);
        return;
    }
    st->cli = NULL;
    c->step = NULL;
    /* On shutdown every connection closes and the tasks are to go on: nothing to keep. */
    if (s->stopping) {
        step_free(s, st);
        return;
    }
    /* srun went away before its tasks ended: they end too, as with Slurm. The step keeps
     * what it holds until their exits come (task_done), acknowledged without srun. */
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u exited=%u/%u srun gone; ending the step",
           st->job_id, st->step - 1, st->nexited, st->ntasks);
    signal_step(s, st, 0, "srun went away");
}

void sched_steps_task_exit(struct sched_ctx *s, struct sched_node *n, const Gs__TaskExit *ex)
{
    struct sched_step *st = step_find(s, ex->job_id, ex->step);
    Gs__TaskExit copy;

    ack_exit(n, ex);
    if (st == NULL || ex->attempt != st->attempt || ex->rank >= st->ntasks ||
        st->exited[ex->rank]) {
        GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%u rank=%u node=%s exit of no step, acked",
               ex->job_id, ex->step > 0 ? ex->step - 1 : 0, ex->rank, n->name);
        return;
    }
    GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%u rank=%u node=%s exit=%d signal=%u task ended",
           ex->job_id, ex->step - 1, ex->rank, n->name, ex->exit_code, ex->term_signal);
    copy = *ex;
    if (copy.node_name == NULL || copy.node_name[0] == '\0')
        copy.node_name = n->name;
    task_done(s, st, &copy);
}

void sched_steps_output(struct sched_ctx *s, struct sched_node *n, const Gs__StepOutput *out)
{
    struct sched_step *st = step_find(s, out->job_id, out->step);
    Gs__Envelope env = GS__ENVELOPE__INIT;

    (void)n;
    if (st == NULL)
        return; /* srun is gone: nobody reads it */
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT;
    env.step_output = (Gs__StepOutput *)out;
    to_srun(st, &env);
}

bool sched_steps_launch_reply(struct sched_ctx *s, struct sched_node *n, uint64_t request_id)
{
    for (struct sched_step *st = s->steps; st != NULL && request_id != 0; st = st->next) {
        for (uint32_t i = 0; i < st->nnodes; i++) {
            if (st->nodes[i].launch_request_id == request_id && st->nodes[i].index == n->index)
                return true; /* failed tasks come as TaskExits too; nothing else to keep */
        }
    }
    return false;
}

void sched_steps_node_gone(struct sched_ctx *s, struct sched_node *n)
{
    char why[200];

    snprintf(why, sizeof(why), "node %s: %s", n->name,
             n->reason[0] != '\0' ? n->reason : "its worker went away");
    for (struct sched_step *st = s->steps, *next; st != NULL; st = next) {
        bool ended = false;

        next = st->next;
        /* The last fake exit frees st: ended is tested before st is read again. */
        for (uint32_t i = 0; !ended && i < st->nnodes; i++) {
            const struct step_node *sn = &st->nodes[i];

            if (sn->index != n->index)
                continue;
            for (uint32_t r = sn->first_rank; !ended && r < sn->first_rank + sn->ntasks; r++) {
                if (st->exited[r])
                    continue;
                ended = st->nexited + 1 == st->ntasks;
                fake_exit(s, st, r, n->name, GS__END_REASON__END_REASON_LOST, why);
            }
        }
    }
}

void sched_steps_job_ended(struct sched_ctx *s, uint64_t job_id)
{
    const struct sched_job *job = sched_jobs_find(s->jobs, job_id);
    struct sched_step_seq *q = job_find(s, job_id);
    char msg[200];

    snprintf(msg, sizeof(msg), "job %" PRIu64 " ended (%s): its steps end with it", job_id,
             job != NULL ? sched_job_state_name(job->state) : "gone");
    if (q != NULL)
        q->ending = true; /* what the steps below give back starts nothing */
    while (q != NULL && q->waiting != NULL) {
        struct sched_step *st = q->waiting;
        struct sched_cli *c = st->cli;
        uint64_t request_id = st->request_id;

        step_free(s, st);
        if (c != NULL)
            sched_cli_error(c, request_id, -ECANCELED, msg, false);
    }
    for (struct sched_step *st = s->steps, *next; st != NULL; st = next) {
        Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
        Gs__Envelope env = GS__ENVELOPE__INIT;

        next = st->next;
        if (st->job_id != job_id)
            continue;
        err.code = -ECANCELED;
        err.message = msg;
        env.body_case = GS__ENVELOPE__BODY_ERROR;
        env.error = &err;
        to_srun(st, &env);
        step_finish(s, st);
    }
    forget_job(s, job_id);
}
