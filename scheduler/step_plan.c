/*
 * step_plan.c: what a job step (srun inside a running job, sched_steps.c) is made of, pure
 * over the job, the StepLaunchRequest and the job's allocation message: its layout (which of
 * the job's nodes, how many tasks on each, their ranks), what it takes of the job's cores
 * and GPUs beside the running steps (step_alloc.c keeps the accounting), and its LaunchTasks
 * (the job's with the step's layout, share, command and environment), one per step node.
 * Nothing here sends or waits; the one state it changes is the job's holdings, which
 * sched_step_take() takes from.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/jobspec.h"
#include "scheduler/steps_internal.h"

#define STEP_NEVER_FITS "Requested node configuration is not available"

/* --- the step's layout ---------------------------------------------------------------------- */

/*
 * The job's nodes the step may use (in[] over alloc indices): those of its heterogeneous
 * components --het-group names (component 0 by default; an ordinary job is all component
 * 0). *ret_n: how many.
 */
static int het_nodes(const struct sched_job *job, const struct sched_alloc_msg *m,
                     const Gs__StepLaunchRequest *req, bool *in, uint32_t *ret_n, char *why,
                     size_t size)
{
    const struct gs_jobspec *sp = job->spec;
    uint32_t zero = 0, n = 0;
    const uint32_t *groups = req->n_het_groups > 0 ? req->het_groups : &zero;
    size_t ngroups = req->n_het_groups > 0 ? req->n_het_groups : 1;

    if (ngroups > 1 && (req->nodes > 0 || req->ntasks > 0 || req->ntasks_per_node > 0 ||
                        req->ntasks_per_gpu > 0)) {
        snprintf(why, size,
                 "-N, -n, --ntasks-per-node and --ntasks-per-gpu apply to one het group: a step "
                 "over several (--het-group) runs each group's own layout");
        return -EINVAL;
    }
    for (size_t g = 0; g < ngroups; g++) {
        uint32_t first = gs_jobspec_het_first_node(sp, groups[g]);
        struct gs_jobspec view;

        if (groups[g] > sp->nhet) {
            snprintf(why, size, "--het-group %u: job %" PRIu64 " has %s%u", groups[g], job->id,
                     sp->nhet > 0 ? "het groups 0-" : "one component, het group ", sp->nhet);
            return -EINVAL;
        }
        gs_jobspec_het_view(sp, groups[g], &view);
        for (uint32_t i = first;
             i < first + (sp->nhet > 0 ? view.nodes : (uint32_t)m->n) && i < m->n; i++) {
            if (sched_job_nokill_lost(job, i))
                continue; /* failed under the job (--no-kill): not a step's */
            n += !in[i];
            in[i] = true;
        }
    }
    *ret_n = n;
    return 0;
}

/*
 * Which of the job's nodes the step uses (alloc indices into pick[], in node-rank order)
 * from --het-group, -w and -N. *named: the nodes were named (-w), so none may be dropped
 * later.
 */
