/*
 * tasks.c: running tasks of one worker (see tasks.h).
 *
 * An exit is noticed with waitid(WNOWAIT) first, so the main process stays a zombie while
 * the rest of its process group is killed: its pid, which is the group id, cannot be reused
 * by an unrelated process before the kill lands. Then it is reaped; from then on nothing
 * signals that pid again. A task without captured output is reported at once; one with
 * captured output once both pipes reached end of file (or the drain time ran out).
 *
 * Each task owns two timers: one used in turn for the time limit, the SIGTERM grace and the
 * output drain, the other for the --signal warning. It is freed when its last handle (the
 * timers and its pipes) is closed. A new time limit (wrk_tasks_set_limit()) restarts both
 * timers for what is left of it; a task whose timer already serves its grace or drain is
 * past its limit's reach and keeps it.
 *
 * A task with input has a third handle, the write end of its stdin (or a pty's master),
 * written from copies of what wrk_tasks_input() is given, at most WRK_TASKS_INPUT_MAX
 * queued: the loop never blocks on a task that does not read.
 *
 * Nor on one that has not started: a task is in the table from its fork, and until its
 * exec a poll handle watches the child's report pipe (worker/launch.h). A step that failed
 * there (chdir, the log files, exec) is kept and reported with the exit, which follows: the
 * child exits 127. A child that dies first is settled from the pipe when it is reaped, which
 * by then holds all it will. A signal for a task that has not exec'd goes to its process
 * alone, which may not have its own group yet; the child blocks every signal from the fork
 * until it has reset their handlers (worker/launch.c), so it takes them as any program
 * that has just started would.
 */
#define _GNU_SOURCE /* pipe2, ptsname_r */

#include "worker/tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

/* How long a reaped task's pipes may stay open (held by a process that left its group). */
#define DRAIN_MS 1000

struct stream {
    uv_pipe_t pipe;
    struct task *task;
    enum wrk_stream which;
    bool open; /* the handle is initialised and not yet being closed */
};

struct task {
    struct task *prev, *next;
    struct wrk_tasks *owner;
    struct wrk_task_id id;
    pid_t pid;
    uint64_t start_ms;
    enum wrk_end_reason reason;
    bool term_sent;
    bool reaped; /* the main process is gone: pid means nothing any more */
    int status;
    struct rusage usage; /* wait4's, once reaped */
    uint64_t end_ms;
    uv_timer_t timer; /* time limit, then SIGTERM grace, then (once reaped) output drain */
    uv_timer_t warn;
    int warn_signal; /* 0: none */
    uint64_t warn_before_ms;
    bool warn_leader_only;
    bool warn_sent;
    struct stream out[2];
    uv_pipe_t in;      /* stdin's write end, or the pty's master (opts input, pty) */
    bool in_open;      /* in is initialised and not yet being closed */
    bool in_pty;       /* a terminal: the end of srun's input leaves it open */
    bool in_eof;       /* close in once what is queued is written */
    size_t in_queued;  /* bytes handed to uv_write not yet written */
    uint64_t in_given; /* bytes handed to uv_write in all: in_given - in_queued are written */
    char *remove_on_exit;
    struct wrk_launch_status *launch; /* until the exec happened or a step failed */
    uv_poll_t launch_poll;            /* on the launch's report pipe */
    bool launch_poll_open;
    struct gs_error launch_err; /* code < 0: the step that failed before the exec */
    int handles;                /* open handles; the task is freed when the last one is closed */
};

struct wrk_tasks {
    uv_loop_t *loop;
    uv_signal_t sigchld;
    uint64_t grace_ms;
    wrk_task_exit_cb exit_cb;
    wrk_task_output_cb output_cb;
    wrk_task_input_cb input_cb;
    void *data;
    struct task *head;
    int open_handles; /* sigchld and one per task; freed when the last one is closed */
    bool closing;
    bool noted_skip;           /* a skipped launch step was logged: once per table is enough */
    char buf[WRK_TASKS_CHUNK]; /* read buffer of every pipe: libuv fills and hands it back
                                * within one call, and the loop is single-threaded */
};

static void release_handle(struct wrk_tasks *tasks)
{
    if (--tasks->open_handles == 0 && tasks->closing)
        free(tasks);
}

static void task_handle_closed(struct task *t)
{
    struct wrk_tasks *tasks = t->owner;

    if (--t->handles > 0)
        return;
    free(t->remove_on_exit);
    free(t);
    release_handle(tasks);
}

