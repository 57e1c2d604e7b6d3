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
 * Each step has an accounting record (step_acct.h, sacct's JOB.N row) and a record to take
 * it up again after a gschedd restart (step_keep.c), both stored when it starts and at each
 * of its tasks' exits, which is acknowledged to the worker once they are on disk; srun hears
 * of the exit at once. The step number (TaskRef.step, Slurm's step id + 1) is given when a
 * step starts, from a per-job counter that goes on from the job's last step. A step does not
 * hold its CLI record with sched_cli_hold: the record lives until on_cli_close, which calls
 * sched_steps_cli_gone first, and that clears every pointer to it. A running step whose srun
 * went away stays (cli NULL) until its tasks' exits come, so that what it holds is not given
 * out early; one whose srun lost its connection without leaving (the worker relaying it lost
 * gschedd), or that gschedd took up again after a restart, waits for srun to reattach
 * (StepAttach): it then hears every exit and has each node's worker send the output again
 * from where srun got to. A step whose srun does not come back within the fence timeout ends
 * its tasks.
 *
 * The pieces: steps_internal.h holds the structs they share; step_records.c keeps the steps
 * and per-job records in memory (finding, freeing, what a freed step gives back);
 * step_keep.c stores running steps and takes them up again at start-up;
 * step_plan.c lays a step out, decides what it takes of the job and builds its LaunchTasks,
 * over the job, the request and the allocation message. This file talks to srun and to
 * the workers, starts steps, queues and retries those that wait, and handles what comes back.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "common/jobspec.h"
#include "common/log.h"
#include "scheduler/steps_internal.h"

#define STEP_BUSY_REASON "Requested nodes are busy"

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

    /* What is queued is flushed first; srun may still be sending (acknowledgements, its
     * input) and is heard out, so that the last frames are not lost to a reset. */
    if (c != NULL)
        sched_cli_close_linger(c);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u exited=%u/%u step ended", st->job_id, st->step - 1,
           st->nexited, st->ntasks);
    sched_step_free(s, st);
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

void sched_step_end_tasks(struct sched_ctx *s, const struct sched_step *st, const char *why)
{
    signal_step(s, st, 0, why);
}

/* Through the node's current connection, which may not be the one the exit came on. */
static void ack_exit(struct sched_node *n, const Gs__TaskExit *ex)
{
    Gs__TaskRef ref;

    sched_task_ref_of(ex, &ref);
    sched_send_exit_ack(n, &ref);
}

/* --- accounting (sacct's step rows) ----------------------------------------------------- */

/* An exit to acknowledge once the step's row is stored. Registry nodes live as long as
 * gschedd. */
struct step_ack {
    struct sched_node *node;
    Gs__TaskRef ref;
};

static void acct_stored(struct sched_ctx *s, int status, void *arg)
{
    struct step_ack *op = arg;

    /* Not stored: no ack, so the worker reports it again when it reconnects. */
    if (op != NULL && status == 0 && !s->stopping)
        sched_send_exit_ack(op->node, &op->ref);
    free(op);
}

/* Stores the record's row with st's kept record (step_keep.c); then acks ex to n (n NULL:
 * nothing to ack), so that a worker forgets an exit only once a restart would keep it. */
static void acct_store(struct sched_ctx *s, const struct sched_step *st,
                       const struct sched_step_acct *a, struct sched_node *n,
                       const Gs__TaskExit *ex)
{
    struct step_ack *op = NULL;
    struct sched_change *ch = sched_change_new(s);

    if (n != NULL && (op = calloc(1, sizeof(*op))) != NULL) {
        op->node = n;
        sched_task_ref_of(ex, &op->ref);
    } else if (n != NULL) {
        ack_exit(n, ex); /* out of memory: the row may be lost, the exit is not kept */
    }
    if (a != NULL)
        sched_change_step(ch, st->job_id, a);
    sched_step_keep(ch, st, ex);
    sched_change_commit(s, ch, op != NULL ? acct_stored : NULL, op);
}

/* The step's name as sacct shows it: srun's -J, else its command's base name. */
static const char *step_name(const Gs__StepLaunchRequest *req)
{
    const char *cmd = req->argv[0], *slash = strrchr(cmd, '/');

    if (req->job_name != NULL && req->job_name[0] != '\0')
        return req->job_name;
    return slash != NULL ? slash + 1 : cmd;
}

/* The started step's record made and stored (sacct's JOB.N row while it runs), with what m
 * gives it on its nodes. */
static void acct_start(struct sched_ctx *s, const struct sched_step *st,
                       const Gs__StepLaunchRequest *req, const struct sched_alloc_msg *alloc,
                       const struct sched_step_msg *m)
{
    struct sched_job *job = sched_jobs_find(s->jobs, st->job_id);
    const char **names = calloc(st->nnodes + 1, sizeof(*names));
    struct gs_buf list = GS_BUF_INIT;
    struct sched_step_acct *a = NULL;

    for (uint32_t i = 0; names != NULL && i < st->nnodes; i++)
        names[i] = alloc->nodes[st->nodes[i].alloc_index].node_name;
    if (job != NULL && names != NULL && gs_hostlist_compress(names, st->nnodes, &list) == 0)
        a = sched_step_acct_add(job, st->step, step_name(req), list.data, st->nnodes, st->ntasks,
                                gs_clock_wall_ms());
    for (uint32_t i = 0; a != NULL && i < st->nnodes; i++) {
        a->cpus += (uint32_t)m->nodes[i].n_cores;
        a->gpus += (uint32_t)m->nodes[i].n_gpus;
    }
    if (a != NULL)
        a->time_limit_s = req->time_limit_s;
    else
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u out of memory: no accounting record",
               st->job_id, st->step - 1);
    acct_store(s, st, a, NULL, NULL);
    gs_buf_release(&list);
    free(names);
}