static int pick_nodes(const struct sched_job *job, const struct sched_alloc_msg *m,
                      const Gs__StepLaunchRequest *req, bool *pick, uint32_t *ret_k, char *why,
                      size_t size)
{
    uint32_t k = 0, want = req->nodes, avail = 0;
    bool *in = calloc(m->n + 1, sizeof(*in));
    int rc = in == NULL ? -ENOMEM : het_nodes(job, m, req, in, &avail, why, size);

    if (rc < 0)
        goto out;
    rc = -EINVAL;
    if (want > avail) {
        snprintf(why, size, "job %" PRIu64 " has %u node%s%s, the step asks for %u", job->id, avail,
                 avail == 1 ? "" : "s", job->spec->nhet > 0 ? " in the het group" : "", want);
        goto out;
    }
    for (size_t i = 0; i < req->n_nodelist; i++) {
        size_t at = 0;

        while (at < m->n && strcmp(m->nodes[at].node_name, req->nodelist[i]) != 0)
            at++;
        if (at < m->n && sched_job_nokill_lost(job, at)) {
            snprintf(why, size,
                     "node '%s' (-w) of job %" PRIu64 " failed (the job runs on: "
                     "--no-kill)",
                     req->nodelist[i], job->id);
            goto out;
        }
        if (at == m->n || !in[at]) {
            snprintf(why, size, "node '%s' (-w) is not one of job %" PRIu64 "'s nodes%s",
                     req->nodelist[i], job->id,
                     at < m->n ? " in the step's het group (--het-group)" : "");
            goto out;
        }
        if (!pick[at])
            k++;
        pick[at] = true;
    }
    if (want > 0 && k > want) {
        snprintf(why, size, "-w names %u nodes but -N asks for %u", k, want);
        goto out;
    }
    if (want == 0 && k == 0)
        want = avail;
    for (size_t i = 0; i < m->n && k < want; i++) { /* -N beyond -w: the next ones in order */
        if (in[i] && !pick[i]) {
            pick[i] = true;
            k++;
        }
    }
    *ret_k = k;
    rc = 0;
out:
    free(in);
    return rc;
}

/* -m arbitrary's layout: the host list's, on the nodes of the step's het groups. */
static int arbitrary_layout(const struct sched_job *job, const struct sched_alloc_msg *m,
                            const Gs__StepLaunchRequest *req, struct sched_step *st, char *why,
                            size_t size)
{
    bool *in = calloc(m->n + 1, sizeof(*in));
    uint32_t avail = 0;
    int rc = in == NULL ? -ENOMEM : het_nodes(job, m, req, in, &avail, why, size);

    if (rc == 0)
        rc = sched_step_dist_arbitrary(job, m, req, in, st, why, size);
    free(in);
    return rc;
}

/*
 * The step's GPUs on the j-th of the k nodes it picked (alloc index i), as step_asks() will
 * take them: --gpus-per-node, -G spread over the nodes (the first ones one more), none for
 * --gres=none, else the job's there.
 */
static uint32_t picked_gpus(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                            uint32_t i, uint32_t j, uint32_t k)
{
    if (req->gpus_per_node > 0)
        return req->gpus_per_node;
    if (req->gpus > 0)
        return req->gpus / k + (j < req->gpus % k ? 1 : 0);
    return req->no_gpus ? 0 : (uint32_t)__builtin_popcountll(job->alloc.nodes[i].gpus);
}

/*
 * --ntasks-per-gpu=K: each picked node's task count into cnt[] (by alloc index), K for
 * each GPU the step has there; with -n at most that many in all, the first nodes filled
 * first. A node named by -w must get a task. Returns 0 or -EINVAL with why.
 */
static int per_gpu_counts(const struct sched_job *job, const struct sched_alloc_msg *m,
                          const Gs__StepLaunchRequest *req, const bool *pick, uint32_t k,
                          uint32_t *cnt, char *why, size_t size)
{
    uint64_t total = 0, gpus = 0, per = req->ntasks_per_gpu;

    for (uint32_t i = 0, j = 0; i < m->n; i++) {
        uint64_t want;

        if (!pick[i])
            continue;
        want = per * picked_gpus(job, req, i, j++, k);
        gpus += want / per;
        if (want > GS_JOBSPEC_CPUS_MAX) {
            snprintf(why, size,
                     "--ntasks-per-gpu=%u puts %" PRIu64 " tasks on node %s (at most %u)",
                     req->ntasks_per_gpu, want, m->nodes[i].node_name, GS_JOBSPEC_CPUS_MAX);
            return -EINVAL;
        }
        if (req->ntasks > 0 && want > req->ntasks - total)
            want = total < req->ntasks ? req->ntasks - total : 0;
        if (want == 0 && req->n_nodelist > 0) {
            snprintf(why, size, "node %s (-w) would have no task at --ntasks-per-gpu=%u",
                     m->nodes[i].node_name, req->ntasks_per_gpu);
            return -EINVAL;
        }
        cnt[i] = (uint32_t)want;
        total += want;
    }
    if (total == 0 || req->ntasks > total) {
        snprintf(why, size,
                 "%u task%s do%s not fit --ntasks-per-gpu=%u on the step's %" PRIu64 " GPU%s",
                 req->ntasks > 0 ? req->ntasks : 1, req->ntasks > 1 ? "s" : "",
                 req->ntasks > 1 ? "" : "es", req->ntasks_per_gpu, gpus, gpus == 1 ? "" : "s");
        return -EINVAL;
    }
    return 0;
}

