/*
 * sched_engine.c: the life of jobs in gschedd: admission of submits, the planning pass,
 * starting jobs on their nodes, task exits, node failures, and cancel / hold / release.
 *
 * Every decision is made in memory on the loop thread, then written through the journal;
 * what other parties may act on (a submit's reply, a LaunchTasks, an exit's ack) goes out
 * only from the commit's continuation. So a job is acknowledged only when stored, a job is
 * launched only once its RUNNING row is stored (a restart finds it RUNNING and does not
 * start it again), and a worker forgets an exit only once its effect is stored.
 *
 * Planning is event-driven: anything that can let a job start (submit, end, release, node
 * up) calls sched_engine_wake(), which arms an idle handle; the pass runs once after the
 * events of the current loop iteration, so a burst of a thousand submits costs one pass,
 * and a freed GPU never waits for a timer.
 */
#define _GNU_SOURCE /* getpwuid_r */

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "proto/jobspec.h"
#include "scheduler/plan.h"
#include "scheduler/sched_internal.h"

#define MASTER_PORT_BASE 29500
#define SCHED_MAX_ARRAY_SIZE 1001 /* Slurm's default MaxArraySize: task ids 0..1000 */
#define MASTER_PORT_SPAN 10000

static struct sched_node *node_at(struct sched_ctx *s, uint32_t index)
{
    return index < s->nnodes ? s->nodes[index] : NULL;
}

const char *sched_node_address(const struct sched_node *n)
{
    const char *a = n->topology != NULL ? n->topology->address : NULL;

    return a != NULL && a[0] != '\0' ? a : n->name;
}

static uint32_t tasks_per_node(const struct gs_jobspec *spec)
{
    if (spec->tasks_per_gpu)
        return spec->gpus_per_node > 0 ? spec->gpus_per_node : 1;
    return spec->tasks_per_node > 0 ? spec->tasks_per_node : 1;
}

static void job_req(const struct gs_jobspec *spec, struct sched_req *req)
{
    uint32_t cores = spec->cpus_per_gpu > 0 ? spec->cpus_per_gpu * spec->gpus_per_node
                                            : (spec->cpus_per_task > 0 ? spec->cpus_per_task : 1) *
                                                  tasks_per_node(spec);

    *req = (struct sched_req){.nodes = spec->nodes,
                              .gpus_per_node = spec->gpus_per_node,
                              .cores_per_node = cores,
                              .mem_per_node_mib = spec->mem_per_node_mib,
                              .exclusive = spec->exclusive,
                              .constraint = spec->constraint,
                              .affinity =
                                  spec->gpu_affinity == GS_GPU_AFFINITY_STRICT ? GS_GPUSET_STRICT
                                  : spec->gpu_affinity == GS_GPU_AFFINITY_ANY  ? GS_GPUSET_ANY
                                                                               : GS_GPUSET_PREFER};
}

Gs__JobState sched_job_wire_state(const struct sched_job *job)
{
    return (Gs__JobState)job->state;
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
        struct sched_node *node = node_at(s, a->node);
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
static void signal_job(struct sched_ctx *s, const struct sched_job *job, uint32_t skip,
                       uint32_t signum, Gs__EndReason why, const char *reason)
{
    Gs__SignalTasks sig;
    Gs__Envelope env;

    sched_signal_tasks_msg(&sig, &env, job->id, signum, why, reason);
    sig.all_steps = true; /* the batch shell and every srun step inside the job */
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        struct sched_node *n = node_at(s, job->alloc.nodes[i].node);

        if (i != skip && n != NULL)
            sched_node_send(n, &env);
    }
}

