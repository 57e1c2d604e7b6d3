/*
 * server.c: the CLI's TCP path to gschedd from a login node (see server.h): the address,
 * a connect bounded in time (an unreachable host would otherwise hold the CLI for the
 * kernel's two minutes of SYN retries), and the handshake that carries the MUNGE credential.
 *
 * The handshake differs from the Unix socket's in one way: we read gschedd's Hello before
 * sending ours, because our credential names the nonce in it. The request still follows our
 * Hello at once; gschedd keeps it until the credential has passed.
 */
#define _GNU_SOURCE /* getaddrinfo, struct addrinfo under -std=c11 */

#include "cli/server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "proto/cred.h"
#include "proto/frame.h"

static int copy_part(char *out, size_t size, const char *from, size_t len)
{
    if (len >= size)
        return -ENAMETOOLONG;
    memcpy(out, from, len);
    out[len] = '\0';
    return 0;
}

int cli_server_split(const char *addr, char *host, size_t host_size, char *port, size_t port_size)
{
    const char *colon, *host_start = addr;
    size_t host_len;
    unsigned long n;
    char *end;
    int rc;

    if (addr[0] == '[') { /* [IPV6]:PORT */
        const char *close = strchr(addr, ']');

        if (close == NULL || close[1] != ':')
            return -EINVAL;
        host_start = addr + 1;
        host_len = (size_t)(close - host_start);
        colon = close + 1;
    } else {
        colon = strchr(addr, ':');
        if (colon == NULL || strchr(colon + 1, ':') != NULL)
            return -EINVAL; /* no port, or an IPv6 address without brackets */
        host_len = (size_t)(colon - addr);
    }
    if (host_len == 0 || colon[1] < '0' || colon[1] > '9')
        return -EINVAL;
    errno = 0;
    n = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || errno != 0 || n == 0 || n > 65535)
        return -EINVAL;
    rc = copy_part(host, host_size, host_start, host_len);
    if (rc == 0)
        rc = copy_part(port, port_size, colon + 1, strlen(colon + 1));
    return rc;
}

/* Connects fd to ai within the deadline; fd is left blocking again. 0 or -errno. */
static int connect_until(int fd, const struct addrinfo *ai, uint64_t deadline)
{
    int flags = fcntl(fd, F_GETFL), err = 0;
    socklen_t len = sizeof(err);
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};

    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS)
            return -errno;
        for (;;) {
            uint64_t now = gs_clock_mono_ms();
            int n;

            if (now >= deadline)
                return -ETIMEDOUT;
            n = poll(&pfd, 1, (int)(deadline - now));
            if (n > 0)
                break;
            if (n < 0 && errno != EINTR)
                return -errno;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            return -errno;
        if (err != 0)
            return -err;
    }
    return fcntl(fd, F_SETFL, flags) < 0 ? -errno : 0;
}

int cli_server_connect(const char *addr, int timeout_ms)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *list = NULL;
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)timeout_ms;
    char host[256], port[8];
    int rc, fd = -1;

    rc = cli_server_split(addr, host, sizeof(host), port, sizeof(port));
    if (rc < 0)
        return -EINVAL;
    rc = getaddrinfo(host, port, &hints, &list);
    if (rc != 0)
        return rc == EAI_MEMORY ? -ENOMEM : rc == EAI_SYSTEM ? -errno : CLI_ERR_NO_HOST;
    rc = -EHOSTUNREACH;
    /* Each address in turn, as getaddrinfo orders them, until one answers. */
    for (const struct addrinfo *ai = list; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        rc = connect_until(fd, ai, deadline);
        if (rc == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(list);
    return fd >= 0 ? fd : rc;
}

bool cli_server_fd(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return false;
    return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

/* Our Hello with the credential for gschedd's nonce. 0, -errno or CLI_ERR_LOGIN (printed). */
static int send_hello(int fd, const Gs__Hello *peer, int timeout_ms)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;
    char *cred = NULL, why[256] = "";
    int rc;

    if (peer->auth_nonce.len != GS_PROTO_AUTH_NONCE_SIZE) {
        /* A gschedd port that asks for no credential: not its cli_port. */
        fprintf(stderr, "gsched: that address is not gschedd's scheduler.cli_port (no challenge "
                        "in its hello)\n");
        return CLI_ERR_LOGIN;
    }
    rc = gs_proto_cred_encode(getenv("GSCHED_MUNGE_SOCKET"), peer->auth_nonce.data, &cred, why,
                              sizeof(why));
    if (rc < 0) {
        fprintf(stderr, "gsched: munge: %s\n", why);
        return CLI_ERR_LOGIN;
    }
    gs_proto_hello_init(&hello, GS__ROLE__ROLE_CLI, "gsched");
    hello.credential.data = (uint8_t *)cred;
    hello.credential.len = strlen(cred);
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    rc = gs_proto_write_fd(fd, &env, timeout_ms);
    free(cred);
    return rc;
}

int cli_server_hello(int fd, int timeout_ms, uint32_t *ret_minor)
{
    Gs__Envelope *peer = NULL;
    int rc;

    rc = gs_proto_read_hello_fd(fd, GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_SCHEDULER), timeout_ms, &peer);
    if (rc < 0)
        return rc;
    *ret_minor = peer->hello->protocol_minor;
    rc = send_hello(fd, peer->hello, timeout_ms);
    gs_proto_envelope_free(peer);
    return rc;
}
