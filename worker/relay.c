/*
 * relay.c: the worker's CLI socket and the sessions it relays to gschedd (see relay.h).
 *
 * Each accepted connection is a gs_proto_conn whose data is its wrk_session entry
 * (worker/sessions.h). Frames from the CLI are packed whole into CliRelay.frame; frames
 * from gschedd are unpacked and queued on the CLI's connection, whose own write queue and
 * flush-on-close keep the order and the last reply. Who ended a session decides whether
 * gschedd is told: a close that came from gschedd, or happened while it is unreachable, is
 * not echoed back.
 *
 * Handles: the listener, plus one per session connection until its on_close; the relay is
 * freed when the last one is closed after wrk_relay_close().
 */
#define _GNU_SOURCE /* struct ucred, SO_PEERCRED */

#include "worker/relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "proto/conn.h"
#include "worker/sessions.h"

struct wrk_relay {
    uv_loop_t *loop;
    uv_pipe_t listener;
    char path[108];
    char node_name[64];
    wrk_relay_send_fn send;
    wrk_relay_local_fn local;
    void *data;
    struct wrk_sessions sessions;
    bool connected;
    bool closing;
    int open_handles;
    void (*closed)(void *data);
    void *closed_data;
};

/* What a CLI connection's callbacks get: its relay and its session entry (NULL until the
 * connection is accepted and known). Freed in on_cli_close. */
struct cli_peer {
    struct wrk_relay *r;
    struct wrk_session *s;
};

static void release_handle(struct wrk_relay *r)
{
    if (--r->open_handles > 0 || !r->closing)
        return;
    if (r->closed != NULL)
        r->closed(r->closed_data);
    wrk_sessions_release(&r->sessions);
    free(r);
}

/*
 * A CliRelay for session s to gschedd: inner packed into frame, or the end marker. The first
 * frame numbers the session, so that numbers reach gschedd in increasing order.
 */
static int relay_up(struct wrk_relay *r, struct wrk_session *s, const Gs__Envelope *inner)
{
    Gs__CliRelay msg = GS__CLI_RELAY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    struct gs_buf packed = GS_BUF_INIT;
    int rc = 0;

    if (!r->connected)
        return -ENOTCONN;
    msg.session = wrk_sessions_number(&r->sessions, s);
    msg.uid = (uint32_t)s->uid;
    msg.gid = (uint32_t)s->gid;
    rc = gs_proto_relay_pack(&msg, inner, &packed);
    if (rc < 0)
        goto out;
    env.body_case = GS__ENVELOPE__BODY_CLI_RELAY;
    env.cli_relay = &msg;
    rc = r->send(&env, r->data);
out:
    gs_buf_release(&packed);
    return rc;
}

static void reply_error(struct gs_proto_conn *conn, uint64_t request_id, int code, const char *msg)
{
    Gs__ErrorReply err = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    err.code = code;
    err.message = (char *)msg;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &err;
    (void)gs_proto_conn_send(conn, &env);
}

static void on_cli_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct cli_peer *p = data;
    struct wrk_relay *r = p->r;
    char msg[192];
    int rc;

    if (r->local != NULL && !p->s->relayed && r->local(conn, env, p->s->uid, r->data))
        return;
    rc = relay_up(r, p->s, env);

    if (rc == 0) {
        p->s->relayed = true;
        return;
    }
    if (rc == -ENOTCONN)
        snprintf(msg, sizeof(msg),
                 "gsched-workerd on %s is not connected to gschedd right now; try again",
                 r->node_name);
    else if (rc == -EPROTONOSUPPORT)
        snprintf(msg, sizeof(msg),
                 "gschedd is too old to serve the gsched CLI through gsched-workerd on %s; "
                 "upgrade it, or run gsched where gschedd's socket is",
                 r->node_name);
    else
        snprintf(msg, sizeof(msg), "gsched-workerd on %s cannot relay this request: %s",
                 r->node_name, gs_strerror(rc));
    GS_LOG(GS_LOG_WARN, "session=%llu uid=%u body=%s rc=%d cli request not relayed",
           (unsigned long long)p->s->id, (unsigned)p->s->uid, gs_proto_body_name(env->body_case),
           rc);
    reply_error(conn, env->request_id, rc, msg);
    p->s->closing = true;
    gs_proto_conn_close(conn);
}