/* A signal for the batch shell alone (scancel -b): it runs on the job's first node. */
static void signal_batch(struct sched_ctx *s, const struct sched_job *job, uint32_t signum)
{
    struct sched_node *n = job->alloc.nnodes > 0 ? node_at(s, job->alloc.nodes[0].node) : NULL;
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
        rc = sched_env_init(&m->env, &m->view.run);
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
     * of that node's share; srun steps use the rest. */
    bool leader = gs_jobspec_runs_leader(job->spec);

    for (size_t i = 0; i < (leader && m.alloc.n > 0 ? 1 : m.alloc.n); i++) {
        Gs__NodeAllocation *na = m.alloc.ptrs[i];
        struct sched_node *n = node_at(s, job->alloc.nodes[i].node);

        if (leader) {
            Gs__TaskAssignment *t = &m.tasks[0];

            gs__task_assignment__init(t);
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
            break;
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
        launch_job(s, job);
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
        struct sched_node *n = node_at(s, job->alloc.nodes[i].node);
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
        struct sched_node *n = node_at(s, a->node);
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

/* Ranks go to nodes in name order (node1 before node2), whatever order placement chose. */
static void sort_by_name(struct sched_ctx *s, struct sched_alloc *alloc)
{
    for (uint32_t i = 1; i < alloc->nnodes; i++) {
        struct sched_node_alloc key = alloc->nodes[i];
        const char *name = sched_cluster_node_name(s->cluster, key.node);
        uint32_t j = i;

        while (j > 0 && strverscmp(sched_cluster_node_name(s->cluster, alloc->nodes[j - 1].node),
                                   name) > 0) {
            alloc->nodes[j] = alloc->nodes[j - 1];
            j--;
        }
        alloc->nodes[j] = key;
    }
}

static void start_job(struct sched_ctx *s, struct sched_job *job, struct sched_alloc *alloc,
                      bool backfilled)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;
    char nodes[256], detail[480], where[400];
    int rc;

    sort_by_name(s, alloc);
    rc = sched_job_start(job, alloc, tasks_per_node(job->spec), now);

    if (rc < 0) {
        sched_cluster_give_back(s->cluster, alloc);
        GS_LOG(GS_LOG_ERROR, "job=%llu error=\"%s\" cannot start", (unsigned long long)job->id,
               gs_strerror(rc));
        return;
    }
    s->stats.jobs_started++;
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
    sched_change_commit(s, ch, started_stored, job_ref_new(job));
}

/*
 * sbatch --array=...%N: at most N elements of an array run at once. Elements have
 * consecutive ids, so the pass meets each array's elements in a row and counts once per
 * array; slots go to pending elements in id order.
 */
struct throttle {
    uint64_t array_job_id;
    uint32_t slots;
};

static bool throttle_admits(struct sched_ctx *s, struct throttle *th, const struct sched_job *job)
{
    const struct gs_job_array *a = &job->spec->array;

    if (a->array_job_id == 0 || a->throttle == 0)
        return true;
    if (th->array_job_id != a->array_job_id) {
        uint32_t running = 0;

        for (uint64_t id = a->array_job_id; id < a->array_job_id + a->count; id++) {
            const struct sched_job *e = sched_jobs_find(s->jobs, id);
            running += e != NULL && e->spec->array.array_job_id == a->array_job_id &&
                       e->state == SCHED_JOB_RUNNING;
        }
        th->array_job_id = a->array_job_id;
        th->slots = running < a->throttle ? a->throttle - running : 0;
    }
    if (th->slots == 0)
        return false;
    th->slots--;
    return true;
}

static void plan_pass(struct sched_ctx *s)
{
    size_t n = sched_jobs_count(s->jobs), np = 0, nr = 0, span;
    struct sched_pending *pending = NULL;
    struct sched_running *running = NULL;
    struct sched_verdict *verdicts = NULL;
    struct sched_job **pjobs = NULL;
    struct sched_node_masks *masks = NULL;
    struct sched_reservation res = {0};
    uint64_t now_s = gs_clock_wall_ms() / 1000;
    struct throttle th = {0};

    /* Jobs before the oldest unfinished one never matter again: skip them for good. */
    while (s->plan_from < n && sched_job_finished(sched_jobs_at(s->jobs, s->plan_from)))
        s->plan_from++;
    span = n - s->plan_from;
    pending = malloc((span + 1) * sizeof(*pending));
    running = malloc((span + 1) * sizeof(*running));
    pjobs = malloc((span + 1) * sizeof(*pjobs));
    masks = calloc(span + 1, sizeof(*masks));
    if (pending == NULL || running == NULL || pjobs == NULL || masks == NULL)
        goto out;
    sched_jobs_set_now(s->jobs, now_s * 1000);
    for (size_t i = s->plan_from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        const char *why;

        if (job->state == SCHED_JOB_RUNNING) {
            uint64_t lim = job->spec->time_limit_s;
            running[nr++] = (struct sched_running){
                job->id,
                lim == GS_DURATION_INFINITE ? SCHED_TIME_INFINITE : job->start_ms / 1000 + lim,
                &job->alloc};
        }
        if (job->state != SCHED_JOB_PENDING)
            continue;
        if ((why = sched_job_hold_reason(s->jobs, job)) != NULL) {
            snprintf(job->reason, sizeof(job->reason), "%s", why);
            continue;
        }
        if (!throttle_admits(s, &th, job)) {
            snprintf(job->reason, sizeof(job->reason), "JobArrayTaskLimit");
            continue;
        }
        if (sched_node_masks_build(s, job->spec, &masks[np]) < 0)
            continue; /* out of memory: it waits for the next pass */
        pjobs[np] = job;
        pending[np].job_id = job->id;
        pending[np].priority = job->spec->priority;
        pending[np].submit_seq = job->submit_seq;
        pending[np].time_limit_s = job->spec->time_limit_s == GS_DURATION_INFINITE
                                       ? SCHED_TIME_INFINITE
                                       : job->spec->time_limit_s;
        job_req(job->spec, &pending[np].req);
        sched_node_masks_apply(&masks[np], &pending[np].req);
        np++;
    }
    s->timed_deps = sched_jobs_timed_waits(s->jobs);
    if (np == 0)
        goto out;
    verdicts = calloc(np, sizeof(*verdicts));
    if (verdicts == NULL)
        goto out;
    sched_verdicts_init(verdicts, np);
    if (sched_plan(s->cluster, pending, np, running, nr, now_s, verdicts, &res) < 0) {
        GS_LOG(GS_LOG_ERROR, "planning pass out of memory; retried on the next event");
        goto out;
    }
    for (size_t i = 0; i < np; i++) {
        struct sched_job *job = pjobs[i];

        if (verdicts[i].start) {
            start_job(s, job, &verdicts[i].alloc, verdicts[i].backfilled);
            continue;
        }
        snprintf(job->reason, sizeof(job->reason), "%s", sched_reason_name(verdicts[i].reason));
        job->expected_start_ms =
            job->id == res.job_id && res.start_s != SCHED_TIME_INFINITE ? res.start_s * 1000 : 0;
    }
out:
    if (verdicts != NULL)
        sched_verdicts_release(verdicts, np);
    free(verdicts);
    free(pending);
    free(running);
    free(pjobs);
    for (size_t i = 0; masks != NULL && i < np; i++)
        sched_node_masks_release(&masks[i]);
    free(masks);
}

static void on_plan_idle(uv_idle_t *idle)
{
    struct sched_ctx *s = idle->data;

    uv_idle_stop(idle);
    s->plan_wanted = false;
    if (!s->stopping)
        sched_stats_time_pass(s, plan_pass);
}

void sched_engine_wake(struct sched_ctx *s)
{
    if (s->plan_wanted || s->stopping)
        return;
    s->plan_wanted = true;
    uv_idle_start(&s->plan_idle, on_plan_idle);
}

/* --- submit ----------------------------------------------------------------------------- */

struct submit_op {
    struct sched_cli *cli;
    uint64_t request_id;
    struct sched_job *drafts; /* what is being stored; specs owned until they join the table */
    size_t ndrafts;           /* more than one for an array: one job per element */
};

static void submit_reply(struct sched_cli *c, uint64_t request_id, uint64_t job_id,
                         uint32_t array_size, const char *partition)
{
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.job_id = job_id;
    reply.state = GS__JOB_STATE__JOB_STATE_PENDING;
    reply.array_size = array_size;
    reply.partition = (char *)(partition != NULL ? partition : "");
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    sched_cli_reply(c, &env, true);
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
        sched_job_note(job, d->submit_ms, SCHED_JOB_PENDING,
                       job->held ? "submitted held" : "submitted");
        GS_LOG(GS_LOG_INFO, "job=%llu uid=%u name=%s job submitted", (unsigned long long)job->id,
               job->uid, job->spec->name);
    }
    job = sched_jobs_find(s->jobs, op->drafts[0].id);
    submit_reply(op->cli, op->request_id, op->drafts[0].id,
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

static void user_name(uid_t uid, char *out, size_t size)
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
        snprintf(why, size, "resources.constraint: no node has the feature '%s'", req->constraint);
        return;
    }
    t = (struct sched_req){.nodes = 1, .cores_per_node = req->cores_per_node};
    if (!could_fit(s, &t)) {
        snprintf(why, size, "%s: the job needs %u cores per node; no node has more than %u",
                 spec->cpus_per_gpu > 0    ? "resources.cpus_per_gpu"
                 : spec->cpus_per_task > 1 ? "resources.cpus_per_task"
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

/*
 * Cluster-dependent checks a job file cannot make by itself. The reason starts with the
 * job-file field it is about ("resources.gpus_per_node: ..."), which the CLI turns into
 * the field's file:line:col.
 */
static int admit(struct sched_ctx *s, struct gs_jobspec *spec, char *why, size_t size)
{
    struct sched_req req;
    struct sched_node_masks masks = {0};
    char fit[200];
    int rc;

    for (size_t i = 0; i < spec->ndeps; i++) {
        if (sched_jobs_find(s->jobs, spec->deps[i].job_id) == NULL) {
            snprintf(why, size, "depends_on: job %llu does not exist",
                     (unsigned long long)spec->deps[i].job_id);
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
    if (rc < 0)
        return rc;
    rc = sched_node_masks_build(s, spec, &masks);
    if (rc < 0) {
        snprintf(why, size, "out of memory");
        return rc;
    }
    job_req(spec, &req);
    sched_node_masks_apply(&masks, &req);
    if (!sched_cluster_could_ever_fit(s->cluster, &req, fit, sizeof(fit))) {
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

void sched_engine_submit(struct sched_cli *c, uint64_t request_id, const Gs__SubmitRequest *req)
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
    if (spec->source == NULL && req->source_file != NULL && req->source_file[0] != '\0') {
        spec->source = strdup(req->source_file); /* kept for show and scontrol's Command= */
        if (spec->source == NULL)
            goto oom;
    }
    rc = admit(s, spec, why, sizeof(why));
    if (rc < 0) {
        sched_cli_error(c, request_id, rc, why, false);
        goto out;
    }
    if (req->validate_only) {
        sched_cli_hold(c);
        submit_reply(c, request_id, 0, (uint32_t)spec->array.ntask_ids, spec->partition);
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
    user_name(c->uid, user, sizeof(user));
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

/* --- task exits and launch replies -------------------------------------------------------- */

static enum sched_task_end end_of(Gs__EndReason r)
{
    switch (r) {
    case GS__END_REASON__END_REASON_NONE:
        return SCHED_TASK_EXITED;
    case GS__END_REASON__END_REASON_TIMEOUT:
        return SCHED_TASK_TIMEOUT;
    case GS__END_REASON__END_REASON_LAUNCH_FAILED:
        return SCHED_TASK_LAUNCH_FAILED;
    case GS__END_REASON__END_REASON_OOM:
        return SCHED_TASK_OOM;
    default:
        return SCHED_TASK_CANCELLED;
    }
}

/* An exit to acknowledge once stored. Registry nodes live as long as gschedd. */
struct ack_op {
    struct sched_node *node;
    Gs__TaskRef ref;
};

void sched_task_ref_of(const Gs__TaskExit *ex, Gs__TaskRef *ref)
{
    gs__task_ref__init(ref);
    ref->job_id = ex->job_id;
    ref->rank = ex->rank;
    ref->attempt = ex->attempt;
    ref->step = ex->step;
}

/* Through the node's current connection, which may not be the one the exit came on. */
void sched_send_exit_ack(struct sched_node *n, Gs__TaskRef *ref)
{
    Gs__TaskRef *ptrs[1] = {ref};
    Gs__TaskExitAck ack = GS__TASK_EXIT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    ack.n_tasks = 1;
    ack.tasks = ptrs;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT_ACK;
    env.task_exit_ack = &ack;
    sched_node_send(n, &env);
}

static void exit_stored(struct sched_ctx *s, int status, void *arg)
{
    struct ack_op *op = arg;

    /* Not stored: no ack, so the worker reports it again when it reconnects. */
    if (op != NULL && status == 0 && !s->stopping)
        sched_send_exit_ack(op->node, &op->ref);
    free(op);
}

static struct ack_op *ack_op_new(struct sched_node *n, const Gs__TaskExit *ex)
{
    struct ack_op *op = calloc(1, sizeof(*op));

    if (op == NULL)
        return NULL;
    op->node = n;
    sched_task_ref_of(ex, &op->ref);
    return op;
}

static void describe_end(const struct sched_job *job, const Gs__TaskExit *ex, char *out,
                         size_t size)
{
    if (job->state == SCHED_JOB_COMPLETED)
        snprintf(out, size, "all %u tasks exited 0", job->ntasks);
    else if (job->state == SCHED_JOB_TIMEOUT)
        snprintf(out, size, "time limit reached");
    else if (job->state == SCHED_JOB_CANCELLED)
        snprintf(out, size, "%s", job->reason[0] ? job->reason : "cancelled");
    else if (job->state == SCHED_JOB_OUT_OF_MEMORY)
        snprintf(out, size,
                 "out of memory on %s: the kernel killed processes of rank %u's node over the "
                 "job's mem_per_node",
                 ex->node_name, ex->rank);
    else if (ex->end_reason == GS__END_REASON__END_REASON_LAUNCH_FAILED)
        snprintf(out, size, "rank %u could not start on %s: %s", ex->rank, ex->node_name,
                 ex->launch_error);
    else if (job->signaled)
        snprintf(out, size, "a task was killed by signal %d", job->term_signal);
    else
        snprintf(out, size, "a task exited with code %d", job->exit_code);
}

void sched_engine_task_exit(struct sched_ctx *s, struct sched_node *n, const Gs__TaskExit *ex)
{
    struct sched_job *job = sched_jobs_find(s->jobs, ex->job_id);
    uint64_t now = gs_clock_wall_ms();
    enum sched_task_end how = end_of(ex->end_reason);
    bool failed_before, last;
    struct sched_task *t;
    struct sched_change *ch;
    char detail[400];

    /* Steps (srun) are sched_steps.c's; one that reaches here has no srun left to tell. */
    if (ex->step != 0 || job == NULL || job->state != SCHED_JOB_RUNNING ||
        ex->attempt != job->attempt || ex->rank >= job->ntasks || job->tasks[ex->rank].ended ||
        job->alloc.nodes[job->tasks[ex->rank].node].node != n->index) {
        /* Of an attempt that is over, or reported twice: nothing changes, so no wait. */
        Gs__TaskRef ref;

        sched_task_ref_of(ex, &ref);
        sched_send_exit_ack(n, &ref);
        return;
    }
    t = &job->tasks[ex->rank];
    t->start_ms = ex->start_time_ms;
    if (how == SCHED_TASK_LAUNCH_FAILED && ex->launch_error != NULL)
        t->launch_error = strdup(ex->launch_error);
    failed_before = job->any_failed;
    last = sched_job_task_ended(job, ex->rank, how, ex->exit_code, (int32_t)ex->term_signal,
                                ex->end_time_ms ? ex->end_time_ms : now);
    GS_LOG(GS_LOG_INFO, "job=%llu rank=%u node=%s exit=%d signal=%u end_reason=%d task ended",
           (unsigned long long)job->id, ex->rank, n->name, ex->exit_code, ex->term_signal,
           (int)ex->end_reason);
    ch = sched_change_new(s);
    sched_change_task(ch, job, ex->rank);
    if (!last && job->any_failed && !failed_before) {
        /* One rank failing leaves the others waiting on it forever (a collective that never
         * completes): end them, as torchrun does. */
        snprintf(detail, sizeof(detail), "rank %u failed", ex->rank);
        signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
    }
    if (last && job->state == SCHED_JOB_PENDING) { /* scontrol requeue */
        sched_job_note(job, now, SCHED_JOB_PENDING, job->reason);
        sched_change_job(ch, job);
        sched_change_event(ch, now, job->id, n->name, "REQUEUED", job->reason);
        GS_LOG(GS_LOG_INFO, "job=%llu restarts=%u job requeued", (unsigned long long)job->id,
               job->restarts);
        sched_query_job_changed(s, job);
        sched_engine_wake(s);
    } else if (last) {
        if (gs_jobspec_runs_leader(job->spec)) /* its steps end with it, as in Slurm */
            signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED,
                       "the batch step ended");
        if (job->state == SCHED_JOB_NODE_FAIL) /* a lost node's, said when it was lost */
            snprintf(detail, sizeof(detail), "%s", job->reason);
        else
            describe_end(job, ex, detail, sizeof(detail));
        if (job->state != SCHED_JOB_CANCELLED)
            snprintf(job->reason, sizeof(job->reason), "%.159s", detail);
        sched_job_note(job, job->end_ms, job->state, detail);
        sched_change_job(ch, job);
        sched_change_event(ch, job->end_ms, job->id, n->name, sched_job_state_name(job->state),
                           detail);
        sched_telemetry_job_ended(s, job, ch);
        GS_LOG(GS_LOG_INFO, "job=%llu state=%s exit=%d job ended", (unsigned long long)job->id,
               sched_job_state_name(job->state), job->exit_code);
        sched_query_job_changed(s, job);
        sched_engine_wake(s);
    }
    sched_change_commit(s, ch, exit_stored, ack_op_new(n, ex));
}

void sched_engine_launch_reply(struct sched_ctx *s, struct sched_node *n,
                               const Gs__LaunchTasksReply *r)
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

/* --- node failure and reconciliation ------------------------------------------------------ */

static bool job_uses(const struct sched_job *job, uint32_t node_index, uint32_t *ret_at)
{
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        if (job->alloc.nodes[i].node == node_index) {
            if (ret_at != NULL)
                *ret_at = i;
            return true;
        }
    }
    return false;
}

/* Whether a node of the job's allocation is down with its failover still to come. */
static bool uses_pending_node(struct sched_ctx *s, const struct sched_job *job)
{
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const struct sched_node *n = node_at(s, job->alloc.nodes[i].node);

        if (n != NULL && !n->up && n->failover_due_mono != 0)
            return true;
    }
    return false;
}

/* The job lost node (an alloc index): its other tasks are ended, and once none runs it is
 * requeued (charged a restart when charge) or ends NODE_FAIL. Until then it stays RUNNING,
 * so that its next attempt never starts beside a task of this one still in its kill grace
 * or cut off on another node (sched_job_tasks_lost). */
static void fail_over(struct sched_ctx *s, struct sched_job *job, uint32_t at, const char *why,
                      bool charge)
{
    uint64_t now = gs_clock_wall_ms();
    enum sched_job_state st;
    struct sched_change *ch;
    char detail[320];

    signal_job(s, job, at, 0, GS__END_REASON__END_REASON_REQUEUED, why);
    st = sched_job_tasks_lost(job, at, charge ? SCHED_LOST_NODE_FAIL : SCHED_LOST_UNSTARTED,
                              charge ? why : "Requeued: its launch was lost", now);
    job->node_fail_pending = st == SCHED_JOB_RUNNING && uses_pending_node(s, job);
    if (st == SCHED_JOB_RUNNING) {
        GS_LOG(GS_LOG_WARN,
               "job=%llu reason=\"%s\" job lost a node; its other tasks end before it moves",
               (unsigned long long)job->id, why);
        ch = sched_change_new(s);
        sched_change_job(ch, job);
        sched_change_commit(s, ch, NULL, NULL);
        sched_query_job_changed(s, job);
        return;
    }
    if (st == SCHED_JOB_PENDING)
        st = SCHED_JOB_REQUEUED; /* uncharged: its launch was lost */
    snprintf(detail, sizeof(detail), "%s", why);
    sched_job_note(job, now, st, detail);
    GS_LOG(GS_LOG_WARN, "job=%llu state=%s reason=\"%s\" job lost a node",
           (unsigned long long)job->id, sched_job_state_name(st), why);
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_clear_tasks(ch, job->id);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(st), detail);
    sched_change_commit(s, ch, NULL, NULL);
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
}

void sched_engine_node_down(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);

    sched_steps_node_gone(s, n);
    if (sched_fence_ms(s) == 0) {
        sched_engine_node_lost(s, n); /* no fencing: its jobs move now */
        return;
    }
    n->failover_due_mono = n->last_heartbeat_mono + sched_fence_ms(s) + s->heartbeat_ms;
    /* Until then its jobs' other tasks may fail for want of it (an MPI rank whose peer is
     * gone): that is the node failure's, not the job's own end. */
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->state == SCHED_JOB_RUNNING && job_uses(job, n->index, NULL))
            job->node_fail_pending = true;
    }
    {
        struct sched_change *ch = sched_change_new(s);

        sched_change_node(ch, n);
        sched_change_commit(s, ch, NULL, NULL);
    }
}

void sched_engine_node_lost(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);
    char why[200];

    n->failover_due_mono = 0;
    snprintf(why, sizeof(why), "node %s: %s", n->name, n->reason);
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;

        if (job->state == SCHED_JOB_RUNNING && job_uses(job, n->index, &at))
            fail_over(s, job, at, why, true);
    }
    {
        struct sched_change *ch = sched_change_new(s);

        sched_change_node(ch, n);
        sched_change_commit(s, ch, NULL, NULL);
    }
}

