/*
 * sbatch.h: the options of a Slurm batch script, as sbatch reads them, so that `gsched sbatch`
 * can run existing scripts unchanged.
 *
 * Options come from two places, in this order of precedence:
 *   1. the command line: the arguments of `gsched sbatch` before the script name;
 *   2. the script: `#SBATCH` (or `#GSCHED`) lines, which must start in column 0 and come
 *      before the first command. Blank lines, the `#!` line and other comments may come
 *      before and between them; `#SBATCH` lines after the first command are ignored, with
 *      one warning that counts them, as sbatch ignores them.
 * Both use getopt_long's syntax: `--opt=value`, `--opt value`, `-N 2`, `-N2`, clustered
 * flags, unambiguous prefixes of long names (`--job=x`). In the script, values may be quoted
 * ("my job", 'a b') and `#` at the start of a word begins a comment.
 *
 * Parsing checks everything and reports every problem, one line each:
 *     run.sh:4: --gres=gpu:x: GPU count 'x' is not a number
 *     command line: --nodse=2: unknown option (did you mean --nodes?)
 * Any error means no struct gs_sbatch is produced. Options that do not change where or how
 * the job runs (--mail-type, --comment, ...) are accepted with a warning each.
 *
 * Within one source, the last occurrence of an option wins. An option given on the command
 * line replaces the script's; for options that exclude each other (--mem, --mem-per-cpu,
 * --mem-per-gpu; --cpus-per-task, --cpus-per-gpu) the command line's choice replaces the
 * script's whole group, and two of them in one source are an error.
 *
 * Heterogeneous jobs, as sbatch reads them: a directive line `#SBATCH hetjob` (or
 * `packjob`), the word alone, ends a component, and the directives after it describe the
 * next; on the command line a lone ":" word does the same. Component K is the script's
 * component K with the command line's component K over it. Only the options that shape
 * a component's nodes (gs_sbatch_opt_per_component) restart from their defaults in each
 * component; the others are the whole job's, given in component 0: repeated in a later
 * component with the same value they are accepted, with another value they are an error
 * at that line ("give it before the first 'hetjob' line"). -w/--nodelist and --array are
 * refused in a heterogeneous job, at the line that gives them.
 *
 * A struct gs_sbatch owns all its strings and arrays; gs_sbatch_free() releases them.
 * Pure functions of their input: no global state, any thread.
 */
#ifndef GS_SBATCH_H
#define GS_SBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "common/jobspec.h"

#define GS_SBATCH_ARRAY_MAX_IDS 100000 /* task ids one --array may expand to */
#define GS_SBATCH_ARRAY_ID_MAX 4000000 /* largest task id (Slurm's MaxArraySize limit) */
#define GS_SBATCH_GPU_TYPE_MAX 64      /* bytes of a GPU type name, with the NUL */
#define GS_SBATCH_SIGNAL_DEFAULT_S 60  /* --signal's warning time when @secs is left out */
#define GS_SBATCH_SIGNAL_MAX_S 65535
#define GS_SBATCH_NICE_DEFAULT 100 /* --nice without a value, as Slurm's */

/* Where an option's value came from. */
enum gs_sbatch_source {
    GS_SBATCH_UNSET = 0,
    GS_SBATCH_FROM_SCRIPT,
    GS_SBATCH_FROM_CLI,
};

