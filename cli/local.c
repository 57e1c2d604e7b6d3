/*
 * local.c: a local cluster's state directory, pid files, and starting and stopping its
 * daemons (see local.h).
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include "cli/local.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"

#define STOP_POLL_MS 20
#define KILL_WAIT_MS 2000
#define TAIL_BYTES 8192
#define MAX_INHERITED_FD 4096

static int fail(const struct cli_local *l, int rc, const char *what, const char *path)
{
    fprintf(stderr, "gsched %s: %s %s: %s\n", l->cmd, what, path, gs_strerror(rc));
    return rc;
}

static int make_dir(const struct cli_local *l, const char *dir, bool create)
{
    struct stat st;

    if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
        return fail(l, -errno, "cannot create", dir);
    if (stat(dir, &st) < 0)
        return create ? fail(l, -errno, "cannot use", dir) : -ENOENT;
    if (!S_ISDIR(st.st_mode))
        return fail(l, -ENOTDIR, "cannot use", dir);
    return 0;
}

static void name_daemons(struct cli_local *l)
{
    snprintf(l->daemons[0].name, sizeof(l->daemons[0].name), "gschedd");
    l->daemons[0].prog = "gschedd";
    for (unsigned i = 1; i <= CLI_LOCAL_MAX_WORKERS; i++) {
        snprintf(l->daemons[i].name, sizeof(l->daemons[i].name), "node%u", i);
        l->daemons[i].prog = "gsched-workerd";
    }
}

int cli_local_init(struct cli_local *l, const char *cmd, const char *dir, bool create)
{
    char sock[PATH_MAX];
    int rc;

    memset(l, 0, sizeof(*l));
    l->cmd = cmd;
    rc = make_dir(l, dir, create);
    if (rc < 0)
        return rc;
    rc = cli_local_resolve(dir, l->dir);
    if (rc < 0)
        return fail(l, rc, "cannot resolve", dir);
    name_daemons(l);
    /* sun_path holds 108 bytes with the NUL; gschedd would refuse the configuration. */
    if (cli_local_path(l, "gschedd.sock", sock, sizeof(sock)) < 0 || strlen(sock) > 107) {
        fprintf(stderr,
                "gsched %s: %s is too long a path for the socket in it (107 bytes at most)\n", cmd,
                l->dir);
        return -ENAMETOOLONG;
    }
    return 0;
}

int cli_local_resolve(const char *path, char *out)
{
    return realpath(path, out) != NULL ? 0 : -errno;
}

