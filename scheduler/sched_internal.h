/*
 * sched_internal.h: struct sched_ctx and what its files share: sched.c (listeners, cron,
 * lifecycle), sched_workers.c (worker connections, nodes, reconciliation), sched_cli.c (CLI
 * connections, dispatch and replies), the life of jobs: sched_engine.c (the planning pass,
 * planner.h's decisions applied), sched_submit.c, sched_launch.c, sched_exits.c,
 * sched_failover.c (nodes lost and back), sched_actions.c (cancel, hold, release, requeue);
 * sched_persist.c (changes to the store, reload at start),
 * sched_query.c (what the CLI reads: queue, show, wait, logs), sched_kv.c (the jobs'
 * key/value stores), sched_alloc.c (salloc's allocations, held by their CLI connections),
 * sched_purge.c (finished jobs forgotten after scheduler.min_job_age, read back from the
 * store for show and sacct). Not for other folders.
 */
#ifndef SCHED_SCHED_INTERNAL_H
#define SCHED_SCHED_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto/conn.h"
#include "scheduler/cluster.h"
#include "scheduler/jobs.h"
#include "scheduler/journal.h"
#include "scheduler/planner.h"
#include "scheduler/priority.h"
#include "scheduler/sched.h"
#include "scheduler/sched_data.h"
#include "scheduler/step_acct.h"
#include "scheduler/wait_set.h"

struct sched_node {
    char name[64];
    uint32_t index; /* in the cluster */
    bool up;
    char reason[128];
    struct gs_proto_conn *conn; /* its worker, while connected and registered */
    Gs__NodeTopology *topology; /* owned copy from the last registration */
    uint64_t last_heartbeat_mono;
    uint64_t last_heartbeat_wall;
    /* Down with jobs on it: when they may run elsewhere (mono ms; 0: nothing pending), once
     * its worker has surely fenced itself (sched_fence_ms after its last heartbeat). */
    uint64_t failover_due_mono;
    char worker_version[32];
    /* scontrol update state=drain: takes no new jobs (stored; kept across restarts). */
    bool drain;
    char drain_reason[128];
    bool maint; /* in a whole-node MAINT reservation, as sreport's history has it (sched_resv.c) */
    /* Who holds each GPU, for telemetry (sched_telemetry.c); filled again when the
     * cluster's sched_cluster_alloc_gen for the node moves. */
    bool owners_valid;
    uint64_t owners_gen;
    uint64_t gpu_owner[SCHED_MAX_GPUS];      /* job id, 0 none */
    uint16_t gpu_owner_slot[SCHED_MAX_GPUS]; /* the node's index in that job's alloc.nodes */
    /* Its shard cache as its worker last reported it (sched_data.c), and the port its
     * peers fetch shards from (NodeRegister.data_port, 0 none). */
    struct sched_node_data *data;
    uint32_t data_port;
};

/*
 * A CLI connection: one request, one reply. A request answered later (submit after its
 * commit, wait, logs) holds the connection with busy; a connection the peer closed stays
 * allocated until the last holder lets go, so late answers go nowhere instead of to freed
 * memory.
 *
 * A relayed CLI (relayed set) has no connection of its own: it is a session a worker
 * carries in CliRelay frames for a CLI on its node (worker/relay.h), keyed by (worker
 * connection, session), with the uid and gid the worker vouches for. sched_cli_send and
 * sched_cli_close wrap its frames and its end for that worker; its close runs from a
 * zero timer, out of the caller's stack, as a connection's on_close would.
 */
struct sched_cli {
    struct sched_cli *next;
    struct sched_ctx *s;
    struct gs_proto_conn *conn;
    uid_t uid;
    gid_t gid;
    int busy;
    bool closed;
    struct sched_waiter *waiter;
    struct sched_step *step;       /* the srun step this connection streams (sched_steps.c) */
    struct sched_kv_wait *kv_wait; /* a JobKvGet waiting for its key (sched_kv.c) */
    struct sched_salloc *salloc;   /* the allocation it holds (salloc; sched_alloc.c), owned */
    uint64_t accepted_ms;          /* monotonic: when the connection was accepted */
    bool asked;                    /* its request has come */
    /* login-node CLIs only (sched_login.c): the credential is being checked, uid unknown;
     * the request that came meanwhile, kept until it passes */
    bool authenticating;
    Gs__Envelope *login_held;
    /* relayed CLIs only */
    bool relayed;
    bool closing;                /* sched_cli_close ran: its close_timer is started */
    bool freeing;                /* close_timer is being closed, then the record freed */
    struct gs_proto_conn *relay; /* the worker's connection; NULL once it is gone */
    bool relay_lost;             /* it went away under the session (srun may come back) */
    uint64_t relay_session;
    char relay_node[64];
    uv_timer_t close_timer;
};

/*
 * A job's latest JobProgressReport (sched_cli.c takes it, sched_query.c shows it). It is
 * telemetry, not job state: kept in memory only, never written to SQLite, so a restarted
 * gschedd shows none until the next report; it stays after the job ends, as the last word
 * on how far it got, until the job is forgotten.
 */
#define SCHED_PROGRESS_TEXT_MAX 200
struct sched_job_progress {
    uint64_t received_ms; /* wall clock */
    uint32_t attempt;     /* the job's restart count then */
    uint64_t step, steps, eval_step;
    double loss, tokens_per_s, comm_ms, comm_exposed_ms, overlap, eval_loss, lr, mfu;
    double data_ms; /* the latest step's wait for its batch */
    uint32_t ranks;
    char text[SCHED_PROGRESS_TEXT_MAX + 1];
};

/* A WaitRequest in progress. */
struct sched_waiter {
    struct sched_waiter *next;
    struct sched_cli *cli;
    uint64_t request_id;
    uint64_t *job_ids;
    size_t njobs;
    struct sched_wait_set set;        /* how far they have got (wait_set.h) */
    struct sched_wait_stored *stored; /* forgotten jobs among them, read back (sched_query.c) */
    size_t nstored;
    bool until_start;
    uv_timer_t timer;
};

/* A LogsRequest passed on to a worker, until its answer comes back. */
struct sched_forward {
    struct sched_forward *next;
    struct sched_cli *cli;
    uint64_t cli_request_id;
    uint64_t worker_request_id;
    struct gs_proto_conn *worker;
    bool task_finished;
};

