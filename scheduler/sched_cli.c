/*
 * sched_cli.c: requests from the gsched CLI on gschedd's Unix socket. Each connection
 * carries one request and gets one reply, then closes. The caller's uid comes from
 * SO_PEERCRED, never from the message, so per-user rules can rest on it. Requests answered
 * later (after a commit, a wait, a worker's answer) hold the connection's record alive
 * (sched_cli_hold) so that a peer that hung up meanwhile costs nothing but a dropped reply.
 *
 * A CLI inside a job on another host reaches gschedd through its node's worker, which
 * relays the session in CliRelay frames over its own connection (worker/relay.h). Such a
 * relayed CLI is a sched_cli without a connection, served by the same dispatch; only
 * sched_cli_send and sched_cli_close know the difference, so the rest of the scheduler does
 * not. The uid is the one the worker vouches for: gschedd trusts its registered workers as
 * slurmctld trusts slurmd (they proved they hold the cluster key, proto/auth.h), and takes
 * CliRelay from nowhere else. A worker speaks only for the users whose jobs run on its node:
 * a session for any other uid (root included) is refused at its first request, so a node
 * that was broken into cannot act for the rest of the cluster's users.
 *
 * A CLI on a login node connects over TCP (sched_login.c): its uid comes from a MUNGE
 * credential instead of SO_PEERCRED, and once that has passed it is served here like any.
 */
#define _GNU_SOURCE /* struct ucred */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "gsched_config.h"
#include "scheduler/sched_internal.h"
#include "common/sort.h"

static void on_relayed_freed(uv_handle_t *handle)
{
    struct sched_cli *c = handle->data;
    struct sched_ctx *s = c->s;

    free(c);
    sched_release_handle(s);
}

static void cli_free_if_done(struct sched_cli *c)
{
    struct sched_ctx *s = c->s;

    if (!c->closed || c->busy > 0 || c->freeing)
        return;
    if (c->relayed) { /* its timer is the handle counted for it */
        c->freeing = true;
        uv_close((uv_handle_t *)&c->close_timer, on_relayed_freed);
        return;
    }
    free(c);
    sched_release_handle(s);
}

/* The peer is gone, however: what a connection's on_close does, once per record. */
void sched_cli_gone(struct sched_cli *c)
{
    struct sched_ctx *s = c->s;

    if (c->closed)
        return;
    for (struct sched_cli **p = &s->clis; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    c->closed = true;
    c->conn = NULL;
    c->relay = NULL;
    sched_query_cli_gone(c);
    sched_steps_cli_gone(c);
    sched_kv_cli_gone(c);
    sched_alloc_cli_gone(c);
    cli_free_if_done(c);
}

/* A frame (inner) or the end of the session (inner NULL) to a relayed CLI's worker. */
static int relay_down(struct gs_proto_conn *worker, uint64_t session, const Gs__Envelope *inner)
{
    Gs__CliRelay msg = GS__CLI_RELAY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct gs_buf packed = GS_BUF_INIT;
    int rc = 0;

    if (worker == NULL)
        return -ENOTCONN;
    msg.session = session;
    rc = gs_proto_relay_pack(&msg, inner, &packed);
    if (rc < 0)
        goto out;
    env.body_case = GS__ENVELOPE__BODY_CLI_RELAY;
    env.cli_relay = &msg;
    rc = gs_proto_conn_send(worker, &env);
out:
    gs_buf_release(&packed);
    return rc;
}

static void on_relayed_close(uv_timer_t *timer)
{
    sched_cli_gone(timer->data);
}

void sched_cli_hold(struct sched_cli *c)
{
    c->busy++;
}

void sched_cli_unhold(struct sched_cli *c)
{
    c->busy--;
    cli_free_if_done(c);
}

int sched_cli_send(struct sched_cli *c, const Gs__Envelope *env)
{
    if (c->closed || c->closing)
        return -ENOTCONN;
    if (c->relayed)
        return relay_down(c->relay, c->relay_session, env);
    if (c->conn == NULL)
        return -ENOTCONN;
    return gs_proto_conn_send(c->conn, env);
}

void sched_cli_close(struct sched_cli *c)
{
    if (c->closed || c->closing)
        return;
    if (c->relayed) {
        /* After the frames queued before it, on the same connection: the worker flushes
         * them to the CLI, then closes its socket. */
        (void)relay_down(c->relay, c->relay_session, NULL);
        c->closing = true;
        uv_timer_start(&c->close_timer, on_relayed_close, 0, 0);
        return;
    }
    if (c->conn != NULL)
        gs_proto_conn_close(c->conn);
}

void sched_cli_close_linger(struct sched_cli *c)
{
    if (c->closed || c->closing || c->relayed || c->conn == NULL) {
        sched_cli_close(c); /* a relayed CLI's worker ends its own socket */
        return;
    }
    gs_proto_conn_close_linger(c->conn);
}

void sched_cli_reply(struct sched_cli *c, Gs__Envelope *env, bool held)
{
    /*
     * One request per connection: the reply is flushed, then the connection closes. A peer
     * that cannot take the reply has gone or is stuck; closing is all there is left to do.
     */
    (void)sched_cli_send(c, env);
    sched_cli_close(c);
    if (held)
        sched_cli_unhold(c);
}

void sched_cli_error(struct sched_cli *c, uint64_t request_id, int code, const char *msg, bool held)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    err.code = code;
    err.message = (char *)msg;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    sched_cli_reply(c, &env, held);
}

