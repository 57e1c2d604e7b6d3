/*
 * config.h: gsched.toml, the configuration the daemons and the CLI share on a real cluster
 * (/etc/gsched/gsched.toml, or --config FILE). `gsched up` needs none: it writes one for its
 * local cluster. Every key has a default, so an empty file is a valid configuration.
 *
 *     [scheduler]
 *     host = "10.0.0.1"             # where workers reach the scheduler (and it listens)
 *     port = 6817                           # 0: any free port (gschedd logs it)
 *     socket = "/run/gsched/gschedd.sock"   # the CLI's Unix socket
 *     cli_port = 0                          # > 0: TCP port for CLIs on login nodes, who
 *                                           # prove their uid with a MUNGE credential
 *     munge_socket = ""                     # munged's socket; "": libmunge's default
 *     state_dir = "/var/lib/gsched"         # SQLite database and logs
 *     heartbeat_interval = "2s"
 *     heartbeat_misses = 3                  # a node is DOWN after this many are missed
 *     kill_grace = "30s"                    # SIGTERM to SIGKILL
 *     log_level = "info"
 *     cluster_name = "gsched"               # SLURM_CLUSTER_NAME, sinfo/scontrol
 *     http = "127.0.0.1:6818"               # /metrics, /api/v1 and the status page;
 *                                           # "" turns it off; port 0: any free port
 *     idle_threshold = 5                    # % SM use under which an allocated GPU idles
 *     idle_window = "60s"                   # ... for this long before it is flagged
 *     max_connections = 1024                # CLI connections at once, in all
 *     max_connections_per_user = 64         # ... and from one uid
 *     request_timeout = "10s"               # a CLI connection without a request, or a
 *                                           # worker one without a registration, closes
 *     max_submit_jobs = 10000               # a user's jobs pending or running at once; 0: any
 *     fence_timeout = "5m"                  # > 0: a worker that hears nothing from gschedd
 *                                           # this long kills its tasks, and a lost node's
 *                                           # jobs move only after it (and a heartbeat)
 *     min_job_age = "5m"                    # a finished job leaves memory this long after
 *                                           # it ended (Slurm's MinJobAge); its rows stay:
 *                                           # show/sacct read them back. "0s": never
 *     purge_after = "0s"                    # > 0 (at least 1h): the database's records
 *                                           # of jobs that ended longer ago than this,
 *                                           # and older node history and events, are
 *                                           # deleted (slurmdbd's Purge*After); "0s":
 *                                           # kept for good
 *     data_locality = "tiebreak"            # a job's cached data in placement: among
 *                                           # equally fit nodes ("tiebreak"), before fit
 *                                           # ("prefer"), or "off" (docs/data.md)
 *     data_locality_wait = "0s"             # > 0: a job whose data's nodes are busy waits
 *                                           # for them this long before going elsewhere
 *     data_copy_rate = "0"                  # > 0 (MiB/s): ... or as long as copying the
 *                                           # data it lacks elsewhere would take, if less
 *     max_switch_wait = "5m"                # longest a job waits for its --switches count
 *                                           # (Slurm's max_switch_wait; at most a day)
 *     mpi_default = "none"                  # "pmix" or "pmi2": srun steps without --mpi
 *                                           # start under the workers' PMIx or PMI
 *                                           # servers (MpiDefault)
 *     backfill_depth = 1                    # blocked jobs, in priority order, that hold a
 *                                           # reservation backfill keeps: 1 is EASY, more
 *                                           # is conservative backfill (1-1000)
 *     mail_prog = "/usr/bin/mail"           # sends jobs' mail (sbatch --mail-type) as
 *                                           # PROG -s SUBJECT ADDRESS; "": none is sent
 *     kill_invalid_depend = false           # true: a pending job whose dependencies can
 *                                           # never be met is cancelled, not left waiting
 *     auth_key = "/etc/gsched/gsched.key"   # the cluster key gschedd and every worker
 *                                           # hold (root only, 0600; proto/auth.h); ""
 *                                           # leaves worker links unauthenticated
 *     [worker]
 *     name = "node7"                        # default: the host name
 *     address = "10.0.0.7"                  # MASTER_ADDR others use; default: host
 *     features = ["h100", "ib"]
 *     topology = "/etc/gsched/node.xml"     # hwloc XML instead of discovery
 *     gpus = 0                              # > 0: that many synthetic GPUs (testing)
 *     log_dir = "/var/lib/gsched/worker"    # the worker's state: its task ledger
 *     cli_socket = "/run/gsched/workerd.sock"  # the CLI's socket inside jobs on this node;
 *                                           # default: LOG_DIR/NAME.sock
 *     telemetry_interval = "1s"             # GPU (NVML) and CPU sampling; "0s": none
 *     allow_root_jobs = false               # run jobs of uid 0 (refused unless true)
 *     cgroups = "auto"                      # each job in its own cgroup: "auto", "v1",
 *                                           # "v2" or "off" (worker/cgroup.h)
 *     cgroup_parent = "gsched"              # ... under PARENT/NODE in the cgroup trees
 *     job_pids_max = 32768                  # each job's pids limit on a node; 0: none
 *     tmp_fs = "/tmp"                       # the file system whose size the node reports
 *                                           # as its TmpDisk (sbatch --tmp asks for it)
 *     data_dir = "/var/cache/gsched/data"   # the node's shard cache (docs/data.md);
 *                                           # unset: the node keeps none
 *     data_cap = "500G"                     # the most it holds; LRU shards go first
 *     data_rate = "200M"                    # staging copies per second; "0": no limit
 *     data_port = 7078                      # where peers fetch cached shards; 0: any
 *     data_copies = 2                       # staging copies at once (share data_rate)
 *     data_stall = "5m"                     # a copy whose bytes stop moving this long is
 *                                           # given up (its launch fails), freeing its place
 *     [[switch]]                            # the network, as Slurm's topology.conf says it:
 *     name = "leaf1"                        # multi-node jobs go under one switch when
 *     nodes = "node[1-16]"                  # they fit (a hostlist, or a list of them)
 *     [[partition]]                         # node groups jobs ask for (sbatch -p), as
 *     name = "gpu"                          # slurm.conf's PartitionName lines: nodes (a
 *     nodes = "node[1-8]"                   # hostlist or list; "ALL" or left out: every
 *     default = true                        # node), the default partition (else the
 *     max_time = "2d"                       # first), the longest time limit it allows
 *     idle_action = "flag"                  # a flagged idle GPU: "flag" (history, views,
 *                                           # metrics), "notify" (also a line in the job's
 *                                           # stderr), "cancel" or "requeue" the job once
 *     idle_grace = "30m"                    # it has idled this long (cancel/requeue only)
 *     priority_job_factor = 1               # its jobs' partition priority factor (the
 *                                           # largest of all partitions' is 1.0)
 *     [priority]                            # Slurm's priority/multifactor (docs/policy.md);
 *     weight_age = 1000                     # without any weight > 0 jobs go by root-set
 *     weight_fairshare = 10000              # priority minus nice, then submit order
 *     weight_job_size = 0
 *     weight_partition = 0
 *     max_age = "7d"                        # the age factor is 1 from this age on
 *     decay_half_life = "7d"                # usage halves every ...; "0s": never decays
 *     favor_small = false                   # true: the smallest jobs get job size 1
 *     billing_cpu = 1.0                     # usage charged per core-second,
 *     billing_gpu = 10.0                    # ... per GPU-second,
 *     billing_mem_gib = 0.0                 # ... per GiB-second
 *     [[account]]                           # the fair-share tree (sshare): accounts under
 *     name = "research"                     # "root" (implicit) or another account, each
 *     parent = "root"                       # entitled to shares / its siblings' shares of
 *     shares = 60                           # its parent's; users listed are members (the
 *     users = ["alice", "bob"]              # first account listing a user is the default)
 *     [[qos]]                               # qualities of service jobs ask for (sbatch -q,
 *     name = "urgent"                       # job file qos); without one a job is "normal"
 *     priority = 100                        # (limits only if [[qos]] defines it): the QOS
 *     tier = 1                              # priority factor; a pending job of a higher
 *     max_gpus_per_user = 16                # tier may preempt running jobs of lower tiers;
 *     max_jobs_per_user = 8                 # running jobs of one user (or account) in this
 *     max_gpus_per_account = 64             # QOS at most; 0: no limit. max_wall: the
 *     max_jobs_per_account = 0              # longest time limit a job of it may ask
 *     max_wall = "1d"
 *     preempt_mode = "requeue"              # Slurm's PreemptMode for its jobs as victims:
 *                                           # "requeue" (default), "cancel", "off" (never)
 *     users = ["alice"]                     # who may ask for it: these users and jobs of
 *     accounts = ["ml"]                     # these accounts or their sub-accounts (root
 *                                           # may use any QOS); neither: everyone
 *     [[license]]                           # a cluster-wide count jobs hold while they
 *     name = "matlab"                       # run (sbatch -L matlab:2, a job file's
 *     count = 10                            # resources.licenses): Slurm's Licenses=
 * Without [[partition]] there is one, "main", default, every node, no time limit.
 *
 * Errors name the place ("gsched.toml:4:8: scheduler.port must be an integer from 1 to
 * 65535") as for job files. The struct owns its strings; gs_config_release() frees them.
 */
