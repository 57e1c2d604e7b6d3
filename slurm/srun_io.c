/*
 * srun_io.c: where a step's standard streams go, as Slurm's srun -i/-o/-e say it ("IO
 * Redirection" in srun(1)). Each option takes a mode: all (the default: every task, srun's
 * own stream), none, a task id (that task alone), or a file name pattern. The input's
 * modes become the StepLaunchRequest (srun_args.c; the workers open an input file where
 * the task runs). The output's are kept here: srun opens the files itself, on its node,
 * once gschedd has said where each rank runs, one file per distinct expanded name, so
 * "-o out-%t.txt" writes a file per task and "-o out-%N.txt" one per node. Relative names
 * are against the step's working directory (-D), as the tasks' are. Single-threaded.
 */
#include "slurm/srun.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/hostlist.h"
#include "common/path.h"

int cli_srun_io_parse(const char *opt, const char *value, struct cli_srun_io *io)
{
    const char *bad;
    char *end;
    unsigned long long rank;

    io->given = true;
    io->pattern = NULL;
    if (strcmp(value, "all") == 0) {
        io->mode = CLI_SRUN_IO_ALL;
        return 0;
    }
    if (strcmp(value, "none") == 0) {
        io->mode = CLI_SRUN_IO_NONE;
        return 0;
    }
    if (value[0] >= '0' && value[0] <= '9') {
        errno = 0;
        rank = strtoull(value, &end, 10);
        if (*end == '\0') {
            if (errno != 0 || rank >= UINT32_MAX) {
                fprintf(stderr, "srun: error: --%s=%s: no such task id\n", opt, value);
                return -EINVAL;
            }
            io->mode = CLI_SRUN_IO_TASK;
            io->rank = (uint32_t)rank;
            return 0;
        }
    }
    if (value[0] == '\0') {
        fprintf(stderr, "srun: error: --%s: an empty file name\n", opt);
        return -EINVAL;
    }
    bad = gs_jobspec_slurm_bad_placeholder(value);
    if (bad != NULL) {
        fprintf(stderr,
                "srun: error: --%s=%s: unknown placeholder '%.2s' (%%j %%J %%s %%A %%a %%x %%N "
                "%%n %%t %%u %%%%)\n",
                opt, value, bad);
        return -EINVAL;
    }
    io->mode = CLI_SRUN_IO_FILE;
    io->pattern = value;
    return 0;
}

int cli_srun_io_request(struct cli_srun_args *a)
{
    const struct cli_srun_io *in = &a->in;

    a->req.input_acks = true;
    a->req.output_acks = true;
    a->req.input = in->mode == CLI_SRUN_IO_ALL || in->mode == CLI_SRUN_IO_TASK;
    a->req.input_all = in->mode == CLI_SRUN_IO_ALL;
    a->req.input_rank = in->mode == CLI_SRUN_IO_TASK ? in->rank : 0;
    a->req.stdin_pattern = in->mode == CLI_SRUN_IO_FILE ? (char *)in->pattern : "";
    if (a->req.pty && in->given && in->mode != CLI_SRUN_IO_ALL &&
        !(in->mode == CLI_SRUN_IO_TASK && in->rank == 0)) {
        fprintf(stderr, "srun: error: --pty: task 0's terminal is its input (--input=0)\n");
        return -EINVAL;
    }
    return 0;
}

/* --- output ----------------------------------------------------------------------------------- */

struct srun_file {
    char *path;
    int fd;
};

/* What the patterns' placeholders stand for, besides the task: srun's surroundings. */
struct srun_vars {
    struct gs_pattern_vars v;
    char **job_nodes; /* $SLURM_JOB_NODELIST expanded, for %n; NULL without it */
    char user[64];
};

static void vars_init(struct srun_vars *sv, const struct cli_srun_args *a, uint32_t step_id)
{
    const char *array_job = getenv("SLURM_ARRAY_JOB_ID");
    const char *array_task = getenv("SLURM_ARRAY_TASK_ID");
    const char *nodelist = getenv("SLURM_JOB_NODELIST");
    struct passwd *pw = getpwuid(getuid());
    struct gs_error err;
    size_t n;

    memset(sv, 0, sizeof(*sv));
    snprintf(sv->user, sizeof(sv->user), "%s", pw != NULL ? pw->pw_name : "");
    sv->v.slurm = true;
    sv->v.job_id = a->job_id;
    sv->v.step = step_id + 1;
    sv->v.user = sv->user;
    sv->v.job_name = getenv("SLURM_JOB_NAME") != NULL ? getenv("SLURM_JOB_NAME") : "";
    if (array_job != NULL && array_task != NULL) {
        sv->v.array_job_id = strtoull(array_job, NULL, 10);
        sv->v.array_task_id = (uint32_t)strtoul(array_task, NULL, 10);
    }
    if (nodelist != NULL && gs_hostlist_expand(nodelist, &sv->job_nodes, &n, &err) < 0)
        sv->job_nodes = NULL; /* %n then counts the step's nodes */
}

