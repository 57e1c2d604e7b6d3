/*
 * sched.h: gschedd's core on one libuv loop: the TCP listener for workers, the Unix-socket
 * listener for the CLI, the registry of nodes and their heartbeats.
 *
 * Nodes: a worker registers with its topology and becomes a node (UP); a second live worker
 * claiming the same name is refused. A node is DOWN once it misses heartbeat_misses
 * heartbeats in a row (one cron tick per heartbeat interval checks), whether or not its
 * connection is still open; it is UP again when its worker registers anew. Until jobs are
 * scheduled (the job table, planner and journal join this context next), a worker's
 * leftover tasks are not assigned to it: it is told to kill them, and its exit reports are
 * acknowledged.
 *
 * CLI: one request per connection, identified by SO_PEERCRED; today NodesRequest.
 * Loop thread only; sched_stop() closes everything and calls back when the loop may end.
 */
#ifndef SCHED_SCHED_H
#define SCHED_SCHED_H

#include <stdint.h>
#include <uv.h>

#include "common/config.h"
#include "common/error.h"

struct sched_ctx;

/* Listens as cfg says (TCP host:port for workers, socket path for the CLI). cfg is borrowed
 * and must outlive the scheduler (its [[switch]] list is read as nodes register). */
struct sched_ctx *sched_new(uv_loop_t *loop, const struct gs_config *cfg, struct gs_error *err);
/* The TCP port workers connect to (useful when the configuration said 0). */
int sched_worker_port(const struct sched_ctx *s);
void sched_stop(struct sched_ctx *s, void (*stopped)(void *data), void *data);

#endif
