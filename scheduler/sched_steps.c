/*
 * sched_steps.c: job steps, the `srun` of a running job. A StepLaunchRequest on a CLI
 * connection becomes one LaunchTasks per node of the step (a slice of the job's allocation
 * with the step's own task layout); the connection then stays open and carries the step's
 * StepOutput and TaskExit frames from the workers to srun, until every task has exited and
 * gschedd closes it. StepSignal from srun becomes SignalTasks to the step's nodes; srun
 * going away ends the step's tasks.
 *
 * Steps live in memory only: their exits are acknowledged to the workers at once and never
 * stored (Slurm does not restart steps either; the job's own tasks are sched_engine.c's).
 * The step number (TaskRef.step, Slurm's step id + 1) comes from a per-job counter kept
 * here until the job ends. A step does not hold its CLI record with sched_cli_hold: the
 * record lives until on_cli_close, which calls sched_steps_cli_gone first, and that clears
 * every pointer to it.
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

/* One node of a step. */
struct step_node {
    uint32_t index;       /* in s->nodes, which is the cluster's index */
    uint32_t alloc_index; /* in the job's alloc.nodes */
    uint32_t first_rank;
    uint32_t ntasks;
    uint64_t launch_request_id; /* of its LaunchTasks, which its reply echoes */
};

struct sched_step {
    struct sched_step *next;
    uint64_t job_id;
    uint32_t step; /* TaskRef.step: Slurm's step id + 1 */
    uint32_t attempt;
    struct sched_cli *cli; /* srun's connection; NULL once it went away */
    uint32_t ntasks;
    uint32_t nexited;
    bool *exited; /* per rank */
    struct step_node *nodes;
    uint32_t nnodes;
    bool send_failed; /* said once in the log */
};

/* The last step number given out in a job. */
struct sched_step_seq {
    struct sched_step_seq *next;
    uint64_t job_id;
    uint32_t last;
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

static void step_free(struct sched_ctx *s, struct sched_step *st)
{
    for (struct sched_step **p = &s->steps; *p != NULL; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            break;
        }
    }
    if (st->cli != NULL)
        st->cli->step = NULL;
    free(st->exited);
    free(st->nodes);
    free(st);
}

/* The next step number of a job (1 for its first srun), or 0 when out of memory. */
static uint32_t next_step_number(struct sched_ctx *s, uint64_t job_id)
{
    struct sched_step_seq *q;

    for (q = s->step_seqs; q != NULL; q = q->next) {
        if (q->job_id == job_id)
            return ++q->last;
    }
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return 0;
    q->job_id = job_id;
    q->last = 1;
    q->next = s->step_seqs;
    s->step_seqs = q;
    return 1;
}

static void forget_seq(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_step_seq **p = &s->step_seqs; *p != NULL; p = &(*p)->next) {
        if ((*p)->job_id == job_id) {
            struct sched_step_seq *q = *p;

            *p = q->next;
            free(q);
            return;
        }
    }
}

