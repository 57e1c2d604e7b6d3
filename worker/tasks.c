/*
 * tasks.c: running tasks of one worker (see tasks.h).
 *
 * An exit is noticed with waitid(WNOWAIT) first, so the main process stays a zombie while
 * the rest of its process group is killed: its pid, which is the group id, cannot be reused
 * by an unrelated process before the kill lands. Then it is reaped and reported.
 * Each task owns one timer, used first for the time limit and then for the SIGTERM grace.
 */
#include "worker/tasks.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "common/log.h"

struct task {
    struct task *prev, *next;
    struct wrk_tasks *owner;
    uint64_t job_id;
    uint32_t rank;
    pid_t pid;
    uint64_t start_ms;
    enum wrk_end_reason reason;
    bool term_sent;
    uv_timer_t timer;
};

struct wrk_tasks {
    uv_loop_t *loop;
    uv_signal_t sigchld;
    uint64_t grace_ms;
    wrk_task_exit_cb exit_cb;
    void *data;
    struct task *head;
    int open_handles; /* freed when the last one is closed */
    bool closing;
};

static void release_handle(uv_handle_t *handle, struct wrk_tasks *tasks)
{
    (void)handle;
    if (--tasks->open_handles == 0 && tasks->closing)
        free(tasks);
}

static void on_task_timer_closed(uv_handle_t *handle)
{
    struct task *t = handle->data;
    struct wrk_tasks *tasks = t->owner;

    free(t);
    release_handle(handle, tasks);
}

static void on_sigchld_closed(uv_handle_t *handle)
{
    release_handle(handle, handle->data);
}

static void unlink_task(struct wrk_tasks *tasks, struct task *t)
{
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        tasks->head = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    uv_close((uv_handle_t *)&t->timer, on_task_timer_closed);
}

static void send_term(struct task *t, enum wrk_end_reason reason);

static void on_task_timer(uv_timer_t *timer)
{
    struct task *t = timer->data;

    if (!t->term_sent) {
        GS_LOG(GS_LOG_INFO, "job=%llu rank=%u pid=%d time limit reached",
               (unsigned long long)t->job_id, t->rank, (int)t->pid);
        send_term(t, WRK_END_TIMEOUT);
        return;
    }
    GS_LOG(GS_LOG_WARN, "job=%llu rank=%u pid=%d grace period over, sending sigkill",
           (unsigned long long)t->job_id, t->rank, (int)t->pid);
    wrk_signal_group(t->pid, SIGKILL);
}

static void send_term(struct task *t, enum wrk_end_reason reason)
{
    if (t->term_sent)
        return;
    t->term_sent = true;
    t->reason = reason;
    wrk_signal_group(t->pid, SIGTERM);
    /* The loop's clock is cached at the start of an iteration; a grace period counts from
     * now, not from then. */
    uv_update_time(t->owner->loop);
    uv_timer_start(&t->timer, on_task_timer, t->owner->grace_ms, 0);
}

static void fill_exit(const struct task *t, int status, struct wrk_task_exit *ex)
{
    ex->job_id = t->job_id;
    ex->rank = t->rank;
    ex->pid = t->pid;
    ex->signaled = WIFSIGNALED(status);
    ex->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    ex->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ex->reason = t->reason;
    ex->start_ms = t->start_ms;
    ex->end_ms = gs_clock_wall_ms();
}

/* Returns true when t's main process has exited and was reaped into *ret_status. */
static bool reap(struct task *t, int *ret_status)
{
    siginfo_t info = {0};

    if (waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 || info.si_pid == 0)
        return false;
    wrk_signal_group(t->pid, SIGKILL); /* leftovers of the task */
    while (waitpid(t->pid, ret_status, 0) < 0) {
        if (errno != EINTR)
            return false;
    }
    return true;
}

static void on_sigchld(uv_signal_t *handle, int signum)
{
    struct wrk_tasks *tasks = handle->data;
    struct task *t = tasks->head, *next;
    int status;

    (void)signum;
    for (; t != NULL; t = next) {
        struct wrk_task_exit ex;

        next = t->next;
        if (!reap(t, &status))
            continue;
        fill_exit(t, status, &ex);
        unlink_task(tasks, t);
        GS_LOG(GS_LOG_DEBUG, "job=%llu rank=%u pid=%d code=%d signal=%d task exited",
               (unsigned long long)ex.job_id, ex.rank, (int)ex.pid, ex.exit_code, ex.term_signal);
        tasks->exit_cb(tasks, &ex, tasks->data);
        if (tasks->closing)
            return; /* the callback closed the table: next is gone */
    }
}

