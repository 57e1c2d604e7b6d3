/*
 * manifest.h: a dataset, a directory of shards listed by DIR/manifest.toml (written by
 * `gsched shard build`, read by `gsched shard check|info` and the trainer's loader).
 *
 *     # gsched dataset manifest
 *     format = 1
 *
 *     [[shard]]
 *     file = "train-00000.bin"   # relative to DIR, no '/' in it
 *     split = "train"            # or "val"
 *     tokens = 1048576
 *     crc32c = 0xE3069283        # of the token bytes, as in the shard's header
 *     dtype = "u16"
 *     vocab = 50257
 *
 * The shards are listed in stream order: the loader numbers samples in that order. Every
 * shard of a dataset has the same vocab. Loading parses the file (errors as
 * "DIR/manifest.toml:LINE:COL: ...") and checks each listed shard's header against its entry
 * (errors naming the shard); the full checksum pass is shard_manifest_check_shard() with
 * SHARD_VERIFY.
 *
 * A manifest owns its strings; shard_manifest_free() frees them. Immutable once loaded, so any
 * number of threads may read one.
 */
#ifndef SHARD_MANIFEST_H
#define SHARD_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sharding/shard.h"

#define SHARD_MANIFEST_FILE "manifest.toml"
#define SHARD_MANIFEST_FORMAT 1

enum shard_split {
    SHARD_SPLIT_TRAIN = 0,
    SHARD_SPLIT_VAL,
};

struct shard_manifest_shard {
    char *file; /* as listed: relative to the dataset directory */
    char *path; /* dir/file */
    enum shard_split split;
    uint64_t tokens;
    uint32_t crc32c;
    enum shard_dtype dtype;
    uint32_t vocab;
};

struct shard_manifest {
    char *dir;
    uint32_t vocab; /* every shard's; 0 while there are none */
    size_t nshards;
    struct shard_manifest_shard *shards;
    size_t cap;
};

/* "train" / "val". */
const char *shard_split_name(enum shard_split split);

/* An empty manifest for dir (where it will be written); NULL when out of memory. */
struct shard_manifest *shard_manifest_new(const char *dir);
void shard_manifest_free(struct shard_manifest *m); /* NULL allowed */

/*
 * Lists a shard written into the manifest's directory under file, as its header says.
 * -EINVAL when file is not a plain name or its vocab differs from the shards before it.
 */
int shard_manifest_add(struct shard_manifest *m, const char *file, enum shard_split split,
                       const struct shard_header *h, struct gs_error *err);

/* Writes DIR/manifest.toml (temporary file, fsync, rename). Returns 0 or -errno. */
int shard_manifest_write(const struct shard_manifest *m, struct gs_error *err);

/* Reads and parses DIR/manifest.toml without opening any shard. */
int shard_manifest_read(const char *dir, struct shard_manifest **ret_manifest,
                        struct gs_error *err);

/*
 * Opens shard i and checks its header (and with SHARD_VERIFY its checksum and ids)
 * against the manifest. Returns 0 or a negative errno with err naming the shard.
 */
int shard_manifest_check_shard(const struct shard_manifest *m, size_t i, unsigned flags,
                               struct gs_error *err);

/* shard_manifest_read, then shard_manifest_check_shard (headers only) for every shard. */
int shard_manifest_load(const char *dir, struct shard_manifest **ret_manifest,
                        struct gs_error *err);

/* Tokens of one split over every shard. */
uint64_t shard_manifest_tokens(const struct shard_manifest *m, enum shard_split split);

#endif
