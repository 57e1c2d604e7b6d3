/*
 * hostlist.h: Slurm's hostlist notation for sets of node names, both ways.
 *
 *   expand:   "node[1-3,7],gpu[08-10],login"  ->  node1 node2 node3 node7 gpu08 gpu09 gpu10 login
 *   compress: node1 node2 node3 node7          ->  "node[1-3,7]"
 *
 * A bracket holds comma-separated numbers and ranges; leading zeros set the width (01-10
 * gives 01 .. 10). One bracket per name, at its end or in its middle ("rack[1-2]-gpu" gives
 * rack1-gpu, rack2-gpu). Compression keeps the input order of the prefixes and sorts the
 * numbers of each; names that end in no number stay as they are.
 *
 * Used by the cluster configuration ([[switch]] nodes) and, later, SLURM_JOB_NODELIST.
 * Pure; any thread.
 */
#ifndef GS_HOSTLIST_H
#define GS_HOSTLIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

#define GS_HOSTLIST_MAX 100000 /* names one expression may expand to */

/*
 * Expands expr into a NULL-terminated array of names (free with gs_hostlist_free) and
 * their count. Returns 0, -EINVAL with err naming the column of the problem, or -ENOMEM.
 */
int gs_hostlist_expand(const char *expr, char ***ret_names, size_t *ret_n, struct gs_error *err);
void gs_hostlist_free(char **names);

/*
 * A host file (Slurm's SLURM_HOSTFILE, sbatch -w FILE, --nodefile): names or hostlists at
 * blanks, commas or line ends, appended to list as one comma-separated hostlist. Returns 0,
 * a negative errno reading the file, -ENODATA when it names no host, or -ENOMEM.
 */
int gs_hostlist_read_file(const char *path, struct gs_buf *list);

/* Appends the compressed form of n names to out. Returns 0 or -ENOMEM (out failed, as
 * gs_buf_fail marks it). */
int gs_hostlist_compress(const char *const *names, size_t n, struct gs_buf *out);

/*
 * Appends per-node counts the way Slurm writes SLURM_TASKS_PER_NODE and
 * SLURM_JOB_CPUS_PER_NODE: runs of equal values folded, "2(x3),1" for 2 2 2 1.
 * Returns 0 or -ENOMEM.
 */
int gs_hostlist_counts(const uint32_t *counts, size_t n, struct gs_buf *out);

/*
 * The reverse: "2(x3),1" into a malloc'd array {2, 2, 2, 1} (the caller frees it) and its
 * length. Counts are 1 or more. Returns 0, -EINVAL with err naming the column, or -ENOMEM.
 */
int gs_hostlist_counts_parse(const char *text, uint32_t **ret_counts, size_t *ret_n,
                             struct gs_error *err);

#endif
