/*
 * sched_workers.c: gschedd's side of worker connections: registration into the node
 * registry (and the cluster's free-resource accounting), reconciliation of what a
 * registering worker still runs with what the scheduler assigned it, heartbeats, and the
 * messages a worker sends later (exits, launch results, answers to forwarded requests,
 * CLI sessions it relays for its jobs, served by sched_cli.c).
 * A node's index in s->nodes is its index in the cluster: both only ever grow together.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/frame.h"
#include "scheduler/sched_internal.h"

/* A deep copy of the topology: the envelope it came in is freed after the callback. */
static Gs__NodeTopology *copy_topology(const Gs__NodeTopology *t)
{
    size_t len = gs__node_topology__get_packed_size(t);
    uint8_t *buf = malloc(len > 0 ? len : 1);
    Gs__NodeTopology *copy = NULL;

    if (buf == NULL)
        return NULL;
    gs__node_topology__pack(t, buf);
    copy = gs__node_topology__unpack(NULL, len, buf);
    free(buf);
    return copy;
}

/* A LinkType from the wire as a gpuset class; an unknown one counts as the worst. */
static uint8_t link_class(Gs__LinkType t)
{
    switch (t) {
    case GS__LINK_TYPE__LINK_TYPE_NVLINK:
        return GS_GPUSET_NVLINK;
    case GS__LINK_TYPE__LINK_TYPE_PCIE_SWITCH:
        return GS_GPUSET_PIX;
    case GS__LINK_TYPE__LINK_TYPE_PCIE_MULTI_SWITCH:
        return GS_GPUSET_PXB;
    case GS__LINK_TYPE__LINK_TYPE_PCIE_HOST:
        return GS_GPUSET_PHB;
    case GS__LINK_TYPE__LINK_TYPE_SAME_NUMA:
        return GS_GPUSET_NODE;
    default:
        return GS_GPUSET_SYS;
    }
}

/*
 * The GPU pair matrix from a registration, or NULL (placement ignores links) when the
 * worker sent none: a CPU node, a single GPU, or a worker that predates them.
 */
static struct gs_gpuset_link *link_matrix(const Gs__NodeTopology *t)
{
    size_t n = t->n_gpus;
    struct gs_gpuset_link *m;

    if (n < 2 || t->n_gpu_links == 0 || n > GS_GPUSET_MAX)
        return NULL;
    m = calloc(n * n, sizeof(*m));
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < n * n; i++)
        m[i].cls = GS_GPUSET_SYS;
    for (size_t i = 0; i < t->n_gpu_links; i++) {
        const Gs__GpuLink *l = t->gpu_links[i];
        uint8_t c = link_class(l->type);
        uint8_t nv =
            c == GS_GPUSET_NVLINK ? (uint8_t)(l->nvlink_count < 255 ? l->nvlink_count : 255) : 0;

        if (l->gpu_a >= n || l->gpu_b >= n || l->gpu_a == l->gpu_b)
            continue;
        m[l->gpu_a * n + l->gpu_b] = m[l->gpu_b * n + l->gpu_a] = (struct gs_gpuset_link){c, nv};
    }
    return m;
}

/*
 * Adds the node to the cluster (reset < 0) or gives node reset new resources, with the NUMA
 * node of every GPU and core, so that a job's cores are taken near its GPUs.
 */
