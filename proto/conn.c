/*
 * conn.c: a protocol connection on a libuv stream: hello handshake, frame decoding, a write
 * queue, and closing that never takes the process down with it.
 *
 * A connection owns two handles, its stream and one timer. The timer first bounds the
 * handshake, then, once closing has begun, bounds the flush of queued writes (uv_shutdown
 * waits for them, which is how a reply or HelloReject still reaches the peer when we close
 * right after sending it). The object is freed when the second handle's close callback has
 * run, after on_close; never inside one of its own read or write callbacks. Each write owns
 * its frame buffer, freed in its write callback, which libuv runs (with UV_ECANCELED if need
 * be) before the stream's close callback.
 *
 * A keyed connection (proto/auth.h) has one more state between the peer's Hello and ready:
 * the peer's Hello is kept, our proof is sent, and the only frame taken next is the peer's
 * AuthProof (or a HelloReject); the handshake timer runs until it has been checked. Every
 * frame we send after our proof is sealed, encrypted and tagged (proto/seal.h), and every
 * frame after the peer's proof must be: the decoder opens them, and a bad tag closes the
 * connection. An
 * unkeyed connection may still send a nonce in its Hello (opts.hello_nonce): a challenge the
 * peer's credential answers, checked by the owner (gschedd's login-node port), not here.
 *
 * Reading uses one buffer per connection: libuv calls alloc and read in pairs for a stream.
 * Text that comes from the peer (its name, a reject message) is made log-safe before it is
 * printed, so a peer cannot forge log lines.
 *
 * Loop thread only.
 */
#include "proto/conn.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/seal.h"

#define READ_BUF_SIZE (64u * 1024u)
#define PEER_NAME_MAX 64
#define LOG_TEXT_MAX 96

struct gs_proto_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } io;
    uv_timer_t timer;
    uv_shutdown_t shutdown_req;
    enum gs_proto_transport transport;
    struct gs_proto_conn_opts opts; /* name and peer_name point at the copies below */
    char *name;
    char peer[PEER_NAME_MAX];
    struct gs_proto_decoder dec;
    char *read_buf;
    Gs__Envelope *peer_hello;      /* the accepted Hello, kept for gs_proto_conn_peer_hello() */
    struct gs_proto_auth_key *key; /* NULL: not keyed */
    uint8_t nonce[GS_PROTO_AUTH_NONCE_SIZE];
    struct gs_proto_seal seal; /* keyed: on from our proof (sending), the peer's (receiving) */
    bool proof_sent;           /* keyed: our AuthProof is out (the peer's Hello came) */
    bool proof_wait;           /* keyed: the peer's Hello is in peer_hello; its proof is next */
    int status;                /* what on_close will get */
    int open_handles;
    bool started;
    bool ready;
    bool closing;
    bool handles_closing;
    bool linger;   /* closing: reads on, discarded, until the peer's end (close_linger) */
    bool shut;     /* closing: what was queued is flushed (or could not be) */
    bool peer_end; /* closing with linger: the peer's end (or a read error) came */
};

struct write_req {
    uv_write_t req;
    struct gs_proto_conn *conn;
    char *frame;
};

static void close_with(struct gs_proto_conn *conn, int status);

/* Copies peer-supplied text for a log line: printable ASCII only, no spaces or quotes. */
static const char *log_text(char *out, size_t size, const char *in)
{
    size_t i;

    for (i = 0; in != NULL && in[i] != '\0' && i + 1 < size; i++)
        out[i] = in[i] > ' ' && in[i] <= '~' && in[i] != '"' ? in[i] : '_';
    out[i] = '\0';
    return out;
}

static void apply_defaults(struct gs_proto_conn_opts *opts)
{
    if (opts->max_frame == 0)
        opts->max_frame = GS_PROTO_MAX_FRAME_DEFAULT;
    if (opts->handshake_timeout_ms == 0)
        opts->handshake_timeout_ms = GS_PROTO_HANDSHAKE_TIMEOUT_DEFAULT_MS;
    if (opts->close_timeout_ms == 0)
        opts->close_timeout_ms = GS_PROTO_CLOSE_TIMEOUT_DEFAULT_MS;
    if (opts->max_write_queue == 0)
        opts->max_write_queue = GS_PROTO_WRITE_QUEUE_DEFAULT;
}