Gs__JobState sched_job_wire_state(const struct sched_job *job)
{
    return (Gs__JobState)job->state;
}

void sched_cli_submit_reply(struct sched_cli *c, uint64_t request_id, uint64_t job_id,
                            uint32_t array_size, const char *partition)
{
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (sched_alloc_submitted(c, job_id))
        return;
    reply.job_id = job_id;
    reply.state = GS__JOB_STATE__JOB_STATE_PENDING;
    reply.array_size = array_size;
    reply.partition = (char *)(partition != NULL ? partition : "");
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    sched_cli_reply(c, &env, true);
}

void sched_cli_test_reply(struct sched_cli *c, uint64_t request_id, uint32_t array_size,
                          const char *partition, const struct sched_will_run *w, const char *nodes)
{
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.state = GS__JOB_STATE__JOB_STATE_PENDING;
    reply.array_size = array_size;
    reply.partition = (char *)(partition != NULL ? partition : "");
    reply.expected_start_ms = w->start_ms;
    reply.starts_now = w->now;
    reply.sched_nodes = (char *)nodes;
    reply.cpus = w->cpus;
    reply.wait_reason = (char *)w->reason;
    reply.preempts = w->preempts;
    reply.n_preempts = w->npreempts;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    sched_cli_reply(c, &env, true);
}

void sched_cli_action_reply(struct sched_cli *c, uint64_t request_id, Gs__Envelope__BodyCase what,
                            const struct sched_action_result *results, size_t n)
{
    Gs__JobActionReply reply = GS__JOB_ACTION_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__JobActionResult *r = calloc(n + 1, sizeof(*r));
    Gs__JobActionResult **ptrs = calloc(n + 1, sizeof(*ptrs));

    if (r == NULL || ptrs == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", true);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        gs__job_action_result__init(&r[i]);
        r[i].job_id = results[i].job_id;
        r[i].code = results[i].code;
        r[i].message = (char *)results[i].message;
        r[i].state = results[i].state;
        ptrs[i] = &r[i];
    }
    reply.n_results = n;
    reply.results = ptrs;
    env.request_id = request_id;
    env.body_case = what == GS__ENVELOPE__BODY_JOB_UPDATE_REQUEST
                        ? GS__ENVELOPE__BODY_JOB_UPDATE_REPLY
                    : what == GS__ENVELOPE__BODY_CANCEL_REQUEST  ? GS__ENVELOPE__BODY_CANCEL_REPLY
                    : what == GS__ENVELOPE__BODY_HOLD_REQUEST    ? GS__ENVELOPE__BODY_HOLD_REPLY
                    : what == GS__ENVELOPE__BODY_REQUEUE_REQUEST ? GS__ENVELOPE__BODY_REQUEUE_REPLY
                    : what == GS__ENVELOPE__BODY_SUSPEND_REQUEST ? GS__ENVELOPE__BODY_SUSPEND_REPLY
                                                                 : GS__ENVELOPE__BODY_RELEASE_REPLY;
    if (env.body_case == GS__ENVELOPE__BODY_JOB_UPDATE_REPLY)
        env.job_update_reply = &reply;
    else if (env.body_case == GS__ENVELOPE__BODY_CANCEL_REPLY)
        env.cancel_reply = &reply;
    else if (env.body_case == GS__ENVELOPE__BODY_HOLD_REPLY)
        env.hold_reply = &reply;
    else if (env.body_case == GS__ENVELOPE__BODY_REQUEUE_REPLY)
        env.requeue_reply = &reply;
    else if (env.body_case == GS__ENVELOPE__BODY_SUSPEND_REPLY)
        env.suspend_reply = &reply;
    else
        env.release_reply = &reply;
    sched_cli_reply(c, &env, true);
out:
    free(r);
    free(ptrs);
}

