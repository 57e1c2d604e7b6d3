/*
 * srun.h: the two halves of `srun` (slurm/cmd_srun.c) that meet here: srun_args.c reads
 * Slurm's srun options and builds the StepLaunchRequest from them and srun's
 * surroundings ($SLURM_JOB_ID, the current directory, the environment); cmd_srun.c sends
 * it and streams the step. Internal to the CLI; single-threaded.
 */
#ifndef GS_SLURM_SRUN_H
#define GS_SLURM_SRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "common/task_dist.h"
#include "proto/frame.h"

#define CLI_SRUN_ALLOC_OPTS_MAX 64

/* -i, -o or -e (srun_io.c): Slurm's IO redirection modes. */
enum cli_srun_io_mode {
    CLI_SRUN_IO_ALL = 0, /* every task; srun's own stream (the default) */
    CLI_SRUN_IO_NONE,    /* no task: /dev/null */
    CLI_SRUN_IO_TASK,    /* task rank alone */
    CLI_SRUN_IO_FILE,    /* a file name pattern, expanded per task */
};

struct cli_srun_io {
    enum cli_srun_io_mode mode;
    uint32_t rank;       /* CLI_SRUN_IO_TASK */
    const char *pattern; /* CLI_SRUN_IO_FILE: borrowed from argv */
    bool given;
};

/* The command line; req borrows from argv and, once built, from struct cli_srun_owned. */
struct cli_srun_args {
    Gs__StepLaunchRequest req;
    uint64_t job_id;
    const char *chdir;
    const char *nodelist;
    const char *export_spec;
    struct cli_srun_io in, out, err;
    bool append; /* --open-mode=append: output files are appended to, not truncated */
    bool nodes_given;
    bool unbuffered;
    bool kill_bad;
    uint32_t wait_s;      /* -W: seconds after the first exit before the step is ended; 0 none */
    uint32_t immediate_s; /* -I: outside a job, seconds to wait for the allocation; 0 any */
    /* --het-group: the heterogeneous job's components the step runs on, ascending */
    uint32_t het_groups[GS_JOBSPEC_HET_MAX];
    size_t nhet_groups;
    struct gs_dist dist; /* -m, else SLURM_DISTRIBUTION, as req.distribution says it */
    bool dist_given;     /* -m: the tasks get SLURM_DISTRIBUTION set to it */
    bool cpu_bind_given; /* --cpu-bind: the tasks get SLURM_CPU_BIND set to it */
    bool mem_bind_given; /* --mem-bind: the tasks get SLURM_MEM_BIND set to it */
    bool multi_prog;     /* --multi-prog: the command is an MPMD configuration file */
    bool mpi_given;      /* --mpi: SLURM_MPI_TYPE is not read */
    char **command;
    int ncommand;
    /* The options that also ask for an allocation when srun makes one (outside a job):
     * long names (borrowed from the option table) and values (from argv). */
    const char *alloc_name[CLI_SRUN_ALLOC_OPTS_MAX];
    const char *alloc_value[CLI_SRUN_ALLOC_OPTS_MAX];
    int nalloc;
};

/* What the request owns: the environment's strings, the node list, the workdir. */
struct cli_srun_owned {
    Gs__StepLaunchRequest__EnvEntry *entries; /* key and value owned */
    Gs__StepLaunchRequest__EnvEntry **ptrs;
    size_t n, cap;
    char **nodes;
    char **task_nodes;        /* -m arbitrary: SLURM_HOSTFILE's hosts, or -w's taken from nodes */
    char *dist_text;          /* SLURM_DISTRIBUTION=plane with SLURM_DIST_PLANESIZE, as plane=N */
    struct gs_buf multi_prog; /* --multi-prog's program for every task (srun_multi_prog.c) */
    char *multi_argv[5];      /* /bin/sh -c it */
    struct gs_buf workdir;
    char gpu_bind[32]; /* --ntasks-per-gpu=K's implied --gpu-bind=single:K */
};

