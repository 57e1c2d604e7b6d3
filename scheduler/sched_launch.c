/*
 * sched_launch.c: starting a job the planner placed, and what gschedd tells workers about
 * it. A start is stored first (the RUNNING row, its tasks, the history event); only the
 * commit's continuation builds the LaunchTasks (the allocation on the wire, each task's
 * cores, the batch environment) and sends it, so a restart finds the job RUNNING and never
 * launches it twice. Also the SignalTasks every other file sends through, and the launch
 * replies that tell which tasks started.
 */
#define _GNU_SOURCE /* strverscmp */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/jobspec.h"
#include "scheduler/planner.h"
#include "scheduler/sched_internal.h"

#define MASTER_PORT_BASE 29500
#define MASTER_PORT_SPAN 10000

struct sched_node *sched_node_at(struct sched_ctx *s, uint32_t index)
{
    return index < s->nnodes ? s->nodes[index] : NULL;
}

const char *sched_node_address(const struct sched_node *n)
{
    const char *a = n->topology != NULL ? n->topology->address : NULL;

    return a != NULL && a[0] != '\0' ? a : n->name;
}

/* --- allocations on the wire ------------------------------------------------------------ */

static uint32_t *bits_to_list(const uint64_t *words, size_t nwords, size_t *ret_n)
{
    size_t n = 0, k = 0;
    uint32_t *v;

    for (size_t w = 0; w < nwords; w++)
        n += (size_t)__builtin_popcountll(words[w]);
    v = calloc(n + 1, sizeof(*v));
    if (v == NULL)
        return NULL;
    for (size_t w = 0; w < nwords; w++) {
        for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
            v[k++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
    }
    *ret_n = n;
    return v;
}

int sched_alloc_msg_build(struct sched_ctx *s, const struct sched_job *job,
                          struct sched_alloc_msg *m)
{
    size_t n = job->alloc.nnodes;

    m->n = 0;
    m->nodes = calloc(n + 1, sizeof(*m->nodes));
    m->ptrs = calloc(n + 1, sizeof(*m->ptrs));
    m->links = calloc(n + 1, sizeof(*m->links));
    if (m->nodes == NULL || m->ptrs == NULL || m->links == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const struct sched_node_alloc *a = &job->alloc.nodes[i];
        struct sched_node *node = sched_node_at(s, a->node);
        Gs__NodeAllocation *na = &m->nodes[i];

        gs__node_allocation__init(na);
        m->ptrs[i] = na;
        m->n++;
        na->node_name = node != NULL ? node->name : "";
        na->address = node != NULL ? (char *)sched_node_address(node) : "";
        na->gpus = bits_to_list(&a->gpus, 1, &na->n_gpus);
        na->cores = bits_to_list(a->cores, SCHED_MAX_CORES / 64, &na->n_cores);
        if (na->gpus == NULL || na->cores == NULL)
            goto fail;
        na->mem_mib = a->mem_mib;
        if (gs_jobspec_runs_leader(job->spec)) { /* the layout steps get by default */
            na->first_rank = i > 0 ? m->nodes[i - 1].first_rank + m->nodes[i - 1].ntasks : 0;
            na->ntasks = gs_jobspec_node_tasks(job->spec, (uint32_t)i);
        } else {
            na->first_rank = (uint32_t)i * job->tasks_per_node;
            na->ntasks = job->tasks_per_node;
        }
        {
            struct sched_gpu_quality q;

            sched_cluster_gpu_quality(s->cluster, a->node, a->gpus, &q);
            if (q.worst != GS_GPUSET_NONE)
                gs_gpuset_class_name(q.worst, q.nvlinks, m->links[i], sizeof(m->links[i]));
            na->gpu_link = m->links[i];
            na->gpu_score = q.score;
        }
    }
    return 0;
fail:
    sched_alloc_msg_release(m);
    return -ENOMEM;
}

void sched_alloc_msg_release(struct sched_alloc_msg *m)
{
    for (size_t i = 0; m->nodes != NULL && i < m->n; i++) {
        free(m->nodes[i].gpus);
        free(m->nodes[i].cores);
    }
    free(m->nodes);
    free(m->ptrs);
    free(m->links);
    m->nodes = NULL;
    m->ptrs = NULL;
    m->links = NULL;
    m->n = 0;
}

/* --- telling workers ------------------------------------------------------------------- */

void sched_signal_tasks_msg(Gs__SignalTasks *sig, Gs__Envelope *env, uint64_t job_id,
                            uint32_t signum, Gs__EndReason why, const char *reason)
{
    gs__signal_tasks__init(sig);
    gs__envelope__init(env);
    sig->job_id = job_id;
    sig->signal = signum;
    sig->reason = (char *)reason;
    sig->end_reason = why;
    env->body_case = GS__ENVELOPE__BODY_SIGNAL_TASKS;
    env->signal_tasks = sig;
}

/* SignalTasks to every node of the job but skip (an alloc node index, or UINT32_MAX). */
void sched_signal_job(struct sched_ctx *s, const struct sched_job *job, uint32_t skip,
                      uint32_t signum, Gs__EndReason why, const char *reason)
{
    Gs__SignalTasks sig;
    Gs__Envelope env;

    sched_signal_tasks_msg(&sig, &env, job->id, signum, why, reason);
    sig.all_steps = true; /* the batch shell and every srun step inside the job */
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);

        if (i != skip && n != NULL)
            sched_node_send(n, &env);
    }
}

