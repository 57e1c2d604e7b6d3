/*
 * gpuset.h: which of a node's GPUs a job gets, chosen by the links between them.
 *
 * A data-parallel job's all-reduce runs at the speed of its slowest GPU pair, so the set a
 * job gets matters as much as how many. For every GPU pair of a node we know a link class
 * (what `nvidia-smi topo -m` prints; lower is better) and, for NVLink, the number of links
 * (more is better). gs_gpuset_init() turns that matrix into a hierarchy of groups once per
 * node shape; gs_gpuset_choose() then picks k GPUs out of the free ones:
 *
 *   1. minimise the worst link class over the chosen pairs;
 *   2. then minimise the sum of the pairs' classes, then maximise the sum of NVLink counts;
 *   3. then best fit against fragmentation: take GPUs from groups that are already partly
 *      used rather than break a wholly free NVLink island or PCIe switch, lower (better
 *      connected) groups first;
 *   4. then the lowest GPU indices.
 *
 * Groups: for each class level c, the connected components of the graph whose edges are the
 * pairs of class <= c (c = 0 gives single GPUs). They nest, forming a tree: NVLink islands,
 * PCIe switches, host bridges, NUMA nodes, the whole node. Where a group's pairs across its
 * subgroups all share one class (any topology read off a PCIe tree, NVSwitch nodes) a choice
 * inside it is a small dynamic programme over its subgroups; elsewhere (NVLink meshes such as
 * DGX-1's hybrid cube) the group's free GPUs are enumerated when there are at most
 * GS_GPUSET_ENUM_MAX of them, and grown greedily from each seed beyond that (then the choice
 * may miss the optimum; no real node shape we know of gets there).
 *
 * Pure: no I/O, no allocation, no global state. A struct gs_gpuset_node is caller-owned
 * storage, holds no resources (nothing to release), is immutable after init and may be read
 * from any number of threads at once.
 */
#ifndef GS_GPUSET_H
#define GS_GPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_GPUSET_MAX 64                         /* GPUs per node: one bit each in a uint64_t */
#define GS_GPUSET_GROUPS_MAX (2 * GS_GPUSET_MAX) /* a laminar family of 64 sets has <= 127 */
#define GS_GPUSET_ENUM_MAX 12                    /* free GPUs of an irregular group enumerated */
#define GS_GPUSET_NAME_MAX 8                     /* "NV255" and its NUL fit */

/* Link classes, as nvidia-smi names them; lower is better. */
enum gs_gpuset_class {
    GS_GPUSET_NONE = 0,   /* no pair at all: a set of fewer than two GPUs */
    GS_GPUSET_NVLINK = 1, /* NVLink (or NVSwitch), with a link count */
    GS_GPUSET_PIX = 2,    /* at most one PCIe switch between them */
    GS_GPUSET_PXB = 3,    /* several PCIe switches, no host bridge */
    GS_GPUSET_PHB = 4,    /* through a PCIe host bridge */
    GS_GPUSET_NODE = 5,   /* across host bridges within one NUMA node */
    GS_GPUSET_SYS = 6,    /* across NUMA nodes / sockets (SMP interconnect) */
};
#define GS_GPUSET_CLASS_WORST GS_GPUSET_SYS

/*
 * How much a job cares which GPUs it gets. The values match enum gs_gpu_affinity of
 * common/jobspec.h (the job file's [placement] gpu_affinity), which this module does not
 * include so that it stays free of the job model.
 */
enum gs_gpuset_affinity {
    GS_GPUSET_PREFER = 0, /* the best set free now */
    GS_GPUSET_STRICT = 1, /* only a set whose worst class an empty node could not beat */
    GS_GPUSET_ANY = 2,    /* the lowest free indices, topology ignored */
};

/* One entry of the pairwise matrix. nvlinks is read only when cls is GS_GPUSET_NVLINK. */
struct gs_gpuset_link {
    uint8_t cls;     /* enum gs_gpuset_class, GS_GPUSET_NVLINK..GS_GPUSET_SYS */
    uint8_t nvlinks; /* NVLink count, 0 when unknown */
};

/* One group of the hierarchy. Private to gpuset.c; in the header only for its size. */
struct gs_gpuset_group {
    uint64_t mask;       /* its GPUs */
    uint8_t lo, hi;      /* the class levels at which it is a connected component */
    uint8_t maxc;        /* worst class between two of its GPUs (0 for one GPU) */
    uint8_t classes;     /* bit c: some pair of its GPUs is of class c */
    uint8_t cross_cls;   /* class of every pair across two subgroups, when uniform */
    uint8_t cross_nvl;   /* their NVLink count, when uniform */
    bool uniform;        /* every pair across two subgroups has the same class and count */
    int16_t parent;      /* -1 for the root */
    int16_t first_child; /* -1 for a single GPU */
    int16_t next_sibling;
    int16_t end; /* groups are in pre-order: its descendants are (index, end) */
};