static void conn_free(struct gs_proto_conn *conn)
{
    gs_proto_decoder_release(&conn->dec);
    gs_proto_seal_clear(&conn->seal);
    gs_proto_envelope_free(conn->peer_hello);
    if (conn->key != NULL)
        gs_proto_auth_key_clear(conn->key);
    free(conn->key);
    free(conn->read_buf);
    free(conn->name);
    free(conn);
}

static void on_handle_closed(uv_handle_t *handle)
{
    struct gs_proto_conn *conn = handle->data;

    if (--conn->open_handles > 0)
        return;
    if (conn->opts.on_close != NULL)
        conn->opts.on_close(conn, conn->status, conn->opts.data);
    conn_free(conn);
}

static int init_handles(struct gs_proto_conn *conn, uv_loop_t *loop)
{
    int rc;

    if (conn->transport == GS_PROTO_TCP)
        rc = uv_tcp_init(loop, &conn->io.tcp);
    else
        rc = uv_pipe_init(loop, &conn->io.pipe, 0);
    if (rc < 0)
        return rc;
    conn->io.handle.data = conn;
    conn->open_handles = 1;
    rc = uv_timer_init(loop, &conn->timer);
    if (rc < 0)
        return rc;
    conn->timer.data = conn;
    conn->open_handles = 2;
    return 0;
}

struct gs_proto_conn *gs_proto_conn_new(uv_loop_t *loop, enum gs_proto_transport transport,
                                        const struct gs_proto_conn_opts *opts)
{
    struct gs_proto_conn *conn = calloc(1, sizeof(*conn));

    if (conn == NULL)
        return NULL;
    conn->transport = transport;
    conn->opts = *opts;
    apply_defaults(&conn->opts);
    conn->name = strdup(opts->name != NULL ? opts->name : "");
    conn->read_buf = malloc(READ_BUF_SIZE);
    if (conn->name == NULL || conn->read_buf == NULL)
        goto out_free;
    conn->opts.auth_key = NULL; /* borrowed: the copy below is what counts */
    if (opts->auth_key != NULL && opts->auth_key->len > 0) {
        conn->key = malloc(sizeof(*conn->key));
        if (conn->key == NULL)
            goto out_free;
        *conn->key = *opts->auth_key;
    }
    conn->opts.name = conn->name;
    snprintf(conn->peer, sizeof(conn->peer), "%s", opts->peer_name != NULL ? opts->peer_name : "");
    conn->opts.peer_name = conn->peer;
    gs_proto_decoder_init(&conn->dec, conn->opts.max_frame);
    conn->dec.seal = &conn->seal; /* opens nothing until the peer's proof turns it on */
    if (init_handles(conn, loop) == 0)
        return conn;
    if (conn->open_handles == 0)
        goto out_free;
    /* The stream is live on the loop: it must be closed, and frees conn when it is. */
    conn->opts.on_close = NULL;
    uv_close(&conn->io.handle, on_handle_closed);
    return NULL;
out_free:
    conn_free(conn);
    return NULL;
}

uv_stream_t *gs_proto_conn_stream(struct gs_proto_conn *conn)
{
    return &conn->io.stream;
}

bool gs_proto_conn_is_ready(const struct gs_proto_conn *conn)
{
    return conn->ready && !conn->closing;
}

const Gs__Hello *gs_proto_conn_peer_hello(const struct gs_proto_conn *conn)
{
    return conn->peer_hello != NULL ? conn->peer_hello->hello : NULL;
}

const uint8_t *gs_proto_conn_nonce(const struct gs_proto_conn *conn)
{
    return conn->started && (conn->key != NULL || conn->opts.hello_nonce) ? conn->nonce : NULL;
}

const char *gs_proto_conn_peer(const struct gs_proto_conn *conn)
{
    return conn->peer;
}