/*
 * The step's nodes and tasks per node: ntasks spread as sbatch spreads them (the first nodes
 * one more), at most ntasks_per_node each, or ntasks_per_gpu for each of the step's GPUs on
 * a node (per_gpu_counts); none given: the job's own layout on those nodes. Fewer tasks
 * than nodes uses only the first nodes, as srun does ("setting nnodes"),
 * unless the nodes were named. --distribution then numbers the tasks; with arbitrary and a
 * host list, that list is the layout. Whether the nodes can hold the tasks' CPUs and GPUs
 * is sched_step_take()'s.
 */
int sched_step_plan_layout(const struct sched_job *job, const struct sched_alloc_msg *m,
                           const Gs__StepLaunchRequest *req, struct sched_step *st, char *why,
                           size_t size)
{
    bool *pick = calloc(m->n + 1, sizeof(*pick));
    uint32_t *per_gpu = calloc(m->n + 1, sizeof(*per_gpu));
    uint32_t k = 0, ntasks = req->ntasks, tpn = req->ntasks_per_node, rank = 0;
    struct gs_dist dist = {0};
    int rc = -ENOMEM;

    st->nodes = calloc(m->n + 1, sizeof(*st->nodes));
    if (pick == NULL || per_gpu == NULL || st->nodes == NULL)
        goto out;
    rc = -EINVAL;
    /* Each task holds a core of its own: counts no node could hold are refused before any
     * array is made for them (srun -n 4000000000 had gschedd number them for minutes). */
    if (ntasks > (uint64_t)m->n * SCHED_MAX_CORES || tpn > SCHED_MAX_CORES ||
        req->ntasks_per_gpu > SCHED_MAX_CORES) {
        snprintf(why, size, "more tasks than the job's %zu node%s can hold (a core each)", m->n,
                 m->n == 1 ? "" : "s");
        goto out;
    }
    if (req->distribution != NULL && req->distribution[0] != '\0' &&
        gs_dist_parse(req->distribution, &dist, why, size) < 0)
        goto out;
    if (dist.nodes == GS_DIST_ARBITRARY && req->n_task_nodes > 0) {
        rc = arbitrary_layout(job, m, req, st, why, size);
        if (rc < 0)
            goto out;
        rank = st->ntasks;
        goto exits;
    }
    rc = pick_nodes(job, m, req, pick, &k, why, size);
    if (rc < 0)
        goto out;
    rc = -EINVAL;
    if (req->ntasks_per_gpu > 0 && tpn > 0) {
        snprintf(why, size, "--ntasks-per-gpu and --ntasks-per-node exclude each other");
        goto out;
    }
    if (req->ntasks_per_gpu > 0 && per_gpu_counts(job, m, req, pick, k, per_gpu, why, size) < 0)
        goto out;
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
        if (req->ntasks_per_gpu > 0) {
            cnt = per_gpu[i];
            if (cnt == 0)
                continue; /* no GPU of the step there, or -n filled the nodes before it */
        } else if (ntasks > 0) {
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
        sn->first = rank;
        sn->ntasks = cnt;
        rank += cnt;
        st->nnodes++;
    }
    if (rank > 0 && sched_step_dist_ranks(st, &dist) < 0) {
        rc = -ENOMEM;
        goto out;
    }
exits:
    if (rank == 0) {
        rc = -EINVAL;
        snprintf(why, size, "the step would have no tasks");
        goto out;
    }
    st->ntasks = rank;
    st->exited = calloc(rank, sizeof(*st->exited));
    st->exits = calloc(rank, sizeof(*st->exits));
    rc = st->exited == NULL || st->exits == NULL ? -ENOMEM : 0;
out:
    free(pick);
    free(per_gpu);
    return rc;
}

