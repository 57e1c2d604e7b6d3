/*
 * path.c: paths made absolute without touching the file system (see path.h), for job
 * files' and batch scripts' working directories and output files, which name places on
 * the nodes that run them rather than where the CLI runs.
 */
#include "common/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Drops the last component of the path being built after base ("/a/b" -> "/a"). */
static void drop_component(struct gs_buf *out, size_t base)
{
    size_t len = out->len;

    while (len > base && out->data[len - 1] != '/')
        len--;
    if (len > base)
        len--; /* the slash before it */
    gs_buf_truncate(out, len);
}

/* Appends path's components to the path being built after base, resolving . and .. */
static int append_components(struct gs_buf *out, size_t base, const char *path)
{
    const char *p = path;
    int rc = 0;

    while (rc == 0 && *p != '\0') {
        size_t len = strcspn(p, "/");

        if (len == 2 && p[0] == '.' && p[1] == '.')
            drop_component(out, base);
        else if (len > 0 && !(len == 1 && p[0] == '.'))
            rc = gs_buf_putc(out, '/') < 0 ? -ENOMEM : gs_buf_append(out, p, len);
        p += len;
        while (*p == '/')
            p++;
    }
    return rc;
}

int gs_path_absolute(const char *cwd, const char *path, struct gs_buf *out)
{
    size_t base = out->len;
    int rc = 0;

    if (path[0] != '/') {
        if (cwd == NULL || cwd[0] != '/')
            return -EINVAL;
        rc = append_components(out, base, cwd);
    }
    if (rc == 0)
        rc = append_components(out, base, path);
    if (rc == 0 && out->len == base)
        rc = gs_buf_putc(out, '/');
    if (rc < 0)
        gs_buf_truncate(out, base);
    return rc;
}

ssize_t gs_path_read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0)
        return -errno;
    len = read(fd, buf, size - 1);
    if (len < 0)
        len = -errno;
    else
        buf[len] = '\0';
    close(fd);
    return len;
}

int gs_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int gs_path_fsync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    int fd, rc = 0;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else if (snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path) >= (int)sizeof(dir))
        return -ENAMETOOLONG;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0 && errno != EINVAL) /* some file systems cannot sync directories */
        rc = -errno;
    close(fd);
    return rc;
}

int gs_path_replace(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    int fd, rc;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    fd = mkstemp(tmp);
    if (fd < 0)
        return -errno;
    rc = gs_write_all(fd, data, len);
    if (rc == 0 && (fchmod(fd, mode) < 0 || fsync(fd) < 0))
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    return gs_path_fsync_parent(path);
}

int gs_path_read_all(const char *path, struct gs_buf *out)
{
    FILE *f = fopen(path, "rb");
    int rc;

    if (f == NULL)
        return -errno;
    rc = gs_buf_read_stream(out, f);
    fclose(f);
    return rc;
}