/* One NodeInfo, borrowing from the node; free_gpus is the caller's array to free. */
static void fill_node_info(struct sched_ctx *s, struct sched_node *n, Gs__NodeInfo *info,
                           bool with_topology)
{
    uint32_t free_gpus = sched_cluster_free_gpus(s->cluster, n->index);

    gs__node_info__init(info);
    info->name = n->name;
    /* Up means schedulable: a node whose worker has not (re)connected is not, yet. */
    info->state = sched_node_state(s, n);
    info->reason = (char *)sched_node_reason(n);
    info->gpus_total = (uint32_t)n->topology->n_gpus;
    info->gpus_free = n->up ? free_gpus : 0;
    info->cores_total = n->topology->cores;
    info->cores_free = n->up ? sched_cluster_free_cores(s->cluster, n->index) : 0;
    info->memory_total_mib = n->topology->memory_mib;
    info->memory_free_mib = n->up ? sched_cluster_free_mem(s->cluster, n->index) : 0;
    info->tmp_disk_mib = n->topology->tmp_disk_mib;
    info->n_features = n->topology->n_features;
    info->features = n->topology->features;
    info->last_heartbeat_ms = n->last_heartbeat_wall;
    info->maint = sched_resv_node_maint(s, n->name, gs_clock_wall_ms());
    if (with_topology)
        info->topology = n->topology;
}

static bool wanted(const Gs__NodesRequest *req, const char *name)
{
    if (req->n_names == 0)
        return true;
    for (size_t i = 0; i < req->n_names; i++) {
        if (strcmp(req->names[i], name) == 0)
            return true;
    }
    return false;
}

static int by_name(const void *a, const void *b)
{
    const Gs__NodeInfo *x = *(Gs__NodeInfo *const *)a, *y = *(Gs__NodeInfo *const *)b;

    return strverscmp(x->name, y->name);
}

static void handle_nodes(struct sched_cli *c, uint64_t request_id, const Gs__NodesRequest *req)
{
    struct sched_ctx *s = c->s;
    Gs__NodeInfo *infos = calloc(s->nnodes + 1, sizeof(*infos));
    Gs__NodeInfo **ptrs = calloc(s->nnodes + 1, sizeof(*ptrs));
    struct sched_tel_msgs *tel = calloc(s->nnodes + 1, sizeof(*tel));
    Gs__NodesReply reply = GS__NODES_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (infos == NULL || ptrs == NULL || tel == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        goto out;
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        if (!wanted(req, s->nodes[i]->name))
            continue;
        fill_node_info(s, s->nodes[i], &infos[reply.n_nodes], req->with_topology);
        if (sched_telemetry_node_info(s, s->nodes[i], &infos[reply.n_nodes], &tel[reply.n_nodes]) <
            0) {
            sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
            goto out;
        }
        ptrs[reply.n_nodes] = &infos[reply.n_nodes];
        reply.n_nodes++;
    }
    gs_sort(ptrs, reply.n_nodes, sizeof(*ptrs), by_name); /* as sinfo lists them */
    reply.nodes = ptrs;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_NODES_REPLY;
    env.nodes_reply = &reply;
    sched_cli_reply(c, &env, false);
out:
    for (size_t i = 0; tel != NULL && i < s->nnodes; i++)
        sched_telemetry_msgs_release(&tel[i]);
    free(tel);
    free(infos);
    free(ptrs);
}

