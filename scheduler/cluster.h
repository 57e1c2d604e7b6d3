/*
 * cluster.h: the scheduler's picture of its nodes and what is free on each, and the one
 * place that decides where a job goes (sched_cluster_place). Resources are accounted per GPU
 * index, per core and per MiB. Pure bookkeeping: no I/O, no clock, no allocation after a
 * node is added, so the scheduler can ask "would this fit?" thousands of times a second and
 * the planner can simulate the future on a copy.
 *
 * Placement: within a node the GPUs are chosen by link class (common/gpuset.h: the set whose
 * worst pair is best, then the fewest broken free groups) when the node's GPU link matrix
 * is known, else the lowest free indices; the cores come first from those GPUs' NUMA
 * nodes. Nodes are ranked by the worst link class they can give the job, then best fit
 * (fewest free GPUs left, then fewest free cores) to keep whole nodes free for large jobs.
 * A multi-node job prefers, at equal GPU links, nodes where its GPUs sit closest to a NIC
 * (under one PCIe switch with it, ideally), and goes under one network switch when some switch has
 * enough such nodes (the one whose best nodes rank best), else across switches.
 *
 * Alike nodes (the same link matrix, GPU NUMA nodes and NIC classes, and free GPUs) share
 * every ranking figure but their free cores, so the cluster keeps them in groups: requests
 * are answered from the groups, with the nodes a request singles out (its reservations',
 * its dataset's, its --nodelist) scored one by one, and the same answer as scoring every
 * node; what-if copies keep no groups and score every node.
 *
 * Loop thread only (the scheduler's state). A copy made with sched_cluster_copy() copies only
 * what changes (free resources, state) and borrows the rest (node layouts, link hierarchies
 * and their cache of GPU choices): it is used on the original's thread, while no node of
 * the original is added or reset, and freed before the original.
 */
#ifndef SCHED_CLUSTER_H
#define SCHED_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/gpuset.h"

#define SCHED_MAX_GPUS 64     /* per node: one bit each in a uint64_t */
#define SCHED_MAX_CORES 1024  /* per node */
#define SCHED_MAX_FEATURES 16 /* per node */
#define SCHED_MAX_JOB_NODES 256

struct sched_node_info {
    const char *name;
    uint32_t ngpus;
    uint32_t ncores;
    uint64_t mem_mib;
    const int *gpu_numa;  /* ngpus entries, or NULL */
    const int *core_numa; /* ncores entries, or NULL */
    const char *const *features;
    size_t nfeatures;
    const struct gs_gpuset_link *links; /* ngpus x ngpus, row-major; NULL: unknown */
    int switch_id;                      /* network switch it hangs off, from 1; 0 unknown */
    const uint8_t *gpu_nic_class;       /* ngpus: gpuset class to the nearest NIC; NULL */
};

