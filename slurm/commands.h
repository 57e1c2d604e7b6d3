/*
 * commands.h: the Slurm commands gsched answers as (squeue, sinfo, sacct, sstat, sprio,
 * sshare, sreport, sdiag, scancel, scontrol, sbatch, srun, salloc, sbcast). Each takes its
 * arguments as
 * Slurm's does (argv[0] is the command's name) and returns the process exit status as
 * Slurm's would: 1 on a failure, with Slurm's messages, because scripts test for it; srun and
 * salloc otherwise pass on the status of what they ran.
 * cli/main.c dispatches to them, as `gsched NAME` and through a link of that name; the
 * gsched commands may call them too (`gsched rsh` runs an srun step).
 */
#ifndef GS_SLURM_COMMANDS_H
#define GS_SLURM_COMMANDS_H

int cli_cmd_scontrol(int argc, char **argv);
int cli_cmd_squeue(int argc, char **argv);
int cli_cmd_sinfo(int argc, char **argv);
int cli_cmd_sacct(int argc, char **argv);
int cli_cmd_sstat(int argc, char **argv);
int cli_cmd_sprio(int argc, char **argv);
int cli_cmd_sshare(int argc, char **argv);
int cli_cmd_sdiag(int argc, char **argv);
int cli_cmd_sreport(int argc, char **argv);
int cli_cmd_scancel(int argc, char **argv);
int cli_cmd_sbatch(int argc, char **argv);
int cli_cmd_srun(int argc, char **argv);
int cli_cmd_salloc(int argc, char **argv);
int cli_cmd_sbcast(int argc, char **argv);

#endif
