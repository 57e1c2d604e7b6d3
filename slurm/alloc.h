/*
 * alloc.h: an allocation held from the submit host, shared by `salloc` (cmd_salloc.c) and
 * `srun` outside a job (srun_alloc.c). The job comes from sbatch's options (slurm/sbatch.c
 * reads them, slurm/sbatch_spec.c makes the job), goes to gschedd as an AllocRequest, and
 * the connection that carried it stays open for as long as the allocation is wanted: gschedd
 * ends the job when it closes. See scheduler/sched_alloc.c for the other side. Internal to
 * the CLI; single-threaded; blocking I/O.
 */
#ifndef GS_SLURM_ALLOC_H
#define GS_SLURM_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/jobspec.h"

struct cli_alloc {
    const char *prog; /* "salloc" or "srun": the prefix of what is said */
    int fd;           /* the connection holding the allocation; -1 none */
    uint64_t job_id;
    char **env;  /* NULL-terminated "KEY=VALUE": the job's SLURM_* variables, once granted */
    char *nodes; /* the nodes, comma-separated, once granted */
    /* -I, --immediate[=S]: give up (the job is cancelled) when not granted within S seconds
     * of its submission; 0: wait as long as it takes */
    uint32_t immediate_s;
};

/*
 * -I's or --immediate's seconds (value; NULL: 1) into *ret_s; -EINVAL said as "PROG: error:
 * WORD: ..." for anything but 1 to 86400.
 */
int cli_alloc_immediate_value(const char *prog, const char *word, const char *value,
                              uint32_t *ret_s);
/*
 * Takes -I[S], --immediate[=S] out of opts (nopts of them, before the command; S seconds,
 * 1 without) into al->immediate_s, as Slurm's salloc and srun read it: a job waiting longer
 * for its allocation is given up. Returns 0, or -EINVAL said as "PROG: error: ...".
 */
int cli_alloc_take_immediate(struct cli_alloc *al, char **opts, int *nopts);

/*
 * The job that options (sbatch's, as salloc takes them; borrowed) ask for, named after the
 * command's program (-J wins), as Slurm names salloc jobs. *ret freed with gs_jobspec_free.
 * Returns 0 or < 0 with every problem said as "PROG: error: ...".
 */
int cli_alloc_spec(const char *prog, char **opts, int nopts, const char *command,
                   struct gs_jobspec **ret);

/*
 * Asks gschedd at socket_path for spec's allocation and waits until it is granted (al->env,
 * al->nodes set). Says "Pending job allocation N" (salloc) and "job N queued and waiting for
 * resources" when it is still pending after a second, "job N has been allocated resources"
 * when it then starts, and "Granted job allocation N" (salloc), as Slurm's salloc and srun. A
 * signal among stop_signals (fd: a self-pipe carrying signal numbers, or -1) gives up, which ends
 * the job. Returns 0, or 1 (said) when there is no allocation.
 */
int cli_alloc_get(struct cli_alloc *al, const struct gs_jobspec *spec, const char *socket_path,
                  int sig_fd);

/*
 * The command ended with status (exit code, or term_signal when killed): the allocation is
 * released (salloc says "Relinquishing job allocation N" when say) and ends COMPLETED or
 * FAILED; waits for gschedd's word that it is stored. Returns 0 or < 0 (said).
 */
int cli_alloc_release(struct cli_alloc *al, int exit_code, int term_signal, bool say);

/*
 * While the command runs: reads what gschedd sends (call when al->fd is readable). Returns
 * 0 while the allocation stands, 1 once it was revoked or the connection lost (said).
 */
int cli_alloc_poll(struct cli_alloc *al);

/* Closes the connection (which ends a job not yet released) and frees what al holds. */
void cli_alloc_release_fds(struct cli_alloc *al);

#endif