/* n registered again before its failover: its jobs are no longer waiting on it, and one
 * whose tasks all ended meanwhile, failing for want of it, fails over now. */
static void node_back(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);
    char why[200];

    snprintf(why, sizeof(why), "node %s was lost while the job ran", n->name);
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;

        if (job->state != SCHED_JOB_RUNNING || !job->node_fail_pending ||
            !job_uses(job, n->index, &at))
            continue;
        job->node_fail_pending = uses_pending_node(s, job);
        if (!job->node_fail_pending && job->tasks_ended == job->ntasks)
            fail_over(s, job, at, why, true);
    }
}

static const Gs__TaskRef *find_running(const Gs__NodeRegister *reg, uint64_t job_id, uint32_t rank,
                                       uint32_t attempt)
{
    for (size_t i = 0; i < reg->n_running; i++) {
        const Gs__TaskRef *r = reg->running[i];
        if (r->job_id == job_id && r->rank == rank && r->attempt == attempt && r->step == 0)
            return r;
    }
    return NULL;
}

static bool has_exit(const Gs__NodeRegister *reg, uint64_t job_id, uint32_t rank, uint32_t attempt)
{
    for (size_t i = 0; i < reg->n_unacked_exits; i++) {
        const Gs__TaskExit *e = reg->unacked_exits[i];
        if (e->job_id == job_id && e->rank == rank && e->attempt == attempt && e->step == 0)
            return true;
    }
    return false;
}