/* What /metrics counts (sched_metrics.c); from zero at each start of gschedd. */
struct sched_stats {
    uint64_t jobs_submitted;  /* jobs added to the table by a submit (array elements each) */
    uint64_t jobs_started;    /* PENDING -> RUNNING, every attempt */
    uint64_t plan_passes;     /* planning passes run */
    uint64_t plan_ns_sum;     /* their time, in all */
    uint64_t plan_ns_last;    /* the last one's */
    uint64_t metrics_ns_last; /* the last render of /metrics */
    uint64_t preemptions;     /* running jobs requeued for a job of a higher tier */
    double preempt_lost_s;    /* their lost work, GPU-seconds (core-seconds without GPUs) */
    uint64_t jobs_completed, jobs_cancelled, jobs_failed; /* ends, each attempt's last */
    uint64_t jobs_backfilled; /* started ahead of a blocked higher-priority job */
    uint64_t plan_ns_max;     /* the longest pass since the last sdiag reset */
    uint32_t plan_last_queue; /* pending jobs the last pass looked at */
};

struct sched_ctx {
    uv_loop_t *loop;
    uv_tcp_t workers;
    uv_pipe_t cli;
    uv_tcp_t login; /* scheduler.cli_port, listening only when set (sched_login.c) */
    uv_timer_t cron;
    uv_idle_t plan_idle;   /* runs one planning pass after the events of a loop iteration */
    uv_timer_t plan_timer; /* ... or once the last pass's spacing is over (sched_engine.c) */
    uint64_t plan_next_ns; /* monotonic: no pass before this */
    bool plan_wanted;
    bool timed_deps;            /* a job waits for after:JOB+MIN: the cron plans again */
    uint64_t resv_wake_ms;      /* a reservation starts or ends then: the cron plans again */
    struct sched_resvs *resvs;  /* advance reservations (sched_resv.c); NULL: none yet */
    size_t plan_from;           /* jobs table index before which every job has ended */
    struct sched_fairshare *fs; /* sched_policy.c */
    uint64_t usage_saved_ms;    /* wall time the usage was last stored */
    struct sched_prio_cluster prio_cluster; /* the cluster's size for job size, each pass */
    char socket_path[108];
    char state_dir[512];
    uint64_t heartbeat_ms;
    uint32_t heartbeat_misses;
    uint64_t kill_grace_ms;
    const struct gs_config *cfg; /* borrowed from the caller of sched_new() */
    struct sched_cluster *cluster;
    /* Per [[partition]], the nodes it lists as a bitmap over the cluster's node indices,
     * part_words words each, kept as nodes join (sched_slurm.c); NULL for a partition of
     * every node. part_masks_lost: out of memory once, masks are built per job instead. */
    uint64_t **part_masks;
    size_t part_words;
    bool part_masks_lost;
    /* During a planning pass (sched_data_view_begin/_end, sched_slurm.c): each dataset's
     * bytes per node and the nodes holding some, and each --prefer expression's nodes,
     * built once for the pass's jobs reading it or asking it rather than once per job; the
     * masks borrow them. */
    struct sched_data_view *data_views;
    size_t ndata_views;
    struct sched_prefer_view *prefer_views;
    size_t nprefer_views;
    bool data_views_on;
    struct sched_node **nodes;         /* by cluster index (registration order) */
    struct sched_node **nodes_by_name; /* the same, by name (sched_node_find) */
    size_t nnodes;
    struct sched_jobs *jobs;
    struct sched_journal *journal;
    uint64_t next_job_id;
    uint64_t next_request_id; /* for requests gschedd sends to workers */
    struct sched_cli *clis;
    struct sched_waiter *waiters;
    struct sched_forward *forwards;
    struct sched_kv_wait *kv_waits;        /* JobKvGets waiting for their keys (sched_kv.c) */
    struct sched_step *steps;              /* srun steps streaming to their CLI (sched_steps.c) */
    struct sched_step_seq *step_seqs;      /* per job with steps: numbers, holdings, waiting */
    struct sched_tel *tel;                 /* GPU telemetry (telemetry.h, sched_telemetry.c) */
    struct sched_mail *mail;               /* the jobs' mail waiting or running (sched_mail.c) */
    struct sched_submit_keys *submit_keys; /* clients' submit keys (sched_keys.c) */
    struct sched_wconn *wconns;            /* worker connections (sched_workers.c) */
    struct gs_proto_auth_key auth_key;     /* the cluster key; len 0: links not authenticated */
    struct sched_http *http;  /* the HTTP server (http.h); NULL when off or not started */
    struct sched_stats stats; /* counters for /metrics */
    /* sdiag (sched_diag.c): the counters as they were at the last reset (zero: none), and
     * when that was (gschedd's start before any). */
    struct sched_stats diag_base;
    uint64_t diag_since_ms;
    /* sched_purge.c: jobs forgotten since start; whether the store holds jobs memory does
     * not (forgotten, or left there at start), which queue/show then read back. */
    uint64_t jobs_forgotten;
    bool jobs_in_store_only;
    /* sched_history_purge.c: when the next purge of old history runs (monotonic ms; 0: at
     * the next tick), whether one runs now, and jobs deleted since start. */
    uint64_t history_purge_next_mono;
    bool history_purge_busy;
    uint64_t history_purged;
    /* sched_resv.c: what the active MAINT reservations were when the nodes' maint flags
     * were last worked out (a hash; 0: never) */
    uint64_t maint_key;
    int open_handles;
    bool stopping;
    void (*stopped)(void *data);
    void *stopped_data;
};

struct sched_node *sched_node_find(struct sched_ctx *s, const char *name);
/* Node n, about to become s->nodes[s->nnodes], into nodes_by_name (grown by the caller). */
void sched_node_by_name_insert(struct sched_ctx *s, struct sched_node *n);
/* How long a worker that hears nothing from gschedd runs its tasks before killing them:
 * scheduler.fence_timeout (default 5 min); 0: workers never fence, and a lost node's jobs
 * move as soon as it is declared down. */
uint64_t sched_fence_ms(const struct sched_ctx *s);
void sched_release_handle(struct sched_ctx *s);
/* sched_mail.c: a job's change (sched_query_job_changed) mailed about as it asked
 * (--mail-type); the shares of time limits reached, on the cron; at stop, what waits is
 * dropped and the running programs' handles closed; its memory freed with s. */
