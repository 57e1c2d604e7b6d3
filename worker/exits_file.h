/*
 * exits_file.h: the task exits a worker has not yet had acknowledged, on disk, so that a
 * job that finished while both daemons went down is not requeued as if its task had been
 * lost: a worker started again after a crash loads the file and reports those exits in its
 * next registration.
 *
 * The file is a journal. An exit is appended and the file fdatasynced before the exit is
 * sent. An acknowledgement is appended without a sync, and once no exit is left
 * unacknowledged the file is cut back to its header, also without one: a crash that loses
 * either only makes the next worker report an acknowledged exit again, which gschedd takes
 * as the repeat it is. So a task's end costs one small synced append, where rewriting the
 * whole file durably (temporary file, fsync, rename, fsync of the directory) at each exit
 * and each acknowledgement cost four syncs. A journal that grows past WRK_EXITS_COMPACT
 * bytes while exits stay unacknowledged (gschedd away) is rewritten that way, once.
 *
 * Format: the 8 bytes "GSEXIT1\n", then records: body length and CRC-32C of the body (each
 * 4 bytes, little-endian), body = a kind byte and a packed message: 'E' a TaskExit, 'A' a
 * TaskRef acknowledging the exit of that job, step, rank and attempt. Loading replays them;
 * a record cut short or failing its checksum ends the journal (a crash interrupted that
 * append, before its sync, so its exit was never sent). A file without the header is the
 * format earlier workers wrote (one packed NodeRegister holding only unacked_exits) and
 * loads as such. Loop thread only; no global state.
 */
#ifndef WRK_EXITS_FILE_H
#define WRK_EXITS_FILE_H

#include <stddef.h>

#include "proto/gsched.pb-c.h"

#define WRK_EXITS_COMPACT (1u << 20)

struct wrk_exits_file;

/*
 * Opens the journal at path, creating it, after loading the exits it holds unacknowledged
 * into *ret_exits (an array of *ret_n, each from gs__task_exit__unpack: the caller frees
 * them with gs__task_exit__free_unpacked and the array with free; NULL and 0 when none);
 * the file is rewritten durably with just those. 0 or a negative errno (-EBADMSG: a file
 * without the header that does not unpack); nothing is opened then.
 */
int wrk_exits_open(const char *path, struct wrk_exits_file **ret, Gs__TaskExit ***ret_exits,
                   size_t *ret_n);
void wrk_exits_close(struct wrk_exits_file *f);

/* Appends an exit and syncs it. 0 or a negative errno. */
int wrk_exits_add(struct wrk_exits_file *f, const Gs__TaskExit *e);

/*
 * Records the acknowledgement of the exits refs[0..n), unsynced (see above), given the
 * nleft exits still unacknowledged after them: with none the journal is cut back to its
 * header; past WRK_EXITS_COMPACT bytes it is rewritten with just those. 0 or a negative
 * errno.
 */
int wrk_exits_ack(struct wrk_exits_file *f, Gs__TaskRef *const *refs, size_t n,
                  Gs__TaskExit *const *left, size_t nleft);

/* The journal's size in bytes (its header included): for tests. */
size_t wrk_exits_size(const struct wrk_exits_file *f);

#endif
