/*
 * launch.c: fork/exec of one task (see launch.h for what the child sets up and why).
 *
 * Privileges are dropped before the log files are opened and before chdir, so a job can
 * only write where its user may: a job cannot make the root-run worker create files for it.
 * The child reports a failed step through a close-on-exec pipe as {step, errno, fatal} and
 * exits; a step it may skip (the memory policy) is reported the same way with fatal = 0
 * before it goes on. End of file without a fatal report means the exec succeeded. Reports
 * are a few bytes, far under PIPE_BUF, so each arrives whole.
 *
 * The worker's loop does not wait for those reports: wrk_launch_start() returns after the
 * fork with the pipe's read end, non-blocking, which the loop watches (worker/tasks.c), so
 * a child stuck before its exec (a chdir on a filesystem that hangs) holds only itself.
 * wrk_launch() waits for them (tests/worker/test_launch.c checks every step through it; the
 * worker itself no longer calls it). The child still must not wait on
 * what the loop serves while it gets there: log files are opened non-blocking (a FIFO
 * without a reader) and the stderr note is cut to what an empty pipe holds.
 *
 * set_mempolicy goes through syscall(2): glibc has no wrapper and libnuma would be one more
 * dependency for one system call.
 */
#define _GNU_SOURCE /* sched_setaffinity, getgrouplist, setgroups, pipe2, close_range, syscall */

#include "worker/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GROUPS 256

enum step {
    STEP_SETSID,
    STEP_CGROUP,
    STEP_SETGROUPS,
    STEP_SETGID,
    STEP_SETUID,
    STEP_CHDIR,
    STEP_STDIN,
    STEP_STDOUT,
    STEP_STDERR,
    STEP_RLIMIT,
    STEP_AFFINITY,
    STEP_MEMPOLICY,
    STEP_EXEC, /* last: wrk_launch_status_read() range-checks against it */
};

static const char *const step_names[] = {
    "setsid",
    "join the job's cgroup",
    "setgroups",
    "setgid",
    "setuid",
    "chdir",
    "open stdin",
    "open stdout",
    "open stderr",
    "setrlimit",
    "sched_setaffinity",
    "set_mempolicy",
    "exec",
};

/* set_mempolicy(2) modes, values from <linux/mempolicy.h> (kernel ABI). Spelled out here
 * because that header declares them as enumerators, so #ifdef cannot tell whether an older
 * header has MPOL_PREFERRED_MANY. */
enum {
    MEMPOLICY_PREFERRED = 1,
    MEMPOLICY_BIND = 2,
    MEMPOLICY_PREFERRED_MANY = 5,
};

struct step_report {
    int step;
    int err;
    int fatal; /* 0: the child skipped the step and went on */
};

/* Everything the child needs, computed before fork so the child only makes system calls. */
struct prepared {
    char exe[PATH_MAX];
    gid_t groups[MAX_GROUPS];
    int ngroups;
    cpu_set_t cpus;
    struct wrk_numa_mask mem;       /* the nodes of the task's cores */
    struct wrk_numa_mask mem_first; /* the first of them alone, for kernels before 5.15 */
    bool mem_strict;                /* MPOL_BIND to mem instead */
};

static const char *env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp != NULL && *envp != NULL; envp++) {
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    }
    return NULL;
}

/* PATH lookup with the task's PATH, as execvp would do it in the task's environment. */
static int resolve_exe(const struct wrk_launch_spec *spec, char *out, struct gs_error *err)
{
    const char *name = spec->argv[0], *path = env_get(spec->envp, "PATH"), *p;

    if (strchr(name, '/') != NULL) {
        if (snprintf(out, PATH_MAX, "%s", name) >= PATH_MAX)
            return gs_error_set(err, -ENAMETOOLONG, 0, 0, "exec %s: path too long", name);
        return 0;
    }
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (p = path; *p != '\0';) {
        size_t len = strcspn(p, ":");
        int n = snprintf(out, PATH_MAX, "%.*s%s%s", (int)len, len ? p : ".", "/", name);

        if (n < PATH_MAX && access(out, X_OK) == 0)
            return 0;
        p += len;
        if (*p == ':')
            p++;
    }
    return gs_error_set(err, -ENOENT, 0, 0, "exec %s: command not found in PATH", name);
}

