/*
 * srun_args.c: srun's side of the command line (see srun.h). Slurm's option syntax
 * (getopt-style, stopping at the command, because batch scripts pass srun options as they
 * would to Slurm), the options a step here ignores but scripts commonly pass, --export's
 * reading of srun's environment, and the StepLaunchRequest they all become. Everything
 * wrong is said as "srun: error: ..."; cmd_srun.c exits 1 on it.
 */
#include "slurm/alloc.h"
#include "slurm/sbatch.h"
#include "slurm/srun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/args.h"
#include "common/cpu_bind.h"
#include "common/error.h"
#include "common/gpu_bind.h"
#include "common/hostlist.h"
#include "common/jobspec.h"
#include "common/mem_bind.h"
#include "common/path.h"
#include "common/task_dist.h"
#include "common/units.h"

extern char **environ;

enum srun_kind { FLAG, VALUE };

enum srun_id {
    O_NODES = 2,
    O_NTASKS,
    O_TPN,
    O_CPT,
    O_GPT,
    O_GPUS,
    O_GPN,
    O_GRES,
    O_CHDIR,
    O_NAME,
    O_LABEL,
    O_NODELIST,
    O_JOBID,
    O_EXPORT,
    O_UNBUFFERED,
    O_MPI,
    O_KILL_BAD,
    O_IMMEDIATE, /* -I[S], --immediate[=S]: outside a job, the allocation's wait */
    O_EXACT,
    O_EXCLUSIVE,
    O_OVERLAP,
    O_OUTPUT,
    O_ERROR,
    O_HELP,
    O_INPUT,
    O_PTY,
    O_OPEN_MODE,
    O_GPU_BIND,
    O_HET_GROUP,
    O_DISTRIBUTION,
    O_CPU_BIND,
    O_MULTI_PROG,
    O_MEM_BIND,
    O_THREADS,
    O_HINT,
    O_NTASKS_PER_CORE,
    O_NTASKS_PER_GPU,
    O_CPUS_PER_GPU,
    O_TIME,
    O_WAIT,
    O_IGNORED_FLAG,  /* accepted, no effect here (--quiet, --verbose) */
    O_IGNORED_VALUE, /* accepted with its value, no effect in a step (--mem, -t, -p ...) */
};

struct srun_opt {
    const char *name; /* long name without "--" */
    char alias;       /* short letter, or 0 */
    enum srun_kind kind;
    enum srun_id id;
};

static const struct srun_opt srun_opts[] = {
    {"nodes", 'N', VALUE, O_NODES},
    {"ntasks", 'n', VALUE, O_NTASKS},
    {"ntasks-per-node", 0, VALUE, O_TPN},
    {"cpus-per-task", 'c', VALUE, O_CPT},
    {"gpus-per-task", 0, VALUE, O_GPT},
    {"gpus", 'G', VALUE, O_GPUS},
    {"gpus-per-node", 0, VALUE, O_GPN},
    {"chdir", 'D', VALUE, O_CHDIR},
    {"job-name", 'J', VALUE, O_NAME},
    {"label", 'l', FLAG, O_LABEL},
    {"nodelist", 'w', VALUE, O_NODELIST},
    {"jobid", 0, VALUE, O_JOBID},
    {"export", 0, VALUE, O_EXPORT},
    {"unbuffered", 'u', FLAG, O_UNBUFFERED},
    {"mpi", 0, VALUE, O_MPI},
    {"kill-on-bad-exit", 'K', FLAG, O_KILL_BAD},
    {"immediate", 'I', FLAG, O_IMMEDIATE},
    {"output", 'o', VALUE, O_OUTPUT},
    {"error", 'e', VALUE, O_ERROR},
    {"input", 'i', VALUE, O_INPUT},
    {"pty", 0, FLAG, O_PTY},
    {"open-mode", 0, VALUE, O_OPEN_MODE},
    {"help", 'h', FLAG, O_HELP},
    {"usage", 0, FLAG, O_HELP},
    /* What scripts commonly pass and a step here needs no action for. */
    {"cpu-bind", 0, VALUE, O_CPU_BIND},
    {"cpu_bind", 0, VALUE, O_CPU_BIND},
    {"mem-bind", 0, VALUE, O_MEM_BIND},
    {"multi-prog", 0, FLAG, O_MULTI_PROG},
    {"mem_bind", 0, VALUE, O_MEM_BIND},
    {"gpu-bind", 0, VALUE, O_GPU_BIND},
    {"het-group", 0, VALUE, O_HET_GROUP},
    {"pack-group", 0, VALUE, O_HET_GROUP}, /* its name before Slurm 20.02 */
    {"distribution", 'm', VALUE, O_DISTRIBUTION},
    {"threads-per-core", 0, VALUE, O_THREADS},
    {"hint", 0, VALUE, O_HINT},
    {"ntasks-per-core", 0, VALUE, O_NTASKS_PER_CORE},
    {"ntasks-per-gpu", 0, VALUE, O_NTASKS_PER_GPU},
    {"cpus-per-gpu", 0, VALUE, O_CPUS_PER_GPU},
    {"mem", 0, VALUE, O_IGNORED_VALUE},
    {"mem-per-cpu", 0, VALUE, O_IGNORED_VALUE},
    {"mem-per-gpu", 0, VALUE, O_IGNORED_VALUE},
    {"time", 't', VALUE, O_TIME},
    {"wait", 'W', VALUE, O_WAIT},
    {"gres", 0, VALUE, O_GRES},
    /* Inside a job these are the job's already; outside one, srun's allocation's. */
    {"partition", 'p', VALUE, O_IGNORED_VALUE},
    {"account", 'A', VALUE, O_IGNORED_VALUE},
    {"qos", 'q', VALUE, O_IGNORED_VALUE},
    {"reservation", 0, VALUE, O_IGNORED_VALUE},
    {"exclude", 'x', VALUE, O_IGNORED_VALUE},
    {"constraint", 'C', VALUE, O_IGNORED_VALUE},
    {"switches", 0, VALUE, O_IGNORED_VALUE},
    {"mail-type", 0, VALUE, O_IGNORED_VALUE},
    {"mail-user", 0, VALUE, O_IGNORED_VALUE},
    {"exact", 0, FLAG, O_EXACT},
    {"exclusive", 0, FLAG, O_EXCLUSIVE},
    {"overlap", 0, FLAG, O_OVERLAP},
    {"quiet", 'Q', FLAG, O_IGNORED_FLAG},
    {"verbose", 'v', FLAG, O_IGNORED_FLAG},
    {NULL, 0, FLAG, 0},
};