/*
 * Slurm's syntax: options until the first argument that is not one (the command), values
 * as --opt=V, --opt V, -XV or -X V. Returns 0, 1 for help printed, or -EINVAL (said).
 */
int cli_srun_parse(struct cli_srun_args *a, int argc, char **argv);

/*
 * Completes a->req: the job (--jobid, else $SLURM_JOB_ID or $SLURM_JOBID), the command,
 * the distribution (-m, else $SLURM_DISTRIBUTION), the absolute workdir, the expanded -w
 * list (or -m arbitrary's hosts) and the environment --export passes, the last ones held in
 * own (zeroed but for workdir = GS_BUF_INIT; the caller releases it, whatever
 * this returns). Returns 0 or < 0 with the reason printed.
 */
int cli_srun_request(struct cli_srun_args *a, struct cli_srun_owned *own);
void cli_srun_owned_release(struct cli_srun_owned *o);

/*
 * srun_multi_prog.c: --multi-prog FILE (Slurm's MPMD configuration: "RANKS PROGRAM ARGS"
 * lines, %t the task's rank, %o its offset in the line's ranks, * the rest) as one /bin/sh
 * program that runs each task's line; appended to script. 0, or < 0 with why naming the
 * file and line (or why it could not be read).
 */
int cli_srun_multi_prog(const char *path, struct gs_buf *script, char *why, size_t why_size);

/*
 * srun_io.c. Reads one -i/-o/-e value (opt is its long name, for errors) into io: all,
 * none, a task id or a file name pattern (Slurm's placeholders; refused otherwise). 0 or
 * -EINVAL (said).
 */
int cli_srun_io_parse(const char *opt, const char *value, struct cli_srun_io *io);
/* Sets a->req's input fields from a->in (and --pty). 0 or -EINVAL (said). */
int cli_srun_io_request(struct cli_srun_args *a);

/* Where each task's stdout and stderr go once the step runs: an fd (srun's own or a file
 * these opened) or -1 for nowhere. */
struct cli_srun_sinks {
    int *fds;          /* rank * 2 + stream */
    uint32_t *node_of; /* each rank's node: an index into the reply's nodes */
    uint32_t ntasks;
    struct srun_file *files;
    size_t nfiles;
};

/*
 * Opens what a's -o/-e name for the step gschedd described in rep (its ranks' nodes for
 * %N and %n). 0, or < 0 with the reason said (k is then still to be closed).
 */
int cli_srun_sinks_open(struct cli_srun_sinks *k, const struct cli_srun_args *a,
                        const Gs__StepLaunchReply *rep);
/* The fd for rank's stream (0 stdout, 1 stderr); -1: dropped. */
int cli_srun_sink_fd(const struct cli_srun_sinks *k, uint32_t rank, int stream);
void cli_srun_sinks_close(struct cli_srun_sinks *k);

/* Whether srun runs inside a job: --jobid, else $SLURM_JOB_ID or $SLURM_JOBID. */
bool cli_srun_in_job(const struct cli_srun_args *a);

/* The options kept in a->alloc_name/alloc_value as "--NAME=VALUE" words for sbatch's
 * reader: *ret NULL-terminated, a->nalloc of them, each and the array free()d by the
 * caller. 0 or -ENOMEM. */
int cli_srun_alloc_words(const struct cli_srun_args *a, char ***ret);

struct cli_alloc;
/*
 * srun_alloc.c, srun outside a job: the allocation its options ask for (sbatch's reading of
 * -N -n --ntasks-per-node -c --gpus* --gres -t -p -A -q -w -x -C -J --mem*), held in al
 * until the step has run; once granted, srun's environment has the job's SLURM_* variables
 * and a->job_id is the job. A signal on sig_fd while waiting gives up. Returns 0, or 1
 * (said) when there is no allocation.
 */
int cli_srun_alloc(struct cli_srun_args *a, struct cli_alloc *al, const char *socket_path,
                   int sig_fd);

#endif
