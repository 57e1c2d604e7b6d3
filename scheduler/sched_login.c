/*
 * sched_login.c: CLIs on login nodes, over TCP on scheduler.cli_port (0: no such port).
 * Nothing on this port is taken on the peer's word: its Hello must carry a MUNGE credential
 * made for this connection's nonce (proto/cred.h), and the uid and gid gschedd's own munged
 * decodes from it become the caller's, where SO_PEERCRED's are on the Unix socket. From
 * then on the connection is an ordinary sched_cli, served by sched_cli.c's dispatch.
 *
 * munge_decode blocks on munged's socket, so it runs on libuv's pool (uv_queue_work); the
 * pool thread touches only its struct login_decode, and the result is applied on the loop
 * thread in its after-work callback. Meanwhile the CLI's request (sent right after its Hello)
 * is kept, copied, and dispatched once the credential has passed. The connection's record
 * is held (sched_cli_hold) while a decode is out, so a peer that hangs up meanwhile frees
 * nothing the callback still needs.
 *
 * A refused credential (none, invalid or another key's, expired, replayed, not for this
 * connection) is answered with an ErrorReply (request id 0) saying why, logged as one
 * warning with reason=, and the connection closed. Connections on this port count under
 * scheduler.max_connections from their accept, and under max_connections_per_user once
 * their uid is known.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/cred.h"
#include "scheduler/sched_internal.h"

/* One credential on its way through munged. The loop thread fills it and reads the result;
 * between uv_queue_work and decode_done only the pool thread touches it. */
struct login_decode {
    uv_work_t req;
    struct sched_cli *cli; /* held until decode_done */
    char *socket_path;     /* a copy: the configuration is the loop's */
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    uint8_t *cred;
    size_t len;
    int rc; /* results */
    struct gs_proto_cred_id id;
    enum gs_proto_cred_fault fault;
    char why[200];
};

static void decode_free(struct login_decode *d)
{
    if (d == NULL)
        return;
    free(d->socket_path);
    free(d->cred);
    free(d);
}

/* The refusal: logged, answered with why, the connection closed. */
static void refuse(struct sched_cli *c, enum gs_proto_cred_fault fault, int code, const char *why)
{
    char msg[320], logged[200];
    size_t i;

    /* libmunge quotes paths in its messages: single quotes keep the log line's error="". */
    for (i = 0; why[i] != '\0' && i + 1 < sizeof(logged); i++)
        logged[i] = why[i] == '"' ? '\'' : why[i];
    logged[i] = '\0';
    GS_LOG(GS_LOG_WARN, "peer=%s reason=%s error=\"%s\" login cli refused",
           c->conn != NULL ? gs_proto_conn_peer(c->conn) : "gone", gs_proto_cred_fault_name(fault),
           logged);
    if (fault == GS_PROTO_CRED_MISSING)
        snprintf(msg, sizeof(msg),
                 "this gschedd port takes gsched CLIs with a MUNGE credential only, and none "
                 "came");
    else if (fault == GS_PROTO_CRED_UNREACHABLE || fault == GS_PROTO_CRED_ERROR)
        snprintf(msg, sizeof(msg), "gschedd cannot check MUNGE credentials: %s", why);
    else
        snprintf(msg, sizeof(msg), "MUNGE credential refused: %s", why);
    sched_cli_error(c, 0, code, msg, false);
}

static void decode_work(uv_work_t *req)
{
    struct login_decode *d = req->data;

    d->rc = gs_proto_cred_decode(d->socket_path, d->cred, d->len, d->nonce, &d->id, &d->fault,
                                 d->why, sizeof(d->why));
}

/* The credential passed: the caller is known; its request, if it came, is served now. */
static void authenticated(struct sched_cli *c, const struct gs_proto_cred_id *id)
{
    Gs__Envelope *held = c->login_held;

    c->uid = (uid_t)id->uid;
    c->gid = (gid_t)id->gid;
    c->authenticating = false;
    c->login_held = NULL;
    GS_LOG(GS_LOG_DEBUG, "peer=%s uid=%u gid=%u login cli authenticated",
           gs_proto_conn_peer(c->conn), (unsigned)c->uid, (unsigned)c->gid);
    if (sched_cli_over_limits(c->s, c)) {
        sched_cli_error(c, held != NULL ? held->request_id : 0, -EAGAIN,
                        "too many connections to gschedd: try again later", false);
    } else if (held != NULL) {
        c->asked = true;
        sched_cli_dispatch(c, held);
    }
    gs_proto_envelope_free(held);
}

static void decode_done(uv_work_t *req, int status)
{
    struct login_decode *d = req->data;
    struct sched_cli *c = d->cli;

    /* Let go first: dispatch refuses a connection that is busy. A closed record is freed
     * here, and nothing else is done with it. */
    if (c->closed) {
        sched_cli_unhold(c);
        goto out;
    }
    sched_cli_unhold(c);
    if (status < 0) /* cancelled: the loop is closing */
        sched_cli_close(c);
    else if (d->rc < 0)
        refuse(c, d->fault, d->rc, d->why);
    else
        authenticated(c, &d->id);
out:
    decode_free(d);
}

