/*
 * sched_workers.c: gschedd's side of worker connections: registration into the node
 * registry (and the cluster's free-resource accounting), heartbeats, and the tasks and
 * exits a worker reports (see sched.h for what is done with them for now).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
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

static int add_to_cluster(struct sched_ctx *s, struct sched_node *n)
{
    const Gs__NodeTopology *t = n->topology;
    struct sched_node_info info = {.name = n->name,
                                   .ngpus = (uint32_t)t->n_gpus,
                                   .ncores = t->cores > 0 ? t->cores : 1,
                                   .mem_mib = t->memory_mib,
                                   .features = (const char *const *)t->features,
                                   .nfeatures = t->n_features};
    int rc = sched_cluster_add_node(s->cluster, &info);

    if (rc >= 0)
        n->index = (uint32_t)rc;
    return rc < 0 ? rc : 0;
}

static struct sched_node *new_node(struct sched_ctx *s, const char *name)
{
    struct sched_node *n = calloc(1, sizeof(*n));
    struct sched_node **v = realloc(s->nodes, (s->nnodes + 1) * sizeof(*v));

    if (n == NULL || v == NULL) {
        free(n);
        if (v != NULL)
            s->nodes = v;
        return NULL;
    }
    s->nodes = v;
    snprintf(n->name, sizeof(n->name), "%s", name);
    s->nodes[s->nnodes++] = n;
    return n;
}

static void send_reply(struct gs_proto_conn *conn, bool accepted, const char *reason,
                       uint64_t heartbeat_ms, const Gs__NodeRegister *reg)
{
    Gs__NodeRegisterReply reply = GS__NODE_REGISTER_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.accepted = accepted;
    reply.reason = (char *)(reason != NULL ? reason : "");
    reply.heartbeat_interval_ms = heartbeat_ms;
    reply.cluster_name = "gsched";
    /* No job is assigned to any node yet, so whatever it still runs is not ours to keep. */
    if (accepted && reg != NULL) {
        reply.n_kill = reg->n_running;
        reply.kill = reg->running;
    }
    env.body_case = GS__ENVELOPE__BODY_NODE_REGISTER_REPLY;
    env.node_register_reply = &reply;
    gs_proto_conn_send(conn, &env);
}

static void ack_exits(struct gs_proto_conn *conn, Gs__TaskExit **exits, size_t n)
{
    Gs__TaskRef *refs = calloc(n + 1, sizeof(*refs));
    Gs__TaskRef **ptrs = calloc(n + 1, sizeof(*ptrs));
    Gs__TaskExitAck ack = GS__TASK_EXIT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    if (n > 0 && refs != NULL && ptrs != NULL) {
        for (size_t i = 0; i < n; i++) {
            gs__task_ref__init(&refs[i]);
            refs[i].job_id = exits[i]->job_id;
            refs[i].rank = exits[i]->rank;
            refs[i].attempt = exits[i]->attempt;
            ptrs[i] = &refs[i];
        }
        ack.n_tasks = n;
        ack.tasks = ptrs;
        env.body_case = GS__ENVELOPE__BODY_TASK_EXIT_ACK;
        env.task_exit_ack = &ack;
        gs_proto_conn_send(conn, &env);
    }
    free(refs);
    free(ptrs);
}

/* What a worker connection knows: the scheduler, and its node once registered. */
struct wconn {
    struct sched_ctx *s;
    struct sched_node *node;
};

static int register_node(struct wconn *wc, struct gs_proto_conn *conn, const Gs__NodeRegister *reg,
                         const char **ret_reason)
{
    struct sched_ctx *s = wc->s;
    const char *name = reg->topology != NULL ? reg->topology->node_name : NULL;
    struct sched_node *n;
    bool fresh;

    if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof(n->name)) {
        *ret_reason = "registration without a valid node name";
        return -EINVAL;
    }
    n = sched_node_find(s, name);
    if (n != NULL && n->conn != NULL && n->conn != conn) {
        *ret_reason = "a worker with this node name is already connected";
        return -EEXIST;
    }
    fresh = n == NULL;
    if (fresh && (n = new_node(s, name)) == NULL) {
        *ret_reason = "out of memory";
        return -ENOMEM;
    }
    gs__node_topology__free_unpacked(n->topology, NULL);
    n->topology = copy_topology(reg->topology);
    if (n->topology == NULL || (fresh && add_to_cluster(s, n) < 0)) {
        *ret_reason = "cannot record this node's topology";
        return -EINVAL;
    }
    n->conn = conn;
    n->up = true;
    n->reason[0] = '\0';
    n->last_heartbeat_mono = gs_clock_mono_ms();
    n->last_heartbeat_wall = gs_clock_wall_ms();
    sched_cluster_set_up(s->cluster, n->index, true);
    wc->node = n;
    return 0;
}

static void handle_register(struct wconn *wc, struct gs_proto_conn *conn,
                            const Gs__NodeRegister *reg)
{
    const char *reason = NULL;
    int rc = register_node(wc, conn, reg, &reason);

    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "peer=%s reason=\"%s\" registration refused", gs_proto_conn_peer(conn),
               reason);
        send_reply(conn, false, reason, 0, NULL);
        gs_proto_conn_close(conn);
        return;
    }
    send_reply(conn, true, NULL, wc->s->heartbeat_ms, reg);
    ack_exits(conn, reg->unacked_exits, reg->n_unacked_exits);
    GS_LOG(GS_LOG_INFO, "node=%s gpus=%zu cores=%u mem_mib=%llu running=%zu node up",
           wc->node->name, reg->topology->n_gpus, reg->topology->cores,
           (unsigned long long)reg->topology->memory_mib, reg->n_running);
}

static void on_worker_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct wconn *wc = data;

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
        break;
    case GS__ENVELOPE__BODY_TASK_EXIT:
        ack_exits(conn, &((Gs__TaskExit *[]){env->task_exit})[0], 1);
        break;
    case GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY:
        break;
    default:
        GS_LOG(GS_LOG_WARN, "node=%s body=%s unexpected from a worker, ignored", wc->node->name,
               gs_proto_body_name(env->body_case));
        break;
    }
}

static void on_worker_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct wconn *wc = data;
    struct sched_ctx *s = wc->s;

    if (wc->node != NULL && wc->node->conn == conn) {
        wc->node->conn = NULL;
        GS_LOG(GS_LOG_INFO, "node=%s status=%d worker disconnected", wc->node->name, status);
    }
    free(wc);
    sched_release_handle(s);
}

void sched_on_worker_connection(uv_stream_t *server, int status)
{
    struct sched_ctx *s = server->data;
    struct wconn *wc = calloc(1, sizeof(*wc));
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_SCHEDULER,
        .name = "gschedd",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER),
        .on_message = on_worker_message,
        .on_close = on_worker_close,
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
    s->open_handles++; /* until on_worker_close */
    if (uv_accept(server, gs_proto_conn_stream(conn)) < 0 || gs_proto_conn_start(conn) < 0)
        gs_proto_conn_close(conn);
}
