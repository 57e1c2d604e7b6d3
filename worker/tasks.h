/*
 * tasks.h: the worker's running tasks, on its libuv loop.
 *
 * A struct wrk_tasks launches tasks (worker/launch.h), reaps them on SIGCHLD, and ends them
 * on request or when their time limit passes: SIGTERM to the task's process group, then
 * SIGKILL after the grace period. When a task's main process exits, whatever it left in its
 * process group is killed too, so nothing of a finished task keeps running. Each exit is
 * reported once through the exit callback with the reason gsched ended it (if it did).
 *
 * Tasks are identified by (job id, rank). Loop thread only. wrk_tasks_close() kills what is
 * still running (SIGKILL, no grace), reports nothing more, and frees the object from its
 * last close callback; the loop must run afterwards for that to happen.
 */
#ifndef WRK_TASKS_H
#define WRK_TASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/error.h"
#include "worker/launch.h"

enum wrk_end_reason {
    WRK_END_NONE = 0,  /* the task ended by itself */
    WRK_END_CANCELLED, /* wrk_tasks_kill() */
    WRK_END_TIMEOUT,   /* its time limit passed */
};

struct wrk_task_exit {
    uint64_t job_id;
    uint32_t rank;
    pid_t pid;
    bool signaled;   /* killed by a signal rather than exiting */
    int exit_code;   /* when !signaled */
    int term_signal; /* when signaled */
    enum wrk_end_reason reason;
    uint64_t start_ms; /* wall clock */
    uint64_t end_ms;
};

struct wrk_tasks;

typedef void (*wrk_task_exit_cb)(struct wrk_tasks *tasks, const struct wrk_task_exit *exit,
                                 void *data);

/* Creates the table on loop. grace_ms: SIGTERM-to-SIGKILL delay. NULL on failure. */
struct wrk_tasks *wrk_tasks_new(uv_loop_t *loop, uint64_t grace_ms, wrk_task_exit_cb exit_cb,
                                void *data);
void wrk_tasks_close(struct wrk_tasks *tasks);

/*
 * Launches one task. time_limit_ms 0 means none. Returns 0, -EEXIST if (job, rank) is
 * already running, or the launch error (err says which step failed).
 */
int wrk_tasks_start(struct wrk_tasks *tasks, uint64_t job_id, uint32_t rank,
                    const struct wrk_launch_spec *spec, uint64_t time_limit_ms,
                    struct gs_error *err);

/* Ends every task of job: SIGTERM now, SIGKILL after the grace period. Returns how many. */
int wrk_tasks_kill(struct wrk_tasks *tasks, uint64_t job_id, enum wrk_end_reason reason);

/* Sends sig to every task of job (a user's scancel --signal). Returns how many. */
int wrk_tasks_signal(struct wrk_tasks *tasks, uint64_t job_id, int sig);

/* The pid (and process group) of a running task, or 0. */
pid_t wrk_tasks_pid(const struct wrk_tasks *tasks, uint64_t job_id, uint32_t rank);

/* Number of running tasks, of all jobs (job_id 0) or of one. */
int wrk_tasks_count(const struct wrk_tasks *tasks, uint64_t job_id);

/* Calls fn for each running task (the worker's heartbeat lists them). */
void wrk_tasks_foreach(const struct wrk_tasks *tasks,
                       void (*fn)(uint64_t job_id, uint32_t rank, pid_t pid, void *data),
                       void *data);

#endif