int cli_local_path(const struct cli_local *l, const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/%s", l->dir, name);

    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int daemon_path(const struct cli_local *l, const struct cli_daemon *d, const char *ext,
                       char *out, size_t size)
{
    char name[32];

    snprintf(name, sizeof(name), "%s.%s", d->name, ext);
    return cli_local_path(l, name, out, size);
}

/* The state letter of /proc/PID/stat when its command is prog; 0 when it is another. */
static char proc_state(pid_t pid, const char *prog)
{
    char path[64], line[512], comm[32];
    const char *open_paren, *close_paren;
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return '?'; /* no /proc, or just ended: kill() decides */
    len = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[len] = '\0';
    /* "PID (COMM) S ...": COMM may hold spaces and parentheses, so take the last ')'. */
    open_paren = strchr(line, '(');
    close_paren = strrchr(line, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
        close_paren[1] != ' ')
        return '?';
    snprintf(comm, sizeof(comm), "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
    return strcmp(comm, prog) == 0 ? close_paren[2] : 0;
}

static bool pid_is_daemon(pid_t pid, const char *prog)
{
    char state;

    if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
        return false;
    state = proc_state(pid, prog);
    return state != 0 && state != 'Z' && state != 'X';
}

bool cli_local_ended(struct cli_daemon *d, int *status)
{
    int st = 0;

    if (!d->running)
        return true;
    if (d->child) {
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->running = d->child = false;
            if (status != NULL)
                *status = st;
        }
        return !d->running;
    }
    if (!pid_is_daemon(d->pid, d->prog))
        d->running = false;
    return !d->running;
}

static int read_pid(const char *path, pid_t *ret_pid)
{
    char text[32];
    char *end;
    size_t len;
    long pid;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return -errno;
    len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    pid = strtol(text, &end, 10);
    if (end == text || (*end != '\n' && *end != '\0') || pid <= 0 || pid > INT_MAX)
        return -EINVAL;
    *ret_pid = (pid_t)pid;
    return 0;
}

int cli_local_load(struct cli_local *l)
{
    char path[PATH_MAX];
    int running = 0;

    l->nworkers = 0;
    for (unsigned i = 0; i <= CLI_LOCAL_MAX_WORKERS; i++) {
        struct cli_daemon *d = &l->daemons[i];

        d->pid = 0;
        d->running = d->child = false;
        if (daemon_path(l, d, "pid", path, sizeof(path)) < 0 || read_pid(path, &d->pid) < 0)
            continue;
        if (i > 0)
            l->nworkers = i;
        d->running = pid_is_daemon(d->pid, d->prog);
        running += d->running;
    }
    return running;
}

void cli_local_forget(struct cli_local *l)
{
    char path[PATH_MAX];

    for (unsigned i = 0; i <= l->nworkers; i++) {
        if (!l->daemons[i].running &&
            daemon_path(l, &l->daemons[i], "pid", path, sizeof(path)) == 0)
            unlink(path);
        /* a killed worker's CLI socket (one that stops removes its own) */
        if (i > 0 && !l->daemons[i].running &&
            daemon_path(l, &l->daemons[i], "sock", path, sizeof(path)) == 0)
            unlink(path);
    }
    if (!l->daemons[0].running && cli_local_path(l, "gschedd.sock", path, sizeof(path)) == 0)
        unlink(path);
}

static int write_pid(const char *path, pid_t pid)
{
    FILE *f = fopen(path, "w");
    int rc = 0;

    if (f == NULL)
        return -errno;
    if (fprintf(f, "%d\n", (int)pid) < 0)
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

/*
 * The child's side of cli_local_spawn: only async-signal-safe calls until exec. Descriptors
 * gsched inherited without close-on-exec (a test runner's pipes) must not live on in a
 * daemon: whoever waits for that pipe's end would wait until `gsched down`.
 */
static void exec_child(int devnull, int log, int report, int max_fd, char *const argv[],
                       const struct cli_spawn_hook *hook)
{
    int err, rc = 0;

    for (int fd = STDERR_FILENO + 1; fd < max_fd; fd++)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    setsid();
    if (hook != NULL)
        rc = hook->before_exec(hook->data);
    if (rc == 0 && dup2(devnull, STDIN_FILENO) >= 0 && dup2(log, STDOUT_FILENO) >= 0 &&
        dup2(log, STDERR_FILENO) >= 0)
        execv(argv[0], argv);
    err = rc < 0 ? -rc : errno;
    /* Nothing is left to do if even this fails: the parent then sees an empty pipe and
     * the child's exit status 127. */
    if (write(report, &err, sizeof(err)) != (ssize_t)sizeof(err))
        _exit(126);
    _exit(127);
}

/* Waits for exec: the close-on-exec pipe reads empty once it has happened. */
static int exec_result(int report)
{
    int err = 0;
    ssize_t n;

    do {
        n = read(report, &err, sizeof(err));
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(err) ? -err : 0;
}

static int fork_exec(struct cli_daemon *d, int devnull, int log, char *const argv[],
                     const struct cli_spawn_hook *hook)
{
    long open_max = sysconf(_SC_OPEN_MAX);
    int max_fd = open_max > 0 && open_max < MAX_INHERITED_FD ? (int)open_max : MAX_INHERITED_FD;
    int pipefd[2], rc;
    pid_t pid;

    if (pipe(pipefd) < 0)
        return -errno;
    fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
    pid = fork();
    if (pid == 0)
        exec_child(devnull, log, pipefd[1], max_fd, argv, hook);
    rc = pid < 0 ? -errno : 0;
    close(pipefd[1]);
    if (rc == 0)
        rc = exec_result(pipefd[0]);
    close(pipefd[0]);
    if (pid > 0 && rc < 0)
        waitpid(pid, NULL, 0);
    if (rc == 0) {
        d->pid = pid;
        d->running = d->child = true;
    }
    return rc;
}

int cli_local_spawn(struct cli_local *l, struct cli_daemon *d, char *const argv[])
{
    return cli_local_spawn_hooked(l, d, argv, NULL);
}

int cli_local_spawn_hooked(struct cli_local *l, struct cli_daemon *d, char *const argv[],
                           const struct cli_spawn_hook *hook)
{
    char log_path[PATH_MAX], pid_path[PATH_MAX];
    int devnull = -1, log = -1, rc;
    struct stat st;

    rc = daemon_path(l, d, "log", log_path, sizeof(log_path));
    if (rc == 0)
        rc = daemon_path(l, d, "pid", pid_path, sizeof(pid_path));
    if (rc < 0)
        return fail(l, rc, "no room for the files of", d->name);
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) {
        rc = fail(l, -errno, "cannot open", "/dev/null");
        goto out;
    }
    log = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log < 0 || fstat(log, &st) < 0) {
        rc = fail(l, -errno, "cannot open", log_path);
        goto out;
    }
    d->log_off = st.st_size;
    rc = fork_exec(d, devnull, log, argv, hook);
    if (rc < 0) {
        fail(l, rc, "cannot run", argv[0]);
        goto out;
    }
    rc = write_pid(pid_path, d->pid);
    if (rc < 0)
        fail(l, rc, "cannot write", pid_path);
out:
    if (devnull >= 0)
        close(devnull);
    if (log >= 0)
        close(log);
    return rc;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Signals the running daemons; a vanished one is marked ended, one we may not signal is an
 * error (it belongs to someone else). */
static int signal_all(struct cli_local *l, struct cli_daemon *ds, size_t n, int sig)
{
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        if (!ds[i].running || kill(ds[i].pid, sig) == 0)
            continue;
        if (errno == ESRCH) {
            cli_local_ended(&ds[i], NULL);
            continue;
        }
        rc = -errno;
        fprintf(stderr, "gsched %s: cannot signal %s (pid %d): %s\n", l->cmd, ds[i].name,
                (int)ds[i].pid, gs_strerror(rc));
    }
    return rc;
}

/* Polls until every daemon in ds has ended or timeout_ms passed; true when all have. */
static bool wait_ended(struct cli_daemon *ds, size_t n, uint64_t timeout_ms)
{
    uint64_t deadline = gs_clock_mono_ms() + timeout_ms;

    for (;;) {
        bool all = true;

        for (size_t i = 0; i < n; i++)
            all = cli_local_ended(&ds[i], NULL) && all;
        if (all)
            return true;
        if (gs_clock_mono_ms() >= deadline)
            return false;
        sleep_ms(STOP_POLL_MS);
    }
}

int cli_local_stop(struct cli_local *l, struct cli_daemon *ds, size_t n, uint64_t timeout_ms)
{
    int rc = signal_all(l, ds, n, SIGTERM);

    if (wait_ended(ds, n, timeout_ms))
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (ds[i].running)
            fprintf(stderr, "gsched %s: %s (pid %d) still runs after SIGTERM, killing it\n", l->cmd,
                    ds[i].name, (int)ds[i].pid);
    }
    signal_all(l, ds, n, SIGKILL);
    if (wait_ended(ds, n, KILL_WAIT_MS))
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (ds[i].running)
            fprintf(stderr, "gsched %s: %s (pid %d) does not end\n", l->cmd, ds[i].name,
                    (int)ds[i].pid);
    }
    return -ETIMEDOUT;
}