void sched_mail_job_changed(struct sched_ctx *s, struct sched_job *job);
void sched_mail_tick(struct sched_ctx *s);
void sched_mail_stop(struct sched_ctx *s);
void sched_mail_free(struct sched_ctx *s);
/* sched_metrics.c: runs pass(s) (the planning pass) and counts its time in s->stats. */
void sched_stats_time_pass(struct sched_ctx *s, void (*pass)(struct sched_ctx *s));
/* sched_telemetry.c: heartbeats' figures into s->tel, the jobs' usage and their steps'
 * accounting records (sstat); idle policy. */
void sched_telemetry_heartbeat(struct sched_ctx *s, struct sched_node *n, const Gs__Heartbeat *hb);
struct sched_change;
/* An ended job that held GPUs it never used gets a history line (into ch) and a warning. */
void sched_telemetry_job_ended(struct sched_ctx *s, struct sched_job *job, struct sched_change *ch);
/* A node's GPU figures for NodeInfo (gpu_stats, cpu/memory use); release with the next. */
struct sched_tel_msgs {
    Gs__GpuStats *stats;
    Gs__GpuStats **ptrs;
    Gs__GpuProcess *procs;
    Gs__GpuProcess **proc_ptrs;
    uint32_t free_gpus[SCHED_MAX_GPUS];
};
int sched_telemetry_node_info(struct sched_ctx *s, const struct sched_node *n, Gs__NodeInfo *info,
                              struct sched_tel_msgs *m);
void sched_telemetry_msgs_release(struct sched_tel_msgs *m);
/* A job's usage for JobInfo: m->usage filled, idle_gpus owned by m; release with the next. */
struct sched_usage_msg {
    Gs__JobUsage usage;
    char **idle_gpus;
    size_t nidle;
};
int sched_telemetry_job_usage(struct sched_ctx *s, const struct sched_job *job,
                              struct sched_usage_msg *m);
void sched_telemetry_usage_release(struct sched_usage_msg *m);
/*
 * sched_keys.c, idempotent submits: sched_keys_check answers a submit whose client_key was
 * used before (returns 1: answered) or lets it through (0); sched_keys_claim gives the
 * submission's first job the key; sched_keys_unclaim forgets it when the job was not stored;
 * sched_keys_restore puts a stored key back at start. 0 or -errno.
 */
int sched_keys_check(struct sched_cli *c, uint64_t request_id, const Gs__SubmitRequest *req);
int sched_keys_claim(struct sched_ctx *s, struct sched_job *first, const char *key);
void sched_keys_unclaim(struct sched_ctx *s, const struct sched_job *first);
int sched_keys_restore(struct sched_ctx *s, struct sched_job *job, const char *key);
/* Marks a node DOWN (no-op when it is already): its jobs fail over (sched_failover.c). */
void sched_node_set_down(struct sched_ctx *s, struct sched_node *n, const char *why);
/* Whether new work may go to the node: UP and its worker connected. */
void sched_node_update_schedulable(struct sched_ctx *s, struct sched_node *n);

/* sched_drain.c: operators taking nodes out of service and back */
/* UP, DRAINING (drained, jobs still on it), DRAINED or DOWN (its worker unheard). */
Gs__NodeState sched_node_state(struct sched_ctx *s, const struct sched_node *n);
/* What the node's state is about: the drain reason while up and drained, else n->reason. */
const char *sched_node_reason(const struct sched_node *n);
/* A NodeUpdateRequest (root only): drain or resume the named nodes, answered once stored. */
void sched_node_update(struct sched_cli *c, uint64_t request_id, const Gs__NodeUpdateRequest *req);

/* sched_policy.c: fair share and multifactor priority (fairshare.h, priority.h) */
/* The tree from the configuration, and the job table's stop hook; before the state loads. */
int sched_policy_init(struct sched_ctx *s);
void sched_policy_free(struct sched_ctx *s);
/* A stored usage row (sched_store_load_usage's callback), decayed to now. */
int sched_policy_load_usage(const char *account, const char *user, double usage, uint64_t at_ms,
                            void *data);
/* From the cron: running jobs charged to now, usage decayed, factors updated, stored once a
 * minute (and now when final: an orderly stop). */
void sched_policy_tick(struct sched_ctx *s, bool final);
/* Before each planning pass: the cluster's size for the job-size factor. */
void sched_policy_before_pass(struct sched_ctx *s);
/* A submitted job's fair-share association, made now so that sshare shows its user. */
void sched_policy_job_added(struct sched_ctx *s, struct sched_job *job);
/* The planner's priority hook (planner.h): data is the sched_ctx; keeps job->prio. */
int32_t sched_policy_priority(void *data, struct sched_job *job, uint64_t now_ms);
/* The priority a job was last given (its spec's before any pass). */
int32_t sched_policy_job_priority(const struct sched_job *job);
/* A pending job's priority factors for JobInfo, borrowing nothing. */
void sched_policy_factors(const struct sched_job *job, Gs__PriorityFactors *f);
/*
 * Submit checks of uid's spec: priority and negative nice are root's; with accounts
 * configured, the account must exist and have user as a member (root: any), and an empty
 * one becomes user's default account; a QOS with access lists must admit the user or the
 * account (root: any). 0, or < 0 with why saying which field.
 */
int sched_policy_admit(struct sched_ctx *s, uint32_t uid, const char *user, struct gs_jobspec *spec,
                       char *why, size_t size);
/* scontrol update JobId= QOS=: trial (the job with its new QOS and time limit) may have it:
 * the QOS exists (with [[qos]]), its max_wall holds the time limit, its access lists admit
 * user (the job's owner) or the job's account unless uid is root. 0, or < 0 with why. */
int sched_policy_qos_change(struct sched_ctx *s, uint32_t uid, const char *user,
                            const struct gs_jobspec *trial, char *why, size_t size);
/* A ShareRequest: the fair-share tree (sshare). */
void sched_policy_share(struct sched_cli *c, uint64_t request_id);
/* sreport cluster utilization (sched_report.c): answered once the store has been read. */
void sched_report_request(struct sched_cli *c, uint64_t request_id, const Gs__ReportRequest *req);

/* sched_resv.c: advance reservations (scontrol create/update/delete/show reservation) */
struct sched_resvs;
/* A ReservationRequest: shown at once, or changed (root only) and answered once stored. */
void sched_resv_request(struct sched_cli *c, uint64_t request_id,
                        const Gs__ReservationRequest *req);