static const char srun_usage[] =
    "Usage: srun [OPTIONS] COMMAND [ARGS...]   (a step of a job allocation)\n"
    "  -N, --nodes=N            nodes of the job to use (default: all)\n"
    "  -n, --ntasks=N           tasks in all (default: the job's layout)\n"
    "      --ntasks-per-node=N  at most N tasks on each node\n"
    "  -c, --cpus-per-task=N    cores per task (default: the node's cores split)\n"
    "      --gpus-per-task=N    GPUs per task (default: every task sees its node's GPUs)\n"
    "  -G, --gpus=N             GPUs for the whole step, spread over its nodes\n"
    "      --gpus-per-node=N    GPUs on each node of the step\n"
    "      --gres=gpu[:TYPE]:N  the same (other gres are not scheduled); none: no GPU\n"
    "      --ntasks-per-gpu=K   K tasks for each of the step's GPUs on each node, each K\n"
    "                           bound to one GPU (-n: at most that many)\n"
    "      --cpus-per-gpu=C     C cores for each of the step's GPUs on each node, split\n"
    "                           between its tasks there (as --exact)\n"
    "      --exact, --exclusive hold only ntasks x cpus-per-task cores (default: all of\n"
    "                           the job's cores on each node), so steps run side by side\n"
    "      --overlap            hold nothing: run beside the job's other steps\n"
    "  -w, --nodelist=LIST      only these of the job's nodes (a hostlist)\n"
    "  -D, --chdir=DIR          the tasks' working directory (default: the current one)\n"
    "  -J, --job-name=NAME      the step's name\n"
    "  -l, --label              put the task's rank before each output line\n"
    "  -u, --unbuffered         pass output on as it comes, not line by line\n"
    "  -K, --kill-on-bad-exit   end the step when a task exits non-zero\n"
    "      --export=ALL|NONE|VARS  which of srun's variables the tasks get (default ALL)\n"
    "      --jobid=ID           the job (default: $SLURM_JOB_ID)\n"
    "      --het-group=LIST     a heterogeneous job's components to run on (0,2 or 0-1;\n"
    "                           default 0), each with its own layout, ranks across them\n"
    "      --cpu-bind=[verbose,]TYPE\n"
    "                           which of its node's step cores each task is bound to:\n"
    "                           cores (default), none, sockets, ldoms, rank, rank_ldom,\n"
    "                           map_cpu:L, mask_cpu:L, map_ldom:L, mask_ldom:L\n"
    "                           (default: $SLURM_CPU_BIND)\n"
    "      --mem-bind=[verbose,][prefer,]TYPE\n"
    "                           each task's memory: none, local (its cores' NUMA nodes),\n"
    "                           rank, map_mem:L, mask_mem:L (default: prefer its cores'\n"
    "                           NUMA nodes; $SLURM_MEM_BIND)\n"
    "      --threads-per-core=N the tasks use the first N hardware threads of each core\n"
    "      --hint=TYPE          nomultithread (as --threads-per-core=1), multithread or\n"
    "                           compute_bound (every thread of the cores); memory_bound\n"
    "                           is warned about (default: the job's, sbatch's)\n"
    "      --ntasks-per-core=1  what every task gets: cores of its own\n"
    "  -t, --time=TIME          the step's time limit (within the job's)\n"
    "  -W, --wait=S             end the step S seconds after its first task exited\n"
    "  -I, --immediate[=S]      outside a job: give up unless the allocation comes within\n"
    "                           S seconds (1 without S); inside one, accepted\n"
    "      --multi-prog         the command is a file of RANKS PROGRAM ARGS lines (MPMD):\n"
    "                           each task runs its line, %t its rank, %o its offset\n"
    "      --mpi=pmix|pmi2|none pmix: the tasks start under their workers' PMIx servers, so\n"
    "                           MPI programs run without mpirun; pmi2: under their PMI\n"
    "                           servers (MPICH, libpmi2); default: $SLURM_MPI_TYPE, else\n"
    "                           the cluster's scheduler.mpi_default; list: the types\n";
/* In parts: C99 promises string literals of 4095 bytes only. */
static const char srun_usage_io[] =
    "  -i, --input=MODE         srun's stdin to every task (all, the default), to one\n"
    "                           (a task id), to none (none); or a FILE each task reads\n"
    "                           where it runs (a pattern, as below)\n"
    "      --pty                task 0 under a pseudo-terminal, this one in raw mode\n"
    "  -o, --output=MODE / -e, --error=MODE\n"
    "                           the tasks' stdout / stderr: all (the default), none, a task\n"
    "                           id (that task's only), or FILE, which srun writes: %j job,\n"
    "                           %J job.step, %s step, %t task, %n node index, %N node, %u\n"
    "                           user, %x job name, %A %a array, %% (widths: %4t); -e not\n"
    "                           given, stderr goes where -o says\n"
    "      --open-mode=append|truncate  FILE's (default truncate)\n";