#ifndef GS_CONFIG_H
#define GS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/log.h"

#define GS_CONFIG_DEFAULT_PATH "/etc/gsched/gsched.toml"
#define GS_CONFIG_MAX_FEATURES 16
#define GS_CONFIG_MAX_SWITCHES 4096

struct gs_config_switch_node; /* config_switch.c */

/* One network switch and the nodes under it ([[switch]]). */
struct gs_config_switch {
    char *name;
    char **nodes; /* expanded, NULL-terminated */
    size_t nnodes;
    int nodes_line, nodes_col; /* where nodes stands in the file */
};

/* What gschedd does about an allocated GPU flagged idle (partition.idle_action). */
enum gs_idle_action {
    GS_IDLE_FLAG = 0, /* record it: history, views, metrics */
    GS_IDLE_NOTIFY,   /* ... and tell the job's owner in its stderr */
    GS_IDLE_CANCEL,   /* ... and cancel the job after idle_grace */
    GS_IDLE_REQUEUE,  /* ... and requeue it after idle_grace */
};

/* A partition: a named group of nodes ([[partition]]). */
struct gs_config_partition {
    char *name;
    char **nodes; /* expanded, NULL-terminated; NULL: every node */
    size_t nnodes;
    bool is_default;
    uint64_t max_time_s; /* GS_DURATION_INFINITE: no limit */
    enum gs_idle_action idle_action;
    uint64_t idle_grace_s; /* cancel/requeue: idle this long after the flag; default 30 min */
    uint32_t priority_job_factor; /* default 1 */
};