int wrk_launch_numa_mask(const int *nodes, int n, struct wrk_numa_mask *ret_mask)
{
    const int word_bits = (int)(CHAR_BIT * sizeof(unsigned long));
    struct wrk_numa_mask mask = {.first = -1};

    for (int i = 0; i < n; i++) {
        unsigned long bit;

        if (nodes[i] < 0)
            continue;
        if (nodes[i] >= WRK_LAUNCH_NUMA_MAX)
            return -EINVAL;
        bit = 1UL << (nodes[i] % word_bits);
        if ((mask.bits[nodes[i] / word_bits] & bit) != 0)
            continue;
        mask.bits[nodes[i] / word_bits] |= bit;
        mask.count++;
        if (mask.first < 0)
            mask.first = nodes[i];
    }
    *ret_mask = mask;
    return 0;
}

static void prepare_groups(const struct wrk_launch_spec *spec, struct prepared *prep)
{
    struct passwd pw, *found = NULL;
    char pwbuf[4096];

    prep->ngroups = 0;
    if (!spec->set_user)
        return;
    prep->ngroups = 1;
    prep->groups[0] = spec->gid;
    getpwuid_r(spec->uid, &pw, pwbuf, sizeof(pwbuf), &found);
    if (found != NULL) {
        prep->ngroups = MAX_GROUPS;
        if (getgrouplist(found->pw_name, spec->gid, prep->groups, &prep->ngroups) < 0)
            prep->ngroups = MAX_GROUPS; /* truncated list: keep what fits */
    }
}

static int prepare_binding(const struct wrk_launch_spec *spec, struct prepared *prep,
                           struct gs_error *err)
{
    int rc;

    CPU_ZERO(&prep->cpus);
    for (int i = 0; i < spec->ncpus; i++) {
        if (spec->cpus[i] < 0 || spec->cpus[i] >= CPU_SETSIZE)
            return gs_error_set(err, -EINVAL, 0, 0, "cpu %d out of range", spec->cpus[i]);
        CPU_SET(spec->cpus[i], &prep->cpus);
    }
    prep->mem_strict = spec->mem_strict;
    rc = wrk_launch_numa_mask(spec->mem_nodes, spec->mem_nodes != NULL ? spec->nmem_nodes : 0,
                              &prep->mem);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "numa node out of range (the limit is %d)",
                            WRK_LAUNCH_NUMA_MAX - 1);
    return wrk_launch_numa_mask(&prep->mem.first, prep->mem.count > 0 ? 1 : 0, &prep->mem_first);
}

static int prepare(const struct wrk_launch_spec *spec, struct prepared *prep, struct gs_error *err)
{
    int rc = resolve_exe(spec, prep->exe, err);

    if (rc < 0)
        return rc;
    prepare_groups(spec, prep);
    return prepare_binding(spec, prep, err);
}

static void child_report(int fd, enum step step, int fatal)
{
    struct step_report r = {step, errno, fatal};
    ssize_t w;

    do {
        w = write(fd, &r, sizeof(r));
    } while (w < 0 && errno == EINTR);
}

static _Noreturn void child_fail(int fd, enum step step)
{
    child_report(fd, step, 1);
    _exit(127);
}

/* Non-blocking for the open alone: a FIFO with no reader then fails (ENXIO) instead of
 * leaving the task waiting, unstarted, for one. The task gets a blocking descriptor, as any
 * program expects of its stdout. */
