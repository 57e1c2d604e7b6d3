/*
 * peer.c: a worker's data port: shard files served to other workers (see peer.h).
 *
 * Objects and handles. The server owns its TCP listener, one uv_check handle and a list of
 * struct peer_conn, one per accepted connection. A peer_conn lives as long as the longest
 * of: its gs_proto_conn (until on_close), a piece being read in the pool (uv_queue_work,
 * which cannot be called back), and the file it has open (closed in the pool as well). It is
 * freed when the last of these ends, and the server is freed when its two handles are closed
 * and its last peer_conn is gone, after wrk_peer_server_close() (refs counts all of them).
 *
 * A transfer. A ShardRead that passes the name checks and may_serve sets busy and queues
 * the first piece: in the pool, open ROOT/<dataset> (O_DIRECTORY|O_NOFOLLOW), then the file
 * in it (O_NOFOLLOW, O_NONBLOCK so that a FIFO cannot hang a pool thread), fstat it (regular
 * files only), check the offset against its size and fix the range's end, then pread up to
 * WRK_PEER_CHUNK bytes. Back on the loop the piece goes out as a ShardData; the next piece
 * is queued at once when the connection's write queue (uv_stream_get_write_queue_size on
 * gs_proto_conn_stream) holds less than DRAIN_BELOW bytes, else when the server's check
 * handle, run after every poll while some connection waits, sees it drained. The piece that
 * reaches the end, or fails, closes the file in the pool before coming back; a connection
 * that goes away with the file open queues a pool job that only closes it.
 *
 * Fields a pool job reads or writes (fd, buf, the range, rc/got/why) are not touched on the
 * loop while work_pending is set; uv_queue_work orders the two threads.
 *
 * Loop thread, except do_piece() in libuv's pool.
 */
#include "worker/peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/conn.h"

#define DATASET_ID_LEN 32
#define FILE_NAME_MAX 255
#define PART_SUFFIX ".part"
#define DRAIN_BELOW WRK_PEER_CHUNK /* read the next piece once less than this waits */
#define TEXT_MAX 80                /* peer-supplied names quoted in logs and replies */

struct wrk_peer_server {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_check_t drain_check; /* active while a connection waits for its queue to drain */
    char *root;
    char *node_name;
    struct gs_proto_auth_key key; /* len 0: unauthenticated */
    wrk_peer_may_serve_fn may_serve;
    void *data;
    unsigned max_connections;
    size_t connections; /* accepted and not refused, until on_close */
    size_t draining;    /* connections waiting for their queue to drain */
    uint16_t port;
    struct peer_conn *conns;
    int refs; /* the two handles until closed, plus one per peer_conn until freed */
    bool closing;
    void (*closed)(void *data);
    void *closed_data;
};

struct peer_conn {
    struct wrk_peer_server *server;
    struct gs_proto_conn *conn; /* NULL once its on_close has run */
    struct peer_conn *prev, *next;
    char peer[128]; /* address and node name, for logs after the conn is gone */
    bool refused;   /* over max_connections: closed at once, not counted */
    uv_work_t work;
    bool work_pending; /* a pool job holds the fields below */
    bool close_only;   /* the pool job closes fd and reads nothing */
    bool busy;         /* a ShardRead is being answered */
    bool draining;     /* its next piece waits for the write queue */
    int fd;            /* the file being served; -1 */
    uint8_t *buf;      /* WRK_PEER_CHUNK bytes, from the first ShardRead on */
    /* the ShardRead being answered */
    uint64_t request_id;
    char dataset[DATASET_ID_LEN + 1];
    char file[FILE_NAME_MAX + 1];
    uint64_t offset, length; /* as asked */
    uint64_t pos;            /* where the next piece starts */
    uint64_t end;            /* the range's end, set by the first piece */
    uint64_t file_size;
    uint64_t sent;
    uint64_t start_ms;
    /* a pool job's result */
    int rc;          /* 0, or the ErrorReply's code */
    int os_errno;    /* the errno behind rc, 0 when none */
    const char *why; /* static text for the log and reply when rc < 0 */
    size_t got;
};

static void queue_piece(struct peer_conn *pc);
static void on_drain_check(uv_check_t *check);

/* Copies peer-supplied text for a log line or reply: printable ASCII only, no spaces or
 * quotes, cut at size - 1 bytes. */
