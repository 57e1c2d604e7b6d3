/*
 * data_resolve.h: a dataset named on the command line or in a job file's [data] manifest,
 * resolved by the CLI as the user who typed it: the directory made absolute (a path to
 * its manifest.toml names its directory), its manifest read (not its shards), its id (the
 * first 32 hex digits of SHA-256 of manifest.toml), shard count and bytes. gschedd and the
 * workers get the result, never a relative path or an unread manifest.
 */
#ifndef GS_CLI_DATA_RESOLVE_H
#define GS_CLI_DATA_RESOLVE_H

#include "common/error.h"
#include "common/jobspec.h"

/*
 * Fills d's id, source (replacing it; the caller's struct owns it), shards and bytes from
 * the dataset at path (relative to the current directory), or, when path is a dataset id
 * (32 hex digits) and no such file exists, from the directory the nodes' caches say it was
 * staged from (asked of gschedd at socket_opt, as --socket takes it; NULL: the default),
 * read here and checked to be that id. Returns 0, or a negative errno with err saying what
 * is wrong with which file ("DIR/manifest.toml:3:1: ...").
 */
int cli_data_resolve(const char *path, const char *socket_opt, struct gs_jobdata *d,
                     struct gs_error *err);

#endif