static const char srun_usage_layout[] =
    "  -m, --distribution=NODES[:SOCKETS]\n"
    "                           ranks over the nodes: block (default), cyclic, plane=N,\n"
    "                           arbitrary (in $SLURM_HOSTFILE's or -w's order); cores\n"
    "                           over each node's sockets: cyclic (default), block, fcyclic\n"
    "                           (default: $SLURM_DISTRIBUTION, as sbatch -m sets it)\n"
    "Outside a job srun first asks for an allocation (as salloc does) with -N -n\n"
    "--ntasks-per-node -c --*-per-gpu --gpus* --gres -w -J and -t -p -A -q -x -C\n"
    "--switches --mem*, "
    "runs the step in it, then releases it.\n";

/* --- options ------------------------------------------------------------------------------- */

static int number(const char *opt, const char *text, uint32_t *ret)
{
    uint64_t n;
    char first[32];
    const char *dash = strchr(text, '-');

    /* -N MIN-MAX: gsched takes the minimum, the only count a fixed allocation can give. */
    if (dash != NULL && dash != text && (size_t)(dash - text) < sizeof(first)) {
        memcpy(first, text, (size_t)(dash - text));
        first[dash - text] = '\0';
        text = first;
    }
    if (cli_parse_u64(text, &n) < 0 || n == 0 || n > UINT32_MAX) {
        fprintf(stderr, "srun: error: invalid %s value '%s'\n", opt, text);
        return -EINVAL;
    }
    *ret = (uint32_t)n;
    return 0;
}

/* --gpu-bind (or SLURM_GPU_BIND, sbatch's): checked here, so a typo sends nothing. */
static int gpu_bind(struct cli_srun_args *a, const char *value)
{
    struct gs_gpu_bind b;
    char why[256];

    if (gs_gpu_bind_parse(value, &b, why, sizeof(why)) < 0) {
        fprintf(stderr, "srun: error: %s\n", why);
        return -EINVAL;
    }
    a->req.gpu_bind = (char *)value;
    return 0;
}

/*
 * --mpi=TYPE, or SLURM_MPI_TYPE: pmix (and Slurm's pmix_vN) starts the step's tasks under
 * the workers' PMIx servers; pmi2 under their PMI servers (worker/pmi.h: PMI-1, what MPICH's
 * PMI_FD client speaks, and PMI-2, Slurm's libpmi2's, as Slurm's pmi2 plugin serves both);
 * none starts them plain. Slurm's
 * other types (cray_shasta) are warned about and start them plain too, their SLURM_*
 * variables theirs to read. Without either, the cluster's scheduler.mpi_default decides
 * (gschedd).
 */
static int mpi_type(struct cli_srun_args *a, const char *value)
{
    if (strcmp(value, "pmix") == 0 || strncmp(value, "pmix_v", 6) == 0) {
        a->req.mpi = "pmix";
    } else if (strcmp(value, "pmi2") == 0) {
        a->req.mpi = "pmi2";
    } else if (strcmp(value, "none") == 0) {
        a->req.mpi = "none"; /* over the cluster's scheduler.mpi_default */
    } else {
        fprintf(
            stderr,
            "srun: warning: --mpi=%s: gsched knows pmix, pmi2 and none; the tasks start without "
            "an MPI server and get SLURM_PROCID and friends\n",
            value);
        a->req.mpi = "none";
    }
    return 0;
}

/* -m (or SLURM_DISTRIBUTION, sbatch's): checked here, so a typo sends nothing. */
static int distribution(struct cli_srun_args *a, const char *value)
{
    char why[256];

    if (gs_dist_parse(value, &a->dist, why, sizeof(why)) < 0) {
        fprintf(stderr, "srun: error: %s\n", why);
        return -EINVAL;
    }
    a->req.distribution = (char *)value;
    return 0;
}

/* --hint: nomultithread is one thread a core; multithread and compute_bound (Slurm's whole
 * cores per task, bound to them) every thread, over a job's nomultithread; memory_bound's
 * one core per socket is not done, and said. */
static int hint(struct cli_srun_args *a, const char *value)
{
    if (strcmp(value, "nomultithread") == 0)
        a->req.threads_per_core = 1;
    else if (strcmp(value, "multithread") == 0 || strcmp(value, "compute_bound") == 0)
        a->req.threads_per_core = GS_STEP_THREADS_ALL;
    else if (strcmp(value, "memory_bound") == 0)
        fprintf(stderr, "srun: warning: --hint=memory_bound: ignored: tasks are not spread one "
                        "core per socket\n");
    else {
        fprintf(stderr,
                "srun: error: --hint=%s: must be nomultithread, multithread, compute_bound or "
                "memory_bound\n",
                value);
        return -EINVAL;
    }
    return 0;
}

/* --cpu-bind (or SLURM_CPU_BIND): checked here, so a typo sends nothing. */
static int cpu_bind(struct cli_srun_args *a, const char *value)
{
    struct gs_cpu_bind b;
    char why[256];

    if (gs_cpu_bind_parse(value, &b, why, sizeof(why)) < 0) {
        fprintf(stderr, "srun: error: %s\n", why);
        return -EINVAL;
    }
    a->req.cpu_bind = (char *)value;
    return 0;
}