/* Whether the running task r is one the scheduler assigned to node n. */
static bool assigned_here(struct sched_ctx *s, const struct sched_node *n, const Gs__TaskRef *r)
{
    const struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);

    return job != NULL && r->step == 0 && job->state == SCHED_JOB_RUNNING &&
           job->attempt == r->attempt && r->rank < job->ntasks && !job->tasks[r->rank].ended &&
           job->alloc.nodes[job->tasks[r->rank].node].node == n->index;
}

/* Tasks assigned to n that its worker neither runs nor reported: the job lost them. */
static void check_missing(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg)
{
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;
        char why[200];

        if (job->state != SCHED_JOB_RUNNING || !job_uses(job, n->index, &at))
            continue;
        for (uint32_t r = 0; r < job->ntasks; r++) {
            const struct sched_task *t = &job->tasks[r];

            if (t->node != at || t->ended || find_running(reg, job->id, r, job->attempt) ||
                has_exit(reg, job->id, r, job->attempt))
                continue;
            /* A worker that started after the job did lost the tasks with its restart; one
             * that was up all along never got the launch. */
            if (reg->worker_start_ms > job->start_ms) {
                snprintf(why, sizeof(why), "node %s: its worker restarted", n->name);
                fail_over(s, job, at, why, true);
            } else {
                snprintf(why, sizeof(why), "node %s never received the launch", n->name);
                fail_over(s, job, at, why, false);
            }
            break;
        }
    }
}