struct wrk_tasks *wrk_tasks_new(uv_loop_t *loop, uint64_t grace_ms, wrk_task_exit_cb exit_cb,
                                void *data)
{
    struct wrk_tasks *tasks = calloc(1, sizeof(*tasks));

    if (tasks == NULL)
        return NULL;
    tasks->loop = loop;
    tasks->grace_ms = grace_ms;
    tasks->exit_cb = exit_cb;
    tasks->data = data;
    if (uv_signal_init(loop, &tasks->sigchld) < 0) {
        free(tasks);
        return NULL;
    }
    tasks->sigchld.data = tasks;
    tasks->open_handles = 1;
    if (uv_signal_start(&tasks->sigchld, on_sigchld, SIGCHLD) < 0) {
        tasks->closing = true;
        uv_close((uv_handle_t *)&tasks->sigchld, on_sigchld_closed);
        return NULL;
    }
    return tasks;
}

void wrk_tasks_close(struct wrk_tasks *tasks)
{
    int status;

    if (tasks == NULL || tasks->closing)
        return;
    tasks->closing = true;
    while (tasks->head != NULL) {
        struct task *t = tasks->head;

        wrk_signal_group(t->pid, SIGKILL);
        waitpid(t->pid, &status, WNOHANG);
        unlink_task(tasks, t);
    }
    uv_close((uv_handle_t *)&tasks->sigchld, on_sigchld_closed);
}

static struct task *find(const struct wrk_tasks *tasks, uint64_t job_id, uint32_t rank)
{
    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (t->job_id == job_id && t->rank == rank)
            return t;
    }
    return NULL;
}

int wrk_tasks_start(struct wrk_tasks *tasks, uint64_t job_id, uint32_t rank,
                    const struct wrk_launch_spec *spec, uint64_t time_limit_ms,
                    struct gs_error *err)
{
    struct task *t;
    int rc;

    if (tasks->closing)
        return gs_error_set(err, -ESHUTDOWN, 0, 0, "worker is shutting down");
    if (find(tasks, job_id, rank) != NULL)
        return gs_error_set(err, -EEXIST, 0, 0, "job %llu rank %u is already running",
                            (unsigned long long)job_id, rank);
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
    rc = wrk_launch(spec, &t->pid, err);
    if (rc < 0) {
        free(t);
        return rc;
    }
    t->owner = tasks;
    t->job_id = job_id;
    t->rank = rank;
    t->start_ms = gs_clock_wall_ms();
    uv_timer_init(tasks->loop, &t->timer);
    t->timer.data = t;
    tasks->open_handles++;
    if (time_limit_ms > 0) {
        uv_update_time(tasks->loop);
        uv_timer_start(&t->timer, on_task_timer, time_limit_ms, 0);
    }
    t->next = tasks->head;
    if (tasks->head != NULL)
        tasks->head->prev = t;
    tasks->head = t;
    return 0;
}

int wrk_tasks_kill(struct wrk_tasks *tasks, uint64_t job_id, enum wrk_end_reason reason)
{
    int n = 0;

    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (t->job_id != job_id)
            continue;
        send_term(t, reason);
        n++;
    }
    return n;
}

int wrk_tasks_signal(struct wrk_tasks *tasks, uint64_t job_id, int sig)
{
    int n = 0;

    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (t->job_id == job_id && wrk_signal_group(t->pid, sig) == 0)
            n++;
    }
    return n;
}

pid_t wrk_tasks_pid(const struct wrk_tasks *tasks, uint64_t job_id, uint32_t rank)
{
    const struct task *t = find(tasks, job_id, rank);

    return t != NULL ? t->pid : 0;
}

int wrk_tasks_count(const struct wrk_tasks *tasks, uint64_t job_id)
{
    int n = 0;

    for (const struct task *t = tasks->head; t != NULL; t = t->next)
        n += job_id == 0 || t->job_id == job_id;
    return n;
}

void wrk_tasks_foreach(const struct wrk_tasks *tasks,
                       void (*fn)(uint64_t job_id, uint32_t rank, pid_t pid, void *data),
                       void *data)
{
    for (const struct task *t = tasks->head; t != NULL; t = t->next)
        fn(t->job_id, t->rank, t->pid, data);
}