void gs_proto_conn_set_data(struct gs_proto_conn *conn, void *data)
{
    conn->opts.data = data;
}

/* ---- closing ---- */

static void close_handles(struct gs_proto_conn *conn)
{
    if (conn->handles_closing)
        return;
    conn->handles_closing = true;
    uv_close(&conn->io.handle, on_handle_closed);
    uv_close((uv_handle_t *)&conn->timer, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct gs_proto_conn *conn = req->data;

    (void)status; /* flushed or not, the connection goes now, */
    conn->shut = true;
    if (!conn->linger || conn->peer_end) /* or once the peer is done sending */
        close_handles(conn);
}

static void on_close_deadline(uv_timer_t *timer)
{
    struct gs_proto_conn *conn = timer->data;

    GS_LOG(GS_LOG_DEBUG, "peer=%s unflushed=%zu flush_timeout", conn->peer,
           uv_stream_get_write_queue_size(&conn->io.stream));
    close_handles(conn);
}

/* Starts closing: stop reading (unless lingering), flush queued writes (bounded), then close
 * the handles. */
static void close_with(struct gs_proto_conn *conn, int status)
{
    if (conn->closing)
        return;
    conn->closing = true;
    conn->status = status;
    uv_timer_stop(&conn->timer);
    if (conn->started) {
        if (!conn->linger)
            uv_read_stop(&conn->io.stream);
        conn->shutdown_req.data = conn;
        if (uv_shutdown(&conn->shutdown_req, &conn->io.stream, on_shutdown) == 0) {
            uv_timer_start(&conn->timer, on_close_deadline, conn->opts.close_timeout_ms, 0);
            return;
        }
    }
    close_handles(conn);
}

void gs_proto_conn_close(struct gs_proto_conn *conn)
{
    if (conn != NULL)
        close_with(conn, 0);
}

void gs_proto_conn_close_linger(struct gs_proto_conn *conn)
{
    if (conn == NULL || conn->closing)
        return;
    conn->linger = conn->started; /* before the handshake there is nothing to wait for */
    close_with(conn, 0);
}

/* A lingering close heard the peer's end (or a read error): it may go now. */
static void linger_done(struct gs_proto_conn *conn)
{
    conn->peer_end = true;
    uv_read_stop(&conn->io.stream);
    if (conn->shut)
        close_handles(conn);
}

/* ---- writing ---- */

static void on_write(uv_write_t *req, int status)
{
    struct write_req *wr = (struct write_req *)req;
    struct gs_proto_conn *conn = wr->conn;

    free(wr->frame);
    free(wr);
    if (status < 0 && !conn->closing) {
        GS_LOG(GS_LOG_WARN, "peer=%s reason=write_error err=%s closing", conn->peer,
               uv_err_name(status));
        close_with(conn, status);
    }
}

static int write_frame(struct gs_proto_conn *conn, struct gs_buf *frame)
{
    struct write_req *wr = malloc(sizeof(*wr));
    uv_buf_t buf;
    size_t len;
    int rc;

    if (wr == NULL)
        return -ENOMEM;
    wr->conn = conn;
    wr->frame = gs_buf_detach(frame, &len);
    if (wr->frame == NULL) {
        free(wr);
        return -ENOMEM;
    }
    buf = uv_buf_init(wr->frame, (unsigned)len);
    rc = uv_write(&wr->req, &conn->io.stream, &buf, 1, on_write);
    if (rc < 0) {
        free(wr->frame);
        free(wr);
    }
    return rc;
}

/* Packs env and queues it; the checks every frame we send passes. */
static int queue_frame(struct gs_proto_conn *conn, const Gs__Envelope *env)
{
    struct gs_buf frame = GS_BUF_INIT;
    int rc;

    if (uv_stream_get_write_queue_size(&conn->io.stream) > conn->opts.max_write_queue)
        return -ENOBUFS;
    rc = gs_proto_encode(env, &frame);
    if (rc < 0)
        goto out;
    if (frame.len - GS_PROTO_HEADER_SIZE + (conn->seal.sending ? GS_PROTO_SEAL_TAG_SIZE : 0) >
        conn->opts.max_frame) {
        rc = -EMSGSIZE;
        goto out;
    }
    if (conn->seal.sending)
        rc = gs_proto_seal_frame(&conn->seal, &frame, 0);
    if (rc == 0)
        rc = write_frame(conn, &frame);
out:
    gs_buf_release(&frame);
    return rc;
}

int gs_proto_conn_send(struct gs_proto_conn *conn, const Gs__Envelope *env)
{
    if (conn->closing)
        return -EPIPE;
    if (!conn->started)
        return -ENOTCONN;
    if (env->body_case == GS__ENVELOPE__BODY_HELLO ||
        env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT ||
        env->body_case == GS__ENVELOPE__BODY_AUTH_PROOF)
        return -EINVAL;
    if (conn->key != NULL && !conn->proof_sent)
        return -ENOTCONN; /* it would reach the peer before our proof */
    return queue_frame(conn, env);
}

static int send_hello(struct gs_proto_conn *conn)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;

    gs_proto_hello_init(&hello, conn->opts.role, conn->name);
    if (conn->key != NULL || conn->opts.hello_nonce) {
        int rc = gs_proto_auth_nonce(conn->nonce);

        if (rc < 0)
            return rc;
        hello.auth_nonce.data = conn->nonce;
        hello.auth_nonce.len = sizeof(conn->nonce);
    }
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    return queue_frame(conn, &env);
}