int sched_engine_reconcile(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg,
                           Gs__TaskRef ***ret_kill, size_t *ret_nkill)
{
    Gs__TaskRef **kill = calloc(reg->n_running + 1, sizeof(*kill));
    size_t nkill = 0;

    if (kill == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < reg->n_running; i++) {
        const Gs__TaskRef *r = reg->running[i];

        if (assigned_here(s, n, r)) {
            struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);
            job->tasks[r->rank].pid = r->pid;
            job->tasks[r->rank].started = true;
        } else if (r->step != 0 && sched_steps_known(s, r->job_id, r->step)) {
            /* a step whose srun still streams: the worker only reconnected */
        } else {
            kill[nkill++] = reg->running[i];
        }
    }
    for (size_t i = 0; i < reg->n_unacked_exits; i++)
        sched_engine_task_exit(s, n, reg->unacked_exits[i]);
    check_missing(s, n, reg);
    node_back(s, n);
    *ret_kill = kill;
    *ret_nkill = nkill;
    return 0;
}

/* --- cancel, hold, release ---------------------------------------------------------------- */

struct action_op {
    struct sched_cli *cli;
    uint64_t request_id;
    Gs__Envelope__BodyCase reply_case;
    Gs__JobActionResult *results;
    Gs__JobActionResult **ptrs;
    char (*messages)[160];
    size_t n;
};

