/*
 * mem_bind.h: Slurm's --mem-bind for srun steps (or SLURM_MEM_BIND, which sbatch --mem-bind
 * sets): which NUMA nodes each task's memory comes from. gsched's own default, without it,
 * prefers the NUMA nodes of the task's cores (worker/launch.h); --mem-bind=none drops that,
 * local binds to them strictly, map_mem and mask_mem name the nodes, prefer makes any of
 * these a preference rather than a bind. The CLI parses the text to refuse a typo before
 * anything is sent; gschedd parses it again and gives each task its nodes when it builds
 * the step's launch (scheduler/step_mem_bind.c); the worker sets the policy. Pure
 * functions, no allocation; any thread.
 */
#ifndef GS_COMMON_MEM_BIND_H
#define GS_COMMON_MEM_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/bind_list.h"

enum gs_mem_bind_kind {
    GS_MEM_BIND_DEFAULT = 0, /* gsched's: prefer the NUMA nodes of the task's cores */
    GS_MEM_BIND_NONE,        /* no policy at all: the kernel's default (local allocation) */
    GS_MEM_BIND_LOCAL,       /* the NUMA nodes of the task's cores */
    GS_MEM_BIND_RANK,        /* task i: NUMA node i (wrapping over the node's) */
    GS_MEM_BIND_MAP,         /* task i: NUMA node list[i % n] */
    GS_MEM_BIND_MASK,        /* task i: the NUMA nodes of mask list[i % n] */
};

struct gs_mem_bind {
    enum gs_mem_bind_kind kind;
    bool prefer; /* a preference (MPOL_PREFERRED), not a bind (MPOL_BIND) */
    bool verbose;
    uint32_t n; /* entries in list */
    uint64_t list[GS_BIND_LIST_MAX];
};

/*
 * Parses Slurm's comma-separated words: quiet, verbose, prefer (or p), sort and nosort (no
 * effect: they tune a memory-mode KNL feature), then at most one of none (or no), local,
 * rank, map_mem:L, mask_mem:L (L as bind_list.h reads it; it takes the rest of the text).
 * "" is the default. Returns 0, or -EINVAL with why.
 */
int gs_mem_bind_parse(const char *text, struct gs_mem_bind *out, char *why, size_t why_size);

/*
 * The NUMA nodes task `local` (0-based on its node) binds its memory to under b, as a mask
 * of NUMA node indices (below 64) in *ret_mask; task_numa is the mask of its cores' NUMA
 * nodes (0 unknown), node_numa the node's (0 unknown). DEFAULT and NONE give 0. Returns 0,
 * or -ERANGE with why when b names a NUMA node the node does not have.
 */
int gs_mem_bind_task(const struct gs_mem_bind *b, uint32_t local, uint64_t task_numa,
                     uint64_t node_numa, uint64_t *ret_mask, char *why, size_t why_size);

#endif
