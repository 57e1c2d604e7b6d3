/*
 * worker_logs.c: LogsRequest on a worker: the scheduler forwards `gsched logs` here with the
 * task's log path filled in, and gets back a LogsReply with one chunk (worker/logs.h) or an
 * ErrorReply, both under the request's request_id so it can match them to the CLI waiting.
 *
 * Only the scheduler connection sends this, and the scheduler takes the path from the job's
 * own output settings, not from the CLI. A root worker reads another user's file as that
 * user (worker/logs.h): the job's group comes with the request (LogsRequest.owner_gid);
 * from a gschedd that sends none, the user's primary group from the password database.
 */
#define _GNU_SOURCE /* getpwuid_r */

#include "worker/worker_internal.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>

#include "common/error.h"
#include "common/log.h"
#include "worker/logs.h"

static void reply_error(struct wrk_ctx *w, uint64_t request_id, const char *path, int code)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    char message[512];

    snprintf(message, sizeof(message), "%s: %s: %s", w->node_name, path, gs_strerror(code));
    err.code = code;
    err.message = message;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    wrk_send(w, &env);
}

/* The group to read as: the request's, else the user's primary group; -EPERM for none. */
static int owner_group(const Gs__LogsRequest *req, uint32_t *gid)
{
    struct passwd pw, *found = NULL;
    char buf[4096];

    *gid = req->owner_gid;
    if (*gid != 0 || req->owner_uid == 0)
        return 0;
    if (getpwuid_r(req->owner_uid, &pw, buf, sizeof(buf), &found) != 0 || found == NULL)
        return -EPERM;
    *gid = (uint32_t)pw.pw_gid;
    return 0;
}

void wrk_handle_logs(struct wrk_ctx *w, const Gs__LogsRequest *req, uint64_t request_id)
{
    Gs__LogsReply reply = GS__LOGS_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const char *path = req->path != NULL && req->path[0] != '\0' ? req->path : "(no path)";
    struct wrk_logs_chunk chunk;
    uint32_t gid;
    int rc = owner_group(req, &gid);

    if (rc == 0)
        rc = wrk_logs_read(req->path, req->owner_uid, gid, req->offset, req->from_end,
                           req->max_bytes, &chunk);

    if (rc < 0) {
        GS_LOG(GS_LOG_DEBUG, "job=%llu rank=%u path=%s rc=%d cannot read log",
               (unsigned long long)req->job_id, req->rank, path, rc);
        reply_error(w, request_id, path, rc);
        return;
    }
    reply.data.data = (uint8_t *)chunk.data;
    reply.data.len = chunk.len;
    reply.offset = chunk.offset;
    reply.size = chunk.size;
    reply.eof = chunk.eof;
    reply.node_name = w->node_name;
    reply.path = req->path; /* borrowed: packed by the send */
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_LOGS_REPLY;
    env.logs_reply = &reply;
    rc = wrk_send(w, &env);
    wrk_logs_chunk_release(&chunk);
    /* Most likely a full write queue: the short error still tells the scheduler to stop
     * waiting for this request. */
    if (rc < 0 && rc != -ENOTCONN) {
        GS_LOG(GS_LOG_WARN, "job=%llu rank=%u rc=%d cannot send log chunk",
               (unsigned long long)req->job_id, req->rank, rc);
        reply_error(w, request_id, path, rc);
    }
}