/*
 * The report's free text as shown later: at most SCHED_PROGRESS_TEXT_MAX bytes, cut before
 * a UTF-8 sequence rather than inside one, control characters (a newline would break the
 * one-line display) as spaces.
 */
static void progress_text(char *out, const char *in)
{
    size_t n = in != NULL ? strnlen(in, SCHED_PROGRESS_TEXT_MAX + 1) : 0;

    if (n > SCHED_PROGRESS_TEXT_MAX) {
        n = SCHED_PROGRESS_TEXT_MAX;
        while (n > 0 && ((unsigned char)in[n] & 0xC0) == 0x80)
            n--;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)in[i];

        out[i] = ch < 0x20 || ch == 0x7F ? ' ' : (char)ch;
    }
    out[n] = '\0';
}

/* Shared by the requests a job's own tasks make: progress reports, its key/value store. */
struct sched_job *sched_cli_task_job(struct sched_cli *c, uint64_t request_id, uint64_t job_id,
                                     const char *what, const char *running_only)
{
    struct sched_job *job = sched_jobs_find(c->s->jobs, job_id);
    char msg[200];
    int code = 0;

    if (job == NULL) {
        code = -ENOENT;
        snprintf(msg, sizeof(msg), "job %llu: no such job", (unsigned long long)job_id);
    } else if (c->uid != 0 && (uint32_t)c->uid != job->uid) {
        code = -EPERM;
        snprintf(msg, sizeof(msg), "job %llu: only its owner or root may %s",
                 (unsigned long long)job_id, what);
    } else if (job->state != SCHED_JOB_RUNNING) {
        code = -EINVAL;
        snprintf(msg, sizeof(msg), "job %llu is %s: %s", (unsigned long long)job_id,
                 sched_job_state_name(job->state), running_only);
    }
    if (code == 0)
        return job;
    GS_LOG(GS_LOG_DEBUG, "job=%llu uid=%u rc=%d what=\"%s\" request refused",
           (unsigned long long)job_id, (unsigned)c->uid, code, what);
    sched_cli_error(c, request_id, code, msg, false);
    return NULL;
}

/*
 * A JobProgressReport from a task of a running job: taken from the job's owner or root only,
 * and only while the job runs, so that a late report from a task being torn down cannot pass
 * for the next attempt's. The latest one replaces the one before; nothing is stored (see
 * struct sched_job_progress).
 */
