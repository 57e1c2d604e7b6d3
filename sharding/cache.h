/*
 * cache.h: the node-local shard cache, the datasets a worker keeps on its own disk so that
 * jobs read their shards where their GPUs are (issue 19, "data where the GPUs are").
 *
 * Layout. Under the cache root (the worker's `worker.data_dir`), one directory per dataset,
 * named by the dataset's id (shard_dataset_id: 32 lowercase hex digits of the SHA-256 of its
 * manifest.toml):
 *
 *     ROOT/<id>/manifest.toml     a byte-for-byte copy of the source manifest (same id)
 *     ROOT/<id>/<file>            each shard held, under the name the manifest lists
 *     ROOT/<id>/<file>.part       a copy in progress (resumed from its size)
 *
 * So a cached dataset directory is an ordinary dataset directory (manifest.h reads it) that
 * may lack some shard files. Directories are made 0755, files 0644. A dataset whose shards
 * are all gone keeps its manifest copy (it is still known) until it is evicted whole.
 *
 * Holdings. A shard is held when its file is present under its final name and its header
 * and size match the manifest's entry. shard_cache_open() scans the root: each directory
 * named by a valid id with a readable manifest of that id is a dataset; a present shard that
 * does not match its entry is removed; anything else (junk directories, stray files, .part
 * files) is left alone and only counted. A held shard's bytes are its file size,
 * SHARD_HEADER_SIZE + tokens x dtype width; the cap counts held bytes plus the bytes of
 * copies in flight (reserved by shard_cache_stage_begin), not .part leftovers.
 *
 * Recency. Each held shard has a last-used time in wall-clock milliseconds since the Unix
 * epoch, kept as the file's mtime (shard_cache_touch sets both), so the LRU order survives a
 * restart. shard_cache_trim evicts the least recently used shard first (ties: dataset id,
 * then shard index), never one of a pinned dataset or one being staged.
 *
 * Reports. Every change of a dataset's holdings (a shard gained or lost), and its
 * registration, gives it a new generation from a cache-wide counter that only grows, so the worker
 * sends an incremental holdings report for each dataset whose generation moved since it last sent
 * one, and a dataset removed and added again never shows an old number. A dataset evicted whole is
 * queued on a removed list (shard_cache_pop_removed) so that the worker can report "dataset
 * X holds nothing"; it reports those before the generations.
 *
 * Staging is split in three so that the copy runs off the loop thread: stage_begin (loop)
 * fills a self-contained job and pins the dataset, shard_cache_copy_run (any thread) copies
 * and verifies with no cache state, stage_end (loop) records the result and unpins. The
 * copy is implemented in cache_copy.c, the rest in cache.c.
 *
 * Threading. A struct shard_cache belongs to one thread (the worker's loop thread): every
 * shard_cache_ function but shard_cache_copy_run must be called from it. shard_cache_copy_run
 * touches only its job and the files the job names, so it runs on another thread while the
 * loop goes on using the cache. shard_dataset_id* are pure and thread-safe. No libuv, no
 * threads, no logging: counts and errors (struct gs_error naming the file) come back.
 *
 * Dataset indices (size_t ds) are 0 .. shard_cache_count() - 1 and stay valid until a
 * dataset is evicted whole, which moves every later dataset down by one.
 */
#ifndef SHARD_CACHE_H
#define SHARD_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sharding/manifest.h"
#include "sharding/shard.h"

/* 32 lowercase hex digits and a NUL. */
#define SHARD_DATASET_ID_SIZE 33
/* shard_cache_evict's shard for "the whole dataset". */
#define SHARD_CACHE_ALL SIZE_MAX
/* Suffix of a copy in progress. */
#define SHARD_CACHE_PART_SUFFIX ".part"

/* --- dataset ids (any thread) --- */

/*
 * The id of the len bytes of a manifest: the first 32 hex digits (lowercase) of their
 * SHA-256, NUL-terminated in out. Returns 0, or -EIO when OpenSSL fails (out untouched).
 */
int shard_dataset_id_bytes(const void *buf, size_t len, char out[SHARD_DATASET_ID_SIZE]);

/*
 * The id of dir's dataset: shard_dataset_id_bytes of DIR/manifest.toml's bytes (not parsed).
 * Returns 0, or -errno when the file cannot be read, with err naming it.
 */