/* A stored reservation at start (sched_store_load_resvs's callback; data is the sched_ctx). */
int sched_resv_load(const char *name, const void *spec, size_t len, void *data);
/*
 * The reservations as the planner sees them (planner.h), node masks built for the cluster
 * as it is now; borrowed from s until the next call. 0 or -ENOMEM.
 */
int sched_resv_view(struct sched_ctx *s, const struct sched_planner_resv **ret, size_t *ret_n);
/* Submit check: a job that names a reservation must name one that is there and lets its
 * user or account in (root: any). 0, or -EINVAL/-EPERM with why naming the field. */
int sched_resv_admit(struct sched_ctx *s, uint32_t uid, const char *user,
                     const struct gs_jobspec *spec, char *why, size_t size);
/* A job starting in a reservation with an end: its time limit ends it by then, as Slurm's
 * jobs end with their reservation (the limit is lowered in the spec, which is stored). */
void sched_resv_cap(struct sched_ctx *s, struct sched_job *job, uint64_t now_ms);
/* From the cron: reservations past their end are deleted; a pass when one starts or ends. */
void sched_resv_tick(struct sched_ctx *s);
/* A pass started jobs: a Flags=REPLACE reservation swaps the nodes they took for idle ones
 * now, not at the next tick, so that its next job finds its pool whole. */
void sched_resv_jobs_started(struct sched_ctx *s);
/* Whether node is in a Flags=MAINT reservation active at now_ms (wall clock). */
bool sched_resv_node_maint(const struct sched_ctx *s, const char *node, uint64_t now_ms);
/* How many of license name the reservations active at now_ms keep (Licenses=) and their
 * own running jobs do not hold: what jobs outside them cannot take now. */
uint32_t sched_resv_licenses_kept(const struct sched_ctx *s, const char *name, uint64_t now_ms);
/* A node registered (again): the planner's view is rebuilt, node masks and GPU sets. */
void sched_resv_nodes_changed(struct sched_ctx *s);
void sched_resv_free(struct sched_ctx *s);

/* sched_workers.c */
void sched_on_worker_connection(uv_stream_t *server, int status);
/* From the cron: closes worker connections not registered within scheduler.request_timeout. */
void sched_workers_sweep(struct sched_ctx *s, uint64_t now_ms);
/* Starts closing every worker connection, registered or not (gschedd stopping). */
void sched_workers_close_all(struct sched_ctx *s);
/* A registry entry for name (new ones are added to the cluster from topology, copied). */
struct sched_node *sched_node_add(struct sched_ctx *s, const char *name,
                                  const Gs__NodeTopology *topology);
/* Sends env to the node's worker; false when it is not connected. */
bool sched_node_send(struct sched_node *n, Gs__Envelope *env);

/* sched_login.c: listens on scheduler.cli_port when set (refused without libmunge). */
int sched_login_listen(struct sched_ctx *s, const struct gs_config *cfg, struct gs_error *err);

/* sched_cli.c */
void sched_on_cli_connection(uv_stream_t *server, int status);
/* A CLI connection's record (CLI role, gschedd's name; opts' callbacks get it as data),
 * linked into s->clis and counted open; NULL when out of memory. Accepting is the caller's. */
struct sched_cli *sched_cli_new(struct sched_ctx *s, enum gs_proto_transport transport,
                                struct gs_proto_conn_opts *opts);
/* From the cron: closes CLI connections that sent no request within scheduler.request_timeout. */
void sched_cli_sweep(struct sched_ctx *s, uint64_t now_ms);
/* One frame from a CLI whose uid is known, on its own connection or relayed. */
void sched_cli_dispatch(struct sched_cli *c, const Gs__Envelope *env);
/* Whether c (counted in s->clis) is one connection too many, in all or from its user (not
 * counted per user while its uid is unknown); logged when it is. */
bool sched_cli_over_limits(const struct sched_ctx *s, const struct sched_cli *c);
/* A connection's on_close: the record leaves s->clis, freed once nothing holds it. */
void sched_cli_gone(struct sched_cli *c);
void sched_cli_hold(struct sched_cli *c);
/* Sends env (when the peer is still there) and closes the connection; lets go of a hold. */
void sched_cli_reply(struct sched_cli *c, Gs__Envelope *env, bool held);
/*
 * Queues env to the CLI peer: 0, or < 0 when the peer is gone or does not keep up. Every
 * frame to a CLI goes through here and sched_cli_close, never through c->conn directly, so
 * that a peer reached some other way than its own connection is served the same.
 */
int sched_cli_send(struct sched_cli *c, const Gs__Envelope *env);
/* Ends the peer's session once what is queued has been flushed; nothing if already gone. */
void sched_cli_close(struct sched_cli *c);
/* The same, hearing the peer out first (gs_proto_conn_close_linger): a step's srun. */
void sched_cli_close_linger(struct sched_cli *c);
void sched_cli_error(struct sched_cli *c, uint64_t request_id, int code, const char *msg,
                     bool held);
void sched_cli_unhold(struct sched_cli *c);
/* A SubmitReply (job_id 0 for --test-only); lets go of the hold. */
void sched_cli_submit_reply(struct sched_cli *c, uint64_t request_id, uint64_t job_id,
                            uint32_t array_size, const char *partition);
/* --test-only's SubmitReply: job_id 0, and w's estimate, its nodes as the hostlist nodes
 * ("" for none); lets go of the hold. */
void sched_cli_test_reply(struct sched_cli *c, uint64_t request_id, uint32_t array_size,
                          const char *partition, const struct sched_will_run *w, const char *nodes);
/* One job's outcome of a cancel, hold, release or requeue (sched_actions.c). */
struct sched_action_result {
    uint64_t job_id;
    int32_t code; /* 0 or a negative errno */
    Gs__JobState state;
    char message[160];
};
/* The reply to what (a CancelRequest, HoldRequest, ...) with n results; lets go of the hold. */
void sched_cli_action_reply(struct sched_cli *c, uint64_t request_id, Gs__Envelope__BodyCase what,
                            const struct sched_action_result *results, size_t n);
/*
 * The job job_id when the caller may act for it as one of its tasks: its owner or root (the
 * uid is the kernel's, or the one a worker vouches for), while the job is RUNNING. Else
 * NULL, the ErrorReply sent: -ENOENT, -EPERM "job N: only its owner or root may WHAT",
 * -EINVAL "job N is STATE: RUNNING_ONLY".
 */