static const char *safe_text(char *out, size_t size, const char *in)
{
    size_t i;

    for (i = 0; in != NULL && in[i] != '\0' && i + 1 < size; i++)
        out[i] = in[i] > ' ' && in[i] <= '~' && in[i] != '"' ? in[i] : '_';
    out[i] = '\0';
    return out;
}

static bool dataset_id_valid(const char *id)
{
    size_t i;

    for (i = 0; id[i] != '\0'; i++) {
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    }
    return i == DATASET_ID_LEN;
}

/* A plain name in the dataset's directory: not hidden (nor "." or ".."), no '/' and no
 * control character (it goes into log lines), not a partial copy. */
static bool file_name_valid(const char *name)
{
    size_t len = strlen(name), suffix = strlen(PART_SUFFIX);

    if (len == 0 || len > FILE_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '/' || (unsigned char)name[i] < ' ' || name[i] == 0x7f)
            return false;
    }
    return len < suffix || strcmp(name + len - suffix, PART_SUFFIX) != 0;
}

/* ---- the server's lifetime ---- */

static void release_ref(struct wrk_peer_server *s)
{
    if (--s->refs > 0 || !s->closing)
        return;
    if (s->closed != NULL)
        s->closed(s->closed_data);
    gs_proto_auth_key_clear(&s->key);
    free(s->root);
    free(s->node_name);
    free(s);
}

static void on_server_handle_closed(uv_handle_t *handle)
{
    release_ref(handle->data);
}

static void peer_conn_free(struct peer_conn *pc)
{
    struct wrk_peer_server *s = pc->server;

    free(pc->buf);
    free(pc);
    release_ref(s);
}

/* The gs_proto_conn is gone and no pool job runs: close the file in the pool, or free. */
static void finish_gone(struct peer_conn *pc)
{
    if (pc->fd < 0) {
        peer_conn_free(pc);
        return;
    }
    pc->close_only = true;
    queue_piece(pc);
}

/* ---- the pool's part ---- */

static void set_failure(struct peer_conn *pc, int rc, int os_errno, const char *why)
{
    pc->rc = rc;
    pc->os_errno = os_errno;
    pc->why = why;
}

/* An open() failure: anything that says "not here" is -ENOENT to the peer, else -EIO. */
static void open_failed(struct peer_conn *pc, int os_errno)
{
    switch (os_errno) {
    case ENOENT:
        set_failure(pc, -ENOENT, os_errno, "no_such_file");
        break;
    case ELOOP:
        set_failure(pc, -ENOENT, os_errno, "symbolic_link");
        break;
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case ENXIO:
    case ENODEV:
        set_failure(pc, -ENOENT, os_errno, "not_servable");
        break;
    default:
        set_failure(pc, -EIO, os_errno, "open_failed");
        break;
    }
}

/* Opens the file, checks it and the offset, fixes the range's end. */
static void open_shard(struct peer_conn *pc)
{
    const struct wrk_peer_server *s = pc->server;
    char path[PATH_MAX];
    struct stat st;
    int dir_fd, fd;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", s->root, pc->dataset) >= sizeof(path)) {
        set_failure(pc, -ENOENT, ENAMETOOLONG, "path_too_long");
        return;
    }
    dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0) {
        open_failed(pc, errno);
        return;
    }
    fd = openat(dir_fd, pc->file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        open_failed(pc, errno);
    close(dir_fd);
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0)
        set_failure(pc, -EIO, errno, "fstat_failed");
    else if (!S_ISREG(st.st_mode))
        set_failure(pc, -ENOENT, 0, "not_a_regular_file");
    else if ((uint64_t)st.st_size < pc->offset)
        set_failure(pc, -ERANGE, 0, "offset_beyond_end");
    if (pc->rc < 0) {
        close(fd);
        return;
    }
    pc->fd = fd;
    pc->file_size = (uint64_t)st.st_size;
    pc->end = pc->length == 0 || pc->length > pc->file_size - pc->offset ? pc->file_size
                                                                         : pc->offset + pc->length;
}