/* A signal for the batch shell alone (scancel -b): it runs on the job's first node. */
void sched_signal_batch(struct sched_ctx *s, const struct sched_job *job, uint32_t signum)
{
    struct sched_node *n =
        job->alloc.nnodes > 0 ? sched_node_at(s, job->alloc.nodes[0].node) : NULL;
    Gs__SignalTasks sig;
    Gs__Envelope env;

    sched_signal_tasks_msg(&sig, &env, job->id, signum, GS__END_REASON__END_REASON_NONE,
                           "signal from scancel --batch");
    sig.batch_only = true;
    if (n != NULL)
        sched_node_send(n, &env);
}

/* The NUMA node of core c on a node, -1 when its topology does not say. */
static int core_numa(const Gs__NodeTopology *t, uint32_t c)
{
    for (size_t i = 0; t != NULL && i < t->n_numa_nodes; i++) {
        for (size_t k = 0; k < t->numa_nodes[i]->n_cores; k++) {
            if (t->numa_nodes[i]->cores[k] == c)
                return (int)t->numa_nodes[i]->os_index;
        }
    }
    return -1;
}

/*
 * With one task per GPU, reorders the node's allocated cores so that task l's even share
 * (chunk l) is taken from the cores on GPU l's NUMA node first: each rank runs next to its
 * GPU, and no two ranks share a core.
 */
static int order_cores(const Gs__NodeTopology *t, Gs__NodeAllocation *na, uint32_t ntasks)
{
    size_t per = ntasks > 0 ? na->n_cores / ntasks : 0, k = 0;
    uint32_t *ordered = calloc(na->n_cores + 1, sizeof(*ordered));
    bool *used = calloc(na->n_cores + 1, sizeof(*used));
    int rc = -ENOMEM;

    if (ordered == NULL || used == NULL)
        goto out;
    for (uint32_t l = 0; l < ntasks && per > 0; l++) {
        uint32_t g = l < na->n_gpus ? na->gpus[l] : UINT32_MAX;
        int want = g < t->n_gpus ? t->gpus[g]->numa_node : -1;
        size_t got = 0;

        for (int pass = 0; pass < 2 && got < per; pass++) {
            for (size_t c = 0; c < na->n_cores && got < per; c++) {
                if (used[c] || (pass == 0 && (want < 0 || core_numa(t, na->cores[c]) != want)))
                    continue;
                used[c] = true;
                ordered[k++] = na->cores[c];
                got++;
            }
        }
    }
    for (size_t c = 0; c < na->n_cores; c++) {
        if (!used[c])
            ordered[k++] = na->cores[c];
    }
    memcpy(na->cores, ordered, na->n_cores * sizeof(*ordered));
    rc = 0;
out:
    free(ordered);
    free(used);
    return rc;
}