static void on_timer_closed(uv_handle_t *handle)
{
    task_handle_closed(handle->data);
}

static void on_stream_closed(uv_handle_t *handle)
{
    struct stream *s = handle->data;

    task_handle_closed(s->task);
}

static void on_input_closed(uv_handle_t *handle)
{
    task_handle_closed(handle->data);
}

static void on_launch_poll_closed(uv_handle_t *handle)
{
    task_handle_closed(handle->data);
}

/* Stops watching the launch and frees its status. */
static void drop_launch(struct task *t)
{
    if (t->launch_poll_open) {
        t->launch_poll_open = false;
        uv_poll_stop(&t->launch_poll);
        uv_close((uv_handle_t *)&t->launch_poll, on_launch_poll_closed);
    }
    wrk_launch_status_free(t->launch);
    t->launch = NULL;
}

/*
 * Where the input of id's step stands on this worker: the least any of its tasks still
 * reading has had written into its stdin; UINT64_MAX when none reads any more. All of a
 * step's input tasks here are given the same bytes, so the counts compare.
 */
static uint64_t step_input_offset(const struct wrk_tasks *tasks, const struct wrk_task_id *id)
{
    uint64_t least = UINT64_MAX;

    for (const struct task *t = tasks->head; t != NULL; t = t->next) {
        if (t->in_open && t->id.job_id == id->job_id && t->id.step == id->step &&
            t->in_given - t->in_queued < least)
            least = t->in_given - t->in_queued;
    }
    return least;
}

/* Tells the input callback when the step's offset grew past before (step_input_offset). */
static void input_moved(struct wrk_tasks *tasks, const struct wrk_task_id *id, uint64_t before)
{
    uint64_t now;

    if (tasks->input_cb == NULL || tasks->closing)
        return;
    now = step_input_offset(tasks, id);
    if (now > before)
        tasks->input_cb(tasks, id->job_id, id->step, now, tasks->data);
}

/* Closes t's input at once (what is queued is dropped); the caller reports the move. */
static void drop_input(struct task *t)
{
    if (!t->in_open)
        return;
    t->in_open = false;
    uv_close((uv_handle_t *)&t->in, on_input_closed); /* pending writes are cancelled */
}

/* Closes t's input, which may let its step's input go on (t read slowest). */
static void close_input(struct task *t)
{
    uint64_t before;

    if (!t->in_open)
        return;
    before = step_input_offset(t->owner, &t->id);
    drop_input(t);
    input_moved(t->owner, &t->id, before);
}

static void on_sigchld_closed(uv_handle_t *handle)
{
    release_handle(handle->data);
}

static void close_stream(struct stream *s)
{
    if (!s->open)
        return;
    s->open = false;
    uv_read_stop((uv_stream_t *)&s->pipe);
    uv_close((uv_handle_t *)&s->pipe, on_stream_closed);
}

static void remove_file(struct task *t)
{
    if (t->remove_on_exit != NULL && unlink(t->remove_on_exit) < 0 && errno != ENOENT)
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u path=%s error=\"%s\" cannot remove",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank, t->remove_on_exit,
               gs_strerror(-errno));
}

/* Takes t off the list and closes its handles; t is freed once they are closed. */
static void unlink_task(struct wrk_tasks *tasks, struct task *t)
{
    close_input(t); /* while listed: its step's other readers may go on */
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        tasks->head = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    remove_file(t);
    drop_launch(t);
    close_stream(&t->out[0]);
    close_stream(&t->out[1]);
    uv_close((uv_handle_t *)&t->warn, on_timer_closed);
    uv_close((uv_handle_t *)&t->timer, on_timer_closed);
}

static bool streams_done(const struct task *t)
{
    return !t->out[0].open && !t->out[1].open;
}

static uint64_t ms_of(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * 1000u + (uint64_t)tv->tv_usec / 1000u;
}

