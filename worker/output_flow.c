/*
 * output_flow.c: srun's output window on this worker (protocol 1.28), and the output srun
 * does not have yet (1.29). A step launched with LaunchTasks.step_output_window gets a flow
 * here: the bytes of its tasks' output put out for srun (StepOutput, each saying where it
 * ends in this node's output of the step) and how many of them srun has written
 * (StepOutputAck, relayed by gschedd). Once more than the window is out and not yet taken,
 * the worker stops reading the step's tasks' pipes (wrk_tasks_pause_output), and starts
 * again once srun has caught up to half of it: a task writing faster than srun's reader
 * takes blocks on its pipe, as it would under a local pipe, and nothing piles up in
 * gschedd's queues (past 64 MiB it used to drop output). A step launched without a window
 * has no flow and is never held; its output is sent while registered, dropped otherwise.
 *
 * What srun has not acknowledged is kept (at most the window and a chunk), so that nothing
 * is lost when gschedd restarts or the worker loses it: while not registered the output is
 * kept without being sent (the window then holds the tasks), and StepOutputResume, sent by
 * gschedd once srun is back (or srun's StepOutputAck asking for it after a gap), says from
 * where to send it again; srun drops what it has (StepOutput.end).
 *
 * The flows are a short list on the worker's context, one per step with tasks here. The
 * step's last task ending here ends its flow, which goes once srun has all of it or once
 * gschedd has acknowledged the step's exits here (it passed on what came before them);
 * until then a gschedd that stops can still have it sent again. Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/worker_internal.h"

/* A piece of the output srun does not have for sure: where it ends in the node's output. */
struct chunk {
    struct chunk *next;
    uint64_t end;
    uint32_t rank;
    enum wrk_stream stream;
    bool eof;
    size_t len;
    char data[];
};

struct wrk_flow {
    struct wrk_flow *next;
    uint64_t job_id;
    uint32_t step;
    uint64_t window;
    uint64_t sent, taken; /* put out (sent, or kept while not registered); written by srun */
    bool paused;
    bool ended; /* its last task here ended: it goes once srun has it all, or its exits are
                 * acknowledged (gschedd passed everything before them on) */
    struct chunk *head, **tail; /* after taken, oldest first */
};

static struct wrk_flow **find(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    struct wrk_flow **at = &w->flows;

    while (*at != NULL && ((*at)->job_id != job_id || (*at)->step != step))
        at = &(*at)->next;
    return at;
}

static void flow_free(struct wrk_flow *f);

/* Unlinks and frees *at. */
static void flow_drop(struct wrk_flow **at)
{
    struct wrk_flow *f = *at;

    *at = f->next;
    flow_free(f);
}

int wrk_flow_open(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint64_t window)
{
    struct wrk_flow **at = find(w, job_id, step), *f;

    if (*at != NULL && (*at)->ended) /* an earlier attempt's step of that number */
        flow_drop(at);
    if (window == 0 || *at != NULL)
        return 0;
    f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -ENOMEM;
    f->job_id = job_id;
    f->step = step;
    f->window = window;
    f->tail = &f->head;
    *at = f;
    return 0;
}

/* len bytes of a task's stream (or its end) to gschedd, ending at end (0: not said). */
static int send_output(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint32_t rank,
                       enum wrk_stream stream, const char *bytes, size_t len, bool eof,
                       uint64_t end)
{
    Gs__StepOutput out = GS__STEP_OUTPUT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    out.job_id = job_id;
    out.step = step;
    out.rank = rank;
    out.stream = stream == WRK_STREAM_STDERR ? GS__LOG_STREAM__LOG_STREAM_STDERR
                                             : GS__LOG_STREAM__LOG_STREAM_STDOUT;
    out.data.data = (uint8_t *)bytes;
    out.data.len = len;
    out.eof = eof;
    out.end = end;
    env.body_case = GS__ENVELOPE__BODY_STEP_OUTPUT;
    env.step_output = &out;
    return wrk_send(w, &env);
}

/* Stops reading the step's pipes past the window, and starts again below half of it. */
static void hold_or_go(struct wrk_ctx *w, struct wrk_flow *f)
{
    if (!f->paused && f->sent - f->taken >= f->window) {
        f->paused = true;
        wrk_tasks_pause_output(w->tasks, f->job_id, f->step, true);
        GS_LOG(GS_LOG_DEBUG, "job=%llu step=%u sent=%llu taken=%llu output held for srun",
               (unsigned long long)f->job_id, f->step, (unsigned long long)f->sent,
               (unsigned long long)f->taken);
    } else if (f->paused && f->sent - f->taken <= f->window / 2) {
        f->paused = false;
        wrk_tasks_pause_output(w->tasks, f->job_id, f->step, false);
    }
}

