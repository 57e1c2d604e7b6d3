/*
 * sched_web.c: the status page's files over gschedd's HTTP server: `/` is index.html, and
 * app.js and style.css beside it; everything else is 404. The page itself is plain HTML,
 * CSS and JavaScript (scheduler/web/, no build step, nothing fetched from elsewhere) that
 * reads /api/v1 and draws the cluster.
 *
 * Where the files are: an installed gschedd ($prefix/sbin) has them in
 * $prefix/share/gsched/web, found from its own path; one run from the build tree reads the
 * source tree's (GSCHED_SOURCE_WEB_DIR). The files are small and read on each request on
 * the loop thread, so an edited page shows on reload.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "gsched_config.h"
#include "scheduler/sched_http_routes.h"

#define WEB_FILE_MAX (1u << 20)

static const struct {
    const char *name, *type;
} files[] = {
    {"index.html", "text/html; charset=utf-8"},
    {"app.js", "text/javascript; charset=utf-8"},
    {"style.css", "text/css; charset=utf-8"},
};

/* The folder holding index.html, into dir. */
static void web_dir(char *dir, size_t size)
{
    char exe[1024], probe[1200];
    size_t len = sizeof(exe);
    char *slash;

    if (uv_exepath(exe, &len) == 0 && (slash = strrchr(exe, '/')) != NULL) {
        *slash = '\0';
        snprintf(probe, sizeof(probe), "%s/../share/gsched/web/index.html", exe);
        if (access(probe, R_OK) == 0) {
            snprintf(dir, size, "%s/../share/gsched/web", exe);
            return;
        }
    }
    snprintf(dir, size, "%s", GSCHED_SOURCE_WEB_DIR);
}

static int read_into(const char *path, struct gs_buf *body)
{
    char chunk[8192];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;
    int rc = 0;

    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -errno;
    while (rc == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0)
            rc = errno == EINTR ? 0 : -errno;
        else if (body->len + (size_t)n > WEB_FILE_MAX)
            rc = -EFBIG;
        else
            rc = gs_buf_append(body, chunk, (size_t)n);
    }
    close(fd);
    return rc;
}

int sched_web_file(struct sched_ctx *s, const struct sched_http_request *req, struct gs_buf *body,
                   const char **content_type)
{
    const char *name = req->rest[0] != '\0' ? req->rest : "index.html";
    char dir[1100], path[1200];

    (void)s;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (strcmp(name, files[i].name) != 0)
            continue;
        web_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
        *content_type = files[i].type;
        return read_into(path, body);
    }
    return -ENOENT;
}