void sched_steps_free(struct sched_ctx *s)
{
    while (s->steps != NULL)
        step_free(s, s->steps);
    while (s->step_seqs != NULL) {
        struct sched_step_seq *q = s->step_seqs;

        s->step_seqs = q->next;
        free(q);
    }
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

/* Records rank's exit, passes it to srun, and ends the step after the last one. */
static void task_done(struct sched_ctx *s, struct sched_step *st, const Gs__TaskExit *ex)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;

    st->exited[ex->rank] = true;
    st->nexited++;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
    env.task_exit = (Gs__TaskExit *)ex;
    to_srun(st, &env);
    if (st->nexited == st->ntasks)
        step_finish(s, st);
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
 * unless the nodes were named. Then each node must hold its tasks' CPUs and GPUs.
 */
static int plan_layout(const struct sched_job *job, const struct sched_alloc_msg *m,
                       const Gs__StepLaunchRequest *req, struct sched_step *st, char *why,
                       size_t size)
{
    bool *pick = calloc(m->n + 1, sizeof(*pick));
    uint32_t k = 0, ntasks = req->ntasks, tpn = req->ntasks_per_node, rank = 0;
    uint32_t cpt = req->cpus_per_task > 0 ? req->cpus_per_task : job->spec->cpus_per_task;
    uint32_t gpt = req->gpus_per_task > 0 ? req->gpus_per_task : job->spec->gpus_per_task;
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
        if ((uint64_t)cnt * (cpt > 0 ? cpt : 1) > m->nodes[i].n_cores) {
            snprintf(why, size,
                     "node %s: %u task%s x %u CPU%s need more than the %zu cores job %" PRIu64
                     " has there",
                     m->nodes[i].node_name, cnt, cnt == 1 ? "" : "s", cpt > 0 ? cpt : 1,
                     cpt > 1 ? "s" : "", m->nodes[i].n_cores, job->id);
            goto out;
        }
        if (gpt > 0 && (uint64_t)cnt * gpt > m->nodes[i].n_gpus) {
            snprintf(why, size,
                     "node %s: %u task%s x %u GPU%s need more than the %zu GPUs job %" PRIu64
                     " has there",
                     m->nodes[i].node_name, cnt, cnt == 1 ? "" : "s", gpt, gpt > 1 ? "s" : "",
                     m->nodes[i].n_gpus, job->id);
            goto out;
        }
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

/* --- launching -------------------------------------------------------------------------------- */

struct step_msg {
    Gs__LaunchTasks lt;
    Gs__UserIdentity user;
    Gs__TaskLimits limits;
    Gs__RunSpec run;
    struct sched_alloc_msg alloc;
    Gs__NodeAllocation *nodes; /* the step's, copied from alloc with its layout */
    Gs__NodeAllocation **node_ptrs;
    Gs__LaunchTasks__EnvEntry *env;
    Gs__LaunchTasks__EnvEntry **env_ptrs;
    Gs__TaskAssignment *tasks;
    Gs__TaskAssignment **task_ptrs;
};

static void step_msg_release(struct step_msg *m)
{
    sched_alloc_msg_release(&m->alloc);
    free(m->nodes);
    free(m->node_ptrs);
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

/* Everything of the LaunchTasks but each node's tasks, borrowing from job and req. */
static int step_msg_init(struct sched_ctx *s, const struct sched_job *job,
                         const Gs__StepLaunchRequest *req, const struct sched_step *st,
                         struct step_msg *m)
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
        m->nodes[i] = m->alloc.nodes[st->nodes[i].alloc_index]; /* shares its lists */
        m->nodes[i].first_rank = st->nodes[i].first_rank;
        m->nodes[i].ntasks = st->nodes[i].ntasks;
        m->node_ptrs[i] = &m->nodes[i];
    }
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
    uint32_t cpt = req->cpus_per_task > 0 ? req->cpus_per_task : job->spec->cpus_per_task;
    uint32_t gpt = req->gpus_per_task > 0 ? req->gpus_per_task : job->spec->gpus_per_task;

    sched_node_tasks(na, na->ntasks, cpt, gpt, m->tasks, m->task_ptrs, &m->lt);
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

void sched_steps_launch(struct sched_cli *c, uint64_t request_id, const Gs__StepLaunchRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct sched_step *st = calloc(1, sizeof(*st));
    struct step_msg m = {0};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    bool *unsent = NULL;
    char why[320] = "out of memory";
    int rc = st == NULL ? -ENOMEM : check_job(c, job, req->job_id, why, sizeof(why));

    if (rc == 0 && req->n_argv == 0) {
        snprintf(why, sizeof(why), "no command to run");
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = sched_alloc_msg_build(s, job, &m.alloc);
    if (rc == 0)
        rc = plan_layout(job, &m.alloc, req, st, why, sizeof(why));
    for (uint32_t i = 0; rc == 0 && i < st->nnodes; i++) {
        const struct sched_node *n =
            st->nodes[i].index < s->nnodes ? s->nodes[st->nodes[i].index] : NULL;
        if (n == NULL || n->conn == NULL) {
            snprintf(why, sizeof(why), "node %s: its worker is not connected",
                     m.alloc.nodes[st->nodes[i].alloc_index].node_name);
            rc = -EAGAIN;
        }
    }
    if (rc == 0 && (st->step = next_step_number(s, job->id)) == 0)
        rc = -ENOMEM;
    if (rc == 0)
        rc = step_msg_init(s, job, req, st, &m);
    if (rc == 0 && (unsent = calloc(st->nnodes, sizeof(*unsent))) == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " uid=%u rc=%d why=\"%s\" step refused", req->job_id,
               (unsigned)c->uid, rc, why);
        sched_cli_error(c, request_id, rc, why, false);
        if (st != NULL)
            step_free(s, st);
        goto out;
    }
    st->job_id = job->id;
    st->attempt = job->attempt;
    st->cli = c;
    c->step = st;
    st->next = s->steps;
    s->steps = st;
    /* The reply goes first: srun must know the step before its first output comes. */
    send_reply(c, request_id, st, &m.alloc);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u ntasks=%u nodes=%u argv0=%s step launched",
           job->id, st->step - 1, st->ntasks, st->nnodes, req->argv[0]);
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &m.lt;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        node_tasks(job, req, &m.nodes[i], &m);
        env.request_id = st->nodes[i].launch_request_id = ++s->next_request_id;
        unsent[i] = !sched_node_send(s->nodes[st->nodes[i].index], &env);
    }
    /* A launch that could not go out is said as its tasks' exits, after the reply, so that
     * srun reports them as any other; the last one ends (frees) the step. */
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

/* --- what comes back ----------------------------------------------------------------------------
 */

void sched_steps_cli_message(struct sched_cli *c, const Gs__Envelope *env)
{
    struct sched_step *st = c->step;
    char reason[64];

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
    st->cli = NULL;
    c->step = NULL;
    /* srun went away before its tasks ended: they end too, as with Slurm. Not on shutdown,
     * when every connection closes and the tasks are to go on. */
    if (!s->stopping) {
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u exited=%u/%u srun gone; ending the step",
               st->job_id, st->step - 1, st->nexited, st->ntasks);
        signal_step(s, st, 0, "srun went away");
    }
    step_free(s, st); /* the exits still to come are acknowledged without it */
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
        for (uint32_t i = 0; i < st->nnodes && !ended; i++) {
            const struct step_node *sn = &st->nodes[i];

            if (sn->index != n->index)
                continue;
            for (uint32_t r = sn->first_rank; r < sn->first_rank + sn->ntasks && !ended; r++) {
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
    char msg[200];

    snprintf(msg, sizeof(msg), "job %" PRIu64 " ended (%s): its steps end with it", job_id,
             job != NULL ? sched_job_state_name(job->state) : "gone");
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
    forget_seq(s, job_id);
}