static void handle_progress(struct sched_cli *c, uint64_t request_id,
                            const Gs__JobProgressReport *req)
{
    struct sched_job *job = sched_cli_task_job(c, request_id, req->job_id, "report its progress",
                                               "progress is taken from running jobs only");
    Gs__JobProgressReply reply = GS__JOB_PROGRESS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct sched_job_progress *p;

    if (job == NULL)
        return;
    if (job->progress == NULL && (job->progress = calloc(1, sizeof(*job->progress))) == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    p = job->progress;
    p->received_ms = gs_clock_wall_ms();
    p->attempt = job->attempt;
    p->step = req->step;
    p->steps = req->steps;
    p->loss = req->loss;
    p->tokens_per_s = req->tokens_per_s;
    p->ranks = req->ranks;
    p->comm_ms = req->comm_ms;
    p->comm_exposed_ms = req->comm_exposed_ms;
    p->overlap = req->overlap;
    p->eval_loss = req->eval_loss;
    p->eval_step = req->eval_step;
    p->lr = req->lr;
    p->mfu = req->mfu >= 0 && req->mfu <= 1 ? req->mfu : 0;
    p->data_ms = req->data_ms >= 0 ? req->data_ms : 0; /* NaN and negatives: not reported */
    /* Preemption's cost counts from it (preempt.h): within this attempt and not ahead. */
    if (req->checkpoint_ms > job->start_ms && req->checkpoint_ms <= p->received_ms)
        job->checkpoint_ms = req->checkpoint_ms;
    progress_text(p->text, req->text);
    reply.job_id = job->id;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_JOB_PROGRESS_REPLY;
    env.job_progress_reply = &reply;
    sched_cli_reply(c, &env, false);
}

/*
 * Refuses a request holding a field this gschedd does not know (gsched.proto,
 * "Conventions"): a newer CLI set it for an option, which must not be ignored. The details
 * carry the field's numbers and this protocol, for the CLI to name the field in its own
 * terms. Returns whether it refused.
 */
static bool refuse_unknown_field(struct sched_cli *c, const Gs__Envelope *env)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope reply = GS__ENVELOPE__INIT;
    char path[96], names[192], msg[384], field[112], protocol[32];
    char *details[2] = {field, protocol};

    if (!gs_proto_unknown_field(&env->base, path, sizeof(path)))
        return false;
    gs_proto_field_names(&gs__envelope__descriptor, path, false, names, sizeof(names));
    GS_LOG(GS_LOG_WARN, "uid=%u body=%s field=%s path=%s cli request with an unknown field refused",
           (unsigned)c->uid, gs_proto_body_name(env->body_case), names, path);
    snprintf(msg, sizeof(msg),
             "this gschedd (gsched %s, protocol %u.%u) does not know field %s of the request, "
             "set by a newer gsched for an option it was given: upgrade gschedd, or leave that "
             "option out",
             GSCHED_VERSION, GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR, names);
    snprintf(field, sizeof(field), "field=%s", path);
    snprintf(protocol, sizeof(protocol), "protocol=%u.%u", GS_PROTO_VERSION_MAJOR,
             GS_PROTO_VERSION_MINOR);
    err.code = -EPROTONOSUPPORT;
    err.message = msg;
    err.n_details = 2;
    err.details = details;
    reply.request_id = env->request_id;
    reply.body_case = GS__ENVELOPE__BODY_ERROR;
    reply.error = &err;
    sched_cli_reply(c, &reply, false);
    return true;
}