/* --mem-bind (or SLURM_MEM_BIND): checked here, so a typo sends nothing. */
static int mem_bind(struct cli_srun_args *a, const char *value)
{
    struct gs_mem_bind b;
    char why[256];

    if (gs_mem_bind_parse(value, &b, why, sizeof(why)) < 0) {
        fprintf(stderr, "srun: error: %s\n", why);
        return -EINVAL;
    }
    a->req.mem_bind = (char *)value;
    return 0;
}

/* --het-group=0,2-3: the components, ascending and once each, as a step spans them. */
static int het_groups(struct cli_srun_args *a, const char *value)
{
    uint64_t set = 0;
    const char *p = value;

    while (*p != '\0') {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;

        if (end == p || *p == '-' || *p == '+')
            goto bad;
        if (*end == '-') {
            p = end + 1;
            hi = strtoul(p, &end, 10);
            if (end == p || *p == '-' || *p == '+' || hi < lo)
                goto bad;
        }
        if (hi >= GS_JOBSPEC_HET_MAX || (*end != ',' && *end != '\0'))
            goto bad;
        for (unsigned long g = lo; g <= hi; g++)
            set |= 1ull << g;
        p = *end == ',' ? end + 1 : end;
    }
    if (set == 0)
        goto bad;
    a->nhet_groups = 0;
    for (uint32_t g = 0; g < GS_JOBSPEC_HET_MAX; g++) {
        if (set & (1ull << g))
            a->het_groups[a->nhet_groups++] = g;
    }
    return 0;
bad:
    fprintf(stderr,
            "srun: error: --het-group '%s': a list of component numbers 0-%d (0,2 or 0-1)\n", value,
            GS_JOBSPEC_HET_MAX - 1);
    return -EINVAL;
}

/* Whether a gres list has a gpu entry ("gpu", "gpu:...") */
static bool names_gpu(const char *list)
{
    for (const char *p = list; *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
        if (strcspn(p, ":,") == 3 && strncmp(p, "gpu", 3) == 0)
            return true;
    }
    return false;
}

/*
 * --gres: its gpu entry is the step's GPUs on each node, as Slurm's step --gres is
 * (srun --gres=gpu:1 --exclusive ... & runs steps side by side, a GPU each); other gres
 * are not scheduled by gsched. none, or gpu:0, gives the step no GPU (a CPU helper beside
 * the job's GPU steps); a later --gres with a gpu entry takes that back.
 */
static int gres(struct cli_srun_args *a, const char *value)
{
    struct gs_sbatch_gpus g;
    struct gs_error err;
    bool other;

    if (strcmp(value, "none") == 0) {
        a->req.no_gpus = true;
        a->req.gpus_per_node = 0;
        return 0;
    }
    if (gs_sbatch_parse_gres(value, &g, &other, &err) < 0) {
        fprintf(stderr, "srun: error: --gres=%s: %s\n", value, err.msg);
        return -EINVAL;
    }
    if (g.count == 0 && !names_gpu(value))
        return 0; /* no gpu entry: nothing gsched schedules */
    a->req.no_gpus = g.count == 0;
    a->req.gpus_per_node = g.count;
    return 0;
}

static int take(struct cli_srun_args *a, const struct srun_opt *o, const char *value)
{
    char opt[40];
    uint32_t n;

    snprintf(opt, sizeof(opt), "--%s", o->name);
    switch (o->id) {
    case O_NODES:
        a->nodes_given = true;
        return number(opt, value, &a->req.nodes);
    case O_NTASKS:
        return number(opt, value, &a->req.ntasks);
    case O_TPN:
        return number(opt, value, &a->req.ntasks_per_node);
    case O_CPT:
        return number(opt, value, &a->req.cpus_per_task);
    case O_NTASKS_PER_GPU:
        return number(opt, value, &a->req.ntasks_per_gpu);
    case O_CPUS_PER_GPU:
        return number(opt, value, &a->req.cpus_per_gpu);
    case O_GPT:
        return number(opt, value, &a->req.gpus_per_task);
    case O_GPUS:
        /* "gpu:4" or "4": the step's total; gschedd spreads it over the step's nodes. */
        return number(opt, strchr(value, ':') != NULL ? strrchr(value, ':') + 1 : value,
                      &a->req.gpus);
    case O_GPN:
        return number(opt, strchr(value, ':') != NULL ? strrchr(value, ':') + 1 : value,
                      &a->req.gpus_per_node);
    case O_GRES:
        return gres(a, value);
    case O_EXACT:
        a->req.exact = true;
        return 0;
    case O_EXCLUSIVE:
        a->req.exclusive = true;
        return 0;
    case O_OVERLAP:
        a->req.overlap = true;
        return 0;
    case O_CHDIR:
        a->chdir = value;
        return 0;
    case O_NAME:
        a->req.job_name = (char *)value;
        return 0;
    case O_LABEL:
        a->req.label = true;
        return 0;
    case O_NODELIST:
        a->nodelist = value;
        return 0;
    case O_JOBID:
        if (cli_parse_job_id(value, &a->job_id) < 0) {
            fprintf(stderr, "srun: error: invalid --jobid '%s'\n", value);
            return -EINVAL;
        }
        return 0;
    case O_EXPORT:
        a->export_spec = value;
        return 0;
    case O_UNBUFFERED:
        a->unbuffered = true;
        return 0;
    case O_MPI:
        a->mpi_given = true;
        return mpi_type(a, value);
    case O_KILL_BAD:
        a->kill_bad = value == NULL || strcmp(value, "0") != 0;
        return 0;
    case O_IMMEDIATE:
        return cli_alloc_immediate_value("srun", o->name, value, &a->immediate_s);
    case O_OUTPUT:
        return cli_srun_io_parse(o->name, value, &a->out);
    case O_ERROR:
        return cli_srun_io_parse(o->name, value, &a->err);
    case O_INPUT:
        return cli_srun_io_parse(o->name, value, &a->in);
    case O_OPEN_MODE: { /* a prefix will do, any case, as Slurm reads it */
        size_t len = strlen(value);

        if (len > 0 && strncasecmp(value, "append", len) == 0) {
            a->append = true;
        } else if (len > 0 && strncasecmp(value, "truncate", len) == 0) {
            a->append = false;
        } else {
            fprintf(stderr, "srun: error: --open-mode=%s: append or truncate\n", value);
            return -EINVAL;
        }
        return 0;
    }
    case O_PTY:
        a->req.pty = true;
        a->unbuffered = true; /* a prompt has no newline: it must show as it comes */
        return 0;
    case O_GPU_BIND:
        return gpu_bind(a, value);
    case O_HET_GROUP:
        return het_groups(a, value);
    case O_DISTRIBUTION:
        a->dist_given = true;
        return distribution(a, value);
    case O_TIME: {
        uint64_t s;

        if (gs_parse_duration(value, &s) < 0) {
            fprintf(stderr,
                    "srun: error: invalid --time '%s' (MIN, MIN:SEC, H:M:S, D-H, D-H:M, "
                    "D-H:M:S)\n",
                    value);
            return -EINVAL;
        }
        a->req.time_limit_s = s == GS_DURATION_INFINITE ? 0 : s; /* 0: none, as Slurm */
        return 0;
    }
    case O_WAIT: {
        uint64_t s;

        if (cli_parse_u64(value, &s) < 0 || s > UINT32_MAX) {
            fprintf(stderr, "srun: error: invalid --wait value '%s'\n", value);
            return -EINVAL;
        }
        a->wait_s = (uint32_t)s; /* 0: wait as long as it takes */
        return 0;
    }
    case O_CPU_BIND:
        a->cpu_bind_given = true;
        return cpu_bind(a, value);
    case O_MEM_BIND:
        a->mem_bind_given = true;
        return mem_bind(a, value);
    case O_MULTI_PROG:
        a->multi_prog = true;
        return 0;
    case O_THREADS:
        if (number(opt, value, &a->req.threads_per_core) < 0)
            return -EINVAL;
        if (a->req.threads_per_core > 64) {
            fprintf(stderr, "srun: error: --threads-per-core=%s: at most 64\n", value);
            return -EINVAL;
        }
        return 0;
    case O_HINT:
        return hint(a, value);
    case O_NTASKS_PER_CORE:
        if (strcmp(value, "1") != 0) {
            fprintf(stderr,
                    "srun: error: --ntasks-per-core=%s: gsched gives each task whole cores of "
                    "its own (only 1)\n",
                    value);
            return -EINVAL;
        }
        return 0;
    default:
        (void)n;
        return 0;
    }
}