int shard_dataset_id(const char *dir, char out[SHARD_DATASET_ID_SIZE], struct gs_error *err);

/* Whether s is exactly 32 lowercase hex digits. NULL gives false. */
bool shard_dataset_id_valid(const char *s);

/* --- the cache (its owner's thread) --- */

struct shard_cache;

/* What shard_cache_open found under the root. */
struct shard_cache_scan_stats {
    size_t datasets;      /* directories registered as datasets */
    size_t shards_held;   /* shard files whose header and size match their entry */
    uint64_t bytes_held;  /* their bytes */
    size_t files_removed; /* shard files that did not match (and stale manifest temp files) */
    size_t parts;         /* .part files kept for a resumed copy */
    size_t ignored;       /* root entries that are not datasets, left alone */
};

/*
 * Opens the cache at root, creating it (mkdir -p, 0755) when missing, and scans it (above).
 * cap_bytes is the most the held shards (plus copies in flight) may take; 0 = no cap. An open
 * over a smaller cap than the data held is allowed: shard_cache_trim(c, 0) brings it under.
 * Returns 0 with *ret (shard_cache_close), -ENOMEM, or -errno when the root cannot be made or
 * read or a bad shard cannot be removed, with err naming the path.
 */
int shard_cache_open(const char *root, uint64_t cap_bytes, struct shard_cache **ret,
                     struct gs_error *err);

/*
 * Frees the cache; nothing on disk changes. Jobs begun and not ended must not be ended after
 * this (a copy still running in another thread is unaffected). NULL allowed.
 */
void shard_cache_close(struct shard_cache *c);

/* The open's scan counts; borrowed, lives as long as the cache. */
const struct shard_cache_scan_stats *shard_cache_scan_stats(const struct shard_cache *c);

/* The root as given to shard_cache_open; borrowed. */
const char *shard_cache_root(const struct shard_cache *c);
uint64_t shard_cache_cap(const struct shard_cache *c);
/* Bytes of every held shard of every dataset. */
uint64_t shard_cache_bytes_used(const struct shard_cache *c);
/* Bytes reserved by copies begun and not yet ended. */
uint64_t shard_cache_bytes_reserved(const struct shard_cache *c);
/* The cache-wide generation: moves on every change of holdings and every removal. */
uint64_t shard_cache_generation(const struct shard_cache *c);

/* --- datasets --- */

/* Number of datasets, held shards or not. */
size_t shard_cache_count(const struct shard_cache *c);

/* Finds the dataset of an id. Returns 0 with *ret_ds, or -ENOENT. */
int shard_cache_find(const struct shard_cache *c, const char *id, size_t *ret_ds);

/* One dataset's facts; pointers borrowed, valid while the dataset is. */
struct shard_cache_dataset_info {
    const char *id;                        /* 32 hex digits */
    const char *dir;                       /* ROOT/<id> */
    const struct shard_manifest *manifest; /* parsed from ROOT/<id>/manifest.toml */
    size_t nshards;                        /* as listed */
    size_t shards_held;
    uint64_t bytes_held;
    uint64_t bytes_total;  /* of every listed shard */
    uint64_t last_used_ms; /* latest last-used of a held shard; 0 when none is held */
    uint64_t generation;   /* from shard_cache_generation when its holdings last changed */
    unsigned pins;         /* shard_cache_pin_dataset count, copies in flight included */
};

/* Fills *ret for dataset ds. Returns 0, or -EINVAL when ds is out of range. */
int shard_cache_dataset(const struct shard_cache *c, size_t ds,
                        struct shard_cache_dataset_info *ret);

/* Whether shard of dataset ds is held (false for indices out of range). */
bool shard_cache_holds(const struct shard_cache *c, size_t ds, size_t shard);

/* Bytes of shard's file (held or not), what staging it reserves; 0 when out of range. */
uint64_t shard_cache_shard_bytes(const struct shard_cache *c, size_t ds, size_t shard);

/* Last-used time (wall-clock ms) of a held shard; 0 when not held. */
uint64_t shard_cache_shard_last_used(const struct shard_cache *c, size_t ds, size_t shard);

