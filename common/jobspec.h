/*
 * jobspec.h: what a user asks for when submitting a job, as gsched holds it in memory, and
 * the reader of job files (`gsched submit job.toml`). docs/job-file.md documents the format.
 *
 * A job file is checked whole before anything is submitted: every unknown key (with a
 * suggestion for typos), wrong type and impossible value is reported as
 * "job.toml:LINE:COL: message", and any such problem means no spec is produced.
 * Cluster-dependent checks (more GPUs per node than any node has) belong to the scheduler.
 *
 * A struct gs_jobspec owns all its strings and arrays; gs_jobspec_free() releases them.
 * Not thread-safe; no global state.
 */
#ifndef GS_JOBSPEC_H
#define GS_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

enum gs_dep_type {
    GS_DEP_AFTER = 0,  /* once the other job has started */
    GS_DEP_AFTEROK,    /* once it completed with exit code 0 */
    GS_DEP_AFTERNOTOK, /* once it ended in failure (non-zero, timeout, node failure) */
    GS_DEP_AFTERANY,   /* once it ended, however */
    /* An array element: once the element of the other array with its own task id completed
     * with exit code 0 (Slurm's aftercorr); without one, afterok on the whole other job. */
    GS_DEP_AFTERCORR,
};

/* What job_id names: the job (an array's first element: the whole array), one element of
 * the array by its task id (Slurm's afterok:42_3), or the whole array explicitly (42_*). */
enum gs_dep_target {
    GS_DEP_JOB = 0,
    GS_DEP_TASK,
    GS_DEP_ARRAY,
};

/* sbatch --kill-on-invalid-dep: a pending job whose dependencies can never be met is
 * cancelled (yes) or waits (no); default: scheduler.kill_invalid_depend decides. */
enum gs_kill_invalid_dep {
    GS_KILL_INVALID_DEP_DEFAULT = 0,
    GS_KILL_INVALID_DEP_YES,
    GS_KILL_INVALID_DEP_NO,
};

/* How much a job cares which of a node's GPUs it gets ([placement] gpu_affinity). */
enum gs_gpu_affinity {
    GS_GPU_AFFINITY_PREFER = 0, /* the best-connected set free now (default) */
    GS_GPU_AFFINITY_STRICT,     /* wait for a set as well connected as an empty node gives */
    GS_GPU_AFFINITY_ANY,        /* any free GPUs */
};

/* What starts a job's ranks ([run] launcher). */
enum gs_launcher {
    GS_LAUNCHER_NONE = 0, /* the workers start every task (default) */
    GS_LAUNCHER_MPI,      /* one leader task on the first node: gsched mpirun -- command */
    GS_LAUNCHER_TORCHRUN, /* one task per node: torchrun --nnodes ... --node_rank R command */
};

/* When a job's dataset reaches its nodes' caches ([data] stage). */
enum gs_data_stage {
    GS_DATA_STAGE_BEFORE = 0, /* all of a node's shards cached before its tasks start */
    GS_DATA_STAGE_STREAM,     /* val shards before; the tasks start; train shards stream in */
};

#define GS_DATA_ID_SIZE 33 /* a dataset id, 32 lowercase hex digits, and its NUL */
#define GS_DATA_TOLERANCE_DEFAULT 0.05

/*
 * [data]: the dataset a job reads (docs/data.md). The job file names a dataset directory
 * (manifest); the CLI resolves it at submit as the submitting user, filling in the rest.
 */
#define GS_DATA_LOCALITY_WAIT_MAX 86400u /* a day */

struct gs_jobdata {
    char *manifest; /* as written: a dataset directory or its manifest.toml; NULL none */
    enum gs_data_stage stage;
    double tolerance; /* the shard planner's band, 0..1 (GS_DATA_TOLERANCE_DEFAULT) */
    uint64_t seed;    /* the planner's seed */
    /* How long it may wait for its data's busy nodes (scheduler.data_locality_wait, which
     * it replaces when set); at most GS_DATA_LOCALITY_WAIT_MAX. */
    bool locality_wait_set;
    uint32_t locality_wait_s;
    char id[GS_DATA_ID_SIZE]; /* resolved: "" until then */
    char *source;             /* resolved: the dataset directory, absolute */
    uint32_t shards;          /* resolved: shards its manifest lists */
    uint64_t bytes;           /* resolved: their files' bytes */
};