/* Reads the piece at pos: all of it, or fails (the file shrank or an I/O error). */
static void read_piece(struct peer_conn *pc)
{
    size_t want = pc->end - pc->pos < WRK_PEER_CHUNK ? (size_t)(pc->end - pc->pos) : WRK_PEER_CHUNK;
    size_t got = 0;
    ssize_t n;

    while (got < want) {
        n = pread(pc->fd, pc->buf + got, want - got, (off_t)(pc->pos + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            set_failure(pc, -EIO, n < 0 ? errno : 0, n < 0 ? "read_failed" : "file_shrank");
            return;
        }
        got += (size_t)n;
    }
    pc->got = got;
}

/* In libuv's pool: the next piece (opening the file first), or only closing the file. */
static void do_piece(uv_work_t *req)
{
    struct peer_conn *pc = req->data;

    pc->rc = 0;
    pc->os_errno = 0;
    pc->why = NULL;
    pc->got = 0;
    if (!pc->close_only) {
        if (pc->fd < 0)
            open_shard(pc);
        if (pc->rc == 0)
            read_piece(pc);
    }
    if (pc->fd >= 0 && (pc->close_only || pc->rc < 0 || pc->pos + pc->got >= pc->end)) {
        close(pc->fd);
        pc->fd = -1;
    }
}

/* ---- the loop's part ---- */

static void reply_error(struct peer_conn *pc, int code, const char *message)
{
    Gs__ErrorReply reply = GS__ERROR_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.code = code;
    reply.message = (char *)message;
    env.request_id = pc->request_id;
    env.body_case = GS__ENVELOPE__BODY_ERROR;
    env.error = &reply;
    if (gs_proto_conn_send(pc->conn, &env) < 0)
        gs_proto_conn_close(pc->conn);
}

/* The transfer failed in the pool: tell the peer and take the next ShardRead. */
static void refuse_piece(struct peer_conn *pc)
{
    char message[512];

    if (pc->rc == -ERANGE)
        snprintf(message, sizeof(message),
                 "node %s: dataset %s: offset %" PRIu64 " is beyond the end of %s",
                 pc->server->node_name, pc->dataset, pc->offset, pc->file);
    else if (pc->rc == -ENOENT)
        snprintf(message, sizeof(message), "node %s: dataset %s: shard %s is not held here",
                 pc->server->node_name, pc->dataset, pc->file);
    else
        snprintf(message, sizeof(message), "node %s: dataset %s: shard %s cannot be read: %s",
                 pc->server->node_name, pc->dataset, pc->file,
                 pc->os_errno != 0 ? gs_strerror(-pc->os_errno) : pc->why);
    GS_LOG(pc->rc == -EIO ? GS_LOG_WARN : GS_LOG_INFO,
           "peer=%s dataset=%s file=%s offset=%" PRIu64 " sent=%" PRIu64 " code=%d reason=%s "
           "errno=%d shard read refused",
           pc->peer, pc->dataset, pc->file, pc->offset, pc->sent, pc->rc, pc->why, pc->os_errno);
    pc->busy = false;
    reply_error(pc, pc->rc, message);
}

/* Reads the next piece at once, or once the write queue has drained. */
static void continue_transfer(struct peer_conn *pc)
{
    struct wrk_peer_server *s = pc->server;

    if (uv_stream_get_write_queue_size(gs_proto_conn_stream(pc->conn)) < DRAIN_BELOW) {
        queue_piece(pc);
        return;
    }
    pc->draining = true;
    if (s->draining++ == 0)
        uv_check_start(&s->drain_check, on_drain_check);
}

static void send_piece(struct peer_conn *pc)
{
    Gs__ShardData data = GS__SHARD_DATA__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int rc;

    data.offset = pc->pos;
    data.data.data = pc->buf;
    data.data.len = pc->got;
    data.eof = pc->pos + pc->got == pc->end;
    data.file_size = pc->file_size;
    env.request_id = pc->request_id;
    env.body_case = GS__ENVELOPE__BODY_SHARD_DATA;
    env.shard_data = &data;
    rc = gs_proto_conn_send(pc->conn, &env);
    if (rc < 0) { /* closing already (-EPIPE), or it cannot go on: on_close cleans up */
        if (rc != -EPIPE)
            GS_LOG(GS_LOG_WARN, "peer=%s dataset=%s file=%s error=%s shard data not sent, closing",
                   pc->peer, pc->dataset, pc->file, gs_strerror(rc));
        gs_proto_conn_close(pc->conn);
        return;
    }
    pc->pos += pc->got;
    pc->sent += pc->got;
    if (!data.eof) {
        continue_transfer(pc);
        return;
    }
    pc->busy = false;
    GS_LOG(GS_LOG_DEBUG,
           "peer=%s dataset=%s file=%s offset=%" PRIu64 " bytes=%" PRIu64 " file_size=%" PRIu64
           " ms=%" PRIu64 " shard range served",
           pc->peer, pc->dataset, pc->file, pc->offset, pc->sent, pc->file_size,
           gs_clock_mono_ms() - pc->start_ms);
}

static void after_piece(uv_work_t *req, int status)
{
    struct peer_conn *pc = req->data;

    (void)status; /* never cancelled */
    pc->work_pending = false;
    if (pc->conn == NULL) {
        finish_gone(pc);
        return;
    }
    if (pc->rc < 0)
        refuse_piece(pc);
    else
        send_piece(pc);
}

static void queue_piece(struct peer_conn *pc)
{
    int rc;

    pc->work.data = pc;
    pc->work_pending = true;
    rc = uv_queue_work(pc->server->loop, &pc->work, do_piece, after_piece);
    if (rc == 0)
        return;
    /* libuv refuses only a NULL callback; should it ever, end this connection cleanly. */
    GS_LOG(GS_LOG_ERROR, "peer=%s error=%s shard read not queued, closing", pc->peer,
           uv_strerror(rc));
    pc->work_pending = false;
    if (pc->fd >= 0)
        close(pc->fd);
    pc->fd = -1;
    if (pc->conn != NULL)
        gs_proto_conn_close(pc->conn);
    else
        peer_conn_free(pc);
}

/* The check handle: after each poll, the connections whose queue has drained read on. */
static void on_drain_check(uv_check_t *check)
{
    struct wrk_peer_server *s = check->data;
    struct peer_conn *pc;

    for (pc = s->conns; pc != NULL; pc = pc->next) {
        if (!pc->draining ||
            uv_stream_get_write_queue_size(gs_proto_conn_stream(pc->conn)) >= DRAIN_BELOW)
            continue;
        pc->draining = false;
        s->draining--;
        queue_piece(pc);
    }
    if (s->draining == 0)
        uv_check_stop(check);
}

/* Checks a ShardRead's names and whether we hold the file. 0, or a code with the reply. */
static int check_request(struct peer_conn *pc, const Gs__ShardRead *req, char *message, size_t size)
{
    struct wrk_peer_server *s = pc->server;
    const char *dataset = req->dataset != NULL ? req->dataset : "";
    const char *file = req->file != NULL ? req->file : "";
    char text[TEXT_MAX];

    if (!dataset_id_valid(dataset)) {
        snprintf(message, size, "node %s: %s is not a dataset id", s->node_name,
                 safe_text(text, sizeof(text), dataset));
        return -EINVAL;
    }
    if (!file_name_valid(file)) {
        snprintf(message, size, "node %s: dataset %s: %s is not a shard file name", s->node_name,
                 dataset, safe_text(text, sizeof(text), file));
        return -EINVAL;
    }
    if (s->may_serve != NULL && !s->may_serve(dataset, file, s->data)) {
        snprintf(message, size, "node %s: dataset %s: shard %s is not held here", s->node_name,
                 dataset, file);
        return -ENOENT;
    }
    return 0;
}

static void start_transfer(struct peer_conn *pc, uint64_t request_id, const Gs__ShardRead *req)
{
    char message[512], dataset[TEXT_MAX], file[TEXT_MAX];
    int rc;

    pc->request_id = request_id;
    rc = check_request(pc, req, message, sizeof(message));
    if (rc == 0 && pc->buf == NULL && (pc->buf = malloc(WRK_PEER_CHUNK)) == NULL) {
        snprintf(message, sizeof(message), "node %s: out of memory", pc->server->node_name);
        rc = -ENOMEM;
    }
    if (rc < 0) {
        GS_LOG(rc == -EINVAL ? GS_LOG_WARN : GS_LOG_INFO,
               "peer=%s dataset=%s file=%s code=%d shard read refused", pc->peer,
               safe_text(dataset, sizeof(dataset), req->dataset),
               safe_text(file, sizeof(file), req->file), rc);
        reply_error(pc, rc, message);
        return;
    }
    snprintf(pc->dataset, sizeof(pc->dataset), "%s", req->dataset);
    snprintf(pc->file, sizeof(pc->file), "%s", req->file);
    pc->offset = pc->pos = req->offset;
    pc->length = req->length;
    pc->end = pc->file_size = pc->sent = 0;
    pc->start_ms = gs_clock_mono_ms();
    pc->busy = true;
    queue_piece(pc);
}

static void on_message(struct gs_proto_conn *conn, const Gs__Envelope *env, void *data)
{
    struct peer_conn *pc = data;

    if (env->body_case != GS__ENVELOPE__BODY_SHARD_READ) {
        GS_LOG(GS_LOG_WARN, "peer=%s body=%s not a shard read, closing", pc->peer,
               gs_proto_body_name(env->body_case));
        gs_proto_conn_close(conn);
        return;
    }
    if (pc->busy) {
        GS_LOG(GS_LOG_WARN,
               "peer=%s dataset=%s file=%s second shard read while one is answered, "
               "closing",
               pc->peer, pc->dataset, pc->file);
        gs_proto_conn_close(conn);
        return;
    }
    start_transfer(pc, env->request_id, env->shard_read);
}

static void on_ready(struct gs_proto_conn *conn, const Gs__Hello *hello, void *data)
{
    struct peer_conn *pc = data;
    char name[TEXT_MAX];

    snprintf(pc->peer, sizeof(pc->peer), "%s/%s", gs_proto_conn_peer(conn),
             safe_text(name, sizeof(name), hello->name));
}

static void on_close(struct gs_proto_conn *conn, int status, void *data)
{
    struct peer_conn *pc = data;
    struct wrk_peer_server *s = pc->server;

    (void)conn;
    if (pc->busy)
        GS_LOG(GS_LOG_INFO,
               "peer=%s dataset=%s file=%s offset=%" PRIu64 " sent=%" PRIu64 " reason=%s "
               "shard transfer aborted",
               pc->peer, pc->dataset, pc->file, pc->offset, pc->sent, gs_proto_reason(status));
    pc->conn = NULL;
    if (pc->draining) {
        pc->draining = false;
        s->draining--;
    }
    if (!pc->refused)
        s->connections--;
    if (pc->prev != NULL)
        pc->prev->next = pc->next;
    else
        s->conns = pc->next;
    if (pc->next != NULL)
        pc->next->prev = pc->prev;
    if (!pc->work_pending)
        finish_gone(pc);
}

/* A peer_conn with its gs_proto_conn, on the list; NULL when out of memory. */
static struct peer_conn *peer_conn_new(struct wrk_peer_server *s)
{
    struct peer_conn *pc = calloc(1, sizeof(*pc));
    struct gs_proto_conn_opts opts = {
        .role = GS__ROLE__ROLE_WORKER,
        .name = s->node_name,
        .accept_roles = GS_PROTO_ROLE_BIT(GS__ROLE__ROLE_WORKER),
        .max_frame = WRK_PEER_MAX_FRAME,
        .on_ready = on_ready,
        .on_message = on_message,
        .on_close = on_close,
        .auth_key = &s->key,
        .data = pc,
    };

    if (pc == NULL)
        return NULL;
    pc->server = s;
    pc->fd = -1;
    pc->conn = gs_proto_conn_new(s->loop, GS_PROTO_TCP, &opts);
    if (pc->conn == NULL) {
        free(pc);
        return NULL;
    }
    s->refs++;
    pc->next = s->conns;
    if (s->conns != NULL)
        s->conns->prev = pc;
    s->conns = pc;
    return pc;
}

/* The peer's address for logs until its Hello names it. */
static void name_peer(struct peer_conn *pc)
{
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    char host[INET6_ADDRSTRLEN] = "unknown";
    unsigned port = 0;
    uv_tcp_t *tcp = (uv_tcp_t *)gs_proto_conn_stream(pc->conn);

    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&addr, &len) == 0) {
        if (addr.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
        } else if (addr.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&addr, host, sizeof(host));
            port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
        }
    }
    snprintf(pc->peer, sizeof(pc->peer), "%s:%u", host, port);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct wrk_peer_server *s = listener->data;
    struct peer_conn *pc;

    if (status < 0) {
        GS_LOG(GS_LOG_WARN, "port=%u error=%s data port accept failed", (unsigned)s->port,
               uv_strerror(status));
        return;
    }
    pc = peer_conn_new(s);
    if (pc == NULL) {
        GS_LOG(GS_LOG_ERROR, "port=%u data port connection not taken: out of memory",
               (unsigned)s->port);
        return;
    }
    pc->refused = s->connections >= s->max_connections;
    if (!pc->refused)
        s->connections++;
    if (uv_accept(listener, gs_proto_conn_stream(pc->conn)) < 0) {
        gs_proto_conn_close(pc->conn);
        return;
    }
    name_peer(pc);
    if (pc->refused) {
        GS_LOG(GS_LOG_WARN, "peer=%s connections=%zu max=%u data port connection refused", pc->peer,
               s->connections, s->max_connections);
        gs_proto_conn_close(pc->conn);
        return;
    }
    if (gs_proto_conn_start(pc->conn) < 0)
        gs_proto_conn_close(pc->conn);
}

