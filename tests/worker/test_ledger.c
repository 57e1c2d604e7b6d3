/*
 * test_ledger.c: a worker's task ledger ends the process groups an earlier worker left
 * running (also a group whose leader is gone), never a process that merely reuses a pid;
 * its journal replays to the tasks still running, is emptied when none runs, removed at a
 * clean stop and compacted when mostly ended lines. Entries carry the task's step (a batch shell
 * and srun steps of one job, same ranks); files written before steps existed still sweep.
 */
#define _DEFAULT_SOURCE /* usleep, getpgid */

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/ledger.h"

static char path[64];

static void setup(void)
{
    snprintf(path, sizeof(path), "/tmp/gsched-ledger-%d.tasks", (int)getpid());
    unlink(path);
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(ledger, .init = setup, .fini = teardown);

/* A child in its own session, as tasks are, that sleeps until killed. */
static pid_t start_task(void)
{
    pid_t pid = fork();

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setsid();
        execlp("sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    /* Wait until it is its own group leader (setsid ran), with a deadline. */
    for (int i = 0; i < 2000 && getpgid(pid) != pid; i++)
        usleep(1000);
    cr_assert_eq(getpgid(pid), pid);
    return pid;
}

static bool killed_by(pid_t pid, int sig)
{
    int status;

    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

Test(ledger, no_file_means_nothing_to_end)
{
    cr_assert_eq(wrk_ledger_sweep(path), 0);
}

Test(ledger, a_new_worker_ends_what_the_old_one_left)
{
    struct wrk_ledger *old = wrk_ledger_new(path);
    pid_t a = start_task(), b = start_task();

    cr_assert_not_null(old);
    cr_assert_neq(wrk_ledger_start_time(a), 0);
    cr_assert_eq(wrk_ledger_add(old, a, 7, 0, 0), 0);
    cr_assert_eq(wrk_ledger_add(old, b, 7, 0, 1), 0);
    cr_assert_eq(wrk_ledger_remove(old, b), 0, "b ended normally as far as the worker knew");
    wrk_ledger_free(old); /* the worker dies: its file stays */
    cr_assert_eq(access(path, F_OK), 0);
    cr_assert_eq(wrk_ledger_sweep(path), 1);
    cr_assert(killed_by(a, SIGKILL));
    cr_assert_eq(kill(b, 0), 0, "b was not listed: left alone");
    kill(b, SIGKILL);
    waitpid(b, NULL, 0);
    cr_assert_eq(access(path, F_OK), -1, "the swept file is gone");
}

Test(ledger, a_reused_pid_is_not_killed)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    /* Ourselves, with a start time that is not ours: a pid reused since. */
    fprintf(f, "%d %llu 1 0\n", (int)getpid(),
            (unsigned long long)wrk_ledger_start_time(getpid()) + 12345);
    fclose(f);
    cr_assert_eq(wrk_ledger_sweep(path), 0);
}

static off_t file_size(void)
{
    struct stat st;

    cr_assert_eq(stat(path, &st), 0);
    return st.st_size;
}

Test(ledger, the_file_empties_when_nothing_runs_and_goes_at_a_clean_stop)
{
    struct wrk_ledger *l = wrk_ledger_new(path);

    cr_assert_eq(wrk_ledger_add(l, getpid(), 1, 0, 0), 0);
    cr_assert_gt(file_size(), 0);
    cr_assert_eq(wrk_ledger_remove(l, getpid()), 0);
    cr_assert_eq(file_size(), 0);
    wrk_ledger_free(l);
    cr_assert_eq(access(path, F_OK), -1);
}

/* What a keeper or the next worker reads: the tasks started and not ended, whatever order
 * they ended in; not a last line a crash cut short. */
Test(ledger, the_journal_replays_to_the_tasks_still_running)
{
    struct wrk_ledger *l = wrk_ledger_new(path);
    struct wrk_ledger_entry *v = NULL;
    size_t n = 0;
    FILE *f;

    cr_assert_eq(wrk_ledger_add(l, 101, 1, 0, 0), 0);
    cr_assert_eq(wrk_ledger_add(l, 102, 1, 0, 1), 0);
    cr_assert_eq(wrk_ledger_add(l, 103, 2, 3, 0), 0);
    cr_assert_eq(wrk_ledger_remove(l, 102), 0);
    cr_assert_eq(wrk_ledger_remove(l, 101), 0);
    cr_assert_eq(wrk_ledger_add(l, 101, 4, 0, 0), 0, "a pid used again");
    cr_assert_eq(wrk_ledger_read(path, &v, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(v[0].pid + v[1].pid, 103 + 101);
    for (size_t i = 0; i < n; i++) {
        if (v[i].pid == 103)
            cr_assert(v[i].job_id == 2 && v[i].step == 3 && v[i].rank == 0);
        else
            cr_assert_eq(v[i].job_id, 4);
    }
    free(v);
    f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs("-10", f); /* "-103\n" cut short */
    fclose(f);
    cr_assert_eq(wrk_ledger_read(path, &v, &n), 0);
    cr_assert_eq(n, 2, "a line without its newline is not read");
    free(v);
    wrk_ledger_free(l); /* two still listed: the file stays */
    cr_assert_eq(access(path, F_OK), 0);
}

/* A long-running task among many short ones: the ended lines are compacted away. */
Test(ledger, a_journal_of_mostly_ended_tasks_is_compacted)
{
    struct wrk_ledger *l = wrk_ledger_new(path);
    struct wrk_ledger_entry *v = NULL;
    size_t n = 0;

    cr_assert_eq(wrk_ledger_add(l, 7, 70, 0, 0), 0);
    for (int pid = 1000; pid < 11000; pid++) {
        cr_assert_eq(wrk_ledger_add(l, pid, (uint64_t)pid, 0, 0), 0);
        cr_assert_eq(wrk_ledger_remove(l, pid), 0);
        cr_assert_leq(file_size(), 80 << 10, "the journal outgrew its bound");
    }
    cr_assert_eq(wrk_ledger_read(path, &v, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0].pid, 7);
    cr_assert_eq(v[0].job_id, 70);
    free(v);
    wrk_ledger_free(l);
}

/* No such process, or only its zombie left. */
static bool gone(pid_t pid)
{
    char stat[64], buf[256] = "";
    FILE *f;
    size_t n;

    snprintf(stat, sizeof(stat), "/proc/%d/stat", (int)pid);
    f = fopen(stat, "r");
    if (f == NULL)
        return true;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, ") Z") != NULL;
}

Test(ledger, a_group_outlives_its_leader_and_is_still_ended)
{
    int up[2], go[2];
    pid_t leader, orphan = 0;
    char byte = 0;
    struct wrk_ledger *l = wrk_ledger_new(path);

    cr_assert_eq(pipe(up), 0);
    cr_assert_eq(pipe(go), 0);
    leader = fork();
    cr_assert_geq(leader, 0);
    if (leader == 0) {
        pid_t child;

        setsid();
        child = fork();
        if (child == 0) {
            execlp("sleep", "sleep", "60", (char *)NULL);
            _exit(127);
        }
        if (write(up[1], &child, sizeof(child)) != sizeof(child) || read(go[0], &byte, 1) != 1)
            _exit(1);
        _exit(0); /* the leader goes; its child stays in the group */
    }
    cr_assert_eq(read(up[0], &orphan, sizeof(orphan)), (ssize_t)sizeof(orphan));
    cr_assert_eq(wrk_ledger_add(l, leader, 3, 0, 0), 0);
    cr_assert_eq(write(go[1], &byte, 1), 1);
    cr_assert_eq(waitpid(leader, NULL, 0), leader);
    wrk_ledger_free(l);
    cr_assert_eq(kill(orphan, 0), 0, "the leader's child still runs");
    cr_assert_eq(wrk_ledger_sweep(path), 1);
    /* Not our child: init (or a subreaper) reaps it, so poll with a deadline. */
    for (int i = 0; i < 2000 && !gone(orphan); i++)
        usleep(1000);
    cr_assert(gone(orphan), "the orphan was ended");
}

/* The whole file as text. */
static void read_file(char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    cr_assert_not_null(f);
    n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

Test(ledger, same_rank_in_two_steps_is_recorded_and_ended_apart)
{
    struct wrk_ledger *old = wrk_ledger_new(path);
    pid_t batch = start_task(), step = start_task();
    char text[512], want[512];

    cr_assert_eq(wrk_ledger_add(old, batch, 9, 0, 0), 0);
    cr_assert_eq(wrk_ledger_add(old, step, 9, 2, 0), 0);
    read_file(text, sizeof(text));
    snprintf(want, sizeof(want), "%d %llu 9 0 0\n%d %llu 9 0 2\n", (int)batch,
             (unsigned long long)wrk_ledger_start_time(batch), (int)step,
             (unsigned long long)wrk_ledger_start_time(step));
    cr_assert_str_eq(text, want);
    cr_assert_eq(wrk_ledger_remove(old, batch), 0);
    wrk_ledger_free(old);
    cr_assert_eq(wrk_ledger_sweep(path), 1);
    cr_assert(killed_by(step, SIGKILL), "the step task was left running by the old worker");
    kill(batch, SIGKILL);
    waitpid(batch, NULL, 0);
}

Test(ledger, a_file_without_steps_still_sweeps)
{
    pid_t a = start_task();
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    fprintf(f, "%d %llu 4 1\n", (int)a, (unsigned long long)wrk_ledger_start_time(a));
    fclose(f);
    cr_assert_eq(wrk_ledger_sweep(path), 1);
    cr_assert(killed_by(a, SIGKILL));
}
