/*
 * test_cgroup.c: job cgroups on a cgroup v2 tree (worker/cgroup.h) and the device program
 * that isolates GPUs there (worker/devbpf.h). The v1 path runs end to end in
 * tests/integration/cgroups.sh on machines that mount v1 controllers; these tests take the
 * v2 tree wherever one is mounted (/sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified
 * on a hybrid one, which has no controllers but still kills, freezes and runs device
 * programs) and need root; elsewhere they are skipped, saying why.
 *
 * GPUs are stand-in device nodes (char 195:N made in a temporary directory): with no NVIDIA
 * driver, opening one the job may use fails with ENXIO, one its program denies with EPERM.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/cgroup.h"
#include "worker/devbpf.h"

static char dir[64], root[64], rel[96];

/* The v2 tree to test in, or NULL. */
static const char *v2_root(void)
{
    if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
        return "/sys/fs/cgroup";
    if (access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0)
        return "/sys/fs/cgroup/unified";
    return NULL;
}

static void setup(void)
{
    struct gs_buf why = GS_BUF_INIT;
    const char *r = v2_root();
    int rc;

    if (geteuid() != 0)
        cr_skip_test("cgroups and device programs need root");
    if (r == NULL)
        cr_skip_test("no cgroup v2 tree mounted");
    rc = wrk_devbpf_probe(&why);
    if (rc == -EPERM || rc == -ENOSYS) /* a container without CAP_BPF, say; not a wrong program */
        cr_skip_test("this kernel refuses cgroup device programs: %s", why.data);
    cr_assert_eq(rc, 0, "%s", why.data);
    gs_buf_release(&why);
    snprintf(root, sizeof(root), "%s", r);
    snprintf(dir, sizeof(dir), "/tmp/gsched-cg-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(rel, sizeof(rel), "gsched-test/unit-%d/node1", (int)getpid());
    for (unsigned i = 0; i < 4; i++) {
        char path[128];

        snprintf(path, sizeof(path), "%s/nvidia%u", dir, i);
        cr_assert_eq(mknod(path, S_IFCHR | 0666, makedev(WRK_CG_NVIDIA_MAJOR, i)), 0,
                     "mknod %s: %s", path, strerror(errno));
    }
}

static void teardown(void)
{
    char cmd[320];

    if (dir[0] == '\0')
        return;
    /* what a failed test left: its groups, deepest first (rmdir only: empty ones) */
    snprintf(cmd, sizeof(cmd),
             "rm -rf '%s'; find '%s/gsched-test/unit-%d' -depth -type d -exec rmdir {} + "
             "2>/dev/null; true",
             dir, root, (int)getpid());
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cgroup_v2, .init = setup, .fini = teardown, .timeout = 30);

/* In a child that joins the job's group through fds (as a task does between fork and exec),
 * opens each stand-in GPU; returns a bit per GPU opened without EPERM, or -1. */
static int open_as_job(const int *fds, int nfds)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        int bits = 0;

        for (int i = 0; i < nfds; i++) {
            if (write(fds[i], "0", 1) != 1)
                _exit(100);
        }
        for (unsigned i = 0; i < 4; i++) {
            char path[128];
            int fd;

            snprintf(path, sizeof(path), "%s/nvidia%u", dir, i);
            fd = open(path, O_RDONLY);
            if (fd >= 0 || errno != EPERM)
                bits |= 1 << i;
            if (fd >= 0)
                close(fd);
        }
        _exit(bits);
    }
    cr_assert_gt(pid, 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    cr_assert_neq(WEXITSTATUS(status), 100, "the child could not join the job's group");
    return WEXITSTATUS(status);
}

Test(cgroup_v2, a_job_opens_only_its_own_gpus)
{
    static const unsigned deny[] = {1, 3};
    struct wrk_cg_limits lim = {.deny_gpus = deny, .ndeny_gpus = 2};
    struct gs_buf why = GS_BUF_INIT;
    struct wrk_cg *cg = NULL;
    int fds[WRK_CG_MAX_FDS], n, other[WRK_CG_MAX_FDS], more[WRK_CG_MAX_FDS], m;

    cr_assert_eq(wrk_cg_open("v2", root, rel, &cg, &why), 0, "%s", why.data);
    cr_assert_eq(wrk_cg_mode(cg), WRK_CG_V2);
    cr_assert_not_null(strstr(wrk_cg_describe(cg), "devices"), "%s", wrk_cg_describe(cg));
    n = wrk_cg_job_enter(cg, 7, 0, &lim, fds, &why);
    cr_assert_eq(n, 1, "%d: %s", n, why.data);
    cr_assert_eq(open_as_job(fds, n), 0x5, "GPUs 0 and 2 open, 1 and 3 denied");

    /* a later task of the job joins the same group and the same program */
    m = wrk_cg_job_enter(cg, 7, 0, &lim, other, &why);
    cr_assert_eq(m, 1);
    cr_assert_eq(open_as_job(other, m), 0x5);
    /* another job, given every GPU: nothing denied */
    lim.ndeny_gpus = 0;
    m = wrk_cg_job_enter(cg, 8, 0, &lim, more, &why);
    cr_assert_eq(m, 1);
    cr_assert_eq(open_as_job(more, m), 0xf);
    /* outside any job's group (this process) every stand-in opens */
    cr_assert_eq(open_as_job(NULL, 0), 0xf);

    close(fds[0]);
    close(other[0]);
    close(more[0]);
    cr_assert_geq(wrk_cg_job_end(cg, 7), 0);
    cr_assert_geq(wrk_cg_job_end(cg, 8), 0);
    wrk_cg_free(cg);
    gs_buf_release(&why);
}