/*
 * scontrol requeue: a running job's tasks are ended and it queues again when they have; an
 * ended one queues again at once (Slurm requeues finished batch jobs too).
 */
static int requeue(struct sched_ctx *s, struct sched_cli *c, bool hold, struct sched_job *job,
                   struct sched_change *ch, char *msg, size_t size)
{
    uint64_t now = gs_clock_wall_ms();
    char detail[160];
    int rc;

    snprintf(detail, sizeof(detail), "requeued%s by %s", hold ? " held" : "",
             c->uid == 0 ? "root" : job->user);
    rc = sched_job_requeue(job, hold, detail);
    if (rc < 0) {
        snprintf(msg, size, "job %llu is pending: only running or ended jobs can be requeued",
                 (unsigned long long)job->id);
        return rc;
    }
    if (rc == 0) {
        signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
        snprintf(msg, size, "requeueing: its tasks are being ended");
        return 0;
    }
    s->plan_from = 0; /* an ended job is in the queue again */
    sched_job_note(job, now, SCHED_JOB_PENDING, detail);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", "REQUEUED", detail);
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
    return 0;
}

void sched_engine_idle_end(struct sched_ctx *s, struct sched_job *job, bool requeue,
                           const char *why)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;

    if (job->state != SCHED_JOB_RUNNING || job->cancel_requested || job->requeue_requested)
        return;
    if (requeue) {
        if (sched_job_requeue(job, false, why) < 0)
            return;
    } else {
        snprintf(job->reason, sizeof(job->reason), "%s", why);
        sched_job_cancel(job, now);
    }
    sched_job_note(job, now, job->state, why);
    signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, why);
    ch = sched_change_new(s);
    if (ch == NULL)
        return;
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(job->state), why);
    sched_change_commit(s, ch, NULL, NULL);
}

