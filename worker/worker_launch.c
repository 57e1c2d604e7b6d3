/*
 * worker_launch.c: LaunchTasks and SignalTasks on a worker (see worker.h).
 *
 * For each task of this node: the command (argv, or the script under /bin/sh -c, or for a
 * Slurm batch job the script itself, see below), the
 * environment (worker/env.h), the output files from the job's patterns, the job's user,
 * limits, and binding when the topology is this machine's: CPU affinity to the PUs of the
 * task's cores, a memory policy preferring their NUMA nodes, and NCCL hints naming the NIC
 * nearest the task's GPU. A fake topology (--topology FILE) names cores, nodes and NICs
 * that mean nothing here, so all three are skipped, with one warning per worker rather
 * than a line per task; the GSCHED_ variables still describe the placement. Every task gets
 * a result in the LaunchTasksReply; one that could not start also gets a TaskExit saying
 * why, so the scheduler has a single path for "this task is over". The reply goes once the
 * tasks are forked, without waiting for their exec (a working directory on a filesystem
 * that hangs would hold the worker's loop): a step that fails in the child (chdir, the
 * output files, the exec) makes that task's exit a launch failure, with the same message,
 * after a reply that gave its pid.
 *
 * Slurm jobs (RunSpec.slurm). The batch shell (run.batch, step 0) is the script written to
 * a private file (mode 0700, the task user's, in the worker's script directory) and exec'd
 * as itself, so its own "#!" line picks the interpreter and $0 is its path; without one it
 * runs under /bin/sh, as Slurm would not but a shell script expects. The file goes when
 * the task does. srun steps (step >= 1) have their stdout and stderr captured for srun
 * instead of written to files. Tasks of all steps are keyed (job, step, rank). An sbatch
 * --signal warning goes, before the time limit, to the batch shell alone when it asked
 * for B:, else to the step tasks (and to the tasks of a plain job), as Slurm sends it. The
 * tasks of an srun --mpi=pmix step (LaunchTasks.mpi) are registered with the node's PMIx
 * server first (worker/pmix.h) and get its PMIX_* variables; those of an --mpi=pmi2 step
 * each get a socket to the node's PMI server (worker/pmi.h) and its PMI_* variables.
 *
 * JobLimitUpdate (scontrol update TimeLimit= on a running job) restarts the time limit of
 * every task of the job here, the batch shell and each srun step alike: Slurm's limit is
 * the job's, so a step ends with the job, never later. All count from the job's start
 * (JobLimitUpdate.elapsed_ms before the message came), as the steps' own limits do
 * (gschedd launches them with what the job has left). A launch deferred behind an older
 * attempt gets the new limit written into it.
 */
#define _GNU_SOURCE /* getpwuid_r */

#include "worker/worker_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/jobspec.h"
#include "common/log.h"
#include "common/path.h"
#include "common/rlimit_names.h"
#include "worker/env.h"
#include "common/sort.h"

/* What every task of one LaunchTasks shares. */
struct launch {
    struct wrk_ctx *w;
    const Gs__LaunchTasks *msg;
    char **job_env;
    char **argv;
    char nodelist[4096];
    uint32_t node_rank;
    char user[64];
    char home[256];
    bool set_user;
    bool bind;         /* the topology is this machine's: bind, and hint NCCL */
    bool gpu_per_task; /* one task per GPU, each seeing all of them (see task_nic()) */
    bool slurm;
    bool batch;    /* the batch shell: run.script written to a file and exec'd as itself */
    bool mpi;      /* a launcher job's leader: gsched mpirun -- the command */
    bool torchrun; /* a torchrun job's agent on this node: torchrun --nnodes ... command */
    bool capture;  /* a step: output to the scheduler rather than to files */
    bool pmix;     /* an srun --mpi=pmix step: its tasks are the PMIx server's clients */
    bool pmi;      /* an srun --mpi=pmi2 step: its tasks are the PMI server's */
    const Gs__NodeAllocation *here; /* this node's entry of the allocation; NULL: none */
    const char **step_nodes;        /* the allocation's node names, for SLURM_STEP_NODELIST */
    uint32_t *step_node_tasks;
    Gs__TaskLaunchResult *results;
    Gs__TaskLaunchResult **result_ptrs;
    char (*messages)[256];
    char *const *extra_env; /* appended to the job's environment (worker_data.c) */
};

/*
 * A requeued job's next attempt may come here while its last one's tasks are still ending
 * (signalled with the requeue, killed after the grace time): the new tasks would clash with
 * them (the same ranks, files, ports) and their exits must keep the old attempt's number.
 * So the launch waits, as packed bytes, until the last of them has ended; a still later
 * attempt replaces it. Returns whether msg was deferred (or failed to be: then said).
 */
static bool defer_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    struct wrk_job *j = wrk_job_find(w, msg->job_id);
    size_t len;
    uint8_t *buf;

    if (j == NULL || j->ntasks <= 0 || msg->attempt <= j->attempt)
        return false;
    len = gs__launch_tasks__get_packed_size(msg);
    buf = malloc(len > 0 ? len : 1);
    if (buf == NULL) {
        GS_LOG(GS_LOG_ERROR, "job=%llu attempt=%u out of memory deferring its launch",
               (unsigned long long)msg->job_id, msg->attempt);
        return false; /* it fails as "already running", which the scheduler hears */
    }
    gs__launch_tasks__pack(msg, buf);
    free(j->deferred);
    j->deferred = buf;
    j->deferred_len = len;
    j->deferred_request_id = request_id;
    GS_LOG(GS_LOG_INFO,
           "job=%llu attempt=%u previous_attempt=%u tasks_left=%d launch waits for the "
           "previous attempt's tasks to end",
           (unsigned long long)msg->job_id, msg->attempt, j->attempt, j->ntasks);
    return true;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static int build_job_env(struct launch *l)
{
    const Gs__LaunchTasks *m = l->msg;
    size_t nextra = 0;

    while (l->extra_env != NULL && l->extra_env[nextra] != NULL)
        nextra++;
    l->job_env = calloc(m->n_env + nextra + 1, sizeof(char *));
    if (l->job_env == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_env; i++) {
        struct gs_buf kv = GS_BUF_INIT;

        if (gs_buf_printf(&kv, "%s=%s", m->env[i]->key, m->env[i]->value) < 0)
            return -ENOMEM;
        l->job_env[i] = gs_buf_detach(&kv, NULL);
        if (l->job_env[i] == NULL)
            return -ENOMEM;
    }
    for (size_t i = 0; i < nextra; i++) {
        l->job_env[m->n_env + i] = strdup(l->extra_env[i]);
        if (l->job_env[m->n_env + i] == NULL)
            return -ENOMEM;
    }
    return 0;
}