static void fill_exit(const struct task *t, struct wrk_task_exit *ex)
{
    ex->job_id = t->id.job_id;
    ex->step = t->id.step;
    ex->rank = t->id.rank;
    ex->pid = t->pid;
    ex->signaled = WIFSIGNALED(t->status);
    ex->exit_code = WIFEXITED(t->status) ? WEXITSTATUS(t->status) : 0;
    ex->term_signal = WIFSIGNALED(t->status) ? WTERMSIG(t->status) : 0;
    ex->reason = t->reason;
    ex->start_ms = t->start_ms;
    ex->end_ms = t->end_ms;
    /* ru_maxrss is in KiB on Linux. */
    ex->max_rss_kib = t->usage.ru_maxrss > 0 ? (uint64_t)t->usage.ru_maxrss : 0;
    ex->cpu_ms = ms_of(&t->usage.ru_utime) + ms_of(&t->usage.ru_stime);
    ex->launch_error = t->launch_err.code < 0 ? t->launch_err.msg : NULL;
}

/* Reports a reaped task whose streams are done. The callback may close the table. */
static void finish(struct wrk_tasks *tasks, struct task *t)
{
    struct wrk_task_exit ex;

    fill_exit(t, &ex);
    unlink_task(tasks, t);
    GS_LOG(GS_LOG_DEBUG, "job=%llu step=%u rank=%u pid=%d code=%d signal=%d task exited",
           (unsigned long long)ex.job_id, ex.step, ex.rank, (int)ex.pid, ex.exit_code,
           ex.term_signal);
    tasks->exit_cb(tasks, &ex, tasks->data);
}

static void emit(struct task *t, enum wrk_stream which, const char *bytes, size_t len, bool eof)
{
    struct wrk_tasks *tasks = t->owner;

    if (tasks->output_cb != NULL)
        tasks->output_cb(tasks, &t->id, which, bytes, len, eof, tasks->data);
}

static void send_term(struct task *t, enum wrk_end_reason reason);
static int signal_task(struct task *t, int sig, bool leader_only);

/* Reads what s's pipe holds now, without waiting, and hands it on. A loop that was held up
 * past the drain time runs this timer before it polls the pipes, which may still hold the
 * task's last lines: those are not dropped. Returns true when the pipe reached its end (or
 * failed), false when it is empty but still open. */
static bool drain_now(struct stream *s)
{
    struct task *t = s->task;
    uv_os_fd_t fd;

    if (uv_fileno((const uv_handle_t *)&s->pipe, &fd) < 0)
        return true;
    for (;;) {
        ssize_t n = read(fd, t->owner->buf, sizeof(t->owner->buf));

        if (n > 0) {
            emit(t, s->which, t->owner->buf, (size_t)n, false);
            if (t->owner->closing)
                return false;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
}

/* The drain time of a reaped task ran out: what its pipes hold is read, and a pipe still
 * open after that is held by something outside the task's group, so it is cut. */
static void end_drain(struct task *t)
{
    bool cut = false;

    for (int i = 0; i < 2; i++) {
        if (!t->out[i].open)
            continue;
        cut |= !drain_now(&t->out[i]);
        if (t->owner->closing)
            return;
        close_stream(&t->out[i]);
        emit(t, (enum wrk_stream)i, NULL, 0, true);
        if (t->owner->closing)
            return;
    }
    if (cut)
        GS_LOG(GS_LOG_INFO, "job=%llu step=%u rank=%u output still open after the task ended, cut",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank);
    finish(t->owner, t);
}

static void on_task_timer(uv_timer_t *timer)
{
    struct task *t = timer->data;

    if (t->reaped) {
        end_drain(t);
        return;
    }
    if (!t->term_sent) {
        GS_LOG(GS_LOG_INFO, "job=%llu step=%u rank=%u pid=%d time limit reached",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank, (int)t->pid);
        send_term(t, WRK_END_TIMEOUT);
        return;
    }
    GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u pid=%d grace period over, sending sigkill",
           (unsigned long long)t->id.job_id, t->id.step, t->id.rank, (int)t->pid);
    signal_task(t, SIGKILL, false);
}

static void on_warn_timer(uv_timer_t *timer)
{
    struct task *t = timer->data;
    int rc;

    if (t->reaped)
        return;
    t->warn_sent = true;
    rc = signal_task(t, t->warn_signal, t->warn_leader_only);
    GS_LOG(GS_LOG_INFO,
           "job=%llu step=%u rank=%u pid=%d signal=%d to=%s rc=%d warning signal before the "
           "time limit sent",
           (unsigned long long)t->id.job_id, t->id.step, t->id.rank, (int)t->pid, t->warn_signal,
           t->warn_leader_only ? "process" : "group", rc);
}

static void send_term(struct task *t, enum wrk_end_reason reason)
{
    if (t->term_sent || t->reaped)
        return;
    t->term_sent = true;
    t->reason = reason;
    signal_task(t, SIGTERM, false);
    /* A stopped task (scontrol suspend) takes its SIGTERM once continued, as Slurm's do. */
    signal_task(t, SIGCONT, false);
    /* The loop's clock is cached at the start of an iteration; a grace period counts from
     * now, not from then. */
    uv_update_time(t->owner->loop);
    uv_timer_start(&t->timer, on_task_timer, t->owner->grace_ms, 0);
}

/* Learns what the child reported on its way to exec, if it has. After the reap the answer
 * is final: a child that died without a report had exec'd (or was killed before a step
 * failed). */
static void settle_launch(struct task *t)
{
    struct gs_error note, err;
    int rc;

    if (t->launch == NULL)
        return;
    rc = wrk_launch_status_read(t->launch, &note, &err);
    if (rc == -EAGAIN && !t->reaped)
        return;
    drop_launch(t);
    if (rc < 0 && rc != -EAGAIN) {
        t->launch_err = err;
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u pid=%d error=\"%s\" task did not start",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank, (int)t->pid, err.msg);
        return;
    }
    if (rc == 0 && note.msg[0] != '\0') {
        /* A step the child may skip (the memory policy) is skipped for every task alike. */
        GS_LOG(t->owner->noted_skip ? GS_LOG_DEBUG : GS_LOG_WARN,
               "job=%llu step=%u rank=%u error=\"%s\" task started without its memory policy%s",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank, note.msg,
               t->owner->noted_skip ? "" : "; said once per worker");
        t->owner->noted_skip = true;
    }
}