struct gs_dep {
    enum gs_dep_type type;
    uint64_t job_id;
    uint32_t delay_min; /* after only: minutes after the other job started */
    enum gs_dep_target target;
    uint32_t task_id; /* GS_DEP_TASK's */
};

#define GS_DEP_TEXT_SIZE 64 /* gs_dep_format's longest text and its NUL */

/*
 * A job array (sbatch --array). A submitted spec lists every task id; the scheduler makes
 * one job per id, each with array_job_id (the first element's job id), its task_id and the
 * summary Slurm exports, and task_ids released.
 */
struct gs_job_array {
    uint32_t *task_ids; /* submit only: sorted, distinct; NULL otherwise */
    size_t ntask_ids;
    uint32_t throttle; /* elements running at once; 0: no limit */
    uint64_t array_job_id;
    uint32_t task_id;
    uint32_t count, min, max, step;
};

/*
 * A further component of a heterogeneous job (sbatch's "#SBATCH hetjob"): the shape of its
 * own nodes and how many tasks they run. Component 0 is the spec's own fields; everything
 * else (script, time limit, partition, exclusivity, output, ...) is the whole job's.
 * Components get distinct nodes, all at once or none.
 */
struct gs_het_component {
    uint32_t nodes;
    uint32_t gpus_per_node;
    uint32_t cpus_per_gpu;  /* 0 when cpus_per_task is used */
    uint32_t cpus_per_task; /* 0 when cpus_per_gpu is used */
    uint64_t mem_per_node_mib;
    char *constraint; /* NULL: any node */
    uint32_t tasks_per_node;
    bool tasks_per_gpu;
    uint32_t ntasks; /* 0: nodes x tasks_per_node */
    uint32_t gpus_per_task;
};

#define GS_JOBSPEC_HET_MAX 64 /* components of one job, the first included */
#define GS_JOBSPEC_NAME_MAX 128
#define GS_JOBSPEC_PRIORITY_MAX 1000000
#define GS_JOBSPEC_NICE_MAX 1000000 /* as the priority; Slurm allows more */
#define GS_JOBSPEC_DEFAULT_STDOUT "gsched-%j-%t.out"
/* A step's threads_per_core (StepLaunchRequest) for every hardware thread of its cores, over
 * a job's own setting (srun --hint=multithread); 0 there is the job's. */
#define GS_STEP_THREADS_ALL 0xffffffffu
#define GS_JOBSPEC_NODES_MAX 100000
#define GS_JOBSPEC_GPUS_MAX 1024
#define GS_JOBSPEC_CPUS_MAX 4096 /* per GPU, per task, and tasks per node */
#define GS_JOBSPEC_RESTARTS_MAX 1000
#define GS_JOBSPEC_SWITCH_WAIT_MAX 86400 /* a day, in seconds */

/* A resource limit the job's tasks get as their soft limit (sbatch --propagate), by Slurm's
 * name (common/rlimit_names.h); UINT64_MAX is unlimited. */
struct gs_rlimit {
    char name[8];
    uint64_t soft;
};

/* A count of a cluster-wide license ([[license]] in gsched.toml) the job holds while it
 * runs: sbatch -L NAME:COUNT, a job file's resources.licenses (jobspec_license.h). */
struct gs_job_license {
    char *name; /* one word, as gs_jobspec_word_ok takes it */
    uint32_t count;
};

#define GS_JOBSPEC_LICENSES_MAX 16    /* licenses one job names */
#define GS_LICENSE_COUNT_MAX 1000000u /* of one license, in a job or in the cluster */

struct gs_jobspec {
    char *name;
    int32_t priority; /* higher runs first; -1e6..1e6; root only (gschedd refuses others) */
    int32_t nice;     /* lowers the priority; -GS_JOBSPEC_NICE_MAX..GS_JOBSPEC_NICE_MAX, < 0 root */
    uint64_t begin_ms;    /* not to start before this wall-clock time (sbatch --begin); 0: now */
    uint64_t deadline_ms; /* removed while pending once it could not end by then; 0: none */
    bool hold;            /* submitted held: waits for `gsched release` */
    struct gs_dep *deps;
    size_t ndeps;