/* The last `lines` lines of buf[0..len), where a last line without '\n' counts too. */
static const char *last_lines(const char *buf, size_t len, int lines)
{
    size_t i = len;

    if (i > 0 && buf[i - 1] == '\n')
        i--;
    while (i > 0) {
        if (buf[i - 1] == '\n' && --lines == 0)
            return buf + i;
        i--;
    }
    return buf;
}

void cli_local_print_tail(const struct cli_local *l, const struct cli_daemon *d, int lines)
{
    char path[PATH_MAX], buf[TAIL_BYTES + 1];
    const char *p;
    struct stat st;
    off_t from;
    ssize_t n = -1;
    int fd = -1;

    if (daemon_path(l, d, "log", path, sizeof(path)) == 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && fstat(fd, &st) == 0) {
        from = st.st_size - TAIL_BYTES > d->log_off ? st.st_size - TAIL_BYTES : d->log_off;
        n = pread(fd, buf, TAIL_BYTES, from);
    }
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        fprintf(stderr, "  (%s wrote nothing to %s)\n", d->name, path);
        return;
    }
    buf[n] = '\0';
    fprintf(stderr, "  the end of %s:\n", path);
    for (p = last_lines(buf, (size_t)n, lines); *p != '\0';) {
        const char *nl = strchr(p, '\n');
        int len = nl != NULL ? (int)(nl - p) : (int)strlen(p);

        fprintf(stderr, "    %.*s\n", len, p);
        p += len + (nl != NULL);
    }
}

static bool executable(const char *dir, const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/%s", dir, name);

    return n > 0 && (size_t)n < size && access(out, X_OK) == 0;
}

int cli_find_program(const char *cmd, const char *name, char *out, size_t size)
{
    char self[PATH_MAX], dir[PATH_MAX + 8], *slash, *path, *save = NULL;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    bool found = false;

    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash != NULL)
            *slash = '\0';
        snprintf(dir, sizeof(dir), "%s/../sbin", self);
        found = executable(self, name, out, size) || executable(dir, name, out, size);
    }
    path = strdup(getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin");
    for (char *d = path != NULL ? strtok_r(path, ":", &save) : NULL; d != NULL && !found;
         d = strtok_r(NULL, ":", &save))
        found = d[0] == '/' && executable(d, name, out, size);
    free(path);
    if (found)
        return 0;
    fprintf(stderr, "gsched %s: cannot find %s beside gsched%s%s or on PATH\n", cmd, name,
            n > 0 ? " in " : "", n > 0 ? self : "");
    return -ENOENT;
}
