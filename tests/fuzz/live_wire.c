/*
 * live_wire.c: live_fuzz's connections to the daemons (live.h): non-blocking sockets whose
 * every wait has a deadline, bytes written exactly as given (broken frames included), the
 * peer's frames read through proto/frame.h's incremental decoder, the keyed handshake of
 * proto/auth.h, and the record of every action of a batch, which is what a failure prints
 * and what --replay sends again.
 *
 * Bytes that arrive while a write waits for room are kept (c->inbox) and decoded by the
 * next read, so neither side can block the other. A frame the daemon sends that does not
 * decode is itself a finding (c->bad_frame): daemons only send what gs_proto_encode makes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/fuzz/live.h"

#define WRITE_TIMEOUT_MS 5000
#define CONNECT_TIMEOUT_MS 5000
#define READ_CHUNK 65536

static const char *const kind_names[] = {"worker", "cli", "sched", "wcli"};

void lf_conn_init(struct lf_conn *c, unsigned id, enum lf_kind kind, struct lf_record *rec)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->id = id;
    c->kind = kind;
    c->rec = rec;
    gs_proto_decoder_init(&c->dec, 0);
    c->dec.seal = &c->seal;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    uint64_t now;
    int n;

    for (;;) {
        now = gs_clock_mono_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        n = poll(&pfd, 1, (int)(deadline - now));
        if (n > 0)
            return pfd.revents;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/*
 * A Unix socket whose accept queue is full refuses a non-blocking connect with EAGAIN, and
 * unlike TCP's EINPROGRESS nothing completes it later: the socket stays unconnected (the
 * first write then fails with ENOTCONN). gsched's CLI connects blocking and so waits for
 * room; this tries again until the deadline, as that wait would. The daemon falling behind
 * on accepts is load, not a finding; not accepting for CONNECT_TIMEOUT_MS is.
 */
static int finish_connect(struct lf_conn *c, const struct sockaddr *addr, socklen_t len)
{
    uint64_t deadline = gs_clock_mono_ms() + CONNECT_TIMEOUT_MS;
    struct timespec pause = {0, 1000000};
    int err = 0, rc;
    socklen_t elen = sizeof(err);

    for (;;) {
        if (connect(c->fd, addr, len) == 0)
            return 0;
        if (errno == EINPROGRESS)
            break;
        if (errno != EAGAIN || addr->sa_family != AF_UNIX || gs_clock_mono_ms() >= deadline)
            return -errno;
        nanosleep(&pause, NULL);
    }
    rc = wait_fd(c->fd, POLLOUT, deadline);
    if (rc < 0)
        return rc;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
        return -errno;
    return -err;
}

static int open_socket(struct lf_conn *c, int domain, const struct sockaddr *addr, socklen_t len)
{
    int one = 1, rc;

    c->fd = socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    if (domain == AF_INET)
        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    rc = finish_connect(c, addr, len);
    if (rc < 0) {
        close(c->fd);
        c->fd = -1;
        c->eof = true;
        return rc;
    }
    if (c->rec != NULL && c->rec->on)
        lf_record_line(c->rec, "open %u %s", c->id, kind_names[c->kind]);
    return 0;
}

int lf_conn_tcp(struct lf_conn *c, uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return open_socket(c, AF_INET, (const struct sockaddr *)&sin, sizeof(sin));
}

int lf_conn_unix(struct lf_conn *c, const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};

    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    return open_socket(c, AF_UNIX, (const struct sockaddr *)&sun, sizeof(sun));
}

void lf_conn_adopt(struct lf_conn *c, int fd)
{
    int one = 1;

    c->fd = fd;
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (c->rec != NULL && c->rec->on)
        lf_record_line(c->rec, "accept %u", c->id);
}

void lf_conn_close(struct lf_conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        if (c->rec != NULL && c->rec->on)
            lf_record_line(c->rec, "close %u", c->id);
    }
    c->fd = -1;
    c->eof = true;
    gs_proto_decoder_release(&c->dec);
    gs_proto_decoder_init(&c->dec, 0);
    c->dec.seal = &c->seal;
    gs_proto_seal_clear(&c->seal);
    c->sealed = c->peer_proved = false;
    gs_buf_release(&c->inbox);
    gs_buf_release(&c->held);
    gs_buf_release(&c->last);
}

