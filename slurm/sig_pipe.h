/*
 * sig_pipe.h: the self-pipe srun and salloc wait on with poll(): each caught signal's
 * number is written to it by the handler, so the poll loop sees signals as input beside
 * its sockets. One pipe per process (a handler can reach nothing else); not libuv.
 */
#ifndef GS_SLURM_SIG_PIPE_H
#define GS_SLURM_SIG_PIPE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Makes the pipe (non-blocking, close-on-exec) and catches signals[0..n) into it, with
 * SA_RESTART when restart is set; SIGPIPE is ignored. Returns the read end (one byte per
 * signal; a signal that finds the pipe full is dropped), or -errno.
 */
int slurm_sig_pipe_open(const int *signals, size_t n, bool restart);
/* Catches signum into the pipe too, from now on (after slurm_sig_pipe_open). 0 or -errno. */
int slurm_sig_pipe_catch(int signum, bool restart);

#endif
