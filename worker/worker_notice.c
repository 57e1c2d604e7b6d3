/*
 * worker_notice.c: JobNotice on a worker: a line for a job's owner, written to the standard
 * error of the job's lowest-ranked task on this node (its batch shell, for a batch job), as
 * "gsched: TEXT". gschedd sends it for the "notify" idle policy.
 *
 * The line goes through /proc/PID/fd/2, the task's own stderr, whatever it is: its log
 * file (reopened for appending, so it lands at the end), a pipe the worker relays (srun
 * steps), or a terminal. Non-blocking: a task whose stderr pipe is full loses the line
 * rather than stalling the worker's loop.
 */
#include "worker/worker_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

struct pick {
    uint64_t job_id;
    struct wrk_task_id best;
    pid_t pid;
};

/* The job's task with the lowest (step, rank) on this node. */
static void pick_task(const struct wrk_task_id *id, pid_t pid, uint64_t start_ms, void *data)
{
    struct pick *p = data;

    (void)start_ms;
    if (id->job_id != p->job_id || pid <= 0)
        return;
    if (p->pid == 0 || id->step < p->best.step ||
        (id->step == p->best.step && id->rank < p->best.rank)) {
        p->best = *id;
        p->pid = pid;
    }
}

static int write_line(pid_t pid, const char *text)
{
    char path[64], line[600];
    int fd, len, rc = 0;

    snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)pid);
    len = snprintf(line, sizeof(line), "gsched: %s\n", text);
    if (len < 0 || (size_t)len >= sizeof(line))
        len = (int)sizeof(line) - 1;
    fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    if (write(fd, line, (size_t)len) != len)
        rc = -EIO;
    close(fd);
    return rc;
}

void wrk_handle_notice(struct wrk_ctx *w, const Gs__JobNotice *msg)
{
    struct pick p = {.job_id = msg->job_id};
    int rc;

    wrk_tasks_foreach(w->tasks, pick_task, &p);
    if (p.pid == 0) {
        GS_LOG(GS_LOG_DEBUG, "job=%llu notice for no task here, dropped",
               (unsigned long long)msg->job_id);
        return;
    }
    rc = write_line(p.pid, msg->text != NULL ? msg->text : "");
    GS_LOG(rc == 0 ? GS_LOG_INFO : GS_LOG_WARN, "job=%llu rank=%u pid=%d rc=%d notice written",
           (unsigned long long)msg->job_id, p.best.rank, (int)p.pid, rc);
}
