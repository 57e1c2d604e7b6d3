/*
 * scontrol_update.h: `scontrol update NodeName=LIST State=DRAIN|RESUME [Reason=TEXT]` and
 * `scontrol update JobId=ID KEY=VALUE...` (scontrol_update.c), called by cmd_scontrol.c
 * with the words after "update".
 */
#ifndef GS_CLI_SCONTROL_UPDATE_H
#define GS_CLI_SCONTROL_UPDATE_H

/* Returns the exit status: 0, or 1 with the error printed as Slurm's scontrol does. */
int scontrol_update(const char *socket_opt, int argc, char **argv);

#endif
