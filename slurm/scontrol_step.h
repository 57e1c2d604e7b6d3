/*
 * scontrol_step.h: `scontrol show step [JOBID[.STEP]]` (scontrol_step.c), called by
 * cmd_scontrol.c with the words after "step".
 */
#ifndef GS_SLURM_SCONTROL_STEP_H
#define GS_SLURM_SCONTROL_STEP_H

#include <stdbool.h>

/* Returns the exit status: 0, or 1 with the error printed as Slurm's scontrol does. */
int scontrol_show_steps(const char *socket_opt, bool oneliner, int argc, char **argv);

#endif