/* Whether pid is gone or a zombie (an orphan waits for init to reap it), within 5 s. */
static bool dead(int pid)
{
    for (int i = 0; i < 500; i++) {
        char path[64], text[256] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "r");
        if (f == NULL)
            return true;
        if (fgets(text, sizeof(text), f) == NULL)
            text[0] = '\0';
        fclose(f);
        if (strstr(text, ") Z ") != NULL)
            return true;
        usleep(10000);
    }
    return false;
}

Test(cgroup_v2, ending_a_job_kills_what_escaped_its_session)
{
    struct wrk_cg_limits lim = {0};
    struct gs_buf why = GS_BUF_INIT;
    struct wrk_cg *cg = NULL;
    int fds[WRK_CG_MAX_FDS], n, pids[8], status;
    pid_t pid;

    cr_assert_eq(wrk_cg_open("v2", root, rel, &cg, &why), 0, "%s", why.data);
    n = wrk_cg_job_enter(cg, 9, 0, &lim, fds, &why);
    cr_assert_eq(n, 1);
    pid = fork();
    if (pid == 0) {
        if (write(fds[0], "0", 1) != 1)
            _exit(1);
        if (fork() == 0) { /* a grandchild in its own session, as `setsid sleep &` */
            setsid();
            pause();
        }
        _exit(0);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    close(fds[0]);
    cr_assert_eq(wrk_cg_job_pids(cg, 9, pids, 8), 1, "the grandchild is in the job's group");
    cr_assert_eq(wrk_cg_job_end(cg, 9), 1, "one process killed");
    cr_assert(dead(pids[0]), "the grandchild survived the job's end");
    wrk_cg_free(cg);
    gs_buf_release(&why);
}

/* A child of this process in the step's group (through fds) that sleeps until killed. */
static pid_t sleeper(const int *fds, int nfds)
{
    pid_t pid = fork();

    if (pid == 0) {
        alarm(30); /* a failed test leaves no process behind for long */
        for (int i = 0; i < nfds; i++) {
            if (write(fds[i], "0", 1) != 1)
                _exit(1);
        }
        pause();
        _exit(0);
    }
    cr_assert_gt(pid, 0);
    return pid;
}

Test(cgroup_v2, a_steps_end_kills_only_that_steps_processes)
{
    static const unsigned deny[] = {2};
    struct wrk_cg_limits lim = {.deny_gpus = deny, .ndeny_gpus = 1};
    struct gs_buf why = GS_BUF_INIT;
    struct wrk_cg *cg = NULL;
    int fds0[WRK_CG_MAX_FDS], fds1[WRK_CG_MAX_FDS], pids[8], status;
    pid_t batch, step;
    char path[256];

    cr_assert_eq(wrk_cg_open("v2", root, rel, &cg, &why), 0, "%s", why.data);
    cr_assert_eq(wrk_cg_job_enter(cg, 11, 0, &lim, fds0, &why), 1, "%s", why.data);
    cr_assert_eq(wrk_cg_job_enter(cg, 11, 1, &lim, fds1, &why), 1, "%s", why.data);
    snprintf(path, sizeof(path), "%s/%s/job_11/step_1", root, rel);
    cr_assert_eq(access(path, F_OK), 0, "the step has its own group");
    cr_assert_eq(open_as_job(fds1, 1), 0xb, "a step has its job's device program");
    batch = sleeper(fds0, 1);
    step = sleeper(fds1, 1);
    close(fds0[0]);
    close(fds1[0]);
    /* both children write themselves into their groups soon after fork */
    for (int i = 0; i < 500 && wrk_cg_job_pids(cg, 11, pids, 8) < 2; i++)
        usleep(10000);
    cr_assert_eq(wrk_cg_job_pids(cg, 11, pids, 8), 2, "the job lists both steps' processes");

    cr_assert_eq(wrk_cg_step_end(cg, 11, 1), 1, "the step's one process killed");
    cr_assert_eq(waitpid(step, &status, 0), step);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    cr_assert_neq(access(path, F_OK), 0, "the step's group is gone");
    cr_assert_eq(wrk_cg_job_pids(cg, 11, pids, 8), 1);
    cr_assert_eq(pids[0], batch, "the batch step's process lives on");

    cr_assert_eq(wrk_cg_job_end(cg, 11), 1);
    cr_assert_eq(waitpid(batch, &status, 0), batch);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    wrk_cg_free(cg);
    gs_buf_release(&why);
}

Test(cgroup_v2, a_tree_that_is_not_v2_is_refused_when_v2_is_asked_for)
{
    struct gs_buf why = GS_BUF_INIT;
    struct wrk_cg *cg = NULL;

    cr_assert_eq(wrk_cg_open("v2", dir, "gsched/node1", &cg, &why), -ENOTSUP);
    cr_assert_null(cg);
    cr_assert_not_null(strstr(why.data, "is not a cgroup v2 tree"), "%s", why.data);
    gs_buf_release(&why);
}

Test(cgroup_v2, a_device_program_checks_at_most_its_cap_of_minors)
{
    static unsigned many[WRK_DEVBPF_MAX_DENY + 1];
    struct gs_buf why = GS_BUF_INIT;
    int fd = open(root, O_RDONLY | O_DIRECTORY);

    cr_assert_geq(fd, 0);
    cr_assert_eq(wrk_devbpf_deny(fd, WRK_CG_NVIDIA_MAJOR, many, WRK_DEVBPF_MAX_DENY + 1, &why),
                 -E2BIG);
    cr_assert_not_null(strstr(why.data, "more than"), "%s", why.data);
    close(fd);
    gs_buf_release(&why);
}
