/*
 * worker_internal.h: struct wrk_ctx, shared by worker.c (connection, registration,
 * heartbeats, exits), worker_launch.c (LaunchTasks, SignalTasks, JobLimitUpdate), jobs.c
 * (the job records) and worker_logs.c (LogsRequest). Not for other folders.
 */
#ifndef WRK_WORKER_INTERNAL_H
#define WRK_WORKER_INTERNAL_H

#include <stdbool.h>
#include <sys/socket.h>

#include "proto/conn.h"
#include "worker/cgroup.h"
#include "worker/ledger.h"
#include "worker/relay.h"
#include "worker/tasks.h"
#include "worker/offload.h"
#include "worker/pmi.h"
#include "worker/pmix.h"
#include "worker/telemetry.h"
#include "worker/worker.h"

/* An exit the scheduler has not acknowledged yet. */
struct wrk_exit {
    struct wrk_exit *next;
    Gs__TaskExit msg; /* launch_error and node_name are owned below */
    char node_name[64];
    char launch_error[256];
};

/* The attempt a job's tasks (of all its steps) were started under, to stamp their exits
 * with. */
struct wrk_job {
    struct wrk_job *next;
    uint64_t job_id;
    uint32_t attempt;
    int ntasks; /* of every step */
    /* A later attempt's LaunchTasks (packed) waiting for this one's tasks to end. */
    uint8_t *deferred;
    size_t deferred_len;
    uint64_t deferred_request_id;
};

struct wrk_ctx {
    uv_loop_t *loop;
    struct gs_proto_auth_key auth_key; /* the cluster key; len 0: none */
    bool allow_root_jobs;              /* worker.allow_root_jobs */
    struct wrk_cg *cg;                 /* the jobs' cgroups (worker/cgroup.h) */
    uint64_t job_pids_max;             /* worker.job_pids_max; 0: none */
    struct wrk_exits_file *exits_file; /* unacknowledged exits on disk; NULL: none */
    struct sockaddr_storage scheduler;
    char node_name[64];
    char address[256];
    char script_dir[256]; /* where batch scripts are written for their run */
    char cli_path[4096];  /* the gsched CLI, for a launcher job's leader */
    char slurm_bin[4096]; /* Slurm's command names for Slurm jobs' PATH; "": none */
    char tmp_fs[4096];    /* worker.tmp_fs: its size is the node's TmpDisk */
    char **features;
    const struct gs_topo *topo;
    uint64_t grace_ms;
    uint64_t start_ms;
    struct gs_proto_conn *conn; /* NULL while disconnected */
    bool registered;
    unsigned registrations;
    uint64_t heartbeat_ms;
    uint64_t heartbeat_seq;
    uint64_t backoff_ms;
    uv_timer_t heartbeat;
    uv_timer_t reconnect;
    uv_timer_t fence;       /* checks that gschedd is still heard (worker.c) */
    uint64_t fence_ms;      /* from the registration reply; 0: never fence */
    uint64_t last_heard_ms; /* mono: the last frame from gschedd */
    bool fenced;            /* tasks killed for silence, until the next registration */
    struct wrk_tasks *tasks;
    struct wrk_ledger *ledger;         /* NULL when not kept */
    struct wrk_relay *relay;           /* the CLI socket; NULL when there is none */
    struct wrk_telemetry *telemetry;   /* heartbeat figures; NULL when not sampling */
    struct wrk_offload *log_reads;     /* `gsched logs` reads, each on its own thread */
    int keeper_fd;                     /* wrk_opts' when keeper, else -1 */
    void (*log_read_gate)(void *data); /* wrk_opts' */
    void *log_read_gate_data;
    struct wrk_exit *exits;
    struct wrk_job *jobs;
    struct wrk_data *data;         /* the shard cache (worker_data.c); NULL: the node keeps none */
    struct wrk_pmix *pmix;         /* the PMIx server (worker_pmix.c), from the first step asking */
    struct wrk_pmi *pmi;           /* the PMI-1 server (worker/pmi.h), from the first step asking */
    struct wrk_fence_keep *fences; /* parts and answers sent again at registration */
    struct wrk_flow *flows; /* srun's output windows, one per step with one (output_flow.c) */
    int open_handles;
    bool warned_unbound; /* said that a fake topology leaves tasks unbound */
    bool stopping;
    void (*stopped)(void *data);
    void *stopped_data;
};

/* output_flow.c: the output window of srun steps launched with one. open: a step's flow
 * (window 0: none, nothing done); output: a chunk of a task's output (or its end) for srun,
 * sent while registered and kept until srun has it (its tasks' reading stops past the
 * window); taken: srun's StepOutputAck (reading starts again below half the window; one
 * asking to resend is a resume);
 * resume: gschedd's StepOutputResume, once srun is back (what srun lacks is sent again);
 * close: the step's last task here ended (its flow stays while srun lacks some of it and
 * exits_acked has not said gschedd stored the step's exits here). */
int wrk_flow_open(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint64_t window);
void wrk_flow_output(struct wrk_ctx *w, const struct wrk_task_id *id, enum wrk_stream stream,
                     const char *bytes, size_t len, bool eof);
void wrk_flow_taken(struct wrk_ctx *w, const Gs__StepOutputAck *ack);
void wrk_flow_resume(struct wrk_ctx *w, const Gs__StepOutputResume *resume);
void wrk_flow_close(struct wrk_ctx *w, uint64_t job_id, uint32_t step);
void wrk_flow_exits_acked(struct wrk_ctx *w, uint64_t job_id, uint32_t step);
void wrk_flows_free(struct wrk_ctx *w);

