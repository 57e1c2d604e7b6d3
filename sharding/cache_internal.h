/*
 * cache_internal.h: what cache.c (the shard cache's bookkeeping, on its owner's thread) and
 * cache_copy.c (shard_cache_copy_run, on any thread) share and no one else needs. Private to
 * sharding/: not for other folders, which use cache.h.
 *
 * Everything here is pure and touches no struct shard_cache, so either side may call it from
 * any thread.
 */
#ifndef SHARD_CACHE_INTERNAL_H
#define SHARD_CACHE_INTERNAL_H

#include <stdint.h>

struct stat;

/*
 * A file's mtime in wall-clock milliseconds since the Unix epoch: what the cache keeps as a
 * held shard's last-used time (cache.c's scan reads it, cache_copy.c reports the finished
 * copy's). Defined in cache.c.
 */
uint64_t shard_cache_mtime_ms(const struct stat *st);

#endif
