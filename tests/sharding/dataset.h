/*
 * dataset.h: test helpers for tests/sharding: a fresh temporary directory per test and
 * small datasets whose tokens tell where they come from, so that a test can check which
 * window of which shard a loader delivered.
 */
#ifndef GS_TEST_SHARDING_DATASET_H
#define GS_TEST_SHARDING_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "sharding/manifest.h"

/* A new directory under $TMPDIR (or /tmp), in buf; aborts the test on failure. */
void ds_tmpdir(char *buf, size_t size);
/* rm -r of a directory holding only files. */
void ds_rmdir(const char *dir);

/* The id at token i of shard s in ds_make's datasets: unique, below DS_VOCAB. */
#define DS_VOCAB (UINT32_C(1) << 24)
uint32_t ds_token(unsigned shard, uint64_t i);

/*
 * Writes ntrain train shards then nval val shards of `tokens` tokens each (u32, vocab
 * DS_VOCAB; shard s holds ds_token(s, 0..)) and their manifest into dir.
 */
void ds_make(const char *dir, unsigned ntrain, unsigned nval, uint64_t tokens);

/* Loads dir's manifest; aborts the test on failure. */
struct shard_manifest *ds_load(const char *dir);

/* Overwrites len bytes at offset of a file. */
void ds_patch(const char *path, long offset, const void *bytes, size_t len);

#endif