/* Keeps what the peer sent meanwhile, for the next read. */
static void stash_input(struct lf_conn *c)
{
    char buf[READ_CHUNK];
    ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (r > 0 && gs_buf_append(&c->inbox, buf, (size_t)r) < 0)
        abort();
    if (r == 0)
        c->eof = true;
}

static int write_bytes(struct lf_conn *c, const char *p, size_t n, bool record)
{
    uint64_t deadline = gs_clock_mono_ms() + WRITE_TIMEOUT_MS;
    ssize_t w;
    int rc;

    if (c->fd < 0)
        return -EPIPE;
    if (record && c->rec != NULL && c->rec->on)
        lf_record_send(c->rec, c->id, p, n);
    while (n > 0) {
        w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            c->eof = true;
            return -EPIPE;
        }
        rc = wait_fd(c->fd, POLLOUT | POLLIN, deadline);
        if (rc < 0) {
            c->eof = true;
            return rc;
        }
        if (rc & POLLIN)
            stash_input(c);
    }
    return 0;
}

/* Whether p..p+n is one whole frame with a payload: what the seal covers. */
static bool whole_frame(const uint8_t *p, size_t n)
{
    uint32_t len;

    if (n <= GS_PROTO_HEADER_SIZE)
        return false;
    len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
    return len == n - GS_PROTO_HEADER_SIZE;
}

/* The bytes to put on the wire for p..p+n into out: sealed when they are a whole frame and
 * the link's frames are (each with the next number, so a frame written twice or late is a
 * message twice or late to the daemon, not a broken tag), else as they are. */
static void wire_bytes(struct lf_conn *c, const void *p, size_t n, struct gs_buf *out)
{
    if (gs_buf_append(out, p, n) < 0)
        abort();
    if (c->seal.sending && whole_frame(p, n) && gs_proto_seal_frame(&c->seal, out, 0) < 0)
        abort();
}

/* Records what was asked (unsealed, so a recorded sequence replays under any key). */
int lf_conn_write(struct lf_conn *c, const void *p, size_t n)
{
    struct gs_buf wire = GS_BUF_INIT;
    int rc;

    if (c->rec != NULL && c->rec->on)
        lf_record_send(c->rec, c->id, p, n);
    wire_bytes(c, p, n, &wire);
    rc = write_bytes(c, wire.data, wire.len, false);
    gs_buf_release(&wire);
    return rc;
}

int lf_conn_write_chunked(struct lf_conn *c, const struct gs_buf *frame, size_t max_chunk,
                          struct lf_rng *r)
{
    struct gs_buf wire = GS_BUF_INIT;
    size_t off = 0;
    int rc = 0;

    if (c->rec != NULL && c->rec->on)
        lf_record_send(c->rec, c->id, frame->data, frame->len);
    wire_bytes(c, frame->data, frame->len, &wire);
    while (rc == 0 && off < wire.len) {
        size_t n = 1 + lf_below(r, max_chunk);

        if (n > wire.len - off)
            n = wire.len - off;
        rc = write_bytes(c, wire.data + off, n, false);
        off += n;
    }
    gs_buf_release(&wire);
    return rc;
}

int lf_conn_send(struct lf_conn *c, const Gs__Envelope *env)
{
    struct gs_buf frame = GS_BUF_INIT;
    int rc;

    lf_pack_frame(env, &frame);
    rc = lf_conn_write(c, frame.data, frame.len);
    gs_buf_release(&frame);
    return rc;
}

int lf_conn_hello(struct lf_conn *c, Gs__Role role, const char *name, bool keyed)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__Hello hello;

    c->role = role;
    snprintf(c->name, sizeof(c->name), "%s", name);
    gs_proto_hello_init(&hello, role, c->name);
    if (keyed) {
        if (gs_proto_auth_nonce(c->nonce) < 0)
            return -EIO;
        hello.auth_nonce.data = c->nonce;
        hello.auth_nonce.len = sizeof(c->nonce);
    }
    env.body_case = GS__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    return lf_conn_send(c, &env);
}

