/*
 * test_launch.c: a task starts as a real process in its own session with its log files,
 * directory, environment, user, limits, CPU binding and memory policy; every failure before
 * exec is reported with the step that failed; signalling the group reaches grandchildren.
 * The memory policy is read back by the show_binding helper, from the kernel.
 */
#define _GNU_SOURCE /* pipe2 */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "refuse_mempolicy.h"
#include "worker/launch.h"

static char dir[64];
static char out_path[128], err_path[128];
static char *env_default[] = {"PATH=/usr/bin:/bin", "GSCHED_TEST=yes", NULL};

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-launch-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    chmod(dir, 0777); /* the set_user test writes here as nobody */
    snprintf(out_path, sizeof(out_path), "%s/task.out", dir);
    snprintf(err_path, sizeof(err_path), "%s/task.err", dir);
}

static void remove_dir(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(launch, .init = make_dir, .fini = remove_dir);

static void slurp(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    cr_assert_not_null(f, "cannot open %s", path);
    n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* Runs sh -c script with the given spec fields and returns the wait status. */
static int run_sh(struct wrk_launch_spec *spec, const char *script)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct gs_error err;
    pid_t pid = -1;
    int status = 0;

    spec->argv = argv;
    if (spec->envp == NULL)
        spec->envp = env_default;
    if (spec->stdout_path == NULL)
        spec->stdout_path = out_path;
    cr_assert_eq(wrk_launch(spec, &pid, &err), 0, "%s", err.msg);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

Test(launch, runs_command_with_logs_and_exit_code)
{
    struct wrk_launch_spec spec = {.stderr_path = err_path};
    char out[256], errtxt[256];
    int status = run_sh(&spec, "echo to-out; echo to-err >&2; exit 3");

    cr_assert(WIFEXITED(status));
    cr_assert_eq(WEXITSTATUS(status), 3);
    slurp(out_path, out, sizeof(out));
    slurp(err_path, errtxt, sizeof(errtxt));
    cr_assert_str_eq(out, "to-out\n");
    cr_assert_str_eq(errtxt, "to-err\n");
}

Test(launch, stderr_joins_stdout_when_not_given)
{
    struct wrk_launch_spec spec = {0};
    char out[256];

    run_sh(&spec, "echo a; echo b >&2");
    slurp(out_path, out, sizeof(out));
    cr_assert_str_eq(out, "a\nb\n");
}

Test(launch, logs_are_appended_to_unless_truncate_output)
{
    struct wrk_launch_spec spec = {.stderr_path = err_path};
    char out[256], errtxt[256];
    FILE *f = fopen(out_path, "w");

    cr_assert_not_null(f);
    fputs("old\n", f);
    fclose(f);
    run_sh(&spec, "echo new; echo e >&2");
    slurp(out_path, out, sizeof(out));
    cr_assert_str_eq(out, "old\nnew\n");
    spec = (struct wrk_launch_spec){.stderr_path = err_path, .truncate_output = true};
    run_sh(&spec, "echo newer; echo e2 >&2");
    slurp(out_path, out, sizeof(out));
    slurp(err_path, errtxt, sizeof(errtxt));
    cr_assert_str_eq(out, "newer\n");
    cr_assert_str_eq(errtxt, "e2\n", "stderr's file emptied too");
}

Test(launch, task_sees_exactly_its_environment_and_workdir)
{
    struct wrk_launch_spec spec = {.workdir = dir};
    char out[512], want[256];

    run_sh(&spec, "echo \"$GSCHED_TEST ${HOME-unset}\"; pwd; read x || echo stdin-empty");
    slurp(out_path, out, sizeof(out));
    snprintf(want, sizeof(want), "yes unset\n%s\nstdin-empty\n", dir);
    cr_assert_str_eq(out, want);
}

Test(launch, task_leads_its_own_session_and_group)
{
    struct wrk_launch_spec spec = {0};
    char *argv[] = {"sleep", "100", NULL};
    struct gs_error err;
    pid_t pid;
    int status;

    spec.argv = argv;
    spec.envp = env_default;
    cr_assert_eq(wrk_launch(&spec, &pid, &err), 0, "%s", err.msg);
    cr_assert_eq(getpgid(pid), pid);
    cr_assert_eq(getsid(pid), pid);
    cr_assert_eq(wrk_signal_group(pid, SIGKILL), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

Test(launch, signalling_the_group_reaches_grandchildren)
{
    struct wrk_launch_spec spec = {.stdout_path = "/dev/null"};
    char *argv[] = {"/bin/sh", "-c", "sleep 100 & sleep 100 & wait", NULL};
    uint64_t deadline;
    struct gs_error err;
    pid_t pid;
    int status;

    spec.argv = argv;
    spec.envp = env_default;
    cr_assert_eq(wrk_launch(&spec, &pid, &err), 0, "%s", err.msg);
    cr_assert_eq(wrk_signal_group(pid, SIGTERM), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status));
    /* The sleeps were reparented away from us; poll until the group is empty. */
    deadline = gs_clock_mono_ms() + 10000;
    while (kill(-pid, 0) == 0 && gs_clock_mono_ms() < deadline)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert_eq(kill(-pid, 0), -1, "grandchildren survived");
    cr_assert_eq(errno, ESRCH);
}

static void assert_launch_fails(struct wrk_launch_spec *spec, int want, const char *fragment)
{
    struct gs_error err;
    pid_t pid = 4242;

    if (spec->envp == NULL)
        spec->envp = env_default;
    cr_assert_eq(wrk_launch(spec, &pid, &err), want, "message: %s", err.msg);
    cr_assert_eq(pid, 4242, "pid written on failure");
    cr_assert_not_null(strstr(err.msg, fragment), "message '%s' lacks '%s'", err.msg, fragment);
}

Test(launch, reports_each_failed_step_by_name)
{
    char *missing[] = {"no-such-command-gsched", NULL};
    char *abs_missing[] = {"/no/such/binary", NULL};
    char *ok[] = {"/bin/true", NULL};
    char bad_log[160];
    struct wrk_launch_spec a = {.argv = missing};
    struct wrk_launch_spec b = {.argv = abs_missing};
    struct wrk_launch_spec c = {.argv = ok, .workdir = "/nonexistent-gsched-dir"};
    struct wrk_launch_spec d = {.argv = ok, .stdout_path = bad_log};
    struct wrk_launch_spec e = {0};

    snprintf(bad_log, sizeof(bad_log), "%s/missing-subdir/out.log", dir);
    assert_launch_fails(&a, -ENOENT, "exec no-such-command-gsched: command not found in PATH");
    assert_launch_fails(&b, -ENOENT, "exec /no/such/binary: No such file or directory");
    assert_launch_fails(&c, -ENOENT, "chdir /nonexistent-gsched-dir: No such file");
    assert_launch_fails(&d, -ENOENT, "open stdout");
    assert_launch_fails(&e, -EINVAL, "no command");
}

/*
 * wrk_launch returns only after the child's exec, and in the worker the loop that waits
 * there is the one that drains the task's pipes: a child that waited before exec for room
 * in a pipe, or for a FIFO's reader, hung the whole worker (live_fuzz, a 230 KB note). The
 * timeouts turn such a hang into a failure.
 */
Test(launch, a_long_stderr_note_into_a_pipe_nobody_reads_yet_is_cut_not_waited_on, .timeout = 30)
{
    char *argv[] = {"/bin/echo", "task", NULL};
    size_t big = 300 * 1024, got = 0;
    char *note = malloc(big + 1), *text = malloc(big + 64);
    struct wrk_launch_spec spec = {.argv = argv, .envp = env_default, .use_fds = true};
    struct gs_error err;
    int fds[2], status;
    ssize_t n;
    pid_t pid;

    cr_assert(note != NULL && text != NULL);
    memset(note, 'n', big);
    note[big] = '\0';
    cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
    spec.stdout_fd = spec.stderr_fd = fds[1];
    spec.stderr_note = note;
    cr_assert_eq(wrk_launch(&spec, &pid, &err), 0, "%s", err.msg);
    close(fds[1]);
    while ((n = read(fds[0], text + got, big + 63 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(got, WRK_LAUNCH_NOTE_MAX + strlen("\ntask\n"), "read %zu bytes", got);
    cr_assert_eq(strspn(text, "n"), WRK_LAUNCH_NOTE_MAX);
    cr_assert_eq(memcmp(text + WRK_LAUNCH_NOTE_MAX, "\ntask\n", 6), 0);
    free(note);
    free(text);
}

Test(launch, a_fifo_log_without_a_reader_fails_the_launch_and_with_one_is_written, .timeout = 30)
{
    char *argv[] = {"/bin/echo", "through-the-fifo", NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env_default};
    char fifo[160], line[64] = "";
    struct gs_error err;
    int reader, status;
    ssize_t n;
    pid_t pid;

    snprintf(fifo, sizeof(fifo), "%s/out.fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    spec.stdout_path = fifo;
    assert_launch_fails(&spec, -ENXIO, "open stdout");

    reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    cr_assert_geq(reader, 0);
    cr_assert_eq(wrk_launch(&spec, &pid, &err), 0, "%s", err.msg);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    n = read(reader, line, sizeof(line) - 1);
    close(reader);
    cr_assert_eq(n, (ssize_t)strlen("through-the-fifo\n"));
    cr_assert_str_eq(line, "through-the-fifo\n");
}

Test(launch, applies_memory_limit_and_cpu_binding)
{
    int cpus[] = {0};
    struct wrk_launch_spec spec = {.mem_limit_bytes = 256ULL << 20, .ncpus = 1, .cpus = cpus};
    char out[512];

    run_sh(&spec, "ulimit -v; grep Cpus_allowed_list /proc/self/status");
    slurp(out_path, out, sizeof(out));
    cr_assert_str_eq(out, "262144\nCpus_allowed_list:\t0\n");
}

Test(launch, resets_signals_the_worker_ignores)
{
    struct wrk_launch_spec spec = {0};
    unsigned long long ignored = ~0ULL;
    char out[256];

    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    run_sh(&spec, "grep SigIgn /proc/self/status");
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    slurp(out_path, out, sizeof(out));
    cr_assert_eq(sscanf(out, "SigIgn: %llx", &ignored), 1, "%s", out);
    /* Signals 1-31; glibc keeps 32 and 33 for itself and refuses to change them. */
    cr_assert_eq(ignored & 0x7fffffffULL, 0, "task inherits ignored signals: %s", out);
}

Test(launch, runs_as_the_jobs_user_and_logs_belong_to_it)
{
    struct wrk_launch_spec spec = {.set_user = true, .uid = 65534, .gid = 65534};
    struct stat st;
    char out[256];

    if (geteuid() != 0)
        cr_skip_test("needs root to switch users");
    run_sh(&spec, "id -u; id -g");
    slurp(out_path, out, sizeof(out));
    cr_assert_str_eq(out, "65534\n65534\n");
    cr_assert_eq(stat(out_path, &st), 0);
    cr_assert_eq(st.st_uid, 65534, "the log file was created as the job's user");
}

#define LONG_BITS ((int)(CHAR_BIT * sizeof(unsigned long)))

static bool mask_has(const struct wrk_numa_mask *m, int node)
{
    return (m->bits[node / LONG_BITS] >> (node % LONG_BITS)) & 1UL;
}

Test(launch, numa_mask_holds_each_known_node_once)
{
    int nodes[] = {1, 0, 1, -1, 65, 0, WRK_LAUNCH_NUMA_MAX - 1};
    struct wrk_numa_mask m;
    int set = 0;

    cr_assert_eq(wrk_launch_numa_mask(nodes, 7, &m), 0);
    cr_assert_eq(m.count, 4, "repeats and unknown (-1) nodes are not counted");
    cr_assert_eq(m.first, 1, "the first core's node, the one to prefer alone");
    for (int node = 0; node < WRK_LAUNCH_NUMA_MAX; node++)
        set += mask_has(&m, node);
    cr_assert_eq(set, 4);
    cr_assert(mask_has(&m, 0) && mask_has(&m, 1) && mask_has(&m, 65));
    cr_assert(mask_has(&m, WRK_LAUNCH_NUMA_MAX - 1), "the last bit of the last word");
}

Test(launch, numa_mask_of_no_known_node_is_empty)
{
    int unknown[] = {-1, -1};
    struct wrk_numa_mask m;

    cr_assert_eq(wrk_launch_numa_mask(NULL, 0, &m), 0);
    cr_assert_eq(m.count, 0);
    cr_assert_eq(m.first, -1);
    cr_assert_eq(wrk_launch_numa_mask(unknown, 2, &m), 0);
    cr_assert_eq(m.count, 0);
    for (size_t i = 0; i < sizeof(m.bits) / sizeof(m.bits[0]); i++)
        cr_assert_eq(m.bits[i], 0UL);
}

Test(launch, numa_mask_rejects_nodes_past_its_width)
{
    int nodes[] = {3, WRK_LAUNCH_NUMA_MAX};
    struct wrk_numa_mask m, before;

    memset(&m, 0xab, sizeof(m));
    before = m;
    cr_assert_eq(wrk_launch_numa_mask(nodes, 2, &m), -EINVAL);
    cr_assert_eq(memcmp(&m, &before, sizeof(m)), 0, "untouched on failure");
}

/* The NUMA nodes this process may allocate on (Mems_allowed_list), at most max of them. */
static int allowed_nodes(int *out, int max)
{
    char line[4096], *p = NULL;
    FILE *f = fopen("/proc/self/status", "r");
    int n = 0;

    cr_assert_not_null(f);
    while (p == NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Mems_allowed_list:", 18) == 0)
            p = line + 18;
    }
    fclose(f);
    cr_assert_not_null(p, "no Mems_allowed_list in /proc/self/status");
    while (n < max && *p != '\0' && *p != '\n') {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;

        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long node = lo; node <= hi && n < max; node++)
            out[n++] = (int)node;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Runs show_binding with spec; returns its line, and the launch's note in *note. */
static void show_binding(struct wrk_launch_spec *spec, char *out, size_t size,
                         struct gs_error *note)
{
    char *argv[] = {SHOW_BINDING, NULL};
    pid_t pid = -1;
    int status = -1;

    spec->argv = argv;
    spec->envp = env_default;
    spec->stdout_path = out_path;
    cr_assert_eq(wrk_launch(spec, &pid, note), 0, "%s", note->msg);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert_eq(status, 0, "show_binding failed");
    slurp(out_path, out, size);
    spec->argv = NULL;
}

/* What a task reports when its memory policy was refused (EPERM under a seccomp profile,
 * ENOSYS without NUMA): the launch succeeded with a note, and the task is unbound. */
static bool policy_refused(const struct gs_error *note, const char *out)
{
    if (note->msg[0] == '\0')
        return false;
    cr_assert_eq(note->code, 0, "a note, not an error");
    cr_assert_not_null(strstr(note->msg, "set_mempolicy: "), "%s", note->msg);
    cr_assert_not_null(strstr(out, "mempolicy=default"), "%s", out);
    return true;
}

Test(launch, memory_prefers_the_numa_node_of_the_tasks_cores)
{
    int node, cpus[] = {0}, nodes[3];
    struct wrk_launch_spec spec = {.ncpus = 1, .cpus = cpus, .nmem_nodes = 3, .mem_nodes = nodes};
    struct gs_error note;
    char out[256], want[128];

    cr_assert_eq(allowed_nodes(&node, 1), 1);
    nodes[0] = node;
    nodes[1] = -1;
    nodes[2] = node;
    show_binding(&spec, out, sizeof(out), &note);
    if (policy_refused(&note, out))
        cr_skip_test("set_mempolicy refused here: %s", note.msg);
    snprintf(want, sizeof(want), "cpus=0 mempolicy=preferred nodes=%d\n", node);
    cr_assert_str_eq(out, want);
}

Test(launch, memory_prefers_all_the_nodes_of_a_task_spanning_several)
{
    int nodes[2];
    struct wrk_launch_spec spec = {.nmem_nodes = 2, .mem_nodes = nodes};
    struct gs_error note;
    char out[256], want[128];

    if (allowed_nodes(nodes, 2) < 2)
        cr_skip_test("one NUMA node here");
    show_binding(&spec, out, sizeof(out), &note);
    if (policy_refused(&note, out))
        cr_skip_test("set_mempolicy refused here: %s", note.msg);
    /* preferred_many since Linux 5.15; before, the first node alone. */
    snprintf(want, sizeof(want), "mempolicy=preferred nodes=%d\n", nodes[0]);
    if (strstr(out, "preferred_many") != NULL)
        snprintf(want, sizeof(want), "mempolicy=preferred_many nodes=%d,%d\n", nodes[0], nodes[1]);
    cr_assert_not_null(strstr(out, want), "%s lacks %s", out, want);
}

Test(launch, memory_policy_failures_are_reported_as_a_step)
{
    int absent[] = {WRK_LAUNCH_NUMA_MAX - 1}, too_wide[] = {WRK_LAUNCH_NUMA_MAX};
    struct wrk_launch_spec a = {.nmem_nodes = 1, .mem_nodes = too_wide};
    struct wrk_launch_spec b = {.nmem_nodes = 1, .mem_nodes = absent};
    char *ok[] = {"/bin/true", NULL};
    struct gs_error err;
    pid_t pid = 4242;
    int rc;

    a.argv = b.argv = ok;
    a.envp = b.envp = env_default;
    assert_launch_fails(&a, -EINVAL, "numa node out of range");
    rc = wrk_launch(&b, &pid, &err);
    if (rc == 0) {
        waitpid(pid, NULL, 0);
        cr_assert_not_null(strstr(err.msg, "set_mempolicy: "), "%s", err.msg);
        cr_skip_test("set_mempolicy refused here: %s", err.msg);
    }
    cr_assert_eq(rc, -EINVAL, "a node this machine lacks: %s", err.msg);
    cr_assert_str_eq(err.msg, "set_mempolicy: Invalid argument");
    cr_assert_eq(pid, 4242, "pid written on failure");
}

Test(launch, refused_memory_policy_starts_the_task_with_a_note)
{
    int cpus[] = {0}, nodes[] = {0};
    struct wrk_launch_spec spec = {.ncpus = 1, .cpus = cpus, .nmem_nodes = 1, .mem_nodes = nodes};
    struct gs_error note;
    char out[256];

    cr_assert_eq(allowed_nodes(nodes, 1), 1);
    test_refuse_set_mempolicy();
    show_binding(&spec, out, sizeof(out), &note);
    cr_assert_eq(note.code, 0);
    cr_assert_str_eq(note.msg, "set_mempolicy: Operation not permitted");
    cr_assert_str_eq(out, "cpus=0 mempolicy=default nodes=\n", "bound to its CPUs all the same");
}

/*
 * A child stuck before its exec holds none of the worker's descriptors: here it hangs
 * writing its cgroup.procs (a pipe with no room stands in for it, as a chdir on an NFS
 * server that is gone would), and the worker's end of a pipe it inherited, close-on-exec
 * like the keeper's, is closed in it all the same: the other end reads EOF once the
 * "worker" closes its copy. Before, the child held it until its exec, which never came.
 */
Test(launch, a_child_stuck_before_its_exec_holds_none_of_the_workers_descriptors, .timeout = 30)
{
    char *argv[] = {"/bin/true", NULL};
    struct wrk_launch_spec spec = {.argv = argv, .envp = env_default, .stdout_path = "/dev/null"};
    struct wrk_launch_status *st = NULL;
    struct gs_error err, note;
    int keeper[2], full[2], status, flags, ready, stuck;
    struct pollfd p;
    ssize_t got;
    char buf[4096], c;
    pid_t pid;

    cr_assert_eq(pipe2(keeper, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(full, O_CLOEXEC | O_NONBLOCK), 0);
    memset(buf, 'x', sizeof(buf));
    while (write(full[1], buf, sizeof(buf)) > 0)
        ;
    while (write(full[1], buf, 1) > 0)
        ;
    cr_assert_eq(errno, EAGAIN, "the pipe is full");
    flags = fcntl(full[1], F_GETFL);
    cr_assert_eq(fcntl(full[1], F_SETFL, flags & ~O_NONBLOCK), 0); /* the child's write waits */
    spec.cgroup_fds = &full[1];
    spec.ncgroup_fds = 1;
    cr_assert_eq(wrk_launch_start(&spec, &pid, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(wrk_launch_status_read(st, &note, &err), -EAGAIN, "the child is stuck");
    close(keeper[1]); /* the worker dies */
    p.fd = keeper[0];
    p.events = POLLIN;
    ready = poll(&p, 1, 5000);
    got = ready == 1 ? read(keeper[0], &c, 1) : -1;
    stuck = wrk_launch_status_read(st, &note, &err);
    /* Ended before any assertion: a stuck child left behind would hold the test's pipes. */
    cr_assert_eq(kill(pid, SIGKILL), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    wrk_launch_status_free(st);
    cr_assert_eq(ready, 1, "the keeper's end still waits: the child holds the pipe");
    cr_assert_eq(got, 0, "EOF");
    cr_assert_eq(stuck, -EAGAIN, "and the child was still stuck");
    close(keeper[0]);
    close(full[0]);
    close(full[1]);
}
