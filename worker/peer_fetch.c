/*
 * peer_fetch.c: shard ranges read from another worker's data port (see peer_fetch.h).
 *
 * The connection is a plain socket driven by proto/'s blocking helpers: connect with a
 * deadline (non-blocking connect, poll), gs_proto_handshake_fd_keyed(), then ShardRead out
 * and frames in with gs_proto_write_fd_sealed / gs_proto_read_fd_sealed (the link's seal),
 * each bounded by timeout_ms.
 *
 * Stream state. The connection remembers the file it last read (dataset, file) and `at`,
 * the offset of the next byte it would hand out. Bytes arrive in ShardData frames; the one
 * being taken apart is `pending` (its bytes from pending_pos on are at `at`). `active` says
 * a ShardRead's frames are still coming: the range [at, range_end) minus what pending
 * holds. A read at (dataset, file, at) takes pending, then further frames, then asks for
 * the next window; any other read drains the range in flight first. Every frame is checked
 * against that state: its request id, its offset (== at), its length (within the range and
 * the file), a file size that does not change within a range, and eof exactly at the
 * range's end; anything else is -EPROTO and the connection is dropped from use (`broken`).
 *
 * No global state; one thread at a time per connection.
 */
#include "worker/peer_fetch.h"

#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/frame.h"
#include "proto/handshake_fd.h"
#include "worker/peer.h"

#define DATASET_MAX 64
#define FILE_MAX 256
#define NAME_TEXT_MAX 64
#define SIZE_UNKNOWN UINT64_MAX

struct wrk_peer_fetch {
    int fd;
    int timeout_ms;
    int broken; /* 0, or the error that put the stream out of step */
    char peer[160];
    uint64_t last_request_id;
    /* the stream: see the top of this file */
    bool have_file; /* dataset, file and at describe where the stream stands */
    char dataset[DATASET_MAX];
    char file[FILE_MAX];
    uint64_t at;
    bool active;
    uint64_t request_id;
    uint64_t range_end;
    bool range_sized; /* a frame of this range has reported the file's size */
    bool size_known;  /* file_size is the current file's (else it is SIZE_UNKNOWN) */
    uint64_t file_size;
    Gs__Envelope *pending;
    size_t pending_pos;
    struct gs_proto_seal seal; /* the keyed link's, after the handshake */
};

/* Copies peer-supplied text for a message: printable ASCII only. */
static const char *safe_text(char *out, size_t size, const char *in)
{
    size_t i;

    for (i = 0; in != NULL && in[i] != '\0' && i + 1 < size; i++)
        out[i] = in[i] >= ' ' && in[i] <= '~' ? in[i] : '_';
    out[i] = '\0';
    return out;
}

static int timeout_or_default(int timeout_ms)
{
    return timeout_ms == 0 ? WRK_PEER_FETCH_TIMEOUT_DEFAULT_MS : timeout_ms;
}

/* ---- connecting ---- */

/* Waits for a non-blocking connect on fd. 0 or -errno. */
static int wait_connected(int fd, int timeout_ms)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    socklen_t len = sizeof(int);
    int n, wait_ms, so_error = 0;

    for (;;) {
        wait_ms = -1;
        if (timeout_ms >= 0) {
            uint64_t now = gs_clock_mono_ms();

            if (now >= deadline)
                return -ETIMEDOUT;
            wait_ms = (int)(deadline - now);
        }
        n = poll(&pfd, 1, wait_ms);
        if (n > 0)
            break;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) < 0)
        return -errno;
    return -so_error;
}