/* The options sbatch reads too: outside a job they ask for srun's allocation. */
static const char *const alloc_opts[] = {
    "nodes",    "ntasks",        "ntasks-per-node", "cpus-per-task",  "gpus-per-task",
    "gpus",     "gpus-per-node", "nodelist",        "job-name",       "time",
    "gres",     "mem",           "mem-per-cpu",     "mem-per-gpu",    "partition",
    "account",  "qos",           "reservation",     "exclude",        "constraint",
    "switches", "mail-type",     "mail-user",       "ntasks-per-gpu", "cpus-per-gpu",
    NULL,
};

static void keep_for_alloc(struct cli_srun_args *a, const struct srun_opt *o, const char *value)
{
    for (size_t i = 0; alloc_opts[i] != NULL; i++) {
        if (strcmp(alloc_opts[i], o->name) == 0 && a->nalloc < CLI_SRUN_ALLOC_OPTS_MAX) {
            a->alloc_name[a->nalloc] = o->name;
            a->alloc_value[a->nalloc++] = value;
            return;
        }
    }
}

static const struct srun_opt *find_long(const char *name, size_t len)
{
    for (const struct srun_opt *o = srun_opts; o->name != NULL; o++) {
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    }
    return NULL;
}

static const struct srun_opt *find_short(char c)
{
    for (const struct srun_opt *o = srun_opts; o->name != NULL; o++) {
        if (o->alias == c)
            return o;
    }
    return NULL;
}

int cli_srun_parse(struct cli_srun_args *a, int argc, char **argv)
{
    int i = 1;

    for (; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        const struct srun_opt *o;
        int rc;

        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            break;
        if (arg[1] == '-') {
            const char *eq = strchr(arg + 2, '=');

            o = find_long(arg + 2, eq != NULL ? (size_t)(eq - arg - 2) : strlen(arg + 2));
            if (o != NULL && eq != NULL && o->kind == FLAG && o->id != O_KILL_BAD &&
                o->id != O_IMMEDIATE)
                o = NULL; /* a value for a flag */
            value = eq != NULL ? eq + 1 : NULL;
        } else {
            o = find_short(arg[1]);
            if (o != NULL && arg[2] != '\0' && o->kind == FLAG &&
                !(o->id == O_KILL_BAD && arg[3] == '\0') && o->id != O_IMMEDIATE)
                o = NULL; /* -lu and such: not taken apart here */
            value = arg[2] != '\0' ? arg + 2 : NULL;
        }
        if (o == NULL) {
            fprintf(stderr, "srun: error: unrecognized option '%s'\n", arg);
            fprintf(stderr, "Try \"srun --help\" for more information\n");
            return -EINVAL;
        }
        if (o->kind == VALUE && value == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "srun: error: option '%s' requires an argument\n", arg);
                return -EINVAL;
            }
            value = argv[++i];
        }
        if (o->id == O_HELP) {
            fputs(srun_usage, stdout);
            fputs(srun_usage_io, stdout);
            fputs(srun_usage_layout, stdout);
            return 1;
        }
        if (o->id == O_MPI && strcmp(value, "list") == 0) { /* as Slurm's srun lists them */
            fputs("MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\n", stdout);
            return 1;
        }
        rc = take(a, o, value);
        if (rc < 0)
            return rc;
        keep_for_alloc(a, o, value);
    }
    a->command = argv + i;
    a->ncommand = argc - i;
    return 0;
}