/* --- what the step takes ------------------------------------------------------------------------
 */

/*
 * GPUs each task is bound to: --gpus-per-task, else the job's unless -G, --gpus-per-node,
 * --ntasks-per-gpu or --gres=none. comp: the job as the component the node belongs to
 * (gs_jobspec_het_view).
 */
static uint32_t step_gpus_per_task(const struct gs_jobspec *comp, const Gs__StepLaunchRequest *req)
{
    if (req->gpus_per_task > 0)
        return req->gpus_per_task;
    if (req->gpus > 0 || req->gpus_per_node > 0 || req->ntasks_per_gpu > 0 || req->no_gpus)
        return 0; /* the node's share, seen by every task there (--gpu-bind may narrow it) */
    return comp->gpus_per_task;
}

/* Cores each of a node's ntasks tasks holds: -c, --cpus-per-gpu's share of C x the step's
 * gpus there (at least one), else the job's (0: the node's cores split between them). */
static uint32_t step_cpus_per_task(const struct gs_jobspec *comp, const Gs__StepLaunchRequest *req,
                                   uint32_t ntasks, uint32_t gpus)
{
    if (req->cpus_per_task > 0)
        return req->cpus_per_task;
    if (req->cpus_per_gpu > 0 && ntasks > 0) {
        uint64_t each = (uint64_t)req->cpus_per_gpu * gpus / ntasks;

        return each == 0 ? 1 : each > GS_JOBSPEC_CPUS_MAX ? GS_JOBSPEC_CPUS_MAX : (uint32_t)each;
    }
    return comp->cpus_per_task;
}

/* The job as the component its alloc_index-th node belongs to. */
static void node_comp(const struct sched_job *job, uint32_t alloc_index, struct gs_jobspec *view)
{
    gs_jobspec_het_view(job->spec, gs_jobspec_het_of_node(job->spec, alloc_index), view);
}

/* What the step asks of each of the job's nodes (ask: one per job node, zeroed). */
static void step_asks(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                      const struct sched_step *st, struct sched_step_ask *ask)
{
    for (uint32_t k = 0; k < st->nnodes; k++) {
        struct sched_step_ask *a = &ask[st->nodes[k].alloc_index];
        struct gs_jobspec comp;
        uint32_t gpt;

        node_comp(job, st->nodes[k].alloc_index, &comp);
        gpt = step_gpus_per_task(&comp, req);
        a->ntasks = st->nodes[k].ntasks;
        if (gpt > 0)
            a->gpus = a->ntasks * gpt;
        else if (req->gpus_per_node > 0)
            a->gpus = req->gpus_per_node;
        else if (req->gpus > 0) /* spread as tasks are: the first nodes one more */
            a->gpus = req->gpus / st->nnodes + (k < req->gpus % st->nnodes ? 1 : 0);
        else if (!req->no_gpus) /* --gres=none: a count given as well wins */
            a->all_gpus = true;
        a->cpus_per_task = step_cpus_per_task(
            &comp, req, a->ntasks,
            a->all_gpus
                ? (uint32_t)__builtin_popcountll(job->alloc.nodes[st->nodes[k].alloc_index].gpus)
                : a->gpus);
        a->exact_cores =
            req->exact || req->exclusive || req->cpus_per_task > 0 || req->cpus_per_gpu > 0;
    }
}

/*
 * Gives the step its cores and GPUs (st->grants) when they are free and no earlier step of
 * the job waits (behind; --overlap steps never wait). Returns 0, -EBUSY (wait), -ENOSPC with
 * why (never in this job), -ENOMEM.
 */