static int to_cluster(struct sched_ctx *s, const char *name, const Gs__NodeTopology *t, int reset)
{
    /* What the cluster refuses anyway, refused before allocating for it: a registration's
     * core count is the peer's 32-bit number. */
    bool fits = t->cores <= SCHED_MAX_CORES && t->n_gpus <= SCHED_MAX_GPUS;
    uint32_t ncores = fits && t->cores > 0 ? t->cores : 1;
    int *gpu_numa = fits ? calloc(t->n_gpus + 1, sizeof(int)) : NULL;
    int *core_numa = fits ? calloc(ncores, sizeof(int)) : NULL;
    struct gs_gpuset_link *links = fits ? link_matrix(t) : NULL;
    uint8_t *nic_class = fits ? calloc(t->n_gpus + 1, 1) : NULL;
    struct sched_node_info info = {.name = name,
                                   .ngpus = (uint32_t)t->n_gpus,
                                   .ncores = ncores,
                                   .mem_mib = t->memory_mib,
                                   .gpu_numa = gpu_numa,
                                   .core_numa = core_numa,
                                   .features = (const char *const *)t->features,
                                   .nfeatures = t->n_features,
                                   .links = links,
                                   .switch_id = gs_config_switch_of(s->cfg, name) + 1,
                                   .gpu_nic_class = nic_class};
    int rc = fits ? -ENOMEM : -EINVAL;

    if (gpu_numa == NULL || core_numa == NULL || nic_class == NULL)
        goto out;
    for (size_t i = 0; i < t->n_nics; i++) {
        for (size_t g = 0; g < t->nics[i]->n_gpu_links && g < t->n_gpus; g++) {
            uint8_t c = link_class(t->nics[i]->gpu_links[g]);
            if (t->nics[i]->gpu_links[g] != GS__LINK_TYPE__LINK_TYPE_UNSPECIFIED &&
                (nic_class[g] == 0 || c < nic_class[g]))
                nic_class[g] = c;
        }
    }
    for (size_t g = 0; g < t->n_gpus; g++)
        gpu_numa[g] = t->gpus[g]->numa_node >= 0 ? t->gpus[g]->numa_node : 0;
    for (size_t i = 0; i < t->n_numa_nodes; i++) {
        const Gs__NumaNode *nn = t->numa_nodes[i];
        for (size_t c = 0; c < nn->n_cores; c++) {
            if (nn->cores[c] < ncores)
                core_numa[nn->cores[c]] = (int)nn->os_index;
        }
    }
    rc = reset < 0 ? sched_cluster_add_node(s->cluster, &info)
                   : sched_cluster_reset_node(s->cluster, (uint32_t)reset, &info);
out:
    free(links);
    free(nic_class);
    free(gpu_numa);
    free(core_numa);
    return rc;
}

struct sched_node *sched_node_add(struct sched_ctx *s, const char *name,
                                  const Gs__NodeTopology *topology)
{
    struct sched_node *n = calloc(1, sizeof(*n));
    struct sched_node **v = realloc(s->nodes, (s->nnodes + 1) * sizeof(*v));
    struct sched_node **by_name = realloc(s->nodes_by_name, (s->nnodes + 1) * sizeof(*by_name));
    int index;

    if (v != NULL)
        s->nodes = v;
    if (by_name != NULL)
        s->nodes_by_name = by_name;
    if (n == NULL || v == NULL || by_name == NULL ||
        (n->topology = copy_topology(topology)) == NULL)
        goto fail;
    index = to_cluster(s, name, n->topology, -1);
    if (index < 0 || (size_t)index != s->nnodes)
        goto fail;
    n->index = (uint32_t)index;
    snprintf(n->name, sizeof(n->name), "%s", name);
    sched_cluster_set_up(s->cluster, n->index, false);
    sched_node_by_name_insert(s, n);
    s->nodes[s->nnodes++] = n;
    sched_part_masks_node_added(s, n);
    return n;
fail:
    if (n != NULL)
        gs__node_topology__free_unpacked(n->topology, NULL);
    free(n);
    return NULL;
}

bool sched_node_send(struct sched_node *n, Gs__Envelope *env)
{
    return n->conn != NULL && gs_proto_conn_send(n->conn, env) == 0;
}

/*
 * The cluster takes the node for placement exactly while it is up, connected and not
 * drained. Each change is stored with the node's size (sreport's history of what was up);
 * out of memory costs that row, not the change. Connections closing because gschedd is
 * stopping are not the nodes going down (their jobs run on): no row then.
 */
void sched_node_update_schedulable(struct sched_ctx *s, struct sched_node *n)
{
    bool ok = n->up && n->conn != NULL && !n->drain;
    struct sched_change *ch;

    if (ok == sched_cluster_is_up(s->cluster, n->index))
        return;
    sched_cluster_set_up(s->cluster, n->index, ok);
    if (!s->stopping && (ch = sched_change_new(s)) != NULL) {
        sched_change_node_state(ch, gs_clock_wall_ms(), n->name, ok, n->maint, n->topology->cores,
                                (uint32_t)n->topology->n_gpus);
        sched_change_commit(s, ch, NULL, NULL);
    }
    if (ok)
        sched_engine_wake(s);
}

/* Whether a re-registering node's resources are what the cluster accounts for. */
static bool same_shape(const Gs__NodeTopology *a, const Gs__NodeTopology *b)
{
    return a->n_gpus == b->n_gpus && a->cores == b->cores && a->memory_mib == b->memory_mib;
}

