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
 * A child that has not finished in TRIAL_MS is killed (a file hwloc loops on).
 */
#define _GNU_SOURCE

#include "common/topo_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRIAL_MS 10000

/* In the child: 0 when hwloc loads path, else 1. Never returns. */
_Noreturn static void trial(const char *path)
{
    hwloc_topology_t ht;
    int ok;

    if (hwloc_topology_init(&ht) < 0)
        _exit(1);
    hwloc_topology_set_io_types_filter(ht, HWLOC_TYPE_FILTER_KEEP_ALL);
    ok = hwloc_topology_set_xml(ht, path) == 0 && hwloc_topology_load(ht) == 0;
    hwloc_topology_destroy(ht);
    _exit(ok ? 0 : 1); /* _exit: the parent's atexit handlers and buffers are not ours */
}

int topo_trial_load_xml(const char *path, struct gs_error *err)
{
    struct timespec tick = {0, 1000000L};
    int status = 0, waited = 0;
    pid_t pid = fork(), got;

    if (pid < 0)
        return gs_error_set(err, -errno, 0, 0, "%s: cannot fork to try it: %s", path,
                            gs_strerror(-errno));
    if (pid == 0)
        trial(path);
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && waited < TRIAL_MS) {
        nanosleep(&tick, NULL);
        waited++;
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        got = waitpid(pid, &status, 0);
        return gs_error_set(err, -ETIMEDOUT, 0, 0, "%s: hwloc did not finish loading it in %d s",
                            path, TRIAL_MS / 1000);
    }
    if (got < 0)
        return gs_error_set(err, -errno, 0, 0, "%s: waiting for its trial load: %s", path,
                            gs_strerror(-errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status) || WEXITSTATUS(status) != 1)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "%s: hwloc crashed loading this topology (%s): the file is malformed",
                            path, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "it aborted");
    return gs_error_set(err, -EINVAL, 0, 0, "%s: hwloc could not load the topology", path);
}