/* sig to t's process group, or to its main process alone (leader_only, or while it has not
 * exec'd: it may not have its own group yet, and it has started nothing). Returns 0 or a
 * negative errno. */
static int signal_task(struct task *t, int sig, bool leader_only)
{
    settle_launch(t);
    if (leader_only || t->launch != NULL)
        return kill(t->pid, sig) < 0 ? -errno : 0;
    return wrk_signal_group(t->pid, sig);
}

static void on_launch_report(uv_poll_t *handle, int status, int events)
{
    (void)status;
    (void)events;
    settle_launch(handle->data);
}

/* Watches t's launch; without a poll handle its outcome is learnt when it is reaped. */
static void watch_launch(struct task *t)
{
    int rc = uv_poll_init(t->owner->loop, &t->launch_poll, wrk_launch_status_fd(t->launch));

    if (rc == 0) {
        t->launch_poll.data = t;
        t->launch_poll_open = true;
        t->handles++;
        rc = uv_poll_start(&t->launch_poll, UV_READABLE, on_launch_report);
    }
    if (rc < 0)
        GS_LOG(GS_LOG_WARN,
               "job=%llu step=%u rank=%u error=\"%s\" launch not watched: its outcome comes "
               "with its exit",
               (unsigned long long)t->id.job_id, t->id.step, t->id.rank, uv_strerror(rc));
}