/* --- the request ------------------------------------------------------------------------------ */

void cli_srun_owned_release(struct cli_srun_owned *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->entries[i].key);
        free(o->entries[i].value);
    }
    free(o->entries);
    free(o->ptrs);
    gs_hostlist_free(o->nodes);
    gs_hostlist_free(o->task_nodes);
    free(o->dist_text);
    gs_buf_release(&o->multi_prog);
    gs_buf_release(&o->workdir);
}

/* Takes the variable key out of the tasks' environment, if it is there. */
static void env_unset(struct cli_srun_owned *o, const char *key)
{
    for (size_t i = 0; i < o->n; i++) {
        if (strcmp(o->entries[i].key, key) != 0)
            continue;
        free(o->entries[i].key);
        free(o->entries[i].value);
        o->entries[i] = o->entries[--o->n];
        return;
    }
}

/* Sets the variable named by kv's first keylen bytes to value (copied); a later set wins. */
static int env_set(struct cli_srun_owned *o, const char *kv, size_t keylen, const char *value,
                   size_t valuelen)
{
    char *v = strndup(value, valuelen);
    size_t i = 0;

    if (v == NULL)
        return -ENOMEM;
    while (i < o->n &&
           !(strlen(o->entries[i].key) == keylen && strncmp(o->entries[i].key, kv, keylen) == 0))
        i++;
    if (i == o->n) {
        if (o->n == o->cap) {
            size_t cap = o->cap > 0 ? o->cap * 2 : 64;
            Gs__StepLaunchRequest__EnvEntry *e = realloc(o->entries, cap * sizeof(*e));

            if (e == NULL)
                goto fail;
            o->entries = e;
            o->cap = cap;
        }
        gs__step_launch_request__env_entry__init(&o->entries[i]);
        o->entries[i].key = strndup(kv, keylen);
        if (o->entries[i].key == NULL)
            goto fail;
        o->entries[i].value = NULL;
        o->n++;
    }
    free(o->entries[i].value);
    o->entries[i].value = v;
    return 0;
fail:
    free(v);
    return -ENOMEM;
}

/* Whether the comma-separated list names the variable (kv's first keylen bytes). */
static bool env_named(const char *list, const char *kv, size_t keylen)
{
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");

        if (len == keylen && strncmp(p, kv, keylen) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

/*
 * --export: ALL (srun's whole environment, the default), NONE (only the SLURM_ and GSCHED_
 * variables the step needs), or a list of names and NAME=VALUE settings, with ALL among
 * them to keep everything else too.
 */
static int build_env(struct cli_srun_owned *o, const char *spec)
{
    bool all = spec == NULL || env_named(spec, "ALL", 3);
    int rc = 0;

    for (char **e = environ; rc == 0 && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        size_t keylen = eq != NULL ? (size_t)(eq - *e) : 0;

        if (keylen == 0)
            continue;
        if (all || strncmp(*e, "SLURM_", 6) == 0 || strncmp(*e, "GSCHED_", 7) == 0 ||
            (spec != NULL && env_named(spec, *e, keylen)))
            rc = env_set(o, *e, keylen, eq + 1, strlen(eq + 1));
    }
    for (const char *p = spec; rc == 0 && p != NULL && *p != '\0';) { /* NAME=VALUE items */
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);

        if (eq != NULL && eq != p)
            rc = env_set(o, p, (size_t)(eq - p), eq + 1, len - (size_t)(eq + 1 - p));
        p += len;
        if (*p == ',')
            p++;
    }
    return rc;
}

/*
 * A step on one component of a heterogeneous job sees that component's SLURM_* variables
 * under their plain names (its _HET_GROUP_K ones), as the tasks of an ordinary job see the
 * job's; a step over several keeps component 0's, with each one's under its suffix.
 */
static int het_group_env(struct cli_srun_owned *o, const struct cli_srun_args *a)
{
    char sfx[32];
    size_t slen, n = o->n;
    int rc = 0;

    if (a->nhet_groups != 1)
        return 0;
    slen = (size_t)snprintf(sfx, sizeof(sfx), "_HET_GROUP_%u", a->het_groups[0]);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *key = o->entries[i].key, *value = o->entries[i].value;
        size_t klen = strlen(key);

        if (klen > slen && strncmp(key, "SLURM_", 6) == 0 && strcmp(key + klen - slen, sfx) == 0 &&
            value != NULL)
            rc = env_set(o, key, klen - slen, value, strlen(value));
    }
    return rc;
}

/* SLURM_DISTRIBUTION (sbatch -m's), as -m; "plane" takes its size from SLURM_DIST_PLANESIZE. */
static int env_distribution(struct cli_srun_args *a, struct cli_srun_owned *own)
{
    const char *text = getenv("SLURM_DISTRIBUTION"), *size = getenv("SLURM_DIST_PLANESIZE");

    if (text == NULL || text[0] == '\0')
        return 0;
    if (strcasecmp(text, "plane") == 0 && size != NULL && size[0] != '\0') {
        size_t len = strlen(size) + sizeof("plane=");

        if ((own->dist_text = malloc(len)) == NULL) {
            fprintf(stderr, "srun: error: out of memory\n");
            return -ENOMEM;
        }
        snprintf(own->dist_text, len, "plane=%s", size);
        text = own->dist_text;
    }
    return distribution(a, text);
}

