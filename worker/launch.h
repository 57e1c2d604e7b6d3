/*
 * launch.h: starting one task of a job as a real process, the way gsched-workerd needs it.
 *
 * wrk_launch() forks, and the child puts itself in a new session (so the task and everything
 * it starts form one process group the worker can signal as a whole), redirects stdin from
 * /dev/null (or a pipe the caller feeds) and stdout/stderr to the task's log files (or to
 * pipes the caller reads), or all three to a pseudo-terminal it makes its controlling one,
 * changes directory, drops to the job's
 * user, applies resource limits, CPU affinity and a memory policy, and execs the command
 * with exactly the given environment. If anything before the exec fails, the child reports
 * which step and errno through a close-on-exec pipe, so the caller gets "chdir /x: No such
 * file or directory" instead of a task that mysteriously exits 127.
 *
 * The memory policy prefers the NUMA nodes of the task's cores (MPOL_PREFERRED_MANY, or
 * MPOL_PREFERRED on the first node where the kernel predates 5.15): allocations land next
 * to the task's CPUs and GPU but still succeed elsewhere when those nodes are full, which a
 * strict MPOL_BIND would turn into OOM kills. It is an optimisation, so the one refusal
 * that says "not here" rather than "wrong request" — EPERM (Docker's default seccomp
 * profile allows set_mempolicy only with CAP_SYS_NICE) or ENOSYS (a kernel without NUMA) —
 * does not fail the task: it starts unbound and the caller gets a note. Any other failure
 * (a node outside the cpuset, say) is a failed step like the rest. srun --mem-bind asks
 * for other nodes, a strict bind (mem_strict) or no policy at all (no nodes).
 *
 * The child does only async-signal-safe work between fork and exec (the worker has libuv
 * threads): everything it needs — paths, argv, envp, the CPU mask, the nodemasks — is
 * prepared before fork; the child only makes system calls.
 * Reaping is the caller's: it learns of the exit through SIGCHLD/waitpid (see worker.c).
 * Thread: call from the worker's loop thread.
 */
#ifndef WRK_LAUNCH_H
#define WRK_LAUNCH_H

#include <limits.h>
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
    bool truncate_output;    /* the paths emptied first (as the user: the child opens them) */
    bool use_fds;            /* stdout/stderr onto these descriptors instead (pipes the */
    int stdout_fd;           /* caller reads); the paths are then ignored */
    int stderr_fd;
    bool use_stdin_fd;      /* stdin from stdin_fd (a pipe srun's input comes through) instead */
    int stdin_fd;           /* of /dev/null */
    const char *stdin_path; /* else this file, opened as the user (sbatch --input); NULL none */
    /* A pseudo-terminal's slave (srun --pty): the task's controlling terminal and its
     * stdin, stdout and stderr, whatever the fields above say; NULL: none. */
    const char *tty_path;
    /* One of envp's strings, "NAME=" and room for at least 11 more characters, into which
     * the child writes its own pid (SLURM_TASK_PID); NULL: none. */
    char *pid_var;
    bool set_user; /* switch to uid/gid (only when the worker runs as root) */
    uid_t uid;
    gid_t gid;
    uint64_t mem_limit_bytes; /* RLIMIT_AS; 0 = unlimited */
    uint64_t max_open_files;  /* RLIMIT_NOFILE; 0 = inherit */
    /* sbatch --propagate: soft limits set after those two, each no higher than its hard
     * limit (UINT64_MAX: as high as that); NULL/0 none. */
    const struct wrk_launch_rlimit *rlimits;
    int nrlimits;
    int ncpus; /* CPU affinity: OS indices of the PUs; 0 = no binding */
    const int *cpus;
    int nmem_nodes;          /* memory policy: OS indices of the NUMA nodes to prefer, */
    const int *mem_nodes;    /* repeats and negatives (unknown) allowed; 0 = no policy */
    bool mem_strict;         /* bind to them (MPOL_BIND, srun --mem-bind), not prefer */
    const int *cgroup_fds;   /* cgroup.procs files (worker/cgroup.h) the child writes itself */
    int ncgroup_fds;         /* into before dropping privileges; 0 = none */
    const char *stderr_note; /* a line for stderr before exec (WRK_LAUNCH_NOTE_MAX); NULL none */
    /* A descriptor (> 2) the task inherits as it is, its PMI server's socket (srun
     * --mpi=pmi2, worker/pmi.h); 0: none. */
    int pmi_fd;
};