/* Returns true when t's main process has exited and was reaped into t->status. */
static bool reap(struct task *t)
{
    siginfo_t info = {0};

    if (waitid(P_PID, (id_t)t->pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0 || info.si_pid == 0)
        return false;
    wrk_signal_group(t->pid, SIGKILL); /* leftovers of the task */
    while (wait4(t->pid, &t->status, 0, &t->usage) < 0) {
        if (errno != EINTR)
            return false;
    }
    t->reaped = true;
    t->end_ms = gs_clock_wall_ms();
    settle_launch(t);
    return true;
}

static void on_sigchld(uv_signal_t *handle, int signum)
{
    struct wrk_tasks *tasks = handle->data;
    struct task *t = tasks->head, *next;

    (void)signum;
    for (; t != NULL; t = next) {
        next = t->next;
        if (t->reaped || !reap(t))
            continue;
        uv_timer_stop(&t->warn);
        if (!streams_done(t)) {
            /* The group is dead: the pipes end as soon as their last bytes are read. */
            uv_update_time(tasks->loop);
            uv_timer_start(&t->timer, on_task_timer, DRAIN_MS, 0);
            continue;
        }
        finish(tasks, t);
        if (tasks->closing)
            return; /* the callback closed the table: next is gone */
    }
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct stream *s = handle->data;

    (void)suggested;
    buf->base = s->task->owner->buf;
    buf->len = sizeof(s->task->owner->buf);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct stream *s = stream->data;
    struct task *t = s->task;
    struct wrk_tasks *tasks = t->owner;

    if (nread == 0)
        return;
    if (nread > 0) {
        emit(t, s->which, buf->base, (size_t)nread, false);
        return;
    }
    /* UV_EOF, or a read error, which ends the stream all the same. */
    close_stream(s);
    emit(t, s->which, NULL, 0, true);
    if (tasks->closing || !t->reaped || !streams_done(t))
        return;
    uv_timer_stop(&t->timer);
    finish(tasks, t);
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

void wrk_tasks_set_output_cb(struct wrk_tasks *tasks, wrk_task_output_cb output_cb)
{
    tasks->output_cb = output_cb;
}

void wrk_tasks_set_input_cb(struct wrk_tasks *tasks, wrk_task_input_cb input_cb)
{
    tasks->input_cb = input_cb;
}

void wrk_tasks_close(struct wrk_tasks *tasks)
{
    int status;

    if (tasks == NULL || tasks->closing)
        return;
    tasks->closing = true;
    while (tasks->head != NULL) {
        struct task *t = tasks->head;

        if (!t->reaped) {
            wrk_signal_group(t->pid, SIGKILL);
            if (t->launch != NULL)
                kill(t->pid, SIGKILL); /* perhaps not in its own group yet */
            waitpid(t->pid, &status, WNOHANG);
        }
        unlink_task(tasks, t);
    }
    uv_close((uv_handle_t *)&tasks->sigchld, on_sigchld_closed);
}

static bool same_id(const struct wrk_task_id *a, const struct wrk_task_id *b)
{
    return a->job_id == b->job_id && a->step == b->step && a->rank == b->rank;
}

static struct task *find(const struct wrk_tasks *tasks, const struct wrk_task_id *id)
{
    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (same_id(&t->id, id))
            return t;
    }
    return NULL;
}

static bool matches(const struct task *t, const struct wrk_task_match *m)
{
    if (t->reaped || t->id.job_id != m->job_id)
        return false;
    if (m->all_steps)
        return true;
    if (t->id.step != m->step)
        return false;
    for (size_t i = 0; i < m->nranks; i++) {
        if (m->ranks[i] == t->id.rank)
            return true;
    }
    return m->nranks == 0;
}

/* The read end of a pipe the task writes one stream into. On failure the stream is lost
 * (the task still runs; its writes go nowhere once the read end is closed). */
static void open_stream(struct task *t, enum wrk_stream which, int fd)
{
    struct stream *s = &t->out[which];

    s->task = t;
    s->which = which;
    if (uv_pipe_init(t->owner->loop, &s->pipe, 0) < 0) {
        close(fd);
        return;
    }
    s->pipe.data = s;
    t->handles++;
    s->open = true;
    if (uv_pipe_open(&s->pipe, fd) < 0) {
        close(fd);
        close_stream(s);
        return;
    }
    if (uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read) < 0)
        close_stream(s);
}

/* The end the worker writes the task's stdin into. On failure the task reads end of file. */
static void open_input(struct task *t, int fd, bool pty)
{
    if (uv_pipe_init(t->owner->loop, &t->in, 0) < 0) {
        close(fd);
        return;
    }
    t->in.data = t;
    t->handles++;
    t->in_open = true;
    t->in_pty = pty;
    if (uv_pipe_open(&t->in, fd) < 0) {
        close(fd);
        close_input(t);
    }
}

/*
 * A pseudo-terminal for srun --pty: its master into *ret_master, its slave's path into
 * tty, rows x cols, the slave the task's user's (the child opens it after dropping root).
 */
static int open_pty(const struct wrk_launch_spec *spec, const struct wrk_task_opts *opts,
                    int *ret_master, char *tty, size_t size, struct gs_error *err)
{
    struct winsize ws = {.ws_row = opts->pty_rows, .ws_col = opts->pty_cols};
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    int rc;

    if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
        ptsname_r(master, tty, size) != 0) {
        rc = gs_error_set(err, -errno, 0, 0, "pseudo-terminal: %s", gs_strerror(-errno));
        goto fail;
    }
    if (spec->set_user && chown(tty, spec->uid, (gid_t)-1) < 0) {
        rc = gs_error_set(err, -errno, 0, 0, "chown %s: %s", tty, gs_strerror(-errno));
        goto fail;
    }
    if (ws.ws_row > 0 && ws.ws_col > 0)
        ioctl(master, TIOCSWINSZ, &ws); /* a size it cannot take leaves the kernel's */
    *ret_master = master;
    return 0;