/* What one job needs on each of its nodes. */
struct sched_req {
    uint32_t nodes;
    uint32_t gpus_per_node;
    uint32_t cores_per_node;
    uint64_t mem_per_node_mib;
    bool exclusive;
    const char *constraint; /* NULL: any node */
    /* A gang's nodes under at most this many network switches (a node under none counts as
     * one of its own); 0: any. The planner sets it while the job may still wait for it. */
    uint32_t max_switches;
    enum gs_gpuset_affinity affinity;
    /*
     * Bitmaps over cluster node indices (bit i of word i / 64), NULL for no restriction:
     * the nodes the job may use (its partition less sbatch --exclude), and those it must
     * include (--nodelist; counted in nodes).
     */
    const uint64_t *allowed;
    const uint64_t *required;
    uint32_t nrequired;
    /* Per node index, the GPUs the job may use there (advance reservations of GPUs: theirs
     * for their jobs, all but theirs for the others); NULL: any. gpu_masked lists the nodes
     * whose mask is not every GPU (ngpu_masked of them), when the caller knows them (NULL:
     * placement looks at every node's mask). */
    const uint64_t *gpu_masks;
    const uint32_t *gpu_masked;
    uint32_t ngpu_masked;
    /* Per node index, the bytes of the job's dataset its cache holds (docs/data.md); NULL:
     * the job has none. Among nodes equal in link class and fit, more goes first. */
    const uint64_t *data_bytes;
    bool data_first; /* data_bytes ranks before fit, not after (scheduler.data_locality) */
    /* The nodes whose data_bytes is not 0 (ndata_nodes of them), when the caller knows
     * them (NULL: placement looks at every node's bytes). */
    const uint32_t *data_nodes;
    uint32_t ndata_nodes;
    /* Nodes that rank before all others, as allowed (NULL: none): a reservation's own, for
     * the jobs it may take (FLEX's, and MAGNETIC's drawn in); and per node index, as
     * gpu_masks, the GPUs chosen from first when they are enough (NULL: none; non-zero only
     * on preferred nodes). */
    const uint64_t *preferred;
    const uint64_t *gpu_prefer;
    /* A heterogeneous job's further components, each on nodes of its own (NULL, 0: none):
     * placed all or none, after this one, their nodes following its in the allocation. */
    const struct sched_req *het;
    uint32_t nhet;
};

/* How good the GPUs of one node's allocation are together. */
struct sched_gpu_quality {
    int worst;   /* enum gs_gpuset_class; GS_GPUSET_NONE for fewer than 2 GPUs or unknown */
    int nvlinks; /* the fewest links of a pair when worst is NVLINK */
    uint64_t score;
};

struct sched_node_alloc {
    uint32_t node; /* index in the cluster */
    uint64_t gpus; /* bit i: GPU index i */
    uint64_t cores[SCHED_MAX_CORES / 64];
    uint64_t mem_mib;
};

/* How many cores na holds. */
uint32_t sched_node_alloc_cores(const struct sched_node_alloc *na);

/* Where one job runs. Caller-owned: sched_alloc_init() before use, sched_alloc_release(). */
struct sched_alloc {
    uint32_t nnodes;
    bool exclusive;
    struct sched_node_alloc *nodes; /* nnodes entries, grown by sched_cluster_place() */
    uint32_t cap;
};

void sched_alloc_init(struct sched_alloc *alloc);
void sched_alloc_release(struct sched_alloc *alloc);
/* Copies src into dst (which must be initialised). Returns 0 or -ENOMEM. */
int sched_alloc_copy(struct sched_alloc *dst, const struct sched_alloc *src);

struct sched_cluster;

struct sched_cluster *sched_cluster_new(void);
void sched_cluster_free(struct sched_cluster *cluster);
/* A copy of the free-resource state, for what-if planning (see the top for what it borrows).
 * NULL when out of memory. */
struct sched_cluster *sched_cluster_copy(const struct sched_cluster *cluster);
/*
 * copy (made from original) as original is again, where original's nodes changed since the
 * copy was made or last synced only as copy's did too (each sched_cluster_take() on the
 * original also on the copy; the nodes' set is the same). At a cost in the nodes take and
 * give back changed on copy since then, where a fresh copy costs every node: a simulation
 * on a copy is undone for the next one.
 */
void sched_cluster_sync(struct sched_cluster *copy, const struct sched_cluster *original);

/* Adds a node, up and idle. Returns its index (>= 0), -EINVAL for impossible sizes, -ENOMEM. */
int sched_cluster_add_node(struct sched_cluster *cluster, const struct sched_node_info *info);
/*
 * Gives a node new resources (its worker came back with other GPUs, cores or memory).
 * Returns 0, -EBUSY while jobs hold any of it, -EINVAL for impossible sizes.
 */
int sched_cluster_reset_node(struct sched_cluster *cluster, uint32_t node,
                             const struct sched_node_info *info);
size_t sched_cluster_nnodes(const struct sched_cluster *cluster);
/* Distinct GPU link matrices among the nodes: nodes alike share one hierarchy (14 KB) and
 * its cache of GPU choices (256 KB once used). */
