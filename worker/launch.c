/*
 * launch.c: fork/exec of one task (see launch.h for what the child sets up and why).
 *
 * Privileges are dropped before the log files are opened and before chdir, so a job can
 * only write where its user may: a job cannot make the root-run worker create files for it.
 * The child reports a failed step through a close-on-exec pipe as {step, errno}; a read of
 * zero bytes means the exec succeeded.
 */
#define _GNU_SOURCE /* sched_setaffinity, getgrouplist, setgroups, pipe2, close_range */

#include "worker/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GROUPS 256

enum step {
    STEP_SETSID,
    STEP_SETGROUPS,
    STEP_SETGID,
    STEP_SETUID,
    STEP_CHDIR,
    STEP_STDIN,
    STEP_STDOUT,
    STEP_STDERR,
    STEP_RLIMIT,
    STEP_AFFINITY,
    STEP_EXEC,
};

static const char *const step_names[] = {
    "setsid",    "setgroups",         "setgid",      "setuid",
    "chdir",     "open /dev/null",    "open stdout", "open stderr",
    "setrlimit", "sched_setaffinity", "exec",
};

struct failure {
    int step;
    int err;
};

/* Everything the child needs, computed before fork so the child only makes system calls. */
struct prepared {
    char exe[PATH_MAX];
    gid_t groups[MAX_GROUPS];
    int ngroups;
    cpu_set_t cpus;
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

static int prepare(const struct wrk_launch_spec *spec, struct prepared *prep, struct gs_error *err)
{
    int rc = resolve_exe(spec, prep->exe, err);

    if (rc < 0)
        return rc;
    prep->ngroups = 0;
    if (spec->set_user) {
        struct passwd pw, *found = NULL;
        char pwbuf[4096];

        prep->ngroups = 1;
        prep->groups[0] = spec->gid;
        getpwuid_r(spec->uid, &pw, pwbuf, sizeof(pwbuf), &found);
        if (found != NULL) {
            prep->ngroups = MAX_GROUPS;
            if (getgrouplist(found->pw_name, spec->gid, prep->groups, &prep->ngroups) < 0)
                prep->ngroups = MAX_GROUPS; /* truncated list: keep what fits */
        }
    }
    CPU_ZERO(&prep->cpus);
    for (int i = 0; i < spec->ncpus; i++) {
        if (spec->cpus[i] < 0 || spec->cpus[i] >= CPU_SETSIZE)
            return gs_error_set(err, -EINVAL, 0, 0, "cpu %d out of range", spec->cpus[i]);
        CPU_SET(spec->cpus[i], &prep->cpus);
    }
    return 0;
}

static _Noreturn void child_fail(int fd, enum step step)
{
    struct failure f = {step, errno};
    ssize_t w;

    do {
        w = write(fd, &f, sizeof(f));
    } while (w < 0 && errno == EINTR);
    _exit(127);
}

static int open_log(const char *path)
{
    return open(path != NULL ? path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void set_limit(int fd, int resource, uint64_t value)
{
    struct rlimit rl = {(rlim_t)value, (rlim_t)value};

    if (value != 0 && setrlimit(resource, &rl) < 0)
        child_fail(fd, STEP_RLIMIT);
}

/* Signals the worker ignores or blocks must not leak into the task. */
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

static void redirect_stdio(int fd, const struct wrk_launch_spec *spec)
{
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC), out, errfd;

    if (in < 0 || dup2(in, 0) < 0)
        child_fail(fd, STEP_STDIN);
    out = open_log(spec->stdout_path);
    if (out < 0 || dup2(out, 1) < 0)
        child_fail(fd, STEP_STDOUT);
    errfd = spec->stderr_path != NULL ? open_log(spec->stderr_path) : out;
    if (errfd < 0 || dup2(errfd, 2) < 0)
        child_fail(fd, STEP_STDERR);
}

static _Noreturn void run_child(int fd, const struct wrk_launch_spec *spec,
                                const struct prepared *prep)
{
    reset_signals();
    if (setsid() < 0)
        child_fail(fd, STEP_SETSID);
    drop_privileges(fd, spec, prep);
    if (spec->workdir != NULL && chdir(spec->workdir) < 0)
        child_fail(fd, STEP_CHDIR);
    redirect_stdio(fd, spec);
    set_limit(fd, RLIMIT_AS, spec->mem_limit_bytes);
    set_limit(fd, RLIMIT_NOFILE, spec->max_open_files);
    if (spec->ncpus > 0 && sched_setaffinity(0, sizeof(prep->cpus), &prep->cpus) < 0)
        child_fail(fd, STEP_AFFINITY);
    /* Whatever the worker left open (sockets, the SQLite file of a test harness) stays out
     * of the task; the failure pipe is close-on-exec already. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(prep->exe, spec->argv, spec->envp);
    child_fail(fd, STEP_EXEC);
}

static const char *step_detail(const struct wrk_launch_spec *spec, const struct prepared *prep,
                               int step)
{
    switch (step) {
    case STEP_CHDIR:
        return spec->workdir;
    case STEP_STDOUT:
        return spec->stdout_path;
    case STEP_STDERR:
        return spec->stderr_path;
    case STEP_EXEC:
        return prep->exe;
    default:
        return "";
    }
}

/* Reads the child's report: 0 when exec happened, else the child's errno as a negative. */
static int await_exec(int fd, pid_t pid, const struct wrk_launch_spec *spec,
                      const struct prepared *prep, struct gs_error *err)
{
    struct failure f;
    ssize_t n;

    do {
        n = read(fd, &f, sizeof(f));
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n != (ssize_t)sizeof(f) || f.step < 0 || f.step > STEP_EXEC)
        f = (struct failure){STEP_EXEC, EIO};
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return gs_error_set(err, -f.err, 0, 0, "%s %s: %s", step_names[f.step],
                        step_detail(spec, prep, f.step), gs_strerror(-f.err));
}

int wrk_launch(const struct wrk_launch_spec *spec, pid_t *ret_pid, struct gs_error *err)
{
    struct prepared *prep;
    int fds[2] = {-1, -1}, rc;
    pid_t pid;

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
    pid = fork();
    if (pid < 0) {
        rc = gs_error_set(err, -errno, 0, 0, "fork: %s", gs_strerror(-errno));
        goto out;
    }
    if (pid == 0) {
        close(fds[0]);
        run_child(fds[1], spec, prep);
    }
    close(fds[1]);
    fds[1] = -1;
    rc = await_exec(fds[0], pid, spec, prep, err);
    if (rc == 0)
        *ret_pid = pid;
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    free(prep);
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
