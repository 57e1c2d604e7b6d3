/*
 * gschedd.c: one exchange with gschedd from inside a job (see gschedd.h). The socket is
 * non-blocking from the start, so that even a connect to a listener whose backlog is full
 * fails at once instead of holding the caller; every later wait is against one deadline.
 */
#define _POSIX_C_SOURCE 200809L

#include "trainer/gschedd.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"

_Static_assert(TRN_GSCHEDD_PATH_MAX == sizeof(((struct sockaddr_un *)0)->sun_path),
               "TRN_GSCHEDD_PATH_MAX is sun_path's size");

int trn_gschedd_job(uint64_t *ret_job_id, char *socket_path, size_t size)
{
    const char *id = getenv("GSCHED_JOB_ID"), *sock = getenv("GSCHED_SOCKET");
    unsigned long long job_id;
    char *end;

    if (id == NULL || id[0] == '\0' || sock == NULL || sock[0] == '\0')
        return -ENOENT;
    errno = 0;
    job_id = strtoull(id, &end, 10);
    /* Not a job id to act for, or a path no Unix socket can have: not in a job. */
    if (errno != 0 || *end != '\0' || job_id == 0 || strlen(sock) >= TRN_GSCHEDD_PATH_MAX ||
        strlen(sock) >= size)
        return -ENOENT;
    memcpy(socket_path, sock, strlen(sock) + 1);
    *ret_job_id = job_id;
    return 0;
}

/* Milliseconds left before deadline, at least 1 so that a last poll still looks. */
static int left_ms(uint64_t deadline)
{
    uint64_t now = gs_clock_mono_ms();

    if (now + 1 >= deadline)
        return 1;
    return deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

static int connect_nonblocking(const char *path, uint64_t deadline)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    struct pollfd pfd;
    socklen_t len = sizeof(int);
    int fd, err = 0, rc = 0;

    if (strlen(path) >= sizeof(sun.sun_path))
        return -ENAMETOOLONG;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
        return fd;
    if (errno != EINPROGRESS) { /* EAGAIN: the listener's backlog is full; give up now */
        rc = -errno;
        goto out;
    }
    pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
    rc = poll(&pfd, 1, left_ms(deadline));
    if (rc == 0)
        rc = -ETIMEDOUT;
    else if (rc < 0)
        rc = -errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        rc = -errno;
    else
        rc = err != 0 ? -err : 0;
out:
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Hello both ways; the peer must speak protocol 1.min_minor or later. */
static int handshake(int fd, uint32_t min_minor, uint64_t deadline, char *why, size_t size)
{
    Gs__Envelope *peer = NULL;
    int rc;

    rc = gs_proto_handshake_fd(fd, GS__ROLE__ROLE_CLI, "gsched-train",
                               GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), left_ms(deadline),
                               &peer);
    if (rc < 0) {
        snprintf(why, size, "%s", gs_proto_reason(rc));
    } else if (peer->hello->protocol_minor < min_minor) {
        /* It would take the new message for a broken peer and hang up on us. */
        rc = -EPROTONOSUPPORT;
        snprintf(why, size, "%s speaks protocol %u.%u, this needs %u.%u or later",
                 peer->hello->name, peer->hello->protocol_major, peer->hello->protocol_minor,
                 GS_PROTO_VERSION_MAJOR, min_minor);
    }
    gs_proto_envelope_free(peer);
    return rc;
}

/* The reply as the caller wants it: 0, or the refusal's code, or -EPROTO for another kind. */
static int take_reply(const Gs__Envelope *reply, Gs__Envelope__BodyCase want, bool *ret_refused,
                      char *why, size_t size)
{
    if (reply->body_case == GS__ENVELOPE__BODY_ERROR) {
        snprintf(why, size, "%s", reply->error->message);
        if (ret_refused != NULL)
            *ret_refused = true;
        return reply->error->code < 0 ? reply->error->code : -EIO;
    }
    if (reply->body_case != want) {
        snprintf(why, size, "unexpected %s reply", gs_proto_body_name(reply->body_case));
        return -EPROTO;
    }
    return 0;
}

int trn_gschedd_call(const char *socket_path, Gs__Envelope *req, Gs__Envelope__BodyCase want,
                     uint32_t min_minor, int timeout_ms, Gs__Envelope **ret_reply,
                     bool *ret_refused, char *why, size_t size)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1);
    Gs__Envelope *reply = NULL;
    int fd, rc;

    snprintf(why, size, "%s", "");
    if (ret_refused != NULL)
        *ret_refused = false;
    req->request_id = 1;
    fd = connect_nonblocking(socket_path, deadline);
    if (fd < 0) {
        snprintf(why, size, "cannot connect: %s", gs_strerror(fd));
        return fd;
    }
    rc = handshake(fd, min_minor, deadline, why, size);
    if (rc < 0)
        goto out;
    rc = gs_proto_write_fd(fd, req, left_ms(deadline));
    if (rc == 0)
        rc = gs_proto_read_fd(fd, 0, left_ms(deadline), &reply);
    if (rc < 0) {
        snprintf(why, size, "%s", gs_proto_reason(rc));
        goto out;
    }
    rc = take_reply(reply, want, ret_refused, why, size);
    if (rc == 0) {
        *ret_reply = reply;
        reply = NULL;
    }
out:
    gs_proto_envelope_free(reply);
    close(fd);
    return rc;
}
