/*
 * sig_pipe.c: the signal self-pipe of srun and salloc (see sig_pipe.h).
 */
#define _GNU_SOURCE /* pipe2 */

#include "slurm/sig_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

/* The write end, for the handler: a signal handler can reach only globals. */
static int sig_pipe_write = -1;

static void on_signal(int signum)
{
    unsigned char b = (unsigned char)signum;
    int saved = errno;

    if (write(sig_pipe_write, &b, 1) < 0) { /* full: that signal is dropped */
    }
    errno = saved;
}

int slurm_sig_pipe_catch(int signum, bool restart)
{
    struct sigaction sa = {.sa_handler = on_signal};

    if (sig_pipe_write < 0)
        return -EBADF;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = restart ? SA_RESTART : 0;
    return sigaction(signum, &sa, NULL) == 0 ? 0 : -errno;
}

int slurm_sig_pipe_open(const int *signals, size_t n, bool restart)
{
    int fds[2];

    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    sig_pipe_write = fds[1];
    for (size_t i = 0; i < n; i++)
        slurm_sig_pipe_catch(signals[i], restart);
    signal(SIGPIPE, SIG_IGN);
    return fds[0];
}