static void send_reply(struct gs_proto_conn *conn, bool accepted, const char *reason,
                       uint64_t heartbeat_ms, uint64_t fence_ms, Gs__TaskRef **kill, size_t nkill)
{
    Gs__NodeRegisterReply reply = GS__NODE_REGISTER_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.accepted = accepted;
    reply.reason = (char *)(reason != NULL ? reason : "");
    reply.heartbeat_interval_ms = heartbeat_ms;
    reply.fence_timeout_ms = fence_ms;
    reply.cluster_name = "gsched";
    reply.n_kill = nkill;
    reply.kill = kill;
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER_REPLY;
    env.node_register_reply = &reply;
    gs_proto_conn_send(conn, &env);
}

/* The worker learns from it that it is still heard (its fence, NodeRegisterReply). */
static void ack_heartbeat(struct gs_proto_conn *conn, const Gs__Heartbeat *hb)
{
    Gs__HeartbeatAck ack = GS__HEARTBEAT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const Gs__Hello *peer = gs_proto_conn_peer_hello(conn);

    if (peer == NULL || peer->protocol_minor < 6) /* older workers know no such body */
        return;
    ack.seq = hb->seq;
    env.body_case = GS__ENVELOPE__BODY_HEARTBEAT_ACK;
    env.heartbeat_ack = &ack;
    (void)gs_proto_conn_send(conn, &env);
}

/* What a worker connection knows: the scheduler, its node once registered, and the highest
 * CLI session it has relayed (sched_cli.c). Every one is on s->wconns until it closes, so
 * that one which never registers can be timed out. */
struct sched_wconn {
    struct sched_ctx *s;
    struct sched_wconn *next, **pprev;
    struct gs_proto_conn *conn;
    uint64_t accepted_ms; /* monotonic */
    struct sched_node *node;
    uint64_t relay_last_session;
};

void sched_workers_sweep(struct sched_ctx *s, uint64_t now_ms)
{
    for (struct sched_wconn *wc = s->wconns; wc != NULL; wc = wc->next) {
        if (wc->node != NULL || wc->accepted_ms == 0 ||
            now_ms - wc->accepted_ms < s->cfg->request_timeout_ms)
            continue;
        GS_LOG(GS_LOG_WARN, "peer=%s worker connection closed: no registration in %llu ms",
               gs_proto_conn_peer(wc->conn), (unsigned long long)s->cfg->request_timeout_ms);
        wc->accepted_ms = 0; /* closing: not again */
        gs_proto_conn_close(wc->conn);
    }
}

void sched_workers_close_all(struct sched_ctx *s)
{
    /* gs_proto_conn_close only starts closing: on_worker_close unlinks each later. */
    for (struct sched_wconn *wc = s->wconns; wc != NULL; wc = wc->next)
        gs_proto_conn_close(wc->conn);
}

