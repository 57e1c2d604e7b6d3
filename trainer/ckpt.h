/*
 * ckpt.h: asynchronous checkpoints. The training step copies its state into a staging buffer
 * (trn_ckpt_stage, then the caller serializes into it, see tensorfile.h) and hands it over
 * (trn_ckpt_submit); a background thread writes it durably as DIR/ckpt-<step>.gstf (temporary
 * file, fsync, rename) and then deletes all but the newest `keep` checkpoints. At most one
 * write is in flight: staging the next one waits for it, and that wait is the "checkpoint
 * stall" the metrics report. A failed write is returned by the next stage/flush call and
 * leaves the previous checkpoints in place.
 *
 * One thread (the training loop) calls these functions; the writer thread touches only the
 * buffer it was handed and the directory.
 */
#ifndef TRN_CKPT_H
#define TRN_CKPT_H

#include <stddef.h>
#include <stdint.h>

struct trn_ckpt_writer;

/* dir must exist (or be creatable: it is made with mode 0755). Returns 0 or -errno. */
int trn_ckpt_writer_new(const char *dir, uint32_t keep, struct trn_ckpt_writer **ret);
/* Waits for a write in flight, then stops the thread; NULL allowed. */
void trn_ckpt_writer_free(struct trn_ckpt_writer *w);

/*
 * Waits until no write is in flight (adding the nanoseconds waited to *stall_ns when not
 * NULL), grows the staging buffer to size bytes if needed and returns it in *ret_buf.
 * Returns 0, the previous write's -errno (the buffer is still handed out), or -ENOMEM.
 */
int trn_ckpt_stage(struct trn_ckpt_writer *w, size_t size, void **ret_buf, uint64_t *stall_ns);
/* Starts writing the first len staged bytes as the checkpoint of step. 0 or -EINVAL. */
int trn_ckpt_submit(struct trn_ckpt_writer *w, uint64_t step, size_t len);
/* Waits for the write in flight; returns its result (0 or -errno). */
int trn_ckpt_flush(struct trn_ckpt_writer *w, uint64_t *stall_ns);
/* Path of the newest checkpoint this writer completed, or NULL. Valid until the next call. */
const char *trn_ckpt_last_path(const struct trn_ckpt_writer *w);
/* Wall-clock ms the newest completed checkpoint was on disk (0: none yet); any time. */
uint64_t trn_ckpt_last_done_ms(struct trn_ckpt_writer *w);

/*
 * While t is set (NULL: no more), each checkpoint the thread writes adds a "write" span to
 * t's checkpoint writer lane (trace.h): the durable write and the pruning, with its step and
 * bytes. t must outlive the writer, or be set back to NULL first. Setting NULL waits for a
 * write in flight that adds a span (its result is left for stage or flush to report), so
 * a trace written next has it.
 */
struct trn_trace;
void trn_ckpt_trace(struct trn_ckpt_writer *w, struct trn_trace *t);

/*
 * The newest checkpoint in dir by step number: *ret_path (free() it) and *ret_step.
 * Returns 0, -ENOENT when there is none (or no dir), or -errno.
 */
int trn_ckpt_find_latest(const char *dir, char **ret_path, uint64_t *ret_step);

#endif
