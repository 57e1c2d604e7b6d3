/*
 * jobs.c: the worker's job records (struct wrk_job, worker_internal.h), one per job with a
 * task here: the attempt its tasks' exits are stamped with, how many of them run (of every
 * step), and a later attempt's launch waiting for them to end (worker_launch.c defers it).
 *
 * A record is made when a launch is prepared (wrk_job_remember), counted up as each task
 * starts and down as each ends (worker_launch.c, worker.c), and dropped with the job's
 * cgroup and data once none runs here (wrk_job_idle, wrk_job_forget), so that a
 * long-running worker does not accumulate them. The records live in w->jobs, owned by the
 * worker context; all of this runs on the worker's loop thread.
 */
#include "worker/worker_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/log.h"

struct wrk_job *wrk_job_find(struct wrk_ctx *w, uint64_t job_id)
{
    for (struct wrk_job *j = w->jobs; j != NULL; j = j->next) {
        if (j->job_id == job_id)
            return j;
    }
    return NULL;
}

int wrk_job_remember(struct wrk_ctx *w, uint64_t job_id, uint32_t attempt)
{
    struct wrk_job *j = wrk_job_find(w, job_id);

    if (j == NULL) {
        j = calloc(1, sizeof(*j));
        if (j == NULL)
            return -ENOMEM;
        j->job_id = job_id;
        j->next = w->jobs;
        w->jobs = j;
    }
    j->attempt = attempt;
    return 0;
}

void wrk_job_forget(struct wrk_ctx *w, struct wrk_job *job)
{
    int killed = wrk_cg_job_end(w->cg, job->job_id); /* what outlived its tasks goes too */

    if (killed > 0)
        GS_LOG(GS_LOG_INFO, "job=%llu processes=%d left in its cgroup after its tasks, killed",
               (unsigned long long)job->job_id, killed);
    else if (killed < 0)
        GS_LOG(GS_LOG_WARN, "job=%llu error=\"%s\" cgroup not removed",
               (unsigned long long)job->job_id, gs_strerror(killed));
    wrk_data_job_forget(w, job->job_id); /* its dataset unpinned, its plan file removed */
    for (struct wrk_job **p = &w->jobs; *p != NULL; p = &(*p)->next) {
        if (*p == job) {
            *p = job->next;
            free(job->deferred);
            free(job);
            return;
        }
    }
}

void wrk_job_idle(struct wrk_ctx *w, struct wrk_job *job)
{
    uint8_t *buf = job->deferred;
    uint64_t request_id = job->deferred_request_id;
    Gs__LaunchTasks *msg;

    if (buf == NULL) {
        wrk_job_forget(w, job);
        return;
    }
    job->deferred = NULL;
    msg = gs__launch_tasks__unpack(NULL, job->deferred_len, buf);
    free(buf);
    if (msg == NULL) { /* it packed here; only memory can be short */
        GS_LOG(GS_LOG_ERROR, "job=%llu deferred launch lost: out of memory",
               (unsigned long long)job->job_id);
        wrk_job_forget(w, job);
        return;
    }
    GS_LOG(GS_LOG_INFO, "job=%llu attempt=%u deferred launch starts",
           (unsigned long long)msg->job_id, msg->attempt);
    wrk_handle_launch(w, msg, request_id); /* may forget job */
    gs__launch_tasks__free_unpacked(msg, NULL);
}