/* A host name's characters only: node names go into logs, hostlists and file names. */
static bool node_name_ok(const char *name, size_t size)
{
    size_t len = name != NULL ? strlen(name) : 0;

    if (len == 0 || len >= size || name[0] == '-' || name[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static int register_node(struct sched_wconn *wc, struct gs_proto_conn *conn,
                         const Gs__NodeRegister *reg, const char **ret_reason)
{
    struct sched_ctx *s = wc->s;
    const char *name = reg->topology != NULL ? reg->topology->node_name : NULL;
    struct sched_node *n;
    Gs__NodeTopology *copy;

    if (!node_name_ok(name, sizeof(n->name))) {
        *ret_reason = "registration without a valid node name (1-63 letters, digits, '-', '_', "
                      "'.')";
        return -EINVAL;
    }
    /* One connection is one node: a second name on it would leave the first node pointing
     * at a connection that closes without telling it. */
    if (wc->node != NULL && strcmp(wc->node->name, name) != 0) {
        *ret_reason = "this connection registered another node already";
        return -EEXIST;
    }
    n = sched_node_find(s, name);
    if (n != NULL && n->conn != NULL && n->conn != conn) {
        *ret_reason = "a worker with this node name is already connected";
        return -EEXIST;
    }
    /* A node's resources follow its latest registration (features included), except while
     * jobs hold them: then only a registration of the same shape is taken. */
    if (n != NULL && to_cluster(s, name, reg->topology, (int)n->index) < 0 &&
        !same_shape(n->topology, reg->topology)) {
        *ret_reason = "this node registered before with other GPUs, cores or memory, and jobs "
                      "still hold some: its resources can change once they end";
        return -EBUSY;
    }
    if (n == NULL && (n = sched_node_add(s, name, reg->topology)) == NULL) {
        *ret_reason = "cannot record this node's topology";
        return -ENOMEM;
    }
    sched_resv_nodes_changed(s);
    copy = copy_topology(reg->topology);
    if (copy == NULL) {
        *ret_reason = "out of memory";
        return -ENOMEM;
    }
    gs__node_topology__free_unpacked(n->topology, NULL);
    n->topology = copy;
    n->data_port = reg->data_port <= 65535 ? reg->data_port : 0;
    n->conn = conn;
    n->up = true;
    n->failover_due_mono = 0; /* back before its jobs were moved: they run on here */
    n->reason[0] = '\0';
    n->last_heartbeat_mono = gs_clock_mono_ms();
    n->last_heartbeat_wall = gs_clock_wall_ms();
    wc->node = n;
    return 0;
}

/*
 * The time limits of the running jobs on a node whose worker registers (again): a
 * `scontrol update TimeLimit=` sent while it was away never reached it. The message holds
 * the whole limit, so sending it again changes nothing for a worker that had it. Likewise
 * the stop or continue of a job suspended or resumed meanwhile.
 */
static void resend_limits(struct sched_ctx *s, struct sched_node *n, struct gs_proto_conn *conn)
{
    const Gs__Hello *peer = gs_proto_conn_peer_hello(conn);

    if (peer == NULL || peer->protocol_minor < GS_PROTO_MINOR_JOB_LIMIT)
        return;
    for (size_t i = s->plan_from; i < sched_jobs_count(s->jobs); i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        for (uint32_t k = 0; job->state == SCHED_JOB_RUNNING && k < job->alloc.nnodes; k++) {
            if (job->alloc.nodes[k].node == n->index) {
                sched_job_limit_send(s, job, n);
                sched_action_resend_suspension(job, n);
                break;
            }
        }
    }
}

static void handle_register(struct sched_wconn *wc, struct gs_proto_conn *conn,
                            const Gs__NodeRegister *reg)
{
    struct sched_ctx *s = wc->s;
    const char *reason = NULL;
    Gs__TaskRef **kill = NULL;
    size_t nkill = 0;
    struct sched_change *ch;
    int rc = register_node(wc, conn, reg, &reason);

    if (rc == 0 && (rc = sched_failover_reconcile(s, wc->node, reg, &kill, &nkill)) < 0)
        reason = "out of memory";
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "peer=%s reason=\"%s\" registration refused", gs_proto_conn_peer(conn),
               reason);
        /* The connection closes: its node (if it had one) is left as a lost worker's,
         * DOWN after the missed heartbeats, never pointing at the freed connection. */
        if (wc->node != NULL && wc->node->conn == conn)
            wc->node->conn = NULL;
        wc->node = NULL;
        send_reply(conn, false, reason, 0, 0, NULL, 0);
        gs_proto_conn_close(conn);
        return;
    }
    send_reply(conn, true, NULL, s->heartbeat_ms, sched_fence_ms(s), kill, nkill);
    free(kill);
    sched_steps_node_back(s, wc->node);
    resend_limits(s, wc->node, conn);
    sched_node_update_schedulable(s, wc->node);
    ch = sched_change_new(s);
    sched_change_node(ch, wc->node);
    sched_change_commit(s, ch, NULL, NULL);
    GS_LOG(GS_LOG_INFO, "node=%s gpus=%zu cores=%u mem_mib=%llu running=%zu killed=%zu node up",
           wc->node->name, reg->topology->n_gpus, reg->topology->cores,
           (unsigned long long)reg->topology->memory_mib, reg->n_running, nkill);
}

static void on_worker_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct sched_wconn *wc = data;

    if (env->body_case == GS__ENVELOPE__BODY_NODE_REGISTER) {
        handle_register(wc, conn, env->node_register);
        return;
    }
    if (wc->node == NULL) {
        GS_LOG(GS_LOG_WARN, "peer=%s body=%s before registration, closing",
               gs_proto_conn_peer(conn), gs_proto_body_name(env->body_case));
        gs_proto_conn_close(conn);
        return;
    }
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_HEARTBEAT:
        wc->node->last_heartbeat_mono = gs_clock_mono_ms();
        wc->node->last_heartbeat_wall = gs_clock_wall_ms();
        sched_telemetry_heartbeat(wc->s, wc->node, env->heartbeat);
        ack_heartbeat(conn, env->heartbeat);
        break;
    case GS__ENVELOPE__BODY_TASK_EXIT:
        if (env->task_exit->step >= 1) /* an srun step's: relayed, only its record stored */
            sched_steps_task_exit(wc->s, wc->node, env->task_exit);
        else
            sched_exit_task(wc->s, wc->node, env->task_exit);
        break;
    case GS__ENVELOPE__BODY_STEP_OUTPUT:
        sched_steps_output(wc->s, wc->node, env->step_output);
        break;
    case GS__ENVELOPE__BODY_STEP_INPUT_ACK:
        sched_steps_input_ack(wc->s, wc->node, env->step_input_ack);
        break;
    case GS__ENVELOPE__BODY_PMIX_FENCE:
        sched_pmix_fence(wc->s, wc->node, env->pmix_fence);
        break;
    case GS__ENVELOPE__BODY_PMIX_ABORT:
        sched_pmix_abort(wc->s, wc->node, env->pmix_abort);
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY:
        if (!sched_steps_launch_reply(wc->s, wc->node, env->request_id))
            sched_launch_reply(wc->s, wc->node, env->launch_tasks_reply);
        break;
    case GS__ENVELOPE__BODY_DATA_HOLDINGS:
        sched_data_holdings(wc->s, wc->node, env->data_holdings);
        break;
    case GS__ENVELOPE__BODY_JOB_DATA_REPORT:
        sched_data_job_report(wc->s, wc->node, env->job_data_report);
        break;
    case GS__ENVELOPE__BODY_CLI_RELAY:
        sched_cli_relay(wc->s, conn, wc->node->name, &wc->relay_last_session, env->cli_relay);
        break;
    case GS__ENVELOPE__BODY_LOGS_REPLY:
    case GS__ENVELOPE__BODY_ERROR:
        if (!sched_query_worker_reply(wc->s, conn, env))
            GS_LOG(GS_LOG_WARN, "node=%s body=%s answer to no request, ignored", wc->node->name,
                   gs_proto_body_name(env->body_case));
        break;
    default:
        GS_LOG(GS_LOG_WARN, "node=%s body=%s unexpected from a worker, ignored", wc->node->name,
               gs_proto_body_name(env->body_case));
        break;
    }
}

