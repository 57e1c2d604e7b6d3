/*
 * tasks.h: the worker's running tasks, on its libuv loop.
 *
 * A struct wrk_tasks launches tasks (worker/launch.h), reaps them on SIGCHLD, and ends them
 * on request or when their time limit passes: SIGTERM to the task's process group, then
 * SIGKILL after the grace period. When a task's main process exits, whatever it left in its
 * process group is killed too, so nothing of a finished task keeps running. Each exit is
 * reported once through the exit callback with the reason gsched ended it (if it did).
 *
 * Tasks are identified by (job id, step, rank): a Slurm batch job runs its batch shell as
 * step 0 and each srun as a step s >= 1 at the same time, with the same rank numbers in
 * different steps. Plain gsched jobs use step 0 only.
 *
 * Optional per task (struct wrk_task_opts):
 * - a warning signal some time before the time limit (sbatch --signal), to the whole group
 *   or only to the main process (a batch shell, --signal=B:...);
 * - stdout and stderr captured through pipes and handed to the output callback as they
 *   come (srun steps: the scheduler relays them to srun). Such a task's exit is reported
 *   only after both streams reached end of file, so its output always comes first; should a
 *   process that escaped the task's group keep a pipe open, the streams are cut one second
 *   after the task's group was killed;
 * - a file to remove once the task is over (the batch script's private copy);
 * - stdin fed by the worker (srun's stdin, for a step's tasks), or a pseudo-terminal
 *   (srun --pty). Input waiting to be written is held up to WRK_TASKS_INPUT_MAX bytes per
 *   task; more is refused (the caller drops it) until the task reads. The input callback
 *   says how far each step's input got, so that its sender keeps within that bound.
 *
 * Loop thread only. wrk_tasks_close() kills what is still running (SIGKILL, no grace),
 * reports nothing more, and frees the object from its last close callback; the loop must
 * run afterwards for that to happen.
 */
#ifndef WRK_TASKS_H
#define WRK_TASKS_H

#include <stdbool.h>
#include <stddef.h>
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

/* The values are LogStream's on the wire. */
enum wrk_stream {
    WRK_STREAM_STDOUT = 0,
    WRK_STREAM_STDERR = 1,
};

/* Input (wrk_tasks_input()) a task has not read yet that the worker holds for it. */
#define WRK_TASKS_INPUT_MAX (1024u * 1024u)

/* Most bytes one output callback carries (StepOutput chunks stay under this). */
#define WRK_TASKS_CHUNK (64u * 1024u)

struct wrk_task_id {
    uint64_t job_id;
    uint32_t step; /* 0: the job's own tasks (a batch shell); s >= 1: srun step s - 1 */
    uint32_t rank;
};

struct wrk_task_opts {
    uint64_t time_limit_ms;  /* from the start; 0: none (wrk_tasks_set_limit() may set one) */
    int warn_signal;         /* 0: none; else sent warn_before_ms before the time limit, */
    uint64_t warn_before_ms; /* at once when the limit is shorter; only with a time limit */
    bool warn_leader_only;   /* the warning goes to the main process only, not its group */
    bool capture;            /* stdout/stderr through pipes to the output callback */
    /* With capture: stdin from a pipe wrk_tasks_input() feeds (srun's stdin), or with pty
     * a pseudo-terminal of pty_rows x pty_cols (0: left as the kernel makes it) for all
     * three streams, its output coming as stdout, wrk_tasks_input() typing into it. */
    bool input;
    bool pty;
    uint16_t pty_rows, pty_cols;
    /* A file to unlink once the task is over, or at once when it does not start; copied. */
    const char *remove_on_exit;
};

struct wrk_task_exit {
    uint64_t job_id;
    uint32_t step;
    uint32_t rank;
    pid_t pid;
    bool signaled;   /* killed by a signal rather than exiting */
    int exit_code;   /* when !signaled */
    int term_signal; /* when signaled */
    enum wrk_end_reason reason;
    uint64_t start_ms; /* wall clock */
    uint64_t end_ms;
    /* wait4's figures for the main process and the children it waited for (sacct's MaxRSS
     * of a step, its CPU time); 0 when unknown. */
    uint64_t max_rss_kib;
    uint64_t cpu_ms;
    /* The step that failed before the exec ("chdir /x: No such file or directory"): the
     * task never ran its program. NULL when it did. Valid during the callback. */
    const char *launch_error;
};

/* Which tasks a kill or a signal is for. */
struct wrk_task_match {
    uint64_t job_id;
    bool all_steps;        /* every task of the job: step and ranks are ignored */
    uint32_t step;         /* else only this step's tasks, */
    const uint32_t *ranks; /* and of those only these ranks (nranks 0: all of them) */
    size_t nranks;
};

struct wrk_tasks;

typedef void (*wrk_task_exit_cb)(struct wrk_tasks *tasks, const struct wrk_task_exit *exit,
                                 void *data);
/* len bytes (at most WRK_TASKS_CHUNK) of a captured stream, or eof (len 0) once it closed. */
typedef void (*wrk_task_output_cb)(struct wrk_tasks *tasks, const struct wrk_task_id *id,
                                   enum wrk_stream stream, const char *bytes, size_t len, bool eof,
                                   void *data);

