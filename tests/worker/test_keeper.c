/*
 * test_keeper.c: the fence for a worker that dies (worker/keeper.h), with this test as the
 * worker: a task in its own process group listed in a ledger, a keeper forked for it. When
 * the pipe ends without a goodbye the keeper kills the task, no sooner than 4/5 of the fence
 * timeout; after a goodbye, or with no fence timeout, it leaves it alone; a task started
 * after the worker died (not in the ledger then) is never touched.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "worker/keeper.h"
#include "worker/ledger.h"

static char dir[64], path[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gsched-keeper-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/node.ledger", dir);
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0, "teardown: the test's directory could not be removed");
}

TestSuite(keeper, .init = setup, .fini = teardown, .timeout = 30);

/* A task: a child in a process group of its own that waits to be killed. */
static pid_t task(void)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        for (;;)
            pause();
    }
    setpgid(pid, pid);
    return pid;
}

static void list(struct wrk_ledger *l, pid_t pid, uint64_t job)
{
    uint64_t until = gs_clock_mono_ms() + 5000;

    /* The ledger takes the start time from /proc; the child exists once fork returned. */
    while (wrk_ledger_start_time(pid) == 0 && gs_clock_mono_ms() < until)
        ;
    cr_assert_eq(wrk_ledger_add(l, pid, job, 0, 0), 0);
}

/* Waits for the keeper to exit; fails after 10 s. */
static void keeper_exits(pid_t keeper)
{
    uint64_t until = gs_clock_mono_ms() + 10000;
    int status;

    while (waitpid(keeper, &status, WNOHANG) == 0 && gs_clock_mono_ms() < until)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    cr_assert(gs_clock_mono_ms() < until, "the keeper did not exit");
}

/* Whether pid ends by SIGKILL (reaped here) within 5 s: the keeper may exit before the
 * signal it sent has ended the process. */
static bool killed(pid_t pid)
{
    uint64_t until = gs_clock_mono_ms() + 5000;
    int status;
    pid_t got;

    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && gs_clock_mono_ms() < until)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return got == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* Whether pid still runs (not reaped): the keeper that could have killed it has exited. */
static bool runs(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == 0;
}

static void end(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

Test(keeper, kills_the_ledgers_tasks_when_the_worker_dies)
{
    struct wrk_ledger *l = wrk_ledger_new(path);
    pid_t t = task(), later, keeper;
    uint64_t died;
    int fd;

    cr_assert_not_null(l);
    list(l, t, 7);
    fd = wrk_keeper_start(path, &keeper);
    cr_assert_geq(fd, 0);
    wrk_keeper_set_fence(fd, 1000);
    close(fd); /* the worker is gone */
    died = gs_clock_mono_ms();
    later = task(); /* a next worker's task, started after the keeper read the ledger */
    keeper_exits(keeper);
    cr_assert_geq(gs_clock_mono_ms() - died, 800, "killed before 4/5 of the fence timeout");
    cr_assert(killed(t), "the listed task still runs");
    cr_assert(runs(later), "a task the ledger did not list was killed");
    end(later);
    wrk_ledger_free(l);
}

Test(keeper, leaves_the_tasks_after_a_goodbye_or_without_a_fence)
{
    struct wrk_ledger *l = wrk_ledger_new(path);
    pid_t t = task(), keeper;
    int fd;

    cr_assert_not_null(l);
    list(l, t, 8);
    fd = wrk_keeper_start(path, &keeper);
    cr_assert_geq(fd, 0);
    wrk_keeper_set_fence(fd, 100);
    wrk_keeper_goodbye(fd); /* a clean stop */
    keeper_exits(keeper);
    cr_assert(runs(t), "killed after a goodbye");

    fd = wrk_keeper_start(path, &keeper);
    cr_assert_geq(fd, 0);
    wrk_keeper_set_fence(fd, 100);
    wrk_keeper_set_fence(fd, 0); /* the latest registration turned fencing off */
    close(fd);
    keeper_exits(keeper);
    cr_assert(runs(t), "killed without a fence timeout");
    end(t);
    wrk_ledger_free(l);
}