static int connect_one(const struct addrinfo *ai, int timeout_ms, int *ret_fd)
{
    int one = 1;
    int fd, rc = 0;

    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        rc = errno == EINPROGRESS ? wait_connected(fd, timeout_ms) : -errno;
        if (rc < 0)
            goto out;
    }
    /* A ShardRead is small and answered at once: no waiting for an ACK to send it. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    *ret_fd = fd;
    return 0;
out:
    close(fd);
    return rc;
}

static int connect_to(const char *host, uint16_t port, int timeout_ms, int *ret_fd,
                      struct gs_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL, *ai;
    char service[8];
    int rc;

    snprintf(service, sizeof(service), "%u", (unsigned)port);
    rc = getaddrinfo(host, service, &hints, &list);
    if (rc != 0)
        return gs_error_set(err, rc == EAI_MEMORY ? -ENOMEM : -EINVAL, 0, 0,
                            "peer %s:%u: cannot resolve the host: %s", host, (unsigned)port,
                            gai_strerror(rc));
    rc = -EADDRNOTAVAIL;
    for (ai = list; ai != NULL; ai = ai->ai_next) {
        rc = connect_one(ai, timeout_ms, ret_fd);
        if (rc == 0)
            break;
    }
    freeaddrinfo(list);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "peer %s:%u: cannot connect: %s", host, (unsigned)port,
                     gs_strerror(rc));
    return rc;
}

/* Maps a failed handshake to the codes peer_fetch.h promises, with a message. */
static int handshake_failed(struct wrk_peer_fetch *f, int rc, struct gs_error *err)
{
    switch (rc) {
    case GS_PROTO_ERR_REJECTED:
        return gs_error_set(err, -ECONNREFUSED, 0, 0, "peer %s: refused our hello", f->peer);
    case GS_PROTO_ERR_AUTH:
        return gs_error_set(err, -EKEYREJECTED, 0, 0,
                            "peer %s: authentication failed: the cluster keys differ, or only "
                            "one side has one",
                            f->peer);
    case GS_PROTO_ERR_VERSION:
        return gs_error_set(err, -EPROTONOSUPPORT, 0, 0,
                            "peer %s: speaks another protocol major than %u", f->peer,
                            GS_PROTO_VERSION_MAJOR);
    case GS_PROTO_ERR_HANDSHAKE:
    case GS_PROTO_ERR_ROLE:
        return gs_error_set(err, -EPROTO, 0, 0, "peer %s: not a gsched worker's data port (%s)",
                            f->peer, gs_proto_reason(rc));
    case GS_PROTO_ERR_PEER_CLOSED:
    case GS_PROTO_ERR_TRUNCATED:
        return gs_error_set(err, -ECONNRESET, 0, 0, "peer %s: closed during the handshake",
                            f->peer);
    default:
        return gs_error_set(err, rc, 0, 0, "peer %s: handshake: %s", f->peer, gs_strerror(rc));
    }
}

static int handshake(struct wrk_peer_fetch *f, const struct gs_proto_auth_key *key,
                     const char *our_name, struct gs_error *err)
{
    char name[NAME_TEXT_MAX];
    Gs__Envelope *hello = NULL;
    size_t len = strlen(f->peer);
    int rc;

    rc = gs_proto_handshake_fd_keyed(f->fd, GS__ROLE__ROLE_WORKER, our_name,
                                     GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER), key, f->timeout_ms,
                                     &hello, &f->seal);
    if (rc < 0)
        return handshake_failed(f, rc, err);
    snprintf(f->peer + len, sizeof(f->peer) - len, " (%s)",
             safe_text(name, sizeof(name), hello->hello->name));
    if (hello->hello->protocol_minor < GS_PROTO_MINOR_DATA)
        rc = gs_error_set(err, -EPROTONOSUPPORT, 0, 0,
                          "peer %s: speaks protocol %u.%u, shard transfer needs %u.%u", f->peer,
                          hello->hello->protocol_major, hello->hello->protocol_minor,
                          GS_PROTO_VERSION_MAJOR, GS_PROTO_MINOR_DATA);
    gs_proto_envelope_free(hello);
    return rc;
}

int wrk_peer_fetch_open(const char *host, uint16_t port, const struct gs_proto_auth_key *key,
                        const char *our_name, int timeout_ms, struct wrk_peer_fetch **ret,
                        struct gs_error *err)
{
    struct wrk_peer_fetch *f = calloc(1, sizeof(*f));
    int rc;

    if (f == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "peer %s:%u: out of memory", host, (unsigned)port);
    f->fd = -1;
    f->timeout_ms = timeout_or_default(timeout_ms);
    f->file_size = SIZE_UNKNOWN;
    snprintf(f->peer, sizeof(f->peer), "%s:%u", host, (unsigned)port);
    rc = connect_to(host, port, f->timeout_ms, &f->fd, err);
    if (rc == 0)
        rc = handshake(f, key, our_name != NULL ? our_name : "", err);
    if (rc < 0) {
        wrk_peer_fetch_close(f);
        return rc;
    }
    *ret = f;
    return 0;
}

void wrk_peer_fetch_close(struct wrk_peer_fetch *f)
{
    if (f == NULL)
        return;
    gs_proto_envelope_free(f->pending);
    gs_proto_seal_clear(&f->seal);
    if (f->fd >= 0)
        close(f->fd);
    free(f);
}

uint64_t wrk_peer_fetch_file_size(const struct wrk_peer_fetch *f)
{
    return f->file_size;
}

const char *wrk_peer_fetch_peer(const struct wrk_peer_fetch *f)
{
    return f->peer;
}

/* ---- frames ---- */

/* Puts the connection out of use with code and a message. Returns code. */
static int break_stream(struct wrk_peer_fetch *f, int code, struct gs_error *err, const char *what)
{
    f->broken = code;
    f->active = false;
    return gs_error_set(err, code, 0, 0, "peer %s: %s", f->peer, what);
}