/* [priority] (docs/policy.md). */
struct gs_config_priority {
    bool multifactor; /* any weight > 0: Slurm's multifactor; else root-set priority - nice */
    uint32_t weight_age, weight_fairshare, weight_job_size, weight_partition; /* default 0 */
    uint32_t weight_qos;                                                      /* default 0 */
    uint64_t max_age_s;                                                       /* default 7 days */
    uint64_t decay_half_life_s; /* default 7 days; 0: usage never decays */
    bool favor_small;           /* default false */
    double billing_cpu;         /* default 1.0 per core-second */
    double billing_gpu;         /* default 10.0 per GPU-second */
    double billing_mem_gib;     /* default 0.0 per GiB-second */
};

/* An account of the fair-share tree ([[account]]). "root" is implicit and cannot be defined. */
struct gs_config_account {
    char *name;
    char *parent;    /* "root" when not given */
    uint32_t shares; /* default 1; 0 allowed (entitled to nothing) */
    char **users;    /* NULL-terminated, possibly NULL */
    size_t nusers;
};

/* What becomes of a running job of a QOS that a higher tier's job preempts (Slurm's
 * PreemptMode, set on the preempted job's QOS; qos.preempt_mode). */
enum gs_preempt_mode {
    GS_PREEMPT_REQUEUE = 0, /* its tasks are ended and it queues again (default) */
    GS_PREEMPT_CANCEL,      /* its tasks are ended and it is CANCELLED */
    GS_PREEMPT_OFF,         /* never chosen as a victim */
};

/* A quality of service ([[qos]]); limits 0: none. */
struct gs_config_qos {
    char *name;
    uint32_t priority; /* 0..1e6: the QOS factor is it over the largest */
    uint32_t tier;     /* preemption: a higher tier may preempt a lower one; default 0 */
    enum gs_preempt_mode preempt_mode; /* what its jobs undergo as victims; default requeue */
    uint32_t max_gpus_per_user, max_jobs_per_user;       /* running, in this QOS */
    uint32_t max_gpus_per_account, max_jobs_per_account; /* running, in this QOS */
    uint64_t max_wall_s;                                 /* GS_DURATION_INFINITE: none */
    char **users; /* who may use it (NULL-terminated, possibly NULL); both empty: all */
    size_t nusers;
    char **accounts; /* ... and which accounts' jobs, sub-accounts included */
    size_t naccounts;
};

/* A cluster-wide license ([[license]]): count of it, which running jobs hold. */
struct gs_config_license {
    char *name;
    uint32_t count; /* 1..GS_LICENSE_COUNT_MAX */
};

#define GS_CONFIG_MAX_LICENSES 256

#define GS_CONFIG_MAX_QOS 256
#define GS_CONFIG_DEFAULT_QOS "normal"
#define GS_CONFIG_MAX_ACCOUNTS 4096
#define GS_CONFIG_ROOT_ACCOUNT "root"