/* A task's exit in its step's record, stored; acked to n (NULL: a made-up exit) after. */
static void acct_exit(struct sched_ctx *s, const struct sched_step *st, const Gs__TaskExit *ex,
                      struct sched_node *n)
{
    struct sched_job *job = sched_jobs_find(s->jobs, st->job_id);
    struct sched_step_acct *a = job != NULL ? sched_step_acct_find(job, st->step) : NULL;

    if (a != NULL)
        sched_step_acct_exit(a, ex->rank, ex->node_name, sched_task_end_of(ex->end_reason),
                             ex->exit_code, (int32_t)ex->term_signal, ex->max_rss_kib,
                             ex->cpu_time_ms,
                             ex->end_time_ms ? ex->end_time_ms : gs_clock_wall_ms());
    acct_store(s, st, a, n, ex);
}

static void retry_waiting(struct sched_ctx *s, uint64_t job_id);

void sched_step_release(struct sched_ctx *s, struct sched_step *st)
{
    struct sched_step_seq *q = sched_step_seq_find(s, st->job_id);

    if (st->grants != NULL && q != NULL)
        sched_step_alloc_give_back(q->held, st->grants);
    free(st->grants);
    st->grants = NULL;
    st->released = true;
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u tasks=%u every task ended; kept for its srun",
           st->job_id, st->step - 1, st->ntasks);
}

/*
 * Records rank's exit (acked to n once stored; n NULL for a made-up one), passes it to srun,
 * and ends the step after the last one: what it held goes to the steps waiting in its job.
 */
static void task_done(struct sched_ctx *s, struct sched_step *st, const Gs__TaskExit *ex,
                      struct sched_node *n)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t job_id = st->job_id;

    if (st->fences != NULL)
        sched_step_pmix_task_ended(s, st);
    st->exited[ex->rank] = true;
    st->nexited++;
    /* kept for srun (a reattach hears it again) and stored with the step's record */
    if (st->exits[ex->rank] == NULL && (st->exits[ex->rank] = gs_proto_task_exit_copy(ex)) == NULL)
        GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u rank=%u out of memory: exit not kept",
               st->job_id, st->step - 1, ex->rank);
    acct_exit(s, st, ex, n);
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
    env.task_exit = (Gs__TaskExit *)ex;
    to_srun(st, &env);
    if (st->nexited < st->ntasks)
        return;
    if (st->cli == NULL && st->detached_ms != 0)
        sched_step_release(s, st); /* srun is away: it hears the exits when it reattaches */
    else
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
    task_done(s, st, &ex, NULL);
}

/* --- launching -------------------------------------------------------------------------------- */