static int open_log(const char *path, bool truncate)
{
    int fd = open(path != NULL ? path : "/dev/null",
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK |
                      (truncate && path != NULL ? O_TRUNC : 0),
                  0644);
    int flags, saved;

    if (fd < 0)
        return -1;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

static void set_limit(int fd, int resource, uint64_t value)
{
    struct rlimit rl = {(rlim_t)value, (rlim_t)value};

    if (value != 0 && setrlimit(resource, &rl) < 0)
        child_fail(fd, STEP_RLIMIT);
}

/* sbatch --propagate's soft limits, under the hard ones (which only root could raise). */
static void set_soft_limits(int fd, const struct wrk_launch_spec *spec)
{
    for (int i = 0; i < spec->nrlimits; i++) {
        const struct wrk_launch_rlimit *r = &spec->rlimits[i];
        struct rlimit rl;

        if (getrlimit(r->resource, &rl) < 0)
            child_fail(fd, STEP_RLIMIT);
        rl.rlim_cur = r->soft == UINT64_MAX ? RLIM_INFINITY : (rlim_t)r->soft;
        if (rl.rlim_max != RLIM_INFINITY &&
            (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rl.rlim_max))
            rl.rlim_cur = rl.rlim_max;
        if (setrlimit(r->resource, &rl) < 0)
            child_fail(fd, STEP_RLIMIT);
    }
}

/* Signals the worker ignores or blocks must not leak into the task: every handler back to its
 * default, then the mask (all blocked since the fork) cleared. */
static void reset_signals(void)
{
    struct sigaction sa;
    sigset_t none;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &sa, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, RT gaps */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void drop_privileges(int fd, const struct wrk_launch_spec *spec, const struct prepared *prep)
{
    if (!spec->set_user)
        return;
    if (setgroups((size_t)prep->ngroups, prep->groups) < 0)
        child_fail(fd, STEP_SETGROUPS);
    if (setgid(spec->gid) < 0)
        child_fail(fd, STEP_SETGID);
    if (setuid(spec->uid) < 0)
        child_fail(fd, STEP_SETUID);
}

/* The pty's slave, opened by a session leader with no terminal yet, becomes its controlling
 * terminal (TIOCSCTTY says so outright) and the task's stdin, stdout and stderr. */
static void redirect_tty(int fd, const char *path)
{
    int tty = open(path, O_RDWR | O_CLOEXEC);

    if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) < 0)
        child_fail(fd, STEP_STDIN);
    for (int i = 0; i < 3; i++) {
        if (dup2(tty, i) < 0)
            child_fail(fd, STEP_STDIN);
    }
}

static void redirect_stdio(int fd, const struct wrk_launch_spec *spec)
{
    int in, out, errfd;

    if (spec->tty_path != NULL) {
        redirect_tty(fd, spec->tty_path);
        return;
    }
    in = spec->use_stdin_fd ? spec->stdin_fd
                            : open(spec->stdin_path != NULL ? spec->stdin_path : "/dev/null",
                                   O_RDONLY | O_CLOEXEC);
    if (in < 0 || dup2(in, 0) < 0)
        child_fail(fd, STEP_STDIN);
    if (spec->use_fds) {
        if (dup2(spec->stdout_fd, 1) < 0)
            child_fail(fd, STEP_STDOUT);
        if (dup2(spec->stderr_fd, 2) < 0)
            child_fail(fd, STEP_STDERR);
        return;
    }
    out = open_log(spec->stdout_path, spec->truncate_output);
    if (out < 0 || dup2(out, 1) < 0)
        child_fail(fd, STEP_STDOUT);
    errfd = spec->stderr_path != NULL ? open_log(spec->stderr_path, spec->truncate_output) : out;
    if (errfd < 0 || dup2(errfd, 2) < 0)
        child_fail(fd, STEP_STDERR);
}

/* The kernel reads maxnode - 1 bits of the mask (a historical off-by-one libnuma also
 * pays), hence the + 1. */