/* One job's action; returns 0 or a negative errno with msg saying why. */
static int act(struct sched_ctx *s, struct sched_cli *c, Gs__Envelope__BodyCase what,
               const Gs__CancelRequest *cancel, bool requeue_hold, struct sched_job *job,
               struct sched_change *ch, char *msg, size_t size)
{
    uint64_t now = gs_clock_wall_ms();
    char detail[160];

    if (c->uid != 0 && c->uid != job->uid) {
        snprintf(msg, size, "job %llu: permission denied (it belongs to %s)",
                 (unsigned long long)job->id, job->user);
        return -EPERM;
    }
    if (what == GS__ENVELOPE__BODY_REQUEUE_REQUEST)
        return requeue(s, c, requeue_hold, job, ch, msg, size);
    if (sched_job_finished(job)) {
        snprintf(msg, size, "job %llu has already ended (%s)", (unsigned long long)job->id,
                 sched_job_state_name(job->state));
        return -EALREADY;
    }
    if (what == GS__ENVELOPE__BODY_CANCEL_REQUEST && cancel->signal != 0) {
        if (job->state != SCHED_JOB_RUNNING) {
            snprintf(msg, size, "job %llu is not running", (unsigned long long)job->id);
            return -EINVAL;
        }
        if (cancel->batch_only && !gs_jobspec_runs_leader(job->spec)) {
            snprintf(msg, size, "job %llu has no batch step", (unsigned long long)job->id);
            return -EINVAL;
        }
        if (cancel->batch_only)
            signal_batch(s, job, cancel->signal);
        else
            signal_job(s, job, UINT32_MAX, cancel->signal, GS__END_REASON__END_REASON_NONE,
                       "signal from gsched cancel");
        snprintf(msg, size, "signal %u sent", cancel->signal);
        return 0;
    }
    if (what == GS__ENVELOPE__BODY_CANCEL_REQUEST) {
        snprintf(detail, sizeof(detail), "cancelled by %s%s%s", c->uid == 0 ? "root" : job->user,
                 cancel->reason && cancel->reason[0] ? ": " : "",
                 cancel->reason ? cancel->reason : "");
        snprintf(job->reason, sizeof(job->reason), "%s", detail);
        if (sched_job_cancel(job, now)) {
            sched_job_note(job, now, job->state, detail);
            sched_change_event(ch, now, job->id, "", "CANCELLED", detail);
            sched_query_job_changed(s, job);
            sched_engine_wake(s); /* its dependents may now be decided */
        } else {
            signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
            snprintf(msg, size, "cancelling: its tasks are being ended");
        }
        sched_change_job(ch, job);
        return 0;
    }
    if (job->state != SCHED_JOB_PENDING) {
        snprintf(msg, size, "job %llu is %s: only pending jobs can be %s",
                 (unsigned long long)job->id, sched_job_state_name(job->state),
                 what == GS__ENVELOPE__BODY_HOLD_REQUEST ? "held" : "released");
        return -EINVAL;
    }
    if ((what == GS__ENVELOPE__BODY_HOLD_REQUEST) == job->held) {
        snprintf(msg, size, "job %llu is %s held", (unsigned long long)job->id,
                 job->held ? "already" : "not");
        return -EALREADY;
    }
    job->held = what == GS__ENVELOPE__BODY_HOLD_REQUEST;
    snprintf(job->reason, sizeof(job->reason), "%s", job->held ? "Held" : "");
    job->expected_start_ms = 0;
    snprintf(detail, sizeof(detail), "%s by %s", job->held ? "held" : "released",
             c->uid == 0 ? "root" : job->user);
    sched_job_note(job, now, job->state, detail);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", "PENDING", detail);
    if (!job->held)
        sched_engine_wake(s);
    return 0;
}