static Gs__RejectReason reject_reason(int code)
{
    switch (code) {
    case GS_PROTO_ERR_VERSION:
        return GS__REJECT_REASON__REJECT_REASON_VERSION;
    case GS_PROTO_ERR_ROLE:
        return GS__REJECT_REASON__REJECT_REASON_ROLE;
    case GS_PROTO_ERR_HANDSHAKE:
        return GS__REJECT_REASON__REJECT_REASON_BAD_MAGIC;
    case GS_PROTO_ERR_AUTH:
        return GS__REJECT_REASON__REJECT_REASON_AUTH;
    default:
        return GS__REJECT_REASON__REJECT_REASON_NOT_HELLO;
    }
}

/* Best effort: the connection closes whether or not the reject gets out. */
static void send_reject(struct gs_proto_conn *conn, Gs__RejectReason reason, const char *why)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__HelloReject reject = GS__HELLO_REJECT__INIT;
    char message[128];

    snprintf(message, sizeof(message), "%s; this side speaks protocol %u.%u", why,
             GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR);
    reject.reason = reason;
    reject.message = message;
    reject.protocol_major = GS_PROTO_VERSION_MAJOR;
    reject.protocol_minor = GS_PROTO_VERSION_MINOR;
    env.body_case = GS__ENVELOPE__BODY_HELLO_REJECT;
    env.hello_reject = &reject;
    (void)queue_frame(conn, &env);
}

/* ---- reading ---- */

static void log_frame_error(struct gs_proto_conn *conn, int rc)
{
    const struct gs_proto_decoder *dec = &conn->dec;

    if (rc == GS_PROTO_ERR_OVERSIZED)
        GS_LOG(GS_LOG_WARN, "peer=%s reason=oversized_frame len=%u max=%u closing", conn->peer,
               dec->frame_len, dec->max_frame);
    else if (rc == GS_PROTO_ERR_EMPTY || rc == GS_PROTO_ERR_MALFORMED || rc == GS_PROTO_ERR_UNKNOWN)
        GS_LOG(GS_LOG_WARN, "peer=%s reason=%s len=%u closing", conn->peer, gs_proto_reason(rc),
               dec->frame_len);
    else
        GS_LOG(GS_LOG_WARN, "peer=%s reason=%s closing", conn->peer, gs_proto_reason(rc));
}

static void on_rejected(struct gs_proto_conn *conn, const Gs__HelloReject *reject)
{
    char text[LOG_TEXT_MAX];

    GS_LOG(GS_LOG_WARN, "peer=%s reason=rejected_by_peer reject=%d message=%s closing", conn->peer,
           (int)reject->reason, log_text(text, sizeof(text), reject->message));
    close_with(conn, GS_PROTO_ERR_REJECTED);
}