/* The cores of a node's allocation split evenly between its tasks, in order. */
static void task_cores(const Gs__NodeAllocation *na, uint32_t local, uint32_t ntasks,
                       Gs__TaskAssignment *t)
{
    size_t per = ntasks > 0 ? na->n_cores / ntasks : 0;

    if (per == 0) {
        t->n_cores = 0; /* fewer cores than tasks: let them share, unbound */
        return;
    }
    t->cores = na->cores + (size_t)local * per;
    t->n_cores = per;
}

void sched_node_tasks(const Gs__NodeAllocation *na, uint32_t ntasks, uint32_t cpus_per_task,
                      uint32_t gpus_per_task, Gs__TaskAssignment *tasks, Gs__TaskAssignment **ptrs,
                      Gs__LaunchTasks *lt)
{
    for (uint32_t l = 0; l < ntasks; l++) {
        Gs__TaskAssignment *t = &tasks[l];

        gs__task_assignment__init(t);
        t->rank = na->first_rank + l;
        t->local_rank = l;
        t->gpus = gpus_per_task > 0 ? na->gpus + (size_t)l * gpus_per_task : na->gpus;
        t->n_gpus = gpus_per_task > 0 ? gpus_per_task : na->n_gpus;
        if (cpus_per_task > 0) {
            t->cores = na->cores + (size_t)l * cpus_per_task;
            t->n_cores = cpus_per_task;
        } else {
            task_cores(na, l, ntasks, t);
        }
        ptrs[l] = t;
    }
    lt->n_tasks = ntasks;
    lt->tasks = ptrs;
}

void sched_launch_msg_job(struct sched_ctx *s, const struct sched_job *job, Gs__LaunchTasks *lt,
                          Gs__UserIdentity *user, Gs__TaskLimits *limits)
{
    gs__launch_tasks__init(lt);
    gs__user_identity__init(user);
    gs__task_limits__init(limits);
    user->uid = job->uid;
    user->gid = job->gid;
    user->username = (char *)job->user;
    lt->job_id = job->id;
    lt->job_name = job->spec->name;
    lt->attempt = job->attempt;
    lt->user = user;
    lt->master_port = job->master_port;
    lt->cluster_name = s->cfg->cluster_name;
    lt->array_job_id = job->spec->array.array_job_id;
    lt->array_task_id = job->spec->array.task_id;
    lt->limits = limits;
    lt->grace_period_ms = (uint32_t)s->kill_grace_ms;
}

struct launch_msg {
    Gs__LaunchTasks lt;
    Gs__UserIdentity user;
    Gs__TaskLimits limits;
    struct gs_proto_jobspec_view view;
    struct sched_alloc_msg alloc;
    Gs__TaskAssignment *tasks;
    Gs__TaskAssignment **task_ptrs;
    struct sched_env env;
    struct sched_data_launch data;
};

