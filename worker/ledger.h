/*
 * ledger.h: the worker's record, on disk, of the process groups it has started and not
 * yet seen end, so that a worker that died (kill -9, a crash, an OOM kill) and is started
 * again can end what its previous life left running. Without it those tasks would keep
 * their GPUs busy while the scheduler, which requeues the jobs of a restarted worker, runs
 * them again elsewhere or gives the GPUs to someone else.
 *
 * The file holds one line per task, "PID STARTTIME JOB RANK STEP": the task's process group
 * leader (tasks run in their own session, so its pid is the group id) and its start time
 * in clock ticks since boot from /proc/PID/stat, which tells a reused pid from the task;
 * then its job, rank and step (TaskRef.step), for the log line when it is ended. Files of
 * workers that predate steps have no STEP and are read as step 0.
 * The file is a journal: that line is appended when the task starts and "-PID" when it ends
 * (readers replay them), and it is emptied when nothing runs and removed at a clean stop;
 * one whose ended lines outnumber the live ones is rewritten whole (temporary file, then
 * rename). No fsync, since a machine that crashed has no tasks left to end; a last line
 * without its newline, cut short, is not read.
 *
 * Loop thread only; no global state.
 */
#ifndef WRK_LEDGER_H
#define WRK_LEDGER_H

#include <stdint.h>
#include <sys/types.h>

struct wrk_ledger;

/* A ledger kept at path (copied), which its first task replaces with a fresh file. NULL when
 * out of memory. */
struct wrk_ledger *wrk_ledger_new(const char *path);
void wrk_ledger_free(struct wrk_ledger *l);

/* One task of the file. */
struct wrk_ledger_entry {
    pid_t pid; /* the task's process group leader, and so its group id */
    uint64_t start_time, job_id;
    uint32_t rank, step;
};

/*
 * Reads the file at path: 0 with *ret (malloc'd: the caller frees it) and *ret_n its
 * entries, none (NULL, 0) when there is no file; or a negative errno when it exists but
 * cannot be read. Lines that do not parse are skipped.
 */
int wrk_ledger_read(const char *path, struct wrk_ledger_entry **ret, size_t *ret_n);

/*
 * Ends (SIGKILL to the process group) each of v[0..n) whose leader is still the same
 * process (or gone, its group's id still ours), logging one warning line each with what
 * (e.g. "leftover task of a previous worker ended"). Returns how many were ended.
 */
int wrk_ledger_end(const struct wrk_ledger_entry *v, size_t n, const char *what);

/*
 * Ends every task the file at path lists (wrk_ledger_end), then removes the file. Returns
 * how many were ended, or a negative errno when the file exists but cannot be read. No
 * file: 0.
 */
int wrk_ledger_sweep(const char *path);

/* Records a started task / forgets an ended one in the file. Return 0 or < 0. */
int wrk_ledger_add(struct wrk_ledger *l, pid_t pid, uint64_t job_id, uint32_t step, uint32_t rank);
int wrk_ledger_remove(struct wrk_ledger *l, pid_t pid);

/* The start time of pid in clock ticks since boot (field 22 of /proc/PID/stat), or 0. */
uint64_t wrk_ledger_start_time(pid_t pid);

#endif