/*
 * A step's input on this worker got further: every task of it still reading has had offset
 * bytes written into its stdin (counted from its first, bytes it lost or did not read
 * because its input closed included), or UINT64_MAX once none reads any more. Only called
 * when offset grew.
 */
typedef void (*wrk_task_input_cb)(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step,
                                  uint64_t offset, void *data);

/* Creates the table on loop. grace_ms: SIGTERM-to-SIGKILL delay. NULL on failure. */
struct wrk_tasks *wrk_tasks_new(uv_loop_t *loop, uint64_t grace_ms, wrk_task_exit_cb exit_cb,
                                void *data);
/* Where captured output goes (same data as the exit callback). Without it, it is dropped. */
void wrk_tasks_set_output_cb(struct wrk_tasks *tasks, wrk_task_output_cb output_cb);
/* Where the input callback goes (same data as the exit callback); none by default. */
void wrk_tasks_set_input_cb(struct wrk_tasks *tasks, wrk_task_input_cb input_cb);
void wrk_tasks_close(struct wrk_tasks *tasks);

/*
 * Launches one task; opts may be NULL (no limit, no warning, no capture). Returns 0 once the
 * child is forked, -EEXIST if (job, step, rank) is already running, or an error from before
 * the fork (err says which). It does not wait for the exec: a step that fails on the way
 * (chdir, the log files, the exec itself) comes as the task's exit, with launch_error.
 * spec's stdout_path/stderr_path are ignored when opts->capture.
 */
int wrk_tasks_start(struct wrk_tasks *tasks, const struct wrk_task_id *id,
                    const struct wrk_launch_spec *spec, const struct wrk_task_opts *opts,
                    struct gs_error *err);

/*
 * len bytes for the stdin of task id (started with input or pty), and with eof its end
 * (the pipe closes once they are written; a pty stays open). end, when not 0, says where
 * the bytes end in the stream (StepInput.end): what the task was given already is left
 * out, so that bytes sent again reach it once. Returns 0, -ENOENT when there is no such
 * task or its input is closed, -ENOBUFS when it would hold more than WRK_TASKS_INPUT_MAX
 * unread, -ENOMEM.
 */
int wrk_tasks_input(struct wrk_tasks *tasks, const struct wrk_task_id *id, const void *data,
                    size_t len, uint64_t end, bool eof);
/*
 * The same for every task of (job_id, step) whose input is open (srun --input=all); how
 * many took it into *ret_fed. Returns 0 or the first task's error (the others still fed).
 */
int wrk_tasks_input_step(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step, const void *data,
                         size_t len, uint64_t end, bool eof, int *ret_fed);

/*
 * Stops (pause) or starts again reading the captured output of every task of (job_id,
 * step): a step whose reader is behind (srun's output window). A stopped task blocks on its
 * full pipe; once it has exited, what its pipes hold is read at the end of its drain time
 * all the same. Returns how many streams it changed.
 */
int wrk_tasks_pause_output(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step, bool pause);

/* Gives the task's pseudo-terminal (srun --pty) a new size; the kernel signals its
 * foreground process group (SIGWINCH). 0, -ENOENT when it has no pty, or -errno. */
int wrk_tasks_resize(struct wrk_tasks *tasks, const struct wrk_task_id *id, uint16_t rows,
                     uint16_t cols);

/* Ends the matching tasks: SIGTERM now, SIGKILL after the grace period. Returns how many. */
int wrk_tasks_kill(struct wrk_tasks *tasks, const struct wrk_task_match *m,
                   enum wrk_end_reason reason);

/*
 * A new time limit for the matching tasks (scontrol update TimeLimit= on a running job), as
 * if they had been started with it: limit_ms (0: none) counted from since_ms (wall clock;
 * 0: from each task's own start). A limit already passed ends them at once, through their
 * timer, as WRK_END_TIMEOUT. A --signal warning moves with it: it comes warn_before_ms
 * before the new end, at once when that has passed and it was not sent yet; one already
 * sent comes again only when the new end leaves time to warn before it. Tasks already being
 * ended (cancelled, timed out) keep their course. Returns how many tasks it changed.
 */
int wrk_tasks_set_limit(struct wrk_tasks *tasks, const struct wrk_task_match *m, uint64_t limit_ms,
                        uint64_t since_ms);

/* Sends sig to the matching tasks' process groups, or with leader_only to their main
 * processes only (scancel --batch). Returns how many. */
int wrk_tasks_signal(struct wrk_tasks *tasks, const struct wrk_task_match *m, int sig,
                     bool leader_only);

/* The pid (and process group) of a running task, or 0. */
pid_t wrk_tasks_pid(const struct wrk_tasks *tasks, const struct wrk_task_id *id);

/* Number of running tasks, of all jobs (job_id 0) or of one. */
int wrk_tasks_count(const struct wrk_tasks *tasks, uint64_t job_id);
/* Number of running tasks of one step of a job. */
int wrk_tasks_count_step(const struct wrk_tasks *tasks, uint64_t job_id, uint32_t step);

/* Calls fn for each running task (the worker's heartbeat and registration list them). */
void wrk_tasks_foreach(const struct wrk_tasks *tasks,
                       void (*fn)(const struct wrk_task_id *id, pid_t pid, uint64_t start_ms,
                                  void *data),
                       void *data);

#endif