/* One per option that changes the job; index of gs_sbatch.set_by. */
enum gs_sbatch_opt {
    GS_SBATCH_OPT_JOB_NAME = 0,
    GS_SBATCH_OPT_NODES,
    GS_SBATCH_OPT_NTASKS,
    GS_SBATCH_OPT_NTASKS_PER_NODE,
    GS_SBATCH_OPT_CPUS_PER_TASK,
    GS_SBATCH_OPT_CPUS_PER_GPU,
    GS_SBATCH_OPT_GRES,
    GS_SBATCH_OPT_GPUS,
    GS_SBATCH_OPT_GPUS_PER_NODE,
    GS_SBATCH_OPT_GPUS_PER_TASK,
    GS_SBATCH_OPT_GPU_BIND,
    GS_SBATCH_OPT_MEM,
    GS_SBATCH_OPT_MEM_PER_CPU,
    GS_SBATCH_OPT_MEM_PER_GPU,
    GS_SBATCH_OPT_TIME,
    GS_SBATCH_OPT_TIME_MIN,
    GS_SBATCH_OPT_PARTITION,
    GS_SBATCH_OPT_ACCOUNT,
    GS_SBATCH_OPT_QOS,
    GS_SBATCH_OPT_CONSTRAINT,
    GS_SBATCH_OPT_NODELIST,
    GS_SBATCH_OPT_EXCLUDE,
    GS_SBATCH_OPT_EXCLUSIVE,
    GS_SBATCH_OPT_OUTPUT,
    GS_SBATCH_OPT_ERROR,
    GS_SBATCH_OPT_CHDIR,
    GS_SBATCH_OPT_ARRAY,
    GS_SBATCH_OPT_DEPENDENCY,
    GS_SBATCH_OPT_REQUEUE, /* --requeue and --no-requeue */
    GS_SBATCH_OPT_SIGNAL,
    GS_SBATCH_OPT_EXPORT,
    GS_SBATCH_OPT_RESERVATION,
    GS_SBATCH_OPT_LICENSES,
    GS_SBATCH_OPT_GRES_FLAGS,
    GS_SBATCH_OPT_COMMENT,
    GS_SBATCH_OPT_HOLD,
    GS_SBATCH_OPT_TEST_ONLY,
    GS_SBATCH_OPT_WRAP,
    GS_SBATCH_OPT_PARSABLE,
    GS_SBATCH_OPT_NICE,
    GS_SBATCH_OPT_BEGIN,
    GS_SBATCH_OPT_DEADLINE,
    GS_SBATCH_OPT_OPEN_MODE,
    GS_SBATCH_OPT_MAIL_TYPE,
    GS_SBATCH_OPT_MAIL_USER,
    GS_SBATCH_OPT_KILL_ON_INVALID_DEP,
    GS_SBATCH_OPT_NTASKS_PER_GPU,
    GS_SBATCH_OPT_PRIORITY,
    GS_SBATCH_OPT_WAIT,
    GS_SBATCH_OPT_DISTRIBUTION,
    GS_SBATCH_OPT_TMP,
    GS_SBATCH_OPT_MINCPUS,
    GS_SBATCH_OPT_OVERCOMMIT,
    GS_SBATCH_OPT_MEM_BIND,
    GS_SBATCH_OPT_WCKEY,
    GS_SBATCH_OPT_INPUT,
    GS_SBATCH_OPT_QUIET,
    GS_SBATCH_OPT_VERBOSE,
    GS_SBATCH_OPT_WAIT_ALL_NODES,
    GS_SBATCH_OPT_PROPAGATE,
    GS_SBATCH_OPT_USE_MIN_NODES,
    GS_SBATCH_OPT_PREFER,
    GS_SBATCH_OPT_CLUSTERS,
    GS_SBATCH_OPT_NTASKS_PER_CORE,
    GS_SBATCH_OPT_NO_KILL,
    GS_SBATCH_OPT_THREADS_PER_CORE,
    GS_SBATCH_OPT_SWITCHES,
    GS_SBATCH_OPT_COUNT,
};

/* A GPU request: "[type:]N" of --gpus*, or the gpu entry of --gres. */
struct gs_sbatch_gpus {
    char type[GS_SBATCH_GPU_TYPE_MAX]; /* "" for any type */
    uint32_t count;
};

/* --array: sorted, distinct task ids, and how many may run at once (0: no limit). */
struct gs_sbatch_array {
    uint32_t *ids;
    size_t n;
    uint32_t throttle;
};

/* One term of --dependency: TYPE:JOBID (one per job id of "afterok:1:2"), or singleton. */
struct gs_sbatch_dep_term {
    bool singleton;    /* then dep is unused */
    struct gs_dep dep; /* type, job (or array task) and after's +MIN */
};

/* How the terms combine: ',' needs all of them, '?' any one (sbatch allows only one kind). */
enum gs_sbatch_dep_op {
    GS_SBATCH_DEP_ALL = 0,
    GS_SBATCH_DEP_ANY,
};

struct gs_sbatch_deps {
    enum gs_sbatch_dep_op op;
    struct gs_sbatch_dep_term *terms;
    size_t n;
};

/* --signal=[B:|R:]SIG[@secs]: send signo seconds before the time limit. */
struct gs_sbatch_signal {
    int signo;
    uint32_t seconds;
    bool batch_only;          /* B: only the batch shell, not the job's steps */
    bool reservation_overlap; /* R: may overlap a reservation (accepted, not acted on) */
};

enum gs_sbatch_export_mode {
    GS_SBATCH_EXPORT_ALL = 0, /* the submitting environment, plus vars */
    GS_SBATCH_EXPORT_NONE,    /* only vars (and gsched's own SLURM_* variables) */
};

struct gs_sbatch_export {
    enum gs_sbatch_export_mode mode;
    char **vars; /* NULL-terminated "NAME" (take its value at submission) or "NAME=value" */
    size_t n;
};

/*
 * Everything sbatch options can say about a job. A field means something only when
 * set_by[its option] is not GS_SBATCH_UNSET; unset fields are zero / NULL.
 */
struct gs_sbatch {
    enum gs_sbatch_source set_by[GS_SBATCH_OPT_COUNT];

    char *script_name; /* as given to gs_sbatch_parse; NULL with --wrap */
    char *wrap;        /* --wrap's command; then there is no script */
    char *job_name;