void sched_cli_dispatch(struct sched_cli *c, const Gs__Envelope *env)
{
    char msg[128];

    GS_LOG(GS_LOG_DEBUG, "uid=%u body=%s cli request", (unsigned)c->uid,
           gs_proto_body_name(env->body_case));
    if (c->step != NULL) { /* streaming a step (srun): only StepSignal comes now */
        sched_steps_cli_message(c, env);
        return;
    }
    if (c->salloc != NULL) { /* holding an allocation (salloc): only AllocRelease comes now */
        sched_alloc_cli_message(c, env);
        return;
    }
    if (c->busy > 0 || c->waiter != NULL) {
        sched_cli_error(c, env->request_id, -EBUSY, "one request per connection", false);
        return;
    }
    if (refuse_unknown_field(c, env))
        return;
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_NODES_REQUEST:
        handle_nodes(c, env->request_id, env->nodes_request);
        break;
    case GS__ENVELOPE__BODY_SUBMIT_REQUEST:
        sched_submit(c, env->request_id, env->submit_request);
        break;
    case GS__ENVELOPE__BODY_QUEUE_REQUEST:
        sched_query_queue(c, env->request_id, env->queue_request);
        break;
    case GS__ENVELOPE__BODY_SHOW_REQUEST:
        sched_query_show(c, env->request_id, env->show_request);
        break;
    case GS__ENVELOPE__BODY_CANCEL_REQUEST:
    case GS__ENVELOPE__BODY_HOLD_REQUEST:
    case GS__ENVELOPE__BODY_RELEASE_REQUEST:
    case GS__ENVELOPE__BODY_REQUEUE_REQUEST:
    case GS__ENVELOPE__BODY_SUSPEND_REQUEST:
        sched_action(c, env);
        break;
    case GS__ENVELOPE__BODY_WAIT_REQUEST:
        sched_query_wait(c, env->request_id, env->wait_request);
        break;
    case GS__ENVELOPE__BODY_LOGS_REQUEST:
        sched_query_logs(c, env->request_id, env->logs_request);
        break;
    case GS__ENVELOPE__BODY_JOB_UPDATE_REQUEST:
        sched_job_update(c, env->request_id, env->job_update_request);
        break;
    case GS__ENVELOPE__BODY_SHARE_REQUEST:
        sched_policy_share(c, env->request_id);
        break;
    case GS__ENVELOPE__BODY_REPORT_REQUEST:
        sched_report_request(c, env->request_id, env->report_request);
        break;
    case GS__ENVELOPE__BODY_NODE_UPDATE_REQUEST:
        sched_node_update(c, env->request_id, env->node_update_request);
        break;
    case GS__ENVELOPE__BODY_RESERVATION_REQUEST:
        sched_resv_request(c, env->request_id, env->reservation_request);
        break;
    case GS__ENVELOPE__BODY_DATA_REQUEST:
        sched_data_request(c, env->request_id, env->data_request);
        break;
    case GS__ENVELOPE__BODY_PARTITIONS_REQUEST:
        sched_query_partitions(c, env->request_id);
        break;
    case GS__ENVELOPE__BODY_LICENSES_REQUEST:
        sched_query_licenses(c, env->request_id);
        break;
    case GS__ENVELOPE__BODY_DIAG_REQUEST:
        sched_query_diag(c, env->request_id, env->diag_request);
        break;
    case GS__ENVELOPE__BODY_CONFIG_REQUEST:
        sched_query_config(c, env->request_id);
        break;
    case GS__ENVELOPE__BODY_STEP_ATTACH:
        sched_steps_attach(c, env->request_id, env->step_attach);
        break;
    case GS__ENVELOPE__BODY_STEP_LAUNCH_REQUEST:
        sched_steps_launch(c, env->request_id, env->step_launch_request);
        break;
    case GS__ENVELOPE__BODY_JOB_PROGRESS_REPORT:
        handle_progress(c, env->request_id, env->job_progress_report);
        break;
    case GS__ENVELOPE__BODY_JOB_KV_PUT:
        sched_kv_put(c, env->request_id, env->job_kv_put);
        break;
    case GS__ENVELOPE__BODY_JOB_KV_GET:
        sched_kv_get(c, env->request_id, env->job_kv_get);
        break;
    case GS__ENVELOPE__BODY_ALLOC_REQUEST:
        sched_alloc_request(c, env->request_id, env->alloc_request);
        break;
    case GS__ENVELOPE__BODY_CLI_RELAY: /* a CLI must not vouch for a uid */
        GS_LOG(GS_LOG_WARN, "uid=%u node=%s cli_relay from a cli refused", (unsigned)c->uid,
               c->relayed ? c->relay_node : "local");
        sched_cli_error(c, env->request_id, -EPERM, "cli_relay is taken from workers only", false);
        break;
    default:
        snprintf(msg, sizeof(msg), "this gschedd does not serve %s requests",
                 gs_proto_body_name(env->body_case));
        sched_cli_error(c, env->request_id, -EOPNOTSUPP, msg, false);
        break;
    }
}

static void on_cli_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct sched_cli *c = data;

    (void)conn;
    c->asked = true;
    sched_cli_dispatch(c, env);
}

/* Connections at once, counted with c (just accepted, its uid known; or a login-node CLI,
 * by then or once its credential has passed): too many, in all or from its user, and it is
 * closed before its Hello is even read. */
bool sched_cli_over_limits(const struct sched_ctx *s, const struct sched_cli *c)
{
    uint32_t all = 0, mine = 0;

    for (const struct sched_cli *o = s->clis; o != NULL; o = o->next) {
        if (o->relayed || o->closed)
            continue;
        all++;
        mine += !o->authenticating && o->uid == c->uid;
    }
    if (all <= s->cfg->max_connections &&
        (c->authenticating || mine <= s->cfg->max_connections_per_user))
        return false;
    GS_LOG(GS_LOG_WARN,
           "uid=%u connections=%u user_connections=%u cli connection refused: too many",
           (unsigned)c->uid, all, mine);
    return true;
}