fail:
    if (master >= 0)
        close(master);
    return rc;
}

/* With capture: the task's stdin (opts input) or terminal (opts pty) into s; in[1] is
 * then the worker's end (the pty's master), in[0] the task's end of a stdin pipe. */
static int prepare_input(struct wrk_launch_spec *s, const struct wrk_task_opts *opts, int in[2],
                         char *tty, size_t size, struct gs_error *err)
{
    if (opts->pty) {
        int rc = open_pty(s, opts, &in[1], tty, size, err);

        if (rc == 0)
            s->tty_path = tty;
        return rc;
    }
    if (!opts->input)
        return 0;
    if (pipe2(in, O_CLOEXEC) < 0)
        return gs_error_set(err, -errno, 0, 0, "pipe: %s", gs_strerror(-errno));
    s->use_stdin_fd = true;
    s->stdin_fd = in[0];
    return 0;
}

struct input_write {
    uv_write_t req; /* first: the callback gets this */
    struct task *task;
    size_t len;
    char data[];
};

static void on_input_written(uv_write_t *req, int status)
{
    struct input_write *w = (struct input_write *)req;
    struct task *t = w->task;
    uint64_t before;

    if (status == UV_ECANCELED) { /* its input was closed: the move was reported then */
        t->in_queued -= w->len;
        free(w);
        return;
    }
    before = step_input_offset(t->owner, &t->id);
    t->in_queued -= w->len;
    free(w);
    /* A task that closed its stdin (EPIPE) reads no more: what comes later is dropped. */
    if (status < 0 || (t->in_eof && t->in_queued == 0))
        drop_input(t);
    input_moved(t->owner, &t->id, before);
}

/* task_input() for t, whose step's offset the caller reports. */
static int task_input(struct task *t, const void *data, size_t len, uint64_t end, bool eof)
{
    struct input_write *w;
    uv_buf_t buf;

    if (!t->in_open || t->in_eof)
        return -ENOENT;
    if (end >= len && end > 0 && t->in_given > end - len) { /* it has some: sent again */
        size_t had = t->in_given >= end ? len : (size_t)(t->in_given - (end - len));

        data = (const char *)data + had;
        len -= had;
    }
    if (len > 0) {
        if (t->in_queued + len > WRK_TASKS_INPUT_MAX) {
            t->in_given += len; /* lost to it: its count keeps in step with its step's others */
            return -ENOBUFS;
        }
        w = malloc(sizeof(*w) + len);
        if (w == NULL)
            return -ENOMEM;
        w->task = t;
        w->len = len;
        memcpy(w->data, data, len);
        buf = uv_buf_init(w->data, (unsigned int)len);
        if (uv_write(&w->req, (uv_stream_t *)&t->in, &buf, 1, on_input_written) < 0) {
            free(w);
            drop_input(t);
            return -ENOENT;
        }
        t->in_queued += len;
        t->in_given += len;
    }
    if (eof && !t->in_pty) {
        t->in_eof = true;
        if (t->in_queued == 0)
            drop_input(t);
    }
    return 0;
}

int wrk_tasks_input(struct wrk_tasks *tasks, const struct wrk_task_id *id, const void *data,
                    size_t len, uint64_t end, bool eof)
{
    struct task *t = find(tasks, id);
    uint64_t before;
    int rc;

    if (t == NULL)
        return -ENOENT;
    before = step_input_offset(tasks, id);
    rc = task_input(t, data, len, end, eof);
    input_moved(tasks, id, before);
    return rc;
}

int wrk_tasks_input_step(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step, const void *data,
                         size_t len, uint64_t end, bool eof, int *ret_fed)
{
    struct wrk_task_id id = {.job_id = job_id, .step = step};
    uint64_t before = step_input_offset(tasks, &id);
    int rc = 0;

    *ret_fed = 0;
    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        int r;

        if (t->id.job_id != job_id || t->id.step != step || !t->in_open || t->in_eof)
            continue;
        r = task_input(t, data, len, end, eof);
        if (r == 0)
            (*ret_fed)++;
        else if (rc == 0)
            rc = r;
    }
    input_moved(tasks, &id, before);
    return rc;
}

