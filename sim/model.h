/*
 * model.h: how long a job runs where it was placed, the simulator's run-time model.
 *
 * A trace gives each job's run time; we take it as its time on a well-connected placement
 * and stretch it by the slowest link its collective communication must cross, since a
 * data-parallel all-reduce runs at the speed of its slowest pair:
 *
 *   within a node, the worst GPU link class of the allocation (sched_cluster_gpu_quality):
 *     NVLink / NVSwitch, or one GPU        1.0
 *     PCIe under one switch (PIX, PXB)     1.1
 *     through a host bridge (PHB, NODE)    1.2
 *     across CPU sockets (SYS)             1.3
 *   across nodes:
 *     all under one network switch         1.2
 *     across switches                      1.4
 *
 * The stretch is the largest factor that applies. These are a model, not a measurement:
 * they order the links as bandwidth does (NVLink ~10x PCIe; the inter-socket link and the
 * network below both) and keep the penalty to a communication share of a step of a few
 * tens of per cent, as data-parallel jobs with overlapped all-reduce see. Time limits are
 * the trace's run time x 1.5, rounded up to a second: users overestimate, and the factor
 * stays above the largest stretch, so no job times out.
 */
#ifndef GS_SIM_MODEL_H
#define GS_SIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/cluster.h"
#include "sim/trace.h"

#define GS_SIM_LIMIT_FACTOR 1.5
#define GS_SIM_FACTOR_SAME_SWITCH 1.2
#define GS_SIM_FACTOR_CROSS_SWITCH 1.4

/* The factor of a link class (enum gs_gpuset_class). */
double gs_sim_link_factor(int cls);

/*
 * The stretch of alloc: truth is the cluster with every node's link matrix (whatever the
 * policy placed by), nodes the trace's nodes in cluster order (for their switches).
 */
double gs_sim_stretch(const struct sched_cluster *truth, const struct sched_alloc *alloc,
                      const struct gs_sim_node *nodes);

/* The run time of a job of duration_ms stretched (rounded to the millisecond, >= 1). */
uint64_t gs_sim_run_ms(uint64_t duration_ms, double stretch);
/* Its time limit in seconds: duration x GS_SIM_LIMIT_FACTOR, rounded up. */
uint64_t gs_sim_time_limit_s(uint64_t duration_ms);

#endif
