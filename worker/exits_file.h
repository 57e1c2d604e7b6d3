/*
 * exits_file.h: the task exits a worker has not yet had acknowledged, on disk. An exit is
 * written here (temporary file, fsync, rename, fsync of the directory) before it is sent,
 * and the file rewritten without it once gschedd acknowledges it; a worker started again
 * after a crash loads the file and reports those exits in its next registration. So a job
 * that finished while both daemons went down is not requeued as if its task had been lost.
 *
 * Format: the exits as one packed NodeRegister holding only unacked_exits (the message the
 * worker sends them in anyway). Loop thread only; no global state.
 */
#ifndef WRK_EXITS_FILE_H
#define WRK_EXITS_FILE_H

#include <stddef.h>

#include "proto/gsched.pb-c.h"

/* Replaces the file at path with these n exits, durably (see above); n 0 removes it.
 * Returns 0 or a negative errno. */
int wrk_exits_save(const char *path, Gs__TaskExit *const *exits, size_t n);

/* The exits the file at path holds, unpacked into *ret (NULL and 0 without a file); the
 * caller frees it with gs__node_register__free_unpacked. 0, -EBADMSG for a file that does
 * not unpack, or another negative errno. */
int wrk_exits_load(const char *path, Gs__NodeRegister **ret);

#endif