static int launch_msg_init(struct sched_ctx *s, const struct sched_job *job, struct launch_msg *m)
{
    int rc;

    memset(m, 0, sizeof(*m));
    rc = gs_proto_jobspec_view_init(&m->view, job->spec);
    if (rc < 0)
        return rc;
    rc = sched_alloc_msg_build(s, job, &m->alloc);
    if (rc == 0)
        rc = sched_env_init(&m->env, &m->view.run, job->spec->nhet);
    if (rc == 0 && job->spec->slurm)
        rc = sched_slurm_job_env(s, job, &m->env);
    m->tasks = calloc(job->tasks_per_node + 1, sizeof(*m->tasks));
    m->task_ptrs = calloc(job->tasks_per_node + 1, sizeof(*m->task_ptrs));
    if (rc < 0 || m->tasks == NULL || m->task_ptrs == NULL)
        return -ENOMEM;
    sched_launch_msg_job(s, job, &m->lt, &m->user, &m->limits);
    m->limits.time_limit_s =
        job->spec->time_limit_s == GS_DURATION_INFINITE ? 0 : job->spec->time_limit_s;
    m->lt.n_allocation = m->alloc.n;
    m->lt.allocation = m->alloc.ptrs;
    m->lt.world_size = job->ntasks;
    m->lt.master_addr = m->alloc.n > 0 ? m->alloc.nodes[0].address : "";
    m->lt.run = &m->view.run;
    if (job->spec->data.id[0] != '\0') {
        rc = sched_data_launch_init(s, job, &m->data);
        if (rc < 0)
            return rc;
        m->lt.data = &m->data.msg;
    }
    m->lt.n_env = m->env.n;
    m->lt.env = m->env.ptrs;
    return 0;
}

static void launch_msg_release(struct launch_msg *m)
{
    gs_proto_jobspec_view_release(&m->view);
    sched_alloc_msg_release(&m->alloc);
    free(m->tasks);
    free(m->task_ptrs);
    sched_env_release(&m->env);
    sched_data_launch_release(&m->data);
}

static void launch_job(struct sched_ctx *s, struct sched_job *job)
{
    struct launch_msg m;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (launch_msg_init(s, job, &m) < 0) {
        GS_LOG(GS_LOG_ERROR,
               "job=%llu out of memory building its launch; it is requeued when "
               "its workers report",
               (unsigned long long)job->id);
        goto out;
    }
    env.request_id = ++s->next_request_id;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &m.lt;
    /* A batch job's script (or a launcher, mpirun) runs once, on its first node, with all
     * of that node's share; srun steps use the rest. With a dataset, the other nodes get
     * the launch without tasks: they stage their shards for the steps to come. */
    bool leader = gs_jobspec_runs_leader(job->spec);
    bool data = job->spec->data.id[0] != '\0';
    /* A torchrun job's task on each node is its agent, with all of the node's share; its
     * rank is the node's, and torchrun numbers the ranks it starts. */
    bool agent = job->spec->launcher == GS_LAUNCHER_TORCHRUN;

    for (size_t i = 0; i < (leader && !data && m.alloc.n > 0 ? 1 : m.alloc.n); i++) {
        Gs__NodeAllocation *na = m.alloc.ptrs[i];
        struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);

        if (leader && i > 0) { /* data only */
            m.lt.n_tasks = 0;
            m.lt.tasks = NULL;
            if (n == NULL || !sched_node_send(n, &env))
                GS_LOG(GS_LOG_WARN, "job=%llu node=%s worker not connected; no data staged there",
                       (unsigned long long)job->id, na->node_name);
            continue;
        }
        if (leader || agent) {
            Gs__TaskAssignment *t = &m.tasks[0];

            gs__task_assignment__init(t);
            t->rank = agent ? (uint32_t)i : 0;
            t->gpus = na->gpus;
            t->n_gpus = na->n_gpus;
            t->cores = na->cores;
            t->n_cores = na->n_cores;
            m.task_ptrs[0] = t;
            m.lt.n_tasks = 1;
            m.lt.tasks = m.task_ptrs;
            if (n == NULL || !sched_node_send(n, &env))
                GS_LOG(GS_LOG_WARN, "job=%llu node=%s worker not connected; launch waits for it",
                       (unsigned long long)job->id, na->node_name);
            continue;
        }
        if (job->spec->tasks_per_gpu && n != NULL)
            order_cores(n->topology, na, job->tasks_per_node);
        /* Every task sees all of its node's GPUs, as torchrun's ranks do: a DDP script picks
         * cuda:LOCAL_RANK itself. Cores are the node's split evenly. */
        sched_node_tasks(na, job->tasks_per_node, 0, 0, m.tasks, m.task_ptrs, &m.lt);
        if (n == NULL || !sched_node_send(n, &env))
            GS_LOG(GS_LOG_WARN, "job=%llu node=%s worker not connected; launch waits for it",
                   (unsigned long long)job->id, na->node_name);
    }