/* An I/O or framing error of gs_proto_read_fd / gs_proto_write_fd. */
static int io_failed(struct wrk_peer_fetch *f, int rc, struct gs_error *err)
{
    char what[96];

    switch (rc) {
    case GS_PROTO_ERR_PEER_CLOSED:
    case GS_PROTO_ERR_TRUNCATED:
    case -ECONNRESET:
        return break_stream(f, -ECONNRESET, err, "closed the connection");
    case -EPIPE:
        return break_stream(f, -EPIPE, err, "closed the connection");
    case -ETIMEDOUT:
        snprintf(what, sizeof(what), "sent nothing for %d ms", f->timeout_ms);
        return break_stream(f, -ETIMEDOUT, err, what);
    case GS_PROTO_ERR_OVERSIZED:
    case GS_PROTO_ERR_EMPTY:
    case GS_PROTO_ERR_MALFORMED:
    case GS_PROTO_ERR_UNKNOWN:
        snprintf(what, sizeof(what), "sent a bad frame (%s)", gs_proto_reason(rc));
        return break_stream(f, -EPROTO, err, what);
    default:
        snprintf(what, sizeof(what), "connection failed: %s", gs_strerror(rc));
        return break_stream(f, rc, err, what);
    }
}

/* The end the current range's eof must reach: the range's, or the file's when shorter. */
static uint64_t range_stop(const struct wrk_peer_fetch *f)
{
    return f->range_end < f->file_size ? f->range_end : f->file_size;
}

/* Checks a ShardData against the stream; 0 or -EPROTO with err set. */
static int check_data(struct wrk_peer_fetch *f, const Gs__ShardData *d, struct gs_error *err)
{
    char what[160];

    if (f->range_sized && d->file_size != f->file_size)
        snprintf(what, sizeof(what), "file size changed from %" PRIu64 " to %" PRIu64, f->file_size,
                 d->file_size);
    else if (d->offset != f->at)
        snprintf(what, sizeof(what), "sent offset %" PRIu64 " where %" PRIu64 " was due", d->offset,
                 f->at);
    else if (d->file_size < f->at || d->data.len > d->file_size - f->at ||
             d->data.len > f->range_end - f->at)
        snprintf(what, sizeof(what), "sent %zu bytes at %" PRIu64 " beyond the range or file",
                 d->data.len, d->offset);
    else if (!d->eof && d->data.len == 0)
        snprintf(what, sizeof(what), "sent an empty piece at %" PRIu64, d->offset);
    else
        return 0;
    return break_stream(f, -EPROTO, err, what);
}

static int take_data(struct wrk_peer_fetch *f, Gs__Envelope *env, struct gs_error *err)
{
    const Gs__ShardData *d = env->shard_data;
    int rc = check_data(f, d, err);

    if (rc < 0)
        goto out;
    f->file_size = d->file_size;
    f->size_known = f->range_sized = true;
    if (d->eof && d->offset + d->data.len != range_stop(f)) {
        rc = break_stream(f, -EPROTO, err, "ended the range early");
        goto out;
    }
    if (d->eof)
        f->active = false;
    if (d->data.len > 0) {
        f->pending = env;
        f->pending_pos = 0;
        env = NULL;
    }
out:
    gs_proto_envelope_free(env);
    return rc;
}

static int take_error(struct wrk_peer_fetch *f, const Gs__ErrorReply *reply, struct gs_error *err)
{
    char text[GS_ERROR_MSG_MAX];
    int code = reply->code < 0 ? reply->code : -EIO;

    f->active = false; /* the peer ends the range with its ErrorReply */
    return gs_error_set(err, code, 0, 0, "peer %s: %s", f->peer,
                        safe_text(text, sizeof(text), reply->message));
}

/*
 * Reads the next frame of the active range: pending set (data), active cleared (eof), or
 * an error: the peer's ErrorReply (range over, connection usable), else the stream broken.
 */
static int next_frame(struct wrk_peer_fetch *f, struct gs_error *err)
{
    Gs__Envelope *env = NULL;
    int rc;

    rc = gs_proto_read_fd_sealed(f->fd, WRK_PEER_MAX_FRAME, f->timeout_ms, &f->seal, &env);
    if (rc < 0)
        return io_failed(f, rc, err);
    if (env->request_id != f->request_id)
        rc = break_stream(f, -EPROTO, err, "answered another request");
    else if (env->body_case == GS__ENVELOPE__BODY_SHARD_DATA)
        return take_data(f, env, err); /* takes env */
    else if (env->body_case == GS__ENVELOPE__BODY_ERROR)
        rc = take_error(f, env->error, err);
    else if (env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT)
        rc = break_stream(f, -ECONNREFUSED, err, "refused the connection");
    else
        rc = break_stream(f, -EPROTO, err, "sent something other than shard data");
    gs_proto_envelope_free(env);
    return rc;
}