static void action_stored(struct sched_ctx *s, int status, void *arg)
{
    struct action_op *op = arg;
    Gs__JobActionReply reply = GS__JOB_ACTION_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    (void)s;
    if (status < 0) {
        sched_cli_error(op->cli, op->request_id, status, "the change could not be stored", true);
    } else {
        reply.n_results = op->n;
        reply.results = op->ptrs;
        env.request_id = op->request_id;
        env.body_case = op->reply_case;
        if (op->reply_case == GS__ENVELOPE__BODY_CANCEL_REPLY)
            env.cancel_reply = &reply;
        else if (op->reply_case == GS__ENVELOPE__BODY_HOLD_REPLY)
            env.hold_reply = &reply;
        else if (op->reply_case == GS__ENVELOPE__BODY_REQUEUE_REPLY)
            env.requeue_reply = &reply;
        else
            env.release_reply = &reply;
        sched_cli_reply(op->cli, &env, true);
    }
    free(op->results);
    free(op->ptrs);
    free(op->messages);
    free(op);
}

static int add_result(struct action_op *op, uint64_t job_id, int code, const char *msg,
                      Gs__JobState state, size_t cap)
{
    Gs__JobActionResult *r;

    if (op->n >= cap)
        return -ENOMEM;
    r = &op->results[op->n];
    gs__job_action_result__init(r);
    r->job_id = job_id;
    r->code = code;
    snprintf(op->messages[op->n], sizeof(op->messages[op->n]), "%s", msg);
    r->message = op->messages[op->n];
    r->state = state;
    op->ptrs[op->n++] = r;
    return 0;
}

void sched_engine_action(struct sched_cli *c, const Gs__Envelope *env)
{
    struct sched_ctx *s = c->s;
    const Gs__JobSelector *sel = NULL;
    const Gs__CancelRequest *cancel = NULL;
    bool requeue_hold = false;
    uint64_t *ids = NULL;
    size_t nids = 0;
    struct action_op *op = calloc(1, sizeof(*op));
    size_t count = sched_jobs_count(s->jobs), cap;
    struct sched_change *ch = sched_change_new(s);
    char msg[160];

    if (env->body_case == GS__ENVELOPE__BODY_CANCEL_REQUEST) {
        cancel = env->cancel_request;
        sel = cancel->selector;
        if (op != NULL)
            op->reply_case = GS__ENVELOPE__BODY_CANCEL_REPLY;
    } else if (env->body_case == GS__ENVELOPE__BODY_REQUEUE_REQUEST) {
        sel = env->requeue_request->selector;
        requeue_hold = env->requeue_request->hold;
        if (op != NULL)
            op->reply_case = GS__ENVELOPE__BODY_REQUEUE_REPLY;
    } else if (env->body_case == GS__ENVELOPE__BODY_HOLD_REQUEST) {
        sel = env->hold_request->selector;
        if (op != NULL)
            op->reply_case = GS__ENVELOPE__BODY_HOLD_REPLY;
    } else {
        sel = env->release_request->selector;
        if (op != NULL)
            op->reply_case = GS__ENVELOPE__BODY_RELEASE_REPLY;
    }
    if (op == NULL || ch == NULL || sel == NULL) {
        sched_cli_error(c, env->request_id, op == NULL || ch == NULL ? -ENOMEM : -EINVAL,
                        op == NULL || ch == NULL ? "out of memory" : "no jobs selected", false);
        free(op);
        sched_change_commit(s, ch, NULL, NULL);
        return;
    }
    if (sel->n_job_ids > 0 && sched_expand_ids(s, sel->job_ids, sel->n_job_ids, &ids, &nids) < 0)
        nids = 0; /* out of memory: answered with no results */
    cap = sel->n_job_ids > 0 ? nids : count;
    op->cli = c;
    op->request_id = env->request_id;
    op->results = calloc(cap + 1, sizeof(*op->results));
    op->ptrs = calloc(cap + 1, sizeof(*op->ptrs));
    op->messages = calloc(cap + 1, sizeof(*op->messages));
    if (op->results == NULL || op->ptrs == NULL || op->messages == NULL)
        cap = 0;
    for (size_t i = 0; i < (sel->n_job_ids > 0 ? nids : count); i++) {
        struct sched_job *job =
            sel->n_job_ids > 0 ? sched_jobs_find(s->jobs, ids[i]) : sched_jobs_at(s->jobs, i);
        int rc;

        if (sel->n_job_ids == 0 &&
            (!sched_job_selected(job, sel, false) || (c->uid != 0 && c->uid != job->uid)))
            continue;
        msg[0] = '\0';
        if (job == NULL) {
            snprintf(msg, sizeof(msg), "job %llu: no such job", (unsigned long long)ids[i]);
            add_result(op, ids[i], -ENOENT, msg, GS__JOB_STATE__JOB_STATE_UNSPECIFIED, cap);
            continue;
        }
        rc = act(s, c, env->body_case, cancel, requeue_hold, job, ch, msg, sizeof(msg));
        add_result(op, job->id, rc, msg, sched_job_wire_state(job), cap);
    }
    free(ids);
    sched_cli_hold(c);
    sched_change_commit(s, ch, action_stored, op);
}