/* What every envelope read does before the caller sees it: the peer's Hello noted, and
 * after the peer's proof its frames opened. */
static void note(struct lf_conn *c, const Gs__Envelope *env)
{
    if (env->body_case == GS__ENVELOPE__BODY_AUTH_PROOF) {
        c->peer_proved = true;
        c->seal.receiving = c->sealed;
    }
    if (env->body_case != GS__ENVELOPE__BODY_HELLO || env->hello == NULL)
        return;
    c->peer_hello = true;
    c->have_peer_nonce = env->hello->auth_nonce.len == sizeof(c->peer_nonce);
    if (c->have_peer_nonce)
        memcpy(c->peer_nonce, env->hello->auth_nonce.data, sizeof(c->peer_nonce));
}

static int feed(struct lf_conn *c, const uint8_t *p, size_t len, lf_on_env cb, void *data)
{
    Gs__Envelope *env = NULL;
    int n = 0, rc;

    while ((rc = gs_proto_decoder_next(&c->dec, &p, &len, &env)) == 1) {
        note(c, env);
        if (cb != NULL)
            cb(c, env, data);
        gs_proto_envelope_free(env);
        env = NULL;
        n++;
    }
    if (rc < 0) {
        c->bad_frame = true;
        c->eof = true;
    }
    return n;
}

int lf_conn_poll(struct lf_conn *c, int timeout_ms, lf_on_env cb, void *data)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    uint8_t buf[READ_CHUNK];
    int n = 0;
    ssize_t r;

    if (c->inbox.len > 0) {
        struct gs_buf in = c->inbox;

        c->inbox = GS_BUF_INIT;
        n += feed(c, (const uint8_t *)in.data, in.len, cb, data);
        gs_buf_release(&in);
    }
    while (c->fd >= 0 && !c->bad_frame) {
        r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r > 0) {
            n += feed(c, buf, (size_t)r, cb, data);
            continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            c->eof = true;
            break;
        }
        if (n > 0 || gs_clock_mono_ms() >= deadline || wait_fd(c->fd, POLLIN, deadline) < 0)
            break;
    }
    return c->eof && n == 0 ? -EPIPE : n;
}

struct waiting {
    lf_want want;
    uint64_t arg;
    lf_on_env cb;
    void *data;
    bool found;
};

static void on_waited(struct lf_conn *c, const Gs__Envelope *env, void *data)
{
    struct waiting *w = data;

    if (w->cb != NULL)
        w->cb(c, env, w->data);
    if (w->want(env, w->arg))
        w->found = true;
}

int lf_conn_wait(struct lf_conn *c, int timeout_ms, lf_want want, uint64_t arg, lf_on_env cb,
                 void *data)
{
    uint64_t deadline = gs_clock_mono_ms() + (uint64_t)timeout_ms;
    struct waiting w = {.want = want, .arg = arg, .cb = cb, .data = data};
    uint64_t now;

    while (!w.found && (now = gs_clock_mono_ms()) < deadline) {
        if (lf_conn_poll(c, (int)(deadline - now), on_waited, &w) < 0)
            break;
    }
    return w.found ? 1 : 0;
}

static bool is_hello(const Gs__Envelope *env, uint64_t arg)
{
    (void)arg;
    return env->body_case == GS__ENVELOPE__BODY_HELLO ||
           env->body_case == GS__ENVELOPE__BODY_HELLO_REJECT;
}