#define GS_CONFIG_DEFAULT_IDLE_GRACE_S 1800
#define GS_CONFIG_DEFAULT_HTTP "127.0.0.1:6818"

#define GS_CONFIG_MAX_PARTITIONS 256
#define GS_CONFIG_DEFAULT_PARTITION "main"
#define GS_CONFIG_DEFAULT_CLUSTER "gsched"
#define GS_CONFIG_DEFAULT_AUTH_KEY "/etc/gsched/gsched.key"
#define GS_CONFIG_DEFAULT_MAIL_PROG "/usr/bin/mail"

/* scheduler.data_locality: what a job's data in the nodes' caches weighs in its placement. */
enum gs_data_locality {
    GS_DATA_LOCALITY_TIEBREAK = 0, /* among nodes equal in link class and fit (default) */
    GS_DATA_LOCALITY_PREFER,       /* before fit: a node holding more data beats a tighter fit */
    GS_DATA_LOCALITY_OFF,          /* not at all */
};

struct gs_config {
    /* [scheduler] */
    char *host;
    uint32_t port;
    char *socket_path;
    uint32_t cli_port;  /* login-node CLIs (MUNGE credentials, proto/cred.h); 0: none */
    char *munge_socket; /* NULL: libmunge's default socket */
    char *state_dir;
    uint64_t heartbeat_interval_ms;
    uint32_t heartbeat_misses;
    uint64_t kill_grace_ms;
    enum gs_log_level log_level;
    char *cluster_name;
    char *http_listen;                 /* "host:port"; NULL when turned off ("") */
    uint32_t idle_threshold_pct;       /* 0-100, default 5 */
    uint64_t idle_window_ms;           /* default 60 s */
    uint32_t max_connections;          /* CLI connections at once; default 1024 */
    uint32_t max_connections_per_user; /* default 64 */
    uint64_t request_timeout_ms;       /* default 10 s */
    char *auth_key;                    /* the cluster key's path; NULL when turned off ("") */
    char *mail_prog; /* run as PROG -s SUBJECT USER for a job's mail; NULL: none sent ("") */
    /* A pending job whose dependencies can never be met is cancelled (Slurm's
     * SchedulerParameters=kill_invalid_depend), unless it said --kill-on-invalid-dep=no */
    bool kill_invalid_depend;
    uint32_t max_submit_jobs;            /* per uid, pending or running; 0: no limit */
    uint64_t fence_timeout_ms;           /* default 5 min; 0: no fencing */
    uint64_t min_job_age_ms;             /* default 5 min; 0: finished jobs stay in memory */
    uint64_t purge_after_ms;             /* 0 (default): the store keeps every record */
    enum gs_data_locality data_locality; /* how placement weighs a job's cached data */
    uint32_t data_locality_wait_s;       /* how long a job may wait for its data's nodes */
    uint64_t data_copy_rate_mib; /* MiB/s a copy of data moves: the wait ends once as long as
                                  * the copy would take; 0: the wait is not weighed */
    uint32_t backfill_depth;     /* blocked jobs holding a reservation: 1 EASY, more conservative */
    uint32_t max_switch_wait_s;  /* a job's --switches wait, default and most (300 s) */
    char mpi_default[8];         /* srun steps without --mpi: "pmix", "pmi2"; "" none */
    /* [worker] */
    char *worker_name; /* NULL: the host name */
    char *worker_address;
    char **features; /* NULL-terminated */
    size_t nfeatures;
    char *topology_xml;
    uint32_t fake_gpus;
    char *worker_cpus; /* NULL: every CPU; else the OS CPU list the worker offers ("0-3") */
    char *log_dir;
    char *worker_cli_socket;        /* NULL: LOG_DIR/NAME.sock (worker/relay.h) */
    uint64_t telemetry_interval_ms; /* 0: no sampling; default 1 s */
    bool allow_root_jobs;           /* launch tasks as uid 0; default false */
    char *cgroups;                  /* "auto", "v1", "v2" or "off" */
    char *cgroup_parent;            /* default "gsched" */
    uint32_t job_pids_max;          /* default 32768; 0: none */
    char *data_dir;                 /* the shard cache; NULL: none */
    char *tmp_fs;                   /* whose size is the node's TmpDisk; NULL: /tmp */
    uint64_t data_cap_mib;          /* 0: no cap */
    uint64_t data_rate_mib;         /* MiB/s of staging copies; 0: no limit */
    uint32_t data_port;             /* 0: chosen by the kernel (reported to gschedd) */
    uint32_t data_copies;           /* staging copies at once; default 2 */
    uint32_t data_stall_s;          /* a copy stuck this long is given up; default 300 */
    /* [[switch]] */
    struct gs_config_switch *switches;
    size_t nswitches;
    struct gs_config_switch_node *switch_index; /* every switch's nodes, by name */
    size_t nswitch_index;
    /* [priority] and [[account]] */
    struct gs_config_priority priority;
    struct gs_config_account *accounts; /* in file order; parents are defined (checked) */
    size_t naccounts;
    struct gs_config_qos *qos; /* [[qos]], in file order */
    size_t nqos;
    struct gs_config_license *licenses; /* [[license]], in file order */
    size_t nlicenses;
    /* [[partition]]; at least one after gs_config_init (the implicit "main") */
    struct gs_config_partition *partitions;
    size_t npartitions;
    bool partitions_configured; /* false: partitions holds only the implicit "main" */
};