void sched_cli_sweep(struct sched_ctx *s, uint64_t now_ms)
{
    for (struct sched_cli *c = s->clis; c != NULL; c = c->next) {
        if (c->relayed || c->closed || c->asked || c->busy > 0 || c->conn == NULL ||
            now_ms - c->accepted_ms < s->cfg->request_timeout_ms)
            continue;
        GS_LOG(GS_LOG_INFO, "uid=%u cli connection closed: no request in %llu ms", (unsigned)c->uid,
               (unsigned long long)s->cfg->request_timeout_ms);
        c->asked = true; /* closing: not again */
        gs_proto_conn_close(c->conn);
    }
}

static void on_cli_close(struct gs_proto_conn *conn, int status, void *data)
{
    (void)conn;
    (void)status;
    sched_cli_gone(data);
}

static struct sched_cli *relayed_find(struct sched_ctx *s, struct gs_proto_conn *worker,
                                      uint64_t session)
{
    for (struct sched_cli *c = s->clis; c != NULL; c = c->next) {
        if (c->relayed && c->relay == worker && c->relay_session == session)
            return c;
    }
    return NULL;
}

static struct sched_cli *relayed_open(struct sched_ctx *s, struct gs_proto_conn *worker,
                                      const char *node, const Gs__CliRelay *msg)
{
    struct sched_cli *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->s = s;
    c->relayed = true;
    c->relay = worker;
    c->relay_session = msg->session;
    c->uid = (uid_t)msg->uid;
    c->gid = (gid_t)msg->gid;
    snprintf(c->relay_node, sizeof(c->relay_node), "%s", node);
    uv_timer_init(s->loop, &c->close_timer);
    c->close_timer.data = c;
    c->next = s->clis;
    s->clis = c;
    s->open_handles++; /* its timer, until on_relayed_freed */
    GS_LOG(GS_LOG_DEBUG, "node=%s session=%llu uid=%u relayed cli session opened", node,
           (unsigned long long)msg->session, (unsigned)c->uid);
    return c;
}

/* Why a relayed frame cannot be served, or NULL; *ret_env is the frame's envelope. */
static const char *relayed_frame(const struct sched_cli *c, const Gs__CliRelay *msg,
                                 Gs__Envelope **ret_env)
{
    int rc;

    if (msg->uid != (uint32_t)c->uid || msg->gid != (uint32_t)c->gid)
        return "uid_changed";
    rc = gs_proto_decode(msg->frame.data, msg->frame.len, ret_env);
    if (rc < 0)
        return gs_proto_reason(rc);
    if ((*ret_env)->body_case == GS__ENVELOPE__BODY_HELLO ||
        (*ret_env)->body_case == GS__ENVELOPE__BODY_HELLO_REJECT) {
        gs_proto_envelope_free(*ret_env);
        *ret_env = NULL;
        return "bad_hello";
    }
    return NULL;
}

/* Whether uid has a running job with part of its allocation on node. */
static bool uid_runs_on(struct sched_ctx *s, uint32_t uid, const char *node)
{
    const struct sched_node *n = sched_node_find(s, node);
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = s->plan_from; n != NULL && i < count; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (job->uid != uid || job->state != SCHED_JOB_RUNNING)
            continue;
        for (uint32_t k = 0; k < job->alloc.nnodes; k++) {
            if (job->alloc.nodes[k].node == n->index)
                return true;
        }
    }
    return false;
}