static void on_worker_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct sched_wconn *wc = data;
    struct sched_ctx *s = wc->s;

    sched_query_worker_gone(s, conn);
    sched_cli_relay_gone(s, conn);
    if (wc->node != NULL && wc->node->conn == conn) {
        wc->node->conn = NULL;
        if (wc->node->up)
            snprintf(wc->node->reason, sizeof(wc->node->reason), "worker disconnected");
        sched_node_update_schedulable(s, wc->node);
        GS_LOG(GS_LOG_INFO, "node=%s status=%d worker disconnected", wc->node->name, status);
    }
    *wc->pprev = wc->next;
    if (wc->next != NULL)
        wc->next->pprev = wc->pprev;
    free(wc);
    sched_release_handle(s);
}

void sched_on_worker_connection(uv_stream_t *server, int status)
{
    struct sched_ctx *s = server->data;
    struct sched_wconn *wc = calloc(1, sizeof(*wc));
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_SCHEDULER,
        .name = "gschedd",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER),
        .on_message = on_worker_message,
        .on_close = on_worker_close,
        .auth_key = &s->auth_key,
        .data = wc,
    };
    struct gs_proto_conn *conn;

    if (status < 0 || wc == NULL || s->stopping) {
        free(wc);
        return;
    }
    wc->s = s;
    conn = gs_proto_conn_new(s->loop, GS_PROTO_TCP, &opts);
    if (conn == NULL) {
        free(wc);
        return;
    }
    wc->conn = conn;
    wc->accepted_ms = gs_clock_mono_ms();
    wc->next = s->wconns;
    wc->pprev = &s->wconns;
    if (s->wconns != NULL)
        s->wconns->pprev = &wc->next;
    s->wconns = wc;
    s->open_handles++; /* until on_worker_close */
    if (uv_accept(server, gs_proto_conn_stream(conn)) < 0 || gs_proto_conn_start(conn) < 0)
        gs_proto_conn_close(conn);
}
