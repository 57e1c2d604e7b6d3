/*
 * topo_trial.c: an hwloc XML file is loaded once in a child process before gs_topo_load
 * loads it for real, so that a file hwloc itself crashes on ends as an error naming the
 * file instead of taking the worker down with it.
 *
 * hwloc 2.9.0 (Debian 12) dereferences NULL on an object with a cpuset but no
 * complete_cpuset (or the nodeset twins) and fails an assert() on a set that is not hex
 * (tests/fuzz/hwloc-crashes/ holds one of each); the fuzzer finds such files within a few
 * hundred inputs, so there are surely more. The machine's own topology comes from the
 * kernel and is loaded directly; only files, which anyone may have written, take the trial.
 *
 * The child's stderr comes back through a pipe: when hwloc merely refused the file, what it
 * said (the XML error and its line) is passed on to ours; when it crashed, its last words
 * (an assert, or a sanitizer's report in a sanitizer build) are dropped for the one-line
 * error here. A child that has not finished in TRIAL_MS is killed (a file hwloc loops on).
 */
#define _GNU_SOURCE

#include "common/topo_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/clock.h"

#define TRIAL_MS 10000
#define TRIAL_LOADED 0
#define TRIAL_REFUSED 3 /* not 1: a sanitizer's report ends a process with 1 */
#define TRIAL_STDERR_MAX 65536

/* In the child: TRIAL_LOADED when hwloc loads path, else TRIAL_REFUSED. Never returns. */
_Noreturn static void trial(const char *path, int err_fd)
{
    hwloc_topology_t ht;
    int ok;

    if (dup2(err_fd, STDERR_FILENO) < 0)
        _exit(TRIAL_REFUSED);
    if (hwloc_topology_init(&ht) < 0)
        _exit(TRIAL_REFUSED);
    hwloc_topology_set_io_types_filter(ht, HWLOC_TYPE_FILTER_KEEP_ALL);
    ok = hwloc_topology_set_xml(ht, path) == 0 && hwloc_topology_load(ht) == 0;
    hwloc_topology_destroy(ht);
    _exit(ok ? TRIAL_LOADED : TRIAL_REFUSED); /* _exit: the parent's atexit handlers are not ours */
}

/* Reads the child's stderr into out until it closes or the deadline (monotonic ms) passes.
 * Returns false on the deadline. */
static bool read_until_eof(int fd, struct gs_buf *out, uint64_t deadline)
{
    char chunk[4096];

    for (;;) {
        uint64_t now = gs_clock_mono_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (now >= deadline)
            return false;
        if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
            return false;
        n = read(fd, chunk, sizeof(chunk));
        if (n == 0)
            return true;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return true;
        if (n > 0 && out->len < TRIAL_STDERR_MAX && gs_buf_append(out, chunk, (size_t)n) < 0)
            return true;
    }
}

int topo_trial_load_xml(const char *path, struct gs_error *err)
{
    struct gs_buf said = GS_BUF_INIT;
    int fds[2], status = 0, rc = 0;
    bool finished;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return gs_error_set(err, -errno, 0, 0, "%s: cannot try it: %s", path, gs_strerror(-errno));
    pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(fds[0]);
        close(fds[1]);
        return gs_error_set(err, rc, 0, 0, "%s: cannot fork to try it: %s", path, gs_strerror(rc));
    }
    if (pid == 0)
        trial(path, fds[1]);
    close(fds[1]);
    finished = read_until_eof(fds[0], &said, gs_clock_mono_ms() + TRIAL_MS);
    close(fds[0]);
    if (!finished)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!finished)
        rc = gs_error_set(err, -ETIMEDOUT, 0, 0, "%s: hwloc did not finish loading it in %d s",
                          path, TRIAL_MS / 1000);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == TRIAL_LOADED)
        rc = 0;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == TRIAL_REFUSED) {
        if (said.len > 0) /* hwloc's own words on the file */
            (void)!write(STDERR_FILENO, said.data, said.len);
        rc = gs_error_set(err, -EINVAL, 0, 0, "%s: hwloc could not load the topology", path);
    } else {
        rc = gs_error_set(err, -EINVAL, 0, 0,
                          "%s: hwloc crashed loading this topology (%s): the file is malformed",
                          path, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "it aborted");
    }
    gs_buf_release(&said);
    return rc;
}
