/*
 * shard.h: one dataset shard, a file of token ids behind a fixed header (the format is
 * specified in sharding/README.md and at the top of shard.c).
 *
 * A shard is written once, by shard_writer: tokens go to a temporary file beside the
 * final one, the header (with the token count and the CRC-32C of the token bytes) is written
 * last, the file is fsynced and renamed into place, so a reader never sees a half-written
 * shard under the final name.
 *
 * A shard is read through shard_open(), which validates everything the header claims
 * against the file (magic, version, dtype, vocabulary, size) before returning, and with
 * SHARD_VERIFY also the checksum and every token id. shard_read() checks the ids it
 * delivers too, so a bad shard is never read silently. Every error message starts with
 * "shard PATH:" and says what is wrong.
 *
 * Threading: a writer belongs to one thread. An open shard is read with pread() only, so
 * any number of threads may call shard_read() on it at once.
 */
#ifndef SHARD_H
#define SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SHARD_MAGIC "GSSHARD" /* 8 bytes on disk, the NUL included */
#define SHARD_VERSION 1
#define SHARD_HEADER_SIZE 64

/* Token width on disk; the value is the number of bytes per token. */
enum shard_dtype {
    SHARD_U8 = 1,
    SHARD_U16 = 2,
    SHARD_U32 = 4,
};

struct shard_header {
    uint32_t version;
    enum shard_dtype dtype;
    uint32_t vocab;  /* every token id is below it; 1 .. 2^(8 * width) */
    uint64_t tokens; /* count */
    uint32_t crc32c; /* of the token bytes as stored (little-endian), gs_crc32c from 0 */
};

/* "u8", "u16", "u32"; "?" for anything else. */
const char *shard_dtype_name(enum shard_dtype dtype);
/* "u8", "u16" or "u32" to the dtype. Returns 0 or -EINVAL. */
int shard_dtype_parse(const char *name, enum shard_dtype *ret_dtype);
/* The narrowest dtype holding ids below vocab (vocab >= 1). */
enum shard_dtype shard_dtype_for_vocab(uint64_t vocab);
/* Whether every id below vocab fits dtype, and vocab >= 1. */
bool shard_vocab_fits(enum shard_dtype dtype, uint64_t vocab);

/* --- writing --- */

struct shard_writer;

/*
 * Starts the shard that will be at path (a temporary file in the same directory until
 * commit). Returns 0 with a writer that the caller ends with commit or abort, -EINVAL for a
 * vocab that does not fit dtype, or -errno; err names the path.
 */
int shard_writer_open(const char *path, enum shard_dtype dtype, uint32_t vocab,
                      struct shard_writer **ret_writer, struct gs_error *err);
/* Appends n token ids, each below the vocab (else -EINVAL, nothing appended). */
int shard_writer_append(struct shard_writer *w, const uint32_t *tokens, size_t n,
                        struct gs_error *err);
/* Tokens appended so far. */
uint64_t shard_writer_tokens(const struct shard_writer *w);
/*
 * Writes the header, fsyncs, renames the file to its path and fsyncs the directory. Frees
 * the writer whatever the result (on failure the temporary file is removed). ret_header
 * (NULL allowed) gets the header written.
 */
int shard_writer_commit(struct shard_writer *w, struct shard_header *ret_header,
                        struct gs_error *err);
/* Removes the temporary file and frees the writer; NULL allowed. */
void shard_writer_abort(struct shard_writer *w);

/* Open, append, commit in one call: a shard of n tokens. */
int shard_write(const char *path, enum shard_dtype dtype, uint32_t vocab, const uint32_t *tokens,
                size_t n, struct shard_header *ret_header, struct gs_error *err);

/* --- reading --- */

/* shard_open() flag: also read every token, checking the checksum and every id. */
#define SHARD_VERIFY 1u

struct shard_file;

/*
 * Opens and validates the shard at path. Returns 0 with a shard (shard_close), -ENOENT or
 * another -errno when it cannot be opened or read, -EBADMSG when it is corrupt or truncated;
 * err says which shard and what is wrong.
 */
int shard_open(const char *path, unsigned flags, struct shard_file **ret_shard,
               struct gs_error *err);
void shard_close(struct shard_file *s); /* NULL allowed */

const struct shard_header *shard_header(const struct shard_file *s);

/*
 * Reads count tokens starting at token first into out as int32 ids, whatever the dtype.
 * Returns 0, -ERANGE when the range passes the end, -EIO when the file has become short or
 * unreadable, -EBADMSG when an id is not below the vocab; err names the shard. Thread-safe.
 */
int shard_read(struct shard_file *s, uint64_t first, size_t count, int32_t *out,
               struct gs_error *err);

#endif
