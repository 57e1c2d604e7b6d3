/*
 * launch.h: starting one task of a job as a real process, the way gsched-workerd needs it.
 *
 * wrk_launch() forks, and the child puts itself in a new session (so the task and everything
 * it starts form one process group the worker can signal as a whole), redirects stdin from
 * /dev/null and stdout/stderr to the task's log files, changes directory, drops to the job's
 * user, applies resource limits and CPU affinity, and execs the command with exactly the
 * given environment. If anything before the exec fails, the child reports which step and
 * errno through a close-on-exec pipe, so the caller gets "chdir /x: No such file or
 * directory" instead of a task that mysteriously exits 127.
 *
 * The child does only async-signal-safe work between fork and exec (the worker has libuv
 * threads): everything it needs — paths, argv, envp, the CPU mask — is prepared before fork.
 * Reaping is the caller's: it learns of the exit through SIGCHLD/waitpid (see worker.c).
 * Thread: call from the worker's loop thread.
 */
#ifndef WRK_LAUNCH_H
#define WRK_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct wrk_launch_spec {
    char *const *argv;       /* argv[0] is looked up in PATH from envp when it has no '/' */
    char *const *envp;       /* the task's whole environment, NULL-terminated */
    const char *workdir;     /* NULL: stay in the worker's directory */
    const char *stdout_path; /* NULL: /dev/null; created (0644) or appended to */
    const char *stderr_path; /* NULL: same file as stdout */
    bool set_user;           /* switch to uid/gid (only when the worker runs as root) */
    uid_t uid;
    gid_t gid;
    uint64_t mem_limit_bytes; /* RLIMIT_AS; 0 = unlimited */
    uint64_t max_open_files;  /* RLIMIT_NOFILE; 0 = inherit */
    int ncpus;                /* CPU affinity: OS indices of the PUs; 0 = no binding */
    const int *cpus;
};

/*
 * Starts the task. On success stores the child's pid (which is also its process group and
 * session id) and returns 0. On failure returns a negative errno with err naming the step
 * ("exec python3: No such file or directory"); no child is left running.
 */
int wrk_launch(const struct wrk_launch_spec *spec, pid_t *ret_pid, struct gs_error *err);

/* Sends sig to the task's whole process group. Returns 0, or -ESRCH when it is gone. */
int wrk_signal_group(pid_t pgid, int sig);

#endif
