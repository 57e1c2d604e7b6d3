/*
 * model.c: the run-time model of the simulator (see model.h): link factors, the stretch
 * of an allocation, time limits.
 */
#include "sim/model.h"

#include <math.h>

#include "common/gpuset.h"

double gs_sim_link_factor(int cls)
{
    switch (cls) {
    case GS_GPUSET_PIX:
    case GS_GPUSET_PXB:
        return 1.1;
    case GS_GPUSET_PHB:
    case GS_GPUSET_NODE:
        return 1.2;
    case GS_GPUSET_SYS:
        return 1.3;
    default: /* NVLink, or fewer than two GPUs */
        return 1.0;
    }
}

double gs_sim_stretch(const struct sched_cluster *truth, const struct sched_alloc *alloc,
                      const struct gs_sim_node *nodes)
{
    double stretch = 1.0;
    bool cross = false;

    for (uint32_t k = 0; k < alloc->nnodes; k++) {
        const struct sched_node_alloc *a = &alloc->nodes[k];
        struct sched_gpu_quality q;
        double f;

        sched_cluster_gpu_quality(truth, a->node, a->gpus, &q);
        f = gs_sim_link_factor(q.worst);
        stretch = f > stretch ? f : stretch;
        cross = cross || nodes[a->node].switch_id != nodes[alloc->nodes[0].node].switch_id;
    }
    if (alloc->nnodes > 1) {
        double f = cross ? GS_SIM_FACTOR_CROSS_SWITCH : GS_SIM_FACTOR_SAME_SWITCH;
        stretch = f > stretch ? f : stretch;
    }
    return stretch;
}

uint64_t gs_sim_run_ms(uint64_t duration_ms, double stretch)
{
    double ms = round((double)duration_ms * stretch);

    return ms < 1 ? 1 : (uint64_t)ms;
}

uint64_t gs_sim_time_limit_s(uint64_t duration_ms)
{
    return (uint64_t)ceil((double)duration_ms * GS_SIM_LIMIT_FACTOR / 1000.0);
}