static void on_cli_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct cli_peer *p = data;
    struct wrk_relay *r = p->r;

    (void)conn;
    if (p->s != NULL) {
        /* gschedd keeps its side of a session it knows until told: a CLI that hung up
         * (srun interrupted) must end its step there too. */
        if (p->s->relayed && !p->s->ended_there)
            (void)relay_up(r, p->s, NULL);
        GS_LOG(GS_LOG_DEBUG, "session=%llu status=%d cli session ended",
               (unsigned long long)p->s->id, status);
        wrk_sessions_remove(&r->sessions, p->s);
    }
    free(p);
    release_handle(r);
}

/* The connecting process's uid and gid, from the kernel. */
static int peer_credentials(struct gs_proto_conn *conn, uid_t *uid, gid_t *gid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    uv_os_fd_t fd;

    if (uv_fileno((uv_handle_t *)gs_proto_conn_stream(conn), &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -EACCES;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct wrk_relay *r = server->data;
    struct cli_peer *p = calloc(1, sizeof(*p));
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_SCHEDULER, /* the CLI talks to gschedd through us */
        .name = "gsched-workerd",
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_CLI),
        .on_message = on_cli_message,
        .on_close = on_cli_close,
        .data = p,
    };
    struct gs_proto_conn *conn;
    uid_t uid;
    gid_t gid;

    if (status < 0 || p == NULL || r->closing) {
        free(p);
        return;
    }
    p->r = r;
    conn = gs_proto_conn_new(r->loop, GS_PROTO_PIPE, &opts);
    if (conn == NULL) {
        free(p);
        return;
    }
    r->open_handles++; /* until on_cli_close */
    if (uv_accept(server, gs_proto_conn_stream(conn)) < 0 ||
        peer_credentials(conn, &uid, &gid) < 0 ||
        (p->s = wrk_sessions_open(&r->sessions, conn, uid, gid)) == NULL ||
        gs_proto_conn_start(conn) < 0)
        gs_proto_conn_close(conn);
}

void wrk_relay_from_scheduler(struct wrk_relay *r, const Gs__CliRelay *msg)
{
    struct wrk_session *s = wrk_sessions_find(&r->sessions, msg->session);
    Gs__Envelope *inner = NULL;
    int rc;

    if (s == NULL || s->closing) { /* it ended here first; gschedd is told or will be */
        GS_LOG(GS_LOG_DEBUG, "session=%llu close=%d frame for an ended session dropped",
               (unsigned long long)msg->session, msg->close);
        return;
    }
    if (msg->close) {
        s->ended_there = s->closing = true;
        gs_proto_conn_close_linger(s->conn); /* after what is queued, hearing the CLI out */
        return;
    }
    rc = gs_proto_decode(msg->frame.data, msg->frame.len, &inner);
    if (rc == 0)
        rc = gs_proto_conn_send(s->conn, inner);
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN,
               "session=%llu bytes=%zu reason=%s relayed frame not delivered, "
               "closing the session",
               (unsigned long long)s->id, msg->frame.len, gs_proto_reason(rc));
        s->closing = true;
        gs_proto_conn_close(s->conn); /* on_cli_close tells gschedd */
    }
    gs_proto_envelope_free(inner);
}

