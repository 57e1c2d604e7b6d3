/*
 * commands.h: the gsched subcommands. Each takes the arguments after "gsched" (argv[0] is
 * the subcommand's name) and returns the process exit status: 0 done, 1 the action failed,
 * 2 bad usage. The Slurm commands (squeue, sbatch, srun, ...) are slurm/commands.h's.
 */
#ifndef GS_CLI_COMMANDS_H
#define GS_CLI_COMMANDS_H

#include "common/buf.h"

int cli_cmd_check(int argc, char **argv);
int cli_cmd_nodes(int argc, char **argv);
int cli_cmd_submit(int argc, char **argv);
int cli_cmd_queue(int argc, char **argv);
int cli_cmd_show(int argc, char **argv);
int cli_cmd_cancel(int argc, char **argv);
int cli_cmd_hold(int argc, char **argv);
int cli_cmd_release(int argc, char **argv);
int cli_cmd_suspend(int argc, char **argv);
int cli_cmd_resume(int argc, char **argv);
int cli_cmd_wait(int argc, char **argv);
int cli_cmd_logs(int argc, char **argv);
int cli_cmd_up(int argc, char **argv);
int cli_cmd_down(int argc, char **argv);
int cli_cmd_place(int argc, char **argv);
int cli_cmd_shard(int argc, char **argv);
int cli_cmd_data(int argc, char **argv);
int cli_cmd_simulate(int argc, char **argv);
int cli_cmd_mpirun(int argc, char **argv);
int cli_cmd_rsh(int argc, char **argv);
int cli_cmd_kv(int argc, char **argv);
int cli_cmd_seff(int argc, char **argv);
int cli_cmd_top(int argc, char **argv);

/* Prints "gsched CMD: message (see gsched --help)" and returns 2 (jobcmd.c, in gs_client). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a file ("-" for standard input); prints the reason on failure. */
int cli_read_file(const char *path, struct gs_buf *out);

#endif
