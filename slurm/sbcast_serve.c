/*
 * sbcast_serve.c: the sender's side of sbcast (sbcast.h): every receiver that connects is a
 * client in a poll loop, each moved through its phases (its token, the header, the file,
 * its answer) as its socket allows, so that N nodes fetch the file side by side and a
 * stranger that connects and says nothing holds only its own connection, until its timeout.
 * The file goes out with sendfile(2) from one descriptor, each client at its own offset.
 */
#define _GNU_SOURCE /* accept4 */

#include "slurm/sbcast.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"

#define SBCAST_CLIENTS_MAX 1024
#define SBCAST_CHUNK (4u << 20) /* a sendfile at a time: others get their turn */

enum phase { P_TOKEN, P_HEADER, P_FILE, P_ANSWER };

struct client {
    int fd;
    enum phase phase;
    char line[SBCAST_LINE_MAX];
    size_t len;       /* bytes of line read (P_TOKEN, P_ANSWER) or header written (P_HEADER) */
    off_t off;        /* of the file sent */
    uint64_t last_ms; /* the last progress */
};

struct server {
    int src;
    const struct stat *st;
    const char *token;
    char header[128];
    size_t header_len;
    uint64_t timeout_ms;
    struct client c[SBCAST_CLIENTS_MAX];
    size_t n;
    bool failed; /* a receiver that proved the token did not answer ok */
};

static void drop(struct server *s, size_t i, bool failed)
{
    close(s->c[i].fd);
    s->failed |= failed;
    s->c[i] = s->c[--s->n];
}

/* Reads what has come of a line; 1 when it is whole (newline cut), 0 not yet, -1 gone. */
static int read_some(struct client *c)
{
    while (c->len < sizeof(c->line)) {
        ssize_t r = read(c->fd, c->line + c->len, 1);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (r == 0)
            return -1;
        if (c->line[c->len] == '\n') {
            c->line[c->len] = '\0';
            return 1;
        }
        c->len++;
    }
    return -1; /* longer than any line of ours */
}

/* Moves client i on as far as its socket allows; false when it is done (dropped). */
static bool step(struct server *s, size_t i)
{
    struct client *c = &s->c[i];
    int r;

    switch (c->phase) {
    case P_TOKEN:
        if ((r = read_some(c)) == 0)
            return true;
        if (r < 0 || strlen(c->line) != SBCAST_TOKEN_HEX ||
            !gs_proto_auth_equal((const uint8_t *)c->line, (const uint8_t *)s->token,
                                 SBCAST_TOKEN_HEX)) {
            drop(s, i, false); /* not one of ours; its node's receiver will say so */
            return false;
        }
        c->phase = P_HEADER;
        c->len = 0;
        return step(s, i); /* the socket has room for the header, most likely */
    case P_HEADER: {
        ssize_t w = write(c->fd, s->header + c->len, s->header_len - c->len);

        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            drop(s, i, true);
            return false;
        }
        c->len += w > 0 ? (size_t)w : 0;
        if (c->len < s->header_len)
            return true;
        c->phase = P_FILE;
        c->len = 0;
        return true;
    }
    case P_FILE: {
        off_t left = s->st->st_size - c->off;
        ssize_t w = left > 0 ? sendfile(c->fd, s->src, &c->off,
                                        left < SBCAST_CHUNK ? (size_t)left : SBCAST_CHUNK)
                             : 0;

        if ((w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
            (w == 0 && left > 0)) { /* the receiver went, or the source shrank */
            drop(s, i, true);
            return false;
        }
        if (c->off >= s->st->st_size)
            c->phase = P_ANSWER;
        return true;
    }
    case P_ANSWER:
        if ((r = read_some(c)) == 0)
            return true;
        drop(s, i, r < 0 || strcmp(c->line, "ok") != 0);
        return false;
    }
    return true;
}

static void accept_all(struct server *s, int lfd)
{
    int fd;

    while (s->n < SBCAST_CLIENTS_MAX &&
           (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
        s->c[s->n++] = (struct client){.fd = fd, .last_ms = gs_clock_mono_ms()};
}

/* One turn: waits up to 100 ms for any socket, then moves every ready client on. */
static void turn(struct server *s, int lfd)
{
    struct pollfd p[SBCAST_CLIENTS_MAX + 1];
    uint64_t now;
    size_t n = s->n;

    p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (size_t i = 0; i < n; i++)
        p[i + 1] = (struct pollfd){
            .fd = s->c[i].fd,
            .events = s->c[i].phase == P_TOKEN || s->c[i].phase == P_ANSWER ? POLLIN : POLLOUT};
    if (poll(p, n + 1, 100) < 0)
        return;
    now = gs_clock_mono_ms();
    /* From the last: a client dropped takes the last one's place, already seen. */
    for (size_t i = n; i-- > 0;) {
        if (p[i + 1].revents != 0) {
            s->c[i].last_ms = now;
            step(s, i);
        } else if (now - s->c[i].last_ms > s->timeout_ms) {
            drop(s, i, s->c[i].phase != P_TOKEN);
        }
    }
    if (p[0].revents & POLLIN)
        accept_all(s, lfd);
}

int sbcast_serve(int lfd, pid_t pid, int src, const struct stat *st, const char *token,
                 unsigned timeout_s)
{
    struct server *s = calloc(1, sizeof(*s));
    int status = 0, rc = 1;

    if (s == NULL)
        return 1;
    s->src = src;
    s->st = st;
    s->token = token;
    s->timeout_ms = (uint64_t)timeout_s * 1000;
    s->header_len = (size_t)snprintf(s->header, sizeof(s->header), "%jd %o %lld %ld %lld %ld\n",
                                     (intmax_t)st->st_size, (unsigned)(st->st_mode & 07777),
                                     (long long)st->st_atim.tv_sec, st->st_atim.tv_nsec,
                                     (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    for (;;) {
        pid_t done;

        turn(s, lfd);
        done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        if (done < 0 && errno != EINTR)
            goto out;
    }
    /* The step is over: every receiver has answered or gone (what is left is dropped below). */
    rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !s->failed ? 0 : 1;
out:
    while (s->n > 0)
        drop(s, s->n - 1, false);
    free(s);
    return rc;
}
