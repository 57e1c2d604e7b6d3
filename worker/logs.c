/*
 * logs.c: reading one chunk of a task's log file (see logs.h).
 *
 * The size is taken once, from fstat, and nothing past it is read: a task still writing
 * makes the file grow under us, and a chunk that stops at the size it reports lets the
 * follower's next request (from offset + len) pick up exactly where this one ended.
 */
#include "worker/logs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t clamp_max(uint32_t max_bytes)
{
    if (max_bytes == 0)
        return WRK_LOGS_DEFAULT_BYTES;
    return max_bytes > WRK_LOGS_MAX_BYTES ? WRK_LOGS_MAX_BYTES : max_bytes;
}

/* Where the chunk starts, never past the end. */
static uint64_t start_of(uint64_t size, uint64_t offset, bool from_end)
{
    if (from_end)
        return offset >= size ? 0 : size - offset;
    return offset > size ? size : offset;
}

/* Reads up to want bytes at start; *ret_got is short only when the file shrank. */
static int read_at(int fd, char *buf, size_t want, uint64_t start, size_t *ret_got)
{
    size_t got = 0;

    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, (off_t)(start + got));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    *ret_got = got;
    return 0;
}

/*
 * Opens path without blocking on a FIFO and without following a symbolic link at its end,
 * and checks that it is a regular file of the job's user: the worker reads as root, and a
 * job must not get another file's contents by naming it as its output.
 */
static int open_log(const char *path, uint32_t owner, struct stat *st)
{
    int fd, rc;

    if (path == NULL || path[0] != '/')
        return -EINVAL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    rc = fstat(fd, st) < 0 ? -errno : 0;
    if (rc == 0 && S_ISDIR(st->st_mode))
        rc = -EISDIR;
    else if (rc == 0 && !S_ISREG(st->st_mode))
        rc = -EINVAL;
    else if (rc == 0 && st->st_uid != owner)
        rc = -EACCES;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int wrk_logs_read(const char *path, uint32_t owner, uint64_t offset, bool from_end,
                  uint32_t max_bytes, struct wrk_logs_chunk *ret_chunk)
{
    struct wrk_logs_chunk c = {0};
    struct stat st;
    uint64_t left;
    size_t want;
    int fd = open_log(path, owner, &st), rc;

    if (fd < 0)
        return fd;
    c.size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    c.offset = start_of(c.size, offset, from_end);
    left = c.size - c.offset;
    want = left < clamp_max(max_bytes) ? (size_t)left : clamp_max(max_bytes);
    c.data = malloc(want + 1);
    if (c.data == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    rc = read_at(fd, c.data, want, c.offset, &c.len);
    if (rc < 0)
        goto out;
    c.data[c.len] = '\0';
    c.eof = c.len < want || c.offset + c.len >= c.size;
    *ret_chunk = c;
    c.data = NULL;
out:
    free(c.data);
    close(fd);
    return rc;
}

void wrk_logs_chunk_release(struct wrk_logs_chunk *chunk)
{
    if (chunk == NULL)
        return;
    free(chunk->data);
    memset(chunk, 0, sizeof(*chunk));
}