out:
    launch_msg_release(&m);
}

/* --- starting jobs ---------------------------------------------------------------------- */

struct job_ref {
    uint64_t job_id;
    uint32_t attempt;
};

static struct job_ref *job_ref_new(const struct sched_job *job)
{
    struct job_ref *r = malloc(sizeof(*r));

    if (r != NULL)
        *r = (struct job_ref){job->id, job->attempt};
    return r;
}

static void started_stored(struct sched_ctx *s, int status, void *arg)
{
    struct job_ref *r = arg;
    struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);

    if (status == 0 && !s->stopping && job != NULL && job->state == SCHED_JOB_RUNNING &&
        job->attempt == r->attempt) {
        if (job->spec->allocation)
            sched_alloc_started(s, job); /* its task is salloc's command: nothing to launch */
        else
            launch_job(s, job);
        /* A cancel that came while the start was being stored signalled workers that had
         * no task yet; said again now, after the launch on the same connections, it ends
         * the tasks it was meant for. */
        if (job->cancel_requested && !job->spec->allocation)
            sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED,
                             job->reason);
        sched_query_job_changed(s, job);
    }
    free(r);
}

static uint32_t pick_master_port(const struct sched_job *job)
{
    return MASTER_PORT_BASE + (uint32_t)(job->id % MASTER_PORT_SPAN);
}

static void describe_nodes(struct sched_ctx *s, const struct sched_job *job, char *out, size_t size)
{
    size_t off = 0;

    out[0] = '\0';
    for (uint32_t i = 0; i < job->alloc.nnodes && off + 1 < size; i++) {
        struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);
        int k = snprintf(out + off, size - off, "%s%s", i > 0 ? "," : "", n ? n->name : "?");

        if (k < 0)
            break;
        off += (size_t)k;
    }
}

/* "node1 GPUs 0,1 (NV4, score 1099512676351), node2 ...": for the history and the log. */
static void describe_placement(struct sched_ctx *s, const struct sched_job *job, char *out,
                               size_t size)
{
    struct gs_buf b = GS_BUF_INIT;
    int rc = gs_buf_append_str(&b, "");

    for (uint32_t i = 0; rc == 0 && i < job->alloc.nnodes; i++) {
        const struct sched_node_alloc *a = &job->alloc.nodes[i];
        struct sched_node *n = sched_node_at(s, a->node);
        struct sched_gpu_quality q;
        char cls[GS_GPUSET_NAME_MAX];

        rc = gs_buf_printf(&b, "%s%s", i > 0 ? ", " : "", n != NULL ? n->name : "?");
        for (uint64_t m = a->gpus; rc == 0 && m != 0; m &= m - 1)
            rc = gs_buf_printf(&b, "%s%d", m == a->gpus ? " GPUs " : ",", __builtin_ctzll(m));
        sched_cluster_gpu_quality(s->cluster, a->node, a->gpus, &q);
        if (rc == 0 && q.worst != GS_GPUSET_NONE)
            rc = gs_buf_printf(&b, " (%s, score %llu)",
                               gs_gpuset_class_name(q.worst, q.nvlinks, cls, sizeof(cls)),
                               (unsigned long long)q.score);
    }
    snprintf(out, size, "%s", rc == 0 && b.data != NULL ? b.data : "?");
    gs_buf_release(&b);
}

/*
 * Ranks go to nodes in name order (node1 before node2), whatever order placement chose;
 * a heterogeneous job's nodes within each component, the components staying in order.
 */
