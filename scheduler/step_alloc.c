/*
 * step_alloc.c: a running job's cores and GPUs and what its steps hold of them (see
 * step_alloc.h). Like cluster.c, GPUs are one 64-bit mask per node and cores a bitmap, so
 * a fit check is a few popcounts; a take first checks every node and only then marks, so a
 * step that does not fit leaves nothing behind.
 */
#include "scheduler/step_alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NUMA_UNKNOWN (-1)

struct step_node {
    uint64_t gpus; /* the job's */
    uint64_t cores[SCHED_STEP_CORE_WORDS];
    uint64_t held_gpus; /* by running steps */
    uint64_t held_cores[SCHED_STEP_CORE_WORDS];
    int16_t gpu_numa[SCHED_MAX_GPUS];
    int16_t core_numa[SCHED_MAX_CORES];
};

struct sched_step_alloc {
    struct step_node *nodes;
    uint32_t nnodes;
};

static uint32_t popcount(uint64_t w)
{
    return (uint32_t)__builtin_popcountll(w);
}

static uint32_t cores_count(const uint64_t *words)
{
    uint32_t n = 0;

    for (size_t i = 0; i < SCHED_STEP_CORE_WORDS; i++)
        n += popcount(words[i]);
    return n;
}

struct sched_step_alloc *sched_step_alloc_new(const struct sched_node_alloc *nodes, uint32_t nnodes)
{
    struct sched_step_alloc *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    a->nodes = calloc(nnodes + 1, sizeof(*a->nodes));
    if (a->nodes == NULL) {
        free(a);
        return NULL;
    }
    a->nnodes = nnodes;
    for (uint32_t i = 0; i < nnodes; i++) {
        struct step_node *n = &a->nodes[i];

        n->gpus = nodes[i].gpus;
        memcpy(n->cores, nodes[i].cores, sizeof(n->cores));
        for (size_t g = 0; g < SCHED_MAX_GPUS; g++)
            n->gpu_numa[g] = NUMA_UNKNOWN;
        for (size_t c = 0; c < SCHED_MAX_CORES; c++)
            n->core_numa[c] = NUMA_UNKNOWN;
    }
    return a;
}

void sched_step_alloc_free(struct sched_step_alloc *a)
{
    if (a == NULL)
        return;
    free(a->nodes);
    free(a);
}

void sched_step_alloc_set_numa(struct sched_step_alloc *a, uint32_t node, const int16_t *gpu_numa,
                               size_t ngpus, const int16_t *core_numa, size_t ncores)
{
    struct step_node *n;

    if (node >= a->nnodes)
        return;
    n = &a->nodes[node];
    for (size_t g = 0; gpu_numa != NULL && g < ngpus && g < SCHED_MAX_GPUS; g++)
        n->gpu_numa[g] = gpu_numa[g];
    for (size_t c = 0; core_numa != NULL && c < ncores && c < SCHED_MAX_CORES; c++)
        n->core_numa[c] = core_numa[c];
}

/* --- one node --------------------------------------------------------------------------------- */

static uint32_t cores_wanted(const struct sched_step_ask *ask)
{
    return ask->ntasks * (ask->cpus_per_task > 0 ? ask->cpus_per_task : 1);
}

/* Whether the ask could be met by the job's node with nothing held. */
static bool ever_fits(const struct step_node *n, const struct sched_step_ask *ask)
{
    uint64_t want = cores_wanted(ask);

    if (want > cores_count(n->cores)) /* every task needs its CPUs, shared or not */
        return false;
    return ask->all_gpus || ask->gpus <= popcount(n->gpus);
}

static void free_cores(const struct step_node *n, uint64_t *out)
{
    for (size_t i = 0; i < SCHED_STEP_CORE_WORDS; i++)
        out[i] = n->cores[i] & ~n->held_cores[i];
}

static bool fits_now(const struct step_node *n, const struct sched_step_ask *ask)
{
    uint64_t free_c[SCHED_STEP_CORE_WORDS];

    if (ask->all_gpus ? (n->held_gpus & n->gpus) != 0
                      : ask->gpus > popcount(n->gpus & ~n->held_gpus))
        return false;
    free_cores(n, free_c);
    if (!ask->exact_cores) /* all of the job's cores there: none may be held */
        return cores_count(free_c) == cores_count(n->cores);
    return cores_wanted(ask) <= cores_count(free_c);
}

/* The lowest want GPUs of free whose NUMA node is numa (NUMA_UNKNOWN: any). */
static uint64_t lowest_gpus(const struct step_node *n, uint64_t free_g, uint32_t want, int numa)
{
    uint64_t got = 0;

    for (uint32_t g = 0; g < SCHED_MAX_GPUS && popcount(got) < want; g++) {
        if ((free_g >> g & 1) && (numa == NUMA_UNKNOWN || n->gpu_numa[g] == numa))
            got |= UINT64_C(1) << g;
    }
    return got;
}

/* want free GPUs: all on one NUMA node if one has enough (the lowest such), else lowest. */
static uint64_t pick_gpus(const struct step_node *n, uint32_t want)
{
    uint64_t free_g = n->gpus & ~n->held_gpus;

    for (uint32_t g = 0; g < SCHED_MAX_GPUS && want > 0; g++) {
        int numa = n->gpu_numa[g];
        uint64_t there;

        if (!(free_g >> g & 1) || numa == NUMA_UNKNOWN)
            continue;
        there = lowest_gpus(n, free_g, want, numa);
        if (popcount(there) == want)
            return there;
    }
    return lowest_gpus(n, free_g, want, NUMA_UNKNOWN);
}