static long set_mempolicy_mask(int mode, const struct wrk_numa_mask *mask)
{
    return syscall(SYS_set_mempolicy, mode, mask->bits, (unsigned long)WRK_LAUNCH_NUMA_MAX + 1);
}

/* Preferred, not bound, unless asked: see launch.h for why, and for which failures are only
 * noted. */
static void bind_memory(int fd, const struct prepared *prep)
{
    if (prep->mem.count == 0)
        return;
    if (prep->mem_strict) {
        if (set_mempolicy_mask(MEMPOLICY_BIND, &prep->mem) == 0)
            return;
        if (errno != EPERM && errno != ENOSYS)
            child_fail(fd, STEP_MEMPOLICY);
        child_report(fd, STEP_MEMPOLICY, 0);
        return;
    }
    /* Kernels before 5.15 refuse PREFERRED_MANY (EINVAL); the first node alone is next best. */
    if (prep->mem.count > 1 && set_mempolicy_mask(MEMPOLICY_PREFERRED_MANY, &prep->mem) == 0)
        return;
    if (set_mempolicy_mask(MEMPOLICY_PREFERRED, &prep->mem_first) == 0)
        return;
    if (errno != EPERM && errno != ENOSYS)
        child_fail(fd, STEP_MEMPOLICY);
    child_report(fd, STEP_MEMPOLICY, 0);
}

/* Writes the child's pid after the '=' of spec->pid_var: plain stores into the child's own
 * copy of the environment, so async-signal-safe, unlike snprintf. */