/* The most of stderr_note the child writes. A write before exec must never wait for room
 * (wrk_launch() waits for the exec, and nobody reads the task's pipes meanwhile): an empty
 * pipe holds at least PIPE_BUF (4096) bytes. gschedd's notes are under 512. */
#define WRK_LAUNCH_NOTE_MAX 1024

/* A soft limit for the task: setrlimit's resource and value. */
struct wrk_launch_rlimit {
    int resource;
    uint64_t soft;
};

/* NUMA node OS indices a memory policy can name; set_mempolicy's nodemask is this wide. */
#define WRK_LAUNCH_NUMA_MAX 1024

/* A set of NUMA nodes in the layout set_mempolicy(2) takes. */
struct wrk_numa_mask {
    unsigned long bits[WRK_LAUNCH_NUMA_MAX / (CHAR_BIT * sizeof(unsigned long))];
    int count; /* distinct nodes in bits */
    int first; /* the first node given (the node of the task's first core); -1 when none */
};

/*
 * Folds n NUMA node OS indices into a mask, skipping negative (unknown) ones and repeats.
 * Returns 0 with *ret_mask, or -EINVAL when a node is WRK_LAUNCH_NUMA_MAX or more (then
 * *ret_mask is untouched). Pure; any thread.
 */
int wrk_launch_numa_mask(const int *nodes, int n, struct wrk_numa_mask *ret_mask);

/*
 * Starts the task and waits for its exec. On success stores the child's pid (which is also
 * its process group and session id) and returns 0; err (may be NULL) then has code 0 and an
 * empty message, or a note on a step the child skipped ("set_mempolicy: Operation not
 * permitted") for the caller to log. On failure returns a negative errno with err naming the
 * step ("exec python3: No such file or directory"); no child is left running. It waits as
 * long as the child takes to get to its exec (a chdir on a filesystem that hangs), so the
 * worker's loop uses wrk_launch_start() instead; this blocking form serves callers without a
 * loop (today test_launch, which checks each step through it).
 */
int wrk_launch(const struct wrk_launch_spec *spec, pid_t *ret_pid, struct gs_error *err);

/* A started child on its way to exec: the read end of its report pipe and what the reports'
 * messages name (the spec's paths, the program found). */
struct wrk_launch_status;

/*
 * Starts the task without waiting for its exec: what wrk_launch() does up to the fork. On
 * success stores the pid and *ret_status, the caller's to free with
 * wrk_launch_status_free(), and returns 0; a failure before the fork (the program not
 * found, a bad CPU list, fork itself) returns a negative errno with err saying which, and
 * no child. The child's steps are then learnt through wrk_launch_status_read() once
 * wrk_launch_status_fd() is readable.
 */
int wrk_launch_start(const struct wrk_launch_spec *spec, pid_t *ret_pid,
                     struct wrk_launch_status **ret_status, struct gs_error *err);
/* The non-blocking descriptor to watch for reading (owned by the status). */
int wrk_launch_status_fd(const struct wrk_launch_status *st);
/*
 * Reads what the child reported so far, without blocking. Returns -EAGAIN while its exec
 * has not happened and no step failed; 0 once it exec'd (note, which may be NULL, then
 * holds a skipped step's note, or is empty); or the failed step's negative errno with err
 * naming it, as wrk_launch() does; the child then exits (status 127), and reaping it is the
 * caller's. Once the child is gone, the answer is final: 0 or the failure.
 */
int wrk_launch_status_read(struct wrk_launch_status *st, struct gs_error *note,
                           struct gs_error *err);
void wrk_launch_status_free(struct wrk_launch_status *st); /* NULL ok; closes the fd */

/* Sends sig to the task's whole process group. Returns 0, or -ESRCH when it is gone. */
int wrk_signal_group(pid_t pgid, int sig);

#endif