struct sched_job *sched_cli_task_job(struct sched_cli *c, uint64_t request_id, uint64_t job_id,
                                     const char *what, const char *running_only);
/*
 * A CliRelay from the registered worker of node on conn: opens a relayed CLI for a session
 * numbered above *last_session (the highest this connection has opened, which it updates),
 * passes the frame in it to the same dispatch as a CLI connection's, or ends the session.
 * A malformed frame ends that session alone, with one log line.
 */
void sched_cli_relay(struct sched_ctx *s, struct gs_proto_conn *conn, const char *node,
                     uint64_t *last_session, const Gs__CliRelay *msg);
/* The worker connection conn went away: its relayed CLIs end as a CLI that hung up does. */
void sched_cli_relay_gone(struct sched_ctx *s, struct gs_proto_conn *conn);

/* sched_engine.c: the planning pass */
/* Asks for a planning pass once this loop iteration's events are handled. */
void sched_engine_wake(struct sched_ctx *s);
/*
 * sbatch --test-only: when and where draft (a job not in the table, numbered after every
 * job there) would start if submitted now, as the planner would plan it
 * (sched_planner_will_run). 0 or -ENOMEM; release w with sched_will_run_release().
 */
int sched_engine_will_run(struct sched_ctx *s, struct sched_job *draft, struct sched_will_run *w);

/* sched_submit.c: a SubmitRequest, answered once its jobs are stored (or refused). */
void sched_submit(struct sched_cli *c, uint64_t request_id, const Gs__SubmitRequest *req);
/* Whether spec's shape could ever run here: its partition, node lists, --tmp, constraint
 * and sizes against the cluster's nodes. 0, or < 0 with why naming the job-file field
 * ("resources.constraint: no node has the feature 'h200'"). */
int sched_submit_shape_check(struct sched_ctx *s, const struct gs_jobspec *spec, char *why,
                             size_t size);

/* sched_actions.c: cancel, hold, release, requeue, answered once stored. */
void sched_action(struct sched_cli *c, const Gs__Envelope *env);
/* A worker registering again: the stop (or continue) of a job suspended (or resumed) in this
 * attempt goes to node n again, in case it missed it while away. */
void sched_action_resend_suspension(const struct sched_job *job, struct sched_node *n);
/* The idle policy's end of a job: cancelled, or requeued when requeue. */
void sched_action_idle_end(struct sched_ctx *s, struct sched_job *job, bool requeue,
                           const char *why);

/* sched_job_update.c: scontrol update JobId=...: a pending job's priority, nice, time
 * limit, partition, dependencies; answered (JobActionReply) once stored. */
void sched_job_update(struct sched_cli *c, uint64_t request_id, const Gs__JobUpdateRequest *req);
/* A running job's time limit (JobLimitUpdate, fire-and-forget) to its nodes' workers, or to
 * only's alone (a worker registering again: an update it missed while away reaches it). */
void sched_job_limit_send(struct sched_ctx *s, const struct sched_job *job,
                          const struct sched_node *only);
/* 0 when every worker on job's nodes knows JobLimitUpdate, else -EOPNOTSUPP with msg naming
 * the node and what (the option that needs it). */
int sched_job_limit_reachable(struct sched_ctx *s, const struct sched_job *job, const char *what,
                              char *msg, size_t size);

/* sched_exits.c: a task exit from node n's worker; acknowledged to that worker once stored. */
void sched_exit_task(struct sched_ctx *s, struct sched_node *n, const Gs__TaskExit *ex);

/* sched_failover.c */
/*
 * A worker registered: decides which of its running tasks it keeps (the others go into
 * *ret_kill, which the caller frees with free()), takes its unacknowledged exits, and
 * requeues this node's tasks the worker does not know.
 */
int sched_failover_reconcile(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg,
                             Gs__TaskRef ***ret_kill, size_t *ret_nkill);
/* A node went down: its srun steps end now; its jobs move (sched_failover_node_lost) only
 * once its worker has fenced itself, failover_due_mono, unless it registers again first. */
void sched_failover_node_down(struct sched_ctx *s, struct sched_node *n);
/* The jobs of a node down past its fence timeout: requeued or NODE_FAIL. */
void sched_failover_node_lost(struct sched_ctx *s, struct sched_node *n);

/* sched_submit.c: uid's user name, or the uid in decimal when it has none. */
void sched_user_name(uid_t uid, char *out, size_t size);

/* sched_launch.c */
/* Starts job at alloc (taken from the cluster by the planner): stored RUNNING, then launched. */
void sched_launch_start(struct sched_ctx *s, struct sched_job *job, struct sched_alloc *alloc,
                        bool backfilled);
void sched_launch_reply(struct sched_ctx *s, struct sched_node *n, const Gs__LaunchTasksReply *r);
/* The registry node at a cluster index, NULL when there is none. */
struct sched_node *sched_node_at(struct sched_ctx *s, uint32_t index);
/* SignalTasks to every node of the job but skip (an alloc node index, or UINT32_MAX). */
void sched_signal_job(struct sched_ctx *s, const struct sched_job *job, uint32_t skip,
                      uint32_t signum, Gs__EndReason why, const char *reason);
/* A signal for the batch shell alone (scancel -b): it runs on the job's first node. */
void sched_signal_batch(struct sched_ctx *s, const struct sched_job *job, uint32_t signum);
/* The MASTER_ADDR of a node: the address its worker registered, else its name. */
const char *sched_node_address(const struct sched_node *n);

/* sched_steps.c: srun inside a running job (job steps), relayed between srun and workers */
struct sched_step;
struct sched_step_seq;
/*
 * A StepLaunchRequest: checks, lays out and launches the step, or queues it (StepPending)
 * while its job's running steps hold what it needs; the connection then streams.
 */
void sched_steps_launch(struct sched_cli *c, uint64_t request_id, const Gs__StepLaunchRequest *req);
/* A frame on a connection that streams a step (c->step set): StepSignal, else ignored. */
void sched_steps_cli_message(struct sched_cli *c, const Gs__Envelope *env);
/* srun's connection closed (from on_cli_close, before the record is freed). */
void sched_steps_cli_gone(struct sched_cli *c);
/* From workers: a TaskExit with step >= 1 (acknowledged here once the step's accounting
 * record is stored), a StepOutput. */
