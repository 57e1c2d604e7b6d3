/*
 * worker_logs.c: LogsRequest on a worker: the scheduler forwards `gsched logs` here with the
 * task's log path filled in, and gets back a LogsReply with one chunk (worker/logs.h) or an
 * ErrorReply, both under the request's request_id so it can match them to the CLI waiting.
 *
 * Only the scheduler connection sends this, and the scheduler takes the path from the job's
 * own output settings, not from the CLI. A root worker reads another user's file as that
 * user (worker/logs.h): the job's group comes with the request (LogsRequest.owner_gid);
 * from a gschedd that sends none, the user's primary group from the password database.
 *
 * The read runs on a thread of its own (worker/offload.h), neither on the loop nor in
 * libuv's pool: a log on a filesystem that hangs (an NFS server gone), or a password lookup
 * through a directory server that does, would otherwise freeze the worker, heartbeats and
 * self-fencing included, or hold the pool's four threads that shard copies and telemetry
 * samples need. wrk_logs_read (and the password lookup) need no loop and no shared state,
 * so the thread gets copies of the request's fields and the loop sends the answer in
 * read_done. At most LOG_READS_MAX reads run at once; past that a request is answered
 * with an error at once. A stopping worker does not wait for reads in flight. An answer
 * goes out only on the link it was asked on: a request_id means nothing to the gschedd of
 * a later registration.
 */
#define _GNU_SOURCE /* getpwuid_r */

#include "worker/worker_internal.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/logs.h"

/* A request's path as logs and errors name it. */
static const char *shown(const char *path)
{
    return path != NULL && path[0] != '\0' ? path : "(no path)";
}

#define LOG_READS_MAX 64u

/* why: what went wrong, NULL for code's text. */
static void reply_error_why(struct wrk_ctx *w, uint64_t request_id, const char *path, int code,
                            const char *why)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char message[512];

    snprintf(message, sizeof(message), "%s: %s: %s", w->node_name, path,
             why != NULL ? why : gs_strerror(code));
    err.code = code;
    err.message = message;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    wrk_send(w, &env);
}

static void reply_error(struct wrk_ctx *w, uint64_t request_id, const char *path, int code)
{
    reply_error_why(w, request_id, path, code, NULL);
}

/* The group to read as: the request's, else the user's primary group; -EPERM for none.
 * Any thread. */
static int owner_group(uint32_t uid, uint32_t req_gid, uint32_t *gid)
{
    struct passwd pw, *found = NULL;
    char buf[4096];

    *gid = req_gid;
    if (*gid != 0 || uid == 0)
        return 0;
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || found == NULL)
        return -EPERM;
    *gid = (uint32_t)pw.pw_gid;
    return 0;
}

/* One LogsRequest being read on its thread. */
struct logs_read {
    struct wrk_ctx *w;
    uint64_t request_id;
    unsigned registration; /* w->registrations when asked: the link to answer on */
    uint64_t job_id;
    uint32_t rank;
    char *path; /* NULL: the request had none */
    uint32_t owner_uid, owner_gid;
    uint64_t offset;
    bool from_end;
    uint32_t max_bytes;
    void (*gate)(void *data); /* wrk_opts.log_read_gate */
    void *gate_data;
    int rc; /* set by the read; with chunk when 0 */
    struct wrk_logs_chunk chunk;
};

/* On the read's thread: touches only lr. */
static void read_work(void *data)
{
    struct logs_read *lr = data;
    uint32_t gid;

    if (lr->gate != NULL)
        lr->gate(lr->gate_data);
    lr->rc = owner_group(lr->owner_uid, lr->owner_gid, &gid);
    if (lr->rc == 0)
        lr->rc = wrk_logs_read(lr->path, lr->owner_uid, gid, lr->offset, lr->from_end,
                               lr->max_bytes, &lr->chunk);
}

