/*
 * sched_internal.h: struct sched_ctx and what its files share: sched.c (listeners, cron,
 * lifecycle), sched_workers.c (worker connections, nodes), sched_cli.c (CLI requests).
 * Not for other folders.
 */
#ifndef SCHED_SCHED_INTERNAL_H
#define SCHED_SCHED_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto/conn.h"
#include "scheduler/cluster.h"
#include "scheduler/sched.h"

struct sched_node {
    char name[64];
    uint32_t index; /* in the cluster */
    bool up;
    char reason[128];
    struct gs_proto_conn *conn; /* its worker, while connected */
    Gs__NodeTopology *topology; /* owned copy from the last registration */
    uint64_t last_heartbeat_mono;
    uint64_t last_heartbeat_wall;
    char worker_version[32];
};

/* A CLI connection: one request, one reply. */
struct sched_cli {
    struct sched_cli *next;
    struct sched_ctx *s;
    struct gs_proto_conn *conn;
    uid_t uid;
    gid_t gid;
};

struct sched_ctx {
    uv_loop_t *loop;
    uv_tcp_t workers;
    uv_pipe_t cli;
    uv_timer_t cron;
    char socket_path[108];
    uint64_t heartbeat_ms;
    uint32_t heartbeat_misses;
    struct sched_cluster *cluster;
    struct sched_node **nodes;
    size_t nnodes;
    struct sched_cli *clis;
    int open_handles;
    bool stopping;
    void (*stopped)(void *data);
    void *stopped_data;
};

struct sched_node *sched_node_find(struct sched_ctx *s, const char *name);
void sched_release_handle(struct sched_ctx *s);

/* sched_workers.c */
void sched_on_worker_connection(uv_stream_t *server, int status);
/* sched_cli.c */
void sched_on_cli_connection(uv_stream_t *server, int status);

#endif