/* worker_launch.c */
void wrk_handle_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id);
/*
 * Starts msg's tasks now (no deferral, no staging), their environment extended by
 * extra_env ("KEY=VALUE", NULL-terminated, NULL none); with fail_rc < 0 starts none and
 * fails each with fail_why, the reply and the TaskExits saying so.
 */
void wrk_launch_now(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id,
                    char *const *extra_env, int fail_rc, const char *fail_why);
/* Whether msg starts a job's leader (a batch script, mpirun), whose steps run its ranks. */
bool wrk_leader_launch(const Gs__LaunchTasks *msg);
void wrk_handle_signal(struct wrk_ctx *w, const Gs__SignalTasks *msg);
/* JobLimitUpdate: a running job's new time limit, for its tasks here of every step. */
void wrk_handle_limit(struct wrk_ctx *w, const Gs__JobLimitUpdate *msg);
/* JobNotice: a line to the stderr of the job's lowest-ranked task here (worker_notice.c). */
void wrk_handle_notice(struct wrk_ctx *w, const Gs__JobNotice *msg);

/* jobs.c: the job records in w->jobs, owned by w; loop thread only. */
/* The record of job_id; NULL: none. Valid until wrk_job_forget (or wrk_job_idle). */
struct wrk_job *wrk_job_find(struct wrk_ctx *w, uint64_t job_id);
/* Makes job_id's record if it has none, and sets its attempt; 0 or -ENOMEM. */
int wrk_job_remember(struct wrk_ctx *w, uint64_t job_id, uint32_t attempt);
/* Drops a job record once none of its tasks runs here (frees job; its cgroup and data go). */
void wrk_job_forget(struct wrk_ctx *w, struct wrk_job *job);
/* The job's last task here ended: runs a deferred launch, or forgets the job. Either may
 * free job: the caller must not use it afterwards. */
void wrk_job_idle(struct wrk_ctx *w, struct wrk_job *job);

/* worker_pmix.c: srun --mpi=pmix. Starts w->pmix unless it runs; 0 or an error in err. */
int wrk_pmix_start(struct wrk_ctx *w, struct gs_error *err);
/* srun --mpi=pmi2: starts w->pmi unless it runs. 0 or -ENOMEM. */
int wrk_pmi_start(struct wrk_ctx *w);
/* The step's last task here ended: its PMIx namespace or PMI space goes, if it had one. */
void wrk_mpi_step_end(struct wrk_ctx *w, uint64_t job_id, uint32_t step);
/* PmixFenceDone from gschedd: the fence's tasks here go on (or see it fail). */
void wrk_handle_fence_done(struct wrk_ctx *w, const Gs__PmixFenceDone *msg);
/* Registered: the parts of fences under way go to gschedd again, with the answer of each
 * step's last fence, so that fences outlive the connection (a gschedd before 1.30 does not
 * take them: they fail, as the connection's loss failed them before). */
void wrk_fences_registered(struct wrk_ctx *w);
/* Forgets every kept part and answer (the worker stops). */
void wrk_fences_free(struct wrk_ctx *w);

/* worker_logs.c: replies a LogsReply or an ErrorReply under request_id. */
void wrk_handle_logs(struct wrk_ctx *w, const Gs__LogsRequest *req, uint64_t request_id);
/* The log readers: 0, or an error in err. */
int wrk_logs_start(struct wrk_ctx *w, struct gs_error *err);
/* Closes them without waiting for reads in flight (wrk_handle_closed once). */
void wrk_logs_stop(struct wrk_ctx *w);

/* worker_data.c: the node's shard cache (docs/data.md) */
struct wrk_data;
/* Opens worker.data_dir's cache and the peers' data port; 0 when there is no data_dir. */
int wrk_data_start(struct wrk_ctx *w, const struct wrk_opts *opts, struct gs_error *err);
void wrk_data_stop(struct wrk_ctx *w); /* closes its handles (wrk_handle_closed each) */
void wrk_data_free(struct wrk_ctx *w); /* after the last handle closed; NULL data allowed */
uint32_t wrk_data_port(const struct wrk_ctx *w);
void wrk_data_registered(struct wrk_ctx *w); /* the full holdings report */
/* A LaunchTasks with a dataset: staged, then launched (or failed). Whether it took it. */
bool wrk_data_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id);
void wrk_data_command(struct wrk_ctx *w, const Gs__DataCommand *cmd);
void wrk_data_job_signal(struct wrk_ctx *w, const Gs__SignalTasks *msg);
void wrk_data_job_forget(struct wrk_ctx *w, uint64_t job_id);
/* A DataFetchRequest from a task on the CLI socket (answered on conn); false: not one. */
bool wrk_data_fetch(struct wrk_ctx *w, struct gs_proto_conn *conn, const Gs__Envelope *env,
                    uint32_t uid);

/* worker.c */
int wrk_send(struct wrk_ctx *w, Gs__Envelope *env);
/* One of the worker's handles (or in-flight requests) is closed: the last one frees it. */
void wrk_handle_closed(struct wrk_ctx *w);
/* Records an exit of task id (and sends it when connected). */
void wrk_record_exit(struct wrk_ctx *w, const struct wrk_task_id *id, uint32_t attempt,
                     const struct wrk_task_exit *ex, Gs__EndReason reason, const char *error);

#endif
