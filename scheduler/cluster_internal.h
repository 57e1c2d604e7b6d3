/*
 * cluster_internal.h: what cluster.c (the nodes' bookkeeping, the candidate index's upkeep,
 * copies) and cluster_place.c (where a job goes) share: the cluster's structures. Nothing
 * outside those two files includes it.
 */
#ifndef SCHED_CLUSTER_INTERNAL_H
#define SCHED_CLUSTER_INTERNAL_H

#include "scheduler/cluster.h"

#include <stdbool.h>
#include <stdint.h>

#define CORE_WORDS (SCHED_MAX_CORES / 64)
#define NAME_MAX_LEN 64
#define FEATURE_MAX_LEN 32

/* What a node is that placement reads rarely and never changes while it is in the cluster
 * (a re-registration rewrites it in place): out of struct node, so that a what-if copy,
 * which shares it, copies a tenth of the bytes (3 KB a node before). */
struct node_layout {
    char name[NAME_MAX_LEN];
    int16_t core_numa[SCHED_MAX_CORES];
    char features[SCHED_MAX_FEATURES][FEATURE_MAX_LEN]; /* zero-filled past each name */
    size_t nfeatures;
};

struct node {
    struct node_layout *lay; /* the original cluster's; a copy borrows it */
    uint32_t ngpus;
    uint32_t ncores;
    uint64_t mem_mib;
    int16_t gpu_numa[SCHED_MAX_GPUS];
    bool up;
    uint64_t gpu_free;
    uint64_t core_free[CORE_WORDS];
    uint32_t ncores_free; /* the bits of core_free, kept with it */
    uint64_t mem_free;
    uint32_t njobs;
    uint64_t alloc_gen; /* sched_cluster_alloc_gen */
    bool exclusive_held;
    const struct gs_gpuset_node *gs; /* the GPU link hierarchy; NULL: unknown */
    int switch_id;
    uint8_t nic_class[SCHED_MAX_GPUS]; /* per GPU, to its nearest NIC; 0 unknown */
    bool nic_known;                    /* some GPU's nic_class is known */
    /* Every GPU pair has the same link (NVSwitch): any k free GPUs tie on links, and where
     * they sit (NUMA node, NIC) decides (pick_uniform). */
    bool links_uniform;
};

/*
 * A GPU link hierarchy (14 KB), one per distinct link matrix: the nodes of a cluster are
 * mostly alike, so 10,000 nodes share a few. gs_gpuset_choose() is a pure function of the
 * hierarchy, the free mask, k and the affinity, and a placement asks it of every node that
 * fits (71 % of a decision's instructions, bench/RESULTS.md "Scheduler scale"): each shape
 * keeps its answers in a direct-mapped cache, so alike nodes with the same GPUs free cost
 * one lookup each. The cache is not the cluster's state (a what-if copy shares it).
 */
#define MEMO_SLOTS 4096
#define MEMO_SHAPES 64 /* shapes beyond this many get no cache (memory stays bounded) */

struct memo_slot {
    uint64_t mask;
    uint8_t k, aff;
    bool valid, ok;
    struct gs_gpuset_choice ch;
};

struct shape {
    struct gs_gpuset_node gs; /* first: a node's gs is its shape's */
    struct memo_slot *memo;   /* MEMO_SLOTS, made at the first choice; NULL: none */
    bool no_memo;
};

struct sched_cluster {
    struct node *nodes;
    size_t nnodes;
    size_t cap;
    /* The distinct link hierarchies, owned by the cluster a copy was made from (copies
     * borrow them through their nodes): NULL in copies. */
    struct shape **pool;
    size_t npool;
    bool copy;
    /* The free-capacity index: by_free[f] counts the up nodes with exactly f free GPUs, so a
     * request no set of nodes has the GPUs for is refused without scanning the cluster (a
     * busy cluster's pass over a long queue). Kept by every change of a node's GPUs or up. */
    uint32_t by_free[SCHED_MAX_GPUS + 1];
    uint32_t gpus_max; /* the most GPUs any node has had: by_free is zero above */
    /*
     * The candidate index: nodes grouped by (link hierarchy, GPU NUMA nodes and NIC
     * classes, free GPU mask), each group's nodes sorted by (free cores, index). Every node
     * of a group gets the same GPUs chosen with the same score and NIC class, so a one-node
     * job compares groups, not nodes: per group one choice (through the shape's cache) and
     * a binary search for its best node with the cores; a gang merges the groups' nodes in
     * rank order and stops as soon as its nodes are known (gang_ranked). Not in copies (they
     * scan); groups are never removed (at most one per kind of node and mask ever seen).
     * Off past GROUPS_MAX groups: the scan is as cheap then.
     */
    struct group *groups;
    size_t ngroups, capgroups;
    uint32_t *node_group; /* per node, its group (cap entries) */
    int switch_max;       /* the highest switch_id any node has had */
    /* A copy's nodes changed by take and give back since it was made or synced
     * (sched_cluster_sync): listed while few, else all (and from the first failed alloc). */
    uint64_t *dirty_bits;
    uint32_t *dirty;
    size_t ndirty;
    bool all_dirty;
};

#define GROUPS_MAX 4096

struct group {
    const struct gs_gpuset_node *gs;
    uint64_t mask;
    uint32_t ngpus;
    bool links_uniform;
    int16_t gpu_numa[SCHED_MAX_GPUS]; /* ngpus of them, as are nic_class */
    uint8_t nic_class[SCHED_MAX_GPUS];
    size_t nfeatures;
    char features[SCHED_MAX_FEATURES][FEATURE_MAX_LEN];
    /* n node indices in rank order, somewhere in buf (cap entries): room is kept at both
     * ends, since a job mostly takes a group's first node (the best) and a node mostly
     * comes back near one end, and either then moves the shorter side. */
    uint32_t *nodes;
    uint32_t n, cap;
    uint32_t *buf;
};

/* alloc->nodes grown to hold n nodes. 0 or -ENOMEM. */
int sched_alloc_reserve(struct sched_alloc *alloc, uint32_t n);

#endif