/*
 * -m arbitrary: task r runs on the r-th host of SLURM_HOSTFILE (hosts or hostlists, one a
 * line or comma-separated), else of -w with its repeats; neither given, Slurm's fallback,
 * block. The hosts go as req.task_nodes; -w then names no node set of its own.
 */
static int arbitrary_hosts(struct cli_srun_args *a, struct cli_srun_owned *own)
{
    const char *file = getenv("SLURM_HOSTFILE");
    struct gs_buf list = GS_BUF_INIT;
    struct gs_error err;
    int rc = 0;

    if (file == NULL || file[0] == '\0') {
        own->task_nodes = own->nodes;
        a->req.n_task_nodes = a->req.n_nodelist;
        own->nodes = NULL;
        a->req.nodelist = NULL;
        a->req.n_nodelist = 0;
        goto out;
    }
    if (a->nodelist != NULL) {
        fprintf(stderr, "srun: error: -m arbitrary takes its hosts from SLURM_HOSTFILE or from "
                        "-w, not from both\n");
        rc = -EINVAL;
        goto out;
    }
    rc = gs_hostlist_read_file(file, &list);
    if (rc < 0) {
        fprintf(stderr, "srun: error: SLURM_HOSTFILE %s: %s\n", file,
                rc == -ENODATA ? "names no host" : strerror(-rc));
        rc = rc == -ENODATA ? -EINVAL : rc;
        goto out;
    }
    gs_error_clear(&err);
    rc = gs_hostlist_expand(list.data, &own->task_nodes, &a->req.n_task_nodes, &err);
    if (rc < 0)
        fprintf(stderr, "srun: error: SLURM_HOSTFILE %s: %s\n", file, err.msg);
out:
    a->req.task_nodes = own->task_nodes;
    if (a->req.task_nodes == NULL)
        a->req.n_task_nodes = 0;
    gs_buf_release(&list);
    return rc;
}

/* --multi-prog FILE: every task runs /bin/sh -c with the file's lines (srun_multi_prog.c). */
static int multi_prog(struct cli_srun_args *a, struct cli_srun_owned *own)
{
    char why[300];
    int rc;

    if (a->ncommand != 1) {
        fprintf(stderr, "srun: error: --multi-prog takes its configuration file alone\n");
        return -EINVAL;
    }
    rc = cli_srun_multi_prog(a->command[0], &own->multi_prog, why, sizeof(why));
    if (rc < 0) {
        fprintf(stderr, "srun: error: --multi-prog: %s\n", rc == -ENOMEM ? "out of memory" : why);
        return rc;
    }
    own->multi_argv[0] = "/bin/sh";
    own->multi_argv[1] = "-c";
    own->multi_argv[2] = own->multi_prog.data;
    own->multi_argv[3] = "srun-multi-prog"; /* $0 */
    a->req.argv = own->multi_argv;
    a->req.n_argv = 4;
    return 0;
}

/*
 * --ntasks-per-gpu and --cpus-per-gpu against the options they exclude, as Slurm's srun
 * says; --ntasks-per-gpu=K without a --gpu-bind binds each K tasks to one GPU, as Slurm's
 * implied single:K (over a job's SLURM_GPU_BIND: the step's K wins).
 */
static int per_gpu(struct cli_srun_args *a, struct cli_srun_owned *own)
{
    const Gs__StepLaunchRequest *r = &a->req;

    if (r->cpus_per_gpu > 0 && r->cpus_per_task > 0) {
        fprintf(stderr, "srun: fatal: --cpus-per-gpu is mutually exclusive with --cpus-per-task\n");
        return -EINVAL;
    }
    if (r->ntasks_per_gpu > 0 && (r->ntasks_per_node > 0 || r->gpus_per_task > 0)) {
        fprintf(stderr, "srun: fatal: --ntasks-per-gpu is mutually exclusive with %s\n",
                r->ntasks_per_node > 0 ? "--ntasks-per-node" : "--gpus-per-task");
        return -EINVAL;
    }
    if ((r->ntasks_per_gpu > 0 || r->cpus_per_gpu > 0) && r->no_gpus) {
        fprintf(stderr, "srun: fatal: --%s-per-gpu: the step has no GPU (--gres=none)\n",
                r->ntasks_per_gpu > 0 ? "ntasks" : "cpus");
        return -EINVAL;
    }
    if (r->ntasks_per_gpu > 0 && (r->gpu_bind == NULL || r->gpu_bind[0] == '\0')) {
        snprintf(own->gpu_bind, sizeof(own->gpu_bind), "single:%u", r->ntasks_per_gpu);
        a->req.gpu_bind = own->gpu_bind;
    }
    return 0;
}

/* The tasks see the step's --ntasks-per-gpu / --cpus-per-gpu (n) as Slurm's do, over the
 * job's; 0: as they are. */
static int per_gpu_env(struct cli_srun_owned *own, const char *key, uint32_t n)
{
    char text[16];

    if (n == 0)
        return 0;
    snprintf(text, sizeof(text), "%u", n);
    return env_set(own, key, strlen(key), text, strlen(text));
}

bool cli_srun_in_job(const struct cli_srun_args *a)
{
    return a->job_id != 0 || getenv("SLURM_JOB_ID") != NULL || getenv("SLURM_JOBID") != NULL;
}