void wrk_flow_output(struct wrk_ctx *w, const struct wrk_task_id *id, enum wrk_stream stream,
                     const char *bytes, size_t len, bool eof)
{
    struct wrk_flow *f = *find(w, id->job_id, id->step);
    struct chunk *c = f != NULL ? malloc(sizeof(*c) + len) : NULL;
    int rc;

    if (f != NULL && c == NULL) /* out of memory: sent, if it can be, but not kept */
        GS_LOG(GS_LOG_WARN, "job=%llu step=%u rank=%u bytes=%zu out of memory: output not kept",
               (unsigned long long)id->job_id, id->step, id->rank, len);
    if (f != NULL) {
        f->sent += len;
        hold_or_go(w, f);
    }
    if (c != NULL) {
        *c = (struct chunk){
            .end = f->sent, .rank = id->rank, .stream = stream, .eof = eof, .len = len};
        if (len > 0) /* an end of stream has no bytes, maybe no pointer */
            memcpy(c->data, bytes, len);
        *f->tail = c;
        f->tail = &c->next;
    }
    if (!w->registered) { /* kept for srun's return, or (without a flow) gone */
        if (f == NULL)
            GS_LOG(GS_LOG_DEBUG,
                   "job=%llu step=%u rank=%u bytes=%zu step output dropped: not registered",
                   (unsigned long long)id->job_id, id->step, id->rank, len);
        return;
    }
    rc = send_output(w, id->job_id, id->step, id->rank, stream, bytes, len, eof,
                     f != NULL ? f->sent : 0);
    if (rc < 0)
        GS_LOG(rc == -ENOTCONN ? GS_LOG_DEBUG : GS_LOG_WARN,
               "job=%llu step=%u rank=%u bytes=%zu rc=%d step output not sent",
               (unsigned long long)id->job_id, id->step, id->rank, len, rc);
}

/* Forgets what srun has: chunks ending before offset (an end of stream exactly at it is
 * kept, as srun may not have had it). */
static void drop_taken(struct wrk_flow *f, uint64_t offset)
{
    while (f->head != NULL &&
           (f->head->end < offset || (f->head->end == offset && f->head->len > 0))) {
        struct chunk *c = f->head;

        f->head = c->next;
        free(c);
    }
    if (f->head == NULL)
        f->tail = &f->head;
}

/* An ended flow srun has all of goes. */
static void drop_if_done(struct wrk_ctx *w, struct wrk_flow *f)
{
    if (f->ended && f->head == NULL)
        flow_drop(find(w, f->job_id, f->step));
}

void wrk_flow_taken(struct wrk_ctx *w, const Gs__StepOutputAck *ack)
{
    struct wrk_flow *f = *find(w, ack->job_id, ack->step);

    if (f != NULL && ack->resend) { /* srun missed some: from where it is, again */
        Gs__StepOutputResume resume = GS__STEP_OUTPUT_RESUME__INIT;

        resume.job_id = ack->job_id;
        resume.step = ack->step;
        resume.offset = ack->offset;
        wrk_flow_resume(w, &resume);
        return;
    }
    if (f == NULL || ack->offset <= f->taken)
        return;
    /* srun cannot have written more than was sent: a larger offset is taken as all. */
    f->taken = ack->offset < f->sent ? ack->offset : f->sent;
    drop_taken(f, f->taken);
    hold_or_go(w, f);
    drop_if_done(w, f);
}

void wrk_flow_resume(struct wrk_ctx *w, const Gs__StepOutputResume *resume)
{
    struct wrk_flow *f = *find(w, resume->job_id, resume->step);
    uint64_t from;
    size_t n = 0;

    if (f == NULL)
        return;
    from = resume->offset < f->sent ? resume->offset : f->sent;
    if (from > f->taken)
        f->taken = from;
    drop_taken(f, from);
    for (const struct chunk *c = f->head; c != NULL && w->registered; c = c->next) {
        uint64_t start = c->end - c->len;
        size_t skip = from > start ? (size_t)(from - start) : 0;

        if (send_output(w, f->job_id, f->step, c->rank, c->stream, c->data + skip, c->len - skip,
                        c->eof, c->end) < 0)
            break;
        n++;
    }
    GS_LOG(GS_LOG_INFO, "job=%llu step=%u from=%llu sent=%llu chunks=%zu step output sent again",
           (unsigned long long)f->job_id, f->step, (unsigned long long)from,
           (unsigned long long)f->sent, n);
    if (!f->ended)
        hold_or_go(w, f);
    drop_if_done(w, f);
}

static void flow_free(struct wrk_flow *f)
{
    while (f->head != NULL) {
        struct chunk *c = f->head;

        f->head = c->next;
        free(c);
    }
    free(f);
}

void wrk_flow_close(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    struct wrk_flow **at = find(w, job_id, step);

    if (*at == NULL)
        return;
    (*at)->ended = true;
    drop_if_done(w, *at);
}

void wrk_flow_exits_acked(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    struct wrk_flow **at = find(w, job_id, step);

    if (*at == NULL || !(*at)->ended)
        return;
    for (const struct wrk_exit *e = w->exits; e != NULL; e = e->next) {
        if (e->msg.job_id == job_id && e->msg.step == step)
            return; /* one still to be stored: gschedd may yet stop before it */
    }
    flow_drop(at);
}

void wrk_flows_free(struct wrk_ctx *w)
{
    while (w->flows != NULL) {
        struct wrk_flow *f = w->flows;

        w->flows = f->next;
        flow_free(f);
    }
}
