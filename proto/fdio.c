/*
 * fdio.c: frames over a blocking (or non-blocking) file descriptor, for clients without an
 * event loop: the CLI's one request per connection to gschedd's Unix socket.
 *
 * Every wait goes through poll() against one monotonic deadline per call, so a peer that
 * stops mid-frame costs at most the timeout. Writes use send(MSG_NOSIGNAL) so a vanished
 * peer is -EPIPE rather than a SIGPIPE that kills the CLI; a non-socket descriptor falls
 * back to write(). Reads take the header first and then exactly the announced payload, so
 * nothing beyond the frame is consumed from the descriptor.
 *
 * The _sealed variants seal what they write and open what they read with a keyed link's seal
 * (proto/seal.h), once its sending or receiving is on.
 *
 * No global state; any thread, one caller per descriptor.
 */
#include "proto/frame.h"
#include "proto/seal.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"

#define NO_DEADLINE UINT64_MAX

static uint64_t deadline_after(int timeout_ms)
{
    return timeout_ms < 0 ? NO_DEADLINE : gs_clock_mono_ms() + (uint64_t)timeout_ms;
}

/* Waits until fd is ready for events or the deadline passes. Returns 0 or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    uint64_t now;
    int timeout, n;

    for (;;) {
        timeout = -1;
        if (deadline != NO_DEADLINE) {
            now = gs_clock_mono_ms();
            if (now >= deadline)
                return -ETIMEDOUT;
            timeout = deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
        }
        n = poll(&pfd, 1, timeout);
        if (n > 0)
            return 0; /* readable, writable, or an error the next call reports */
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

static ssize_t write_some(int fd, const char *p, size_t n)
{
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

    if (w < 0 && errno == ENOTSOCK)
        w = write(fd, p, n);
    return w;
}

static int write_all(int fd, const char *p, size_t n, uint64_t deadline)
{
    ssize_t w;
    int rc;

    while (n > 0) {
        rc = wait_fd(fd, POLLOUT, deadline);
        if (rc < 0)
            return rc;
        w = write_some(fd, p, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int gs_proto_write_fd(int fd, const Gs__Envelope *env, int timeout_ms)
{
    return gs_proto_write_fd_sealed(fd, env, timeout_ms, NULL);
}

int gs_proto_write_fd_sealed(int fd, const Gs__Envelope *env, int timeout_ms,
                             struct gs_proto_seal *seal)
{
    struct gs_buf frame = GS_BUF_INIT;
    int rc;

    rc = gs_proto_encode(env, &frame);
    if (rc == 0 && seal != NULL && seal->sending)
        rc = gs_proto_seal_frame(seal, &frame, 0);
    if (rc < 0)
        goto out;
    rc = write_all(fd, frame.data, frame.len, deadline_after(timeout_ms));
out:
    gs_buf_release(&frame);
    return rc;
}

/* Reads up to n bytes, fewer only at end of stream. Stores the count in *ret_got. */
static int read_full(int fd, uint8_t *p, size_t n, uint64_t deadline, size_t *ret_got)
{
    size_t got = 0;
    ssize_t r;
    int rc;

    while (got < n) {
        rc = wait_fd(fd, POLLIN, deadline);
        if (rc < 0)
            return rc;
        r = read(fd, p + got, n - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *ret_got = got;
    return 0;
}

static int read_length(int fd, uint32_t max_frame, uint64_t deadline, uint32_t *ret_len)
{
    uint8_t header[GS_PROTO_HEADER_SIZE];
    uint32_t len;
    size_t got;
    int rc;

    rc = read_full(fd, header, sizeof(header), deadline, &got);
    if (rc < 0)
        return rc;
    if (got == 0)
        return GS_PROTO_ERR_PEER_CLOSED;
    if (got < sizeof(header))
        return GS_PROTO_ERR_TRUNCATED;
    len = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 |
          (uint32_t)header[3];
    if (len == 0)
        return GS_PROTO_ERR_EMPTY;
    if (len > max_frame)
        return GS_PROTO_ERR_OVERSIZED;
    *ret_len = len;
    return 0;
}

int gs_proto_read_fd(int fd, uint32_t max_frame, int timeout_ms, Gs__Envelope **ret_env)
{
    return gs_proto_read_fd_sealed(fd, max_frame, timeout_ms, NULL, ret_env);
}

int gs_proto_read_fd_sealed(int fd, uint32_t max_frame, int timeout_ms, struct gs_proto_seal *seal,
                            Gs__Envelope **ret_env)
{
    uint64_t deadline = deadline_after(timeout_ms);
    uint8_t *payload = NULL;
    uint32_t len;
    size_t got, plen;
    int rc;

    rc = read_length(fd, max_frame > 0 ? max_frame : GS_PROTO_MAX_FRAME_DEFAULT, deadline, &len);
    if (rc < 0)
        goto out;
    payload = malloc(len);
    if (payload == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    rc = read_full(fd, payload, len, deadline, &got);
    if (rc < 0)
        goto out;
    if (got < len) {
        rc = GS_PROTO_ERR_TRUNCATED;
        goto out;
    }
    plen = len;
    if (seal != NULL && seal->receiving)
        rc = gs_proto_seal_open(seal, payload, plen, &plen);
    if (rc == 0)
        rc = gs_proto_decode(payload, plen, ret_env);
out:
    free(payload);
    return rc;
}

int gs_proto_read_hello_fd(int fd, uint32_t accept_roles, int timeout_ms, Gs__Envelope **ret_peer)
{
    Gs__Envelope *peer = NULL;
    int rc = gs_proto_read_fd(fd, 0, timeout_ms, &peer);

    if (rc < 0)
        return rc;
    if (peer->body_case == GS__ENVELOPE__BODY_HELLO_REJECT)
        rc = GS_PROTO_ERR_REJECTED;
    else if (peer->body_case != GS__ENVELOPE__BODY_HELLO)
        rc = GS_PROTO_ERR_HANDSHAKE;
    else
        rc = gs_proto_hello_check(peer->hello, accept_roles);
    if (rc < 0) {
        gs_proto_envelope_free(peer);
        return rc;
    }
    *ret_peer = peer;
    return 0;
}

int gs_proto_handshake_fd(int fd, Gs__Role role, const char *name, uint32_t accept_roles,
                          int timeout_ms, Gs__Envelope **ret_peer)
{
    Gs__Envelope hello_env = GS__ENVELOPE__INIT;
    Gs__Envelope *peer = NULL;
    Gs__Hello hello;
    int rc;

    gs_proto_hello_init(&hello, role, name);
    hello_env.body_case = GS__ENVELOPE__BODY_HELLO;
    hello_env.hello = &hello;
    rc = gs_proto_write_fd(fd, &hello_env, timeout_ms);
    if (rc == 0)
        rc = gs_proto_read_hello_fd(fd, accept_roles, timeout_ms, &peer);
    if (rc == 0 && ret_peer != NULL) {
        *ret_peer = peer;
        peer = NULL;
    }
    gs_proto_envelope_free(peer);
    return rc;
}