    /* [resources] */
    uint32_t nodes;
    uint32_t gpus_per_node;
    uint32_t cpus_per_gpu;      /* 0 when cpus_per_task is used */
    uint32_t cpus_per_task;     /* 0 when cpus_per_gpu is used */
    uint64_t mem_per_node_mib;  /* 0: no memory request */
    uint64_t tmp_per_node_mib;  /* each node's TmpDisk at least (sbatch --tmp); 0: any */
    uint32_t min_cpus_per_node; /* cores each node gives the job at least (--mincpus) */
    bool overcommit;            /* one task's cores a node, its tasks share them (-O) */
    uint32_t threads_per_core;  /* hardware threads a task uses of each core; 0: all */
    uint64_t time_limit_s;      /* GS_DURATION_INFINITE when unlimited */
    bool exclusive;
    char *constraint; /* node features required (common/features.h), NULL for none */
    char *prefer;     /* node features preferred (sbatch --prefer; the same), NULL none */
    struct gs_job_license *licenses; /* distinct names; NULL, 0: none */
    size_t nlicenses;

    /* [mail]: what gschedd mails about (enum gs_mail_type bits; 0 none) and to whom
     * (NULL: the submitting user's name) */
    uint32_t mail_types;
    char *mail_user;

    /* [run] */
    char **argv; /* NULL-terminated; NULL when script is used */
    size_t argc;
    char *script; /* run with /bin/sh; NULL when argv is used */
    uint32_t tasks_per_node;
    bool tasks_per_gpu; /* tasks_per_node = "per-gpu" */
    char *workdir;
    char *stdout_pattern;      /* %j job id, %t task rank, %n node name, %x job name, %% */
    char *stderr_pattern;      /* NULL: same file as stdout */
    char *stdin_pattern;       /* each task's stdin (sbatch --input); NULL: /dev/null */
    struct gs_rlimit *rlimits; /* the submitting shell's soft limits (sbatch --propagate) */
    size_t nrlimits;
    /* Output files emptied when the job (each attempt) starts, where one task alone writes
     * each (Slurm's --open-mode=truncate, sbatch's default); false: appended to. */
    bool truncate_output;
    char **env; /* NULL-terminated "KEY=VALUE" strings, in file order */
    size_t nenv;
    enum gs_launcher launcher;

    /* [restart] */
    uint32_t max_restarts;

    /* [placement] */
    enum gs_gpu_affinity gpu_affinity;
    /* A multi-node job waits, up to switch_wait_s (when switch_wait_set, else the
     * scheduler's max_switch_wait, which also caps it), for nodes under at most this many
     * network switches ([[switch]]); then takes any (sbatch --switches=N@TIME). 0: any. */
    uint32_t switches;
    bool switch_wait_set;
    uint32_t switch_wait_s;

    /* Where it runs and who pays: job-file top-level keys, or sbatch's -p -A -q ... */
    char *partition; /* NULL: the cluster's default */
    char *account, *qos, *comment;
    char *wckey;       /* sbatch --wckey: recorded for accounting (sacct's WCKey); NULL none */
    char *clusters;    /* sbatch -M: must name this cluster (gschedd checks); NULL any */
    char *reservation; /* NULL: none (sbatch --reservation) */

    /* What Slurm batch scripts ask for (gsched sbatch); zero / NULL from a job file. */
    uint32_t ntasks;        /* tasks in all when not nodes x tasks_per_node; 0: that */
    uint32_t gpus_per_task; /* for srun's binding; 0: none */
    uint64_t time_min_s;    /* recorded; 0: none */
    char *source;           /* the job file or batch script's path, as submitted; NULL unknown */
    char **nodelist;        /* NULL-terminated node names the job must include, or NULL */
    size_t nnodelist;
    char **exclude; /* NULL-terminated node names it must not use, or NULL */
    size_t nexclude;
    bool batch; /* script runs once on the first node, argv its arguments */
    bool slurm; /* SLURM_* variables and Slurm output patterns */
    /* salloc's allocation: no task runs on a worker; set by gschedd only (sched_alloc.c) */
    bool allocation;
    char *submit_dir, *submit_host;
    uint32_t warn_signal; /* --signal: this signal warn_before_s before the time limit */
    uint32_t warn_before_s;
    bool warn_batch_only;
    bool depends_any; /* one dependency suffices */
    bool singleton;   /* one job of this name and user at a time */
    enum gs_kill_invalid_dep kill_invalid_dep;
    bool no_kill; /* sbatch -k: a batch job outlives a node other than its first failing */
    struct gs_job_array array;
    struct gs_jobdata data;
    /* A heterogeneous job's components after the first (owned), nhet of them; NULL, 0 for
     * an ordinary job. Only batch jobs and allocations have them (gs_jobspec_check). */
    struct gs_het_component *het;
    uint32_t nhet;
};

