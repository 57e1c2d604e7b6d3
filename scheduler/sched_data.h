/*
 * sched_data.h: what gschedd knows of the datasets in its nodes' shard caches (issue 19,
 * docs/data.md), and the requests about them.
 *
 * Each node's worker reports its cache (DataHoldings): in full after it registers, then
 * only the datasets whose holdings changed. gschedd keeps the latest per node in memory
 * only: a restart loses nothing, since every worker reports in full again when it
 * registers. A node that is down keeps its last report (its disk is still there).
 *
 * What uses it: `gsched data ls|stat|warm|evict` (DataRequest), the LaunchTasks of a job
 * with a dataset (every allocation node's holdings, so each worker plans the same), the
 * placement's preference for nodes that hold a job's data, and JobDataReports that add
 * what staging moved to the job's usage.
 *
 * Loop thread only.
 */
#ifndef SCHED_DATA_H
#define SCHED_DATA_H

#include <stdint.h>

#include "proto/gsched.pb-c.h"
#include "proto/held.h"

struct sched_ctx;
struct sched_node;
struct sched_job;
struct sched_cli;

/* A worker's DataHoldings (full or incremental). Bad entries are skipped with a warning. */
void sched_data_holdings(struct sched_ctx *s, struct sched_node *n, const Gs__DataHoldings *m);
/* Frees what a node keeps of its cache; at shutdown. */
void sched_data_node_free(struct sched_node *n);
/* Bytes of dataset id the node's cache held at its last report; 0 unknown or none. */
uint64_t sched_data_node_bytes(const struct sched_node *n, const char *id);

/*
 * LaunchTasks' data part for job (which has a dataset): the holdings of its allocation
 * nodes, in allocation order, borrowed from the nodes' reports (send before they change).
 */
#define SCHED_DATA_EXTRA_PEERS 4 /* nodes outside the allocation a launch names at most */

struct sched_data_launch {
    Gs__JobLaunchData msg;
    Gs__JobData data;
    Gs__DatasetHolding *holdings;
    Gs__DatasetHolding **ptrs;
    struct gs_held_wire *wires; /* one per holding */
    uint32_t *ports;
    Gs__DataPeer peers[SCHED_DATA_EXTRA_PEERS];
    Gs__DataPeer *peer_ptrs[SCHED_DATA_EXTRA_PEERS];
    struct gs_held_wire peer_wires[SCHED_DATA_EXTRA_PEERS];
};
int sched_data_launch_init(struct sched_ctx *s, const struct sched_job *job,
                           struct sched_data_launch *m);
void sched_data_launch_release(struct sched_data_launch *m);

/* A JobDataReport: adds to the job's usage. */
void sched_data_job_report(struct sched_ctx *s, struct sched_node *n, const Gs__JobDataReport *r);

/* A CLI's DataRequest: list, stat, warm, evict. */
void sched_data_request(struct sched_cli *c, uint64_t request_id, const Gs__DataRequest *req);

#endif