int wrk_tasks_pause_output(struct wrk_tasks *tasks, uint64_t job_id, uint32_t step, bool pause)
{
    int n = 0;

    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (t->id.job_id != job_id || t->id.step != step)
            continue;
        for (int i = 0; i < 2; i++) {
            struct stream *s = &t->out[i];

            if (!s->open)
                continue;
            if (pause)
                uv_read_stop((uv_stream_t *)&s->pipe);
            else if (!uv_is_active((uv_handle_t *)&s->pipe) &&
                     uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read) < 0)
                close_stream(s); /* as open_stream does: the pipe reads as ended */
            n++;
        }
    }
    return n;
}

int wrk_tasks_resize(struct wrk_tasks *tasks, const struct wrk_task_id *id, uint16_t rows,
                     uint16_t cols)
{
    struct task *t = find(tasks, id);
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    uv_os_fd_t master;

    if (t == NULL || !t->in_open || !t->in_pty ||
        uv_fileno((const uv_handle_t *)&t->in, &master) < 0)
        return -ENOENT;
    return ioctl(master, TIOCSWINSZ, &ws) == 0 ? 0 : -errno;
}

static void close_fds(int fds[2][2])
{
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            if (fds[i][j] >= 0)
                close(fds[i][j]);
            fds[i][j] = -1;
        }
    }
}

static void start_timers(struct task *t, const struct wrk_task_opts *opts)
{
    uv_loop_t *loop = t->owner->loop;

    uv_timer_init(loop, &t->timer);
    uv_timer_init(loop, &t->warn);
    t->timer.data = t->warn.data = t;
    t->handles += 2;
    /* Kept without a time limit too: one set later (wrk_tasks_set_limit()) brings it. */
    t->warn_signal = opts->warn_signal > 0 ? opts->warn_signal : 0;
    t->warn_before_ms = opts->warn_before_ms;
    t->warn_leader_only = opts->warn_leader_only;
    uv_update_time(loop);
    if (opts->time_limit_ms > 0)
        uv_timer_start(&t->timer, on_task_timer, opts->time_limit_ms, 0);
    if (t->warn_signal > 0 && opts->time_limit_ms > 0) {
        uint64_t at = opts->time_limit_ms > opts->warn_before_ms
                          ? opts->time_limit_ms - opts->warn_before_ms
                          : 0;

        uv_timer_start(&t->warn, on_warn_timer, at, 0);
    }
}

/* t's timers for limit_ms from `from` (wall clock), now being now_ms; see tasks.h. */
static void rearm_limit(struct task *t, uint64_t limit_ms, uint64_t from, uint64_t now_ms)
{
    uint64_t ran = now_ms > from ? now_ms - from : 0;
    uint64_t left = limit_ms > ran ? limit_ms - ran : 0; /* 0: passed, ends it now */
    uint64_t at;

    if (limit_ms == 0) {
        uv_timer_stop(&t->timer);
        uv_timer_stop(&t->warn);
        return;
    }
    uv_timer_start(&t->timer, on_task_timer, left, 0);
    if (t->warn_signal == 0)
        return;
    at = left > t->warn_before_ms ? left - t->warn_before_ms : 0;
    if (at > 0 || !t->warn_sent)
        uv_timer_start(&t->warn, on_warn_timer, at, 0);
    else
        uv_timer_stop(&t->warn); /* sent already, for an end at least as near */
}

int wrk_tasks_start(struct wrk_tasks *tasks, const struct wrk_task_id *id,
                    const struct wrk_launch_spec *spec, const struct wrk_task_opts *opts,
                    struct gs_error *err)
{
    static const struct wrk_task_opts none = {.warn_signal = 0};
    struct wrk_launch_spec s = *spec;
    int fds[2][2] = {{-1, -1}, {-1, -1}}, in[2] = {-1, -1};
    char tty[64];
    struct task *t = NULL;
    int rc;

