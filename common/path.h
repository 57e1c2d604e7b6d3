/*
 * path.h: lexical absolute paths. Pure; any thread.
 */
#ifndef GS_PATH_H
#define GS_PATH_H

#include "common/buf.h"

/*
 * Appends path made absolute against cwd (itself absolute), with "." and ".." and repeated
 * slashes resolved lexically (symbolic links are not followed: "a/../b" is "b").
 * Returns 0, -EINVAL when cwd is not absolute, or -ENOMEM.
 */
int gs_path_absolute(const char *cwd, const char *path, struct gs_buf *out);

#endif
