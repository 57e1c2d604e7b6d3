/*
 * srun.h: the two halves of `srun` (cli/cmd_srun.c) that meet here: srun_args.c reads
 * Slurm's srun options and builds the StepLaunchRequest from them and srun's
 * surroundings ($SLURM_JOB_ID, the current directory, the environment); cmd_srun.c sends
 * it and streams the step. Internal to the CLI; single-threaded.
 */
#ifndef GS_CLI_SRUN_H
#define GS_CLI_SRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"

/* The command line; req borrows from argv and, once built, from struct cli_srun_owned. */
struct cli_srun_args {
    Gs__StepLaunchRequest req;
    uint64_t job_id;
    const char *chdir;
    const char *nodelist;
    const char *export_spec;
    const char *out_pattern, *err_pattern;
    bool nodes_given;
    bool unbuffered;
    bool kill_bad;
    char **command;
    int ncommand;
};

/* What the request owns: the environment's strings, the node list, the workdir. */
struct cli_srun_owned {
    Gs__StepLaunchRequest__EnvEntry *entries; /* key and value owned */
    Gs__StepLaunchRequest__EnvEntry **ptrs;
    size_t n, cap;
    char **nodes;
    struct gs_buf workdir;
};

/*
 * Slurm's syntax: options until the first argument that is not one (the command), values
 * as --opt=V, --opt V, -XV or -X V. Returns 0, 1 for help printed, or -EINVAL (said).
 */
int cli_srun_parse(struct cli_srun_args *a, int argc, char **argv);

/*
 * Completes a->req: the job (--jobid, else $SLURM_JOB_ID or $SLURM_JOBID), the command,
 * the absolute workdir, the expanded -w list and the environment --export passes, the last
 * three held in own (zeroed but for workdir = GS_BUF_INIT; the caller releases it, whatever
 * this returns). Returns 0 or < 0 with the reason printed.
 */
int cli_srun_request(struct cli_srun_args *a, struct cli_srun_owned *own);
void cli_srun_owned_release(struct cli_srun_owned *o);

#endif