    if (opts == NULL)
        opts = &none;
    if (tasks->closing) {
        rc = gs_error_set(err, -ESHUTDOWN, 0, 0, "worker is shutting down");
        goto fail;
    }
    if (find(tasks, id) != NULL) {
        rc = gs_error_set(err, -EEXIST, 0, 0, "job %llu step %u rank %u is already running",
                          (unsigned long long)id->job_id, id->step, id->rank);
        goto fail;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL || (opts->remove_on_exit != NULL &&
                      (t->remove_on_exit = strdup(opts->remove_on_exit)) == NULL)) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto fail;
    }
    if (opts->capture) {
        if (pipe2(fds[0], O_CLOEXEC) < 0 || pipe2(fds[1], O_CLOEXEC) < 0) {
            rc = gs_error_set(err, -errno, 0, 0, "pipe: %s", gs_strerror(-errno));
            goto fail;
        }
        s.use_fds = true;
        s.stdout_fd = fds[0][1];
        s.stderr_fd = fds[1][1];
        rc = prepare_input(&s, opts, in, tty, sizeof(tty), err);
        if (rc < 0)
            goto fail;
    }
    rc = wrk_launch_start(&s, &t->pid, &t->launch, err);
    if (rc < 0)
        goto fail;
    t->owner = tasks;
    t->id = *id;
    t->start_ms = gs_clock_wall_ms();
    tasks->open_handles++;
    start_timers(t, opts);
    watch_launch(t);
    if (opts->capture) {
        /* Only the task may hold the write ends, so that its exit ends the streams. */
        close(fds[0][1]);
        close(fds[1][1]);
        if (in[0] >= 0)
            close(in[0]);
        if (opts->pty) { /* the terminal is all three: its output comes as stdout */
            close(fds[0][0]);
            close(fds[1][0]);
            open_stream(t, WRK_STREAM_STDOUT, dup(in[1]));
        } else {
            open_stream(t, WRK_STREAM_STDOUT, fds[0][0]);
            open_stream(t, WRK_STREAM_STDERR, fds[1][0]);
        }
        if (in[1] >= 0)
            open_input(t, in[1], opts->pty);
    }
    t->next = tasks->head;
    if (tasks->head != NULL)
        tasks->head->prev = t;
    tasks->head = t;
    return 0;
fail:
    close_fds(fds);
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
    }
    if (opts->remove_on_exit != NULL)
        unlink(opts->remove_on_exit);
    if (t != NULL)
        free(t->remove_on_exit);
    free(t);
    return rc;
}

int wrk_tasks_kill(struct wrk_tasks *tasks, const struct wrk_task_match *m,
                   enum wrk_end_reason reason)
{
    int n = 0;

    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (!matches(t, m))
            continue;
        send_term(t, reason);
        n++;
    }
    return n;
}

int wrk_tasks_set_limit(struct wrk_tasks *tasks, const struct wrk_task_match *m, uint64_t limit_ms,
                        uint64_t since_ms)
{
    uint64_t now = gs_clock_wall_ms();
    int n = 0;

    /* The timers count from the loop's cached time: make it now, as the elapsed time is. */
    uv_update_time(tasks->loop);
    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (!matches(t, m) || t->term_sent)
            continue;
        rearm_limit(t, limit_ms, since_ms != 0 ? since_ms : t->start_ms, now);
        n++;
    }
    return n;
}

int wrk_tasks_signal(struct wrk_tasks *tasks, const struct wrk_task_match *m, int sig,
                     bool leader_only)
{
    int n = 0;

    for (struct task *t = tasks->head; t != NULL; t = t->next) {
        if (!matches(t, m))
            continue;
        if (signal_task(t, sig, leader_only) == 0)
            n++;
    }
    return n;
}

pid_t wrk_tasks_pid(const struct wrk_tasks *tasks, const struct wrk_task_id *id)
{
    const struct task *t = find(tasks, id);

    return t != NULL && !t->reaped ? t->pid : 0;
}

int wrk_tasks_count(const struct wrk_tasks *tasks, uint64_t job_id)
{
    int n = 0;

    for (const struct task *t = tasks->head; t != NULL; t = t->next)
        n += !t->reaped && (job_id == 0 || t->id.job_id == job_id);
    return n;
}

int wrk_tasks_count_step(const struct wrk_tasks *tasks, uint64_t job_id, uint32_t step)
{
    int n = 0;

    for (const struct task *t = tasks->head; t != NULL; t = t->next)
        n += !t->reaped && t->id.job_id == job_id && t->id.step == step;
    return n;
}

void wrk_tasks_foreach(const struct wrk_tasks *tasks,
                       void (*fn)(const struct wrk_task_id *id, pid_t pid, uint64_t start_ms,
                                  void *data),
                       void *data)
{
    for (const struct task *t = tasks->head; t != NULL; t = t->next) {
        if (!t->reaped)
            fn(&t->id, t->pid, t->start_ms, data);
    }
}