/* "before", "stream"; gs_data_stage_parse returns 0 or -EINVAL. */
const char *gs_data_stage_name(enum gs_data_stage stage);
int gs_data_stage_parse(const char *name, enum gs_data_stage *ret);
/* Defaults (no dataset, tolerance GS_DATA_TOLERANCE_DEFAULT); release frees the strings. */
void gs_jobdata_init(struct gs_jobdata *d);
void gs_jobdata_release(struct gs_jobdata *d);
/* Whether s is a dataset id: exactly 32 lowercase hex digits. */
bool gs_data_id_valid(const char *s);

/* A spec with the defaults of an empty job file (1 node, 1 task, 1 CPU, no time limit). */
struct gs_jobspec *gs_jobspec_new(void);
void gs_jobspec_free(struct gs_jobspec *spec);

/*
 * Reads a job file of len bytes. filename prefixes the messages. On success stores a new
 * spec in *ret_spec (the caller frees it) and returns 0. On failure returns -EINVAL (or
 * -ENOMEM) and appends one "FILE:LINE:COL: message\n" line per problem to errors.
 */
int gs_jobspec_parse_toml(const char *text, size_t len, const char *filename,
                          struct gs_jobspec **ret_spec, struct gs_buf *errors);

/*
 * Checks a spec built by other means than the job-file reader (received from a client,
 * converted from an sbatch script) against the same rules. Returns 0, or -EINVAL with
 * err->msg naming the field.
 */
int gs_jobspec_check(const struct gs_jobspec *spec, struct gs_error *err);

/*
 * Whether the job runs one leader task on its first node, which starts the rest itself: a
 * batch script (its srun steps) or a launcher (mpirun's ranks). The job ends with it.
 */
bool gs_jobspec_runs_leader(const struct gs_jobspec *spec);
/* "none", "mpi"; gs_launcher_parse returns 0 or -EINVAL. */
const char *gs_launcher_name(enum gs_launcher l);
int gs_launcher_parse(const char *name, enum gs_launcher *ret);

/* The most tasks one node runs (tasks_per_node, or gpus_per_node for per-gpu). Inline: the
 * planner asks it of every pending job in every pass. */
static inline uint32_t gs_jobspec_tasks_per_node(const struct gs_jobspec *s)
{
    if (s->tasks_per_gpu)
        return s->gpus_per_node > 0 ? s->gpus_per_node : 1;
    return s->tasks_per_node > 0 ? s->tasks_per_node : 1;
}

/*
 * The cores the job (or the component spec views) holds on each node: cpus_per_gpu x GPUs,
 * else cpus_per_task (1 when 0) x tasks, one task's with overcommit; min_cpus_per_node at
 * least. Inline, as gs_jobspec_tasks_per_node.
 */
static inline uint32_t gs_jobspec_cores_per_node(const struct gs_jobspec *s)
{
    uint32_t per_task = s->cpus_per_task > 0 ? s->cpus_per_task : 1;
    uint32_t cores = s->cpus_per_gpu > 0 ? s->cpus_per_gpu * s->gpus_per_node
                     : s->overcommit     ? per_task
                                         : per_task * gs_jobspec_tasks_per_node(s);

    return cores > s->min_cpus_per_node ? cores : s->min_cpus_per_node;
}
/* Tasks in all: ntasks, or nodes x tasks per node (summed over a heterogeneous job's
 * components). */
uint32_t gs_jobspec_ntasks(const struct gs_jobspec *spec);
/*
 * Tasks on the job's node-th node (0-based): ntasks spread as evenly as possible, the
 * first nodes taking one more (sbatch -n 7 -N 3: 3, 2, 2), else tasks per node; in a
 * heterogeneous job, as the node's component lays them out.
 */
uint32_t gs_jobspec_node_tasks(const struct gs_jobspec *spec, uint32_t node);

/*
 * Heterogeneous jobs (jobspec_het.c). Their allocation lists component 0's nodes first,
 * then component 1's, ...; a job's node index below counts over all of them.
 *
 * gs_jobspec_het_view: *view becomes spec as component k alone (its nodes, GPUs, CPUs,
 * memory, constraint and tasks; no further components), for the per-node rules above. The
 * view borrows spec's strings: never free it. k 0 (or an ordinary job) is spec itself.
 */
