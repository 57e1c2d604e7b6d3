/*
 * tomlfile.h: what the dataset manifest (manifest.c) and the data plan file (planfile.c)
 * share as strictly read, canonically written TOML files: errors at PATH:LINE:COL, the
 * check that a table holds only known keys, quoting strings, and replacing the file
 * durably. Private to sharding/. Pure but for shard_toml_write; any thread.
 */
#ifndef SHARD_TOMLFILE_H
#define SHARD_TOMLFILE_H

#include "common/buf.h"
#include "common/error.h"
#include "common/toml.h"

/* One file's parse: where errors point (path is borrowed). */
struct shard_toml_reader {
    const char *path;
    struct gs_error *err;
};

/* Sets r->err to "PATH:LINE:COL: message" at v and returns -EINVAL. */
__attribute__((format(printf, 3, 4))) int
shard_toml_bad_at(struct shard_toml_reader *r, const struct gs_toml_value *v, const char *fmt, ...);
/* 0 when table t has only keys of the NULL-terminated keys, else -EINVAL at the first other
 * key's own place ("unknown key 'x'"). */
int shard_toml_check_keys(struct shard_toml_reader *r, const struct gs_toml_value *t,
                          const char *const *keys);
/* Appends s as a TOML basic string: quotes, backslashes and control characters escaped. */
int shard_toml_quote(struct gs_buf *out, const char *s);
/* Replaces path with text durably (gs_path_replace, 0644); err names the path. */
int shard_toml_write(const char *path, const struct gs_buf *text, struct gs_error *err);

#endif
