/*
 * priority.c: Slurm's multifactor priority over gsched's jobs (see priority.h). The
 * planner asks for every pending job's priority at each pass, so the age factor moves
 * with time and the fair-share factor with usage.
 */
#include "scheduler/priority.h"

#include <math.h>
#include <string.h>

static double clamp01(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* The job's partition's priority_job_factor over the largest any partition has. */
static double partition_factor(const struct gs_config *cfg, const struct gs_jobspec *spec)
{
    const struct gs_config_partition *p = gs_config_partition(cfg, spec->partition);
    uint32_t max = 0;

    for (size_t i = 0; i < cfg->npartitions; i++) {
        if (cfg->partitions[i].priority_job_factor > max)
            max = cfg->partitions[i].priority_job_factor;
    }
    return p != NULL && max > 0 ? (double)p->priority_job_factor / max : 0;
}

static double qos_factor(const struct gs_config *cfg, const struct gs_jobspec *spec)
{
    const struct gs_config_qos *q = gs_config_qos(cfg, spec->qos);
    uint32_t max = 0;

    for (size_t i = 0; i < cfg->nqos; i++) {
        if (cfg->qos[i].priority > max)
            max = cfg->qos[i].priority;
    }
    return q != NULL && max > 0 ? (double)q->priority / max : 0;
}

/* One component's share of the cluster (a job's only one, unless it is heterogeneous). */
static double size_share(const struct gs_jobspec *spec, const struct sched_prio_cluster *cluster)
{
    uint64_t nodes = spec->nodes > 0 ? spec->nodes : 1;

    if (spec->gpus_per_node > 0 && cluster->gpus > 0)
        return (double)(nodes * spec->gpus_per_node) / (double)cluster->gpus;
    if (cluster->cores > 0)
        return (double)(nodes * (spec->cpus_per_task > 0 ? spec->cpus_per_task : 1) *
                        (spec->tasks_per_node > 0 ? spec->tasks_per_node : 1)) /
               (double)cluster->cores;
    return 0;
}

static double size_factor(const struct gs_config_priority *w, const struct gs_jobspec *spec,
                          const struct sched_prio_cluster *cluster)
{
    double f = 0;

    for (uint32_t k = 0; k <= spec->nhet; k++) {
        struct gs_jobspec c;

        gs_jobspec_het_view(spec, k, &c);
        f += size_share(&c, cluster);
    }
    f = clamp01(f);
    return w->favor_small ? 1 - f : f;
}

void sched_priority(const struct gs_config *cfg, const struct gs_jobspec *spec, uint64_t submit_ms,
                    uint64_t now_ms, double fairshare, const struct sched_prio_cluster *cluster,
                    struct sched_prio *ret)
{
    const struct gs_config_priority *w = &cfg->priority;
    double sum;

    memset(ret, 0, sizeof(*ret));
    if (spec->priority != 0) {
        ret->priority = spec->priority;
        ret->admin_set = true;
        return;
    }
    ret->nice = spec->nice;
    if (w->multifactor) {
        double age_s = now_ms > submit_ms ? (double)(now_ms - submit_ms) / 1000.0 : 0;

        ret->age = w->weight_age * (w->max_age_s > 0 ? clamp01(age_s / (double)w->max_age_s) : 1);
        ret->fairshare = w->weight_fairshare * clamp01(fairshare);
        ret->job_size = w->weight_job_size * size_factor(w, spec, cluster);
        ret->partition = w->weight_partition * partition_factor(cfg, spec);
        ret->qos = w->weight_qos * qos_factor(cfg, spec);
    }
    sum = round(ret->age + ret->fairshare + ret->job_size + ret->partition + ret->qos) -
          (double)spec->nice;
    ret->priority = sum > INT32_MAX ? INT32_MAX : sum < -INT32_MAX ? -INT32_MAX : (int32_t)sum;
}

double sched_billing_rate(const struct gs_config_priority *p, uint64_t gpus, uint64_t cores,
                          uint64_t mem_mib)
{
    return p->billing_gpu * (double)gpus + p->billing_cpu * (double)cores +
           p->billing_mem_gib * (double)mem_mib / 1024.0;
}