int sched_step_take(struct sched_step_seq *q, const struct sched_job *job,
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

/* --- the LaunchTasks message ------------------------------------------------------------------ */

void sched_step_msg_release(struct sched_step_msg *m)
{
    free(m->nodes);
    free(m->node_ptrs);
    free(m->slices);
    free(m->env);
    free(m->env_ptrs);
    free(m->tasks);
    free(m->task_ptrs);
    free(m->bind);
    free(m->topos);
    free(m->bound);
    free(m->alloc_index);
    free(m->notes);
    free(m->cpu_bind);
    free(m->cpu_bound);
    free(m->mem_bind);
    free(m->mem_bound);
    free(m->rlimits);
    free(m->rlimit_ptrs);
    free(m->rank_nodes);
}

/* Seconds the job has left (at least 1), 0 when it has no time limit. */
static uint64_t time_left_s(const struct sched_job *job)
{
    uint64_t now = gs_clock_wall_ms(), end = sched_job_limit_end_ms(job, now);

    if (end == UINT64_MAX)
        return 0;
    return end > now + 1000 ? (end - now) / 1000 : 1;
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
static int step_slices(const struct sched_step *st, struct sched_step_msg *m)
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

/* --cpu-bind and --gpu-bind read, and every node's tasks bound once, so that a binding the
 * step's cores or GPUs cannot give refuses the step before srun hears of it
 * (step_cpu_bind.c, step_gpu_bind.c). */
static int bind_every_node(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                           const struct sched_step *st, struct sched_step_msg *m)
{
    int rc = sched_step_cpu_bind_prepare(req, st, m);

    if (rc == 0)
        rc = sched_step_mem_bind_prepare(req, st, m);
    if (rc == 0)
        rc = sched_step_bind_prepare(req, st, m);
    for (uint32_t i = 0;
         rc == 0 && (m->bind != NULL || m->cpu_bind != NULL || m->mem_bind != NULL) &&
         i < st->nnodes;
         i++) {
        sched_step_node_tasks(job, req, &m->nodes[i], m);
        rc = m->bind_rc;
    }
    return rc;
}

/* Everything of the LaunchTasks but each node's tasks, borrowing from job, req and alloc. */
int sched_step_msg_init(struct sched_ctx *s, const struct sched_job *job,
                        const Gs__StepLaunchRequest *req, const struct sched_step *st,
                        const struct sched_alloc_msg *alloc, struct sched_step_msg *m)
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
    m->alloc_index = calloc(st->nnodes + 1, sizeof(*m->alloc_index));
    m->topos = calloc(st->nnodes + 1, sizeof(*m->topos));
    if (m->nodes == NULL || m->node_ptrs == NULL || m->env == NULL || m->env_ptrs == NULL ||
        m->tasks == NULL || m->task_ptrs == NULL || m->alloc_index == NULL || m->topos == NULL)
        return -ENOMEM;
    m->st = st;
    if (req->distribution != NULL && req->distribution[0] != '\0' &&
        gs_dist_parse(req->distribution, &m->dist, m->bind_why, sizeof(m->bind_why)) < 0)
        return -EINVAL; /* the layout read it: only a request changed since */
    for (uint32_t i = 0; i < st->nnodes; i++) {
        m->topos[i] =
            st->nodes[i].index < s->nnodes ? s->nodes[st->nodes[i].index]->topology : NULL;
        m->alloc_index[i] = st->nodes[i].alloc_index;
        m->nodes[i] = alloc->nodes[st->nodes[i].alloc_index];   /* its lists replaced below */
        m->nodes[i].first_rank = st->ranks[st->nodes[i].first]; /* its lowest */
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
    /* srun --threads-per-core / --hint, else the job's (sbatch's). */
    m->run.threads_per_core = req->threads_per_core == GS_STEP_THREADS_ALL ? 0
                              : req->threads_per_core > 0                  ? req->threads_per_core
                                                          : job->spec->threads_per_core;
    /* srun's steps run with sbatch --propagate's limits as Slurm's do (srun, in the batch
     * shell, has them). */
    if (gs_proto_jobspec_rlimits(job->spec, &m->run, &m->rlimits, &m->rlimit_ptrs) < 0)
        return -ENOMEM;
    m->run.submit_host = job->spec->submit_host != NULL ? job->spec->submit_host : "";
    m->run.stdin_pattern = req->input ? "" : req->stdin_pattern; /* srun --input=FILE */
    sched_launch_msg_job(s, job, &m->lt, &m->user, &m->limits);
    m->limits.time_limit_s = time_left_s(job);
    if (req->time_limit_s > 0 &&
        (m->limits.time_limit_s == 0 || req->time_limit_s < m->limits.time_limit_s))
        m->limits.time_limit_s = req->time_limit_s; /* srun -t, within the job's */
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
    if (sched_step_mpi(s, req) != NULL) { /* each rank's node, for the servers' process maps */
        m->rank_nodes = calloc(st->ntasks + 1, sizeof(*m->rank_nodes));
        if (m->rank_nodes == NULL)
            return -ENOMEM;
        for (uint32_t i = 0; i < st->nnodes; i++) {
            for (uint32_t t = 0; t < st->nodes[i].ntasks; t++) {
                uint32_t r = st->ranks[st->nodes[i].first + t];

                if (r < st->ntasks)
                    m->rank_nodes[r] = i;
            }
        }
        m->lt.mpi = (char *)sched_step_mpi(s, req);
        m->lt.n_rank_nodes = st->ntasks;
        m->lt.rank_nodes = m->rank_nodes;
    }
    return bind_every_node(job, req, st, m);
}

void sched_step_note_add(struct sched_step_msg *m, size_t l, const char *line)
{
    char *note = m->notes + l * SCHED_STEP_NOTE_MAX;
    size_t at = strlen(note);

    snprintf(note + at, SCHED_STEP_NOTE_MAX - at, "%s%s", at > 0 ? "\n" : "", line);
    m->lt.tasks[l]->stderr_note = note;
}

bool sched_step_node_reads(const struct sched_step *st, const struct step_node *sn,
                           const Gs__StepLaunchRequest *req)
{
    uint32_t rank = req->pty ? 0 : req->input_rank;

    if (!req->pty && req->input_all)
        return sn->ntasks > 0;
    for (uint32_t l = 0; l < sn->ntasks; l++) {
        if (st->ranks[sn->first + l] == rank)
            return true;
    }
    return false;
}

/* Node na's tasks: the step's CPUs and GPUs per task, else the job's (sched_node_tasks). */
void sched_step_node_tasks(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                           const Gs__NodeAllocation *na, struct sched_step_msg *m)
{
    const struct step_node *sn = &m->st->nodes[na - m->nodes];
    struct gs_jobspec comp;
    uint32_t cpt;

    node_comp(job, m->alloc_index[na - m->nodes], &comp);
    cpt = step_cpus_per_task(&comp, req, na->ntasks, (uint32_t)na->n_gpus);
    sched_step_dist_cores(m, na, na->ntasks, cpt);
    sched_node_tasks(na, na->ntasks, cpt, step_gpus_per_task(&comp, req), m->tasks, m->task_ptrs,
                     &m->lt);
    for (uint32_t l = 0; l < na->ntasks; l++)
        m->tasks[l].rank = m->st->ranks[sn->first + l];
    /* srun's stdin goes to every task or to one (--input); its --pty terminal to task 0. */
    m->lt.step_input = req->input && sched_step_node_reads(m->st, sn, req);
    m->lt.step_input_all = req->input_all && !req->pty;
    m->lt.step_input_rank = req->pty ? 0 : req->input_rank;
    m->lt.step_pty = req->pty && na->ntasks > 0 && na->first_rank == 0;
    m->lt.pty_rows = req->pty_rows;
    m->lt.pty_cols = req->pty_cols;
    for (uint32_t l = 0; m->notes != NULL && l < na->ntasks; l++)
        m->notes[l * SCHED_STEP_NOTE_MAX] = '\0'; /* the previous node's reports */
    sched_step_cpu_bind_tasks(m, na);
    sched_step_mem_bind_tasks(m, na);
    sched_step_bind_tasks(m, na);
}