/* Drops what is left of pending, as taken: at moves past it. */
static void drop_pending(struct wrk_peer_fetch *f)
{
    if (f->pending == NULL)
        return;
    f->at += f->pending->shard_data->data.len - f->pending_pos;
    gs_proto_envelope_free(f->pending);
    f->pending = NULL;
    f->pending_pos = 0;
}

/* Asks for [at, at + max(want, window)) of the current file. */
static int request_range(struct wrk_peer_fetch *f, size_t want, struct gs_error *err)
{
    Gs__ShardRead req = GS__SHARD_READ__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    uint64_t length = want > WRK_PEER_FETCH_WINDOW ? want : WRK_PEER_FETCH_WINDOW;
    int rc;

    if (length > UINT64_MAX - f->at)
        length = UINT64_MAX - f->at;
    req.dataset = f->dataset;
    req.file = f->file;
    req.offset = f->at;
    req.length = length;
    env.request_id = ++f->last_request_id;
    env.body_case = GS__ENVELOPE__BODY_SHARD_READ;
    env.shard_read = &req;
    rc = gs_proto_write_fd_sealed(f->fd, &env, f->timeout_ms, &f->seal);
    if (rc < 0)
        return io_failed(f, rc, err);
    f->request_id = env.request_id;
    f->range_end = f->at + length;
    f->range_sized = false;
    f->active = true;
    return 0;
}

/* Ends the stream in flight (its frames read and dropped) and points it at a new place. */
static int seek(struct wrk_peer_fetch *f, const char *dataset, const char *file, uint64_t offset,
                struct gs_error *err)
{
    int rc;

    drop_pending(f);
    while (f->active) {
        rc = next_frame(f, err);
        if (rc < 0 && f->broken)
            return rc;
        drop_pending(f); /* an ErrorReply for the old range ends it too: nothing to report */
    }
    if (!f->have_file || strcmp(f->dataset, dataset) != 0 || strcmp(f->file, file) != 0) {
        f->file_size = SIZE_UNKNOWN;
        f->size_known = false;
    }
    snprintf(f->dataset, sizeof(f->dataset), "%s", dataset);
    snprintf(f->file, sizeof(f->file), "%s", file);
    f->at = offset;
    f->have_file = true;
    return 0;
}

/* Moves up to len bytes of pending into buf. Returns the count. */
static size_t copy_pending(struct wrk_peer_fetch *f, uint8_t *buf, size_t len)
{
    const ProtobufCBinaryData *data = &f->pending->shard_data->data;
    size_t n = data->len - f->pending_pos;

    if (n > len)
        n = len;
    memcpy(buf, data->data + f->pending_pos, n);
    f->pending_pos += n;
    f->at += n;
    if (f->pending_pos == data->len)
        drop_pending(f);
    return n;
}

int wrk_peer_fetch_read(struct wrk_peer_fetch *f, const char *dataset, const char *file,
                        uint64_t offset, void *buf, size_t len, size_t *ret_got,
                        struct gs_error *err)
{
    size_t got = 0;
    int rc;

    if (f->broken)
        return gs_error_set(err, -ENOTCONN, 0, 0, "peer %s: connection unusable after: %s", f->peer,
                            gs_strerror(f->broken));
    if (strlen(dataset) >= sizeof(f->dataset) || strlen(file) >= sizeof(f->file))
        return gs_error_set(err, -EINVAL, 0, 0, "peer %s: dataset or file name too long", f->peer);
    if (!f->have_file || f->at != offset || strcmp(f->dataset, dataset) != 0 ||
        strcmp(f->file, file) != 0) {
        rc = seek(f, dataset, file, offset, err);
        if (rc < 0)
            return rc;
    }
    while (got < len) {
        if (f->pending != NULL) {
            got += copy_pending(f, (uint8_t *)buf + got, len - got);
            continue;
        }
        if (!f->active && f->size_known && f->at == f->file_size)
            break; /* the end of the file */
        rc = f->active ? next_frame(f, err) : request_range(f, len - got, err);
        if (rc < 0)
            return rc;
    }
    *ret_got = got;
    return 0;
}

int wrk_peer_fetch_reader(uint64_t offset, void *buf, size_t len, size_t *ret_got,
                          struct gs_error *err, void *data)
{
    const struct wrk_peer_fetch_reader *r = data;

    return wrk_peer_fetch_read(r->fetch, r->dataset, r->file, offset, buf, len, ret_got, err);
}
