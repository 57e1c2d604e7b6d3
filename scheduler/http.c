/*
 * http.c: gschedd's HTTP server (see http.h): libmicrohttpd in external-polling epoll mode
 * on the libuv loop, the route table, and the answers for what no route handles.
 *
 * Driving: MHD keeps its sockets in an epoll set of its own; that set's descriptor becomes
 * readable when any of them is ready, so one uv_poll_t on it wakes us. After every MHD_run
 * the timer is re-armed from MHD_get_timeout (0 when MHD has work left that no descriptor
 * will announce again: its sockets are edge-triggered). Closing: both libuv handles are
 * closed first (uv_close stops the poll before MHD closes the descriptor under it), then
 * the daemon is stopped; h is freed in the last close callback.
 */
#include "scheduler/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "scheduler/sched_http_routes.h"

#define HTTP_CONNECTION_LIMIT 64
#define HTTP_CONNECTION_TIMEOUT_S 10
#define HTTP_ADDR_FILE "http.addr"

struct sched_http {
    struct sched_ctx *s;
    struct MHD_Daemon *daemon;
    uv_poll_t poll; /* MHD's epoll descriptor */
    uv_timer_t timer;
    bool poll_open, timer_open;
    int open_handles;
    int port;
    char addr[INET6_ADDRSTRLEN + 16]; /* the bound HOST:PORT */
    char addr_file[600];              /* STATE_DIR/http.addr once written, else "" */
    char error[160];                  /* MHD's last message while starting */
    void (*closed)(void *data);
    void *closed_data;
};

/* An exact path, or a prefix when it ends in '/' (the rest a single path segment). */
struct route {
    const char *path;
    sched_http_handler handler;
};

static const struct route routes[] = {
    {"/metrics", sched_metrics_route},
    {"/api/v1/nodes", sched_api_nodes},
    {"/api/v1/jobs", sched_api_jobs},
    {"/api/v1/jobs/", sched_api_job},
    {"/api/v1/history/", sched_api_history},
    {"/", sched_web_file}, /* last: "/" is a prefix of everything */
};

static const struct route *find_route(const char *path, const char **ret_rest)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        size_t len = strlen(routes[i].path);
        const char *rest = path + len;

        if (strncmp(path, routes[i].path, len) != 0)
            continue;
        if (*rest == '\0' || (routes[i].path[len - 1] == '/' && strchr(rest, '/') == NULL)) {
            *ret_rest = rest;
            return &routes[i];
        }
    }
    return NULL;
}

