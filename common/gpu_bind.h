/*
 * gpu_bind.h: Slurm's --gpu-bind for srun steps (and sbatch, whose value its steps inherit
 * through SLURM_GPU_BIND): which of a node's step GPUs each task sees. The CLI parses it to
 * refuse a typo before anything is sent; gschedd parses it again and gives each task its
 * GPUs when it builds the step's launch (scheduler/step_plan.c), so the worker only sets
 * CUDA_VISIBLE_DEVICES from the task's list, as for every task.
 *
 * GPU ids in map_gpu and mask_gpu count from 0 within the GPUs the step has on that node
 * (Slurm's reading when devices are constrained, as gsched's cgroups constrain them), not
 * the node's own indexes. Pure functions, no allocation; any thread.
 */
#ifndef GS_COMMON_GPU_BIND_H
#define GS_COMMON_GPU_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/bind_list.h"

#define GS_GPU_BIND_MAX_LIST GS_BIND_LIST_MAX /* map_gpu / mask_gpu entries after "*N" */

enum gs_gpu_bind_kind {
    GS_GPU_BIND_NONE = 0, /* every task sees all of the node's step GPUs (also "none") */
    GS_GPU_BIND_CLOSEST,  /* the step GPUs on the task's NUMA node(s); all when none is */
    GS_GPU_BIND_SINGLE,   /* one GPU: the n-th K tasks of a NUMA set share its n-th closest */
    GS_GPU_BIND_PER_TASK, /* K GPUs each, in order: task i gets i*K..i*K+K-1 (wrapping) */
    GS_GPU_BIND_MAP,      /* task i: the GPU list[i % n] */
    GS_GPU_BIND_MASK,     /* task i: the GPUs of the mask list[i % n] */
};

struct gs_gpu_bind {
    enum gs_gpu_bind_kind kind;
    bool verbose;
    uint32_t k; /* SINGLE: tasks per GPU; PER_TASK: GPUs per task */
    uint32_t n; /* entries in list */
    uint64_t list[GS_GPU_BIND_MAX_LIST];
};

/*
 * Parses "[verbose,]none|closest|single:K|per_task:K|map_gpu:L|mask_gpu:L" into out, where
 * L is a comma list of decimal GPU ids (map) or hex masks with or without 0x (mask), each
 * optionally "*N" repeated. "" is none. Returns 0, or -EINVAL with why (one line naming the
 * part that is wrong) in why[why_size]; out is then unspecified.
 */
int gs_gpu_bind_parse(const char *text, struct gs_gpu_bind *out, char *why, size_t why_size);

/*
 * The GPUs task `local` (0-based on its node) sees under b: indexes into
 * the node's step GPUs (0..ngpus-1) written to out (room for ngpus), their count in *nout.
 * gpu_numa[g] is step GPU g's NUMA node (-1: unknown); task_numa is a mask of the NUMA nodes
 * (below 64) of the task's cores, 0 when unknown; peer is the task's place among the node's
 * tasks with that same mask (single:K counts tasks there: the first K of a socket share
 * its first GPU). Returns 0, or -ERANGE with why when an id
 * or mask of b names a GPU the node's share does not have (map_gpu:5 with 4 GPUs).
 */
int gs_gpu_bind_task(const struct gs_gpu_bind *b, uint32_t local, uint32_t peer, size_t ngpus,
                     const int16_t *gpu_numa, uint64_t task_numa, uint32_t *out, size_t *nout,
                     char *why, size_t why_size);

#endif