void sched_steps_task_exit(struct sched_ctx *s, struct sched_node *n, const Gs__TaskExit *ex);
void sched_steps_output(struct sched_ctx *s, struct sched_node *n, const Gs__StepOutput *out);
/* A worker's StepInputAck: how far the step's input got on n; srun hears the least. */
void sched_steps_input_ack(struct sched_ctx *s, struct sched_node *n, const Gs__StepInputAck *a);
/* A LaunchTasksReply: true when it answers a step's launch (then it is handled here). */
bool sched_steps_launch_reply(struct sched_ctx *s, struct sched_node *n, uint64_t request_id);
/* Whether job_id has a live step number step (TaskRef.step), e.g. for reconciliation. */
bool sched_steps_known(struct sched_ctx *s, uint64_t job_id, uint32_t step);
/* The job ended, however: its sruns are told and closed, the records of its steps still
 * running stored CANCELLED (called by sched_engine.c). */
void sched_steps_job_ended(struct sched_ctx *s, uint64_t job_id);
/* The job was resumed (scontrol resume): the steps that waited meanwhile start if they fit. */
void sched_steps_job_resumed(struct sched_ctx *s, uint64_t job_id);
/* sched_pmix.c: node n's part of a fence of an srun --mpi=pmix step (PmixFence). */
void sched_pmix_fence(struct sched_ctx *s, struct sched_node *n, const Gs__PmixFence *msg);
/* A task of such a step on node n called MPI_Abort: the step's tasks end everywhere. */
void sched_pmix_abort(struct sched_ctx *s, struct sched_node *n, const Gs__PmixAbort *msg);
/* Node n's worker went away: its step tasks count as exited with a failure. */
void sched_steps_node_gone(struct sched_ctx *s, struct sched_node *n);
/* Frees what is left at shutdown (called where sched_ctx is freed). */
void sched_steps_free(struct sched_ctx *s);
/* srun's StepAttach: c takes up its running step again (after gschedd or the worker relaying
 * srun restarted), or is refused; the connection then streams as after a launch. */
void sched_steps_attach(struct sched_cli *c, uint64_t request_id, const Gs__StepAttach *a);
/* Node n registered with reg: step tasks it should run but neither runs nor kept an exit of
 * (its worker restarted, or never got the launch) end LOST. */
void sched_steps_reconcile(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg);
/* Node n's worker registered: each step with tasks there that srun streams has its output
 * sent again from what srun acknowledged (what went to a gschedd that died is lost else). */
void sched_steps_node_back(struct sched_ctx *s, struct sched_node *n);
/* From the cron: steps whose srun has not reattached within the fence timeout (the
 * default's 5 minutes without one) end their tasks. */
void sched_steps_check_detached(struct sched_ctx *s);
/* step_keep.c, at start-up: a stored running step (live_steps) back, waiting for its srun;
 * one that cannot be (its job ended, another attempt) is left out. 0 or -ENOMEM. */
int sched_steps_restore(struct sched_ctx *s, uint64_t job_id, uint32_t step, const void *record,
                        size_t len);
/* After every record: a stored task exit (live_step_exits, a packed gs.TaskExit) of a step
 * taken up; one of a step left out, or unreadable, is skipped. 0 or -ENOMEM. */
int sched_steps_restore_exit(struct sched_ctx *s, uint64_t job_id, uint32_t step, const void *exit,
                             size_t len);
/* Once every record and exit is read back and the journal runs: the steps taken up have
 * their accounting rows follow their exits, and the running jobs' srun steps whose
 * record was not taken up end CANCELLED in sacct (their tasks end when their workers
 * register), their records deleted. */
void sched_steps_restore_done(struct sched_ctx *s);

/* sched_alloc.c: allocations (salloc, srun outside a job), held by their CLI connection */
struct sched_salloc;
/* An AllocRequest: submitted as a batch job with spec.allocation set, c holding it. */
void sched_alloc_request(struct sched_cli *c, uint64_t request_id, const Gs__AllocRequest *req);
/* From sched_cli_submit_reply: true when c asked for an allocation (AllocReply PENDING sent,
 * the hold let go, the connection kept), else false and the SubmitReply is the caller's. */
bool sched_alloc_submitted(struct sched_cli *c, uint64_t job_id);
/* Its start is stored: no launch; the client hears GRANTED (or it ends, its client gone). */
void sched_alloc_started(struct sched_ctx *s, struct sched_job *job);
/* A frame on an allocation's connection (c->salloc set): AllocRelease, else ignored. */
void sched_alloc_cli_message(struct sched_cli *c, const Gs__Envelope *env);
/* The connection went away (from cli_gone): a job it still held ends CANCELLED. */
void sched_alloc_cli_gone(struct sched_cli *c);
/* A job changed state (sched_query_job_changed): an allocation that ended under its client
 * is told to it as REVOKED. */
void sched_alloc_job_changed(struct sched_ctx *s, const struct sched_job *job);
/* scancel marked a running job cancelled: an allocation, having no task to end, ends now. */
void sched_alloc_cancelled(struct sched_ctx *s, struct sched_job *job);
/* From the cron: running allocations past their time limit end TIMEOUT; those marked to
 * end (preemption, the idle policy, a requeue) end CANCELLED. */
void sched_alloc_tick(struct sched_ctx *s);
/* At start, once the state is loaded: allocations of the last run end CANCELLED. */
void sched_alloc_reload(struct sched_ctx *s);

/* sched_kv.c: the jobs' key/value stores (job_kv.h) on CLI connections */
struct sched_kv_wait;
/* A JobKvPut: answered at once; the gets waiting for that key are answered with it. */
void sched_kv_put(struct sched_cli *c, uint64_t request_id, const Gs__JobKvPut *req);
/* A JobKvGet: answered at once when the key is set or no wait is asked, else it waits. */
void sched_kv_get(struct sched_cli *c, uint64_t request_id, const Gs__JobKvGet *req);
/* A job changed state: when it stopped running, the gets waiting on it fail (-EINVAL). */
void sched_kv_job_changed(struct sched_ctx *s, const struct sched_job *job);
/* The CLI's peer went away (from cli_gone): its waiting get, if any, is withdrawn. */
void sched_kv_cli_gone(struct sched_cli *c);

/* sched_slurm.c */
/* The job's partition: the one it names, else the default; NULL when it names none known. */
const struct gs_config_partition *sched_job_partition(struct sched_ctx *s,
                                                      const struct gs_jobspec *spec);