/*
 * Holdings of dataset ds as a bitmap: bit i % 8 of byte i / 8 (least significant first) is
 * set when shard i is held; every other bit of the nbytes is cleared. Returns 0, -EINVAL for
 * ds out of range, or -ENOBUFS when nbytes < (nshards + 7) / 8.
 */
int shard_cache_bitmap(const struct shard_cache *c, size_t ds, uint8_t *bits, size_t nbytes);

/*
 * Pops the oldest id of a dataset evicted whole since the last pop into out. Returns true
 * when there was one. The worker reports these as "holds nothing" before it reports the
 * datasets whose generation moved (one may have been added again since).
 */
bool shard_cache_pop_removed(struct shard_cache *c, char out[SHARD_DATASET_ID_SIZE]);

/*
 * Adds the dataset whose manifest is SOURCE/manifest.toml: parses it (no shard opened),
 * computes its id, writes ROOT/<id>/manifest.toml as a copy of its bytes (temporary file,
 * fsync, rename, fsync of the directory) when no copy of that id is there, and registers it;
 * a directory it makes for the dataset is 0700, for the caller to open to the dataset's
 * readers (the worker's set_access) once they are known;
 * shard files already in ROOT/<id> are checked as the open's scan does. Idempotent: a dataset
 * already registered just returns its index. Returns 0 with *ret_ds (NULL allowed), -EINVAL
 * for a manifest that does not parse or lists names the cache cannot hold (`*.part`,
 * manifest.toml*), or -errno; err names the file. Nothing is left on disk after a failure.
 */
int shard_cache_add_dataset(struct shard_cache *c, const char *source_dir, size_t *ret_ds,
                            struct gs_error *err);

/*
 * shard_cache_add_dataset for a manifest's bytes (one received from a peer); parse errors
 * name the cache's copy, which is removed again.
 */
int shard_cache_add_manifest_bytes(struct shard_cache *c, const void *buf, size_t len,
                                   size_t *ret_ds, struct gs_error *err);

/* --- recency, pins, eviction --- */

/*
 * Marks a held shard used at now_ms (wall-clock ms since the Unix epoch, gs_clock_wall_ms):
 * in memory and as its file's mtime (utimensat). Returns 0, -EINVAL for indices out of range,
 * -ENOENT when not held, or -errno from utimensat (the in-memory time is set anyway).
 */
int shard_cache_touch(struct shard_cache *c, size_t ds, size_t shard, uint64_t now_ms,
                      struct gs_error *err);

/*
 * Pins dataset ds (a count): no shard of it is trimmed or evicted while pinned, so a running
 * job's data stays. Returns 0 or -EINVAL (ds out of range; unpinning an unpinned dataset).
 */
int shard_cache_pin_dataset(struct shard_cache *c, size_t ds);
int shard_cache_unpin_dataset(struct shard_cache *c, size_t ds);

/* Called by shard_cache_trim for each shard it evicts (ds, shard as they were). */
typedef void (*shard_cache_evicted_fn)(struct shard_cache *c, size_t ds, size_t shard, void *data);

/*
 * Evicts least-recently-used shards of unpinned datasets (unlink) until used + reserved +
 * need_bytes <= cap; nothing without a cap. All or nothing: when the shards it may evict
 * cannot free enough (or need_bytes alone exceeds the cap) it evicts none and returns
 * -ENOSPC. evicted (NULL allowed) is called after each eviction; *ret_evicted (NULL allowed)
 * gets their number on success. Each evicted shard's dataset gets a new generation. Returns
 * 0, -ENOSPC, or -errno when a file cannot be removed (those before it stay evicted).
 */
int shard_cache_trim(struct shard_cache *c, uint64_t need_bytes, shard_cache_evicted_fn evicted,
                     void *data, size_t *ret_evicted, struct gs_error *err);

/*
 * Evicts shard of dataset ds (its file and any .part of it), or with SHARD_CACHE_ALL the
 * whole dataset: every file in ROOT/<id>, the manifest copy last, then the directory; the
 * dataset is dropped (later indices move down by one) and queued for shard_cache_pop_removed.
 * Returns 0, -EINVAL for indices out of range, -ENOENT when the shard is not held (a .part
 * of it is removed anyway), -EBUSY when the dataset is pinned or the shard being staged, or
 * -errno when a file cannot be removed (the in-memory holdings follow what was removed).
 */
