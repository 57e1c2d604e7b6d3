/*
 * path.h: lexical absolute paths (pure), and reading a small file whole (/proc, /sys).
 * Any thread.
 */
#ifndef GS_PATH_H
#define GS_PATH_H

#include <sys/types.h>

#include "common/buf.h"

/*
 * Appends path made absolute against cwd (itself absolute), with "." and ".." and repeated
 * slashes resolved lexically (symbolic links are not followed: "a/../b" is "b").
 * Returns 0, -EINVAL when cwd is not absolute, or -ENOMEM.
 */
int gs_path_absolute(const char *cwd, const char *path, struct gs_buf *out);

/* Reads at most size - 1 bytes of path into buf, NUL-terminated, with one read(2) (what a
 * /proc or /sys file gives at once). Returns the length or a negative errno. */
ssize_t gs_path_read_small(const char *path, char *buf, size_t size);

/* Writes all len bytes to fd, retrying short writes and EINTR. 0 or a negative errno. */
int gs_write_all(int fd, const void *data, size_t len);

#endif