    uint32_t nodes_min, nodes_max; /* -N N gives min = max = N */
    uint32_t ntasks, ntasks_per_node, cpus_per_task, cpus_per_gpu;
    uint32_t ntasks_per_gpu;    /* --ntasks-per-gpu: tasks per GPU, bound to it (single:N) */
    struct gs_sbatch_gpus gres; /* --gres gpu entry (per node); count 0 if none was named */
    bool gres_other;            /* --gres named resources other than gpu (ignored) */
    struct gs_sbatch_gpus gpus, gpus_per_node, gpus_per_task;
    char *gpu_bind;
    char *distribution; /* -m, checked (common/task_dist.h): SLURM_DISTRIBUTION for srun */
    char *mem_bind;     /* --mem-bind, checked (common/mem_bind.h): SLURM_MEM_BIND for srun */
    uint64_t mem_mib;   /* --mem per node; 0 with set_by[MEM] set: all of each node's memory */
    uint64_t mem_per_cpu_mib, mem_per_gpu_mib;
    uint64_t tmp_mib;                  /* --tmp: each node's TmpDisk at least (MiB) */
    uint32_t mincpus;                  /* --mincpus: cores each node gives the job at least */
    bool overcommit;                   /* -O: one task's cores a node */
    uint64_t time_limit_s, time_min_s; /* GS_DURATION_INFINITE for unlimited */

    char *partition, *account, *qos, *constraint, *reservation, *licenses, *gres_flags;
    char *comment;            /* recorded with the job and shown */
    char *wckey;              /* recorded with the job (sacct WCKey) */
    char *prefer;             /* --prefer: a feature its nodes should have, when free ones do */
    char *clusters;           /* -M: checked by gschedd against its cluster_name */
    uint32_t ntasks_per_core; /* --ntasks-per-core: 1, what gsched always gives */
    char *nodelist;           /* the expression as given; nodelist_names its expansion */
    char **nodelist_names;
    size_t nodelist_n;
    char *exclude;
    char **exclude_names;
    size_t exclude_n;
    bool exclusive;

    char *output, *error, *chdir; /* output patterns checked for known placeholders */
    char *input;                  /* -i: the batch script's stdin (a pattern, as -o) */
    struct gs_sbatch_array array;
    struct gs_sbatch_deps deps;
    bool requeue; /* true: --requeue, false: --no-requeue */
    struct gs_sbatch_signal signal;
    struct gs_sbatch_export export_env;
    bool hold, test_only;
    int32_t nice;         /* --nice[=N]: N, or GS_SBATCH_NICE_DEFAULT without a value */
    int32_t priority;     /* --priority=N (root's: gschedd refuses others) */
    bool wait;            /* -W/--wait in the script: sbatch waits for the job's end */
    uint64_t begin_ms;    /* --begin: not to start before this wall-clock time (ms) */
    uint64_t deadline_ms; /* --deadline: to be removed once it could not end by then (ms) */
    bool parsable;        /* print only the job id (for JOBID=$(sbatch --parsable ...)) */
    bool quiet;           /* -Q: no "Submitted batch job", no warnings: errors only */
    bool verbose;         /* -v: the options as read, on stderr, before submitting */
    bool wait_all_nodes;  /* --wait-all-nodes=1: always met (a job starts on up nodes) */
    bool use_min_nodes;   /* --use-min-nodes: what gsched does anyway with -N MIN-MAX */
    bool no_kill;         /* -k: the job outlives a node other than its first failing */
    /* --switches=N[@TIME]: at most N network switches, waited for up to TIME (wait_set) */
    struct {
        uint32_t count;
        bool wait_set;
        uint32_t wait_s;
    } switches;
    uint32_t threads_per_core; /* --threads-per-core, --hint=[no]multithread; 0: all */
    uint32_t propagate;        /* --propagate: bit i for gs_rlimit_name(i), the shell's to pass */
    bool open_append;          /* --open-mode=append; truncate (Slurm's default) otherwise */
    enum gs_kill_invalid_dep kill_invalid_dep; /* --kill-on-invalid-dep=yes|no */
    uint32_t mail_types;                       /* --mail-type (common/jobspec_mail.h bits) */
    char *mail_user;                           /* --mail-user */

    /*
     * A heterogeneous job's further components, nhet of them (het[k - 1] is component k;
     * this struct is component 0). Each is a struct of its own with only per-component
     * options set (set_by says which; its script_name and het are NULL). NULL, 0 for an
     * ordinary job.
     */
    struct gs_sbatch *het;
    size_t nhet;
};

/* Whether option id describes one component of a heterogeneous job (nodes, tasks, CPUs,
 * GPUs, memory, constraint) rather than the whole job. */
bool gs_sbatch_opt_per_component(enum gs_sbatch_opt id);

