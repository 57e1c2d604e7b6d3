/*
 * data.h: the simulator's data model (docs/simulator.md, "Data locality"): each job reads
 * a dataset, each node caches datasets up to a size, least recently used first out, and a
 * job whose nodes lack their share of its dataset copies the missing bytes before it runs,
 * at one rate per node, so its run is that much longer. The planner sees each node's
 * cached bytes as gschedd's registry gives them (sched_node_masks.data_bytes), so the
 * -data policies replay gschedd's data-aware placement and delay scheduling.
 *
 * Which dataset: jobs of one trace account read one dataset (a model's jobs train on its
 * data), the accounts hashed onto `datasets` of them with the seed
 * (gs_sim_trace_assign_datasets). Each node of a job of
 * n nodes needs 1/n of the dataset; a node holding more (from a job on fewer nodes) needs
 * nothing more.
 *
 * Single-threaded; the caches are the caller's (_new/_free).
 */
#ifndef GS_SIM_DATA_H
#define GS_SIM_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "sim/trace.h"

struct gs_sim_data_model {
    uint32_t datasets;      /* 0: jobs read no data (the default) */
    uint64_t dataset_bytes; /* each dataset's size */
    uint64_t cache_bytes;   /* each node's cache */
    uint64_t copy_rate;     /* bytes a node copies per second, > 0 */
    uint64_t wait_s;        /* the -wait and -ski policies' data_locality_wait */
};

#define GS_SIM_DEFAULT_DATASET_BYTES (UINT64_C(500) << 30) /* 500 GiB */
#define GS_SIM_DEFAULT_CACHE_BYTES (UINT64_C(2) << 40)     /* 2 TiB */
#define GS_SIM_DEFAULT_COPY_RATE (UINT64_C(1) << 30)       /* 1 GiB/s */
#define GS_SIM_DEFAULT_DATA_WAIT_S 600

struct gs_sim_caches;

/* Empty caches for nnodes nodes under model m (borrowed: outlives them). NULL: no memory. */
struct gs_sim_caches *gs_sim_caches_new(size_t nnodes, const struct gs_sim_data_model *m);
void gs_sim_caches_free(struct gs_sim_caches *c);

/* The bytes of dataset d each node caches, into out[0..nnodes). */
void gs_sim_caches_bytes(const struct gs_sim_caches *c, uint32_t d, uint64_t *out);

/*
 * A job of dataset d starts at now_ms on the n nodes listed (cluster indices): each gets
 * its share, evicting the least recently used other datasets past the cache size.
 * *ret_ms: the copy's time (the node with the most to copy, at copy_rate); the bytes
 * copied over all nodes are added to *copied. 0 or -ENOMEM (the caches unchanged).
 */
int gs_sim_caches_stage(struct gs_sim_caches *c, uint32_t d, const uint32_t *nodes, uint32_t n,
                        uint64_t now_ms, uint64_t *ret_ms, uint64_t *copied);

#endif