const char *sched_http_arg(const struct sched_http_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* Queues body (taken: the buffer is left empty) as the answer with status and type. */
static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int status,
                               struct gs_buf *body, const char *type)
{
    size_t len;
    char *data = gs_buf_detach(body, &len);
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (data == NULL)
        return MHD_NO;
    r = MHD_create_response_from_buffer_with_free_callback(len, data, free);
    if (r == NULL) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* {"error": why, "path": path} with status. */
static enum MHD_Result respond_error(struct MHD_Connection *conn, unsigned int status,
                                     const char *why, const char *path)
{
    struct gs_buf body = GS_BUF_INIT;
    struct gs_json j;

    gs_json_init(&j, &body);
    gs_json_object_begin(&j);
    gs_json_kv_string(&j, "error", why);
    gs_json_kv_string(&j, "path", path);
    gs_json_object_end(&j);
    if (gs_json_finish(&j) == 0)
        gs_buf_putc(&body, '\n');
    return respond(conn, status, &body, "application/json");
}

static unsigned int status_of(int rc)
{
    if (rc == -ENOENT)
        return MHD_HTTP_NOT_FOUND;
    if (rc == -EINVAL)
        return MHD_HTTP_BAD_REQUEST;
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static const char *error_text(int rc)
{
    if (rc == -ENOENT)
        return "not found";
    if (rc == -EINVAL)
        return "bad request";
    return strerror(-rc);
}

/* A GET or HEAD for a known route: the handler's answer, or its error. */
static enum MHD_Result serve(struct sched_http *h, struct MHD_Connection *conn,
                             const struct route *route, const char *url, const char *rest)
{
    struct sched_http_request req = {url, rest, conn};
    struct gs_buf body = GS_BUF_INIT;
    const char *type = "application/json";
    int rc = route->handler(h->s, &req, &body, &type);

    if (rc == 0) {
        GS_LOG(GS_LOG_DEBUG, "http path=%s status=200 bytes=%zu served", url, body.len);
        return respond(conn, MHD_HTTP_OK, &body, type);
    }
    gs_buf_release(&body);
    if (status_of(rc) == MHD_HTTP_INTERNAL_SERVER_ERROR)
        GS_LOG(GS_LOG_WARN, "http path=%s error=\"%s\" request failed", url, strerror(-rc));
    return respond_error(conn, status_of(rc), error_text(rc), url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    const struct route *route;
    const char *rest = "";

    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", url);
    route = find_route(url, &rest);
    if (route == NULL)
        return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found", url);
    return serve(cls, conn, route, url, rest);
}

/* --- the daemon on the loop ------------------------------------------------------------ */

static void on_timer(uv_timer_t *timer);

/* Runs MHD, then arms the timer for when it must run again without an event. */
static void run_daemon(struct sched_http *h)
{
    MHD_UNSIGNED_LONG_LONG timeout_ms;

    MHD_run(h->daemon);
    if (MHD_get_timeout(h->daemon, &timeout_ms) == MHD_YES)
        uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
    else
        uv_timer_stop(&h->timer);
}

static void on_timer(uv_timer_t *timer)
{
    run_daemon(timer->data);
}

static void on_poll(uv_poll_t *poll, int status, int events)
{
    (void)status; /* an error on the epoll descriptor: MHD_run finds out for itself */
    (void)events;
    run_daemon(poll->data);
}

/* What MHD says while starting (why a bind failed), kept for the one error line. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct sched_http *h = cls;
    size_t len;

    vsnprintf(h->error, sizeof(h->error), fmt, ap);
    len = strlen(h->error);
    while (len > 0 && (h->error[len - 1] == '\n' || h->error[len - 1] == '.'))
        h->error[--len] = '\0';
    for (char *p = h->error; *p != '\0'; p++) {
        if (*p == '"')
            *p = '\'';
    }
    GS_LOG(GS_LOG_DEBUG, "http error=\"%s\" libmicrohttpd says", h->error);
}

static int start_daemon(struct sched_http *h, const struct sockaddr_storage *addr)
{
    unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    const union MHD_DaemonInfo *info;
    uint16_t port = ntohs(((const struct sockaddr_in *)addr)->sin_port);

    if (addr->ss_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)addr)->sin6_port);
    }
    /* port only goes into MHD's messages: MHD_OPTION_SOCK_ADDR says where to bind. */
    h->daemon = MHD_start_daemon(flags, port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                                 on_mhd_log, h, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_CONNECTION_LIMIT,
                                 MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned int)HTTP_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
    if (h->daemon == NULL)
        return -EADDRNOTAVAIL;
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info != NULL ? info->port : 0;
    info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (info == NULL || info->epoll_fd < 0) {
        snprintf(h->error, sizeof(h->error), "no epoll descriptor");
        return -EIO;
    }
    return uv_poll_init(h->timer.loop, &h->poll, info->epoll_fd);
}

/* STATE_DIR/http.addr holds "HOST:PORT\n", replaced whole (temporary file, then rename). */
static int write_addr_file(struct sched_http *h, const char *state_dir)
{
    char path[sizeof(h->addr_file)], tmp[sizeof(h->addr_file) + 8];
    FILE *f;
    int rc = 0;

    snprintf(path, sizeof(path), "%s/%s", state_dir, HTTP_ADDR_FILE);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL)
        return -errno;
    if (fprintf(f, "%s\n", h->addr) < 0)
        rc = -EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    snprintf(h->addr_file, sizeof(h->addr_file), "%s", path);
    return 0;
}

/* The address as it is bound: numeric host, real port. */
static void note_bound(struct sched_http *h, struct sockaddr_storage *addr)
{
    if (addr->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)h->port);
    else
        ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)h->port);
    sched_http_format_addr((const struct sockaddr *)addr, h->addr, sizeof(h->addr));
}

static int open_server(struct sched_http *h, const char *listen, const char *state_dir)
{
    struct sockaddr_storage addr;
    socklen_t len;
    int rc = sched_http_parse_addr(listen, &addr, &len);

    if (rc < 0) {
        snprintf(h->error, sizeof(h->error), "not a HOST:PORT address");
        return rc;
    }
    rc = start_daemon(h, &addr);
    if (rc < 0)
        return rc;
    h->poll_open = true;
    h->open_handles++;
    h->poll.data = h;
    rc = uv_poll_start(&h->poll, UV_READABLE, on_poll);
    if (rc < 0) {
        snprintf(h->error, sizeof(h->error), "%s", uv_strerror(rc));
        return rc;
    }
    note_bound(h, &addr);
    rc = write_addr_file(h, state_dir);
    if (rc < 0)
        GS_LOG(GS_LOG_WARN, "http=%s file=%s/%s error=\"%s\" address not written", h->addr,
               state_dir, HTTP_ADDR_FILE, strerror(-rc));
    run_daemon(h); /* arms the timer */
    return 0;
}