static void put_pid(const struct wrk_launch_spec *spec)
{
    char digits[16], *p;
    int n = 0;
    pid_t pid = getpid();

    if (spec->pid_var == NULL || (p = strchr(spec->pid_var, '=')) == NULL)
        return;
    do {
        digits[n++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && n < (int)sizeof(digits));
    p++;
    while (n > 0)
        *p++ = digits[--n];
    *p = '\0';
}

/*
 * Closes every descriptor the worker left to the child but those the child uses (its report
 * pipe fd, the spec's descriptors), before any step that can wait: a child stuck in a chdir
 * on an NFS server that is gone must not hold the keeper's pipe (which would keep the
 * keeper waiting for the worker it outlived), the worker's listening sockets (a new
 * worker's bind) or its link to gschedd. Async-signal-safe: system calls and a small sort.
 */
#define KEEP_MAX 64

static void close_inherited(int fd, const struct wrk_launch_spec *spec)
{
    int keep[KEEP_MAX], n = 0;
    unsigned from = 3;

    keep[n++] = fd;
    if (spec->use_fds) {
        keep[n++] = spec->stdout_fd;
        keep[n++] = spec->stderr_fd;
    }
    if (spec->use_stdin_fd)
        keep[n++] = spec->stdin_fd;
    if (spec->pmi_fd > 2)
        keep[n++] = spec->pmi_fd;
    for (int i = 0; i < spec->ncgroup_fds; i++) {
        if (n == KEEP_MAX)
            return; /* never so many: leave them all, as before; the exec closes them */
        keep[n++] = spec->cgroup_fds[i];
    }
    for (int i = 1; i < n; i++) { /* insertion sort: n is a handful */
        int k = keep[i], j = i;

        for (; j > 0 && keep[j - 1] > k; j--)
            keep[j] = keep[j - 1];
        keep[j] = k;
    }
    for (int i = 0; i < n; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < from)
            continue;
        if ((unsigned)keep[i] > from)
            (void)close_range(from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    (void)close_range(from, ~0U, 0);
}

static _Noreturn void run_child(int fd, const struct wrk_launch_spec *spec,
                                const struct prepared *prep)
{
    close_inherited(fd, spec);
    reset_signals();
    if (setsid() < 0)
        child_fail(fd, STEP_SETSID);
    /* Into the job's cgroup before anything else runs, and while still root: the group's
     * files are root's. Nothing it forks from here on can leave it. */
    for (int i = 0; i < spec->ncgroup_fds; i++) {
        if (write(spec->cgroup_fds[i], "0", 1) != 1)
            child_fail(fd, STEP_CGROUP);
    }
    put_pid(spec);
    drop_privileges(fd, spec, prep);
    if (spec->workdir != NULL && chdir(spec->workdir) < 0)
        child_fail(fd, STEP_CHDIR);
    redirect_stdio(fd, spec);
    if (spec->stderr_note != NULL && spec->stderr_note[0] != '\0') { /* srun --gpu-bind=verbose */
        size_t len = strnlen(spec->stderr_note, WRK_LAUNCH_NOTE_MAX);

        /* A report that cannot be written does not stop the task. */
        if (write(2, spec->stderr_note, len) == (ssize_t)len)
            (void)!write(2, "\n", 1);
    }
    set_limit(fd, RLIMIT_AS, spec->mem_limit_bytes);
    set_limit(fd, RLIMIT_NOFILE, spec->max_open_files);
    set_soft_limits(fd, spec);
    if (spec->ncpus > 0 && sched_setaffinity(0, sizeof(prep->cpus), &prep->cpus) < 0)
        child_fail(fd, STEP_AFFINITY);
    bind_memory(fd, prep);
    /* Whatever the worker left open (sockets, the SQLite file of a test harness) stays out
     * of the task; the failure pipe is close-on-exec already. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (spec->pmi_fd > 2) /* the one the task keeps: PMI_FD names it */
        (void)fcntl(spec->pmi_fd, F_SETFD, 0);
    execve(prep->exe, spec->argv, spec->envp);
    child_fail(fd, STEP_EXEC);
}

struct wrk_launch_status {
    int fd; /* the report pipe's read end, non-blocking */
    /* What a failed step's message names: the working directory, the output files, the
     * program, as they were when the child was forked. */
    char *workdir, *stdout_path, *stderr_path, *stdin_path, *exe;
    struct gs_error note; /* a skipped step's, until the exec */
};

void wrk_launch_status_free(struct wrk_launch_status *st)
{
    if (st == NULL)
        return;
    if (st->fd >= 0)
        close(st->fd);
    free(st->workdir);
    free(st->stdout_path);
    free(st->stderr_path);
    free(st->stdin_path);
    free(st->exe);
    free(st);
}

int wrk_launch_status_fd(const struct wrk_launch_status *st)
{
    return st->fd;
}

static const char *step_detail(const struct wrk_launch_status *st, int step)
{
    const char *d = NULL;

    switch (step) {
    case STEP_CHDIR:
        d = st->workdir;
        break;
    case STEP_STDOUT:
        d = st->stdout_path;
        break;
    case STEP_STDERR:
        d = st->stderr_path;
        break;
    case STEP_STDIN:
        d = st->stdin_path;
        break;
    case STEP_EXEC:
        d = st->exe;
        break;
    default:
        break;
    }
    return d != NULL ? d : "";
}

static char *dup_or_null(const char *s, bool *failed)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL)
        *failed = true;
    return d;
}

/* The status of a child about to be forked, holding the read end fd (made non-blocking). */
static int status_new(const struct wrk_launch_spec *spec, const struct prepared *prep, int fd,
                      struct wrk_launch_status **ret, struct gs_error *err)
{
    struct wrk_launch_status *st = calloc(1, sizeof(*st));
    bool failed = st == NULL;
    int flags;

    if (st != NULL) {
        st->fd = -1;
        st->workdir = dup_or_null(spec->workdir, &failed);
        st->stdout_path = dup_or_null(spec->stdout_path, &failed);
        st->stderr_path = dup_or_null(spec->stderr_path, &failed);
        st->stdin_path = dup_or_null(spec->stdin_path, &failed);
        st->exe = dup_or_null(prep->exe, &failed);
    }
    if (failed) {
        wrk_launch_status_free(st);
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    }
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        int rc = -errno;

