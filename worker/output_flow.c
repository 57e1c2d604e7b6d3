/*
 * output_flow.c: srun's output window on this worker (protocol 1.28). A step launched with
 * LaunchTasks.step_output_window gets a flow here: the bytes of its tasks' output sent to
 * gschedd (StepOutput) and how many of them srun has written (StepOutputAck, relayed by
 * gschedd). Once more than the window is sent and not yet taken, the worker stops reading
 * the step's tasks' pipes (wrk_tasks_pause_output), and starts again once srun has caught
 * up to half of it: a task writing faster than srun's reader takes blocks on its pipe, as
 * it would under a local pipe, and nothing piles up in gschedd's queues (past 64 MiB it
 * used to drop output). A step launched without a window has no flow and is never held.
 *
 * The flows are a short list on the worker's context, one per step with tasks here; the
 * step's last task ending here closes its flow. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "worker/worker_internal.h"

struct wrk_flow {
    struct wrk_flow *next;
    uint64_t job_id;
    uint32_t step;
    uint64_t window;
    uint64_t sent, taken;
    bool paused;
};

static struct wrk_flow **find(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    struct wrk_flow **at = &w->flows;

    while (*at != NULL && ((*at)->job_id != job_id || (*at)->step != step))
        at = &(*at)->next;
    return at;
}

int wrk_flow_open(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint64_t window)
{
    struct wrk_flow **at = find(w, job_id, step), *f;

    if (window == 0 || *at != NULL)
        return 0;
    f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -ENOMEM;
    f->job_id = job_id;
    f->step = step;
    f->window = window;
    *at = f;
    return 0;
}

void wrk_flow_sent(struct wrk_ctx *w, uint64_t job_id, uint32_t step, size_t len)
{
    struct wrk_flow *f = *find(w, job_id, step);

    if (f == NULL)
        return;
    f->sent += len;
    if (!f->paused && f->sent - f->taken >= f->window) {
        f->paused = true;
        wrk_tasks_pause_output(w->tasks, job_id, step, true);
        GS_LOG(GS_LOG_DEBUG, "job=%llu step=%u sent=%llu taken=%llu output held for srun",
               (unsigned long long)job_id, step, (unsigned long long)f->sent,
               (unsigned long long)f->taken);
    }
}

void wrk_flow_taken(struct wrk_ctx *w, const Gs__StepOutputAck *ack)
{
    struct wrk_flow *f = *find(w, ack->job_id, ack->step);

    if (f == NULL || ack->offset <= f->taken)
        return;
    /* srun cannot have written more than was sent: a larger offset is taken as all. */
    f->taken = ack->offset < f->sent ? ack->offset : f->sent;
    if (f->paused && f->sent - f->taken <= f->window / 2) {
        f->paused = false;
        wrk_tasks_pause_output(w->tasks, f->job_id, f->step, false);
    }
}

void wrk_flow_close(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    struct wrk_flow **at = find(w, job_id, step), *f = *at;

    if (f == NULL)
        return;
    *at = f->next;
    free(f);
}

void wrk_flows_free(struct wrk_ctx *w)
{
    while (w->flows != NULL) {
        struct wrk_flow *f = w->flows;

        w->flows = f->next;
        free(f);
    }
}
