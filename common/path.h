/*
 * path.h: lexical absolute paths (pure), reading a small file whole (/proc, /sys), and
 * whole files read and replaced durably. Any thread.
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

/*
 * Replaces path with len bytes of data, all or nothing: written to PATH.tmp-XXXXXX (mode),
 * fsynced, renamed over path, and the directory fsynced, so a reader sees the old file or
 * the new one, and the new one survives a crash once this returns 0. Else a negative errno
 * (the temporary file removed).
 */
int gs_path_replace(const char *path, const void *data, size_t len, mode_t mode);
/* fsync of the directory holding path, so that a rename or unlink in it is durable. */
int gs_path_fsync_parent(const char *path);
/* Appends the whole file at path to out. 0 or a negative errno. */
int gs_path_read_all(const char *path, struct gs_buf *out);

#endif
