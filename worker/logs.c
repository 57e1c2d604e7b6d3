/*
 * logs.c: reading one chunk of a task's log file (see logs.h).
 *
 * The size is taken once, from fstat, and nothing past it is read: a task still writing
 * makes the file grow under us, and a chunk that stops at the size it reports lets the
 * follower's next request (from offset + len) pick up exactly where this one ended.
 *
 * A root worker reading another user's log does it in a child process that has dropped to
 * that user and group first (setgroups, setgid, setuid), so the kernel judges every path
 * component and the file's mode as it would for the user: a job cannot name, as its output,
 * a file only root could reach. The child gets its buffer from the parent (it allocates
 * nothing: the worker has other threads, so only async-signal-safe calls follow fork) and
 * writes a fixed header and the bytes to a pipe the parent reads to the end. The worker
 * calls this in libuv's thread pool (worker_logs.c), so the child closes every other fd.
 */
#define _GNU_SOURCE /* pipe2, setgroups */

#include "worker/logs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/path.h"

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
 * and checks that it is a regular file of the job's user: a job must not get another file's
 * contents by naming it as its output.
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

/* Reads the chunk into c->data, which has room for clamp_max(max_bytes) + 1 bytes. */
static int read_chunk(const char *path, uint32_t owner, uint64_t offset, bool from_end,
                      uint32_t max_bytes, struct wrk_logs_chunk *c)
{
    struct stat st;
    uint64_t left;
    size_t want;
    int fd = open_log(path, owner, &st), rc;

    if (fd < 0)
        return fd;
    c->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    c->offset = start_of(c->size, offset, from_end);
    left = c->size - c->offset;
    want = left < clamp_max(max_bytes) ? (size_t)left : clamp_max(max_bytes);
    rc = read_at(fd, c->data, want, c->offset, &c->len);
    if (rc == 0) {
        c->data[c->len] = '\0';
        c->eof = c->len < want || c->offset + c->len >= c->size;
    }
    close(fd);
    return rc;
}

/* What the reader child sends ahead of the bytes. */
struct reader_header {
    int32_t rc;
    uint32_t len;
    uint64_t offset, size;
    uint8_t eof;
};

/* Reads exactly len bytes; -EIO when the pipe ends first. */
static int read_all(int fd, void *p, size_t len)
{
    char *b = p;

    while (len > 0) {
        ssize_t n = read(fd, b, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The child: drop to uid/gid, read, send; never returns. */
static void reader_child(int out, const char *path, uint32_t uid, uint32_t gid, uint64_t offset,
                         bool from_end, uint32_t max_bytes, struct wrk_logs_chunk *c)
{
    struct reader_header h = {0};

    /* Nothing of the worker's but its pipe end: forked from a pool thread at any moment, it
     * could hold a launch's exec-status pipe, whose end the loop waits for, while it reads
     * (from a filesystem that may hang). */
    if (out > 0)
        (void)close_range(0, (unsigned)out - 1, 0);
    (void)close_range((unsigned)out + 1, ~0U, 0);
    if (setgroups(0, NULL) < 0 || setgid((gid_t)gid) < 0 || setuid((uid_t)uid) < 0 ||
        getuid() != (uid_t)uid || geteuid() != (uid_t)uid)
        h.rc = -EPERM;
    else
        h.rc = read_chunk(path, uid, offset, from_end, max_bytes, c);
    if (h.rc == 0) {
        h.len = (uint32_t)c->len;
        h.offset = c->offset;
        h.size = c->size;
        h.eof = c->eof;
    }
    if (gs_write_all(out, &h, sizeof(h)) < 0 ||
        (h.rc == 0 && gs_write_all(out, c->data, c->len) < 0))
        _exit(1);
    _exit(0);
}

/* read_chunk in a child that is uid/gid. */
static int read_as(const char *path, uint32_t uid, uint32_t gid, uint64_t offset, bool from_end,
                   uint32_t max_bytes, struct wrk_logs_chunk *c)
{
    struct reader_header h;
    int p[2], rc, status;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(p[0]);
        close(p[1]);
        return rc;
    }
    if (pid == 0) {
        close(p[0]);
        reader_child(p[1], path, uid, gid, offset, from_end, max_bytes, c);
    }
    close(p[1]);
    rc = read_all(p[0], &h, sizeof(h));
    if (rc == 0 && h.rc < 0)
        rc = h.rc;
    if (rc == 0 && h.len > clamp_max(max_bytes))
        rc = -EIO;
    if (rc == 0)
        rc = read_all(p[0], c->data, h.len);
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0) {
        c->len = h.len;
        c->data[c->len] = '\0';
        c->offset = h.offset;
        c->size = h.size;
        c->eof = h.eof != 0;
    }
    return rc;
}

int wrk_logs_read(const char *path, uint32_t owner, uint32_t group, uint64_t offset, bool from_end,
                  uint32_t max_bytes, struct wrk_logs_chunk *ret_chunk)
{
    struct wrk_logs_chunk c = {0};
    int rc;

    if (path == NULL || path[0] != '/')
        return -EINVAL;
    c.data = malloc((size_t)clamp_max(max_bytes) + 1);
    if (c.data == NULL)
        return -ENOMEM;
    if (geteuid() == 0 && owner != 0)
        rc = read_as(path, owner, group, offset, from_end, max_bytes, &c);
    else
        rc = read_chunk(path, owner, offset, from_end, max_bytes, &c);
    if (rc == 0) {
        *ret_chunk = c;
        c.data = NULL;
    }
    free(c.data);
    return rc;
}

void wrk_logs_chunk_release(struct wrk_logs_chunk *chunk)
{
    if (chunk == NULL)
        return;
    free(chunk->data);
    memset(chunk, 0, sizeof(*chunk));
}