void wrk_relay_set_connected(struct wrk_relay *r, bool connected)
{
    if (r == NULL || r->connected == connected)
        return;
    r->connected = connected;
    if (connected)
        return;
    /* gschedd's side of every session is gone with the connection (it closes them there):
     * the CLIs learn it from their sockets closing. A session that has relayed nothing yet
     * (no number) has no side there: it stays, and its first request is relayed once the
     * link is back or answered "not connected" (a CLI that connected just before the link
     * went down used to see its socket close under it, as live_fuzz's check did). */
    for (struct wrk_session *s = r->sessions.head; s != NULL; s = s->next) {
        if (!s->ended_there && s->id != 0) {
            s->ended_there = s->closing = true;
            GS_LOG(GS_LOG_INFO, "session=%llu uid=%u lost gschedd, closing the cli session",
                   (unsigned long long)s->id, (unsigned)s->uid);
            gs_proto_conn_close(s->conn);
        }
    }
}

size_t wrk_relay_sessions(const struct wrk_relay *r)
{
    return r != NULL ? wrk_sessions_count(&r->sessions) : 0;
}

const char *wrk_relay_path(const struct wrk_relay *r)
{
    return r->path;
}

static void on_listener_closed(uv_handle_t *handle)
{
    release_handle(handle->data);
}

void wrk_relay_close(struct wrk_relay *r, void (*closed)(void *data), void *data)
{
    if (r == NULL || r->closing)
        return;
    wrk_relay_set_connected(r, false);
    r->closing = true;
    r->closed = closed;
    r->closed_data = data;
    for (struct wrk_session *s = r->sessions.head; s != NULL; s = s->next) {
        s->closing = true;
        gs_proto_conn_close(s->conn);
    }
    uv_close((uv_handle_t *)&r->listener, on_listener_closed);
    unlink(r->path);
}

/* Whether a live process listens on path (a stale file from a crash accepts nobody).
 * Non-blocking: a blocking connect to a listener whose queue is full waits until it
 * accepts, which one that never does (stopped, or a leftover holding the socket) makes
 * forever; EAGAIN says someone listens. */
static bool someone_listens(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool live;

    if (fd < 0)
        return false;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    live = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 || errno == EAGAIN;
    close(fd);
    return live;
}

static int listen_at(struct wrk_relay *r, struct gs_error *err)
{
    int rc;

    if (someone_listens(r->path))
        return gs_error_set(err, -EADDRINUSE, 0, 0,
                            "cli socket %s: another process listens there (another worker "
                            "of this machine? give each its own --cli-socket)",
                            r->path);
    unlink(r->path);
    rc = uv_pipe_bind(&r->listener, r->path);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&r->listener, 128, on_connection);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "cli socket %s: %s", r->path, uv_strerror(rc));
    /* Anyone may connect: each request is judged by the caller's uid (SO_PEERCRED). */
    if (chmod(r->path, 0666) < 0)
        return gs_error_set(err, -errno, 0, 0, "cli socket %s: chmod: %s", r->path,
                            gs_strerror(-errno));
    return 0;
}

struct wrk_relay *wrk_relay_new(uv_loop_t *loop, const struct wrk_relay_opts *opts,
                                struct gs_error *err)
{
    struct wrk_relay *r;

    if (strlen(opts->path) >= sizeof(r->path)) {
        gs_error_set(err, -ENAMETOOLONG, 0, 0,
                     "cli socket %s is longer than a Unix socket path can be (107 bytes)",
                     opts->path);
        return NULL;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        return NULL;
    }
    r->loop = loop;
    snprintf(r->path, sizeof(r->path), "%s", opts->path);
    snprintf(r->node_name, sizeof(r->node_name), "%s", opts->node_name);
    r->send = opts->send;
    r->local = opts->local;
    r->data = opts->data;
    wrk_sessions_init(&r->sessions);
    uv_pipe_init(loop, &r->listener, 0);
    r->listener.data = r;
    r->open_handles = 1;
    if (listen_at(r, err) < 0) {
        r->closing = true; /* freed once the listener is closed; nothing to call back */
        uv_close((uv_handle_t *)&r->listener, on_listener_closed);
        return NULL;
    }
    return r;
}