/*
 * Submit-time checks and defaults of partitions and node lists: fixes spec->partition to
 * the default one when unset, gives an unlimited job its partition's max_time, refuses a
 * longer one, unknown partitions and nodes. Returns 0, -EINVAL with why, -ENOMEM.
 */
int sched_slurm_admit(struct sched_ctx *s, struct gs_jobspec *spec, char *why, size_t size);
/* The nodes a job may use and must use (planner.h), from its partition and node lists: its
 * partition's mask borrowed when it excludes no node. */
int sched_node_masks_build(struct sched_ctx *s, const struct gs_jobspec *spec,
                           struct sched_node_masks *m);
/* Node n has joined the cluster: its bit in the masks of the partitions that list it. */
void sched_part_masks_node_added(struct sched_ctx *s, const struct sched_node *n);
void sched_part_masks_free(struct sched_ctx *s);
/* A planning pass begins (the masks built until _end share each dataset's view and each
 * --prefer's nodes) / ends (the views freed: the nodes' holdings, and the nodes, may change
 * before the next). */
void sched_data_view_begin(struct sched_ctx *s);
void sched_data_view_end(struct sched_ctx *s);
/*
 * A LaunchTasks environment: the run spec's variables (borrowed), then what gschedd adds
 * (owned), a key set twice keeping the later value.
 */
struct sched_env {
    Gs__LaunchTasks__EnvEntry *entries;
    Gs__LaunchTasks__EnvEntry **ptrs;
    uint8_t *owned; /* per entry: 1 key owned, 2 value owned */
    size_t n, cap;
    int rc;
};
/* Room for run's variables and the SLURM_* ones of a job of nhet further components. */
int sched_env_init(struct sched_env *e, const Gs__RunSpec *run, uint32_t nhet);
void sched_env_release(struct sched_env *e);
/* Adds the job-level SLURM_* variables of a running Slurm job (and GSCHED_SOCKET). */
int sched_slurm_job_env(struct sched_ctx *s, const struct sched_job *job, struct sched_env *e);

/* sched_persist.c */
struct sched_change;
typedef void (*sched_change_fn)(struct sched_ctx *s, int status, void *arg);
/* NULL when out of memory; commit() accepts NULL and reports -ENOMEM. */
struct sched_change *sched_change_new(struct sched_ctx *s);
/* Snapshots of what to write; a failure is remembered and reported by commit. */
void sched_change_job(struct sched_change *ch, const struct sched_job *job);
void sched_change_tasks(struct sched_change *ch, const struct sched_job *job);
void sched_change_task(struct sched_change *ch, const struct sched_job *job, uint32_t rank);
void sched_change_clear_tasks(struct sched_change *ch, uint64_t job_id);
void sched_change_event(struct sched_change *ch, uint64_t at_ms, uint64_t job_id, const char *node,
                        const char *kind, const char *detail);
void sched_change_node(struct sched_change *ch, const struct sched_node *n);
/* A node became schedulable (up) or stopped being so, or entered or left a MAINT
 * reservation (maint), with its size: sreport's history. */
void sched_change_node_state(struct sched_change *ch, uint64_t at_ms, const char *node, bool up,
                             bool maint, uint32_t cores, uint32_t gpus);
/* A fair-share association's usage as of at_ms. */
void sched_change_usage(struct sched_change *ch, const char *account, const char *user,
                        double usage, uint64_t at_ms);
/* An advance reservation stored (spec: packed gs.Reservation, copied) or deleted (spec NULL). */
void sched_change_resv(struct sched_change *ch, const char *name, const void *spec, size_t len);
/* Queues the change (taking ownership); then(s, status, arg) runs after it is on disk. */
void sched_change_commit(struct sched_ctx *s, struct sched_change *ch, sched_change_fn then,
                         void *arg);
/* Opens the database under state_dir, loads nodes and jobs, starts the journal. */
int sched_persist_open(struct sched_ctx *s, struct gs_error *err);

/*
 * A job read back from the store (forgotten), outside the table: *ret from its row, to be
 * freed with sched_job_detached_free(). -EBADMSG when the row is malformed (its spec
 * unreadable, a state out of range), -ENOMEM. Then its tasks of the row's attempt and its
 * history lines, as at start.
 */
int sched_persist_job_detached(const struct sched_job_row *row, struct sched_job **ret);
int sched_persist_job_task(struct sched_ctx *s, struct sched_job *job,
                           const struct sched_task_row *row);
int sched_persist_job_event(struct sched_job *job, uint64_t at_ms, const char *kind,
                            const char *detail);
/* A job's step record (its current attempt's, step_acct.h) stored: its row as it is now. */
void sched_change_step(struct sched_change *ch, uint64_t job_id, const struct sched_step_acct *a);
/* A running srun step's packed gs.StepRecord stored (record malloc'd, owned by ch from here
 * on), or with record NULL its record deleted (sched_steps.c keeps steps over a restart). */
void sched_change_live_step(struct sched_change *ch, uint64_t job_id, uint32_t step,
                            uint8_t *record, size_t len);
/* A running step's task exit of rank stored (exit a malloc'd packed gs.TaskExit, owned by
 * ch from here on): a row of its own, so that a step's exits are written once each. */
void sched_change_live_exit(struct sched_change *ch, uint64_t job_id, uint32_t step, uint32_t rank,
                            uint8_t *exit, size_t len);

/* sched_purge.c: forgetting finished jobs (scheduler.min_job_age), and reading them back */
/*
 * A finished job with a submit key stays this long after its submit whatever min_job_age
 * says: a retried submit (the CLI retries for 30 s) must find its job, never queue another.
 */
#define SCHED_PURGE_KEY_HOLD_MS 60000
/* An array every element of which stays (one is unfinished, or a pending job depends on
 * its first element, which stands for them all); its elements' ids: id .. id + count - 1. */
struct sched_purge_array {
    uint64_t id;
    uint32_t count;
};
/* What keeps finished jobs in memory, sorted for binary search. */
struct sched_purge_pins {
    uint64_t *ids; /* jobs a pending job depends on, or a `gsched wait` waits for */
    size_t nids, capids;
    struct sched_purge_array *arrays;
    size_t narrays, caparrays;
};
/* The pins of the table as it is now. 0 or -ENOMEM (then release what was built). */
int sched_purge_pins_build(struct sched_ctx *s, struct sched_purge_pins *p);
bool sched_purge_pinned(const struct sched_purge_pins *p, const struct sched_job *job);
void sched_purge_pins_release(struct sched_purge_pins *p);
/* From the cron: forgets finished jobs that ended over min_job_age ago and nothing pins. */
void sched_purge_tick(struct sched_ctx *s);

