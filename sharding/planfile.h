/*
 * planfile.h: a job's data plan file, the facts every rank of a data-parallel job needs to
 * compute the same shard assignment (planner.h) without talking to each other (issue 19).
 * gsched-workerd writes it when a job that names a dataset starts (the same content on every
 * node) and points the ranks at it with GSCHED_DATA_PLAN; gsched-train reads it, builds the
 * planner's input over the dataset's train shards (shard_planfile_input) and hands the plan
 * to its loader (loader.h, plan mode).
 *
 *     # gsched data plan
 *     format = 1
 *     dataset = "0123456789abcdef0123456789abcdef"  # shard_dataset_id (cache.h) of the dataset
 *     seed = 7                 # the planner's tie-break seed
 *     tolerance = 0.05         # the planner's balance band
 *     ranks = [0, 0, 1, 1]     # rank r lives on node ranks[r]: an index into [[node]]
 *
 *     [[node]]
 *     name = "n1"
 *     holds = "0-99,150,160-170"  # manifest shard indices this node holds; "" none
 *     [[node]]
 *     name = "n2"
 *     holds = "100-149"
 *
 * Indices in holds are 0-based manifest positions (train and val shards alike, in manifest
 * order), written as ascending comma-separated ranges ("A-B" or "A"); the writer merges
 * adjacent ones. Read strictly, like manifest.toml: unknown keys, missing keys, wrong types,
 * a rank on a node that does not exist, a node named twice, or a holds list that is not
 * ascending are errors "PATH:LINE:COL: ..." (within holds, the column of the offending
 * character, counted as if the string were written on one line without escapes).
 * Whether the plan is for the dataset at hand is the caller's check: compare dataset with
 * shard_dataset_id() (cache.h) of the dataset's directory.
 *
 * A struct shard_planfile owns its arrays and strings; shard_planfile_free() frees them.
 * Immutable once read, so any number of threads may read one. Nothing here logs.
 */
#ifndef SHARD_PLANFILE_H
#define SHARD_PLANFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"
#include "sharding/cache.h" /* dataset ids: shard_dataset_id() */
#include "sharding/manifest.h"
#include "sharding/planner.h"

#define SHARD_PLANFILE_FORMAT 1

struct shard_planfile_node {
    char *name;
    size_t nholds;
    uint32_t *holds; /* manifest shard indices, strictly ascending; NULL when nholds is 0 */
};

struct shard_planfile {
    char dataset[SHARD_DATASET_ID_SIZE]; /* lowercase hex, NUL-terminated */
    uint64_t seed;                       /* at most INT64_MAX (a TOML integer) */
    double tolerance;                    /* finite, >= 0 */
    uint32_t nranks;                     /* >= 1 */
    uint32_t *rank_node;                 /* nranks node indices, each below nnodes */
    uint32_t nnodes;                     /* >= 1 */
    struct shard_planfile_node *nodes;   /* nnodes, in the file's order */
};

/*
 * Reads and checks the plan file at path. Returns 0 with *ret a plan to free with
 * shard_planfile_free(), -EINVAL with err "PATH:LINE:COL: ..." (or "PATH: ...") for a file
 * that is not a valid plan, -errno when it cannot be read, or -ENOMEM.
 */
int shard_planfile_read(const char *path, struct shard_planfile **ret, struct gs_error *err);

/*
 * Writes pf to path through a temporary file beside it, fsynced before the rename, in the
 * canonical form shard_planfile_format() gives. Returns 0, -EINVAL for a plan the reader
 * would refuse (err names what), or -errno.
 */
int shard_planfile_write(const char *path, const struct shard_planfile *pf, struct gs_error *err);

/*
 * Appends pf's canonical text to out: the header comment, keys in the order above, holds
 * merged into ranges, the tolerance in the shortest form that reads back exactly. Two plans
 * with the same content format alike, byte for byte. Returns 0, -EINVAL (err says why), or
 * -ENOMEM.
 */
int shard_planfile_format(const struct shard_planfile *pf, struct gs_buf *out,
                          struct gs_error *err);

void shard_planfile_free(struct shard_planfile *pf); /* NULL allowed */

/*
 * Appends the n indices of idx (strictly ascending) to out as ranges: "0-99,150,160-170";
 * nothing when n is 0. Returns 0, -EINVAL when idx is not strictly ascending, or -ENOMEM.
 */
int shard_planfile_format_ranges(const uint32_t *idx, size_t n, struct gs_buf *out);

/*
 * Parses a range list (the inverse of shard_planfile_format_ranges; spaces around items are
 * allowed, adjacent ranges too, "" is none). Returns 0 with *ret_idx (malloc'ed, NULL when
 * *ret_n is 0; the caller frees it) and *ret_n, or -EINVAL with err->col the 1-based offset in
 * text of the offending character and a message without a place ("range 7-3 is
 * backwards"), or -ENOMEM.
 */
int shard_planfile_parse_ranges(const char *text, uint32_t **ret_idx, size_t *ret_n,
                                struct gs_error *err);

/*
 * The planner's input for pf over m's train shards, with the map back to the manifest.
 * in.shards[i] is manifest shard manifest_index[i] (the train shards in manifest order):
 * bytes SHARD_HEADER_SIZE + tokens x dtype width, its tokens, held by the nodes whose holds
 * list it (ascending node order); nnodes, nranks, rank_node, seed and tolerance from pf;
 * epoch 0. Val shards are left out (every node stages them all).
 */
struct shard_planfile_input {
    struct shard_plan_input in; /* points into the arrays below and into pf (rank_node) */
    uint32_t *manifest_index;   /* in.nshards */
    struct shard_plan_shard *shards;
    uint32_t *holder_off, *holders;
};

/*
 * Fills *ret (caller-owned storage, released with shard_planfile_input_release(); it borrows
 * pf's rank_node, so pf must outlive it). Returns 0, -EINVAL when a node holds an index not
 * below m's shard count (err names the node and the index), or -ENOMEM. The dataset id is
 * not checked here.
 */
int shard_planfile_input(const struct shard_planfile *pf, const struct shard_manifest *m,
                         struct shard_planfile_input *ret, struct gs_error *err);
void shard_planfile_input_release(struct shard_planfile_input *pi); /* zeroed or filled */

#endif
