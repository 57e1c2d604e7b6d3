/*
 * srun_alloc.c: `srun` outside a job (no --jobid, no $SLURM_JOB_ID), which Slurm answers by
 * making an allocation first: the options sbatch also reads (kept by srun_args.c as they
 * were given) become an allocation's job through alloc.h, as salloc's do; once it is
 * granted, the job's SLURM_* variables go into srun's own environment, so that the step
 * request srun_args.c builds next carries them and names the job. cmd_srun.c runs the
 * step and releases the allocation with the step's status.
 */
#include "slurm/srun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "slurm/alloc.h"

/* The job's variables into srun's environment (copied: al's strings go with it). */
static int take_env(const struct cli_alloc *al)
{
    for (size_t i = 0; al->env[i] != NULL; i++) {
        char *eq = strchr(al->env[i], '=');
        char key[128];

        if (eq == NULL || (size_t)(eq - al->env[i]) >= sizeof(key))
            continue;
        memcpy(key, al->env[i], (size_t)(eq - al->env[i]));
        key[eq - al->env[i]] = '\0';
        if (setenv(key, eq + 1, 1) < 0)
            return -errno;
    }
    return 0;
}

int cli_srun_alloc(struct cli_srun_args *a, struct cli_alloc *al, const char *socket_path,
                   int sig_fd)
{
    struct gs_jobspec *spec = NULL;
    char **words = NULL;
    int status = 1;

    if (a->ncommand == 0) {
        fprintf(stderr, "srun: fatal: No command given to execute.\n");
        return 1;
    }
    if (cli_srun_alloc_words(a, &words) < 0) {
        fprintf(stderr, "srun: error: out of memory\n");
        return 1;
    }
    if (cli_alloc_spec("srun", words, a->nalloc, a->command[0], &spec) < 0)
        goto out;
    al->immediate_s = a->immediate_s;
    if (cli_alloc_get(al, spec, socket_path, sig_fd) != 0)
        goto out;
    if (take_env(al) < 0) {
        fprintf(stderr, "srun: error: out of memory\n");
        goto out;
    }
    a->job_id = al->job_id;
    status = 0;
out:
    for (int i = 0; words != NULL && i < a->nalloc; i++)
        free(words[i]);
    free(words);
    gs_jobspec_free(spec);
    return status;
}
