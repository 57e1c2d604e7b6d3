/*
 * logs.h: one chunk of a task's log file, for a LogsRequest the scheduler forwards (`gsched
 * logs`, `gsched logs -f`). The file is read where it was written, on this node, so the
 * scheduler never needs a shared filesystem. A follower asks again from offset + len until
 * the task has ended and eof is set.
 *
 * File reading (in a short-lived child process when root reads for another user): no loop,
 * no global state, any thread. The chunk's data is malloc'd
 * and owned by the chunk; wrk_logs_chunk_release() frees it.
 */
#ifndef WRK_LOGS_H
#define WRK_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WRK_LOGS_DEFAULT_BYTES (64u * 1024u) /* max_bytes 0 */
#define WRK_LOGS_MAX_BYTES (1024u * 1024u)   /* a larger max_bytes is cut to this */

struct wrk_logs_chunk {
    char *data; /* len bytes and a NUL (logs are text, callers may print it) */
    size_t len;
    uint64_t offset; /* where data starts in the file, at most size */
    uint64_t size;   /* the file's size when it was opened */
    bool eof;        /* data reaches the end of the file */
};

/*
 * Reads at most max_bytes (see the limits above) of the regular file at the absolute path,
 * from offset, or from max(0, size - offset) when from_end (a tail). An offset past the end
 * gives an empty chunk at the end. The file must belong to owner (the job's user) and path
 * must not end in a symbolic link. Run as root for another user, the file is opened and read
 * by a child process that is owner and group (see logs.c): what that user cannot open
 * fails as it would for them. Returns 0 with *ret_chunk, or -EINVAL (a relative path, or not
 * a regular file), -EISDIR, -EACCES (another user's file, or one the user may not read),
 * -ELOOP (a link), -EPERM (the drop to the user failed), -ENOMEM, -EIO (the reader child
 * died), or what open(2)/pread(2) failed with (-ENOENT, ...); *ret_chunk is written only on
 * success.
 */
int wrk_logs_read(const char *path, uint32_t owner, uint32_t group, uint64_t offset, bool from_end,
                  uint32_t max_bytes, struct wrk_logs_chunk *ret_chunk);

/* Frees the data; accepts a zeroed or released chunk. */
void wrk_logs_chunk_release(struct wrk_logs_chunk *chunk);

#endif
