/*
 * usage.c: a job's accumulated use of its allocation (usage.h): the sums a heartbeat adds
 * to, and the gs.JobUsage form the store and the CLI see.
 */
#include "scheduler/usage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sched_usage_release(struct sched_job_usage *u)
{
    free(u->used);
    free(u->tasks);
    memset(u, 0, sizeof(*u));
}

static int mark_used(struct sched_job_usage *u, uint32_t alloc_node, uint32_t nalloc, uint32_t gpu)
{
    if (alloc_node >= nalloc || gpu >= 64)
        return -EINVAL;
    if (u->nused < nalloc) {
        uint64_t *used = realloc(u->used, nalloc * sizeof(*used));

        if (used == NULL)
            return -ENOMEM;
        memset(&used[u->nused], 0, (nalloc - u->nused) * sizeof(*used));
        u->used = used;
        u->nused = nalloc;
    }
    u->used[alloc_node] |= UINT64_C(1) << gpu;
    return 0;
}

int sched_usage_gpu(struct sched_job_usage *u, uint32_t alloc_node, uint32_t nalloc, uint32_t gpu,
                    uint32_t util_pct, uint32_t util_max_pct, uint64_t mem_mib, uint64_t dt_ms,
                    bool idle)
{
    u->telemetry = true;
    u->gpu_alloc_ms += dt_ms;
    u->util_pct_ms += (double)util_pct * (double)dt_ms;
    if (idle)
        u->gpu_idle_ms += dt_ms;
    if (util_max_pct > u->util_max_pct)
        u->util_max_pct = util_max_pct;
    if (mem_mib > u->mem_peak_mib)
        u->mem_peak_mib = mem_mib;
    return idle ? 0 : mark_used(u, alloc_node, nalloc, gpu);
}

int sched_usage_task(struct sched_job_usage *u, uint32_t step, uint32_t rank, uint64_t cpu_ms,
                     uint64_t rss_mib)
{
    struct sched_usage_task *t = NULL;

    u->telemetry = true;
    if (rss_mib > u->rss_peak_mib)
        u->rss_peak_mib = rss_mib;
    for (size_t i = 0; i < u->ntasks && t == NULL; i++)
        if (u->tasks[i].step == step && u->tasks[i].rank == rank)
            t = &u->tasks[i];
    if (t == NULL) {
        if (u->ntasks >= SCHED_USAGE_MAX_TASKS)
            return -E2BIG; /* a worker naming ever new ranks: memory stays bounded */
        if (u->ntasks == u->cap) {
            size_t cap = u->cap > 0 ? 2 * u->cap : 4;
            struct sched_usage_task *tasks = realloc(u->tasks, cap * sizeof(*tasks));

            if (tasks == NULL)
                return -ENOMEM;
            u->tasks = tasks;
            u->cap = cap;
        }
        t = &u->tasks[u->ntasks++];
        *t = (struct sched_usage_task){.step = step, .rank = rank};
    }
    if (cpu_ms < t->cpu_ms)
        u->cpu_done_ms += t->cpu_ms;
    t->cpu_ms = cpu_ms;
    return 0;
}

uint64_t sched_usage_cpu_ms(const struct sched_job_usage *u)
{
    uint64_t ms = u->cpu_done_ms;

    for (size_t i = 0; i < u->ntasks; i++)
        ms += u->tasks[i].cpu_ms;
    return ms;
}

uint32_t sched_usage_gpus_used(const struct sched_job_usage *u)
{
    uint32_t n = u->gpus_used_stored;

    for (uint32_t i = 0; i < u->nused; i++)
        n += (uint32_t)__builtin_popcountll(u->used[i]);
    return n;
}

double sched_usage_util_mean(const struct sched_job_usage *u)
{
    return u->gpu_alloc_ms > 0 ? u->util_pct_ms / (double)u->gpu_alloc_ms : 0.0;
}

void sched_usage_to_msg(const struct sched_job_usage *u, Gs__JobUsage *m)
{
    m->telemetry = u->telemetry;
    m->gpu_alloc_ms = u->gpu_alloc_ms;
    m->gpu_idle_ms = u->gpu_idle_ms;
    m->gpu_util_mean_pct = sched_usage_util_mean(u);
    m->gpu_util_max_pct = u->util_max_pct;
    m->gpu_mem_peak_mib = u->mem_peak_mib;
    m->gpus_used = sched_usage_gpus_used(u);
    m->cpu_time_ms = sched_usage_cpu_ms(u);
    m->rss_peak_mib = u->rss_peak_mib;
    m->idle_flags = u->idle_flags;
    m->data_bytes_local = u->data_bytes_local;
    m->data_bytes_peer = u->data_bytes_peer;
    m->data_bytes_source = u->data_bytes_source;
    m->data_stage_ms = u->data_stage_ms;
}

int sched_usage_from_packed(struct sched_job_usage *u, const void *data, size_t len)
{
    Gs__JobUsage *m = gs__job_usage__unpack(NULL, len, data);

    if (m == NULL)
        return -EINVAL;
    memset(u, 0, sizeof(*u));
    u->telemetry = m->telemetry;
    u->gpu_alloc_ms = m->gpu_alloc_ms;
    u->gpu_idle_ms = m->gpu_idle_ms;
    u->util_pct_ms = m->gpu_util_mean_pct * (double)m->gpu_alloc_ms;
    u->util_max_pct = m->gpu_util_max_pct;
    u->mem_peak_mib = m->gpu_mem_peak_mib;
    u->gpus_used_stored = m->gpus_used;
    u->cpu_done_ms = m->cpu_time_ms;
    u->rss_peak_mib = m->rss_peak_mib;
    u->idle_flags = m->idle_flags;
    u->data_bytes_local = m->data_bytes_local;
    u->data_bytes_peer = m->data_bytes_peer;
    u->data_bytes_source = m->data_bytes_source;
    u->data_stage_ms = m->data_stage_ms;
    u->data = u->data_bytes_local + u->data_bytes_peer + u->data_bytes_source > 0;
    gs__job_usage__free_unpacked(m, NULL);
    return 0;
}

int sched_usage_pack(const struct sched_job_usage *u, void **ret, size_t *ret_len)
{
    Gs__JobUsage m = GS__JOB_USAGE__INIT;
    size_t len;

    *ret = NULL;
    *ret_len = 0;
    if (!u->telemetry && !u->data)
        return 0;
    sched_usage_to_msg(u, &m);
    len = gs__job_usage__get_packed_size(&m);
    *ret = malloc(len > 0 ? len : 1);
    if (*ret == NULL)
        return -ENOMEM;
    *ret_len = gs__job_usage__pack(&m, *ret);
    return 0;
}