/*
 * torchrun's own arguments before the job's command: this node's agent among nnodes, the
 * ranks it starts (the node's share of tasks: tasks_per_node, or one per GPU), and a static
 * rendezvous at the job's MASTER_ADDR:MASTER_PORT (the first node's agent listens there).
 * The underscore spellings are the ones every torchrun since 1.9 takes.
 */
#define TORCHRUN_ARGS 6

static int torchrun_argv(struct launch *l, size_t *at)
{
    uint32_t nproc = l->here != NULL && l->here->ntasks > 0 ? l->here->ntasks : 1;
    char arg[TORCHRUN_ARGS][160];

    if (l->msg->master_addr == NULL || l->msg->master_addr[0] == '\0')
        return -EPROTO; /* gschedd always names the first node's address */
    snprintf(arg[0], sizeof(arg[0]), "torchrun");
    snprintf(arg[1], sizeof(arg[1]), "--nnodes=%zu", l->msg->n_allocation);
    snprintf(arg[2], sizeof(arg[2]), "--nproc_per_node=%" PRIu32, nproc);
    snprintf(arg[3], sizeof(arg[3]), "--node_rank=%" PRIu32, l->node_rank);
    snprintf(arg[4], sizeof(arg[4]), "--master_addr=%.140s", l->msg->master_addr);
    snprintf(arg[5], sizeof(arg[5]), "--master_port=%" PRIu32, l->msg->master_port);
    for (size_t i = 0; i < TORCHRUN_ARGS; i++) {
        l->argv[(*at)++] = strdup(arg[i]);
        if (l->argv[*at - 1] == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int build_argv(struct launch *l)
{
    const Gs__RunSpec *run = l->msg->run;
    size_t n = run != NULL ? run->n_argv : 0;

    if (run == NULL || (n == 0 && (run->script == NULL || run->script[0] == '\0')))
        return -EINVAL;
    size_t at = 0;

    l->argv = calloc((n > 0 ? n : 3) + 4 + TORCHRUN_ARGS, sizeof(char *));
    if (l->argv == NULL)
        return -ENOMEM;
    if (l->torchrun) {
        int rc = torchrun_argv(l, &at);

        if (rc < 0)
            return rc;
    }
    /* mpirun starts the command on every node: gsched mpirun reads the job's layout. */
    if (l->mpi) {
        l->argv[at++] = strdup(l->w->cli_path);
        l->argv[at++] = strdup("mpirun");
        l->argv[at++] = strdup("--");
    }
    /* A batch script's argv are its arguments: batch_argv() puts the script before them. */
    if (n == 0 && !l->batch) {
        l->argv[at++] = strdup("/bin/sh");
        l->argv[at++] = strdup("-c");
        l->argv[at++] = strdup(run->script);
    } else {
        for (size_t i = 0; i < n; i++)
            l->argv[at++] = strdup(run->argv[i]);
    }
    n = at;
    for (size_t i = 0; i < n; i++) {
        if (l->argv[i] == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int describe_allocation(struct launch *l)
{
    size_t off = 0, n_alloc = l->msg->n_allocation;

    l->nodelist[0] = '\0';
    l->step_nodes = calloc(n_alloc + 1, sizeof(*l->step_nodes));
    l->step_node_tasks = calloc(n_alloc + 1, sizeof(*l->step_node_tasks));
    if (l->step_nodes == NULL || l->step_node_tasks == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n_alloc; i++) {
        const Gs__NodeAllocation *a = l->msg->allocation[i];
        const char *name = a->node_name;
        int n =
            snprintf(l->nodelist + off, sizeof(l->nodelist) - off, "%s%s", i > 0 ? "," : "", name);

        if (n > 0 && (size_t)n < sizeof(l->nodelist) - off)
            off += (size_t)n;
        l->step_nodes[i] = name;
        l->step_node_tasks[i] = a->ntasks;
        if (strcmp(name, l->w->node_name) == 0) {
            l->node_rank = (uint32_t)i;
            l->here = a;
        }
    }
    return 0;
}

/* Whose the tasks are: the job's user, if this worker may become it. */
static int resolve_user(struct launch *l, char *why, size_t why_size)
{
    const Gs__UserIdentity *u = l->msg->user;
    uid_t me = geteuid();
    struct passwd pw, *found = NULL;
    char buf[4096];

    if (u == NULL) {
        snprintf(why, why_size, "the launch names no user to run the tasks as");
        return -EPERM;
    }
    if (u->uid == 0 && !l->w->allow_root_jobs) {
        snprintf(why, why_size,
                 "this node does not run jobs as root (worker.allow_root_jobs is false)");
        return -EPERM;
    }
    if (u->uid != me && me != 0) {
        snprintf(why, why_size, "worker runs as uid %u and cannot start tasks as uid %u",
                 (unsigned)me, u->uid);
        return -EPERM;
    }
    l->set_user = me == 0 && u->uid != 0;
    getpwuid_r(u->uid, &pw, buf, sizeof(buf), &found);
    snprintf(l->user, sizeof(l->user), "%s",
             found != NULL ? found->pw_name : (u->username != NULL ? u->username : ""));
    snprintf(l->home, sizeof(l->home), "%s", found != NULL ? found->pw_dir : "");
    return 0;
}

/* What one task is given beyond its assignment, from the topology; task_facts_release(). */
struct task_facts {
    const char **bus_ids;          /* of its GPUs; the strings are the topology's */
    uint32_t *cores;               /* its cores, ascending, for GSCHED_CPUS */
    const struct gs_topo_nic *nic; /* nearest its GPU; NULL when none is known */
    int *cpus;                     /* the PUs of its cores, to bind to; none when unbound */
    int ncpus;
    int *nodes;      /* the NUMA node of each core, in the scheduler's order; none when unbound */
    int nnodes;      /* (or srun --mem-bind's nodes); the memory policy's */
    bool mem_strict; /* bind memory to nodes, not prefer them (--mem-bind) */
};

static void task_facts_release(struct task_facts *f)
{
    free(f->bus_ids);
    free(f->cores);
    free(f->cpus);
    free(f->nodes);
}

/*
 * The PUs and NUMA nodes of the task's cores, when the topology describes this machine. The
 * nodes keep the scheduler's order, whose first cores sit nearest the task's GPU, so the
 * first node is the one to prefer alone. A core the topology lacks (a stale view) is left out.
 */
/* srun --mem-bind's nodes (BIND, PREFER) in place of the cores' own; none for NONE. */
static int task_mem_policy(const struct launch *l, const Gs__TaskAssignment *t,
                           struct task_facts *f)
{
    if (t->mem_policy == GS__MEM_POLICY__MEM_POLICY_NONE) {
        f->nnodes = 0;
        return 0;
    }
    if (!l->bind || t->n_mem_nodes == 0 ||
        (t->mem_policy != GS__MEM_POLICY__MEM_POLICY_BIND &&
         t->mem_policy != GS__MEM_POLICY__MEM_POLICY_PREFER))
        return 0;
    free(f->nodes);
    f->nodes = calloc(t->n_mem_nodes, sizeof(*f->nodes));
    if (f->nodes == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_mem_nodes; i++)
        f->nodes[i] = (int)t->mem_nodes[i];
    f->nnodes = (int)t->n_mem_nodes;
    f->mem_strict = t->mem_policy == GS__MEM_POLICY__MEM_POLICY_BIND;
    return 0;
}

static int task_binding(const struct launch *l, const Gs__TaskAssignment *t, struct task_facts *f)
{
    uint32_t tpc = l->msg->run != NULL ? l->msg->run->threads_per_core : 0;
    size_t npus = 0;

    if (!l->bind || t->n_cores == 0)
        return task_mem_policy(l, t, f);
    for (size_t i = 0; i < t->n_cores; i++) {
        const struct gs_topo_core *core = gs_topo_core(l->w->topo, (int)t->cores[i]);

        npus += core != NULL ? (size_t)core->npus : 0;
    }
    f->cpus = calloc(npus + 1, sizeof(*f->cpus));
    f->nodes = calloc(t->n_cores, sizeof(*f->nodes));
    if (f->cpus == NULL || f->nodes == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_cores; i++) {
        const struct gs_topo_core *core = gs_topo_core(l->w->topo, (int)t->cores[i]);

        if (core == NULL)
            continue;
        for (int p = 0; p < gs_topo_core_threads(core, tpc); p++)
            f->cpus[f->ncpus++] = core->pus[p];
        f->nodes[f->nnodes++] = core->numa_node;
    }
    return task_mem_policy(l, t, f);
}

/*
 * The NIC for the task's GPU. With one task per GPU each task sees all of the node's GPUs
 * and drives GPU LOCAL_RANK (the one the scheduler put its cores next to); otherwise the
 * task's first GPU stands for its set.
 */
static const struct gs_topo_nic *task_nic(const struct launch *l, const Gs__TaskAssignment *t)
{
    const struct gs_topo *topo = l->w->topo;
    uint32_t gpu;

    if (topo == NULL || t->n_gpus == 0)
        return NULL;
    gpu = l->gpu_per_task && t->local_rank < t->n_gpus ? t->gpus[t->local_rank] : t->gpus[0];
    return gs_topo_nic(topo, gs_topo_gpu_nearest_nic(topo, (int)gpu));
}

static int output_path(const struct launch *l, const char *pattern, uint32_t rank,
                       struct gs_buf *out)
{
    struct gs_pattern_vars vars = {
        .job_id = l->msg->job_id,
        .rank = rank,
        .node = l->w->node_name,
        .job_name = l->msg->job_name,
        .user = l->user,
        .slurm = l->slurm,
        .array_job_id = l->msg->array_job_id,
        .array_task_id = l->msg->array_task_id,
        .node_rank = l->node_rank,
        .step = l->msg->step,
    };

    return gs_jobspec_expand_pattern(pattern, &vars, out);
}

/* sbatch --input's file for rank: the pattern expanded, and against the workdir when
 * relative, so that a failure to open it names the whole path. */
static int input_path(const struct launch *l, const Gs__RunSpec *run, uint32_t rank,
                      struct gs_buf *out)
{
    struct gs_buf rel = GS_BUF_INIT;
    int rc = output_path(l, run->stdin_pattern, rank, &rel);

    if (rc == 0 && rel.len == 0)
        rc = -EINVAL;
    else if (rc == 0 && rel.data[0] != '/' && run->workdir[0] == '/')
        rc = gs_path_absolute(run->workdir, rel.data, out);
    else if (rc == 0)
        rc = gs_buf_append_str(out, rel.data);
    gs_buf_release(&rel);
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* Fills f (zeroed by the caller; release it even on failure). Returns 0 or -ENOMEM. */
static int task_facts_init(const struct launch *l, const Gs__TaskAssignment *t,
                           struct task_facts *f)
{
    f->bus_ids = calloc(t->n_gpus + 1, sizeof(*f->bus_ids));
    f->cores = calloc(t->n_cores + 1, sizeof(*f->cores));
    if (f->bus_ids == NULL || f->cores == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_gpus; i++) {
        const struct gs_topo_gpu *g =
            l->w->topo != NULL ? gs_topo_gpu(l->w->topo, (int)t->gpus[i]) : NULL;
        f->bus_ids[i] = g != NULL ? g->pci_bus_id : "";
    }
    if (t->n_cores > 0) {
        memcpy(f->cores, t->cores, t->n_cores * sizeof(*f->cores));
        gs_sort(f->cores, t->n_cores, sizeof(*f->cores), cmp_u32);
    }
    f->nic = task_nic(l, t);
    return task_binding(l, t, f);
}

static int build_task_env(const struct launch *l, const Gs__TaskAssignment *t,
                          const struct task_facts *f, char *const *task_env, char ***ret_envp)
{
    struct wrk_task_env te = {
        .job_id = l->msg->job_id,
        .job_name = l->msg->job_name,
        .nodelist = l->nodelist,
        .rank = t->rank,
        .local_rank = t->local_rank,
        .world_size = l->msg->world_size,
        .local_world_size = (uint32_t)l->msg->n_tasks,
        .node_rank = l->node_rank,
        .master_addr = l->msg->master_addr,
        .master_port = l->msg->master_port,
        .gpus = t->gpus,
        .ngpus = t->n_gpus,
        .user = l->user[0] ? l->user : NULL,
        .home = l->home[0] ? l->home : NULL,
        .job_env = l->job_env,
        .gpu_bus_ids = f->bus_ids,
        .cores = f->cores,
        .ncores = t->n_cores,
        .nic_name = f->nic != NULL ? f->nic->name : NULL,
        .nic_ib_device = f->nic != NULL ? f->nic->ib_device : NULL,
        .nccl_nic_hints = l->bind,
        .slurm = l->slurm,
        .batch = l->batch || l->mpi || l->torchrun, /* a leader or agent is no rank */
        .step = l->msg->step,
        .node_name = l->w->node_name,
        .node_gpus = l->here != NULL ? l->here->gpus : NULL,
        .n_node_gpus = l->here != NULL ? l->here->n_gpus : 0,
        .node_cpus = l->here != NULL ? (uint32_t)l->here->n_cores : 0,
        .step_nodes = l->step_nodes,
        .step_node_tasks = l->step_node_tasks,
        .n_step_nodes = l->msg->n_allocation,
        .task_pid_slot = l->slurm,
        .cli_socket = wrk_cli_socket(l->w),
        .slurm_bin = l->w->slurm_bin[0] != '\0' ? l->w->slurm_bin : NULL,
        .task_env = task_env,
    };

    return wrk_env_build(&te, ret_envp);
}

/* The slot wrk_env_build() left for SLURM_TASK_PID, for the child to fill. */
static char *pid_slot(char **envp)
{
    static const char key[] = "SLURM_TASK_PID=";

    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
        if (strncmp(envp[i], key, sizeof(key) - 1) == 0 &&
            strlen(envp[i]) >= sizeof(key) - 1 + WRK_ENV_PID_ROOM)
            return envp[i];
    }
    return NULL;
}

/*
 * Writes the batch script to a new private file in the worker's script directory, owned by
 * the task's user with mode 0700 so that only they can read or run it. Returns 0 with the
 * path in *path, or a negative errno with err saying what failed.
 */
static int write_script(const struct launch *l, struct gs_buf *path, struct gs_error *err)
{
    const char *script = l->msg->run->script;
    size_t len = strlen(script), off = 0;
    int fd, rc = 0;

    rc = gs_buf_printf(path, "%s/gsched-batch-%llu-XXXXXX", l->w->script_dir,
                       (unsigned long long)l->msg->job_id);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "out of memory");
    fd = mkostemp(path->data, O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, -errno, 0, 0, "batch script in %s: %s", l->w->script_dir,
                            gs_strerror(-errno));
    while (rc == 0 && off < len) {
        ssize_t n = write(fd, script + off, len - off);

        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (rc == 0 && l->set_user && fchown(fd, l->msg->user->uid, l->msg->user->gid) < 0)
        rc = -errno;
    if (rc == 0 && fchmod(fd, 0700) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "batch script %s: %s", path->data, gs_strerror(rc));
        unlink(path->data);
    }
    return rc;
}

/* The batch shell's command line: the script itself when it names its interpreter ("#!"),
 * else /bin/sh running it; then its arguments. The strings are borrowed. */
static int batch_argv(const struct launch *l, const char *path, char ***ret_argv)
{
    const Gs__RunSpec *run = l->msg->run;
    bool shebang = strncmp(run->script, "#!", 2) == 0;
    char **argv = calloc(run->n_argv + 3, sizeof(*argv));
    size_t n = 0;

    if (argv == NULL)
        return -ENOMEM;
    if (!shebang)
        argv[n++] = "/bin/sh";
    argv[n++] = (char *)path;
    for (size_t i = 0; i < run->n_argv; i++)
        argv[n++] = l->argv[i];
    *ret_argv = argv;
    return 0;
}

/* Whether and how the sbatch --signal warning reaches this task (see the top of the file). */
static void task_warning(const struct launch *l, struct wrk_task_opts *opts)
{
    const Gs__RunSpec *run = l->msg->run;
    bool wanted = l->batch ? run->warn_batch_only : !run->warn_batch_only;

    if (run->warn_signal == 0 || !wanted)
        return;
    opts->warn_signal = (int)run->warn_signal;
    opts->warn_before_ms = (uint64_t)run->warn_before_s * 1000;
    opts->warn_leader_only = l->batch;
}

/* sbatch's default output file, when the job named none. */
static const char *default_stdout(const struct launch *l)
{
    if (!l->slurm)
        return GS_JOBSPEC_DEFAULT_STDOUT;
    return l->msg->array_job_id != 0 ? "slurm-%A_%a.out" : "slurm-%j.out";
}

/*
 * Whether a task alone writes the file pattern names: the job's only task, a batch shell,
 * or a pattern with the task's rank (%t; Slurm's %4t too). Only such a file is emptied at
 * start (run.truncate_output): one that tasks share, maybe from several nodes, could lose
 * what another task had already written to it.
 */
static bool writes_alone(const struct launch *l, const char *pattern)
{
    if (l->batch || l->msg->world_size <= 1)
        return true;
    for (const char *p = pattern; *p != '\0'; p++) {
        if (*p != '%')
            continue;
        p++;
        while (l->msg->run->slurm && *p >= '0' && *p <= '9')
            p++;
        if (*p == 't')
            return true;
        if (*p == '\0')
            break;
    }
    return false;
}

/* The PUs of this node's cores of the job, when binding: the job's cpuset. */
static int job_pus(const struct launch *l, int **ret, int *n)
{
    size_t npus = 0;

    *ret = NULL;
    *n = 0;
    if (!l->bind || l->here == NULL || l->here->n_cores == 0)
        return 0;
    for (size_t i = 0; i < l->here->n_cores; i++) {
        const struct gs_topo_core *core = gs_topo_core(l->w->topo, (int)l->here->cores[i]);

        npus += core != NULL ? (size_t)core->npus : 0;
    }
    *ret = calloc(npus + 1, sizeof(**ret));
    if (*ret == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < l->here->n_cores; i++) {
        const struct gs_topo_core *core = gs_topo_core(l->w->topo, (int)l->here->cores[i]);

        for (int p = 0; core != NULL && p < core->npus; p++)
            (*ret)[(*n)++] = core->pus[p];
    }
    return 0;
}

/* The /dev/nvidiaN minor of GPU g: the driver's /proc says it by bus id; a GPU it does not
 * list (synthetic GPUs, no driver) is taken to be minor g, the driver's usual order. */
static unsigned gpu_minor(const struct gs_topo *topo, int g)
{
    const struct gs_topo_gpu *gpu = gs_topo_gpu(topo, g);
    char path[128], text[2048];
    const char *at;

    if (gpu == NULL || gpu->pci_bus_id[0] == '\0')
        return (unsigned)g;
    snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", gpu->pci_bus_id);
    if (gs_path_read_small(path, text, sizeof(text)) <= 0 ||
        (at = strstr(text, "Device Minor:")) == NULL)
        return (unsigned)g;
    return (unsigned)strtoul(at + strlen("Device Minor:"), NULL, 10);
}

/* The minors of this node's GPUs the job was not given (its cgroup denies them). */
static int gpus_denied(const struct launch *l, unsigned **ret, int *n)
{
    int ngpus = l->w->topo != NULL ? gs_topo_ngpus(l->w->topo) : 0;

    *ret = NULL;
    *n = 0;
    if (ngpus <= 0)
        return 0;
    *ret = calloc((size_t)ngpus, sizeof(**ret));
    if (*ret == NULL)
        return -ENOMEM;
    for (int g = 0; g < ngpus; g++) {
        bool given = false;

        for (size_t i = 0; l->here != NULL && i < l->here->n_gpus; i++)
            given = given || l->here->gpus[i] == (uint32_t)g;
        if (!given)
            (*ret)[(*n)++] = gpu_minor(l->w->topo, g);
    }
    return 0;
}

/* The job's cgroup on this node (made, with its limits, by its first task here) and the
 * step's in it: the descriptors the task's child writes itself into; their count, or a
 * negative errno. */
static int enter_cgroup(struct launch *l, int fds[WRK_CG_MAX_FDS], struct gs_error *err)
{
    struct wrk_cg_limits lim = {
        .mem_bytes = l->here != NULL ? l->here->mem_mib << 20 : 0,
        .pids_max = l->w->job_pids_max,
    };
    struct gs_buf why = GS_BUF_INIT;
    unsigned *deny = NULL;
    int *pus = NULL, rc;

    if (wrk_cg_mode(l->w->cg) == WRK_CG_NONE)
        return 0;
    rc = job_pus(l, &pus, &lim.ncpus);
    lim.cpus = pus;
    if (rc == 0)
        rc = gpus_denied(l, &deny, &lim.ndeny_gpus);
    lim.deny_gpus = deny;
    if (rc == 0)
        rc = wrk_cg_job_enter(l->w->cg, l->msg->job_id, l->msg->step, &lim, fds, &why);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "the job's cgroup: %s",
                     why.data != NULL ? why.data : gs_strerror(rc));
    gs_buf_release(&why);
    free(pus);
    free(deny);
    return rc;
}

static int start_task(struct launch *l, const Gs__TaskAssignment *t, struct gs_error *err)
{
    const Gs__RunSpec *run = l->msg->run;
    const Gs__TaskLimits *lim = l->msg->limits;
    struct gs_buf out = GS_BUF_INIT, errp = GS_BUF_INIT, inp = GS_BUF_INIT, script = GS_BUF_INIT;
    struct wrk_launch_rlimit rlimits[GS_RLIMIT_COUNT];
    int nrlimits = 0;
    struct wrk_launch_spec spec = {.argv = l->argv};
    struct wrk_task_id id = {.job_id = l->msg->job_id, .step = l->msg->step, .rank = t->rank};
    struct wrk_task_opts opts = {.time_limit_ms = lim != NULL ? lim->time_limit_s * 1000 : 0,
                                 .capture = l->capture};

    struct task_facts f = {0};
    char **envp = NULL, **argv = NULL, **mpi_env = NULL;
    int cg_fds[WRK_CG_MAX_FDS];
    int pmi_fd = -1;
    int rc;

    /* srun's stdin (StepInput, worker.c): every task of the step or one (srun --input);
     * its --pty terminal: task 0's. */
    opts.input = l->capture && l->msg->step_input &&
                 (l->msg->step_input_all || t->rank == l->msg->step_input_rank);
    opts.pty = l->capture && l->msg->step_pty && t->rank == 0;
    opts.pty_rows = (uint16_t)(l->msg->pty_rows <= UINT16_MAX ? l->msg->pty_rows : 0);
    opts.pty_cols = (uint16_t)(l->msg->pty_cols <= UINT16_MAX ? l->msg->pty_cols : 0);
    rc = task_facts_init(l, t, &f);
    if (rc == 0 && l->pmix &&
        (rc = wrk_pmix_task_env(l->w->pmix, l->msg->job_id, l->msg->step, t->rank, &mpi_env)) < 0) {
        rc = gs_error_set(err, rc, 0, 0, "PMIx has no variables for rank %u: %s", t->rank,
                          gs_strerror(rc));
        goto out;
    }
    if (rc == 0 && l->pmi &&
        (rc = wrk_pmi_task(l->w->pmi, l->msg->job_id, l->msg->step, t->rank, &pmi_fd, &mpi_env)) <
            0) {
        rc = gs_error_set(err, rc, 0, 0, "PMI has no socket for rank %u: %s", t->rank,
                          gs_strerror(rc));
        goto out;
    }
    if (rc == 0)
        rc = build_task_env(l, t, &f, mpi_env, &envp);
    if (rc == 0 && !l->capture)
        rc = output_path(l, run->stdout_pattern[0] ? run->stdout_pattern : default_stdout(l),
                         t->rank, &out);
    if (rc == 0 && !l->capture && run->stderr_pattern[0] != '\0')
        rc = output_path(l, run->stderr_pattern, t->rank, &errp);
    /* sbatch --input, or srun --input=FILE (a step: captured output, a file for stdin) */
    if (rc == 0 && !opts.input && !opts.pty && run->stdin_pattern[0] != '\0')
        rc = input_path(l, run, t->rank, &inp);
    if (rc < 0) {
        rc = gs_error_set(err, rc, 0, 0, "cannot prepare the task: %s", gs_strerror(rc));
        goto out;
    }
    if (l->batch) {
        rc = write_script(l, &script, err);
        if (rc < 0)
            goto out;
        opts.remove_on_exit = script.data; /* from here on the task table removes it */
        rc = batch_argv(l, script.data, &argv);
        if (rc < 0) {
            unlink(script.data);
            rc = gs_error_set(err, rc, 0, 0, "out of memory");
            goto out;
        }
        spec.argv = argv;
    }
    task_warning(l, &opts);
    spec.envp = envp;
    spec.pid_var = pid_slot(envp);
    spec.workdir = run->workdir[0] != '\0' ? run->workdir : NULL;
    spec.stdout_path = out.data;
    spec.stderr_path = errp.data;
    spec.stdin_path = inp.data;
    spec.truncate_output =
        run->truncate_output &&
        writes_alone(l, run->stdout_pattern[0] ? run->stdout_pattern : default_stdout(l)) &&
        (run->stderr_pattern[0] == '\0' || writes_alone(l, run->stderr_pattern));
    spec.set_user = l->set_user;
    spec.uid = l->msg->user != NULL ? l->msg->user->uid : 0;
    spec.gid = l->msg->user != NULL ? l->msg->user->gid : 0;
    for (size_t i = 0; i < run->n_rlimits && i < GS_RLIMIT_COUNT; i++) {
        int res = gs_rlimit_resource(run->rlimits[i]->name);

        if (res >= 0)
            rlimits[nrlimits++] = (struct wrk_launch_rlimit){res, run->rlimits[i]->soft};
    }
    spec.rlimits = rlimits;
    spec.nrlimits = nrlimits;
    spec.mem_limit_bytes = lim != NULL ? lim->mem_limit_mib << 20 : 0;
    spec.max_open_files = lim != NULL ? lim->max_open_files : 0;
    spec.ncpus = f.ncpus;
    spec.cpus = f.cpus;
    spec.nmem_nodes = f.nnodes;
    spec.mem_nodes = f.nodes;
    spec.mem_strict = f.mem_strict;
    spec.stderr_note = t->stderr_note;
    spec.pmi_fd = pmi_fd > 2 ? pmi_fd : 0;
    rc = enter_cgroup(l, cg_fds, err);
    if (rc < 0)
        goto out;
    spec.cgroup_fds = cg_fds;
    spec.ncgroup_fds = rc;
    rc = wrk_tasks_start(l->w->tasks, &id, &spec, &opts, err);
    for (int i = 0; i < spec.ncgroup_fds; i++)
        close(cg_fds[i]);
out:
    free(argv);
    gs_buf_release(&script);
    wrk_env_free(envp);
    wrk_pmix_env_free(mpi_env);
    if (pmi_fd >= 0)
        close(pmi_fd); /* the task's own now, or no task's */
    task_facts_release(&f);
    gs_buf_release(&out);
    gs_buf_release(&errp);
    gs_buf_release(&inp);
    return rc;
}

static void fail_task(struct launch *l, size_t i, int code, const char *message)
{
    const Gs__TaskAssignment *t = l->msg->tasks[i];
    struct wrk_task_id id = {.job_id = l->msg->job_id, .step = l->msg->step, .rank = t->rank};

    l->results[i].code = code;
    snprintf(l->messages[i], sizeof(l->messages[i]), "%s", message);
    GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u error=\"%s\" launch failed",
           (unsigned long long)l->msg->job_id, l->msg->step, t->rank, message);
    wrk_record_exit(l->w, &id, l->msg->attempt, NULL, GS__END_REASON__END_REASON_LAUNCH_FAILED,
                    message);
}

static void send_reply(struct launch *l, uint64_t request_id)
{
    Gs__LaunchTasksReply reply = GS__LAUNCH_TASKS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.job_id = l->msg->job_id;
    reply.attempt = l->msg->attempt;
    reply.n_results = l->msg->n_tasks;
    reply.results = l->result_ptrs;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LAUNCH_TASKS_REPLY;
    env.launch_tasks_reply = &reply;
    wrk_send(l->w, &env);
}

static bool one_task_per_gpu(const Gs__LaunchTasks *m)
{
    const Gs__TaskAssignment *first = m->n_tasks > 0 ? m->tasks[0] : NULL;

    for (size_t i = 0; first != NULL && i < m->n_tasks; i++) {
        const Gs__TaskAssignment *t = m->tasks[i];

        if (t->n_gpus != m->n_tasks ||
            memcmp(t->gpus, first->gpus, t->n_gpus * sizeof(*t->gpus)) != 0)
            return false;
    }
    return first != NULL;
}

/* Whether binding is possible, saying once per worker when it is not but would matter. */
static void decide_binding(struct launch *l)
{
    bool wanted = false;

    l->bind = l->w->topo != NULL && gs_topo_is_this_system(l->w->topo);
    l->gpu_per_task = one_task_per_gpu(l->msg);
    for (size_t i = 0; i < l->msg->n_tasks; i++)
        wanted = wanted || l->msg->tasks[i]->n_cores > 0 || l->msg->tasks[i]->n_gpus > 0;
    if (l->bind || !wanted || l->w->warned_unbound)
        return;
    l->w->warned_unbound = true;
    GS_LOG(GS_LOG_WARN,
           "job=%llu the topology does not describe this machine: tasks start without cpu or "
           "memory binding and without nccl nic hints; said once per worker",
           (unsigned long long)l->msg->job_id);
}

/*
 * An srun --mpi=pmix or --mpi=pmi2 step: its namespace on this node's PMIx server, or its
 * key/value space on the PMI one (either started if need be).
 */
static int mpi_step(struct launch *l, char *why, size_t why_size)
{
    const Gs__LaunchTasks *m = l->msg;
    struct wrk_pmix_step s = {
        .job_id = m->job_id,
        .step = m->step,
        .attempt = m->attempt,
        .nodes = l->step_nodes,
        .nnodes = m->n_allocation,
        .here = l->node_rank,
        .rank_nodes = m->rank_nodes,
        .nranks = m->n_rank_nodes,
        .uid = m->user != NULL ? m->user->uid : 0,
        .gid = m->user != NULL ? m->user->gid : 0,
    };
    struct gs_error err;
    int rc;

    gs_error_clear(&err);
    if (l->here == NULL || m->n_rank_nodes == 0) {
        snprintf(why, why_size, "%s: the launch says no rank's node%s", l->pmix ? "PMIx" : "PMI",
                 l->here == NULL ? ", nor this one" : "");
        return -EINVAL;
    }
    if (l->pmix) {
        rc = wrk_pmix_start(l->w, &err);
        if (rc == 0)
            rc = wrk_pmix_step_add(l->w->pmix, &s, &err);
    } else {
        rc = wrk_pmi_start(l->w);
        if (rc == 0)
            rc = wrk_pmi_step_add(l->w->pmi, &s, &err);
        else
            gs_error_set(&err, rc, 0, 0, "PMI: %s", gs_strerror(rc));
    }
    if (rc < 0)
        snprintf(why, why_size, "%s", err.msg);
    return rc;
}

static int prepare(struct launch *l, char *why, size_t why_size)
{
    size_t n = l->msg->n_tasks;
    int rc;

    l->results = calloc(n + 1, sizeof(*l->results));
    l->result_ptrs = calloc(n + 1, sizeof(*l->result_ptrs));
    l->messages = calloc(n + 1, sizeof(*l->messages));
    if (l->results == NULL || l->result_ptrs == NULL || l->messages == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        gs__task_launch_result__init(&l->results[i]);
        l->results[i].rank = l->msg->tasks[i]->rank;
        l->results[i].message = l->messages[i];
        l->result_ptrs[i] = &l->results[i];
    }
    l->slurm = l->msg->run != NULL && l->msg->run->slurm;
    l->batch = l->msg->run != NULL && l->msg->run->batch && l->msg->step == 0 &&
               l->msg->run->script != NULL && l->msg->run->script[0] != '\0';
    l->mpi = l->msg->run != NULL && l->msg->run->launcher == GS__LAUNCHER__LAUNCHER_MPI &&
             l->msg->step == 0;
    l->torchrun = l->msg->run != NULL && l->msg->run->launcher == GS__LAUNCHER__LAUNCHER_TORCHRUN &&
                  l->msg->step == 0;
    l->capture = l->msg->step >= 1;
    l->pmix = l->capture && l->msg->mpi != NULL && strcmp(l->msg->mpi, "pmix") == 0;
    l->pmi = l->capture && l->msg->mpi != NULL && strcmp(l->msg->mpi, "pmi2") == 0;
    rc = describe_allocation(l);
    decide_binding(l);
    if (rc == 0)
        rc = resolve_user(l, why, why_size);
    if (rc == 0 && (l->pmix || l->pmi))
        rc = mpi_step(l, why, why_size);
    if (rc == 0 && (rc = build_argv(l)) == -EINVAL)
        snprintf(why, why_size, "the job has no command or script");
    if (rc == 0)
        rc = build_job_env(l);
    if (rc == 0)
        rc = wrk_job_remember(l->w, l->msg->job_id, l->msg->attempt);
    if (rc == -ENOMEM)
        snprintf(why, why_size, "out of memory");
    return rc;
}

bool wrk_leader_launch(const Gs__LaunchTasks *msg)
{
    const Gs__RunSpec *run = msg->run;

    if (run == NULL || msg->step != 0)
        return false;
    return (run->batch && run->script != NULL && run->script[0] != '\0') ||
           run->launcher == GS__LAUNCHER__LAUNCHER_MPI;
}

void wrk_handle_launch(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id)
{
    if (defer_launch(w, msg, request_id))
        return;
    if (wrk_data_launch(w, msg, request_id)) /* staged first, launched from there */
        return;
    wrk_launch_now(w, msg, request_id, NULL, 0, NULL);
}

void wrk_launch_now(struct wrk_ctx *w, const Gs__LaunchTasks *msg, uint64_t request_id,
                    char *const *extra_env, int fail_rc, const char *fail_why)
{
    struct launch l = {.w = w, .msg = msg, .extra_env = extra_env};
    struct wrk_job *job;
    char why[256] = "";
    int rc;

    rc = prepare(&l, why, sizeof(why));
    /* The record prepare() made or updated (there whenever rc is 0); when it failed early,
     * one the job may already have, with or without tasks. Held to the end: nothing below
     * frees a record, since a task's exit comes only on a later turn of the loop. */
    job = wrk_job_find(w, msg->job_id);
    if (rc == 0 && fail_rc < 0) {
        rc = fail_rc;
        snprintf(why, sizeof(why), "%s", fail_why != NULL ? fail_why : "launch refused");
    }

    /* srun's output window (output_flow.c), before the first output can come */
    if (rc == 0 && l.capture && msg->step_output_window > 0 &&
        wrk_flow_open(w, msg->job_id, msg->step, msg->step_output_window) < 0)
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u out of memory: its output is not held for srun",
               (unsigned long long)msg->job_id, msg->step);
    for (size_t i = 0; l.results != NULL && i < msg->n_tasks; i++) {
        struct gs_error err;

        if (rc < 0) {
            fail_task(&l, i, rc, why);
            continue;
        }
        gs_error_clear(&err);
        if (start_task(&l, msg->tasks[i], &err) < 0) {
            fail_task(&l, i, err.code, err.msg);
            continue;
        }
        struct wrk_task_id id = {
            .job_id = msg->job_id, .step = msg->step, .rank = msg->tasks[i]->rank};

        if (job != NULL)
            job->ntasks++;
        l.results[i].pid = wrk_tasks_pid(w->tasks, &id);
        if (w->ledger != NULL &&
            wrk_ledger_add(w->ledger, l.results[i].pid, msg->job_id, msg->step, id.rank) < 0)
            GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u task ledger not updated",
                   (unsigned long long)msg->job_id, msg->step, id.rank);
        GS_LOG(GS_LOG_INFO,
               "job=%llu step=%u rank=%u gpus=%zu batch=%d threads_per_core=%u task started",
               (unsigned long long)msg->job_id, msg->step, id.rank, msg->tasks[i]->n_gpus,
               (int)l.batch, msg->run != NULL ? msg->run->threads_per_core : 0);
    }
    if (l.results != NULL)
        send_reply(&l, request_id);
    /* No task of a PMIx or PMI step started here: no exit will end its namespace. */
    if ((l.pmix || l.pmi) && wrk_tasks_count_step(w->tasks, msg->job_id, msg->step) == 0)
        wrk_mpi_step_end(w, msg->job_id, msg->step);
    if (wrk_tasks_count_step(w->tasks, msg->job_id, msg->step) == 0)
        wrk_flow_close(w, msg->job_id, msg->step);
    if (job != NULL && job->ntasks <= 0)
        wrk_job_forget(w, job); /* frees it: job is not used again */
    free_strv(l.job_env);
    free_strv(l.argv);
    free(l.results);
    free(l.result_ptrs);
    free(l.messages);
    free(l.step_nodes);
    free(l.step_node_tasks);
}

void wrk_handle_signal(struct wrk_ctx *w, const Gs__SignalTasks *msg)
{
    enum wrk_end_reason reason =
        msg->end_reason == GS__END_REASON__END_REASON_TIMEOUT ? WRK_END_TIMEOUT : WRK_END_CANCELLED;
    /* batch_only is the batch shell alone: step 0, its own pid rather than its group. */
    struct wrk_task_match m = {
        .job_id = msg->job_id,
        .all_steps = msg->all_steps && !msg->batch_only,
        .step = msg->batch_only ? 0 : msg->step,
        .ranks = msg->batch_only ? NULL : msg->ranks,
        .nranks = msg->batch_only ? 0 : msg->n_ranks,
    };
    int n;

    wrk_data_job_signal(w, msg); /* a launch still staging its data is dropped */

    if (msg->signal == 0)
        n = wrk_tasks_kill(w->tasks, &m, reason);
    else
        n = wrk_tasks_signal(w->tasks, &m, (int)msg->signal, msg->batch_only);
    GS_LOG(GS_LOG_INFO,
           "job=%llu step=%u all_steps=%d batch_only=%d ranks=%zu signal=%u tasks=%d "
           "reason=\"%s\" signalled",
           (unsigned long long)msg->job_id, msg->step, (int)msg->all_steps, (int)msg->batch_only,
           msg->n_ranks, msg->signal, n, msg->reason != NULL ? msg->reason : "");
}

/* The new limit into a deferred launch (packed): it starts with it, from its own start. */
static int patch_deferred(struct wrk_job *j, uint64_t time_limit_s)
{
    Gs__TaskLimits none = GS__TASK_LIMITS__INIT;
    Gs__TaskLimits *saved;
    Gs__LaunchTasks *msg = gs__launch_tasks__unpack(NULL, j->deferred_len, j->deferred);
    uint8_t *buf = NULL;
    size_t len;
    int rc = -ENOMEM;

    if (msg == NULL)
        return -ENOMEM; /* it packed here; only memory can be short */
    saved = msg->limits;
    if (msg->limits == NULL)
        msg->limits = &none;
    msg->limits->time_limit_s = time_limit_s;
    len = gs__launch_tasks__get_packed_size(msg);
    buf = malloc(len > 0 ? len : 1);
    if (buf == NULL)
        goto out;
    gs__launch_tasks__pack(msg, buf);
    free(j->deferred);
    j->deferred = buf;
    j->deferred_len = len;
    rc = 0;
out:
    msg->limits = saved;
    gs__launch_tasks__free_unpacked(msg, NULL);
    return rc;
}

void wrk_handle_limit(struct wrk_ctx *w, const Gs__JobLimitUpdate *msg)
{
    struct wrk_job *j = wrk_job_find(w, msg->job_id);
    struct wrk_task_match m = {.job_id = msg->job_id, .all_steps = true};
    uint64_t now = gs_clock_wall_ms();
    /* The job's start by this clock; elapsed_ms is a duration, so clocks need not agree. */
    uint64_t since = msg->elapsed_ms > 0 && msg->elapsed_ms < now ? now - msg->elapsed_ms : 0;
    uint64_t limit_ms =
        msg->time_limit_s > UINT64_MAX / 1000 ? UINT64_MAX : msg->time_limit_s * 1000;
    int n = 0, rc = 0;

    if (j != NULL && j->attempt == msg->attempt)
        n = wrk_tasks_set_limit(w->tasks, &m, limit_ms, since);
    else if (j != NULL && j->deferred != NULL && msg->attempt > j->attempt)
        rc = patch_deferred(j, msg->time_limit_s);
    GS_LOG(rc == 0 ? GS_LOG_INFO : GS_LOG_ERROR,
           "job=%llu attempt=%u time_limit_s=%llu elapsed_ms=%llu tasks=%d deferred=%d rc=%d "
           "time limit updated",
           (unsigned long long)msg->job_id, msg->attempt, (unsigned long long)msg->time_limit_s,
           (unsigned long long)msg->elapsed_ms, n, j != NULL && j->deferred != NULL, rc);
}