int shard_cache_evict(struct shard_cache *c, size_t ds, size_t shard, struct gs_error *err);

/* --- staging --- */

/*
 * Reads up to len bytes of the source at offset into buf: 0 with *ret_got in 1..len, or
 * *ret_got 0 at the source's end; or a negative errno with err set. Called from the thread
 * that runs shard_cache_copy_run.
 */
typedef int (*shard_cache_read_fn)(uint64_t offset, void *buf, size_t len, size_t *ret_got,
                                   struct gs_error *err, void *data);

/*
 * One shard's copy into the cache. shard_cache_stage_begin fills the first part (owned
 * strings, freed by shard_cache_stage_end); the caller then sets the source (exactly one of
 * source_path or read) and the rate; shard_cache_copy_run fills the last part.
 */
struct shard_cache_copy {
    /* From shard_cache_stage_begin. */
    char dataset_id[SHARD_DATASET_ID_SIZE];
    size_t shard;    /* index in the manifest */
    char *path;      /* ROOT/<id>/<file>: the final name */
    char *part_path; /* path + ".part" */
    uint64_t bytes;  /* the file's size: SHARD_HEADER_SIZE + tokens x width */
    uint64_t tokens;
    uint32_t crc32c;
    enum shard_dtype dtype;
    uint32_t vocab;
    /* From the caller, borrowed until shard_cache_copy_run returns. */
    const char *source_path;  /* a shard file, e.g. SOURCE/<file> */
    shard_cache_read_fn read; /* or a reader (a peer fetch) */
    void *read_data;
    uint64_t rate_bytes_per_s; /* 0: as fast as it goes */
    /* Set by another thread to stop the copy between two reads (-ECANCELED, the .part kept
     * for the next run to resume); NULL: never. */
    const atomic_bool *cancel;
    /* Bytes read so far, kept up by the copy for another thread to watch (a copy stuck in a
     * read stops moving it); NULL: none. Never reset: it only grows. */
    atomic_uint_least64_t *progress;
    /* From shard_cache_copy_run. */
    uint64_t resumed_from; /* bytes of the .part kept from an earlier run */
    uint64_t bytes_copied; /* bytes read from the source and written by this run */
    uint64_t mtime_ms;     /* the final file's mtime: its first last-used time */
};

/*
 * Starts staging shard of dataset ds: fills *job (zeroing it first, so set the source after)
 * and pins the dataset, reserving the shard's bytes against the cap. Every successful begin
 * is followed by exactly one shard_cache_stage_end with the same job. Returns 0, -EINVAL for
 * indices out of range, -EEXIST when the shard is already held, -EBUSY when it is being
 * staged, -ENOSPC when the cap has no room for it (shard_cache_trim first), or -ENOMEM.
 */
int shard_cache_stage_begin(struct shard_cache *c, size_t ds, size_t shard,
                            struct shard_cache_copy *job, struct gs_error *err);

/*
 * Copies the source into job->part_path and moves it to job->path, on any thread (it reads
 * the job and nothing of the cache). Resumes from an existing .part when it is no larger
 * than the shard and starts like it (else restarts from 0). Sleeps as needed to stay under
 * rate_bytes_per_s. The finished file must be exactly job->bytes long, pass shard_open with
 * SHARD_VERIFY and carry the entry's tokens, crc32c, dtype and vocab; then it is fsynced,
 * renamed and its directory fsynced. Returns 0; -EBADMSG when the source or the copy does
 * not match the entry (the .part is removed, and a source of the wrong size is refused
 * before anything is written); -EINVAL without exactly one source; or -errno from the source
 * or the disk (the .part stays for a resumed copy). err names the shard.
 */
int shard_cache_copy_run(struct shard_cache_copy *job, struct gs_error *err);

/*
 * Ends a job begun by shard_cache_stage_begin with copy_run's result (or any negative errno
 * when it never ran): unpins the dataset and releases the reservation; on 0 marks the shard
 * held (bytes used grow, the dataset gets a new generation, last used = job->mtime_ms).
 * Frees the job's strings and zeroes it.
 */
void shard_cache_stage_end(struct shard_cache *c, struct shard_cache_copy *job, int result);

#endif