struct gs_gpuset_node {
    int ngpus;
    int ngroups;
    uint8_t cls[GS_GPUSET_MAX][GS_GPUSET_MAX];
    uint8_t nvlinks[GS_GPUSET_MAX][GS_GPUSET_MAX];          /* 0 unless cls is NVLINK */
    uint64_t adj[GS_GPUSET_CLASS_WORST + 1][GS_GPUSET_MAX]; /* [c][i]: j != i with cls <= c */
    struct gs_gpuset_group groups[GS_GPUSET_GROUPS_MAX];
    uint8_t best_worst[GS_GPUSET_MAX + 1]; /* [k]: worst class of the best k-set, empty node */
};

/* A chosen set and how good it is. */
struct gs_gpuset_choice {
    uint64_t mask;     /* bit i: GPU i (CUDA_VISIBLE_DEVICES index i) */
    int ngpus;         /* k */
    int worst;         /* enum gs_gpuset_class of the worst pair; GS_GPUSET_NONE if k < 2 */
    int worst_nvlinks; /* when worst is NVLINK: the fewest links of a pair, else 0 */
    int total;         /* sum of the classes of all k(k-1)/2 pairs */
    int nvlinks;       /* sum of the NVLink counts of all pairs */
    /*
     * Fragmentation cost: free GPUs left behind in the groups the set touches, weighted so
     * that one left in a better-connected group outweighs any number left in worse ones.
     * Lower is better; comparable only between choices on one node and free mask.
     */
    uint64_t frag;
    /*
     * worst, total and nvlinks in one number, lower is better, comparable between nodes of
     * any shape for the same k: worst << 40 | total << 20 | (2^20 - 1 - nvlinks).
     */
    uint64_t score;
};

/*
 * Builds n for a node of ngpus GPUs (0..GS_GPUSET_MAX) from links, an ngpus x ngpus
 * row-major matrix (links[i * ngpus + j]); the diagonal is not read. Returns -EINVAL, without
 * touching n, when ngpus is out of range, the matrix is not symmetric or a class is not
 * NVLINK..SYS. It solves every k on an empty node: under a millisecond for 64 GPUs shaped
 * like a PCIe tree or NVSwitch, some tens of milliseconds for a 64-GPU NVLink ring.
 */
int gs_gpuset_init(struct gs_gpuset_node *n, int ngpus, const struct gs_gpuset_link *links);

/*
 * Chooses k of the GPUs in free_mask (see the rule at the top) and fills *ret. k = 0 gives
 * the empty set. Returns -EINVAL when k < 0, k > ngpus or free_mask names a GPU the node does
 * not have; -EAGAIN when fewer than k are free, or when aff is STRICT and the best set free
 * now is worse than gs_gpuset_best_possible(n, k). *ret is written only on success.
 * Allocates nothing. Costs (bench/placement.c): 0.1-0.4 us on 8-GPU nodes, ~1 us on DGX-1's
 * mesh, up to ~15 us for 32 of 64 GPUs of a PCIe tree; only large irregular groups take more.
 */
int gs_gpuset_choose(const struct gs_gpuset_node *n, uint64_t free_mask, int k,
                     enum gs_gpuset_affinity aff, struct gs_gpuset_choice *ret);

/* How good a given set of GPUs is (worst, total, nvlinks, score; frag 0): for reporting a
 * placement already made. Bits beyond the node's GPUs are ignored. */
void gs_gpuset_evaluate(const struct gs_gpuset_node *n, uint64_t gpus,
                        struct gs_gpuset_choice *ret);

/* The worst class of the best k-set on an empty node of this shape, or -EINVAL for a bad k. */
int gs_gpuset_best_possible(const struct gs_gpuset_node *n, int k);

/*
 * Writes the class's short name into buf (size >= GS_GPUSET_NAME_MAX is always enough) and
 * returns buf: "NV18" (NVLink with its count; "NV" when the count is 0), "PIX", "PXB",
 * "PHB", "NODE", "SYS", "X" for GS_GPUSET_NONE (as nvidia-smi marks a GPU with itself), "?"
 * for anything else.
 */
char *gs_gpuset_class_name(int cls, int nvlinks, char *buf, size_t size);

#endif