/* Takes up to *left free cores into out, the near ones (NUMA node in near) only if asked. */
static void take_cores(const struct step_node *n, const uint64_t *free_c, uint64_t near_numa,
                       bool near_only, uint32_t *left, uint64_t *out)
{
    for (uint32_t c = 0; c<SCHED_MAX_CORES && * left> 0; c++) {
        uint64_t bit = UINT64_C(1) << (c % 64);
        int numa = n->core_numa[c];
        bool near = numa >= 0 && numa < 64 && (near_numa >> numa & 1);

        if (!(free_c[c / 64] & bit) || (out[c / 64] & bit) || (near_only && !near))
            continue;
        out[c / 64] |= bit;
        (*left)--;
    }
}

static void pick_cores(const struct step_node *n, const struct sched_step_ask *ask, uint64_t gpus,
                       struct sched_step_grant *g)
{
    uint64_t free_c[SCHED_STEP_CORE_WORDS], near_numa = 0;
    uint32_t left = cores_wanted(ask);

    if (!ask->exact_cores) {
        memcpy(g->cores, n->cores, sizeof(g->cores));
        return;
    }
    free_cores(n, free_c);
    for (uint32_t i = 0; i < SCHED_MAX_GPUS; i++) {
        if ((gpus >> i & 1) && n->gpu_numa[i] >= 0 && n->gpu_numa[i] < 64)
            near_numa |= UINT64_C(1) << n->gpu_numa[i];
    }
    take_cores(n, free_c, near_numa, true, &left, g->cores);
    take_cores(n, free_c, 0, false, &left, g->cores);
}

static void grant_node(const struct step_node *n, const struct sched_step_ask *ask,
                       struct sched_step_grant *g)
{
    memset(g, 0, sizeof(*g));
    if (ask->ntasks == 0)
        return;
    g->held = true;
    g->gpus = ask->all_gpus ? n->gpus : pick_gpus(n, ask->gpus);
    pick_cores(n, ask, g->gpus, g);
}

static void hold(struct step_node *n, const struct sched_step_grant *g)
{
    n->held_gpus |= g->gpus;
    for (size_t i = 0; i < SCHED_STEP_CORE_WORDS; i++)
        n->held_cores[i] |= g->cores[i];
}

/* --- the step ----------------------------------------------------------------------------------
 */

int sched_step_alloc_take(struct sched_step_alloc *a, const struct sched_step_ask *ask,
                          bool overlap, struct sched_step_grant *ret, uint32_t *ret_node)
{
    bool busy = false;

    for (uint32_t i = 0; i < a->nnodes; i++) {
        if (ask[i].ntasks == 0)
            continue;
        if (!ever_fits(&a->nodes[i], &ask[i])) {
            if (ret_node != NULL)
                *ret_node = i;
            return -ENOSPC;
        }
        busy = busy || (!overlap && !fits_now(&a->nodes[i], &ask[i]));
    }
    if (busy)
        return -EBUSY;
    for (uint32_t i = 0; i < a->nnodes; i++) {
        struct sched_step_grant *g = &ret[i];

        if (overlap) { /* sees what the job has there, holds nothing */
            memset(g, 0, sizeof(*g));
            if (ask[i].ntasks == 0)
                continue;
            g->gpus = a->nodes[i].gpus;
            memcpy(g->cores, a->nodes[i].cores, sizeof(g->cores));
            continue;
        }
        grant_node(&a->nodes[i], &ask[i], g);
        hold(&a->nodes[i], g);
    }
    return 0;
}

void sched_step_alloc_give_back(struct sched_step_alloc *a, const struct sched_step_grant *grants)
{
    for (uint32_t i = 0; i < a->nnodes; i++) {
        struct step_node *n = &a->nodes[i];

        if (!grants[i].held)
            continue;
        n->held_gpus &= ~grants[i].gpus;
        for (size_t w = 0; w < SCHED_STEP_CORE_WORDS; w++)
            n->held_cores[w] &= ~grants[i].cores[w];
    }
}

int sched_step_alloc_hold(struct sched_step_alloc *a, const struct sched_step_grant *grants)
{
    for (uint32_t i = 0; i < a->nnodes; i++) {
        const struct step_node *n = &a->nodes[i];

        if (!grants[i].held)
            continue;
        if ((n->held_gpus & grants[i].gpus) != 0)
            return -EBUSY;
        for (size_t w = 0; w < SCHED_STEP_CORE_WORDS; w++) {
            if ((n->held_cores[w] & grants[i].cores[w]) != 0)
                return -EBUSY;
        }
    }
    for (uint32_t i = 0; i < a->nnodes; i++) {
        struct step_node *n = &a->nodes[i];

        if (!grants[i].held)
            continue;
        n->held_gpus |= grants[i].gpus;
        for (size_t w = 0; w < SCHED_STEP_CORE_WORDS; w++)
            n->held_cores[w] |= grants[i].cores[w];
    }
    return 0;
}

bool sched_step_alloc_idle(const struct sched_step_alloc *a)
{
    for (uint32_t i = 0; i < a->nnodes; i++) {
        if (a->nodes[i].held_gpus != 0 || cores_count(a->nodes[i].held_cores) != 0)
            return false;
    }
    return true;
}