size_t sched_cluster_nshapes(const struct sched_cluster *cluster);
const char *sched_cluster_node_name(const struct sched_cluster *cluster, uint32_t node);
/* Marks a node up (schedulable) or down. A down node keeps its allocations' accounting. */
void sched_cluster_set_up(struct sched_cluster *cluster, uint32_t node, bool up);
bool sched_cluster_is_up(const struct sched_cluster *cluster, uint32_t node);

/* Free GPUs / cores / MiB of one node (for `gsched nodes`). */
uint32_t sched_cluster_free_gpus(const struct sched_cluster *cluster, uint32_t node);
/* Bit i: GPU i of node is free. */
uint64_t sched_cluster_free_gpu_mask(const struct sched_cluster *cluster, uint32_t node);
/* The best k of the node's GPUs in among (bit i: GPU i) were it empty (by link class), as a
 * mask; 0 when among holds fewer than k (or k is 0). What a reservation of k GPUs per node
 * keeps there, among those other reservations do not. */
uint64_t sched_cluster_best_gpus(const struct sched_cluster *cluster, uint32_t node, uint32_t k,
                                 uint64_t among);
uint32_t sched_cluster_free_cores(const struct sched_cluster *cluster, uint32_t node);
uint64_t sched_cluster_free_mem(const struct sched_cluster *cluster, uint32_t node);

/*
 * True when some set of req->nodes nodes of the cluster (up or not) could hold the job if
 * it were empty: submit-time check that the request is possible at all. On false, *why gets
 * a short reason ("no node has 9 GPUs"). A heterogeneous request: each component could,
 * and the cluster has as many nodes as they need together.
 */
bool sched_cluster_could_ever_fit(const struct sched_cluster *cluster, const struct sched_req *req,
                                  char *why, size_t why_size);

/*
 * Chooses nodes, GPUs and cores for req among what is free now. avoid (NULL, or a bitmap of
 * nnodes bits) excludes nodes. Returns 0 with *alloc filled, -EAGAIN when it does not fit
 * now, -ENOMEM. Does not take the resources: sched_cluster_take() does. A heterogeneous
 * request's components are placed one after the other, each avoiding the nodes of those
 * before it (greedy: the first component's best nodes may leave a later one short).
 */
int sched_cluster_place(const struct sched_cluster *cluster, const struct sched_req *req,
                        const uint64_t *avoid, struct sched_alloc *alloc);
/*
 * Bytes of req's dataset (req->data_bytes; 0 without) that the best req->nodes nodes for
 * its data could give it: nodes up, allowed to it and able to hold its share when empty,
 * busy or not. What a placement waiting for its data's nodes would get (delay scheduling,
 * scheduler.data_locality_wait).
 */
uint64_t sched_cluster_data_best(const struct sched_cluster *cluster, const struct sched_req *req);
/* Bytes of req's dataset on alloc's nodes (0 without req->data_bytes). */
uint64_t sched_cluster_data_at(const struct sched_req *req, const struct sched_alloc *alloc);
void sched_cluster_take(struct sched_cluster *cluster, const struct sched_alloc *alloc);
/*
 * A number that changes whenever an allocation on node is taken or given back: who holds
 * its GPUs needs looking up again only when it moved.
 */
uint64_t sched_cluster_alloc_gen(const struct sched_cluster *cluster, uint32_t node);
/* Allocations holding part of node now (0: it is idle). */
uint32_t sched_cluster_node_jobs(const struct sched_cluster *cluster, uint32_t node);
/* The link quality of gpus on node (for `gsched show` and the event log). */
void sched_cluster_gpu_quality(const struct sched_cluster *cluster, uint32_t node, uint64_t gpus,
                               struct sched_gpu_quality *ret);
void sched_cluster_give_back(struct sched_cluster *cluster, const struct sched_alloc *alloc);
/* Whether the free-capacity index matches the nodes (for tests). */
bool sched_cluster_index_ok(const struct sched_cluster *cluster);

#endif