static void refuse_hello(struct gs_proto_conn *conn, const Gs__Hello *hello, int rc)
{
    char name[LOG_TEXT_MAX];

    GS_LOG(GS_LOG_WARN,
           "peer=%s reason=%s magic=0x%08x peer_protocol=%u.%u protocol=%u.%u role=%s "
           "name=%s closing",
           conn->peer, gs_proto_reason(rc), (unsigned)hello->magic, hello->protocol_major,
           hello->protocol_minor, GS_PROTO_VERSION_MAJOR, GS_PROTO_VERSION_MINOR,
           gs_proto_role_name(hello->role), log_text(name, sizeof(name), hello->name));
    send_reject(conn, reject_reason(rc),
                rc == GS_PROTO_ERR_VERSION ? "protocol version differs (a keyed link needs 1.12)"
                : rc == GS_PROTO_ERR_ROLE  ? "role not accepted here"
                : rc == GS_PROTO_ERR_AUTH  ? "this link needs the cluster key (scheduler.auth_key)"
                                           : "not a gsched hello");
    close_with(conn, rc);
}

/* The connection is ready: the peer's Hello (in peer_hello) accepted, and proven if keyed. */
static void become_ready(struct gs_proto_conn *conn)
{
    const Gs__Hello *hello = conn->peer_hello->hello;
    char name[LOG_TEXT_MAX];

    GS_LOG(GS_LOG_DEBUG, "peer=%s role=%s name=%s protocol=%u.%u%s hello", conn->peer,
           gs_proto_role_name(hello->role), log_text(name, sizeof(name), hello->name),
           hello->protocol_major, hello->protocol_minor, conn->key != NULL ? " authenticated" : "");
    uv_timer_stop(&conn->timer);
    conn->proof_wait = false;
    conn->ready = true;
    if (conn->opts.on_ready != NULL)
        conn->opts.on_ready(conn, hello, conn->opts.data);
}

/* Keyed: our proof for the peer's Hello. */
static int send_proof(struct gs_proto_conn *conn, const Gs__Hello *peer)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__AuthProof proof = GS__AUTH_PROOF__INIT;
    uint8_t mac[GS_PROTO_AUTH_PROOF_SIZE];
    int rc = gs_proto_auth_proof(conn->key, conn->opts.role, conn->name, conn->nonce,
                                 peer->auth_nonce.data, mac);

    if (rc < 0)
        return rc;
    proof.mac.data = mac;
    proof.mac.len = sizeof(mac);
    env.body_case = GS__ENVELOPE__BODY_AUTH_PROOF;
    env.auth_proof = &proof;
    rc = queue_frame(conn, &env);
    if (rc == 0)
        rc = gs_proto_seal_init(&conn->seal, conn->key, conn->nonce, peer->auth_nonce.data);
    if (rc == 0) {
        conn->seal.sending = true; /* every frame after the proof */
        conn->proof_sent = true;
    }
    return rc;
}

/* A Hello that passed gs_proto_hello_check. Takes env. */
static void accept_hello(struct gs_proto_conn *conn, Gs__Envelope *env)
{
    const Gs__Hello *hello = env->hello;
    int rc;

    conn->peer_hello = env;
    if (conn->key == NULL) {
        become_ready(conn);
        return;
    }
    rc = send_proof(conn, hello);
    if (rc < 0) {
        GS_LOG(GS_LOG_WARN, "peer=%s reason=auth_failed error=%s closing", conn->peer,
               strerror(-rc));
        close_with(conn, rc);
        return;
    }
    conn->proof_wait = true; /* the timer still runs: the proof must come in time */
}