/* ---- creating and closing ---- */

static int listen_on(struct wrk_peer_server *s, const char *address, uint16_t port,
                     struct gs_error *err)
{
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    int rc;

    if (uv_ip4_addr(address, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(address, port, (struct sockaddr_in6 *)&addr) != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "data port: %s is not an IP address", address);
    rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
    if (rc == 0)
        rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&addr, &len);
    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "data port %s:%u: %s", address, (unsigned)port,
                            uv_strerror(rc));
    s->port = addr.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    return 0;
}

/* Copies what the server keeps of opts. 0 or -ENOMEM. */
static int copy_opts(struct wrk_peer_server *s, const struct wrk_peer_opts *opts)
{
    s->root = strdup(opts->root != NULL ? opts->root : "");
    s->node_name = strdup(opts->node_name != NULL ? opts->node_name : "");
    if (s->root == NULL || s->node_name == NULL)
        return -ENOMEM;
    if (opts->auth_key != NULL)
        s->key = *opts->auth_key;
    s->may_serve = opts->may_serve;
    s->data = opts->data;
    s->max_connections =
        opts->max_connections > 0 ? opts->max_connections : WRK_PEER_MAX_CONNECTIONS_DEFAULT;
    return 0;
}

struct wrk_peer_server *wrk_peer_server_new(uv_loop_t *loop, const struct wrk_peer_opts *opts,
                                            struct gs_error *err)
{
    const char *address = opts->bind_address != NULL ? opts->bind_address : "0.0.0.0";
    struct wrk_peer_server *s = calloc(1, sizeof(*s));