int cli_srun_request(struct cli_srun_args *a, struct cli_srun_owned *own)
{
    const char *env_job = getenv("SLURM_JOB_ID");
    char cwd[4096];
    struct gs_error err;

    if (a->job_id == 0 && env_job == NULL)
        env_job = getenv("SLURM_JOBID");
    if (a->job_id == 0 && (env_job == NULL || cli_parse_job_id(env_job, &a->job_id) < 0)) {
        fprintf(stderr, "srun: error: invalid SLURM_JOB_ID '%s'\n", env_job != NULL ? env_job : "");
        return -EINVAL;
    }
    if (a->ncommand == 0) {
        fprintf(stderr, "srun: fatal: No command given to execute.\n");
        return -EINVAL;
    }
    a->req.job_id = a->job_id;
    if (cli_srun_io_request(a) < 0 || per_gpu(a, own) < 0)
        return -EINVAL;
    if ((a->req.gpu_bind == NULL || a->req.gpu_bind[0] == '\0') &&
        getenv("SLURM_GPU_BIND") != NULL && gpu_bind(a, getenv("SLURM_GPU_BIND")) < 0)
        return -EINVAL;
    if (!a->dist_given && env_distribution(a, own) < 0)
        return -EINVAL;
    if (!a->cpu_bind_given && getenv("SLURM_CPU_BIND") != NULL &&
        cpu_bind(a, getenv("SLURM_CPU_BIND")) < 0)
        return -EINVAL;
    if (!a->mem_bind_given && getenv("SLURM_MEM_BIND") != NULL &&
        mem_bind(a, getenv("SLURM_MEM_BIND")) < 0)
        return -EINVAL;
    if (!a->mpi_given && getenv("SLURM_MPI_TYPE") != NULL &&
        mpi_type(a, getenv("SLURM_MPI_TYPE")) < 0)
        return -EINVAL;
    a->req.argv = a->command;
    a->req.n_argv = (size_t)a->ncommand;
    if (a->multi_prog && multi_prog(a, own) < 0)
        return -EINVAL;
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        int rc = -errno;

        fprintf(stderr, "srun: error: cannot get the current directory: %s\n", strerror(-rc));
        return rc;
    }
    if (gs_path_absolute(cwd, a->chdir != NULL ? a->chdir : ".", &own->workdir) < 0)
        goto nomem;
    a->req.workdir = own->workdir.data;
    if (a->nodelist != NULL) {
        gs_error_clear(&err);
        if (gs_hostlist_expand(a->nodelist, &own->nodes, &a->req.n_nodelist, &err) < 0) {
            fprintf(stderr, "srun: error: --nodelist '%s', column %d: %s\n", a->nodelist, err.col,
                    err.msg);
            return -EINVAL;
        }
        a->req.nodelist = own->nodes;
    }
    if (a->req.distribution != NULL && a->dist.nodes == GS_DIST_ARBITRARY &&
        arbitrary_hosts(a, own) < 0)
        return -EINVAL;
    if (build_env(own, a->export_spec) < 0 || het_group_env(own, a) < 0)
        goto nomem;
    /* The tasks see the distribution they were laid out by, as Slurm's do. */
    if (a->dist_given && env_set(own, "SLURM_DISTRIBUTION", 18, a->req.distribution,
                                 strlen(a->req.distribution)) < 0)
        goto nomem;
    if (a->cpu_bind_given &&
        env_set(own, "SLURM_CPU_BIND", 14, a->req.cpu_bind, strlen(a->req.cpu_bind)) < 0)
        goto nomem;
    if (a->mem_bind_given &&
        env_set(own, "SLURM_MEM_BIND", 14, a->req.mem_bind, strlen(a->req.mem_bind)) < 0)
        goto nomem;
    /* --threads-per-core and --hint: the tasks see the step's setting, not the job's. */
    if (a->req.threads_per_core == GS_STEP_THREADS_ALL) {
        env_unset(own, "SLURM_THREADS_PER_CORE");
    } else if (a->req.threads_per_core > 0) {
        char n[16];

        snprintf(n, sizeof(n), "%u", a->req.threads_per_core);
        if (env_set(own, "SLURM_THREADS_PER_CORE", 22, n, strlen(n)) < 0)
            goto nomem;
    }
    if (per_gpu_env(own, "SLURM_NTASKS_PER_GPU", a->req.ntasks_per_gpu) < 0 ||
        per_gpu_env(own, "SLURM_CPUS_PER_GPU", a->req.cpus_per_gpu) < 0)
        goto nomem;
    a->req.het_groups = a->nhet_groups > 0 ? a->het_groups : NULL;
    a->req.n_het_groups = a->nhet_groups;
    own->ptrs = calloc(own->n + 1, sizeof(*own->ptrs));
    if (own->ptrs == NULL)
        goto nomem;
    for (size_t i = 0; i < own->n; i++)
        own->ptrs[i] = &own->entries[i];
    a->req.n_env = own->n;
    a->req.env = own->ptrs;
    return 0;
nomem:
    fprintf(stderr, "srun: error: out of memory\n");
    return -ENOMEM;
}

/* --- srun outside a job ------------------------------------------------------------------- */

int cli_srun_alloc_words(const struct cli_srun_args *a, char ***ret)
{
    char **words = calloc((size_t)a->nalloc + 1, sizeof(*words));

    if (words == NULL)
        return -ENOMEM;
    for (int i = 0; i < a->nalloc; i++) {
        size_t len = strlen(a->alloc_name[i]) + strlen(a->alloc_value[i]) + 4;

        words[i] = malloc(len);
        if (words[i] == NULL) {
            for (int k = 0; k < i; k++)
                free(words[k]);
            free(words);
            return -ENOMEM;
        }
        snprintf(words[i], len, "--%s=%s", a->alloc_name[i], a->alloc_value[i]);
    }
    *ret = words;
    return 0;
}