/* Keyed: the frame after the peer's Hello must prove it holds the key. Takes env. */
static void check_proof(struct gs_proto_conn *conn, Gs__Envelope *env)
{
    const Gs__Hello *hello = conn->peer_hello->hello;
    uint8_t want[GS_PROTO_AUTH_PROOF_SIZE];
    char name[LOG_TEXT_MAX];
    int rc;

    if (env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT) {
        on_rejected(conn, env->hello_reject);
        gs_proto_envelope_free(env);
        return;
    }
    rc = env->body_case != GS__ENVELOPE__BODY_AUTH_PROOF ||
                 env->auth_proof->mac.len != GS_PROTO_AUTH_PROOF_SIZE
             ? GS_PROTO_ERR_AUTH
             : gs_proto_auth_proof(conn->key, hello->role, hello->name, hello->auth_nonce.data,
                                   conn->nonce, want);
    if (rc == 0 && !gs_proto_auth_equal(want, env->auth_proof->mac.data, sizeof(want)))
        rc = GS_PROTO_ERR_AUTH;
    if (rc == 0) {
        gs_proto_envelope_free(env);
        conn->seal.receiving = true; /* every frame after the peer's proof */
        become_ready(conn);
        return;
    }
    GS_LOG(GS_LOG_WARN, "peer=%s reason=auth_failed role=%s name=%s got=%s closing", conn->peer,
           gs_proto_role_name(hello->role), log_text(name, sizeof(name), hello->name),
           env->body_case == GS__ENVELOPE__BODY_AUTH_PROOF ? "wrong_proof"
                                                           : gs_proto_body_name(env->body_case));
    gs_proto_envelope_free(env);
    close_with(conn, rc < 0 ? rc : GS_PROTO_ERR_AUTH);
}

/* Keyed: the peer's Hello must carry a nonce of the right size, not ours echoed, and come
 * from a version that seals its frames (else nothing would hold it to). */
static int check_nonce(const struct gs_proto_conn *conn, const Gs__Hello *hello)
{
    if (conn->key == NULL)
        return 0;
    if (hello->protocol_minor < GS_PROTO_MINOR_CRYPT)
        return GS_PROTO_ERR_VERSION;
    if (hello->auth_nonce.len != GS_PROTO_AUTH_NONCE_SIZE ||
        memcmp(hello->auth_nonce.data, conn->nonce, GS_PROTO_AUTH_NONCE_SIZE) == 0)
        return GS_PROTO_ERR_AUTH;
    return 0;
}

/* The first frame: a Hello we accept, else the connection ends. Takes env. */
static void handshake(struct gs_proto_conn *conn, Gs__Envelope *env)
{
    int rc;

    switch (env->body_case) {
    case GS__ENVELOPE__BODY_HELLO:
        rc = gs_proto_hello_check(env->hello, conn->opts.accept_roles);
        if (rc == 0)
            rc = check_nonce(conn, env->hello);
        if (rc == 0) {
            accept_hello(conn, env);
            return;
        }
        refuse_hello(conn, env->hello, rc);
        break;
    case GS__ENVELOPE__BODY_HELLO_REJECT:
        on_rejected(conn, env->hello_reject);
        break;
    default:
        GS_LOG(GS_LOG_WARN, "peer=%s reason=bad_hello first=%s closing", conn->peer,
               gs_proto_body_name(env->body_case));
        send_reject(conn, GS__REJECT_REASON__REJECT_REASON_NOT_HELLO, "first frame not a hello");
        close_with(conn, GS_PROTO_ERR_HANDSHAKE);
        break;
    }
    gs_proto_envelope_free(env);
}

/* A frame after the handshake. Takes env. */
static void deliver(struct gs_proto_conn *conn, Gs__Envelope *env)
{
    switch (env->body_case) {
    case GS__ENVELOPE__BODY_HELLO:
    case GS__ENVELOPE__BODY_AUTH_PROOF:
        GS_LOG(GS_LOG_WARN, "peer=%s reason=bad_hello second_%s closing", conn->peer,
               gs_proto_body_name(env->body_case));
        close_with(conn, GS_PROTO_ERR_HANDSHAKE);
        break;
    case GS__ENVELOPE__BODY_HELLO_REJECT:
        on_rejected(conn, env->hello_reject);
        break;
    default:
        if (conn->opts.on_message != NULL)
            conn->opts.on_message(conn, env, conn->opts.data);
        break;
    }
    gs_proto_envelope_free(env);
}