static void sort_by_name(struct sched_ctx *s, const struct gs_jobspec *spec,
                         struct sched_alloc *alloc)
{
    for (uint32_t i = 1; i < alloc->nnodes; i++) {
        struct sched_node_alloc key = alloc->nodes[i];
        const char *name = sched_cluster_node_name(s->cluster, key.node);
        uint32_t j = i, first = gs_jobspec_het_first_node(spec, gs_jobspec_het_of_node(spec, i));

        while (j > first &&
               strverscmp(sched_cluster_node_name(s->cluster, alloc->nodes[j - 1].node), name) >
                   0) {
            alloc->nodes[j] = alloc->nodes[j - 1];
            j--;
        }
        alloc->nodes[j] = key;
    }
}

/* An sbatch job's batch shell, on its first node: sacct's JOB.batch row, from the start. */
static void batch_step_start(struct sched_ctx *s, struct sched_job *job, struct sched_change *ch,
                             uint64_t now)
{
    const struct sched_node *n =
        job->alloc.nnodes > 0 ? sched_node_at(s, job->alloc.nodes[0].node) : NULL;
    struct sched_step_acct *a;

    /* An allocation's (salloc) stand-in runs on no node: no JOB.batch, as in Slurm. */
    if (!job->spec->batch || job->spec->allocation || n == NULL)
        return;
    a = sched_step_acct_add(job, SCHED_STEP_BATCH, "batch", n->name, 1, 1, now);
    if (a != NULL) {
        const struct sched_node_alloc *na = &job->alloc.nodes[0];

        a->gpus = (uint32_t)__builtin_popcountll(na->gpus);
        a->cpus = sched_node_alloc_cores(na);
        sched_change_step(ch, job->id, a);
    } else
        GS_LOG(GS_LOG_WARN, "job=%llu out of memory: no accounting record of its batch step",
               (unsigned long long)job->id);
}

void sched_launch_start(struct sched_ctx *s, struct sched_job *job, struct sched_alloc *alloc,
                        bool backfilled)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;
    char nodes[256], detail[480], where[400];
    int rc;

    sort_by_name(s, job->spec, alloc);
    sched_resv_cap(s, job, now);
    rc = sched_job_start(job, alloc, gs_jobspec_tasks_per_node(job->spec), now);

    if (rc < 0) {
        sched_cluster_give_back(s->cluster, alloc);
        GS_LOG(GS_LOG_ERROR, "job=%llu error=\"%s\" cannot start", (unsigned long long)job->id,
               gs_strerror(rc));
        return;
    }
    s->stats.jobs_started++;
    s->stats.jobs_backfilled += backfilled;
    job->preempted_by = 0;
    job->checkpoint_ms = 0; /* this attempt's reports say when it checkpoints */
    job->master_port = pick_master_port(job);
    job->expected_start_ms = 0;
    describe_nodes(s, job, nodes, sizeof(nodes));
    describe_placement(s, job, where, sizeof(where));
    snprintf(detail, sizeof(detail), "on %s%s", where, backfilled ? " (backfilled)" : "");
    sched_job_note(job, now, SCHED_JOB_RUNNING, detail);
    GS_LOG(GS_LOG_INFO, "job=%llu attempt=%u nodes=%s tasks=%u backfill=%d job started",
           (unsigned long long)job->id, job->attempt, nodes, job->ntasks, backfilled);
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_clear_tasks(ch, job->id);
    sched_change_tasks(ch, job);
    sched_change_event(ch, now, job->id, nodes, "RUNNING", detail);
    batch_step_start(s, job, ch, now);
    sched_change_commit(s, ch, started_stored, job_ref_new(job));
}

/* --- launch replies ------------------------------------------------------------------ */

void sched_launch_reply(struct sched_ctx *s, struct sched_node *n, const Gs__LaunchTasksReply *r)
{
    struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);

    (void)n;
    if (job == NULL || job->state != SCHED_JOB_RUNNING || job->attempt != r->attempt)
        return;
    for (size_t i = 0; i < r->n_results; i++) {
        const Gs__TaskLaunchResult *res = r->results[i];

        if (res->rank < job->ntasks && res->code == 0) {
            job->tasks[res->rank].pid = res->pid;
            job->tasks[res->rank].started = true;
        }
    }
}
