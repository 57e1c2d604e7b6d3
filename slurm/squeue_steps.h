/*
 * squeue_steps.h: `squeue -s` (--steps[=LIST]), the running job steps (squeue_steps.c),
 * for cmd_squeue.c, which reads the other options.
 */
#ifndef GS_SLURM_SQUEUE_STEPS_H
#define GS_SLURM_SQUEUE_STEPS_H

#include <stdbool.h>

#include "slurm/slurm_fmt.h"

struct squeue_steps_opts {
    const char *socket_opt;
    const struct slurm_filter *filter; /* -j, -u, -p, -n, ... on the steps' jobs */
    const char *list;                  /* --steps=42.0,43.batch; NULL: every step */
    const char *format, *long_fields;  /* -o, -O; NULL: Slurm's step layout */
    bool noheader;
};

/* Prints the running steps of the running jobs o selects; returns the exit status. */
int squeue_steps(const struct squeue_steps_opts *o);

#endif