/*
 * The default partition (never NULL after gs_config_init or a parse that succeeded; a
 * failed one leaves the configuration unusable, as daemons then exit), or the one named,
 * or NULL.
 */
const struct gs_config_partition *gs_config_partition(const struct gs_config *cfg,
                                                      const char *name);
/* "flag", "notify", "cancel", "requeue". */
const char *gs_idle_action_name(enum gs_idle_action a);
/* "tiebreak", "prefer", "off" (scheduler.data_locality's words). */
const char *gs_data_locality_name(enum gs_data_locality l);

/* The license named, or NULL when not configured. */
const struct gs_config_license *gs_config_license(const struct gs_config *cfg, const char *name);

/* The account named, or NULL ("root" is not one: it has no entry). */
const struct gs_config_account *gs_config_account(const struct gs_config *cfg, const char *name);
/* The QOS named (NULL or "": "normal"), or NULL when not configured. */
const struct gs_config_qos *gs_config_qos(const struct gs_config *cfg, const char *name);
/* "requeue", "cancel" or "off". */
const char *gs_preempt_mode_name(enum gs_preempt_mode m);
/* The preempt_mode of the job's QOS (NULL or "": "normal"); requeue when not configured. */
enum gs_preempt_mode gs_config_qos_preempt_mode(const struct gs_config *cfg, const char *name);
/* Whether the QOS has access lists (users or accounts); false for NULL. */
bool gs_config_qos_restricted(const struct gs_config_qos *q);
/*
 * Whether a job of user and account (NULL or "": charged under root) may use the QOS: it
 * has no access lists, lists the user, or lists the account or one above it in the
 * [[account]] tree. Root's own exemption is the caller's to apply.
 */
bool gs_config_qos_admits(const struct gs_config *cfg, const struct gs_config_qos *q,
                          const char *user, const char *account);
/* "users a, b; accounts c" for a refusal message, shortened to fit size (> 0). */
void gs_config_qos_access_text(const struct gs_config_qos *q, char *out, size_t size);

/* The first account listing user, or NULL. */
const struct gs_config_account *gs_config_user_account(const struct gs_config *cfg,
                                                       const char *user);
/* Whether user is a member of the account (listed in its users). */
bool gs_config_account_has(const struct gs_config_account *a, const char *user);

/* Whether node belongs to the partition. */
bool gs_config_partition_has(const struct gs_config_partition *p, const char *node);

/* The index of the switch node is under (the first, if a bad file lists it twice), or -1.
 * A bisection of the file's nodes, as gschedd asks for each node that registers. */
int gs_config_switch_of(const struct gs_config *cfg, const char *node);

/* Fills cfg with the defaults. Returns 0 or -ENOMEM. */
int gs_config_init(struct gs_config *cfg);
void gs_config_release(struct gs_config *cfg);

/*
 * Reads a gsched.toml over the values already in cfg (call gs_config_init first). On a
 * problem returns -EINVAL with one "FILE:LINE:COL: message" line per problem in errors, and
 * cfg keeps its earlier values for the keys that were bad.
 */
int gs_config_parse(struct gs_config *cfg, const char *text, size_t len, const char *filename,
                    struct gs_buf *errors);

/*
 * What a daemon or the CLI reads: path when given (it must exist), else
 * GS_CONFIG_DEFAULT_PATH when that exists, else nothing (the defaults stand).
 */
int gs_config_load_default(struct gs_config *cfg, const char *path, struct gs_buf *errors);

/* Reads path and parses it. -ENOENT (with a message) when the file does not exist. */
int gs_config_load(struct gs_config *cfg, const char *path, struct gs_buf *errors);

#endif