        wrk_launch_status_free(st);
        return gs_error_set(err, rc, 0, 0, "report pipe: %s", gs_strerror(rc));
    }
    st->fd = fd;
    *ret = st;
    return 0;
}

int wrk_launch_status_read(struct wrk_launch_status *st, struct gs_error *note,
                           struct gs_error *err)
{
    struct step_report r;
    const char *detail;
    ssize_t n;

    gs_error_clear(err);
    for (;;) {
        n = read(st->fd, &r, sizeof(r));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return -EAGAIN;
        if (n == 0) { /* end of file without a failed step: the exec happened */
            if (note != NULL)
                *note = st->note;
            return 0;
        }
        /* A short or garbled report, or a broken pipe, reads as a failed exec. */
        if (n != (ssize_t)sizeof(r) || r.step < 0 || r.step > STEP_EXEC)
            r = (struct step_report){STEP_EXEC, EIO, 1};
        if (!r.fatal) {
            gs_error_set(&st->note, 0, 0, 0, "%s: %s", step_names[r.step], gs_strerror(-r.err));
            continue;
        }
        detail = step_detail(st, r.step);
        return gs_error_set(err, -r.err, 0, 0, "%s%s%s: %s", step_names[r.step],
                            detail[0] != '\0' ? " " : "", detail, gs_strerror(-r.err));
    }
}

int wrk_launch_start(const struct wrk_launch_spec *spec, pid_t *ret_pid,
                     struct wrk_launch_status **ret_status, struct gs_error *err)
{
    struct wrk_launch_status *st = NULL;
    struct prepared *prep;
    int fds[2] = {-1, -1}, rc, fork_errno;
    sigset_t all, saved;
    pid_t pid;

    gs_error_clear(err);
    if (spec == NULL || spec->argv == NULL || spec->argv[0] == NULL || spec->envp == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "task has no command");
    prep = malloc(sizeof(*prep));
    if (prep == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    rc = prepare(spec, prep, err);
    if (rc < 0)
        goto out;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        rc = gs_error_set(err, -errno, 0, 0, "pipe: %s", gs_strerror(-errno));
        goto out;
    }
    rc = status_new(spec, prep, fds[0], &st, err);
    if (rc < 0)
        goto out;
    fds[0] = -1; /* the status's now */
    /* The child takes no signal until it has reset the worker's handlers: one sent to a task
     * that has not exec'd yet (a cancel) would otherwise run the worker's own handler in
     * the child, which writes to the worker's signal pipe. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid = fork();
    fork_errno = errno;
    if (pid == 0) {
        close(st->fd);
        run_child(fds[1], spec, prep);
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (pid < 0) {
        rc = gs_error_set(err, -fork_errno, 0, 0, "fork: %s", gs_strerror(-fork_errno));
        goto out;
    }
    *ret_pid = pid;
    *ret_status = st;
    st = NULL;
out:
    wrk_launch_status_free(st);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    free(prep);
    return rc;
}

int wrk_launch(const struct wrk_launch_spec *spec, pid_t *ret_pid, struct gs_error *err)
{
    struct wrk_launch_status *st = NULL;
    struct pollfd p;
    pid_t pid;
    int rc;

    rc = wrk_launch_start(spec, &pid, &st, err);
    if (rc < 0)
        return rc;
    p = (struct pollfd){.fd = st->fd, .events = POLLIN};
    while ((rc = wrk_launch_status_read(st, err, err)) == -EAGAIN) {
        if (poll(&p, 1, -1) < 0 && errno != EINTR) {
            rc = gs_error_set(err, -errno, 0, 0, "poll: %s", gs_strerror(-errno));
            kill(pid, SIGKILL);
            break;
        }
    }
    if (rc < 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    } else {
        *ret_pid = pid;
    }
    wrk_launch_status_free(st);
    return rc;
}

int wrk_signal_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return -EINVAL;
    if (kill(-pgid, sig) < 0)
        return -errno;
    return 0;
}