static void send_reply(struct sched_cli *c, uint64_t request_id, const struct sched_step *st,
                       const struct sched_alloc_msg *alloc)
{
    Gs__StepLaunchReply reply = GS__STEP_LAUNCH_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char **names = calloc(st->nnodes + 1, sizeof(*names));
    uint32_t *tpn = calloc(st->nnodes + 1, sizeof(*tpn));
    uint32_t *rank_nodes = calloc(st->ntasks + 1, sizeof(*rank_nodes));

    if (names != NULL && tpn != NULL && rank_nodes != NULL) {
        for (uint32_t i = 0; i < st->nnodes; i++) {
            names[i] = alloc->nodes[st->nodes[i].alloc_index].node_name;
            tpn[i] = st->nodes[i].ntasks;
            for (uint32_t l = 0; l < st->nodes[i].ntasks; l++)
                rank_nodes[st->ranks[st->nodes[i].first + l]] = i;
        }
        reply.n_nodes = reply.n_tasks_per_node = st->nnodes;
        reply.n_rank_nodes = st->ntasks;
    }
    reply.step_id = st->step - 1;
    reply.ntasks = st->ntasks;
    reply.input = true; /* StepInput is relayed: srun may send its stdin */
    reply.input_acked = st->in_acks;
    reply.output_window = st->out_window;
    reply.nodes = names;
    reply.tasks_per_node = tpn;
    reply.rank_nodes = rank_nodes;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_STEP_LAUNCH_REPLY;
    env.step_launch_reply = &reply;
    sched_cli_send(c, &env);
    free(names);
    free(tpn);
    free(rank_nodes);
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

/* The protocol minor of node index's worker; 0 when it is not connected. */
static uint32_t node_minor(const struct sched_ctx *s, uint32_t index)
{
    const struct sched_node *n = index < s->nnodes ? s->nodes[index] : NULL;
    const Gs__Hello *peer = n != NULL && n->conn != NULL ? gs_proto_conn_peer_hello(n->conn) : NULL;

    return peer != NULL ? peer->protocol_minor : 0;
}

/* srun --input=N (N > 0) or --input=FILE: what a worker before 1.28 would not follow (it
 * would feed task 0, or give every task /dev/null). NULL for what any worker does. */
static const char *input_needs_new(const Gs__StepLaunchRequest *req)
{
    if (req->pty)
        return NULL;
    if (req->input && !req->input_all && req->input_rank != 0)
        return "a task other than 0";
    if (!req->input && req->stdin_pattern != NULL && req->stdin_pattern[0] != '\0')
        return "a file";
    return NULL;
}

/* Whether every node of the step has its worker connected; -EAGAIN with why if not. */
static int check_workers(struct sched_ctx *s, const struct sched_step *st,
                         const struct sched_alloc_msg *alloc, const Gs__StepLaunchRequest *req,
                         char *why, size_t size)
{
    const char *mpi = sched_step_mpi(s, req);
    const char *input = input_needs_new(req);
    /* A worker that predates a step's server would start its tasks without one. */
    uint32_t need = mpi == NULL                ? 0
                    : strcmp(mpi, "pmix") == 0 ? gs_proto_body_minor(GS__ENVELOPE__BODY_PMIX_FENCE)
                                               : GS_PROTO_MINOR_PMI;

    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct sched_node *n =
            st->nodes[i].index < s->nnodes ? s->nodes[st->nodes[i].index] : NULL;
        const Gs__Hello *peer =
            n != NULL && n->conn != NULL ? gs_proto_conn_peer_hello(n->conn) : NULL;

        if (n == NULL || n->conn == NULL) {
            snprintf(why, size, "node %s: its worker is not connected",
                     alloc->nodes[st->nodes[i].alloc_index].node_name);
            return -EAGAIN;
        }
        if (peer != NULL && peer->protocol_minor < need) {
            snprintf(why, size,
                     "--mpi=%s: the worker on %s speaks protocol %u.%u, and %s steps need "
                     "%u.%u",
                     mpi, n->name, peer->protocol_major, peer->protocol_minor,
                     strcmp(mpi, "pmix") == 0 ? "PMIx" : "PMI", GS_PROTO_VERSION_MAJOR, need);
            return -EOPNOTSUPP;
        }
        if (input != NULL && peer != NULL && peer->protocol_minor < GS_PROTO_MINOR_INPUT) {
            snprintf(why, size,
                     "--input: the worker on %s speaks protocol %u.%u, and stdin from %s "
                     "needs %u.%u",
                     n->name, peer->protocol_major, peer->protocol_minor, input,
                     GS_PROTO_VERSION_MAJOR, GS_PROTO_MINOR_INPUT);
            return -EOPNOTSUPP;
        }
    }
    return 0;
}

/* srun --input=N names a task of the step; --input=FILE is a pattern its workers can read. */
static int check_input(const struct sched_step *st, const Gs__StepLaunchRequest *req, char *why,
                       size_t size)
{
    const char *pattern = req->stdin_pattern != NULL ? req->stdin_pattern : "";
    const char *bad = gs_jobspec_slurm_bad_placeholder(pattern);

    if (!req->input && (bad != NULL || strlen(pattern) >= PATH_MAX)) {
        snprintf(why, size, "--input=%.64s: %s", pattern,
                 bad != NULL ? "an unknown placeholder" : "too long a file name");
        return -EINVAL;
    }
    if (!req->input || req->input_all || req->pty || req->input_rank < st->ntasks)
        return 0;
    snprintf(why, size, "--input=%u: the step has %u task%s (0-%u)", req->input_rank, st->ntasks,
             st->ntasks == 1 ? "" : "s", st->ntasks - 1);
    return -EINVAL;
}

/*
 * Whether srun's connection can carry StepInputAck and StepOutputAck (srun says, in its
 * request, that it knows them): a worker relaying it (srun on a worker's node) must know
 * them too, or it would end the session over a body it cannot decode.
 */
static bool cli_carries_acks(const struct sched_cli *c)
{
    const Gs__Hello *relay;

    if (!c->relayed)
        return true;
    relay = c->relay != NULL ? gs_proto_conn_peer_hello(c->relay) : NULL;
    return relay != NULL && relay->protocol_minor >= GS_PROTO_MINOR_INPUT;
}

/* srun's output window per node: what gschedd may then hold for srun stays well within its
 * connection's queue (GS_PROTO_WRITE_QUEUE_DEFAULT, past which output is dropped), however
 * many nodes send at once. */
static uint32_t output_window(uint32_t nnodes)
{
    uint64_t w = (GS_PROTO_WRITE_QUEUE_DEFAULT / 2) / (nnodes > 0 ? nnodes : 1);

    return w > SCHED_STEP_OUTPUT_WINDOW_MAX   ? SCHED_STEP_OUTPUT_WINDOW_MAX
           : w < SCHED_STEP_OUTPUT_WINDOW_MIN ? SCHED_STEP_OUTPUT_WINDOW_MIN
                                              : (uint32_t)w;
}

