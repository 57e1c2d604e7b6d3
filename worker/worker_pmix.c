/*
 * worker_pmix.c: the worker's side of srun --mpi=pmix and --mpi=pmi2 (the servers themselves
 * are pmix.c and pmi.c): a server started for the first step that asks for one, each
 * fence's part sent to gschedd and gschedd's answer handed back to the server whose step it
 * is, and a task's MPI_Abort ending its step's tasks here and, through gschedd (PmixAbort),
 * on its other nodes, as Slurm ends a step whose rank aborted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/worker_internal.h"

/* A fence's answer, to the server of its step. */
static void fence_done(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                       const void *bytes, size_t len)
{
    if (wrk_pmi_fence_done(w->pmi, job_id, step, seq, code, bytes, len) == -ENOENT)
        wrk_pmix_fence_done(w->pmix, job_id, step, seq, code, bytes, len);
}

static void send_fence(void *data, uint64_t job_id, uint32_t step, uint32_t attempt, uint32_t seq,
                       const void *bytes, size_t len)
{
    struct wrk_ctx *w = data;
    Gs__PmixFence f = GS__PMIX_FENCE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    f.job_id = job_id;
    f.step = step;
    f.attempt = attempt;
    f.seq = seq;
    f.data.data = (uint8_t *)bytes;
    f.data.len = len;
    env.body_case = GS__ENVELOPE__BODY_PMIX_FENCE;
    env.pmix_fence = &f;
    if (wrk_send(w, &env) < 0) /* no gschedd to join the parts: the fence fails */
        fence_done(w, job_id, step, seq, -ENOTCONN, NULL, 0);
}

static void on_abort(void *data, uint64_t job_id, uint32_t step, int status, const char *msg)
{
    struct wrk_ctx *w = data;
    struct wrk_task_match m = {.job_id = job_id, .step = step};
    const struct wrk_job *job = wrk_job_find(w, job_id);
    Gs__PmixAbort a = GS__PMIX_ABORT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int n = w->tasks != NULL ? wrk_tasks_kill(w->tasks, &m, WRK_END_CANCELLED) : 0;

    GS_LOG(GS_LOG_WARN,
           "job=%" PRIu64 " step=%" PRIu32 " status=%d tasks=%d message=\"%s\" a task aborted "
           "(MPI_Abort): the step's tasks end",
           job_id, step, status, n, msg);
    a.job_id = job_id;
    a.step = step;
    a.attempt = job != NULL ? job->attempt : 0;
    a.status = status;
    a.message = (char *)msg;
    env.body_case = GS__ENVELOPE__BODY_PMIX_ABORT;
    env.pmix_abort = &a;
    if (wrk_send(w, &env) < 0)
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " abort not sent: the step's tasks on "
               "its other nodes run on",
               job_id, step);
}

int wrk_pmix_start(struct wrk_ctx *w, struct gs_error *err)
{
    char dir[sizeof(w->script_dir) + 80];

    if (w->pmix != NULL)
        return 0;
    /* Of this process: workers of one name may share a machine (a local cluster's tests). */
    snprintf(dir, sizeof(dir), "%s/gsched-pmix-%s.%d", w->script_dir, w->node_name, (int)getpid());
    return wrk_pmix_new(w->loop, dir, w->node_name, send_fence, on_abort, w, &w->pmix, err);
}

int wrk_pmi_start(struct wrk_ctx *w)
{
    return w->pmi != NULL ? 0 : wrk_pmi_new(w->loop, send_fence, on_abort, w, &w->pmi);
}

void wrk_mpi_step_end(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    wrk_pmix_step_end(w->pmix, job_id, step);
    wrk_pmi_step_end(w->pmi, job_id, step);
}

void wrk_handle_fence_done(struct wrk_ctx *w, const Gs__PmixFenceDone *msg)
{
    fence_done(w, msg->job_id, msg->step, msg->seq, msg->code, msg->data.data, msg->data.len);
}