static void answer(struct wrk_ctx *w, const struct logs_read *lr)
{
    Gs__LogsReply reply = GS__LOGS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const char *path = shown(lr->path);
    int rc = lr->rc;

    if (rc < 0) {
        GS_LOG(GS_LOG_DEBUG, "job=%llu rank=%u path=%s rc=%d cannot read log",
               (unsigned long long)lr->job_id, lr->rank, path, rc);
        reply_error(w, lr->request_id, path, rc);
        return;
    }
    reply.data.data = (uint8_t *)lr->chunk.data;
    reply.data.len = lr->chunk.len;
    reply.offset = lr->chunk.offset;
    reply.size = lr->chunk.size;
    reply.eof = lr->chunk.eof;
    reply.node_name = w->node_name;
    reply.path = lr->path; /* borrowed: packed by the send */
    env.request_id = lr->request_id;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &reply;
    rc = wrk_send(w, &env);
    /* Most likely a full write queue: the short error still tells the scheduler to stop
     * waiting for this request. */
    if (rc < 0 && rc != -ENOTCONN) {
        GS_LOG(GS_LOG_WARN, "job=%llu rank=%u rc=%d cannot send log chunk",
               (unsigned long long)lr->job_id, lr->rank, rc);
        reply_error(w, lr->request_id, path, rc);
    }
}

static void logs_read_free(struct logs_read *lr)
{
    wrk_logs_chunk_release(&lr->chunk);
    free(lr->path);
    free(lr);
}

/* On the loop once the read returned; never after wrk_logs_stop. */
static void read_done(void *data)
{
    struct logs_read *lr = data;
    struct wrk_ctx *w = lr->w;

    if (w->registered && w->registrations == lr->registration)
        answer(w, lr);
    else
        GS_LOG(GS_LOG_DEBUG, "job=%llu rank=%u link changed while reading, log chunk dropped",
               (unsigned long long)lr->job_id, lr->rank);
    logs_read_free(lr);
}

/* A read that returned after the stop: any thread, so memory only. */
static void read_drop(void *data)
{
    logs_read_free(data);
}

static void on_log_reads_closed(void *data)
{
    wrk_handle_closed(data);
}

int wrk_logs_start(struct wrk_ctx *w, struct gs_error *err)
{
    int rc = wrk_offload_new(w->loop, LOG_READS_MAX, &w->log_reads);

    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "cannot start the log readers: %s", gs_strerror(rc));
    w->open_handles++; /* until on_log_reads_closed */
    return 0;
}

unsigned wrk_log_reads(const struct wrk_ctx *w)
{
    return w->log_reads != NULL ? wrk_offload_pending(w->log_reads) : 0;
}

void wrk_logs_stop(struct wrk_ctx *w)
{
    unsigned left;

    if (w->log_reads == NULL)
        return;
    left = wrk_offload_pending(w->log_reads);
    if (left > 0)
        GS_LOG(GS_LOG_INFO, "node=%s reads=%u log reads still running are left behind",
               w->node_name, left);
    wrk_offload_close(w->log_reads, on_log_reads_closed, w);
    w->log_reads = NULL;
}

void wrk_handle_logs(struct wrk_ctx *w, const Gs__LogsRequest *req, uint64_t request_id)
{
    struct logs_read *lr = calloc(1, sizeof(*lr));
    const char *path = shown(req->path);
    int rc = -ENOMEM;

    if (lr == NULL)
        goto fail;
    lr->w = w;
    lr->request_id = request_id;
    lr->registration = w->registrations;
    lr->job_id = req->job_id;
    lr->rank = req->rank;
    lr->owner_uid = req->owner_uid;
    lr->owner_gid = req->owner_gid;
    lr->offset = req->offset;
    lr->from_end = req->from_end;
    lr->max_bytes = req->max_bytes;
    lr->gate = w->log_read_gate;
    lr->gate_data = w->log_read_gate_data;
    if (req->path != NULL && (lr->path = strdup(req->path)) == NULL)
        goto fail;
    rc = w->log_reads != NULL ? wrk_offload_run(w->log_reads, read_work, read_done, read_drop, lr)
                              : -ESHUTDOWN;
    if (rc < 0)
        goto fail;
    return;
fail:
    if (lr != NULL)
        logs_read_free(lr);
    GS_LOG(GS_LOG_WARN, "job=%llu rank=%u rc=%d cannot read log", (unsigned long long)req->job_id,
           req->rank, rc);
    reply_error_why(w, request_id, path, rc,
                    rc == -EBUSY ? "too many log reads in flight on this node (a filesystem "
                                   "may hang); try again later"
                                 : NULL);
}