/* %n: the node's index in the job (Slurm's "relative to current job"), else in the step. */
static uint32_t job_node_index(const struct srun_vars *sv, const char *node, uint32_t step_index)
{
    for (uint32_t i = 0; sv->job_nodes != NULL && sv->job_nodes[i] != NULL; i++) {
        if (strcmp(sv->job_nodes[i], node) == 0)
            return i;
    }
    return step_index;
}

/* The fd of path, opened once for every task and stream whose pattern names it. */
static int file_fd(struct cli_srun_sinks *k, const char *path, bool append)
{
    struct srun_file *grown;
    int fd;

    for (size_t i = 0; i < k->nfiles; i++) {
        if (strcmp(k->files[i].path, path) == 0)
            return k->files[i].fd;
    }
    grown = realloc(k->files, (k->nfiles + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    k->files = grown;
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0666);
    if (fd < 0)
        return -errno;
    k->files[k->nfiles].path = strdup(path);
    if (k->files[k->nfiles].path == NULL) {
        close(fd);
        return -ENOMEM;
    }
    k->files[k->nfiles++].fd = fd;
    return fd;
}

/* Where one task's stream goes under io: std_fd, a file, or nowhere (-1). */
static int task_sink(struct cli_srun_sinks *k, const struct cli_srun_args *a,
                     const struct cli_srun_io *io, int std_fd, struct srun_vars *sv)
{
    struct gs_buf name = GS_BUF_INIT, path = GS_BUF_INIT;
    int rc;

    switch (io->mode) {
    case CLI_SRUN_IO_ALL:
        return std_fd;
    case CLI_SRUN_IO_NONE:
        return -1;
    case CLI_SRUN_IO_TASK:
        return sv->v.rank == io->rank ? std_fd : -1;
    case CLI_SRUN_IO_FILE:
        break;
    }
    rc = gs_jobspec_expand_pattern(io->pattern, &sv->v, &name);
    if (rc == 0 && name.len == 0)
        rc = -EINVAL;
    if (rc == 0)
        rc = gs_path_absolute(a->req.workdir != NULL && a->req.workdir[0] == '/' ? a->req.workdir
                                                                                 : ".",
                              name.data, &path);
    if (rc == 0)
        rc = file_fd(k, path.data, a->append);
    if (rc < 0)
        fprintf(stderr, "srun: error: cannot open %s: %s\n",
                path.data != NULL ? path.data : io->pattern, gs_strerror(rc));
    gs_buf_release(&name);
    gs_buf_release(&path);
    return rc < 0 ? -2 : rc;
}

int cli_srun_sinks_open(struct cli_srun_sinks *k, const struct cli_srun_args *a,
                        const Gs__StepLaunchReply *rep)
{
    /* Slurm: -e not given, stderr goes where -o says (to srun's stderr for all and a task) */
    const struct cli_srun_io *err_io = a->err.given ? &a->err : &a->out;
    struct srun_vars sv;
    uint32_t node = 0, left = rep->n_tasks_per_node > 0 ? rep->tasks_per_node[0] : 0;
    int rc = 0;

    memset(k, 0, sizeof(*k));
    k->ntasks = rep->ntasks;
    k->fds = calloc((size_t)rep->ntasks * 2, sizeof(*k->fds));
    k->node_of = calloc(rep->ntasks, sizeof(*k->node_of));
    if (k->fds == NULL || k->node_of == NULL) {
        fprintf(stderr, "srun: error: out of memory\n");
        return -ENOMEM;
    }
    vars_init(&sv, a, rep->step_id);
    for (uint32_t rank = 0; rank < rep->ntasks && rc == 0; rank++) {
        uint32_t at;

        if (rep->n_rank_nodes == rep->ntasks) { /* gschedd 1.28: any distribution */
            at = rep->rank_nodes[rank];
        } else { /* before: block, tasks_per_node in node order */
            while (left == 0 && node + 1 < rep->n_tasks_per_node)
                left = rep->tasks_per_node[++node];
            left -= left > 0;
            at = node;
        }
        k->node_of[rank] = at;
        sv.v.rank = rank;
        sv.v.node = at < rep->n_nodes ? rep->nodes[at] : "";
        sv.v.node_rank = job_node_index(&sv, sv.v.node, at);
        k->fds[rank * 2] = task_sink(k, a, &a->out, STDOUT_FILENO, &sv);
        /* -o FILE alone: stderr into the same file, through the same fd */
        k->fds[rank * 2 + 1] = task_sink(k, a, err_io, STDERR_FILENO, &sv);
        if (k->fds[rank * 2] == -2 || k->fds[rank * 2 + 1] == -2)
            rc = -EIO;
    }
    gs_hostlist_free(sv.job_nodes);
    return rc;
}

int cli_srun_sink_fd(const struct cli_srun_sinks *k, uint32_t rank, int stream)
{
    return k->fds != NULL && rank < k->ntasks ? k->fds[rank * 2 + (stream == 1)] : -1;
}

void cli_srun_sinks_close(struct cli_srun_sinks *k)
{
    for (size_t i = 0; i < k->nfiles; i++) {
        close(k->files[i].fd);
        free(k->files[i].path);
    }
    free(k->files);
    free(k->fds);
    free(k->node_of);
    memset(k, 0, sizeof(*k));
}