    if (s == NULL || copy_opts(s, opts) < 0) {
        gs_error_set(err, -ENOMEM, 0, 0, "data port: out of memory");
        if (s != NULL) {
            free(s->root);
            free(s->node_name);
        }
        free(s);
        return NULL;
    }
    s->loop = loop;
    uv_tcp_init(loop, &s->listener);
    uv_check_init(loop, &s->drain_check);
    s->listener.data = s->drain_check.data = s;
    s->refs = 2;
    if (listen_on(s, address, opts->port, err) < 0) {
        wrk_peer_server_close(s, NULL, NULL); /* freed once both handles are closed */
        return NULL;
    }
    GS_LOG(GS_LOG_INFO, "address=%s port=%u root=%s authenticated=%s data port listening", address,
           (unsigned)s->port, s->root, s->key.len > 0 ? "yes" : "no");
    return s;
}

uint16_t wrk_peer_server_port(const struct wrk_peer_server *server)
{
    return server->port;
}

size_t wrk_peer_server_connections(const struct wrk_peer_server *server)
{
    return server->connections;
}

void wrk_peer_server_close(struct wrk_peer_server *server, void (*closed)(void *data), void *data)
{
    struct peer_conn *pc;

    if (server == NULL || server->closing)
        return;
    server->closing = true;
    server->closed = closed;
    server->closed_data = data;
    for (pc = server->conns; pc != NULL; pc = pc->next)
        gs_proto_conn_close(pc->conn);
    uv_close((uv_handle_t *)&server->listener, on_server_handle_closed);
    uv_close((uv_handle_t *)&server->drain_check, on_server_handle_closed);
}
