/*
 * tensorfile.h: files of named tensors (".gstf"), the one format of the trainer's
 * checkpoints and of the reference fixtures under tests/reference/ (written by PyTorch there;
 * the layout is in tests/reference/gen_fixtures.py):
 *
 *     "GSTF", u32 version, u32 count, then per tensor: u16 name length, name, u8 dtype
 *     (0 float32, 1 int32, 2 uint8 raw bytes), u8 rank (<= 8), u32 dims[rank], data
 *
 * all little-endian. Version 2 (what gsched writes) adds a u32 CRC-32C of every byte before
 * it at the end; version 1 (the fixtures) has none. Reading checks every length against the
 * file's size, so a truncated or corrupt file is an error naming the file and what is wrong,
 * never a wild read.
 */
#ifndef TRN_TENSORFILE_H
#define TRN_TENSORFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define TRN_TF_MAX_RANK 8

enum trn_tf_dtype {
    TRN_TF_F32 = 0,
    TRN_TF_I32 = 1,
    TRN_TF_U8 = 2,
};

struct trn_tensor {
    const char *name;
    enum trn_tf_dtype dtype;
    uint32_t rank;
    uint32_t dims[TRN_TF_MAX_RANK];
    const void *data; /* borrowed: the caller's (writing) or the file's (reading) */
};

/* Elements and bytes of a tensor. */
size_t trn_tensor_count(const struct trn_tensor *t);
size_t trn_tensor_bytes(const struct trn_tensor *t);

/* --- writing: size, then serialize into the caller's buffer (a checkpoint's staging) --- */

/* Bytes of a version-2 file holding the n tensors. */
size_t trn_tf_size(const struct trn_tensor *t, size_t n);
/* Writes the file image into buf (size bytes, at least trn_tf_size). 0 or -EINVAL. */
int trn_tf_serialize(void *buf, size_t size, const struct trn_tensor *t, size_t n);

/*
 * Writes len bytes to path durably: a temporary file beside it, fsync, rename over path,
 * fsync of the directory. A crash leaves the old file or the new one, never a mix.
 * Returns 0 or -errno.
 */
int trn_write_file_durably(const char *path, const void *data, size_t len);

/* When each part of a durable write ended (gs_clock_mono_ns), for a profiler's timeline. */
struct trn_write_times {
    uint64_t start, written, synced, renamed; /* written: the data; synced: fsync and close;
                                               * renamed: rename and the directory's fsync */
};
/* trn_write_file_durably, filling *times (NULL: not timed). */
int trn_write_file_durably_timed(const char *path, const void *data, size_t len,
                                 struct trn_write_times *times);

/* --- reading --- */

struct trn_tf;

/*
 * Reads and checks a whole file (the CRC too, for version 2). Returns 0, or -errno with
 * "PATH: what is wrong" in err (NULL allowed).
 */
int trn_tf_open(const char *path, struct trn_tf **ret, struct gs_buf *err);
/* The same for a file image in memory, which must outlive the result; name is for errors. */
int trn_tf_parse(const void *data, size_t len, const char *name, struct trn_tf **ret,
                 struct gs_buf *err);
void trn_tf_close(struct trn_tf *tf);

size_t trn_tf_ntensors(const struct trn_tf *tf);
const struct trn_tensor *trn_tf_at(const struct trn_tf *tf, size_t i);
/* The tensor of that name, or NULL. */
const struct trn_tensor *trn_tf_find(const struct trn_tf *tf, const char *name);
/*
 * The tensor of that name if it has that dtype and element count; else NULL with
 * "FILE: tensor NAME ..." in err. For loading state into preallocated arrays.
 */
const struct trn_tensor *trn_tf_expect(const struct trn_tf *tf, const char *name,
                                       enum trn_tf_dtype dtype, size_t count, struct gs_buf *err);

#endif