static void on_login_ready(struct gs_proto_conn *conn, const Gs__Hello *hello, void *data)
{
    struct sched_cli *c = data;
    const uint8_t *nonce = gs_proto_conn_nonce(conn);
    struct login_decode *d = NULL;
    const char *socket_path = c->s->cfg->munge_socket;

    if (hello->credential.len == 0) {
        refuse(c, GS_PROTO_CRED_MISSING, -EACCES, "no credential in the hello");
        return;
    }
    d = calloc(1, sizeof(*d));
    if (d == NULL || nonce == NULL || (d->cred = malloc(hello->credential.len)) == NULL ||
        (socket_path != NULL && (d->socket_path = strdup(socket_path)) == NULL)) {
        refuse(c, GS_PROTO_CRED_ERROR, -ENOMEM, "out of memory");
        goto out_free;
    }
    memcpy(d->cred, hello->credential.data, hello->credential.len);
    d->len = hello->credential.len;
    memcpy(d->nonce, nonce, sizeof(d->nonce));
    d->cli = c;
    d->req.data = d;
    if (uv_queue_work(c->s->loop, &d->req, decode_work, decode_done) < 0) {
        refuse(c, GS_PROTO_CRED_ERROR, -EIO, "cannot queue the credential's check");
        goto out_free;
    }
    sched_cli_hold(c);
    return;
out_free:
    decode_free(d);
}

/* A copy of a borrowed envelope (packed and unpacked again), or NULL. */
static Gs__Envelope *envelope_copy(const Gs__Envelope *env)
{
    struct gs_buf frame = GS_BUF_INIT;
    Gs__Envelope *copy = NULL;

    if (gs_proto_encode(env, &frame) == 0)
        (void)gs_proto_decode(frame.data + GS_PROTO_HEADER_SIZE, frame.len - GS_PROTO_HEADER_SIZE,
                              &copy);
    gs_buf_release(&frame);
    return copy;
}

static void on_login_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct sched_cli *c = data;

    (void)conn;
    if (!c->authenticating) {
        c->asked = true;
        sched_cli_dispatch(c, env);
        return;
    }
    /* One request per connection: a second before the first is served is refused, as
     * sched_cli_dispatch would. */
    if (c->login_held != NULL) {
        sched_cli_error(c, env->request_id, -EBUSY, "one request per connection", false);
        return;
    }
    c->login_held = envelope_copy(env);
    if (c->login_held == NULL)
        sched_cli_error(c, env->request_id, -ENOMEM, "out of memory", false);
}

static void on_login_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct sched_cli *c = data;

    (void)conn;
    (void)status;
    gs_proto_envelope_free(c->login_held);
    c->login_held = NULL;
    sched_cli_gone(c);
}

static void on_login_connection(uv_stream_t *server, int status)
{
    struct sched_ctx *s = server->data;
    struct gs_proto_conn_opts opts = {
        .hello_nonce = true, /* what the CLI's credential must name */
        .on_ready = on_login_ready,
        .on_message = on_login_message,
        .on_close = on_login_close,
    };
    struct sched_cli *c;

    if (status < 0 || s->stopping || (c = sched_cli_new(s, GS_PROTO_TCP, &opts)) == NULL)
        return;
    c->uid = (uid_t)-1; /* nobody's until the credential says */
    c->gid = (gid_t)-1;
    c->authenticating = true;
    if (uv_accept(server, gs_proto_conn_stream(c->conn)) < 0 || sched_cli_over_limits(s, c) ||
        gs_proto_conn_start(c->conn) < 0)
        gs_proto_conn_close(c->conn);
}

int sched_login_listen(struct sched_ctx *s, const struct gs_config *cfg, struct gs_error *err)
{
    struct sockaddr_storage addr;
    int rc;

    if (cfg->cli_port == 0)
        return 0;
    if (!gs_proto_cred_available())
        return gs_error_set(err, -EPROTONOSUPPORT, 0, 0,
                            "scheduler.cli_port = %u: this gschedd was built without libmunge, "
                            "which CLIs on login nodes authenticate with (install libmunge-dev "
                            "and build again, or leave cli_port at 0)",
                            cfg->cli_port);
    rc = uv_ip4_addr(cfg->host, (int)cfg->cli_port, (struct sockaddr_in *)&addr);
    if (rc < 0)
        rc = uv_ip6_addr(cfg->host, (int)cfg->cli_port, (struct sockaddr_in6 *)&addr);
    if (rc < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "scheduler.host '%s' is not an IP address",
                            cfg->host);
    rc = uv_tcp_bind(&s->login, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->login, 128, on_login_connection);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "scheduler.cli_port: listen on %s:%u: %s", cfg->host,
                            cfg->cli_port, uv_strerror(rc));
    GS_LOG(GS_LOG_INFO, "cli_port=%u munge_socket=%s login-node clis taken", cfg->cli_port,
           cfg->munge_socket != NULL ? cfg->munge_socket : "default");
    return 0;
}