/* sched_history_purge.c: old records deleted from the store (scheduler.purge_after) */
void sched_history_purge_tick(struct sched_ctx *s);
/* What to read back: jobs by id (each array's first id standing for its elements), or else
 * the most recent finished ones matching the filter. */
struct sched_stored_query {
    const uint64_t *ids;
    size_t nids;
    const char *name, *user; /* NULL or "": any */
    uint32_t states;         /* bit 1 << state; 0: any finished */
    uint32_t max;            /* at most this many jobs */
    bool with_history;       /* their events too (gsched show) */
    bool arrays;             /* by id: an array's first id brings its elements along */
    bool with_steps;         /* their step records too (sacct, sstat) */
};
/*
 * Jobs read back from the store: done gets them in id order (detached, freed after it
 * returns; those memory holds are left out) or status < 0 with why. The read runs on the
 * journal's writer thread; c is held (sched_cli_hold) until done, which answers with held.
 * 0, or < 0 when it could not start (done is then not called, c not held).
 */
typedef void (*sched_stored_fn)(struct sched_cli *c, uint64_t request_id, int status,
                                const char *why, struct sched_job *const *jobs, size_t n,
                                void *arg);
int sched_stored_read(struct sched_cli *c, uint64_t request_id, const struct sched_stored_query *q,
                      sched_stored_fn done, void *arg);

/* sched_query.c */
/* Whether job matches sel's name, user and states (finished: ended jobs may match). */
bool sched_job_selected(const struct sched_job *job, const Gs__JobSelector *sel, bool finished);
void sched_query_queue(struct sched_cli *c, uint64_t request_id, const Gs__QueueRequest *req);
void sched_query_show(struct sched_cli *c, uint64_t request_id, const Gs__ShowRequest *req);
void sched_query_wait(struct sched_cli *c, uint64_t request_id, const Gs__WaitRequest *req);
void sched_query_logs(struct sched_cli *c, uint64_t request_id, const Gs__LogsRequest *req);
/*
 * Job ids as a selector names them, with every element of an array whose first id is named
 * (Slurm: `scancel 123` is the whole array). *ret (free() it) keeps unknown ids too.
 */
int sched_expand_ids(struct sched_ctx *s, const uint64_t *ids, size_t n, uint64_t **ret,
                     size_t *ret_n);
/* The cluster's partitions (sbatch -p, sinfo). */
void sched_query_partitions(struct sched_cli *c, uint64_t request_id);
/* The cluster's licenses and what running jobs hold (scontrol show licenses). */
void sched_query_licenses(struct sched_cli *c, uint64_t request_id);
/* sched_diag.c: sdiag's counters (root may reset them), and a job's change counted (before:
 * the state last announced). */
void sched_query_diag(struct sched_cli *c, uint64_t request_id, const Gs__DiagRequest *req);
/* Slurm's default MaxArraySize: an array's task ids are 0..1000 (checked at submit). */
#define SCHED_MAX_ARRAY_SIZE 1001
/* sched_config_show.c: the settings gschedd runs with (scontrol show config). */
void sched_query_config(struct sched_cli *c, uint64_t request_id);
void sched_diag_job_changed(struct sched_ctx *s, const struct sched_job *job,
                            enum sched_job_state before);
/* A job changed state: answers the waits it completes, ends its steps unless it runs. */
void sched_query_job_changed(struct sched_ctx *s, struct sched_job *job);
/* A worker answered a forwarded request (LogsReply or ErrorReply); false if not ours. */
bool sched_query_worker_reply(struct sched_ctx *s, struct gs_proto_conn *worker,
                              const Gs__Envelope *env);
void sched_query_worker_gone(struct sched_ctx *s, struct gs_proto_conn *worker);
void sched_query_cli_gone(struct sched_cli *c);
/* The nodes of a job's allocation, as NodeAllocation messages (borrowing node names). */
struct sched_alloc_msg {
    Gs__NodeAllocation *nodes;
    char (*links)[GS_GPUSET_NAME_MAX];
    Gs__NodeAllocation **ptrs;
    size_t n;
};
int sched_alloc_msg_build(struct sched_ctx *s, const struct sched_job *job,
                          struct sched_alloc_msg *m);
void sched_alloc_msg_release(struct sched_alloc_msg *m);
/* JobState of a job (for the wire). */
Gs__JobState sched_job_wire_state(const struct sched_job *job);

/* Messages to workers that a job's launch (sched_launch.c) and its steps' share. */
/* sig and env (which carries it) for job_id's tasks; the caller sets step or all_steps. */
void sched_signal_tasks_msg(Gs__SignalTasks *sig, Gs__Envelope *env, uint64_t job_id,
                            uint32_t signum, Gs__EndReason why, const char *reason);
/*
 * The job's part of a LaunchTasks (id, name, attempt, who, master port, cluster, array,
 * grace), user and limits initialised and linked, borrowing from job; the caller adds the
 * allocation, world size, master address, run, environment, time limit and step.
 */
void sched_launch_msg_job(struct sched_ctx *s, const struct sched_job *job, Gs__LaunchTasks *lt,
                          Gs__UserIdentity *user, Gs__TaskLimits *limits);
/* The TaskRef an exit is acknowledged by; the TaskExitAck for it, through n's connection. */
void sched_task_ref_of(const Gs__TaskExit *ex, Gs__TaskRef *ref);
/* How a task's end counts (jobs.h) from the worker's reason. */
enum sched_task_end sched_task_end_of(Gs__EndReason r);
void sched_send_exit_ack(struct sched_node *n, Gs__TaskRef *ref);
/*
 * A node's ntasks tasks into tasks/ptrs (ntasks each), linked into lt: consecutive ranks
 * from na's first_rank; gpus_per_task GPUs each in order (0: every task sees all of the
 * node's, as torchrun's ranks do); cpus_per_task cores each in order (0: the node's cores
 * split evenly, unbound when there are fewer than tasks).
 */
void sched_node_tasks(const Gs__NodeAllocation *na, uint32_t ntasks, uint32_t cpus_per_task,
                      uint32_t gpus_per_task, Gs__TaskAssignment *tasks, Gs__TaskAssignment **ptrs,
                      Gs__LaunchTasks *lt);

#endif