static void feed(struct gs_proto_conn *conn, const uint8_t *data, size_t len)
{
    Gs__Envelope *env;
    int rc;

    while (!conn->closing) {
        rc = gs_proto_decoder_next(&conn->dec, &data, &len, &env);
        if (rc == 0)
            return;
        if (rc < 0) {
            log_frame_error(conn, rc);
            close_with(conn, rc);
            return;
        }
        if (conn->ready)
            deliver(conn, env);
        else if (conn->proof_wait)
            check_proof(conn, env);
        else
            handshake(conn, env);
    }
}

static void on_eof(struct gs_proto_conn *conn)
{
    const struct gs_proto_decoder *dec = &conn->dec;

    if (gs_proto_decoder_finish(dec) == 0) {
        GS_LOG(GS_LOG_DEBUG, "peer=%s reason=peer_closed closing", conn->peer);
        close_with(conn, GS_PROTO_ERR_PEER_CLOSED);
        return;
    }
    GS_LOG(GS_LOG_WARN, "peer=%s reason=truncated_frame have=%zu want=%u closing", conn->peer,
           gs_proto_decoder_buffered(dec),
           dec->header_len < GS_PROTO_HEADER_SIZE ? GS_PROTO_HEADER_SIZE
                                                  : GS_PROTO_HEADER_SIZE + dec->frame_len);
    close_with(conn, GS_PROTO_ERR_TRUNCATED);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    struct gs_proto_conn *conn = handle->data;

    (void)suggested;
    *buf = uv_buf_init(conn->read_buf, READ_BUF_SIZE);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct gs_proto_conn *conn = stream->data;

    if (conn->closing) { /* lingering: what comes now is dropped, up to the peer's end */
        if (nread < 0)
            linger_done(conn);
        return;
    }
    if (nread > 0) {
        feed(conn, (const uint8_t *)buf->base, (size_t)nread);
    } else if (nread == UV_EOF) {
        on_eof(conn);
    } else if (nread < 0) {
        GS_LOG(GS_LOG_WARN, "peer=%s reason=read_error err=%s closing", conn->peer,
               uv_err_name((int)nread));
        close_with(conn, (int)nread);
    }
}

/* ---- starting ---- */

static void on_handshake_timeout(uv_timer_t *timer)
{
    struct gs_proto_conn *conn = timer->data;

    GS_LOG(GS_LOG_WARN, "peer=%s reason=handshake_timeout after_ms=%u closing", conn->peer,
           conn->opts.handshake_timeout_ms);
    close_with(conn, GS_PROTO_ERR_TIMEOUT);
}

/* Names the peer by its TCP address when the owner gave no name. */
static void name_peer(struct gs_proto_conn *conn)
{
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    char host[48] = "unknown"; /* INET6_ADDRSTRLEN */
    unsigned port = 0;

    if (conn->peer[0] != '\0')
        return;
    if (conn->transport == GS_PROTO_PIPE) {
        snprintf(conn->peer, sizeof(conn->peer), "local");
        return;
    }
    if (uv_tcp_getpeername(&conn->io.tcp, (struct sockaddr *)&addr, &len) == 0) {
        if (addr.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
        } else if (addr.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
        }
    }
    snprintf(conn->peer, sizeof(conn->peer), "%s:%u", host, port);
}

int gs_proto_conn_start(struct gs_proto_conn *conn)
{
    int rc;

    if (conn->started || conn->closing)
        return -EINVAL;
    conn->started = true;
    name_peer(conn);
    /* Frames are small and answered at once: Nagle's wait for an ACK that the peer delays
     * would add 40 ms to every exchange. */
    if (conn->transport == GS_PROTO_TCP)
        uv_tcp_nodelay(&conn->io.tcp, 1);
    rc = uv_timer_start(&conn->timer, on_handshake_timeout, conn->opts.handshake_timeout_ms, 0);
    if (rc < 0)
        return rc;
    rc = uv_read_start(&conn->io.stream, on_alloc, on_read);
    if (rc < 0)
        return rc;
    return send_hello(conn);
}