int lf_conn_proof(struct lf_conn *c, const struct gs_proto_auth_key *key, int timeout_ms,
                  lf_on_env cb, void *data)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;
    Gs__AuthProof proof = GS__AUTH_PROOF__INIT;
    uint8_t mac[GS_PROTO_AUTH_PROOF_SIZE];
    struct gs_buf frame = GS_BUF_INIT;
    int rc;

    if (!c->peer_hello)
        (void)lf_conn_wait(c, timeout_ms, is_hello, 0, cb, data);
    if (!c->have_peer_nonce)
        return -EPROTO;
    rc = gs_proto_auth_proof(key, c->role, c->name, c->nonce, c->peer_nonce, mac);
    if (rc < 0)
        return rc;
    proof.mac.data = mac;
    proof.mac.len = sizeof(mac);
    env.body_case = GS__ENVELOPE__BODY_AUTH_PROOF;
    env.auth_proof = &proof;
    lf_pack_frame(&env, &frame);
    if (c->rec != NULL && c->rec->on)
        lf_record_line(c->rec, "proof %u", c->id);
    rc = write_bytes(c, frame.data, frame.len, false);
    gs_buf_release(&frame);
    if (rc == 0)
        rc = gs_proto_seal_init(&c->seal, key, c->nonce, c->peer_nonce);
    if (rc == 0) {
        c->sealed = c->seal.sending = true;
        c->seal.receiving = c->peer_proved;
    }
    return rc;
}

/* ---- the record ---- */

void lf_record_line(struct lf_record *rec, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (gs_buf_vprintf(&rec->text, fmt, ap) < 0 || gs_buf_putc(&rec->text, '\n') < 0)
        abort();
    va_end(ap);
    rec->lines++;
}

void lf_record_send(struct lf_record *rec, unsigned id, const void *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *b = p;
    size_t at;

    if (gs_buf_printf(&rec->text, "send %u ", id) < 0 || gs_buf_reserve(&rec->text, 2 * n + 1) < 0)
        abort();
    at = rec->text.len;
    for (size_t i = 0; i < n; i++) {
        rec->text.data[at + 2 * i] = hex[b[i] >> 4];
        rec->text.data[at + 2 * i + 1] = hex[b[i] & 15];
    }
    rec->text.len += 2 * n;
    rec->text.data[rec->text.len] = '\0';
    if (gs_buf_putc(&rec->text, '\n') < 0)
        abort();
    rec->lines++;
}

static int unhex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The frames in the hex of a send line, in short: "hello, heartbeat(rid=3), malformed_frame". */
static void describe_send(const char *hexs, size_t len, FILE *f)
{
    struct gs_proto_decoder dec;
    uint8_t *bytes = malloc(len / 2 + 1);
    const uint8_t *p = bytes;
    size_t n = len / 2, left;
    Gs__Envelope *env = NULL;
    int rc;

    if (bytes == NULL)
        abort();
    for (size_t i = 0; i < n; i++)
        bytes[i] = (uint8_t)(unhex(hexs[2 * i]) << 4 | unhex(hexs[2 * i + 1]));
    left = n;
    gs_proto_decoder_init(&dec, 0);
    fprintf(f, "%zu bytes:", n);
    while ((rc = gs_proto_decoder_next(&dec, &p, &left, &env)) == 1) {
        fprintf(f, " %s(rid=%llu)", gs_proto_body_name(env->body_case),
                (unsigned long long)env->request_id);
        gs_proto_envelope_free(env);
    }
    if (rc < 0)
        fprintf(f, " [%s]", gs_proto_reason(rc));
    else if (gs_proto_decoder_buffered(&dec) > 0)
        fprintf(f, " [partial frame]");
    fprintf(f, " %.*s%s\n", (int)(len < 96 ? len : 96), hexs, len > 96 ? "..." : "");
    gs_proto_decoder_release(&dec);
    free(bytes);
}

void lf_record_print(const struct lf_record *rec, FILE *f, size_t max_lines)
{
    const char *p = rec->text.data != NULL ? rec->text.data : "";
    size_t skip = rec->lines > max_lines ? rec->lines - max_lines : 0;

    if (skip > 0)
        fprintf(f, "  ... %zu earlier actions in the file\n", skip);
    for (size_t line = 0; *p != '\0'; line++) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        unsigned id;
        int off = 0;

        if (line >= skip) {
            if (sscanf(p, "send %u %n", &id, &off) == 1 && off > 0) {
                fprintf(f, "  send %u ", id);
                describe_send(p + off, len - (size_t)off, f);
            } else {
                fprintf(f, "  %.*s\n", (int)len, p);
            }
        }
        p += len + (end != NULL);
    }
}
