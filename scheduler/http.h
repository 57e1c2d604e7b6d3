/*
 * http.h: gschedd's HTTP server (scheduler.http in gsched.toml): Prometheus /metrics and
 * the read-only /api/v1 JSON routes, for dashboards and a status page.
 *
 * libmicrohttpd runs without threads of its own, driven from gschedd's libuv loop: it is
 * started in external-polling epoll mode, a uv_poll_t watches its epoll descriptor and runs
 * it when that is readable, and a uv_timer_t runs it when MHD_get_timeout says so (timed-out
 * connections, work left over). Every handler therefore runs on the loop thread and reads
 * the scheduler's state directly, with no locks; it must be quick and never block.
 *
 * Routes are a fixed table of exact paths (and path prefixes ending in '/', such as
 * /api/v1/jobs/ for /api/v1/jobs/ID). GET and HEAD only: any other method is answered 405
 * with an Allow header; an unknown path 404; a handler's -ENOENT 404, -EINVAL 400, any
 * other failure 500, each with a JSON body {"error": "..."}.
 *
 * There is no authentication: the data is read-only, and the default address is loopback.
 * Binding it elsewhere shows every job's name, user and placement to whoever can connect.
 *
 * Monitoring must never take the scheduler down: a server that cannot start logs one error
 * line and gschedd runs on without it. Loop thread only.
 */
#ifndef SCHED_HTTP_H
#define SCHED_HTTP_H

#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#include "common/buf.h"

struct sched_ctx;
struct sched_http;

/* One request as a handler sees it (borrowed for the handler's call only). */
struct sched_http_request {
    const char *path; /* the URL path, decoded, without the query string */
    const char *rest; /* a prefix route's remainder ("42" for /api/v1/jobs/42), else "" */
    void *conn;       /* the server's connection, for sched_http_arg() */
};

/*
 * A route's handler: appends the response body to body and points *content_type at a
 * static string. Returns 0 (200), -ENOENT (404), -EINVAL (400) or another negative errno
 * (500); on failure whatever it appended is dropped.
 */
typedef int (*sched_http_handler)(struct sched_ctx *s, const struct sched_http_request *req,
                                  struct gs_buf *body, const char **content_type);

/* The value of query argument key (?all=1 gives "1"; ?all gives ""), or NULL if absent. */
const char *sched_http_arg(const struct sched_http_request *req, const char *key);

/*
 * Parses "HOST:PORT" (IPv4 dotted, a name such as localhost, or [IPv6]) into *ret_addr
 * with getaddrinfo (blocking: call it at start only). The port must be 0-65535 (0: any
 * free port). Returns 0, or -EINVAL for a malformed spec or a host that does not resolve.
 */
int sched_http_parse_addr(const char *spec, struct sockaddr_storage *ret_addr, socklen_t *ret_len);
/* "HOST:PORT" of addr, numeric ("[::1]:80" for IPv6), into buf. Returns 0 or -EINVAL. */
int sched_http_format_addr(const struct sockaddr *addr, char *buf, size_t size);

/*
 * Starts serving on listen ("HOST:PORT") on loop for s; writes the bound address to
 * STATE_DIR/http.addr (temporary file, then rename) and logs "http=HOST:PORT listening".
 * Returns NULL when listen is NULL (turned off) or when it cannot start (one error line
 * logged: http=ADDR error="..." http listener not started). The caller closes it with
 * sched_http_close().
 */
struct sched_http *sched_http_start(struct sched_ctx *s, uv_loop_t *loop, const char *listen,
                                    const char *state_dir);
/* The bound port (the real one when the configuration said 0). */
int sched_http_port(const struct sched_http *h);
/*
 * Stops serving at once (open connections are dropped), removes STATE_DIR/http.addr, and
 * frees h once its libuv handles have closed; closed(data) is then called (closed may be
 * NULL). A NULL h does nothing, and closed is not called.
 */
void sched_http_close(struct sched_http *h, void (*closed)(void *data), void *data);

#endif
