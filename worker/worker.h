/*
 * worker.h: gsched-workerd's core: one node's agent, on one libuv loop.
 *
 * It connects to the scheduler (reconnecting with backoff, 100 ms doubling to 5 s, for as
 * long as it runs), registers the node's topology and the tasks it still runs, sends
 * heartbeats at the interval the scheduler asks for, starts the tasks of LaunchTasks, ends
 * or signals them on SignalTasks, relays the output of srun step tasks as StepOutput
 * (dropped while disconnected: a step dies with its srun anyway), and reports every exit
 * (after the task's output) as a TaskExit that it keeps and
 * resends on each reconnect until the scheduler acknowledges it (TaskExitAck), so no exit is
 * lost when the scheduler restarts. Running tasks do not depend on the connection: they
 * survive a scheduler outage. The gsched CLI inside its jobs reaches gschedd through the
 * worker's CLI socket, relayed over the same connection (worker/relay.h). With telemetry on,
 * heartbeats carry the node's GPU, CPU and memory figures and each task's CPU time and RSS.
 *
 * Loop thread only. wrk_stop() kills the tasks, closes everything and calls the stop
 * callback once the last handle is closed; the context is freed after it returns.
 */
#ifndef WRK_WORKER_H
#define WRK_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/error.h"
#include "common/topo.h"
#include "proto/auth.h"

struct wrk_opts {
    const struct sockaddr *scheduler; /* copied */
    const char *node_name;
    const char *address;        /* what other nodes use as MASTER_ADDR for this node */
    char *const *features;      /* NULL-terminated, may be NULL; copied */
    const struct gs_topo *topo; /* borrowed: must outlive the worker */
    uint64_t grace_ms;          /* SIGTERM to SIGKILL when LaunchTasks names none */
    const char *ledger_path;    /* its running tasks on disk (worker/ledger.h); NULL: none */
    const char *script_dir;     /* batch scripts' private copies; NULL: /tmp. Task users
                                 * must be able to reach it. */
    const char *cli_socket;     /* the CLI's socket for this node's tasks (worker/relay.h),
                                 * their GSCHED_SOCKET; NULL: none */
    bool cli_socket_optional;   /* failing to listen there is a warning, not an error */
    const char *cli_path;       /* the gsched CLI a launcher job's leader runs (gsched
                                 * mpirun); NULL: "gsched" from the task's PATH */
    const char *slurm_bin;      /* links to gsched by Slurm's names, at the end of Slurm
                                 * jobs' PATH (worker/env.h); NULL: none */
    uint64_t telemetry_ms;      /* GPU (NVML), CPU and memory sampling interval for the
                                 * heartbeats (worker/telemetry.h); 0: none */
    bool synthetic_gpus;        /* topo's GPUs are made up (--gpus N): NVML finds GPU i as
                                 * its device i rather than by PCI bus id */
    const struct gs_proto_auth_key *auth_key; /* the cluster key (copied); NULL: none */
    bool allow_root_jobs;                     /* launch tasks as uid 0 (else refused) */
    const char *cgroups;       /* worker.cgroups: "auto" (NULL), "v1", "v2" or "off" */
    const char *cgroup_root;   /* where the cgroup trees are mounted; NULL: /sys/fs/cgroup */
    const char *cgroup_parent; /* the group the node's job groups go under; NULL: "gsched" */
    uint64_t job_pids_max;     /* each job's pids limit on this node; 0: none */
    const char *data_dir;      /* the node's shard cache (worker/worker_data.c); NULL: none */
    const char *tmp_fs;        /* whose size the node reports as TmpDisk; NULL: /tmp */
    uint64_t data_cap_bytes;   /* its cap; 0: none */
    uint64_t data_rate_bytes;  /* staging copies' rate per second; 0: no limit */
    uint32_t data_port;        /* where peers fetch shards; 0: chosen by the kernel */
    uint32_t data_copies;      /* staging copies at once; 0: 2 */
    uint32_t data_stall_s;     /* a copy without progress this long is given up; 0: 300 */
    bool keeper;               /* keeper_fd is the pipe to this node's keeper (worker/keeper.h), */
    int keeper_fd;             /* told the fence timeout at each registration */
    /* Tests only (NULL in the daemon): runs on each `gsched logs` read's thread before it
     * reads, so a test can hold the read as a filesystem that hangs would. */
    void (*log_read_gate)(void *data);
    void *log_read_gate_data;
    /* Tests only: the same on each shard copy's thread before it copies. */
    void (*data_copy_gate)(void *data);
    void *data_copy_gate_data;
};

struct wrk_ctx;

struct wrk_ctx *wrk_new(uv_loop_t *loop, const struct wrk_opts *opts, struct gs_error *err);
/* Starts connecting. Returns 0 or a negative errno. */
int wrk_start(struct wrk_ctx *w);
void wrk_stop(struct wrk_ctx *w, void (*stopped)(void *data), void *data);

/* The CLI socket the node's tasks get as GSCHED_SOCKET, or NULL when there is none. */
const char *wrk_cli_socket(const struct wrk_ctx *w);
/* For tests and `gsched nodes`: tasks running, exits not yet acknowledged, registrations. */
int wrk_running(const struct wrk_ctx *w);
int wrk_unacked_exits(const struct wrk_ctx *w);
unsigned wrk_registrations(const struct wrk_ctx *w);
/* `gsched logs` reads running on their threads or waiting for the loop. */
unsigned wrk_log_reads(const struct wrk_ctx *w);
/* Jobs with tasks on this node (their attempt numbers are kept while they run). */
int wrk_jobs_known(const struct wrk_ctx *w);

#endif