/* Which nodes read srun's stdin, and how far each is (nothing yet, or for a worker that
 * never says, before 1.28, as good as everything); whether srun hears how far the input got
 * (StepInputAck), and its output window per node (StepOutputAck; 0: none). */
static void io_plan(struct sched_ctx *s, struct sched_step *st, const struct sched_cli *c,
                    const Gs__StepLaunchRequest *req)
{
    bool acked = false; /* a reading node's worker says how far it got */

    st->in_all = req->input_all && !req->pty;
    st->in_rank = req->pty ? 0 : req->input_rank;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        struct step_node *sn = &st->nodes[i];

        sn->reads = (req->input || req->pty) && sched_step_node_reads(st, sn, req);
        sn->in_acked = node_minor(s, sn->index) >= GS_PROTO_MINOR_INPUT ? 0 : UINT64_MAX;
        acked = acked || (sn->reads && sn->in_acked == 0);
    }
    /* With only older workers reading nothing would ever let srun past its window. */
    st->in_acks = acked && req->input_acks && cli_carries_acks(c);
    st->out_window = req->output_acks && cli_carries_acks(c) ? output_window(st->nnodes) : 0;
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
    struct sched_step_msg m = {0};
    Gs__Envelope env = GS__ENVELOPE__INIT;
    bool *unsent = NULL;
    int rc;

    st->step = ++q->last;
    st->attempt = job->attempt;
    st->uid = c->uid;
    rc = sched_step_msg_init(s, job, req, st, alloc, &m);
    if (rc == 0 && (unsent = calloc(st->nnodes, sizeof(*unsent))) == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        uint64_t request_id = st->request_id;

        sched_step_free(s, st);
        refuse(c, request_id, job->id, rc, rc == -ENOMEM ? "out of memory" : m.bind_why);
        goto out;
    }
    c->step = st;
    st->next = s->steps;
    s->steps = st;
    io_plan(s, st, c, req);
    acct_start(s, st, req, alloc, &m);
    /* The reply goes first: srun must know the step before its first output comes. */
    send_reply(c, st->request_id, st, alloc);
    GS_LOG(GS_LOG_INFO,
           "job=%" PRIu64 " step=%u ntasks=%u nodes=%u gpus=%zu cores=%zu overlap=%d waited=%d "
           "argv0=%s step launched",
           job->id, st->step - 1, st->ntasks, st->nnodes, m.nodes[0].n_gpus, m.nodes[0].n_cores,
           req->overlap, st->req != NULL, req->argv[0]);
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS;
    env.launch_tasks = &m.lt;
    m.lt.step_output_window = st->out_window;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        sched_step_node_tasks(job, req, &m.nodes[i], &m);
        env.request_id = st->nodes[i].launch_request_id = ++s->next_request_id;
        unsent[i] = !sched_node_send(s->nodes[st->nodes[i].index], &env);
    }
    /* A launch that could not go out is said as its tasks' exits, after the reply, so that
     * srun reports them as any other; the last one ends (frees) the step, and req with it. */
    for (uint32_t i = 0, nnodes = st->nnodes; i < nnodes; i++) {
        for (uint32_t r = 0; unsent[i] && r < m.nodes[i].ntasks; r++) {
            struct sched_step *left = sched_step_find(s, job->id, m.lt.step);

            if (left == NULL)
                break;
            fake_exit(s, left, left->ranks[left->nodes[i].first + r], m.nodes[i].node_name,
                      GS__END_REASON__END_REASON_LAUNCH_FAILED,
                      "gschedd could not send the launch to its worker");
        }
    }
out:
    free(unsent);
    sched_step_msg_release(&m);
}

/* --- waiting ------------------------------------------------------------------------------------
 */