void sched_cli_relay(struct sched_ctx *s, struct gs_proto_conn *conn, const char *node,
                     uint64_t *last_session, const Gs__CliRelay *msg)
{
    struct sched_cli *c = relayed_find(s, conn, msg->session);
    Gs__Envelope *inner = NULL;
    const char *bad;
    bool opened = false;

    if (c == NULL && (msg->close || msg->session <= *last_session || msg->session == 0)) {
        /* Ended here first (both sides may close at once), or never opened. A frame is
         * answered with the end, in case the worker still has its CLI waiting. */
        GS_LOG(GS_LOG_DEBUG, "node=%s session=%llu close=%d frame for no open session dropped",
               node, (unsigned long long)msg->session, msg->close);
        if (!msg->close)
            (void)relay_down(conn, msg->session, NULL);
        return;
    }
    if (c == NULL) {
        *last_session = msg->session;
        c = relayed_open(s, conn, node, msg);
        opened = true;
        if (c == NULL) {
            GS_LOG(GS_LOG_ERROR, "node=%s session=%llu out of memory: relayed cli refused", node,
                   (unsigned long long)msg->session);
            (void)relay_down(conn, msg->session, NULL);
            return;
        }
    }
    if (msg->close) {
        c->relay = NULL; /* the worker ended it: nothing to tell it */
        sched_cli_gone(c);
        return;
    }
    if (c->closing) /* its end is on the way to the worker */
        return;
    bad = relayed_frame(c, msg, &inner);
    if (bad != NULL) {
        GS_LOG(GS_LOG_WARN,
               "node=%s session=%llu uid=%u bytes=%zu reason=%s bad relayed frame, "
               "closing the session",
               node, (unsigned long long)msg->session, (unsigned)c->uid, msg->frame.len, bad);
        sched_cli_close(c);
        return;
    }
    if (opened && !uid_runs_on(s, msg->uid, node)) {
        char why[160];

        GS_LOG(GS_LOG_WARN, "node=%s session=%llu uid=%u reason=no_job_on_node relayed cli refused",
               node, (unsigned long long)msg->session, (unsigned)msg->uid);
        snprintf(why, sizeof(why),
                 "uid %u has no running job on %s: a node relays requests only for the users "
                 "whose jobs run there",
                 (unsigned)msg->uid, node);
        sched_cli_error(c, inner->request_id, -EPERM, why, false);
        gs_proto_envelope_free(inner);
        return;
    }
    sched_cli_dispatch(c, inner);
    gs_proto_envelope_free(inner);
}

void sched_cli_relay_gone(struct sched_ctx *s, struct gs_proto_conn *conn)
{
    struct sched_cli *c;

    while ((c = s->clis) != NULL) {
        while (c != NULL && !(c->relayed && c->relay == conn))
            c = c->next;
        if (c == NULL)
            return;
        c->relay = NULL;
        c->relay_lost = true;
        sched_cli_gone(c); /* unlinks it: the scan starts over */
    }
}

/* The connecting process's uid and gid, from the kernel. */
static int peer_credentials(struct gs_proto_conn *conn, struct sched_cli *c)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    uv_os_fd_t fd;

    if (uv_fileno((uv_handle_t *)gs_proto_conn_stream(conn), &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -EACCES;
    c->uid = cred.uid;
    c->gid = cred.gid;
    return 0;
}

struct sched_cli *sched_cli_new(struct sched_ctx *s, enum gs_proto_transport transport,
                                struct gs_proto_conn_opts *opts)
{
    struct sched_cli *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    opts->role = GS__ROLE__ROLE_SCHEDULER;
    opts->name = "gschedd";
    opts->accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_CLI);
    opts->data = c;
    c->s = s;
    c->conn = gs_proto_conn_new(s->loop, transport, opts);
    if (c->conn == NULL) {
        free(c);
        return NULL;
    }
    c->next = s->clis;
    s->clis = c;
    c->accepted_ms = gs_clock_mono_ms();
    s->open_handles++; /* until its on_close */
    return c;
}

void sched_on_cli_connection(uv_stream_t *server, int status)
{
    struct sched_ctx *s = server->data;
    struct gs_proto_conn_opts opts = {.on_message = on_cli_message, .on_close = on_cli_close};
    struct sched_cli *c;

    if (status < 0 || s->stopping || (c = sched_cli_new(s, GS_PROTO_PIPE, &opts)) == NULL)
        return;
    if (uv_accept(server, gs_proto_conn_stream(c->conn)) < 0 || peer_credentials(c->conn, c) < 0 ||
        sched_cli_over_limits(s, c) || gs_proto_conn_start(c->conn) < 0)
        gs_proto_conn_close(c->conn);
}