/*
 * Where the script name is in argv (the arguments after "sbatch"): the index of the first
 * argument that is not an option or an option's value, after a "--" if there is one; argc
 * when there is none (the script then comes from stdin, or --wrap is used). Unknown options
 * are taken as flags here; gs_sbatch_parse reports them.
 */
int gs_sbatch_script_index(int argc, char *const *argv);

/*
 * The options the parser takes, from its own table, into out as the lines of a help text:
 * "  -J, --job-name=VALUE", "  --overcommit"... in the table's order (each once), then
 * those accepted and only warned about, and those refused by name. 0 or -ENOMEM.
 */
int gs_sbatch_options_help(struct gs_buf *out);

/*
 * Parses the directives of script_text (len bytes; NULL when there is no script, as with
 * --wrap) and the options in argv[0..argc) (the command line before the script; a trailing
 * "--" is allowed). script_name prefixes messages about the script ("run.sh:4: ...").
 * On success stores a new struct in *ret (the caller frees it with gs_sbatch_free) and
 * returns 0. Otherwise returns -EINVAL (or -ENOMEM) and appends one line per problem to
 * errors. Warnings go to warnings either way. errors and warnings may be NULL.
 */
int gs_sbatch_parse(const char *script_text, size_t len, const char *script_name, int argc,
                    char *const *argv, struct gs_sbatch **ret, struct gs_buf *errors,
                    struct gs_buf *warnings);
void gs_sbatch_free(struct gs_sbatch *sb);

/*
 * Appends the request as "key=value\n" lines, set options only, values in canonical form;
 * then each further component's as "hetK.key=value" lines. Returns 0 or -ENOMEM.
 */
int gs_sbatch_to_kv(const struct gs_sbatch *sb, struct gs_buf *out);

/*
 * The value parsers on their own. Each returns 0, or -EINVAL with err->msg saying what is
 * wrong (-ENOMEM for allocation), and writes its result only on success.
 */

/* "0-15", "1,3,7-9", "0-15:4", each with an optional "%N" throttle. Free with _array_release. */
int gs_sbatch_parse_array(const char *text, struct gs_sbatch_array *ret, struct gs_error *err);
void gs_sbatch_array_release(struct gs_sbatch_array *array);

/* "gpu", "gpu:4", "gpu:a100:4", and comma lists of gres where only the gpu entry counts. */
int gs_sbatch_parse_gres(const char *text, struct gs_sbatch_gpus *ret, bool *ret_other,
                         struct gs_error *err);

/*
 * Splits [p, end) into words as a #SBATCH line's are split: blanks separate, '...' and "..."
 * group (without escapes), a word starting with '#' starts a comment. *ret_words is
 * NULL-terminated (gs_sbatch_words_free). Returns 0, -EINVAL with err (a quote left open),
 * or -ENOMEM. srun --multi-prog's lines are split the same way.
 */
int gs_sbatch_split_words(const char *p, const char *end, char ***ret_words, size_t *ret_n,
                          struct gs_error *err);
void gs_sbatch_words_free(char **words);

/* "[type:]N" of --gpus, --gpus-per-node, --gpus-per-task; N at least 1. */
int gs_sbatch_parse_gpus(const char *text, struct gs_sbatch_gpus *ret, struct gs_error *err);

/*
 * --begin's TIME at now_ms (wall clock, ms) into *ret_ms, as Slurm reads it: "now",
 * "now+N[seconds|minutes|hours|days|weeks]" (seconds without a unit), "HH:MM[:SS]" (today,
 * or tomorrow when that has passed), "YYYY-MM-DD[THH:MM[:SS]]", "midnight", "noon",
 * "teatime" (16:00), "today", "tomorrow"; local time.
 */
int gs_sbatch_parse_begin(const char *text, uint64_t now_ms, uint64_t *ret_ms,
                          struct gs_error *err);

/* "[B:|R:|BR:]SIG[@secs]", SIG a number or a name with or without "SIG" ("USR1", "SIGTERM"). */
int gs_sbatch_parse_signal(const char *text, struct gs_sbatch_signal *ret, struct gs_error *err);

/*
 * "afterok:1:2,afterany:3", "afterok:1?afternotok:2", "after:5+10", "singleton".
 * Free with gs_sbatch_deps_release.
 */
int gs_sbatch_parse_dependency(const char *text, struct gs_sbatch_deps *ret, struct gs_error *err);
void gs_sbatch_deps_release(struct gs_sbatch_deps *deps);

/* "ALL", "NONE", "[ALL,|NONE,]VAR=val,VAR". Free with gs_sbatch_export_release. */
int gs_sbatch_parse_export(const char *text, struct gs_sbatch_export *ret, struct gs_error *err);
void gs_sbatch_export_release(struct gs_sbatch_export *exp);

#endif