/* Queues st (laid out, nothing given) behind its job's waiting steps and tells srun why. */
static int step_wait(struct sched_step_seq *q, const Gs__StepLaunchRequest *req,
                     struct sched_step *st, const char *reason)
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
    pending.reason = (char *)reason;
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
        rc = check_workers(s, st, &alloc, st->req, why, sizeof(why));
    if (rc == 0) /* a suspended job's steps wait for its resume */
        rc = sched_step_take(q, job, &alloc, st->req, st, job->suspended, why, sizeof(why));
    if (rc == -EBUSY)
        goto out;
    sched_step_unlink(&q->waiting, st);
    st->waiting = false;
    if (rc == 0) {
        step_run(s, q, job, st->req, st, &alloc);
    } else {
        sched_step_free(s, st);
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
    struct sched_step_seq *q = sched_step_seq_find(s, job_id);

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

void sched_steps_job_resumed(struct sched_ctx *s, uint64_t job_id)
{
    retry_waiting(s, job_id);
}

static void attach(struct sched_cli *c, uint64_t request_id, uint64_t job_id, struct sched_step *st,
                   const uint64_t *written, size_t n_written);

/* The running step of req's job that was launched with req's key (NULL: none, or no key). */
static struct sched_step *keyed_step(struct sched_ctx *s, const Gs__StepLaunchRequest *req)
{
    for (struct sched_step *st = s->steps;
         req->launch_key != NULL && req->launch_key[0] != '\0' && st != NULL; st = st->next) {
        if (st->job_id == req->job_id && strcmp(st->launch_key, req->launch_key) == 0)
            return st;
    }
    return NULL;
}

void sched_steps_launch(struct sched_cli *c, uint64_t request_id, const Gs__StepLaunchRequest *req)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, req->job_id);
    struct sched_step *st = calloc(1, sizeof(*st)), *kept;
    struct sched_alloc_msg alloc = {0};
    struct sched_step_seq *q = NULL;
    char why[320] = "out of memory";
    int rc = st == NULL ? -ENOMEM : check_job(c, job, req->job_id, why, sizeof(why));

    if (rc == 0 && req->launch_key != NULL && strlen(req->launch_key) > SCHED_STEP_KEY_MAX) {
        snprintf(why, sizeof(why), "launch_key: longer than %d bytes", SCHED_STEP_KEY_MAX);
        rc = -EINVAL;
    }
    /* Sent again by an srun that lost its connection before the reply: the step it started */
    if (rc == 0 && (kept = keyed_step(s, req)) != NULL) {
        free(st);
        attach(c, request_id, req->job_id, kept, NULL, 0);
        return;
    }
    if (rc == 0 && req->n_argv == 0) {
        snprintf(why, sizeof(why), "no command to run");
        rc = -EINVAL;
    }
    if (rc == 0 && req->mpi != NULL && req->mpi[0] != '\0' && strcmp(req->mpi, "pmix") != 0 &&
        strcmp(req->mpi, "pmi2") != 0 && strcmp(req->mpi, "none") != 0) {
        snprintf(why, sizeof(why), "--mpi=%.64s: gsched's steps know pmix, pmi2 and none",
                 req->mpi);
        rc = -EINVAL;
    }
    if (rc == 0 && (q = sched_step_seq_get(s, job)) == NULL)
        rc = -ENOMEM;
    if (rc == 0)
        rc = sched_alloc_msg_build(s, job, &alloc);
    if (rc == 0)
        rc = sched_step_plan_layout(job, &alloc, req, st, why, sizeof(why));
    if (rc == 0)
        rc = check_input(st, req, why, sizeof(why));
    if (rc == 0)
        rc = check_workers(s, st, &alloc, req, why, sizeof(why));
    if (rc == 0) {
        st->job_id = job->id;
        st->cli = c;
        st->request_id = request_id;
        snprintf(st->launch_key, sizeof(st->launch_key), "%s",
                 req->launch_key != NULL ? req->launch_key : "");
        rc = sched_step_take(q, job, &alloc, req, st, q->waiting != NULL || job->suspended, why,
                             sizeof(why));
    }
    if (rc == -EBUSY)
        rc = step_wait(q, req, st, job->suspended ? "Job is suspended" : STEP_BUSY_REASON);
    if (rc < 0) {
        refuse(c, request_id, req->job_id, rc, why);
        if (st != NULL)
            sched_step_free(s, st);
    } else if (!st->waiting) {
        step_run(s, q, job, req, st, &alloc);
    }
    sched_alloc_msg_release(&alloc);
}

/* --- what comes back ----------------------------------------------------------------------------
 */

/* srun's StepInput: to the workers of the step's reading tasks (every one, or the one with
 * the input rank), job, step and rank filled in; dropped where a worker is not connected. */
static void step_input(struct sched_ctx *s, const struct sched_step *st, const Gs__StepInput *in)
{
    Gs__StepInput fwd = *in, old;
    Gs__Envelope env = GS__ENVELOPE__INIT, env_old = GS__ENVELOPE__INIT;

    fwd.job_id = st->job_id;
    fwd.step = st->step;
    fwd.rank = st->in_rank;
    fwd.all = st->in_all;
    env.body_case = env_old.body_case = GS__ENVELOPE__BODY_STEP_INPUT;
    env.step_input = &fwd;
    /* A worker before 1.30 knows no end: it would give its tasks again what srun resends */
    old = fwd;
    old.end = 0;
    old.resent = false;
    env_old.step_input = &old;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        const struct step_node *sn = &st->nodes[i];
        struct sched_node *n = sn->index < s->nnodes ? s->nodes[sn->index] : NULL;
        uint32_t minor = n != NULL ? node_minor(s, sn->index) : 0;

        /* An older worker would drop the connection over a body case it does not know. */
        if (!sn->reads || n == NULL || minor < GS_PROTO_MINOR_ALLOC)
            continue;
        if (minor >= GS_PROTO_MINOR_STEP_KEY)
            sched_node_send(n, &env);
        else if (!in->resent)
            sched_node_send(n, &env_old);
    }
}

/* srun's StepOutputAck for one node of the step: to that node's worker, job and step filled
 * in (one before 1.28 would drop the connection over it, and holds nothing back anyway). */