void gs_jobspec_het_view(const struct gs_jobspec *spec, uint32_t k, struct gs_jobspec *view);
/* Nodes, and GPUs, of all components together (nodes x gpus_per_node for an ordinary job). */
uint32_t gs_jobspec_total_nodes(const struct gs_jobspec *spec);
uint32_t gs_jobspec_total_gpus(const struct gs_jobspec *spec);
/* The job's node index of component k's first node. */
uint32_t gs_jobspec_het_first_node(const struct gs_jobspec *spec, uint32_t k);
/* The component the job's node-th node belongs to (0 for an ordinary job, and past the end). */
uint32_t gs_jobspec_het_of_node(const struct gs_jobspec *spec, uint32_t node);
/* Frees the components' strings and the array, leaving none. */
void gs_jobspec_het_clear(struct gs_jobspec *spec);
/* Checks the components (gs_jobspec_check calls it); 0, or -EINVAL with err naming one. */
int gs_jobspec_het_check(const struct gs_jobspec *spec, struct gs_error *err);

/* Job names: 1..GS_JOBSPEC_NAME_MAX characters, no '/', tab, CR or LF. */
bool gs_jobspec_name_ok(const char *name);
/*
 * Partition, account, QOS and reservation names as a job file takes them: 1 to
 * GS_JOBSPEC_NAME_MAX letters, digits, '_', '.' or '-' (no ',' lists, no spaces).
 */
bool gs_jobspec_word_ok(const char *word);
/* Environment variable names: letters, digits, '_', not starting with a digit. */
bool gs_jobspec_env_name_ok(const char *name, size_t len);
/* The first '%' of an output pattern that is not %j %t %n %x %u %%, or NULL. */
const char *gs_jobspec_bad_placeholder(const char *pattern);
/*
 * The same for a Slurm job (spec->slurm, sbatch's patterns): the first '%' that is not
 * %j %J %A %a %x %N %n %s %t %u or %%, each optionally zero-padded to a width ("%4a"), or NULL.
 */
const char *gs_jobspec_slurm_bad_placeholder(const char *pattern);

/* What the placeholders of an output pattern stand for, for one task. */
struct gs_pattern_vars {
    uint64_t job_id;
    uint32_t rank;
    const char *node;
    const char *job_name;
    const char *user;
    /* Slurm patterns (sbatch): %A %a %J %N %n as sbatch means them, widths ("%4a") */
    bool slurm;
    uint64_t array_job_id; /* 0: not an array element (%A is the job id, %a "4294967294") */
    uint32_t array_task_id;
    uint32_t node_rank; /* %n in Slurm: the node's index in the job */
    uint32_t step;      /* %J is JOBID.STEP for steps (step >= 1 is step step - 1), else JOBID */
};

/*
 * The vars of one task of spec's job: job_name and the Slurm fields from the spec, the rest
 * as given (node may be NULL). The vars borrow from spec.
 */
void gs_jobspec_pattern_vars(const struct gs_jobspec *spec, uint64_t job_id, uint32_t rank,
                             const char *node, uint32_t node_rank, const char *user,
                             struct gs_pattern_vars *ret);

/*
 * Appends pattern with its placeholders replaced: gsched's %j %t %n (node name) %x %u %%,
 * or with vars->slurm, sbatch's %A %a %j %J %N (node name) %n (node index) %s (step,
 * "batch" for the batch shell) %t %u %x %%.
 * Returns 0, -EINVAL (unknown %), -ENOMEM.
 */
int gs_jobspec_expand_pattern(const char *pattern, const struct gs_pattern_vars *vars,
                              struct gs_buf *out);

/*
 * Parses one dependency, TYPE:JOBID with TYPE one of after, afterok, afternotok, afterany,
 * aftercorr; JOBID_TASK names one array element, JOBID_* the whole array; after:JOBID+MIN
 * waits MIN minutes past the other job's start. Returns 0 or -EINVAL.
 */
int gs_dep_parse(const char *text, struct gs_dep *ret_dep);
/* Whether d is one gs_dep_parse could have made (as a decoded one must be). */
bool gs_dep_valid(const struct gs_dep *d);
/* d as gs_dep_parse reads it ("afterok:42_3", "after:41+10") into buf; returns buf. */
const char *gs_dep_format(const struct gs_dep *d, char buf[GS_DEP_TEXT_SIZE]);
const char *gs_dep_type_name(enum gs_dep_type type);
const char *gs_gpu_affinity_name(enum gs_gpu_affinity a); /* "prefer", "strict", "any" */

#endif