struct sched_http *sched_http_start(struct sched_ctx *s, uv_loop_t *loop, const char *listen,
                                    const char *state_dir)
{
    struct sched_http *h;

    if (listen == NULL)
        return NULL;
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        GS_LOG(GS_LOG_ERROR, "http=%s error=\"out of memory\" http listener not started", listen);
        return NULL;
    }
    h->s = s;
    uv_timer_init(loop, &h->timer);
    h->timer.data = h;
    h->timer_open = true;
    h->open_handles = 1;
    if (open_server(h, listen, state_dir) < 0) {
        GS_LOG(GS_LOG_ERROR, "http=%s error=\"%s\" http listener not started", listen,
               h->error[0] != '\0' ? h->error : "cannot start");
        sched_http_close(h, NULL, NULL);
        return NULL;
    }
    GS_LOG(GS_LOG_INFO, "http=%s listening", h->addr);
    return h;
}

int sched_http_port(const struct sched_http *h)
{
    return h->port;
}

static void on_handle_closed(uv_handle_t *handle)
{
    struct sched_http *h = handle->data;
    void (*closed)(void *data) = h->closed;
    void *data = h->closed_data;

    if (--h->open_handles > 0)
        return;
    free(h);
    if (closed != NULL)
        closed(data);
}

void sched_http_close(struct sched_http *h, void (*closed)(void *data), void *data)
{
    if (h == NULL)
        return;
    h->closed = closed;
    h->closed_data = data;
    if (h->poll_open)
        uv_close((uv_handle_t *)&h->poll, on_handle_closed);
    if (h->timer_open)
        uv_close((uv_handle_t *)&h->timer, on_handle_closed);
    if (h->daemon != NULL)
        MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
    if (h->addr_file[0] != '\0')
        unlink(h->addr_file);
}

/* --- addresses -------------------------------------------------------------------------- */

/* Splits "HOST:PORT" / "[V6]:PORT" into host (copied) and port; -EINVAL when malformed. */
static int split_addr(const char *spec, char *host, size_t size, const char **ret_port,
                      int *ret_family)
{
    const char *end, *colon;

    if (spec[0] == '[') {
        end = strchr(spec, ']');
        if (end == NULL || end[1] != ':')
            return -EINVAL;
        spec++;
        colon = end + 1;
        *ret_family = AF_INET6;
    } else {
        colon = strchr(spec, ':');
        if (colon == NULL || strchr(colon + 1, ':') != NULL)
            return -EINVAL;
        end = colon;
        *ret_family = AF_INET;
    }
    if (end == spec || (size_t)(end - spec) >= size)
        return -EINVAL;
    memcpy(host, spec, (size_t)(end - spec));
    host[end - spec] = '\0';
    *ret_port = colon + 1;
    return 0;
}

static bool port_ok(const char *port)
{
    size_t len = strlen(port);

    if (len == 0 || len > 5 || strspn(port, "0123456789") != len)
        return false;
    return atoi(port) <= 65535;
}

int sched_http_parse_addr(const char *spec, struct sockaddr_storage *ret_addr, socklen_t *ret_len)
{
    struct addrinfo hints, *res = NULL;
    const char *port;
    char host[256];
    int family;

    if (spec == NULL || split_addr(spec, host, sizeof(host), &port, &family) < 0 || !port_ok(port))
        return -EINVAL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &res) != 0 || res == NULL)
        return -EINVAL;
    memset(ret_addr, 0, sizeof(*ret_addr));
    memcpy(ret_addr, res->ai_addr, res->ai_addrlen);
    *ret_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int sched_http_format_addr(const struct sockaddr *addr, char *buf, size_t size)
{
    char host[INET6_ADDRSTRLEN];
    int n;

    if (addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)addr;

        if (inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host)) == NULL)
            return -EINVAL;
        n = snprintf(buf, size, "[%s]:%u", host, ntohs(a->sin6_port));
    } else if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)addr;

        if (inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host)) == NULL)
            return -EINVAL;
        n = snprintf(buf, size, "%s:%u", host, ntohs(a->sin_port));
    } else {
        return -EINVAL;
    }
    return n > 0 && (size_t)n < size ? 0 : -EINVAL;
}