static void output_taken(struct sched_ctx *s, struct sched_step *st, const Gs__StepOutputAck *ack)
{
    Gs__StepOutputAck fwd = *ack;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct step_node *sn = ack->node < st->nnodes ? &st->nodes[ack->node] : NULL;
    struct sched_node *n = sn != NULL && sn->index < s->nnodes ? s->nodes[sn->index] : NULL;

    if (sn != NULL && ack->offset > sn->out_acked) /* where a worker back resends from */
        sn->out_acked = ack->offset;
    if (n == NULL || st->out_window == 0 || node_minor(s, sn->index) < GS_PROTO_MINOR_INPUT)
        return;
    fwd.job_id = st->job_id;
    fwd.step = st->step;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_ACK;
    env.step_output_ack = &fwd;
    sched_node_send(n, &env);
}

/* The least of the reading nodes' progress, told to srun when it passed what it was told. */
static void input_progress(struct sched_step *st)
{
    Gs__StepInputAck ack = GS__STEP_INPUT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t least = UINT64_MAX;

    for (uint32_t i = 0; i < st->nnodes; i++) {
        if (st->nodes[i].reads && st->nodes[i].in_acked < least)
            least = st->nodes[i].in_acked;
    }
    if (!st->in_acks || least <= st->in_told)
        return;
    st->in_told = least;
    ack.job_id = st->job_id;
    ack.offset = least;
    env.body_case = GS__ENVELOPE__BODY_STEP_INPUT_ACK;
    env.step_input_ack = &ack;
    to_srun(st, &env);
}

void sched_steps_input_ack(struct sched_ctx *s, struct sched_node *n, const Gs__StepInputAck *a)
{
    struct sched_step *st = sched_step_find(s, a->job_id, a->step);

    for (uint32_t i = 0; st != NULL && i < st->nnodes; i++) {
        struct step_node *sn = &st->nodes[i];

        if (sn->index != n->index || !sn->reads || a->offset <= sn->in_acked)
            continue;
        sn->in_acked = a->offset;
        input_progress(st);
        return;
    }
}

void sched_steps_cli_message(struct sched_cli *c, const Gs__Envelope *env)
{
    struct sched_step *st = c->step;
    char reason[64];

    if (st->waiting) { /* nothing runs yet; srun withdraws by closing */
        GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " body=%s for a waiting step, ignored", st->job_id,
               gs_proto_body_name(env->body_case));
        return;
    }
    if (env->body_case == GS__ENVELOPE__BODY_STEP_INPUT) {
        step_input(c->s, st, env->step_input);
        return;
    }
    if (env->body_case == GS__ENVELOPE__BODY_STEP_OUTPUT_ACK) {
        output_taken(c->s, st, env->step_output_ack);
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
        sched_step_free(s, st);
        if (!s->stopping)
            retry_waiting(s, job_id);
        return;
    }
    st->cli = NULL;
    c->step = NULL;
    /* On shutdown every connection closes and the tasks are to go on: the step's stored
     * record takes it up again at the next start (step_keep.c). */
    if (s->stopping) {
        sched_step_free(s, st);
        return;
    }
    /* The worker relaying srun lost gschedd (or restarted): srun lost its connection
     * without ending, and reattaches through the worker once it is back. */
    if (c->relay_lost && st->nexited < st->ntasks) {
        st->detached_ms = gs_clock_mono_ms();
        GS_LOG(GS_LOG_INFO,
               "job=%" PRIu64 " step=%u exited=%u/%u srun's relay went away; waiting for srun",
               st->job_id, st->step - 1, st->nexited, st->ntasks);
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
    struct sched_step *st = sched_step_find(s, ex->job_id, ex->step);
    Gs__TaskExit copy;

    if (st == NULL || ex->attempt != st->attempt || ex->rank >= st->ntasks ||
        st->exited[ex->rank]) {
        ack_exit(n, ex);
        GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%u rank=%u node=%s exit of no step, acked",
               ex->job_id, ex->step > 0 ? ex->step - 1 : 0, ex->rank, n->name);
        return;
    }
    GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%u rank=%u node=%s exit=%d signal=%u task ended",
           ex->job_id, ex->step - 1, ex->rank, n->name, ex->exit_code, ex->term_signal);
    copy = *ex;
    if (copy.node_name == NULL || copy.node_name[0] == '\0')
        copy.node_name = n->name;
    task_done(s, st, &copy, n);
}

void sched_steps_output(struct sched_ctx *s, struct sched_node *n, const Gs__StepOutput *out)
{
    struct sched_step *st = sched_step_find(s, out->job_id, out->step);
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
            struct step_node *sn = &st->nodes[i];

            if (sn->index != n->index)
                continue;
            if (sn->reads && sn->in_acked != UINT64_MAX) { /* srun's input waits on it no more */
                sn->in_acked = UINT64_MAX;
                input_progress(st);
            }
            for (uint32_t l = 0; !ended && l < sn->ntasks; l++) {
                uint32_t r = st->ranks[sn->first + l];

                if (st->exited[r])
                    continue;
                ended = st->nexited + 1 == st->ntasks;
                fake_exit(s, st, r, n->name, GS__END_REASON__END_REASON_LOST, why);
            }
        }
    }
}

