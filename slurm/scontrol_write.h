/*
 * scontrol_write.h: `scontrol write batch_script JOBID [FILE|-]` (scontrol_write.c), called
 * by cmd_scontrol.c with the words after "write".
 */
#ifndef GS_SLURM_SCONTROL_WRITE_H
#define GS_SLURM_SCONTROL_WRITE_H

/* Returns the exit status: 0, or 1 with the error printed as Slurm's scontrol does. */
int scontrol_write(const char *socket_opt, int argc, char **argv);

#endif