/* The job's srun steps that were still running end CANCELLED with it, as in Slurm. */
static void acct_job_ended(struct sched_ctx *s, uint64_t job_id)
{
    struct sched_job *job = sched_jobs_find(s->jobs, job_id);
    struct sched_change *ch = NULL;
    uint64_t now = gs_clock_wall_ms();

    for (uint32_t i = 0; job != NULL && i < job->nsteps; i++) {
        struct sched_step_acct *a = &job->steps[i];

        if (a->step == SCHED_STEP_BATCH || a->state != SCHED_JOB_RUNNING ||
            a->attempt != job->attempt)
            continue;
        sched_step_acct_close(a, SCHED_JOB_CANCELLED, job->end_ms != 0 ? job->end_ms : now);
        if (ch == NULL)
            ch = sched_change_new(s);
        sched_change_step(ch, job_id, a);
    }
    if (ch != NULL)
        sched_change_commit(s, ch, NULL, NULL);
}

void sched_steps_job_ended(struct sched_ctx *s, uint64_t job_id)
{
    const struct sched_job *job = sched_jobs_find(s->jobs, job_id);
    struct sched_step_seq *q = sched_step_seq_find(s, job_id);
    char msg[200];

    snprintf(msg, sizeof(msg), "job %" PRIu64 " ended (%s): its steps end with it", job_id,
             job != NULL ? sched_job_state_name(job->state) : "gone");
    if (q != NULL)
        q->ending = true; /* what the steps below give back starts nothing */
    while (q != NULL && q->waiting != NULL) {
        struct sched_step *st = q->waiting;
        struct sched_cli *c = st->cli;
        uint64_t request_id = st->request_id;

        sched_step_free(s, st);
        if (c != NULL)
            sched_cli_error(c, request_id, -ECANCELED, msg, false);
    }
    for (struct sched_step *st = s->steps, *next; st != NULL; st = next) {
        Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
        Gs__Envelope env = GS__ENVELOPE__INIT;
        struct sched_change *ch;

        next = st->next;
        if (st->job_id != job_id)
            continue;
        if ((ch = sched_change_new(s)) != NULL) { /* nothing of it to take up again */
            sched_change_live_step(ch, job_id, st->step, NULL, 0);
            sched_change_commit(s, ch, NULL, NULL);
        }
        err.code = -ECANCELED;
        err.message = msg;
        env.body_case = GS__ENVELOPE__BODY_ERROR;
        env.error = &err;
        to_srun(st, &env);
        /* Its tasks on their own nodes: the job's allocation may be given back already. */
        signal_step(s, st, 0, msg);
        step_finish(s, st);
    }
    sched_step_seq_forget(s, job_id);
    acct_job_ended(s, job_id);
}

/* --- srun reattaching (steps kept over a restart, step_keep.c) ---------------------------------
 */

/* Node i of st sends its output again from offset (what srun has of it), if its worker keeps
 * output for that (1.29) and the step has srun's window. */
static void resume_output(struct sched_ctx *s, const struct sched_step *st, uint32_t i,
                          uint64_t offset)
{
    Gs__StepOutputResume resume = GS__STEP_OUTPUT_RESUME__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const struct step_node *sn = &st->nodes[i];
    struct sched_node *n = sn->index < s->nnodes ? s->nodes[sn->index] : NULL;

    if (n == NULL || n->conn == NULL || st->out_window == 0 ||
        node_minor(s, sn->index) < GS_PROTO_MINOR_STEP_GRES)
        return;
    resume.job_id = st->job_id;
    resume.step = st->step;
    resume.offset = offset;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT_RESUME;
    env.step_output_resume = &resume;
    sched_node_send(n, &env);
}

/*
 * srun c back on step st of job_id with written[i] bytes of the output of the step's node i
 * (n_written of them; the others: what it acknowledged): the StepLaunchReply, every exit
 * so far, and the output again from there (StepAttach, or a launch request sent again with
 * the step's key).
 */
static void attach(struct sched_cli *c, uint64_t request_id, uint64_t job_id, struct sched_step *st,
                   const uint64_t *written, size_t n_written)
{
    struct sched_ctx *s = c->s;
    const struct sched_job *job = sched_jobs_find(s->jobs, job_id);
    struct sched_alloc_msg alloc = {0};
    char why[200] = "out of memory";
    int rc = 0;

    if (job == NULL) {
        snprintf(why, sizeof(why), "job %" PRIu64 " is not running", job_id);
        rc = -ENOENT;
    } else if (c->uid != 0 && c->uid != st->uid) {
        snprintf(why, sizeof(why), "step %" PRIu64 ".%u is uid %u's, not uid %u's", job_id,
                 st->step - 1, (unsigned)st->uid, (unsigned)c->uid);
        rc = -EPERM;
    } else if (st->cli != NULL) {
        snprintf(why, sizeof(why), "step %" PRIu64 ".%u has its srun connected", job_id,
                 st->step - 1);
        rc = -EBUSY;
    } else {
        rc = sched_alloc_msg_build(s, job, &alloc);
    }
    if (rc < 0) {
        refuse(c, request_id, job_id, rc, why);
        sched_alloc_msg_release(&alloc);
        return;
    }
    st->cli = c;
    c->step = st;
    st->request_id = request_id;
    st->detached_ms = 0;
    st->send_failed = false;
    st->in_told = 0;
    send_reply(c, request_id, st, &alloc);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " step=%u uid=%u exited=%u/%u srun reattached", st->job_id,
           st->step - 1, (unsigned)c->uid, st->nexited, st->ntasks);
    for (uint32_t r = 0; r < st->ntasks; r++) { /* srun takes each rank's once */
        Gs__Envelope env = GS__ENVELOPE__INIT;

        if (st->exits[r] == NULL)
            continue;
        env.body_case = GS__ENVELOPE__BODY_TASK_EXIT;
        env.task_exit = st->exits[r];
        to_srun(st, &env);
    }
    for (uint32_t i = 0; i < st->nnodes; i++) {
        uint64_t have = i < n_written ? written[i] : st->nodes[i].out_acked;

        if (have > st->nodes[i].out_acked)
            st->nodes[i].out_acked = have;
        resume_output(s, st, i, have);
    }
    if (st->released || st->nexited == st->ntasks)
        step_finish(s, st);
    sched_alloc_msg_release(&alloc);
}

void sched_steps_attach(struct sched_cli *c, uint64_t request_id, const Gs__StepAttach *a)
{
    struct sched_step *st = sched_step_find(c->s, a->job_id, a->step);
    char why[100];

    if (st == NULL) {
        snprintf(why, sizeof(why), "job %" PRIu64 " has no step %u running", a->job_id,
                 a->step > 0 ? a->step - 1 : 0);
        refuse(c, request_id, a->job_id, -ENOENT, why);
        return;
    }
    attach(c, request_id, a->job_id, st, a->output_written, a->n_output_written);
}

void sched_steps_node_back(struct sched_ctx *s, struct sched_node *n)
{
    for (struct sched_step *st = s->steps; st != NULL; st = st->next) {
        for (uint32_t i = 0; st->cli != NULL && i < st->nnodes; i++) {
            if (st->nodes[i].index == n->index)
                resume_output(s, st, i, st->nodes[i].out_acked);
        }
    }
}

/* How long a step waits for its srun after a restart: as long as a worker waits for gschedd
 * before it fences itself, 5 minutes where it never does. */
static uint64_t reattach_ms(const struct sched_ctx *s)
{
    uint64_t fence = sched_fence_ms(s);

    return fence > 0 ? fence : 5 * 60 * 1000;
}

void sched_steps_check_detached(struct sched_ctx *s)
{
    uint64_t now = gs_clock_mono_ms();

    for (struct sched_step *st = s->steps, *next; st != NULL; st = next) {
        next = st->next;
        if (st->cli != NULL || st->detached_ms == 0 || now - st->detached_ms < reattach_ms(s))
            continue;
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%u exited=%u/%u srun did not come back; "
               "ending the step",
               st->job_id, st->step - 1, st->nexited, st->ntasks);
        if (st->released || st->nexited == st->ntasks) {
            step_finish(s, st); /* its tasks are gone; what it held is back already */
            continue;
        }
        st->detached_ms = 0; /* its tasks' exits end it, as when srun goes away */
        signal_step(s, st, 0, "srun did not reattach after gschedd restarted");
    }
}

/* Whether node n's registration lists rank of st as running, or as ended (an exit it keeps). */
static bool reg_knows(const Gs__NodeRegister *reg, const struct sched_step *st, uint32_t rank)
{
    for (size_t i = 0; i < reg->n_running; i++) {
        const Gs__TaskRef *t = reg->running[i];

        if (t->job_id == st->job_id && t->step == st->step && t->rank == rank &&
            t->attempt == st->attempt)
            return true;
    }
    for (size_t i = 0; i < reg->n_unacked_exits; i++) {
        const Gs__TaskExit *e = reg->unacked_exits[i];

        if (e->job_id == st->job_id && e->step == st->step && e->rank == rank &&
            e->attempt == st->attempt)
            return true;
    }
    return false;
}

void sched_steps_reconcile(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg)
{
    char why[160];

    snprintf(why, sizeof(why), "node %s: its worker no longer runs the task", n->name);
    for (struct sched_step *st = s->steps, *next; st != NULL; st = next) {
        bool ended = false;

        next = st->next;
        for (uint32_t i = 0; !ended && i < st->nnodes; i++) {
            const struct step_node *sn = &st->nodes[i];

            for (uint32_t l = 0; !ended && sn->index == n->index && l < sn->ntasks; l++) {
                uint32_t r = st->ranks[sn->first + l];

                if (st->exited[r] || reg_knows(reg, st, r))
                    continue;
                /* the last fake exit may free st (ended is tested before it is read) */
                ended = st->nexited + 1 == st->ntasks && !(st->cli == NULL && st->detached_ms);
                fake_exit(s, st, r, n->name, GS__END_REASON__END_REASON_LOST, why);
            }
        }
    }
}
